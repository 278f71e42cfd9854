"""Turns a torch tensor or a NumPy array into what the C ABI takes: address, element count,
scclDataType_t and stream.

Tensors must be contiguous (the library reads `count` consecutive elements). Host tensors pass
stream NULL. A CUDA tensor passes its device address and torch's current stream; the library
accepts those only when it was built with CUDA, and otherwise returns scclInvalidUsage, which is
raised like every other error.

NumPy is optional (the wheel must install offline into a bare venv), so it is never imported
here: an ndarray can only come from a caller who has imported numpy already, so it is recognised
through sys.modules.
"""

import functools
import sys

from .errors import Result, SparsecollError

# scclDataType_t, numbered as NCCL's.
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = range(10)


@functools.lru_cache(maxsize=None)
def _numpy_types(np):
    # Keyed by dtype, not dtype.name: a byte-swapped '>f4' is also named float32 but is not one.
    return {
        np.dtype(np.int8): INT8, np.dtype(np.uint8): UINT8, np.dtype(np.int32): INT32,
        np.dtype(np.uint32): UINT32, np.dtype(np.int64): INT64, np.dtype(np.uint64): UINT64,
        np.dtype(np.float16): FLOAT16, np.dtype(np.float32): FLOAT32,
        np.dtype(np.float64): FLOAT64,
    }


def _torch_types():
    import torch
    return {
        torch.int8: INT8, torch.uint8: UINT8, torch.int32: INT32, torch.int64: INT64,
        torch.float16: FLOAT16, torch.float32: FLOAT32, torch.float64: FLOAT64,
        torch.bfloat16: BFLOAT16,
    }


def _invalid(message):
    return SparsecollError(Result.INVALID_ARGUMENT, message)


def describe(buffer, what="tensor", written=False):
    """(address, count, dtype code, stream address or None) of a tensor or array; `written`: the
    library writes into it (an output or a broadcast buffer), so it must be writable."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(buffer, np.ndarray):
        if not buffer.flags["C_CONTIGUOUS"]:
            raise _invalid("%s must be C-contiguous" % what)
        if not buffer.flags["ALIGNED"]:
            raise _invalid("%s is not aligned to its element size" % what)
        if written and not buffer.flags["WRITEABLE"]:
            raise _invalid("%s is read-only, and the library writes into it" % what)
        types = _numpy_types(np)
        if buffer.dtype not in types:
            raise _invalid("%s has unsupported dtype %s" % (what, buffer.dtype))
        return buffer.ctypes.data, buffer.size, types[buffer.dtype], None
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not isinstance(buffer, torch.Tensor):
        raise _invalid("%s must be a torch.Tensor or numpy.ndarray, not %s" %
                       (what, type(buffer).__name__))
    if not buffer.is_contiguous():
        raise _invalid("%s must be contiguous (call .contiguous())" % what)
    types = _torch_types()
    if buffer.dtype not in types:
        raise _invalid("%s has unsupported dtype %s" % (what, buffer.dtype))
    stream = None
    if buffer.is_cuda:
        stream = torch.cuda.current_stream(buffer.device).cuda_stream
    elif buffer.device.type != "cpu":
        raise _invalid("%s is on %s; sparsecoll takes CPU tensors (and CUDA tensors when built "
                       "with CUDA)" % (what, buffer.device))
    return buffer.data_ptr(), buffer.numel(), types[buffer.dtype], stream
