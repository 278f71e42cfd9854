"""PyTorch integration: a DDP communication hook and a gradient synchronizer for loops without DDP.

DDP (three lines in an existing script; docs/python.md):

    state = sparsecoll.torch.HookState(comm, algorithm="exdyna", density=0.01)
    model = DistributedDataParallel(model)
    model.register_comm_hook(state, sparsecoll.torch.hook)

DDP hands the hook one gradient bucket at a time, in bucket order on every rank (so the collective
sparsifier creation below happens in the same order everywhere). Each bucket gets its own
sparsifier, keyed by bucket index, because the error-feedback residual belongs to that buffer.
DDP rebuilds its buckets once, after the first iteration; a bucket whose size changed gets a new
sparsifier (the first iteration's residual is dropped, on every rank alike). A rebuilt bucket of
the same size usually holds the same parameters in another order (measured on PyTorch 1.13: the
first iteration in parameter order, later ones reversed); the library's residual cannot be moved,
so the first iteration's unsent values then stay at their old positions, but the momentum
correction's velocity is moved parameter by parameter into the new layout (GradBucket.parameters()
gives it). The sparse all-reduce is synchronous, so the hook returns an already completed
torch.futures.Future.
"""

import torch as _torch

from .sparsifier import Sparsifier


def _bucket_parameters(bucket):
    # GradBucket.parameters() since PyTorch 1.10: the parameters in the buffer's order.
    return list(bucket.parameters()) if hasattr(bucket, "parameters") else None


def _bucket_tensor(bucket):
    # GradBucket.buffer() since PyTorch 1.10, get_tensor() before.
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


class _Traffic:
    """Bytes and selected entries over the buckets of one step, and totals over steps."""

    def __init__(self):
        self.steps = 0
        self.total_bytes_sent = 0
        self.total_elements = 0
        self.total_selected = 0
        self.last_step = {}
        self._step = {"bytes_sent": 0, "elements": 0, "selected": 0}

    def add(self, stats, elements, step_ends):
        self._step["bytes_sent"] += stats.bytes_sent
        self._step["elements"] += elements
        self._step["selected"] += stats.k_global
        if step_ends:
            step = self._step
            step["density"] = step["selected"] / max(1, step["elements"])
            self.last_step = step
            self.steps += 1
            self.total_bytes_sent += step["bytes_sent"]
            self.total_elements += step["elements"]
            self.total_selected += step["selected"]
            self._step = {"bytes_sent": 0, "elements": 0, "selected": 0}

    def summary(self):
        """Per-step means since creation: bytes sent by this rank, elements, actual density."""
        steps = max(1, self.steps)
        return {"steps": self.steps, "bytes_sent_per_step": self.total_bytes_sent / steps,
                "elements_per_step": self.total_elements / steps,
                "density": self.total_selected / max(1, self.total_elements)}


def _sends_everything(sparsifier):
    """The dense reduction: the dense preset, or any preset with reduction "dense" set."""
    reduction = sparsifier._config.reduction
    return (reduction.decode() if reduction else sparsifier.algorithm) == "dense"


