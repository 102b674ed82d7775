"""The loaders' pipeline options and layer-wise inference at this job's rank count, each against a
reference: prefetching gives the batches made on demand (also after a loop left early and
resumed), drop_last leaves out exactly the short batches, global seed sampling takes every
training node once an epoch in equal batches, layer-wise inference's two mean-aggregation layers
equal numpy's over the whole dataset, write_dataset stores label sets and 2-byte features, and a
mean of integers is refused. pytest modules under mpiexec (conftest.py)."""
import os

import numpy as np
import pytest

from loader_common import P, R, sg


def batches(loader, limit=None):
    """Each batch of an epoch as (n_id, x, y, edges), up to `limit` batches (then the loop is left)."""
    out = []
    for b in loader:
        out.append((b.n_id.copy(), b.x.copy(), b.y.copy(), b.edges().copy(), b.batch_size))
        if limit is not None and len(out) == limit:
            break
    return out


def same(a, b, what):
    assert len(a) == len(b), f"{what}: {len(a)} batches against {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        assert all(np.array_equal(u, v) for u, v in zip(x[:4], y[:4])), f"{what}: batch {k} differs"


def test_prefetch(cora_parts):
    part = cora_parts.part
    """A thread sampling two batches ahead gives the batches made on demand, epoch after epoch;
    a loop left after two batches and taken up again continues where it stood."""
    kw = dict(fanouts=[5, 3], batch_size=32, seed=3)
    eager = sg.NeighborLoader(part, prefetch=0, **kw)
    ahead = sg.NeighborLoader(part, prefetch=2, **kw)
    for epoch in range(2):
        same(batches(ahead), batches(eager), f"prefetch, epoch {epoch}")
    first = batches(ahead, limit=2)  # every rank leaves after its second batch
    assert ahead.state_dict()["step"] == 2 and ahead.epoch == 2, f"a loop left after 2 batches stands at {ahead.state_dict()}"
    rest = batches(ahead)
    same(first + rest, batches(eager), "prefetch, an epoch left and taken up again")
    link_free = sg.NeighborLoader(part, split="val", fanouts=[-1], batch_size=50, prefetch=3)
    same(batches(link_free), batches(sg.NeighborLoader(part, split="val", fanouts=[-1], batch_size=50, prefetch=0)), "prefetch, fixed batches")


