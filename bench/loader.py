#!/usr/bin/env python3
"""The Python loader (`shardgnn.NeighborLoader`) against its limits and its peers (issue 59, item 4).

    PYTHONPATH=build-torch/python build-torch/venv/bin/python bench/loader.py \\
        --shardgnn build-torch/tools/shardgnn --json loader.json

Three comparisons, each printed as a ratio with both absolute figures, on one graph: `shardgnn
bench train`'s stochastic block model (--nodes, --avg-degree 50, 100 features, 10 classes,
--train 0.05, its 2-part METIS partition; 1 rank reads a 1-part partition of the same graph),
fanouts 15,10,5, batch 1024 seeds per rank:

1. Batches per second of the Python loader against the native `shardgnn bench sampler` on the
   same partition, fanouts, batch size and seed, at 1 and 2 ranks (target: 0.9x or more). Equal
   by construction: both draw epoch e's seeds from the sampler's schedule keyed by (seed, e,
   rank) and sample with the same keyed RNG, so they take the same batches (checked: the input
   nodes and sampled edges per batch are printed side by side); both fetch every input node's
   features (float32 rows) and the seeds' labels through the same FeatureStore with the same
   cache (degree policy, 20%); both time every batch of epochs 0..E-1 from the first one (no
   warm-up is excluded by either; shard loading and the cache's build are outside both clocks),
   and report steps per rank over the slowest rank's wall time. E is calibrated per rank count
   so that a native run takes about --seconds. The native figure is `steps per rank` over
   `s wall, slowest rank` of bench sampler's report (from its text lines: its JSON has neither
   yet; taken from the JSON as steps_per_rank and wall_s once it has them); at 2 ranks that wall
   contains the two timed barriers per batch that bench sampler adds to split skew from work,
   which the Python loader does not have. What the Python side touches per batch, as a PyG training script does:
   `torch.from_numpy` of `batch.x` (float32 [nodes, F], no copy), `batch.y` and `batch.n_id`,
   and `torch.from_numpy(batch.edge_index(h))` for every layer h (an int64 [2, E] array built
   per call: that is a copy). A second figure touches `batch.blocks` (views, no copy) instead of
   edge_index: the loader's own cost without building PyG's edge lists.
2. The Python loader at 1 rank against PyG's own `torch_geometric.loader.NeighborLoader` in one
   process on the same graph (the dataset folder, as a `Data` with x, y and its edges; in-memory
   float32 x), fanouts, batch size and training seeds, shuffled, the same number of epochs
   (target: ours 3x or more per core). "Per core": ours is one MPI rank (one process, no
   sampling thread) and PyG runs with torch.set_num_threads(1), OMP/MKL threads 1 and
   num_workers=0; each side's CPU seconds over wall seconds are printed to show it used one core
   (and ours at 2 ranks, per rank, against the same PyG figure: two ranks on two cores). PyG's
   batch is touched as a training script does: x, y, edge_index, batch_size (all tensors it made;
   its x rows are gathered in its collate, inside the clock). Sampling differs in kind: ours
   samples every node of a hop's frontier again at the next hop (DGL's blocks), PyG samples only
   the nodes new at each hop, so ours samples more edges per batch; sampled edges per second are
   printed beside batches per second. PyG's sampling kernel: pyg-lib's when it is installed, else
   torch-sparse's, else a library holding pyg-lib's neighbor_sample kernel compiled from pyg-lib's
   own source outside this repository (--pyg-sampler-lib; PyPI has neither for torch 2.11). Which one ran is printed and recorded.
3. An epoch of GraphSAGE in PyG (SAGEConv mean, the shape of bench train's --model sage: layers
   100 -> 256 -> 256 -> 10, ReLU between, dropout 0.5 on every layer's input, Adam lr 0.01 and
   weight decay 5e-4, one thread per rank) trained on our loader at 1 and 2 ranks (gradients
   averaged with one `shardgnn.allreduce_` of a flat buffer per step; each layer applied to its
   block as PyG's bipartite `conv((x, x[:num_dst]), edge_index(h))`, DGL's block computation;
   --train-adj csr hands PyG each block's CSR as a torch sparse adj_t instead, no edge_index)
   against DistDGL's GraphSAGE run by `shardgnn bench train --distdgl-python PY` (one partition,
   one server and one 1-thread trainer per rank, batch 1024 per trainer; its result file's
   per-epoch times), with bench train's native `shardgnn train` beside it. Both sides train
   --train-epochs epochs; an epoch's time is its slowest rank's or trainer's, and the median
   epoch is compared (the fastest is also printed: bench train reports that one).

Repetitions: comparisons 1 and 2 run --reps times, native and Python runs interleaved (their
order alternating), and report the median; 3 reports the median epoch. A failed peer or run fails
the benchmark: exit status 1, with the failed run's own last error line. Output: these lines on
stdout (progress on stderr), and with --json every figure, the command line, lscpu's model name,
the date and the git commit. The graph, its partitions and DistDGL's partitions stay in
--workdir for the next run. With the defaults it should take 6 to 8 minutes on 2 cores (estimated
from its parts, the first run also generating the graph and DistDGL's partitions); --only picks
comparisons, --dataset runs 1 and 2 on another dataset folder (e.g. Amazon-Photo with
--loader-batch 64, bench sampler's published setting).

`--worker ...` is this script run under mpiexec (or alone) by itself; not for direct use.
"""
import argparse
import datetime
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.abspath(__file__)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


