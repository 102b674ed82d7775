#!/usr/bin/env bash
# Multi-label datasets: GraphSAINT's folder (adj_full.npz, feats.npy, class_map.json, role.json;
# single- and multi-label class maps) and an npz whose labels are a 0/1 matrix convert into a
# dataset whose label_bits.npy numpy unpacks to the input's matrix; data info and validate report
# and check them; partition carries them to the shards (verified, and counted in the report's
# label entropy); bad input is one line; with libtorch, training reports micro- and macro-F1 at 1 and
# 2 ranks (class-balanced seeds over label sets) and predict writes the label scores behind them.
set -euo pipefail
: "${SHARDGNN:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Debian's Python, which setup.sh gives numpy (python3-numpy); a python3 earlier on PATH may lack it.
py=${NUMPY_PYTHON:-/usr/bin/python3}

# A small GraphSAINT folder in its layout: a ring of 40 nodes with chords, 5 labels per node row.
"$py" - "$work/saint" <<'PY'
import json, os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d)
n, C = 40, 5
rows = [sorted({(v + 1) % n, (v - 1) % n, (v + 7) % n, (v - 7) % n}) for v in range(n)]
indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int32)
indices = np.array([u for r in rows for u in r], dtype=np.int32)
# What scipy.sparse.save_npz writes for a CSR matrix.
np.savez(f"{d}/adj_full.npz", indices=indices, indptr=indptr, format=np.array(b"csr"), shape=np.array([n, n]), data=np.ones(len(indices), np.float32))
rng = np.random.default_rng(0)
np.save(f"{d}/feats.npy", rng.standard_normal((n, 6)))  # float64, as GraphSAINT's are
labels = (rng.random((n, C)) < 0.4).astype(int)
json.dump({str(v): labels[v].tolist() for v in range(n)}, open(f"{d}/class_map.json", "w"))
json.dump({"tr": list(range(0, 24)), "va": list(range(24, 32)), "te": list(range(32, 40))}, open(f"{d}/role.json", "w"))
np.save(f"{d}/expected.npy", labels.astype(np.uint8))
PY
"$SHARDGNN" data convert "$work/saint" --out "$work/ml" > "$work/out.txt" || fail "convert: $(cat "$work/out.txt")"
grep -q "^wrote $work/ml: 40 nodes, 160 directed edges, 6 features, 5 classes, split 24/8/8$" "$work/out.txt" || fail "convert said: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/ml" > "$work/out.txt" || fail "validate: $(cat "$work/out.txt")"
"$SHARDGNN" data info "$work/ml" > "$work/info.txt"
"$py" - "$work" <<'PY' || fail "label_bits.npy is not the class map, or info miscounts: $(cat "$work/info.txt")"
import json, sys
import numpy as np
w = sys.argv[1]
want = np.load(f"{w}/saint/expected.npy")
bits = np.load(f"{w}/ml/label_bits.npy", mmap_mode="r")
assert bits.dtype == np.uint8 and bits.shape == (40, 1), bits.shape
got = np.unpackbits(np.asarray(bits), axis=1, count=5, bitorder="little")
assert (got == want).all()
meta = json.load(open(f"{w}/ml/meta.json"))
assert meta["multilabel"] is True and meta["num_classes"] == 5 and "labels" not in meta["arrays"]
line = [l for l in open(f"{w}/info.txt") if l.startswith("labels ")][0]
assert f"5, several per node (multi-label): {int(want.sum())} set," in line, line
assert f"{int((want.sum(1) > 0).sum())} nodes with at least one" in line, line
PY

# Bounded memory: with --memory-limit 1K the adjacency goes through bucket files and float64
# features are converted through a file, for GraphSAINT's folder and an npz alike, each member
# deflated (numpy.savez_compressed) and so inflated piece by piece; every array comes out as the
# in-memory read writes it, and no scratch folder is left.
"$py" - "$work" <<'PY'
import json, os, shutil, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(5)
n, C = 3000, 7
src = rng.integers(0, n, 20000); dst = rng.integers(0, n, 20000)  # directed, duplicates and self-loops
order = np.lexsort((dst, src)); src, dst = src[order], dst[order]
indptr = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
labels = (rng.random((n, C)) < 0.3).astype(np.uint8)
d = f"{w}/saint-big"
os.makedirs(d)
np.savez_compressed(f"{d}/adj_full.npz", indices=dst.astype(np.int32), indptr=indptr, format=np.array(b"csr"), shape=np.array([n, n]),
                    data=np.ones(len(dst), np.float32))
