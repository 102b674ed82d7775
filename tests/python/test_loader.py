"""The Python loader (python/shardgnn) at this job's rank count against a serial reference read
with numpy alone from the dataset folder and the partition's files: every batch's features and
labels are its nodes' rows in the dataset, every sampled edge is a dataset edge within its hop's
fanout, every training node is a seed exactly once an epoch over all ranks, the validation loader
takes each validation node once in id order, and allreduce_ and torch_env agree on every rank.
Usage (tests/python/test_loader.sh sets the paths, conftest.py): mpiexec -n K python -m pytest -q
-p no:cacheprovider tests/python/test_loader.py"""
import os
import subprocess

import numpy as np
import pytest

from loader_common import R, P, has_edge, keep, sg

FANOUTS = [5, 3]


def test_dataset_reads_the_folder(cora):
    ds = sg.Dataset(cora.dir)
    assert ds.num_nodes == cora.n, f"Dataset.num_nodes {ds.num_nodes}, the folder has {cora.n}"
    assert np.array_equal(ds.features, cora.features), "Dataset.features are not the folder's"
    assert np.array_equal(ds.indptr, cora.indptr), "Dataset.indptr is not the folder's"


def test_partition_counts(cora, cora_parts):
    part = cora_parts.part
    assert part.num_nodes == cora.n, f"Partition.num_nodes {part.num_nodes}, the dataset has {cora.n}"
    assert part.num_classes == cora.labels.max() + 1, f"Partition.num_classes {part.num_classes}, the labels have {cora.labels.max() + 1}"
    assert part.feature_dim == cora.features.shape[1], f"Partition.feature_dim {part.feature_dim}, the features have {cora.features.shape[1]}"


def test_partition_features_are_its_nodes_rows(cora, cora_parts):
    c = cora_parts
    assert np.array_equal(c.part.features, cora.features[c.orig[c.lo:c.hi]]), "Partition.features are not its nodes' rows"


@pytest.fixture(scope="module")
def training(cora, cora_parts):
    """Two epochs of a training loader (fanouts 5, 3; 64 seeds a batch): the loader and each
    epoch's batches (loader_common.keep)."""
    loader = sg.NeighborLoader(cora_parts.part, fanouts=FANOUTS, batch_size=64, seed=1)
    epochs = [[keep(b, cora.features[cora_parts.orig[b.n_id]]) for b in loader] for _ in range(2)]
    return loader, epochs


def batches_of(training):
    for epoch, batches in enumerate(training[1]):
        for i, b in enumerate(batches):
            yield epoch, i, b


def test_training_batches_have_distinct_seeds(training, cora_parts):
    for epoch, i, b in batches_of(training):
        d = cora_parts.orig[b.n_id]
        assert len(np.unique(d[: b.batch_size])) == b.batch_size, f"epoch {epoch}, batch {i}: repeated seeds in a batch"


def test_training_batch_features_are_its_nodes_rows(training):
    for epoch, i, b in batches_of(training):
        assert b.x_is_rows, f"epoch {epoch}, batch {i}: a batch's features are not its nodes' rows"


def test_training_batch_labels_are_its_seeds(training, cora, cora_parts):
    for epoch, i, b in batches_of(training):
        d = cora_parts.orig[b.n_id]
        assert np.array_equal(b.y, cora.labels[d[: b.batch_size]]), f"epoch {epoch}, batch {i}: a batch's labels are not its seeds'"


def test_sampled_edges_are_dataset_edges(training, cora, cora_parts):
    for epoch, i, b in batches_of(training):
        d = cora_parts.orig[b.n_id]
        for h, (src, dst) in enumerate(b.edges):
            for s, t in zip(d[src], d[dst]):
                assert has_edge(cora.indptr, cora.indices, t, s), f"epoch {epoch}, batch {i}, block {h}: sampled edge ({s}, {t}) is not in the dataset"


def test_sampled_neighbours_within_fanout(training):
    for epoch, i, b in batches_of(training):
        for h, (_, dst) in enumerate(b.edges):
            per_dst = np.bincount(dst, minlength=b.num_dst[h])
            fanout = FANOUTS[b.num_layers - 1 - h]
            assert per_dst.max(initial=0) <= fanout, f"epoch {epoch}, batch {i}, block {h}: {per_dst.max()} sampled neighbours, fanout {fanout}"


