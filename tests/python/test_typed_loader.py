"""The Python loader on a typed graph (data generate hetero, a featureless type) at this job's rank
count against numpy's reading of the dataset and the partition: each input node's type is its
dataset type, each featured type's rows are its features_<type>.npy rows, a featureless type's ids
are its dataset ids less the type's first, sampled edges are dataset edges, and to_hetero files
every edge under a relation between its ends' types.
Usage: mpiexec -n K python3 test_typed_loader.py DATASET PARTITION"""
import json
import sys

import numpy as np

from loader_common import R, P, csr, dataset_ids, fail, has_edge, sg

ds_dir, part_dir = sys.argv[1], sys.argv[2]


meta = json.load(open(f"{ds_dir}/meta.json"))
types = [(t["name"], t["count"], t["feature_dim"]) for t in meta["node_types"]]
first = np.cumsum([0] + [c for _, c, _ in types])
indptr, indices = csr(ds_dir)
labels = np.load(f"{ds_dir}/labels.npy")
rows = {name: np.load(f"{ds_dir}/features_{name}.npy") for name, _, f in types if f > 0}
orig = dataset_ids(part_dir)

part = sg.Partition(part_dir)
if [tuple(t) for t in part.node_types] != types:
    fail(f"Partition.node_types {part.node_types}, meta.json's {types}")
batches = 0
for b in sg.NeighborLoader(part, fanouts=[4, 3], batch_size=32, seed=2):
    batches += 1
    d = orig[b.n_id]
    if not np.array_equal(b.node_type, np.searchsorted(first, d, side="right") - 1):
        fail("a node's type is not its dataset type")
    if not np.array_equal(b.y, labels[d[: b.batch_size]]):
        fail("the seeds' labels are not theirs")
    for t, (name, _, width) in enumerate(types):
        at = b.type_at(t)
        if not np.all(b.node_type[at] == t):
            fail(f"type_at({t}) holds nodes of other types")
        if width > 0 and not np.array_equal(b.type_x(t), rows[name][d[at] - first[t]]):
            fail(f"type {name}: rows are not features_{name}.npy's")
        if width == 0 and b.type_x(t) is not None:
            fail(f"featureless type {name} has rows")
    for h in range(b.num_layers):
        src, dst = b.edge_index(h)
        for s, u in zip(d[src], d[dst]):
            if not has_edge(indptr, indices, u, s):
                fail(f"sampled edge ({s}, {u}) is not in the dataset")
    nodes, edges = b.to_hetero()
    rel = {(s, d_) for s, _, d_ in part.relations}
    for (s, r, dt), e in edges.items():
        if (s, dt) not in rel and not r.startswith("rev_"):
            fail(f"edge type {(s, r, dt)} is no relation")
        if len(e[0]) and (e[0].max() >= len(nodes[s]["n_id"]) or e[1].max() >= len(nodes[dt]["n_id"])):
            fail(f"edge type {(s, r, dt)} indexes past its types' nodes")
if batches == 0:
    fail("no batches")
print(f"rank {R}/{P}: typed ok ({batches} batches)", flush=True)
