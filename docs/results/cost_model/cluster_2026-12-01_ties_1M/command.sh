#!/bin/bash
# The 1M half of scripts/cluster/cost_model_grid.sh (the same bench options), then auto_vs_fixed.py.
# Run from the repository root as root after scripts/build.sh. OUT: where to write.
OUT=${1:?usage: command.sh OUT}
mkdir -p "$OUT"
scripts/cluster/emulated_cluster_bench.sh --out "$OUT/bench_1048576" --nodes "4 8" \
  --rates "1gbit 10gbit" --sizes 1048576 --densities 0.1,0.01,0.001 --no-gloo \
  --algorithms dense,topk,cltk,micro,exdyna,sidco,s2,auto --iters 5 --pin > "$OUT/bench_1048576.log" 2>&1
cp "$OUT"/bench_1048576/perf_*.json "$OUT/"
python3 scripts/cluster/auto_vs_fixed.py "$OUT" --markdown "$OUT/auto_vs_fixed.md" --json "$OUT/auto_vs_fixed.json"
