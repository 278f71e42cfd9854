#!/bin/bash
# Open MPI's own first all-reduces on the emulated cluster, without the library: what the link
# probe's sequence (small all-reduces, then 256 KiB ones) costs a fresh process. Modes: "none"
# (6 uint64 all-reduces, then 4 timed 256 KiB ones), "ring" and "all" (first a 1-byte exchange
# with both ring neighbours, or with every rank: the TCP connections opened before the bulk),
# "bulk64k" (first one 64 KiB all-reduce). Then "none" without tc's rate limit, and "none" with
# 4 MiB TCP buffers in every namespace. Each line: the slowest rank's milliseconds.
# Run from the repository root as root (mpicxx from libopenmpi-dev). OUT: where to write.
OUT=${1:?usage: command.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
mpicxx -O2 -o "$OUT/first_calls" "$here/first_calls.cc"
C=scripts/cluster/netns_cluster.sh
run() {  # N MODE
  bash $C mpirun "$1" sh -c 'exec taskset -c $((OMPI_COMM_WORLD_RANK % 2)) "$0" "$1" 65536' \
    "$OUT/first_calls" "$2" 2>&1 | grep 'n='
}
tcp_buffers() {  # N RMEM WMEM
  for i in $(seq 0 $(($1 - 1))) hub; do
    ns=sccl_ns$i; [ $i = hub ] && ns=sccl_hub
    ip netns exec $ns sysctl -qw net.ipv4.tcp_rmem="$2" net.ipv4.tcp_wmem="$3"
  done
}
for N in 4 8; do
  bash $C down $N >/dev/null 2>&1
  bash $C up $N >/dev/null && bash $C rate 1gbit $N >/dev/null
  echo "== $N ranks, 1gbit"
  for rep in 1 2 3; do for mode in none ring all bulk64k; do run $N $mode; done; done
  echo "== $N ranks, 1gbit, TCP buffers 4 MiB (tcp_rmem, tcp_wmem)"
  tcp_buffers $N "4096 4194304 33554432" "4096 4194304 4194304"
  for rep in 1 2 3; do run $N none; done
  tcp_buffers $N "4096 131072 33554432" "4096 16384 4194304"
  echo "== $N ranks, no rate limit"
  bash $C rate off $N >/dev/null
  for rep in 1 2 3; do run $N none; done
  bash $C down $N >/dev/null 2>&1
done
