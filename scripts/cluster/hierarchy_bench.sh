#!/usr/bin/env bash
# Flat against hierarchical ("hierarchy": "node") sparse all-reduce on the emulated cluster with
# several ranks per node: NODES namespaces of PER_NODE ranks each (inside a node loopback,
# unshaped; between nodes links at RATE), SIZE float32, density DENSITY. PAIRS alternating pairs
# of runs (flat first in odd pairs), each: sparse_allreduce_perf rows micro and exdyna, plus dense
# and MPI_Allreduce in the flat runs; every row checked. Writes
# OUT/hier_<nodes>x<per_node>_<rate>_d<density>_{flat,node}_pair<p>.json and prints each pair's
# flat/hierarchical time ratios. Needs root (network namespaces, tc) and a build in build/.
#   scripts/cluster/hierarchy_bench.sh [OUT] [NODES] [PER_NODE] [RATE] [SIZE] [DENSITY] [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/results/hierarchy}
nodes=${2:-2}
per_node=${3:-2}
rate=${4:-1gbit}
size=${5:-25000000}
density=${6:-0.01}
pairs=${7:-2}
mkdir -p "$out"
C=scripts/cluster/netns_cluster.sh
$C down "$nodes"
$C up "$nodes"
trap '$C rate off '"$nodes"'; $C down '"$nodes" EXIT
$C rate "$rate" "$nodes"
flat_config=$(mktemp /tmp/sccl_flat.XXXXXX.json)
node_config=$(mktemp /tmp/sccl_node.XXXXXX.json)
echo '{"hierarchy": "flat"}' > "$flat_config"
echo '{"hierarchy": "node"}' > "$node_config"
tag="hier_${nodes}x${per_node}_${rate}_d${density}"
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) = 1 ]; then order="flat node"; else order="node flat"; fi
  for mode in $order; do
    rows=micro,exdyna
    config=$node_config
    if [ "$mode" = flat ]; then rows=dense,micro,exdyna,mpi_allreduce config=$flat_config; fi
    echo "== pair $pair $mode $(date +%T)"
    SCCL_CLUSTER_RANKS_PER_NODE=$per_node $C mpirun "$nodes" -x SCCL_SOCKET_IFNAME=pv \
      build/perf/sparse_allreduce_perf -u elements -b "$size" -e "$size" -D "$density" \
      -a "$rows" -n 5 -w 2 -c 1 -T 600 -C "$config" \
      -J "$out/${tag}_${mode}_pair$pair.json" | grep -v "^# [a-z]"
  done
done
rm -f "$flat_config" "$node_config"
python3 - "$out" "$tag" "$pairs" <<'PY'
import json, statistics, sys
out, tag, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rows(mode, p):
    return {r["algorithm"]: r for r in json.load(open(f"{out}/{tag}_{mode}_pair{p}.json"))["results"]}
for alg in ("micro", "exdyna"):
    ratios = []
    for p in range(1, pairs + 1):
        f, n = rows("flat", p), rows("node", p)
        ratios.append(f[alg]["time_us"] / n[alg]["time_us"])
    print(f"{alg}: flat / hierarchical time per pair {[round(r, 3) for r in ratios]}, "
          f"median {statistics.median(ratios):.3f}")
PY
