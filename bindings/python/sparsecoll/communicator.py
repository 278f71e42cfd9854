"""Communicators: creation from a unique id (shared through a torch.distributed store or process
group, or from torchrun's environment variables) or from an MPI launch, and the dense
collectives.

Which transport: the `transport` argument, else SCCL_TRANSPORT, else "local" for a single rank,
else "mpi" when this process was started by mpirun/mpiexec, else "auto": the library decides
during the rendezvous, the same on every rank ("local" when the ranks are threads of one process,
else "ucx" when built: processes started by torchrun, a scheduler or by hand; else an error
saying what is missing; docs/transports.md).
The "mpi" transport needs the processes to be one MPI job; MPI is initialised here through mpi4py
when the application has not done it. Asking for "mpi" outside an MPI job is refused at once with
a message saying so (and naming the transports this build has), rather than failing in the library.
"""

import ctypes
import functools
import os
import re

from . import _ctypes_types as T
from ._buffers import describe
from ._library import lib
from .errors import Result, SparsecollError, check

_NOCOLOR = -1  # SCCL_SPLIT_NOCOLOR
_OPS = {"sum": 0, "avg": 1, "max": 2, "min": 3}  # scclRedOp_t
_SPARSE_OPS = ("sum", "avg")
_MPI_LAUNCH_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")
_BUILD_HAS = re.compile(r"this build has: ([a-z0-9_, ]*)\)")
_store_counter = [0]


def _op_code(op, allowed=tuple(_OPS)):
    if op not in allowed:
        raise SparsecollError(Result.INVALID_ARGUMENT, "op must be one of %s, not %r"
                              % (", ".join(repr(name) for name in allowed), op))
    return _OPS[op]


def _sparse_op_code(op):
    """A sparse all-reduce sums (or averages): max and min are for the dense collectives."""
    return _op_code(op, _SPARSE_OPS)


def get_unique_id():
    """scclGetUniqueId: 128 bytes to hand to every rank; starts the rendezvous service here."""
    uid = T.UniqueId()
    check(lib.scclGetUniqueId(ctypes.byref(uid)))
    return bytes(uid.internal)


def launched_by_mpi():
    """True when this process was started by mpirun/mpiexec (Open MPI, PMIx or Hydra)."""
    return any(name in os.environ for name in _MPI_LAUNCH_VARIABLES)


def _ensure_mpi_initialised():
    try:
        from mpi4py import MPI  # importing initialises MPI (thread level: multiple)
    except ImportError as error:
        raise SparsecollError(Result.INVALID_USAGE,
                              "the mpi transport needs MPI initialised; install mpi4py "
                              "(python3-mpi4py) or call MPI_Init_thread first") from error
    return MPI


@functools.lru_cache(maxsize=None)
def built_transports():
    """The transports this library was built with, e.g. ("local", "mpi", "ucx"); () if unknown.

    The C ABI has no call that lists them, but scclCommInitRankConfig names them in its error for
    a transport name it does not know, and it checks the name before it reads the unique id or
    opens any connection. So asking for transport "" on a blank id is a probe without side effects
    (beyond this thread's last-error message); the answer is cached."""
    config = T.config_initializer()
    config.transport = b""
    handle = ctypes.c_void_p()
    result = lib.scclCommInitRankConfig(ctypes.byref(handle), 1, T.UniqueId(), 0,
                                        ctypes.byref(config))
    if result == Result.SUCCESS:  # cannot happen with an empty name; never leak a communicator
        lib.scclCommDestroy(handle)
        return ()
    match = _BUILD_HAS.search((lib.scclGetLastError(None) or b"").decode(errors="replace"))
    return tuple(name.strip() for name in match.group(1).split(",")) if match else ()


def _default_transport(size):
    transport = os.environ.get("SCCL_TRANSPORT")
    if transport:
        return transport
    if size == 1:
        return "local"
    if launched_by_mpi():
        return "mpi"
    return "auto"


