"""The wheel (build/python/*.whl, SCCL_WHEEL) installs and imports as if the checkout were gone: a
copy of it is installed into a bare venv, a --user site and a --target folder, each used from a
scratch directory with SPARSECOLL_* and PYTHONPATH unset (only --target needs its folder on
PYTHONPATH). The library loaded must be the one inside the install, with RUNPATH $ORIGIN, and no
installed file may name the checkout. Writing the wheel again must leave bindings/python as it
was and give the same bytes."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(TESTS_DIR)
SOURCE_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
WHEEL = os.environ.get("SCCL_WHEEL", "")
CHECK = os.path.join(TESTS_DIR, "wheel_check.py")

pytestmark = pytest.mark.skipif(not os.path.isfile(WHEEL), reason="SCCL_WHEEL is not a wheel")


def clean_env(tmp_path, **extra):
    """No trace of the checkout or of the test's own environment; a private HOME."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPARSECOLL_", "PYTHON", "PIP_")) and k != "LD_LIBRARY_PATH"}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", **extra)
    return env


def copied_wheel(tmp_path):
    """Installing from a copy keeps the checkout's path out of pip's records (direct_url.json)."""
    return shutil.copy(WHEEL, tmp_path / os.path.basename(WHEEL))


def run(command, tmp_path, env):
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    done = subprocess.run([str(c) for c in command], env=env, cwd=cwd, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def check_install(python, install_root, tmp_path, env):
    package_file, library, version = run([python, "-B", CHECK], tmp_path, env).split()
    root = os.path.realpath(install_root)
    assert os.path.realpath(package_file).startswith(root + os.sep)
    assert os.path.realpath(library).startswith(root + os.sep)
    assert library.endswith(os.path.join("sparsecoll", "lib", "libsparsecoll.so.0"))
    assert version == os.path.basename(WHEEL).split("-")[1]
    if shutil.which("readelf"):
        dynamic = run(["readelf", "-d", library], tmp_path, env)
        assert "RUNPATH" in dynamic and "[$ORIGIN]" in dynamic, dynamic
    for directory, _, names in os.walk(install_root):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    assert SOURCE_ROOT.encode() not in f.read(), path + " names the checkout"


def test_wheel_installs_into_a_bare_venv(tmp_path):
    env = clean_env(tmp_path)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], tmp_path, env)  # no --system-site-packages
    run([venv / "bin" / "pip", "install", "--quiet", copied_wheel(tmp_path)], tmp_path, env)
    check_install(venv / "bin" / "python", venv, tmp_path, env)


def test_wheel_installs_into_the_user_site(tmp_path):
    env = clean_env(tmp_path, PYTHONUSERBASE=str(tmp_path / "userbase"))
    # Debian marks its interpreter externally managed (PEP 668), --user included.
    run([sys.executable, "-m", "pip", "install", "--quiet", "--user", "--break-system-packages",
         copied_wheel(tmp_path)], tmp_path, env)
    check_install(sys.executable, tmp_path / "userbase", tmp_path, env)


def test_wheel_installs_into_a_target_folder(tmp_path):
    env = clean_env(tmp_path)
    target = tmp_path / "site"
    run([sys.executable, "-m", "pip", "install", "--quiet", "--target", target,
         copied_wheel(tmp_path)], tmp_path, env)
    check_install(sys.executable, target, tmp_path, dict(env, PYTHONPATH=str(target)))


def test_wheel_holds_the_package_the_library_and_pep427_metadata():
    with zipfile.ZipFile(WHEEL) as wheel:
        names = wheel.namelist()
        dist_info = [n for n in names if n.endswith(".dist-info/WHEEL")][0].rsplit("/", 1)[0]
        metadata = wheel.read(dist_info + "/METADATA").decode()
        tags = wheel.read(dist_info + "/WHEEL").decode()
        record = wheel.read(dist_info + "/RECORD").decode().splitlines()
    assert "sparsecoll/__init__.py" in names and "sparsecoll/lib/libsparsecoll.so.0" in names
    assert not [n for n in names if "__pycache__" in n]
    assert "Root-Is-Purelib: false" in tags and "Tag: py3-none-" in tags
    # Either quote is PEP 508; setuptools writes single quotes.
    assert "Requires-Dist: numpy ; extra == 'numpy'" in metadata.replace('"', "'")
    assert not [line for line in metadata.splitlines()
                if line.startswith("Requires-Dist") and "extra ==" not in line]
    assert sorted(line.split(",")[0] for line in record) == sorted(names)


def test_writing_the_wheel_again_leaves_the_source_tree_clean_and_gives_the_same_bytes(tmp_path):
    def source_state():
        if not shutil.which("git") or not os.path.isdir(os.path.join(SOURCE_ROOT, ".git")):
            return None
        return subprocess.run(["git", "-C", SOURCE_ROOT, "status", "--porcelain", "--ignored",
                               "--", "bindings/python"], capture_output=True, text=True,
                              check=True).stdout
    before = source_state()
    library = os.path.join(os.path.dirname(WHEEL), "staging", "sparsecoll", "lib",
                           "libsparsecoll.so.0")
    version = os.path.basename(WHEEL).split("-")[1]
    platform = os.path.basename(WHEEL)[:-len(".whl")].split("-")[-1]
    run([sys.executable, "-B", os.path.join(PACKAGE_DIR, "build_wheel.py"),
         "--pyproject", os.path.join(PACKAGE_DIR, "pyproject.toml"), "--library", library,
         "--version", version, "--platform-tag", platform, "--out-dir", tmp_path / "out"],
        tmp_path, clean_env(tmp_path))
    with open(WHEEL, "rb") as a, open(tmp_path / "out" / os.path.basename(WHEEL), "rb") as b:
        assert a.read() == b.read()
    for leftover in ("build", "sparsecoll.egg-info"):
        assert not os.path.exists(os.path.join(PACKAGE_DIR, leftover))
    assert source_state() == before
