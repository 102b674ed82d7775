#!/usr/bin/env bash
# `shardgnn partition` end to end: partition Cora, verify, report (table + SVG), 2-byte feature
# dtypes; bad requests give one stderr line, the right exit code and leave nothing behind.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --balance nodes,train --out "$work/p2" --verify > "$work/out.txt"
grep -q "verified" "$work/out.txt" || fail "partition --verify did not verify"
grep -q "edge cut" "$work/out.txt" || fail "partition printed no report"
[ -f "$work/p2/partition.json" ] && [ -d "$work/p2/part-0" ] && [ -d "$work/p2/part-1" ] || fail "missing shard folders"
"$SHARDGNN" partition verify "$work/p2" >/dev/null || fail "partition verify failed on a good partition"
"$SHARDGNN" partition report "$work/p2" > "$work/report.txt"
grep -qE "^ +0 +[0-9]+" "$work/report.txt" || fail "report table lacks a row for part 0"
grep -q "<svg" "$work/p2/report.svg" || fail "report.svg is not an SVG"
grep -q '"edge_cut"' <<<"$("$SHARDGNN" partition report "$work/p2" --json)" || fail "report --json lacks edge_cut"

# --balance cost: the expected cost shows in the report and in partition.json, with the model used.
"$SHARDGNN" partition "$work/cora" --parts 4 --balance nodes,cost --fanouts 10,5 --cost-remote-weight 3 --out "$work/pc" --verify > "$work/out.txt"
grep -q "expected cost        max/mean" "$work/out.txt" || fail "partition --balance cost printed no expected cost"
grep -q "fanouts 10,5" "$work/out.txt" || fail "the report does not name the cost model's fanouts"
grep -q '"expected_cost"' <<<"$("$SHARDGNN" partition report "$work/pc" --json)" || fail "report --json lacks expected_cost"
"$SHARDGNN" partition "$work/cora" --parts 3 --method fennel --balance cost --fanouts=-1,5 --out "$work/pc-fennel" >/dev/null || fail "fennel --balance cost failed"

for m in random ldg fennel; do
  "$SHARDGNN" partition "$work/cora" --parts 3 --method "$m" --out "$work/p-$m" --verify >/dev/null || fail "$m partition failed"
done
# The multilevel path, forced through levels on a small graph.
# Its coarse graphs go to spill files in --scratch, unlinked as they are made.
mkdir "$work/scratch"
"$SHARDGNN" partition "$work/cora" --parts 3 --method metis-ml --coarse-nodes 200 --balance nodes,train --scratch "$work/scratch" --out "$work/p-ml" --verify \
  > "$work/out.txt" 2> "$work/err.txt" || fail "metis-ml partition failed"
grep -q "verified" "$work/out.txt" || fail "metis-ml partition did not verify"
grep -q -- "-> " "$work/err.txt" || fail "metis-ml made no coarse level: $(cat "$work/err.txt")"
[ -z "$(ls -A "$work/scratch")" ] || fail "metis-ml left spill files behind: $(ls -A "$work/scratch")"
# --method metis goes the multilevel way, and says so, when METIS would need more than the memory limit.
"$SHARDGNN" partition "$work/cora" --parts 3 --method metis --memory-limit 100k --out "$work/p-auto" --verify > "$work/out.txt" 2> "$work/err.txt" ||
  fail "metis with a small --memory-limit failed: $(cat "$work/err.txt")"
