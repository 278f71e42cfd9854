#!/usr/bin/env bash
# An emulated cluster on one machine: N network namespaces ("nodes") joined by a bridge, with
# rate-limited links, and an mpirun that starts one rank in each node.
#
#   netns_cluster.sh up N          create nodes sccl_ns0..N-1 (10.77.0.1..N) and the hub
#                                  namespace sccl_hub (bridge br0, 10.77.0.254)
#   netns_cluster.sh rate RATE N   shape every node's link both ways (tc tbf), e.g. 1gbit; "off"
#   netns_cluster.sh down N        delete everything `up` created (safe to call twice)
#   netns_cluster.sh mpirun N ARGS run `mpirun ARGS` with one rank per node (from inside sccl_hub);
#                                  SCCL_CLUSTER_RANKS_PER_NODE=R starts R ranks in every node
#                                  (ranks R i .. R i + R - 1 in node i; between them loopback,
#                                  unshaped; each node has its own host name, so the library's
#                                  node detection groups them)
#   netns_cluster.sh status        list the namespaces of this script
#
# Only 10.77.0.0/24 inside the namespaces and loopback are used. Needs root (ip netns, tc).
# Why each piece is there (docs/results/performance.md summarises the recipe): mpirun cannot reach its PMIx server from inside a
# namespace, so it runs in the hub and starts each orted through a fake ssh
# (netns_rsh.sh) inside its node and its own UTS namespace; busy polling starves the veth
# softirq on small machines, so MPI yields when idle. Every orted sees one slot on a whole
# machine, so Open MPI's default binding would put each node's rank on the same core (core 0 for
# 2 ranks or fewer, socket 0 above): --bind-to none leaves the placement to the kernel, and
# emulated_cluster_bench.sh --pin spreads the ranks over the cores. These kernels have no netem:
# links have a rate but no added delay; their latency is what they measure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
subnet_prefix=10.77.0

die() { echo "netns_cluster: $*" >&2; exit 2; }
need_count() { [[ "${1:-}" =~ ^[1-9][0-9]?$ ]] && (( $1 <= 64 )) || die "node count must be 1..64 (got '${1:-}')"; }

up() {
  local n=$1
  ip netns add sccl_hub
  ip -n sccl_hub link set lo up
  ip -n sccl_hub link add br0 type bridge
  ip -n sccl_hub addr add ${subnet_prefix}.254/24 dev br0
  ip -n sccl_hub link set br0 up
  for i in $(seq 0 $((n - 1))); do
    ip netns add sccl_ns$i
    ip link add pv$i netns sccl_ns$i type veth peer name pb$i netns sccl_hub
    ip -n sccl_hub link set pb$i master br0 up
    ip -n sccl_ns$i addr add ${subnet_prefix}.$((i + 1))/24 dev pv$i
    ip -n sccl_ns$i link set pv$i up
    ip -n sccl_ns$i link set lo up
  done
}

down() {
  local n=$1
  for i in $(seq 0 $((n - 1))); do ip netns del sccl_ns$i 2>/dev/null || true; done
  # Nodes left over from a larger run are removed too.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^sccl_ns[0-9]+$' || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip netns del sccl_hub 2>/dev/null || true
}

rate() {
  local r=$1 n=$2
  for i in $(seq 0 $((n - 1))); do
    if [ "$r" = off ]; then
      tc -n sccl_ns$i qdisc del dev pv$i root 2>/dev/null || true
      tc -n sccl_hub qdisc del dev pb$i root 2>/dev/null || true
    else
      tc -n sccl_ns$i qdisc replace dev pv$i root tbf rate "$r" burst 1mb latency 100ms  # egress
      tc -n sccl_hub qdisc replace dev pb$i root tbf rate "$r" burst 1mb latency 100ms   # ingress
    fi
  done
}

cluster_mpirun() {
  local n=$1; shift
  local hosts
  hosts=$(mktemp /tmp/sccl_hosts.XXXXXX)
  local per_node=${SCCL_CLUSTER_RANKS_PER_NODE:-1}
  [[ "$per_node" =~ ^[1-9][0-9]?$ ]] || die "SCCL_CLUSTER_RANKS_PER_NODE must be 1..99"
  for i in $(seq 1 "$n"); do echo "${subnet_prefix}.$i slots=$per_node"; done > "$hosts"
  local status=0
  ip netns exec sccl_hub env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_osc=sm,rdma,pt2pt \
    mpirun --hostfile "$hosts" -np $((n * per_node)) --map-by slot \
    --mca plm_rsh_agent "$here/netns_rsh.sh" \
    --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include ${subnet_prefix}.0/24 \
    --mca btl self,tcp --mca btl_tcp_if_include ${subnet_prefix}.0/24 \
    --mca mpi_yield_when_idle 1 --bind-to none "$@" || status=$?
  rm -f "$hosts"
  return $status
}

case "${1:-}" in
  up) need_count "${2:-}"; up "$2" ;;
  down) need_count "${2:-}"; down "$2" ;;
  rate) [ -n "${2:-}" ] || die "rate needs RATE (e.g. 1gbit) or off"; need_count "${3:-}"; rate "$2" "$3" ;;
  mpirun) need_count "${2:-}"; n=$2; shift 2; cluster_mpirun "$n" "$@" ;;
  status) ip netns list | grep -E '^sccl_(ns[0-9]+|hub)' || true ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
