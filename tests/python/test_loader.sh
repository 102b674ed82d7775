#!/usr/bin/env bash
# The Python package's loaders (python/shardgnn) on Cora at 1, 2 and 4 ranks against numpy's
# reading of the same files: node batches (test_loader.py) and link batches on Cora split by
# data split-edges (test_link_loader.py), a typed graph's (test_typed_loader.py), and a stop signal
# and its resume (test_stop.py).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"  # PYTHONPATH: build/python, unless NUMPY_PYTHON has the package installed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${NUMPY_PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" data split-edges "$work/cora" --seed 0 --out "$work/cora-split" >/dev/null
"$SHARDGNN" data generate hetero --papers 600 --feature-dim 8 --featureless institute --out "$work/het" >/dev/null
for k in 1 2 4; do
  "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/p$k" >/dev/null
  WORK="$work" timeout 300 "$MPIEXEC" -n "$k" "$py" "$(dirname "$0")/test_loader.py" "$work/cora" "$work/p$k"
  "$SHARDGNN" partition "$work/cora-split" --parts "$k" --method metis --out "$work/s$k" >/dev/null
  timeout 300 "$MPIEXEC" -n "$k" "$py" "$(dirname "$0")/test_link_loader.py" "$work/cora-split" "$work/s$k" "$work/p$k"
  "$SHARDGNN" partition "$work/het" --parts "$k" --balance ntypes,train --out "$work/h$k" >/dev/null
  timeout 300 "$MPIEXEC" -n "$k" "$py" "$(dirname "$0")/test_typed_loader.py" "$work/het" "$work/h$k"
  # A stop signal: every rank stops after the same step with status 75, and resumes exactly.
  mkdir -p "$work/stop$k"
  set +e
  timeout 300 "$MPIEXEC" -n "$k" "$py" "$(dirname "$0")/test_stop.py" "$work/p$k" "$work/stop$k" > "$work/stop$k.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" = 75 ] || { echo "FAIL: a stopped job exited $rc, expected 75: $(cat "$work/stop$k.txt")" >&2; exit 1; }
  [ "$(grep -o ": stopped" "$work/stop$k.txt" | wc -l)" = "$k" ] || { echo "FAIL: not every rank stopped: $(cat "$work/stop$k.txt")" >&2; exit 1; }
  timeout 300 "$MPIEXEC" -n "$k" "$py" "$(dirname "$0")/test_stop.py" "$work/p$k" "$work/stop$k" resume
done
