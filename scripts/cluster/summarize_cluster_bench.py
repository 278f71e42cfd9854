#!/usr/bin/env python3
"""Tables, lower bounds and plots of an emulated-cluster run (emulated_cluster_bench.sh).

  summarize_cluster_bench.py DIR [--memory-gbps 30]

Reads DIR/perf_n{N}_{rate}_{size}.json (sparse_allreduce_perf -J), DIR/gloo_*.json (gloo_peer.py)
and DIR/latency_*.json; writes DIR/summary.json, DIR/summary.md and PNG charts (with matplotlib).

Lower bound of one call on these links, per algorithm and rank (what no implementation of the
same algorithm can beat here):  max(t_read, t_wire) + messages x latency, where
  t_read  = N x gradient bytes / memory bandwidth: every rank reads its gradient at least once,
            and the N ranks of this one machine share its memory system (--memory-gbps, measured
            30 GB/s for two threads on the development machine);
  t_wire  = max(bytes sent, bytes received) of the rank / link rate (tbf shapes each node's link
            both ways);
  messages = the sequential message steps of the algorithm's collectives on a ring: all-reduce
            2(N-1), all-gather N-1. dense and MPI_Allreduce: 2(N-1); micro and exdyna: the
            correction's bin all-reduce, header and index all-gathers and the value all-reduce,
            6(N-1); topk and sidco: 4(N-1); s2: the header all-gather and the table and bitmap
            all-reduces, 5(N-1); gloo_sparse: 2(N-1) (its all-gather of sizes and entries);
            latency = the measured half round trip of the links.
"""
import argparse
import math
import glob
import json
import os
import re
import statistics

RATE_BITS = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}


def rate_bytes_per_s(rate):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(gbit|mbit|kbit)", rate)
    return float(m.group(1)) * RATE_BITS[m.group(2)] / 8 if m else None


def message_steps(algorithm, n):
    steps = {"dense": 2, "mpi_allreduce": 2, "gloo_dense": 2, "micro": 6, "exdyna": 6,
             "topk": 4, "sidco": 4, "cltk": 4, "hard_threshold": 4, "s2": 5,
             "gloo_sparse": 2}
    return steps.get(algorithm, 4) * (n - 1)


def load(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "perf_n*_*_*.json"))):
        n, rate, size = re.search(r"perf_n(\d+)_([^_]+)_(\d+)\.json$", path).groups()
        data = json.load(open(path))
        for r in data["results"]:
            rows.append({"nodes": int(n), "rate": rate, "count": r["count"], "source": "sparsecoll",
                         "algorithm": r["algorithm"],
                         "density": None if r["target_density"] == "-" else float(r["target_density"]),
                         "time_us": r["time_us"], "bytes_sent": r["bytes_sent"],
                         "bytes_received": r["bytes_received"], "wrong": r.get("wrong", 0)})
    for path in sorted(glob.glob(os.path.join(directory, "gloo_n*_*_*.json"))):
        n, rate, size = re.search(r"gloo_n(\d+)_([^_]+)_(\d+)\.json$", path).groups()
        for r in json.load(open(path))["rows"]:
            rows.append({"nodes": int(n), "rate": rate, "count": r["count"], "source": "gloo",
                         "algorithm": r["algorithm"],
                         "density": None if r["algorithm"] == "gloo_dense" else r["target_density"],
                         "time_us": r["time_us"], "bytes_sent": r["bytes_sent"],
                         "bytes_received": r["bytes_sent"], "wrong": 0})
    latency = {}
    for path in glob.glob(os.path.join(directory, "latency_n*_*.json")):
        n, rate = re.search(r"latency_n(\d+)_([^_]+)\.json$", path).groups()
        latency[(int(n), rate)] = json.load(open(path))["half_rtt_us_median"]
    return rows, latency


