"""The loaders' pipeline options and layer-wise inference at this job's rank count, each against a
reference: prefetching gives the batches made on demand (also after a loop left early and
resumed), drop_last leaves out exactly the short batches, global seed sampling takes every
training node once an epoch in equal batches, layer-wise inference's two mean-aggregation layers
equal numpy's over the whole dataset, write_dataset stores label sets and 2-byte features, and a
mean of integers is refused. Usage: mpiexec -n K python3 test_pipeline.py DATASET PARTITION WORK"""
import os
import sys

import numpy as np

from loader_common import R, P, csr, dataset_ids, fail, sg

ds_dir, part_dir, work = sys.argv[1], sys.argv[2], sys.argv[3]
indptr, indices = csr(ds_dir)
features, labels = np.load(f"{ds_dir}/features.npy"), np.load(f"{ds_dir}/labels.npy")
train = np.load(f"{ds_dir}/train_idx.npy")
n = len(indptr) - 1
orig = dataset_ids(part_dir)
part = sg.Partition(part_dir)


def batches(loader, limit=None):
    """Each batch of an epoch as (n_id, x, y, edges), up to `limit` batches (then the loop is left)."""
    out = []
    for b in loader:
        out.append((b.n_id.copy(), b.x.copy(), b.y.copy(), b.edges().copy(), b.batch_size))
        if limit is not None and len(out) == limit:
            break
    return out


def same(a, b, what):
    if len(a) != len(b):
        fail(f"{what}: {len(a)} batches against {len(b)}")
    for k, (x, y) in enumerate(zip(a, b)):
        if not all(np.array_equal(u, v) for u, v in zip(x[:4], y[:4])):
            fail(f"{what}: batch {k} differs")


def test_prefetch():
    """A thread sampling two batches ahead gives the batches made on demand, epoch after epoch;
    a loop left after two batches and taken up again continues where it stood."""
    kw = dict(fanouts=[5, 3], batch_size=32, seed=3)
    eager = sg.NeighborLoader(part, prefetch=0, **kw)
    ahead = sg.NeighborLoader(part, prefetch=2, **kw)
    for epoch in range(2):
        same(batches(ahead), batches(eager), f"prefetch, epoch {epoch}")
    first = batches(ahead, limit=2)  # every rank leaves after its second batch
    if ahead.state_dict()["step"] != 2 or ahead.epoch != 2:
        fail(f"a loop left after 2 batches stands at {ahead.state_dict()}")
    rest = batches(ahead)
    same(first + rest, batches(eager), "prefetch, an epoch left and taken up again")
    link_free = sg.NeighborLoader(part, split="val", fanouts=[-1], batch_size=50, prefetch=3)
    same(batches(link_free), batches(sg.NeighborLoader(part, split="val", fanouts=[-1], batch_size=50, prefetch=0)), "prefetch, fixed batches")


