#!/usr/bin/env bash
# The examples/slurm job scripts on a real single-node SLURM (cluster.sh): the quickstart job
# completes with a test accuracy and says how its ranks' threads were chosen (srun -n 2 without
# --ntasks-per-node); the same job preempted by scancel --signal=TERM stops with a checkpoint,
# requeues itself, resumes and ends with the uninterrupted job's weights byte for byte; a task that
# fails makes the job FAILED at once; the sweep and the multi-node script run; the Python package's
# loaders run under srun --mpi=pmi2. Exits 77 (skipped) where SLURM or root is missing.
#
#   tests/slurm/jobs.sh     (as root, after: apt-get install $(source tests/slurm/cluster.sh; slurm_packages))
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SHARDGNN=${SHARDGNN:-$ROOT/build/tools/shardgnn}
SAMPLES=${SAMPLES:-$ROOT/datasets/samples}
# shellcheck source=cluster.sh
source "$HERE/cluster.sh"

if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "skipped: needs root and SLURM (apt-get install $(slurm_packages))"
  exit 77
fi
work=$(mktemp -d)
chmod 755 "$work"
finish() {
  slurm_down || true
  rm -rf "$work"
}
trap finish EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.out; do [ -e "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  slurm_dump_logs 20 >&2 || true
  exit 1
}
slurm_up || fail "SLURM did not come up"

