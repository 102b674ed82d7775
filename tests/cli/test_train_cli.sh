#!/usr/bin/env bash
# `shardgnn train`: a dataset folder in one process and its shards under mpiexec print the final
# test accuracy; checkpoints resume; bad options and foreign or damaged checkpoints are one-line
# errors on every rank (status 1), never a hang, and overwrite nothing.
set -euo pipefail
: "${SHARDGNN:?}" "${SAMPLES:?}" "${MPIEXEC:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1

"$SHARDGNN" data convert "$SAMPLES/cora.npz" --out "$work/cora" >/dev/null
"$SHARDGNN" partition "$work/cora" --parts 2 --method metis --out "$work/p2" >/dev/null
quick=(--model gcn --fanouts 10,10 --hidden 32 --batch 64)

timeout 120 "$SHARDGNN" train "$work/cora" "${quick[@]}" --epochs 4 --metrics "$work/m.jsonl" > "$work/out.txt" 2>&1 ||
  fail "dataset run failed: $(cat "$work/out.txt")"
grep -qE "^test accuracy 0\.[7-9][0-9]*, macro-F1 .* \(full neighbourhoods, [0-9.]+ s\)$" "$work/out.txt" || fail "no good final test accuracy: $(cat "$work/out.txt")"
[ "$(wc -l < "$work/m.jsonl")" = 5 ] || fail "expected 4 epoch lines and the result"
grep -q '"val_acc"' "$work/m.jsonl" || fail "metrics lack val_acc"
# The last line is the run's result: the printed full-neighbourhood test accuracy, for benchmarks.
python3 - "$work/m.jsonl" "$work/out.txt" <<'PY' || fail "the result line does not hold what train printed: $(tail -1 "$work/m.jsonl")"
import json, re, sys
result = json.loads(open(sys.argv[1]).read().splitlines()[-1])["result"]
printed = re.search(r"^test accuracy ([0-9.]+), .*\(full neighbourhoods", open(sys.argv[2]).read(), re.M).group(1)
assert f"{result['full']['acc']:.4f}" == printed, (result, printed)
assert result["best_epoch"] >= 0 and result["full"]["count"] == 1000 and "sampled" in result
assert len(result["rank_test"]) == 1 and result["rank_test"][0]["count"] == 1000
PY
timeout 120 "$SHARDGNN" train "$work/cora" "${quick[@]}" --epochs 1 --no-test > "$work/out.txt" 2>&1 || fail "--no-test run failed: $(cat "$work/out.txt")"
grep -q "^test set not scored (--no-test)$" "$work/out.txt" && ! grep -q "^test accuracy" "$work/out.txt" || fail "--no-test scored a test set: $(cat "$work/out.txt")"

# With Debian's libtorch (OpenBLAS through libblas.so.3). Outputs are read whole before grep: with
# pipefail, `cmd | grep -q` takes the wrong branch when grep quits before cmd has written all.
if grep -qE 'lib(open)?blas' <<<"$(ldd "$(dirname "$SHARDGNN")/shardgnn-train")"; then
  # The run's first line and the metrics name the BLAS kernels OpenBLAS computes with.
  OPENBLAS_CORETYPE=Prescott timeout 120 "$SHARDGNN" train "$work/cora" "${quick[@]}" --epochs 1 --metrics "$work/blas.jsonl" > "$work/out.txt" 2>&1 ||
    fail "Prescott run failed: $(cat "$work/out.txt")"
  head -1 "$work/out.txt" | grep -q ", BLAS Prescott kernels" || fail "the user's kernels are not named: $(head -1 "$work/out.txt")"
  grep -q '"blas_core":"Prescott"' "$work/blas.jsonl" || fail "metrics lack the kernels: $(cat "$work/blas.jsonl")"
  # ... and what ran the layers' products, which Debian's libtorch hands to oneDNN whatever OpenBLAS runs.
  head -1 "$work/out.txt" | grep -q "cpu fp32, products on oneDNN sgemm, " || fail "the products' library is not named: $(head -1 "$work/out.txt")"
  grep -q '"gemm":"oneDNN sgemm"' "$work/blas.jsonl" || fail "metrics lack the products' library: $(cat "$work/blas.jsonl")"
