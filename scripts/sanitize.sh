#!/usr/bin/env bash
# Builds sparsecoll and its unit tests with sanitizers in a build directory of their own and
# runs the unit tests (or the Catch test specs given) there. The first report aborts the test.
# SANITIZE_TARGET=sccl_reliability_tests runs the reliability binary instead (CI's subset).
#   scripts/sanitize.sh asan ["[tag]..."]   AddressSanitizer + UndefinedBehaviorSanitizer, build-asan/
#   scripts/sanitize.sh tsan ["[tag]..."]   ThreadSanitizer, build-tsan/
# Suppressions: tests/sanitizers/*.supp (third-party code only, each entry justified there).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-asan}
shift || true
case "$kind" in
  asan) sanitizers=address,undefined ;;
  tsan) sanitizers=thread ;;
  *) echo "usage: $0 asan|tsan [catch test spec]"; exit 2 ;;
esac
build=$root/build-$kind
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCCL_SANITIZE=$sanitizers \
    -DSCCL_ENABLE_CUDA=OFF -DSCCL_ENABLE_NCCL=OFF -DSCCL_ENABLE_UCX=OFF >/dev/null || exit 1
fi
target=${SANITIZE_TARGET:-sccl_unit_tests}
binary=$build/tests/$target
[ "$target" = sccl_reliability_tests ] && binary=$build/tests/reliability/$target
nice cmake --build "$build" -j "${SANITIZE_JOBS:-2}" --target "$target" >/dev/null || {
  echo "sanitize: build failed"; exit 1; }
supp=$root/tests/sanitizers
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
start=$(date +%s)
"$binary" "$@"
rc=$?
echo "sanitize $kind: $target ${*:-(all)} exit $rc in $(( $(date +%s) - start )) s"
exit $rc
