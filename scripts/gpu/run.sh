#!/usr/bin/env bash
# The GPU bundle's one command (docs/gpu.md, "Running the GPU bundle"); scripts/gpu/bundle.sh
# copies this file into build/gpu-bundle/.
#
#   build/gpu-bundle/run.sh [OUTDIR]
#
# Runs every GPU check of sparsecoll from the bundle folder, each step under its own `timeout`
# and all of them within SCCL_BUNDLE_BUDGET_S seconds (default 450: an H100 session runs the
# bundle in one command of at most 8 minutes). A step that would start with less than 15 s left
# is recorded as skipped. In order:
#   tests        sccl_gpu_tests, one run per Catch tag it lists (--list-tags: new tags are
#                picked up), then the test cases no tag but [gpu] selects, if any
#   multiprocess sccl_gpu_multiprocess --ranks 2, 3, 4 --transport ucx (when the bundle has it)
#   perf         select_perf -g 1 and sparse_allreduce_perf -g 1, 26M float32, d = 0.001, 0.01;
#                then their PyTorch peer, peers/torch_micro_peer.py --device cuda (the seeds'
#                MiCRO step in torch, one rank, same sizes; its JSON also in OUTDIR), when
#                python3 has torch with CUDA
#   counts       sparse_allreduce_perf -g 1 under the CUDA-call counting tool: launches, copies
#                and host waits per call of each preset (OUTDIR/call_counts.jsonl)
#   python       the Python package's CUDA tests (pytest -k cuda), when python3 has torch,
#                numpy and pytest
#   mpirun       sccl_gpu_multiprocess --launcher mpi under the bundle's relocated Open MPI, 2, 3
#                and 4 processes on the one GPU (mpi transport, pinned staging); then
#                sparse_allreduce_perf -g 1 under it, one rank (NCCL)
#   sanitizer    compute-sanitizer memcheck, then racecheck, on [select] [indexed] [sketch]
#                [moments] [fused] [sync_free]; NCCL's own cudaErrorNoKernelImageForDevice reports
#                inside ncclInitKernelsForDevice (its probing at communicator creation) are not
#                counted
#   profile      ncu: the GPU time of each kernel of micro, micro_sync_free and s2 calls at 26M
#                float32, d = 0.001
# Output: OUTDIR/gpu-bundle.log (every command with its whole output) and OUTDIR/gpu-bundle.json
# (per step: pass, fail, timeout or skipped, seconds; the perf rows; GPU, driver, CUDA runtime,
# NCCL; the bundle's commit). OUTDIR: the argument, else $OUT, else ./gpu-run-<UTC date>.
# The terminal gets one line per step and, for a failed step, the last lines of its output.
#
# Exit status:
#   0   every step that ran passed
#   1   a step failed or timed out
#   2   the bundle cannot run here (a GPU but no libnccl.so.2, a binary that does not load)
#   77  no usable GPU (nvidia-smi missing or failing, or sccl_gpu_tests skips): prints the one
#       line "no GPU: skipped"; the log and the JSON (status "no_gpu") are still written
#
# Environment: NCCL_LIB_DIR (folder of libnccl.so.2; else the first of ldconfig, /usr/lib*,
# /usr/local/cuda*, python3's nvidia.nccl package), SCCL_BUNDLE_BUDGET_S, SCCL_BUNDLE_STEPS
# (extended regex on "group:name", e.g. 'tests|perf'; default every step).
set -uo pipefail

B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export B
started=$(date +%s)
budget=${SCCL_BUNDLE_BUDGET_S:-450}
deadline=$((started + budget))
step_filter=${SCCL_BUNDLE_STEPS:-.}
# The presets of the counts step, in its -a order: summarize.py names the counting tool's lines
# (one per preset's sparsifier) by this list.
counted_presets=micro,exdyna,topk,cltk,hard_threshold,sidco,s2,micro_sync_free
outdir=${1:-${OUT:-$PWD/gpu-run-$(date -u +%Y%m%dT%H%M%SZ)}}
mkdir -p "$outdir" || { echo "run.sh: cannot create $outdir" >&2; exit 2; }
outdir=$(cd "$outdir" && pwd)
log=$outdir/gpu-bundle.log
json=$outdir/gpu-bundle.json
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
: >"$log"
: >"$work/steps.tsv"
: >"$work/machine.tsv"

