#!/usr/bin/env bash
# `shardgnn predict`: a trained Cora model's embeddings, predictions and ids, written in the
# dataset's node order by one process over the dataset folder, by 2 ranks over a 2-part partition
# and by 2 ranks over a 4-part one: the same files within 1e-5, numpy reads them memory-mapped,
# the accuracy the predictions give on the test split is the one training printed, --nodes and
# --layer pick rows and layers, and bad input is one line on every rank with nothing left behind.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Debian's Python, which setup.sh gives numpy (python3-numpy); a python3 earlier on PATH may lack it.
py=${NUMPY_PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1
# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
for k in 2 4; do "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/p$k" >/dev/null; done
timeout 180 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" --model sage --fanouts 10,10 --hidden 32 --batch 64 --epochs 8 --seed 1 --run-dir "$work/run" \
  > "$work/train.txt" 2>&1 || fail "training failed: $(tail -3 "$work/train.txt")"
printed=$(sed -n 's/^test accuracy \([0-9.]*\), .*(full neighbourhoods.*/\1/p' "$work/train.txt")
[ -n "$printed" ] || fail "training printed no full-neighbourhood test accuracy: $(tail -3 "$work/train.txt")"

predict() {  # RANKS INPUT OUT ARGS...
  local n=$1 input=$2 out=$3
  shift 3
  timeout 120 "$MPIEXEC" -n "$n" "$SHARDGNN" predict "$work/run" "$input" --out "$out" "$@" > "$work/out.txt" 2>&1 ||
    fail "predict on $n ranks over $input: $(cat "$work/out.txt")"
}
predict 1 "$work/cora" "$work/o1"
grep -qE "^predicted 2708 nodes with sage \(2 layers, 1433 -> 7\) from .*/run/weights.pt on 'cora' \(dataset, 1 rank, cpu, .*\): embeddings \[2708, 32\] after layer 1$" \
  "$work/out.txt" || fail "the first line does not say what ran: $(cat "$work/out.txt")"
grep -qE "^validation accuracy 0\.[0-9]+ \(500 nodes\), test accuracy $printed, macro-F1 0\.[0-9]+ \(1000 nodes\), full neighbourhoods$" "$work/out.txt" ||
  fail "predict's test accuracy is not training's $printed: $(cat "$work/out.txt")"
predict 2 "$work/p2" "$work/o2"
predict 2 "$work/p4" "$work/o4"
[[ "$(ls "$work")" != *tmp-* ]] || fail "temporaries left behind: $(ls "$work")"

"$py" - "$work" "$printed" <<'PY' || fail "the files are not the same at 1 and 2 ranks, or not what training scored"
import json, os, sys
import numpy as np
work, printed = sys.argv[1], sys.argv[2]
cora = {n: np.load(f"{work}/cora/{n}.npy") for n in ("labels", "test_idx")}
runs = {}
for o in ("o1", "o2", "o4"):
    d = {n: np.load(f"{work}/{o}/{n}.npy", mmap_mode="r") for n in ("embeddings", "predictions", "node_ids")}
    meta = json.load(open(f"{work}/{o}/predictions.json"))
    assert meta["format"] == "shardgnn-predictions" and meta["rows"] == 2708 and meta["layer"] == 1, meta
    assert meta["arrays"]["embeddings"]["shape"] == [2708, 32] and meta["arrays"]["predictions"]["dtype"] == "<i8", meta
    import zlib
    for name, a in meta["arrays"].items():
        crc = zlib.crc32(open(f"{work}/{o}/{a['file']}", "rb").read())
        assert f"{crc:08x}" == a["crc32"], (o, name, f"{crc:08x}", a["crc32"])
    assert d["embeddings"].dtype == np.float32 and d["embeddings"].shape == (2708, 32)
    assert (np.asarray(d["node_ids"]) == np.arange(2708)).all()
    runs[o] = d
for o in ("o2", "o4"):
    diff = np.abs(np.asarray(runs[o]["embeddings"]) - np.asarray(runs["o1"]["embeddings"])).max()
    assert diff <= 1e-5, (o, diff)
    assert (np.asarray(runs[o]["predictions"]) == np.asarray(runs["o1"]["predictions"])).all(), o
t = cora["test_idx"]
acc = (np.asarray(runs["o1"]["predictions"])[t] == cora["labels"][t]).mean()
assert f"{acc:.4f}" == printed, (acc, printed)
PY

# --nodes (a text file, in its order) and --layer 2 (the logits, whose argmax the predictions are).
printf '# a subset\n2707\n0\n\n1500\n17\n' > "$work/nodes.txt"
predict 2 "$work/p4" "$work/sub" --nodes "$work/nodes.txt" --layer 2
predict 1 "$work/cora" "$work/logits" --layer 2
"$py" - "$work" <<'PY' || fail "--nodes or --layer wrote other rows"
import sys
import numpy as np
w = sys.argv[1]
ids = [2707, 0, 1500, 17]
sub = {n: np.load(f"{w}/sub/{n}.npy") for n in ("embeddings", "predictions", "node_ids")}
full = {n: np.load(f"{w}/logits/{n}.npy") for n in ("embeddings", "predictions")}
assert sub["node_ids"].tolist() == ids and sub["embeddings"].shape == (4, 7)
assert np.abs(sub["embeddings"] - full["embeddings"][ids]).max() <= 1e-5
assert (full["predictions"] == full["embeddings"].argmax(1)).all()
assert (sub["predictions"] == full["predictions"][ids]).all()
PY

# A weights file names itself; --force replaces earlier predictions and nothing else.
timeout 120 "$SHARDGNN" predict "$work/run/weights.pt" "$work/cora" --out "$work/o1" --force -q > "$work/out.txt" 2>&1 || fail "--force: $(cat "$work/out.txt")"
[ ! -s "$work/out.txt" ] || fail "-q printed: $(cat "$work/out.txt")"

expect_cmd=(predict "$work/run")
expect_error 2 "output folder exists and is not empty (pass --force" "$work/p2" --out "$work/o2"
expect_error 2 "holds no shardgnn dataset, partitioned dataset or predictions" "$work/p2" --out "$work/run" --force
expect_error 2 "layer 3: the model has 2 layers" "$work/p2" --out "$work/x" --layer 3
printf '5\nfive\n' > "$work/bad.txt"
expect_error 2 "bad.txt: line 2: expected one non-negative node id, found 'five'" "$work/p2" --out "$work/x" --nodes "$work/bad.txt"
printf '5\n9999\n' > "$work/bad.txt"
expect_error 2 "bad.txt: entry 2: node 9999 is not in the dataset (ids 0 to 2707)" "$work/p2" --out "$work/x" --nodes "$work/bad.txt"
printf '5\n6\n5\n' > "$work/bad.txt"
expect_error 2 "bad.txt: entry 3: node 5 again (entry 1 lists it too)" "$work/p2" --out "$work/x" --nodes "$work/bad.txt"
printf '# nothing\n' > "$work/bad.txt"
expect_error 2 "bad.txt: lists no node ids" "$work/p2" --out "$work/x" --nodes "$work/bad.txt"
"$py" -c "import numpy as np; np.save('$work/neg.npy', np.array([3, -2]))"
expect_error 2 "neg.npy: entry 2: node -2, expected a non-negative id" "$work/p2" --out "$work/x" --nodes "$work/neg.npy"
expect_error 2 "unknown --task 'sets', expected one of: auto, classes, label-sets" "$work/p2" --out "$work/x" --task sets
"$SHARDGNN" data convert "$SAMPLES/citeseer.npz" --out "$work/citeseer" >/dev/null
expect_error 1 "nodes have 3703 features, the model in .*weights.pt takes 1433" "$work/citeseer" --out "$work/x"
echo "not a model" > "$work/junk.pt"
expect_cmd=(predict "$work/junk.pt")
expect_error 1 "junk.pt: not a weights file in torch.save's format" "$work/cora" --out "$work/x"
# A storage record cut short, the zip rewritten with valid CRCs: torch's reader takes it, the
# tensor would read past it; refused by the weights reader.
mkdir -p "$work/cut"
"$py" - "$work/run/weights.pt" "$work/cut/weights.pt" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, zipfile.ZipFile(sys.argv[2], "w") as out:
    # The smallest storage record longer than 13 bytes (a bias), cut to 13.
    small = min((j for j in z.infolist() if "/data/" in j.filename and j.file_size > 13), key=lambda j: j.file_size)
    for i in z.infolist():
        data = z.read(i.filename)
        out.writestr(i.filename, data[:13] if i.filename == small.filename else data)
PY
expect_cmd=(predict "$work/cut/weights.pt")
# (A torch that checks record sizes itself refuses it first, through the same one line.)
for ranks in 1 2; do
  expect_error $ranks "cut/weights.pt: \(record 'data/[0-9]*': damaged weights file: 13 bytes, the size of none of its tensors' storages\|not a weights file in torch.save's format\)" \
    "$work/p2" --out "$work/x"
done
expect_cmd=(predict "$work/cora")
expect_error 1 "a folder without weights.pt" "$work/cora" --out "$work/x"
[ ! -e "$work/x" ] || fail "a failed run left its output folder"
[[ "$(ls "$work")" != *tmp-* ]] || fail "temporaries left behind: $(ls "$work")"
echo "predict CLI OK"
