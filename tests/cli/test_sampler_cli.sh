#!/usr/bin/env bash
# `shardgnn bench sampler` under mpiexec: a good run, and bad input that every rank reports with a
# clean exit (status 1), never a hang (each run has a timeout).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --out "$work/p2" >/dev/null
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" bench sampler "$work/p2" --fanouts 10,5 --batch 64 > "$work/out.txt" 2>&1 || fail "good run failed: $(cat "$work/out.txt")"
grep -q "sampled edges / s / core" "$work/out.txt" || fail "no throughput line"
grep -q "cache hit rate" "$work/out.txt" || fail "no cache line"
# Both ranks on this machine: the other's rows come from its shard file, none over MPI.
grep -q "same-node rows .*read from the shards of 1 other ranks" "$work/out.txt" || fail "no same-node line: $(cat "$work/out.txt")"
grep -q "remote fetch *none" "$work/out.txt" || fail "rows went over MPI with --node-local on: $(cat "$work/out.txt")"
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" bench sampler "$work/p2" --fanouts 10,5 --batch 64 --node-local off > "$work/out.txt" 2>&1 || fail "--node-local off run failed: $(cat "$work/out.txt")"
grep -q "remote fetch .*raw MPI alltoallv" "$work/out.txt" || fail "no MPI remote fetch with --node-local off: $(cat "$work/out.txt")"
grep -q "^same-node rows" "$work/out.txt" && fail "same-node rows with --node-local off"
# A benchmark never hides a failure: a peer that fails (here the DGL peer under a Python without
# torch or DGL: it reads its input, then its import fails) fails the benchmark with the peer's own
# error line, and the JSON says which side failed.
set +e
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" bench sampler "$work/p2" --fanouts 10,5 --batch 64 --dgl-python /usr/bin/python3 --json "$work/peer.json" \
  > "$work/out.txt" 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a failed DGL peer left bench sampler's exit status 0: $(cat "$work/out.txt" "$work/err.txt")"
grep -qE "^shardgnn bench sampler: the DGL peer failed: exit 1: ModuleNotFoundError: No module named '(torch|dgl)'$" "$work/err.txt" ||
  fail "a failed DGL peer: not its own error line: $(cat "$work/err.txt")"
grep -qE '"failed": *"dgl"' "$work/peer.json" || fail "a failed DGL peer: the JSON does not say so: $(cat "$work/peer.json")"
# Only training's program loads libtorch, not the dispatcher every command starts, nor the benchmarks'.
# ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep quits early.
libs_main=$(ldd "$SHARDGNN")
libs_bench=$(ldd "$(dirname "$SHARDGNN")/shardgnn-bench")
if grep -q "libtorch" <<<"$libs_main"; then fail "$SHARDGNN links libtorch: $(grep libtorch <<<"$libs_main")"; fi
grep -q "libmpi" <<<"$libs_bench" || fail "shardgnn-bench does not link MPI"
if grep -q "libtorch" <<<"$libs_bench"; then fail "shardgnn-bench links libtorch"; fi
# The binary without its programs beside it: one clear line and exit 1, before any MPI start-up.
mkdir "$work/alone" && cp "$SHARDGNN" "$work/alone/shardgnn"
set +e
"$work/alone/shardgnn" bench sampler "$work/p2" > "$work/out.txt" 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "without its program: exit $rc, expected 1"
grep -q "^shardgnn bench sampler: error: cannot start its program (.*shardgnn-bench: No such file" "$work/err.txt" || fail "without its program: $(cat "$work/err.txt")"
[ "$(wc -l < "$work/err.txt")" = 1 ] || fail "without its program: more than one line: $(cat "$work/err.txt")"

# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"
expect_cmd=(bench sampler)
expect_error 2 "fanouts is empty" "$work/p2" --fanouts ""
expect_error 2 "item 2 is -3" "$work/p2" --fanouts 10,-3
expect_error 2 "item 1 is 'x'" "$work/p2" --fanouts x,5
expect_error 2 "batch must be at least 1" "$work/p2" --batch 0
expect_error 2 "node-local must be on or off, got 'maybe'" "$work/p2" --node-local maybe
expect_error 3 "2 parts, but the job has 3 ranks" "$work/p2"
expect_error 2 "no such partitioned-dataset folder" "$work/missing"
# A shard file changed after partitioning: its checksum no longer matches partition.json.
printf '\x42' | dd of="$work/p2/part-1/indices.npy" bs=1 seek=200 conv=notrunc status=none
expect_error 2 "part-1/indices.npy.*checksum" "$work/p2"
echo "sampler CLI: all checks passed"
