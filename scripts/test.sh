#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test with CTest
# (unit tests, in-process multi-rank tests, mpiexec tests, the C header test, the install test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${SCCL_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build_dir"
ctest --output-on-failure --timeout 300 -j 2 "$@"
