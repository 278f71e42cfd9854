"""DGC momentum correction (HookState(momentum=...), sparsecoll/torch.py), checked on every rank
of a multi-process launch (mpi_worker.py momentum PORT):

- topk through the DDP hook over several steps against a reference computed here in the bucket's
  first (canonical) layout, into which the hook permutes DDP's rebuilt bucket: each rank's
  velocity u = m u + g, the library's residual v = v + u, every rank's top k of |v|, the union
  averaged, v zeroed at the union, u zeroed where the output is non-zero; every rank's output
  bitwise identical, and the hook's velocity equal to the reference's. The residual carried
  across the rebuild must stay with its parameters (a reference that left it at its old
  positions differs).
- micro (selection not recomputed here): the velocity recurrence and its masking hold against the
  hook's recorded inputs and outputs, with masking on and off; ranks bitwise identical.
- dense: GradientSynchronizer and the DDP hook (whose bucket DDP rebuilds in another order after
  the first step) with the correction and SGD without momentum follow SGD with momentum on gloo's
  averaged gradient (the same up to float rounding).
"""

import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll.torch as sparse_torch
from ddp_checks import all_ranks, check, data, flat_grads, model_for_tests

MOMENTUM = 0.9


def recording_hook(inputs, outputs, layouts):
    """sparse_torch.hook that keeps a copy of every bucket before and after the all-reduce, and
    its parameters in layout order (DDP wants a function: it reads the hook's __name__)."""

    def hook(state, bucket):
        tensor = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
        inputs.append(tensor.detach().clone())
        layouts.append(list(bucket.parameters()))
        future = sparse_torch.hook(state, bucket)
        outputs.append(future.value().detach().clone())
        return future

    return hook


def run_hook(comm, steps, **settings):
    """DDP over `steps` steps with the recording hook; the model has one bucket."""
    rank = dist.get_rank()
    state = sparse_torch.HookState(comm, **settings)
    recorder = argparse.Namespace(inputs=[], outputs=[], layouts=[])
    model = DistributedDataParallel(model_for_tests())
    model.register_comm_hook(state, recording_hook(recorder.inputs, recorder.outputs,
                                                   recorder.layouts))
    for step in range(steps):
        model.zero_grad()
        x, y = data(rank, step + 20)
        torch.nn.functional.cross_entropy(model(x), y).backward()
    check(len(recorder.inputs) == steps and len(state.sparsifiers) == 1, "one bucket per step")
    return state, recorder


def relayout(vector, old, new):
    """vector in the layout of parameters `old` rearranged into the layout of `new`."""
    pieces, offset = {}, 0
    for p in old:
        pieces[id(p)] = vector[offset:offset + p.numel()]
        offset += p.numel()
    return torch.cat([pieces[id(p)] for p in new])


def canonical(recorder, tensors):
    """Each step's tensor moved from that step's bucket layout into the first step's, after
    checking that DDP did rebuild the bucket in another order (else nothing here is tested)."""
    layouts = recorder.layouts
    changes = [s for s in range(1, len(layouts))
               if any(a is not b for a, b in zip(layouts[s - 1], layouts[s]))]
    check(changes == [1], "DDP rebuilt the bucket in another order after step 0 (%s)" % changes)
    return [relayout(t, layouts[step], layouts[0]) for step, t in enumerate(tensors)]


def check_topk_reference(comm, steps=4, density=0.1):
    state, recorder = run_hook(comm, steps, algorithm="topk", density=density, momentum=MOMENTUM)
    rank, size = dist.get_rank(), dist.get_world_size()
    # In the canonical layout (DDP syncs the rebuild, so it is the same on every rank):
    # grads[step][rank], each rank's own gradient, and outputs[step].
    grads = [all_ranks(g) for g in canonical(recorder, recorder.inputs)]
    outputs = canonical(recorder, recorder.outputs)
    count = grads[0][0].numel()
    k = int(density * count)
    u = [torch.zeros(count, dtype=torch.float64) for _ in range(size)]
    v = [torch.zeros(count, dtype=torch.float64) for _ in range(size)]
    for step in range(steps):
        union = torch.zeros(count, dtype=torch.bool)
        for r in range(size):
            u[r] = MOMENTUM * u[r] + grads[step][r].double()
            v[r] = v[r] + u[r]
            union[v[r].abs().topk(k).indices] = True
        expected = torch.where(union, sum(v) / size, torch.zeros(1, dtype=torch.float64))
        for r in range(size):
            v[r] = torch.where(union, torch.zeros(1, dtype=torch.float64), v[r])
            u[r] = torch.where(expected != 0, torch.zeros(1, dtype=torch.float64), u[r])
        output = outputs[step]
        error = (output.double() - expected).abs().max()
        check(error < 1e-5, "topk + momentum correction, step %d: %g from the reference" %
              (step, error))
        check(torch.equal((output != 0), union), "step %d: sent entries are not the union" % step)
        check(all(torch.equal(output, other) for other in all_ranks(output)),
              "topk + momentum correction, step %d: ranks differ" % step)
    velocity = state.velocities[0].double()
    check((velocity - u[rank]).abs().max() < 1e-5, "hook velocity differs from the reference")
    state.close()


