"""Sparsifiers (scclSparsifier_t): the per-buffer state of the sparse all-reduce, configured by
keyword arguments or a JSON file, and its statistics as a dataclass.

Keyword arguments are the JSON keys of scclSparseConfigFromJson (algorithm, estimator, search,
reduction, density, error_feedback, density_correction, ...; docs/api.md lists them all). They
are serialised to JSON and parsed by the library, so an unknown key or an out-of-range value is
the library's scclInvalidArgument naming the key, exactly as for a C caller.
"""

import ctypes
import dataclasses
import json
import os

from . import _ctypes_types as T
from ._buffers import describe
from ._library import lib
from .communicator import _sparse_op_code
from .errors import Result, SparsecollError, check


@dataclasses.dataclass(frozen=True)
class SparseStats:
    """scclSparseStats_t with snake_case names: the last call and totals since creation/reset."""
    iteration: int
    k_target: int
    k_local: int
    k_global: int
    k_max: int
    density: float
    density_error: float
    gather_inflation: float
    bytes_sent: int
    bytes_received: int
    threshold: float
    residual_norm: float
    non_finite: int
    time_select_us: float
    time_comm_us: float
    time_other_us: float
    total_bytes_sent: int
    total_bytes_received: int
    total_time_select_us: float
    total_time_comm_us: float
    total_time_other_us: float
    mean_abs_density_error: float
    predicted_time_us: float
    auto_switches: int
    auto_settled: int
    # "hierarchy": "node": bytes inside the node (bytes_sent/received then cross nodes only).
    bytes_sent_inside_node: int = 0
    bytes_received_inside_node: int = 0
    total_bytes_sent_inside_node: int = 0
    total_bytes_received_inside_node: int = 0

    def as_dict(self):
        return dataclasses.asdict(self)


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def make_config(json_text=None, **kwargs):
    """A scclSparseConfig_t: the reference defaults, then json_text's keys, then kwargs."""
    config = T.sparse_config_initializer()
    for text in (json_text, json.dumps(kwargs) if kwargs else None):
        if text is not None:
            check(lib.scclSparseConfigFromJson(text.encode(), ctypes.byref(config)))
    return config


