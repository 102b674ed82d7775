#!/usr/bin/env bash
# Faults on the testbed (tests/netbed/testbed.sh), UCX over TCP at its defaults: a link cut for good
# mid-training ends every rank within the collective timeout (6x while a checkpoint is written)
# with the line naming the wait, status 76, the last checkpoint intact for --resume; a 3 s flap is
# ridden out. Skipped (77) where no testbed can be made (not root, no network namespaces).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testbed.sh"
netbed_possible || { echo "no testbed here (needs root and network namespaces): skipped"; exit 77; }
work=$(mktemp -d)
trap 'netbed_down; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --out "$work/p2" >/dev/null
netbed_up 2 1gbit
train=(train "$work/p2" --model gcn --fanouts 10,10 --hidden 32 --batch 64 --epochs 400 --seed 3)
# Starts the job in the background (its pid in $job), and waits until N epochs are logged in $1.
start_job() {
  local metrics=$1 n=$2
  shift 2
  timeout 240 bash -c "source '$here/testbed.sh'; netbed_mpiexec 2 1 '$SHARDGNN' $*" > "$work/out.txt" 2>&1 &
  job=$!
  until [ -f "$metrics" ] && [ "$(wc -l < "$metrics")" -ge "$n" ]; do
    kill -0 "$job" 2>/dev/null || fail "the job ended before the fault: $(tail -5 "$work/out.txt")"
    sleep 0.1
  done
}
ranks_left() {
  local i
  for i in 0 1; do ip netns pids "$NETBED_PREFIX-n$i"; done | while read -r p; do tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null; echo; done | grep -c shardgnn-train || true
}

# The link of node1 cut for good, 20 epochs in: every rank gone within 6 x 3 s and a margin.
start_job "$work/run/metrics.jsonl" 20 "${train[*]}" --run-dir "$work/run" --collective-timeout 3
ip -n "$NETBED_PREFIX-n1" link set eth0 down
for ((tries = 0; tries < 300; tries++)); do
  [ "$(ranks_left)" = 0 ] && break
  sleep 0.1
done
[ "$(ranks_left)" = 0 ] || fail "ranks still running 30 s after the link was cut: $(tail -3 "$work/out.txt")"
grep -qE "^shardgnn train: error: rank 0/2 on node0 \(pid [0-9]+\): MPI_[A-Za-z_]+ has waited [0-9]+ s for the other ranks \(.*epoch [0-9]+.*; --collective-timeout 3" "$work/out.txt" ||
  fail "rank 0 did not name its wait: $(tail -5 "$work/out.txt")"
# Hydra's mpiexec hears of node1's ranks only over the link: back up, it ends with their status.
ip -n "$NETBED_PREFIX-n1" link set eth0 up
rc=0
wait "$job" || rc=$?
[ "$rc" = 76 ] || fail "link cut: mpiexec exit $rc, expected 76: $(tail -5 "$work/out.txt")"
grep -qE "^shardgnn train: error: rank 1/2 on node1 .* has waited" "$work/out.txt" || fail "rank 1 did not name its wait: $(tail -5 "$work/out.txt")"
# The checkpoint is whole: the same command with --resume finishes the run.
timeout 240 bash -c "source '$here/testbed.sh'; netbed_mpiexec 2 1 '$SHARDGNN' ${train[*]} --run-dir '$work/run' --resume" > "$work/resumed.txt" 2>&1 ||
  fail "resume after the cut failed: $(tail -5 "$work/resumed.txt")"
grep -q "^resuming .* at epoch [0-9]* of 400" "$work/resumed.txt" && grep -qE "^test accuracy 0\.[6-9]" "$work/resumed.txt" ||
  fail "not resumed to the end: $(grep -v '^epoch' "$work/resumed.txt" | tail -5)"

# A 3 s flap under the default timeout: the job rides it out.
start_job "$work/flap/metrics.jsonl" 20 "${train[*]}" --run-dir "$work/flap"
ip -n "$NETBED_PREFIX-n1" link set eth0 down
sleep 3  # the fault itself: how long the link stays down
ip -n "$NETBED_PREFIX-n1" link set eth0 up
wait "$job" || fail "a 3 s flap ended the job: $(grep -v '^epoch' "$work/out.txt" | tail -5)"
grep -qE "^test accuracy 0\.[6-9]" "$work/out.txt" || fail "the flapped run scored no test set: $(tail -3 "$work/out.txt")"
echo "faults: passed"
