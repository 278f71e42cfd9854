#!/usr/bin/env bash
# The momentum-correction runs of docs/results/python_convergence.md ("Momentum correction"):
# the example on 4 ranks with --momentum-correction (DGC: momentum in the hook, masked where sent;
# SGD without momentum) for micro, exdyna, topk and sidco_exp at density 0.01, seed 1; one JSON
# per run in OUT, then the table and the plot against the dense run of run_convergence.sh
# (OUT/dense.json, which must exist: momentum in the optimizer, as always for dense).
#   examples/python/run_momentum_convergence.sh [EPOCHS] [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=${1:-4}
out=${2:-$root/docs/results/python_convergence}
mkdir -p "$out"
names=""
for algorithm in micro exdyna topk sidco_exp; do
  name=momentum_${algorithm}_0.01
  echo "== $name" >&2
  "$root/examples/python/run_example.sh" --algorithm "$algorithm" --density 0.01 \
    --epochs "$epochs" --seed 1 --momentum-correction --json-out "$out/$name.json"
  names="$names $name"
done
${PYTHON:-/usr/bin/python3} "$root/examples/python/plot_convergence.py" "$out/dense.json" \
  $(for n in $names; do echo "$out/$n.json"; done) --plot "${out}_momentum_${epochs}epochs.png"