note() { printf '%s\n' "$*" >>"$log"; }
machine() { printf '%s\t%s\n' "$1" "$2" >>"$work/machine.tsv"; }

# summarize STATUS EXIT_CODE [REASON]: writes the JSON (python3; a minimal one without it).
summarize() {
  local py
  py=$(command -v python3 || true)
  if [[ -n $py ]] && "$py" "$B/summarize.py" --bundle "$B" --work "$work" --out "$json" \
       --status "$1" --exit-code "$2" --reason "${3:-}" --started "$started" \
       --finished "$(date +%s)" --counted-presets "$counted_presets" >>"$log" 2>&1; then
    return
  fi
  note "summarize.py failed or no python3: minimal JSON"
  printf '{"status": "%s", "exit_code": %s, "reason": "%s", "steps": [%s]}\n' "$1" "$2" \
    "${3//\"/\'}" "$(awk -F'\t' '{printf "%s{\"group\": \"%s\", \"name\": \"%s\", \"status\": \"%s\", \"seconds\": %s}", NR > 1 ? ", " : "", $1, $2, $3, $4}' "$work/steps.tsv")" >"$json"
}

no_gpu() {
  note "no GPU: $1"
  summarize no_gpu 77 "$1"
  echo "no GPU: skipped"
  exit 77
}

fatal() {
  note "run.sh: $1"
  summarize error 2 "$1"
  echo "run.sh: $1 (log: $log)" >&2
  exit 2
}

# --- where things are -------------------------------------------------------------------------
find_nccl() {
  local d py
  if [[ -n ${NCCL_LIB_DIR:-} && -f $NCCL_LIB_DIR/libnccl.so.2 ]]; then echo "$NCCL_LIB_DIR"; return; fi
  d=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null | awk '$1 == "libnccl.so.2" && /x86-64/ {print $NF; exit}')
  if [[ -n $d && -f $d ]]; then dirname "$d"; return; fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/cuda/lib64 /usr/local/cuda/lib \
           /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nccl/lib; do
    if [[ -f $d/libnccl.so.2 ]]; then echo "$d"; return; fi
  done
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    d=$(timeout 60 "$py" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null)
    if [[ -n $d && -f $d/libnccl.so.2 ]]; then echo "$d"; return; fi
  done
  return 1
}

find_sanitizer() {
  local c
  c=$(command -v compute-sanitizer) && { echo "$c"; return; }
  for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer \
           /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    if [[ -x $c ]]; then echo "$c"; return; fi
  done
  return 1
}

note "sparsecoll GPU bundle run, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname 2>/dev/null)"
note "bundle: $B"
[[ -f $B/BUILD_INFO.json ]] && note "$(cat "$B/BUILD_INFO.json")"
[[ -x $B/bin/sccl_gpu_tests ]] || fatal "the bundle has no bin/sccl_gpu_tests"

nccl_dir=$(find_nccl) || nccl_dir=""
machine nccl_dir "$nccl_dir"
note "NCCL: ${nccl_dir:-not found}"
ld_path_outside=${LD_LIBRARY_PATH:-}  # what the PyTorch peer runs with: torch's own libraries
export LD_LIBRARY_PATH="$B/lib${nccl_dir:+:$nccl_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

# --- is there a GPU? ----------------------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null; then
  # Still start the test binary (when it can load) so the log shows its own verdict.
  if [[ -n $nccl_dir ]]; then
    note "\$ sccl_gpu_tests --list-tags"
    timeout 60 "$B/bin/sccl_gpu_tests" --list-tags >>"$log" 2>&1
    note "exit $?"
  fi
  no_gpu "nvidia-smi not found"
fi
if ! smi=$(timeout 60 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
             --format=csv,noheader 2>&1); then
  no_gpu "nvidia-smi failed: $(head -n 1 <<<"$smi")"
