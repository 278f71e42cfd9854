"""Per-epoch test accuracy of train_fashion_mnist.py runs against the dense run of the same seed,
and the mean difference over seeds (markdown on stdout).

    seed_table.py DIR [--epochs 4,5,6,7,8] [--runs momentum_micro_0.01,momentum_exdyna_0.01,...]

DIR holds the runs' JSON (--json-out) under the names of run_long_convergence.sh: seed 1
extra_long_<run>.json, seed s > 1 extra_long_s<s>_<run>.json, dense extra_long[_s<s>]_dense.json.
A run missing for a seed is left out of that seed's rows and of the mean.
"""

import argparse
import json
import os


def load(directory, seed, run):
    prefix = "extra_long_" if seed == 1 else "extra_long_s%d_" % seed
    path = os.path.join(directory, prefix + run + ".json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def accuracies(record):
    return [e["test_accuracy"] * 100 for e in record["epochs"]]


def mean_bytes(record):
    return sum(e["bytes_sent_per_step"] for e in record["epochs"]) / len(record["epochs"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("directory")
    p.add_argument("--epochs", default="4,5,6,7,8")
    p.add_argument("--runs", default="momentum_micro_0.01,momentum_exdyna_0.01,"
                                     "momentum_topk_0.01,momentum_sidco_exp_0.01")
    p.add_argument("--seeds", default="1,2,3")
    args = p.parse_args()
    epochs = [int(e) for e in args.epochs.split(",")]
    runs = args.runs.split(",")
    print("| seed, run | " + " | ".join(str(e) for e in epochs) +
          " | train loss at %d | bytes/step/rank | fewer bytes than dense |" % epochs[-1])
    print("| --- " * (len(epochs) + 4) + "|")
    differences = {run: [] for run in runs}
    for seed in (int(s) for s in args.seeds.split(",")):
        dense = load(args.directory, seed, "dense")
        if dense is None:
            continue
        base = accuracies(dense)
        print("| %d, dense | %s | %.4f | %d | 1.0x |" % (
            seed, " | ".join("%.2f" % base[e - 1] for e in epochs),
            dense["epochs"][epochs[-1] - 1]["train_loss"], mean_bytes(dense)))
        for run in runs:
            record = load(args.directory, seed, run)
            if record is None or len(record["epochs"]) < epochs[-1]:
                continue
            acc = accuracies(record)
            print("| %d, %s | %s | %.4f | %d | %.1fx |" % (
                seed, run, " | ".join("%.2f (%+.2f)" % (acc[e - 1], acc[e - 1] - base[e - 1])
                                      for e in epochs),
                record["epochs"][epochs[-1] - 1]["train_loss"], mean_bytes(record),
                mean_bytes(dense) / mean_bytes(record)))
            differences[run].append([acc[e - 1] - base[e - 1] for e in epochs])
    print()
    print("| run | seeds | " + " | ".join("mean vs dense, epoch %d" % e for e in epochs) + " |")
    print("| --- " * (len(epochs) + 2) + "|")
    for run, rows in differences.items():
        if rows:
            means = [sum(r[i] for r in rows) / len(rows) for i in range(len(epochs))]
            print("| %s | %d | %s |" % (run, len(rows), " | ".join("%+.2f" % m for m in means)))


if __name__ == "__main__":
    main()
