#!/usr/bin/env bash
# What "algorithm": "auto" chooses on the emulated cluster with 2 nodes of 2 ranks, 1 Gbit/s
# between nodes, 25M float32, d = 0.01: with hierarchy unset (auto prices flat and hierarchical
# forms) and with hierarchy "node" (hierarchical forms only), each next to micro and exdyna under
# the same config, in two alternating pairs. Prints sparse_allreduce_perf's rows and, with
# SCCL_DEBUG=INFO in the environment, each rank 0's "auto chose" line (the layout, both links and
# every candidate's prediction). Needs root (network namespaces, tc) and a build in build/.
#   scripts/cluster/auto_hierarchy_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
C=scripts/cluster/netns_cluster.sh
dir=$(mktemp -d /tmp/sccl_auto_hier.XXXXXX)
echo '{}' > "$dir/empty.json"
echo '{"hierarchy": "node"}' > "$dir/node.json"
debug=()
[ -n "${SCCL_DEBUG:-}" ] && debug=(-x "SCCL_DEBUG=$SCCL_DEBUG" -x SCCL_DEBUG_SUBSYS=COLL)
$C down 2 >/dev/null 2>&1; $C up 2; $C rate 1gbit 2
for mode in empty node empty node; do
  echo "== $mode $(date +%T)"
  SCCL_CLUSTER_RANKS_PER_NODE=2 $C mpirun 2 -x SCCL_SOCKET_IFNAME=pv "${debug[@]}" \
    build/perf/sparse_allreduce_perf -u elements -b 25000000 -e 25000000 -D 0.01 \
    -a auto,micro,exdyna -n 5 -w 2 -c 1 -T 600 -C "$dir/$mode.json" 2>&1 |
    grep -E "^ +[0-9]|rank 0: sparsifier of .*auto chose"
done
$C rate off 2; $C down 2
rm -rf "$dir"
