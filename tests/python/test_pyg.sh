#!/usr/bin/env bash
# The loaders' batches in PyG (test_pyg.py, under pytest: conftest.py reads the paths set here) at
# 1, 2 and 4 ranks, with a Python that has torch, torch_geometric and pytest (scripts/setup.sh
# --torch pip installs them into build-torch/venv).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}" "${PYTHON:?}"
"$PYTHON" -c 'import pytest' 2>/dev/null || { echo "test_pyg.sh: $PYTHON has no pytest (scripts/setup.sh --torch pip installs it)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" data generate hetero --papers 300 --feature-dim 8 --featureless institute --out "$work/het" >/dev/null
export SHARDGNN_TEST_CORA="$work/cora" SHARDGNN_TEST_HETERO="$work/het" SHARDGNN_TEST_WORK="$work"
for k in 1 2 4; do
  "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/c$k" >/dev/null
  "$SHARDGNN" partition "$work/het" --parts "$k" --balance ntypes,train --out "$work/h$k" >/dev/null
  echo "test_pyg.sh: $k rank(s)"
  SHARDGNN_TEST_CORA_PARTS="$work/c$k" SHARDGNN_TEST_HETERO_PARTS="$work/h$k" \
    timeout 300 "$MPIEXEC" -n "$k" "$PYTHON" -m pytest -q -p no:cacheprovider "$here/test_pyg.py"
done
