#!/bin/bash
# auto's creation cost on the emulated cluster (1 Gbit/s, link probed), this build against a
# baseline build (BASE, the build folder of the commit before the calibration's single draw),
# interleaved run by run so that both see the same machine. Run from anywhere as root, after
# scripts/build.sh and a build of the baseline:
#   BASE=/tmp/base47/build bash docs/results/cost_model/calibration_draw_2026-12-01/command.sh
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
: "${BASE:?BASE=the baseline build folder}"
C=scripts/cluster/netns_cluster.sh
for N in 4 8; do
  bash $C down $N >/dev/null 2>&1
  bash $C up $N >/dev/null && bash $C rate 1gbit $N >/dev/null
  for run in 1 2 3; do
    for which in base new; do
      perf=build/perf/sparse_allreduce_perf
      [ $which = base ] && perf=$BASE/perf/sparse_allreduce_perf
      bash $C mpirun $N -x SCCL_CPU_THREADS=1 -x SCCL_SOCKET_IFNAME=pv0 -x SCCL_DEBUG=INFO \
        bash -c "exec taskset -c \$((OMPI_COMM_WORLD_RANK % 2)) $perf -u elements -b 1M -e 1M -D 0.01 -a auto -n 3 -w 2 -W 5 -L 50 -c 0 -P 1" 2>&1 \
        | grep -E "auto chose|link probe" | sed -E 's/^[^ ]+ \[sccl INFO COLL\] [a-z_.]+:[0-9]+ //' > "$here/N${N}_${which}_${run}.txt"
    done
  done
  bash $C down $N >/dev/null 2>&1
done
python3 "$here/summarize.py" "$here" | tee "$here/summary.txt"
