"""The loaders' batches in PyG (shardgnn's to_pyg) at this job's rank count, with torch and
torch_geometric: a SAGEConv trains a step on every Cora batch with its gradients averaged by
allreduce_ (every rank then holds the same gradients), and the hetero generator's batches are
HeteroData holding every node type, the seeds' labels on the seeds' type, and edge types of the
schema's relations.
Usage: mpiexec -n K python test_pyg.py CORA_PARTITION HETERO_PARTITION"""
import sys

import numpy as np
import torch
from torch_geometric.nn import SAGEConv

from loader_common import R, P, fail, sg

torch.manual_seed(0)
part = sg.Partition(sys.argv[1])
conv = SAGEConv(part.feature_dim, part.num_classes)
opt = torch.optim.SGD(conv.parameters(), lr=0.1)
for b in sg.NeighborLoader(part, fanouts=[5, 5], batch_size=32, seed=0):
    d = b.to_pyg()
    if d.num_nodes != len(b.n_id) or d.batch_size != b.batch_size or not torch.equal(d.x, torch.from_numpy(b.x)):
        fail("to_pyg's Data is not the batch")
    out = conv(d.x, d.edge_index)[: d.batch_size]
    loss = torch.nn.functional.cross_entropy(out, d.y.long(), ignore_index=-1, reduction="sum")
    opt.zero_grad()
    loss.backward()
    for p in conv.parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        sg.allreduce_(p.grad, "mean")
    # Every rank holds the same averaged gradients: min and max over ranks agree.
    g = torch.cat([p.grad.flatten() for p in conv.parameters()]).numpy()
    lo, hi = g.copy(), g.copy()
    sg.allreduce_(lo, "min")
    sg.allreduce_(hi, "max")
    if not np.array_equal(lo, hi):
        fail("the averaged gradients differ between ranks")
    if not torch.isfinite(loss):
        fail(f"loss {loss}")
    opt.step()

h = sg.Partition(sys.argv[2])
names = {t[0] for t in h.node_types}
relations = {(s, d) for s, _, d in h.relations}
for b in sg.NeighborLoader(h, fanouts=[4, 3], batch_size=16, seed=0):
    d = b.to_pyg()
    if set(d.node_types) != names:
        fail(f"HeteroData node types {d.node_types}, the schema's {sorted(names)}")
    for s, r, t in d.edge_types:
        if (s, t) not in relations and (t, s) not in relations:
            fail(f"edge type {(s, r, t)} joins types no relation joins")
    if b.batch_size:
        seed_type = h.node_types[int(b.node_type[0])][0]
        if d[seed_type].batch_size != b.batch_size or not torch.equal(d[seed_type].y, torch.from_numpy(b.y)):
            fail("the seeds' labels are not on the seeds' type")
print(f"rank {R}/{P}: pyg ok", flush=True)
