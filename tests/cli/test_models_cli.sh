#!/usr/bin/env bash
# Declared models (docs/models.md): a spec file trains at 1, 2 and 4 ranks, writes its card,
# resumes exactly and predicts what training scored; the built-in's own spec, given as a file,
# trains to the same weights as --model sage; a typed spec trains on the hetero generator, and
# at 2 and 4 ranks scores one rank's losses, with every neighbour and sampled (the serial
# reference); a bad
# spec, a damaged card and weights that are not the card's are one line on every rank; weights
# from before cards still load, and predict says so.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}" "${EXAMPLES:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=${NUMPY_PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1
# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
for k in 2 4; do "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/p$k" >/dev/null; done

# The checksum of a weights file's tensors (its storage records, in order).
weights_sum() {
  "$py" - "$1" <<'PY'
import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
h = hashlib.sha256()
for n in sorted(z.namelist(), key=lambda n: (len(n), n)):
    if "/data/" in n:
        h.update(z.read(n))
print(h.hexdigest())
PY
}
train() {  # RANKS INPUT RUN ARGS... (--batch 64 unless BATCH says)
  local n=$1 input=$2 run=$3
  shift 3
  timeout 240 "$MPIEXEC" -n "$n" "$SHARDGNN" train "$input" --run-dir "$run" --batch "${BATCH:-64}" --seed 1 "$@" > "$run.txt" 2>&1 ||
    fail "training on $n ranks ($*): $(tail -3 "$run.txt")"
}
full_acc() { sed -n 's/^test accuracy \([0-9.]*\), .*(full neighbourhoods.*/\1/p' "$1"; }

# A spec at 1, 2 and 4 ranks: trains, writes model.json beside weights.pt, predicts its score.
spec="$EXAMPLES/models/gin-jk.json"
for n in 1 2 4; do
  input="$work/cora"; [ "$n" = 1 ] || input="$work/p$n"
  train "$n" "$input" "$work/gin$n" --model "$spec" --fanouts 5,5 --epochs 3
  grep -q "^training $spec on 'cora'" "$work/gin$n.txt" || fail "the first line does not name the spec: $(head -1 "$work/gin$n.txt")"
  [ -f "$work/gin$n/model.json" ] || fail "no model.json beside weights.pt at $n ranks"
  printed=$(full_acc "$work/gin$n.txt")
  [ -n "$printed" ] || fail "no full-neighbourhood test accuracy at $n ranks"
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" predict "$work/gin$n" "$work/p2" --out "$work/pred$n" > "$work/pred$n.txt" 2>&1 || fail "predict: $(cat "$work/pred$n.txt")"
  grep -qE "^predicted 2708 nodes with gin-jk \(2 layers, 1433 -> 7\)" "$work/pred$n.txt" || fail "predict's first line: $(head -1 "$work/pred$n.txt")"
  grep -q "test accuracy $printed," "$work/pred$n.txt" || fail "predict's test accuracy is not training's $printed at $n ranks: $(cat "$work/pred$n.txt")"
done
"$py" - "$work/gin1/model.json" <<'PY' || fail "the card does not hold the spec, the task and the weights' CRC"
import json, sys, zlib, os
card = json.load(open(sys.argv[1]))
assert card["format"] == "shardgnn-model-card" and card["version"] == 1, card
assert card["spec"]["name"] == "gin-jk" and [l["kind"] for l in card["spec"]["layers"]] == ["gin", "gin"], card["spec"]
assert card["spec"]["jumping_knowledge"] == "cat" and card["spec"]["head"]["kind"] == "mlp"
assert card["task"]["kind"] == "classes" and card["out"] == 7 and card["in"] == 1433, card
w = os.path.join(os.path.dirname(sys.argv[1]), card["weights"]["file"])
data = open(w, "rb").read()
assert card["weights"]["bytes"] == len(data) and card["weights"]["crc32"] == "%08x" % zlib.crc32(data), card["weights"]
PY

# Resume: stopped during epoch 2 and resumed, the same weights as a run that never stopped (batch
# normalisation's running statistics travel with the checkpoint).
spec3="$EXAMPLES/models/sage3-bn-res.json"
BATCH=16 train 2 "$work/p2" "$work/whole" --model "$spec3" --fanouts 5,5,5 --epochs 3
set +e
timeout 240 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" --run-dir "$work/cut" --batch 16 --seed 1 --model "$spec3" --fanouts 5,5,5 --epochs 3 \
  --simulate-stop 2:3 > "$work/cut.txt" 2>&1