fi
note "nvidia-smi: $smi"
machine gpu "$(head -n 1 <<<"$smi" | cut -d, -f1 | sed 's/^ *//; s/ *$//')"
machine driver "$(head -n 1 <<<"$smi" | cut -d, -f2 | sed 's/^ *//; s/ *$//')"
machine gpu_memory "$(head -n 1 <<<"$smi" | cut -d, -f3 | sed 's/^ *//; s/ *$//')"
machine compute_capability "$(head -n 1 <<<"$smi" | cut -d, -f4 | sed 's/^ *//; s/ *$//')"
machine gpu_count "$(grep -c . <<<"$smi")"
[[ -n $nccl_dir ]] || fatal "a GPU but no libnccl.so.2 (set NCCL_LIB_DIR to its folder)"

tags_out=$(timeout 120 "$B/bin/sccl_gpu_tests" --list-tags 2>&1)
tags_rc=$?
note "\$ sccl_gpu_tests --list-tags"$'\n'"$tags_out"$'\n'"exit $tags_rc"
# Catch2 2.x exits from a listing with the number of items listed (14 tags: exit 14), so the
# verdict comes from the output: the suite's own "SKIP:" line (exit 77), else Catch's list.
if ((tags_rc == 77)) && grep -q '^SKIP:' <<<"$tags_out"; then
  no_gpu "sccl_gpu_tests: $(head -n 1 <<<"$tags_out")"
fi
grep -q '^All available tags:' <<<"$tags_out" ||
  fatal "sccl_gpu_tests --list-tags exits $tags_rc without a list: $(head -n 1 <<<"$tags_out")"
# Every tag but the suite's own [gpu] and Catch's hidden ones ([.], [!mayfail], ...).
mapfile -t tags < <(grep -oE '\[[^]]+\]' <<<"$tags_out" | grep -vE '^\[(gpu|[.!].*)\]$' | sort -u)

commit=$(sed -n 's/.*"commit": "\([^"]*\)".*/\1/p' "$B/BUILD_INFO.json" 2>/dev/null)
echo "sparsecoll GPU bundle ${commit:0:12} on $(head -n 1 <<<"$smi"); log $log"

# --- steps --------------------------------------------------------------------------------------
step_no=0
passed=0 failed=0 timed_out=0 skipped=0
# record GROUP NAME STATUS SECONDS EXIT NOTE OUTPUT_FILE [PERF_JSON]
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6//$'\t'/ }" "${7:-}" "${8:-}" \
    >>"$work/steps.tsv"
  case $3 in
    pass) ((++passed)) ;; fail) ((++failed)) ;; timeout) ((++timed_out)) ;; *) ((++skipped)) ;;
  esac
  printf '%-8s %-13s %-46s %6s s%s\n' "$3" "$1" "$2" "$4" "${6:+  ($6)}"
  if [[ $3 == fail || $3 == timeout ]] && [[ -n ${7:-} && -f $7 ]]; then
    if [[ -s $7.excerpt ]]; then  # a sanitizer report: its first error of ours
      head -n 12 "$7.excerpt"
    else
      grep -v '^=========' "$7" | tail -n 12
    fi | cut -c1-200 | sed 's/^/    | /'
  fi
}

# skip_step GROUP NAME WHY: a step that cannot run here
skip_step() {
  [[ "$1:$2" =~ $step_filter ]] && record "$1" "$2" skipped 0 "" "$3"
  return 0
}

