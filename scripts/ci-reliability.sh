#!/usr/bin/env bash
# CI's reliability step, run by .ci/run after the README's test command (docs/reliability.md):
#  1. every libFuzzer harness for FUZZ_SECONDS (default 60) on its committed corpus (clang,
#     ASan + UBSan; build-fuzz/);
#  2. ASan + UBSan over the reliability tests ([peerfault], [threads]), built in the same
#     instrumented build-fuzz/ (one instrumented library build serves both);
#  3. ThreadSanitizer over the [threads], [peerfault], [agreement] and [hostile] cases (build-tsan/);
#  4. valgrind memcheck over [peerfault] in the release build (build/).
# The full unit suite under sanitizers is scripts/sanitize.sh asan|tsan (too slow for CI here).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
failed=0
step() { echo "ci-reliability: $1 ($(( $(date +%s) - start )) s so far)"; }

step "fuzzers"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}" || failed=1

step "ASan + UBSan: sccl_reliability_tests"
nice cmake --build build-fuzz -j 2 --target sccl_reliability_tests >/dev/null &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-fuzz/tests/reliability/sccl_reliability_tests || failed=1

step "TSan: sccl_reliability_tests [threads],[peerfault],[agreement],[hostile]"
SANITIZE_TARGET=sccl_reliability_tests bash scripts/sanitize.sh tsan "[threads],[peerfault],[agreement],[hostile]" ||
  failed=1

step "valgrind memcheck: sccl_reliability_tests [peerfault]"
build_dir=${SCCL_BUILD_DIR:-$root/build}
nice cmake --build "$build_dir" -j 2 --target sccl_reliability_tests >/dev/null &&
  valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
    "$build_dir/tests/reliability/sccl_reliability_tests" "[peerfault]" || failed=1

step "done, $([ $failed -eq 0 ] && echo passed || echo FAILED)"
exit $failed
