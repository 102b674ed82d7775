#!/usr/bin/env bash
# Training across testbed nodes (tests/netbed/testbed.sh) against the same job on one node: 2 nodes
# x 1 rank and 2 nodes x 2 ranks train the same losses and accuracies, epoch for epoch, and score
# the same test accuracy (the keyed sampler draws the same batches wherever a rank runs); and
# --node-local reads shard files between the ranks of one node only. Skipped (77) where no testbed
# can be made (not root, no network namespaces).
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testbed.sh"
netbed_possible || { echo "no testbed here (needs root and network namespaces): skipped"; exit 77; }
work=$(mktemp -d)
trap 'netbed_down; rm -rf "$work"' EXIT
# A signal (Ctrl-C, a kill) ends the script through exit, so the EXIT trap still runs.
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
for k in 2 4; do "$SHARDGNN" partition "$work/cora" --parts "$k" --method metis --balance nodes,train --out "$work/p$k" >/dev/null; done
netbed_up 2 1gbit
# UCX between the nodes over shared memory, not TCP: what is tested here is the job's view of its
# nodes (MPI's node map comes from the launcher's hosts), not the wire, and UCX 1.13's TCP
# transport hung in MPI_Finalize about one run in three (openucx/ucx#8738).
export NETBED_UCX_TLS=sm,self
train=(train --model sage --fanouts 10,5 --batch 64 --hidden 32 --epochs 3 --seed 3)
learning() { grep -oE '"(loss|train_acc|val_acc)":[^,]*' "$1"; }
scores() { grep "test accuracy" "$1" | sed -E 's/, [0-9.]+ s\)$/)/'; }  # without the evaluation's time
for per in 1 2; do
  k=$((2 * per))
  timeout 120 "$MPIEXEC" -n "$k" "$SHARDGNN" "${train[@]}" "$work/p$k" --metrics "$work/one-$k.jsonl" > "$work/one-$k.txt" 2>&1 ||
    fail "$k ranks on one node failed: $(cat "$work/one-$k.txt")"
  timeout 120 bash -c "source '$here/testbed.sh'; netbed_mpiexec 2 $per '$SHARDGNN' ${train[*]} '$work/p$k' --metrics '$work/bed-$k.jsonl'" \
    > "$work/bed-$k.txt" 2>&1 || fail "2 nodes x $per rank(s) failed: $(cat "$work/bed-$k.txt")"
  grep -q "$k ranks on 2 nodes (at most $per per node)" "$work/bed-$k.txt" || fail "2 nodes x $per: not spread over 2 nodes: $(cat "$work/bed-$k.txt")"
  grep -qE "ranks \(host:pid\): 0 node0:.* $((k - 1)) node1:" "$work/bed-$k.txt" || fail "2 nodes x $per: ranks not on node0 and node1: $(cat "$work/bed-$k.txt")"
  [ -n "$(learning "$work/one-$k.jsonl")" ] || fail "no loss in the metrics"
  [ "$(learning "$work/one-$k.jsonl")" = "$(learning "$work/bed-$k.jsonl")" ] ||
    fail "2 nodes x $per trained differently from one node: $(learning "$work/one-$k.jsonl" | tr '\n' ' ') / $(learning "$work/bed-$k.jsonl" | tr '\n' ' ')"
  [ "$(scores "$work/one-$k.txt")" = "$(scores "$work/bed-$k.txt")" ] || fail "2 nodes x $per tested differently from one node"
done
# --node-local on 2 nodes x 2 ranks: each rank reads its node-mate's rows from the shard file and
# fetches the other node's over MPI; off: everything over MPI.
for nl in on off; do
  timeout 120 bash -c "source '$here/testbed.sh'; netbed_mpiexec 2 2 '$SHARDGNN' bench sampler '$work/p4' --fanouts 10,5 --batch 64 --node-local $nl" \
    > "$work/nl-$nl.txt" 2>&1 || fail "bench sampler --node-local $nl failed: $(cat "$work/nl-$nl.txt")"
  grep -q "remote fetch .*raw MPI alltoallv" "$work/nl-$nl.txt" || fail "--node-local $nl: no rows over MPI between the nodes: $(cat "$work/nl-$nl.txt")"
done
grep -q "same-node rows .*read from the shards of 1 other ranks" "$work/nl-on.txt" || fail "--node-local on: no node-mate's rows read: $(cat "$work/nl-on.txt")"
if grep -q "^same-node rows" "$work/nl-off.txt"; then fail "--node-local off read a node-mate's shard: $(cat "$work/nl-off.txt")"; fi
echo "multinode: passed"
