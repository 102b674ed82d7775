"""The Python link loader (shardgnn.LinkLoader) at this job's rank count against numpy's reading of
the split dataset and the partition: each batch's positives are training edges owned by this rank
(every undirected training edge once an epoch over all ranks), each has `negatives` corrupted
pairs from the same source, the positives' edges are absent from the sampled blocks in both
directions, features are the nodes' rows, and the held-out pairs are the split's.
Usage: mpiexec -n K python3 test_link_loader.py SPLIT_DATASET ITS_PARTITION AN_UNSPLIT_PARTITION"""
import sys

import numpy as np

from loader_common import R, P, csr, dataset_ids, fail, has_edge, sg

ds_dir, part_dir = sys.argv[1], sys.argv[2]

indptr, indices = csr(ds_dir)
features = np.load(f"{ds_dir}/features.npy")
n = len(indptr) - 1
orig = dataset_ids(part_dir)
new_of = np.empty(n, dtype=np.int64)
new_of[orig] = np.arange(n)


part = sg.Partition(part_dir)
lo, hi = part.node_range
negatives = 2
loader = sg.LinkLoader(part, fanouts=[5, 5], batch_size=32, negatives=negatives, seed=3)
positives = 0
for b in loader:
    pairs = b.pairs
    pos, neg = pairs[pairs[:, 2] == 1], pairs[pairs[:, 2] == 0]
    positives += len(pos)
    if len(neg) != negatives * len(pos):
        fail(f"{len(neg)} negatives for {len(pos)} positives")
    g = b.n_id
    if not np.array_equal(b.x, features[orig[g]]):
        fail("a link batch's features are not its nodes' rows")
    for u, v, _ in pos:
        if not (lo <= g[u] < hi and g[u] < g[v]):
            fail(f"positive ({g[u]}, {g[v]}) is not one of this rank's edges (u < v, u in [{lo}, {hi}))")
        if not has_edge(indptr, indices, orig[g[u]], orig[g[v]]):
            fail(f"positive ({orig[g[u]]}, {orig[g[v]]}) is not a training edge")
    sources = {int(g[u]) for u, _, _ in pos}
    if any(int(g[u]) not in sources for u, _, _ in neg):
        fail("a negative whose source is no positive's")
    # The positives' edges are in no block, either direction.
    cut = {(int(g[u]), int(g[v])) for u, v, _ in pos} | {(int(g[v]), int(g[u])) for u, v, _ in pos}
    for h in range(b.num_layers):
        src, dst = b.edge_index(h)
        if any((int(g[s]), int(g[t])) in cut for s, t in zip(src, dst)):
            fail(f"block {h} holds a positive's edge")
total = np.array([positives], dtype=np.int64)
sg.allreduce_(total)
undirected = sum(int(np.sum(indices[indptr[u]: indptr[u + 1]] > u)) for u in range(n))
if total[0] != undirected:
    fail(f"{total[0]} positives over all ranks, the training graph has {undirected} edges")
# The held-out pairs this rank owns are the split's own, in global ids.
mine = part.held_out("val_pos")
want = np.load(f"{ds_dir}/val_pos_edges.npy")
owned = want[(new_of[want[:, 0]] >= lo) & (new_of[want[:, 0]] < hi)]
if sorted(map(tuple, orig[mine])) != sorted(map(tuple, owned)):
    fail("held_out('val_pos') is not the split's validation edges this rank owns")
try:
    sg.LinkLoader(sg.Partition(sys.argv[3]), fanouts=[5], batch_size=8)
    fail("a partition without held-out edges was accepted")
except (sg.InputError, sg.CollectiveError) as e:
    if "no held-out edges" not in str(e):
        fail(f"no split's error: {e}")
print(f"rank {R}/{P}: link ok ({positives} positives)", flush=True)
