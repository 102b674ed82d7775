#!/usr/bin/env python3
"""DistDGL (DGL's distributed training) on a shardgnn dataset folder, on this one machine, without
ssh: the distributed peer of `shardgnn bench train`. Benchmark-only.

It partitions the graph with dgl.distributed.partition_graph (METIS, balancing nodes, training
nodes and edges, like our `--balance nodes,train`; cached under --workdir), then starts what DGL's
tools/launch.py would start over ssh, as local child processes with the launcher's environment
variables set by hand: one graph server per partition (DGL_ROLE=server, DGL_SERVER_ID, ...) and
--trainers trainer processes (DGL_ROLE=client, DGL_DIST_MODE=distributed, plus torch's
MASTER_ADDR/PORT, RANK, WORLD_SIZE for gloo). The trainers train GraphSAGE (mean) exactly like
dgl_train.py -- same layers, hidden width, dropout, Adam, fanouts in DGL's order (input layer
first), batch per trainer -- with DistNodeDataLoader over a DistGraph and DistributedDataParallel,
then test on sampled neighbourhoods. One JSON object in the --result file:
  {"epoch_s": fastest epoch (each epoch's time is the slowest trainer's), "test_acc", "dgl_version",
   "trainers", "servers", "partitions", ...}

Several partitions on one host: DGL assumes one partition per machine. Two things collide when the
"machines" are all 127.0.0.1, and both are patched here, in the server and trainer processes only
(DGL's files are not changed):
  * a trainer finds its machine id by looking its IP up in ip_config (the last line that matches
    wins, so every trainer would think it runs next to the last partition): each trainer is told
    its machine id (DISTDGL_MACHINE_ID);
  * a server publishes its partition (graph structure, partition book, features) in POSIX shared
    memory under names made of the graph and data names only, so the servers of two partitions on
    one host would write the same names: every shared-memory name gets a per-run, per-machine
    prefix (DISTDGL_SHM_PREFIX), the same in a server and in the trainers of its machine.
With --parts 1 nothing collides; the patches are applied anyway (harmless, and the run-unique
prefix keeps concurrent runs apart). Children die with this process (PR_SET_PDEATHSIG), are killed
on failure or timeout, and leftover shared memory of the run (or of an earlier killed run) is removed.

The dataset is read by bench/peers/dataset_input.py (any format version, id width and feature
storage); --check-input reads and checks it only (numpy, no DGL) and prints what it read.
"""
import argparse
import ctypes
import glob
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_input import Dataset, check_input_main, print_described  # noqa: E402
from peer_models import make_sage  # noqa: E402
from result import write_result  # noqa: E402

GRAPH_NAME = "shardgnn"


# --------------------------------------------------------------------------- patches (children)

def _patch_dgl_for_one_host(machine_id, prefix):
    """Make several DGL "machines" coexist on one host (see the module docstring)."""
    import dgl.distributed.dist_graph as dg
    import dgl.distributed.graph_partition_book as gp
    import dgl.distributed.kvstore as kv
    import dgl.distributed.rpc_client as rc
    import dgl.distributed.shared_mem_utils as su
    import dgl.heterograph_index as hi

    def name(n):
        return "/" + prefix + n[1:] if n.startswith("/") else prefix + n

    for mod in (dg, gp, kv, su):
        if hasattr(mod, "empty_shared_mem"):
            orig = mod.empty_shared_mem
            mod.empty_shared_mem = lambda n, *a, _o=orig, **k: _o(name(n), *a, **k)
        if hasattr(mod, "exist_shared_mem_array"):
            orig = mod.exist_shared_mem_array
            mod.exist_shared_mem_array = lambda n, *a, _o=orig, **k: _o(name(n), *a, **k)
    orig_sm = hi.HeteroGraphIndex.shared_memory
    hi.HeteroGraphIndex.shared_memory = lambda self, n, *a, **k: orig_sm(self, name(n), *a, **k)
    orig_create = hi.create_heterograph_from_shared_memory
    hi.create_heterograph_from_shared_memory = lambda n: orig_create(name(n))
    rc.get_local_machine_id = lambda server_namebook: machine_id


def _die_with_parent():
    # Linux: SIGKILL this child when the launching process goes away, however it goes.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_server():
    import dgl

    _patch_dgl_for_one_host(int(os.environ["DISTDGL_MACHINE_ID"]), os.environ["DISTDGL_SHM_PREFIX"])
    dgl.distributed.initialize(os.environ["DGL_IP_CONFIG"])  # serves until trainer 0 shuts it down
    return 0


