"""The Python loader on a graph with relation ids (the hetero graph plus a second relation between
papers) at this job's rank count against numpy's reading of the dataset: every sampled edge is an
entry of its dataset row under the relation the batch gives it, each relation gets at most its
fanout per row, and to_hetero files each relation's edges under its reverse's key.
Usage (tests/python/test_loader.sh sets the paths, conftest.py): mpiexec -n K python -m pytest -q
-p no:cacheprovider tests/python/test_relation_loader.py"""
import numpy as np
import pytest

from loader_common import sg


@pytest.fixture(scope="module")
def entries(kg):
    """The dataset's (row, neighbour, relation) entries, each as one integer key."""
    rel = kg.load("edge_relations").astype(np.int64)
    rows = np.repeat(np.arange(kg.n), np.diff(kg.indptr))
    return np.unique((rows * kg.n + kg.indices.astype(np.int64)) * 64 + rel)


@pytest.fixture(scope="module")
def batches(kg_parts):
    """An epoch of a loader (fanouts 3, 2; 24 seeds a batch), each batch with its ids as dataset ids."""
    return [(b, kg_parts.orig[b.n_id]) for b in sg.NeighborLoader(kg_parts.part, fanouts=[3, 2], batch_size=24, seed=4)]


def test_edges_are_entries_of_their_relation(batches, entries, kg):
    assert batches, "no batch"
    for i, (b, d) in enumerate(batches):
        for h in range(b.num_layers):
            src, dst = b.edge_index(h)
            rel = b.relations(h)
            assert rel is not None and len(rel) == len(src), f"batch {i} layer {h}: no relation per edge"
            keys = (d[dst].astype(np.int64) * kg.n + d[src]) * 64 + rel
            assert np.isin(keys, entries).all(), f"batch {i} layer {h}: an edge is not its row's entry under its relation"


def test_each_relation_gets_its_fanout(batches):
    for i, (b, _) in enumerate(batches):
        for h, fanout in ((b.num_layers - 1, 3), (0, 2)):  # the last block ends at the seeds
            _, dst = b.edge_index(h)
            counts = np.zeros((b.blocks[h][3], 64), dtype=np.int64)
            np.add.at(counts, (dst, b.relations(h)), 1)
            assert counts.max() <= fanout, f"batch {i} layer {h}: a row has more than {fanout} of one relation"


def test_to_hetero_keys_each_relation_by_its_reverse(batches, kg_parts):
    relations = [tuple(r) for r in kg_parts.part.relations]
    mentions = relations.index(("paper", "mentions", "paper"))
    seen = set()
    for b, _ in batches:
        _, edges = b.to_hetero()
        for key, ei in edges.items():
            assert ei.shape[0] == 2, key
        seen |= set(edges)
        # Every layer's (source, destination, relation) once: a pair joined by two relations twice.
        every = np.concatenate([np.vstack([b.edge_index(h), b.relations(h)[None, :]]) for h in range(b.num_layers)], axis=1)
        assert sum(ei.shape[1] for ei in edges.values()) == np.unique(every, axis=1).shape[1]
    assert ("paper", "rev_mentions", "paper") in seen
    assert relations[mentions] == ("paper", "mentions", "paper")
