"""What the loader tests share (conftest.py's fixtures and the test modules): MPI up, this rank,
a failure line (for test_stop.py's stopped job, a script), the serial reference's reading of a
dataset folder and a partition with numpy alone, and what a test keeps of a batch."""
import json
import sys
from types import SimpleNamespace

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


def keep(b, rows):
    """What a test keeps of a batch `b` past its loop: copies of its ids, labels, pairs and sampled
    edges, and in place of its feature rows (an epoch's are hundreds of megabytes) whether they are
    `rows`, the reference's rows of its nodes, compared as the batch came."""
    copy = lambda a: None if a is None else np.array(a)  # noqa: E731
    return SimpleNamespace(n_id=copy(b.n_id), batch_size=b.batch_size, y=copy(b.y), pairs=copy(b.pairs), num_layers=b.num_layers,
                           edges=[b.edge_index(h) for h in range(b.num_layers)], num_dst=[b.blocks[h][3] for h in range(b.num_layers)],
                           x_is_rows=bool(np.array_equal(b.x, rows)))