# --------------------------------------------------------------------------- running and failing

class RunFailed(Exception):
    """A run that failed: who it was and its own last error line."""

    def __init__(self, who, line):
        super().__init__(f"{who} failed: {line}")
        self.who, self.line = who, line


# What MPICH's mpiexec prints after a rank died (its "EXIT STRING" line, e.g. "Killed (signal 9)",
# is kept: with a killed rank it is the only word of the cause); the rank's own error is above it.
_LAUNCHER_NOISE = re.compile(r"^\s*$|^=|^\s*(This typically refers|Please see the FAQ)|^\[(mpiexec|proxy:)")


def last_error_line(*texts):
    """The last line that is not the launcher's epilogue, of the first text that has one."""
    for text in texts:
        for line in reversed((text or "").splitlines()):
            if not _LAUNCHER_NOISE.search(line):
                return line.strip()
    return ""


def run(argv, who, env=None, timeout=1800):
    """Runs argv; its stdout, or RunFailed with its own last error line."""
    full_env = dict(os.environ, **(env or {}))
    try:
        p = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RunFailed(who, f"timed out after {timeout} s: {shlex.join(argv)}")
    except OSError as e:
        raise RunFailed(who, f"{argv[0]}: {e}")
    if p.returncode != 0:
        line = last_error_line(p.stderr, p.stdout)
        raise RunFailed(who, f"exit {p.returncode}" + (f": {line}" if line else ""))
    return p.stdout


