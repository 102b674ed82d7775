#!/usr/bin/env bash
# python/shardgnn_model.py against `shardgnn predict` on Cora: for GraphSAGE, GCN and GAT, the
# module's logits and last hidden layer equal predict's within 1e-4, and its classes are
# predict's. Needs $PYTHON with torch (the PyPI torch stage of scripts/test.sh).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${PYTHON:?}" "${MODULE_DIR:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
for model in sage gcn gat; do
  timeout 300 "$SHARDGNN" train "$work/cora" --model "$model" --fanouts 10,10 --hidden 32 --heads 4 --batch 128 --epochs 3 --seed 2 --no-test \
    --run-dir "$work/$model" > "$work/out.txt" 2>&1 || fail "$model training: $(tail -3 "$work/out.txt")"
  for layer in 1 2; do
    timeout 120 "$SHARDGNN" predict "$work/$model" "$work/cora" --out "$work/$model-$layer" --layer "$layer" -q > "$work/out.txt" 2>&1 ||
      fail "$model predict --layer $layer: $(cat "$work/out.txt")"
    PYTHONPATH="$MODULE_DIR" timeout 300 "$PYTHON" -m shardgnn_model "$work/$model/weights.pt" "$work/cora" --layer "$layer" --out "$work/$model-$layer.npy" \
      > "$work/py.txt" 2>&1 || fail "$model module --layer $layer: $(cat "$work/py.txt")"
  done
  grep -qE "^test accuracy 0\.[0-9]+ \(1000 nodes\), $model, 2 layers$" "$work/py.txt" || fail "$model: the module's example printed: $(cat "$work/py.txt")"
  "$PYTHON" - "$work" "$model" <<'PY' || fail "$model: the module differs from shardgnn predict"
import sys
import numpy as np
w, model = sys.argv[1], sys.argv[2]
for layer in (1, 2):
    ours = np.load(f"{w}/{model}-{layer}/embeddings.npy")
    theirs = np.load(f"{w}/{model}-{layer}.npy")
    assert ours.shape == theirs.shape, (layer, ours.shape, theirs.shape)
    diff = np.abs(ours - theirs).max()
    print(f"{model} layer {layer}: max |difference| {diff:.2e} over {ours.shape}")
    assert diff <= 1e-4, (model, layer, diff)
logits = np.load(f"{w}/{model}-2.npy")
pred = np.load(f"{w}/{model}-2/predictions.npy")
top2 = np.sort(logits, axis=1)[:, -2:]
clear = top2[:, 1] - top2[:, 0] > 1e-4  # a near-tie may go either way
assert (logits.argmax(1)[clear] == pred[clear]).all(), model
PY
done
echo "python module OK"
