#!/usr/bin/env python3
"""The cost model's prediction against a measured sparse_allreduce_perf run (docs/cost_model.md).

    scripts/cost_model_check.py MEASURED.json --gbits 1 [--latency LATENCY.json | --latency-us 36]
        [--ranks-per-machine N] [--transport-shares-cores] [--host E,H,W] [--build build]
        [--out OUT.json] [--fit-from CHECK.json]

Reads the measured run (perf/sparse_allreduce_perf -J: count, densities, algorithms, ranks, each
row's time, bytes and gather inflation), runs build/perf/cost_projection for the same count, rank
count and link (the latency from the cluster bench's link_latency.py JSON, its median half round
trip, or --latency-us), with each sparse row's own measured gather inflation and union factor
(k'/k of whole-vector selection), and prints a markdown table: measured and predicted time, the
error, and the bytes sent per rank both ways. Rows the model has no preset for (mpi_allreduce, the
peers) are left out and named.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def ranks_of(options):
    match = re.match(r"\s*(\d+)", str(options.get("ranks", "")))
    if not match:
        sys.exit("cost_model_check: the measured run names no rank count")
    return int(match.group(1))


def project(binary, count, density, ranks, gbits, latency_us, algorithm, inflation, union,
            per_machine, transport_shares_cores, host=(0.0, 0.0, 0.0), ns_per_element=None):
    """cost_projection's row for one call; host = (ns per entry, transport ns per byte,
    transport us per message), cost_projection -E -H -W; ns_per_element: the preset's local
    work per element given (-K), else cost_projection calibrates it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "projection.json")
        command = [binary, "-b", str(count), "-e", str(count), "-D", str(density), "-R",
                   str(ranks), "-G",
                   str(gbits), "-L", str(latency_us), "-A", algorithm, "-I", str(inflation),
                   "-P", str(per_machine), "-S", "1" if transport_shares_cores else "0",
                   "-E", repr(host[0]), "-H", repr(host[1]), "-W", repr(host[2]), "-J", out]
        if union is not None:
            command += ["-U", str(union)]
        if ns_per_element is not None:
            command += ["-K", "%s=%r" % (algorithm, ns_per_element)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(out, encoding="utf-8") as f:
            rows = json.load(f)["results"]
    return next(r for r in rows if r["algorithm"] == algorithm)


def row_inputs(r, ranks):
    """(algorithm, density, gather inflation, union factor or None) the model is given for a
    measured row, or None where the model has no preset for it (mpi_allreduce, the peers, auto)."""
    algorithm = r["algorithm"]
    if ":" in algorithm:  # auto:<preset> (scripts/cluster/auto_vs_fixed.py) and graph rows
        return None
    dense = r["target_density"] == "-"
    if dense and algorithm != "dense":
        return None
    density = 0.01 if dense else float(r["target_density"])
    inflation = 1.0 if dense or r["gather_inflation"] == "-" else max(1.0, r["gather_inflation"])
    union = None
    if not dense and algorithm in ("topk", "hard_threshold", "sidco", "s2"):
        union = max(1.0, min(float(ranks), r["actual_density"] / density))
    return algorithm, density, inflation, union


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("measured")
    p.add_argument("--gbits", type=float, required=True, help="the emulated links' rate")
    p.add_argument("--latency", help="link_latency.py JSON (half_rtt_us_median)")
    p.add_argument("--latency-us", type=float, help="the link latency, if no JSON")
    p.add_argument("--ranks-per-machine", type=int, default=1,
                   help="ranks sharing one machine's cores (the emulated cluster: all of them)")
    p.add_argument("--transport-shares-cores", action="store_true",
                   help="charge the transport's host work (--host) to the shared cores too "
                   "(cost_projection -S 1): the emulated cluster, whose processes run their TCP "
                   "stacks on the same cores")
    p.add_argument("--host", default="0,0,0",
                   help="ns per entry, transport ns per byte, transport us per message "
                   "(cost_projection -E, -H, -W; scripts/cluster/fit_from_4_ranks.py fits them)")
    p.add_argument("--build", default=os.environ.get("SCCL_BUILD_DIR", "build"))
    p.add_argument("--out", help="write the rows as JSON here")
    p.add_argument("--fit-from", help="a check's --out JSON of another run (e.g. 4 ranks): each "
                   "(algorithm, density)'s measured/predicted there scales this run's prediction "
                   "(the model fitted on that run); the table then adds the fitted error")
    args = p.parse_args()
    if (args.latency is None) == (args.latency_us is None):
        p.error("give --latency or --latency-us")
    latency_us = args.latency_us
    try:
        host = tuple(float(x) for x in args.host.split(","))
    except ValueError:
        host = ()
    if len(host) != 3 or min(host) < 0:
        p.error("--host takes three numbers >= 0: ns per entry, ns per byte, us per message")
    if args.latency:
        with open(args.latency, encoding="utf-8") as f:
            latency_us = json.load(f)["half_rtt_us_median"]
    with open(args.measured, encoding="utf-8") as f:
        measured = json.load(f)
    ranks = ranks_of(measured["options"])
    binary = os.path.join(args.build, "perf", "cost_projection")
    rows, skipped = [], set()
    for r in measured["results"]:
        inputs = row_inputs(r, ranks)
        if inputs is None:
            skipped.add(r["algorithm"].split(":", 1)[0])
            continue
        algorithm, density, inflation, union = inputs
        dense = r["target_density"] == "-"
        try:
            predicted = project(binary, r["count"], density, ranks, args.gbits, latency_us,
                                algorithm, inflation, union, args.ranks_per_machine,
                                args.transport_shares_cores, host)
        except (subprocess.CalledProcessError, StopIteration):
            skipped.add(algorithm)
            continue
        measured_ms = r["time_us"] / 1e3
        rows.append({
            "algorithm": algorithm, "density": "-" if dense else density, "count": r["count"],
            "ranks": ranks, "gbits": args.gbits, "latency_us": latency_us,
            "measured_ms": measured_ms, "predicted_ms": predicted["time_ms"],
            "predicted_comm_ms": predicted["comm_ms"],
            "predicted_local_ms": predicted["local_ms"] + predicted["aggregate_ms"],
            "error": predicted["time_ms"] / measured_ms - 1,
            "measured_sent_mb": r["bytes_sent"] / 1e6, "predicted_sent_mb": predicted["sent_mb"],
        })
    if args.fit_from:
        with open(args.fit_from, encoding="utf-8") as f:
            factors = {(r["algorithm"], str(r["density"])): r["measured_ms"] / r["predicted_ms"]
                       for r in json.load(f)["rows"]}
        for row in rows:
            factor = factors.get((row["algorithm"], str(row["density"])))
            if factor is not None:
                row["fitted_ms"] = row["predicted_ms"] * factor
                row["fitted_error"] = row["fitted_ms"] / row["measured_ms"] - 1
    fitted = any("fitted_ms" in row for row in rows)
    print("| algorithm | density | measured ms | predicted ms (comm + local) | error | " +
          ("fitted ms | fitted error | " if fitted else "") + "sent MB measured / predicted |")
    print("| --- | --- | --- | --- | --- | " + ("--- | --- | " if fitted else "") + "--- |")
    for row in rows:
        fit = ""
        if fitted:
            fit = ("%.1f | %+.0f %% | " % (row["fitted_ms"], 100 * row["fitted_error"])
                   if "fitted_ms" in row else "- | - | ")
        print("| %s | %s | %.1f | %.1f (%.1f + %.1f) | %+.0f %% | %s%.3f / %.3f |" % (
            row["algorithm"], row["density"], row["measured_ms"], row["predicted_ms"],
            row["predicted_comm_ms"], row["predicted_local_ms"], 100 * row["error"], fit,
            row["measured_sent_mb"], row["predicted_sent_mb"]))
    if skipped:
        print("\nnot modelled: " + ", ".join(sorted(skipped)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"measured": args.measured, "ranks": ranks, "gbits": args.gbits,
                       "ranks_per_machine": args.ranks_per_machine,
                       "transport_shares_cores": args.transport_shares_cores, "host": host,
                       "latency_us": latency_us, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
