"""Gradient accumulation with DDP's no_sync() under mpirun (mpi_worker.py's "no_sync" mode): the
hook runs once per optimizer step, on the accumulated gradient, so the residual sees one call per
step: the bucket the hook gets equals the local model's gradient accumulated over the micro-batches,
the sparsifier counts one call per step, and every rank ends with the same parameters."""

import copy

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll.torch as sparse_torch
from ddp_checks import all_ranks, check, data, model_for_tests

STEPS, MICRO_BATCHES = 3, 3


def test_no_sync(comm):
    rank = dist.get_rank()
    model = model_for_tests()
    local = copy.deepcopy(model)
    ddp = DistributedDataParallel(model)
    state = sparse_torch.HookState(comm, algorithm="micro", density=0.05)
    seen = []

    def recording_hook(hook_state, bucket):
        # What the hook is given, in the bucket's parameter order (before the all-reduce).
        index = {id(p): i for i, p in enumerate(model.parameters())}
        seen.append((bucket.buffer().clone(), [index[id(p)] for p in bucket.parameters()]))
        return sparse_torch.hook(hook_state, bucket)

    ddp.register_comm_hook(state, recording_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    local_parameters = list(local.parameters())
    for step in range(STEPS):
        optimizer.zero_grad()
        local.zero_grad()
        seen.clear()
        for micro in range(MICRO_BATCHES):
            x, y = data(rank, step * MICRO_BATCHES + micro)
            torch.nn.functional.cross_entropy(local(x), y).backward()
            if micro < MICRO_BATCHES - 1:
                with ddp.no_sync():
                    torch.nn.functional.cross_entropy(ddp(x), y).backward()
            else:
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
        check(len(seen) == len(state.sparsifiers) >= 1,
              "step %d: the hook ran once per bucket (%d calls)" % (step, len(seen)))
        for given, order in seen:
            accumulated = torch.cat([local_parameters[i].grad.reshape(-1) for i in order])
            check(torch.equal(given, accumulated),
                  "step %d: the hook got the gradient accumulated over the micro-batches" % step)
        optimizer.step()
        with torch.no_grad():  # the local model follows the DDP one (only its gradients matter)
            for p, q in zip(local.parameters(), model.parameters()):
                p.copy_(q)
    for sparsifier in state.sparsifiers.values():
        check(sparsifier.stats().iteration == STEPS, "one sparsifier call per optimizer step")
    check(state.traffic.steps == STEPS, "traffic counts optimizer steps")
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    check(all(torch.equal(flat, other) for other in all_ranks(flat)), "ranks agree")
    state.close()
    print("no_sync checks passed", flush=True)
