#!/bin/bash
# The calibration's cost with 4 in-process ranks (no network), this build against a baseline
# build, 8 runs each, interleaved: every rank's "calibration" (rank 0 calibrates, the others wait
# for its broadcast), medians. BASE=/tmp/base47/build bash .../in_process.sh
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
: "${BASE:?BASE=the baseline build folder}"
for i in 1 2 3 4 5 6 7 8; do
  for which in base new; do
    perf=build/perf/sparse_allreduce_perf
    [ $which = base ] && perf=$BASE/perf/sparse_allreduce_perf
    SCCL_CPU_THREADS=1 SCCL_DEBUG=INFO $perf -u elements -b 1M -e 1M -D 0.01 -a auto -n 1 -w 1 -c 0 2>&1 \
      | grep -o "calibration [0-9.]*)" | tr -d ')' | sed "s/^/$which /"
  done
done | python3 -c "
import sys, statistics
d = {}
for line in sys.stdin:
    which, _, v = line.split()
    d.setdefault(which, []).append(float(v))
for which, v in sorted(d.items()):
    print(f'{which}: {len(v)} values, median {statistics.median(v):.1f} ms, min {min(v):.1f}, max {max(v):.1f}')
" | tee "$here/in_process.txt"
