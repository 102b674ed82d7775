"""A stop signal under the Python package, at this job's rank count: the last rank signals itself
during step 2 of an epoch; stop_requested() is then true on every rank at the same step, each
saves its loader's state and exits with EXIT_RESUMABLE, and a job resumed from those states takes
the batches the uninterrupted epoch would have.

The stop is a script, run by tests/python/test_loader.sh, whose check is the job's exit status:

    mpiexec -n K python test_stop.py PARTITION OUT        # every rank exits 75, printing ": stopped"
    mpiexec -n K python test_stop.py PARTITION OUT launcher   # the same, SIGTERM sent to mpiexec

It stays outside pytest because pytest catches the SystemExit of sys.exit(sg.EXIT_RESUMABLE) as a
failed test and ends the session with its own status (1), where the contract under test is a
script's own exit with status 75 (after MPI_Finalize) as mpiexec reports it. The resumed job is
this module's tests, with SHARDGNN_TEST_CORA_PARTS=PARTITION and SHARDGNN_TEST_STOP=OUT (conftest.py):

    mpiexec -n K python -m pytest -q -p no:cacheprovider tests/python/test_stop.py"""
import json
import os
import signal
import sys

import pytest

from loader_common import R, P, fail, sg


def loader_of(part):
    return sg.NeighborLoader(part, fanouts=[5, 5], batch_size=8, seed=4)


def stop(part_dir, out):
    """The stopped job: the last rank signals itself during step 2; every rank saves its state and
    the seeds it took, and exits with EXIT_RESUMABLE."""
    loader = loader_of(sg.Partition(part_dir))
    sg.catch_stop_signals()
    seeds = []
    for b in loader:
        seeds.append(b.n_id[: b.batch_size].tolist())
        if loader.step == 2 and R == P - 1:
            os.kill(os.getpid(), getattr(signal, os.environ.get("STOP_SIGNAL", "SIGTERM")))  # SIGINT: a terminal's Ctrl-C
        if sg.stop_requested():
            if loader.step != 2:
                fail(f"stopped after step {loader.step}, the signal came during step 2")
            json.dump(loader.state_dict(), open(f"{out}/state-{R}.json", "w"))
            json.dump(seeds, open(f"{out}/before-{R}.json", "w"))
            print(f"rank {R}/{P}: stopped", flush=True)
            sg.exit_resumable()
    fail("the loop ended without a stop")


def stop_from_launcher(part_dir, out):
    """The job stopped through mpiexec (SIGTERM to the launcher, which its proxies forward): every
    rank stops after the same step and exits 75, which mpiexec must report (MPICH 4.0 reported 0
    most of the time without exit_resumable's care)."""
    loader = loader_of(sg.Partition(part_dir))
    sg.catch_stop_signals()
    for epoch in range(100000):
        for b in loader:
            if epoch == 1 and loader.step == 1 and R == 0:
                open(f"{out}/running", "w").close()
            if sg.stop_requested():
                print(f"rank {R}/{P}: stopped", flush=True)
                sg.exit_resumable()
    fail("the loop ended without a stop")


@pytest.fixture(scope="module")
def saved(stop_dir):
    """What the stopped job saved on this rank: its loader's state and the seeds it took."""
    with open(f"{stop_dir}/state-{R}.json") as f:
        state = json.load(f)
    with open(f"{stop_dir}/before-{R}.json") as f:
        before = json.load(f)
    return state, before


@pytest.fixture(scope="module")
def resumed(cora_parts, saved):
    """The resumed job's epoch: each batch's seeds, and whether stop_requested() said so after it
    (collective, as in the stopped job)."""
    loader = loader_of(cora_parts.part)
    loader.load_state_dict(saved[0])
    seeds, stops = [], []
    for b in loader:
        seeds.append(b.n_id[: b.batch_size].tolist())
        stops.append(sg.stop_requested())
    return seeds, stops


def test_stopped_after_step_2(saved):
    state = saved[0]
    assert (state["epoch"], state["step"]) == (0, 2), f"the stopped job saved epoch {state['epoch']} step {state['step']}, expected epoch 0 step 2"


def test_resumed_job_is_not_stopped(resumed):
    assert not any(resumed[1]), f"the resumed job saw a stop after step {resumed[1].index(True) + 3}"


def test_resumed_batches_are_the_uninterrupted_epochs(cora_parts, saved, resumed):
    all_seeds = [b.n_id[: b.batch_size].tolist() for b in loader_of(cora_parts.part)]
    assert saved[1] + resumed[0] == all_seeds, "the stopped and resumed batches are not the uninterrupted epoch's"


if __name__ == "__main__":
    (stop_from_launcher if sys.argv[3:] == ["launcher"] else stop)(*sys.argv[1:3])
