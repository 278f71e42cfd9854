"""Finds and loads libsparsecoll and declares the C functions the package calls.

Search order (first hit wins), so that an explicit choice always beats a guess:
  1. SPARSECOLL_LIBRARY: the path of libsparsecoll.so itself;
  2. the package's own copy, sparsecoll/lib/libsparsecoll.so.0: the wheel (build/python/*.whl)
     bundles it, with RUNPATH $ORIGIN, so an installed wheel needs nothing else;
  3. the install prefix: <prefix>/lib and <prefix>/lib/<multiarch> for sys.prefix, /usr/local
     and /usr (where `cmake --install` puts it), then the dynamic loader's own search
     (ldconfig, LD_LIBRARY_PATH);
  4. the build tree: SPARSECOLL_BUILD_DIR, else <repository>/build when the package is used in
     place from a checkout (bindings/python on PYTHONPATH).
Nothing found is an ImportError listing every place looked at. A package installed with
`pip install bindings/python` has no copy of the library and records no checkout (moving or
cleaning the checkout must not break an install silently): it finds the library through 1, 3 or
SPARSECOLL_BUILD_DIR.

The library is loaded with RTLD_GLOBAL: Open MPI opens its components with dlopen and they need
libmpi's symbols, which a library pulled in by a local dlopen would hide.
"""

import ctypes
import ctypes.util
import os
import sys
import sysconfig

from . import _ctypes_types as T

_LIBRARY_NAME = "libsparsecoll.so"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The soname: a wheel (a zip) cannot hold the libsparsecoll.so symlink, only one real file.
BUNDLED_PATH = os.path.join(_PACKAGE_DIR, "lib", _LIBRARY_NAME + ".0")


def _source_checkout():
    """The repository root when this package is used in place from bindings/python."""
    source_root = os.path.normpath(os.path.join(_PACKAGE_DIR, "..", "..", ".."))
    if os.path.isfile(os.path.join(source_root, "include", "sparsecoll", "sparsecoll.h")):
        return source_root
    return None


def candidate_paths():
    """Every path tried, in order (shown in the error when none exists)."""
    paths = []
    explicit = os.environ.get("SPARSECOLL_LIBRARY")
    if explicit:
        return [explicit]  # an explicit choice that does not exist must not fall back silently
    paths.append(BUNDLED_PATH)
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in dict.fromkeys([sys.prefix, "/usr/local", "/usr"]):
        paths.append(os.path.join(prefix, "lib", _LIBRARY_NAME))
        if multiarch:
            paths.append(os.path.join(prefix, "lib", multiarch, _LIBRARY_NAME))
    found = ctypes.util.find_library("sparsecoll")
    if found:
        paths.append(found)
    build_dir = os.environ.get("SPARSECOLL_BUILD_DIR")
    if build_dir:
        paths.append(os.path.join(build_dir, _LIBRARY_NAME))
    checkout = _source_checkout()
    if checkout:
        paths.append(os.path.join(checkout, "build", _LIBRARY_NAME))
    return paths


def _load():
    tried = []
    for path in candidate_paths():
        # find_library returns a bare soname for the loader to resolve; everything else is a path.
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as error:
            tried.append("%s (%s)" % (path, error))
    raise ImportError(
        "sparsecoll: cannot find libsparsecoll.so. Install the wheel that bundles it "
        "(scripts/build.sh writes build/python/sparsecoll-*.whl), or set "
        "SPARSECOLL_LIBRARY=/path/to/libsparsecoll.so or SPARSECOLL_BUILD_DIR=/path/to/build, or "
        "install the library (cmake --install build). Tried:\n  " + "\n  ".join(tried))


lib, path = _load()

_I = ctypes.c_int
_P = ctypes.c_void_p
_S = ctypes.c_size_t
_COMM = ctypes.c_void_p
_COMM_P = ctypes.POINTER(ctypes.c_void_p)

_SIGNATURES = {
    "scclGetErrorString": (ctypes.c_char_p, [_I]),
    "scclGetLastError": (ctypes.c_char_p, [_COMM]),
    "scclGetVersion": (_I, [ctypes.POINTER(_I)]),
    "scclGetUniqueId": (_I, [ctypes.POINTER(T.UniqueId)]),
    "scclCommInitRankConfig": (_I, [_COMM_P, _I, T.UniqueId, _I, ctypes.POINTER(T.Config)]),
    "scclCommInitMpi": (_I, [_COMM_P, _P, ctypes.POINTER(T.Config)]),
    "scclCommDestroy": (_I, [_COMM]),
    "scclCommAbort": (_I, [_COMM]),
    "scclCommGetAsyncError": (_I, [_COMM, ctypes.POINTER(_I)]),
    "scclCommCount": (_I, [_COMM, ctypes.POINTER(_I)]),
    "scclCommUserRank": (_I, [_COMM, ctypes.POINTER(_I)]),
    "scclCommTransportName": (_I, [_COMM, ctypes.POINTER(ctypes.c_char_p)]),
    "scclCommSplit": (_I, [_COMM, _I, _I, _COMM_P, ctypes.POINTER(T.Config)]),
    "scclAllReduce": (_I, [_P, _P, _S, _I, _I, _COMM, _P]),
    "scclAllGather": (_I, [_P, _P, _S, _I, _COMM, _P]),
    "scclReduceScatter": (_I, [_P, _P, _S, _I, _I, _COMM, _P]),
    "scclBroadcast": (_I, [_P, _P, _S, _I, _I, _COMM, _P]),
    "scclBarrier": (_I, [_COMM]),
    "scclSparseConfigFromJson": (_I, [ctypes.c_char_p, ctypes.POINTER(T.SparseConfig)]),
    "scclSparsifierCreate": (_I, [_COMM_P, _COMM, _S, _I, ctypes.POINTER(T.SparseConfig)]),
    "scclSparsifierDestroy": (_I, [_P]),
    "scclSparsifierReset": (_I, [_P]),
    "scclSparseAllreduce": (_I, [_P, _P, _S, _I, _I, _P, _COMM, _P]),
    "scclSparsifierGetStats": (_I, [_P, ctypes.POINTER(T.SparseStats)]),
    "scclSparsifierGetRankCounts": (_I, [_P, ctypes.POINTER(ctypes.c_uint64), _I]),
    "scclSparsifierMaskSent": (_I, [_P, _P, _S, _I]),
    "scclSparsifierGetAsyncError": (_I, [_P, ctypes.POINTER(_I)]),
    "scclSparsifierGetAlgorithm": (_I, [_P, ctypes.POINTER(ctypes.c_char_p)]),
    "scclSparsifierSetDensity": (_I, [_P, ctypes.c_double]),
    "scclSparsifierGetStateSize": (_I, [_P, ctypes.POINTER(_S)]),
    "scclSparsifierExportState": (_I, [_P, _P, _S, ctypes.POINTER(_S)]),
    "scclSparsifierImportState": (_I, [_P, _P, _S]),
}

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _function = getattr(lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes
