#!/usr/bin/env bash
# tests/slurm/smoke.sh -- bring up a private single-node SLURM (cluster.sh) and check
# the behaviours the project relies on: batch jobs, srun --mpi=pmi2 with MPICH,
# TERM delivered by scancel, requeue, KillOnBadExit. One line per check; exits
# non-zero when any check fails; always tears the cluster down.
#
#   tests/slurm/smoke.sh            (as root; needs: apt-get install $(slurm_packages))
#
# Environment: SHARDGNN_BIN_DIR (default <repo>/build/tools) for the MPI check
# with the project's own binary; it is skipped when the binary is missing.
# shellcheck disable=SC2016  # single-quoted $VARs expand in the job, by design
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN_DIR=${SHARDGNN_BIN_DIR:-$ROOT/build/tools}
SAMPLES=${SAMPLES:-$ROOT/datasets/samples}
# shellcheck source=cluster.sh
source "$HERE/cluster.sh"
if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "skipped: needs root and SLURM (apt-get install $(slurm_packages))"
    exit 77
fi

T_START=$SECONDS
FAILS=0
HARNESS_DIR=""

finish() {
    local rc=$?
    slurm_down
    # nothing of ours may survive (zombies awaiting their reaper aside)
    if [[ -n "$HARNESS_DIR" ]]; then
        local left
        left=$(_slurm_marked_pids "$HARNESS_DIR")
        if [[ -n "$left" ]]; then
            echo "FAIL teardown: processes left behind: $left"
            rc=1
        fi
        if [[ -e "$HARNESS_DIR" && "${SLURM_HARNESS_KEEP:-0}" != 1 ]]; then
            echo "FAIL teardown: $HARNESS_DIR still exists"
            rc=1
        fi
    fi
    echo "smoke: $((SECONDS - T_START)) s wall, $FAILS failed check(s)"
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# srun waits forever for resources when the node is drained: bound every srun
SRUN_TIMEOUT=${SRUN_TIMEOUT:-60}
SRUN_BIN=$(type -P srun || echo srun)
srun() { timeout -k 5 "$SRUN_TIMEOUT" "$SRUN_BIN" "$@"; }

# --- tiny assertion helpers (used inside checks, which run under set -e) -------
die() { echo "    $*" >&2; return 1; }
expect_eq() { # expect_eq ACTUAL EXPECTED WHAT
    [[ "$1" == "$2" ]] || die "$3: got '$1', expected '$2'"
}
# wait until FILE has at least N lines matching REGEX (timeout T s)
wait_lines() {
    local file=$1 re=$2 n=$3 t=${4:-30} t0=$SECONDS c
    while :; do
        c=$(grep -cE "$re" "$file" 2>/dev/null || true)
        ((${c:-0} >= n)) && return 0
        if ((SECONDS - t0 >= t)); then
            echo "    timed out waiting for $n x /$re/ in $file" >&2
            return 1
        fi
        sleep 0.1
    done
}

# run_check NAME FUNCTION: runs FUNCTION in a subshell with errexit really on
# (it is off inside `if`/`||` contexts), prints "ok"/"FAIL" with the time taken.
run_check() {
    local name=$1 fn=$2 t0=$SECONDS rc out
    set +e
    out=$( (set -e; "$fn") 2>&1)
    rc=$?
    set -e
    if ((rc == 0)); then
        printf 'ok   %-58s %3ds\n' "$name" $((SECONDS - t0))
    else
        printf 'FAIL %-58s %3ds\n' "$name" $((SECONDS - t0))
        FAILS=$((FAILS + 1))
    fi
    [[ -z "$out" ]] || sed 's/^/     | /' <<<"$out"
}

# --- checks ------------------------------------------------------------------------
check_batch() {
    local j r
    j=$(sbatch --parsable -J smoke-a -o "$W/a.out" --wrap 'echo "hello from $SLURM_JOB_ID"')
    r=$(slurm_wait_job "$j" 30)
    expect_eq "$r" "COMPLETED 0:0" "job $j"
    grep -q "hello from $j" "$W/a.out" || die "no output in $W/a.out"
    echo "job $j: $r"
}

check_pmi_env() {
    local out
    out=$(srun --mpi=pmi2 -n 2 --overcommit -J smoke-b1 \
        bash -c 'echo "$PMI_RANK/$PMI_SIZE fd=${PMI_FD:+set}"' | sort | tr '\n' ' ')
    expect_eq "$out" "0/2 fd=set 1/2 fd=set " "PMI_RANK/PMI_SIZE of both tasks"
    echo "tasks saw: $out"
}

check_mpi_partition() {
    if [[ ! -x "$BIN_DIR/shardgnn" || ! -f "$SAMPLES/cora.npz" ]]; then
        echo "skipped: no $BIN_DIR/shardgnn or $SAMPLES/cora.npz"
        return 0
    fi
    # a private copy: the build folder may be rewritten while we run
    mkdir -p "$W/bin"
    cp "$BIN_DIR/shardgnn" "$W/bin/"
    "$W/bin/shardgnn" data convert "$SAMPLES/cora.npz" --out "$W/cora" >"$W/convert.log" 2>&1 ||
        { tail -5 "$W/convert.log"; die "data convert failed"; }
    srun --mpi=pmi2 -n 2 --overcommit -J smoke-b2 \
        "$W/bin/shardgnn" partition "$W/cora" --parts 2 --method metis-ml --out "$W/cora-2" \
        >"$W/partition.log" 2>&1 || { tail -20 "$W/partition.log"; die "srun partition failed"; }
    grep -q '(2 ranks)' "$W/partition.log" || { tail -20 "$W/partition.log"; die "partition did not run over 2 MPI ranks"; }
    "$W/bin/shardgnn" partition verify "$W/cora-2" >"$W/verify.log" 2>&1 ||
        { tail -5 "$W/verify.log"; die "partition verify failed"; }
    grep -m1 'ranks' "$W/partition.log" | sed 's/^ *//'
}

# Every task traps TERM and exits 75 (EX_TEMPFAIL, "checkpointed, requeue me").
# On a restart (SLURM_RESTART_COUNT >= 1) it records that and exits 0 at once.
TERM_TASK='echo "rank $SLURM_PROCID job=$SLURM_JOB_ID restart=${SLURM_RESTART_COUNT:-unset}"
if [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ]; then exit 0; fi
trap "echo rank \$SLURM_PROCID got TERM; exit 75" TERM
echo "rank $SLURM_PROCID ready"
while :; do sleep 0.1; done'

submit_term_job() { # submit_term_job NAME -> job id; output in $W/NAME.out
    printf '#!/bin/bash\nexec srun --mpi=pmi2 bash -c %q\n' "$TERM_TASK" >"$W/$1.sh"
    sbatch --parsable -J "$1" -n 2 --overcommit --requeue -o "$W/$1.out" --open-mode=append "$W/$1.sh"
}

# term_job NAME -> job id: a job of submit_term_job, sent scancel --signal=TERM once both tasks
# are ready, which must end FAILED 75:0 (the tasks' own exit status).
term_job() {
    local j r
    j=$(submit_term_job "$1")
    wait_lines "$W/$1.out" '^rank [01] ready' 2 30
    scancel --signal=TERM "$j"
    r=$(slurm_wait_job "$j" 30)
    expect_eq "$r" "FAILED 75:0" "job $j after scancel --signal=TERM" || return 1
    echo "$j"
}

check_scancel_term() {
    local j
    j=$(term_job smoke-c) || return 1
    wait_lines "$W/smoke-c.out" '^rank [01] got TERM' 2 5 || { cat "$W/smoke-c.out"; return 1; }
    echo "job $j: both ranks got TERM, job ended FAILED 75:0"
}

check_requeue_running() {
    local j r restarts
    cat >"$W/smoke-d.sh" <<'EOF'
#!/bin/bash
#SBATCH --requeue
echo "run job=$SLURM_JOB_ID restart=${SLURM_RESTART_COUNT:-unset}"
if [ -z "${SLURM_RESTART_COUNT:-}" ]; then exec sleep 120; fi
exit 0
EOF
    j=$(sbatch --parsable -J smoke-d -o "$W/smoke-d.out" --open-mode=append "$W/smoke-d.sh")
    wait_lines "$W/smoke-d.out" "^run job=$j restart=unset" 1 30
    scontrol requeue "$j"
    r=$(slurm_wait_job "$j" 60)
    expect_eq "$r" "COMPLETED 0:0" "job $j after requeue"
    grep -q "^run job=$j restart=1$" "$W/smoke-d.out" || { cat "$W/smoke-d.out"; die "no rerun with SLURM_RESTART_COUNT=1"; }
    restarts=$(slurm_job_field "$j" Restarts)
    expect_eq "$restarts" 1 "Restarts of job $j"
    echo "job $j: reran with SLURM_JOB_ID=$j SLURM_RESTART_COUNT=1, ended $r"
}

check_requeue_after_term() {
    local j r
    j=$(term_job smoke-d2) || return 1
    scontrol requeue "$j"
    r=$(slurm_wait_job "$j" 60)
    expect_eq "$r" "COMPLETED 0:0" "job $j after requeue"
    wait_lines "$W/smoke-d2.out" "^rank [01] job=$j restart=1$" 2 5 || { cat "$W/smoke-d2.out"; return 1; }
    echo "job $j: FAILED 75:0, then requeued: both ranks reran with restart=1, ended $r"
}

check_kill_on_bad_exit() {
    local t0 rc el j r
    t0=$(date +%s%N)
    set +e
    srun -n 2 --overcommit -J smoke-e \
        bash -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 0.5; exit 1; fi; exec sleep 30' >"$W/e.out" 2>&1
    rc=$?
    set -e
    el=$((($(date +%s%N) - t0) / 1000000))
    ((rc != 0)) || die "srun returned 0"
    ((el < 5000)) || { cat "$W/e.out"; die "rank 0 not killed promptly: srun took ${el} ms"; }
    j=$(squeue -h -t all -n smoke-e -o '%i' | sort -n | tail -n 1)
    [[ -n "$j" ]] || die "no job named smoke-e"
    r=$(slurm_wait_job "$j" 10)
    [[ "$r" == FAILED* ]] || die "job $j: $r, expected FAILED"
    # contrast: with --kill-on-bad-exit=0 the other task runs to its end
    t0=$(date +%s%N)
    srun -n 2 --overcommit -K0 -J smoke-e0 \
        bash -c 'if [ "$SLURM_PROCID" = 1 ]; then exit 1; fi; sleep 2' >/dev/null 2>&1 || true
    local el0=$((($(date +%s%N) - t0) / 1000000))
    ((el0 >= 2000)) || die "-K0 run took only ${el0} ms (rank 0 killed anyway?)"
    echo "rank 1 exit 1 at 0.5 s -> srun rc=$rc after ${el} ms, job $j $r; with -K0: ${el0} ms"
}

# --- main ----------------------------------------------------------------------------
slurm_up
HARNESS_DIR=$SLURM_HARNESS_DIR
W=$SLURM_HARNESS_DIR/work
mkdir -p "$W"

run_check "(a) sbatch --wrap completes with 0:0" check_batch
run_check "(b) srun --mpi=pmi2 -n 2 --overcommit: PMI_RANK/PMI_SIZE" check_pmi_env
run_check "(b) srun --mpi=pmi2 -n 2: shardgnn partition over MPI" check_mpi_partition
run_check "(c) scancel --signal=TERM reaches srun tasks, exit 75" check_scancel_term
run_check "(d) --requeue + scontrol requeue of a running job" check_requeue_running
run_check "(d) scontrol requeue of a job that exited 75 on TERM" check_requeue_after_term
run_check "(e) KillOnBadExit=1: a task exits 1, the other is killed" check_kill_on_bad_exit

((FAILS == 0))