def run_with_stderr_tail(argv, who, env=None, timeout=1800):
    """As run, its stderr shown as it comes (a long run's progress) and kept for the error line."""
    full_env = dict(os.environ, **(env or {}))
    with tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.Popen(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        except OSError as e:
            raise RunFailed(who, f"{argv[0]}: {e}")
        import threading

        def pump():
            for line in p.stderr:
                sys.stderr.write("  | " + line)
                err.write(line)
        t = threading.Thread(target=pump, daemon=True)
        t.start()
        try:
            out = p.stdout.read()
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise RunFailed(who, f"timed out after {timeout} s: {shlex.join(argv)}")
        t.join()
        err.seek(0)
        if p.returncode != 0:
            line = last_error_line(err.read(), out)
            raise RunFailed(who, f"exit {p.returncode}" + (f": {line}" if line else ""))
        return out


def read_json(path, who):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RunFailed(who, f"no result in {path}: {e}")


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- bench sampler's report

def parse_bench_sampler(stdout, report):
    """Steps per rank and the slowest rank's wall seconds of one `bench sampler` run, from its JSON
    report where it carries them (wall_s, steps_per_rank), else from its text lines (which print
    them: `N steps per rank`, `(W s wall, slowest rank)`); input nodes and sampled edges per batch."""
    def grab(pattern, what):
        m = re.search(pattern, stdout)
        if not m:
            raise RunFailed("native bench sampler", f"its report has no {what} (pattern {pattern!r})")
        return float(m.group(1))
    steps = report.get("steps_per_rank")
    wall = report.get("wall_s")
    if steps is None:
        steps = grab(r"(\d+) steps per rank", "steps per rank")
    if wall is None:
        wall = grab(r"\(([\d.]+) s wall, slowest rank\)", "wall time")
    edges = grab(r"sampled edges / s / core\s+\S+\s+\((\d+) edges per batch\)", "sampled edges per batch")
    return {"steps_per_rank": float(steps), "wall_s": float(wall), "input_nodes_per_batch": float(report.get("input_nodes_per_batch", 0)),
            "sampled_edges_per_batch": edges, "sampled_edges_per_s_per_core": float(report.get("sampled_edges_per_s_per_core", 0)),
            "wall_from": "json" if "wall_s" in report else "text (2 decimals)"}


# --------------------------------------------------------------------------- workers (in mpiexec)

def _sg():
    import shardgnn as sg
    sg.init()
    return sg


def _rank_sums(sg, values, op="sum"):
    import numpy as np
    a = np.array(values, dtype=np.float64)
    sg.allreduce_(a, op)
    return a.tolist()


def worker_loader(a):
    """Times sg.NeighborLoader over epochs 0..E-1 at this job's rank count, once per touch variant
    (each a fresh loader over the same partition); rank 0 writes the result."""
    import resource
    import torch
    torch.set_num_threads(1)
    sg = _sg()
    part = sg.Partition(a.part)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    out = {"ranks": sg.size(), "epochs": a.epochs, "variants": {}}
    for touch in a.touch.split(","):
        loader = sg.NeighborLoader(part, fanouts, a.batch, split="train", shuffle=True, seed=a.seed)
        steps = nodes = edges = 0
        sg.barrier()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        for _ in range(a.epochs):
            for b in loader:
                x = torch.from_numpy(b.x)
                y = torch.from_numpy(b.y)
                n_id = torch.from_numpy(b.n_id)
                if touch == "edge_index":
                    eis = [torch.from_numpy(b.edge_index(h)) for h in range(b.num_layers)]
                    edges += sum(int(e.shape[1]) for e in eis)
                elif touch == "blocks":
                    edges += sum(len(bl[1]) for bl in b.blocks)
                else:
                    raise ValueError(f"--touch {touch!r}: edge_index or blocks")
                steps += 1
                nodes += int(n_id.shape[0])
                del x, y
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        wall_max, = _rank_sums(sg, [wall], "max")
        s_steps, s_nodes, s_edges, s_cpu_per_wall = _rank_sums(sg, [steps, nodes, edges, cpu / wall])
        del loader
        out["variants"][touch] = {"wall_s": wall_max, "steps_per_rank": s_steps / sg.size(), "batches_per_s_per_rank": (s_steps / sg.size()) / wall_max,
                                  "input_nodes_per_batch": s_nodes / max(s_steps, 1), "sampled_edges_per_batch": s_edges / max(s_steps, 1),
                                  "cpu_per_wall_mean": s_cpu_per_wall / sg.size()}
    if sg.rank() == 0:
        write_json(a.result, out)


def _pyg_sampler(lib):
    """Makes PyG's NeighborLoader able to sample: which backend, as words."""
    import torch
    import torch_geometric.typing as tt
    if tt.WITH_PYG_LIB:
        import pyg_lib
        return f"pyg-lib {getattr(pyg_lib, '__version__', '?')} (installed)"
    if tt.WITH_TORCH_SPARSE:
        import torch_sparse
        return f"torch-sparse {getattr(torch_sparse, '__version__', '?')} (installed; PyG's slower fallback)"
    if not lib or not os.path.exists(lib):
        raise RuntimeError("PyG's NeighborLoader needs pyg-lib or torch-sparse, and neither is installed (PyPI has neither for torch "
                           f"{torch.__version__}): install pyg-lib or torch-sparse, or build pyg-lib's sampling kernel from its source and pass it as "
                           f"--pyg-sampler-lib (no library at {lib!r})")
    torch.ops.load_library(lib)
    # What torch_geometric.typing would have set on finding a pyg-lib whose neighbor_sample takes
    # edge_time and edge_weight (this kernel's schema does); nothing else of pyg-lib is used.
    tt.WITH_PYG_LIB = True
    tt.WITH_EDGE_TIME_NEIGHBOR_SAMPLE = True
    tt.WITH_WEIGHTED_NEIGHBOR_SAMPLE = True
    desc = "pyg-lib's CPU neighbor_sample kernel, compiled from pyg-lib's source"
    try:
        with open(lib + ".json") as f:
            meta = json.load(f)
        desc += f" (pyg-lib commit {meta.get('pyg_lib_commit', '?')[:12]}, {meta.get('flags', '')}, no MKL)"
    except (OSError, ValueError):
        pass
    return desc


def worker_pyg_loader(a):
    """PyG's NeighborLoader alone in this process, one thread: --reps timed runs of --epochs epochs
    over the training nodes; writes the result."""
    import resource
    import numpy as np
    import torch
    torch.set_num_threads(1)
    backend = _pyg_sampler(a.pyg_sampler_lib)
    import torch_geometric
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    import shardgnn as sg
    d = sg.Dataset(a.dataset)
    if d.feature_dtype != "float32":
        raise RuntimeError(f"{a.dataset}: features are {d.feature_dtype}; this comparison takes float32 features")
    n = d.num_nodes
    indptr = np.asarray(d.indptr, dtype=np.int64)
    # Row v's entries are v's neighbours, from which both samplers draw v's sample: as PyG's
    # edges (source = neighbour, destination = v), sorted by destination, PyG's CSC is our CSR.
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    edge_index = torch.from_numpy(np.stack([np.asarray(d.indices, dtype=np.int64), dst]))
    data = Data(x=torch.from_numpy(np.array(d.features, dtype=np.float32)), y=torch.from_numpy(np.asarray(d.labels, dtype=np.int64)),
                edge_index=edge_index, num_nodes=n)
    train = torch.from_numpy(np.asarray(d.train_idx, dtype=np.int64))
    fanouts = [int(f) for f in a.fanouts.split(",")]
    loader = NeighborLoader(data, num_neighbors=fanouts, batch_size=a.batch, input_nodes=train, shuffle=True, num_workers=0, is_sorted=True)
    runs = []
    for rep in range(a.reps):
        torch.manual_seed(rep)
        steps = nodes = edges = 0
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        for _ in range(a.epochs):
            for b in loader:
                x, y, ei, bs = b.x, b.y, b.edge_index, b.batch_size
                steps += 1
                nodes += int(x.shape[0])
                edges += int(ei.shape[1])
                del y, bs
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        runs.append({"wall_s": wall, "batches": steps, "batches_per_s": steps / wall, "nodes_per_batch": nodes / steps,
                     "sampled_edges_per_batch": edges / steps, "cpu_per_wall": ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) / wall})
    write_json(a.result, {"runs": runs, "backend": backend, "pyg_version": torch_geometric.__version__, "torch_version": torch.__version__,
                          "torch_threads": torch.get_num_threads(), "epochs": a.epochs, "train_nodes": int(train.numel())})