def run_trainer(a):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import dgl

    _patch_dgl_for_one_host(int(os.environ["DISTDGL_MACHINE_ID"]), os.environ["DISTDGL_SHM_PREFIX"])
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dgl.distributed.initialize(os.environ["DGL_IP_CONFIG"])
    torch.distributed.init_process_group("gloo")  # env://: MASTER_ADDR/PORT, RANK, WORLD_SIZE
    rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    g = dgl.distributed.DistGraph(GRAPH_NAME)
    pb = g.get_partition_book()
    train_nid = dgl.distributed.node_split(g.ndata["train_mask"], pb, force_even=True)
    test_nid = dgl.distributed.node_split(g.ndata["test_mask"], pb, force_even=True)
    fanouts = [int(x) for x in a.fanouts.split(",")]
    feat_dim = g.ndata["features"].shape[1]
    classes = a.classes

    model = nn.parallel.DistributedDataParallel(make_sage(feat_dim, a.hidden, classes, len(fanouts), a.dropout))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=5e-4)
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DistNodeDataLoader(g, train_nid, sampler, batch_size=a.batch, shuffle=True, drop_last=False)
    feats, labels = g.ndata["features"], g.ndata["labels"]
    epoch_times, steps = [], 0
    for _ in range(a.epochs):
        model.train()
        torch.distributed.barrier()
        t0 = time.perf_counter()
        steps = 0
        with model.join():  # the trainers' batch counts may differ by one
            for input_nodes, seeds, blocks in loader:
                out = model(blocks, feats[input_nodes])
                loss = F.cross_entropy(out, labels[seeds].long())
                opt.zero_grad()
                loss.backward()
                opt.step()
                steps += 1
        epoch_times.append(time.perf_counter() - t0)
    model.eval()
    correct = torch.zeros(2, dtype=torch.int64)
    test_loader = dgl.dataloading.DistNodeDataLoader(g, test_nid, sampler, batch_size=4096, shuffle=False, drop_last=False)
    with torch.no_grad():
        for input_nodes, seeds, blocks in test_loader:
            correct[0] += int((model.module(blocks, feats[input_nodes]).argmax(1) == labels[seeds].long()).sum())
            correct[1] += len(seeds)
    torch.distributed.all_reduce(correct)
    times = [torch.zeros(a.epochs, dtype=torch.float64) for _ in range(world)]
    torch.distributed.all_gather(times, torch.tensor(epoch_times, dtype=torch.float64))
    per_epoch = torch.stack(times).max(0).values.tolist()  # an epoch ends when its slowest trainer does
    if rank == 0:
        write_result(a.result, {"epoch_s": min(per_epoch), "epoch_times": per_epoch,
                                "test_acc": int(correct[0]) / max(1, int(correct[1])), "dgl_version": dgl.__version__,
                                "torch_version": torch.__version__, "train_nodes_rank0": len(train_nid), "steps_rank0": steps})
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0  # dgl's atexit hook: barrier with the other clients, then trainer 0 stops the servers


# --------------------------------------------------------------------------- launcher

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_input(dataset):
    """What the partitioner is handed: the graph, features, classes and splits (numpy only)."""
    d = Dataset(dataset)
    indptr, indices = d.csr()
    return {"indptr": indptr, "indices": indices, "features": d.features(), "labels": d.labels(),
            "train": d.split("train_idx"), "test": d.split("test_idx"), "classes": d.classes}


