#!/usr/bin/python3
"""Plots k^/k over calls per estimator from estimator_perf's per-call CSV (-S).

One panel per (input, density) for the inputs and densities given; one line per estimator
(log scale, the target 1 and the paper's [0.8, 1.2] band shaded). Debian's python3-matplotlib.

Usage:
    build/perf/estimator_perf -m quality -S /tmp/series.csv
    /usr/bin/python3 scripts/plot_estimators.py /tmp/series.csv docs/results/estimators_quality.png
"""

import argparse
import collections
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_INPUTS = ["fmnist_cnn_it01400_w0", "lstm_lm_it00300_w0", "synthetic_gmixture"]
DEFAULT_ESTIMATORS = ["sidco_exp", "sidco_gp", "sidco_gamma_gp", "sidco_gp+fb", "dgc", "redsync",
                      "gaussiank"]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--inputs", default=",".join(DEFAULT_INPUTS))
    parser.add_argument("--densities", default="0.01,0.001")
    parser.add_argument("--estimators", default=",".join(DEFAULT_ESTIMATORS))
    parser.add_argument("--title", default="k^/k over calls")
    args = parser.parse_args(argv)
    inputs = args.inputs.split(",")
    densities = [float(d) for d in args.densities.split(",")]
    estimators = args.estimators.split(",")
    series = collections.defaultdict(list)
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            key = (row["input"], float(row["density"]), row["estimator"])
            series[key].append((int(row["call"]), float(row["ratio"])))
    fig, axes = plt.subplots(len(densities), len(inputs), figsize=(5 * len(inputs),
                             3.6 * len(densities)), squeeze=False, sharey=True)
    for row, density in enumerate(densities):
        for col, name in enumerate(inputs):
            ax = axes[row][col]
            ax.axhspan(0.8, 1.2, color="0.9")
            ax.axhline(1.0, color="0.5", linewidth=0.8)
            for estimator in estimators:
                points = sorted(series.get((name, density, estimator), []))
                if points:
                    # k^ = 0 would vanish on a log scale: drawn at 1e-3.
                    ax.plot([c for c, _ in points], [max(r, 1e-3) for _, r in points],
                            label=estimator, linewidth=1.1)
            ax.set_yscale("log")
            ax.set_title(f"{name}, density {density:g}", fontsize=9)
            ax.set_xlabel("call")
            if col == 0:
                ax.set_ylabel("k^/k")
    axes[0][0].legend(fontsize=7, loc="upper right")
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
