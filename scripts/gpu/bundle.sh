#!/usr/bin/env bash
# Builds what the GPU machine runs and stages it into ONE folder, <build>/gpu-bundle/ (docs/gpu.md,
# "Running the GPU bundle"). That machine has the CUDA driver and runtime and PyTorch's NCCL but
# none of the Debian packages this project links (Open MPI, UCX, hwloc, libevent, ...), so the
# bundle carries them:
#   bin/     sccl_gpu_tests, sccl_gpu_multiprocess (when the build has it), select_perf,
#            sparse_allreduce_perf, memory_floor_perf, sccl_info; stripped, RUNPATH removed
#            (and lib/libsccl_cuda_call_count.so, the CUDA-call counting tool run.sh preloads)
#   lib/     libsparsecoll.so.0 and every shared library those need that is not on a bare CUDA
#            machine (ldd closure, minus glibc, the C++ runtime, libcuda and libnccl), each under
#            its soname (no symbolic links); lib/ucx/ the UCX transport modules, found by UCX
#            next to lib/libucs.so.0
#   mpi/     a relocated Open MPI runtime (mpirun, orted, MCA components, help files, PMIx's
#            plugins) used with OPAL_PREFIX; mpi/env.sh sets the variables
#   python/  the Python package (bindings/python/sparsecoll) and its tests, used in place
#   peers/   torch_micro_peer.py (perf/peers/): the PyTorch peer run.sh times after the GPU rows
#   run.sh, summarize.py (scripts/gpu/), BUILD_INFO.json (commit, date, architectures)
#
# Usage: scripts/gpu/bundle.sh [--no-build] [--out DIR]
#   SCCL_BUILD_DIR      build folder [<repo>/build]; configured as scripts/build.sh does when new
#   --no-build          stage from the build folder as it is (CI: no second build)
#   --out DIR           bundle folder [<build>/gpu-bundle]
#   SCCL_BUNDLE_MAX_MB  size limit in MiB [50]; a bigger bundle is an error
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${SCCL_BUILD_DIR:-$root/build}
out=""
do_build=1
max_mb=${SCCL_BUNDLE_MAX_MB:-50}
while (($#)); do
  case $1 in
    --no-build) do_build=0 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bundle.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)
out=${out:-$build_dir/gpu-bundle}

