#!/usr/bin/env bash
# Trains the Fashion-MNIST example (run_example.sh, ${NPROCS:-4} ranks under mpirun) twice with
# the same seed and steps, dense and then a sparse algorithm, and prints the table of
# summary_table.py: per run test accuracy, bytes sent per rank and step, how many times fewer
# than dense, density reached. The sparse run's arguments come first, then "--" and the
# arguments of both runs:
#   examples/python/compare_with_dense.sh --algorithm micro --density 0.01 --momentum-correction \
#     -- --epochs 1
# Each run's output goes to a log, shown when the run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sparse=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sparse+=("$1"); shift; done
[ $# -gt 0 ] && shift
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
train() {  # name, then the example's arguments
  local name=$1 started=$SECONDS
  shift
  echo "training $name ..."
  "$here/run_example.sh" --json-out "$runs/$name.json" "$@" > "$runs/$name.log" 2>&1 ||
    { cat "$runs/$name.log"; exit 1; }
  echo "  done in $((SECONDS - started)) s"
}
train dense "$@" --algorithm dense
name=exdyna  # the example's default algorithm
for ((i = 0; i + 1 < ${#sparse[@]}; i++)); do
  if [ "${sparse[i]}" = --algorithm ]; then name=${sparse[i + 1]}; fi
done
if [ "$name" = dense ]; then name=dense_again; fi  # its own JSON: the table reads both
train "$name" "$@" "${sparse[@]}"
"${PYTHON:-/usr/bin/python3}" "$here/summary_table.py" "$runs/dense.json" "$runs/$name.json"
