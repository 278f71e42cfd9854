#!/usr/bin/env bash
# Sparse all-reduce over UCX against the same over MPI on the emulated 1 Gbit/s cluster
# (docs/results/ucx.md): PAIRS alternating pairs of runs (UCX first in odd pairs, MPI first in
# even ones, so that a drift in the machine's load does not favour one transport), 4 ranks, 25M
# float32, density 0.01, topk and exdyna, 20 timed calls each, every row checked. Writes
# OUT/ucx_cluster_1gbit_n4_<transport>_pair<p>.json and prints the per-pair ratios and their
# median. Needs root (network namespaces) and a build in build/.
#   scripts/cluster/ucx_vs_mpi_pairs.sh [OUT] [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/results}
pairs=${2:-4}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C=scripts/cluster/netns_cluster.sh
$C up 4
trap '$C rate off 4; $C down 4' EXIT
$C rate 1gbit 4
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) = 1 ]; then order="ucx mpi"; else order="mpi ucx"; fi
  for tr in $order; do
    echo "== pair $pair transport $tr $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    $C mpirun 4 -x SCCL_CPU_THREADS=1 -x SCCL_SOCKET_IFNAME=pv0 -x SCCL_TRANSPORT=$tr \
      scripts/cluster/ucx_node_env.sh build/perf/sparse_allreduce_perf -u elements -b 25000000 \
      -e 25000000 -D 0.01 -a topk,exdyna -n 20 -w 2 -W 20 -L 200 -c 1 \
      -J "$out/ucx_cluster_1gbit_n4_${tr}_pair$pair.json" | grep -v "^#"
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
rows = {}
for p in range(1, pairs + 1):
    for tr in ("ucx", "mpi"):
        for r in json.load(open(f"{out}/ucx_cluster_1gbit_n4_{tr}_pair{p}.json"))["results"]:
            rows.setdefault(r["algorithm"], {}).setdefault(p, {})[tr] = r
for alg, by_pair in rows.items():
    ratios = []
    for p in sorted(by_pair):
        u, m = by_pair[p]["ucx"], by_pair[p]["mpi"]
        ratios.append(u["time_us"] / m["time_us"])
        print(f"{alg:7s} pair {p}: ucx {u['time_us'] / 1e3:7.1f} ms (comm {u['comm_us'] / 1e3:6.1f}) "
              f"mpi {m['time_us'] / 1e3:7.1f} ms (comm {m['comm_us'] / 1e3:6.1f}) ucx/mpi {ratios[-1]:.2f}")
    print(f"{alg:7s} median ucx/mpi over {len(ratios)} pairs: {statistics.median(ratios):.2f}")
PY
