"""One rank of the multi-process tests, started by test_multiprocess.py under mpirun.

    mpi_worker.py hook PORT    DDP hook (topk) against a reference computed here from every rank's
                               local gradient; all ranks' gradients bitwise identical; the same
                               for GradientSynchronizer, and ExDyna over several steps
    mpi_worker.py train PORT   a few hundred DDP steps with the ExDyna hook; the loss must fall
    mpi_worker.py hook,train PORT   both

gloo sets up DDP (and carries the reference data); sparsecoll carries the gradients. Exits
non-zero on any failure, printing why; every rank checks the same things.
"""

import copy
import sys

from mpi4py import MPI  # initialises MPI before the mpi transport is created

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll
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
        {"hook": test_hook, "train": test_train}[name](via_group if name == "hook" else via_mpi)
    via_group.destroy()
    via_mpi.destroy()
    dist.barrier()
    print("rank %d OK" % world.rank, flush=True)


if __name__ == "__main__":
    main()