grep -q "more than the 100 KiB of --memory-limit; partitioning it the multilevel way" "$work/err.txt" || fail "metis did not say it took the multilevel path: $(cat "$work/err.txt")"
grep -q "^metis-ml: " "$work/err.txt" && grep -q "verified" "$work/out.txt" || fail "metis's multilevel path did not run or verify"
"$SHARDGNN" partition "$work/cora" --parts 3 --method metis --out "$work/p-whole" > /dev/null 2> "$work/err.txt" || fail "metis failed"
[ ! -s "$work/err.txt" ] || fail "metis on Cora within memory said: $(cat "$work/err.txt")"
# ldg and fennel balance edges too on a graph with skewed degrees (Cora's), unless --balance is given.
"$SHARDGNN" partition "$work/cora" --parts 3 --method fennel --out "$work/p-fe" > "$work/out.txt" 2> "$work/err.txt" || fail "fennel failed"
grep -q "balancing nodes and edges" "$work/err.txt" || fail "fennel on Cora did not balance edges by default: $(cat "$work/err.txt")"
grep -q '"balance": *\["nodes", *"edges"\]' "$work/p-fe/partition.json" || fail "partition.json does not record the edges balance"
"$SHARDGNN" partition "$work/cora" --parts 3 --method fennel --balance nodes --out "$work/p-fn" > /dev/null 2> "$work/err.txt" || fail "fennel --balance nodes failed"
[ ! -s "$work/err.txt" ] || fail "fennel --balance nodes said: $(cat "$work/err.txt")"
# Under an MPI launcher the ranks share it (the MPI program), with the same report; a refusal is
# one line per rank and a non-zero exit, with nothing left behind.
"$MPIEXEC" -n 2 "$SHARDGNN" partition "$work/cora" --parts 3 --method metis-ml --coarse-nodes 200 --balance nodes,train --out "$work/p-ml2" --verify \
  > "$work/out.txt" 2> "$work/err.txt" || fail "metis-ml partition on 2 ranks failed: $(cat "$work/err.txt")"
grep -q "over 2 ranks" "$work/err.txt" || fail "metis-ml on 2 ranks did not spread its work: $(cat "$work/err.txt")"
grep -q "verified" "$work/out.txt" || fail "metis-ml partition on 2 ranks did not verify"
set +e
"$MPIEXEC" -n 2 "$SHARDGNN" partition "$work/cora" --parts 3 --method fennel --out "$work/p-ml2" > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "partition on 2 ranks into an existing folder exited $rc"
[ "$(grep -c "output folder exists" "$work/err.txt")" = 2 ] || fail "partition on 2 ranks: expected the refusal from each rank: $(cat "$work/err.txt")"

# One clear line, exit code, nothing written.
expect_error() {  # expected-exit pattern args...
  local want=$1 pattern=$2; shift 2
  set +e
  "$SHARDGNN" "$@" > /dev/null 2> "$work/err.txt"
  local rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want"
  [ "$(wc -l < "$work/err.txt")" = 1 ] || fail "'$*' printed $(wc -l < "$work/err.txt") stderr lines: $(cat "$work/err.txt")"
  grep -q -- "$pattern" "$work/err.txt" || fail "'$*' error lacks '$pattern': $(cat "$work/err.txt")"
  [ ! -e "$work/bad" ] || fail "'$*' left $work/bad behind"
}
expect_error 2 "at least 1" partition "$work/cora" --parts 0 --out "$work/bad"
expect_error 1 "exceeds the 2708 nodes" partition "$work/cora" --parts 3000 --out "$work/bad"
expect_error 2 "unknown partitioning method 'kway'" partition "$work/cora" --method kway --out "$work/bad"
expect_error 2 "unknown --balance key" partition "$work/cora" --balance nodes,weight --out "$work/bad"
expect_error 2 "--memory-limit 'lots'" partition "$work/cora" --method metis --memory-limit lots --out "$work/bad"
# Started as one of several tasks that MPI did not join (srun without --mpi=pmi2): refused, not raced.
PMI_SIZE=3 expect_error 1 "started as one of 3 tasks, but MPI joined 1" partition "$work/cora" --parts 2 --out "$work/bad"
expect_error 1 "missing-scratch: cannot create a spill file" partition "$work/cora" --method metis-ml --coarse-nodes 200 --scratch "$work/missing-scratch" --out "$work/bad"
expect_error 2 "coarse-nodes must be 0" partition "$work/cora" --method metis-ml --coarse-nodes -5 --out "$work/bad"
expect_error 1 "no such dataset folder" partition "$work/missing" --parts 2 --out "$work/bad"
"$SHARDGNN" data convert "$SAMPLES/4elt.graph" --out "$work/4elt" >/dev/null
expect_error 1 "no training split" partition "$work/4elt" --parts 2 --balance train --out "$work/bad"
expect_error 1 "--balance cost: dataset '4elt' has no training split" partition "$work/4elt" --parts 2 --balance nodes,cost --out "$work/bad"
expect_error 2 "--fanouts item 2 is -2" partition "$work/cora" --balance nodes,cost --fanouts 15,-2 --out "$work/bad"
expect_error 2 "--fanouts item 1 is 'x'" partition "$work/cora" --balance cost --fanouts x,5 --out "$work/bad"
expect_error 2 "--fanouts is empty" partition "$work/cora" --balance cost --fanouts "" --out "$work/bad"
expect_error 2 "--cost-remote-weight must be a finite number >= 0" partition "$work/cora" --balance cost --cost-remote-weight -1 --out "$work/bad"