def worker_train(a):
    """GraphSAGE in PyG on sg.NeighborLoader's batches at this job's rank count: --epochs epochs,
    then the test split's accuracy (sampled neighbourhoods, untimed); rank 0 writes the result."""
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch_geometric.nn import SAGEConv
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    sg = _sg()
    part = sg.Partition(a.part)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    classes = int(part.num_classes)

    class Sage(nn.Module):
        # bench train's --model sage and the DGL peers' make_sage: mean SAGEConv layers of width
        # hidden, ReLU between, dropout on every layer's input.
        def __init__(self, fin, hidden, out, layers, dropout):
            super().__init__()
            dims = [fin] + [hidden] * (layers - 1) + [out]
            self.convs = nn.ModuleList(SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(layers))
            self.drop = nn.Dropout(dropout)

        def forward(self, x, blocks):
            # blocks input layer first: (edge_index, num_src, num_dst); a layer's output rows are
            # its block's destinations, the first num_dst of its sources.
            for i, (conv, (ei, ns, nd)) in enumerate(zip(self.convs, blocks)):
                x = self.drop(x)
                x = conv((x, x[:nd]), ei, size=None if ei.is_sparse_csr else (ns, nd))
                if i + 1 < len(self.convs):
                    x = F.relu(x)
            return x

    def blocks_of(b):
        # Each layer's block as PyG takes it: its [2, E] edge_index (built per call, a copy), or
        # with --train-adj csr the block's own CSR as a torch sparse adj_t (no copy of the ids).
        out = []
        for h, (indptr, indices, ns, nd) in enumerate(b.blocks):
            if a.train_adj == "csr":
                adj = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices), torch.ones(len(indices)), size=(int(nd), int(ns)))
                out.append((adj, int(ns), int(nd)))
            else:
                out.append((torch.from_numpy(b.edge_index(h)), int(ns), int(nd)))
        return out

    model = Sage(int(part.feature_dim), a.hidden, classes, len(fanouts), a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    params = list(model.parameters())
    for p in params:  # a rank's empty batch (its seeds ran out) still takes part in the allreduce
        p.grad = torch.zeros_like(p)
    flat = torch.zeros(sum(p.numel() for p in params), dtype=torch.float32)
    loader = sg.NeighborLoader(part, fanouts, a.batch, split="train", shuffle=True, seed=a.seed)
    epochs = []
    for _ in range(a.epochs):
        model.train()
        wait = compute = sync = 0.0
        steps = 0
        sg.barrier()
        t0 = time.perf_counter()
        it = iter(loader)
        while True:
            tw = time.perf_counter()
            b = next(it, None)
            tc = time.perf_counter()
            wait += tc - tw
            if b is None:
                break
            steps += 1
            opt.zero_grad(set_to_none=False)
            if b.batch_size > 0:
                out = model(torch.from_numpy(b.x), blocks_of(b))
                loss = F.cross_entropy(out, torch.from_numpy(b.y).long(), ignore_index=-1)
                loss.backward()
            ts = time.perf_counter()
            compute += ts - tc
            off = 0
            for p in params:
                flat[off:off + p.numel()] = p.grad.reshape(-1)
                off += p.numel()
            sg.allreduce_(flat, "mean")
            off = 0
            for p in params:
                p.grad.copy_(flat[off:off + p.numel()].view_as(p.grad))
                off += p.numel()
            tt = time.perf_counter()
            sync += tt - ts
            opt.step()
            compute += time.perf_counter() - tt
        wall = time.perf_counter() - t0
        epoch_max, = _rank_sums(sg, [wall], "max")
        w, c, s = _rank_sums(sg, [wait, compute, sync])
        epochs.append({"epoch_s": epoch_max, "sample_wait_s": w / sg.size(), "compute_s": c / sg.size(), "allreduce_s": s / sg.size(), "steps": steps})
    model.eval()
    right = total = 0
    with torch.no_grad():
        for b in sg.NeighborLoader(part, fanouts, 4096, split="test", shuffle=False, seed=a.seed):
            if b.batch_size > 0:
                pred = model(torch.from_numpy(b.x), blocks_of(b)).argmax(1)
                y = torch.from_numpy(b.y).long()
                right += int((pred == y).sum())
                total += int((y >= 0).sum())
    right, total = _rank_sums(sg, [right, total])
    if sg.rank() == 0:
        import torch_geometric
        write_json(a.result, {"ranks": sg.size(), "adj": a.train_adj, "epochs": epochs, "test_acc": right / max(total, 1), "torch_version": torch.__version__,
                              "pyg_version": torch_geometric.__version__})


# --------------------------------------------------------------------------- the driver

def machine():
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True, check=False).stdout
        model = next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name")), "")
    except OSError:
        model = ""
    return {"model_name": model, "cpus": os.cpu_count()}


