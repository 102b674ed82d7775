#!/usr/bin/env bash
# Resuming on another rank count over the same partition (a requeued job that got fewer or more
# nodes): 4 -> 2 and 2 -> 4 ranks over a 4-part partition, from an epoch boundary and from a stop
# inside an epoch (which goes on at the next epoch), said in the log and scoring as an
# uninterrupted run does; a checkpoint of another partition is refused with one line.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
for k in 2 4; do "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --out "$work/p$k" >/dev/null; done
q=(--model gcn --fanouts 10,10 --hidden 32 --batch 16 --seed 3)
train() {  # RANKS OUT ARGS...: a run on the 4-part partition
  local n=$1 out=$2
  shift 2
  timeout 180 "$MPIEXEC" -n "$n" "$SHARDGNN" train "$work/p4" "${q[@]}" "$@" > "$out" 2>&1
}
acc() { sed -n 's/^test accuracy \([0-9.]*\), .*(full neighbourhoods.*/\1/p' "$1"; }
for n in 2 4; do train "$n" "$work/u$n.txt" --epochs 30 || fail "uninterrupted $n ranks: $(tail -3 "$work/u$n.txt")"; done
for pair in "4 2" "2 4"; do
  read -r from to <<<"$pair"
  # Inside an epoch: stopped during step 2 of epoch 2, resumed at epoch 3 on the other count.
  set +e
  train "$from" "$work/s.txt" --epochs 30 --run-dir "$work/mid$from$to" --simulate-stop 2:2
  rc=$?
  set -e
  [ "$rc" = 75 ] || fail "$from ranks, --simulate-stop 2:2: exit $rc: $(tail -3 "$work/s.txt")"
  train "$to" "$work/mid$from$to.txt" --epochs 30 --run-dir "$work/mid$from$to" --resume || fail "$from -> $to from inside an epoch: $(tail -3 "$work/mid$from$to.txt")"
  grep -qF "at epoch 3 of 30 (the checkpoint was written by $from ranks; this run has $to, whose epochs draw as a $to-rank run's; epoch 2 stopped after its step 2 and its other steps are skipped)" \
    "$work/mid$from$to.txt" || fail "$from -> $to inside an epoch: not said: $(grep resuming "$work/mid$from$to.txt")"
  # At an epoch boundary: 2 epochs on one count, the rest on the other.
  train "$from" "$work/b.txt" --epochs 2 --run-dir "$work/edge$from$to" || fail "$from ranks, 2 epochs: $(tail -3 "$work/b.txt")"
  train "$to" "$work/edge$from$to.txt" --epochs 30 --run-dir "$work/edge$from$to" --resume || fail "$from -> $to at a boundary: $(tail -3 "$work/edge$from$to.txt")"
  grep -qF "at epoch 3 of 30 (the checkpoint was written by $from ranks; this run has $to, whose epochs draw as a $to-rank run's)" "$work/edge$from$to.txt" ||
    fail "$from -> $to at a boundary: not said: $(grep resuming "$work/edge$from$to.txt")"
  for run in mid edge; do
    a=$(acc "$work/$run$from$to.txt") u=$(acc "$work/u$to.txt")
    python3 -c "import sys; a, u = map(float, sys.argv[1:]); sys.exit(abs(a - u) > 0.03)" "$a" "$u" ||
      fail "$run $from -> $to: test accuracy $a, the uninterrupted $to-rank run's $u"
    # The metrics of both rank counts make one report (per-rank data of the last count).
    "$SHARDGNN" report "$work/$run$from$to" > "$work/report.txt" 2>&1 || fail "report of $run $from -> $to: $(cat "$work/report.txt")"
  done
done
# Another partition's checkpoint (2 parts) is refused on every rank, naming both partitions.
set +e
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${q[@]}" --epochs 30 --run-dir "$work/edge42" --resume > "$work/other.txt" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "another partition's checkpoint: exit $rc: $(tail -3 "$work/other.txt")"
grep -qE "checkpoint.pt: the checkpoint is of .*partition metis, 4 parts, [0-9a-f]{16}, this run trains .*partition metis, 2 parts, [0-9a-f]{16}" "$work/other.txt" ||
  fail "another partition's checkpoint: $(cat "$work/other.txt")"
echo "ok"
