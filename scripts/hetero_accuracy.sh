#!/usr/bin/env bash
# Typed-graph accuracy protocol of docs/results/hetero.md: the hetero generator's graph (4,000
# papers, 16 features, separation 0.3; float32, float16, and MAG-shaped with only papers featured),
# R-GCN and R-GAT (hidden 64, fanouts 10,5 per relation, global batch 256, Adam 0.005, dropout 0.2,
# 10 epochs, no weight decay) at 1, 2 and 4 ranks over metis --balance ntypes,train partitions,
# and the same models on features alone (fanouts 0,0), seeds 0-2; prints one line per run:
# graph model ranks fanouts seed best-val test (sampled neighbourhoods).
# PAPERS (default 4000) and SEEDS (default "0 1 2") change the graph's size and the seeds;
# DISTRIBUTED_ONLY=1 runs only the relational models at 1, 2 and 4 ranks, on GRAPHS (default
# "fp32 mag"); RANKS (default "1 2 4") the rank counts; SEED_SAMPLING passes --seed-sampling
# (e.g. global).
# Usage: scripts/hetero_accuracy.sh BUILD_TOOLS_DIR WORKDIR
set -euo pipefail
B=${1:?build/tools}; W=${2:?workdir}
mkdir -p "$W"
export OMP_NUM_THREADS=1
gen() { [ -e "$W/$1/meta.json" ] || "$B/shardgnn" data generate hetero --papers "${PAPERS:-4000}" --feature-dim 16 --separation 0.3 "${@:2}" --out "$W/$1" > /dev/null; }
gen fp32
gen fp16 --feature-dtype float16
gen mag --featureless author,institute,fos
for g in fp32 fp16 mag; do
  for p in 2 4; do [ -e "$W/$g-p$p/partition.json" ] || "$B/shardgnn" partition "$W/$g" --parts $p --balance ntypes,train --out "$W/$g-p$p" > /dev/null; done
done
run() {  # graph model ranks fanouts seed
  local input="$W/$1"; [ "$3" = 1 ] || input="$W/$1-p$3"
  local out
  out=$(mpiexec -n "$3" "$B/shardgnn-train" "$input" --model "$2" --fanouts "$4" --seed "$5" --hidden 64 --heads 4 --batch $((256 / $3)) \
        --lr 0.005 --weight-decay 0 --dropout 0.2 --epochs 10 --no-full-eval --threads 1 --quiet ${SEED_SAMPLING:+--seed-sampling "$SEED_SAMPLING"} 2>&1)
  echo "$1 $2 $3 $4 $5 $(echo "$out" | sed -n 's/^best validation accuracy \([0-9.]*\) .*/\1/p') $(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\),.*/\1/p')"
}
for seed in ${SEEDS:-0 1 2}; do
  for m in rgcn rgat; do
    for p in ${RANKS:-1 2 4}; do for g in ${GRAPHS:-fp32 mag}; do run $g $m $p 10,5 $seed; done; done
    [ "${DISTRIBUTED_ONLY:-0}" = 1 ] && continue
    run fp32 $m 1 0,0 $seed
    run mag $m 1 0,0 $seed
    run fp16 $m 1 10,5 $seed
  done
done