rc=$?
set -e
[ "$rc" = 75 ] || fail "a stopped run exited $rc, expected 75: $(tail -3 "$work/cut.txt")"
timeout 240 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" --run-dir "$work/cut" --batch 16 --seed 1 --model "$spec3" --fanouts 5,5,5 --epochs 3 \
  --resume > "$work/resumed.txt" 2>&1 || fail "resume: $(tail -3 "$work/resumed.txt")"
[ "$(weights_sum "$work/whole/weights.pt")" = "$(weights_sum "$work/cut/weights.pt")" ] || fail "the resumed run's weights differ from the uninterrupted run's"

# The built-in's spec (as its card holds it) given as a file: the same model, the same weights.
train 2 "$work/p2" "$work/sage" --model sage --fanouts 5,5 --hidden 16 --epochs 2
"$py" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' "$work/sage/model.json" "$work/sage.json"
train 2 "$work/p2" "$work/sagefile" --model "$work/sage.json" --fanouts 5,5 --epochs 2
[ "$(weights_sum "$work/sage/weights.pt")" = "$(weights_sum "$work/sagefile/weights.pt")" ] || fail "--model sage and its spec as a file trained different weights"

# A typed spec on the hetero generator, R-GCN and GraphSAGE layers mixed, with embeddings for a
# featureless type; predict from the run folder.
"$SHARDGNN" data generate hetero --papers 1000 --feature-dim 8 --featureless institute --out "$work/het" >/dev/null
"$SHARDGNN" partition "$work/het" --parts 2 --out "$work/het2" >/dev/null
cat > "$work/typed.json" <<'EOF'
{"encoder": {"width": 16},
 "layers": [{"kind": "rgcn", "width": 16, "norm": "layer", "residual": "add"}, {"kind": "sage", "width": 16}],
 "jumping_knowledge": "max", "head": {"kind": "linear"}}
EOF
train 2 "$work/het2" "$work/typed" --model "$work/typed.json" --fanouts 5,5 --epochs 2
printed=$(full_acc "$work/typed.txt")
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" predict "$work/typed" "$work/het2" --out "$work/tpred" > "$work/tpred.txt" 2>&1 || fail "typed predict: $(cat "$work/tpred.txt")"
grep -q "test accuracy $printed," "$work/tpred.txt" || fail "typed predict's test accuracy is not training's $printed: $(cat "$work/tpred.txt")"

# The serial reference for typed graphs: with every neighbour (fanouts -1), no dropout and one
# step an epoch holding every training seed (global seeds), R-GAT and R-GCN layers and the
# featureless type's embedding rows (keyed by node id) compute the same losses at 2 and 4 ranks as
# at one, up to the order of float sums.
cat > "$work/typed-ref.json" <<'EOF'
{"encoder": {"width": 16},
 "layers": [{"kind": "rgat", "width": 16, "heads": 2, "activation": "elu", "dropout": 0}, {"kind": "rgcn", "width": 16, "dropout": 0}],
 "head": {"kind": "linear"}}
EOF
for n in 1 2 4; do
  input="$work/het"; [ "$n" = 1 ] || { input="$work/het$n"; [ -d "$input" ] || "$SHARDGNN" partition "$work/het" --parts "$n" --balance ntypes,train --out "$input" >/dev/null; }
  BATCH=100000 train "$n" "$input" "$work/tref$n" --model "$work/typed-ref.json" --fanouts -1,-1 --epochs 3 --lr 0.005 --weight-decay 0 \
    --seed-sampling global --no-full-eval
done
# Sampled (fanouts 4,3) over several steps: one rank over the 4-part partition's merged parts, 2
# and 4 ranks, global seeds and --batch divided by the ranks; each step then holds the same seeds
# and each node draws the same neighbours (keyed by its id), so the losses agree too.
for n in 1 2 4; do
  BATCH=$((96 / n)) train "$n" "$work/het4" "$work/tsam$n" --model "$work/typed-ref.json" --fanouts 4,3 --epochs 3 --lr 0.005 --weight-decay 0 \
    --seed-sampling global --no-full-eval
