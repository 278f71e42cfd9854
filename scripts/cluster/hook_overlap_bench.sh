#!/usr/bin/env bash
# The asynchronous DDP hook against the synchronous one on rate-limited links: one rank per
# emulated node (netns_cluster.sh), each running perf/training/hook_overlap.py (two DDP copies of
# one MLP, sync and async hook, interleaved rounds on the same data; gloo sets DDP up, sparsecoll
# carries the gradients over UCX on the node's link).
#
#   scripts/cluster/hook_overlap_bench.sh [--nodes 4] [--rates "100mbit 250mbit 1gbit"]
#       [--algorithm micro] [--density 0.1] [--width 768] [--depth 6] [--batch 64] [--bucket-mb 2.5]
#       [--rounds 4] [--steps 8] [--out DIR] [--build DIR]
#
# Needs root (namespaces, tc), /usr/bin/python3 with torch, and a build with UCX. Writes
# DIR/hook_overlap_{rate}.json per link rate and prints one line each; everything it creates is
# removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster="$here/netns_cluster.sh"
# shellcheck source=scripts/cluster/cluster_lib.sh
. "$here/cluster_lib.sh"
out="$root/results/hook_overlap"
build="${SCCL_BUILD_DIR:-$root/build}"
nodes=4 rates="100mbit 250mbit 1gbit" algorithm=micro density=0.1 width=768 depth=6 batch=64
bucket_mb=2.5
rounds=4 steps=8

while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --algorithm) algorithm=$2; shift 2 ;;
    --density) density=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --bucket-mb) bucket_mb=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "hook_overlap_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
cluster_require hook_overlap_bench
mkdir -p "$out"
cluster_down_on_exit "$nodes"

"$cluster" up "$nodes"
for rate in $rates; do
  "$cluster" rate "$rate" "$nodes"
  pids=()
  for i in $(seq 0 $((nodes - 1))); do
    cluster_python "$i" 1200 -- "$root/perf/training/hook_overlap.py" --rank "$i" \
      --world "$nodes" --master 10.77.0.1 --algorithm "$algorithm" \
      --density "$density" --width "$width" --depth "$depth" --batch "$batch" --bucket-mb "$bucket_mb" \
      --rounds "$rounds" --steps "$steps" --json "$out/hook_overlap_${rate}.json" &
    pids+=($!)
  done
  cluster_wait "hook_overlap ($rate)" "${pids[@]}"
  echo "== $rate links: $out/hook_overlap_${rate}.json"
  "$cluster" rate off "$nodes"
done
