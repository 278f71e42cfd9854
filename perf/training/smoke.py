#!/usr/bin/env python3
"""The training benchmarks at smoke size, so that they cannot rot (CTest training_bench_smoke): two
local processes per run over UCX on loopback, no rate limit. train_bench.py in each mode for 6
steps, then train_summary.py over the three runs (its table must have a row per mode, the sparse
rows sending fewer bytes than dense); a sparse run with --stop-at-target and a target every
evaluation reaches (it must end at the first evaluation); hook_overlap.py for one round of 2 steps (the two hooks must
end with bitwise equal parameters). Exit 77 (skipped) without UCX or the Fashion-MNIST data."""
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/datasets/fashion-mnist"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script, arguments, env):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, script), "--rank", str(r),
                               "--world", "2", "--master", "127.0.0.1", "--port", str(port)] +
                              arguments, env=env)
             for r in range(2)]
    codes = [p.wait(timeout=600) for p in procs]
    if any(codes):
        sys.exit("%s %s failed: exit codes %s" % (script, " ".join(arguments), codes))


def main():
    import sparsecoll
    if "ucx" not in sparsecoll.built_transports():
        print("training_bench_smoke: this build has no UCX transport (skipped)")
        return 77
    if not os.path.isdir(DATA):
        print("training_bench_smoke: no %s (Debian dataset-fashion-mnist; skipped)" % DATA)
        return 77
    env = dict(os.environ, SCCL_TRANSPORT="ucx", UCX_TLS="self,tcp",
               UCX_WARN_UNUSED_ENV_VARS="n", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as out:
        for mode in ("dense", "sparse", "sparse_async"):
            launch("train_bench.py", ["--mode", mode, "--max-steps", "6", "--eval-every", "3",
                                      "--calibration-steps", "2", "--json",
                                      os.path.join(out, "run_off_%s_s0.json" % mode)], env)
        subprocess.run([sys.executable, os.path.join(HERE, "train_summary.py"), out], check=True,
                       env=env)
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            table = json.load(f)
        modes = sorted(row["mode"] for row in table)
        if modes != ["dense", "sparse", "sparse_async"]:
            sys.exit("summary rows %s" % modes)
        if not all(row["bytes_fewer_than_dense"] > 1 for row in table if row["mode"] != "dense"):
            sys.exit("a sparse run sent no fewer bytes than dense: %s" % table)
        stop = os.path.join(out, "stop_at_target.json")
        launch("train_bench.py", ["--mode", "sparse", "--max-steps", "6", "--eval-every", "3",
                                  "--calibration-steps", "2", "--target", "0", "--stop-at-target",
                                  "--json", stop], env)
        with open(stop, encoding="utf-8") as f:
            run = json.load(f)
        if run["steps"] != 3 or run["steps_to_target"] != 3:
            sys.exit("--stop-at-target ran %d steps, target at step %s (3 and 3 expected)" %
                     (run["steps"], run["steps_to_target"]))
        launch("hook_overlap.py", ["--rounds", "1", "--steps", "2", "--width", "128", "--depth",
                                   "2", "--json", os.path.join(out, "overlap.json")], env)
        with open(os.path.join(out, "overlap.json"), encoding="utf-8") as f:
            if not json.load(f)["bitwise_equal_parameters"]:
                sys.exit("hook_overlap: the two hooks' parameters differ")
    print("training_bench_smoke: passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
