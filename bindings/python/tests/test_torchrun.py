"""torchrun launch (no MPI): torchrun_worker.py on 2 processes with the communicator from
Communicator.from_env() and the default transport, which must be "ucx". Registered in CTest only
when the library is built with UCX. UCX_TLS defaults to self,sm (shared memory, as on one host);
set it to self,tcp to run the same over TCP. Every rank checks and exits non-zero on failure."""

import os
import subprocess
import sys

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun_worker.py")
# torch 1.13 (Debian 12) on Python 3.11: torchrun's default --redirects 0 / --tee 0 parse to None
# (Python 3.11 no longer iterates the zero flag Std.NONE) and the launcher dies with
# "AttributeError: 'NoneType' object has no attribute 'get'" before starting any worker. A mapping
# naming only a local rank that does not exist parses, and leaves every real rank at Std.NONE:
# the default behaviour (output straight to the console).
DEBIAN_PY311_WORKAROUND = ["--redirects", "9:1", "--tee", "9:1"]


def launch(nprocs, mode, timeout=280):
    env = dict(os.environ, OMP_NUM_THREADS="1", UCX_WARN_UNUSED_ENV_VARS="n")
    env.setdefault("UCX_TLS", "self,sm")
    for name in ("SCCL_TRANSPORT", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                 "MPI_LOCALNRANKS"):  # the default must be chosen, and this is no MPI launch
        env.pop(name, None)
    if not env.get("SPARSECOLL_LIBRARY"):
        import sparsecoll
        env["SPARSECOLL_LIBRARY"] = sparsecoll.library_path
    # torch.distributed.run is torchrun's module: the same launcher without relying on PATH.
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node", str(nprocs)] + DEBIAN_PY311_WORKAROUND + [WORKER, mode]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count(" OK") == nprocs, output
    return output


def test_torchrun_two_processes_default_to_ucx_and_the_hook_matches_the_reference():
    launch(2, "hook")