def test_drop_last(cora_parts):
    part = cora_parts.part
    """drop_last leaves out a rank's short batch and nothing else."""
    kw = dict(fanouts=[4], batch_size=48, seed=5, prefetch=0)
    full, dropped = batches(sg.NeighborLoader(part, **kw)), batches(sg.NeighborLoader(part, drop_last=True, **kw))
    kept = [b for b in full if b[4] == 48]
    got = [b for b in dropped if b[4] > 0]
    assert all(b[4] in (0, 48) for b in dropped), f"drop_last: batch sizes {[b[4] for b in dropped]}"
    same(got, kept, "drop_last against the full batches")
    total = np.array([sum(b[4] for b in dropped)], dtype=np.int64)
    sg.allreduce_(total)
    own = np.array([len(part.train_idx) // 48 * 48], dtype=np.int64)
    sg.allreduce_(own)
    assert total[0] == own[0], f"drop_last: {total[0]} seeds over all ranks, expected {own[0]}"
    val = batches(sg.NeighborLoader(part, split="val", fanouts=[2], batch_size=64, drop_last=True, prefetch=0))
    assert all(b[4] in (0, 64) for b in val), f"drop_last on fixed batches: sizes {[b[4] for b in val]}"


def test_global_seed_sampling(cora, cora_parts):
    part, orig, n = cora_parts.part, cora_parts.orig, cora.n
    """seed_sampling='global': each training node once an epoch over all ranks, in batches whose
    sizes differ by at most one between ranks, with its own label."""
    loader = sg.NeighborLoader(part, fanouts=[3], batch_size=40, seed=7, seed_sampling="global", prefetch=1)
    for epoch in range(2):
        seen = np.zeros(n, dtype=np.int64)
        sizes = []
        for b in loader:
            d = orig[b.n_id[: b.batch_size]]
            seen[d] += 1
            assert np.array_equal(b.y, cora.labels[d]), "global seed sampling: a seed's label is not its own"
            sizes.append(b.batch_size)
        sg.allreduce_(seen)
        want = np.zeros(n, dtype=np.int64)
        want[cora.load("train_idx")] = 1
        assert np.array_equal(seen, want), f"global seed sampling, epoch {epoch}: not every training node once"
        lo = np.array(sizes, dtype=np.int64)
        hi = lo.copy()
        sg.allreduce_(lo, "min")
        sg.allreduce_(hi, "max")
        assert (hi - lo).max(initial=0) <= 1, f"global seed sampling: batch sizes differ by {(hi - lo).max()} between ranks"
    # One rank's refusal, or at several ranks every rank's.
    with pytest.raises((sg.InputError, sg.CollectiveError), match="drop_last"):
        sg.NeighborLoader(part, fanouts=[3], batch_size=40, seed_sampling="global", drop_last=True)


def test_layerwise(cora, cora_parts):
    part, orig, n, indptr, indices = cora_parts.part, cora_parts.orig, cora.n, cora.indptr, cora.indices
    """Two mean-aggregation layers, layer by layer over the whole graph, equal numpy's on the
    dataset: each owned node's rows, at every rank count."""
    inf = sg.LayerwiseInference(part)
    lo, hi = part.node_range
    assert inf.num_own == hi - lo, f"layer-wise: {inf.num_own} own rows for the range {lo}..{hi}"
    assert len(inf.halo_ids) == inf.num_halo
    h = sg.widen(part.features, part.feature_dtype)
    for layer in range(2):
        table = inf.exchange(h)
        out = np.zeros((inf.num_own, table.shape[1]), dtype=np.float64)
        for a, b, e in inf.blocks(max_edges=500):  # small ranges: the cut is exercised
            np.add.at(out, a + e[1], table[e[0]])
        deg = np.maximum(np.diff(inf.indptr), 1)[:, None]
        h = (out / deg).astype(np.float32)
    ref = cora.features.astype(np.float64)
    deg = np.maximum(np.diff(indptr), 1)[:, None]
    for layer in range(2):
        nxt = np.zeros_like(ref)
        np.add.at(nxt, np.repeat(np.arange(n), np.diff(indptr)), ref[indices])
        ref = nxt / deg
    assert np.allclose(h, ref[orig[lo:hi]], atol=1e-5), f"layer-wise: rows differ from numpy's by {np.abs(h - ref[orig[lo:hi]]).max()}"
    with pytest.raises((sg.InputError, sg.CollectiveError), match="exchange"):
        inf.exchange(np.zeros((inf.num_own + 1, 3), dtype=np.float32))


def test_write_dataset_kinds(work_dir):
    """Label sets [N, C] and float16 features are written as data convert writes them."""
    rng = np.random.default_rng(0)
    m = 30
    edges = np.stack([np.arange(m - 1), np.arange(1, m)])
    sets = (rng.random((m, 5)) < 0.3).astype(np.int64)
    x = rng.standard_normal((m, 4)).astype(np.float32)
    path = f"{work_dir}/sets-{R}"
    sg.write_dataset(path, edges, x=x, y=sets, train_idx=np.arange(10), feature_dtype="float16", overwrite=True)
    ds = sg.Dataset(path)
    assert ds.multilabel and ds.num_classes == 5 and ds.feature_dtype == "float16", (ds.multilabel, ds.num_classes, ds.feature_dtype)
    bits = np.unpackbits(ds.labels, axis=1, count=5, bitorder="little")
    assert np.array_equal(bits, sets), "write_dataset: the label sets read back differ"
    assert np.array_equal(sg.widen(ds.features, "float16"), x.astype(np.float16).astype(np.float32)), "write_dataset: float16 features differ"
    bad = sets.copy()
    bad[3, 2] = 2
    with pytest.raises(sg.InputError, match=r"y\[3\]\[2\]"):
        sg.write_dataset(f"{work_dir}/bad-{R}", edges, x=x, y=bad)
    assert not os.path.exists(f"{work_dir}/bad-{R}"), "a refused write_dataset left a folder"


def test_mean_of_integers_refused():
    with pytest.raises(ValueError, match="mean"):
        sg.allreduce_(np.ones(3, dtype=np.int64), "mean")


def test_dataset_folder(cora):
    """A dataset folder is a Partition in one process (as `shardgnn train` takes one), its batches
    the dataset's rows; several ranks are told to partition it first."""
    if P > 1:
        with pytest.raises((sg.InputError, sg.CollectiveError), match="partition it first"):
            sg.Partition(cora.dir)
        return
    whole = sg.Partition(cora.dir)
    assert whole.num_parts == 1 and whole.num_nodes == cora.n and whole.node_range == (0, cora.n)
    for b in sg.NeighborLoader(whole, fanouts=[4, 2], batch_size=100, seed=2):
        assert np.array_equal(b.x, cora.features[b.n_id]), "a dataset folder's batch rows are not its nodes'"
        assert np.array_equal(b.y, cora.labels[b.n_id[: b.batch_size]])


def test_edge_index_is_the_block(cora_parts):
    """edge_index(h) is block h's CSR as [2, E]: sources its indices, destinations its rows."""
    for b in sg.NeighborLoader(cora_parts.part, fanouts=[5, 3], batch_size=64, seed=4, prefetch=0):
        for h in range(b.num_layers):
            indptr, indices, _, num_dst = b.blocks[h]
            e = b.edge_index(h)
            assert e.dtype == np.int64 and e.shape == (2, len(indices))
            assert np.array_equal(e[0], indices)
            assert np.array_equal(e[1], np.repeat(np.arange(num_dst), np.diff(indptr)))


def test_batches_are_the_native_samplers(cora_parts, native_sampler):
    """The loader draws the batches `shardgnn bench sampler` draws for the same partition, fanouts,
    batch, epochs and seed: the same steps, input nodes and sampled edges over every rank."""
    loader = sg.NeighborLoader(cora_parts.part, fanouts=[5, 3], batch_size=64, seed=3, prefetch=0)
    totals = np.zeros(3, dtype=np.int64)  # steps, input nodes, sampled edges
    for epoch in range(2):
        for b in loader:
            totals += [1, len(b.n_id), sum(len(b.blocks[h][1]) for h in range(b.num_layers))]
    steps = totals[0]
    sg.allreduce_(totals)
    assert steps == native_sampler["steps_per_rank"], (steps, native_sampler["steps_per_rank"])
    assert totals[1] / totals[0] == pytest.approx(native_sampler["input_nodes_per_batch"], rel=1e-12)
    assert totals[2] / totals[0] == pytest.approx(native_sampler["sampled_edges_per_batch"], rel=1e-12)


def test_write_dataset_from_a_sparse_adjacency(work_dir):
    """A scipy-style sparse adjacency (tocoo(): row, col, shape) and sparse features (toarray())
    are taken as their dense forms (scipy itself is not needed by the package)."""
    class Coo:
        def __init__(self, row, col, n):
            self.row, self.col, self.shape = np.asarray(row), np.asarray(col), (n, n)

        def tocoo(self):
            return self

    class Dense:
        def __init__(self, a):
            self.a = a

        def toarray(self):
            return self.a

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    path = f"{work_dir}/coo-{R}"
    sg.write_dataset(path, Coo([0, 1, 2], [1, 2, 3], 4), x=Dense(x), overwrite=True)
    ds = sg.Dataset(path)
    assert ds.num_nodes == 4 and ds.num_edges == 6, (ds.num_nodes, ds.num_edges)
    assert np.array_equal(ds.indptr, [0, 1, 3, 5, 6]) and np.array_equal(ds.features, x)


def test_bad_input_is_one_line(work_dir, cora_parts):
    """A missing folder and fanouts the sampler cannot take are exceptions carrying the commands'
    one-line messages, on every rank, never a crash."""
    with pytest.raises((sg.InputError, sg.CollectiveError), match="neither a partitioned dataset"):
        sg.Partition(f"{work_dir}/no-such-folder")
    with pytest.raises(sg.InputError, match="no-such-folder"):
        sg.Dataset(f"{work_dir}/no-such-folder")
    part = cora_parts.part
    for fanouts in ([], [5, -2]):
        with pytest.raises((sg.InputError, sg.CollectiveError)) as e:
            sg.NeighborLoader(part, fanouts=fanouts, batch_size=8)
        assert "\n" not in str(e.value) and "fanout" in str(e.value), str(e.value)
