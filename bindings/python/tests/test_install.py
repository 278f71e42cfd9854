"""`pip install bindings/python` (the developers' install; users install the wheel) into a fresh
target directory: the installed package must import from there (not from the source tree), find
the library through SPARSECOLL_BUILD_DIR, and the install must not write into bindings/python
(setup.py sends setuptools' build/ and egg-info to a scratch directory)."""

import os
import subprocess
import sys

PACKAGE_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def test_pip_install_into_a_target_and_import(tmp_path):
    import sparsecoll
    before = sorted(os.listdir(PACKAGE_DIR))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-index", "--no-deps", "--target", str(target), PACKAGE_DIR],
                   check=True, cwd=tmp_path)
    assert sorted(os.listdir(PACKAGE_DIR)) == before  # no build/, no sparsecoll.egg-info
    assert not (target / "sparsecoll" / "lib").exists()  # the library is the wheel's business
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARSECOLL_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    # The library is found in the build tree: the one the test runs against.
    env["SPARSECOLL_BUILD_DIR"] = os.path.dirname(sparsecoll.library_path)
    code = ("import sparsecoll, sparsecoll.torch; print(sparsecoll.__file__); "
            "print(sparsecoll.library_path); print(sparsecoll.__version__)")
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    package_file, library, version = run.stdout.split()
    assert package_file.startswith(str(target))
    assert os.path.samefile(library, sparsecoll.library_path)
    assert version == sparsecoll.__version__
