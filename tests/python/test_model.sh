#!/usr/bin/env bash
# python/shardgnn_model.py against `shardgnn predict`: on Cora for GraphSAGE, GCN, GAT and the
# declared examples (GIN with jumping knowledge, GATv2, GraphSAGE with batch norm and residuals),
# and on the hetero generator for R-GCN, R-GAT and a mixed typed spec (R-GCN and R-GAT again with
# relation ids: two relations between papers), and for link models' MLP and DistMult scorers (their
# scores of predict's embeddings give predict's test AUC), the module's hidden rows
# equal predict's within 1e-5 (relative to the value, at least 1e-5 absolute) and its classes are
# predict's. A weights file from before cards still loads; weights that are not the card's are
# refused. Needs $PYTHON with torch (the PyPI torch stage of scripts/test.sh).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${PYTHON:?}" "${MODULE_DIR:?}" "${EXAMPLES:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" data generate hetero --papers 1000 --feature-dim 8 --out "$work/het" >/dev/null
cat > "$work/mixed.json" <<'JSON'
{"encoder": {"width": 16},
 "layers": [{"kind": "rgcn", "width": 16, "bases": 2, "norm": "layer", "residual": "add"}, {"kind": "sage", "width": 16, "aggregation": "max"}],
 "jumping_knowledge": "max", "head": {"kind": "mlp", "layers": 2, "width": 16}}
JSON

check() {  # NAME DATA FANOUTS LAYERS MODEL-ARGS...
  local name=$1 data=$2 fanouts=$3 layers=$4
  shift 4
  timeout 300 "$SHARDGNN" train "$work/$data" "$@" --fanouts "$fanouts" --batch 128 --epochs 2 --seed 2 --no-test \
    --run-dir "$work/$name" > "$work/out.txt" 2>&1 || fail "$name training: $(tail -3 "$work/out.txt")"
  for layer in $(seq 1 "$layers"); do
    timeout 120 "$SHARDGNN" predict "$work/$name" "$work/$data" --out "$work/$name-$layer" --layer "$layer" -q > "$work/out.txt" 2>&1 ||
      fail "$name predict --layer $layer: $(cat "$work/out.txt")"
    PYTHONPATH="$MODULE_DIR" timeout 300 "$PYTHON" -m shardgnn_model "$work/$name/weights.pt" "$work/$data" --layer "$layer" --out "$work/$name-$layer.npy" \
      > "$work/py.txt" 2>&1 || fail "$name module --layer $layer: $(cat "$work/py.txt")"
  done
  PYTHONPATH="$MODULE_DIR" timeout 300 "$PYTHON" -m shardgnn_model "$work/$name/weights.pt" "$work/$data" --out "$work/$name-out.npy" > "$work/py.txt" 2>&1 ||
    fail "$name module: $(cat "$work/py.txt")"
  grep -qE "^test accuracy 0\.[0-9]+ \([0-9]+ nodes\), [a-z0-9-]+, $layers layers$" "$work/py.txt" || fail "$name: the module's example printed: $(cat "$work/py.txt")"
  "$PYTHON" - "$work" "$name" "$layers" <<'PY' || fail "$name: the module differs from shardgnn predict"
import sys
import numpy as np
w, name, layers = sys.argv[1], sys.argv[2], int(sys.argv[3])
for layer in range(1, layers + 1):
    ours = np.load(f"{w}/{name}-{layer}/embeddings.npy")
    theirs = np.load(f"{w}/{name}-{layer}.npy")
    assert ours.shape == theirs.shape, (layer, ours.shape, theirs.shape)
    excess = (np.abs(ours - theirs) - 1e-5 * np.maximum(1, np.abs(ours))).max()
    print(f"{name} layer {layer}: max |difference| {np.abs(ours - theirs).max():.2e} over {ours.shape}")
    assert excess <= 0, (name, layer, excess)
logits = np.load(f"{w}/{name}-out.npy")
pred = np.load(f"{w}/{name}-{layers}/predictions.npy")
top2 = np.sort(logits, axis=1)[:, -2:]
clear = top2[:, 1] - top2[:, 0] > 1e-4  # a near-tie may go either way
assert (logits.argmax(1)[clear] == pred[clear]).all(), name
PY
}
for model in sage gcn gat; do check "$model" cora 10,10 2 --model "$model" --hidden 32 --heads 4; done
check gin-jk cora 10,10 2 --model "$EXAMPLES/models/gin-jk.json"
check gatv2 cora 10,10 2 --model "$EXAMPLES/models/gatv2-8h.json"
check sage3 cora 5,5,5 3 --model "$EXAMPLES/models/sage3-bn-res.json"
check rgcn het 5,5 2 --model rgcn --hidden 16 --bases 2
check rgat het 5,5 2 --model rgat --hidden 16 --heads 2
check mixed het 5,5 2 --model "$work/mixed.json"
# Two relations between papers (cites, and a random "mentions"): the stored relation ids, which
# the end types cannot give, are what both compute with.
"$SHARDGNN" data export "$work/het" --format igbh --out "$work/het-igbh" > /dev/null
mkdir "$work/het-igbh/processed/paper__mentions__paper"
"$PYTHON" -c 'import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(3).integers(0, 1000, size=(1500, 2)))' \
  "$work/het-igbh/processed/paper__mentions__paper/edge_index.npy"
