"""One rank of the torchrun test, started by test_torchrun.py as
`python3 -m torch.distributed.run --standalone --nproc_per_node N torchrun_worker.py MODE`.

As in a torchrun DDP script: gloo is set up first (env://: RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT
from torchrun), then Communicator.from_env() with no transport named, which takes the unique id
through that process group and the default transport (not an MPI launch, so "ucx"). ddp_checks.py
then runs the same checks as under mpirun. MODE: hook, train or hook,train.

(The process group comes first because from_env without one has rank 0 host a TCPStore at
MASTER_PORT, the port env:// init_process_group would need for its own store afterwards.)
"""

import os
import sys

import torch.distributed as dist

import sparsecoll
from ddp_checks import check, test_hook, test_train


def main():
    mode = sys.argv[1]
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
    comm = sparsecoll.Communicator.from_env(timeout_ms=60000)
    check((comm.rank, comm.size) == (rank, size), "from_env comm is rank %d of %d" %
          (comm.rank, comm.size))
    check(comm.transport == os.environ.get("SCCL_EXPECT_TRANSPORT", "ucx"),
          "default transport under torchrun is %r" % comm.transport)
    for name in mode.split(","):
        {"hook": test_hook, "train": test_train}[name](comm)
    comm.destroy()
    dist.barrier()
    print("rank %d OK" % rank, flush=True)


if __name__ == "__main__":
    main()
