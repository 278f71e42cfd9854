"""One rank of the multi-process tests, started by test_multiprocess.py under mpirun (the checks
themselves are in ddp_checks.py, shared with torchrun_worker.py).

    mpi_worker.py hook PORT    DDP hook (topk) against a reference computed from every rank's
                               local gradient; all ranks' gradients bitwise identical; the same
                               for GradientSynchronizer, and ExDyna over several steps
    mpi_worker.py train PORT   a few hundred DDP steps with the ExDyna hook; the loss must fall
    mpi_worker.py momentum PORT    DGC momentum correction (momentum_checks.py)
    mpi_worker.py async PORT   the asynchronous hook against the synchronous one (async_checks.py)
    mpi_worker.py no_sync PORT  gradient accumulation with DDP's no_sync() (accumulation_checks.py)
    mpi_worker.py checkpoint_save=DIR PORT, checkpoint_resume=DIR PORT
                               training saved to per-rank files, and resumed from them in a new
                               launch (checkpoint_checks.py)
    mpi_worker.py hook,train PORT   several modes in one launch

gloo sets up DDP (and carries the reference data); sparsecoll carries the gradients. Exits
non-zero on any failure, printing why; every rank checks the same things.
"""

import sys

from mpi4py import MPI  # initialises MPI before the mpi transport is created

import torch.distributed as dist

import sparsecoll
from accumulation_checks import test_no_sync
from async_checks import test_async
from checkpoint_checks import resume_phase, save_phase
from ddp_checks import check, test_hook, test_train
from momentum_checks import test_momentum


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    world = MPI.COMM_WORLD
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                            rank=world.rank, world_size=world.size)
    # Both creation paths; the test alternates which one carries the gradients.
    via_group = sparsecoll.Communicator.from_process_group(timeout_ms=60000)
    via_mpi = sparsecoll.Communicator.from_mpi(timeout_ms=60000)
    check((via_group.rank, via_group.size) == (world.rank, world.size), "process-group comm")
    check((via_mpi.rank, via_mpi.size, via_mpi.transport) == (world.rank, world.size, "mpi"),
          "MPI comm")
    for name in mode.split(","):  # "hook,train" runs both in one launch (saves a torch start-up)
        name, _, directory = name.partition("=")
        if name in ("checkpoint_save", "checkpoint_resume"):
            phase = save_phase if name == "checkpoint_save" else resume_phase
            phase(via_mpi, directory)
            continue
        checks = {"hook": test_hook, "train": test_train, "momentum": test_momentum,
                  "async": test_async, "no_sync": test_no_sync}
        checks[name](via_group if name == "hook" else via_mpi)
    via_group.destroy()
    via_mpi.destroy()
    dist.barrier()
    print("rank %d OK" % world.rank, flush=True)


if __name__ == "__main__":
    main()
