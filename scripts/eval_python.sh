#!/usr/bin/env bash
# GraphSAGE on Cora trained by `shardgnn train` and through the Python package (examples/python:
# PyG's SAGEConv under DDP, and the plain-PyTorch layer) with the same settings, at 1 and 2 ranks:
# the test accuracy per seed and the mean of each (issue 59: within 1 point).
# Settings: shardgnn train's defaults for --model sage (3 layers of 256, fanouts 15,10,5, 1024 seeds
# a batch per rank, Adam 0.01, weight decay 5e-4, dropout 0.5 on every layer's input, 20 epochs),
# validation after each epoch on fixed sampled neighbourhoods, the best epoch's model scored on the
# test nodes over full neighbourhoods. The examples' defaults are these settings.
# Usage: scripts/eval_python.sh [SEEDS="0 1 2"] [RANKS="1 2"]   (after scripts/setup.sh --torch pip)
# Env: SHARDGNN (build/tools/shardgnn), PYTHON (build-torch/venv/bin/python), PYTHONPATH
# (build-torch/python), MPIEXEC (mpiexec); EXTRA: more options for all three (they share the names
# --fanouts --batch --hidden --dropout --lr --weight-decay --epochs --eval; write --fanouts=-1,-1,
# argparse takes a bare -1,-1 for an option); FEATURES=row: Cora
# converted with --normalize-features row. scripts/eval_accuracy.sh's full-batch protocol:
#   FEATURES=row EXTRA="--fanouts=-1,-1 --epochs 200 --hidden 64 --batch 100000 --eval full" scripts/eval_python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-${SEEDS:-0 1 2}}
ranks=${2:-${RANKS:-1 2}}
bin=${SHARDGNN:-./build/tools/shardgnn}
py=${PYTHON:-./build-torch/venv/bin/python}
mpi=${MPIEXEC:-mpiexec}
extra=${EXTRA:-}
export PYTHONPATH=${PYTHONPATH:-$PWD/build-torch/python}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

$bin data convert datasets/samples/cora.npz ${FEATURES:+--normalize-features "$FEATURES"} --out "$work/cora" >/dev/null
# shellcheck disable=SC2086
run() {  # run WHO RANKS SEED -> the test accuracy
  local who=$1 k=$2 seed=$3 out="$work/$1-$2-$3.txt"
  case $who in
    shardgnn) $mpi -n "$k" $bin train "$work/c$k" --model sage --seed "$seed" $extra > "$out" 2>&1 ;;
    pyg) $mpi -n "$k" "$py" examples/python/sage_pyg_ddp.py "$work/c$k" --seed "$seed" $extra > "$out" 2>&1 ;;
    plain) $mpi -n "$k" "$py" examples/python/plain_torch.py "$work/c$k" --seed "$seed" $extra > "$out" 2>&1 ;;
  esac || { echo "$who at $k ranks, seed $seed failed: $(tail -n 5 "$out")" >&2; exit 1; }
  case $who in
    shardgnn) grep "(full neighbourhoods" "$out" | awk '{print $3}' | tr -d , ;;
    *) sed -n 's/^test accuracy \([0-9.]*\)$/\1/p' "$out" ;;
  esac
}

printf "Cora GraphSAGE, test accuracy %% (full neighbourhoods, best validation epoch); seeds: %s%s%s\n" "$seeds" "${FEATURES:+; features: $FEATURES}" "${extra:+; options: $extra}"
printf "%-52s" "trainer"
for s in $seeds; do printf "  seed %-4s" "$s"; done
printf "  %s\n" "mean"
for k in $ranks; do
  $bin partition "$work/cora" --parts "$k" --method metis --out "$work/c$k" >/dev/null
  for who in shardgnn pyg plain; do
    case $who in
      shardgnn) label="shardgnn train --model sage" ;;
      pyg) label="examples/python/sage_pyg_ddp.py (PyG, DDP)" ;;
      plain) label="examples/python/plain_torch.py" ;;
    esac
    printf "%-52s" "$label, $k rank$([ "$k" = 1 ] || echo s)"
    sum=0
    n=0
    for s in $seeds; do
      a=$(run "$who" "$k" "$s")
      printf "  %9.2f" "$(awk -v a="$a" 'BEGIN { print 100 * a }')"
      sum=$(awk -v s="$sum" -v a="$a" 'BEGIN { print s + a }')
      n=$((n + 1))
    done
    printf "  %6.2f\n" "$(awk -v s="$sum" -v n="$n" 'BEGIN { print 100 * s / n }')"
  done
done
