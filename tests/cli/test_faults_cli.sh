#!/usr/bin/env bash
# Faults end jobs instead of hanging them: a rank that stops answering (SIGSTOP, as a hung node
# would) makes the others end the job with status 76 and one line naming the rank, its host, the
# MPI call and where the run stood, within --collective-timeout; the last checkpoint is intact and
# --resume finishes the run.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
work=$(mktemp -d)
cleanup() {
  [ -z "${stopped:-}" ] || kill -KILL "$stopped" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --out "$work/p2" >/dev/null
quick=(--model gcn --fanouts 10,10 --hidden 32 --batch 64 --epochs 60 --run-dir "$work/run")

# Bad values are usage errors.
set +e
"$SHARDGNN" train "$work/p2" "${quick[@]}" --collective-timeout -1 > "$work/bad.txt" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "collective-timeout -1: expected seconds" "$work/bad.txt" || fail "--collective-timeout -1: exit $rc, $(cat "$work/bad.txt")"

timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --collective-timeout 2 > "$work/out.txt" 2>&1 &
job=$!
# Rank 1's process, from the run's line "ranks (host:pid): 0 h:1, 1 h:2", once 3 epochs are logged.
until [ -f "$work/run/metrics.jsonl" ] && [ "$(wc -l < "$work/run/metrics.jsonl")" -ge 3 ]; do
  kill -0 "$job" 2>/dev/null || fail "the run ended before the fault: $(cat "$work/out.txt")"
  sleep 0.1
done
stopped=$(sed -n 's/^ranks (host:pid): 0 [^ ]*:[0-9]*, 1 [^ ]*:\([0-9]*\)$/\1/p' "$work/out.txt")
[ -n "$stopped" ] || fail "no ranks line: $(cat "$work/out.txt")"
kill -STOP "$stopped"
rc=0
wait "$job" || rc=$?
[ "$rc" = 76 ] || fail "a stalled rank: exit $rc, expected 76 (124: the job hung): $(tail -5 "$work/out.txt")"
grep -qE "^shardgnn train: error: rank 0/2 on [^ ]+ \(pid [0-9]+\): MPI_[A-Za-z_]+ has waited [2-9] s for the other ranks \((training|validation|checkpoint|end of epoch), epoch [0-9]+.*; --collective-timeout 2(\)| x6)" "$work/out.txt" ||
  fail "no line naming the wait: $(tail -5 "$work/out.txt")"
kill -KILL "$stopped" 2>/dev/null || true
stopped=""
# The checkpoint of the last whole epoch is intact: the same command with --resume finishes.
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --resume > "$work/resumed.txt" 2>&1 || fail "resume failed: $(tail -5 "$work/resumed.txt")"
grep -q "^resuming .*checkpoint.pt at epoch [0-9]* of 60" "$work/resumed.txt" || fail "not resumed: $(head -5 "$work/resumed.txt")"
grep -qE "^test accuracy 0\.[6-9]" "$work/resumed.txt" || fail "resumed run scored no test set: $(tail -5 "$work/resumed.txt")"

# A folder a running job reads: --force refuses to replace it, naming the job's processes; the
# job's shard file truncated under it ends the job with one line naming the file (status 74).
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" --model gcn --fanouts 10,10 --hidden 32 --batch 64 --epochs 5000 --metrics "$work/long.jsonl" \
  > "$work/long.txt" 2>&1 &
job=$!
until [ -f "$work/long.jsonl" ] && [ "$(wc -l < "$work/long.jsonl")" -ge 2 ]; do
  kill -0 "$job" 2>/dev/null || fail "the long run ended early: $(cat "$work/long.txt")"
  sleep 0.1
done
for cmd in "partition $work/cora --parts 2 --method metis --out $work/p2 --force" "data convert $SAMPLES/cora.npz --out $work/p2 --force"; do
  set +e
  # shellcheck disable=SC2086
  "$SHARDGNN" $cmd > "$work/force.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "$cmd onto a folder in use: exit $rc: $(cat "$work/force.txt")"
  grep -qE "error: $work/p2: is in use on this host by process [0-9]+ \(.*shardgnn-train $work/p2 .*\), process [0-9]+ \(" "$work/force.txt" ||
    fail "$cmd onto a folder in use: $(cat "$work/force.txt")"
done
[ -f "$work/p2/partition.json" ] || fail "the refused --force removed the folder"
truncate -s 4096 "$work/p2/part-1/features.npy"
rc=0
wait "$job" || rc=$?
[ "$rc" = 74 ] || fail "a truncated shard: exit $rc, expected 74: $(tail -3 "$work/long.txt")"
grep -qE "^shardgnn: error: $work/p2/part-1/features.npy changed under the running job: byte [0-9]+ of the [0-9]+ mapped is gone; the file is 4096 bytes now" "$work/long.txt" ||
  fail "no line naming the truncated file: $(tail -3 "$work/long.txt")"
if grep -q "Bus error\|BAD TERMINATION" "$work/long.txt"; then fail "a bare signal: $(tail -5 "$work/long.txt")"; fi
echo "ok"
