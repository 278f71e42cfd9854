"""PyTorch integration: a DDP communication hook and a gradient synchronizer for loops without DDP.

DDP (three lines in an existing script; docs/python.md):

    state = sparsecoll.torch.HookState(comm, algorithm="exdyna", density=0.01)
    model = DistributedDataParallel(model)
    model.register_comm_hook(state, sparsecoll.torch.hook)

DDP hands the hook one gradient bucket at a time, in bucket order on every rank (so the collective
sparsifier creation below happens in the same order everywhere). Each bucket gets its own
sparsifier, keyed by bucket index, because the error-feedback residual belongs to that buffer.
DDP rebuilds its buckets once, after the first iteration, and a rebuilt bucket usually holds the
same parameters in another order (measured on PyTorch 1.13: the first iteration in parameter
order, later ones reversed). The library's residual is indexed by position, so the hook keeps
each bucket's first layout as its canonical one: a later layout with the same parameters is
permuted into it before the all-reduce and back after (a gather and a scatter of the bucket; the
residual, the momentum velocity and the selection all stay in the canonical layout, so no unsent
value moves to another parameter). A bucket whose parameters changed (another grouping or size)
gets a new sparsifier and canonical layout: the unsent values of the old one are dropped, on
every rank alike. `hook` runs the sparse all-reduce on the autograd thread and returns an already
completed torch.futures.Future; `async_hook` hands it to the HookState's worker thread, which runs
the buckets in the order they were submitted (the same on every rank, since DDP calls the hook in
bucket order), and returns a Future that completes when the bucket's all-reduce is done, so the
backward pass goes on computing the next buckets meanwhile. An error (a peer that died, a
refused call) is set on the Future, and DDP raises it.

Checkpoints: HookState.state_dict() / load_state_dict() (and pickling, following PyTorch's
convention for communication hook states: the communicator is left out) carry every bucket's
sparsifier state, velocity, optimizer moments and warm-up steps, so that a job restarted from its
checkpoint continues bit for bit; one state per rank (docs/python.md, "Checkpoints").
"""

import numbers
import warnings as _warnings

import torch as _torch

from ._bucket_worker import BucketWorker as _BucketWorker
from ._traffic import Traffic as _Traffic
from .errors import Result, SparsecollError
from .sparsifier import Sparsifier

_HOOK_STATE_VERSION = 1


def _bucket_parameters(bucket):
    # GradBucket.parameters() since PyTorch 1.10: the parameters in the buffer's order.
    return list(bucket.parameters()) if hasattr(bucket, "parameters") else None


def _bucket_tensor(bucket):
    # GradBucket.buffer() since PyTorch 1.10, get_tensor() before.
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


def _sends_everything(sparsifier):
    """The dense reduction: the dense preset, or any preset with reduction "dense" set."""
    reduction = sparsifier._config.reduction
    return (reduction.decode() if reduction else sparsifier.algorithm) == "dense"


def _mask_sent(sparsifier, velocity, output):
    """Momentum factor masking: u = 0 where the call's output carries a sent value. CPU tensors:
    the library's list of the call (scclSparsifierMaskSent: k' writes, where a comparison and a
    masked fill would pass over the bucket twice); GPU tensors, and sparsifiers whose list the
    library refuses (hierarchy="node", also when algorithm="auto" chose it: each rank knows only
    its chunk's list): where the output is non-zero."""
    if not velocity.is_cuda and not getattr(sparsifier, "_mask_by_output", False):
        try:
            sparsifier.mask_sent(velocity)
            return
        except SparsecollError as error:
            if error.code != Result.INVALID_USAGE:
                raise
            sparsifier._mask_by_output = True
    velocity.masked_fill_(output != 0, 0.0)


