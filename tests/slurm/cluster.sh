# shellcheck shell=bash
# tests/slurm/cluster.sh -- bring up a throw-away, single-node SLURM (Debian
# slurm-wlm 22.05) on this host for tests, and tear it down again.
#
#   source tests/slurm/cluster.sh
#   trap slurm_down EXIT
#   slurm_up                       # exports SLURM_CONF, SLURM_HARNESS_DIR, ...
#   jid=$(sbatch --parsable --wrap 'true')
#   slurm_wait_job "$jid" 60       # prints e.g. "COMPLETED 0:0"
#
# Functions (all names start with slurm_; internals with _slurm_):
#   slurm_packages                 echo the Debian packages this needs
#   slurm_up                       start munged + slurmctld + slurmd, wait for idle node
#   slurm_down                     stop everything, remove the temp folder (idempotent)
#   slurm_wait_job JOBID [TIMEOUT] wait for a job to end; print "STATE EXIT:SIG"
#   slurm_job_field JOBID FIELD    print one field of `scontrol show job` (e.g. Restarts)
#   slurm_dump_logs [LINES]        print the tails of the daemon logs (to stderr)
#
# Knobs (environment, read by slurm_up):
#   SLURM_HARNESS_CPUS   CPUs to advertise for the node (default: nproc). A value
#                        above nproc is allowed (SlurmdParameters=config_overrides).
#   SLURM_HARNESS_TASK_PLUGIN  TaskPlugin (default task/none)
#   SLURM_HARNESS_PROCTRACK    ProctrackType (default proctrack/linuxproc)
#   SLURM_HARNESS_CRED_EXPIRE  AuthInfo cred_expire, seconds (default 5); a
#                              requeued job waits this long + 1 s before rerunning
#   SLURM_HARNESS_TIMEOUT      seconds to wait for the node to become idle (30)
#   SLURM_HARNESS_KEEP=1       slurm_down keeps the temp folder (for debugging)
#   SLURM_HARNESS_DEBUG        SlurmctldDebug/SlurmdDebug level (default info)
#   SLURM_HARNESS_CGROUP_CONF  if set, written as cgroup.conf (only for experiments
#                              with proctrack/cgroup or task/cgroup; see README)
#
# The library does not change the caller's shell options; every function is
# safe under `set -euo pipefail`.

slurm_packages() {
    # slurmctld/slurmd/slurm-client pull in slurm-wlm-basic-plugins (which has
    # mpi_pmi2.so) and munge.
    echo "slurmctld slurmd slurm-client munge"
}

_slurm_log() { echo "[slurm-harness] $*" >&2; }

_slurm_port_free() {
    # true when no TCP socket in any state uses port $1: a connection's local end
    # blocks a daemon's bind as surely as a listener (ss from iproute2, else a connect probe)
    if command -v ss >/dev/null 2>&1; then
        [[ -z "$(ss -Htan "sport = :$1" 2>/dev/null)" ]]
    else
        ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}

_slurm_pick_ports() {
    # echo a base port P such that P and P+1 are free, below the kernel's
    # ephemeral range so that no outgoing connection takes it between the check
    # and the daemons' bind (CI once lost slurmctld to "Address already in use")
    local _ p lo span
    lo=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    span=$(( (lo - 20000) / 16 ))
    ((span > 0)) || span=2000
    for _ in $(seq 1 50); do
        p=$(( 20000 + (RANDOM % span) * 16 ))
        if _slurm_port_free "$p" && _slurm_port_free $((p + 1)); then
            echo "$p"
            return 0
        fi
    done
    _slurm_log "no free port pair found from 20000 below the ephemeral range"
    return 1
}

