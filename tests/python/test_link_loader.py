"""The Python link loader (shardgnn.LinkLoader) at this job's rank count against numpy's reading of
the split dataset and the partition: each batch's positives are training edges owned by this rank
(every undirected training edge once an epoch over all ranks), each has `negatives` corrupted
pairs from the same source, the positives' edges are absent from the sampled blocks in both
directions, features are the nodes' rows, and the held-out pairs are the split's.
Usage (tests/python/test_loader.sh sets the paths, conftest.py): mpiexec -n K python -m pytest -q
-p no:cacheprovider tests/python/test_link_loader.py"""
import numpy as np
import pytest

from loader_common import has_edge, keep, sg

NEGATIVES = 2


@pytest.fixture(scope="module")
def link_batches(split, split_parts):
    """An epoch of a link loader (fanouts 5, 5; 32 positives a batch, 2 negatives each): each
    batch (loader_common.keep) with its positive and negative pairs."""
    loader = sg.LinkLoader(split_parts.part, fanouts=[5, 5], batch_size=32, negatives=NEGATIVES, seed=3)
    out = []
    for b in loader:
        b = keep(b, split.features[split_parts.orig[b.n_id]])
        pairs = b.pairs
        out.append((b, pairs[pairs[:, 2] == 1], pairs[pairs[:, 2] == 0]))
    return out


def test_negatives_per_positive(link_batches):
    for i, (_, pos, neg) in enumerate(link_batches):
        assert len(neg) == NEGATIVES * len(pos), f"batch {i}: {len(neg)} negatives for {len(pos)} positives"


def test_link_batch_features_are_its_nodes_rows(link_batches):
    for i, (b, _, _) in enumerate(link_batches):
        assert b.x_is_rows, f"batch {i}: a link batch's features are not its nodes' rows"


def test_positives_are_this_ranks_edges(link_batches, split_parts):
    lo, hi = split_parts.lo, split_parts.hi
    for i, (b, pos, _) in enumerate(link_batches):
        g = b.n_id
        for u, v, _ in pos:
            assert lo <= g[u] < hi and g[u] < g[v], f"batch {i}: positive ({g[u]}, {g[v]}) is not one of this rank's edges (u < v, u in [{lo}, {hi}))"


def test_positives_are_training_edges(link_batches, split, split_parts):
    orig = split_parts.orig
    for i, (b, pos, _) in enumerate(link_batches):
        g = b.n_id
        for u, v, _ in pos:
            assert has_edge(split.indptr, split.indices, orig[g[u]], orig[g[v]]), f"batch {i}: positive ({orig[g[u]]}, {orig[g[v]]}) is not a training edge"


def test_negatives_share_a_positives_source(link_batches):
    for i, (b, pos, neg) in enumerate(link_batches):
        g = b.n_id
        sources = {int(g[u]) for u, _, _ in pos}
        assert all(int(g[u]) in sources for u, _, _ in neg), f"batch {i}: a negative whose source is no positive's"


def test_positives_edges_in_no_block(link_batches):
    for i, (b, pos, _) in enumerate(link_batches):
        g = b.n_id
        cut = {(int(g[u]), int(g[v])) for u, v, _ in pos} | {(int(g[v]), int(g[u])) for u, v, _ in pos}
        for h, (src, dst) in enumerate(b.edges):
            assert not any((int(g[s]), int(g[t])) in cut for s, t in zip(src, dst)), f"batch {i}: block {h} holds a positive's edge"


def test_every_training_edge_once_over_ranks(link_batches, split):
    total = np.array([sum(len(pos) for _, pos, _ in link_batches)], dtype=np.int64)
    sg.allreduce_(total)
    indptr, indices = split.indptr, split.indices
    undirected = sum(int(np.sum(indices[indptr[u]: indptr[u + 1]] > u)) for u in range(split.n))
    assert total[0] == undirected, f"{total[0]} positives over all ranks, the training graph has {undirected} edges"


def test_held_out_pairs_are_the_splits(split, split_parts):
    """The held-out pairs this rank owns are the split's own, in global ids."""
    orig, lo, hi = split_parts.orig, split_parts.lo, split_parts.hi
    new_of = np.empty(split.n, dtype=np.int64)
    new_of[orig] = np.arange(split.n)
    mine = split_parts.part.held_out("val_pos")
    want = split.load("val_pos_edges")
    owned = want[(new_of[want[:, 0]] >= lo) & (new_of[want[:, 0]] < hi)]
    assert sorted(map(tuple, orig[mine])) == sorted(map(tuple, owned)), "held_out('val_pos') is not the split's validation edges this rank owns"


def test_partition_without_split_refused(cora_parts):
    with pytest.raises((sg.InputError, sg.CollectiveError)) as e:
        sg.LinkLoader(cora_parts.part, fanouts=[5], batch_size=8)
    assert "no held-out edges" in str(e.value), f"no split's error: {e.value}"