done
"$py" - "$work"/tref{1,2,4}/metrics.jsonl -- "$work"/tsam{1,2,4}/metrics.jsonl <<'PY' || fail "typed training at 2 or 4 ranks is not one rank's"
import json, sys
args = sys.argv[1:]
for files in (args[:args.index("--")], args[args.index("--") + 1:]):
    losses = [[(json.loads(l)["loss"], json.loads(l)["steps"]) for l in open(f) if '"loss"' in l] for f in files]
    assert len(losses[0]) == 3, losses
    for other in losses[1:]:
        assert len(other) == 3 and all(s == t and abs(a - b) <= 1e-4 * abs(a) for (a, s), (b, t) in zip(losses[0], other)), (files, losses)
assert losses[0][0][1] > 1, losses  # several steps an epoch
PY

# Bad specs: one line naming the file, the key path and what was expected, on every rank, and
# exit 2 (a usage error) before anything trains.
expect_cmd=(train)
expect_rc=2
bad() {  # NAME JSON PATTERN FANOUTS [INPUT]
  printf '%s' "$2" > "$work/$1.json"
  for n in 1 2 4; do
    local input=${5:-$work/cora}
    [ "$n" = 1 ] || input=${5:-$work/p$n}
    expect_error "$n" "$3" "$input" --model "$work/$1.json" --fanouts "$4" --epochs 1
    grep -q "$work/$1.json" "$work/err.txt" || fail "the error does not name the spec file: $(cat "$work/err.txt")"
  done
}
bad kind '{"layers": [{"kind": "gcnn"}]}' "key 'layers\[0\].kind'" 5
bad key '{"layers": [{"kind": "sage", "hidden": 8}]}' "key 'layers\[0\].hidden': unknown key" 5
bad heads '{"layers": [{"kind": "gat", "width": 10, "heads": 4}, {"kind": "gat"}]}' "not divisible by heads 4" 5,5
bad hops '{"layers": [{"kind": "sage"}]}' "--fanouts 2 hops" 5,5
bad relational '{"layers": [{"kind": "rgcn"}]}' "relational layer" 5
bad json '{"layers": [' "malformed JSON" 5
bad width '{"layers": [{"kind": "sage", "width": 8}]}' "the task's output is 7 wide" 5
expect_error 2 "no such model spec file" "$work/p2" --model "$work/none.json" --fanouts 5
expect_rc=1

# A damaged card, weights that are not the card's, a flipped byte: refused, naming the file.
expect_cmd=(predict)
cp -r "$work/gin2" "$work/broken"
"$py" - "$work/broken/weights.pt" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x55
open(sys.argv[1], "wb").write(bytes(data))
PY
for n in 1 2; do expect_error "$n" "broken/weights.pt: does not match its model card" "$work/broken" "$work/p2" --out "$work/o-broken"; done
cp "$work/gin1/weights.pt" "$work/broken/weights.pt"  # another run's weights, the same model
expect_error 2 "CRC-32" "$work/broken" "$work/p2" --out "$work/o-broken"
cp "$work/gin2/weights.pt" "$work/broken/weights.pt"
sed -i 's/"kind": "classes"/"kind": "clases"/' "$work/broken/model.json"
for n in 1 2; do expect_error "$n" "broken/model.json: key 'task.kind'" "$work/broken" "$work/p2" --out "$work/o-broken"; done
cp "$work/gin2/model.json" "$work/broken/model.json"
sed -i 's/"mlp_layers": 2/"mlp_layers": 3/' "$work/broken/model.json"
expect_error 2 "lacks entry 'conv0.mlp2.weight'" "$work/broken" "$work/p2" --out "$work/o-broken"
expect_error 2 "a typed graph" "$work/gin2" "$work/het2" --out "$work/o-broken"
[ ! -e "$work/o-broken" ] || fail "a refused predict left its output folder"

# Weights from before cards (no model.json): read off their names, and predict says so.
rm "$work/sage/model.json"
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" predict "$work/sage" "$work/p2" --out "$work/old" > "$work/old.txt" 2>&1 || fail "card-less predict: $(cat "$work/old.txt")"
grep -q "has no model card (model.json): the model was read off its tensors' names and shapes" "$work/old.txt" || fail "predict did not say the card is missing: $(cat "$work/old.txt")"
grep -q "test accuracy $(full_acc "$work/sage.txt")," "$work/old.txt" || fail "card-less predict's accuracy is not training's"
echo "models: specs at 1, 2 and 4 ranks, resume, built-in as a file, typed spec, bad specs and cards: all as expected"
