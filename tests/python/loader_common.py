"""What the loader tests share: MPI up, this rank, a failure line, and the serial reference's
reading of a dataset folder and a partition with numpy alone."""
import json
import sys

import numpy as np

import shardgnn as sg

sg.init()
R, P = sg.rank(), sg.size()


def fail(msg):
    print(f"rank {R}: FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def dataset_ids(part_dir):
    """The partition's global ids as dataset ids: each part's orig_ids.npy, parts in order."""
    info = json.load(open(f"{part_dir}/partition.json"))
    return np.concatenate([np.load(f"{part_dir}/{p['dir']}/orig_ids.npy").astype(np.int64) for p in info["parts"]])


def csr(ds_dir):
    return np.load(f"{ds_dir}/indptr.npy"), np.load(f"{ds_dir}/indices.npy")


def has_edge(indptr, indices, u, v):
    """Whether v is in u's (sorted) row."""
    row = indices[indptr[u]: indptr[u + 1]]
    k = np.searchsorted(row, v)
    return k < len(row) and row[k] == v
