#!/usr/bin/env python3
"""bench/loader.py's own logic, without running a benchmark (standard library only, seconds): how it
reads `shardgnn bench sampler`'s report, which line of a failed run it reports (its own, not
mpiexec's epilogue), and that a failed run fails the script with that line, in its JSON too.

    python3 tests/peers/test_loader_bench.py
"""
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_loader", os.path.join(HERE, "..", "..", "bench", "loader.py"))
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)

SAMPLER_TEXT = """machine: AMD EPYC, 2 cores, vector units avx2 fma
dataset sbm-n5000-c10, 1 ranks, fanouts 15,10,5, batch 256, without replacement, cache degree (20% of remote rows), rows on the wire as float32, 120 steps per rank
exchanges                  eager: counts and up to 1016 bytes per peer in one round (SHARDGNN_EAGER_BYTES)
sampled edges / s / core   2.13e+07   (55910 edges per batch)
input nodes per batch      4999
time split                 sample 82%, sampling exchange 0%, local fetch 17%, cache 0%, same-node rows 0%, remote fetch 0%, waiting for the slowest rank before the batch 0% and before the fetch 0%  (0.36 s wall, slowest rank)
"""

MPICH_EPILOGUE = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 24373 RUNNING AT vm
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
This typically refers to a problem with your application.
Please see the FAQ page for debugging suggestions
"""


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test_parse_sampler():
    r = loader.parse_bench_sampler(SAMPLER_TEXT, {"input_nodes_per_batch": 4999.5, "sampled_edges_per_s_per_core": 2.1e7})
    check(r["steps_per_rank"] == 120 and r["wall_s"] == 0.36, r)
    check(r["sampled_edges_per_batch"] == 55910 and r["input_nodes_per_batch"] == 4999.5, r)
    check(r["wall_from"].startswith("text"), r)
    # A report that carries them itself is read first.
    r = loader.parse_bench_sampler(SAMPLER_TEXT, {"wall_s": 0.3612, "steps_per_rank": 120})
    check(r["wall_s"] == 0.3612 and r["wall_from"] == "json", r)
    try:
        loader.parse_bench_sampler("nothing here", {})
    except loader.RunFailed as e:
        check("steps per rank" in e.line, e.line)
    else:
        raise AssertionError("a report without its figures was accepted")


def test_last_error_line():
    tb = "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: rank one broke\n"
    check(loader.last_error_line(tb + MPICH_EPILOGUE) == "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)", "killed")
    check(loader.last_error_line(tb) == "ValueError: rank one broke", "traceback")
    check(loader.last_error_line("", "\nout: last\n\n") == "out: last", "falls back to stdout")


def test_failed_run_fails_the_script():
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "shardgnn")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'progress' >&2\necho 'shardgnn partition: data/x: not a dataset folder' >&2\nexit 2\n")
        os.chmod(fake, 0o755)
        out = os.path.join(tmp, "r.json")
        rc = loader.main(["--shardgnn", fake, "--only", "loader", "--dataset", os.path.join(tmp, "ds"), "--workdir", tmp, "--json", out])
        check(rc == 1, f"exit {rc}")
        with open(out) as f:
            r = json.load(f)
        check(r["failed"] == "partition into 1", r)
        check(r["error"] == "exit 2: shardgnn partition: data/x: not a dataset folder", r["error"])
        check(r["command"] and r["commit"] is not None and "date" in r, r)


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
    sys.exit(0)
