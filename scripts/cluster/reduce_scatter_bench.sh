#!/usr/bin/env bash
# scclReduceScatter against MPI_Reduce_scatter_block and scclAllReduce on the emulated cluster:
# RANKS ranks, one per network namespace, links at RATE, SIZE float32 elements in each rank's
# sendbuf, interleaved rounds in one run, every rank's block checked bitwise against
# scclAllReduce's; the library's collectives over TRANSPORT (mpi or ucx). Writes
# OUT/reduce_scatter_<rate>_n<ranks>[_ucx].json. Needs root (network namespaces, tc) and a build
# in build/.
#   scripts/cluster/reduce_scatter_bench.sh [OUT] [RATE] [RANKS] [SIZE] [ITERS] [TRANSPORT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/results/reduce_scatter}
rate=${2:-1gbit}
ranks=${3:-4}
size=${4:-25000000}
iters=${5:-5}
transport=${6:-mpi}
wrap=() suffix=""
if [ "$transport" = ucx ]; then wrap=(scripts/cluster/ucx_node_env.sh) suffix=_ucx; fi
mkdir -p "$out"
C=scripts/cluster/netns_cluster.sh
$C down "$ranks"
$C up "$ranks"
trap '$C rate off '"$ranks"'; $C down '"$ranks" EXIT
$C rate "$rate" "$ranks"
$C mpirun "$ranks" -x SCCL_SOCKET_IFNAME=pv0 -x SCCL_TRANSPORT="$transport" "${wrap[@]}" \
  build/perf/reduce_scatter_perf -u elements -b "$size" -e "$size" -n "$iters" -w 1 -c 1 -T 600 \
  -J "$out/reduce_scatter_${rate}_n${ranks}${suffix}.json"
