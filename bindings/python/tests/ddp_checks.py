"""The checks both multi-process workers run on every rank (mpi_worker.py under mpirun,
torchrun_worker.py under torchrun): a DDP hook (topk) against a reference computed here from every
rank's local gradient, all ranks' gradients bitwise identical, the same for GradientSynchronizer,
ExDyna over several steps; and a few hundred DDP steps with the ExDyna hook where the loss must
fall. gloo (the default process group) carries the reference data; the communicator passed in
carries the gradients. A failed check prints why and exits non-zero.
"""

import copy
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll.torch as sparse_torch


def model_for_tests():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5))


def flat_grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def all_ranks(tensor):
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return out


def check(condition, what):
    if not condition:
        print("rank %d FAILED: %s" % (dist.get_rank(), what), flush=True)
        sys.exit(1)


def data(rank, step, batch=16):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(batch, 20, generator=g)
    y = (x[:, :5] * 2).argmax(dim=1)  # a learnable labelling
    return x, y


def test_hook(comm):
    rank, size = dist.get_rank(), dist.get_world_size()
    density = 0.1
    model = model_for_tests()
    local = copy.deepcopy(model)
    ddp = DistributedDataParallel(model)
    state = sparse_torch.HookState(comm, algorithm="topk", density=density)
    ddp.register_comm_hook(state, sparse_torch.hook)
    x, y = data(rank, 0)
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
    torch.nn.functional.cross_entropy(local(x), y).backward()

    # Reference: the union of every rank's top-k indices, averaged over ranks (docs/algorithms/
    # topk.md). One bucket holds every parameter, so the layout inside it does not matter.
    grads = all_ranks(flat_grads(local))
    k = int(density * grads[0].numel())
    union = torch.zeros(grads[0].numel(), dtype=torch.bool)
    for g in grads:
        union[g.abs().topk(k).indices] = True
    reference = torch.where(union, sum(g.double() for g in grads) / size, torch.zeros(1).double())
    result = flat_grads(model)
    check(len(state.sparsifiers) == 1, "one bucket, one sparsifier")
    check(torch.allclose(result.double(), reference, rtol=0, atol=1e-6),
          "hook result differs from the reference by %g" %
          (result.double() - reference).abs().max())
    check(all(torch.equal(result, other) for other in all_ranks(result)),
          "ranks' gradients differ after the hook")
    traffic = state.traffic.summary()
    check(traffic["steps"] == 1 and abs(traffic["density"] - union.float().mean()) < 1e-9,
          "traffic summary %s" % traffic)

    # GradientSynchronizer with the dense algorithm equals gloo's average; two buckets.
    plain = model_for_tests()
    sync = sparse_torch.GradientSynchronizer(plain.parameters(), comm, bucket_cap_mb=0.004,
                                             algorithm="dense")
    check(len(sync.buckets) > 1, "small cap gives several buckets")
    torch.nn.functional.cross_entropy(plain(x), y).backward()
    expected = flat_grads(plain).clone()
    dist.all_reduce(expected)
    sync.synchronize()
    check(torch.allclose(flat_grads(plain), expected / size, atol=1e-6),
          "GradientSynchronizer (dense) differs from gloo's average")

    # ExDyna over several steps (rebucketing after step 1 included): ranks stay identical.
    ddp_state = sparse_torch.HookState(comm, algorithm="exdyna", density=0.05)
    model2 = DistributedDataParallel(model_for_tests())
    model2.register_comm_hook(ddp_state, sparse_torch.hook)
    for step in range(5):
        model2.zero_grad()
        x, y = data(rank, step + 1)
        torch.nn.functional.cross_entropy(model2(x), y).backward()
        result = flat_grads(model2.module)
        check(all(torch.equal(result, other) for other in all_ranks(result)),
              "exdyna step %d: ranks differ" % step)
    check(ddp_state.traffic.steps == 5, "five steps counted")
    state.close()
    ddp_state.close()
    sync.close()


def test_train(comm):
    rank = dist.get_rank()
    model = DistributedDataParallel(model_for_tests())
    state = sparse_torch.HookState(comm, algorithm="exdyna", density=0.05)
    model.register_comm_hook(state, sparse_torch.hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(300):
        x, y = data(rank, step)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first, last = sum(losses[:30]) / 30, sum(losses[-30:]) / 30
    print("rank %d: mean loss of steps 0-29 %.3f, of steps 270-299 %.3f, density %.4f" %
          (rank, first, last, state.traffic.summary()["density"]), flush=True)
    check(last < 0.6 * first, "loss did not fall enough")
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    check(all(torch.equal(params, other) for other in all_ranks(params)), "models diverged")
    state.close()
