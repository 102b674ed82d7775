"""A stop signal under the Python package, at this job's rank count: the last rank signals itself
during step 2 of an epoch; stop_requested() is then true on every rank at the same step, each
saves its loader's state and exits with EXIT_RESUMABLE, and a job resumed from those states takes
the batches the uninterrupted epoch would have.
Usage: mpiexec -n K python test_stop.py PARTITION OUT [resume]"""
import json
import os
import signal
import sys

from loader_common import R, P, fail, sg

part_dir, out = sys.argv[1], sys.argv[2]
resume = len(sys.argv) > 3
part = sg.Partition(part_dir)
loader = sg.NeighborLoader(part, fanouts=[5, 5], batch_size=8, seed=4)
sg.catch_stop_signals()
state_file = f"{out}/state-{R}.json"
if resume:
    loader.load_state_dict(json.load(open(state_file)))
seeds = []
for b in loader:
    seeds.append(b.n_id[: b.batch_size].tolist())
    if not resume and loader.step == 2 and R == P - 1:
        os.kill(os.getpid(), signal.SIGTERM)
    if sg.stop_requested():
        if loader.step != 2:
            fail(f"stopped after step {loader.step}, the signal came during step 2")
        json.dump(loader.state_dict(), open(state_file, "w"))
        json.dump(seeds, open(f"{out}/before-{R}.json", "w"))
        print(f"rank {R}/{P}: stopped", flush=True)
        sys.exit(sg.EXIT_RESUMABLE)
if not resume:
    fail("the loop ended without a stop")
# The resumed batches are the uninterrupted epoch's from step 2 on.
whole = sg.NeighborLoader(part, fanouts=[5, 5], batch_size=8, seed=4)
all_seeds = [b.n_id[: b.batch_size].tolist() for b in whole]
before = json.load(open(f"{out}/before-{R}.json"))
if before + seeds != all_seeds:
    fail("the stopped and resumed batches are not the uninterrupted epoch's")
print(f"rank {R}/{P}: resumed", flush=True)
