"""Faults end a Python job as they end `shardgnn train`. Usage:
  mpiexec -n 2 python3 test_faults.py PARTITION stall     rank 1 stops itself (SIGSTOP, as a hung
      node would) during epoch 2; rank 0's wait outlives collective_timeout(2) and the job ends
      with status 76 and one line naming the wait
  python3 test_faults.py PARTITION truncate              the shard's mapped feature file is cut
      short under the process; reading past its end ends it with status 74 and one line naming the
      file, not a bare SIGBUS"""
import json
import os
import signal
import sys

import numpy as np

import shardgnn as sg

part_dir, mode = sys.argv[1], sys.argv[2]
sg.init()
part = sg.Partition(part_dir)
if mode == "stall":
    sg.collective_timeout(2)
    loader = sg.NeighborLoader(part, fanouts=[5, 5], batch_size=32, prefetch=0)
    for epoch in range(3):
        for step, batch in enumerate(loader):
            if epoch == 1 and step == 1 and sg.rank() == 1:
                os.kill(os.getpid(), signal.SIGSTOP)
            sg.allreduce_(np.ones(4, dtype=np.float32))
    print(f"rank {sg.rank()}: FAIL: the job went on past a stalled rank", flush=True)
    sys.exit(1)
elif mode == "truncate":
    info = json.load(open(f"{part_dir}/partition.json"))
    features = f"{part_dir}/{info['parts'][0]['dir']}/features.npy"
    x = part.features
    total = float(x[-1].sum())  # mapped and read
    os.truncate(features, 128)
    total += float(x[-1].sum())  # the page past the file's new end
    print(f"FAIL: read {total} past the end of a truncated file", flush=True)
    sys.exit(1)
