#!/usr/bin/env bash
# Installs the Debian packages sparsecoll's build and tests need. Idempotent and
# non-interactive: packages already present are not touched, and apt-get runs only if something
# is missing. CUDA and NCCL come from /usr/local/cuda when present and are never required.
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # compiler and build
  catch2                                # unit tests
  libopenmpi-dev openmpi-bin            # MPI transport and multi-process tests
  libucx-dev                            # UCX (detected and reported)
  nlohmann-json3-dev libboost-math-dev  # configuration files, special functions
  python3-matplotlib                    # plots of the benchmark results (scripts/plot_*.py)
  libtorch-dev zlib1g-dev libopenblas0-pthread  # EventGraD example (C++ libtorch training)
  dataset-fashion-mnist                 # its data set (/usr/share/datasets/fashion-mnist)
  python3-torch python3-numpy           # gradient trace tools, the gloo peer of the cluster benchmark
  python3-pytest python3-mpi4py python3-pip python3-setuptools  # Python package tests (bindings/python)
  python3-wheel                         # with python3-setuptools: the wheel (bindings/python/build_wheel.py)
  clang libclang-rt-14-dev valgrind     # fuzzers and sanitizers (scripts/ci-reliability.sh)
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
