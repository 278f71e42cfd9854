"""Keeps `pip install bindings/python` from writing into the source tree: setuptools' defaults put
build/ and sparsecoll.egg-info next to this file (a checkout must stay clean, and a stale build/
would be packaged by the next install). Both go to a scratch directory removed when the build
process exits. Everything else is in pyproject.toml.

This installs the Python package only: the library comes from SPARSECOLL_LIBRARY,
SPARSECOLL_BUILD_DIR or `cmake --install` (see sparsecoll/_library.py). The wheel that bundles
the library is built by CMake (build_wheel.py), not here.
"""

import atexit
import os
import shutil
import tempfile

from setuptools import setup

# pip runs each build step (egg_info, dist_info, bdist_wheel) in a process of its own, and each
# step only needs its own scratch files: the results go to directories pip names.
_scratch = tempfile.mkdtemp(prefix="sparsecoll-setup-")
atexit.register(shutil.rmtree, _scratch, True)

setup(options={
    "build": {"build_base": os.path.join(_scratch, "build")},
    "egg_info": {"egg_base": _scratch},
})
