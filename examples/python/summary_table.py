"""Plain-text table of train_fashion_mnist.py runs (their --json-out files) against the dense run.

    summary_table.py dense.json micro.json ...

The first run whose algorithm is dense is the baseline. Per run, after its last epoch: steps
trained, test accuracy and its difference to dense in points, bytes this rank sent per step (mean
over the run; what the library's statistics report, headers and indices included), how many
times fewer than the dense run, and the fraction of the gradient actually aggregated. Exits 1
when there is no dense run.
"""

import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        run = json.load(f)
    epochs = run["epochs"]
    # Runs written before the script recorded its steps have none: "-" in the table.
    steps = sum(e["steps"] for e in epochs) if all("steps" in e for e in epochs) else None
    weights = [e.get("steps", 1) for e in epochs]  # per-step means, weighted by the epochs' steps
    total = max(1, sum(weights))
    name = run["algorithm"]
    if run["algorithm"] != "dense":
        name += " %g" % run["settings"]["density"]
    return {"name": name, "dense": run["algorithm"] == "dense", "steps": steps,
            "accuracy": epochs[-1]["test_accuracy"],
            "bytes": sum(w * e["bytes_sent_per_step"] for w, e in zip(weights, epochs)) / total,
            "density": sum(w * e["density"] for w, e in zip(weights, epochs)) / total}


def main(paths):
    runs = [load(path) for path in paths]
    base = next((run for run in runs if run["dense"]), None)
    if base is None:
        print("summary_table.py: no dense run among %s" % " ".join(paths), file=sys.stderr)
        return 1
    print("%-12s %6s  %13s  %9s  %20s  %16s  %8s" % ("algorithm", "steps", "test accuracy",
          "vs dense", "bytes sent/rank/step", "fewer than dense", "density"))
    for run in runs:
        print("%-12s %6s  %12.2f%%  %+6.2f pt  %20.0f  %15.1fx  %8.4f" %
              (run["name"], "-" if run["steps"] is None else run["steps"], 100 * run["accuracy"],
               100 * (run["accuracy"] - base["accuracy"]), run["bytes"],
               base["bytes"] / max(1.0, run["bytes"]), run["density"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
