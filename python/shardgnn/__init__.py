"""shardgnn from Python: the partitioned graph, the distributed neighbour sampler and the feature
store as a data loader for any PyTorch model, under ``mpiexec -n K python train.py``.

The native core (``_shardgnn``) links no torch: arrays cross as numpy views of the batch or the
shard that holds them (no copy), so the package works beside whichever torch the process has
(``torch.from_numpy`` shares the memory).

    import shardgnn as sg
    sg.init()
    part = sg.Partition("cora.p2")            # this rank's part; collective
    loader = sg.NeighborLoader(part, fanouts=[10, 5], batch_size=256, seed=0)
    for epoch in range(10):
        for batch in loader:                  # every rank the same number of batches
            x, y, n = batch.x, batch.y, batch.batch_size
            ...                               # forward on batch.blocks or batch.edge_index(h)
            sg.allreduce_(grad_array)         # or torch.distributed after sg.torch_env()

A problem every rank must hear of (a damaged file on one rank, options a rank cannot take) is
raised on every rank as CollectiveError (a RuntimeError) with the message of the lowest rank that
found it; a bad file or argument met by a process alone is InputError (a ValueError).
"""

import atexit
import os
import signal
import socket
import sys
import time

import numpy as np

from . import _shardgnn as _native
from ._shardgnn import Dataset, InputError, CollectiveError  # noqa: F401  (the package's API)

__all__ = ["init", "rank", "size", "local_rank", "local_size", "barrier", "collective_timeout", "Dataset", "Partition", "NeighborLoader", "LinkLoader", "LayerwiseInference", "Batch",
           "allreduce_", "torch_env", "widen", "catch_stop_signals", "stop_requested", "exit_resumable", "Checkpoint", "EXIT_RESUMABLE", "write_dataset", "write_pyg", "InputError", "CollectiveError"]

_started = False


def init():
    """Brings MPI up once per process (or adopts it when mpi4py brought it up first). Collective."""
    global _started
    if not _started:
        _native.init()
        atexit.register(_native.finalize)
        _started = True


def rank():
    init()
    return _native.rank()


def size():
    init()
    return _native.size()


def local_rank():
    """This process's place among the job's processes on its node."""
    init()
    return _native.local_rank()


def local_size():
    init()
    return _native.local_size()


def barrier():
    init()
    _native.barrier()


def collective_timeout(seconds=None):
    """The deadline of every wait in a collective (``--collective-timeout`` of the commands,
    default 600 s): a rank that waits longer for its peers ends the job with a message naming the
    collective, instead of hanging. With ``seconds``, sets it (on every rank alike); returns it."""
    init()
    if seconds is not None:
        _native.set_collective_timeout(float(seconds))
    return _native.collective_timeout()


def Partition(path, scratch=""):
    """This rank's part of a partitioned dataset (``shardgnn partition``), its files checked against
    their checksums; with more parts than ranks, its parts merged. Collective."""
    init()
    return _native.Partition(path, scratch)


# The exit status of a job stopped by a signal with its state saved: resumable, as `shardgnn train`
# exits (EX_TEMPFAIL, "try again later"; SLURM's --requeue and the job scripts read it).
EXIT_RESUMABLE = 75
_stop = {"signal": 0, "when": 0.0}
# Launchers repeat what they get (mpiexec's proxy forwards a signal the rank also received from
# slurmstepd, milliseconds apart): the same signal again this soon is the first one again.
_ECHO_SECONDS = 2.0


def _on_stop_signal(sig, frame):
    if _stop["signal"] and not (sig == _stop["signal"] and time.monotonic() - _stop["when"] < _ECHO_SECONDS):
        os._exit(128 + sig)  # a second stop: now, with the shell's status for the signal
    if not _stop["signal"]:
        _stop.update(signal=sig, when=time.monotonic())