def partition(a, parts, out_dir):
    """Partitions the dataset (cached: reused while the dataset's meta.json is unchanged)."""
    with open(os.path.join(a.dataset, "meta.json"), "rb") as f:
        stamp = {"dataset": os.path.abspath(a.dataset), "meta_sha1": hashlib.sha1(f.read()).hexdigest(), "parts": parts,
                 "method": "metis" if parts > 1 else "random"}
    conf = os.path.join(out_dir, GRAPH_NAME + ".json")
    stamp_file = os.path.join(out_dir, "source.json")
    if os.path.exists(conf) and os.path.exists(stamp_file):
        with open(stamp_file) as f:
            if json.load(f) == stamp:
                return conf
    import torch
    import dgl

    t0 = time.perf_counter()
    inp = check_input_main("distdgl_train", lambda: read_input(a.dataset))
    indptr, indices = torch.from_numpy(inp["indptr"]), torch.from_numpy(inp["indices"])
    n = indptr.numel() - 1
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=n)
    g.ndata["features"] = torch.from_numpy(inp["features"])
    g.ndata["labels"] = torch.from_numpy(inp["labels"])
    for split in ("train", "test"):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(inp[split])] = True
        g.ndata[split + "_mask"] = mask
    print(f"distdgl: partitioning {n} nodes, {g.num_edges()} edges into {parts} ({stamp['method']}) ...", file=sys.stderr)
    dgl.distributed.partition_graph(g, GRAPH_NAME, parts, out_dir, part_method=stamp["method"],
                                    balance_ntypes=g.ndata["train_mask"] if parts > 1 else None,
                                    balance_edges=parts > 1, num_hops=1)
    with open(stamp_file, "w") as f:
        json.dump(stamp, f)
    print(f"distdgl: partitioned in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return conf


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def launch(a):
    parts = a.parts or a.trainers
    if a.trainers % parts:
        raise SystemExit("--trainers must be a multiple of --parts (DGL puts the same number of trainers on each machine)")
    per_machine = a.trainers // parts
    if a.threads <= 0:
        a.threads = max(1, (os.cpu_count() or 1) // a.trainers)
    workdir = a.workdir or os.path.join(tempfile.gettempdir(), "shardgnn-distdgl")
    base = os.path.basename(os.path.normpath(a.dataset))
    part_dir = os.path.join(workdir, f"{base}-parts{parts}")
    os.makedirs(part_dir, exist_ok=True)
    conf = partition(a, parts, part_dir)
    classes = check_input_main("distdgl_train", lambda: {"classes": Dataset(a.dataset).classes})["classes"]

    run_dir = tempfile.mkdtemp(prefix="run-", dir=workdir)
    ip_config = os.path.join(run_dir, "ip_config.txt")
    # One "machine" per partition, one server on each: this host, or testbed node m
    # (tests/netbed/testbed.sh: its address, and its network namespace for the processes).
    address = (lambda m: f"10.213.0.{m + 1}") if a.netbed else (lambda m: "127.0.0.1")
    with open(ip_config, "w") as f:
        for m in range(parts):
            f.write(f"{address(m)} {_free_port()}\n")
    prefix = f"sgdd{os.getpid()}"
    for path in glob.glob("/dev/shm/sgdd*m*"):  # left by an earlier launcher that was killed
        pid = os.path.basename(path)[4:].split("m", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                os.unlink(path)
            except OSError:
                pass
    result = os.path.join(run_dir, "result.json")
    common = dict(os.environ, DGLBACKEND="pytorch", DGL_NUM_CLIENT=str(a.trainers), DGL_CONF_PATH=conf,
                  DGL_IP_CONFIG=ip_config, DGL_NUM_SERVER="1", DGL_GRAPH_FORMAT="csc", DGL_NUM_SAMPLER="0",
                  DGL_DIST_MAX_TRY_TIMES="100")
    script = os.path.abspath(__file__)
    procs = []  # (name, Popen, log path)

    def start(name, env, argv, machine):
        log = os.path.join(run_dir, name + ".log")
        out = None if a.verbose else open(log, "w")
        # On the testbed, inside the machine's network namespace (ip execs the python: the death
        # signal set below stays with it).
        where = ["ip", "netns", "exec", f"{a.netbed}-n{machine}"] if a.netbed else []
        if a.netbed:
            env = dict(env, GLOO_SOCKET_IFNAME="eth0", TP_SOCKET_IFNAME="eth0")
        p = subprocess.Popen(where + [sys.executable, script] + argv, env=env, stdout=out or sys.stderr, stderr=out or sys.stderr,
                             stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        if out:
            out.close()
        procs.append((name, p, log))
        return p

    def tail(log, n=25):
        try:
            with open(log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop_all():
        for _, p, _ in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.time() + 10
        for _, p, _ in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for path in glob.glob(f"/dev/shm/{prefix}m*"):  # what a killed server left behind
            try:
                os.unlink(path)
            except OSError:
                pass

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ok = False
    try:
        t_start = time.perf_counter()
        servers = []
        for m in range(parts):
            env = dict(common, DGL_ROLE="server", DGL_SERVER_ID=str(m), OMP_NUM_THREADS=str(a.server_threads),
                       DISTDGL_MACHINE_ID=str(m), DISTDGL_SHM_PREFIX=f"{prefix}m{m}_")
            servers.append(start(f"server-{m}", env, ["--role", "server", a.dataset], m))
        trainers = []
        master_port = _free_port()
        targs = ["--role", "trainer", a.dataset, "--fanouts", a.fanouts, "--batch", str(a.batch), "--hidden", str(a.hidden),
                 "--dropout", str(a.dropout), "--lr", str(a.lr), "--epochs", str(a.epochs), "--threads", str(a.threads),
                 "--seed", str(a.seed), "--classes", str(classes), "--result", result]
        for r in range(a.trainers):
            m = r // per_machine
            env = dict(common, DGL_ROLE="client", DGL_DIST_MODE="distributed", DGL_GROUP_ID="0", OMP_NUM_THREADS=str(a.threads),
                       MASTER_ADDR=address(0), MASTER_PORT=str(master_port), RANK=str(r), WORLD_SIZE=str(a.trainers),
                       LOCAL_RANK=str(r % per_machine), DISTDGL_MACHINE_ID=str(m), DISTDGL_SHM_PREFIX=f"{prefix}m{m}_")
            trainers.append(start(f"trainer-{r}", env, targs, m))
        deadline = time.time() + a.timeout
        failed = None
        while failed is None and any(p.poll() is None for p in trainers):
            for name, p, _ in procs:
                if p.poll() not in (None, 0):
                    failed = f"{name} exited with {p.returncode}"
            if time.time() > deadline:
                failed = f"timed out after {a.timeout} s"
            time.sleep(0.2)
        if failed is None:
            for name, p, _ in procs:  # the servers stop once trainer 0 tells them to
                try:
                    p.wait(timeout=max(1, min(60, deadline - time.time())))
                except subprocess.TimeoutExpired:
                    print(f"distdgl: {name} did not stop; killing it", file=sys.stderr)
                if p.poll() not in (None, 0) and p not in servers:
                    failed = f"{name} exited with {p.returncode}"
        if failed is None and not os.path.exists(result):
            failed = "trainer 0 wrote no result"
        if failed:
            cause = ""
            if not a.verbose:
                for name, _, log in procs:
                    print(f"---- {name} ({log}) ----\n{tail(log)}", file=sys.stderr)
                # The failed process's own last line (a traceback ends with the error) ends ours,
                # so that the benchmark that ran this reports it.
                cause = next((last_line(tail(log)) for name, _, log in procs if failed.startswith(name + " ")), "")
            print(f"distdgl_train: {failed}" + (f": {cause}" if cause else ""), file=sys.stderr)
            return 1
        with open(result) as f:
            res = json.load(f)
        res.update({"trainers": a.trainers, "servers": parts, "partitions": parts, "trainers_per_partition": per_machine,
                    "threads_per_trainer": a.threads, "batch_per_trainer": a.batch, "fanouts": a.fanouts,
                    "partition_method": "metis" if parts > 1 else "random", "wall_s": time.perf_counter() - t_start})
        write_result(a.result, res)
        ok = True
        return 0
    finally:
        stop_all()
        if ok and not a.keep_logs:
            for path in glob.glob(os.path.join(run_dir, "*")):
                os.unlink(path)
            os.rmdir(run_dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--trainers", type=int, default=2, help="trainer processes in all")
    ap.add_argument("--parts", type=int, default=0, help="partitions = servers (0: one per trainer)")
    ap.add_argument("--fanouts", default="5,10,15", help="DGL order: input layer first")
    ap.add_argument("--batch", type=int, default=1024, help="seeds per batch per trainer")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch threads per trainer (0: cores / trainers)")
    ap.add_argument("--server-threads", type=int, default=1, help="OMP threads per server (DGL's launcher: 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None, help="partitions (kept, reused) and run logs")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for the whole run, then everything is killed")
    ap.add_argument("--verbose", action="store_true", help="children's output to stderr instead of log files")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--netbed", default=None, help="a testbed's NETBED_PREFIX (tests/netbed/testbed.sh): partition m's server and "
                    "trainers run on its node m, as root")
    ap.add_argument("--role", choices=["launch", "server", "trainer"], default="launch", help=argparse.SUPPRESS)
    ap.add_argument("--classes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help="write the result (one JSON object) here")
    ap.add_argument("--check-input", action="store_true", help="read and check the dataset, print what was read, stop (no DGL)")
    a = ap.parse_args()
    if a.check_input:
        return print_described(check_input_main("distdgl_train", lambda: read_input(a.dataset)))
    if a.role != "server" and not a.result:
        ap.error("--result FILE is required (the run's result is written there)")
    os.environ.setdefault("DGLBACKEND", "pytorch")
    if a.role == "server":
        return run_server()
    if a.role == "trainer":
        return run_trainer(a)
    return launch(a)


if __name__ == "__main__":
    sys.exit(main())