def test_training_nodes_seeded_once_an_epoch(training, cora, cora_parts):
    want = np.zeros(cora.n, dtype=np.int64)
    want[cora.load("train_idx")] = 1
    for epoch, batches in enumerate(training[1]):
        seeds = np.zeros(cora.n, dtype=np.int64)
        for b in batches:
            seeds[cora_parts.orig[b.n_id[: b.batch_size]]] += 1
        sg.allreduce_(seeds)
        assert np.array_equal(seeds, want), f"epoch {epoch}: seeds over all ranks are not the training nodes once each"


def test_ranks_take_the_same_number_of_batches(training):
    for epoch, batches in enumerate(training[1]):
        lo = np.array([len(batches)], dtype=np.int64)
        hi = lo.copy()
        sg.allreduce_(lo, "min")
        sg.allreduce_(hi, "max")
        assert lo[0] == hi[0], f"ranks took {lo[0]} to {hi[0]} batches in epoch {epoch}"


def test_loader_counts_epochs(training):
    assert training[0].epoch == 2, f"the loader counted {training[0].epoch} epochs"


@pytest.fixture(scope="module")
def validation(cora_parts):
    """A validation loader's seeds (every neighbour, 50 a batch), batch by batch."""
    return [b.n_id[: b.batch_size].copy() for b in sg.NeighborLoader(cora_parts.part, fanouts=[-1, -1], batch_size=50, split="val")]


def test_validation_seeds_in_id_order(validation):
    previous = -1
    for i, ids in enumerate(validation):
        assert not (len(ids) and (ids[0] <= previous or np.any(np.diff(ids) <= 0))), f"batch {i}: validation seeds are not in id order"
        previous = ids[-1] if len(ids) else previous


def test_validation_nodes_once_over_ranks(validation, cora, cora_parts):
    taken = np.zeros(cora.n, dtype=np.int64)
    for ids in validation:
        taken[cora_parts.orig[ids]] += 1
    sg.allreduce_(taken)
    want = np.zeros(cora.n, dtype=np.int64)
    want[cora.load("val_idx")] = 1
    assert np.array_equal(taken, want), "validation seeds over all ranks are not the validation nodes once each"


def test_collective_timeout():
    assert sg.collective_timeout() == 600, f"collective_timeout: {sg.collective_timeout()}, expected the default 600"
    assert sg.collective_timeout(120) == 120, f"collective_timeout(120): {sg.collective_timeout()}"


def test_allreduce_mean():
    x = np.full(3, R + 1.0)
    sg.allreduce_(x, "mean")
    assert np.allclose(x, (P + 1) / 2), f"allreduce_ mean gave {x}, expected {(P + 1) / 2}"


def test_torch_env():
    sg.torch_env()
    env = os.environ
    assert env["RANK"] == str(R), f"torch_env: RANK {env['RANK']}, rank {R}"
    assert env["WORLD_SIZE"] == str(P), f"torch_env: WORLD_SIZE {env['WORLD_SIZE']}, size {P}"
    assert env["MASTER_PORT"].isdigit(), f"torch_env: MASTER_PORT {env['MASTER_PORT']}"


def test_bad_split_refused(cora_parts):
    with pytest.raises(ValueError) as e:
        sg.NeighborLoader(cora_parts.part, fanouts=[5], batch_size=8, split="training")
    assert "split 'training': expected train, val, test or all" in str(e.value), f"bad split's error: {e.value}"


# A dataset written from arrays is the folder data convert writes: Cora's own edges, features,
# labels and splits give back its arrays; a bad id is one error naming the array and position.
# write_dataset is not collective: every rank writes its own copy.
@pytest.fixture(scope="module")
def written(cora, work_dir):
    src = np.repeat(np.arange(cora.n), np.diff(cora.indptr))
    out = f"{work_dir}/written-{P}-{R}"
    sg.write_dataset(out, np.stack([src, cora.indices]), cora.n, x=cora.features, y=cora.labels, train_idx=cora.load("train_idx"),
                     val_idx=cora.load("val_idx"), test_idx=cora.load("test_idx"), name="cora", symmetrize=False)
    return out