else
  # A libtorch with its own BLAS (PyTorch's builds carry MKL) has no OpenBLAS kernels to name.
  timeout 120 "$SHARDGNN" train "$work/cora" "${quick[@]}" --epochs 1 > "$work/out.txt" 2>&1 || fail "1-epoch run failed: $(cat "$work/out.txt")"
  head -1 "$work/out.txt" | grep -qE "cpu fp32, products on [^,]+\)" || fail "the products' library is not named: $(head -1 "$work/out.txt")"
  # ... and takes the system's oneDNN for them when there is one.
  if grep -q 'libdnnl\.so\.2 ' <<<"$(ldconfig -p)"; then
    head -1 "$work/out.txt" | grep -qF "products on oneDNN sgemm (libdnnl.so.2)" || fail "the system's oneDNN is not used: $(head -1 "$work/out.txt")"
  fi
fi

# More parts than ranks: each rank merges its parts into spill files, which leave nothing behind.
"$SHARDGNN" partition "$work/cora" --parts 4 --method metis --out "$work/p4" >/dev/null
mkdir "$work/spill"
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p4" "${quick[@]}" --epochs 12 --scratch "$work/spill" > "$work/out.txt" 2>&1 ||
  fail "4 parts on 2 ranks failed: $(cat "$work/out.txt")"
head -1 "$work/out.txt" | grep -q "(partitioned, its 4 parts merged 2 per rank, 2 ranks," || fail "the merge is not named: $(head -1 "$work/out.txt")"
grep -qE "^test accuracy 0\.[7-9][0-9]*, macro-F1 .* \(full neighbourhoods" "$work/out.txt" || fail "4 parts on 2 ranks: no good test accuracy: $(cat "$work/out.txt")"
[ -z "$(ls -A "$work/spill")" ] || fail "spill files left behind: $(ls -A "$work/spill")"

timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 2 --checkpoint-dir "$work/ck" > "$work/out.txt" 2>&1 ||
  fail "2-rank run failed: $(cat "$work/out.txt")"
grep -q "test accuracy" "$work/out.txt" || fail "no test accuracy line"
[ -s "$work/ck/checkpoint.pt" ] && [ -s "$work/ck/weights.pt" ] || fail "no checkpoint or weights"
# Python's torch.load reads the weights as a {name: tensor} dict, when a Python with torch is
# here (build-torch/venv, made by scripts/setup.sh --torch pip, or the benchmark peers' environment,
# made by scripts/peers.sh); libtorch is not PyTorch.
torch_python=""
for py in "${PEERS_PYTHON:-}" "$(dirname "$SHARDGNN")/../venv/bin/python" "$(dirname "$SHARDGNN")/../peers-venv/bin/python" python3; do
  if [ -n "$py" ] && "$py" -c "import torch" 2>/dev/null; then torch_python=$py; break; fi
done
if [ -n "$torch_python" ]; then
  "$torch_python" - "$work/ck/weights.pt" <<'PY' || fail "torch.load could not read weights.pt"
import sys, torch
d = torch.load(sys.argv[1], weights_only=True)
assert isinstance(d, dict) and d, d
assert all(isinstance(v, torch.Tensor) and v.dtype == torch.float32 for v in d.values()), d
assert d["conv0.fc.weight"].shape == (32, 1433), d["conv0.fc.weight"].shape
PY
else
  echo "note: no Python with torch here (scripts/peers.sh makes one); torch.load of weights.pt not checked"
fi
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 3 --checkpoint-dir "$work/ck" --resume > "$work/out.txt" 2>&1 ||
  fail "resume failed: $(cat "$work/out.txt")"
grep -q "resuming .* at epoch 3 of 3" "$work/out.txt" || fail "did not resume: $(cat "$work/out.txt")"
cp "$work/ck/checkpoint.pt" "$work/saved.pt"

# wait_rc PID: waits for a background job and sets rc to its exit status.
wait_rc() {
  set +e
  wait "$1"
  rc=$?
  set -e
}

