#!/usr/bin/env bash
# Wall-clock time to accuracy of real DDP training on rate-limited links: DDP's own gloo
# all-reduce against sparsecoll's hook (synchronous, asynchronous, and with "hierarchy": "node"),
# --per-node ranks per emulated node (netns_cluster.sh; default one, loopback inside a node), each
# running perf/training/train_bench.py; then a table and plots (perf/training/train_summary.py).
#
#   scripts/cluster/train_bench.sh [--nodes 4] [--per-node 1] [--rates "1gbit 10gbit off"] [--epochs 2]
#       [--seeds "0"] [--modes "dense sparse sparse_async sparse_node"] [--algorithm micro] [--density 0.01]
#       [--model wide_mlp|pixel_embedding] [--target A] [--stop-at-target] [--max-steps N] [--plain-hook]
#       [--out DIR] [--build DIR]
#
# --stop-at-target ends each run at the first evaluation that reaches the target (time to train,
# as MLPerf measures it; --epochs then only bounds a run). A rate "off" runs on unshaped links. Needs root (namespaces, tc), /usr/bin/python3 with torch
# and matplotlib, the Fashion-MNIST data (Debian dataset-fashion-mnist) and a build with UCX.
# Writes DIR/run_{rate}_{mode}_s{seed}.json, DIR/summary.json, DIR/summary.md and DIR/*.png;
# everything it creates in the kernel is removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster="$here/netns_cluster.sh"
# shellcheck source=scripts/cluster/cluster_lib.sh
. "$here/cluster_lib.sh"
out="$root/results/train_bench"
build="${SCCL_BUILD_DIR:-$root/build}"
nodes=4 per_node=1 rates="1gbit 10gbit off" epochs=2 seeds="0" modes="dense sparse sparse_async"
algorithm=micro density=0.01 model=wide_mlp target="" max_steps=0 plain=() stop=()

while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --per-node) per_node=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --algorithm) algorithm=$2; shift 2 ;;
    --density) density=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --max-steps) max_steps=$2; shift 2 ;;
    --plain-hook) plain=(--plain-hook); shift ;;
    --stop-at-target) stop=(--stop-at-target); shift ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "train_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
cluster_require train_bench
mkdir -p "$out"
cluster_down_on_exit "$nodes"

"$cluster" up "$nodes"
for rate in $rates; do
  "$cluster" rate "$rate" "$nodes"
  for seed in $seeds; do
    for mode in $modes; do
      json="$out/run_${rate}_${mode}${plain:+_plain}_s${seed}.json"
      extra=()
      [ -n "$target" ] && extra=(--target "$target")
      pids=()
      world=$((nodes * per_node))
      for i in $(seq 0 $((nodes - 1))); do
        for j in $(seq 0 $((per_node - 1))); do
          # Ranks of one namespace are consecutive: SCCL_RANKS_PER_NODE groups them into its node.
          cluster_python "$i" 3600 SCCL_RANKS_PER_NODE="$per_node" -- \
            "$root/perf/training/train_bench.py" --rank $((i * per_node + j)) --world "$world" \
            --master 10.77.0.1 --mode "$mode" --algorithm "$algorithm" --density "$density" \
            --epochs "$epochs" --seed "$seed" --model "$model" --max-steps "$max_steps" \
            --json "$json" "${extra[@]}" "${plain[@]}" "${stop[@]}" &
          pids+=($!)
        done
      done
      cluster_wait "train_bench ($rate $mode)" "${pids[@]}"
    done
  done
  "$cluster" rate off "$nodes"
done
/usr/bin/python3 "$root/perf/training/train_summary.py" "$out"
