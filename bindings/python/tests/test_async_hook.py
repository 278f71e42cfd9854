"""The asynchronous hook's machinery without DDP (HookState.submit, the worker async_hook uses,
and GradientSynchronizer(asynchronous=True)): results bitwise those of the synchronous form, the
buckets run in submission order, and errors (a refused call, a peer that died) reach the futures
instead of hanging. The DDP form runs under mpirun (async_checks.py)."""

import threading

import pytest
import torch

import sparsecoll.torch
from sparsecoll import SparsecollError
from thread_ranks import run_ranks

SIZES = (3001, 517, 12000)


def bucket(rank, step, index):
    generator = torch.Generator().manual_seed(10000 * step + 100 * index + rank)
    return torch.randn(SIZES[index], generator=generator)


def test_submitted_buckets_equal_the_synchronous_reduce():
    def body(comm):
        sync = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.02, momentum=0.9)
        asynchronous = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.02,
                                                  momentum=0.9)
        for step in range(4):
            want = [sync.reduce(i, bucket(comm.rank, step, i), i == 2) for i in range(3)]
            futures = [asynchronous.submit(i, bucket(comm.rank, step, i), i == 2)
                       for i in range(3)]
            for w, future in zip(want, futures):
                assert torch.equal(future.wait(), w)
        assert asynchronous.traffic.summary() == sync.traffic.summary()
        sync.close()
        asynchronous.close()

    run_ranks(2, body)


def test_worker_runs_buckets_in_submission_order_off_the_calling_thread():
    def body(comm):
        state = sparsecoll.torch.HookState(comm, algorithm="exdyna", density=0.05)
        threads, order = [], []
        original = state.reduce

        def recording(key, tensor, step_ends, parameters=None):
            threads.append(threading.get_ident())
            order.append(key)
            return original(key, tensor, step_ends, parameters)

        state.reduce = recording
        futures = [state.submit(i, bucket(comm.rank, 0, i), i == 2) for i in (2, 0, 1)]
        torch.futures.wait_all(futures)
        assert order == [2, 0, 1]
        assert threading.get_ident() not in threads
        state.close()

    run_ranks(2, body)


@pytest.mark.parametrize("settings", [dict(algorithm="exdyna", density=0.05, momentum=0.9),
                                      dict(algorithm="s2", density=0.05)],
                         ids=lambda s: s["algorithm"])
def test_asynchronous_gradient_synchronizer_trains_bit_for_bit_like_the_synchronous_one(settings):
    def train(comm, asynchronous):
        init = torch.Generator().manual_seed(5)
        model = torch.nn.Sequential(torch.nn.Linear(30, 40), torch.nn.ReLU(),
                                    torch.nn.Linear(40, 3))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=init) * 0.2)
        sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm,
                                                     bucket_cap_mb=0.003,
                                                     asynchronous=asynchronous, **settings)
        assert len(sync.buckets) > 1
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        for step in range(5):
            data = torch.Generator().manual_seed(100 * step + comm.rank)
            x, y = torch.randn(8, 30, generator=data), torch.randint(0, 3, (8,), generator=data)
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            sync.synchronize()
            optimizer.step()
        sync.close()
        return [p.detach().clone() for p in model.parameters()]

    for sync, asynchronous in run_ranks(2, lambda comm: (train(comm, False), train(comm, True))):
        for a, b in zip(sync, asynchronous):
            assert torch.equal(a, b)


def test_a_refused_call_reaches_the_future_on_every_rank_and_the_state_goes_on():
    def body(comm):
        state = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05,
                                           non_finite="error")
        good = bucket(comm.rank, 0, 0)
        bad = good.clone()
        if comm.rank == 0:
            bad[7] = float("nan")
        with pytest.raises(SparsecollError) as refused:
            state.submit(0, bad, True).wait()
        assert "non-finite" in str(refused.value) or "NaN" in str(refused.value), refused.value
        # The communicator is usable after an invalid argument: the next bucket goes through.
        assert torch.isfinite(state.submit(0, good, True).wait()).all()
        state.close()

    run_ranks(2, body)


def test_a_dead_peer_fails_the_future_instead_of_hanging():
    def body(comm):
        state = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05)
        state.reduce(0, bucket(comm.rank, 0, 0), True)  # both ranks alive: the bucket exists
        if comm.rank == 1:
            comm.abort()
            return None
        future = state.submit(0, bucket(0, 1, 0), True)
        with pytest.raises(SparsecollError) as failed:
            future.wait()
        state.close()
        return failed.value.code

    codes = run_ranks(2, body)
    assert codes[0] is not None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_precision_buckets_reduce_in_float32_and_round_once(dtype):
    """A float16 or bfloat16 bucket: the library accumulates and reduces in float32 and rounds
    the output once, so it equals the float32 run of the same (rounded) values, rounded."""
    def body(comm):
        half = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05)
        full = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05)
        for step in range(4):
            g = bucket(comm.rank, step, 0).to(dtype)
            got = half.reduce(0, g.clone(), True)
            want = full.reduce(0, g.to(torch.float32), True)
            assert got.dtype == dtype
            assert torch.equal(got, want.to(dtype)), (got.float() - want).abs().max()
        assert 0 < half.traffic.last_step["density"] <= 0.1
        half.close()
        full.close()

    run_ranks(2, body)


def test_bfloat16_model_trains_with_identical_ranks():
    def body(comm):
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 4))
        init = torch.Generator().manual_seed(0)  # the ranks are threads: no global seed
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=init) * 0.2)
        model = model.to(torch.bfloat16)
        sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm,
                                                     algorithm="exdyna", density=0.1,
                                                     asynchronous=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(4):
            data = torch.Generator().manual_seed(step * 10 + comm.rank)
            x = torch.randn(8, 16, generator=data).to(torch.bfloat16)
            y = torch.randint(0, 4, (8,), generator=data)
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x).float(), y).backward()
            sync.synchronize()
            optimizer.step()
        sync.close()
        return torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])

    first, second = run_ranks(2, body)
    assert torch.equal(first, second)


def test_step_statistics_reach_python_logging(caplog):
    def body(comm):
        state = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05)
        state.reduce(0, bucket(comm.rank, 0, 0), False)
        state.reduce(1, bucket(comm.rank, 0, 1), True)
        state.close()

    with caplog.at_level("DEBUG", logger="sparsecoll.torch"):
        run_ranks(2, body)
    lines = [r.getMessage() for r in caplog.records if r.name == "sparsecoll.torch"]
    assert len(lines) == 2 and all("bytes sent" in line for line in lines), lines


def test_cuda_buckets_through_the_worker_equal_the_synchronous_reduce():
    """Two ranks sharing GPU 0 over the local transport: CUDA buckets submitted to the worker
    (on the submitting thread's stream) give bitwise the synchronous reduce's results."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device in this torch")

    def body(comm):
        sync = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.02)
        asynchronous = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.02)
        for step in range(3):
            want = [sync.reduce(i, bucket(comm.rank, step, i).cuda(), i == 2).cpu()
                    for i in range(3)]
            futures = [asynchronous.submit(i, bucket(comm.rank, step, i).cuda(), i == 2)
                       for i in range(3)]
            for w, future in zip(want, futures):
                assert torch.equal(future.wait().cpu(), w)
        sync.close()
        asynchronous.close()

    run_ranks(2, body)
