"""PyTorch integration: a DDP communication hook and a gradient synchronizer for loops without DDP.

DDP (three lines in an existing script; docs/python.md):

    state = sparsecoll.torch.HookState(comm, algorithm="exdyna", density=0.01)
    model = DistributedDataParallel(model)
    model.register_comm_hook(state, sparsecoll.torch.hook)

DDP hands the hook one gradient bucket at a time, in bucket order on every rank (so the collective
sparsifier creation below happens in the same order everywhere). Each bucket gets its own
sparsifier, keyed by bucket index, because the error-feedback residual belongs to that buffer.
DDP rebuilds its buckets once, after the first iteration; a bucket whose size changed gets a new
sparsifier (the first iteration's residual is dropped, on every rank alike). The sparse
all-reduce is synchronous, so the hook returns an already completed torch.futures.Future.
"""

import torch as _torch

from .sparsifier import Sparsifier


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


class HookState:
    """State of the DDP hook: the communicator, the sparsifier settings (keyword arguments as in
    sparsecoll.Sparsifier, or config_file) and one sparsifier per bucket."""

    def __init__(self, comm, op="avg", config_file=None, **sparsifier_kwargs):
        self.comm = comm
        self.op = op
        self.config_file = config_file
        self.sparsifier_kwargs = sparsifier_kwargs
        self.sparsifiers = {}
        self.traffic = _Traffic()

    def sparsifier_for(self, key, tensor):
        sparsifier = self.sparsifiers.get(key)
        if sparsifier is None or sparsifier.count != tensor.numel():
            if sparsifier is not None:
                sparsifier.destroy()
            sparsifier = Sparsifier(self.comm, tensor.numel(), tensor.dtype,
                                    config_file=self.config_file, **self.sparsifier_kwargs)
            self.sparsifiers[key] = sparsifier
        return sparsifier

    def reduce(self, key, tensor, step_ends):
        sparsifier = self.sparsifier_for(key, tensor)
        sparsifier.allreduce(tensor, op=self.op)
        self.traffic.add(sparsifier.stats(), tensor.numel(), step_ends)
        return tensor

    def close(self):
        for sparsifier in self.sparsifiers.values():
            sparsifier.destroy()
        self.sparsifiers.clear()


def hook(state, bucket):
    """DDP communication hook: model.register_comm_hook(state, sparsecoll.torch.hook)."""
    tensor = _bucket_tensor(bucket)
    state.reduce(bucket.index(), tensor, bucket.is_last())
    future = _torch.futures.Future()
    future.set_result(tensor)
    return future


class GradientSynchronizer:
    """For loops without DDP: call synchronize() after backward() and before optimizer.step().

    The parameters' gradients are packed into flat buckets of at most bucket_cap_mb (in
    parameter order, which must be the same on every rank), each bucket goes through its own
    sparsifier, and the result is copied back. Missing gradients count as zeros.
    """

    def __init__(self, parameters, comm, bucket_cap_mb=25, op="avg", config_file=None,
                 **sparsifier_kwargs):
        self.parameters = [p for p in parameters if p.requires_grad]
        self.state = HookState(comm, op=op, config_file=config_file, **sparsifier_kwargs)
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
