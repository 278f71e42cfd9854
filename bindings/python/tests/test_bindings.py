"""Every binding call of the sparsecoll package but the Communicator's (those are in
test_communicator.py), in one process: the package itself (version, error strings, a missing
library) and the Sparsifier with the torch helpers built on it, on one rank and on several ranks
as threads over the in-process transport (ctypes releases the GIL during each C call, so the ranks
run concurrently). Errors must arrive as SparsecollError with the library's code and message."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import sparsecoll
from sparsecoll import Communicator, Result, SparsecollError, Sparsifier
from thread_ranks import run_ranks


def test_package_version_equals_library_version():
    assert "%d.%d.%d" % sparsecoll.library_version() == sparsecoll.__version__
    assert os.path.isfile(sparsecoll.library_path)


def test_error_strings_and_codes():
    assert sparsecoll.error_string(Result.INVALID_ARGUMENT) == "invalid argument"
    assert sparsecoll.error_string(Result.SUCCESS) != sparsecoll.error_string(Result.TIMEOUT)
    error = SparsecollError(Result.INVALID_USAGE, "why")
    assert error.code == Result.INVALID_USAGE and error.message == "why"
    assert "invalid usage" in str(error) and "why" in str(error)


def test_sparsifier_config_from_kwargs_and_json_file(comm, tmp_path):
    s = Sparsifier(comm, 1000, algorithm="topk", density=0.05)
    assert (s.algorithm, s.density) == ("topk", 0.05)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"algorithm": "micro", "density": 0.02}))
    f = Sparsifier.from_json(comm, 1000, str(path), density=0.03)  # keyword overrides the file
    assert (f.algorithm, f.density) == ("micro", 0.03)
    cfg = sparsecoll.make_config(algorithm="sidco", estimator="sidco_exp")
    assert cfg.algorithm == b"sidco" and cfg.estimator == b"sidco_exp"
    s.destroy()
    f.destroy()


def test_sparsifier_config_errors_name_the_key(comm, tmp_path):
    with pytest.raises(SparsecollError) as info:
        Sparsifier(comm, 100, no_such_key=1)
    assert info.value.code == Result.INVALID_ARGUMENT and "no_such_key" in info.value.message
    with pytest.raises(SparsecollError) as info:
        Sparsifier(comm, 100, density=2.0)
    assert info.value.code == Result.INVALID_ARGUMENT and "density" in info.value.message
    with pytest.raises(SparsecollError) as info:
        Sparsifier(comm, 100, dtype="int32")
    assert info.value.code == Result.INVALID_ARGUMENT
    with pytest.raises(SparsecollError) as info:
        Sparsifier.from_json(comm, 100, str(tmp_path / "missing.json"))
    assert info.value.code == Result.INVALID_ARGUMENT and "missing.json" in info.value.message
    with pytest.raises(SparsecollError) as info:
        Sparsifier(comm, 100, algorithm="no_such_algorithm")
    assert info.value.code == Result.INVALID_ARGUMENT
    assert "no_such_algorithm" in info.value.message


def test_stream_ordered_sparsifier_on_host_buffers_has_no_async_error(comm):
    # stream_ordered applies to device buffers (docs/gpu.md); on host buffers the call is the
    # host run, and the asynchronous fault of a sparsifier that never ran on a GPU is SUCCESS.
    count = 1000
    plain = Sparsifier(comm, count, algorithm="micro_sync_free", density=0.01)
    ordered = Sparsifier(comm, count, algorithm="micro_sync_free", density=0.01,
                         stream_ordered=True)
    assert ordered.async_error() == Result.SUCCESS
    g = torch.linspace(-1, 1, count)
    assert torch.equal(plain.allreduce(g.clone()), ordered.allreduce(g.clone()))
    assert ordered.async_error() == Result.SUCCESS
    with pytest.raises(SparsecollError) as info:  # needs a sync_free preset
        Sparsifier(comm, count, algorithm="topk", stream_ordered=True)
    assert info.value.code == Result.INVALID_ARGUMENT and "streamOrdered" in info.value.message


def test_sparse_allreduce_single_rank_stats_reset_and_errors(comm):
    count = 1000
    s = Sparsifier(comm, count, algorithm="topk", density=0.01)
    g = torch.linspace(-1, 1, count)
    out = torch.empty(count)
    sparsecoll.sparse_allreduce(g, s, out=out, op="sum")
    assert int((out != 0).sum()) == 10
    kept = out.abs().topk(10).indices.sort().values
    assert torch.equal(kept, g.abs().topk(10).indices.sort().values)
    stats = s.stats()
    assert isinstance(stats, sparsecoll.SparseStats)
    assert (stats.iteration, stats.k_target, stats.k_local, stats.k_global) == (1, 10, 10, 10)
    assert stats.density == pytest.approx(0.01) and stats.residual_norm > 0
    assert stats.as_dict()["k_target"] == 10
    assert s.rank_counts() == [10]
    s.reset()
    assert s.stats().iteration == 0
    with pytest.raises(SparsecollError) as info:  # count differs from the sparsifier's
        s.allreduce(torch.zeros(count + 1))
    assert info.value.code == Result.INVALID_ARGUMENT and info.value.message != ""
    with pytest.raises(SparsecollError) as info:  # dtype differs from the sparsifier's
        s.allreduce(torch.zeros(count, dtype=torch.float64))
    assert info.value.code == Result.INVALID_ARGUMENT
    s.destroy()
    with pytest.raises(SparsecollError) as info:
        s.stats()
    assert info.value.code == Result.INVALID_USAGE


def test_mask_sent_zeroes_what_the_output_carries(comm):
    count = 200
    s = Sparsifier(comm, count, algorithm="topk", density=0.05)
    before = torch.ones(count)
    s.mask_sent(before)  # no call yet: nothing was sent
    assert torch.equal(before, torch.ones(count))
    g = torch.linspace(0.01, 1.0, count)
    out = s.allreduce(g.clone())
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        mask = torch.ones(count, dtype=dtype)
        s.mask_sent(mask)
        assert torch.equal(mask == 0, out != 0), dtype
    as_numpy = np.ones(count, dtype=np.float32)
    s.mask_sent(as_numpy)
    assert np.array_equal(as_numpy == 0, (out != 0).numpy())
    with pytest.raises(SparsecollError) as info:  # another count
        s.mask_sent(torch.ones(count + 1))
    assert info.value.code == Result.INVALID_ARGUMENT and info.value.message != ""
    with pytest.raises(SparsecollError) as info:  # not a gradient type
        s.mask_sent(torch.ones(count, dtype=torch.int32))
    assert info.value.code == Result.INVALID_ARGUMENT
    s.reset()
    after_reset = torch.ones(count)
    s.mask_sent(after_reset)
    assert torch.equal(after_reset, torch.ones(count))
    s.destroy()


def test_momentum_masking_falls_back_to_the_output_for_a_hierarchy(comm):
    """hierarchy="node" refuses scclSparsifierMaskSent: the hook masks where the output is
    non-zero instead (one node of one rank here)."""
    import sparsecoll.torch as sparse_torch
    param = torch.nn.Parameter(torch.zeros(100))
    sync = sparse_torch.GradientSynchronizer([param], comm, algorithm="topk", density=0.05,
                                             momentum=0.5, hierarchy="node")
    g = torch.linspace(0.01, 1.0, 100)
    for _ in range(2):
        param.grad = g.clone()
        sync.synchronize()
        sent = param.grad != 0
        assert int(sent.sum()) > 0
        assert torch.equal(sync.state.velocities[0][sent], torch.zeros(int(sent.sum())))
    assert all(s._mask_by_output for s in sync.state.sparsifiers.values())
    sync.close()


def test_momentum_correction_single_rank_velocity_and_masking(comm):
    import sparsecoll.torch as sparse_torch
    with pytest.raises(ValueError):
        sparse_torch.HookState(comm, algorithm="topk", momentum=1.0)
    param = torch.nn.Parameter(torch.zeros(100))
    sync = sparse_torch.GradientSynchronizer([param], comm, algorithm="topk", density=0.05,
                                             momentum=0.5)
    g = torch.linspace(0.01, 1.0, 100)
    param.grad = g.clone()
    sync.synchronize()  # u = g; the top 5 of u are sent and masked out of u
    sent = param.grad != 0
    assert int(sent.sum()) == 5 and torch.equal(param.grad[sent], g[-5:])
    assert torch.equal(sync.state.velocities[0], g.masked_fill(sent, 0.0))
    param.grad = g.clone()
    sync.synchronize()  # u = 0.5 u + g is fed in; the residual held the unsent u of step 1
    u = 0.5 * g.masked_fill(sent, 0.0) + g
    expected_input = u + g.masked_fill(sent, 0.0)
    sent2 = param.grad != 0
    assert torch.equal(param.grad[sent2], expected_input[sent2])
    assert torch.equal(sync.state.velocities[0], u.masked_fill(sent2, 0.0))
    sync.close()
    dense = sparse_torch.GradientSynchronizer([param], comm, algorithm="dense", momentum=0.5)
    for step in range(2):
        param.grad = g.clone()
        dense.synchronize()  # dense: never masked, so ordinary momentum
    assert torch.equal(param.grad, 0.5 * g + g)
    dense.close()


def test_momentum_correction_nesterov(comm):
    """nesterov=True feeds g + m u (u = m u + g) to the all-reduce and masks u where sent."""
    import sparsecoll.torch as sparse_torch
    with pytest.raises(ValueError):
        sparse_torch.HookState(comm, algorithm="topk", nesterov=True)  # no momentum
    param = torch.nn.Parameter(torch.zeros(100))
    sync = sparse_torch.GradientSynchronizer([param], comm, algorithm="topk", density=0.05,
                                             momentum=0.5, nesterov=True)
    g = torch.linspace(0.01, 1.0, 100)
    param.grad = g.clone()
    sync.synchronize()  # u = g; g + 0.5 u = 1.5 g goes in; its top 5 are sent, masked out of u
    sent = param.grad != 0
    assert int(sent.sum()) == 5 and torch.equal(param.grad[sent], (g + 0.5 * g)[-5:])
    assert torch.equal(sync.state.velocities[0], g.masked_fill(sent, 0.0))
    param.grad = g.clone()
    sync.synchronize()  # the residual held the unsent 1.5 g of step 1
    u = 0.5 * g.masked_fill(sent, 0.0) + g
    expected_input = (g + 0.5 * u) + (g + 0.5 * g).masked_fill(sent, 0.0)
    sent2 = param.grad != 0
    assert torch.equal(param.grad[sent2], expected_input[sent2])
    assert torch.equal(sync.state.velocities[0], u.masked_fill(sent2, 0.0))
    sync.close()  # with the dense algorithm it is torch's Nesterov SGD: test_hook_preconditioner.py



def test_momentum_warmup(comm):
    """momentum_warmup {"start": m0, "steps": T}: u = m_t u + s_t g with m_t from m0 to m over T
    steps and s_t = (1 - m_t) / (1 - m); then ordinary momentum; bad settings are refused."""
    import sparsecoll.torch as sparse_torch
    for bad in ({"start": 0.5}, {"start": 0.95, "steps": 2}, {"start": -0.1, "steps": 2},
                {"start": 0.5, "steps": 0}, {"start": 0.5, "steps": 2.5},
                {"start": 0.5, "steps": 2, "form": "linear"}, [0.5, 2],
                {"start": float("nan"), "steps": 2}, {"start": 0.5, "steps": True}):
        with pytest.raises(ValueError):
            sparse_torch.HookState(comm, algorithm="dense", momentum=0.9, momentum_warmup=bad)
    accepted = sparse_torch.HookState(  # numpy scalars are numbers like any other
        comm, algorithm="dense", momentum=0.9,
        momentum_warmup={"start": np.float32(0.5), "steps": np.int64(3)})
    assert accepted.momentum_warmup == (0.5, 3)
    accepted.close()
    with pytest.raises(ValueError):  # no momentum to warm up
        sparse_torch.HookState(comm, algorithm="dense", momentum_warmup={"start": 0, "steps": 2})
    for nesterov in (False, True):
        param = torch.nn.Parameter(torch.zeros(64))
        sync = sparse_torch.GradientSynchronizer(
            [param], comm, algorithm="dense", momentum=0.9, nesterov=nesterov,
            momentum_warmup={"start": 0.5, "steps": 2})
        u = torch.zeros(64)
        for step in range(4):
            g = torch.linspace(-1.0, 1.0, 64) * (step + 1)
            m = (0.5, 0.7, 0.9, 0.9)[step]  # 0.5 + 0.4 t / 2, then 0.9
            s = (1.0 - m) / (1.0 - 0.9) if step < 2 else 1.0
            scaled = g * s if step < 2 else g.clone()
            u = u * m + scaled
            expected = scaled + u * m if nesterov else u
            param.grad = g.clone()
            sync.synchronize()  # one rank, dense: the all-reduce returns its input
            assert torch.allclose(param.grad, expected, rtol=1e-6, atol=0), (nesterov, step)
        sync.close()
    # A sparse momentum warm-up without a density warm-up is warned about (4 of 10 seeds of the
    # Fashion-MNIST example diverged so); with one, or on dense, it is not.
    with pytest.warns(RuntimeWarning, match="density_warmup"):
        sparse_torch.HookState(comm, algorithm="micro", density=0.01, momentum=0.9,
                               momentum_warmup={"start": 0.5, "steps": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sparse_torch.HookState(comm, algorithm="micro", density=0.01, momentum=0.9,
                               momentum_warmup={"start": 0.5, "steps": 2},
                               density_warmup={"start": 0.1, "calls": 5})
        sparse_torch.HookState(comm, algorithm="dense", momentum=0.9,
                               momentum_warmup={"start": 0.5, "steps": 2})
    # A bucket that gets a new sparsifier (another size) starts its warm-up again.
    state = sparse_torch.HookState(comm, algorithm="dense", momentum=0.9,
                                   momentum_warmup={"start": 0.0, "steps": 3})
    state.reduce(0, torch.ones(8), True, None)
    state.reduce(0, torch.ones(8), True, None)
    assert state.momentum_steps[0] == 2
    state.reduce(0, torch.ones(9), True, None)
    assert state.momentum_steps[0] == 1
    state.close()

class _FakeBucket:
    """A DDP GradBucket as the hook sees it: index, flat buffer, parameters in buffer order."""

    def __init__(self, parameters):
        self._parameters = parameters
        self._buffer = torch.cat([p.grad.reshape(-1) for p in parameters])

    def index(self):
        return 0

    def is_last(self):
        return True

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._parameters


def test_hook_keeps_the_residual_with_its_parameters_across_a_rebuilt_bucket(comm):
    """DDP rebuilds a bucket in another order after step 0; the library's residual must stay
    with the parameters it belongs to (the hook permutes the bucket into its first layout)."""
    import sparsecoll.torch as sparse_torch
    a, b = torch.nn.Parameter(torch.zeros(6)), torch.nn.Parameter(torch.zeros(4))
    a.grad = torch.tensor([9.0, 1, 2, 3, 4, 5])
    b.grad = torch.tensor([0.5, 0.25, 8.0, 0.125])
    state = sparse_torch.HookState(comm, algorithm="topk", density=0.2)  # k = 2 of 10
    first = sparse_torch.hook(state, _FakeBucket([a, b])).value()
    assert torch.equal(first, torch.tensor([9.0, 0, 0, 0, 0, 0, 0, 0, 8.0, 0]))
    # Step 1, bucket rebuilt as [b, a]; a's residual (1..5) must be added to a's gradient.
    a.grad = torch.full((6,), 0.5)
    b.grad = torch.zeros(4)
    second = sparse_torch.hook(state, _FakeBucket([b, a])).value()
    # a now holds residual + gradient = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]: its top 2 are sent.
    expected = torch.zeros(10)
    expected[4 + 4], expected[4 + 5] = 4.5, 5.5
    assert torch.equal(second, expected)
    assert len(state.sparsifiers) == 1  # the same sparsifier, not a new one
    # Another grouping (a alone) is another bucket: a fresh sparsifier, nothing carried over.
    c = torch.nn.Parameter(torch.zeros(10))
    c.grad = torch.arange(10.0)
    third = sparse_torch.hook(state, _FakeBucket([c])).value()
    assert torch.equal(third, torch.tensor([0.0] * 8 + [8.0, 9.0]))
    state.close()


def test_set_density_changes_k_at_the_next_call_and_refuses_bad_values(comm):
    sp = Sparsifier(comm, 1000, algorithm="topk", density=0.01)
    grad = np.linspace(-1, 1, 1000).astype(np.float32)
    sp.allreduce(grad.copy())
    assert sp.stats().k_target == 10
    sp.set_density(0.05)
    assert sp.density == 0.05
    assert sp.stats().k_target == 10  # from the next call on
    sp.allreduce(grad.copy())
    assert sp.stats().k_target == 50 and sp.stats().k_local == 50
    for bad in (0.0, -0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(SparsecollError) as info:
            sp.set_density(bad)
        assert info.value.code == Result.INVALID_ARGUMENT
        assert "density" in str(info.value)
    sp.allreduce(grad.copy())
    assert sp.stats().k_target == 50
    sp.destroy()


def test_density_warmup_on_two_ranks_and_in_the_hook(comm):
    """The schedule of docs/api.md: start * (target/start)^(t/N), the same k on every rank."""
    count, start, target, calls = 4000, 0.25, 0.01, 5

    def body(c):
        sp = Sparsifier(c, count, algorithm="micro", density=target,
                        density_warmup={"start": start, "calls": calls})
        ks = []
        for t in range(calls + 2):
            grad = np.random.default_rng(t * 7 + c.rank).laplace(size=count).astype(np.float32)
            sp.allreduce(grad)
            ks.append(sp.stats().k_target)
        sp.destroy()
        return ks

    want = [int(start * (target / start) ** (t / calls) * count) for t in range(calls)]
    want += [int(count * target)] * 2
    assert run_ranks(2, body) == [want, want]

    import sparsecoll.torch as sparse_torch
    state = sparse_torch.HookState(comm, algorithm="topk", density=0.1,
                                   density_warmup={"start": 0.5, "calls": 2, "form": "linear"})
    p = torch.nn.Parameter(torch.zeros(100))
    sent = []
    for _ in range(3):
        p.grad = torch.arange(1.0, 101.0)
        out = sparse_torch.hook(state, _FakeBucket([p])).value()
        sent.append(int((out != 0).sum()))
    assert sent == [50, 30, 10]  # 0.5, 0.5 + (0.1 - 0.5) / 2, then 0.1
    state.set_density(0.2)
    out = sparse_torch.hook(state, _FakeBucket([p])).value()
    assert int((out != 0).sum()) == 20
    state.close()
    with pytest.raises(SparsecollError) as info:
        Sparsifier(comm, 10, density_warmup={"start": 0.5, "calls": 2, "form": "cosine"})
    assert "density_warmup" in str(info.value)


def test_non_finite_error_policy_raises_invalid_argument(comm):
    s = Sparsifier(comm, 100, algorithm="topk", density=0.1, non_finite="error")
    g = torch.ones(100)
    g[7] = float("nan")
    with pytest.raises(SparsecollError) as info:
        s.allreduce(g)
    assert info.value.code == Result.INVALID_ARGUMENT and info.value.message != ""


def test_sparse_allreduce_topk_on_four_ranks_equals_reference():
    count, density, size = 4096, 0.01, 4
    k = int(density * count)
    grads = [torch.randn(count, generator=torch.Generator().manual_seed(r)) for r in range(size)]

    def body(comm):
        with Sparsifier(comm, count, algorithm="topk", density=density) as s:
            return s.allreduce(grads[comm.rank].clone()), s.stats()

    union = torch.zeros(count, dtype=torch.bool)
    for g in grads:
        union[g.abs().topk(k).indices] = True
    reference = torch.where(union, sum(g.double() for g in grads) / size, torch.zeros(1).double())
    results = run_ranks(size, body)
    for out, stats in results:
        assert torch.equal(out, results[0][0])  # bitwise identical on every rank
        assert torch.allclose(out.double(), reference, rtol=0, atol=1e-6)
        assert stats.k_global == int(union.sum())


def test_dense_algorithm_equals_dense_allreduce_numpy():
    count, size = 300, 3

    def body(comm):
        x = np.arange(count, dtype=np.float32) * (comm.rank + 1)
        with Sparsifier(comm, count, algorithm="dense") as s:
            sparse = s.allreduce(x.copy(), op="sum")
        return sparse, comm.allreduce(x.copy())

    for sparse, dense in run_ranks(size, body):
        assert np.array_equal(sparse, dense)


def test_cuda_tensor_dense_preset_is_refused(comm):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device in this torch")
    # On device buffers the dense preset is refused (scclAllReduce is the dense all-reduce),
    # naming what runs on the device (docs/gpu.md); the communicator stays usable.
    s = Sparsifier(comm, 16, algorithm="dense", density=0.5)
    with pytest.raises(SparsecollError) as info:
        s.allreduce(torch.ones(16, device="cuda"))
    assert info.value.code == Result.INVALID_USAGE and "gather" in info.value.message
    assert torch.equal(comm.allreduce(torch.ones(4)), torch.ones(4))


def test_cuda_tensors_of_ranks_sharing_one_gpu_equal_the_cpu_run():
    """Three in-process ranks on GPU 0 over the local transport (device buffers through pinned
    host staging, docs/gpu.md) give bitwise the CPU tensors' results, every call and rank."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device in this torch")
    count, size, calls = 10007, 3, 3

    def grads(rank):
        g = torch.Generator().manual_seed(100 + rank)
        return [torch.randn(count, generator=g) for _ in range(calls)]

    def run(device):
        def body(comm):
            outs = []
            for algorithm in ("micro", "topk", "micro_sync_free"):
                with Sparsifier(comm, count, algorithm=algorithm, density=0.01) as s:
                    outs += [s.allreduce(x.to(device), op="avg").cpu() for x in grads(comm.rank)]
            return outs
        return run_ranks(size, body)

    cpu, gpu = run("cpu"), run("cuda")
    for rank in range(size):
        for want, got in zip(cpu[rank], gpu[rank]):
            assert torch.equal(want, got)
        assert all(torch.equal(a, b) for a, b in zip(gpu[rank], gpu[0]))  # every rank the same