# A corrupted shard is caught by verify.
printf '\x42' | dd of="$work/p2/part-1/labels.npy" bs=1 seek=300 conv=notrunc status=none
set +e
"$SHARDGNN" partition verify "$work/p2" > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "verify of a corrupted shard exited $rc"
grep -q "part-1/labels.npy.*checksum" "$work/err.txt" || fail "verify did not name the corrupted file: $(cat "$work/err.txt")"
# A part folder partition.json names must lie inside the partition's folder: refused before anything is read.
cp -r "$work/p-ml" "$work/p-out"
sed -i 's|"dir": *"part-0"|"dir":"../p2/part-0"|' "$work/p-out/partition.json"
grep -q '"dir":"../p2/part-0"' "$work/p-out/partition.json" || fail "test setup: could not edit partition.json"
for cmd in verify report; do
  set +e
  "$SHARDGNN" partition "$cmd" "$work/p-out" > /dev/null 2> "$work/err.txt"
  rc=$?
  set -e
  [ "$rc" = 1 ] && grep -q "key 'parts\[0\].dir'.*relative path without '..'" "$work/err.txt" ||
    fail "partition $cmd of a part folder outside: exit $rc, $(cat "$work/err.txt")"
done
ls -A "$work" | grep -q tmp && fail "temporary files left behind: $(ls -A "$work")"
# --feature-dtype: 2-byte features (numpy's float16; bfloat16 as float32's rounded top half,
# '<u2'), verified, recorded, half the bytes. Cora's 0/1 features are exact in both, so a run on
# either ends with the float32 run's weights; row-normalised ones (inexact) still train.
py=${NUMPY_PYTHON:-/usr/bin/python3}
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --normalize-features row --out "$work/cora-n" >/dev/null
for t in float32 float16 bfloat16; do
  "$SHARDGNN" partition "$work/cora-n" --parts 2 --method metis --feature-dtype "$t" --out "$work/n-$t" --verify > "$work/out.txt" 2>&1 ||
    fail "partition --feature-dtype $t: $(cat "$work/out.txt")"
  grep -q "verified" "$work/out.txt" || fail "partition --feature-dtype $t --verify did not verify"
done
"$py" - "$work" <<'PY' || fail "2-byte feature shards differ from float32 ones narrowed"
import json, sys
import numpy as np
w = sys.argv[1]
for k in (0, 1):
    f = np.load(f"{w}/n-float32/part-{k}/features.npy")
    h = np.load(f"{w}/n-float16/part-{k}/features.npy", mmap_mode="r")
    b = np.load(f"{w}/n-bfloat16/part-{k}/features.npy", mmap_mode="r")
    assert h.dtype == np.float16 and b.dtype == np.uint16 and h.shape == b.shape == f.shape, (h.dtype, b.dtype)
    assert np.array_equal(h, f.astype(np.float16))
    u = f.view(np.uint32)
    assert np.array_equal(b, ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16))
    assert h.nbytes * 2 == f.nbytes
for t in ("float16", "bfloat16"):
    assert json.load(open(f"{w}/n-{t}/partition.json"))["dataset"]["feature_dtype"] == t
assert "feature_dtype" not in json.load(open(f"{w}/n-float32/partition.json"))["dataset"]
PY
# The training checks need the trainer (a build without libtorch, as the ASan one, has none).
trains=0
[ -x "$(dirname "$SHARDGNN")/shardgnn-train" ] && trains=1
for t in float32 float16 bfloat16; do
  "$SHARDGNN" partition "$work/cora" --parts 2 --method metis --feature-dtype "$t" --out "$work/c-$t" > /dev/null
  [ "$trains" = 1 ] || continue
  timeout 300 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/c-$t" --fanouts 5,5 --epochs 3 --run-dir "$work/run-$t" -q > "$work/out.txt" 2>&1 ||
    fail "train on a $t partition: $(tail -3 "$work/out.txt")"
