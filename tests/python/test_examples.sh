#!/usr/bin/env bash
# The Python examples (examples/python) at 2 ranks on small data, with a Python that has torch and
# torch_geometric: each trains to a sane score (Cora test accuracy, the typed graph's test accuracy,
# link prediction's test AUC), and sage_pyg_ddp.py stopped by SIGTERM mid-run exits 75 with its
# state saved, and the same command resumes it to the uninterrupted run's losses and accuracy.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}" "${PYTHON:?}"
EXAMPLES=$(cd "$(dirname "$0")/../../examples/python" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --out "$work/c2" >/dev/null
"$SHARDGNN" data generate hetero --papers 2000 --feature-dim 16 --separation 0.3 --featureless institute --out "$work/het" >/dev/null
"$SHARDGNN" partition "$work/het" --parts 2 --balance ntypes,train --out "$work/h2" >/dev/null
"$SHARDGNN" data split-edges "$work/cora" --seed 0 --out "$work/split" >/dev/null
"$SHARDGNN" partition "$work/split" --parts 2 --method metis --out "$work/l2" >/dev/null

# run NAME SCRIPT ARGS...: the example at 2 ranks, its output in $work/NAME.txt; it must exit 0.
run() {
  local name=$1 script=$2
  shift 2
  timeout 300 "$MPIEXEC" -n 2 "$PYTHON" "$EXAMPLES/$script" "$@" > "$work/$name.txt" 2>&1 || fail "$script $*: exit $?: $(tail -n 20 "$work/$name.txt")"
}
# at_least NAME LABEL MIN: the last "LABEL x" line of NAME's output has x > MIN.
at_least() {
  local value
  value=$(sed -n "s/^$2 \([0-9.]*\)$/\1/p" "$work/$1.txt" | tail -n 1)
  [ -n "$value" ] || fail "$1 printed no '$2' line: $(tail -n 20 "$work/$1.txt")"
  awk -v v="$value" -v m="$3" 'BEGIN { exit !(v > m) }' || fail "$1: $2 $value, expected more than $3"
  echo "ok: $1 $2 $value"
}

run plain plain_torch.py "$work/c2" --epochs 10 --seed 0
at_least plain "test accuracy" 0.6
run hetero hetero.py "$work/h2" --epochs 6 --seed 0
at_least hetero "test accuracy" 0.4
run link link.py "$work/l2" --epochs 5 --seed 0
at_least link "test auc" 0.7

# sage_pyg_ddp.py, uninterrupted, then stopped and resumed: SIGTERM to the ranks themselves (as srun
# and scancel deliver it) once the second epoch is printed; 10 steps an epoch (batch 8) leave 8
# epochs to interrupt.
stop_args=("$work/c2" --epochs 10 --batch 8 --seed 1)
run whole sage_pyg_ddp.py "${stop_args[@]}"
at_least whole "test accuracy" 0.6
descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}
timeout 300 "$MPIEXEC" -n 2 "$PYTHON" "$EXAMPLES/sage_pyg_ddp.py" "${stop_args[@]}" --checkpoint-dir "$work/ckpt" > "$work/stopped.txt" 2>&1 &
launcher=$!
for _ in $(seq 1200); do
  grep -q "^epoch 2/" "$work/stopped.txt" && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.05
done
ranks=()
for p in $(descendants "$launcher"); do  # the ranks: below mpiexec and its proxy
  case "$(cat "/proc/$p/comm" 2>/dev/null)" in mpiexec* | hydra* | timeout) continue ;; esac
  grep -qa sage_pyg_ddp.py "/proc/$p/cmdline" 2>/dev/null && ranks+=("$p")
done
[ "${#ranks[@]}" = 2 ] || fail "found ${#ranks[@]} ranks to signal, expected 2: $(cat "$work/stopped.txt")"
kill -TERM "${ranks[@]}"
rc=0
wait "$launcher" || rc=$?
[ "$rc" = 75 ] || fail "a run stopped by SIGTERM exited $rc, expected 75: $(tail -n 20 "$work/stopped.txt")"
grep -q "^stopped after .*the same command resumes" "$work/stopped.txt" || fail "the stopped run did not say so: $(tail -n 5 "$work/stopped.txt")"
for r in 0 1; do
  [ -s "$work/ckpt/rank$r-of-2.pt" ] || fail "the stopped run saved no state for rank $r: $(ls "$work/ckpt")"
done
echo "ok: SIGTERM mid-run: exit 75, $(grep "^stopped after" "$work/stopped.txt")"
run resumed sage_pyg_ddp.py "${stop_args[@]}" --checkpoint-dir "$work/ckpt"
grep -q "^resuming " "$work/resumed.txt" || fail "the rerun did not resume: $(head -n 5 "$work/resumed.txt")"
# The epochs before the stop and after the resume are the uninterrupted run's, loss for loss.
diff <(grep -E "^(epoch|best|test)" "$work/whole.txt") <(grep -hE "^(epoch|best|test)" "$work/stopped.txt" "$work/resumed.txt") >&2 ||
  fail "stopped and resumed, the run's epochs or accuracy differ from the uninterrupted run's"
echo "ok: the resumed run ends as the uninterrupted one: $(grep "^test accuracy" "$work/resumed.txt")"
