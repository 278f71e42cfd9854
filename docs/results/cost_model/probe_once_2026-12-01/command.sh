#!/bin/bash
# auto's creation on the emulated cluster: the first sparsifier on a communicator probes, later ones
# reuse the probe; "given": SCCL_LINK_LATENCY_NS and SCCL_LINK_RATE_MBITS replace it. Run from the
# repository root as root (netns_cluster.sh), after scripts/build.sh.
cd "$(dirname "$0")/../../../.."
C=scripts/cluster/netns_cluster.sh
for N in 4 8; do
  bash $C down $N >/dev/null 2>&1
  bash $C up $N >/dev/null && bash $C rate 1gbit $N >/dev/null
  for mode in probed given; do
    for run in 1 2; do
      extra=""
      [ $mode = given ] && extra="-x SCCL_LINK_LATENCY_NS=150000 -x SCCL_LINK_RATE_MBITS=1000"
      echo "=== N=$N mode=$mode run=$run"
      bash $C mpirun $N -x SCCL_CPU_THREADS=1 -x SCCL_SOCKET_IFNAME=pv0 -x SCCL_DEBUG=INFO $extra \
        bash -c 'exec taskset -c $((OMPI_COMM_WORLD_RANK % 2)) build/perf/sparse_allreduce_perf -u elements -b 1M -e 4M -f 2 -D 0.01 -a auto -n 3 -w 2 -W 5 -L 50 -c 0 -P 1' 2>&1 \
        | grep -E "^# setup of|auto chose|link probe" | sed -E 's/^[^ ]+ \[sccl INFO COLL\] [a-z_.]+:[0-9]+ //' > docs/results/cost_model/probe_once_2026-12-01/reuse_N${N}_${mode}_${run}.txt; grep -E "^# setup" docs/results/cost_model/probe_once_2026-12-01/reuse_N${N}_${mode}_${run}.txt
    done
  done
  bash $C down $N >/dev/null 2>&1
done
