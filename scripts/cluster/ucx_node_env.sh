#!/bin/sh
# Runs a command inside an emulated-cluster node (netns_cluster.sh) with UCX restricted to the
# node's own link: UCX_NET_DEVICES = the node's pv<i> device (each namespace has exactly one),
# UCX_TLS = self,tcp. Without it UCX would also offer the namespace's private loopback.
#   netns_cluster.sh mpirun 4 -x SCCL_TRANSPORT=ucx -x SCCL_SOCKET_IFNAME=pv0 \
#       scripts/cluster/ucx_node_env.sh build/perf/sparse_allreduce_perf ...
dev=$(ls /sys/class/net | grep '^pv' | head -1)
[ -n "$dev" ] || { echo "ucx_node_env: no pv<i> device in this namespace" >&2; exit 2; }
export UCX_NET_DEVICES="$dev" UCX_TLS="${UCX_TLS:-self,tcp}" UCX_WARN_UNUSED_ENV_VARS=n
exec "$@"
