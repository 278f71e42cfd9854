#!/usr/bin/env bash
# Determinism across fresh runs: runs sccl_determinism_run RUNS times as separate processes,
# alternating the CPU kernel thread count (1, 2, 3), and requires every run to print the same
# hash per preset (every run also checks that all ranks' outputs are bitwise equal).
#   check_determinism.sh BINARY RUNS [ranks count calls]
set -euo pipefail
binary=$1
runs=$2
shift 2
reference=$(SCCL_CPU_THREADS=1 "$binary" "$@")
for run in $(seq 2 "$runs"); do
  threads=$(( (run % 3) + 1 ))
  got=$(SCCL_CPU_THREADS=$threads "$binary" "$@")
  if [ "$got" != "$reference" ]; then
    echo "run $run (SCCL_CPU_THREADS=$threads) differs from run 1:"
    diff <(echo "$reference") <(echo "$got") || true
    exit 1
  fi
done
echo "$reference"
echo "determinism: $runs fresh runs, every preset bitwise identical on every rank and every run"
