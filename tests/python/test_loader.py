"""The Python loader (python/shardgnn) at this job's rank count against a serial reference read
with numpy alone from the dataset folder and the partition's files: every batch's features and
labels are its nodes' rows in the dataset, every sampled edge is a dataset edge within its hop's
fanout, every training node is a seed exactly once an epoch over all ranks, the validation loader
takes each validation node once in id order, and allreduce_ and torch_env agree on every rank.
Usage: mpiexec -n K python3 test_loader.py DATASET PARTITION"""
import os
import sys

import numpy as np

from loader_common import R, P, csr, dataset_ids, fail, has_edge, sg

ds_dir, part_dir = sys.argv[1], sys.argv[2]

indptr, indices = csr(ds_dir)
features, labels = np.load(f"{ds_dir}/features.npy"), np.load(f"{ds_dir}/labels.npy")
train, val = np.load(f"{ds_dir}/train_idx.npy"), np.load(f"{ds_dir}/val_idx.npy")
n = len(indptr) - 1
orig = dataset_ids(part_dir)

ds = sg.Dataset(ds_dir)
if not (ds.num_nodes == n and np.array_equal(ds.features, features) and np.array_equal(ds.indptr, indptr)):
    fail("Dataset's arrays are not the folder's")
part = sg.Partition(part_dir)
if part.num_nodes != n or part.num_classes != labels.max() + 1 or part.feature_dim != features.shape[1]:
    fail(f"Partition's counts: {part.num_nodes} nodes, {part.num_classes} classes, {part.feature_dim} features")
lo, hi = part.node_range
if not np.array_equal(part.features, features[orig[lo:hi]]):
    fail("Partition.features are not its nodes' rows")

fanouts = [5, 3]
loader = sg.NeighborLoader(part, fanouts=fanouts, batch_size=64, seed=1)
for epoch in range(2):
    seeds = np.zeros(n, dtype=np.int64)
    batches = 0
    for b in loader:
        batches += 1
        d = orig[b.n_id]
        if len(np.unique(d[: b.batch_size])) != b.batch_size:
            fail("repeated seeds in a batch")
        if not np.array_equal(b.x, features[d]):
            fail(f"epoch {epoch}: a batch's features are not its nodes' rows")
        if not np.array_equal(b.y, labels[d[: b.batch_size]]):
            fail(f"epoch {epoch}: a batch's labels are not its seeds'")
        seeds[d[: b.batch_size]] += 1
        for h in range(b.num_layers):
            src, dst = b.edge_index(h)
            for s, t in zip(d[src], d[dst]):
                if not has_edge(indptr, indices, t, s):
                    fail(f"block {h}: sampled edge ({s}, {t}) is not in the dataset")
            per_dst = np.bincount(dst, minlength=b.blocks[h][3])
            if per_dst.max(initial=0) > fanouts[b.num_layers - 1 - h]:
                fail(f"block {h}: {per_dst.max()} sampled neighbours, fanout {fanouts[b.num_layers - 1 - h]}")
    sg.allreduce_(seeds)
    want = np.zeros(n, dtype=np.int64)
    want[train] = 1
    if not np.array_equal(seeds, want):
        fail(f"epoch {epoch}: seeds over all ranks are not the training nodes once each")
    counts = np.array([batches], dtype=np.int64)
    lo_hi = counts.copy()
    sg.allreduce_(counts, "min")
    sg.allreduce_(lo_hi, "max")
    if counts[0] != lo_hi[0]:
        fail(f"ranks took {counts[0]} to {lo_hi[0]} batches in epoch {epoch}")
if loader.epoch != 2:
    fail(f"the loader counted {loader.epoch} epochs")

# Validation: this rank's validation nodes in id order, each once over all ranks.
taken = np.zeros(n, dtype=np.int64)
previous = -1
for b in sg.NeighborLoader(part, fanouts=[-1, -1], batch_size=50, split="val"):
    ids = b.n_id[: b.batch_size]
    if len(ids) and (ids[0] <= previous or np.any(np.diff(ids) <= 0)):
        fail("validation seeds are not in id order")
    previous = ids[-1] if len(ids) else previous
    taken[orig[ids]] += 1
sg.allreduce_(taken)
want = np.zeros(n, dtype=np.int64)
want[val] = 1
if not np.array_equal(taken, want):
    fail("validation seeds over all ranks are not the validation nodes once each")