def catch_stop_signals():
    """Takes SIGTERM, SIGINT and SIGUSR1 as ``shardgnn train`` takes them (SLURM's preemption,
    scancel, ``--signal=USR1@N``, a terminal's Ctrl-C): the first only sets a flag that
    ``stop_requested()`` reports on every rank at the training loop's next check, so that all stop
    after the same step, save their state, and ``exit_resumable()`` (status ``EXIT_RESUMABLE``); a second ends the
    process at once with 128 + the signal. Call it once, before training."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, _on_stop_signal)


def exit_resumable():
    """Ends the process with EXIT_RESUMABLE (75) after MPI has finalised, as a stopped ``shardgnn
    train`` ends: call it once the state is saved. Under mpiexec, MPICH 4.0's proxy reports a
    status of 0 for a rank it reaps after the rank's output pipes closed, which is most of the time
    (fixed in MPICH 4.1): when this process is the proxy's child, a short-lived child of ours keeps
    stdout open until the proxy has reaped it, so mpiexec reports 75. Other ``atexit`` handlers do
    not run."""
    sys.stdout.flush()
    sys.stderr.flush()
    if _started:
        _native.finalize()
    # Python's handlers do not see who sent a signal: the parent is taken as the sender, which
    # changes nothing unless the parent is the proxy (a stop from elsewhere then waits the same).
    _native.keep_exit_status_for_proxy(os.getppid())
    os._exit(EXIT_RESUMABLE)


class Checkpoint:
    """One file a rank in ``folder`` (``rank<R>-of-<P>.pt``): what a stopped job saves and a resumed
    one loads, with ``torch.save``/``torch.load`` (torch is imported when used, not by the package).

    ``load()`` is collective: it returns this rank's saved object when every rank has its file,
    else None on every rank (a job resumes on all ranks or starts afresh on all). ``save(obj)``
    writes this rank's file atomically (a temporary file renamed), so a stop during a save leaves
    the previous file; it is not collective. With ``folder`` empty or None, nothing is saved and
    ``load()`` is None."""

    def __init__(self, folder):
        init()
        self.folder = folder or ""
        self.path = os.path.join(self.folder, f"rank{_native.rank()}-of-{_native.size()}.pt") if self.folder else ""

    def load(self):
        found = np.array([int(bool(self.path) and os.path.exists(self.path))], dtype=np.int64)
        _native.allreduce_(found, "min")
        if not found[0]:
            return None
        import torch
        # Loaders' states and the scripts' sums are plain values; a checkpoint is the job's own file.
        return torch.load(self.path, weights_only=False)

    def save(self, obj):
        if not self.path:
            return
        import torch
        os.makedirs(self.folder, exist_ok=True)
        tmp = f"{self.path}.tmp-{os.getpid()}"
        torch.save(obj, tmp)
        os.replace(tmp, self.path)


def stop_requested():
    """Whether any rank received a stop signal (catch_stop_signals). Collective: every rank calls it
    at the same point, e.g. after each step, and all get the same answer."""
    init()
    flag = np.array([_stop["signal"]], dtype=np.int64)
    _native.allreduce_(flag, "max")
    return bool(flag[0])


def allreduce_(array, op="sum"):
    """In place over every rank: ``sum``, ``mean`` (floats), ``min`` or ``max`` of a C-contiguous numpy
    array (float32, float64, int32, int64) or a CPU torch tensor (through its numpy view). Collective."""
    init()
    a = array.numpy() if hasattr(array, "numpy") and not isinstance(array, np.ndarray) else array
    # Refused before the collective, on every rank alike: a mean of integers would be truncated.
    if op == "mean" and not np.issubdtype(a.dtype, np.floating):
        raise ValueError(f"allreduce_: mean of a {a.dtype} array; take the sum, or pass floats")
    _native.allreduce_(a, "sum" if op == "mean" else op)
    if op == "mean":
        a /= _native.size()
    return array


def torch_env(port=None):
    """Sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from MPI, so
    that ``torch.distributed.init_process_group("gloo" or "nccl")`` and DDP start under mpiexec or
    srun without torchrun. Rank 0's host and a free port on it (or ``port``). Collective."""
    init()
    if _native.rank() == 0:
        if port is None:
            with socket.socket() as s:
                s.bind(("", 0))
                port = s.getsockname()[1]
        addr = socket.gethostbyname(socket.gethostname())
        msg = f"{addr}:{port}".encode()
    else:
        msg = b""
    addr, port = _native.broadcast_bytes(msg, 0).decode().rsplit(":", 1)
    os.environ.update(MASTER_ADDR=addr, MASTER_PORT=port, RANK=str(_native.rank()), WORLD_SIZE=str(_native.size()),
                      LOCAL_RANK=str(_native.local_rank()), LOCAL_WORLD_SIZE=str(_native.local_size()))


