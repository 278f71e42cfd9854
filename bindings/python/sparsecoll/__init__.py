"""sparsecoll for Python: the C ABI of libsparsecoll through ctypes (no PyTorch version is
compiled in), and PyTorch integration in sparsecoll.torch (DDP communication hook, helper for
loops without DDP). See docs/python.md.
"""

import ctypes as _ctypes

from ._library import lib as _lib, path as library_path
from .communicator import Communicator, built_transports, get_unique_id, launched_by_mpi
from .errors import Result, SparsecollError, check as _check, error_string, last_error
from .sparsifier import SparseStats, Sparsifier, make_config, sparse_allreduce

__version__ = "0.1.0"


def library_version():
    """scclGetVersion as (major, minor, patch)."""
    code = _ctypes.c_int()
    _check(_lib.scclGetVersion(_ctypes.byref(code)))
    return (code.value // 10000, code.value // 100 % 100, code.value % 100)


def _check_version():
    found = "%d.%d.%d" % library_version()
    if found != __version__:
        raise ImportError("sparsecoll: package %s does not match libsparsecoll %s at %s; install "
                          "the package from the same sparsecoll version" %
                          (__version__, found, library_path))


_check_version()

__all__ = [
    "Communicator", "Result", "SparseStats", "Sparsifier", "SparsecollError", "built_transports",
    "error_string", "get_unique_id", "last_error", "launched_by_mpi", "library_path",
    "library_version", "make_config", "sparse_allreduce",
]
