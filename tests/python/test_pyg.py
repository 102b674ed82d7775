"""The loaders' batches in PyG (shardgnn's to_pyg) at this job's rank count, with torch and
torch_geometric: a SAGEConv trains a step on every Cora batch with its gradients averaged by
allreduce_ (every rank then holds the same gradients), and the hetero generator's batches are
HeteroData holding every node type, the seeds' labels on the seeds' type, and edge types of the
schema's relations.
Usage (tests/python/test_pyg.sh sets the paths, conftest.py): mpiexec -n K python -m pytest -q
-p no:cacheprovider tests/python/test_pyg.py"""
import os

import numpy as np
import pytest
import torch
from torch_geometric.nn import SAGEConv

from loader_common import sg


@pytest.fixture(scope="module")
def trained(cora_parts):
    """A SAGEConv trained a step on every Cora batch (fanouts 5, 5; 32 seeds), gradients averaged
    over the ranks: per batch the batch, its Data, the loss, and the averaged gradients' min and
    max over the ranks."""
    torch.manual_seed(0)
    part = cora_parts.part
    conv = SAGEConv(part.feature_dim, part.num_classes)
    opt = torch.optim.SGD(conv.parameters(), lr=0.1)
    steps = []
    for b in sg.NeighborLoader(part, fanouts=[5, 5], batch_size=32, seed=0):
        d = b.to_pyg()
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
        steps.append((b, d, loss.detach().clone(), lo, hi))
        opt.step()
    return steps


def test_to_pyg_data_is_the_batch(trained):
    for i, (b, d, _, _, _) in enumerate(trained):
        assert d.num_nodes == len(b.n_id), f"batch {i}: to_pyg's Data has {d.num_nodes} nodes, the batch {len(b.n_id)}"
        assert d.batch_size == b.batch_size, f"batch {i}: to_pyg's Data batch_size {d.batch_size}, the batch's {b.batch_size}"
        assert torch.equal(d.x, torch.from_numpy(b.x)), f"batch {i}: to_pyg's Data x is not the batch's"


def test_averaged_gradients_agree_over_ranks(trained):
    for i, (_, _, _, lo, hi) in enumerate(trained):
        assert np.array_equal(lo, hi), f"batch {i}: the averaged gradients differ between ranks"


def test_losses_are_finite(trained):
    for i, (_, _, loss, _, _) in enumerate(trained):
        assert torch.isfinite(loss), f"batch {i}: loss {loss}"


@pytest.fixture(scope="module")
def hetero_data(hetero_parts):
    """An epoch over the hetero generator's partition (fanouts 4, 3; 16 seeds): each batch and its
    HeteroData."""
    return [(b, b.to_pyg()) for b in sg.NeighborLoader(hetero_parts.part, fanouts=[4, 3], batch_size=16, seed=0)]


def test_hetero_data_has_every_node_type(hetero_data, hetero_parts):
    names = {t[0] for t in hetero_parts.part.node_types}
    for i, (_, d) in enumerate(hetero_data):
        assert set(d.node_types) == names, f"batch {i}: HeteroData node types {d.node_types}, the schema's {sorted(names)}"


def test_hetero_edge_types_join_related_types(hetero_data, hetero_parts):
    relations = {(s, d) for s, _, d in hetero_parts.part.relations}
    for i, (_, d) in enumerate(hetero_data):
        for s, r, t in d.edge_types:
            assert (s, t) in relations or (t, s) in relations, f"batch {i}: edge type {(s, r, t)} joins types no relation joins"


def test_seed_labels_on_the_seeds_type(hetero_data, hetero_parts):
    for i, (b, d) in enumerate(hetero_data):
        if b.batch_size:
            seed_type = hetero_parts.part.node_types[int(b.node_type[0])][0]
            assert d[seed_type].batch_size == b.batch_size, f"batch {i}: {seed_type}.batch_size {d[seed_type].batch_size}, the batch's {b.batch_size}"
            assert torch.equal(d[seed_type].y, torch.from_numpy(b.y)), f"batch {i}: the seeds' labels are not on the seeds' type"


def test_checkpoint_resumes_on_every_rank_or_none(work_dir):
    """Checkpoint: what each rank saved comes back on each rank; a folder where one rank's file is
    missing is None on every rank, so that no rank resumes alone."""
    from loader_common import P, R
    folder = f"{work_dir}/ckpt-{P}"
    ckpt = sg.Checkpoint(folder)
    assert ckpt.load() is None, "an empty folder resumed"
    ckpt.save({"rank": R, "w": torch.arange(4.0) * R, "step": np.int64(7)})
    sg.barrier()
    saved = ckpt.load()
    assert saved is not None and saved["rank"] == R and torch.equal(saved["w"], torch.arange(4.0) * R) and saved["step"] == 7
    sg.barrier()
    if R == P - 1:
        os.remove(ckpt.path)
    sg.barrier()
    assert ckpt.load() is None, "resumed with a rank's file missing"
    assert sg.Checkpoint("").load() is None and sg.Checkpoint(None).path == ""
