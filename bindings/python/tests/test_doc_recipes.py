"""The install recipes of docs/python.md, run as written: each ```bash block after a
`<!-- recipe: NAME -->` marker (`<!-- recipe: NAME, needs ucx -->` when it launches torchrun
processes, which only a library with UCX can connect). They run in document order, sharing one
scratch directory, as a reader following the page would. The only changes are the two the page
documents: `build/python/sparsecoll-*.whl` becomes SCCL_WHEEL and `/tmp` the scratch directory,
which is also HOME (so `--user` writes there). `python3` is SCCL_PYTHON."""

import os
import re
import signal
import subprocess

import pytest

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                   "python.md")
WHEEL = os.environ.get("SCCL_WHEEL", "")
PYTHON = os.environ.get("SCCL_PYTHON", "/usr/bin/python3")
_RECIPE = re.compile(r"<!-- recipe: ([\w-]+)(, needs ucx)? -->\n```bash\n(.*?)```", re.S)


def recipes():
    with open(DOC, encoding="utf-8") as f:
        return [(m.group(1), bool(m.group(2)), m.group(3)) for m in _RECIPE.finditer(f.read())]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("recipes")


def test_the_page_has_the_recipes_the_issue_asks_for():
    names = [name for name, _, _ in recipes()]
    assert names == ["plain-venv", "user-and-target", "torchrun-venv", "multi-host"], names


@pytest.mark.skipif(not os.path.isfile(WHEEL), reason="SCCL_WHEEL is not a wheel")
@pytest.mark.parametrize("name,needs_ucx,script", recipes(), ids=[r[0] for r in recipes()])
def test_recipe_runs_as_written(name, needs_ucx, script, scratch):
    if needs_ucx and os.environ.get("SCCL_HAS_UCX", "").upper() not in ("ON", "1", "TRUE"):
        pytest.skip("the library is built without UCX")
    script = re.sub(r"/tmp(?=/|\s)", str(scratch), script)  # first: WHEEL may lie in /tmp
    script = script.replace("build/python/sparsecoll-*.whl", WHEEL)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPARSECOLL_", "PYTHON", "SCCL_"))}
    env.update(HOME=str(scratch), PATH=os.path.dirname(PYTHON) + os.pathsep + env["PATH"])
    cwd = scratch / ("cwd-" + name)
    cwd.mkdir()
    process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # torchrun agents and workers with it
        output, _ = process.communicate()
        pytest.fail("recipe %s timed out:\n%s" % (name, output))
    assert process.returncode == 0, "recipe %s:\n%s\n%s" % (name, script, output)
    if "sccl_hello.py" in script:
        assert output.count(" of 2 over ucx: [3.0, 3.0, 3.0, 3.0]") == 2, output
