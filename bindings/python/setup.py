"""Records the repository checkout the package is installed from (sparsecoll/_build_info.py), so
that an installed package still finds libsparsecoll.so in that checkout's build/ directory when
the library itself is not installed. Everything else is in pyproject.toml."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


class BuildPyWithBuildInfo(build_py):
    def run(self):
        super().run()
        if not os.path.isfile(os.path.join(SOURCE_ROOT, "include", "sparsecoll", "sparsecoll.h")):
            return  # built from a copy outside a checkout: no build tree to remember
        target = os.path.join(self.build_lib, "sparsecoll", "_build_info.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py at install time."""\nSOURCE_ROOT = %r\n' % SOURCE_ROOT)


setup(cmdclass={"build_py": BuildPyWithBuildInfo})
