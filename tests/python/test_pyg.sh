#!/usr/bin/env bash
# The loaders' batches in PyG (test_pyg.py) at 1, 2 and 4 ranks, with a Python that has torch and
# torch_geometric (scripts/setup.sh --torch pip installs both into build-torch/venv).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}" "${PYTHON:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" data generate hetero --papers 300 --feature-dim 8 --featureless institute --out "$work/het" >/dev/null
for k in 1 2 4; do
  "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/c$k" >/dev/null
  "$SHARDGNN" partition "$work/het" --parts "$k" --balance ntypes,train --out "$work/h$k" >/dev/null
  timeout 300 "$MPIEXEC" -n "$k" "$PYTHON" "$(dirname "$0")/test_pyg.py" "$work/c$k" "$work/h$k"
done
