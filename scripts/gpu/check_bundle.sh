#!/usr/bin/env bash
# The GPU bundle's check on a machine without a GPU (CTest gpu_bundle_check, label bundle;
# docs/gpu.md, "Running the GPU bundle"):
#   1. stages the bundle from an existing build (bundle.sh --no-build: no second build) into
#      WORK/gpu-bundle and checks its size (bundle.sh fails over the limit) and that it holds no
#      symbolic links;
#   2. for every ELF file in it, `env -i LD_LIBRARY_PATH=<bundle>/lib:<NCCL's folder> ldd`: fails on
#      any library not found, and on any library resolved outside the bundle other than those a
#      bare CUDA machine has (glibc, the C++ runtime, libcuda) and NCCL, so that a library the
#      bundle lacks cannot hide behind this machine's copy;
#   3. the bundle's Open MPI and UCX from the bundle alone: mpirun -np 2 of sparse_allreduce_perf
#      on host buffers over the UCX transport, with UCX's module log showing a module loaded from
#      lib/ucx (UCX_MODULE_LOG_LEVEL=warn prints its module loads); as root the system's Open MPI, PMIx, UCX modules and hwloc are hidden in a private
#      mount namespace first (unshare -m), as on the GPU machine that has none of them;
#   4. env -i run.sh: must print exactly "no GPU: skipped", exit 77 and write the log and a JSON
#      summary with status "no_gpu".
# Usage: scripts/gpu/check_bundle.sh BUILD_DIR WORK_DIR
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:?usage: check_bundle.sh BUILD_DIR WORK_DIR}
work=${2:?usage: check_bundle.sh BUILD_DIR WORK_DIR}
bundle=$work/gpu-bundle
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$(date +%s)

# 1. stage
SCCL_BUILD_DIR=$build_dir "$root/scripts/gpu/bundle.sh" --no-build --out "$bundle"
links=$(find "$bundle" -type l)
[[ -z $links ]] || fail "symbolic links in the bundle: $links"

# 2. every ELF file resolves inside the bundle (or to what a bare CUDA machine has, or NCCL)
nccl_dir=$(dirname "$(/sbin/ldconfig -p | awk '$1 == "libnccl.so.2" && /x86-64/ {print $NF; exit}')")
[[ -f $nccl_dir/libnccl.so.2 ]] || nccl_dir=""
allowed='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so)'
checked=0
problems=()
while read -r f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  checked=$((checked + 1))
  while read -r problem; do
    problems+=("${f#"$bundle"/}: $problem")
  done < <(env -i LD_LIBRARY_PATH="$bundle/lib${nccl_dir:+:$nccl_dir}" /usr/bin/ldd "$f" 2>&1 |
           awk -v allowed="$allowed" -v bundle="$bundle/" -v nccl="${nccl_dir:+$nccl_dir/}" '
             /not found/ { print $1 " not found"; next }
             $2 == "=>" && $3 ~ /^\// && $1 !~ allowed && index($3, bundle) != 1 &&
               (nccl == "" || index($3, nccl) != 1) { print $1 " resolved outside the bundle (" $3 ")" }')
done < <(find "$bundle" -type f)
if ((${#problems[@]})); then
  printf '  %s\n' "${problems[@]}" >&2
  fail "${#problems[@]} library problem(s) in $checked ELF files"
fi
echo "ldd: $checked ELF files, every library inside the bundle${nccl_dir:+ or NCCL ($nccl_dir)} or the base system"

# 3. Open MPI and UCX from the bundle alone
if [[ -f $bundle/mpi/env.sh ]]; then
  hide=()
  if [[ $(id -u) == 0 ]] && unshare -m true 2>/dev/null; then
    hide=(unshare -m bash "$root/scripts/gpu/hide_system_mpi.sh" "$bundle")
  fi
  mpi_log=$work/mpirun.log
  if ! env -i PATH=/usr/bin:/bin HOME="$work" B="$bundle" \
       LD_LIBRARY_PATH="$bundle/lib${nccl_dir:+:$nccl_dir}" SCCL_TRANSPORT=ucx \
       UCX_MODULE_LOG_LEVEL=warn UCX_TLS=self,sm,tcp,cma \
       "${hide[@]}" bash -c 'source "$B/mpi/env.sh" && exec timeout -k 5 90 "$B/mpi/bin/mpirun" \
         -np 2 --oversubscribe -x SCCL_TRANSPORT -x UCX_MODULE_LOG_LEVEL -x UCX_TLS \
         "$B/bin/sparse_allreduce_perf" -u elements -b 10000 -e 10000 -D 0.1 -n 2 -w 1 -W 1 \
         -L 1 -a dense,micro -T 60' >"$mpi_log" 2>&1; then
    tail -n 30 "$mpi_log" >&2
    fail "mpirun of the bundle (log $mpi_log)"
  fi
  grep -q "transport: *ucx\|transport.*ucx" "$mpi_log" || { tail -n 30 "$mpi_log" >&2; fail "the mpirun job did not use the UCX transport"; }
  grep -q "loaded $bundle/lib/ucx/" "$mpi_log" || { tail -n 30 "$mpi_log" >&2; fail "UCX loaded no module from $bundle/lib/ucx"; }
  echo "mpirun -np 2 over UCX from the bundle: passed${hide:+ (system Open MPI, PMIx, UCX, hwloc hidden)}"
  # The multi-process device test's mpirun mode starts from the bundle and skips without a GPU.
  if [[ -x $bundle/bin/sccl_gpu_multiprocess ]]; then
    set +e
    env -i PATH=/usr/bin:/bin HOME="$work" B="$bundle" \
      LD_LIBRARY_PATH="$bundle/lib${nccl_dir:+:$nccl_dir}" \
      "${hide[@]}" bash -c 'source "$B/mpi/env.sh" && exec timeout -k 5 60 "$B/mpi/bin/mpirun" \
        -np 2 --oversubscribe "$B/bin/sccl_gpu_multiprocess" --launcher mpi' >"$mpi_log" 2>&1
    rc=$?
    set -e
    [[ $rc == 77 ]] && grep -q "^SKIP: no usable CUDA device" "$mpi_log" ||
      { tail -n 30 "$mpi_log" >&2; fail "mpirun sccl_gpu_multiprocess --launcher mpi exited $rc, not 77"; }
    echo "mpirun -np 2 sccl_gpu_multiprocess --launcher mpi from the bundle: skipped as it must be without a GPU"
  fi
fi

# 4. run.sh without a GPU
run_dir=$work/run
set +e
out=$(env -i PATH=/usr/bin:/bin HOME="$work" "$bundle/run.sh" "$run_dir" 2>&1)
rc=$?
set -e
[[ $rc == 77 ]] || { echo "$out" >&2; fail "run.sh exited $rc, not 77"; }
[[ $out == "no GPU: skipped" ]] || fail "run.sh printed '$out', not 'no GPU: skipped'"
[[ -s $run_dir/gpu-bundle.log ]] || fail "run.sh wrote no log"
python3 - "$run_dir/gpu-bundle.json" <<'EOF' || fail "bad JSON summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "no_gpu" and s["exit_code"] == 77, s
assert s["commit"] != "unknown", s["commit"]
EOF
echo "run.sh: 'no GPU: skipped', exit 77, log and JSON written"
echo "check_bundle.sh: passed in $(($(date +%s) - t0)) s"
