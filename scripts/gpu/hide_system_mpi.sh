#!/usr/bin/env bash
# hide_system_mpi.sh BUNDLE COMMAND...: runs COMMAND with this machine's Open MPI, PMIx, UCX
# modules, hwloc plugins and every system copy of a library the bundle carries made invisible,
# as on the GPU machine, which has none of them. Must run in a private mount namespace
# (check_bundle.sh starts it with unshare -m): the mounts vanish with the namespace.
set -euo pipefail
bundle=$1
shift
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
         /etc/openmpi /usr/lib/x86_64-linux-gnu/ucx /usr/lib/x86_64-linux-gnu/hwloc /usr/share/hwloc; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
for so in "$bundle"/lib/*.so*; do
  for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib /usr/local/cuda/lib64; do
    real=$(readlink -f "$d/$(basename "$so")" 2>/dev/null) || continue
    [[ -f $real ]] && mount --bind /dev/null "$real"
  done
done
for p in mpirun mpiexec orted orterun; do
  real=$(readlink -f "$(command -v $p 2>/dev/null)" 2>/dev/null) || continue
  [[ -f $real ]] && mount --bind /dev/null "$real"
done
exec "$@"