# run_step GROUP NAME LIMIT_S [CHECK_FUNCTION] -- COMMAND...
# CHECK_FUNCTION OUTPUT_FILE EXIT_CODE may set verdict and verdict_note (sanitizer steps).
run_step() {
  local group=$1 name=$2 limit=$3 check="" remaining t0 t1 secs rc status out
  shift 3
  if [[ $1 != -- ]]; then check=$1; shift; fi
  shift
  [[ "$group:$name" =~ $step_filter ]] || return 0
  remaining=$((deadline - $(date +%s)))
  if ((remaining < 15)); then
    record "$group" "$name" skipped 0 "" "time budget spent"
    return 0
  fi
  ((limit > remaining)) && limit=$remaining
  out=$work/step-$((++step_no)).out
  printf '\n=== [%s] %s (limit %s s)\n$ %s\n' "$group" "$name" "$limit" "$*" >>"$log"
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" "$@" >"$out" 2>&1 </dev/null
  rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
  cat "$out" >>"$log"
  printf '=== exit %s after %s s\n' "$rc" "$secs" >>"$log"
  verdict="" verdict_note=""
  case $rc in
    0) status=pass ;;
    77) status=skipped verdict_note="the binary found no usable device" ;;
    124|137) status=timeout verdict_note="exit $rc: over ${limit} s or its own watchdog" ;;
    *) status=fail verdict_note="exit $rc" ;;
  esac
  if [[ -n $check && $status != timeout && $status != skipped ]]; then
    "$check" "$out" "$rc"
    status=${verdict:-$status}
  fi
  record "$group" "$name" "$status" "$secs" "$rc" "$verdict_note" "$out" "${step_json:-}"
}