def widen(rows, dtype):
    """2-byte feature rows as stored (uint16 bits of ``float16`` or ``bfloat16``) as float32."""
    if dtype == "float32":
        return np.asarray(rows, dtype=np.float32)
    if dtype == "float16":
        return rows.view(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return (rows.astype(np.uint32) << 16).view(np.float32)
    raise ValueError(f"dtype {dtype!r}: expected float32, float16 or bfloat16")


def _array(a):
    """A numpy array of a numpy array, a list or a (CPU or GPU) torch tensor."""
    if a is None:
        return None
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a)


def write_dataset(path, edge_index, num_nodes=None, x=None, y=None, train_idx=None, val_idx=None, test_idx=None, name="python",
                  symmetrize=True, overwrite=False, feature_dtype="float32"):
    """Writes a dataset folder (what ``shardgnn data convert`` writes) from arrays: ``edge_index``
    ``[2, E]`` (source, destination, PyG's convention) or a scipy sparse adjacency, cleaned as
    ``data convert`` cleans (the reverse of every edge added unless ``symmetrize=False``, self-loops
    and duplicates dropped, rows sorted); ``x`` ``[num_nodes, F]`` (dense or scipy sparse), stored
    as ``feature_dtype`` (float32, or 2 bytes a value: float16, bfloat16); ``y`` one class per node
    (-1: unlabelled), or label sets ``[num_nodes, C]`` of 0 and 1; the split ids. Checked, and
    written atomically: nothing is left at ``path`` on an error (an InputError naming the array and
    the position). Not collective."""
    if hasattr(edge_index, "tocoo"):  # a scipy sparse adjacency: entry (i, j) is an edge i -> j
        coo = edge_index.tocoo()
        num_nodes = coo.shape[0] if num_nodes is None else num_nodes
        edge_index = np.stack([coo.row, coo.col])
    if hasattr(x, "toarray"):  # scipy sparse features, stored dense as data convert stores them
        x = x.toarray()
    ei = _array(edge_index)
    if num_nodes is None:
        num_nodes = len(x) if x is not None else (int(ei.max()) + 1 if ei.size else 0)
    _native.write_dataset(path, ei, int(num_nodes), _array(x), _array(y), _array(train_idx), _array(val_idx), _array(test_idx), name,
                          bool(symmetrize), bool(overwrite), feature_dtype)


def write_pyg(data, path, name="pyg", symmetrize=True, overwrite=False):
    """write_dataset from a ``torch_geometric.data.Data``: its edge_index, x, y and the
    train/val/test masks (as ids)."""
    def ids(mask):
        return None if mask is None else np.flatnonzero(_array(mask))
    write_dataset(path, data.edge_index, data.num_nodes, getattr(data, "x", None), getattr(data, "y", None), ids(getattr(data, "train_mask", None)),
                  ids(getattr(data, "val_mask", None)), ids(getattr(data, "test_mask", None)), name, symmetrize, overwrite)


