# shellcheck shell=bash disable=SC2154  # cluster, here, root, build: the caller's
# What the benchmarks on netns_cluster.sh's emulated nodes share (sourced, not run). The caller
# sets `cluster` (netns_cluster.sh), `here` (this folder), `root` (the checkout) and `build`.

# cluster_require NAME: root (network namespaces, tc) and the library built, else exit 2.
cluster_require() {
  [ "$(id -u)" -eq 0 ] || { echo "$1: needs root (ip netns, tc)" >&2; exit 2; }
  [ -f "$build/libsparsecoll.so" ] || { echo "$1: no $build/libsparsecoll.so" >&2; exit 2; }
}

# cluster_down_on_exit NODES: takes down what an interrupted run left, now, and the cluster of
# NODES nodes when the script exits (an interrupt exits 130).
cluster_down_on_exit() {
  cluster_nodes=$1
  trap '"$cluster" down "$cluster_nodes" >/dev/null 2>&1 || true' EXIT
  trap 'exit 130' INT TERM
  "$cluster" down "$cluster_nodes" >/dev/null 2>&1 || true
}

# cluster_python NODE SECONDS [VAR=value ...] -- SCRIPT ARGS...: /usr/bin/python3 SCRIPT in node
# NODE's namespace, at most SECONDS, with the checkout's package and library, sparsecoll over UCX
# and gloo on the node's link (pv NODE), one thread, and the extra variables given.
cluster_python() {
  local node=$1 limit=$2
  shift 2
  local extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  ip netns exec "sccl_ns$node" env PYTHONPATH="$root/bindings/python" \
    SPARSECOLL_LIBRARY="$build/libsparsecoll.so" SCCL_TRANSPORT=ucx \
    SCCL_SOCKET_IFNAME="pv$node" GLOO_SOCKET_IFNAME="pv$node" OMP_NUM_THREADS=1 "${extra[@]}" \
    "$here/ucx_node_env.sh" timeout "$limit" /usr/bin/python3 "$@"
}

# cluster_wait WHAT PID...: waits for every PID; at the first failure kills the others and exits 1.
cluster_wait() {
  local what=$1 pid
  shift
  for pid in "$@"; do
    wait "$pid" || { kill "$@" 2>/dev/null; echo "$what failed" >&2; exit 1; }
  done
}
