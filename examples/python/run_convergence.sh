#!/usr/bin/env bash
# The convergence experiment of docs/results/python_convergence.md: the example on 4 ranks with
# dense, topk, micro, exdyna and sidco_exp at density 0.01 and exdyna at 0.001, same seed and
# epochs; one JSON per run in OUT, then the table and the plot.
#   examples/python/run_convergence.sh [EPOCHS] [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-4}
out=${2:-$root/docs/results/python_convergence}
mkdir -p "$out"
run() {  # name algorithm density [extra args]
  local name=$1 algorithm=$2 density=$3; shift 3
  echo "== $name" >&2
  "$root/examples/python/run_example.sh" --algorithm "$algorithm" --density "$density" \
    --epochs "$epochs" --seed 1 --json-out "$out/$name.json" "$@"
}
run dense dense 1.0
run topk_0.01 topk 0.01
run micro_0.01 micro 0.01
run exdyna_0.01 exdyna 0.01
run sidco_exp_0.01 sidco_exp 0.01
run exdyna_0.001 exdyna 0.001
names="dense topk_0.01 micro_0.01 exdyna_0.01 sidco_exp_0.01 exdyna_0.001"
${PYTHON:-/usr/bin/python3} "$root/examples/python/plot_convergence.py" \
  $(for n in $names; do echo "$out/$n.json"; done) --plot "$out.png"