def add_bounds(rows, latency, memory_gbps):
    for r in rows:
        n, rate = r["nodes"], r["rate"]
        link = rate_bytes_per_s(rate)
        t_read = n * r["count"] * 4 / (memory_gbps * 1e9) * 1e6
        t_wire = max(r["bytes_sent"], r["bytes_received"]) / link * 1e6 if link else 0.0
        lat = latency.get((n, rate), 0.0)
        r["lower_bound_us"] = max(t_read, t_wire) + message_steps(r["algorithm"], n) * lat
        r["time_over_bound"] = r["time_us"] / r["lower_bound_us"] if r["lower_bound_us"] else None
        r["latency_us"] = lat


def blocks(rows):
    keys = sorted({(r["nodes"], r["rate"], r["count"]) for r in rows},
                  key=lambda k: (k[0], rate_bytes_per_s(k[1]) or 0, k[2]))
    for key in keys:
        yield key, [r for r in rows if (r["nodes"], r["rate"], r["count"]) == key]


def reference(block, name, density):
    """The row of `name` in this block (the dense ones have no density; take the median)."""
    times = [r["time_us"] for r in block if r["algorithm"] == name
             and (r["density"] is None or density is None or r["density"] == density)]
    return statistics.median(times) if times else None


def markdown(rows):
    lines = []
    for (n, rate, count), block in blocks(rows):
        lat = block[0]["latency_us"]
        lines.append(f"\n### {n} ranks, {rate} links (half round trip {lat} us), "
                     f"{count:,} float32\n")
        lines.append("| algorithm | density | time (ms) | vs MPI_Allreduce | vs gloo sparse | "
                     "sent/rank (MB) | lower bound (ms) | time / bound | #wrong |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        densities = sorted({r["density"] for r in block if r["density"] is not None}, reverse=True)
        for density in [None] + densities:
            mpi = reference(block, "mpi_allreduce", None)
            gloo_sparse = reference(block, "gloo_sparse", density) if density else None
            for r in block:
                if r["density"] != density:
                    continue
                if density is None and any(
                        x["algorithm"] == r["algorithm"] and x["density"] is None
                        for x in block[:block.index(r)]):
                    continue  # dense rows repeat in every density block: the first is shown
                vs_mpi = f"{mpi / r['time_us']:.2f}x" if mpi else "-"
                vs_gloo = f"{gloo_sparse / r['time_us']:.2f}x" if gloo_sparse else "-"
                d = "-" if density is None else f"{density:g}"
                ratio = f"{r['time_over_bound']:.2f}" if r["time_over_bound"] else "-"
                lines.append(f"| {r['algorithm']} | {d} | {r['time_us'] / 1e3:.1f} | {vs_mpi} | "
                             f"{vs_gloo} | {r['bytes_sent'] / 1e6:.3f} | "
                             f"{r['lower_bound_us'] / 1e3:.1f} | {ratio} | {r['wrong']} |")
    return "\n".join(lines) + "\n"


def plot(rows, directory):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no charts")
        return
    sparse_algorithms = sorted({r["algorithm"] for r in rows if r["density"] is not None})
    dense_algorithms = ["dense", "mpi_allreduce", "gloo_dense"]
    densities = sorted({r["density"] for r in rows if r["density"] is not None})
    for n in sorted({r["nodes"] for r in rows}):
        for rate in sorted({r["rate"] for r in rows if r["nodes"] == n}):
            sel = [r for r in rows if r["nodes"] == n and r["rate"] == rate]
            if len({r["count"] for r in sel}) < 2:
                continue
            fig, axes = plt.subplots(1, len(densities), figsize=(5 * len(densities), 4), squeeze=False)
            for ax, density in zip(axes[0], densities):
                for name in dense_algorithms + sparse_algorithms:
                    pts = sorted((r["count"], r["time_us"] / 1e3) for r in sel if r["algorithm"] == name
                                 and (r["density"] is None or r["density"] == density))
                    pts = list({c: t for c, t in pts}.items())
                    if pts:
                        ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
                ax.set_title(f"{n} ranks, {rate}, density {density:g}")
                ax.set_xlabel("float32 elements")
                ax.set_ylabel("time per call (ms)")
                ax.grid(True, which="both", alpha=0.3)
            axes[0][0].legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(os.path.join(directory, f"time_vs_size_n{n}_{rate}.png"), dpi=110)
            plt.close(fig)
    # Speed-up over MPI_Allreduce against link rate, at the largest size of each rank count.
    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted({r["nodes"] for r in rows}):
        count = max(r["count"] for r in rows if r["nodes"] == n)
        for name in sparse_algorithms:
            for density in densities[:1]:
                pts = []
                for rate in sorted({r["rate"] for r in rows if r["nodes"] == n}, key=rate_bytes_per_s):
                    block = [r for r in rows if (r["nodes"], r["rate"], r["count"]) == (n, rate, count)]
                    mpi = reference(block, "mpi_allreduce", None)
                    mine = reference(block, name, density)
                    if mpi and mine:
                        pts.append((rate_bytes_per_s(rate) * 8 / 1e9, mpi / mine))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=f"{name} d={density:g} n={n}")
    if not ax.lines:
        plt.close(fig)
        return
    ax.set_xscale("log")
    ax.set_xlabel("link rate (Gbit/s)")
    ax.set_ylabel("speed-up over MPI_Allreduce")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "speedup_vs_link.png"), dpi=110)
    plt.close(fig)
    # Bytes per rank against the rank count (needs two rank counts).
    if len({r["nodes"] for r in rows}) < 2:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in sparse_algorithms:
        for density in densities[:1]:
            pts = {}
            for r in rows:
                if r["algorithm"] == name and r["density"] == density:
                    pts.setdefault(r["nodes"], []).append(r["bytes_sent"] / r["count"])
            if len(pts) > 1:
                xs = sorted(pts)
                ax.plot(xs, [statistics.median(pts[x]) for x in xs], marker="o",
                        label=f"{name} d={density:g}")
    ax.set_xlabel("ranks")
    ax.set_ylabel("bytes sent per rank per element")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "bytes_vs_ranks.png"), dpi=110)
    plt.close(fig)


