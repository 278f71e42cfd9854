"""Writes the binary wheel of sparsecoll: the package plus libsparsecoll, so that
`pip install sparsecoll-*.whl` needs neither the checkout nor a network (PEP 427).

Run by CMake (cmake/SparsecollPythonWheel.cmake), which first installs the library into a staging
prefix so that its RUNPATH is $ORIGIN. Written with zipfile because the `wheel` package cannot
be assumed (a bare venv has none, and there is no index to fetch it from).

The tag is py3-none-<platform>: ctypes loads the library, so no CPython ABI is involved, but the
library is machine code of this platform. Root-Is-Purelib is false for the same reason. The
archive is reproducible (sorted entries, fixed timestamps), so an unchanged input gives the same
bytes.
"""

import argparse
import base64
import hashlib
import os
import sys
import sysconfig
import time
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

# 1980-01-01, the earliest time a zip can hold, unless the caller pins one (reproducible builds).
_EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))


def platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"],
             "Version: " + project["version"], "Summary: " + project["description"],
             "Requires-Python: " + project["requires-python"]]
    lines += ["Requires-Dist: " + requirement for requirement in project.get("dependencies", [])]
    for extra, requirements in sorted(project.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s ; extra == "%s"' % (r, extra) for r in requirements]
    return "\n".join(lines) + "\n"


def package_files(package_dir):
    """(archive name, path) of every source file of the package (no bytecode)."""
    files = []
    for directory, subdirectories, names in os.walk(package_dir):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, os.path.dirname(package_dir))
                files.append((relative.replace(os.sep, "/"), path))
    return files


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def write_wheel(path, dist_info, entries):
    """entries: (archive name, bytes, executable); RECORD is appended last, as PEP 427 wants."""
    record_name = dist_info + "/RECORD"
    lines = [record_line(name, data) for name, data, _ in entries] + [record_name + ",,"]
    entries = entries + [(record_name, ("\n".join(lines) + "\n").encode(), False)]
    timestamp = time.gmtime(max(_EPOCH, 315532800))[:6]
    partial = path + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, executable in entries:
            info = zipfile.ZipInfo(name, timestamp)
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(partial, path)  # never leave a truncated wheel under the final name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyproject", required=True)
    parser.add_argument("--library", required=True, help="libsparsecoll with RUNPATH $ORIGIN")
    parser.add_argument("--version", required=True, help="the library's version (CMake's)")
    parser.add_argument("--platform-tag", default=platform_tag())
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args()

    with open(args.pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    if project["version"] != args.version:  # the import check would refuse the wheel anyway
        sys.exit("build_wheel: pyproject.toml says version %s, the library is %s" %
                 (project["version"], args.version))
    package_dir = os.path.join(os.path.dirname(os.path.abspath(args.pyproject)), "sparsecoll")
    name, version = project["name"], project["version"]
    dist_info = "%s-%s.dist-info" % (name, version)

    entries = []
    for archive_name, source in package_files(package_dir):
        with open(source, "rb") as f:
            entries.append((archive_name, f.read(), False))
    with open(args.library, "rb") as f:  # the real file, whatever symlink it was reached by
        entries.append(("sparsecoll/lib/" + os.path.basename(args.library), f.read(), True))
    wheel = ("Wheel-Version: 1.0\nGenerator: sparsecoll build_wheel.py\nRoot-Is-Purelib: false\n"
             "Tag: py3-none-%s\n" % args.platform_tag)
    entries += [(dist_info + "/METADATA", metadata(project).encode(), False),
                (dist_info + "/WHEEL", wheel.encode(), False),
                (dist_info + "/top_level.txt", b"sparsecoll\n", False)]

    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "%s-%s-py3-none-%s.whl" % (name, version, args.platform_tag))
    write_wheel(path, dist_info, entries)
    print("build_wheel: wrote", path)


if __name__ == "__main__":
    main()