class Sparsifier:
    """Error-feedback residual and threshold state for one gradient buffer of `count` elements.

    Creation is collective over comm: every rank passes the same count, dtype and settings.
    """

    def __init__(self, comm, count, dtype="float32", config_file=None, **kwargs):
        from ._buffers import FLOAT16, FLOAT32, FLOAT64, BFLOAT16
        codes = {"float32": FLOAT32, "float64": FLOAT64, "float16": FLOAT16,
                 "bfloat16": BFLOAT16}
        name = str(dtype).replace("torch.", "")
        if name not in codes:
            raise SparsecollError(Result.INVALID_ARGUMENT,
                                  "dtype must be one of %s, not %s" % (sorted(codes), dtype))
        json_text = None
        if config_file is not None:
            if not os.path.isfile(config_file):
                raise SparsecollError(Result.INVALID_ARGUMENT,
                                      "config file %s does not exist" % config_file)
            with open(config_file, encoding="utf-8") as f:
                json_text = f.read()
        self._config = make_config(json_text, **kwargs)
        self.comm = comm
        self.count = int(count)
        self.dtype = codes[name]
        handle = ctypes.c_void_p()
        check(lib.scclSparsifierCreate(ctypes.byref(handle), comm.handle, self.count, self.dtype,
                                       ctypes.byref(self._config)), comm.handle)
        self._handle = handle

    @classmethod
    def from_json(cls, comm, count, path, dtype="float32", **overrides):
        """Settings from a JSON file; keyword arguments override its keys."""
        return cls(comm, count, dtype, config_file=path, **overrides)

    @property
    def algorithm(self):
        """The preset this sparsifier runs now; for algorithm="auto" the one the library's cost
        model chose at creation, or the one auto switched to after measured calls
        (scclSparsifierGetAlgorithm, the same on every rank)."""
        name = ctypes.c_char_p()
        check(lib.scclSparsifierGetAlgorithm(self.handle, ctypes.byref(name)), self.comm._handle)
        return name.value.decode()

    @property
    def density(self):
        return self._config.density

    @property
    def handle(self):
        if not self._handle.value:
            raise SparsecollError(Result.INVALID_USAGE, "the sparsifier was destroyed")
        return self._handle

    def allreduce(self, tensor, out=None, op="avg"):
        """scclSparseAllreduce: the aggregated sparse gradient in dense layout, bitwise the same
        on every rank; in place unless out is given. Unsent values stay in the residual."""
        out = tensor if out is None else out
        send, count, dtype, stream = describe(tensor)
        recv, out_count, out_dtype, _ = describe(out, "out", written=True)
        if (out_count, out_dtype) != (count, dtype):
            raise SparsecollError(Result.INVALID_ARGUMENT, "out must match tensor's size and dtype")
        comm = self.comm.handle
        check(lib.scclSparseAllreduce(send, recv, count, dtype, _sparse_op_code(op), self.handle,
                                      comm, stream), comm)
        return out

    def stats(self):
        raw = T.SparseStats()
        raw.size = ctypes.sizeof(T.SparseStats)
        check(lib.scclSparsifierGetStats(self.handle, ctypes.byref(raw)), self.comm._handle)
        return SparseStats(**{_snake(name): getattr(raw, name)
                              for name, _ in T.SparseStats._fields_ if name != "size"})

    def set_density(self, density):
        """scclSparsifierSetDensity: the target density from the next call on, ending any
        density_warmup. Every rank must set the same density before the same call (otherwise
        that call raises scclInvalidUsage on every rank; setting an agreed density resumes)."""
        check(lib.scclSparsifierSetDensity(self.handle, ctypes.c_double(float(density))),
              self.comm._handle)
        self._config.density = float(density)
        self._config.densityWarmupCalls = 0

    def rank_counts(self):
        """k_r of the last call for every rank r."""
        size = self.comm.size
        counts = (ctypes.c_uint64 * size)()
        check(lib.scclSparsifierGetRankCounts(self.handle, counts, size), self.comm._handle)
        return list(counts)

    def mask_sent(self, tensor):
        """scclSparsifierMaskSent: zeroes, in place, the elements of `tensor` (host memory, the
        sparsifier's count, a float dtype) that the last call's output carries (its global index
        list; s2: the marked blocks; dense: all), nothing when no call completed since creation,
        a reset or a load. DGC's momentum factor masking in k' writes instead of a pass over the
        vector. Host tensors after calls on host buffers only (else INVALID_USAGE), and not for
        hierarchy="node"."""
        address, count, dtype, _ = describe(tensor, "tensor", written=True)
        check(lib.scclSparsifierMaskSent(self.handle, address, count, dtype), self.comm._handle)
        return tensor

    def async_error(self):
        """scclSparsifierGetAsyncError as a Result: the sticky fault found while this
        sparsifier's calls ran on the GPU without reading anything back (the sync_free presets,
        cltk, s2 with its default "topk" selection; a peer's bad index in the other gather
        presets); SUCCESS otherwise. Never waits for the GPU."""
        value = ctypes.c_int()
        check(lib.scclSparsifierGetAsyncError(self.handle, ctypes.byref(value)), self.comm._handle)
        return Result(value.value)

    def state_dict(self):
        """Everything this sparsifier carries between calls (residual, threshold and estimator
        state, partitions, call number, density in effect, statistics) as {"version": 1,
        "blob": bytes}: scclSparsifierExportState's versioned, checksummed blob of this rank.
        Save it per rank (the residuals differ) with torch.save or pickle. On GPU buffers it waits
        for the device."""
        size = ctypes.c_size_t()
        check(lib.scclSparsifierGetStateSize(self.handle, ctypes.byref(size)), self.comm._handle)
        buffer = ctypes.create_string_buffer(max(1, size.value))
        written = ctypes.c_size_t()
        check(lib.scclSparsifierExportState(self.handle, buffer, size.value, ctypes.byref(written)),
              self.comm._handle)
        return {"version": _STATE_VERSION, "blob": buffer.raw[:written.value]}

    def load_state_dict(self, state):
        """Loads what state_dict() returned on this rank into a sparsifier created with the same
        count, dtype and settings on a communicator of the same size. Collective: every rank
        calls it at the same point. A damaged or foreign blob raises SparsecollError
        (INVALID_ARGUMENT on its rank, INVALID_USAGE on the others) and changes nothing."""
        blob = _state_blob(state)
        buffer = ctypes.create_string_buffer(blob, max(1, len(blob)))
        check(lib.scclSparsifierImportState(self.handle, buffer, len(blob)), self.comm._handle)

    def reset(self):
        """Clears residual, threshold and statistics (call on every rank at the same point)."""
        check(lib.scclSparsifierReset(self.handle), self.comm._handle)

    def destroy(self):
        if self._handle.value:
            handle, self._handle = self._handle, ctypes.c_void_p()
            check(lib.scclSparsifierDestroy(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._handle.value:
            lib.scclSparsifierDestroy(self._handle)
            self._handle = ctypes.c_void_p()


_STATE_VERSION = 1


def _state_blob(state):
    """The blob of a Sparsifier.state_dict() (or the bytes themselves)."""
    if isinstance(state, (bytes, bytearray, memoryview)):
        return bytes(state)
    if not isinstance(state, dict) or state.get("version") != _STATE_VERSION or \
            not isinstance(state.get("blob"), (bytes, bytearray)):
        raise SparsecollError(Result.INVALID_ARGUMENT,
                              "not a Sparsifier.state_dict() of version %d: %r" %
                              (_STATE_VERSION, type(state)))
    return bytes(state["blob"])


def sparse_allreduce(tensor, sparsifier, out=None, op="avg"):
    """Module-level form of Sparsifier.allreduce."""
    return sparsifier.allreduce(tensor, out=out, op=op)