# compute-sanitizer's verdict: its error count minus NCCL's probing reports (records that name
# both cudaErrorNoKernelImageForDevice and ncclInitKernelsForDevice). Records are separated by a
# line of "=========" alone.
sanitizer_check() {
  local counts total filtered ours
  counts=$(awk -v excerpt="$1.excerpt" '
    function close_record() {
      if (rec ~ /cudaErrorNoKernelImageForDevice/ && rec ~ /ncclInitKernelsForDevice/) f++
      else if (rec != "" && !shown) { printf "%s\n", substr(rec, 2) > excerpt; shown = 1 }
      rec = ""
    }
    /^=========[ \t]*$/ { close_record(); next }
    /(ERROR|RACECHECK|LEAK) SUMMARY/ { close_record() }
    /^=========/ && !/SUMMARY/ { rec = rec "\n" $0 }
    /ERROR SUMMARY: [0-9]+ error/ { match($0, /ERROR SUMMARY: [0-9]+/); t = substr($0, RSTART + 15, RLENGTH - 15) + 0; have = 1 }
    /RACECHECK SUMMARY:.*\([0-9]+ error/ { match($0, /\([0-9]+ error/); r = substr($0, RSTART + 1, RLENGTH - 7) + 0 }
    END { close_record(); if (!have) t = r; print t + 0, f + 0 }' "$1")
  read -r total filtered <<<"$counts"
  ours=$((total - filtered))
  ((ours < 0)) && ours=0
  verdict_note="$ours error(s)"
  ((filtered > 0)) && verdict_note+=", $filtered from NCCL probing not counted"
  if (($2 == 0 && ours == 0)); then verdict=pass; else verdict=fail; fi
  (($2 != 0)) && verdict_note+=", exit $2"
}

step_json=""
gpu_tests=("$B/bin/sccl_gpu_tests" --use-colour no)

# 1. every tag of the GPU suite, then what no tag covers
if ((${#tags[@]} == 0)); then
  run_step tests "[gpu]" 300 -- "${gpu_tests[@]}" "[gpu]"
else
  for tag in "${tags[@]}"; do
    run_step tests "$tag" 150 -- "${gpu_tests[@]}" "$tag"
  done
  rest_filter="[gpu]$(printf '~%s' "${tags[@]}")"
  rest=$(timeout 60 "${gpu_tests[@]}" --list-test-names-only "$rest_filter" 2>/dev/null |
         grep -v '^No test cases' | grep -c '[^[:space:]]')
  if ((rest > 0)); then
    run_step tests "untagged ($rest)" 150 -- "${gpu_tests[@]}" "$rest_filter"
  fi
fi

# The hierarchy on device buffers groups in-process ranks into nodes by a setting read once per
# process: its hidden tag runs in a process of its own.
run_step tests "[.gpu_hierarchy] (nodes of 2)" 150 -- \
  env SCCL_RANKS_PER_NODE=2 "${gpu_tests[@]}" "[.gpu_hierarchy]"

# 2. several processes on the one GPU, over UCX (NCCL refuses two ranks on one device)
if [[ -x $B/bin/sccl_gpu_multiprocess ]]; then
  for n in 2 3 4; do
    run_step multiprocess "--ranks $n --transport ucx" 120 -- \
      "$B/bin/sccl_gpu_multiprocess" --ranks "$n" --transport ucx
  done
else
  skip_step multiprocess "sccl_gpu_multiprocess" "not built"
fi

# 3. perf at the target size, few iterations
run_step perf "select_perf -g 1" 120 -- "$B/bin/select_perf" -g 1 -u elements -b 26000000 \
  -e 26000000 -D 0.001,0.01 -n 20 -w 3 -k 0 -T 60
step_json=$work/sparse_allreduce_perf.json
run_step perf "sparse_allreduce_perf -g 1" 180 -- "$B/bin/sparse_allreduce_perf" -g 1 \
  -u elements -b 26000000 -e 26000000 -D 0.001,0.01 -n 5 -w 1 -W 3 -L 10 -T 120 -J "$step_json"
step_json=""

# 3a. what each call asks of the CUDA runtime (tools/cuda_call_count: launches, copies each way,
#     host waits per scclSparseAllreduce call), one line per preset's run in OUTDIR/call_counts.jsonl
#     in the order of -a; the budgets the unit tests assert on the fake device (docs/gpu.md)
if [[ -f $B/lib/libsccl_cuda_call_count.so ]]; then
  run_step counts "cuda_call_count sparse_allreduce_perf -g 1" 120 -- env \
    LD_PRELOAD="$B/lib/libsccl_cuda_call_count.so" SCCL_CALL_COUNT_OUT="$outdir/call_counts.jsonl" \
    "$B/bin/sparse_allreduce_perf" -g 1 -u elements -b 26000000 -e 26000000 -D 0.01 \
    -a "$counted_presets" -n 5 -w 1 -W 1 -L 1 -c 0 -T 100
else
  skip_step counts "cuda_call_count" "not in the bundle"
fi

# python3 and its torch, asked once for the peer (3b) and the package's tests (4); the probe also
# reads torch's files into the page cache, so the peer's import is not a cold one.
py=$(command -v python3 || true)
torch_ok=0 torch_probe="" tv="" tcuda="" nv="" tavail=""
if [[ -n $py ]] && torch_probe=$(cd "$work" && timeout 120 "$py" -c '
import torch
try:
    import numpy
    numpy_version = numpy.__version__
except ImportError:
    numpy_version = "none"
print(torch.__version__, torch.version.cuda, numpy_version, torch.cuda.is_available())' 2>&1); then
  torch_ok=1
  read -r tv tcuda nv tavail <<<"$(tail -n 1 <<<"$torch_probe")"
  machine torch "$tv (CUDA $tcuda, numpy $nv, cuda available $tavail)"
fi

# 3b. the PyTorch peer of those rows, on the same GPU right after them: the seeds' MiCRO step
#     (kljp/micro's MicroReducer) in torch, one rank, same size and densities; estimated at
#     under 20 s, most of it starting torch and the warm-up its band rule needs. Without the
#     bundle's libraries (torch brings its own CUDA runtime and NCCL). Rows into the JSON and
#     $outdir.
peer_step="torch_micro_peer --device cuda"
if [[ -z $py ]]; then
  skip_step perf "$peer_step" "no python3"
elif ((!torch_ok)); then
  skip_step perf "$peer_step" "python3 lacks torch: $(tail -n 1 <<<"$torch_probe")"
elif [[ $tavail != True ]]; then
  skip_step perf "$peer_step" "torch sees no CUDA device"
else
  peer_env=(env -u LD_LIBRARY_PATH)
  [[ -n $ld_path_outside ]] && peer_env=(env LD_LIBRARY_PATH="$ld_path_outside")
  step_json=$outdir/torch_micro_peer.json
  run_step perf "$peer_step" 45 -- "${peer_env[@]}" PYTHONDONTWRITEBYTECODE=1 "$py" \
    "$B/peers/torch_micro_peer.py" --device cuda -b 26000000 -D 0.001,0.01 -n 30 -w 20 -L 600 \
    -J "$step_json"
  step_json=""
fi

# 4. the Python package on CUDA tensors
if [[ -z $py ]]; then
  skip_step python "pytest -k cuda" "no python3"
elif ((!torch_ok)); then
  skip_step python "pytest -k cuda" "python3 lacks torch: $(tail -n 1 <<<"$torch_probe")"
elif [[ $nv == none ]]; then
  skip_step python "pytest -k cuda" "python3 lacks numpy"
elif ! (cd "$work" && timeout 60 "$py" -c 'import pytest' >/dev/null 2>&1); then
  skip_step python "pytest -k cuda" "pytest is not importable by $py"
else
  mapfile -t py_tests < <(cd "$B/python" && grep -l 'cuda' tests/test_*.py)
  run_step python "pytest -k cuda" 150 -- env PYTHONPATH="$B/python" \
    SPARSECOLL_LIBRARY="$B/lib/libsparsecoll.so.0" PYTHONDONTWRITEBYTECODE=1 \
    bash -c 'cd "$0" && exec "$1" -m pytest -q -rs -p no:cacheprovider -k cuda "${@:2}"' \
    "$B/python" "$py" "${py_tests[@]}"
fi

# 5. the relocated Open MPI: 2-4 mpirun processes on the one GPU over the mpi transport (device
#    buffers through pinned staging), then scclCommInitMpi and NCCL on device buffers, one rank
if [[ -f $B/mpi/env.sh ]]; then
  if [[ -x $B/bin/sccl_gpu_multiprocess ]]; then
    for n in 2 3 4; do
      run_step mpirun "mpirun -np $n sccl_gpu_multiprocess --launcher mpi" 120 -- bash -c \
        'source "$B/mpi/env.sh" && exec "$B/mpi/bin/mpirun" -np "$0" "$B/bin/sccl_gpu_multiprocess" --launcher mpi' "$n"
    done
  fi
  step_json=$work/mpirun.json
  run_step mpirun "mpirun -np 1 sparse_allreduce_perf -g 1" 90 -- bash -c \
    'source "$B/mpi/env.sh" && exec "$B/mpi/bin/mpirun" -np 1 "$B/bin/sparse_allreduce_perf" -g 1 -u elements -b 1M -e 1M -D 0.01 -n 3 -w 1 -W 2 -L 5 -a dense,micro_sync_free -T 60 -J "$0"' "$step_json"
  step_json=""
else
  skip_step mpirun "mpirun" "no Open MPI in the bundle"
fi

# 6. compute-sanitizer on the kernel groups
if cs=$(find_sanitizer); then
  for tool in memcheck racecheck; do
    for tag in select indexed sketch moments fused sync_free; do
      run_step sanitizer "$tool [$tag]" 90 sanitizer_check -- "$cs" --tool "$tool" \
        --print-limit 1000 "${gpu_tests[@]}" "[$tag]"
    done
  done
else
  skip_step sanitizer "compute-sanitizer" "compute-sanitizer not found"
fi

# 7. where the GPU time of micro, micro_sync_free and s2 calls goes: Nsight Compute's duration
#    of every kernel of a few calls at 26M float32, d = 0.001 (each kernel replayed alone, so the
#    sum leaves out the host's synchronisation gaps that the perf rows include)
if ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null); then
  run_step profile "ncu sparse_allreduce_perf -a micro,micro_sync_free,s2" 150 -- "$ncu" --metrics \
    gpu__time_duration.sum --print-summary per-kernel "$B/bin/sparse_allreduce_perf" -g 1 \
    -u elements -b 26000000 -e 26000000 -D 0.001 -a micro,micro_sync_free,s2 -n 2 -w 1 -W 1 -L 1 -c 0 -T 100
else
  skip_step profile "ncu" "Nsight Compute (ncu) not found"
fi

# --- summary ------------------------------------------------------------------------------------
status=pass code=0
((failed + timed_out > 0)) && status=fail code=1
summarize "$status" "$code"
elapsed=$(($(date +%s) - started))
echo "$status: $passed passed, $failed failed, $timed_out timed out, $skipped skipped in ${elapsed} s"
echo "log: $log"
echo "json: $json"
exit "$code"