def test_cuda_tensor_sync_free_over_nccl_equals_the_host_run():
    """A CUDA tensor through micro_sync_free over the NCCL transport (one rank) gives bitwise the
    CPU tensor's result on the in-process transport, on torch's current stream (docs/gpu.md)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device in this torch")
    if "nccl" not in sparsecoll.built_transports():
        pytest.skip("this build of sparsecoll has no NCCL transport")
    g = torch.Generator().manual_seed(5)
    grads = [torch.randn(10007, generator=g) for _ in range(4)]
    results = {}
    for transport, device in (("local", "cpu"), ("nccl", "cuda")):
        with Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 1,
                                         transport=transport) as c:
            s = Sparsifier(c, 10007, algorithm="micro_sync_free", density=0.01)
            outs = [s.allreduce(x.to(device), op="sum").cpu() for x in grads]
            results[device] = outs
            s.destroy()
    for cpu, gpu in zip(results["cpu"], results["cuda"]):
        assert torch.equal(cpu, gpu)


def test_missing_library_is_a_clear_import_error(tmp_path):
    env = dict(os.environ, SPARSECOLL_LIBRARY=str(tmp_path / "libsparsecoll.so"))
    run = subprocess.run([sys.executable, "-c", "import sparsecoll"], env=env,
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "cannot find libsparsecoll.so" in run.stderr
    assert "SPARSECOLL_LIBRARY" in run.stderr and str(tmp_path) in run.stderr
