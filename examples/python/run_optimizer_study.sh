#!/usr/bin/env bash
# Dense against sparse (micro, exdyna at density 0.01) for five optimizers on the Fashion-MNIST
# CNN, 4 ranks, then the table and plot of docs/results/adaptive_optimizers.md.
#
#   examples/python/run_optimizer_study.sh OUT_DIR [--seeds "1 2 3"] [--epochs 4]
#
# Per optimizer the learning rate a user would pick for dense, and for the sparse runs the
# library's recommended setting (docs/python.md, "Adaptive optimizers"):
#   sgd           lr 0.05, no momentum            sparse: error feedback as is
#   sgd_momentum  lr 0.05, momentum 0.9           sparse: DGC momentum correction in the hook,
#                                                 Nesterov form (--nesterov: g + m u is sent),
#                                                 its momentum warmed up from 0.5 over the first
#                                                 936 steps (2 epochs; --momentum-warmup 0.5,936)
#   adam          lr 0.001                        sparse: Adam's rule in the hook (--in-hook, the
#                                                 hook's b1 = 0: the residual is the momentum),
#                                                 each rank sending at most 2x its share of k
#                                                 (max_density_slack 1: the hook's first Adam
#                                                 updates are all about 1 in size (g / |g|), a tie
#                                                 no threshold splits)
#   adamw         lr 0.001, weight decay 0.01     sparse: the same, decay in the SGD step
#   adadelta      lr 1.0, StepLR 0.7 per epoch    sparse: Adadelta's rule in the hook
# and every sparse run a density warm-up from 0.1 over the first 150 steps (exponential).
# Each run writes OUT_DIR/opt_<optimizer>_<algorithm>_s<seed>.json (--json-out) and its log; a
# run whose JSON is there already is kept (delete it to run again).
# About 50 s per 4-epoch run on the idle 2-vCPU machine: 15 runs per seed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="${1:?usage: $0 OUT_DIR [--seeds \"1 2 3\"] [--epochs N]}"
shift
seeds="1"
epochs=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
warmup='"density_warmup": {"start": 0.1, "calls": 150, "form": "exponential"}'

optimizer_options() {  # the dense run's options of an optimizer
  case "$1" in
    sgd) echo "--optimizer sgd --lr 0.05 --momentum 0" ;;
    sgd_momentum) echo "--optimizer sgd --lr 0.05 --momentum 0.9" ;;
    adam) echo "--optimizer adam --lr 0.001" ;;
    adamw) echo "--optimizer adamw --lr 0.001 --weight-decay 0.01" ;;
    adadelta) echo "--optimizer adadelta --lr 1.0 --lr-step-gamma 0.7" ;;
  esac
}

sparse_options() {  # what the sparse runs add
  case "$1" in
    sgd) echo "" ;;
    sgd_momentum) echo "--momentum-correction --nesterov --momentum-warmup 0.5,936" ;;
    *) echo "--in-hook" ;;
  esac
}

sparse_config() {  # the sparse runs' library settings (JSON)
  case "$1" in
    adam | adamw) echo "{$warmup, \"max_density_slack\": 1.0}" ;;
    *) echo "{$warmup}" ;;
  esac
}

for seed in $seeds; do
  for optimizer in sgd sgd_momentum adam adamw adadelta; do
    for algorithm in dense micro exdyna; do
      name="opt_${optimizer}_${algorithm}_s${seed}"
      if [[ -f "$out/$name.json" ]]; then
        echo "$name: kept ($out/$name.json exists)"
        continue
      fi
      # shellcheck disable=SC2046  # the options are words
      set -- $(optimizer_options "$optimizer")
      if [[ $algorithm != dense ]]; then
        # shellcheck disable=SC2046
        set -- "$@" $(sparse_options "$optimizer") --config "$(sparse_config "$optimizer")"
      fi
      # A run that does not end is stopped after 15 minutes: torch 1.13's gloo group can deadlock
      # in its destructor at interpreter exit (seen once in 40 runs, after the run's JSON was
      # written); a run whose JSON was written counts, any other failure stops the study.
      timeout 900 "$root/examples/python/run_example.sh" --algorithm "$algorithm" \
          --density 0.01 --epochs "$epochs" --seed "$seed" "$@" --json-out "$out/$name.json" \
          > "$out/$name.log" 2>&1 || [[ -f "$out/$name.json" ]] || {
        echo "$name failed: $out/$name.log" >&2
        exit 1
      }
      echo "$name: $(tail -n 1 "$out/$name.log")"
    done
  done
done
/usr/bin/python3 "$root/examples/python/optimizer_table.py" "$out" \
    --plot "$out/adaptive_optimizers.png"
