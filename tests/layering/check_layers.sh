#!/usr/bin/env bash
# Checks that every #include "..." in the library (src/, cuda/, transports/) runs one way, down the
# layers of docs/architecture.md ("Layers as built"):
#
#   api -> tuning -> sparsifier (+ cuda/'s device paths) -> algorithms -> estimators -> partition -> kernels
#   api -> event;  algorithms, event -> comm -> transports -> kernels
#   kernels (+ cuda/'s backend) -> core -> kernels/shared
#
# A file may include its own layer and the layers `allowed` lists for it (everything below it);
# no file of src/ includes cuda/ (the backend is reached through src/kernels/'s interfaces);
# the public header (sparsecoll/) and the generated sccl_build_config.h are open to every layer. A
# file or an include in no known layer is an error too, so that a new directory is placed here
# (and in docs/architecture.md) when it is added.
# perf/ and tools/ are checked too (at the end): binaries that use the public ABI alone include no
# internals; those that need them live in perf/internal/ (or are tools/sccl_info.cc).
# Usage: check_layers.sh [repository root]; exit 0 clean, 1 on any upward or unplaced include.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

# The layers each layer may include, besides its own (the order above, spelled out).
declare -A allowed=(
  [kernels/shared]=""
  [core]="kernels/shared"
  [kernels]="core kernels/shared"
  [transports]="kernels core kernels/shared"
  [comm]="transports kernels core kernels/shared"
  [partition]="kernels core kernels/shared"
  [estimators]="partition kernels core kernels/shared"
  [algorithms]="comm transports estimators partition kernels core kernels/shared"
  [sparsifier]="algorithms comm transports estimators partition kernels core kernels/shared"
  [event]="comm transports kernels core kernels/shared"
  [tuning]="sparsifier algorithms comm transports estimators partition kernels core kernels/shared"
  [api]="tuning event sparsifier algorithms comm transports estimators partition kernels core kernels/shared"
)

# cuda/ holds two layers: the CUDA backend (the kernel interface on device memory: the kernels,
# their dispatch and workspace, error text, the device select, the memory-space query), and the
# device paths of the sparse all-reduce and the dense collectives (the sparsifier's device half),
# which sit with the sparsifier.
is_cuda_backend() {
  case $1 in
    cuda/kernels/* | cuda/dispatch.h | cuda/cuda_kernels* | cuda/cuda_status.* | \
      cuda/workspace.* | cuda/device_select.* | cuda/memory_space_*) return 0 ;;
  esac
  return 1
}

# layer_of PATH: sets `layer` to the layer of a repository path or of an include path
# ("core/log.h" is src/core/log.h): empty for one in no layer, "public" for the public and
# generated headers.
layer_of() {
  local p=${1#src/}
  case $p in
    sparsecoll/* | include/sparsecoll/* | sccl_build_config.h) layer=public ;;
    kernels/shared/*) layer=kernels/shared ;;
    core/*) layer=core ;;
    kernels/*) layer=kernels ;;
    transports/*) layer=transports ;;
    comm/*) layer=comm ;;
    partition/*) layer=partition ;;
    estimators/*) layer=estimators ;;
    sparsifier/*) layer=sparsifier ;;
    algorithms/*) layer=algorithms ;;
    cuda/*) if is_cuda_backend "$p"; then layer=kernels; else layer=sparsifier; fi ;;
    event/*) layer=event ;;
    tuning/*) layer=tuning ;;
    api/*) layer=api ;;
    *) layer="" ;;
  esac
}

violations=0
report() {
  echo "$1" >&2
  violations=$((violations + 1))
}

files=$(git ls-files -- src cuda transports 2>/dev/null | grep -E '\.(h|cc|cu|cuh)$' || true)
if [[ -z $files ]]; then  # not a git checkout (a source tarball): every file on disk
  files=$(find src cuda transports -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \
    -o -name '*.cuh' \) 2>/dev/null | sort || true)
fi
[[ -n $files ]] || { echo "check_layers.sh: no sources under $root" >&2; exit 1; }

checked=0
for file in $files; do
  layer_of "$file"
  if [[ -z $layer ]]; then
    report "$file: in no layer (add its directory to tests/layering/check_layers.sh and docs/architecture.md)"
  else
    checked=$((checked + 1))
  fi
done
# Every quoted include of every file at once: "file:line:include".
while IFS=: read -r file line include; do
  layer_of "$file"
  from=$layer
  [[ -n $from ]] || continue
  layer_of "$include"
  to=$layer
  if [[ $file == src/* && $include == cuda/* ]]; then
    # src/ reaches the CUDA backend through the interfaces of src/kernels/ only.
    report "$file:$line: includes \"$include\": src/ uses the CUDA backend through src/kernels/'s interfaces"
  elif [[ -z $to ]]; then
    report "$file:$line: includes \"$include\", which is in no layer"
  elif [[ $to != public && $to != "$from" && " ${allowed[$from]} " != *" $to "* ]]; then
    report "$file:$line: $from includes \"$include\" ($to), a layer above or beside it"
  fi
done < <(grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files |
         sed -E 's/^([^:]+):([0-9]+):[^"]*"([^"]+)".*/\1:\2:\3/' || true)

# perf/ and tools/ (the binaries): those that use the public ABI alone include nothing of the
# library but the public headers, their harness (perf/common/, perf/sparse/, files beside them),
# the tests' header-only models and readers (tests/support/) and the header-only leaf helpers
# (kernels/shared/); those that need internals live in perf/internal/ (or are tools/sccl_info.cc)
# and say so on their first line ("// Uses library internals ...").
is_internal_binary() {
  case $1 in
    perf/internal/* | tools/sccl_info.cc) return 0 ;;
  esac
  return 1
}
binary_files=$(git ls-files -- perf tools 2>/dev/null | grep -E '\.(h|cc|cu|cuh)$' || true)
if [[ -z $binary_files ]]; then
  binary_files=$(find perf tools -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \) \
    2>/dev/null | sort || true)
fi
binaries_checked=0
for file in $binary_files; do
  binaries_checked=$((binaries_checked + 1))
  if is_internal_binary "$file"; then
    head -n 1 "$file" | grep -q '^// Uses library internals' ||
      report "$file: in perf/internal/ (or sccl_info), but its first line does not say which internals it uses (\"// Uses library internals ...\")"
    continue
  fi
  while IFS=: read -r line include; do
    case $include in
      sparsecoll/* | sccl_build_config.h | common/* | sparse/* | support/* | kernels/shared/*) ;;
      */*) report "$file:$line: includes \"$include\", a library internal: move the binary to perf/internal/ (and say so on its first line) or use the public API" ;;
      *) [[ -f $(dirname "$file")/$include ]] ||
           report "$file:$line: includes \"$include\", which is not beside it" ;;
    esac
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
           sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/' || true)
done

if ((violations > 0)); then
  echo "check_layers.sh: $violations include(s) or file(s) against the layer order (docs/architecture.md)" >&2
  exit 1
fi
echo "check_layers.sh: $checked files, every include runs down the layers; $binaries_checked files of perf/ and tools/, the public-ABI ones include no internals"