# --- Analytic cost model --------------------------------------------------------------------
# Per algorithm, one call of one rank costs
#     T = alpha x message_steps(n) + wire_bytes(n) / link_rate + gamma x count x n / cores
# alpha: seconds per message step (latency plus per-message software cost), gamma: CPU seconds
# per element of one rank's passes; the n ranks of this machine share its `cores`, hence
# count x n / cores. alpha and gamma are fitted (least squares, non-negative) to the measured
# rows of the algorithm; the wire term uses the measured bytes. The projection to a cluster
# assumes one rank per machine (gamma x count, no sharing), links of the given rate with the
# fitted alpha, and the bytes formulas of docs/algorithms/ at the measured density:
#   dense:         2 (n-1)/n 4C
#   micro, exdyna: 8 (k/n)(n-1) indices + 2 (n-1)/n 4k values + 2 (n-1)/n 8 (2WB+1) bins
#                  (balanced partitions, f(t) = 1; k = dC)
#   topk:          8 k (n-1) indices + 2 (n-1)/n 4 k' values, k' = min(n k, C) (no overlap,
#                  the worst case of build-up)
#   s2:            2 (n-1)/n (3 x ceil(k / 2) x 4 + ceil(C / 32)): the r = 3 x c = lambda k
#                  table (lambda 0.5) and one bitmap byte per block of 32, all-reduced
def wire_bytes(algorithm, n, count, density):
    k = density * count
    if algorithm in ("dense", "mpi_allreduce", "gloo_dense"):
        return 2 * (n - 1) / n * 4 * count
    if algorithm in ("micro", "exdyna"):
        return 8 * (k / n) * (n - 1) + 2 * (n - 1) / n * 4 * k + 2 * (n - 1) / n * 8 * 513
    if algorithm in ("topk", "sidco"):
        return 8 * k * (n - 1) + 2 * (n - 1) / n * 4 * min(n * k, count)
    if algorithm == "s2":
        return 2 * (n - 1) / n * (3 * math.ceil(k / 2) * 4 + math.ceil(count / 32))
    return None


