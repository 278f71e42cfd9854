"""The asynchronous DDP hook under mpirun (mpi_worker.py's "async" mode): DDP with async_hook
trains to bitwise the parameters of DDP with the synchronous hook, with several buckets in flight;
a refused call inside the worker reaches DDP, whose backward raises it on every rank."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll.torch as sparse_torch
from ddp_checks import check, data


def _model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(20, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 5))


def _train(comm, hook, settings, steps=6):
    rank = dist.get_rank()
    model = _model()
    # A model past DDP's 1 MB first bucket, and small buckets after it: several all-reduces
    # per step, so the worker has several in flight.
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.1)
    state = sparse_torch.HookState(comm, **settings)
    ddp.register_comm_hook(state, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(steps):
        x, y = data(rank, step)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
    buckets = len(state.sparsifiers)
    state.close()
    return [p.detach().clone() for p in model.parameters()], buckets


def test_async(comm):
    for settings in (dict(algorithm="micro", density=0.05),
                     dict(algorithm="exdyna", density=0.05, momentum=0.9, nesterov=True)):
        sync, _ = _train(comm, sparse_torch.hook, settings)
        asynchronous, buckets = _train(comm, sparse_torch.async_hook, settings)
        check(buckets > 1, "several buckets (%d)" % buckets)
        check(all(torch.equal(a, b) for a, b in zip(sync, asynchronous)),
              "%s: async_hook's parameters differ from the synchronous hook's" %
              settings["algorithm"])
    # A NaN on rank 0 under the error policy: every rank's future fails, DDP raises it.
    model = _model()
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.1)
    state = sparse_torch.HookState(comm, algorithm="micro", density=0.05, non_finite="error")
    ddp.register_comm_hook(state, sparse_torch.async_hook)
    x, y = data(dist.get_rank(), 0)
    if dist.get_rank() == 0:
        x[0, 0] = float("nan")
    raised = None
    try:
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
    except RuntimeError as error:
        raised = str(error)
    check(raised is not None and "invalid argument" in raised and "NaN" in raised,
          "DDP raised the refused call's error: %r" % (raised,))
    state.close()
    print("async hook checks passed", flush=True)