def test_write_dataset_writes_the_arrays_back(written, cora):
    back = sg.Dataset(written)
    assert np.array_equal(back.indptr, cora.indptr), "write_dataset did not write Cora's indptr back"
    assert np.array_equal(back.indices, cora.indices), "write_dataset did not write Cora's indices back"
    assert np.array_equal(back.features, cora.features), "write_dataset did not write Cora's features back"
    assert np.array_equal(back.labels, cora.labels), "write_dataset did not write Cora's labels back"
    assert np.array_equal(back.train_idx, cora.load("train_idx")), "write_dataset did not write Cora's train_idx back"
    assert back.num_classes == cora.labels.max() + 1, f"the written dataset has {back.num_classes} classes, Cora {cora.labels.max() + 1}"


def test_written_dataset_validates(written, shardgnn_bin):
    r = subprocess.run([shardgnn_bin, "data", "validate", written], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, f"data validate of the written dataset exited {r.returncode}: {r.stderr}"


def test_write_dataset_refuses_a_bad_id(cora, work_dir):
    n = cora.n
    bad = f"{work_dir}/bad-{P}-{R}"
    with pytest.raises(sg.InputError) as e:
        sg.write_dataset(bad, np.array([[0, 1], [1, n]]), n)
    assert "edge_index[1][1]: node %d, expected an id in [0, %d)" % (n, n) in str(e.value), f"a bad edge's error: {e.value}"
    assert not os.path.exists(bad), f"a refused write_dataset left {bad}"


# Resume: a loader restored from a state taken after step 2 of epoch 1 takes the batches the
# uninterrupted loader took from there, the same seeds and the same sampled neighbours.
@pytest.fixture(scope="module")
def uninterrupted(cora_parts):
    whole = sg.NeighborLoader(cora_parts.part, fanouts=FANOUTS, batch_size=16, seed=1)
    whole.set_epoch(1)
    seen, state = [], None
    for b in whole:
        seen.append((b.n_id.copy(), b.edge_index(0).copy()))
        if len(seen) == 2:
            state = whole.state_dict()
    return seen, state


def test_state_taken_mid_epoch(uninterrupted):
    seen, state = uninterrupted
    assert state is not None, f"only {len(seen)} batches an epoch: the test needs 3"


@pytest.fixture(scope="module")
def resumed(cora_parts, uninterrupted):
    loader = sg.NeighborLoader(cora_parts.part, fanouts=FANOUTS, batch_size=16, seed=1)
    loader.load_state_dict(uninterrupted[1])
    again = [(b.n_id.copy(), b.edge_index(0).copy()) for b in loader]
    return loader, again


def test_resumed_loader_takes_the_uninterrupted_batches(uninterrupted, resumed):
    seen, again = uninterrupted[0], resumed[1]
    assert len(again) == len(seen) - 2, f"the resumed loader took {len(again)} batches, the uninterrupted one {len(seen) - 2} from there"
    for i, (a, b) in enumerate(zip(again, seen[2:])):
        assert np.array_equal(a[0], b[0]), f"resumed batch {i}: its nodes are not the uninterrupted loader's"
        assert np.array_equal(a[1], b[1]), f"resumed batch {i}: its sampled edges are not the uninterrupted loader's"


def test_resumed_loader_finishes_its_epoch(resumed):
    epoch = resumed[0].state_dict()["epoch"]
    assert epoch == 2, f"the resumed loader's epoch is {epoch}, not 2: it did not finish its epoch"


def test_another_loaders_state_refused(cora_parts, uninterrupted):
    with pytest.raises(ValueError) as e:
        sg.NeighborLoader(cora_parts.part, fanouts=[5, 5], batch_size=16, seed=1).load_state_dict(uninterrupted[1])
    assert "fanouts" in str(e.value), f"another loader's state: {e.value}"


# Every node of this rank's part once, in id order (embedding the graph).
@pytest.fixture(scope="module")
def everyone(cora, cora_parts):
    return [keep(b, cora.features[cora_parts.orig[b.n_id]]) for b in sg.NeighborLoader(cora_parts.part, fanouts=[-1, -1], batch_size=500, split="all")]


def test_split_all_features_are_the_nodes_rows(everyone):
    for i, b in enumerate(everyone):
        assert b.x_is_rows, f"batch {i}: split all: features are not the nodes' rows"


def test_split_all_takes_every_node_once(everyone, cora, cora_parts):
    taken = np.zeros(cora.n, dtype=np.int64)
    for b in everyone:
        taken[cora_parts.orig[b.n_id[: b.batch_size]]] += 1
    sg.allreduce_(taken)
    assert np.all(taken == 1), f"split all: {int(np.sum(taken != 1))} nodes not taken once"
