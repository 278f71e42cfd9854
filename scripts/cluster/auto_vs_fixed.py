#!/usr/bin/env python3
"""algorithm "auto" against the fixed choices, per cell of a sparse_allreduce_perf run.

    scripts/cluster/auto_vs_fixed.py DIR [--markdown OUT.md] [--json OUT.json]

Reads DIR/perf_*.json (sparse_allreduce_perf -J with -a ...,auto: the emulated-cluster bench
writes them). Per cell (ranks, link, size, density): the fastest fixed algorithm (median time, the
peers such as mpi_allreduce left out), auto's time and the preset it chose, auto / fastest (the
target: at most 1.10) and the chosen preset's own fixed row / fastest (the target: at most 1.25).
"""
import argparse
import glob
import json
import os
import re
import sys

PEERS = {"mpi_allreduce"}


def cells(path):
    with open(path, encoding="utf-8") as f:
        run = json.load(f)
    ranks = re.match(r"\s*(\d+)", str(run["options"].get("ranks", ""))).group(1)
    link = re.search(r"perf_n\d+_([^_]+)_", os.path.basename(path))
    blocks = {}
    for row in run["results"]:
        blocks.setdefault(row["count"], []).append(row)
    for count, rows in blocks.items():
        # Rows come per density in order; dense's rows carry "-": split at each dense row.
        group = []
        for row in rows + [None]:
            if row is None or (row["algorithm"] == "dense" and group):
                if group:
                    yield int(ranks), link.group(1) if link else "?", count, group
                group = []
            if row is not None:
                group.append(row)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--markdown")
    p.add_argument("--json")
    args = p.parse_args()
    out = []
    for path in sorted(glob.glob(os.path.join(args.dir, "perf_*.json"))):
        for ranks, link, count, rows in cells(path):
            density = next((r["target_density"] for r in rows if r["target_density"] != "-"), "-")
            auto = next((r for r in rows if r["algorithm"].startswith("auto:")), None)
            fixed = [r for r in rows if not r["algorithm"].startswith("auto:")
                     and r["algorithm"] not in PEERS]
            if auto is None or not fixed:
                continue
            best = min(fixed, key=lambda r: r["time_us"])
            chosen = auto["algorithm"].split(":", 1)[1]
            chosen_row = next((r for r in fixed if r["algorithm"] == chosen), None)
            out.append({
                "ranks": ranks, "link": link, "count": count, "density": density,
                "fastest": best["algorithm"], "fastest_us": best["time_us"],
                "auto_chose": chosen, "auto_us": auto["time_us"],
                "auto_vs_fastest": auto["time_us"] / best["time_us"],
                "chosen_fixed_vs_fastest": (chosen_row["time_us"] / best["time_us"]
                                            if chosen_row else None),
            })
    if not out:
        sys.exit("auto_vs_fixed: no cell with an auto row under " + args.dir)
    lines = ["| ranks | link | elements | density | fastest fixed (ms) | auto chose | auto (ms) "
             "| auto / fastest | chosen's fixed row / fastest |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in out:
        chosen_ratio = ("%.2f" % c["chosen_fixed_vs_fastest"]
                        if c["chosen_fixed_vs_fastest"] is not None else "-")
        lines.append("| %d | %s | %d | %s | %s %.2f | %s | %.2f | %.2f | %s |" % (
            c["ranks"], c["link"], c["count"], c["density"], c["fastest"], c["fastest_us"] / 1e3,
            c["auto_chose"], c["auto_us"] / 1e3, c["auto_vs_fastest"], chosen_ratio))
    within = sum(1 for c in out if c["auto_vs_fastest"] <= 1.10)
    chosen_ok = sum(1 for c in out if c["chosen_fixed_vs_fastest"] is not None
                    and c["chosen_fixed_vs_fastest"] <= 1.25)
    lines.append("")
    lines.append("auto within 10 %% of the fastest fixed choice: %d of %d cells; the chosen "
                 "preset's fixed row within 1.25x of the fastest: %d of %d" %
                 (within, len(out), chosen_ok, len(out)))
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