# wait_epochs JOB N: until the job's run folder records N epochs (2 minutes at most).
wait_epochs() {
  local metrics="$work/shardgnn-run-$1/metrics.jsonl"
  for _ in $(seq 1200); do
    [ "$(cat "$metrics" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "job $1 trained fewer than $2 epochs"
}

submit() {  # submit EPOCHS -> job id (the quickstart job, run from $work with its data there)
  sbatch --parsable --chdir="$work" --output="$work/job-%j.out" \
    --export=ALL,SHARDGNN="$SHARDGNN",SAMPLES="$SAMPLES",DATA="$work/data",EPOCHS="$1",OMP_NUM_THREADS= \
    "$ROOT/examples/slurm/quickstart.sbatch"
}

# 1. The quickstart job, uninterrupted.
a=$(submit 30)
state=$(slurm_wait_job "$a" 300) || fail "job $a did not end: $state"
[ "$state" = "COMPLETED 0:0" ] || fail "quickstart job $a ended $state"
out="$work/job-$a.out"
grep -q "^test accuracy 0\.[6-9]" "$out" || fail "quickstart job $a printed no good test accuracy"
grep -q "^run: .*SLURM job $a, 2 ranks on 1 node (at most 2 per node), 1 torch thread per rank (.*shared by 2 of the node's 2 ranks" "$out" ||
  fail "quickstart job $a: no start-of-run line with the thread decision: $(grep '^run:' "$out")"
[ -s "$work/shardgnn-run-$a/weights.pt" ] || fail "quickstart job $a left no weights in its run folder"
echo "ok: quickstart job completes (srun -n 2: $(grep -o '1 torch thread per rank ([^)]*)' "$out"))"

# 2. The same job preempted: scancel --signal=TERM reaches the tasks of its srun step; the job
# stops with a checkpoint, requeues itself, and the restart resumes to the same weights.
b=$(submit 30)
wait_epochs "$b" 3
scancel --signal=TERM "$b"
for _ in $(seq 1200); do
  [ "$(slurm_job_field "$b" Restarts)" = 1 ] && break
  sleep 0.25
done
[ "$(slurm_job_field "$b" Restarts)" = 1 ] || fail "job $b was not requeued"
state=$(slurm_wait_job "$b" 300) || fail "job $b did not end: $state"
[ "$state" = "COMPLETED 0:0" ] || fail "preempted job $b ended $state"
out="$work/job-$b.out"
grep -q "stopped by SIGTERM after .*run the same command with --resume to continue (exit status 75)" "$out" || fail "job $b did not say it stopped"
grep -q "requeueing job $b" "$out" || fail "job $b did not requeue itself"
grep -q "^run: .*SLURM job $b (restart 1)" "$out" || fail "job $b's restart does not say so"
grep -q "^resuming .*shardgnn-run-$b/checkpoint.pt" "$out" || fail "job $b's restart did not resume"
cmp -s "$work/shardgnn-run-$a/weights.pt" "$work/shardgnn-run-$b/weights.pt" || fail "preempted and resumed, job $b's weights differ from job $a's"
echo "ok: a preempted job stops with a checkpoint, requeues, resumes and ends with the uninterrupted weights"

# 3. The partition-strategy sweep: an array task per method, then the merge of their rows.
(cd "$work" && DATASET="$work/data/cora" OUT="$work/sweep" METHODS="metis fennel" PARTS=2 SHARDGNN="$SHARDGNN" \
  "$ROOT/examples/slurm/sweep.sh") > "$work/sweep.txt" || fail "sweep.sh failed: $(cat "$work/sweep.txt")"
merge=$(sed -n 's/.*merge job \([0-9]*\).*/\1/p' "$work/sweep.txt")
state=$(slurm_wait_job "$merge" 300) || fail "the sweep's merge job did not end: $state"
[ "$state" = "COMPLETED 0:0" ] || fail "the sweep's merge job ended $state: $(cat "$work"/sweep/merge-*.out)"
python3 -c 'import json, sys; rows = json.load(open(sys.argv[1]))["rows"]; methods = {r["method"] for r in rows}; sys.exit(0 if methods == {"metis", "fennel"} else "methods: %s" % methods)' \
  "$work/sweep/sweep.json" || fail "the merged sweep lacks a method"
echo "ok: the sweep's array tasks and merge give one table of both methods"

# 4. The multi-node job, on this one node with two tasks: its script, options and run folder.
d=$(sbatch --parsable --chdir="$work" --output="$work/job-%j.out" --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=00:10:00 \
  --export=ALL,SHARDGNN="$SHARDGNN",PARTS="$work/data/cora-2",EPOCHS=3,OMP_NUM_THREADS= "$ROOT/examples/slurm/multinode.sbatch")
state=$(slurm_wait_job "$d" 300) || fail "job $d did not end: $state"
[ "$state" = "COMPLETED 0:0" ] || fail "multi-node job $d ended $state"
grep -q "^test accuracy 0\.[5-9]" "$work/job-$d.out" || fail "multi-node job $d printed no test accuracy"
[ -s "$work/shardgnn-run-$d/weights.pt" ] || fail "multi-node job $d left no weights in its run folder"
echo "ok: the multi-node job's script trains (one node, two tasks)"

# 5. The Python package under srun --mpi=pmi2 (MPI brought up through SLURM's PMI, as a user's
# `srun python train.py`): its loaders' tests pass on the job's two tasks.
if [ -d "${SHARDGNN_PYTHONPATH:-}" ]; then
  p=$(sbatch --parsable --chdir="$work" --output="$work/job-%j.out" --ntasks=2 --cpus-per-task=1 \
    --export=ALL,PYTHONPATH="$SHARDGNN_PYTHONPATH:$ROOT/tests/python",OMP_NUM_THREADS=1,SHARDGNN_TEST_CORA="$work/data/cora",SHARDGNN_TEST_CORA_PARTS="$work/data/cora-2",SHARDGNN_TEST_WORK="$work",SHARDGNN_TEST_NATIVE="$work/native.json" \
    --wrap "srun --mpi=pmi2 $SHARDGNN bench sampler $work/data/cora-2 --fanouts 5,3 --batch 64 --epochs 2 --seed 3 --json $work/native.json >/dev/null &&
            srun --mpi=pmi2 /usr/bin/python3 -m pytest -q -p no:cacheprovider $ROOT/tests/python/test_pipeline.py")
  state=$(slurm_wait_job "$p" 300) || fail "python job $p did not end: $state"
  [ "$state" = "COMPLETED 0:0" ] || fail "python job $p ended $state"
  grep -q "passed on each of 2 rank(s)" "$work/job-$p.out" || fail "python job $p: not both tasks passed"
  echo "ok: the Python package's loaders under srun --mpi=pmi2 (2 tasks)"
else
  echo "skipped: the Python package under srun (SHARDGNN_PYTHONPATH names no built package)"
fi

# 6. A rank lost mid-run (kill -9): srun ends the other at once (KillOnBadExit) and the job fails.
c=$(submit 1000)
wait_epochs "$c" 1
victim=$(pgrep -f "shardgnn-train $work/data/cora-2 .*" | head -n 1)
[ -n "$victim" ] || fail "job $c: no training rank to kill"
t0=$SECONDS
kill -9 "$victim"
state=$(slurm_wait_job "$c" 60) || fail "job $c did not end after a rank was killed: $state"
[[ "$state" == FAILED* ]] || fail "a job that lost a rank ended $state"
echo "ok: a rank killed with -9 ends the job ($state) within $((SECONDS - t0)) s"
