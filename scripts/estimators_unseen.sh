#!/usr/bin/env bash
# The SIDCo estimators on language-model gradients the project's defaults were not tuned on:
# writes two trace sets with scripts/lm_gradient_traces.py, then runs
# perf/estimator_perf's quality study on them, with error feedback over gradients 10 steps apart
# (-E 1) and on the raw gradients (-E 0), and prints the tables (scripts/plot_estimators.py).
#
#   - lstm2m_perl:     word-level LSTM, 2,088,500 parameters (embedding 3380 x 240, LSTM 240 -> 240,
#                      decoder), SGD + momentum, on the Perl documentation (/usr/share/perl/*/pod,
#                      145,232 tokens);
#   - transformer_py:  causal Transformer, 937,640 parameters (width 128, 2 layers, 4 heads,
#                      feed-forward 256, vocabulary 2600), Adam, on the first 400,000 tokens of
#                      Python's standard library (/usr/lib/python3.*/*.py).
# Both: 4 workers x batch 16 x 35 tokens, 300 steps, traces at iterations 200, 210, ..., 300.
# Neither text is the licence corpus of tests/data/traces_lm. The traces (about 400 MB) go to
# build/traces_unseen and are reused when present; nothing is downloaded. About 6 minutes to
# write the traces and 3 to measure on the 2-vCPU development machine.
#
# Usage: scripts/estimators_unseen.sh [--out DIR] [--traces DIR] [--build DIR]
#   --out DIR     where the JSON and CSV results go (default docs/results)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="${SCCL_BUILD_DIR:-$root/build}"
out="$root/docs/results"
traces=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --traces) traces="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--traces DIR] [--build DIR]" >&2; exit 2 ;;
  esac
done
traces="${traces:-$build/traces_unseen}"
python=/usr/bin/python3
perf="$build/perf/estimator_perf"
[[ -x "$perf" ]] || { echo "$perf not built (scripts/build.sh)" >&2; exit 1; }
iterations=$(seq -s, 200 10 300)
python_lib=$(ls -d /usr/lib/python3.*/ | sort -V | tail -1)

write_traces() {  # name, then lm_gradient_traces.py options
  local name="$1"; shift
  if [[ -f "$traces/$name/done" ]]; then
    echo "== $name: reusing $traces/$name"
    return
  fi
  echo "== $name: writing traces to $traces/$name"
  rm -rf "$traces/$name"
  "$python" "$root/scripts/lm_gradient_traces.py" --out "$traces/$name" --prefix "$name" \
      --workers 4 --batch 16 --bptt 35 --steps 300 --iterations "$iterations" --log-every 100 "$@"
  touch "$traces/$name/done"
}

write_traces lstm2m_perl --model lstm --vocab 6000 --embed 240 --hidden 240 \
    --text /usr/share/perl --pattern '*/pod/*.pod' --lr 1.0 --momentum 0.9 --clip 0.25
write_traces transformer_py --model transformer --vocab 2600 --embed 128 --hidden 256 \
    --layers 2 --heads 4 --optimizer adam --lr 0.001 --clip 1.0 \
    --text "$python_lib" --pattern '*.py' --max-tokens 400000

mkdir -p "$out"
dirs="$traces/lstm2m_perl,$traces/transformer_py"
rows=sidco_exp,sidco_gp,sidco_gamma_gp,sidco_exp/fb0,sidco_gp/fb0,sidco_gamma_gp/fb0
rows+=,dgc,redsync,gaussiank
for mode in 1 0; do
  name=$([[ $mode == 1 ]] && echo ef || echo raw)
  # The per-call series and the printed table stay with the traces (several MB); the JSON is
  # the result.
  "$perf" -m quality -E "$mode" -P "$dirs" -R "$rows" -S "$traces/series_$name.csv" \
      -J "$out/estimators_unseen_$name.json" > "$traces/estimators_unseen_$name.txt"
  grep '^# target (' "$traces/estimators_unseen_$name.txt"
  "$python" "$root/scripts/plot_estimators.py" --table "$out/estimators_unseen_$name.json"
done
"$python" "$root/scripts/plot_estimators.py" "$traces/series_ef.csv" \
    "$out/estimators_unseen_ef.png" \
    --inputs lstm2m_perl_it00200-00300x10_w0,transformer_py_it00200-00300x10_w0 \
    --estimators sidco_exp,sidco_gp,sidco_gamma_gp,sidco_exp/fb0,sidco_gp/fb0,dgc \
    --densities 0.1,0.01,0.001 \
    --title "k^/k over calls: unseen LM gradients 10 steps apart, error feedback"