"$SHARDGNN" data convert "$work/het-igbh" --split random:0.6,0.2 --out "$work/kg" > /dev/null
check rgcn-kg kg 5,5 2 --model rgcn --hidden 16 --bases 2
check rgat-kg kg 5,5 2 --model rgat --hidden 16 --heads 2

# Link prediction with the MLP and DistMult scorers: the module loads the scorer with the weights,
# and its scores of predict's embeddings give the test AUC predict printed.
"$SHARDGNN" data split-edges "$work/cora" --seed 0 --out "$work/cl" > /dev/null
for scorer in mlp distmult; do
  timeout 300 "$SHARDGNN" train "$work/cl" --task link --model gcn --hidden 32 --embedding-dim 16 --fanouts -1,-1 --batch 256 --epochs 5 --scorer "$scorer" \
    --run-dir "$work/link-$scorer" -q > "$work/out.txt" 2>&1 || fail "link $scorer training: $(tail -3 "$work/out.txt")"
  timeout 120 "$SHARDGNN" predict "$work/link-$scorer" "$work/cl" --out "$work/link-$scorer-pred" > "$work/out.txt" 2>&1 || fail "link $scorer predict: $(cat "$work/out.txt")"
  auc=$(sed -n 's/.*, test AUC \([0-9.]*\), .*/\1/p' "$work/out.txt")
  PYTHONPATH="$MODULE_DIR" "$PYTHON" - "$work/link-$scorer" "$work/cl" "$auc" "$scorer" <<'PY' || fail "the module's $scorer scorer differs from predict's"
import sys
import numpy as np
import torch
import shardgnn_model
run, data, want, kind = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
model = shardgnn_model.Gnn.from_weights(run + "/weights.pt")
assert model.scorer.kind == kind, model.scorer.kind
if kind == "distmult":
    assert model.scorer.relation.shape == (1, 16) and (model.scorer.relation - 1).abs().max() > 1e-4, model.scorer.relation
h = torch.from_numpy(np.load(run + "-pred/predictions.npy"))
def scores(name):
    p = torch.from_numpy(np.load(f"{data}/{name}.npy").astype(np.int64))
    with torch.no_grad():
        return model.scorer.score(h[p[:, 0]], h[p[:, 1]]).numpy()
pos, neg = scores("test_pos_edges"), scores("test_neg_edges")
auc = ((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
print(f"{kind}: the module's test AUC {auc:.4f}, predict's {want:.4f}")
assert abs(auc - want) <= 1e-4, (auc, want)
PY
done

# A weights file from before cards: the module reads it off its names.
rm "$work/sage/model.json"
PYTHONPATH="$MODULE_DIR" "$PYTHON" -m shardgnn_model "$work/sage/weights.pt" "$work/cora" --out "$work/legacy.npy" > "$work/py.txt" 2>&1 ||
  fail "card-less weights: $(cat "$work/py.txt")"
"$PYTHON" -c 'import sys, numpy as np; assert np.allclose(np.load(sys.argv[1]), np.load(sys.argv[2]), atol=1e-6)' "$work/legacy.npy" "$work/sage-out.npy" ||
  fail "card-less weights give other outputs"
# Weights that are not the card's are refused.
cp "$work/gcn/weights.pt" "$work/gat/weights.pt"
if PYTHONPATH="$MODULE_DIR" "$PYTHON" -m shardgnn_model "$work/gat/weights.pt" "$work/cora" > "$work/py.txt" 2>&1; then fail "the module took weights that are not its card's"; fi
grep -q "does not match its model card" "$work/py.txt" || fail "the module's refusal: $(cat "$work/py.txt")"
echo "python module OK"
