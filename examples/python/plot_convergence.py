"""Table (markdown, on stdout) and accuracy-per-epoch plot of train_fashion_mnist.py runs.

    plot_convergence.py RUN.json... --plot OUT.png

The first run named dense* is the baseline: each row shows its final test accuracy against it,
the mean density actually aggregated, and bytes sent per rank and step against the dense run's
(measured) and against a ring all-reduce of the same gradient (2 (n-1)/n x 4 bytes x elements).
"""

import argparse
import json
import math
import os


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+")
    p.add_argument("--plot", required=True)
    args = p.parse_args()
    runs = []
    for path in args.runs:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        run["name"] = os.path.splitext(os.path.basename(path))[0]
        runs.append(run)
    runs.sort(key=lambda r: (not r["name"].startswith("dense"), r["name"]))
    base = runs[0]
    base_acc = base["epochs"][-1]["test_accuracy"]
    base_bytes = sum(e["bytes_sent_per_step"] for e in base["epochs"]) / len(base["epochs"])
    print("| run | epochs | final test accuracy | vs dense (points) | final train loss | "
          "density sent | bytes/step/rank | fewer than dense run | fewer than ring all-reduce |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in runs:
        epochs = run["epochs"]
        acc = epochs[-1]["test_accuracy"]
        sent = sum(e["bytes_sent_per_step"] for e in epochs) / len(epochs)
        density = sum(e["density"] for e in epochs) / len(epochs)
        loss = epochs[-1]["train_loss"]
        loss_text = "%.4f" % loss if math.isfinite(loss) else "NaN (diverged)"
        print("| %s | %d | %.2f %% | %+.2f | %s | %.4f | %.0f | %.1fx | %.1fx |" %
              (run["name"], len(epochs), 100 * acc, 100 * (acc - base_acc), loss_text, density,
               sent, base_bytes / sent, epochs[0]["dense_bytes_per_step"] / sent))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lowest = 100.0
    for run in runs:
        xs = [e["epoch"] for e in run["epochs"]]
        ys = [100 * e["test_accuracy"] for e in run["epochs"]]
        if not math.isfinite(run["epochs"][-1]["train_loss"]):
            ax.plot([], [], " ", label="%s: diverged (NaN)" % run["name"])
            continue
        lowest = min(lowest, min(ys))
        ax.plot(xs, ys, marker="o", label=run["name"], linewidth=2.5 if run is base else 1.2)
    ax.set_ylim(max(0.0, lowest - 2), None)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Fashion-MNIST CNN, %d ranks, sparsecoll DDP hook, seed 1" % base["ranks"])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
