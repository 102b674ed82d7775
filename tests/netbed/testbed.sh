# shellcheck shell=bash
# tests/netbed/testbed.sh -- N "nodes" on one machine for multi-node runs: one network namespace
# per node, each joined to a bridge in a hub namespace by a veth pair whose two ends are shaped
# with tc (tbf: the node's sending and its receiving side), a host name of its own per process
# (a UTS namespace), and MPICH's Hydra launching its proxies through tests/netbed/launch, which
# enters the node's namespaces where ssh would log in. UCX runs on TCP over the node's eth0 only.
# Every address is in 10.213.0.0/24, inside namespaces this script made; nothing touches the
# host's own network.
#
#   source tests/netbed/testbed.sh
#   trap netbed_down EXIT            # also on failure; safe to call twice
#   trap 'exit 143' TERM             # (and INT): a signal would otherwise skip the EXIT trap
#   netbed_up 2 25gbit               # nodes node0 and node1, links shaped to 25 Gbit/s ("" = unshaped)
#   netbed_mpiexec 2 2 prog args...  # 2 ranks on each of the 2 nodes (mpiexec runs on node0)
#   netbed_exec 1 cmd...             # a command on node1
#
# Needs root (namespaces, tc) and the iproute2 and util-linux tools. netem is not available on
# these machines, so no latency is added: a link is its bandwidth, with the veth's own latency.
# Knobs: NETBED_PREFIX (names of this testbed's namespaces, default sgnb<pid>), NETBED_BURST_MS
# (the tbf bucket, in milliseconds of the rate, default 10).

netbed_dir() { cd "$(dirname "${BASH_SOURCE[0]}")" && pwd; }

_netbed_log() { echo "[netbed] $*" >&2; }

# Node i's address.
netbed_addr() { echo "10.213.0.$(($1 + 1))"; }

# Whether this host can make a testbed (root, network and UTS namespaces, veth, tbf).
netbed_possible() {
  [ "$(id -u)" = 0 ] || return 1
  command -v ip >/dev/null && command -v tc >/dev/null && command -v unshare >/dev/null || return 1
  unshare --uts true 2>/dev/null || return 1
  local probe="sgnbprobe$$"
  ip netns add "$probe" 2>/dev/null || return 1
  local ok=0
  ip -n "$probe" link add pa type veth peer name pb 2>/dev/null &&
    ip netns exec "$probe" tc qdisc add dev pa root tbf rate 1gbit burst 1mb latency 10ms 2>/dev/null || ok=1
  ip netns del "$probe" 2>/dev/null
  return "$ok"
}

# tc's tbf on one device of one namespace: `rate`, with a bucket of NETBED_BURST_MS of it.
_netbed_shape() {
  local ns=$1 dev=$2 rate=$3
  [ -n "$rate" ] || return 0
  local bits
  case $rate in
    *gbit) bits=$(( ${rate%gbit} * 1000000000 )) ;;
    *mbit) bits=$(( ${rate%mbit} * 1000000 )) ;;
    *) _netbed_log "rate '$rate': expected e.g. 10gbit or 500mbit"; return 1 ;;
  esac
  local burst=$(( bits / 8 * ${NETBED_BURST_MS:-10} / 1000 ))
  ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
}

# netbed_up N [RATE]: the namespaces, the bridge, N links, each shaped to RATE both ways.
netbed_up() {
  local n=$1 rate=${2:-}
  export NETBED_PREFIX=${NETBED_PREFIX:-sgnb$$} NETBED_NODES=$n NETBED_RATE=$rate
  local hub="$NETBED_PREFIX-hub"
  if ! ip netns add "$hub"; then _netbed_log "cannot create network namespaces (root needed)"; return 1; fi
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  local i
  for ((i = 0; i < n; i++)); do
    local ns="$NETBED_PREFIX-n$i"
    ip netns add "$ns" || { netbed_down; return 1; }
    ip -n "$ns" link set lo up
    # Made inside the hub, the node's end moved to its namespace and named eth0 there.
    ip -n "$hub" link add "h$i" type veth peer name "e$i" || { netbed_down; return 1; }
    ip -n "$hub" link set "e$i" netns "$ns"
    ip -n "$ns" link set "e$i" name eth0
    ip -n "$hub" link set "h$i" master br0 up
    ip -n "$ns" addr add "$(netbed_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    _netbed_shape "$ns" eth0 "$rate" && _netbed_shape "$hub" "h$i" "$rate" || { netbed_down; return 1; }
  done
  # Up when node0 reaches every node: a refused connection is an answer (no ping on these machines).
  for ((i = 1; i < n; i++)); do
    local tries=0
    until [[ $(ip netns exec "$NETBED_PREFIX-n0" timeout 1 bash -c "exec 3<>/dev/tcp/$(netbed_addr "$i")/9" 2>&1) == *refused* ]]; do
      ((++tries < 10)) || { _netbed_log "node$i does not answer"; netbed_down; return 1; }
      sleep 0.2
    done
  done
  _netbed_log "up: $n nodes, links ${rate:-unshaped}"
}

# Stops what runs in the namespaces and removes them (and with them the links); always returns 0.
netbed_down() {
  [ -n "${NETBED_PREFIX:-}" ] || return 0
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NETBED_PREFIX-" || true); do
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  return 0
}

# netbed_exec I CMD...: CMD on node I, in its network namespace and under the host name nodeI.
netbed_exec() {
  local i=$1
  shift
  ip netns exec "$NETBED_PREFIX-n$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "node$i" "$@"
}

# netbed_mpiexec NODES RANKS_PER_NODE PROG ARGS...: mpiexec on node0 with RANKS_PER_NODE ranks on each
# of nodes 0 .. NODES-1, its proxies started through tests/netbed/launch.
netbed_mpiexec() {
  local nodes=$1 per=$2
  shift 2
  local hosts="" i
  for ((i = 0; i < nodes; i++)); do hosts+="${hosts:+,}$(netbed_addr "$i"):$per"; done
  # NETBED_UCX_TCP_PUT (default unset: UCX's own default) sets UCX_TCP_PUT_ENABLE; UCX 1.13's TCP
  # puts were seen to hang MPI_Finalize (openucx/ucx#8738), which shardgnn now bounds itself.
  local put=()
  [ -z "${NETBED_UCX_TCP_PUT:-}" ] || put=(-genv UCX_TCP_PUT_ENABLE "$NETBED_UCX_TCP_PUT")
  netbed_exec 0 mpiexec -launcher rsh -launcher-exec "$(netbed_dir)/launch" -iface eth0 -hosts "$hosts" -n $((nodes * per)) \
    -genv UCX_TLS "${NETBED_UCX_TLS:-tcp,self}" -genv UCX_NET_DEVICES eth0 "${put[@]}" -genv NETBED_PREFIX "$NETBED_PREFIX" "$@"
}