def fit_model(rows, cores):
    import numpy as np
    models = {}
    # auto:<preset> rows (scripts/cluster/auto_vs_fixed.py) are the library's choice, not an
    # algorithm of their own: not fitted.
    for name in sorted({r["algorithm"] for r in rows if ":" not in r["algorithm"]}):
        sel = [r for r in rows if r["algorithm"] == name and rate_bytes_per_s(r["rate"])]
        if len(sel) < 2:
            continue
        a = np.array([[message_steps(name, r["nodes"]), r["count"] * r["nodes"] / cores] for r in sel])
        wire = np.array([max(r["bytes_sent"], r["bytes_received"]) / rate_bytes_per_s(r["rate"])
                         for r in sel])
        y = np.array([r["time_us"] * 1e-6 for r in sel]) - wire
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        coef = np.maximum(coef, 0)
        predicted = a @ coef + wire
        errors = np.abs(predicted - (y + wire)) / (y + wire)
        models[name] = {"alpha_s": float(coef[0]), "gamma_s_per_element": float(coef[1]),
                        "rows": len(sel), "median_rel_error": float(np.median(errors)),
                        "max_rel_error": float(np.max(errors))}
    return models


def project(models, rate, count, density, ranks=(16, 64, 256, 1024)):
    lines = [f"\n### Projection: {count:,} float32, density {density:g}, {rate} links, one rank "
             "per machine\n", "| algorithm | " + " | ".join(f"{n} ranks (ms)" for n in ranks) +
             " |", "|---|" + "---:|" * len(ranks)]
    link = rate_bytes_per_s(rate)
    for name, m in models.items():
        cells = []
        for n in ranks:
            wire = wire_bytes(name, n, count, density)
            if wire is None:
                break
            t = m["alpha_s"] * message_steps(name, n) + wire / link + m["gamma_s_per_element"] * count
            cells.append(f"{t * 1e3:.1f}")
        if len(cells) == len(ranks):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def model_markdown(models):
    lines = ["\n### Cost model fit (T = alpha steps + wire / rate + gamma C n / cores)\n",
             "| algorithm | alpha (us/step) | gamma (ns/element) | rows | median error | max error |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, m in models.items():
        lines.append(f"| {name} | {m['alpha_s'] * 1e6:.1f} | {m['gamma_s_per_element'] * 1e9:.2f} | "
                     f"{m['rows']} | {m['median_rel_error'] * 100:.0f} % | "
                     f"{m['max_rel_error'] * 100:.0f} % |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--memory-gbps", type=float, default=30.0)
    p.add_argument("--cores", type=int, default=2, help="cores the ranks shared in the run")
    p.add_argument("--project", default="1gbit,25000000,0.001",
                   help="RATE,COUNT,DENSITY of the projection table")
    a = p.parse_args()
    rows, latency = load(a.directory)
    if not rows:
        raise SystemExit(f"no results in {a.directory}")
    add_bounds(rows, latency, a.memory_gbps)
    text = markdown(rows)
    models = fit_model(rows, a.cores)
    rate, count, density = a.project.split(",")
    text += model_markdown(models) + project(models, rate, int(count), float(density))
    json.dump({"memory_gbps": a.memory_gbps, "cores": a.cores, "models": models, "rows": rows},
              open(os.path.join(a.directory, "summary.json"), "w"), indent=1)
    open(os.path.join(a.directory, "summary.md"), "w").write(text)
    print(text)
    plot(rows, a.directory)


if __name__ == "__main__":
    main()