class Batch:
    """One sampled batch. ``n_id``: the global ids of its nodes, seeds first (``batch_size`` of them);
    ``x``: their features, float32 rows aligned with ``n_id``; ``y``: the seeds' classes (-1:
    unlabelled), or for label sets their bits, 64 a word; ``blocks``: per layer, input layer first
    (as DGL's), ``(indptr, indices, num_src, num_dst)`` with positions in ``n_id``;
    ``edge_index(h)``: block h's edges as PyG's ``[2, E]`` (source row, destination row), local
    positions in ``n_id``; ``relations(h)``: on a graph with relation ids, each of those edges'
    relation (an index into the partition's ``relations``), else None."""

    def __init__(self, native, node_types=(), relations=()):
        self._b = native
        self._types = list(node_types)
        self._relations = list(relations)

    @property
    def batch_size(self):
        return self._b.batch_size

    @property
    def n_id(self):
        return self._b.n_id

    @property
    def x(self):
        return self._b.x

    @property
    def y(self):
        return self._b.y

    @property
    def num_layers(self):
        return self._b.num_layers

    @property
    def node_type(self):
        """A typed graph's batch: the type of each node of ``n_id`` (None for one node type)."""
        return self._b.node_type

    def type_at(self, t):
        """The positions in ``n_id`` of the nodes of type ``t``."""
        return self._b.type_at(t)

    def type_x(self, t):
        """The features of the nodes of type ``t`` (``type_at(t)``'s order), at the type's width; None
        for a type without features."""
        return self._b.type_x(t)

    def type_ids(self, t):
        """For a type without features, its nodes' ids in the type's own numbering (the rows of a
        learnable embedding table, as ``shardgnn train`` keeps them)."""
        return self._b.type_ids(t)

    @property
    def pairs(self):
        """A link batch's pairs ``[P, 3]``: the positions in ``n_id`` of the two ends, and the target
        (1: a training edge, 0: one of its corrupted pairs); None for a node batch."""
        return self._b.pairs

    @property
    def blocks(self):
        return [self._b.block(h) for h in range(self._b.num_layers)]

    def edge_index(self, h):
        return self._b.edge_index(h)

    def relations(self, h):
        return self._b.relations(h)

    def edges(self):
        """Every layer's sampled edges together, each once, ``[2, E]`` positions in ``n_id``."""
        edges = np.concatenate([self.edge_index(h) for h in range(self.num_layers)], axis=1)
        return np.unique(edges, axis=1) if edges.shape[1] else edges

    def _related_edges(self):
        """On a graph with relation ids: every layer's (source, destination, relation), each once,
        ``[3, E]`` (a pair joined by two relations is two edges)."""
        edges = np.concatenate([np.vstack([self.edge_index(h), self.relations(h)[None, :]]) for h in range(self.num_layers)], axis=1)
        return np.unique(edges, axis=1) if edges.shape[1] else edges

    def to_hetero(self):
        """A typed graph's batch as plain arrays, what ``to_pyg`` puts in a ``HeteroData``: per node
        type name ``{"n_id", "x" or "type_ids"}``, and per edge type ``(src, relation, dst)`` its
        ``[2, E]`` positions within the two types' nodes. A message edge from a neighbour of type
        B to a node of type A is filed under the relation from B to A (as PyG reads edge types),
        else under the stored relation from A to B with ``rev_`` before its name. On a graph with
        relation ids, an edge drawn from A's row as relation r (from A to B) is filed under r's
        reverse, ``(B, rev_<r>, A)``, or ``(B, <s>, A)`` where r is named ``rev_<s>``: the reverse
        relation's own key where ``data convert --add-reverse`` made it."""
        if self.node_type is None:
            raise ValueError("to_hetero: the batch is of a graph with one node type")
        nt = self.node_type
        local = np.empty(len(nt), dtype=np.int64)
        nodes = {}
        for t, (name, _, width) in enumerate(self._types):
            at = self.type_at(t)
            local[at] = np.arange(len(at))
            nodes[name] = {"n_id": self.n_id[at]}
            if width > 0:
                nodes[name]["x"] = self.type_x(t)
            else:
                nodes[name]["type_ids"] = self.type_ids(t)
        edges = {}
        if self.num_layers and self.relations(0) is not None:
            src, dst, rel = self._related_edges()
            for r in sorted({int(x) for x in rel}):
                s, name, d = self._relations[r]
                keep = rel == r
                key = (d, name[4:] if name.startswith("rev_") else "rev_" + name, s)
                edges[key] = np.stack([local[src[keep]], local[dst[keep]]])
            return nodes, edges
        index = {name: t for t, (name, _, _) in enumerate(self._types)}
        by_pair = {(index[s], index[d]): (s, r, d) for s, r, d in self._relations}
        src, dst = self.edges()
        for a, b in sorted({(int(x), int(y)) for x, y in zip(nt[dst], nt[src])}):
            keep = (nt[dst] == a) & (nt[src] == b)
            if (b, a) in by_pair:
                key = by_pair[(b, a)]
            else:
                s, r, d = by_pair[(a, b)]
                key = (d, "rev_" + r, s)
            edges[key] = np.stack([local[src[keep]], local[dst[keep]]])
        return nodes, edges

    def to_pyg(self):
        """A ``torch_geometric`` ``Data`` over the batch's nodes (x, y of the seeds, n_id, batch_size,
        and every layer's sampled edges once as ``edge_index``), or for a typed graph a
        ``HeteroData`` of ``to_hetero()``'s arrays, with the seeds' ``y`` and ``batch_size`` on the
        seeds' type. Needs PyG."""
        import torch
        from torch_geometric.data import Data, HeteroData
        if self.node_type is not None:
            nodes, edges = self.to_hetero()
            data = HeteroData()
            for name, arrays in nodes.items():
                for key, a in arrays.items():
                    data[name][key] = torch.from_numpy(np.ascontiguousarray(a))
            for key, e in edges.items():
                data[key].edge_index = torch.from_numpy(e)
            if self.batch_size:
                seed_type = self._types[int(self.node_type[0])][0]
                data[seed_type].y = torch.from_numpy(self.y)
                data[seed_type].batch_size = self.batch_size
            return data
        edges = self.edges()
        return Data(x=torch.from_numpy(self.x), edge_index=torch.from_numpy(edges), y=torch.from_numpy(self.y),
                    n_id=torch.from_numpy(self.n_id), batch_size=self.batch_size)


