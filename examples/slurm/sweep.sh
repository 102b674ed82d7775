#!/bin/bash
# Submits a partition-strategy sweep (sweep.sbatch, one array task per method) and a step that
# runs once every task has succeeded and merges their JSON rows into OUT/sweep.json.
#   DATASET=/shared/data/photo OUT=/shared/sweeps/photo examples/slurm/sweep.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DATASET:?set DATASET}" "${OUT:?set OUT}"
read -r -a methods <<< "${METHODS:-metis metis-ml fennel ldg}"
mkdir -p "$OUT"
array=$(sbatch --parsable --array=0-$((${#methods[@]} - 1)) --export=ALL "$HERE/sweep.sbatch")
# The merge: every task's rows in one file, as `bench partition --json` writes them.
# (One line, single-quoted: the merge job's script is run by /bin/sh.)
merge_py='import json, sys; parts = [json.load(open(f)) for f in sys.argv[2:]]; json.dump({"dataset": parts[0]["dataset"], "rows": [r for p in parts for r in p["rows"]]}, open(sys.argv[1], "w"), indent=1); print(sum(len(p["rows"]) for p in parts), "rows from", len(parts), "methods")'
files=()
for m in "${methods[@]}"; do files+=("$OUT/$m.json"); done
merge=$(sbatch --parsable --dependency=afterok:"$array" --ntasks=1 --time=00:05:00 --job-name=shardgnn-sweep-merge \
  --output="$OUT/merge-%j.out" --wrap "python3 -c '$merge_py' $(printf '%q ' "$OUT/sweep.json" "${files[@]}")")
echo "sweep: array job $array, merge job $merge -> $OUT/sweep.json"