class HookState:
    """State of the DDP hook: the communicator, the sparsifier settings (keyword arguments as in
    sparsecoll.Sparsifier, or config_file) and one sparsifier per bucket.

    momentum (default 0: off) turns on DGC's momentum correction with momentum factor masking
    (Lin et al., "Deep Gradient Compression", ICLR 2018); the optimizer must then run without
    momentum (torch.optim.SGD(..., momentum=0)), because the aggregated gradient already holds it.
    Why: with momentum in the optimizer, after the sparse all-reduce, the residual accumulates raw
    gradients, and an entry sent after t steps in the residual gets momentum only from then on;
    its earlier steps miss their momentum contribution, so the sparse run follows a different,
    slower trajectory than momentum SGD. With the correction each rank keeps a velocity u per
    bucket, u = momentum * u + g, and feeds u (not g) to the sparse all-reduce, whose residual
    then accumulates u (v = v + u) and sends the largest entries of v: the update sent is the
    momentum SGD update, delayed but not lost.
    momentum_masking (default True) zeroes u where an entry was sent, as the library zeroes its
    residual there: otherwise a sent value's momentum keeps pushing the residual in a stale
    direction (DGC section 3.2). The entries sent are taken as the non-zero entries of the
    aggregated output: for the gather reduction (topk, cltk, micro, exdyna, sidco) these are
    exactly the k' globally selected indices, where the library zeroes every rank's residual,
    except a selected entry whose sum over ranks is exactly 0.0 (measure zero; its velocity then
    stays, as if unsent). The sketch (s2) and sync-free reductions get the same rule (the non-zero
    output), which was not checked against where they clear their residuals. The library exposes
    no list of selected indices (scclSparsifierGetStats has counts only), hence the non-zero
    mask. With the dense algorithm nothing is masked (every entry is sent every step, and masking
    would erase the momentum): the correction is then ordinary momentum SGD, avg(m u_r + g_r) = m avg(u) + avg(g), up to float rounding.
    Weight decay and Nesterov stay in the optimizer and are not corrected.
    """

    def __init__(self, comm, op="avg", config_file=None, momentum=0.0, momentum_masking=True,
                 **sparsifier_kwargs):
        if not 0.0 <= float(momentum) < 1.0:
            raise ValueError("momentum must be in [0, 1), not %r" % (momentum,))
        self.comm = comm
        self.op = op
        self.config_file = config_file
        self.momentum = float(momentum)
        self.momentum_masking = bool(momentum_masking)
        self.sparsifier_kwargs = sparsifier_kwargs
        self.sparsifiers = {}
        self.velocities = {}
        self.layouts = {}
        self.traffic = _Traffic()

    def sparsifier_for(self, key, tensor):
        sparsifier = self.sparsifiers.get(key)
        if sparsifier is None or sparsifier.count != tensor.numel():
            if sparsifier is not None:
                sparsifier.destroy()
            sparsifier = Sparsifier(self.comm, tensor.numel(), tensor.dtype,
                                    config_file=self.config_file, **self.sparsifier_kwargs)
            self.sparsifiers[key] = sparsifier
            self.velocities.pop(key, None)  # a new (resized) bucket: no residual, no velocity
        return sparsifier

    def _velocity_update(self, key, tensor):
        """u = momentum * u + g, and the all-reduce gets u; returns u (None when off)."""
        if self.momentum == 0.0:
            return None
        velocity = self.velocities.get(key)
        if velocity is None:
            velocity = _torch.zeros_like(tensor)
            self.velocities[key] = velocity
        velocity.mul_(self.momentum).add_(tensor)
        tensor.copy_(velocity)
        return velocity

    def _follow_layout(self, key, parameters, count):
        """Moves the velocity into a rebuilt bucket's layout (same parameters, another order)."""
        old, self.layouts[key] = self.layouts.get(key), parameters
        velocity = self.velocities.get(key)
        if old is None or velocity is None or (len(old) == len(parameters) and all(
                a is b for a, b in zip(old, parameters))):
            return
        old_offsets, offset = {}, 0
        for p in old:
            old_offsets[id(p)] = offset
            offset += p.numel()
        if (offset != count or sum(p.numel() for p in parameters) != count or
                set(old_offsets) != {id(p) for p in parameters}):
            del self.velocities[key]  # other parameters (or padding): start again
            return
        moved, offset = _torch.empty_like(velocity), 0
        for p in parameters:
            start = old_offsets[id(p)]
            moved[offset:offset + p.numel()] = velocity[start:start + p.numel()]
            offset += p.numel()
        self.velocities[key] = moved

    def reduce(self, key, tensor, step_ends, parameters=None):
        """The sparse all-reduce of one bucket, in place. parameters: the bucket's parameters in
        its layout's order, where known (the DDP hook), so the velocity can follow a rebuild."""
        sparsifier = self.sparsifier_for(key, tensor)
        if parameters is not None and self.momentum:
            self._follow_layout(key, parameters, tensor.numel())
        velocity = self._velocity_update(key, tensor)
        sparsifier.allreduce(tensor, op=self.op)
        if velocity is not None and self.momentum_masking and not _sends_everything(sparsifier):
            velocity.masked_fill_(tensor != 0, 0.0)
        self.traffic.add(sparsifier.stats(), tensor.numel(), step_ends)
        return tensor

    def close(self):
        for sparsifier in self.sparsifiers.values():
            sparsifier.destroy()
        self.sparsifiers.clear()
        self.velocities.clear()
        self.layouts.clear()


def hook(state, bucket):
    """DDP communication hook: model.register_comm_hook(state, sparsecoll.torch.hook)."""
    tensor = _bucket_tensor(bucket)
    state.reduce(bucket.index(), tensor, bucket.is_last(), _bucket_parameters(bucket))
    future = _torch.futures.Future()
    future.set_result(tensor)
    return future


class GradientSynchronizer:
    """For loops without DDP: call synchronize() after backward() and before optimizer.step().

    The parameters' gradients are packed into flat buckets of at most bucket_cap_mb (in
    parameter order, which must be the same on every rank), each bucket goes through its own
    sparsifier, and the result is copied back. Missing gradients count as zeros. momentum and
    momentum_masking: DGC momentum correction, as in HookState (then SGD without momentum).
    """

    def __init__(self, parameters, comm, bucket_cap_mb=25, op="avg", config_file=None,
                 momentum=0.0, momentum_masking=True, **sparsifier_kwargs):
        self.parameters = [p for p in parameters if p.requires_grad]
        self.state = HookState(comm, op=op, config_file=config_file, momentum=momentum,
                               momentum_masking=momentum_masking, **sparsifier_kwargs)
        self.buckets = []
        cap = int(bucket_cap_mb * 1024 * 1024)
        current, current_bytes = [], 0
        for parameter in self.parameters:
            size = parameter.numel() * parameter.element_size()
            same_type = not current or current[0].dtype == parameter.dtype
            if current and (current_bytes + size > cap or not same_type):
                self.buckets.append(current)
                current, current_bytes = [], 0
            current.append(parameter)
            current_bytes += size
        if current:
            self.buckets.append(current)

    @property
    def traffic(self):
        return self.state.traffic

    def synchronize(self):
        for index, params in enumerate(self.buckets):
            flat = _torch.cat([
                (p.grad if p.grad is not None else _torch.zeros_like(p)).reshape(-1).detach()
                for p in params
            ])
            self.state.reduce(index, flat, index == len(self.buckets) - 1)
            offset = 0
            for p in params:
                piece = flat[offset:offset + p.numel()].view_as(p)
                if p.grad is None:
                    p.grad = piece.clone()
                else:
                    p.grad.copy_(piece)
                offset += p.numel()

    def close(self):
        self.state.close()
