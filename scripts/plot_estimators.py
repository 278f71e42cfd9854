#!/usr/bin/python3
"""Plots k^/k over calls per estimator from estimator_perf's per-call CSV (-S).

One panel per (input, density) for the inputs and densities given; one line per estimator
(log scale, the target 1 and the paper's [0.8, 1.2] band shaded). Debian's python3-matplotlib.

An input named in --inputs that the CSV lacks is replaced by the first input of the CSV of the
same model family (fmnist_cnn, lstm_lm), so the defaults also fit the error-feedback runs, whose
inputs are consecutive-step sequences (fmnist_cnn_it01391-01400_w0, ...).

--table JSON (instead of CSV and PNG) prints, from estimator_perf's quality JSON (-J), the
Markdown table of docs/results/estimators.md: per estimator and density, the range (min-max over
the traces of a family) of the mean k^/k after 10 calls, the synthetic inputs' means, and the
target's PASS count per estimator; --table-cost JSON prints the cost table from the cost JSON.

Usage:
    build/perf/estimator_perf -m quality -S /tmp/series.csv -J /tmp/quality.json
    /usr/bin/python3 scripts/plot_estimators.py /tmp/series.csv docs/results/estimators_quality.png
    /usr/bin/python3 scripts/plot_estimators.py --table /tmp/quality.json
"""

import argparse
import collections
import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_INPUTS = ["fmnist_cnn_it01400_w0", "lstm_lm_it00300_w0", "synthetic_gmixture"]
DEFAULT_ESTIMATORS = ["sidco_exp", "sidco_gp", "sidco_gamma_gp", "sidco_exp/fb0", "sidco_exp/M1",
                      "dgc", "redsync", "gaussiank"]


SYNTHETIC = ["laplace", "gamma", "gpareto", "gmixture"]


def family_of(name):
    """The model family of an input label: the trace name up to "_it", or "synthetic"."""
    if name.startswith("synthetic_"):
        return "synthetic"
    return name[:name.rfind("_it")] if "_it" in name else name


def quality_table(path):
    rows = json.load(open(path))["results"]
    cells = collections.defaultdict(list)
    estimators, densities = [], []
    passes = collections.Counter()
    totals = collections.Counter()
    families = []
    for r in rows:
        if r["estimator"] not in estimators:
            estimators.append(r["estimator"])
        if r["density"] not in densities:
            densities.append(r["density"])
        family = r.get("family") or family_of(r["input"])
        if family != "synthetic" and family not in families:
            families.append(family)
        column = family if family != "synthetic" else r["input"].replace("synthetic_", "")
        cells[(r["estimator"], r["density"], column)].append(r["mean_after_10"])
        if r["target"] in ("PASS", "FAIL"):
            totals[r["estimator"]] += 1
            passes[r["estimator"]] += r["target"] == "PASS"
    columns = families + SYNTHETIC
    print("| estimator | density | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for e in estimators:
        for d in densities:
            out = []
            for c in columns:
                v = cells.get((e, d, c), [])
                if not v:
                    out.append("-")
                elif c in families:
                    out.append(f"{min(v):.2f}-{max(v):.2f}")
                else:
                    out.append(f"{v[0]:.2f}")
            print(f"| {e} | {d:g} | " + " | ".join(out) + " |")
    print()
    print("| estimator | target rows PASS |")
    print("|---|---:|")
    for e in estimators:
        if totals[e]:
            print(f"| {e} | {passes[e]} of {totals[e]} |")
    print(f"| all sidco_* | {sum(passes.values())} of {sum(totals.values())} |")
    return 0


def cost_table(path):
    rows = json.load(open(path))["results"]
    order, times = [], {}
    for r in rows:
        label = r["estimator"] + (f" M{r['stages']}" if r["estimator"].startswith("sidco") else "")
        if label not in order:
            order.append(label)
        times[(r["count"], r["density"], label)] = r
    print("| count | density | " + " | ".join(order) + " |")
    print("|---:|---:|" + "---:|" * len(order))
    for count, density in dict.fromkeys((r["count"], r["density"]) for r in rows):
        out = [f"{times[(count, density, label)]['time_us'] / 1000:.1f} ms" for label in order]
        print(f"| {count / 1e6:.2g}M | {density:g} | " + " | ".join(out) + " |")
    print()
    print("| count | density | estimator | x topk | x nth_element | x partial_sort |")
    print("|---:|---:|---|---:|---:|---:|")
    for r in rows:
        if r["count"] >= 26000000 and r["estimator"] not in ("topk", "nth_element",
                                                              "partial_sort"):
            label = r["estimator"] + (f" M{r['stages']}" if r["estimator"].startswith("sidco")
                                      else "")
            print(f"| {r['count'] / 1e6:.2g}M | {r['density']:g} | {label} | "
                  f"{r['speedup']:.2f} | {r['speedup_vs_nth_element']:.2f} | "
                  f"{r['speedup_vs_partial_sort']:.2f} |")
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--table":
        return quality_table(argv[1])
    if len(argv) == 2 and argv[0] == "--table-cost":
        return cost_table(argv[1])
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
    present = list(dict.fromkeys(name for name, _, _ in series))
    inputs = [name if name in present else
              next((p for p in present if family_of(p) == family_of(name)), name)
              for name in inputs]
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
