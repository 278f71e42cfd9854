#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang, ASan and UBSan in build-fuzz/ and runs
# each for SECONDS seconds (default 60) on a copy of its committed seed corpus
# (tests/fuzz/corpus/<harness>/); new inputs found go to build-fuzz/corpus/<harness>/, crashes
# to build-fuzz/crashes/. Prints the executions and the result per harness; exits non-zero if
# any harness crashed.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
#   FUZZ_JOBS=2 scripts/fuzz.sh 600 sparse_payload     (more build jobs; longer run)
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 7200 json_config (stop after 10^7 executions)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
all=(json_config env_params sketch_decode sparse_payload bootstrap_frames bootstrap_rank
  call_agreement checkpoint)
if [ $# -gt 0 ]; then harnesses=("$@"); else harnesses=("${all[@]}"); fi
build=build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCCL_FUZZ=ON \
    -DSCCL_ENABLE_MPI=OFF -DSCCL_ENABLE_CUDA=OFF -DSCCL_ENABLE_NCCL=OFF -DSCCL_ENABLE_UCX=OFF \
    >/dev/null || exit 1
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
nice cmake --build "$build" -j "${FUZZ_JOBS:-2}" --target "${targets[@]}" >/dev/null || {
  echo "fuzz build failed"; exit 1; }
mkdir -p "$build/crashes"
failed=0
for h in "${harnesses[@]}"; do
  corpus="$build/corpus/$h"
  mkdir -p "$corpus"
  log="$build/fuzz_$h.log"
  # -rss_limit_mb: a harness must never need more; -timeout: one input may not take 30 s (wall
  # clock: generous, so that a loaded machine does not report a starved input as a hang).
  quiet=()  # env_params: the integer reader warns on stderr for every bad value
  [ "$h" = env_params ] && quiet=(-close_fd_mask=2)
  # One kernel thread: every input pays no thread hand-off (1.7x the executions of two); the
  # decoders do not depend on the thread split, which the unit tests check bitwise.
  started=$SECONDS
  SCCL_CPU_THREADS=${SCCL_CPU_THREADS:-1} ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/reliability/fuzz/fuzz_$h" "${quiet[@]}" -max_total_time="$seconds" -runs="${FUZZ_RUNS:--1}" -rss_limit_mb=2048 \
    -timeout=30 -print_final_stats=1 -artifact_prefix="$build/crashes/${h}-" \
    "$corpus" "tests/fuzz/corpus/$h" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz_$h: ${runs:-?} executions in $((SECONDS - started)) s, 0 crashes"
  else
    echo "fuzz_$h: FAILED (exit $rc) after ${runs:-?} executions; see $log and $build/crashes/"
    grep -m3 -E 'ERROR|runtime error|deadly signal' "$log"
    failed=1
  fi
done
exit $failed
