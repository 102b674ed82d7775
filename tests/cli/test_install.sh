#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the quickstart from the installed tree alone:
# the dispatcher in bin/ finds its MPI programs in libexec/shardgnn/.
set -euo pipefail
: "${BUILD_DIR:?}" "${SAMPLES:?}" "${MPIEXEC:?}" "${WITH_TORCH:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

cmake --install "$BUILD_DIR" --prefix "$work/prefix" > "$work/install.txt" || fail "install failed: $(cat "$work/install.txt")"
bin="$work/prefix/bin/shardgnn"
[ -x "$bin" ] || fail "no bin/shardgnn in the install tree"
[ -x "$work/prefix/libexec/shardgnn/shardgnn-bench" ] || fail "no libexec/shardgnn/shardgnn-bench"
# Nothing of the build tree is reachable from the installed binaries.
cd "$work"
"$bin" data convert "$SAMPLES/cora.npz" --out "$work/cora" > /dev/null
"$bin" data validate "$work/cora" > /dev/null
"$bin" partition "$work/cora" --parts 2 --method metis --balance nodes,train --out "$work/cora-2" --verify > /dev/null
timeout 120 "$MPIEXEC" -n 2 "$bin" bench sampler "$work/cora-2" --fanouts 10,5 --batch 64 > "$work/out.txt" 2>&1 ||
  fail "installed bench sampler failed: $(cat "$work/out.txt")"
grep -q "sampled edges / s / core" "$work/out.txt" || fail "installed bench sampler: no throughput line"
if [ "$WITH_TORCH" = ON ]; then
  [ -x "$work/prefix/libexec/shardgnn/shardgnn-train" ] || fail "no libexec/shardgnn/shardgnn-train"
  timeout 180 "$MPIEXEC" -n 2 "$bin" train "$work/cora-2" --model sage --fanouts 10,10 --batch 64 --hidden 128 --epochs 3 --seed 0 > "$work/out.txt" 2>&1 ||
    fail "installed train failed: $(cat "$work/out.txt")"
  grep -qE "^test accuracy 0\.[0-9]+, macro-F1 .* \(full neighbourhoods, [0-9.]+ s\)$" "$work/out.txt" || fail "installed train: no test accuracy: $(cat "$work/out.txt")"
else
  # Built without libtorch: one line that says why, exit 1.
  set +e
  "$bin" train "$work/cora-2" > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "train without libtorch: exit $rc, expected 1"
  grep -q "^shardgnn train: error: cannot start its program .*may lack libtorch" "$work/err.txt" || fail "train without libtorch: $(cat "$work/err.txt")"
fi
echo "install: all checks passed"