# wait_epochs DIR N PID: until DIR/metrics.jsonl records N epochs (30 s at most; 1 when PID ends first).
wait_epochs() {
  for _ in $(seq 600); do
    [ "$(cat "$1/metrics.jsonl" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# Stopped by a signal, as a batch system stops a job: the ranks agree on a step, rank 0 checkpoints
# it, every rank exits 75 (resumable) saying what to run, and the resumed run ends with the same
# weights, byte for byte, as an uninterrupted one. The signal goes to the ranks themselves (srun
# and scancel do that). Polling the metrics file orders the signal after two epochs, well before the end.
stop_model=(--model gcn --fanouts 10,10 --hidden 32 --batch 16 --no-test --no-full-eval)
stop_run=("${stop_model[@]}" --epochs 40)
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${stop_run[@]}" --run-dir "$work/whole" > /dev/null 2>&1 || fail "uninterrupted run failed"
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${stop_run[@]}" --run-dir "$work/stopped" > "$work/out.txt" 2> "$work/err.txt" &
launcher=$!
wait_epochs "$work/stopped" 2 "$launcher" || true
pkill -TERM -f "shardgnn-train $work/p2 .*--run-dir $work/stopped" || fail "no training ranks to signal"
wait_rc "$launcher"
[ "$rc" = 75 ] || fail "a run stopped by SIGTERM exited $rc, expected 75: $(cat "$work/err.txt")"
grep -q "stopped by SIGTERM after .*holds it: run the same command with --resume to continue (exit status 75)" "$work/err.txt" ||
  fail "the stopped run did not say what happened and what to run: $(cat "$work/err.txt")"
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${stop_run[@]}" --run-dir "$work/stopped" --resume > "$work/out.txt" 2>&1 ||
  fail "resuming the stopped run failed: $(cat "$work/out.txt")"
grep -q "^resuming " "$work/out.txt" || fail "the stopped run did not resume: $(cat "$work/out.txt")"
cmp -s "$work/whole/weights.pt" "$work/stopped/weights.pt" || fail "stopped and resumed, the weights differ from an uninterrupted run's"
# The same signal sent to mpiexec, which forwards it: mpiexec exits 75 too (MPICH 4.0's proxy
# reported 0 for about a third of such runs until the ranks kept their status for it).
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${stop_run[@]}" --run-dir "$work/stopped2" > /dev/null 2> "$work/err.txt" &
launcher=$!
wait_epochs "$work/stopped2" 2 "$launcher" || true
kill -TERM "$launcher"
wait_rc "$launcher"
[ "$rc" = 75 ] || fail "a run whose mpiexec got SIGTERM exited $rc, expected 75: $(cat "$work/err.txt")"
[ -s "$work/stopped2/checkpoint.pt" ] || fail "a run whose mpiexec got SIGTERM left no checkpoint"
# Tasks that MPI did not join (srun without --mpi=pmi2) are told the likely cause.
set +e
PMI_SIZE=3 "$SHARDGNN" train "$work/cora" "${stop_run[@]}" > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "started as one of 3 tasks, but MPI joined 1 (under srun, pass --mpi=pmi2)" "$work/err.txt" ||
  fail "a launch MPI did not join: exit $rc, $(cat "$work/err.txt")"
# One signal delivered twice, by two processes at once (slurmstepd and MPICH's proxy do that under
# mpiexec in a SLURM job), is one request: the run still stops with its checkpoint.
"$SHARDGNN" train "$work/cora" "${stop_model[@]}" --epochs 400 --run-dir "$work/dup" > /dev/null 2> "$work/err.txt" &
single=$!
wait_epochs "$work/dup" 1 "$single" || fail "the run for a doubled signal ended early: $(cat "$work/err.txt")"
/bin/kill -s TERM "$single"
kill -TERM "$single"
wait_rc "$single"
[ "$rc" = 75 ] || fail "one SIGTERM from two processes: exit $rc, expected 75: $(cat "$work/err.txt")"
[ -s "$work/dup/checkpoint.pt" ] || fail "one SIGTERM from two processes: no checkpoint"
# A second signal from the same sender, past the echo window (0.25 s), ends the process at once,
# 128 + the signal. Its steps are slowed 5000-fold, so both signals come inside the first.
"$SHARDGNN" train "$work/cora" "${stop_model[@]}" --epochs 400 --simulate-slowdown 0:5000 --run-dir "$work/twice" > "$work/out.txt" 2> "$work/err.txt" &
single=$!
for _ in $(seq 600); do
  grep -q "^run:" "$work/out.txt" && break
  kill -0 "$single" 2>/dev/null || fail "the run for two signals ended early: $(cat "$work/err.txt")"
  sleep 0.05
done
kill -TERM "$single"
sleep 0.5  # past the echo window, well inside the slowed step
kill -INT "$single"
wait_rc "$single"
[ "$rc" = 130 ] || [ "$rc" = 143 ] || fail "two stop signals: exit $rc, expected 128 + the second signal: $(cat "$work/err.txt")"
grep -q "a second stop signal" "$work/err.txt" || fail "two stop signals: not said: $(cat "$work/err.txt")"

# GCN (its normalisation reads every input node's degree) on 2 ranks: reading the node-local rank's
# shard directly and exchanging over MPI train the same model, loss for loss; only the first
# moves no bytes between the ranks.
for nl in on off; do
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 2 --node-local "$nl" --metrics "$work/nl-$nl.jsonl" \
    > "$work/nl-$nl.txt" 2>&1 || fail "--node-local $nl run failed: $(cat "$work/nl-$nl.txt")"
done
learning() { grep -oE '"(loss|train_acc|val_acc)":[^,]*' "$1"; }
[ -n "$(learning "$work/nl-on.jsonl")" ] || fail "no loss in the metrics"
[ "$(learning "$work/nl-on.jsonl")" = "$(learning "$work/nl-off.jsonl")" ] || fail "node-local on and off trained differently"
scores() { grep "test accuracy" "$1" | sed -E 's/, [0-9.]+ s\)$/)/'; }  # without the evaluation's time
[ -n "$(scores "$work/nl-on.txt")" ] || fail "no test accuracy: $(cat "$work/nl-on.txt")"
[ "$(scores "$work/nl-on.txt")" = "$(scores "$work/nl-off.txt")" ] || fail "node-local on and off tested differently"
grep -q '"node_local_rows":[1-9]' "$work/nl-on.jsonl" || fail "--node-local on read no row from the node-local rank's shard"
grep -q '^{"epoch":[0-9]*,.*"bytes_received":0E0,"train_s"' "$work/nl-on.jsonl" || fail "--node-local on moved bytes over MPI"
grep -q '"bytes_received":[1-9]' "$work/nl-off.jsonl" || fail "--node-local off moved nothing over MPI"
grep -q "^feature cache: [0-9]*-[0-9]* rows per rank .*rows on the wire as float32" "$work/nl-off.txt" || fail "no feature cache line: $(cat "$work/nl-off.txt")"
# bf16 rows on the wire: the same batches with rounded rows, fewer bytes.
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 2 --node-local off --wire-dtype bf16 --metrics "$work/bf16.jsonl" \
  > "$work/bf16.txt" 2>&1 || fail "--wire-dtype bf16 run failed: $(cat "$work/bf16.txt")"
grep -q "rows on the wire as bf16" "$work/bf16.txt" || fail "bf16 not reported: $(cat "$work/bf16.txt")"
received() { grep -oE '"bytes_received":[^,]*' "$1" | head -1 | cut -d: -f2; }
awk -v a="$(received "$work/bf16.jsonl")" -v b="$(received "$work/nl-off.jsonl")" 'BEGIN { exit !(a > 0 && a < 0.75 * b) }' \
  || fail "bf16 received $(received "$work/bf16.jsonl") bytes against float32's $(received "$work/nl-off.jsonl")"

# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"
expect_cmd=(train)
expect_error 1 "unknown --model 'gin'" "$work/cora" --model gin
expect_error 1 "hidden must be at least 1" "$work/cora" --hidden 0
expect_error 1 "unknown --wire-dtype 'fp8'" "$work/cora" --wire-dtype fp8
expect_error 2 "lr must be > 0, got 0" "$work/p2" --lr 0
expect_error 2 "lr must be > 0, got -1" "$work/p2" --lr -1
expect_error 1 "device cuda: no CUDA device available" "$work/cora" --device cuda
expect_error 2 "a dataset folder trains in one process" "$work/cora"
expect_error 3 "2 parts, but the job has 3 ranks" "$work/p2"
expect_error 2 "a checkpoint exists" "$work/p2" "${quick[@]}" --checkpoint-dir "$work/ck"
expect_error 2 "the checkpoint is of gcn (hidden 32" "$work/p2" --model sage --fanouts 10,10 --hidden 32 --checkpoint-dir "$work/ck" --resume
cmp -s "$work/ck/checkpoint.pt" "$work/saved.pt" || fail "a refused run changed the checkpoint"
head -c 2000 "$work/saved.pt" > "$work/ck/checkpoint.pt"
expect_error 2 "checkpoint.pt: damaged checkpoint: no shardgnn checksum" "$work/p2" "${quick[@]}" --checkpoint-dir "$work/ck" --resume
expect_error 2 "there is no rank 2 (the job has 2 ranks, 0 to 1)" "$work/p2" --simulate-slowdown 2:2
expect_error 2 "the factor must be >= 1, got 0" "$work/p2" --simulate-slowdown 1:0
expect_error 2 "the factor must be >= 1, got -3" "$work/p2" --simulate-slowdown 1:-3
expect_error 2 "expected RANK:FACTOR" "$work/p2" --simulate-slowdown 1
expect_error 2 "unknown --rebalance policy 'fastest'" "$work/p2" --rebalance fastest
expect_error 2 "unknown --seed-sampling 'labels'" "$work/p2" --seed-sampling labels
expect_error 1 "--personalize must be >= 0, got -1" "$work/cora" --personalize -1
expect_error 1 "--personalize scores the test set, which --no-test leaves out" "$work/cora" --personalize 2 --no-test

# Rebalancing on 2 ranks with rank 1 slowed 3x: per-rank records in the metrics, the slow rank
# ends with fewer seeds, and `shardgnn report` reads the run.
timeout 180 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 4 --rebalance cost --simulate-slowdown 1:3 --run-dir "$work/run" \
  --no-full-eval > "$work/out.txt" 2>&1 || fail "rebalanced run failed: $(cat "$work/out.txt")"
[ "$(wc -l < "$work/run/metrics.jsonl")" = 5 ] || fail "expected 4 epoch lines and the result in the run dir"
grep -q '"ranks":\[{"rank":0' "$work/run/metrics.jsonl" || fail "metrics lack per-rank records"
last=$(grep '"epoch"' "$work/run/metrics.jsonl" | tail -n 1)  # the last epoch, before the result line
seeds=$(echo "$last" | grep -o '"rebalance":{"policy":"cost","seeds":\[[0-9]*,[0-9]*\]' | grep -o '\[.*\]' | tr -d '[]')
[ -n "$seeds" ] || fail "no rebalance record: $last"
s0=${seeds%,*}; s1=${seeds#*,}
[ "$s1" -lt "$s0" ] || fail "the slowed rank 1 kept as many seeds as rank 0 ($seeds)"
"$SHARDGNN" report "$work/run" > "$work/report.txt" || fail "report failed"
grep -q "slowdown x3" "$work/report.txt" || fail "report does not show the slowed rank: $(cat "$work/report.txt")"
[ -s "$work/run/report.svg" ] || fail "report wrote no SVG"

# Class-balanced seed sampling trains (labels of other ranks' seeds come from their owners).
timeout 180 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 4 --seed-sampling class-balanced --no-full-eval \
  > "$work/out.txt" 2>&1 || fail "class-balanced run failed: $(cat "$work/out.txt")"
grep -qE "^test accuracy 0\.[6-9]" "$work/out.txt" || fail "class-balanced run: no good test accuracy: $(cat "$work/out.txt")"
# bench scale: generate, partition and one epoch on 2 ranks, every stage timed and measured, the
# epoch split as its metrics record it; float16 features carried from generate to the shards.
timeout 180 "$SHARDGNN" bench scale --scale 9 --edge-factor 8 --parts 4 --train-ranks 2 --feature-dtype float16 --workdir "$work/scale" \
  --json "$work/scale.json" > "$work/out.txt" 2>&1 || fail "bench scale failed: $(cat "$work/out.txt")"
for stage in generate partition train; do
  grep -qE "^$stage +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]+ *$" "$work/out.txt" || fail "bench scale: no $stage row: $(cat "$work/out.txt")"
done
grep -qE "^epoch 1: [0-9.]+ s; per rank, waiting for batches [0-9.]+ s \([0-9]+%\), compute [0-9.]+ s \([0-9]+%\), all-reduce [0-9.]+ s" "$work/out.txt" ||
  fail "bench scale: no epoch split: $(cat "$work/out.txt")"
[ "$(grep -cE '"status": *0,' "$work/scale.json")" -eq 3 ] && grep -qE '"compute_s": *[0-9]' "$work/scale.json" || fail "bench scale JSON: $(cat "$work/scale.json")"
grep -q '"feature_dtype": "float16"' "$work"/scale/rmat-s9-e8-*/partition.json || fail "bench scale --feature-dtype float16: the shards are not float16"
grep -qE "^generate +build: edges drawn and built in memory +[0-9.]+" "$work/out.txt" && grep -qE "^partition +partition: shards written and measured +[0-9.]+" "$work/out.txt" ||
  fail "bench scale: no step table: $(cat "$work/out.txt")"
# The step table through files on disk and the multilevel partitioner over 2 ranks: each pass of
# the build, each level, with its I/O and memory, every partition step logged by both ranks.
# Then the pipeline projected onto 1, 2 and 4 nodes, for this graph and one 4x as large, from those steps.
timeout 180 "$SHARDGNN" bench scale --scale 15 --edge-factor 8 --parts 2 --method metis-ml --partition-ranks 2 --memory-limit 1M --workdir "$work/scale2" \
  --project-edges $((4 * 8 << 15)) --project-nodes 1,2,4 --json "$work/scale2.json" > "$work/out.txt" 2>&1 || fail "bench scale on disk failed: $(cat "$work/out.txt")"
grep -qE "^projected: 2.62e\+05 edges \(this graph\) on nodes like this one" "$work/out.txt" && grep -qE "^projected: 1.05e\+06 edges \(--project-edges\) on nodes like this one" "$work/out.txt" && grep -qE "^ +4 +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+  metis-ml: " "$work/out.txt" ||
  fail "bench scale: no projection: $(cat "$work/out.txt")"
"$py" - "$work/scale2.json" <<'PY' || fail "bench scale's steps: $(cat "$work/out.txt")"
import json, os, sys
steps = json.load(open(sys.argv[1]))["steps"]
names = [(s["stage"], s["step"]) for s in steps]
for want in [("generate", "build: entries to bucket files"), ("generate", "build: buckets sorted into rows"), ("generate", "build: CSR files written"),
             ("generate", "generate: dataset written"), ("partition", "metis-ml: METIS on the coarsest graph"),
             ("partition", "metis-ml: project and refine level 0"), ("partition", "partition: shards written and measured")]:
    assert want in names, (want, names)
assert any(n.startswith("metis-ml: coarsen level 1 (from 32768 nodes)") for _, n in names), names
by = {(s["stage"], s["step"]): s for s in steps}
assert by[("generate", "build: entries to bucket files")]["wchar"] > 0 and by[("generate", "build: buckets sorted into rows")]["rchar"] > 0
assert all(s["ranks"] == (2 if s["stage"] == "partition" else 1) and s["anon_peak_mib"] > 0 and s["wall_s"] >= 0 for s in steps), steps
# The projection is the steps' sums: generation 4x (one process), partition steps 4x over the
# nodes but METIS on the coarsest graph 4x on each, memory per node the ranks' peaks.
run = json.load(open(sys.argv[1]))
projections = run["projections"]
assert [p["edges"] for p in projections] == [8 << 15, 4 * 8 << 15], projections
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(b))
gen = sum(s["wall_s"] for s in steps if s["stage"] == "generate")
gen_gib = max(s["anon_peak_mib"] for s in steps if s["stage"] == "generate") / 1024
whole = sum(s["wall_s"] for s in steps if "METIS on the coarsest graph" in s["step"])
split = sum(s["wall_s"] for s in steps if s["stage"] == "partition") - whole
epoch = run["epochs"][0]["epoch_s"]
node_gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE") / 2**30
for f, proj in zip([1, 4], projections):
    assert [r["nodes"] for r in proj["rows"]] == [1, 2, 4], proj
    for r in proj["rows"]:
        assert close(r["generate_s"], f * gen) and close(r["partition_s"], f * whole + f * split / r["nodes"]), (r, gen, whole, split)
        assert close(r["train_epoch_s"], f * epoch / r["nodes"]) and close(r["generate_gib"], f * gen_gib), (r, epoch, gen_gib)
        mem = (0.0, "")
        for s in steps:
            if s["stage"] == "partition":
                gib = s["anon_peak_mib"] * f * (1 if "METIS on the coarsest graph" in s["step"] else 1 / r["nodes"]) * 2 / 1024
                mem = (gib, s["step"]) if gib > mem[0] else mem
        assert close(r["partition_gib_per_node"], mem[0]) and r["largest_step"] == mem[1], (r, mem)
        assert r["fits"] == (mem[0] <= node_gib and f * gen_gib <= node_gib), r
PY
# bench train: one rank on the graph, two on its partition by the method asked for, a row each.
timeout 180 "$SHARDGNN" bench train --nodes 3000 --avg-degree 10 --feature-dim 8 --ranks 1,2 --method metis-ml --fanouts 5,5 --batch 64 --hidden 16 \
  --epochs 1 --workdir "$work/btrain" --json "$work/btrain.json" > "$work/out.txt" 2>&1 || fail "bench train failed: $(cat "$work/out.txt")"
for p in 1 2; do
  grep -qE "^shardgnn +$p +[0-9.]+ .* $p rank\(s\) of 1 thread, products on " "$work/out.txt" || fail "bench train: no row for $p rank(s): $(cat "$work/out.txt")"
done
[ -f "$work/btrain/sbm-3000-10-8-100-v2-metis-ml-2/partition.json" ] || fail "bench train: no metis-ml partition: $(ls "$work/btrain")"
[ "$(grep -cE '"who": *"shardgnn"' "$work/btrain.json")" -eq 2 ] || fail "bench train JSON: $(cat "$work/btrain.json")"
# A failed peer fails bench train (a Python without DGL: its import fails), its own line last.
set +e
timeout 180 "$SHARDGNN" bench train --nodes 3000 --avg-degree 10 --feature-dim 8 --ranks 1 --fanouts 5,5 --batch 64 --hidden 16 --epochs 1 \
  --workdir "$work/btrain" --dgl-python /usr/bin/python3 --json "$work/btrain-peer.json" > "$work/out.txt" 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a failed DGL peer left bench train's exit status 0: $(cat "$work/out.txt" "$work/err.txt")"
grep -qE "^shardgnn bench train: dgl on 1 core\(s\) failed: exit 1: ModuleNotFoundError: No module named '(torch|dgl)'$" "$work/err.txt" ||
  fail "a failed DGL peer: not its own error line: $(tail -5 "$work/err.txt")"
/usr/bin/python3 -c 'import json, sys; sys.exit(not any(r["who"] == "dgl" and r["failed"] and r["error"] for r in json.load(open(sys.argv[1]))["rows"]))' \
  "$work/btrain-peer.json" || fail "a failed DGL peer: the JSON does not say so: $(cat "$work/btrain-peer.json")"

# train --personalize: after the shared model's scores, each rank's copy fine-tuned and scored on its own test nodes.
timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${quick[@]}" --epochs 2 --eval full --personalize 1 > "$work/out.txt" 2>&1 ||
  fail "--personalize run failed: $(cat "$work/out.txt")"
grep -q "(full neighbourhoods, " "$work/out.txt" || fail "--personalize: no shared scores: $(cat "$work/out.txt")"
grep -qE "^test accuracy 0\.[0-9]+, macro-F1 0\.[0-9]+ \(personalized: 1 epoch per rank on its own shard, .* full neighbourhoods\)$" "$work/out.txt" ||
  fail "--personalize: no personalized scores: $(cat "$work/out.txt")"

# bench strategies: the single-process reference and a row per strategy, partition metrics beside
# the scores, a personalized score per row; the same rows as JSON and as points of the SVG.
timeout 300 "$SHARDGNN" bench strategies "$work/cora" --parts 2 --methods metis,labels --seed-sampling shard --seeds 1 --epochs 2 --personalize 1 \
  --workdir "$work/bstrat" --json "$work/bstrat.json" --svg "$work/bstrat.svg" > "$work/out.txt" 2>&1 || fail "bench strategies failed: $(cat "$work/out.txt")"
grep -qE "^ +1 single process +shard +[0-9.]+ ± [0-9.]+ " "$work/out.txt" || fail "bench strategies: no reference row: $(cat "$work/out.txt")"
for m in metis labels; do
  grep -qE "^ +2 $m +shard +[0-9.]+ ± [0-9.]+ +[0-9.]+ ± [0-9.]+ +[0-9.]+ ± [0-9.]+ +[0-9.]+\*? .* [0-9]+ +[0-9.]+$" "$work/out.txt" ||
    fail "bench strategies: no full row for $m: $(cat "$work/out.txt")"
done
[ "$(grep -c '"strategy"' "$work/bstrat.json")" = 3 ] && grep -q '"personalized_micro_f1"' "$work/bstrat.json" && grep -q '"max_label_kl"' "$work/bstrat.json" ||
  fail "bench strategies JSON: $(cat "$work/bstrat.json")"
[ "$(grep -c "<circle cx=.* r='4' fill=.* stroke=" "$work/bstrat.svg")" = 3 ] || fail "bench strategies SVG: not a point per row"
# A checkpoint that cannot be written (a full disk: a 3 MiB tmpfs, filled) fails the run on every
# rank with one line, leaves the previous checkpoint as it was and no temporary file. Needs root
# for the mount; skipped without.
full="$work/full"
mkdir -p "$full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=3m tmpfs "$full" 2>/dev/null; then
  trap 'umount "$full" 2>/dev/null || true; rm -rf "$work"' EXIT
  ck=(--model gcn --fanouts 10,10 --hidden 64 --batch 64 --no-test --no-full-eval --checkpoint-dir "$full/ck")
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${ck[@]}" --epochs 1 > /dev/null 2>&1 || fail "first run on the tmpfs failed"
  cp "$full/ck/checkpoint.pt" "$work/before.pt"
  head -c "$(( $(df --output=avail -B1 "$full" | tail -1) - 4096 ))" /dev/zero > "$full/filler" 2>/dev/null || true
  set +e
  timeout 120 "$MPIEXEC" -n 2 "$SHARDGNN" train "$work/p2" "${ck[@]}" --epochs 3 --resume > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "checkpoint on a full disk: exit $rc, expected 1: $(cat "$work/err.txt")"
  [ "$(grep -c "checkpoint not written, the previous one (if any) is intact: .*checkpoint.pt: .*No space left on device" "$work/err.txt")" = 2 ] ||
    fail "checkpoint on a full disk: not one line per rank: $(cat "$work/err.txt")"
  cmp -s "$full/ck/checkpoint.pt" "$work/before.pt" || fail "checkpoint on a full disk: the previous checkpoint changed"
  [ -z "$(find "$full" -name '*.tmp-*')" ] || fail "checkpoint on a full disk: left $(find "$full" -name '*.tmp-*')"
  umount "$full"
  trap 'rm -rf "$work"' EXIT
  echo "ok: a checkpoint on a full disk fails cleanly"
else
  echo "note: not root or no tmpfs: the full-disk checkpoint check skipped"
fi
echo "train CLI: all checks passed"
