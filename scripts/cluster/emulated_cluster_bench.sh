#!/usr/bin/env bash
# The emulated-cluster benchmark: sparsecoll's sparse all-reduce, its dense all-reduce, Open
# MPI's MPI_Allreduce and PyTorch gloo (dense and top-k sparse) on the same rate-limited links,
# one rank per network namespace (netns_cluster.sh), written as JSON and plotted.
#
#   scripts/cluster/emulated_cluster_bench.sh [--quick] [--out DIR] [--nodes "4 8"]
#       [--rates "1gbit 2gbit 10gbit"] [--sizes LIST] [--densities LIST] [--algorithms LIST]
#       [--iters N] [--no-gloo] [--pin] [--build DIR]
#
# --quick: 4 nodes, 1 Gbit/s, 25M float32, densities 0.01 and 0.001 (the targets' setting).
# Default: nodes 4 and 8, links 1, 2 and 10 Gbit/s, sizes 1M, 4M, 16M and 64M elements plus
# ResNet-50's gradient (25,557,032) and one BERT-base encoder layer (7,087,872), densities 0.1,
# 0.01, 0.001. Needs root (namespaces, tc) and a build with MPI; everything it creates is removed
# on exit, also on Ctrl-C. Output: DIR/perf_n{N}_{rate}_{size}.json (sparse_allreduce_perf -J),
# DIR/gloo_n{N}_{rate}_{size}.json, DIR/latency_n{N}_{rate}.json, DIR/summary.json and PNGs.
# --pin: sparsecoll's rank i runs on logical CPU i mod (the machine's CPUs) (taskset), so that every
# core holds n / cores ranks, as the cost model's ranks per core assume; cost_model_grid.sh pins
# by default (docs/results/cost_model.md, cluster_2026-11-29_pinned). Unpinned, the ranks move
# between the cores as the kernel balances them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster="$here/netns_cluster.sh"
# shellcheck source=scripts/cluster/cluster_lib.sh
. "$here/cluster_lib.sh"
out="$root/results/emulated_cluster"
build="${SCCL_BUILD_DIR:-$root/build}"
nodes="4 8"
rates="1gbit 2gbit 10gbit"
sizes="1048576 4194304 16777216 67108864 25557032 7087872"
densities="0.1,0.01,0.001"
algorithms="dense,mpi_allreduce,topk,micro,exdyna,sidco,s2"
iters=5
gloo=1
pin=0

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) nodes="4"; rates="1gbit"; sizes="25000000"; densities="0.01,0.001"; shift ;;
    --out) out=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --densities) densities=$2; shift 2 ;;
    --algorithms) algorithms=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --no-gloo) gloo=0; shift ;;
    --pin) pin=1; shift ;;
    --build) build=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "emulated_cluster_bench: unknown option $1" >&2; exit 2 ;;
  esac
done

perf="$build/perf/sparse_allreduce_perf"
[ -x "$perf" ] || { echo "emulated_cluster_bench: build first ($perf missing)" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "emulated_cluster_bench: needs root and ip netns; skipped" >&2
  exit 3
fi
if [ "$gloo" = 1 ] && ! /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
  echo "emulated_cluster_bench: /usr/bin/python3 has no torch (Debian python3-torch): gloo peer skipped"
  gloo=0
fi
mkdir -p "$out"
launch=("$perf")
if [ "$pin" = 1 ]; then
  cpus=$(nproc)
  # OMPI_COMM_WORLD_RANK is set by mpirun in every rank's environment.
  launch=(/bin/sh -c 'exec taskset -c $((OMPI_COMM_WORLD_RANK % '"$cpus"')) "$0" "$@"' "$perf")
fi
max_nodes=0
for n in $nodes; do (( n > max_nodes )) && max_nodes=$n; done
cluster_down_on_exit "$max_nodes"

start=$(date +%s)
for n in $nodes; do
  "$cluster" up "$n"
  for rate in $rates; do
    "$cluster" rate "$rate" "$n"
    # The links' own latency (no netem here): node 0 to node 1.
    ip netns exec sccl_ns1 /usr/bin/python3 "$here/link_latency.py" serve 29500 &
    ip netns exec sccl_ns0 /usr/bin/python3 "$here/link_latency.py" ping 10.77.0.2 29500 2000 \
      > "$out/latency_n${n}_${rate}.json"
    wait
    echo "== $n nodes, $rate links, latency $(cat "$out/latency_n${n}_${rate}.json")"
    for size in $sizes; do
      tag="n${n}_${rate}_${size}"
      "$cluster" mpirun "$n" -x SCCL_CPU_THREADS=1 -x SCCL_SOCKET_IFNAME=pv0 \
        "${launch[@]}" -u elements -b "$size" -e "$size" -D "$densities" -a "$algorithms" \
        -n "$iters" -w 2 -W 20 -L 200 -c 1 -T 300 -J "$out/perf_${tag}.json" |
        grep -v '^# \(host\|cpu\|logical\|vector\)' || { echo "perf failed ($tag)" >&2; exit 1; }
      if [ "$gloo" = 1 ]; then
        pids=()
        for i in $(seq 0 $((n - 1))); do
          ip netns exec "sccl_ns$i" env GLOO_SOCKET_IFNAME="pv$i" timeout 900 /usr/bin/python3 "$root/perf/peers/gloo_peer.py" --rank "$i" \
            --world "$n" --master 10.77.0.1 --count "$size" --densities "$densities" \
            --iters "$iters" --json "$out/gloo_${tag}.json" &
          pids+=($!)
        done
        cluster_wait "gloo peer ($tag)" "${pids[@]}"
      fi
    done
    "$cluster" rate off "$n"
  done
  "$cluster" down "$n"
done
/usr/bin/python3 "$here/summarize_cluster_bench.py" "$out"
echo "emulated_cluster_bench: done in $(( $(date +%s) - start )) s; results in $out"