class NeighborLoader:
    """Batches of ``batch_size`` seeds of ``split`` (train, val, test, or all: every node, for
    embedding the graph) owned by this rank, their
    ``fanouts`` neighbourhoods sampled across every rank's part (-1: every neighbour), features and
    targets fetched from their owners. ``shuffle`` (train only): the seeds in a fresh order every
    epoch, keyed by ``seed``, the epoch and the rank, as ``shardgnn train`` draws them; otherwise in
    id order. Iterating is collective: every rank takes every batch of an epoch (a rank whose seeds
    ran out gets empty batches, ``batch_size`` 0). ``epoch`` counts the epochs iterated (or set).

    ``state_dict()`` is where the iteration stands (epoch, and the next step within it) and
    ``load_state_dict()`` restores it: a resumed job takes the batches the uninterrupted one would
    have taken from there, the same seeds and the same sampled neighbours (both are keyed by the
    seed, the epoch, the step and the rank, as ``shardgnn train --resume`` relies on). Save it
    after each batch's optimiser step, with the model's checkpoint."""

    def __init__(self, partition, fanouts, batch_size, split="train", shuffle=True, seed=0, seed_sampling="shard", drop_last=False, prefetch=2):
        if split not in ("train", "val", "test", "all"):
            raise ValueError(f"split {split!r}: expected train, val, test or all")
        init()
        o = _native.LoaderOptions()
        o.split, o.shuffle, o.seed, o.seed_sampling, o.drop_last, o.prefetch = split, bool(shuffle and split == "train"), int(seed), seed_sampling, bool(
            drop_last), int(prefetch)
        self._loader = _native.Loader(partition, list(fanouts), int(batch_size), o)
        self._types, self._relations = partition.node_types, partition.relations
        self._identity = {"fanouts": list(fanouts), "batch_size": int(batch_size), "split": split, "shuffle": bool(shuffle), "seed": int(seed),
                          "seed_sampling": seed_sampling, "drop_last": bool(drop_last), "ranks": _native.size()}
        self.epoch = 0
        self.step = 0  # the next batch of the epoch

    def __iter__(self):
        steps = self._loader.begin_epoch(self.epoch, self.step)
        try:
            while True:
                native = self._loader.next()
                if native is None:
                    break
                self.step += 1
                yield Batch(native, self._types, self._relations)
        finally:
            # A loop left early (a break on every rank at the same step, e.g. on stop_requested())
            # stops the prefetch thread where every rank's can stop; the epoch stays where it stood.
            if self.step < steps:
                self._loader.end()
        self.epoch += 1
        self.step = 0

    def __len__(self):
        """Not known before an epoch begins (every rank's count is agreed then): use ``for``."""
        raise TypeError("the number of batches is agreed by every rank when an epoch begins; iterate the loader")

    def set_epoch(self, epoch):
        self.epoch = int(epoch)
        self.step = 0

    def state_dict(self):
        return dict(self._identity, epoch=self.epoch, step=self.step)

    def load_state_dict(self, state):
        """Restores state_dict()'s position; a state of another loader (fanouts, batch, split,
        shuffle, seed or rank count) is a ValueError naming what differs."""
        for key, mine in self._identity.items():
            if state.get(key) != mine:
                raise ValueError(f"loader state: {key} {state.get(key)!r}, this loader's is {mine!r}")
        self.epoch, self.step = int(state["epoch"]), int(state["step"])


