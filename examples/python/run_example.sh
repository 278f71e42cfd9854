#!/usr/bin/env bash
# Runs examples/python/train_fashion_mnist.py on 4 ranks under mpirun. Arguments go to the script,
# e.g.  examples/python/run_example.sh --algorithm exdyna --density 0.01 --epochs 4
# Uses the installed sparsecoll package if there is one, else the source tree's, with the
# library of ${SCCL_BUILD_DIR:-build} (build it first: scripts/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nprocs=${NPROCS:-4}
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c "import sparsecoll" 2>/dev/null; then
  export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
fi
export SPARSECOLL_BUILD_DIR=${SPARSECOLL_BUILD_DIR:-${SCCL_BUILD_DIR:-$root/build}}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# A free port for gloo's rendezvous, so concurrent runs do not collide.
port=$("$python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
exec mpirun -np "$nprocs" --oversubscribe --mca mpi_yield_when_idle 1 \
  "$python" "$root/examples/python/train_fashion_mnist.py" --port "$port" "$@"