slurm_dump_logs() {
    local n=${1:-40} f d=${SLURM_HARNESS_DIR:-}
    [[ -n "$d" && -d "$d" ]] || { _slurm_log "no harness folder to dump logs from"; return 0; }
    for f in "$d"/log/slurmctld.log "$d"/log/slurmd.log "$d"/log/*.stderr "$d"/log/munged.log; do
        [[ -s "$f" ]] || continue
        echo "----- tail -n $n $f -----" >&2
        tail -n "$n" "$f" >&2 || true
    done
}

_slurm_pid_alive() {
    # $1: pid file; true when it names a live, non-zombie process
    local pid st
    [[ -s "$1" ]] || return 1
    pid=$(<"$1")
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n "$st" && "$st" != Z && "$st" != X ]]
}

_slurm_fail() {
    _slurm_log "ERROR: $*"
    slurm_dump_logs 30
    # a port taken between the check and the bind is a race, not a fault: slurm_up retries it
    if grep -qs "Address already in use" "${SLURM_HARNESS_DIR:-/nonexistent}"/log/slurm*.log; then
        _SLURM_PORT_CLASH=1
    fi
    slurm_down
    return 1
}

slurm_up() {
    local attempt
    for attempt in 1 2 3; do
        _SLURM_PORT_CLASH=0
        _slurm_up_once && return 0
        ((_SLURM_PORT_CLASH)) || return 1
        _slurm_log "port clash on attempt $attempt; choosing other ports"
    done
    return 1
}

_slurm_up_once() {
    if [[ -n "${SLURM_HARNESS_DIR:-}" && -d "${SLURM_HARNESS_DIR}" ]]; then
        _slurm_log "already up in $SLURM_HARNESS_DIR (call slurm_down first)"
        return 1
    fi
    local b missing=()
    for b in munged mungekey slurmctld slurmd sinfo squeue scontrol scancel sbatch srun; do
        command -v "$b" >/dev/null 2>&1 || missing+=("$b")
    done
    if ((${#missing[@]})); then
        _slurm_log "missing commands: ${missing[*]} (apt-get install -y --no-install-recommends $(slurm_packages))"
        return 1
    fi
    if [[ $(id -u) -ne 0 ]]; then
        _slurm_log "must run as root (slurmd launches tasks as the submitting user)"
        return 1
    fi

    # Job-context variables inherited from an enclosing SLURM job would make
    # srun/sbatch talk about a job this cluster does not know.
    local v
    for v in $(compgen -e | grep -E '^SLURM_' | grep -vE '^SLURM_(HARNESS_.*|TIME_FORMAT|CONF)$' || true); do
        unset "$v"
    done

    local d
    d=$(mktemp -d "${TMPDIR:-/tmp}/slurm-harness.XXXXXX") || return 1
    export SLURM_HARNESS_DIR=$d
    # munged insists that every directory above its socket is o+x.
    chmod 755 "$d"
    mkdir -p "$d"/log "$d"/state "$d"/spool "$d"/run "$d"/munge-run
    mkdir -m 700 "$d"/munge-etc
    chmod 755 "$d"/munge-run

    local node cpus mem_mb port task_plugin proctrack debug timeout cred_expire
    node=$(hostname -s 2>/dev/null || true)
    [[ -n "$node" ]] || node=localhost
    cpus=${SLURM_HARNESS_CPUS:-$(nproc)}
    # RealMemory must not exceed what slurmd detects, or the node is drained.
    mem_mb=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    task_plugin=${SLURM_HARNESS_TASK_PLUGIN:-task/none}
    proctrack=${SLURM_HARNESS_PROCTRACK:-proctrack/linuxproc}
    debug=${SLURM_HARNESS_DEBUG:-info}
    timeout=${SLURM_HARNESS_TIMEOUT:-30}
    cred_expire=${SLURM_HARNESS_CRED_EXPIRE:-5}
    port=$(_slurm_pick_ports) || { _slurm_fail "port selection failed"; return 1; }
    export SLURM_HARNESS_NODE=$node
    mkdir -p "$d/spool/$node"

    # --- munge: private key, socket, pid, log ---------------------------------
    mungekey -c -k "$d/munge-etc/munge.key" 2>"$d/log/mungekey.stderr" ||
        { _slurm_fail "mungekey failed"; return 1; }
    env SLURM_HARNESS_MARK="$d" munged \
        --key-file="$d/munge-etc/munge.key" \
        --socket="$d/munge-run/munge.sock" \
        --pid-file="$d/munge-run/munged.pid" \
        --seed-file="$d/munge-etc/munged.seed" \
        --log-file="$d/log/munged.log" \
        </dev/null >"$d/log/munged.stderr" 2>&1 ||
        { _slurm_fail "munged failed to start"; return 1; }

    # --- slurm.conf ------------------------------------------------------------
    local extra_node=""
    if ((cpus > $(nproc))); then
        extra_node="SlurmdParameters=config_overrides"
    fi
    cat >"$d/slurm.conf" <<EOF
# generated by tests/slurm/cluster.sh
ClusterName=harness
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge-run/munge.sock,cred_expire=$cred_expire
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=$debug
SlurmdDebug=$debug
PlugStackConfig=$d/plugstack.conf
MpiDefault=pmi2
ProctrackType=$proctrack
TaskPlugin=$task_plugin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobRequeue=1
KillOnBadExit=1
KillWait=5
MinJobAge=600
ReturnToService=2
InactiveLimit=0
MailProg=/bin/true
Waittime=0
$extra_node
NodeName=$node NodeHostname=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$d/plugstack.conf"
    if [[ -n "${SLURM_HARNESS_CGROUP_CONF:-}" ]]; then
        printf '%s\n' "$SLURM_HARNESS_CGROUP_CONF" >"$d/cgroup.conf"
    fi
    export SLURM_CONF=$d/slurm.conf

    # --- daemons -----------------------------------------------------------------
    # They daemonize themselves (pid files in $d/run). SLURM_HARNESS_MARK lets
    # slurm_down find slurmstepd processes forked by this slurmd.
    env SLURM_HARNESS_MARK="$d" SLURM_CONF="$d/slurm.conf" \
        slurmctld -c -f "$d/slurm.conf" </dev/null >"$d/log/slurmctld.stderr" 2>&1 ||
        { _slurm_fail "slurmctld failed to start"; return 1; }
    env SLURM_HARNESS_MARK="$d" SLURM_CONF="$d/slurm.conf" \
        slurmd -c -f "$d/slurm.conf" -N "$node" </dev/null >"$d/log/slurmd.stderr" 2>&1 ||
        { _slurm_fail "slurmd failed to start"; return 1; }

    local t0=$SECONDS st=""
    while :; do
        st=$(sinfo -h -n "$node" -o '%t' 2>/dev/null || true)
        [[ "$st" == idle ]] && break
        if ((SECONDS - t0 >= timeout)); then
            _slurm_fail "node $node not idle after ${timeout}s (sinfo state: '${st:-no answer}')"
            return 1
        fi
        if ((SECONDS - t0 >= 2)); then
            _slurm_pid_alive "$d/run/slurmctld.pid" || { _slurm_fail "slurmctld died"; return 1; }
            _slurm_pid_alive "$d/run/slurmd.pid" || { _slurm_fail "slurmd died"; return 1; }
        fi
        sleep 0.3
    done
    _slurm_log "up: node=$node cpus=$cpus ports=$port,$((port + 1)) dir=$d ($((SECONDS - t0))s)"
}

_slurm_marked_pids() {
    # pids of processes whose environment carries SLURM_HARNESS_MARK=$1
    local p
    for p in /proc/[0-9]*; do
        if grep -qszxF "SLURM_HARNESS_MARK=$1" "$p/environ"; then
            echo "${p#/proc/}"
        fi
    done
}

slurm_down() {
    local - # keep `set +e` local to this function
    set +e +u
    local d=${SLURM_HARNESS_DIR:-}
    if [[ -z "$d" || ! -d "$d" ]]; then
        unset SLURM_HARNESS_DIR SLURM_HARNESS_NODE
        return 0
    fi
    # 1. cancel jobs and give them a moment to go away
    if _slurm_pid_alive "$d/run/slurmctld.pid"; then
        local jobs t0
        jobs=$(timeout 5 squeue -h -o '%i' 2>/dev/null)
        if [[ -n "$jobs" ]]; then
            # shellcheck disable=SC2086
            timeout 5 scancel $jobs >/dev/null 2>&1
            t0=$SECONDS
            while ((SECONDS - t0 < 10)); do
                [[ -z "$(timeout 5 squeue -h -t all -o '%i %t' 2>/dev/null | awk '$2 ~ /^(R|PD|CG|CF|S|ST|SI|RQ|RS|RH|RD|SE|SO)$/')" ]] && break
                sleep 0.3
            done
        fi
    fi
    # 2. stop daemons by pid (TERM, then KILL)
    local f pid _
    for f in "$d/run/slurmd.pid" "$d/run/slurmctld.pid" "$d/munge-run/munged.pid"; do
        _slurm_pid_alive "$f" || continue
        pid=$(<"$f")
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 50); do
            _slurm_pid_alive "$f" || break
            sleep 0.1
        done
        _slurm_pid_alive "$f" && kill -KILL "$pid" 2>/dev/null
    done
    # 3. anything still carrying our mark (slurmstepd of this slurmd)
    local left
    left=$(_slurm_marked_pids "$d")
    if [[ -n "$left" ]]; then
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null
    fi
    if [[ "${SLURM_HARNESS_KEEP:-0}" == 1 ]]; then
        _slurm_log "down; kept $d"
    else
        rm -rf "$d"
    fi
    if [[ "${SLURM_CONF:-}" == "$d/slurm.conf" ]]; then unset SLURM_CONF; fi
    unset SLURM_HARNESS_DIR SLURM_HARNESS_NODE
    return 0
}

slurm_job_field() {
    # slurm_job_field JOBID FIELD -> value of FIELD= in `scontrol show job -o`
    local line
    [[ "${1:-}" =~ ^[0-9]+(_[0-9]+)?$ ]] || { _slurm_log "slurm_job_field: bad job id '${1:-}'"; return 2; }
    line=$(scontrol show job -o "$1" 2>/dev/null) || return 1
    tr ' ' '\n' <<<"$line" | sed -n "s/^$2=//p" | head -n 1
}

_slurm_jobcomp_state() {
    # final "STATE EXIT" of JOBID from the jobcomp/filetxt log (last record)
    local f=${SLURM_HARNESS_DIR:-}/log/jobcomp.txt line
    [[ -s "$f" ]] || return 1
    line=$(grep -E "^JobId=$1 " "$f" | tail -n 1)
    [[ -n "$line" ]] || return 1
    echo "$(tr ' ' '\n' <<<"$line" | sed -n 's/^JobState=//p') $(tr ' ' '\n' <<<"$line" | sed -n 's/^ExitCode=//p')"
}

slurm_wait_job() {
    # slurm_wait_job JOBID [TIMEOUT=120] -> prints "STATE EXIT:SIG", e.g.
    # "COMPLETED 0:0", "FAILED 75:0", "CANCELLED 0:15" (EXIT:SIG as scontrol
    # shows it). Returns 1 on timeout (printing "TIMEOUT-WAITING <state> <exit>
    # Reason=...") or when the job is unknown; 2 on a malformed job id. Once
    # slurmctld has purged the job (MinJobAge=600 s), reads the jobcomp file.
    local jid=${1:-} timeout=${2:-120} t0=$SECONDS line="" state="" exitc=""
    if [[ ! "$jid" =~ ^[0-9]+(_[0-9]+)?$ ]]; then
        _slurm_log "slurm_wait_job: bad job id '$jid'"
        return 2
    fi
    local errf
    errf=$(mktemp "${SLURM_HARNESS_DIR:-${TMPDIR:-/tmp}}/.wait.XXXXXX") || return 1
    while :; do
        if line=$(scontrol show job -o "$jid" 2>"$errf"); then
            state=$(tr ' ' '\n' <<<"$line" | sed -n 's/^JobState=//p' | head -n 1)
            exitc=$(tr ' ' '\n' <<<"$line" | sed -n 's/^ExitCode=//p' | head -n 1)
            case "$state" in
                COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | BOOT_FAIL | DEADLINE | OUT_OF_MEMORY)
                    rm -f "$errf"
                    echo "$state $exitc"
                    return 0
                    ;;
            esac
        elif grep -qi 'invalid job id' "$errf"; then
            # purged from slurmctld (MinJobAge): the jobcomp record has the end
            rm -f "$errf"
            _slurm_jobcomp_state "$jid" && return 0
            _slurm_log "job $jid unknown to slurmctld"
            return 1
        fi
        # any other scontrol failure (slurmctld busy): keep polling
        if ((SECONDS - t0 >= timeout)); then
            rm -f "$errf"
            echo "TIMEOUT-WAITING ${state:-?} ${exitc:-?} Reason=$(tr ' ' '\n' <<<"$line" | sed -n 's/^Reason=//p' | head -n 1)"
            return 1
        fi
        sleep 0.25
    done
}