class LinkLoader:
    """Link prediction's batches over a partition of a dataset split by ``shardgnn data
    split-edges``, as ``shardgnn train --task link`` draws them: ``batch_size`` of this rank's
    training edges (each undirected edge once over all ranks, u < v with u owned here) in an order
    keyed by ``seed``, the epoch and the rank, each with ``negatives`` corrupted destinations
    (uniform over the nodes, keyed by the edge: the same wherever it is trained); their ends are
    the batch's seeds and ``batch.pairs`` says which pair is which. With ``exclude`` the positives'
    edges are cut from the sampled blocks in both directions (DGL's ``exclude="reverse_id"``), so
    that message passing never sees what is scored. The held-out pairs to score are
    ``Partition.held_out("val_pos" | "val_neg" | "test_pos" | "test_neg")``. Iterating is
    collective; ``state_dict``/``load_state_dict`` as NeighborLoader's."""

    def __init__(self, partition, fanouts, batch_size, negatives=1, seed=0, exclude=True, prefetch=2):
        init()
        self._loader = _native.LinkLoader(partition, list(fanouts), int(batch_size), int(negatives), int(seed), bool(exclude), int(prefetch))
        self._types, self._relations = partition.node_types, partition.relations
        self._identity = {"fanouts": list(fanouts), "batch_size": int(batch_size), "negatives": int(negatives), "seed": int(seed),
                          "exclude": bool(exclude), "ranks": _native.size()}
        self.epoch = 0
        self.step = 0

    @property
    def edges(self):
        """This rank's training edges."""
        return self._loader.edges

    __iter__ = NeighborLoader.__iter__
    set_epoch = NeighborLoader.set_epoch
    state_dict = NeighborLoader.state_dict
    load_state_dict = NeighborLoader.load_state_dict


class LayerwiseInference:
    """Whole neighbourhoods, layer by layer, over every node: what DGL's and PyG's layer-wise
    inference do for evaluation and for embedding a graph, where sampling would add noise and the
    L-hop neighbourhoods of every node would repeat work. A layer's table is this rank's own rows
    (``num_own``, its nodes in id order, ``Partition.node_range``) then its halo's (``num_halo``,
    neighbours owned elsewhere, ``halo_ids``); ``exchange(h)`` builds it from the layer's input
    rows of this rank's nodes (one all-to-all, collective), and ``blocks(max_edges)`` cuts the
    owned nodes into ranges ``[a, b)`` with their whole in-neighbourhoods as PyG's bipartite
    ``edge_index`` (row 0: table rows, row 1: position in the range). With PyG::

        h = torch.from_numpy(sg.widen(part.features, part.feature_dtype))
        for conv in convs:
            table = torch.from_numpy(inf.exchange(h.numpy()))
            h = torch.cat([conv((table, table[a:b]), torch.from_numpy(e)) for a, b, e in inf.blocks()])

    Collective to build (one all-to-all of the halo's ids). Memory: one table of the widest layer,
    the graph's edges as int64 table rows."""

    def __init__(self, partition):
        init()
        self._inf = _native.Layerwise(partition)
        self.num_own, self.num_halo = self._inf.num_own, self._inf.num_halo

    @property
    def indptr(self):
        """The owned nodes' in-neighbourhoods as CSR over table rows (with ``indices``)."""
        return self._inf.indptr

    @property
    def indices(self):
        return self._inf.indices

    @property
    def halo_ids(self):
        """The global ids of the table's halo rows."""
        return self._inf.halo_ids

    def exchange(self, rows):
        """The layer's table from ``rows`` ``[num_own, width]`` (a numpy array or CPU tensor, as
        float32): those rows, then the halo's from their owners. Collective; every rank passes one
        width."""
        return self._inf.exchange(np.ascontiguousarray(_array(rows), dtype=np.float32))

    def blocks(self, max_edges=1 << 22):
        """``(a, b, edge_index)`` for consecutive ranges of owned nodes, each range's in-edges at most
        ``max_edges`` (a node with more is a range of its own): its edges as ``[2, E]`` int64, table
        rows of the sources and the destinations' positions in ``[a, b)``. Not collective."""
        indptr, indices = self.indptr, self.indices
        a, n = 0, self.num_own
        while a < n:
            b = max(a + 1, int(np.searchsorted(indptr, indptr[a] + max_edges, side="right")) - 1)
            b = min(b, n)
            e0, e1 = int(indptr[a]), int(indptr[b])
            dst = np.repeat(np.arange(b - a, dtype=np.int64), np.diff(indptr[a:b + 1]))
            yield a, b, np.stack([np.asarray(indices[e0:e1], dtype=np.int64), dst])
            a = b
