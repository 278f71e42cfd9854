"""The Communicator of the sparsecoll package in one process: creation (unique ids, transports,
from_env), the dense collectives, split and reduce_scatter, destroy and abort; one rank (the comm
fixture of conftest.py), and several ranks as threads over the in-process transport (ctypes
releases the GIL during each C call, so the ranks run concurrently). Errors must arrive as
SparsecollError with the library's code and message."""

import threading

import numpy as np
import pytest
import torch

import sparsecoll
from sparsecoll import Communicator, Result, SparsecollError
from thread_ranks import run_ranks


def test_unique_id_is_128_bytes_and_fresh():
    a, b = sparsecoll.get_unique_id(), sparsecoll.get_unique_id()
    assert isinstance(a, bytes) and len(a) == 128 and a != b


def test_single_rank_communicator_queries(comm):
    assert (comm.rank, comm.size, comm.transport) == (0, 1, "local")
    assert comm.async_error() == Result.SUCCESS
    comm.barrier()


def test_dense_collectives_on_four_thread_ranks():
    def body(comm):
        r = comm.rank
        x = torch.arange(5, dtype=torch.float32) + r
        comm.allreduce(x)
        y = np.full(3, r, dtype=np.float64)
        avg = np.empty_like(y)
        comm.allreduce(y, out=avg, op="avg")
        gathered = torch.empty(8, dtype=torch.int32)
        comm.allgather(torch.tensor([r, 10 * r], dtype=torch.int32), gathered)
        b = torch.full((4,), float(r))
        comm.broadcast(b, root=2)
        comm.barrier()
        return x, avg, gathered, b

    for x, avg, gathered, b in run_ranks(4, body):
        assert torch.equal(x, torch.arange(5, dtype=torch.float32) * 4 + 6)
        assert np.array_equal(avg, np.full(3, 1.5))
        assert gathered.tolist() == [0, 0, 1, 10, 2, 20, 3, 30]
        assert torch.equal(b, torch.full((4,), 2.0))


def test_split_on_four_thread_ranks():
    def body(comm):
        with comm.split(comm.rank % 2, key=-comm.rank) as child:  # each parity, reversed
            x = torch.full((3,), float(comm.rank))
            child.allreduce(x)
            shape = (child.rank, child.size, child.transport, x.tolist())
        nocolor = comm.split(None)
        with pytest.raises(SparsecollError) as info:
            comm.split(-5)  # every rank: each refuses its own color
        comm.barrier()  # still usable
        return shape, nocolor, info.value.code, "color -5" in info.value.message

    # Parent ranks 0, 2 become 1, 0 (sum 2); 1, 3 become 1, 0 (sum 4).
    shapes = [(1, 2, "local", [2.0] * 3), (1, 2, "local", [4.0] * 3),
              (0, 2, "local", [2.0] * 3), (0, 2, "local", [4.0] * 3)]
    assert run_ranks(4, body) == [(shape, None, Result.INVALID_ARGUMENT, True) for shape in shapes]


def test_reduce_scatter_is_the_allreduce_block_on_three_thread_ranks():
    def body(comm):
        g = torch.Generator().manual_seed(7 + comm.rank)
        x = torch.randn(3 * 5, generator=g) * torch.logspace(-3, 3, 15)
        block = torch.empty(5)
        comm.reduce_scatter(x, block)
        full = comm.allreduce(x.clone())
        avg = comm.reduce_scatter(x, torch.empty(5), op="avg")
        with pytest.raises(SparsecollError) as info:
            comm.reduce_scatter(x, torch.empty(4))
        mine = slice(comm.rank * 5, comm.rank * 5 + 5)
        return (torch.equal(block, full[mine]),
                torch.equal(avg, comm.allreduce(x.clone(), op="avg")[mine]),
                info.value.code)

    assert run_ranks(3, body) == [(True, True, Result.INVALID_ARGUMENT)] * 3


def test_max_and_min_on_three_thread_ranks():
    """Dense max and min: every rank gets the element-wise extreme, reduce_scatter its block of
    it; the sparse all-reduce refuses them (its error feedback keeps values for a later sum)."""
    def body(comm):
        r = comm.rank
        x = torch.tensor([float(r), -float(r), 5.0 - r, 0.5 * r, 1.0, -2.0], dtype=torch.float32)
        hi = comm.allreduce(x.clone(), op="max")
        lo = comm.allreduce(x.clone(), op="min")
        ints = comm.allreduce(torch.tensor([r - 1, 10 * r], dtype=torch.int64), op="max")
        block = comm.reduce_scatter(x, torch.empty(2), op="min")
        sp = sparsecoll.Sparsifier(comm, 64, algorithm="micro", density=0.1)
        with pytest.raises(SparsecollError) as info:
            sp.allreduce(torch.ones(64), op="max")
        sp.destroy()
        return hi.tolist(), lo.tolist(), ints.tolist(), block.tolist(), info.value.code
    results = run_ranks(3, body)
    for rank, (hi, lo, ints, block, code) in enumerate(results):
        assert hi == [2.0, -0.0, 5.0, 1.0, 1.0, -2.0]
        assert lo == [0.0, -2.0, 3.0, 0.0, 1.0, -2.0]
        assert ints == [1, 20]
        assert block == lo[2 * rank:2 * rank + 2]
        assert code == Result.INVALID_ARGUMENT


