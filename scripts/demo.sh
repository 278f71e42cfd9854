#!/usr/bin/env bash
# The main job on this machine's defaults (CPU, local ranks): builds, prints what sparsecoll is
# (sccl_info), runs the four-rank C example, and measures the selection primitive against a
# streaming read and an exact top-k (perf/select_perf at 26M float32).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${SCCL_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" > "$build_dir.log" 2>&1 || { cat "$build_dir.log"; exit 1; }
"$build_dir/tools/sccl_info"
echo
"$build_dir/examples/sccl_example_allreduce"
echo
"$build_dir/perf/select_perf" "$@"
