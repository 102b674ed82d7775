#!/usr/bin/env bash
# The Python package's loaders (python/shardgnn) on Cora at 1, 2 and 4 ranks against numpy's
# reading of the same files, under pytest (conftest.py reads the paths set here): node batches
# (test_loader.py), link batches on Cora split by data split-edges (test_link_loader.py), a typed
# graph's (test_typed_loader.py), and a stop signal (test_stop.py run as a script: the job must
# exit 75) and its resume (test_stop.py's tests), the pipeline's options and layer-wise inference
# (test_pipeline.py), and faults' exit statuses (test_faults.py).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"  # PYTHONPATH: build/python, unless NUMPY_PYTHON has the package installed
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${NUMPY_PYTHON:-/usr/bin/python3}
"$py" -c 'import pytest' 2>/dev/null || { echo "test_loader.sh: $py has no pytest (scripts/setup.sh installs Debian's python3-pytest)" >&2; exit 1; }
export OMP_NUM_THREADS=1
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" data split-edges "$work/cora" --seed 0 --out "$work/cora-split" >/dev/null
"$SHARDGNN" data generate hetero --papers 600 --feature-dim 8 --featureless institute --out "$work/het" >/dev/null
# The same with a second relation between papers (a random "mentions"): a graph with relation ids.
"$SHARDGNN" data export "$work/het" --format igbh --out "$work/het-igbh" >/dev/null
mkdir "$work/het-igbh/processed/paper__mentions__paper"
"$py" -c 'import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(5).integers(0, 600, size=(900, 2)))' "$work/het-igbh/processed/paper__mentions__paper/edge_index.npy"
"$SHARDGNN" data convert "$work/het-igbh" --split random:0.6,0.2 --out "$work/kg" >/dev/null
export SHARDGNN_TEST_CORA="$work/cora" SHARDGNN_TEST_SPLIT="$work/cora-split" SHARDGNN_TEST_HETERO="$work/het" SHARDGNN_TEST_KG="$work/kg" SHARDGNN_TEST_WORK="$work"
for k in 1 2 4; do
  "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/p$k" >/dev/null
  "$SHARDGNN" partition "$work/cora-split" --parts "$k" --method metis --out "$work/s$k" >/dev/null
  "$SHARDGNN" partition "$work/het" --parts "$k" --balance ntypes,train --out "$work/h$k" >/dev/null
  "$SHARDGNN" partition "$work/kg" --parts "$k" --balance ntypes,train --out "$work/kg$k" >/dev/null
  # A stop signal: every rank stops after the same step with status 75 (test_stop.py says why this
  # is a script and not a pytest test); the tests below resume from what it saved.
  mkdir -p "$work/stop$k"
  set +e
  timeout 300 "$MPIEXEC" -n "$k" "$py" "$here/test_stop.py" "$work/p$k" "$work/stop$k" > "$work/stop$k.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" = 75 ] || { echo "FAIL: a stopped job exited $rc, expected 75: $(cat "$work/stop$k.txt")" >&2; exit 1; }
  [ "$(grep -o ": stopped" "$work/stop$k.txt" | wc -l)" = "$k" ] || { echo "FAIL: not every rank stopped: $(cat "$work/stop$k.txt")" >&2; exit 1; }
  # The native sampler's batches on the same partition, for test_pipeline.py to compare with.
  timeout 300 "$MPIEXEC" -n "$k" "$SHARDGNN" bench sampler "$work/p$k" --fanouts 5,3 --batch 64 --epochs 2 --seed 3 --json "$work/native$k.json" >/dev/null
  # One pytest session a rank count for the modules (one start of Python, MPI and pytest).
  echo "test_loader.sh: $k rank(s)"
  SHARDGNN_TEST_CORA_PARTS="$work/p$k" SHARDGNN_TEST_NATIVE="$work/native$k.json" SHARDGNN_TEST_SPLIT_PARTS="$work/s$k" SHARDGNN_TEST_HETERO_PARTS="$work/h$k" SHARDGNN_TEST_KG_PARTS="$work/kg$k" SHARDGNN_TEST_STOP="$work/stop$k" \
    timeout 300 "$MPIEXEC" -n "$k" "$py" -m pytest -q -p no:cacheprovider \
      "$here/test_loader.py" "$here/test_link_loader.py" "$here/test_typed_loader.py" "$here/test_relation_loader.py" "$here/test_stop.py" "$here/test_pipeline.py"
done
# Ctrl-C (SIGINT) stops as SIGTERM does: every rank after the same step, status 75.
mkdir -p "$work/int2"
set +e
STOP_SIGNAL=SIGINT timeout 300 "$MPIEXEC" -n 2 "$py" "$here/test_stop.py" "$work/p2" "$work/int2" > "$work/int2.txt" 2>&1
rc=$?
set -e
[ "$rc" = 75 ] && [ "$(grep -o ": stopped" "$work/int2.txt" | wc -l)" = 2 ] || { echo "FAIL: SIGINT: exit $rc: $(tail -5 "$work/int2.txt")" >&2; exit 1; }
# A SIGTERM to mpiexec (forwarded by its proxies): the job's status is 75, three times over
# (MPICH 4.0's proxy reported 0 most of the time before exit_resumable kept its pipes open).
for try in 1 2 3; do
  rm -f "$work/stop2/running"
  timeout 120 "$MPIEXEC" -n 2 "$py" "$here/test_stop.py" "$work/p2" "$work/stop2" launcher > "$work/launcher.txt" 2>&1 &
  job=$!
  until [ -e "$work/stop2/running" ]; do
    kill -0 "$job" 2>/dev/null || { echo "FAIL: the job ended before the stop: $(cat "$work/launcher.txt")" >&2; exit 1; }
    sleep 0.1
  done
  kill -TERM "$job"
  rc=0
  wait "$job" || rc=$?
  [ "$rc" = 75 ] || { echo "FAIL: SIGTERM to mpiexec (try $try): exit $rc, expected 75: $(tail -5 "$work/launcher.txt")" >&2; exit 1; }
done
echo "test_loader.sh: a SIGTERM to mpiexec ends the job with 75 (3 of 3)"
# Faults end a Python job with train's statuses (test_faults.py, a script: the status is the check):
# a stalled peer 76 and one line naming the wait, a shard file truncated under the job 74.
set +e
timeout 120 "$MPIEXEC" -n 2 "$py" "$here/test_faults.py" "$work/p2" stall > "$work/stall.txt" 2>&1
rc=$?
set -e
pkill -KILL -f "test_faults.py $work/p2 stall" 2>/dev/null || true  # the stopped rank
[ "$rc" = 76 ] || { echo "FAIL: a stalled peer: exit $rc, expected 76: $(tail -5 "$work/stall.txt")" >&2; exit 1; }
grep -qE "^shardgnn \(python\): error: rank 0/2 .* has waited [2-9] s for the other ranks \(training \(python loader\), epoch 2, step 2" "$work/stall.txt" ||
  { echo "FAIL: no line naming the wait: $(tail -5 "$work/stall.txt")" >&2; exit 1; }
cp -r "$work/p1" "$work/cut"
set +e
timeout 120 "$py" "$here/test_faults.py" "$work/cut" truncate > "$work/cut.txt" 2>&1
rc=$?
set -e
[ "$rc" = 74 ] && grep -q "features.npy changed under the running job" "$work/cut.txt" ||
  { echo "FAIL: a truncated shard: exit $rc, expected 74: $(tail -5 "$work/cut.txt")" >&2; exit 1; }
echo "test_loader.sh: a stalled peer ends the job with 76, a truncated shard with 74"