done
if [ "$trains" = 1 ]; then
  for t in float16 bfloat16; do
    cmp -s "$work/run-float32/weights.pt" "$work/run-$t/weights.pt" || fail "Cora's exact 0/1 features stored as $t trained other weights"
  done
  timeout 300 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/n-float16" --fanouts 5,5 --epochs 10 -q > "$work/out.txt" 2>&1 || fail "train on row-normalised float16: $(tail -3 "$work/out.txt")"
  acc=$(sed -n 's/^test accuracy \([0-9.]*\).*full neighbourhoods.*/\1/p' "$work/out.txt")
  "$py" -c "import sys; sys.exit(not float(sys.argv[1]) > 0.7)" "${acc:-0}" || fail "row-normalised float16 Cora: test accuracy '$acc'"
fi
# Datasets in 2 bytes (data convert / generate --feature-dtype): the same narrowing, recorded in
# meta.json, kept by partition unless it is told otherwise, and trained from as they are.
for t in float16 bfloat16; do
  "$SHARDGNN" data convert "$SAMPLES/cora.npz" --normalize-features row --feature-dtype "$t" --out "$work/d-$t" > /dev/null
  "$SHARDGNN" data info "$work/d-$t" | grep -q "^features *1433 ($t)" || fail "data info on a $t dataset: $("$SHARDGNN" data info "$work/d-$t")"
  "$SHARDGNN" data validate "$work/d-$t" > /dev/null || fail "data validate on a $t dataset"
  "$SHARDGNN" partition "$work/d-$t" --parts 2 --method metis --out "$work/dp-$t" --verify > "$work/out.txt" 2>&1 || fail "partition of a $t dataset: $(cat "$work/out.txt")"
  grep -q "\"feature_dtype\": \"$t\"" "$work/dp-$t/partition.json" || fail "partition of a $t dataset did not keep $t"
  cmp -s "$work/dp-$t/part-0/features.npy" "$work/n-$t/part-0/features.npy" || fail "a $t dataset's shards differ from a float32 dataset's narrowed by partition"
done
"$SHARDGNN" partition "$work/d-float16" --parts 2 --method metis --feature-dtype float32 --out "$work/dp-wide" --verify > /dev/null || fail "partition widening float16"
"$py" - "$work" <<'PY' || fail "2-byte datasets differ from a float32 one narrowed"
import json, sys
import numpy as np
w = sys.argv[1]
f = np.load(f"{w}/cora-n/features.npy")
h = np.load(f"{w}/d-float16/features.npy", mmap_mode="r")
b = np.load(f"{w}/d-bfloat16/features.npy", mmap_mode="r")
assert h.dtype == np.float16 and np.array_equal(h, f.astype(np.float16))
u = f.view(np.uint32)
assert b.dtype == np.uint16 and np.array_equal(b, ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16))
assert json.load(open(f"{w}/d-bfloat16/meta.json"))["feature_dtype"] == "bfloat16"
assert np.array_equal(np.load(f"{w}/dp-wide/part-1/features.npy"), np.load(f"{w}/dp-float16/part-1/features.npy").astype(np.float32))
PY
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --feature-dtype float16 --out "$work/raw16" > /dev/null
if [ "$trains" = 1 ]; then
  "$SHARDGNN" train "$work/cora" --fanouts 5,5 --epochs 3 --run-dir "$work/one-32" -q > /dev/null 2>&1 || fail "train on Cora"
  "$SHARDGNN" train "$work/raw16" --fanouts 5,5 --epochs 3 --run-dir "$work/one-16" -q > /dev/null 2>&1 || fail "train on a float16 dataset"
  cmp -s "$work/one-32/weights.pt" "$work/one-16/weights.pt" || fail "Cora's 0/1 features as a float16 dataset trained other weights"