def check_velocity_recurrence(comm, masking, steps=4):
    state, recorder = run_hook(comm, steps, algorithm="micro", density=0.05, momentum=MOMENTUM,
                               momentum_masking=masking)
    u = torch.zeros_like(recorder.inputs[0])
    masked = 0
    for g, output in zip(canonical(recorder, recorder.inputs),
                         canonical(recorder, recorder.outputs)):
        u = MOMENTUM * u + g  # the same float32 operations as the hook: bitwise equal
        if masking:
            masked += int((output != 0).sum())
            u = u.masked_fill(output != 0, 0.0)
        check(all(torch.equal(output, other) for other in all_ranks(output)),
              "micro + momentum correction: ranks differ")
    check(torch.equal(state.velocities[0], u), "micro velocity (masking %s) differs" % masking)
    check(not masking or masked > 0, "nothing was masked")
    state.close()


def check_dense_is_momentum_sgd(comm, steps=5, lr=0.1):
    rank, size = dist.get_rank(), dist.get_world_size()
    corrected, plain = model_for_tests(), model_for_tests()
    sync = sparse_torch.GradientSynchronizer(corrected.parameters(), comm, algorithm="dense",
                                             momentum=MOMENTUM)
    opt_corrected = torch.optim.SGD(corrected.parameters(), lr=lr, momentum=0.0)
    opt_plain = torch.optim.SGD(plain.parameters(), lr=lr, momentum=MOMENTUM)
    for step in range(steps):
        x, y = data(rank, step + 40)
        for model, opt in ((corrected, opt_corrected), (plain, opt_plain)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
        sync.synchronize()
        for p in plain.parameters():
            dist.all_reduce(p.grad)
            p.grad /= size
        opt_corrected.step()
        opt_plain.step()
    a = torch.cat([p.detach().reshape(-1) for p in corrected.parameters()])
    b = torch.cat([p.detach().reshape(-1) for p in plain.parameters()])
    check(torch.allclose(a, b, rtol=0, atol=1e-5),
          "dense + momentum correction differs from momentum SGD by %g" % (a - b).abs().max())
    check(not torch.equal(flat_grads(corrected), flat_grads(plain)) or steps == 1,
          "velocity (with momentum) should differ from the plain averaged gradient")
    sync.close()

    # The same through the DDP hook, whose bucket DDP rebuilds in another order after step 1:
    # the velocity must stay with its parameters.
    hooked, reference = (DistributedDataParallel(model_for_tests()),
                         DistributedDataParallel(model_for_tests()))
    state = sparse_torch.HookState(comm, algorithm="dense", momentum=MOMENTUM)
    hooked.register_comm_hook(state, sparse_torch.hook)
    opt_hooked = torch.optim.SGD(hooked.parameters(), lr=lr, momentum=0.0)
    opt_reference = torch.optim.SGD(reference.parameters(), lr=lr, momentum=MOMENTUM)
    for step in range(steps):
        x, y = data(rank, step + 60)
        for model, opt in ((hooked, opt_hooked), (reference, opt_reference)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    a = torch.cat([p.detach().reshape(-1) for p in hooked.parameters()])
    b = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    check(torch.allclose(a, b, rtol=0, atol=1e-5),
          "DDP hook, dense + momentum correction differs from momentum SGD by %g" %
          (a - b).abs().max())
    state.close()


def test_momentum(comm):
    check_topk_reference(comm)
    check_velocity_recurrence(comm, masking=True)
    check_velocity_recurrence(comm, masking=False)
    check_dense_is_momentum_sgd(comm)
    if dist.get_rank() == 0:
        print("momentum checks passed", flush=True)
