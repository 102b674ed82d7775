#!/usr/bin/env bash
# The built-in models beside declared ones (examples/models/), test accuracy as mean ± std over
# seeds: on Amazon-Photo (largest connected component, 20/30 per class, a fresh split per seed,
# full-batch over all neighbours, 200 epochs, as scripts/eval_accuracy.sh) and on the hetero
# generator's 20,000-paper typed graph (sampled, 10 epochs). The declared examples also at 2 and 4
# ranks over METIS partitions, with --seed-sampling global (each rank a slice of one shuffle of
# all training seeds): batch normalisation's batch statistics are each rank's, and a METIS part's
# nodes are not a sample of the graph's (docs/results/models.md). docs/results/models.md holds
# its output.
# Usage: scripts/eval_models.sh [SEEDS=5]   (after scripts/setup.sh; Amazon-Photo needs ../shared)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
bin=./build/tools/shardgnn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shared=../shared/datasets
ex=examples/models
export OMP_NUM_THREADS=1

stats() { awk '{s+=$1; q+=$1*$1; n++} END {m=s/n; v=q/n-m*m; if (v<0) v=0; printf "%.2f ± %.2f (n=%d)", 100*m, 100*sqrt(v), n}'; }
acc() { grep "(full neighbourhoods" | awk '{print $3}' | tr -d ,; }
train() {  # ranks data args...
  local n=$1 data=$2
  shift 2
  if [ "$n" = 1 ]; then $bin train "$data" "$@"; else mpiexec -n "$n" $bin train "$data" "$@"; fi
}
# A table row over the seeds: LABEL RANKS DATA ARGS..., DATA's "{seed}" the seed, "-RANKS" added
# past one rank (the partition); several ranks draw global seeds.
row() {
  local label=$1 n=$2 data=$3
  shift 3
  : > "$work/r.txt"
  for seed in $(seq 0 $((seeds - 1))); do
    local d=${data//\{seed\}/$seed}
    [ "$n" = 1 ] || d="$d-$n"
    train "$n" "$d" "$@" --seed "$seed" --seed-sampling "$([ "$n" = 1 ] && echo shard || echo global)" | acc >> "$work/r.txt"
  done
  printf "%-28s %s\n" "$label ($n rank$([ "$n" = 1 ] || echo s))" "$(stats < "$work/r.txt")"
}

# Amazon-Photo: the papers' full-batch protocol (Adam 0.01, weight decay 5e-4; GAT and GATv2 lr
# 0.005, as Velickovic et al.), the full-neighbourhood test accuracy of the best validation epoch.
common="--epochs 200 --weight-decay 5e-4 --eval full --batch 100000"
declare -A photo=(
  [gcn]="--model gcn --hidden 64 --dropout 0.5 --lr 0.01 --fanouts -1,-1"
  [sage]="--model sage --hidden 64 --dropout 0.5 --lr 0.01 --fanouts -1,-1"
  [gat]="--model gat --hidden 64 --heads 8 --dropout 0.6 --lr 0.005 --fanouts -1,-1"
  [sage3-bn-res]="--model $ex/sage3-bn-res.json --lr 0.01 --fanouts -1,-1,-1"
  [gin-jk]="--model $ex/gin-jk.json --lr 0.01 --fanouts -1,-1"
  [gatv2-8h]="--model $ex/gatv2-8h.json --lr 0.005 --fanouts -1,-1"
)
if [ -f "$shared/amazon-photo/amazon_electronics_photo.npz" ]; then
  echo "Amazon-Photo, test accuracy %, mean ± std over $seeds seeds"
  for seed in $(seq 0 $((seeds - 1))); do
    $bin data convert "$shared/amazon-photo/amazon_electronics_photo.npz" --symmetrize --largest-component --split per-class:20,30 --seed "$seed" \
      --out "$work/photo-$seed" >/dev/null
    for p in 2 4; do $bin partition "$work/photo-$seed" --parts $p --method metis --balance nodes,train --out "$work/photo-$seed-$p" >/dev/null; done
  done
  for m in gcn sage gat sage3-bn-res gin-jk gatv2-8h; do
    ranks="1"
    [[ $m == *-* ]] && ranks="1 2 4"
    # shellcheck disable=SC2086
    for n in $ranks; do row "photo $m" "$n" "$work/photo-{seed}" ${photo[$m]} $common; done
  done
fi

# The typed graph: 20,000 papers (the generator's defaults: 128 features, 19 classes), sampled
# fanouts per relation, a global batch of 1024, 10 epochs, Adam 0.005 without weight decay, dropout 0.2.
$bin data generate hetero --papers 20000 --out "$work/h20k" >/dev/null
for p in 2 4; do $bin partition "$work/h20k" --parts $p --balance ntypes,train --out "$work/h20k-$p" >/dev/null; done
# Several ranks split the global batch of 1024 (one rank's), so that an epoch has as many steps.
typed="--epochs 10 --lr 0.005 --weight-decay 0 --dropout 0.2"
declare -A het=(
  [rgcn]="--model rgcn --hidden 64 --fanouts 10,5"
  [rgat]="--model rgat --hidden 64 --heads 4 --fanouts 10,5"
  [rgcn-ln-res]="--model $ex/rgcn-ln-res.json --fanouts 10,5"
  [rgat-jk]="--model $ex/rgat-jk.json --fanouts 10,5"
  [rgat-mlperf]="--model $ex/rgat-mlperf.json --fanouts 10,5,5"
)
echo "hetero, 20,000 papers, test accuracy %, mean ± std over $seeds seeds"
for m in rgcn rgat rgcn-ln-res rgat-jk rgat-mlperf; do
  ranks="1"
  [ "$m" = rgat-mlperf ] && ranks="1 2 4"
  # shellcheck disable=SC2086
  for n in $ranks; do row "hetero $m" "$n" "$work/h20k" ${het[$m]} $typed --batch $((1024 / n)); done
done