def test_drop_last():
    """drop_last leaves out a rank's short batch and nothing else."""
    kw = dict(fanouts=[4], batch_size=48, seed=5, prefetch=0)
    full, dropped = batches(sg.NeighborLoader(part, **kw)), batches(sg.NeighborLoader(part, drop_last=True, **kw))
    kept = [b for b in full if b[4] == 48]
    got = [b for b in dropped if b[4] > 0]
    if any(b[4] not in (0, 48) for b in dropped):
        fail(f"drop_last: batch sizes {[b[4] for b in dropped]}")
    same(got, kept, "drop_last against the full batches")
    total = np.array([sum(b[4] for b in dropped)], dtype=np.int64)
    sg.allreduce_(total)
    own = np.array([len(part.train_idx) // 48 * 48], dtype=np.int64)
    sg.allreduce_(own)
    if total[0] != own[0]:
        fail(f"drop_last: {total[0]} seeds over all ranks, expected {own[0]}")
    val = batches(sg.NeighborLoader(part, split="val", fanouts=[2], batch_size=64, drop_last=True, prefetch=0))
    if any(b[4] not in (0, 64) for b in val):
        fail(f"drop_last on fixed batches: sizes {[b[4] for b in val]}")


def test_global_seed_sampling():
    """seed_sampling='global': each training node once an epoch over all ranks, in batches whose
    sizes differ by at most one between ranks, with its own label."""
    loader = sg.NeighborLoader(part, fanouts=[3], batch_size=40, seed=7, seed_sampling="global", prefetch=1)
    for epoch in range(2):
        seen = np.zeros(n, dtype=np.int64)
        sizes = []
        for b in loader:
            d = orig[b.n_id[: b.batch_size]]
            seen[d] += 1
            if not np.array_equal(b.y, labels[d]):
                fail("global seed sampling: a seed's label is not its own")
            sizes.append(b.batch_size)
        sg.allreduce_(seen)
        want = np.zeros(n, dtype=np.int64)
        want[train] = 1
        if not np.array_equal(seen, want):
            fail(f"global seed sampling, epoch {epoch}: not every training node once")
        lo = np.array(sizes, dtype=np.int64)
        hi = lo.copy()
        sg.allreduce_(lo, "min")
        sg.allreduce_(hi, "max")
        if (hi - lo).max(initial=0) > 1:
            fail(f"global seed sampling: batch sizes differ by {(hi - lo).max()} between ranks")
    try:
        sg.NeighborLoader(part, fanouts=[3], batch_size=40, seed_sampling="global", drop_last=True)
        fail("drop_last with global seed sampling was taken")
    except (sg.InputError, sg.CollectiveError) as e:  # one rank's refusal, or every rank's
        if "drop_last" not in str(e):
            fail(f"drop_last with global seed sampling: {e}")


def test_layerwise():
    """Two mean-aggregation layers, layer by layer over the whole graph, equal numpy's on the
    dataset: each owned node's rows, at every rank count."""
    inf = sg.LayerwiseInference(part)
    lo, hi = part.node_range
    if inf.num_own != hi - lo or len(inf.halo_ids) != inf.num_halo:
        fail(f"layer-wise: {inf.num_own} own rows for the range {lo}..{hi}, {inf.num_halo} halo")
    h = sg.widen(part.features, part.feature_dtype)
    for layer in range(2):
        table = inf.exchange(h)
        out = np.zeros((inf.num_own, table.shape[1]), dtype=np.float64)
        for a, b, e in inf.blocks(max_edges=500):  # small ranges: the cut is exercised
            np.add.at(out, a + e[1], table[e[0]])
        deg = np.maximum(np.diff(inf.indptr), 1)[:, None]
        h = (out / deg).astype(np.float32)
    ref = features.astype(np.float64)
    deg = np.maximum(np.diff(indptr), 1)[:, None]
    for layer in range(2):
        nxt = np.zeros_like(ref)
        np.add.at(nxt, np.repeat(np.arange(n), np.diff(indptr)), ref[indices])
        ref = nxt / deg
    if not np.allclose(h, ref[orig[lo:hi]], atol=1e-5):
        fail(f"layer-wise: rows differ from numpy's by {np.abs(h - ref[orig[lo:hi]]).max()}")
    try:
        inf.exchange(np.zeros((inf.num_own + 1, 3), dtype=np.float32))
        fail("exchange took rows of the wrong count")
    except (sg.InputError, sg.CollectiveError) as e:
        if "exchange" not in str(e):
            fail(f"exchange's refusal: {e}")


def test_write_dataset_kinds():
    """Label sets [N, C] and float16 features are written as data convert writes them."""
    if R == 0:
        rng = np.random.default_rng(0)
        m = 30
        edges = np.stack([np.arange(m - 1), np.arange(1, m)])
        sets = (rng.random((m, 5)) < 0.3).astype(np.int64)
        x = rng.standard_normal((m, 4)).astype(np.float32)
        path = f"{work}/sets"
        sg.write_dataset(path, edges, x=x, y=sets, train_idx=np.arange(10), feature_dtype="float16", overwrite=True)
        ds = sg.Dataset(path)
        if not (ds.multilabel and ds.num_classes == 5 and ds.feature_dtype == "float16"):
            fail(f"write_dataset: multilabel {ds.multilabel}, {ds.num_classes} classes, {ds.feature_dtype}")
        bits = np.unpackbits(ds.labels, axis=1, count=5, bitorder="little")
        if not np.array_equal(bits, sets):
            fail("write_dataset: the label sets read back differ")
        if not np.array_equal(sg.widen(ds.features, "float16"), x.astype(np.float16).astype(np.float32)):
            fail("write_dataset: float16 features read back differ")
        bad = sets.copy()
        bad[3, 2] = 2
        try:
            sg.write_dataset(f"{work}/bad", edges, x=x, y=bad)
            fail("write_dataset took a label-set entry of 2")
        except sg.InputError as e:
            if "y[3][2]" not in str(e) or os.path.exists(f"{work}/bad"):
                fail(f"write_dataset's refusal: {e}")
    sg.barrier()


def test_mean_of_integers_refused():
    try:
        sg.allreduce_(np.ones(3, dtype=np.int64), "mean")
        fail("allreduce_ took a mean of integers")
    except ValueError as e:
        if "mean" not in str(e):
            fail(f"allreduce_'s refusal: {e}")


if __name__ == "__main__":
    for name, f in list(globals().items()):
        if name.startswith("test_"):
            f()
    print(f"rank {R}/{P}: pipeline tests passed", flush=True)
