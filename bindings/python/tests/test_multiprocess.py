"""Multi-process tests: mpi_worker.py on 2 and 4 processes under mpirun (gloo for DDP set-up,
sparsecoll's mpi transport for the gradients). Every rank checks and exits non-zero on failure."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_worker.py")
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nprocs, mode, timeout=280):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    command = [MPIRUN, "-np", str(nprocs), "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
               "-x", "PYTHONPATH", "-x", "SPARSECOLL_LIBRARY", "-x", "OMP_NUM_THREADS",
               sys.executable, WORKER, mode, str(free_port())]
    env.setdefault("PYTHONPATH", "")
    env.setdefault("SPARSECOLL_LIBRARY", "")
    if not env["SPARSECOLL_LIBRARY"]:
        import sparsecoll
        env["SPARSECOLL_LIBRARY"] = sparsecoll.library_path
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert output.count(" OK") == nprocs, output
    return output


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_ddp_hook_on_four_processes_matches_reference_and_ranks_agree():
    launch(4, "hook")


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_ddp_hook_on_two_processes_training_lowers_the_loss_and_momentum_correction():
    # One launch: each start-up imports torch on every rank.
    output = launch(2, "hook,train,momentum,async,no_sync")
    assert "mean loss" in output
    assert "momentum checks passed" in output
    assert "async hook checks passed" in output
    assert "no_sync checks passed" in output


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_ddp_training_resumes_bit_for_bit_in_new_processes(tmp_path):
    # Two launches: the second one's processes know the first only through the files.
    assert "checkpoints saved" in launch(4, "checkpoint_save=%s" % tmp_path)
    assert "resume checks passed" in launch(4, "checkpoint_resume=%s" % tmp_path)
