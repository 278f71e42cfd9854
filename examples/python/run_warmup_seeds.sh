#!/usr/bin/env bash
# The momentum warm-up's seeds: the Fashion-MNIST example (4 ranks, micro at density 0.01, DGC's
# correction in Nesterov form) with the momentum warm-up alone and with the density warm-up too,
# for each seed, next to dense heavy-ball Nesterov SGD; one line per run (epoch, loss, test
# accuracy, density, bytes). What docs/results/momentum_warmup_seeds.md reports.
#   examples/python/run_warmup_seeds.sh [SEEDS (default "0 1 2 3 4 5 6 7 8 9")] [EPOCHS (1)]
#       [MOMENTUM_WARMUP (0.5,468)] [DENSITY_WARMUP_JSON ('{"start": 0.1, "calls": 150}')]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seeds=${1:-0 1 2 3 4 5 6 7 8 9}
epochs=${2:-1}
momentum_warmup=${3:-0.5,468}
density_warmup=${4:-'{"start": 0.1, "calls": 150}'}
common=(--algorithm micro --density 0.01 --momentum-correction --nesterov
        --momentum-warmup "$momentum_warmup" --epochs "$epochs")
for seed in $seeds; do
  line() { "$here/run_example.sh" "$@" --seed "$seed" 2>&1 | tail -1 | tr -s ' '; }
  echo "seed $seed momentum warm-up alone:$(line "${common[@]}")"
  echo "seed $seed with density warm-up:$(line "${common[@]}" \
    --config "{\"density_warmup\": $density_warmup}")"
  echo "seed $seed dense Nesterov SGD:$(line --algorithm dense --nesterov --epochs "$epochs")"
done
