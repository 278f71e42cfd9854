#!/usr/bin/env python3
"""Table and plots of scripts/cluster/train_bench.sh's runs (DIR/run_{rate}_{mode}_s{seed}.json):

  train_summary.py DIR

Per link rate and mode, over the seeds: the median step time (and its 10th-90th percentiles),
its compute part (the median of the runs' calibrations on that link) and the exposed
communication (the rest), the bytes each rank sent per step, the final test
accuracy (with --stop-at-target: the accuracy the run stopped at, no comparison with dense), the
training time and steps to the target accuracy; and the ratios against dense DDP on the same
links (step time, time to target, bytes). Writes DIR/summary.json and DIR/summary.md, and
DIR/accuracy_vs_time_{rate}.png and DIR/step_time.png (matplotlib)."""
import glob
import json
import os
import statistics
import sys


def load(directory):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "run_*.json"))):
        name = os.path.basename(path)[len("run_"):-len(".json")]
        rate = name.split("_")[0]
        with open(path, encoding="utf-8") as f:
            row = json.load(f)
        row["rate"] = rate
        runs.append(row)
    return runs


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def summarise(runs):
    groups = {}
    for row in runs:
        groups.setdefault((row["rate"], row["mode"]), []).append(row)
    table = []
    for (rate, mode), rows in sorted(groups.items()):
        reached = [r["time_to_target_s"] for r in rows]
        table.append({
            "rate": rate, "mode": mode, "algorithm": rows[0]["algorithm"],
            "density": rows[0]["density"], "seeds": len(rows),
            "parameters": rows[0]["parameters"], "world": rows[0]["world"],
            "step_ms_median": mean([r["step_ms_median"] for r in rows]),
            "step_ms_p10": mean([r["step_ms_p10"] for r in rows]),
            "step_ms_p90": mean([r["step_ms_p90"] for r in rows]),
            "compute_ms": mean([r["compute_ms"] for r in rows]),
            "exposed_comm_ms": mean([r["exposed_comm_ms"] for r in rows]),
            "bytes_sent_per_step": mean([r["bytes_sent_per_step"] for r in rows]),
            "final_accuracy": mean([r["final_accuracy"] for r in rows]),
            "time_to_target_s": mean(reached) if all(t is not None for t in reached) else None,
            "reached_target": sum(t is not None for t in reached),
            "steps_to_target": mean([r.get("steps_to_target") for r in rows]),
            "stop_at_target": any(r.get("stop_at_target") for r in rows),
            "target": rows[0]["target"], "train_seconds": mean([r["train_seconds"] for r in rows]),
        })
    # The compute part is the same model's on the same machine in every mode: each run measures
    # it before training (a few steps, noisy on shared cores), and the median over the runs on a
    # link is what splits every run's step there.
    for rate in {r["rate"] for r in table}:
        compute = statistics.median(r["compute_ms"] for r in runs if r["rate"] == rate)
        for row in table:
            if row["rate"] == rate:
                row["compute_ms"] = compute
                row["exposed_comm_ms"] = max(0.0, row["step_ms_median"] - compute)
    for row in table:
        dense = next((d for d in table if d["rate"] == row["rate"] and d["mode"] == "dense"), None)
        if dense is None:
            continue
        row["step_vs_dense"] = row["step_ms_median"] / dense["step_ms_median"]
        row["bytes_fewer_than_dense"] = dense["bytes_sent_per_step"] / row["bytes_sent_per_step"]
        if row["time_to_target_s"] and dense["time_to_target_s"]:
            row["target_speedup_vs_dense"] = dense["time_to_target_s"] / row["time_to_target_s"]
        # Runs that stop at the target all end at about the target: no comparison to make.
        if (row["final_accuracy"] is not None and dense["final_accuracy"] is not None and
                not row["stop_at_target"]):
            row["accuracy_vs_dense_points"] = 100 * (row["final_accuracy"] -
                                                     dense["final_accuracy"])
    return table


def markdown(table):
    stopped = any(r["stop_at_target"] for r in table)
    lines = ["| link | mode | step ms (p10-p90) | compute / exposed comm ms | step vs dense | "
             "bytes/rank/step (x fewer) | %s | time to target (speed-up) |" %
             ("accuracy at the stop" if stopped else "final accuracy (vs dense)"),
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in table:
        mode = r["mode"] if r["mode"] == "dense" else "%s %s d=%g" % (r["mode"], r["algorithm"],
                                                                      r["density"])
        target = ("%.1f s" % r["time_to_target_s"]) if r["time_to_target_s"] else \
            "not reached (%d of %d seeds)" % (r["reached_target"], r["seeds"])
        if r["time_to_target_s"] and r["stop_at_target"]:
            target += ", step %.0f" % r["steps_to_target"]
        if r.get("target_speedup_vs_dense"):
            target += " (%.2fx)" % r["target_speedup_vs_dense"]
        accuracy = "%.2f %%" % (100 * r["final_accuracy"])
        if r["mode"] != "dense" and r.get("accuracy_vs_dense_points") is not None:
            accuracy += " (%+.2f pt)" % r["accuracy_vs_dense_points"]
        lines.append("| %s | %s | %.1f (%.0f-%.0f) | %.1f / %.1f | %s | %.0f (%s) | %s | %s |" % (
            r["rate"], mode, r["step_ms_median"], r["step_ms_p10"], r["step_ms_p90"],
            r["compute_ms"], r["exposed_comm_ms"],
            "%.2f" % r["step_vs_dense"] if "step_vs_dense" in r else "-",
            r["bytes_sent_per_step"],
            "%.1fx" % r["bytes_fewer_than_dense"] if "bytes_fewer_than_dense" in r else "-",
            accuracy, target))
    return "\n".join(lines) + "\n"


def plots(directory, runs, table):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("train_summary: no matplotlib, no plots", file=sys.stderr)
        return
    for rate in sorted({r["rate"] for r in runs}):
        fig, ax = plt.subplots(figsize=(6, 4))
        for row in runs:
            if row["rate"] != rate or not row["curve"]:
                continue
            label = row["mode"] if row["mode"] == "dense" else "%s (%s %g)" % (
                row["mode"], row["algorithm"], row["density"])
            ax.plot([c["seconds"] for c in row["curve"]], [c["accuracy"] for c in row["curve"]],
                    label="%s, seed %d" % (label, row["seed"]))
        ax.axhline(runs[0]["target"], color="grey", linestyle=":", label="target")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("test accuracy")
        ax.set_title("%s links, %d ranks" % (rate, runs[0]["world"]))
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(directory, "accuracy_vs_time_%s.png" % rate), dpi=120)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    modes = sorted({r["mode"] for r in table})
    rates = sorted({r["rate"] for r in table})
    width = 0.8 / max(1, len(modes))
    for m, mode in enumerate(modes):
        values = [next((r["step_ms_median"] for r in table if r["rate"] == rate and
                        r["mode"] == mode), 0) for rate in rates]
        ax.bar([i + m * width for i in range(len(rates))], values, width, label=mode)
    ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(rates))])
    ax.set_xticklabels(rates)
    ax.set_ylabel("median step time (ms)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "step_time.png"), dpi=120)
    plt.close(fig)


def main():
    directory = sys.argv[1]
    runs = load(directory)
    if not runs:
        print("train_summary: no run_*.json in %s" % directory, file=sys.stderr)
        return 1
    table = summarise(runs)
    with open(os.path.join(directory, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1)
    text = markdown(table)
    with open(os.path.join(directory, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    plots(directory, runs, table)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
