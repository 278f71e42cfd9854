"""Checkpoints in Python: Sparsifier.state_dict / load_state_dict, HookState's and
GradientSynchronizer's (with momentum correction, its warm-up and the Adam preconditioner), and
pickling a HookState. A run saved after N steps and resumed by new objects gives bitwise the
parameters of the uninterrupted run; a damaged blob raises on every rank and changes nothing."""

import io
import pickle

import pytest
import torch

import sparsecoll
import sparsecoll.torch
from sparsecoll import Result, SparsecollError, Sparsifier
from thread_ranks import run_ranks


def gradient(rank, step, count):
    generator = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(count, generator=generator)


def test_sparsifier_state_dict_resumes_bit_for_bit():
    count, before, after = 5003, 4, 5

    def body(comm):
        sp = Sparsifier(comm, count, algorithm="exdyna", density=0.02)
        for step in range(before):
            sp.allreduce(gradient(comm.rank, step, count))
        saved = sp.state_dict()
        whole = [sp.allreduce(gradient(comm.rank, before + s, count)).clone()
                 for s in range(after)]
        stats = sp.stats()
        sp.destroy()
        buffer = io.BytesIO()
        torch.save(saved, buffer)  # what a training script does with it
        buffer.seek(0)
        resumed_sp = Sparsifier(comm, count, algorithm="exdyna", density=0.02)
        resumed_sp.load_state_dict(torch.load(buffer))
        resumed = [resumed_sp.allreduce(gradient(comm.rank, before + s, count)).clone()
                   for s in range(after)]
        resumed_stats = resumed_sp.stats()
        resumed_sp.destroy()
        return whole, resumed, stats, resumed_stats

    for whole, resumed, stats, resumed_stats in run_ranks(2, body):
        for a, b in zip(whole, resumed):
            assert torch.equal(a, b)
        assert resumed_stats.iteration == stats.iteration == before + after
        assert resumed_stats.threshold == stats.threshold
        assert resumed_stats.total_bytes_sent == stats.total_bytes_sent


def test_sparsifier_load_state_dict_refuses_a_damaged_blob_on_every_rank():
    count = 4096

    def body(comm):
        sp = Sparsifier(comm, count, algorithm="micro", density=0.01)
        for step in range(3):
            sp.allreduce(gradient(comm.rank, step, count))
        good = sp.state_dict()
        blob = bytearray(good["blob"])
        if comm.rank == 1:
            blob[len(blob) // 2] ^= 0x01
        with pytest.raises(SparsecollError) as refused:
            sp.load_state_dict({"version": 1, "blob": bytes(blob)})
        want = Result.INVALID_ARGUMENT if comm.rank == 1 else Result.INVALID_USAGE
        assert refused.value.code == want, refused.value
        assert sp.state_dict()["blob"] == good["blob"]  # unchanged
        with pytest.raises(SparsecollError):
            sp.load_state_dict({"version": 7, "blob": b""})  # refused before the library
        sp.load_state_dict(good)
        assert sp.stats().iteration == 3
        sp.destroy()

    run_ranks(2, body)


def seeded_mlp(seed):
    init = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=init) * 0.2)
    return model


def train_steps(model, sync, optimizer, rank, first, steps):
    for step in range(first, first + steps):
        data = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(16, 20, generator=data)
        y = torch.randint(0, 5, (16,), generator=data)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        sync.synchronize()
        optimizer.step()


SETTINGS = [
    dict(algorithm="micro", density=0.05, momentum=0.9, nesterov=True,
         momentum_warmup={"start": 0.5, "steps": 6}, density_warmup={"start": 0.3, "calls": 5}),
    dict(algorithm="sidco", density=0.05, preconditioner="adam"),
    dict(algorithm="s2", density=0.05),
    dict(algorithm="micro_sync_free", density=0.05, momentum=0.9),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s["algorithm"])
def test_gradient_synchronizer_state_dict_resumes_bit_for_bit(settings):
    before, after = 4, 5

    def run(comm, resume):
        model = seeded_mlp(7)
        # A small bucket cap: several buckets, each with its own sparsifier.
        sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm,
                                                     bucket_cap_mb=0.002, **dict(settings))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        train_steps(model, sync, optimizer, comm.rank, 0, before)
        saved = {"model": {k: v.clone() for k, v in model.state_dict().items()},
                 "sync": sync.state_dict()}
        if resume:  # a new process would build everything again and load
            sync.close()
            model = seeded_mlp(99)
            model.load_state_dict(saved["model"])
            sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm,
                                                         bucket_cap_mb=0.002, **dict(settings))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
            sync.load_state_dict(pickle.loads(pickle.dumps(saved["sync"])))
        train_steps(model, sync, optimizer, comm.rank, before, after)
        traffic = sync.traffic.summary()
        sync.close()
        return [p.detach().clone() for p in model.parameters()], traffic

    def body(comm):
        return run(comm, False), run(comm, True)

    for (whole, whole_traffic), (resumed, resumed_traffic) in run_ranks(2, body):
        assert len(whole) == len(resumed) > 0
        for a, b in zip(whole, resumed):
            assert torch.equal(a, b), (a - b).abs().max()
        assert whole_traffic == resumed_traffic