def test_bad_unique_id_is_invalid_argument():
    with pytest.raises(SparsecollError) as info:
        Communicator.from_unique_id(b"short", 0, 1)
    assert info.value.code == Result.INVALID_ARGUMENT
    with pytest.raises(SparsecollError) as info:  # 128 bytes, but not a sparsecoll id
        Communicator.from_unique_id(bytes(128), 0, 1)
    assert info.value.code == Result.INVALID_ARGUMENT
    assert "not a sparsecoll unique id" in info.value.message


def test_rank_out_of_range_is_reported_by_the_library():
    with pytest.raises(SparsecollError) as info:
        Communicator.from_unique_id(sparsecoll.get_unique_id(), 3, 2, transport="local")
    assert info.value.code == Result.INVALID_ARGUMENT
    assert info.value.message != ""


def test_unknown_transport_is_reported_by_the_library():
    with pytest.raises(SparsecollError) as info:
        Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 1, transport="carrier_pigeon")
    assert info.value.code in (Result.INVALID_ARGUMENT, Result.INVALID_USAGE)
    assert "carrier_pigeon" in info.value.message


def test_mpi_transport_outside_an_mpi_job_is_refused(monkeypatch):
    for name in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SparsecollError) as info:
        Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 2, transport="mpi")
    assert info.value.code == Result.INVALID_USAGE
    assert "mpirun" in info.value.message


def test_default_transport_outside_mpi_is_the_librarys_auto(monkeypatch):
    from sparsecoll import communicator
    for name in ("SCCL_TRANSPORT", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                 "MPI_LOCALNRANKS"):
        monkeypatch.delenv(name, raising=False)
    built = communicator.built_transports()
    assert "local" in built  # the probe parsed the library's list
    assert communicator._default_transport(1) == "local"
    assert communicator._default_transport(2) == "auto"  # the library decides at the rendezvous
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")  # under mpirun: mpi, as before
    assert communicator._default_transport(2) == "mpi"
    monkeypatch.setenv("SCCL_TRANSPORT", "local")  # the variable wins
    assert communicator._default_transport(2) == "local"


def test_threads_of_one_process_get_local_without_a_transport(monkeypatch):
    for name in ("SCCL_TRANSPORT", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                 "MPI_LOCALNRANKS"):
        monkeypatch.delenv(name, raising=False)
    unique_id = sparsecoll.get_unique_id()
    chosen = {}

    def rank(r):
        comm = Communicator.from_unique_id(unique_id, r, 2)
        comm.barrier()
        chosen[r] = comm.transport
        comm.destroy()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert chosen == {0: "local", 1: "local"}


def test_from_env_names_missing_variables(monkeypatch):
    monkeypatch.delenv("MASTER_PORT", raising=False)
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(SparsecollError) as info:
        Communicator.from_env()
    assert info.value.code == Result.INVALID_USAGE and "MASTER_PORT" in info.value.message


def test_from_env_with_a_store_hosted_here(monkeypatch):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", str(port))):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    with Communicator.from_env(timeout_s=30) as c:
        assert (c.rank, c.size) == (0, 1)


def test_destroyed_communicator_is_invalid_usage():
    c = Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 1)
    c.destroy()
    c.destroy()  # idempotent
    with pytest.raises(SparsecollError) as info:
        c.barrier()
    assert info.value.code == Result.INVALID_USAGE


def test_abort_frees_the_communicator():
    c = Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 1)
    c.abort()
    with pytest.raises(SparsecollError):
        _ = c.rank


def test_read_only_output_is_refused(comm):
    frozen = np.frombuffer(bytes(16), dtype=np.float32)  # read-only view of a bytes object
    with pytest.raises(SparsecollError) as info:
        comm.allreduce(frozen)  # in place: the library would write into the bytes object
    assert info.value.code == Result.INVALID_ARGUMENT and "read-only" in info.value.message
    with pytest.raises(SparsecollError) as info:
        comm.allreduce(np.ones(4, np.float32), out=frozen)
    assert info.value.code == Result.INVALID_ARGUMENT and "read-only" in info.value.message
    out = comm.allreduce(np.ones(4, np.float32), out=np.zeros(4, np.float32))
    assert np.array_equal(out, np.ones(4, np.float32))


def test_buffer_checks(comm):
    with pytest.raises(SparsecollError) as info:
        comm.allreduce(torch.zeros(4, 4).t())
    assert info.value.code == Result.INVALID_ARGUMENT and "contiguous" in info.value.message
    with pytest.raises(SparsecollError) as info:
        comm.allreduce([1.0, 2.0])
    assert info.value.code == Result.INVALID_ARGUMENT
    with pytest.raises(SparsecollError) as info:
        comm.allreduce(torch.zeros(3), op="prod")
    assert info.value.code == Result.INVALID_ARGUMENT and "op" in info.value.message
    with pytest.raises(SparsecollError) as info:
        comm.allreduce(torch.zeros(3), out=torch.zeros(4))
    assert info.value.code == Result.INVALID_ARGUMENT
    with pytest.raises(SparsecollError) as info:
        comm.broadcast(torch.zeros(3), root=5)
    assert info.value.code == Result.INVALID_ARGUMENT and info.value.message != ""