if sg.collective_timeout() != 600 or sg.collective_timeout(120) != 120:
    fail(f"collective_timeout: {sg.collective_timeout()}")
x = np.full(3, R + 1.0)
sg.allreduce_(x, "mean")
if not np.allclose(x, (P + 1) / 2):
    fail(f"allreduce_ mean gave {x}")
sg.torch_env()
if os.environ["RANK"] != str(R) or os.environ["WORLD_SIZE"] != str(P) or not os.environ["MASTER_PORT"].isdigit():
    fail(f"torch_env: {os.environ['RANK']}, {os.environ['WORLD_SIZE']}, {os.environ['MASTER_PORT']}")
try:
    sg.NeighborLoader(part, fanouts=[5], batch_size=8, split="training")
    fail("a bad split was accepted")
except ValueError as e:
    if "split 'training': expected train, val, test or all" not in str(e):
        fail(f"bad split's error: {e}")
print(f"rank {R}/{P}: ok", flush=True)

# A dataset written from arrays is the folder data convert writes: Cora's own edges, features,
# labels and splits give back its arrays; a bad id is one error naming the array and position.
if R == 0:
    import subprocess
    src = np.repeat(np.arange(n), np.diff(indptr))
    out = os.environ["WORK"] + f"/written-{P}"
    sg.write_dataset(out, np.stack([src, indices]), n, x=features, y=labels, train_idx=train, val_idx=val,
                     test_idx=np.load(f"{ds_dir}/test_idx.npy"), name="cora", symmetrize=False)
    back = sg.Dataset(out)
    if not (np.array_equal(back.indptr, indptr) and np.array_equal(back.indices, indices) and np.array_equal(back.features, features)
            and np.array_equal(back.labels, labels) and np.array_equal(back.train_idx, train) and back.num_classes == labels.max() + 1):
        fail("write_dataset did not write Cora's arrays back")
    subprocess.run([os.environ["SHARDGNN"], "data", "validate", out], check=True, stdout=subprocess.DEVNULL)
    try:
        sg.write_dataset(os.environ["WORK"] + f"/bad-{P}", np.array([[0, 1], [1, n]]), n)
        fail("an edge to a node past num_nodes was written")
    except sg.InputError as e:
        if "edge_index[1][1]: node %d, expected an id in [0, %d)" % (n, n) not in str(e) or os.path.exists(os.environ["WORK"] + f"/bad-{P}"):
            fail(f"a bad edge's error: {e}")
    print("write_dataset: ok", flush=True)

# Resume: a loader restored from a state taken after step 2 of epoch 1 takes the batches the
# uninterrupted loader took from there, the same seeds and the same sampled neighbours.
whole = sg.NeighborLoader(part, fanouts=fanouts, batch_size=16, seed=1)
whole.set_epoch(1)
seen, state = [], None
for b in whole:
    seen.append((b.n_id.copy(), b.edge_index(0).copy()))
    if len(seen) == 2:
        state = whole.state_dict()
if state is None:
    fail(f"only {len(seen)} batches an epoch: the test needs 3")
resumed = sg.NeighborLoader(part, fanouts=fanouts, batch_size=16, seed=1)
resumed.load_state_dict(state)
again = [(b.n_id.copy(), b.edge_index(0).copy()) for b in resumed]
if len(again) != len(seen) - 2 or any(not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])) for a, b in zip(again, seen[2:])):
    fail("the resumed loader's batches are not the uninterrupted one's")
if resumed.state_dict()["epoch"] != 2:
    fail("the resumed loader did not finish its epoch")
try:
    sg.NeighborLoader(part, fanouts=[5, 5], batch_size=16, seed=1).load_state_dict(state)
    fail("another loader's state was accepted")
except ValueError as e:
    if "fanouts" not in str(e):
        fail(f"another loader's state: {e}")

# Every node of this rank's part once, in id order (embedding the graph).
everyone = np.zeros(n, dtype=np.int64)
for b in sg.NeighborLoader(part, fanouts=[-1, -1], batch_size=500, split="all"):
    everyone[orig[b.n_id[: b.batch_size]]] += 1
    if not np.array_equal(b.x, features[orig[b.n_id]]):
        fail("split all: features are not the nodes' rows")
sg.allreduce_(everyone)
if not np.all(everyone == 1):
    fail("split all: not every node once")
print(f"rank {R}/{P}: resume and split all ok", flush=True)