class _BucketLayout:
    """A DDP bucket's canonical parameter order (its first layout) and the gather index that
    takes the current layout into it (index None: the current layout is the canonical one).
    A bucket with padding (parameter sizes not summing to its size) cannot be permuted: only its
    canonical order is accepted."""

    def __init__(self, parameters, count):
        self.canonical = list(parameters)
        self._ids = {id(p) for p in self.canonical}
        self._permutable = sum(p.numel() for p in self.canonical) == count
        self._current = self.canonical
        self.index = None

    def holds(self, parameters, count):
        """Whether `parameters` (a bucket of `count` elements) are this bucket's, in any order."""
        if self._permutable:
            return (len(parameters) == len(self.canonical) and
                    {id(p) for p in parameters} == self._ids and
                    sum(p.numel() for p in parameters) == count)
        return _same_order(parameters, self.canonical)

    def follow(self, parameters, device):
        if _same_order(parameters, self._current):
            return
        self._current = list(parameters)
        if _same_order(parameters, self.canonical):
            self.index = None
            return
        offsets, offset = {}, 0
        for p in parameters:
            offsets[id(p)] = offset
            offset += p.numel()
        self.index = _torch.cat([
            _torch.arange(offsets[id(p)], offsets[id(p)] + p.numel(), device=device)
            for p in self.canonical
        ])