np.save(f"{d}/feats.npy", rng.standard_normal((n, 9)))
json.dump({str(v): labels[v].tolist() for v in range(n)}, open(f"{d}/class_map.json", "w"))
json.dump({"tr": list(range(0, 2000)), "va": list(range(2000, 2500)), "te": list(range(2500, n))}, open(f"{d}/role.json", "w"))
shutil.copytree(d, f"{w}/saint-f32")
np.save(f"{w}/saint-f32/feats.npy", rng.standard_normal((n, 9)).astype(np.float32))  # float32: mapped as it is
np.savez_compressed(f"{w}/big.npz", adj_data=np.ones(len(dst), np.float32), adj_indices=dst, adj_indptr=indptr, adj_shape=np.array([n, n]),
                    attr_matrix=rng.standard_normal((n, 5)), labels=labels)
PY
for input in saint-big saint-f32 big.npz; do
  for mode in mem disk; do
    limit=(); [[ $mode == disk ]] && limit=(--memory-limit 1K)
    "$SHARDGNN" data convert "$work/$input" --symmetrize --drop-self-loops --drop-duplicates "${limit[@]}" --out "$work/$input-$mode" > "$work/out.txt" ||
      fail "$input $mode: $(cat "$work/out.txt")"
  done
  grep -qF "building the graph through files on disk" "$work/out.txt" || fail "$input --memory-limit 1K did not build through files: $(cat "$work/out.txt")"
  [[ $input == saint-f32 ]] || grep -qF "building the features through files on disk" "$work/out.txt" || fail "$input: features not converted through a file"
  for f in "$work/$input-mem"/*.npy; do
    cmp -s "$f" "$work/$input-disk/${f##*/}" || fail "$input: ${f##*/} through files differs from the in-memory read"
  done
  [[ -z "$(find "$work" -maxdepth 1 -name '*.scratch-*')" ]] || fail "$input through files left a scratch folder"
done
"$SHARDGNN" data validate "$work/big.npz-disk" > /dev/null || fail "the npz read through files does not validate"

# Into shards, verified against the dataset, and the report's label entropy counts label sets.
"$SHARDGNN" partition "$work/ml" --parts 2 --method metis --balance nodes,labels --out "$work/ml-2" --verify > "$work/out.txt" 2>&1 ||
  fail "partition: $(cat "$work/out.txt")"
"$SHARDGNN" partition report "$work/ml-2" --json > "$work/report.json"
"$py" - "$work" <<'PY' || fail "the shards' label sets or the report's counts are wrong"
import json, sys
import numpy as np
w = sys.argv[1]
want = np.load(f"{w}/saint/expected.npy")
total = np.zeros(5, dtype=int)
for k in (0, 1):
    orig = np.load(f"{w}/ml-2/part-{k}/orig_ids.npy")
    bits = np.load(f"{w}/ml-2/part-{k}/label_bits.npy")
    assert (np.unpackbits(bits, axis=1, count=5, bitorder="little") == want[orig]).all(), k
r = json.load(open(f"{w}/report.json"))
shards = r["metrics"]["shards"] if "metrics" in r else r["shards"]
for s in shards:
    total += np.array(s["label_counts"])
assert (total == want.sum(0)).all(), (total, want.sum(0))
PY
# A damaged label row: validate names the node; the shard loader refuses a padding bit.
cp -r "$work/ml" "$work/bad"
"$py" - "$work/bad" <<'PY'
import sys
import numpy as np
p = f"{sys.argv[1]}/label_bits.npy"
a = np.load(p)
a[3, 0] |= 0x80  # bit 7: label 7 of a 5-label set
np.save(p, a)
PY
set +e
"$SHARDGNN" data validate "$work/bad" > "$work/out.txt" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "validate of a padding bit exited $rc"
grep -q "label_bits.npy: element 3: node 3 has a label bit past its 5 labels set" "$work/out.txt" || fail "validate: $(cat "$work/out.txt")"

# A single-label class map, and an npz with a 0/1 label matrix.
"$py" - "$work" <<'PY'
import json, shutil, sys
import numpy as np
w = sys.argv[1]
shutil.copytree(f"{w}/saint", f"{w}/saint1")
json.dump({str(v): v % 3 for v in range(40)}, open(f"{w}/saint1/class_map.json", "w"))
cora = np.load(f"{w}/saint/expected.npy")
rows = [sorted({(v + 1) % 40, (v - 1) % 40}) for v in range(40)]
indptr = np.cumsum([0] + [len(r) for r in rows])
np.savez(f"{w}/ml.npz", adj_data=np.ones(80, np.float32), adj_indices=np.array([u for r in rows for u in r]), adj_indptr=indptr,
         adj_shape=np.array([40, 40]), attr_matrix=np.ones((40, 3), np.float32), labels=cora.astype(bool))
PY
"$SHARDGNN" data convert "$work/saint1" --out "$work/sl" > /dev/null
"$py" -c "
import json, numpy as np
m = json.load(open('$work/sl/meta.json'))
assert m['num_classes'] == 3 and not m.get('multilabel', False)
assert (np.load('$work/sl/labels.npy') == np.arange(40) % 3).all()" || fail "a single-label class map"
"$SHARDGNN" data convert "$work/ml.npz" --out "$work/npz" --split random:0.5,0.25 > /dev/null
"$py" -c "
import json, numpy as np
m = json.load(open('$work/npz/meta.json'))
assert m['multilabel'] and m['num_classes'] == 5
bits = np.unpackbits(np.load('$work/npz/label_bits.npy'), axis=1, count=5, bitorder='little')
assert (bits == np.load('$work/saint/expected.npy')).all()
assert len(np.load('$work/npz/train_idx.npy')) == 20" || fail "an npz with a label matrix"

expect_convert_error() {  # PATTERN ARGS...
  local pattern=$1
  shift
  set +e
  "$SHARDGNN" data convert "$@" > "$work/out.txt" 2>&1
  local rc=$?
  set -e
  [ "$rc" = 1 ] || fail "convert $* exited $rc: $(cat "$work/out.txt")"
  [ "$(wc -l < "$work/out.txt")" = 1 ] || fail "convert $*: more than one line: $(cat "$work/out.txt")"
  grep -qF -- "$pattern" "$work/out.txt" || fail "convert $*: expected '$pattern': $(cat "$work/out.txt")"
  [ ! -e "$work/x" ] || fail "convert $* left its output"
}
cp -r "$work/saint" "$work/s2"
"$py" -c "
import json; m = json.load(open('$work/s2/class_map.json')); m['5'] = [0, 1]; json.dump(m, open('$work/s2/class_map.json', 'w'))"
expect_convert_error "class_map.json: node '5': has 2 labels, the first node 5" "$work/s2" --out "$work/x"
"$py" -c "
import json; m = json.load(open('$work/s2/class_map.json')); m['5'] = [0, 2, 0, 0, 1]; json.dump(m, open('$work/s2/class_map.json', 'w'))"
expect_convert_error "class_map.json: node '5': label entry 2, expected 0 or 1" "$work/s2" --out "$work/x"
"$py" -c "
import json; m = json.load(open('$work/s2/class_map.json')); m['0'] = []; json.dump(m, open('$work/s2/class_map.json', 'w'))"
expect_convert_error "class_map.json: node '0': an empty label list" "$work/s2" --out "$work/x"
"$py" -c "
import json; m = json.load(open('$work/saint/class_map.json')); del m['3']; json.dump(m, open('$work/s2/class_map.json', 'w'))"
expect_convert_error "class_map.json: node 3 of role.json's 'tr' has no label list" "$work/s2" --out "$work/x"
printf '{"0": [1, 0' > "$work/s2/class_map.json"
expect_convert_error "class_map.json: byte 11: malformed JSON" "$work/s2" --out "$work/x"
cp "$work/saint/class_map.json" "$work/s2/"
echo '{"tr": [0, 1], "va": [40], "te": []}' > "$work/s2/role.json"
expect_convert_error "role.json: key 'va', element 0: expected a node id in [0, 40), found 40" "$work/s2" --out "$work/x"
rm "$work/s2/role.json"
expect_convert_error "lacks role.json (GraphSAINT's layout" "$work/s2" --out "$work/x"
expect_convert_error "is multi-label (a set of labels per node); use random:TRAIN,VAL" "$work/saint" --out "$work/x" --split per-class:2,2

# Training on label sets (sigmoid and binary cross-entropy, micro- and macro-F1) in one process and
# on 2 ranks with class-balanced seeds drawn over label sets (and with global seeds); predict writes
# each label's score.
if [ -x "$(dirname "$SHARDGNN")/shardgnn-train" ] && [ -n "${MPIEXEC:-}" ]; then
  export OMP_NUM_THREADS=1
  q=(--model sage --fanouts 5,5 --hidden 16 --batch 8 --epochs 3)
  set +e
  "$SHARDGNN" train "$work/ml" "${q[@]}" --task classes > "$work/out.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" = 1 ] && grep -q -- "--task classes: the dataset's labels are sets (label_bits.npy); pass --task label-sets or auto" "$work/out.txt" ||
    fail "train --task classes on label sets: exit $rc: $(cat "$work/out.txt")"
  timeout 120 "$SHARDGNN" train "$work/ml" "${q[@]}" --task label-sets --metrics "$work/m1.jsonl" > "$work/out.txt" 2>&1 || fail "train on label sets: $(cat "$work/out.txt")"
  grep -qE "^best validation micro-F1 0\.[0-9]+ at epoch [1-3]$" "$work/out.txt" || fail "no validation micro-F1: $(cat "$work/out.txt")"
  grep -qE "^test micro-F1 0\.[0-9]+, macro-F1 0\.[0-9]+ \(full neighbourhoods" "$work/out.txt" || fail "no test micro-F1: $(cat "$work/out.txt")"
  "$py" -c "
