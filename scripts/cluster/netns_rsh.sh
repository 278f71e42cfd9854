#!/bin/sh
# The "ssh" mpirun uses inside the emulated cluster (netns_cluster.sh): host 10.77.0.(i+1) is
# node i; the command runs inside namespace sccl_ns$i with its own UTS namespace and hostname, so
# every orted has its own host name and session directory (without it about 1 launch in 8 hung).
host=$1
shift
i=$((${host##*.} - 1))
exec ip netns exec "sccl_ns$i" unshare --uts /bin/sh -c "hostname node$i; $*"
