"""The table (markdown, stdout) and plot of run_optimizer_study.sh: per optimizer and epoch, the
test accuracy of dense and of the sparse runs (mean over the seeds present), the difference to
dense of that mean and of the worst single run (each against the dense run of its own seed), and
the bytes each rank sent over the run up to that epoch (a run of that length) against dense.

    optimizer_table.py DIR [--epochs 2,4] [--plot FILE.png]

DIR holds opt_<optimizer>_<algorithm>_s<seed>.json (train_fashion_mnist.py --json-out). A sparse
run whose seed has no dense run is left out.
"""

import argparse
import collections
import glob
import json
import os
import re

OPTIMIZERS = ["sgd", "sgd_momentum", "adam", "adamw", "adadelta"]
SPARSE = ["micro", "exdyna"]
NAME = re.compile(r"opt_(?P<optimizer>[a-z_]+?)_(?P<algorithm>dense|micro|exdyna)_s(?P<seed>\d+)"
                  r"\.json$")


def load(directory):
    """{(optimizer, algorithm): {seed: record}}"""
    runs = collections.defaultdict(dict)
    for path in sorted(glob.glob(os.path.join(directory, "opt_*.json"))):
        match = NAME.search(os.path.basename(path))
        if match:
            with open(path, encoding="utf-8") as f:
                runs[(match["optimizer"], match["algorithm"])][int(match["seed"])] = json.load(f)
    return runs


def accuracy(record, epoch):
    epochs = record["epochs"]
    return epochs[epoch - 1]["test_accuracy"] * 100 if len(epochs) >= epoch else None


def bytes_ratio(record, epoch):
    """Dense bytes over the bytes this rank sent in epochs 1..epoch: over the whole of a run of
    that length, warm-up included (a shorter run front-loads more of its bytes in the warm-up)."""
    epochs = record["epochs"][:epoch]
    sent = sum(e["bytes_sent_per_step"] * e["steps"] for e in epochs)
    dense = sum(e["dense_bytes_per_step"] * e["steps"] for e in epochs)
    return dense / sent if sent else float("inf")


def table(runs, epochs):
    print("| optimizer | epoch | seeds | dense | micro | vs dense (mean) | worst run | exdyna | "
          "vs dense (mean) | worst run | fewer bytes than dense: micro, exdyna |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    verdicts = []
    for optimizer in OPTIMIZERS:
        dense = runs.get((optimizer, "dense"), {})
        for epoch in epochs:
            seeds = sorted(s for s in dense if accuracy(dense[s], epoch) is not None)
            if not seeds:
                continue
            dense_mean = sum(accuracy(dense[s], epoch) for s in seeds) / len(seeds)
            cells = [optimizer, str(epoch), str(len(seeds)), "%.2f" % dense_mean]
            ratios = []
            for algorithm in SPARSE:
                sparse = runs.get((optimizer, algorithm), {})
                paired = [s for s in seeds
                          if s in sparse and accuracy(sparse[s], epoch) is not None]
                if not paired:
                    cells += ["-", "-", "-"]
                    continue
                diffs = [accuracy(sparse[s], epoch) - accuracy(dense[s], epoch) for s in paired]
                mean = sum(accuracy(sparse[s], epoch) for s in paired) / len(paired)
                cells += ["%.2f" % mean, "%+.2f" % (sum(diffs) / len(diffs)), "%+.2f" % min(diffs)]
                ratios.append(min(bytes_ratio(sparse[s], epoch) for s in paired))
                verdicts.append((optimizer, epoch, algorithm, sum(diffs) / len(diffs), min(diffs),
                                 ratios[-1]))
            cells.append(", ".join("%.1fx" % r for r in ratios) or "-")
            print("| " + " | ".join(cells) + " |")
    print()
    met = [v for v in verdicts if v[3] >= -1.0 and v[4] >= -2.0 and v[5] >= 20.0]
    print("Target (mean within 1.0 point of dense, no run more than 2 below, at least 20x fewer "
          "bytes): %d of %d (optimizer, epoch, algorithm) cells met" % (len(met), len(verdicts)))
    for v in verdicts:
        if v not in met:
            print("- not met: %s epoch %d %s: mean %+.2f, worst %+.2f, %.1fx fewer bytes" % v)


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(OPTIMIZERS), figsize=(4 * len(OPTIMIZERS), 3.6), sharey=True)
    for axis, optimizer in zip(axes, OPTIMIZERS):
        for algorithm, style in (("dense", "k-"), ("micro", "C0-"), ("exdyna", "C1-")):
            for seed, record in sorted(runs.get((optimizer, algorithm), {}).items()):
                values = [e["test_accuracy"] * 100 for e in record["epochs"]]
                axis.plot(range(1, len(values) + 1), values, style, alpha=0.8, marker="o",
                          markersize=3, label=algorithm if seed == min(
                              runs[(optimizer, algorithm)]) else None)
        axis.set_title(optimizer)
        axis.set_xlabel("epoch")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy (%)")
    axes[0].legend()
    fig.suptitle("Fashion-MNIST CNN, 4 ranks, density 0.01: dense vs sparse per optimizer")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--epochs", default="2,4")
    parser.add_argument("--plot")
    args = parser.parse_args()
    runs = load(args.directory)
    table(runs, [int(e) for e in args.epochs.split(",")])
    if args.plot:
        plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