import json
r = json.loads(open('$work/m1.jsonl').read().splitlines()[-1])['result']
assert r['score'] == 'micro-F1' and 0 <= r['full']['micro_f1'] <= 1 and r['full']['count'] == 8, r" || fail "the result record lacks micro-F1: $(tail -1 "$work/m1.jsonl")"
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/ml-2" "${q[@]}" --seed-sampling class-balanced --run-dir "$work/run2" > "$work/out.txt" 2>&1 ||
    fail "2 ranks, class-balanced: $(cat "$work/out.txt")"
  full=$(sed -n 's/^test micro-F1 \([0-9.]*\), .*(full neighbourhoods.*/\1/p' "$work/out.txt")
  macro=$(sed -n 's/^test micro-F1 [0-9.]*, macro-F1 \([0-9.]*\) (full neighbourhoods.*/\1/p' "$work/out.txt")
  [ -n "$full" ] || fail "2 ranks: no test micro-F1: $(cat "$work/out.txt")"
  # Global seeds over label sets: the schedule carries no labels, each batch fetches its seeds' sets.
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/ml-2" "${q[@]}" --seed-sampling global > "$work/out-g.txt" 2>&1 ||
    fail "2 ranks, global seeds: $(cat "$work/out-g.txt")"
  grep -qE "^test micro-F1 0\.[0-9]+, macro-F1 0\.[0-9]+ \(full neighbourhoods" "$work/out-g.txt" ||
    fail "2 ranks, global seeds: no test micro-F1: $(cat "$work/out-g.txt")"
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" predict "$work/run2" "$work/ml-2" --out "$work/pred" > "$work/out.txt" 2>&1 || fail "predict: $(cat "$work/out.txt")"
  grep -qE "^validation micro-F1 0\.[0-9]+ \(8 nodes\), test micro-F1 $full, macro-F1 0\.[0-9]+ \(8 nodes\), full neighbourhoods$" "$work/out.txt" ||
    fail "predict's test micro-F1 is not training's $full: $(cat "$work/out.txt")"
  # --task classes on label sets: the argmax, and nothing scored against label sets.
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" predict "$work/run2" "$work/ml-2" --out "$work/pred-c" --task classes > "$work/out.txt" 2>&1 || fail "predict --task classes: $(cat "$work/out.txt")"
  ! grep -q "micro-F1\|accuracy" "$work/out.txt" || fail "predict --task classes scored label sets: $(cat "$work/out.txt")"
  "$py" -c "import numpy as np; p = np.load('$work/pred-c/predictions.npy'); assert p.dtype == np.int64 and p.shape == (40,)" || fail "--task classes did not write classes"
  "$py" - "$work" "$full" "$macro" <<'PY' || fail "predictions.npy does not hold the label scores that give training's micro- and macro-F1"
import sys
import numpy as np
w, full, macro = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
p = np.load(f"{w}/pred/predictions.npy", mmap_mode="r")
assert p.dtype == np.float32 and p.shape == (40, 5) and (np.asarray(p) >= 0).all() and (np.asarray(p) <= 1).all(), (p.dtype, p.shape)
truth = np.load(f"{w}/saint/expected.npy").astype(bool)
t = np.load(f"{w}/ml/test_idx.npy")
pred = np.asarray(p)[t] > 0.5
tp, fp, fn = (pred & truth[t]).sum(), (pred & ~truth[t]).sum(), (~pred & truth[t]).sum()
micro = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
assert abs(micro - full) < 1e-4, (micro, full)
# scikit-learn's macro-F1 over an indicator matrix: every label's F1, 0 where it is neither present nor predicted.
f1 = [2 * (pred[:, c] & truth[t][:, c]).sum() / d if (d := 2 * (pred[:, c] & truth[t][:, c]).sum() + (pred[:, c] ^ truth[t][:, c]).sum()) else 0.0
      for c in range(5)]
assert abs(sum(f1) / 5 - macro) < 1e-4, (f1, macro)
PY
fi
echo "multi-label CLI OK"
