#!/usr/bin/env bash
# The main job on this machine's defaults (CPU, in-process ranks): builds, prints what sparsecoll
# is (the top of sccl_info), then compares every sparse all-reduce algorithm with the dense
# all-reduce on 4 ranks (perf/sparse_allreduce_perf, 8M float32, density 1 %; about a minute on
# a 2-core machine), and finishes with the selection primitive against a streaming read
# (perf/select_perf, a few seconds). Arguments go to sparse_allreduce_perf (e.g. -D 0.01,0.001).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${SCCL_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
echo "demo: building in $build_dir (log: $build_dir.log)"
"$root/scripts/build.sh" > "$build_dir.log" 2>&1 || { cat "$build_dir.log"; exit 1; }
# Everything above the list of settings (`sccl_info` alone prints the list too). awk reads to
# the end, so sccl_info never meets a closed pipe (pipefail would report that as a failure).
"$build_dir/tools/sccl_info" | awk '/^# settings/ { stop = 1 } !stop'
echo
cat <<'EOF'
== Sparse all-reduce vs dense: 4 ranks (threads of this process), 8,388,608 float32 (32 MiB) ==
Each rank holds a synthetic gradient (Laplace-distributed values, fresh every call). "dense"
all-reduces all of it; every other algorithm sends only about 1 % of the entries (density 0.01)
and keeps the rest in an error-feedback residual for later calls. Per row: time = median
duration of one call (lower is better); speedup = dense time / this time (above 1: faster than
dense); actual = fraction of entries that were really aggregated (topk sends up to 4x the
target because each rank picks its own top 1 %; hard_threshold's fixed threshold overshoots
more; s2 sends a count sketch of whole 32-element blocks, so its actual counts the entries of
the blocks it marked, and err is the sketch's decode error, relative L2); sent/recv = bytes per
rank per call; f(t) = padding waste of the index exchange (1 = none);
select/comm/other = where a call spends its time; #wrong = entries that differ from an
independent reference (0 expected). With 4 ranks sharing 2 cores the times are CPU-bound: the
bytes are what shrinks on a real network. Warm-up lets each algorithm's threshold settle first.
EOF
"$build_dir/perf/sparse_allreduce_perf" -r 4 -u elements -b 8M -e 8M -D 0.01 -n 10 "$@"
echo
echo "== The selection primitive (scclPartitionedSelect) vs a streaming read and an exact top-k =="
"$build_dir/perf/select_perf"
