#!/usr/bin/env bash
# Configures and builds sparsecoll in ${SCCL_BUILD_DIR:-build} (warnings are errors), the Python
# wheel with the library included (build/python/sparsecoll-*.whl, docs/python.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${SCCL_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSCCL_WERROR=ON "$@"
cmake --build "$build_dir" -j "$(nproc)"