die() { echo "bundle.sh: $*" >&2; exit 1; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt"; }

# --- build -----------------------------------------------------------------------------------
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  ((do_build)) || die "$build_dir is not a configured build folder"
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSCCL_WERROR=ON
fi
[[ $(cache_value SCCL_ENABLE_CUDA) == ON ]] || die "the build has no CUDA (SCCL_ENABLE_CUDA=OFF)"
build_config=$build_dir/generated/sccl_build_config.h  # written at configure time
config_value() { sed -n "s/^#define SCCL_BUILD_$1 //p" "$build_config" | tr -d '"'; }
[[ $(config_value CUDA_KERNELS) == 1 ]] || die "the build has no CUDA kernels (no nvcc found)"
archs=$(config_value CUDA_ARCHITECTURES)
# H100 and H200 are sm_90; sm_80 covers A100. Anything else still runs (PTX JIT) but slower to load.
[[ ";$archs;" == *";90"* ]] || echo "bundle.sh: warning: CMAKE_CUDA_ARCHITECTURES=$archs has no sm_90" >&2

programs=(sccl_gpu_tests select_perf sparse_allreduce_perf memory_floor_perf sccl_info)
optional_programs=(sccl_gpu_multiprocess)
if ((do_build)); then
  targets=(sparsecoll sccl_cuda_call_count "${programs[@]}")
  known_targets=$(cmake --build "$build_dir" --target help 2>/dev/null || true)
  for t in "${optional_programs[@]}"; do
    grep -qE "(^|[ .])$t(:|$| )" <<<"$known_targets" && targets+=("$t")
  done
  cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
fi

# --- stage -----------------------------------------------------------------------------------
find_built() {  # the built file called $1 in the build folder, not inside a bundle (the CI one too)
  find "$build_dir" -path "$out" -prune -o -type d -name gpu-bundle -prune -o \
    -name "$1" -type f -perm -u+x -print 2>/dev/null | head -n 1
}
# Copy $1 to $2 as a plain file; finish_elf_files strips it and removes its RUNPATH (the build
# folder's RUNPATH would let the ldd check find a library the bundle lacks).
staged_elf_files=()
stage_elf() {
  cp -L "$1" "$2"
  chmod u+w "$2"
  staged_elf_files+=("$2")
}
# Strip and drop RUNPATH of everything staged, in two commands (one per file is slow).
finish_elf_files() {
  strip --strip-unneeded "${staged_elf_files[@]}" 2>/dev/null || true
  local IFS=';'
  cmake -DFILES="${staged_elf_files[*]}" -P "$root/scripts/gpu/remove_rpath.cmake" >/dev/null
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/python" "$out/peers"
status_lines=()
for p in "${programs[@]}" "${optional_programs[@]}"; do
  src=$(find_built "$p")
  if [[ -z $src ]]; then
    [[ " ${optional_programs[*]} " == *" $p "* ]] || die "$p is not built in $build_dir"
    status_lines+=("$p: not built")
    continue
  fi
  stage_elf "$src" "$out/bin/$p"
  status_lines+=("$p: bundled")
done
lib_src=$(find "$build_dir" -maxdepth 1 -name 'libsparsecoll.so.*.*' -type f | head -n 1)
[[ -n $lib_src ]] || die "libsparsecoll.so is not built in $build_dir"
soname=$(objdump -p "$lib_src" | awk '$1 == "SONAME" {print $2}')
stage_elf "$lib_src" "$out/lib/$soname"
# The CUDA-call counting tool (tools/cuda_call_count), preloaded by run.sh's counts step.
count_tool=$(find "$build_dir/tools" -maxdepth 1 -name libsccl_cuda_call_count.so -type f | head -n 1)
if [[ -n $count_tool ]]; then
  stage_elf "$count_tool" "$out/lib/libsccl_cuda_call_count.so"
  status_lines+=("libsccl_cuda_call_count.so: bundled")
else
  status_lines+=("libsccl_cuda_call_count.so: not built")
fi

# Never carried: what every Linux machine has (glibc, the C++ runtime) and what the GPU machine
# brings itself, matched to its driver (libcuda, libnccl; run.sh finds NCCL there).
system_libs='^(linux-vdso|linux-gate|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia-|libnccl\.so)'

# Open MPI, relocated: the library directory and its MCA components keep their paths relative to
# the prefix, so OPAL_PREFIX=mpi/ finds them; PMIx likewise with PMIX_PREFIX. Components that
# need libraries the GPU machine has no use for (InfiniBand verbs, libfabric, PSM, Java) or that
# would bring UCX into MPI's own transport selection are left out.
mpi_dirs=()
stage_openmpi() {
  command -v ompi_info >/dev/null && command -v mpirun >/dev/null || return 1
  local prefix pkglibdir pkgdatadir sysconfdir libdir rel_pkglib rel_libdir skip c pmix_lib pmix_dir
  prefix=$(ompi_info --path prefix | awk '{print $NF}')
  pkglibdir=$(ompi_info --path pkglibdir | awk '{print $NF}')
  pkgdatadir=$(ompi_info --path pkgdatadir | awk '{print $NF}')
  libdir=$(ompi_info --path libdir | awk '{print $NF}')
  sysconfdir=$(ompi_info --path sysconfdir | awk '{print $NF}')
  [[ $pkglibdir == "$prefix"/* && $pkgdatadir == "$prefix"/* ]] || return 1
  rel_pkglib=${pkglibdir#"$prefix"/}
  rel_libdir=${libdir#"$prefix"/}
  mkdir -p "$out/mpi/bin" "$out/mpi/$rel_pkglib" "$out/mpi/share/openmpi" "$out/mpi/etc"
  stage_elf "$(readlink -f "$(command -v mpirun)")" "$out/mpi/bin/mpirun"
  stage_elf "$(dirname "$(readlink -f "$(command -v mpirun)")")/orted" "$out/mpi/bin/orted"
  # MPI-IO and OpenSHMEM are not used either.
  skip='(ofi|psm|openib|verbs|usnic|java|ucx|ucc|hcoll|fca|cuda|monitoring|slurm|flux|gridengine|jsm'
  skip+='|romio|io_ompio|fbtl|fcoll|fs_ufs|sharedfp|memheap|scoll|spml|sshmem|atomic_)'
  for c in "$pkglibdir"/mca_*.so; do
    [[ $(basename "$c") =~ $skip ]] && continue
    stage_elf "$c" "$out/mpi/$rel_pkglib/$(basename "$c")"
  done
  cp -rL "$pkgdatadir/." "$out/mpi/share/openmpi/"
  rm -f "$out/mpi/share/openmpi/"*wrapper-data.txt  # compiler wrappers: not carried
  [[ -f $sysconfdir/openmpi-mca-params.conf ]] && cp "$sysconfdir/openmpi-mca-params.conf" "$out/mpi/etc/"
  mpi_dirs+=("$out/mpi/$rel_pkglib")
  pmix_lib=$(ldd "$pkglibdir"/mca_pmix_*.so 2>/dev/null | awk '$1 ~ /^libpmix\.so/ {print $3; exit}')
  if [[ -n $pmix_lib ]]; then
    pmix_dir=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")  # <pmix prefix>/lib/libpmix.so.2
    mkdir -p "$out/mpi/pmix/lib/pmix" "$out/mpi/pmix/share/pmix"
    for c in "$pmix_dir"/lib/pmix/*.so; do [[ -f $c ]] && stage_elf "$c" "$out/mpi/pmix/lib/pmix/$(basename "$c")"; done
    [[ -d $pmix_dir/share/pmix ]] && cp -rL "$pmix_dir/share/pmix/." "$out/mpi/pmix/share/pmix/"
    mpi_dirs+=("$out/mpi/pmix/lib/pmix")
  fi
  # Sourced by run.sh with B set to the bundle folder.
  cat >"$out/mpi/env.sh" <<EOF
# Relocated Open MPI $(ompi_info --parsable --version ompi 2>/dev/null | sed -n 's/^ompi:version:full://p') of the bundle (written by scripts/gpu/bundle.sh).
export OPAL_PREFIX="\$B/mpi" OPAL_SYSCONFDIR="\$B/mpi/etc" OPAL_PKGDATADIR="\$B/mpi/share/openmpi"
export OPAL_LIBDIR="\$B/mpi/$rel_libdir" OPAL_PKGLIBDIR="\$B/mpi/$rel_pkglib"
export PMIX_PREFIX="\$B/mpi/pmix" PMIX_LIBDIR="\$B/mpi/pmix/lib" PMIX_PKGLIBDIR="\$B/mpi/pmix/lib/pmix"
export PMIX_PKGDATADIR="\$B/mpi/pmix/share/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
}
if stage_openmpi; then
  status_lines+=("mpirun: bundled (relocated Open MPI)")
else
  rm -rf "$out/mpi"
  status_lines+=("mpirun: not bundled (no relocatable Open MPI here)")
fi

# The closure: every library a staged ELF file needs (ldd lists the transitive ones too), then
# the same for each library added, until nothing new appears. Paths are resolved by the build
# machine's loader; the copies land in lib/ under their soname.
elf_files() {
  find "$out/bin" "$out/lib" "${mpi_dirs[@]}" -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null
  [[ -d $out/mpi/bin ]] && find "$out/mpi/bin" -type f
}
declare -A scanned=()
missing=()
while :; do
  to_scan=()
  while read -r f; do
    [[ -n ${scanned[$f]:-} ]] || { to_scan+=("$f"); scanned[$f]=1; }
  done < <(elf_files)
  ((${#to_scan[@]})) || break
  while read -r name path; do
    [[ $name =~ $system_libs || -e $out/lib/$name ]] && continue
    if [[ $path == "not" ]]; then
      missing+=("$name")
    else
      stage_elf "$path" "$out/lib/$name"
    fi
  done < <(for f in "${to_scan[@]}"; do
             LD_LIBRARY_PATH="$out/lib" ldd "$f" 2>/dev/null | awk '$2 == "=>" {print $1, $3}'
           done | sort -u)
done
if ((${#missing[@]})); then
  die "libraries not found on this machine: $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
fi

# UCX loads its transport modules (lib<framework>_<name><ext>) from <dir of libucs>/ucx, with the
# extension of libucs's own file name (.so.0 here), then from UCX_MODULE_DIR. Shared memory
# (posix, sysv), self and tcp are inside libuct; the modules add CMA and InfiniBand. A module
# whose libraries are not carried (ib, rdmacm: libibverbs, librdmacm) is left out: UCX skips a
# module it cannot load without a word (debug log only).
ucx_modules=()
if [[ -f $out/lib/libucs.so.0 ]]; then
  ucs_path=$(ldd "$out/lib/$soname" | awk '$1 == "libucs.so.0" {print $3}')  # the system's copy
  [[ -n $ucs_path ]] || ucs_path=$(ldconfig -p | awk '$1 == "libucs.so.0" {print $NF; exit}')
  ucx_src=$(dirname "$(readlink -f "$ucs_path")")/ucx
  mkdir -p "$out/lib/ucx"
  for m in "$ucx_src"/lib*.so.0; do
    [[ -f $m ]] || continue
    if LD_LIBRARY_PATH="$out/lib" ldd "$m" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
         [[ $name =~ $system_libs || -e $out/lib/$name ]] || exit 1
       done; then
      stage_elf "$m" "$out/lib/ucx/$(basename "$m")"
      ucx_modules+=("$(basename "$m")")
    fi
  done
  status_lines+=("ucx modules: ${ucx_modules[*]:-none}")
fi

# Python package and its tests, used in place (run.sh sets PYTHONPATH and SPARSECOLL_LIBRARY).
cp -r "$root/bindings/python/sparsecoll" "$root/bindings/python/tests" "$out/python/"
find "$out/python" -name __pycache__ -prune -exec rm -rf {} +
# The PyTorch peer of the GPU rows (run.sh runs it with the machine's python3 and torch).
install -m 755 "$root/perf/peers/torch_micro_peer.py" "$out/peers/torch_micro_peer.py"

install -m 755 "$root/scripts/gpu/run.sh" "$out/run.sh"
install -m 644 "$root/scripts/gpu/summarize.py" "$out/summarize.py"

finish_elf_files

# --- record what was bundled -----------------------------------------------------------------
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
[[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] && dirty=true
nccl_header=$(cache_value SCCL_NCCL_INCLUDE_DIR)/nccl.h
nccl_built=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{v[$2]=$3} END {if (v["NCCL_MAJOR"] != "") print v["NCCL_MAJOR"]"."v["NCCL_MINOR"]"."v["NCCL_PATCH"]}' "$nccl_header" 2>/dev/null || true)
nvcc_version=$(config_value CUDA_VERSION)
json_list() { local first=1; printf '['; for x in "$@"; do ((first)) || printf ', '; printf '"%s"' "$x"; first=0; done; printf ']'; }
cat >"$out/BUILD_INFO.json" <<EOF
{
  "commit": "$commit",
  "commit_subject": $(git -C "$root" log -1 --format=%s 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))' 2>/dev/null || echo '""'),
  "commit_date": "$(git -C "$root" log -1 --format=%cI 2>/dev/null)",
  "dirty": $dirty,
  "bundled_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "build_type": "$(cache_value CMAKE_BUILD_TYPE)",
  "cuda_architectures": "$archs",
  "nvcc": "$nvcc_version",
  "nccl_built_against": "$nccl_built",
  "bundled": $(json_list "${status_lines[@]}")
}
EOF

# --- size ------------------------------------------------------------------------------------
bytes=$(du -sb "$out" | cut -f1)
limit=$((max_mb * 1024 * 1024))
printf 'bundle.sh: %s: %s MiB (limit %s MiB)\n' "$out" "$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')" "$max_mb"
printf '  %s\n' "${status_lines[@]}"
((bytes <= limit)) || die "the bundle is $bytes bytes, over the limit of $limit"
