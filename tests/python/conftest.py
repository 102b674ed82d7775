"""pytest's setup for the Python package's tests, run by tests/python/test_loader.sh and
test_pyg.sh as ``mpiexec -n K python -m pytest -q -p no:cacheprovider tests/python/test_*.py``:
every rank runs the same session, the same tests in the same order (a test's collectives are
entered by every rank), with the dataset folders and partitions the wrappers prepared, named by
environment variables:

    SHARDGNN_TEST_CORA          Cora as data convert writes it
    SHARDGNN_TEST_CORA_PARTS    its partition into K parts (metis)
    SHARDGNN_TEST_SPLIT         Cora split by data split-edges
    SHARDGNN_TEST_SPLIT_PARTS   its partition into K parts
    SHARDGNN_TEST_HETERO        the hetero generator's typed graph
    SHARDGNN_TEST_HETERO_PARTS  its partition into K parts
    SHARDGNN_TEST_KG            the same with a second relation between papers (relation ids)
    SHARDGNN_TEST_KG_PARTS      its partition into K parts
    SHARDGNN_TEST_STOP          where test_stop.py's stopped job left its states
    SHARDGNN_TEST_WORK          a scratch folder
    SHARDGNN_TEST_NATIVE        bench sampler's --json on the Cora partition (fanouts 5,3, batch 64,
                                2 epochs, seed 3), for the loader's batches against the native sampler's
    SHARDGNN                    the shardgnn binary

A fixture whose variable is unset is an error of every test that needs it (never a skip)."""
import functools
import json
import os
import sys

import numpy as np
import pytest

from loader_common import R, P, csr, dataset_ids, sg


def _env(var):
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set (tests/python/test_loader.sh and test_pyg.sh set it)", pytrace=False)
    return value


# A failure on any rank ends the whole job at once: that rank prints its report and leaves by
# os._exit(1), and mpiexec kills the others (which may be waiting in a collective it will never
# enter), where an all-reduce of pass/fail after each test could meet a peer's collective inside the
# test instead and hang.
def _abort_on_failure(report):
    if not report.failed:
        return
    out = [f"rank {R}/{P}: FAILED {report.nodeid} ({getattr(report, 'when', 'collect')})", report.longreprtext]
    out += [f"----- {title} -----\n{text}" for title, text in report.sections]
    sys.stdout.flush()
    sys.stderr.write("\n".join(out) + f"\nrank {R}/{P}: ending the job (exit status 1)\n")
    sys.stderr.flush()
    os._exit(1)


_passed = {"tests": 0, "ranks": None}


def pytest_runtest_logreport(report):
    _abort_on_failure(report)
    if report.when == "call" and report.passed:
        _passed["tests"] += 1


def pytest_collectreport(report):
    _abort_on_failure(report)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """The session's report comes from rank 0 alone (the other ranks' would interleave with it
    line by line): every rank runs the same tests, a failure is reported by the rank it happened
    on, and the session's end checks that every rank passed as many."""
    # torch_geometric's import (test_pyg.py) calls torch.jit.script, deprecated in torch 2.11.
    config.addinivalue_line("filterwarnings", "ignore:`torch.jit.script` is deprecated:DeprecationWarning")
    if R != 0:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)


def pytest_sessionfinish(session):
    # Collective, on every rank at the end of a session no failure ended.
    lo = np.array([_passed["tests"]], dtype=np.int64)
    hi = lo.copy()
    sg.allreduce_(lo, "min")
    sg.allreduce_(hi, "max")
    _passed["ranks"] = (int(lo[0]), int(hi[0]))
    if lo[0] != hi[0]:
        sys.stderr.write(f"rank {R}/{P}: FAILED: {_passed['tests']} tests passed here, {lo[0]} to {hi[0]} on the job's ranks\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    lo, hi = _passed["ranks"] or (None, None)
    if lo is not None and lo == hi:
        terminalreporter.write_line(f"{lo} passed on each of {P} rank(s)")


class Reference:
    """A dataset folder read with numpy alone: the serial reference the loaders are checked against."""

    def __init__(self, folder):
        self.dir = folder
        self.indptr, self.indices = csr(folder)
        self.n = len(self.indptr) - 1

    def load(self, name):
        return np.load(f"{self.dir}/{name}.npy")

    @functools.cached_property
    def features(self):
        return self.load("features")

    @functools.cached_property
    def labels(self):
        return self.load("labels")

    @functools.cached_property
    def meta(self):
        with open(f"{self.dir}/meta.json") as f:
            return json.load(f)


class Parted:
    """A partition at this job's rank count: its folder, this rank's part (``sg.Partition``,
    collective: built on every rank as the fixture is first used), its node range, and its global
    ids as dataset ids (``orig[g]``)."""

    def __init__(self, folder):
        self.dir = folder
        self.part = sg.Partition(folder)
        self.lo, self.hi = self.part.node_range

    @functools.cached_property
    def orig(self):
        return dataset_ids(self.dir)


@pytest.fixture(scope="session")
def cora():
    return Reference(_env("SHARDGNN_TEST_CORA"))


@pytest.fixture(scope="session")
def cora_parts():
    return Parted(_env("SHARDGNN_TEST_CORA_PARTS"))


@pytest.fixture(scope="session")
def split():
    return Reference(_env("SHARDGNN_TEST_SPLIT"))


@pytest.fixture(scope="session")
def split_parts():
    return Parted(_env("SHARDGNN_TEST_SPLIT_PARTS"))


@pytest.fixture(scope="session")
def hetero():
    return Reference(_env("SHARDGNN_TEST_HETERO"))


@pytest.fixture(scope="session")
def hetero_parts():
    return Parted(_env("SHARDGNN_TEST_HETERO_PARTS"))


@pytest.fixture(scope="session")
def kg():
    return Reference(_env("SHARDGNN_TEST_KG"))


@pytest.fixture(scope="session")
def kg_parts():
    return Parted(_env("SHARDGNN_TEST_KG_PARTS"))


@pytest.fixture(scope="session")
def stop_dir():
    return _env("SHARDGNN_TEST_STOP")


@pytest.fixture(scope="session")
def work_dir():
    return _env("SHARDGNN_TEST_WORK")


@pytest.fixture(scope="session")
def shardgnn_bin():
    return _env("SHARDGNN")


@pytest.fixture(scope="session")
def native_sampler():
    with open(_env("SHARDGNN_TEST_NATIVE")) as f:
        return json.load(f)
