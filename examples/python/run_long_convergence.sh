#!/usr/bin/env bash
# The 8-epoch runs of docs/results/python_convergence.md ("Results: 8 epochs"): dense (momentum in
# the optimizer) and micro, exdyna with DGC's momentum correction at density 0.01 for seeds 1-3;
# topk and sidco_exp with the correction and exdyna at 0.001 (gradient clipping 1.0) for seed 1.
# One JSON per run in OUT (names as seed_table.py reads them), then the per-seed table and the
# plot. About 45 minutes on an idle 2-core machine (4 ranks, 8 epochs of 15-25 s each per run).
#   examples/python/run_long_convergence.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/docs/results/python_convergence}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
run() {  # NAME SEED ARGS...
  local name=$1 seed=$2
  shift 2
  local prefix=extra_long_
  [ "$seed" != 1 ] && prefix=extra_long_s${seed}_
  echo "== $prefix$name" >&2
  "$root/examples/python/run_example.sh" --epochs 8 --seed "$seed" "$@" \
    --json-out "$out/$prefix$name.json"
}
for seed in 1 2 3; do
  run dense "$seed" --algorithm dense
  for algorithm in micro exdyna; do
    run "momentum_${algorithm}_0.01" "$seed" --algorithm "$algorithm" --density 0.01 \
      --momentum-correction
  done
done
for algorithm in topk sidco_exp; do
  run "momentum_${algorithm}_0.01" 1 --algorithm "$algorithm" --density 0.01 --momentum-correction
done
run exdyna_0.001_clip1 1 --algorithm exdyna --density 0.001 --clip-grad-norm 1.0
"$python" "$root/examples/python/seed_table.py" "$out"
"$python" "$root/examples/python/plot_convergence.py" "$out/extra_long_dense.json" \
  "$out"/extra_long_momentum_{micro,exdyna,topk,sidco_exp}_0.01.json \
  "$out/extra_long_exdyna_0.001_clip1.json" --plot "${out}_8epochs.png"