def _same_order(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _momentum_warmup(warmup, momentum):
    """HookState's momentum_warmup checked: (start, steps) or None."""
    if warmup is None:
        return None
    if not isinstance(warmup, dict) or set(warmup) != {"start", "steps"}:
        raise ValueError('momentum_warmup must be {"start": m0, "steps": T}, not %r' % (warmup,))
    if momentum == 0.0:
        raise ValueError("momentum_warmup needs a momentum (the hook's momentum correction)")
    start, steps = warmup["start"], warmup["steps"]
    # numbers.Real / Integral: numpy and torch scalars count too; NaN fails the range check.
    if isinstance(start, bool) or not isinstance(start, numbers.Real) or \
            not 0.0 <= float(start) <= momentum:
        raise ValueError("momentum_warmup start must be in [0, momentum=%g], not %r" %
                         (momentum, start))
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError("momentum_warmup steps must be an int >= 1, not %r" % (steps,))
    return float(start), int(steps)


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
    direction (DGC section 3.2). The entries sent are what the call's output carries: on CPU
    tensors the library's own list (Sparsifier.mask_sent, scclSparsifierMaskSent: the k'
    globally selected indices of the gather and sync-free presets, where the library zeroes every
    rank's residual; the blocks some rank marked for s2), k' writes; on GPU tensors and with
    hierarchy="node" (each rank knows only its chunk's list) the non-zero entries of the output,
    which are the same but for a selected entry whose sum over ranks is exactly 0.0 (its velocity
    then stays, as if unsent). With the dense algorithm nothing is masked (every entry is sent every step, and masking
    would erase the momentum): the correction is then ordinary momentum SGD, avg(m u_r + g_r) = m avg(u) + avg(g), up to float rounding.
    nesterov (default False; needs momentum) feeds g + momentum * u instead of u, as
    torch.optim.SGD(nesterov=True) steps along (with the dense algorithm it is Nesterov SGD, tested).
    Measured on the Fashion-MNIST CNN at density 0.01 against dense heavy-ball momentum SGD, 3 seeds
    (docs/results/adaptive_optimizers.md): the sparse run gets closer to dense with it than with
    u; the recommended setting for SGD with momentum. Weight decay stays in the optimizer and is
    not corrected.
    momentum_warmup (default None: off; needs momentum), {"start": m0, "steps": T}: the hook's
    momentum rises linearly from m0 (0 <= m0 <= momentum) to momentum over each bucket's first T
    steps (counted per bucket; a bucket that gets a new sparsifier starts again), and the gradient
    is scaled by s_t = (1 - m_t) / (1 - momentum), so u = m_t u + s_t g (Nesterov: s_t g + m_t u
    is sent). The scale keeps the step a steady gradient reaches, s_t g / (1 - m_t) =
    g / (1 - momentum), the same at every m_t: what changes is how long the velocity remembers,
    not the learning rate. Why: early in training the gradient turns quickly, and a velocity that
    remembers ~10 steps (momentum 0.9) keeps pushing in stale directions; with sparsification an
    entry waits in the residual ~1/density steps on top of that. Measured on the Fashion-MNIST
    CNN at density 0.01, 3 seeds, with nesterov and {"start": 0.5, "steps": 936} (the first 2
    epochs): within 1 point of dense heavy-ball SGD after 2 and 4 epochs for micro and exdyna
    (docs/results/adaptive_optimizers.md); without it micro was 1.6 points below after 2 epochs.
    With the dense algorithm it is momentum SGD whose momentum warms up (not torch's SGD).
    preconditioner ("adam" or "adadelta"; default None: off) does for an adaptive optimizer what
    the momentum correction does for momentum: each rank applies the optimizer's per-coordinate
    rule to its own dense local gradient, in the hook, and the sparse all-reduce (with its error
    feedback) carries the resulting update, so the residual accumulates updates and every unsent
    update is sent later. The optimizer must then be torch.optim.SGD(lr=the adaptive optimizer's
    lr, momentum=0), with weight_decay=AdamW's for AdamW (SGD's weight decay is AdamW's decoupled
    one: p -= lr * (u + wd p)). "adam": m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
    u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) with betas=(b1, b2) and eps as in
    torch.optim.Adam, except that b1 defaults to 0: the error-feedback residual already sums the
    updates an entry waits with, and a first moment on top of it delays them once more (measured
    on the Fashion-MNIST CNN at density 0.01 after 2 epochs, with a density warm-up: -0.4 points
    against dense Adam with b1 = 0, -1.0 with 0.5, -3.6 with Adam's 0.9; betas=(0.9, 0.999)
    gives exactly Adam with the dense algorithm when the ranks' gradients agree). "adadelta": s = rho s + (1 - rho) g^2, u = sqrt(d + eps) / sqrt(s + eps) g,
    d = rho d + (1 - rho) u^2, as torch.optim.Adadelta (rho, eps). Why: fed to Adam after the
    sparse all-reduce, an entry's accumulated residual arrives as one burst every ~1/density
    steps; Adam's second moment then sees bursts instead of the gradient's scale, and its
    normalisation turns each burst into a step of fixed size whatever the gradient was (see
    docs/python.md, "Adaptive optimizers"). The moments here come from dense local gradients,
    as in dense training, and differ from dense Adam's only in being per rank.
    density_warmup (a sparsifier keyword like the others), e.g. {"start": 0.25, "calls": 100,
    "form": "exponential"}: DGC's density warm-up over each bucket's first `calls` all-reduces
    (one per training step), from `start` to `density` (docs/api.md has the formula). A bucket
    that gets a new sparsifier (another grouping) starts its warm-up again. set_density(d)
    changes the target of every bucket and ends the warm-up.
    """

    def __init__(self, comm, op="avg", config_file=None, momentum=0.0, momentum_masking=True,
                 nesterov=False, preconditioner=None, betas=(0.0, 0.999), eps=None, rho=0.9,
                 momentum_warmup=None, **sparsifier_kwargs):
        # What __getstate__ pickles besides the state: the constructor's arguments.
        self._settings = dict(op=op, config_file=config_file, momentum=momentum,
                              momentum_masking=momentum_masking, nesterov=nesterov,
                              preconditioner=preconditioner, betas=tuple(betas), eps=eps, rho=rho,
                              momentum_warmup=momentum_warmup, **sparsifier_kwargs)
        if not 0.0 <= float(momentum) < 1.0:
            raise ValueError("momentum must be in [0, 1), not %r" % (momentum,))
        if preconditioner not in (None, "adam", "adadelta"):
            raise ValueError("preconditioner must be None, 'adam' or 'adadelta', not %r" %
                             (preconditioner,))
        if preconditioner is not None and float(momentum) != 0.0:
            raise ValueError("momentum correction and a preconditioner exclude each other")
        if nesterov and float(momentum) == 0.0:
            raise ValueError("nesterov needs a momentum (the hook's momentum correction)")
        momentum_warmup = _momentum_warmup(momentum_warmup, float(momentum))
        if (momentum_warmup is not None and config_file is None
                and "density_warmup" not in sparsifier_kwargs
                and sparsifier_kwargs.get("algorithm") != "dense"):
            _warnings.warn(
                "momentum_warmup without a density_warmup: the warmed-up momentum's first steps "
                "are as large as the full momentum's, and entries held in the residual make "
                "them larger still; on the Fashion-MNIST example 4 of 10 seeds diverged so, none "
                "with density_warmup={'start': 0.1, 'calls': 150} (docs/python.md, \"Momentum "
                "correction\")", RuntimeWarning, stacklevel=2)
        b1, b2 = (float(b) for b in betas)
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0 and 0.0 <= float(rho) < 1.0):
            raise ValueError("betas and rho must be in [0, 1)")
        if eps is not None and not 0.0 <= float(eps) < float("inf"):
            raise ValueError("eps must be finite and >= 0, not %r" % (eps,))
        self.preconditioner = preconditioner
        self.betas = (b1, b2)
        self.eps = float(eps) if eps is not None else (1e-8 if preconditioner == "adam" else 1e-6)
        self.rho = float(rho)
        self.moments = {}
        self.comm = comm
        self.op = op
        self.config_file = config_file
        self.momentum = float(momentum)
        self.momentum_masking = bool(momentum_masking)
        self.nesterov = bool(nesterov)
        self.momentum_warmup = momentum_warmup  # (start, steps) or None
        self.momentum_steps = {}  # per bucket: the velocity updates so far
        self.sparsifier_kwargs = sparsifier_kwargs
        self.sparsifiers = {}
        self.velocities = {}
        self.layouts = {}
        self.traffic = _Traffic()
        self._pending = {}  # per bucket: a loaded checkpoint, applied when the bucket is created
        self._density_set = None  # set_density's, kept by checkpoints
        self._worker = None  # async_hook's, started at its first bucket

    def sparsifier_for(self, key, tensor, layout=None):
        sparsifier = self.sparsifiers.get(key)
        if sparsifier is None or sparsifier.count != tensor.numel():
            if sparsifier is not None:
                sparsifier.destroy()
            if self.comm is None:
                raise SparsecollError(Result.INVALID_USAGE,
                                      "this HookState has no communicator (a pickled state "
                                      "leaves it out): set state.comm before training")
            sparsifier = Sparsifier(self.comm, tensor.numel(), tensor.dtype,
                                    config_file=self.config_file, **self.sparsifier_kwargs)
            self.sparsifiers[key] = sparsifier
            self.velocities.pop(key, None)  # a new (resized) bucket: no residual, no velocity
            self.momentum_steps.pop(key, None)  # and its momentum warm-up starts again
            self.moments.pop(key, None)
            self._restore_bucket(key, sparsifier, tensor, layout)
        return sparsifier

    def _restore_bucket(self, key, sparsifier, tensor, layout):
        """A new bucket that a loaded checkpoint describes (same size, dtype and parameter shapes
        in its canonical order) takes the checkpoint's sparsifier state, velocity, moments and
        warm-up steps. Collective (the sparsifier's load): every rank creates its buckets in the
        same order. A bucket that does not match stays pending (DDP's first iteration may use
        another grouping than the rebuilt buckets the checkpoint was saved from)."""
        pending = self._pending.get(key)
        if pending is None or pending["count"] != sparsifier.count or \
                pending["dtype"] != sparsifier.dtype:
            return
        if pending["layout"] is not None and layout is not None and \
                pending["layout"] != _layout_signature(layout):
            return
        del self._pending[key]
        sparsifier.load_state_dict(pending["sparsifier"])
        place = {"device": tensor.device, "dtype": tensor.dtype}
        if pending["velocity"] is not None:
            self.velocities[key] = pending["velocity"].to(**place).clone()
        if pending["momentum_steps"] is not None:
            self.momentum_steps[key] = int(pending["momentum_steps"])
        if pending["moments"] is not None:
            moments = pending["moments"]
            self.moments[key] = {"step": int(moments["step"]), "a": moments["a"].to(**place).clone(),
                                 "b": moments["b"].to(**place).clone()}

    def state_dict(self):
        """This rank's state: every bucket's sparsifier state (Sparsifier.state_dict: residual,
        threshold, partitions, call number, statistics), momentum velocity, preconditioner
        moments and momentum warm-up steps, its size, dtype and parameter shapes, the traffic
        counters and set_density's density; tensors copied to the CPU. The communicator is not
        part of it. Save one per rank (torch.save(state.state_dict(), f"hook.{rank}.pt")).
        Waits for the buckets async_hook submitted."""
        self.synchronize()
        buckets = dict(self._pending)  # loaded buckets not re-created yet keep their state
        for key, sparsifier in self.sparsifiers.items():
            velocity = self.velocities.get(key)
            moments = self.moments.get(key)
            buckets[key] = {
                "count": sparsifier.count,
                "dtype": sparsifier.dtype,
                "layout": _layout_signature(self.layouts.get(key)),
                "sparsifier": sparsifier.state_dict(),
                "velocity": None if velocity is None else velocity.detach().cpu().clone(),
                "momentum_steps": self.momentum_steps.get(key),
                "moments": None if moments is None else {
                    "step": moments["step"], "a": moments["a"].detach().cpu().clone(),
                    "b": moments["b"].detach().cpu().clone()},
            }
        return {"version": _HOOK_STATE_VERSION, "buckets": buckets,
                "traffic": self.traffic.state_dict(), "density": self._density_set}

    def load_state_dict(self, state):
        """Takes a state_dict() of this rank, saved by a HookState with the same settings: the
        buckets made so far are dropped, and each bucket takes its saved state when the hook
        creates it again (at the next step, on every rank alike). A damaged sparsifier state
        raises SparsecollError there."""
        if not isinstance(state, dict) or state.get("version") != _HOOK_STATE_VERSION:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "not a HookState.state_dict() of version %d" %
                                  _HOOK_STATE_VERSION)
        self.close()
        self._pending = dict(state["buckets"])
        self.traffic.load_state_dict(state["traffic"])
        if state["density"] is not None:
            self._set_density_setting(float(state["density"]))

    def __getstate__(self):
        """PyTorch's convention for hook states: everything but the communicator."""
        return {"settings": dict(self._settings), "state": self.state_dict()}

    def __setstate__(self, pickled):
        """The communicator is None until the caller sets state.comm."""
        settings = dict(pickled["settings"])
        self.__init__(None, **settings)
        self.load_state_dict(pickled["state"])

    def _velocity_update(self, key, tensor):
        """u = momentum * u + g, and the all-reduce gets u (g + momentum * u with nesterov);
        during a momentum warm-up m_t and s_t g instead (see the class); returns u (None when
        off)."""
        if self.momentum == 0.0:
            return None
        velocity = self.velocities.get(key)
        if velocity is None:
            velocity = _torch.zeros_like(tensor)
            self.velocities[key] = velocity
        momentum = self.momentum
        if self.momentum_warmup is not None:
            start, steps = self.momentum_warmup
            step = self.momentum_steps.get(key, 0)
            self.momentum_steps[key] = step + 1
            if step < steps:  # m_t from start to momentum, g scaled by (1 - m_t) / (1 - m)
                momentum = start + (self.momentum - start) * (step / steps)
                tensor.mul_((1.0 - momentum) / (1.0 - self.momentum))
        velocity.mul_(momentum).add_(tensor)
        if self.nesterov:  # torch.optim.SGD(nesterov=True): g + m u
            tensor.add_(velocity, alpha=momentum)
        else:
            tensor.copy_(velocity)
        return velocity

    def _precondition(self, key, tensor):
        """The preconditioner's update of this rank's gradient, in place (nothing when off)."""
        if self.preconditioner is None:
            return
        state = self.moments.get(key)
        if state is None:
            state = {"step": 0, "a": _torch.zeros_like(tensor), "b": _torch.zeros_like(tensor)}
            self.moments[key] = state
        state["step"] += 1
        a, b = state["a"], state["b"]
        if self.preconditioner == "adam":
            b1, b2 = self.betas
            a.mul_(b1).add_(tensor, alpha=1.0 - b1)                    # m
            b.mul_(b2).addcmul_(tensor, tensor, value=1.0 - b2)        # v
            denominator = (b / (1.0 - b2**state["step"])).sqrt_().add_(self.eps)
            _torch.div(a, denominator, out=tensor).div_(1.0 - b1**state["step"])
        else:  # adadelta: a = running mean of g^2, b = running mean of the update^2
            a.mul_(self.rho).addcmul_(tensor, tensor, value=1.0 - self.rho)
            tensor.mul_(b.add(self.eps).sqrt_()).div_(a.add(self.eps).sqrt_())
            b.mul_(self.rho).addcmul_(tensor, tensor, value=1.0 - self.rho)

    def _forget(self, key):
        """Drops a bucket's sparsifier (its residual), velocity and moments, on every rank."""
        sparsifier = self.sparsifiers.pop(key, None)
        if sparsifier is not None:
            sparsifier.destroy()
        self.velocities.pop(key, None)
        self.moments.pop(key, None)

    def _layout_for(self, key, tensor, parameters):
        """The bucket's canonical layout, following the current one (None: parameters unknown)."""
        if parameters is None:
            return None
        layout = self.layouts.get(key)
        if layout is None or not layout.holds(parameters, tensor.numel()):
            if layout is not None:
                self._forget(key)  # other parameters in this bucket: start again
            layout = _BucketLayout(parameters, tensor.numel())
            self.layouts[key] = layout
        layout.follow(parameters, tensor.device)
        return layout

    def submit(self, key, tensor, step_ends, parameters=None):
        """reduce() on the state's worker thread, after every bucket submitted before it: returns
        a torch.futures.Future of the reduced tensor (in place), or of the error."""
        if self._worker is None:
            self._worker = _BucketWorker()
        parameters = list(parameters) if parameters is not None else None
        return self._worker.submit(lambda: self.reduce(key, tensor, step_ends, parameters),
                                   tensor)

    def synchronize(self):
        """Waits until every bucket submitted so far is done (nothing without async_hook)."""
        if self._worker is not None:
            self._worker.drain()

    def reduce(self, key, tensor, step_ends, parameters=None):
        """The sparse all-reduce of one bucket, in place. parameters: the bucket's parameters in
        its layout's order, where known (the DDP hook), so that a rebuilt bucket is permuted
        into its first layout around the call."""
        layout = self._layout_for(key, tensor, parameters)
        index = layout.index if layout is not None else None
        work = tensor if index is None else tensor.index_select(0, index)
        sparsifier = self.sparsifier_for(key, work, layout)
        velocity = self._velocity_update(key, work)
        self._precondition(key, work)
        sparsifier.allreduce(work, op=self.op)
        if velocity is not None and self.momentum_masking and not _sends_everything(sparsifier):
            _mask_sent(sparsifier, velocity, work)
        if index is not None:
            tensor.index_copy_(0, index, work)
        self.traffic.add(sparsifier.stats(), tensor.numel(), step_ends)
        return tensor

    def set_density(self, density):
        """The target density of every bucket's sparsifier from its next call on (and of the
        buckets created later), ending any density_warmup; call it on every rank at the same
        step (Sparsifier.set_density)."""
        self.synchronize()
        for sparsifier in self.sparsifiers.values():
            sparsifier.set_density(density)
        self._set_density_setting(float(density))

    def _set_density_setting(self, density):
        self.sparsifier_kwargs.pop("density_warmup", None)
        self.sparsifier_kwargs["density"] = density
        self._density_set = density

    def close(self):
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        for sparsifier in self.sparsifiers.values():
            sparsifier.destroy()
        self.sparsifiers.clear()
        self.velocities.clear()
        self.moments.clear()
        self.momentum_steps.clear()
        self.layouts.clear()


def _layout_signature(layout):
    """A bucket layout as a checkpoint records it: its parameters' shapes in canonical order."""
    if layout is None:
        return None
    return [tuple(p.shape) for p in layout.canonical]


def hook(state, bucket):
    """DDP communication hook: model.register_comm_hook(state, sparsecoll.torch.hook)."""
    tensor = _bucket_tensor(bucket)
    state.synchronize()  # after anything async_hook submitted to this state
    state.reduce(bucket.index(), tensor, bucket.is_last(), _bucket_parameters(bucket))
    future = _torch.futures.Future()
    future.set_result(tensor)
    return future


def async_hook(state, bucket):
    """DDP communication hook that does not block the backward pass:
    model.register_comm_hook(state, sparsecoll.torch.async_hook). The bucket's sparse all-reduce
    runs on the state's worker thread, in bucket order; the returned Future completes with the
    reduced bucket (or the error, which DDP raises)."""
    tensor = _bucket_tensor(bucket)
    return state.submit(bucket.index(), tensor, bucket.is_last(), _bucket_parameters(bucket))


def _pack(params):
    return _torch.cat([
        (p.grad if p.grad is not None else _torch.zeros_like(p)).reshape(-1).detach()
        for p in params
    ])


def _unpack(flat, params):
    offset = 0
    for p in params:
        piece = flat[offset:offset + p.numel()].view_as(p)
        if p.grad is None:
            p.grad = piece.clone()
        else:
            p.grad.copy_(piece)
        offset += p.numel()


class GradientSynchronizer:
    """For loops without DDP: call synchronize() after backward() and before optimizer.step().

    The parameters' gradients are packed into flat buckets of at most bucket_cap_mb (in
    parameter order, which must be the same on every rank), each bucket goes through its own
    sparsifier, and the result is copied back. Missing gradients count as zeros. momentum,
    momentum_masking, nesterov and momentum_warmup: DGC momentum correction, as in HookState
    (then SGD without momentum).
    asynchronous=True runs the buckets on the HookState's worker thread (see synchronize()).
    """

    def __init__(self, parameters, comm, bucket_cap_mb=25, op="avg", config_file=None,
                 momentum=0.0, momentum_masking=True, nesterov=False, momentum_warmup=None,
                 asynchronous=False, **sparsifier_kwargs):
        self.asynchronous = bool(asynchronous)
        self.parameters = [p for p in parameters if p.requires_grad]
        self.state = HookState(comm, op=op, config_file=config_file, momentum=momentum,
                               momentum_masking=momentum_masking, nesterov=nesterov,
                               momentum_warmup=momentum_warmup, **sparsifier_kwargs)
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
        """The sparse all-reduce of every bucket, results copied into the gradients. With
        asynchronous=True each bucket goes to the state's worker as soon as it is packed, so
        packing and copying back overlap the exchange of the other buckets; the results are the
        same bit for bit."""
        last = len(self.buckets) - 1
        if not self.asynchronous:
            for index, params in enumerate(self.buckets):
                flat = _pack(params)
                self.state.reduce(index, flat, index == last)
                _unpack(flat, params)
            return
        submitted = [(params, self.state.submit(index, _pack(params), index == last))
                     for index, params in enumerate(self.buckets)]
        for params, future in submitted:
            _unpack(future.wait(), params)

    def state_dict(self):
        """This rank's state (HookState.state_dict of its buckets); one per rank."""
        return {"version": _HOOK_STATE_VERSION, "hook": self.state.state_dict()}

    def load_state_dict(self, state):
        """Takes a state_dict() of this rank from a synchronizer over the same parameters and
        settings; every bucket takes its state at the next synchronize()."""
        if not isinstance(state, dict) or state.get("version") != _HOOK_STATE_VERSION:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "not a GradientSynchronizer.state_dict() of version %d" %
                                  _HOOK_STATE_VERSION)
        self.state.load_state_dict(state["hook"])

    def close(self):
        self.state.close()
