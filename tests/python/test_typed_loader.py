"""The Python loader on a typed graph (data generate hetero, a featureless type) at this job's rank
count against numpy's reading of the dataset and the partition: each input node's type is its
dataset type, each featured type's rows are its features_<type>.npy rows, a featureless type's ids
are its dataset ids less the type's first, sampled edges are dataset edges, and to_hetero files
every edge under a relation between its ends' types.
Usage (tests/python/test_loader.sh sets the paths, conftest.py): mpiexec -n K python -m pytest -q
-p no:cacheprovider tests/python/test_typed_loader.py"""
import numpy as np
import pytest

from loader_common import has_edge, sg


@pytest.fixture(scope="module")
def types(hetero):
    """meta.json's node types: (name, count, feature_dim)."""
    return [(t["name"], t["count"], t["feature_dim"]) for t in hetero.meta["node_types"]]


@pytest.fixture(scope="module")
def first(types):
    """Each type's first dataset id."""
    return np.cumsum([0] + [c for _, c, _ in types])


@pytest.fixture(scope="module")
def typed_batches(hetero_parts):
    """An epoch of a loader over the typed graph (fanouts 4, 3; 32 seeds a batch), each batch with
    its global ids as dataset ids."""
    return [(b, hetero_parts.orig[b.n_id]) for b in sg.NeighborLoader(hetero_parts.part, fanouts=[4, 3], batch_size=32, seed=2)]


def test_partition_node_types(types, hetero_parts):
    node_types = hetero_parts.part.node_types
    assert [tuple(t) for t in node_types] == types, f"Partition.node_types {node_types}, meta.json's {types}"


def test_node_types_are_dataset_types(typed_batches, first):
    for i, (b, d) in enumerate(typed_batches):
        assert np.array_equal(b.node_type, np.searchsorted(first, d, side="right") - 1), f"batch {i}: a node's type is not its dataset type"


def test_seed_labels(typed_batches, hetero):
    for i, (b, d) in enumerate(typed_batches):
        assert np.array_equal(b.y, hetero.labels[d[: b.batch_size]]), f"batch {i}: the seeds' labels are not theirs"


def test_type_at_holds_its_type(typed_batches, types):
    for i, (b, _) in enumerate(typed_batches):
        for t, (name, _, _) in enumerate(types):
            assert np.all(b.node_type[b.type_at(t)] == t), f"batch {i}: type_at({t}) ({name}) holds nodes of other types"


def test_featured_types_rows(typed_batches, types, first, hetero):
    rows = {name: hetero.load(f"features_{name}") for name, _, width in types if width > 0}
    for i, (b, d) in enumerate(typed_batches):
        for t, (name, _, width) in enumerate(types):
            if width > 0:
                at = b.type_at(t)
                assert np.array_equal(b.type_x(t), rows[name][d[at] - first[t]]), f"batch {i}: type {name}: rows are not features_{name}.npy's"


def test_featureless_types_have_no_rows(typed_batches, types):
    assert any(width == 0 for _, _, width in types), f"no featureless type in {types}"
    for i, (b, _) in enumerate(typed_batches):
        for t, (name, _, width) in enumerate(types):
            if width == 0:
                assert b.type_x(t) is None, f"batch {i}: featureless type {name} has rows"


def test_sampled_edges_are_dataset_edges(typed_batches, hetero):
    for i, (b, d) in enumerate(typed_batches):
        for h in range(b.num_layers):
            src, dst = b.edge_index(h)
            for s, u in zip(d[src], d[dst]):
                assert has_edge(hetero.indptr, hetero.indices, u, s), f"batch {i}, block {h}: sampled edge ({s}, {u}) is not in the dataset"


def test_to_hetero_files_edges_under_relations(typed_batches, hetero_parts):
    rel = {(s, d_) for s, _, d_ in hetero_parts.part.relations}
    for i, (b, _) in enumerate(typed_batches):
        nodes, edges = b.to_hetero()
        for (s, r, dt), e in edges.items():
            assert (s, dt) in rel or r.startswith("rev_"), f"batch {i}: edge type {(s, r, dt)} is no relation"
            assert not (len(e[0]) and (e[0].max() >= len(nodes[s]["n_id"]) or e[1].max() >= len(nodes[dt]["n_id"]))), \
                f"batch {i}: edge type {(s, r, dt)} indexes past its types' nodes"


def test_some_batches(typed_batches):
    assert len(typed_batches) > 0, "no batches"