def git_commit():
    def git(*args):
        return subprocess.run(["git", "-C", REPO, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    sha = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return sha + ("-dirty" if dirty else "")


class Bench:
    def __init__(self, a):
        self.a = a
        self.exe = os.path.abspath(a.shardgnn)
        self.work = os.path.abspath(a.workdir)
        self.py = a.python
        self.mpi = shlex.split(a.mpiexec)
        self.ranks = [int(r) for r in a.ranks.split(",")]
        self.tmp = tempfile.mkdtemp(prefix="loader-", dir=self.work)

    def mpiexec(self, p):
        return self.mpi + ["-n", str(p)]

    def result_file(self, name):
        path = os.path.join(self.tmp, name + ".json")
        if os.path.exists(path):
            os.remove(path)
        return path

    def graph_args(self):
        a = self.a
        return ["--nodes", str(a.nodes), "--avg-degree", str(a.avg_degree), "--feature-dim", str(a.feature_dim), "--classes", str(a.classes),
                "--train", str(a.train), "--fanouts", a.fanouts, "--batch", str(a.batch), "--hidden", str(a.hidden), "--workdir", self.work]

    # bench train: the graph, its partitions, native training and DistDGL.
    def bench_train(self, ranks, epochs, distdgl):
        json_path = self.result_file("bench-train-" + "-".join(map(str, ranks)))
        argv = [self.exe, "bench", "train", *self.graph_args(), "--ranks", ",".join(map(str, ranks)), "--epochs", str(epochs), "--json", json_path]
        if distdgl:
            argv += ["--distdgl-python", self.a.distdgl_python]
        progress("$ " + shlex.join(argv))
        stdout = run_with_stderr_tail(argv, "bench train (native training" + (" and DistDGL)" if distdgl else ")"), timeout=self.a.timeout)
        report = read_json(json_path, "bench train")
        for row in report["rows"]:
            if row.get("failed"):
                raise RunFailed(f"{row['who']} on {row['cores']} core(s) (bench train)", row.get("error", ""))
        return report, stdout

    def graph_dir(self):
        """bench train's graph for these sizes (made by bench train if missing)."""
        a = self.a
        tag = f"sbm-{a.nodes}-{int(a.avg_degree)}-{a.feature_dim}-{int(a.train * 1000)}-v2"
        g = os.path.join(self.work, tag)
        if not os.path.exists(os.path.join(g, "meta.json")):
            progress(f"making bench train's graph {tag} (bench train --ranks 1 --epochs 1) ...")
            report, _ = self.bench_train([1], 1, distdgl=False)
            g = report["dataset"]
        return g

    def partition_dir(self, dataset, p):
        """p ranks' partition of `dataset` in the workdir: for bench train's graph and p > 1 the one
        bench train trains on (METIS, nodes and training nodes balanced; made the same way when
        bench train has not made it), one part for 1 rank."""
        base = os.path.join(self.work, os.path.basename(os.path.normpath(dataset)))
        out = f"{base}-metis-{p}" if p > 1 else f"{base}-p1"
        if not os.path.exists(os.path.join(out, "partition.json")):
            argv = [self.exe, "partition", dataset, "--parts", str(p), "--out", out, "--force"]
            argv += ["--method", "metis", "--balance", "nodes,train"] if p > 1 else ["--method", "random"]
            progress("$ " + shlex.join(argv))
            run(argv, f"partition into {p}", timeout=self.a.timeout)
        return out

    # 1. the Python loader against bench sampler
    def native_sampler(self, part, p, epochs):
        json_path = self.result_file(f"sampler-{p}")
        argv = self.mpiexec(p) + [self.exe, "bench", "sampler", part, "--fanouts", self.a.fanouts, "--batch", str(self.a.loader_batch),
                                  "--epochs", str(epochs), "--seed", str(self.a.seed), "--json", json_path]
        stdout = run(argv, f"native bench sampler at {p} rank(s)", timeout=self.a.timeout)
        r = parse_bench_sampler(stdout, read_json(json_path, "native bench sampler"))
        r["batches_per_s_per_rank"] = r["steps_per_rank"] / r["wall_s"] if r["wall_s"] > 0 else float("inf")
        return r

    def python_loader(self, part, p, epochs, touches):
        res = self.result_file(f"loader-{p}")
        argv = self.mpiexec(p) + [self.py, SCRIPT, "--worker", "loader", "--part", part, "--fanouts", self.a.fanouts, "--batch",
                                  str(self.a.loader_batch), "--epochs", str(epochs), "--seed", str(self.a.seed), "--touch", ",".join(touches),
                                  "--result", res]
        run(argv, f"Python loader at {p} rank(s)", env=ONE_THREAD, timeout=self.a.timeout)
        return read_json(res, "Python loader")["variants"]

    def compare_loader(self, parts):
        a = self.a
        out = {}
        for p in self.ranks:
            # E epochs: about --seconds of the native run (one epoch's wall measured first).
            one = self.native_sampler(parts[p], p, 1)
            epochs = max(1, min(a.max_epochs, math.ceil(a.seconds / max(one["wall_s"], 0.005))))
            progress(f"[1] {p} rank(s): {one['steps_per_rank']:.0f} steps per rank an epoch, {one['wall_s']:.2f} s; timing {epochs} epochs x {a.reps} runs")
            native, ours = [], {"edge_index": [], "blocks": []}
            for rep in range(a.reps):
                touches = ["edge_index", "blocks"] if rep % 2 == 0 else ["blocks", "edge_index"]
                order = ["native", "python"] if rep % 2 == 0 else ["python", "native"]
                for who in order:
                    if who == "native":
                        native.append(self.native_sampler(parts[p], p, epochs))
                    else:
                        v = self.python_loader(parts[p], p, epochs, touches)
                        for t in touches:
                            ours[t].append(v[t])
                progress(f"    run {rep + 1}: native {native[-1]['batches_per_s_per_rank']:.2f}, "
                         f"Python (edge_index) {ours['edge_index'][-1]['batches_per_s_per_rank']:.2f}, "
                         f"Python (blocks) {ours['blocks'][-1]['batches_per_s_per_rank']:.2f} batches/s per rank")
            n_med = median([r["batches_per_s_per_rank"] for r in native])
            entry = {"ranks": p, "partition": parts[p], "epochs": epochs, "steps_per_rank": native[0]["steps_per_rank"],
                     "native": {"batches_per_s_per_rank_median": n_med, "runs": native}}
            for t, runs in ours.items():
                o_med = median([r["batches_per_s_per_rank"] for r in runs])
                entry["python_" + t] = {"batches_per_s_per_rank_median": o_med, "ratio_to_native": o_med / n_med, "runs": runs}
            # The same batches? Input nodes and sampled edges per batch, native against ours.
            entry["same_batches"] = {"native_input_nodes_per_batch": native[0]["input_nodes_per_batch"],
                                     "python_input_nodes_per_batch": ours["edge_index"][0]["input_nodes_per_batch"],
                                     "native_sampled_edges_per_batch": native[0]["sampled_edges_per_batch"],
                                     "python_sampled_edges_per_batch": ours["edge_index"][0]["sampled_edges_per_batch"],
                                     "steps_equal": all(abs(r["steps_per_rank"] - native[0]["steps_per_rank"]) < 0.5 for r in native + ours["edge_index"])}
            out[str(p)] = entry
        return out

    # 2. the Python loader against PyG's NeighborLoader
    def compare_pyg_loader(self, dataset, ours_1rank, epochs):
        res = self.result_file("pyg-loader")
        argv = [self.py, SCRIPT, "--worker", "pyg-loader", "--dataset", dataset, "--fanouts", self.a.fanouts, "--batch", str(self.a.loader_batch),
                "--epochs", str(epochs), "--reps", str(self.a.reps), "--result", res, "--pyg-sampler-lib", self.a.pyg_sampler_lib]
        progress(f"[2] PyG's NeighborLoader, 1 process, 1 thread: {epochs} epochs x {self.a.reps} runs")
        run(argv, "PyG's NeighborLoader (the peer)", env=ONE_THREAD, timeout=self.a.timeout)
        r = read_json(res, "PyG's NeighborLoader")
        pyg_med = median([x["batches_per_s"] for x in r["runs"]])
        pyg_edges = median([x["sampled_edges_per_batch"] * x["batches_per_s"] for x in r["runs"]])
        out = {"pyg": dict(r, batches_per_s_median=pyg_med, sampled_edges_per_s_median=pyg_edges), "ours": {}}
        for p, entry in ours_1rank.items():
            runs = entry["python_edge_index"]["runs"]
            o_med = median([x["batches_per_s_per_rank"] for x in runs])
            o_edges = median([x["sampled_edges_per_batch"] * x["batches_per_s_per_rank"] for x in runs])
            out["ours"][p] = {"ranks": int(p), "batches_per_s_per_rank_median": o_med, "per_core_ratio": o_med / pyg_med,
                              "sampled_edges_per_s_per_rank_median": o_edges, "edges_per_s_ratio": o_edges / pyg_edges,
                              "cpu_per_wall": median([x["cpu_per_wall_mean"] for x in runs]), "epochs": entry["epochs"],
                              "sampled_edges_per_batch": runs[0]["sampled_edges_per_batch"]}
        return out

    # 3. PyG GraphSAGE on our loader against DistDGL
    def pyg_train(self, part, p, adj):
        res = self.result_file(f"train-{p}-{adj}")
        a = self.a
        argv = self.mpiexec(p) + [self.py, SCRIPT, "--worker", "train", "--part", part, "--fanouts", a.fanouts, "--batch", str(a.batch),
                                  "--hidden", str(a.hidden), "--epochs", str(a.train_epochs), "--seed", str(a.seed), "--train-adj", adj, "--result", res]
        progress(f"[3] PyG GraphSAGE on our loader ({adj}), {p} rank(s), {a.train_epochs} epochs ...")
        run(argv, f"PyG training on our loader at {p} rank(s)", env=ONE_THREAD, timeout=a.timeout)
        return read_json(res, "PyG training")


def epoch_stats(times):
    return {"median_s": median(times), "fastest_s": min(times) if times else float("nan"), "epoch_times": times}


def native_epochs(work, p):
    """bench train's native run's per-epoch training seconds (epoch less its evaluation)."""
    times = []
    try:
        with open(os.path.join(work, f"metrics-{p}.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if "epoch_s" in e and "epoch" in e:
                    times.append(e["epoch_s"] - e.get("time_s", {}).get("eval", 0.0))
    except (OSError, ValueError):
        pass
    return times


def main_driver(a):
    t_start = time.perf_counter()
    b = Bench(a)
    wanted = set(a.only.split(","))
    unknown = wanted - {"loader", "pyg", "train"}
    if unknown:
        raise SystemExit(f"--only: unknown {sorted(unknown)}; expected loader, pyg, train")
    if set(a.train_adj.split(",")) - {"edge_index", "csr"}:
        raise SystemExit(f"--train-adj {a.train_adj!r}: edge_index, csr or both")
    if "pyg" in wanted and 1 not in b.ranks:
        raise SystemExit("--only pyg needs rank count 1 in --ranks (ours at 1 rank is what PyG is compared with)")
    result = {"command": shlex.join([sys.executable] + sys.argv), "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "commit": git_commit(), "machine": machine(), "shardgnn": b.exe, "python": b.py,
              "settings": {k: v for k, v in vars(a).items() if k not in ("worker", "result")}}
    lines = []

    def say(line=""):
        lines.append(line)
        print(line, flush=True)

    try:
        if "pyg" in wanted:  # before anything long: can PyG's NeighborLoader sample here?
            run([b.py, SCRIPT, "--worker", "pyg-check", "--pyg-sampler-lib", a.pyg_sampler_lib], "PyG's NeighborLoader (the peer)", env=ONE_THREAD)
        train = None
        if "train" in wanted:
            progress(f"[3] bench train: native training and DistDGL at {a.ranks} rank(s), {a.train_epochs} epochs ...")
            train, _ = b.bench_train(b.ranks, a.train_epochs, distdgl=True)
        if train:
            graph = train["dataset"]
        elif a.dataset:
            graph = None
        else:
            graph = b.graph_dir()
        loader_data = os.path.abspath(a.dataset) if a.dataset else graph
        result["graph"] = graph
        result["loader_dataset"] = loader_data
        say(f"bench loader: {result['machine']['model_name']}, {result['machine']['cpus']} CPUs; commit {result['commit'][:12]}; {result['date']}")
        if wanted & {"loader", "pyg"}:
            parts = {p: b.partition_dir(loader_data, p) for p in b.ranks}
            loader = b.compare_loader(parts)
            result["loader_vs_native"] = loader
            say(f"dataset {os.path.basename(loader_data)}, fanouts {a.fanouts}, batch {a.loader_batch} per rank, seed {a.seed}; median of {a.reps} runs each")
            say("1. Python loader (sg.NeighborLoader; touched: torch.from_numpy of x, y, n_id and of edge_index(h) for every layer) "
                "vs native `shardgnn bench sampler`, batches/s per rank:")
            for p, e in loader.items():
                same = e["same_batches"]
                say(f"   {p} rank(s): Python {e['python_edge_index']['batches_per_s_per_rank_median']:.2f} vs native "
                    f"{e['native']['batches_per_s_per_rank_median']:.2f}: {e['python_edge_index']['ratio_to_native']:.3f}x "
                    f"(touching blocks instead of edge_index: {e['python_blocks']['batches_per_s_per_rank_median']:.2f}, "
                    f"{e['python_blocks']['ratio_to_native']:.3f}x); {e['epochs']} epochs of {e['steps_per_rank']:.0f} steps per rank; "
                    f"input nodes per batch {same['python_input_nodes_per_batch']:.0f} vs {same['native_input_nodes_per_batch']:.0f}, "
                    f"sampled edges per batch {same['python_sampled_edges_per_batch']:.0f} vs {same['native_sampled_edges_per_batch']:.0f}"
                    + ("" if same["steps_equal"] else "; STEPS DIFFER")
                    + ("; the native wall includes bench sampler's 2 timed barriers a batch" if int(p) > 1 else ""))
            if "pyg" in wanted:
                ours1 = {k: v for k, v in loader.items()}
                pyg = b.compare_pyg_loader(loader_data, ours1, loader["1"]["epochs"])
                result["ours_vs_pyg_loader"] = pyg
                g = pyg["pyg"]
                say(f"2. ours vs PyG {g['pyg_version']}'s NeighborLoader (1 process, torch threads {g['torch_threads']}, num_workers 0; sampling: "
                    f"{g['backend']}), {g['epochs']} epochs of {g['runs'][0]['batches'] / g['epochs']:.0f} batches:")
                for p, o in pyg["ours"].items():
                    per = "1 rank, 1 process" if p == "1" else f"{p} ranks on {p} cores, per rank"
                    say(f"   ours {per}: {o['batches_per_s_per_rank_median']:.2f} batches/s (CPU {o['cpu_per_wall']:.2f} s/s) vs PyG "
                        f"{g['batches_per_s_median']:.2f} (CPU {median([x['cpu_per_wall'] for x in g['runs']]):.2f} s/s): "
                        f"{o['per_core_ratio']:.2f}x per core; sampled edges/s {o['sampled_edges_per_s_per_rank_median']:.3g} vs "
                        f"{g['sampled_edges_per_s_median']:.3g}: {o['edges_per_s_ratio']:.2f}x ({o['sampled_edges_per_batch']:.0f} vs "
                        f"{median([x['sampled_edges_per_batch'] for x in g['runs']]):.0f} edges a batch)")
        if "train" in wanted:
            rows = {(r["who"], r["cores"]): r for r in train["rows"]}
            out = {}
            say(f"3. an epoch of GraphSAGE {a.fanouts}, hidden {a.hidden}, batch {a.batch} per rank, 1 thread per rank, on {os.path.basename(graph)} "
                f"({a.train_epochs} epochs each; median epoch, fastest in brackets; test acc: PyG on ours / DistDGL / native):")
            for p in b.ranks:
                dd = read_json(os.path.join(b.work, f"distdgl-{p}.json"), f"DistDGL on {p} core(s)")
                d = epoch_stats(dd.get("epoch_times") or [dd["epoch_s"]])
                nat = epoch_stats(native_epochs(b.work, p) or [rows[("shardgnn", p)]["epoch_s"]])
                entry = out[str(p)] = {"ranks": p, "pyg_on_ours": {},
                                       "distdgl": dict(d, test_acc=dd.get("test_acc"), result=dd, note=rows[("distdgl", p)]["note"]),
                                       "native_shardgnn_train": dict(nat, test_acc=rows[("shardgnn", p)]["test_acc"], note=rows[("shardgnn", p)]["note"])}
                for adj in a.train_adj.split(","):
                    ours = b.pyg_train(b.partition_dir(graph, p), p, adj)
                    o = epoch_stats([e["epoch_s"] for e in ours["epochs"]])
                    entry["pyg_on_ours"][adj] = dict(o, test_acc=ours["test_acc"], epochs=ours["epochs"], distdgl_over_ours=d["median_s"] / o["median_s"],
                                                     ours_over_native=o["median_s"] / nat["median_s"])
                    say(f"   {p} core(s): PyG on our loader ({'edge_index(h)' if adj == 'edge_index' else 'blocks as CSR adj_t'}) {o['median_s']:.2f} s "
                        f"({o['fastest_s']:.2f}) vs DistDGL {d['median_s']:.2f} s ({d['fastest_s']:.2f}): DistDGL epoch / ours = "
                        f"{d['median_s'] / o['median_s']:.2f}x; native shardgnn train {nat['median_s']:.2f} s ({nat['fastest_s']:.2f}); "
                        f"test acc {ours['test_acc']:.4f} / {dd.get('test_acc', float('nan')):.4f} / {rows[('shardgnn', p)]['test_acc']:.4f}; "
                        f"ours an epoch: loader wait {median([e['sample_wait_s'] for e in ours['epochs']]):.2f} s, "
                        f"allreduce {median([e['allreduce_s'] for e in ours['epochs']]):.2f} s")
            result["pyg_on_ours_vs_distdgl"] = out
    except RunFailed as f:
        result["failed"] = f.who
        result["error"] = f.line
        result["lines"] = lines
        if a.json:
            write_json(a.json, result)
        print(f"bench loader: {f.who} failed: {f.line}", file=sys.stderr)
        return 1
    result["lines"] = lines
    result["wall_s"] = time.perf_counter() - t_start
    say(f"(took {result['wall_s']:.0f} s; scratch results in {b.tmp})")
    if a.json:
        write_json(a.json, result)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--shardgnn", help="the shardgnn program (the build whose Python module is on PYTHONPATH, e.g. build-torch/tools/shardgnn)")
    ap.add_argument("--python", default=sys.executable, help="the Python with torch, torch_geometric and shardgnn importable for the runs (default: this one)")
    ap.add_argument("--distdgl-python", default=os.path.join(REPO, "build/peers-venv/bin/python"), help="a Python with DGL (scripts/peers.sh)")
    ap.add_argument("--pyg-sampler-lib", default=os.path.join(REPO, "build-torch/pyg-sampler/libpyg_neighbor_sample.so"),
                    help="a library holding pyg-lib's neighbor_sample op (compiled from pyg-lib's source), used when neither pyg-lib nor torch-sparse is installed")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--only", default="loader,pyg,train", help="which comparisons: loader (1), pyg (2), train (3), comma-separated")
    ap.add_argument("--ranks", default="1,2", help="rank counts (1 must be among them for 2)")
    ap.add_argument("--nodes", type=int, default=200000, help="bench train's graph: nodes")
    ap.add_argument("--avg-degree", type=float, default=50)
    ap.add_argument("--feature-dim", type=int, default=100)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--train", type=float, default=0.05, help="training fraction (sets the steps per epoch)")
    ap.add_argument("--fanouts", default="15,10,5", help="from the seeds outward (PyG's order)")
    ap.add_argument("--batch", type=int, default=1024, help="seeds per batch per rank")
    ap.add_argument("--loader-batch", type=int, default=0, help="comparisons 1 and 2's batch (0: --batch)")
    ap.add_argument("--dataset", default=None, help="comparisons 1 and 2 on this dataset folder instead of bench train's graph (partitioned "
                    "into --workdir as NAME-p1 and NAME-metis-P)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5, help="runs of comparisons 1 and 2 (the median is reported)")
    ap.add_argument("--seconds", type=float, default=2.0, help="comparison 1's native run at each rank count lasts about this long (sets the epochs)")
    ap.add_argument("--max-epochs", type=int, default=1000)
    ap.add_argument("--train-epochs", type=int, default=3, help="comparison 3's epochs per run (the median epoch is compared)")
    ap.add_argument("--train-adj", default="edge_index", help="comparison 3: how PyG's layers get each block: edge_index (batch.edge_index(h), "
                    "as docs/python.md shows), csr (the block's CSR as a torch sparse adj_t), or both: edge_index,csr")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "shardgnn-bench-loader"), help="graph, partitions, results (kept)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds any one run may take")
    ap.add_argument("--json", help="write every figure here")
    # the workers
    ap.add_argument("--worker", choices=["loader", "pyg-loader", "pyg-check", "train"], help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--epochs", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--touch", default="edge_index", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--dropout", type=float, default=0.5, help=argparse.SUPPRESS)
    ap.add_argument("--lr", type=float, default=0.01, help=argparse.SUPPRESS)
    ap.add_argument("--weight-decay", type=float, default=5e-4, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker == "loader":
        return worker_loader(a) or 0
    if a.worker == "pyg-loader":
        return worker_pyg_loader(a) or 0
    if a.worker == "pyg-check":
        print(_pyg_sampler(a.pyg_sampler_lib))
        return 0
    if a.worker == "train":
        return worker_train(a) or 0
    if not a.shardgnn:
        ap.error("--shardgnn PATH is required")
    if not a.loader_batch:
        a.loader_batch = a.batch
    os.makedirs(a.workdir, exist_ok=True)
    return main_driver(a)


if __name__ == "__main__":
    sys.exit(main())
