#!/usr/bin/env python3
"""DGL's CPU neighbour sampler on a shardgnn dataset folder: the peer of `shardgnn bench sampler`.

Reads indptr/indices/train_idx of the unpartitioned dataset (bench/peers/dataset_input.py: any
format version and id width), samples blocks for shuffled batches of training nodes with
dgl.dataloading.NeighborSampler on one thread, and writes one JSON object with the sampled edges
per second to --result. --check-input reads and checks the input only (numpy, no DGL) and prints
what it read. Benchmark-only: never imported by shardgnn.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_input import Dataset, check_input_main, print_described  # noqa: E402
from result import write_result  # noqa: E402


def read_input(dataset):
    """The graph and the seeds, as DGL is handed them (numpy only)."""
    d = Dataset(dataset)
    indptr, indices = d.csr()
    train = d.split("train_idx") if d.has("train_idx") else np.zeros(0, dtype=np.int64)
    if train.size == 0:
        train = np.arange(d.n, dtype=np.int64)
    return {"indptr": indptr, "indices": indices, "train": train}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--result", help="write the result (one JSON object) here")
    ap.add_argument("--check-input", action="store_true", help="read and check the input, print what was read, stop (no DGL)")
    ap.add_argument("--fanouts", default="5,10,15", help="DGL order: input layer first")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--replace", action="store_true")
    ap.add_argument("--max-batches", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sync-dir", default="", help="with --procs: start timing when this many processes are ready here")
    ap.add_argument("--procs", type=int, default=1)
    a = ap.parse_args()
    inp = check_input_main("dgl_sampler", lambda: read_input(a.dataset))
    if a.check_input:
        return print_described(inp)
    if not a.result:
        ap.error("--result FILE is required")

    os.environ.setdefault("DGLBACKEND", "pytorch")
    import torch
    import dgl

    torch.set_num_threads(1)
    indptr, indices, train = torch.from_numpy(inp["indptr"]), torch.from_numpy(inp["indices"]), inp["train"]
    n = indptr.numel() - 1
    # Our CSR rows are out-neighbours; DGL samples in-edges. Build the graph reversed so a node's
    # sampled predecessors are our row's neighbours (identical for symmetric graphs).
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=n)
    g.create_formats_()
    sampler = dgl.dataloading.NeighborSampler([int(x) for x in a.fanouts.split(",")], replace=a.replace)
    rng = np.random.default_rng(a.seed)
    order = torch.from_numpy(rng.permutation(train))
    batches = [order[i:i + a.batch] for i in range(0, len(order), a.batch)]
    if a.max_batches > 0:
        while len(batches) < a.max_batches:
            batches += batches
        batches = batches[:a.max_batches]
    sampler.sample(g, batches[0])  # warm-up (format conversion, allocations)
    if a.sync_dir:
        # Processes run side by side start their timed loops together (within a millisecond).
        open(os.path.join(a.sync_dir, "ready-%d" % a.seed), "w").close()
        deadline = time.monotonic() + 600
        while sum(1 for f in os.listdir(a.sync_dir) if f.startswith("ready-")) < a.procs:
            if time.monotonic() > deadline:
                raise SystemExit("dgl_sampler: the other processes never got ready")
            time.sleep(0.001)
    edges = 0
    t0 = time.perf_counter()
    for b in batches:
        _, _, blocks = sampler.sample(g, b)
        edges += sum(int(blk.num_edges()) for blk in blocks)
    dt = time.perf_counter() - t0
    write_result(a.result, {"dgl_version": dgl.__version__, "torch_version": torch.__version__, "batches": len(batches),
                            "sampled_edges": edges, "seconds": dt, "sampled_edges_per_s": edges / dt})


if __name__ == "__main__":
    sys.exit(main())
