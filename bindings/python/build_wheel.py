"""Writes the binary wheel of sparsecoll: the package plus libsparsecoll, so that
`pip install sparsecoll-*.whl` needs neither the checkout nor a network (PEP 427).

Run by CMake (cmake/SparsecollPythonWheel.cmake), which first installs the library into a staging
prefix so that its RUNPATH is $ORIGIN. The wheel is made by the standard tools, setuptools and
wheel's bdist_wheel (Debian: python3-setuptools, python3-wheel), run in this process so that
nothing is fetched: the metadata comes from pyproject.toml, the archive and its RECORD from wheel.

The build runs in a scratch copy (pyproject.toml, the package's .py files, the library as
sparsecoll/lib/) under the output directory, so bindings/python gets no build/ or .egg-info, and
the finished wheel is moved into place in one step. The tag is py3-none-<platform>: ctypes loads
the library, so no CPython ABI is involved, but the library is machine code of this platform;
hence a distribution with "extension modules" (Root-Is-Purelib false, files in platlib) and a tag
of our own. The archive is reproducible: wheel sorts the entries and takes their times from
SOURCE_DATE_EPOCH, and the copies get fixed modes.
"""

import argparse
import logging
import os
import shutil
import sys
import sysconfig
import tempfile
import warnings

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

import setuptools
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel

# 1980-01-01, the earliest time a zip can hold, unless the caller pins one (reproducible builds).
_EPOCH = "315532800"


def platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


class BinaryDistribution(Distribution):
    """Holds machine code, though no extension module: bdist_wheel then writes
    Root-Is-Purelib: false and installs into platlib."""

    def has_ext_modules(self):
        return True


class bdist_wheel_py3(bdist_wheel):
    """bdist_wheel tags a non-pure wheel with this interpreter's ABI (cp311-cp311); the library
    is loaded by ctypes, so any Python 3 of the platform will do."""

    def get_tag(self):
        return "py3", "none", self.plat_name.replace("-", "_").replace(".", "_")


def copy(source, destination, mode):
    """The contents only (the real file, whatever symlink it was reached by), with a fixed mode:
    wheel archives each file with its mode, which would otherwise follow the checkout's umask."""
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    shutil.copyfile(source, destination)
    os.chmod(destination, mode)


def stage_sources(pyproject, library, scratch):
    """pyproject.toml, the package's .py files (no bytecode) and the library into scratch."""
    package_dir = os.path.join(os.path.dirname(pyproject), "sparsecoll")
    copy(pyproject, os.path.join(scratch, "pyproject.toml"), 0o644)
    for name in sorted(os.listdir(package_dir)):
        if name.endswith(".py"):
            copy(os.path.join(package_dir, name), os.path.join(scratch, "sparsecoll", name), 0o644)
    copy(library, os.path.join(scratch, "sparsecoll", "lib", os.path.basename(library)), 0o755)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyproject", required=True)
    parser.add_argument("--library", required=True, help="libsparsecoll with RUNPATH $ORIGIN")
    parser.add_argument("--version", required=True, help="the library's version (CMake's)")
    parser.add_argument("--platform-tag", default=platform_tag())
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()

    pyproject = os.path.abspath(args.pyproject)
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    if project["version"] != args.version:  # the import check would refuse the wheel anyway
        sys.exit("build_wheel: pyproject.toml says version %s, the library is %s" %
                 (project["version"], args.version))

    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    os.environ.setdefault("SOURCE_DATE_EPOCH", _EPOCH)
    os.umask(0o022)  # the modes of the files setuptools writes (dist-info), archived as they are
    # Under out_dir, so the final rename stays on one file system.
    scratch = tempfile.mkdtemp(prefix=".build_wheel-", dir=out_dir)
    try:
        stage_sources(pyproject, args.library, scratch)
        dist_dir = os.path.join(scratch, "dist")
        os.chdir(scratch)  # setuptools reads ./pyproject.toml and writes build/, *.egg-info here
        # Notices about setuptools' own plans, not about this build: bdist_wheel runs `install`
        # into its staging directory (as pip's builds do), and [tool.setuptools] is still "beta".
        warnings.filterwarnings("ignore", "setup.py install is deprecated")
        warnings.filterwarnings("ignore", ".*`\\[tool.setuptools\\]` in `pyproject.toml`")
        # Under `python3 -B` (CMake's call) build_py and install_lib say they skip byte-compiling,
        # which a wheel must not hold anyway. (distutils logs on the root logger.)
        logging.getLogger().addFilter(lambda r: "byte-compiling is disabled" not in r.getMessage())
        setuptools.setup(
            distclass=BinaryDistribution, cmdclass={"bdist_wheel": bdist_wheel_py3},
            # Not in pyproject.toml: only this build puts the library into the package. Exactly
            # these files, not what a manifest would add (include_package_data=False), so that
            # setuptools does not take sparsecoll/lib for an unlisted package either.
            package_data={"sparsecoll": ["lib/" + os.path.basename(args.library)]},
            include_package_data=False,
            # --no-user-cfg: a ~/.pydistutils.cfg must not change the wheel.
            script_args=["--quiet", "--no-user-cfg", "bdist_wheel", "--dist-dir", dist_dir,
                         "--plat-name", args.platform_tag])
        built = os.listdir(dist_dir)
        expected = "%s-%s-py3-none-%s.whl" % (project["name"], project["version"],
                                                args.platform_tag)
        if built != [expected]:
            sys.exit("build_wheel: expected %s, bdist_wheel wrote %s" % (expected, built))
        path = os.path.join(out_dir, expected)
        os.replace(os.path.join(dist_dir, expected), path)  # never a truncated wheel at `path`
    finally:
        os.chdir(out_dir)
        shutil.rmtree(scratch, ignore_errors=True)
    print("build_wheel: wrote", path)


if __name__ == "__main__":
    main()