fi
"$SHARDGNN" data split-edges "$work/raw16" --out "$work/raw16-split" > /dev/null
"$SHARDGNN" data info "$work/raw16-split" | grep -q "(float16)" || fail "split-edges lost the float16 features"
"$SHARDGNN" data generate sbm --nodes 500 --feature-dim 8 --feature-dtype bfloat16 --out "$work/sbm16" > /dev/null
"$SHARDGNN" data validate "$work/sbm16" > /dev/null && "$SHARDGNN" data info "$work/sbm16" | grep -q "(bfloat16)" || fail "generate sbm --feature-dtype bfloat16"
# A value float16 cannot hold is one error line (naming the node), not an infinity in the shards.
"$py" - "$work" <<'PY'
import sys
import numpy as np
w, n = sys.argv[1], 40
src = np.arange(n); dst = (src + 1) % n
a = np.concatenate([src, dst]); b = np.concatenate([dst, src]); order = np.lexsort((b, a))
x = np.ones((n, 4), np.float32); x[17, 2] = 1e6
np.savez(f"{w}/big.npz", adj_data=np.ones(2 * n, np.float32), adj_indices=b[order], adj_indptr=np.searchsorted(a[order], np.arange(n + 1)),
         adj_shape=np.array([n, n]), attr_matrix=x)
PY
"$SHARDGNN" data convert "$work/big.npz" --out "$work/big" > /dev/null
"$SHARDGNN" data convert "$work/big.npz" --feature-dtype bfloat16 --out "$work/big-bf" > /dev/null || fail "1e6 as bfloat16"
set +e
"$SHARDGNN" data convert "$work/big.npz" --feature-dtype float16 --out "$work/bad" 2> "$work/err4.txt"
rc4=$?
"$SHARDGNN" partition "$work/big" --parts 2 --method random --feature-dtype float16 --out "$work/bad" 2> "$work/err5.txt"
rc5=$?
set -e
[ "$rc4" = 1 ] && [ "$(wc -l < "$work/err4.txt")" = 1 ] && grep -q "features.npy: node 17: feature value 1000000.000000 overflows float16 (largest 65504)" "$work/err4.txt" &&
  [ ! -e "$work/bad" ] || fail "data convert of 1e6 to float16: exit $rc4, $(cat "$work/err4.txt")"
[ "$rc5" = 1 ] && grep -q "dataset node 17: feature value 1000000.000000 overflows float16" "$work/err5.txt" && [ ! -e "$work/bad" ] ||
  fail "partition of 1e6 to float16: exit $rc5, $(cat "$work/err5.txt")"
set +e
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --feature-dtype half --out "$work/bad" 2> "$work/err3.txt"
rc3=$?
"$SHARDGNN" partition "$work/cora" --parts 2 --feature-dtype float8 --out "$work/bad" 2> "$work/err.txt"
rc=$?
rc2=skipped
[ "$trains" = 1 ] && { timeout 300 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/c-float16" --wire-dtype bf16 --epochs 1 > /dev/null 2> "$work/err2.txt"; rc2=$?; }
set -e
[ "$rc" = 2 ] && grep -q "unknown --feature-dtype 'float8', expected float32, float16 or bfloat16" "$work/err.txt" && [ ! -e "$work/bad" ] ||
  fail "--feature-dtype float8: exit $rc, $(cat "$work/err.txt")"
if [ "$rc2" != skipped ]; then
  [ "$rc2" != 0 ] && grep -q "the partition stores float16 features, which travel as they are stored" "$work/err2.txt" ||
    fail "--wire-dtype bf16 on a float16 partition: exit $rc2, $(cat "$work/err2.txt")"
fi
[ "$rc3" = 2 ] && grep -q "unknown --feature-dtype 'half', expected float32, float16 or bfloat16" "$work/err3.txt" && [ ! -e "$work/bad" ] ||
  fail "data convert --feature-dtype half: exit $rc3, $(cat "$work/err3.txt")"

# bench partition: each method in a worker of its own, its row from the worker's result file (a
# workdir that does not exist yet, without gpmetis beside it).
timeout 120 "$SHARDGNN" bench partition "$work/cora" --parts 2,3 --methods fennel,random --gpmetis off --workdir "$work/bench/new" \
  --json "$work/bench.json" > "$work/out.txt" 2>&1 || fail "bench partition failed: $(cat "$work/out.txt")"
for m in fennel random; do
  grep -qE "^$m +2 +[0-9.]+ +[0-9.]+ " "$work/out.txt" || fail "bench partition: no $m row: $(cat "$work/out.txt")"
done
grep -q "failed (exit" "$work/out.txt" && fail "bench partition: a worker failed: $(cat "$work/out.txt")"
echo "partition CLI: all checks passed"