class Communicator:
    """A sparsecoll communicator (scclComm_t). Use one thread at a time, as in NCCL."""

    def __init__(self, handle):
        self._handle = ctypes.c_void_p(handle)

    # --- creation -----------------------------------------------------------------------------
    @classmethod
    def from_unique_id(cls, unique_id, rank, size, transport=None, timeout_ms=None, name=None):
        """scclCommInitRankConfig: collective over the `size` callers passing the same id."""
        if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != T.UNIQUE_ID_BYTES:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "unique_id must be %d bytes from get_unique_id()" %
                                  T.UNIQUE_ID_BYTES)
        transport = transport or _default_transport(size)
        if transport == "mpi":
            if size > 1 and not launched_by_mpi():
                raise SparsecollError(
                    Result.INVALID_USAGE,
                    "transport 'mpi' needs the ranks to be one MPI job: launch with mpirun, or "
                    "choose another inter-process transport with SCCL_TRANSPORT or transport= "
                    "(this build has: %s)" % (", ".join(built_transports()) or "unknown"))
            _ensure_mpi_initialised()
        config = T.config_initializer()
        config.transport = transport.encode()
        if timeout_ms is not None:
            config.timeoutMs = int(timeout_ms)
        if name is not None:
            config.commName = name.encode()
        uid = T.UniqueId()
        uid.internal = (ctypes.c_ubyte * T.UNIQUE_ID_BYTES).from_buffer_copy(bytes(unique_id))
        handle = ctypes.c_void_p()
        check(lib.scclCommInitRankConfig(ctypes.byref(handle), int(size), uid, int(rank),
                                         ctypes.byref(config)))
        return cls(handle.value)

    @classmethod
    def from_store(cls, store, rank, size, key=None, **kwargs):
        """Rank 0 makes the id and puts it in a torch.distributed Store; the others wait for it."""
        if key is None:
            _store_counter[0] += 1
            key = "sparsecoll/unique_id/%d" % _store_counter[0]
        if rank == 0:
            unique_id = get_unique_id()
            store.set(key, unique_id)
        else:
            unique_id = bytes(store.get(key))
        return cls.from_unique_id(unique_id, rank, size, **kwargs)

    @classmethod
    def from_process_group(cls, group=None, **kwargs):
        """Same ranks as a torch.distributed process group; the id is broadcast through it. With
        an NCCL process group the communicator runs over NCCL too (where this library was built
        with it and neither transport= nor SCCL_TRANSPORT names another): its gradients are CUDA
        tensors, which NCCL carries without staging through host memory."""
        import torch
        import torch.distributed as dist
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        # An NCCL process group broadcasts device tensors only.
        device = "cuda" if dist.get_backend(group) == "nccl" else "cpu"
        if device == "cuda" and "transport" not in kwargs and \
                not os.environ.get("SCCL_TRANSPORT") and "nccl" in built_transports():
            kwargs["transport"] = "nccl"
        buffer = torch.zeros(T.UNIQUE_ID_BYTES, dtype=torch.uint8, device=device)
        if rank == 0:
            buffer.copy_(torch.frombuffer(bytearray(get_unique_id()), dtype=torch.uint8))
        if group is None:
            source = 0
        else:  # torch 1.13 has only the private spelling
            global_rank = getattr(dist, "get_global_rank", None) or \
                dist.distributed_c10d._get_global_rank
            source = global_rank(group, 0)
        dist.broadcast(buffer, src=source, group=group)
        return cls.from_unique_id(bytes(buffer.cpu().numpy().tobytes()), rank, size, **kwargs)

    @classmethod
    def from_env(cls, timeout_s=300, **kwargs):
        """RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun (or init_process_group's
        env:// method) sets them. Uses the default process group when one exists, else a
        TCPStore at MASTER_ADDR:MASTER_PORT (hosted by torchrun's agent, or by rank 0)."""
        import datetime
        import torch.distributed as dist
        missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
                   if v not in os.environ]
        if missing:
            raise SparsecollError(Result.INVALID_USAGE,
                                  "environment variables not set: %s (launch with torchrun, or "
                                  "set them)" % ", ".join(missing))
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if dist.is_available() and dist.is_initialized():
            return cls.from_process_group(**kwargs)
        hosted_by_agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), size,
                              rank == 0 and not hosted_by_agent,
                              datetime.timedelta(seconds=timeout_s))
        return cls.from_store(store, rank, size, **kwargs)

    @classmethod
    def from_mpi(cls, mpi_comm=None, transport=None, timeout_ms=None, name=None):
        """scclCommInitMpi over an mpi4py communicator (None: MPI.COMM_WORLD)."""
        MPI = _ensure_mpi_initialised()
        mpi_comm = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        config = T.config_initializer()
        if transport is not None:
            config.transport = transport.encode()
        if timeout_ms is not None:
            config.timeoutMs = int(timeout_ms)
        if name is not None:
            config.commName = name.encode()
        handle = ctypes.c_void_p()
        check(lib.scclCommInitMpi(ctypes.byref(handle), ctypes.c_void_p(MPI._addressof(mpi_comm)),
                                  ctypes.byref(config)))
        return cls(handle.value)

    def split(self, color, key=None, transport=None, timeout_ms=None, name=None):
        """scclCommSplit: collective over this communicator (every rank calls it). The ranks
        passing the same color (an int >= 0) form a new Communicator, ranked by (key, rank here);
        key None is this rank, so the order stays the parent's. color None (SCCL_SPLIT_NOCOLOR)
        takes no part and returns None. Settings not given are the parent's; the transport is
        "local" when the new ranks are threads of one process, else this one's."""
        config = T.config_initializer()
        if transport is not None:
            config.transport = transport.encode()
        if timeout_ms is not None:
            config.timeoutMs = int(timeout_ms)
        if name is not None:
            config.commName = name.encode()
        handle = ctypes.c_void_p()
        check(lib.scclCommSplit(self.handle, _NOCOLOR if color is None else int(color),
                                self.rank if key is None else int(key), ctypes.byref(handle),
                                ctypes.byref(config)), self.handle)
        return type(self)(handle.value) if handle.value else None

    # --- life cycle ---------------------------------------------------------------------------
    @property
    def handle(self):
        if not self._handle.value:
            raise SparsecollError(Result.INVALID_USAGE, "the communicator was destroyed")
        return self._handle

    def destroy(self):
        """scclCommDestroy. A second call does nothing. Call it on every rank: over UCX a healthy
        communicator meets its peers in a barrier first (bounded by the communicator's timeout),
        and MPI_Comm_free is collective over MPI."""
        if self._handle.value:
            handle, self._handle = self._handle, ctypes.c_void_p()
            check(lib.scclCommDestroy(handle))

    def abort(self):
        """scclCommAbort: marks the communicator failed and frees it."""
        if self._handle.value:
            handle, self._handle = self._handle, ctypes.c_void_p()
            lib.scclCommAbort(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        # A fallback for a communicator nobody destroyed: over UCX or MPI destruction meets the
        # peers (bounded by the timeout, so never a hang), so call destroy() on every rank instead
        # of leaving it to garbage collection. Errors are not raised here.
        if getattr(self, "_handle", None) is not None and self._handle.value:
            lib.scclCommDestroy(self._handle)
            self._handle = ctypes.c_void_p()

    # --- queries ------------------------------------------------------------------------------
    def _int_query(self, function):
        value = ctypes.c_int()
        check(function(self.handle, ctypes.byref(value)), self.handle)
        return value.value

    @property
    def rank(self):
        return self._int_query(lib.scclCommUserRank)

    @property
    def size(self):
        return self._int_query(lib.scclCommCount)

    @property
    def transport(self):
        name = ctypes.c_char_p()
        check(lib.scclCommTransportName(self.handle, ctypes.byref(name)), self.handle)
        return name.value.decode()

    def async_error(self):
        """scclCommGetAsyncError as a Result (SUCCESS while healthy)."""
        return Result(self._int_query(lib.scclCommGetAsyncError))

    # --- dense collectives --------------------------------------------------------------------
    def allreduce(self, tensor, out=None, op="sum"):
        """Element-wise "sum", "avg", "max" or "min" over ranks; in place unless out is given."""
        out = tensor if out is None else out
        send, count, dtype, stream = describe(tensor)
        recv, out_count, out_dtype, _ = describe(out, "out", written=True)
        if (out_count, out_dtype) != (count, dtype):
            raise SparsecollError(Result.INVALID_ARGUMENT, "out must match tensor's size and dtype")
        check(lib.scclAllReduce(send, recv, count, dtype, _op_code(op), self.handle, stream),
              self.handle)
        return out

    def allgather(self, tensor, out):
        """out[r * n : (r + 1) * n] = tensor of rank r (n = tensor's element count)."""
        send, count, dtype, stream = describe(tensor)
        recv, out_count, out_dtype, _ = describe(out, "out", written=True)
        if out_dtype != dtype or out_count != count * self.size:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "out must hold size x tensor's elements of its dtype")
        check(lib.scclAllGather(send, recv, count, dtype, self.handle, stream), self.handle)
        return out

    def reduce_scatter(self, tensor, out, op="sum"):
        """out = the reduction (op: "sum", "avg", "max", "min") over ranks of tensor[r * n : (r + 1) * n] for this rank r
        (n = out's element count, tensor holds size x n): bitwise that block of allreduce."""
        send, count, dtype, stream = describe(tensor)
        recv, out_count, out_dtype, _ = describe(out, "out", written=True)
        if out_dtype != dtype or out_count * self.size != count:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "tensor must hold size x out's elements of its dtype")
        check(lib.scclReduceScatter(send, recv, out_count, dtype, _op_code(op), self.handle,
                                    stream), self.handle)
        return out

    def broadcast(self, tensor, root=0):
        """In place: every rank gets root's tensor."""
        buf, count, dtype, stream = describe(tensor, written=True)
        check(lib.scclBroadcast(buf, buf, count, dtype, int(root), self.handle, stream),
              self.handle)
        return tensor

    def barrier(self):
        check(lib.scclBarrier(self.handle), self.handle)