def test_hook_state_pickles_without_its_communicator():
    def body(comm):
        state = sparsecoll.torch.HookState(comm, algorithm="exdyna", density=0.05, momentum=0.9)
        grads = [gradient(comm.rank, step, 300) for step in range(3)]
        for g in grads:
            state.reduce(0, g.clone(), True)
        state.set_density(0.04)
        restored = pickle.loads(pickle.dumps(state))
        assert restored.comm is None
        with pytest.raises(SparsecollError) as no_comm:
            restored.reduce(0, grads[0].clone(), True)
        assert no_comm.value.code == Result.INVALID_USAGE
        restored.comm = comm
        a = state.reduce(0, grads[1].clone(), True)
        b = restored.reduce(0, grads[1].clone(), True)
        assert torch.equal(a, b)
        assert restored.sparsifier_kwargs["density"] == 0.04
        state.close()
        restored.close()

    run_ranks(2, body)


def _needs_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device in this torch")


def test_cuda_sparsifier_state_dict_resumes_bit_for_bit_and_moves_to_the_host():
    """Ranks sharing GPU 0 over the local transport (pinned staging): a sparsifier saved after 3
    calls on CUDA tensors continues bitwise in a new one on CUDA tensors, and in one on CPU
    tensors (the residual is the residual, wherever it lives)."""
    _needs_cuda()
    count, before, after = 10007, 3, 3

    def body(comm):
        sp = Sparsifier(comm, count, algorithm="micro", density=0.01)
        for step in range(before):
            sp.allreduce(gradient(comm.rank, step, count).cuda())
        saved = sp.state_dict()
        whole = [sp.allreduce(gradient(comm.rank, before + s, count).cuda()).cpu()
                 for s in range(after)]
        sp.destroy()
        resumed = {}
        for device in ("cuda", "cpu"):
            again = Sparsifier(comm, count, algorithm="micro", density=0.01)
            again.load_state_dict(saved)
            resumed[device] = [again.allreduce(gradient(comm.rank, before + s, count).to(device))
                               .cpu() for s in range(after)]
            again.destroy()
        return whole, resumed

    for whole, resumed in run_ranks(2, body):
        for device in ("cuda", "cpu"):
            for a, b in zip(whole, resumed[device]):
                assert torch.equal(a, b), device


def test_cuda_hook_over_an_nccl_process_group_resumes_bit_for_bit(tmp_path):
    """One rank: an NCCL process group gives an nccl communicator, CUDA buckets go through the
    hook (sync and async), and a HookState saved and loaded continues bitwise."""
    _needs_cuda()
    if "nccl" not in sparsecoll.built_transports():
        pytest.skip("this build of sparsecoll has no NCCL transport")
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("nccl", init_method="file://%s" % (tmp_path / "store"), rank=0,
                            world_size=1)
    try:
        comm = sparsecoll.Communicator.from_process_group()
        assert comm.transport == "nccl"

        def train(hook, steps, saved=None):
            model = seeded_mlp(7).cuda()
            if saved is not None:
                model.load_state_dict(saved["model"])
            ddp = DistributedDataParallel(model)
            state = sparsecoll.torch.HookState(comm, algorithm="micro", density=0.05)
            if saved is not None:
                state.load_state_dict(saved["hook"])
            ddp.register_comm_hook(state, hook)
            optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
            first = 0 if saved is None else 3
            for step in range(first, first + steps):
                data = torch.Generator().manual_seed(step)
                x = torch.randn(16, 20, generator=data).cuda()
                y = torch.randint(0, 5, (16,), generator=data).cuda()
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
                optimizer.step()
            torch.cuda.synchronize()
            out = {"model": {k: v.clone() for k, v in model.state_dict().items()},
                   "hook": state.state_dict()}
            state.close()
            return out

        whole = train(sparsecoll.torch.hook, 6)
        asynchronous = train(sparsecoll.torch.async_hook, 6)
        half = train(sparsecoll.torch.hook, 3)
        resumed = train(sparsecoll.torch.async_hook, 3, saved=half)
        for name, value in whole["model"].items():
            assert torch.equal(value, asynchronous["model"][name]), name
            assert torch.equal(value, resumed["model"][name]), name
        comm.destroy()
    finally:
        dist.destroy_process_group()
