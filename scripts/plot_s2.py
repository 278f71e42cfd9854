#!/usr/bin/python3
"""Plots the S2 Reducer's lambda sweep from sparse_allreduce_perf's JSON (-J with -S).

Left: decode relative error ||out - sum|| / ||sum|| against lambda (one line per size and
density). Right: bytes per rank and call (sent + received) against lambda, with the same size's
dense row and the same size and density's topk, micro and hard_threshold rows as horizontal lines
in the sweep's colour (hard_threshold at the smallest threshold
is the all-gather of every non-zero (index, value) pair in the embedding input mode).
Debian's python3-matplotlib.

Usage:
    build/perf/sparse_allreduce_perf -I embedding ... -S 0.05,0.1,0.25,0.5,1,2,4 -J run.json
    /usr/bin/python3 scripts/plot_s2.py run.json docs/results/s2_lambda.png
"""

import argparse
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BASELINES = {"dense": ("black", "-", "dense all-reduce"),
             "topk": ("tab:red", "--", "topk (gather)"),
             "hard_threshold": ("tab:green", ":", "hard_threshold (gather)"),
             "micro": ("tab:purple", "-.", "micro (gather)")}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json")
    parser.add_argument("png")
    parser.add_argument("--title", default="S2 Reducer: lambda sweep")
    args = parser.parse_args(argv)
    with open(args.json) as f:
        results = json.load(f)["results"]
    sweeps = collections.defaultdict(list)  # (count, density) -> [(lambda, err, bytes)]
    # (count, density) -> name -> bytes; the dense row under (count, None)
    baselines = collections.defaultdict(dict)
    for row in results:
        name = row["algorithm"]
        key = (row["count"], row["target_density"])
        moved = row["bytes_sent"] + row["bytes_received"]
        if name.startswith("s2:"):
            sweeps[key].append((float(name[3:]), row["decode_error"], moved))
        elif name == "dense":  # no density: one line per count
            baselines[(row["count"], None)][name] = moved
        elif name in BASELINES:
            baselines[key][name] = moved
    if not sweeps:
        print("no s2:<lambda> rows in %s (run with -S)" % args.json, file=sys.stderr)
        return 1
    fig, (ax_err, ax_bytes) = plt.subplots(1, 2, figsize=(11, 4.2))
    for (count, density), points in sorted(sweeps.items()):
        points.sort()
        label = "count %d, d %s" % (count, density)
        lambdas = [p[0] for p in points]
        ax_err.plot(lambdas, [p[1] for p in points], "o-", label=label)
        ax_bytes.plot(lambdas, [p[2] for p in points], "o-", label="s2, " + label)
        color = ax_bytes.lines[-1].get_color()
        for name, moved in sorted(baselines[(count, density)].items()):
            _, style, text = BASELINES[name]
            ax_bytes.axhline(moved, color=color, linestyle=style, linewidth=1,
                             label="%s, %s" % (text, label))
    for (count, density), lines in baselines.items():
        if density is None:
            color, style, text = BASELINES["dense"]
            ax_bytes.axhline(lines["dense"], color=color, linestyle=style,
                             label="%s, count %d" % (text, count))
    ax_err.set_xscale("log")
    ax_err.set_xlabel("lambda (sketch width / non-zeros sent per rank)")
    ax_err.set_ylabel("decode relative L2 error")
    ax_err.axvline(0.5, color="grey", linewidth=0.8)
    ax_err.grid(True, which="both", alpha=0.3)
    ax_err.legend(fontsize=8)
    ax_bytes.set_xscale("log")
    ax_bytes.set_yscale("log")
    ax_bytes.set_xlabel("lambda (sketch width / non-zeros sent per rank)")
    ax_bytes.set_ylabel("bytes per rank and call (sent + received)")
    ax_bytes.axvline(0.5, color="grey", linewidth=0.8)
    ax_bytes.grid(True, which="both", alpha=0.3)
    ax_bytes.legend(fontsize=7)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
