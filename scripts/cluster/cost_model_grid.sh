#!/usr/bin/env bash
# Issue 25's targets in one command: "auto" against every fixed choice on the emulated cluster
# (4 and 8 ranks; 1 and 10 Gbit/s; 1M float32 at density 0.1, 0.01, 0.001 and 25M at 0.01, 0.001),
# then the cost model's 4-rank fit checked at 8 ranks.
#
#   scripts/cluster/cost_model_grid.sh OUT_DIR [--build DIR]
#
# Writes OUT_DIR/perf_*.json and latency_*.json (emulated_cluster_bench.sh), bench_*.log,
# auto_vs_fixed.md and .json (auto_vs_fixed.py), check_n4_*.json, check_n8_*.json and .md
# (cost_model_check.py, the 8-rank ones fitted from the 4-rank ones) and fit_summary.txt.
# About 13 minutes on the idle 2-vCPU machine; needs root, like emulated_cluster_bench.sh.
# docs/results/cost_model.md has the results and what they mean.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="${1:?usage: $0 OUT_DIR [--build DIR]}"
shift
build="${SCCL_BUILD_DIR:-$root/build}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
export SCCL_BUILD_DIR="$build"
algorithms=dense,topk,cltk,micro,exdyna,sidco,s2,auto
# 25M at density 0.1 is left out: its Top-k and SIDCo rows alone take over 10 minutes per cell.
for grid in "1048576 0.1,0.01,0.001" "25000000 0.01,0.001"; do
  read -r size densities <<< "$grid"
  "$here/emulated_cluster_bench.sh" --out "$out/bench_$size" --nodes "4 8" \
      --rates "1gbit 10gbit" --sizes "$size" --densities "$densities" --no-gloo \
      --algorithms "$algorithms" --build "$build" > "$out/bench_$size.log" 2>&1
  cp "$out/bench_$size"/perf_*.json "$out/bench_$size"/latency_*.json "$out/"
  cp "$out/bench_$size/summary.json" "$out/summary_$size.json"
done
python3 "$here/auto_vs_fixed.py" "$out" --markdown "$out/auto_vs_fixed.md" \
    --json "$out/auto_vs_fixed.json"

# The model's local work is calibrated with one kernel thread per rank, as the cluster's ranks ran;
# the links are given at their nominal rate, so the transport's share of the cores is charged
# (--transport-shares-cores).
for rate in 1gbit 10gbit; do
  for size in 1048576 25000000; do
    SCCL_CPU_THREADS=1 python3 "$root/scripts/cost_model_check.py" \
        "$out/perf_n4_${rate}_${size}.json" --gbits "${rate%gbit}" \
        --latency "$out/latency_n4_${rate}.json" --ranks-per-machine 2 --transport-shares-cores \
        --build "$build" \
        --out "$out/check_n4_${rate}_${size}.json" > "$out/check_n4_${rate}_${size}.md"
    SCCL_CPU_THREADS=1 python3 "$root/scripts/cost_model_check.py" \
        "$out/perf_n8_${rate}_${size}.json" --gbits "${rate%gbit}" \
        --latency "$out/latency_n8_${rate}.json" --ranks-per-machine 4 --transport-shares-cores \
        --build "$build" \
        --fit-from "$out/check_n4_${rate}_${size}.json" \
        --out "$out/check_n8_${rate}_${size}.json" > "$out/check_n8_${rate}_${size}.md"
  done
done
python3 "$here/fit_summary.py" "$out"/check_n8_*.json | tee "$out/fit_summary.txt"
