#!/usr/bin/env bash
# Training across testbed nodes (tests/netbed/testbed.sh) at several link speeds against the same
# job on one node: epoch time, the time the epoch waited for batches (sampling and fetches the
# prefetch did not hide), the gradient all-reduce, and bytes moved per rank.
#
#   scripts/netbed_bench.sh PARTITIONED_DIR [RANKS_PER_NODE] [RATES] [-- TRAIN OPTIONS...]
#     e.g. scripts/netbed_bench.sh /tmp/shardgnn-bench-train/sbm-200000-50-100-100-v2-metis-2 1 "100gbit 25gbit 10gbit"
#
# The partition's parts are spread over 2 nodes (RANKS_PER_NODE each, default 1). With
# DISTDGL_PYTHON (a python with DGL: scripts/peers.sh) and DISTDGL_DATASET (the dataset folder the
# partition was made from), DistDGL runs the same model beside each row: its servers and trainers
# on the same nodes (bench/peers/distdgl_train.py --netbed), as many trainers as our ranks. As root. UCX runs
# on TCP over the shaped links; UCX 1.13's TCP transport can hang in MPI_Finalize after the run has
# written its metrics (openucx/ucx#8738), so each run is ended after its last epoch is logged.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${1:?usage: scripts/netbed_bench.sh PARTITIONED_DIR [RANKS_PER_NODE] [RATES] [-- TRAIN OPTIONS...]}
per=${2:-1}
rates=${3:-"100gbit 25gbit 10gbit"}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = -- ] && shift
extra=("$@")
bin=${SHARDGNN:-$PWD/build/tools/shardgnn}
epochs=3
train=(train "$parts" --model sage --fanouts 15,10,5 --batch 1024 --hidden 256 --epochs "$epochs" --eval-every "$epochs" --no-full-eval --no-test
       --threads 1 "${extra[@]}")
source tests/netbed/testbed.sh
trap netbed_down EXIT
# A signal ends the script through exit, so the EXIT trap removes the testbed then too.
trap 'exit 130' INT
trap 'exit 143' TERM
work=$(mktemp -d)
lscpu | sed -n 's/^Model name: *//p'

# Waits for the metrics of the last epoch, then for the job to end, at most `grace` seconds more.
run_until_logged() {
  local metrics=$1 grace=$2
  shift 2
  "$@" > "$metrics.out" 2>&1 &
  local pid=$! t=0
  while kill -0 "$pid" 2>/dev/null; do
    local logged
    logged=$(grep -c '"epoch"' "$metrics" 2>/dev/null || true)
    if [ "${logged:-0}" -ge "$epochs" ]; then
      t=$((t + 1))
      if [ "$t" -gt $((grace * 10)) ]; then
        echo "  (MPI_Finalize did not return: the job was ended after its last epoch was logged)"
        kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        netbed_down
        break
      fi
    fi
    sleep 0.1
  done
  wait "$pid" 2>/dev/null || true
}

# The fastest epoch's figures from a metrics file: epoch s, wait s, all-reduce s, MB received per rank.
summary() {
  python3 - "$1" <<'PY'
import json, sys
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if "epoch" in r]  # not the result line
train_s = lambda r: r["epoch_s"] - r["time_s"].get("eval", 0)
best = min(rows, key=train_s)
ranks = best["ranks"]
mb = sum(k["bytes_received"] for k in ranks) / len(ranks) / 1e6
print(f'{train_s(best):8.2f} {best["time_s"]["sample_wait"]:8.2f} {best["time_s"]["allreduce"]:8.2f} {mb:10.1f}')
PY
}

n=$((2 * per))
# DistDGL's fastest epoch, on this host or (with a testbed up) across its nodes. A benchmark never
# hides a failure: when DistDGL fails, its own last line and a non-zero exit.
distdgl() {
  rm -f "$work/distdgl.json"
  if ! "$DISTDGL_PYTHON" bench/peers/distdgl_train.py "$DISTDGL_DATASET" --result "$work/distdgl.json" --trainers "$n" --parts 2 --fanouts 5,10,15 \
    --batch 1024 --hidden 256 --epochs 2 --threads 1 --workdir "${TMPDIR:-/tmp}/shardgnn-netbed-distdgl" "$@" > "$work/distdgl.out" 2>&1; then
    echo "netbed_bench: DistDGL failed: $(grep -v '^[[:space:]]*$' "$work/distdgl.out" | tail -n 1)" >&2
    return 1
  fi
  python3 -c 'import json, sys; print("%8.2f  (DistDGL)" % json.load(open(sys.argv[1]))["epoch_s"])' "$work/distdgl.json"
}

printf '%-14s %8s %8s %8s %10s\n' "where" "epoch s" "wait s" "allred s" "MB/rank"
mpiexec -n "$n" "$bin" "${train[@]}" --metrics "$work/one.jsonl" > "$work/one.out" 2>&1 || { cat "$work/one.out"; exit 1; }
printf '%-14s %s\n' "one node" "$(summary "$work/one.jsonl")"
if [ -n "${DISTDGL_PYTHON:-}" ]; then row=$(distdgl) || exit 1; printf '%-14s %s\n' "one node" "$row"; fi
mpiexec -n "$n" "$bin" "${train[@]}" --node-local off --metrics "$work/one-mpi.jsonl" > "$work/one-mpi.out" 2>&1 || { cat "$work/one-mpi.out"; exit 1; }
printf '%-14s %s\n' "one node, MPI" "$(summary "$work/one-mpi.jsonl")"
for rate in $rates; do
  export NETBED_PREFIX=sgnb$$-$rate
  netbed_up 2 "$rate" 2>/dev/null
  run_until_logged "$work/$rate.jsonl" 5 bash -c "source tests/netbed/testbed.sh; netbed_mpiexec 2 $per '$bin' ${train[*]} --metrics '$work/$rate.jsonl'"
  printf '%-14s %s\n' "2 nodes $rate" "$(summary "$work/$rate.jsonl")"
  if [ -n "${DISTDGL_PYTHON:-}" ]; then row=$(distdgl --netbed "$NETBED_PREFIX") || exit 1; printf '%-14s %s\n' "2 nodes $rate" "$row"; fi
  netbed_down
done
rm -rf "$work"
