#!/usr/bin/env python3
"""The cost model fitted from an emulated cluster's 4-rank runs, checked on its 8-rank runs.

    scripts/cluster/fit_from_4_ranks.py DIR [--out DIR/fit] [--build build] [--only REGEX]

DIR holds an emulated-cluster run (scripts/cluster/cost_model_grid.sh): perf_n{4,8}_{rate}_{size}.json
(sparse_allreduce_perf -J) and latency_n{4,8}_{rate}.json. Two steps, both on the 4-rank runs only:

1. The host parameters (docs/cost_model.md, "What a call costs"): the transport's CPU time per
   byte moved (h) and per message (w), charged r times where r ranks share the cores, and the local
   work per entry received or aggregated (e). The model's components of every 4-rank row
   (cost_projection with h = w = 0: the wire time, the bytes, the messages, the entries) give the
   communication as src/tuning/cost_model.cc does, max(wire, r h B) + r w M; the (h, w) of a
   logarithmic grid with the smallest sum of |log(model / measured communication)| over the rows
   is kept (the measured communication: the call's time less its select and other phases).
   The other phase is fitted the same way as r (o N + e E): o per element of the vector (writing
   the output and the residual, which every call pays whatever its density: 0.38-0.52 ns per
   element at one rank, 1M float32, d 0.001) and e per entry.
2. Per row (algorithm, density, size and link), one factor per phase: each measured 4-rank phase
   (sparse_allreduce_perf's select_us, other_us and the rest of the call) over the model's
   matching component with the fitted host parameters: the local work per element less r o N
   (select), r (o N + e E) (other; r o N taken from the local work per element, which holds it),
   the communication. A component the model predicts as 0 hands its phase to the communication.
   CLT-k's select phase and communication get one factor together (LEADER_SELECTS, below).
   The select and other phases are the rank's own work, the same on either link, so their
   factors are the mean over the links of the same algorithm, density and size
   (pool_local_factors): over the eight stored runs 538 of 560 rows within 25 % against 536.
3. The slower link's rows (all but CLT-k's), whose links are tc token buckets: bucket_ms, the
   row's fitted local work and the faster link's fitted communication of the same cell, times the
   4-rank row's measured time over bucket_ms of its measured phases (rows keep the phase fit as
   phase_fitted_ms). The bucket refills while the rank computes, so a call that moves about a
   burst is bounded by its bytes over the rate, not by its local work plus them: micro at 1
   Gbit/s, 1M float32, d 0.1 took 9.8-10.2 ms at 4 ranks against 10.1 ms of received bytes over
   the rate, and the phase fit missed it and exdyna at 8 ranks by +32 % to +40 % in four runs.

The 8-rank prediction is then cost_projection's components at 8 ranks with the fitted parameters
(the library's model), each times its factor. Nothing measured at 8 ranks enters it: the link
latency alpha is the 4-rank cluster's (latency_n4_RATE.json) for both rank counts (the links are
alike; the two-node ping-pong's median moves between 9 and 38 us from one cluster set-up to the
next, a scheduling accident that would otherwise decide the small rows), and every preset's local
work per element is calibrated once per (preset, density, count) and used for both rank counts
(OUT/calibration.json; --calibration FILE reuses a kept one, so that a refit is reproducible).
Writes OUT/parameters.json, OUT/fit_n8_RATE_SIZE.json (rows with fitted_error, the format
scripts/cluster/fit_summary.py reads) and .md, and prints the summary. Needs the library built
(cost_projection); SCCL_CPU_THREADS=1 as the cluster's ranks ran.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cost_model_check import project, ranks_of, row_inputs  # noqa: E402

RANKS_PER_MACHINE = {4: 2, 8: 4}  # the emulated cluster: every rank on the 2-core machine
# CLT-k's leader selects the k entries for every rank, which wait in its broadcast meanwhile:
# their communication phase holds that wait, and the model charges the leader's selection as
# local work (the one-rank calibration is the leader's). Averaged over the ranks, select +
# comm is the leader's selection + the communication at any rank count, but the split between
# the two is not (25M float32, d 0.001, 10 Gbit/s: the measured communication grew 2.2x from 4
# to 8 ranks, the model's 3.7x), so the two phases are fitted with one factor.
LEADER_SELECTS = {"cltk"}
TBF_BURST_BYTES = 1 << 20  # netns_cluster.sh: tbf ... burst 1mb


def log_grid(low, high, steps):
    return [0.0] + [low * (high / low) ** (i / (steps - 1)) for i in range(steps)]


# h in ns per byte, w in us per message, o in ns per element, e in ns per entry.
GRID_H = log_grid(0.02, 2.0, 16)
GRID_W = log_grid(2.0, 500.0, 16)
GRID_O = log_grid(0.01, 10.0, 31)
GRID_E = log_grid(1.0, 1000.0, 31)


def phase_ms(value):
    return 0.0 if value == "-" else value / 1e3


class Calibration:
    """Each preset's local work per element (ns) at a density and count, measured once by
    cost_projection (one in-process rank) and kept."""

    def __init__(self, build, kept=None):
        self.binary = os.path.join(build, "perf", "cost_projection")
        self.rates = dict(kept or {})

    def ns_per_element(self, algorithm, density, count):
        key = "%s/%r/%d" % (algorithm, density, count)
        if key not in self.rates:
            p = project(self.binary, count, density, 1, 1, 0.0, algorithm, 1.0, None, 1, False)
            self.rates[key] = p["local_ms"] * 1e6 / count
        return self.rates[key]


def load_rows(directory, ranks, build, only, calibration):
    """Every modelled row of the run at `ranks`, with its model components at h = w = 0."""
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "perf_n%d_*gbit_*.json" % ranks))):
        match = re.search(r"perf_n\d+_(\d+)gbit_(\d+)\.json$", path)
        if not match or (only and not re.search(only, os.path.basename(path))):
            continue
        gbits, size = int(match.group(1)), match.group(2)
        with open(os.path.join(directory, "latency_n4_%sgbit.json" % gbits),
                  encoding="utf-8") as f:
            latency_us = json.load(f)["half_rtt_us_median"]
        with open(path, encoding="utf-8") as f:
            measured = json.load(f)
        if ranks_of(measured["options"]) != ranks:
            sys.exit("fit_from_4_ranks: %s is not a %d-rank run" % (path, ranks))
        for r in measured["results"]:
            inputs = row_inputs(r, ranks)
            if inputs is None:
                continue
            algorithm, density, inflation, union = inputs
            base = dict(algorithm=algorithm, density=r["target_density"], inflation=inflation,
                        union=union, count=r["count"], ranks=ranks, gbits=gbits, size=size,
                        latency_us=latency_us, per_machine=RANKS_PER_MACHINE[ranks],
                        measured_ms=r["time_us"] / 1e3, select_ms=phase_ms(r["select_us"]),
                        other_ms=phase_ms(r["other_us"]), model_density=density,
                        ns_per_element=calibration.ns_per_element(algorithm, density,
                                                                  r["count"]))
            p = project(os.path.join(build, "perf", "cost_projection"), r["count"], density,
                        ranks, gbits, latency_us, algorithm, inflation, union,
                        base["per_machine"], True, (0.0, 0.0, 0.0), base["ns_per_element"])
            base.update(wire_ms=p["comm_ms"], local_ms=p["local_ms"], entries=p["entries"],
                        messages=p["messages"], moved_mb=p["sent_mb"] + p["received_mb"],
                        received_mb=p["received_mb"])
            rows.append(base)
    return rows


def comm_ms(row, h, w):
    """The communication of src/tuning/cost_model.cc with the transport sharing the cores (ms;
    h in ns per byte, w in us per message)."""
    r = row["per_machine"]
    return max(row["wire_ms"], r * h * row["moved_mb"]) + r * w * 1e-3 * row["messages"]


def other_ms(row, o, e):
    """The other phase as the fit extrapolates it: r (o N + e E) ms (o in ns per element, e in
    ns per entry)."""
    return row["per_machine"] * (o * row["count"] + e * row["entries"]) * 1e-6


def fit_host(rows):
    """(h, w) from the communication phase of every row (the call's time less its select and
    other phases), (o, e) from the other phase (the local work after the messages arrive: o per
    element of the vector, writing the output and the residual, which every call pays whatever
    its density; e per entry received or aggregated): each parameter against the phase it prices,
    so that the calibration of the local work per element, which is measured on one idle rank
    and misses the cluster's by 2-4x, does not leak into them. Each pair is the point of a
    logarithmic grid with the smallest sum of |log(model / measured)| over the rows."""
    def best_pair(grid_a, grid_b, model, measured):
        best, best_loss = (0.0, 0.0), None
        for a in grid_a:
            for b in grid_b:
                loss = sum(abs(math.log(max(model(r, a, b), 1e-9) / max(measured(r), 1e-6)))
                           for r in rows)
                if best_loss is None or loss < best_loss:
                    best, best_loss = (a, b), loss
        return best
    h, w = best_pair(GRID_H, GRID_W, comm_ms, lambda r: measured_phases(r)["comm"])
    o, e = best_pair(GRID_O, GRID_E, other_ms, lambda r: r["other_ms"])
    return h, w, o, e


def components(row, host, o, build):
    """The library's model of the row (cost_projection with the fitted host parameters), its
    local work per element split in two: the part after the exchange (r o N: writing the output
    and the residual, which the other phase measures) moves to the per-entry component, the rest
    stays with the select phase. The components still add up to the library's prediction."""
    p = project(os.path.join(build, "perf", "cost_projection"), row["count"],
                row["model_density"], row["ranks"], row["gbits"], row["latency_us"],
                row["algorithm"], row["inflation"], row["union"], row["per_machine"], True, host,
                row["ns_per_element"])
    after = min(p["local_ms"], other_ms(row, o, 0.0))
    return {"local": p["local_ms"] - after, "entries": p["aggregate_ms"] + after,
            "comm": p["comm_ms"], "total": p["time_ms"]}


def measured_phases(row):
    local, entries = row["select_ms"], row["other_ms"]
    return {"local": local, "entries": entries, "comm": row["measured_ms"] - local - entries}


def phase_factors(row, predicted):
    """Measured phase over predicted component; a component predicted 0 hands its phase on.
    A preset whose leader selects for every rank (LEADER_SELECTS) gets one factor for its select
    phase and its communication together."""
    measured = measured_phases(row)
    for phase in ("local", "entries"):
        if predicted[phase] <= 0:
            measured["comm"] += measured[phase]
            measured[phase] = 0.0
    factors = {phase: (measured[phase] / predicted[phase] if predicted[phase] > 0 else 0.0)
               for phase in ("local", "entries", "comm")}
    together = predicted["local"] + predicted["comm"]
    if row["algorithm"] in LEADER_SELECTS and together > 0:
        factors["local"] = factors["comm"] = (measured["local"] + measured["comm"]) / together
    return factors


def bucket_ms(local_ms, fast_comm_ms, received_mb, gbits):
    """A call on one of the emulated cluster's links, tc token buckets (netns_cluster.sh: tbf
    rate R burst 1mb, both ways): the rank computes (local_ms: its select and other phases), then
    sends and receives. Meanwhile the bucket refills, up to its burst, so that much of the bytes
    passes at once; the rest takes its bytes over the rate, or the communication's CPU time where
    that is longer (fast_comm_ms: the communication of the same call on the fast link). The
    bucket is taken as empty when the call starts: the calls of the other presets in the same
    round drain it."""
    link = received_mb * 8.0 / gbits
    tokens = min(TBF_BURST_BYTES * 8e-6 / gbits, local_ms)
    return local_ms + max(fast_comm_ms, link - tokens)


def fit_token_buckets(rows4, rows8, out_rows):
    """The rows of the slower link, from bucket_ms: at 8 ranks the row's fitted local work and
    the fast link's fitted communication, times the 4-rank row's measured time over bucket_ms of
    its own measured phases."""
    fastest = max(r["gbits"] for r in rows4)
    def mean_by_key(pairs):
        sums = {}
        for k, value in pairs:
            sums.setdefault(k, []).append(value)
        return {k: sum(v) / len(v) for k, v in sums.items()}
    def local4(r):
        return r["select_ms"] + r["other_ms"]
    measured4 = mean_by_key((key(r), r["measured_ms"]) for r in rows4)
    model4 = {}
    comm4 = mean_by_key((key(r), r["measured_ms"] - local4(r)) for r in rows4)
    for r in rows4:
        sibling = key(r)[:2] + (fastest,) + key(r)[3:]
        if r["gbits"] != fastest and sibling in comm4 and r["algorithm"] not in LEADER_SELECTS:
            model4.setdefault(key(r), []).append(
                bucket_ms(local4(r), comm4[sibling], r["received_mb"], r["gbits"]))
    def fitted_part(out_row, phases):
        return sum(out_row["factors"][p] * out_row["predicted_components_ms"][p] for p in phases)
    comm8 = mean_by_key((key(row), fitted_part(o, ("comm",)))
                        for row, o in zip(rows8, out_rows) if "factors" in o)
    for row, out_row in zip(rows8, out_rows):
        k = key(row)
        sibling = k[:2] + (fastest,) + k[3:]
        if k not in model4 or sibling not in comm8 or "factors" not in out_row or \
                row["algorithm"] in LEADER_SELECTS:
            continue
        factor = measured4[k] / (sum(model4[k]) / len(model4[k]))
        fitted = factor * bucket_ms(fitted_part(out_row, ("local", "entries")), comm8[sibling],
                                    row["received_mb"], row["gbits"])
        out_row.update(phase_fitted_ms=out_row["fitted_ms"], bucket_factor=factor,
                       fitted_ms=fitted, fitted_error=fitted / row["measured_ms"] - 1)


def key(row):
    return (row["algorithm"], str(row["density"]), row["gbits"], row["size"])


def pool_local_factors(factors):
    """The select and other phases are the rank's own work, the same on every link: each row's
    factors for them become the mean over the links of the same (algorithm, density, size), so
    that one link's noise in a 4-rank row does not decide its 8-rank prediction alone (S2 at 25M,
    d 0.01: the same decode measured 313 and 406 ms at 4 ranks on the two links of one run).
    CLT-k's select phase keeps its factor, shared with its communication (LEADER_SELECTS)."""
    groups = {}
    for k, fits in factors.items():
        groups.setdefault((k[0], k[1], k[3]), []).extend(fits)
    means = {g: {phase: sum(f[phase] for f in fits) / len(fits) for phase in ("local", "entries")}
             for g, fits in groups.items()}  # all before any factor changes
    for k, fits in factors.items():
        phases = ("entries",) if k[0] in LEADER_SELECTS else ("local", "entries")
        for f in fits:
            for phase in phases:
                f[phase] = means[(k[0], k[1], k[3])][phase]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("directory")
    p.add_argument("--out", help="output folder (default DIR/fit)")
    p.add_argument("--build", default=os.environ.get("SCCL_BUILD_DIR", "build"))
    p.add_argument("--only", help="a regular expression: only the perf files it matches "
                   "(e.g. 10gbit_1048576)")
    p.add_argument("--calibration", help="a calibration.json kept from an earlier fit: its "
                   "rates instead of calibrating again (rates it lacks are measured)")
    args = p.parse_args()
    out = args.out or os.path.join(args.directory, "fit")
    os.makedirs(out, exist_ok=True)
    kept = None
    if args.calibration:
        try:
            with open(args.calibration, encoding="utf-8") as f:
                kept = json.load(f)
        except (OSError, ValueError) as error:
            sys.exit("fit_from_4_ranks: cannot read %s: %s" % (args.calibration, error))
        kept = kept.get("ns_per_element") if isinstance(kept, dict) else None
        if not isinstance(kept, dict) or not all(
                isinstance(v, (int, float)) and v >= 0 for v in kept.values()):
            sys.exit("fit_from_4_ranks: %s has no ns_per_element map of rates >= 0 (a "
                     "calibration.json this script wrote)" % args.calibration)
    calibration = Calibration(args.build, kept)
    rows4 = load_rows(args.directory, 4, args.build, args.only, calibration)
    rows8 = load_rows(args.directory, 8, args.build, args.only, calibration)
    with open(os.path.join(out, "calibration.json"), "w", encoding="utf-8") as f:
        json.dump({"ns_per_element": calibration.rates,
                   "key": "preset/density/count; one in-process rank, SCCL_CPU_THREADS=%s" %
                          os.environ.get("SCCL_CPU_THREADS", "unset")}, f, indent=1,
                  sort_keys=True)
    if not rows4 or not rows8:
        sys.exit("fit_from_4_ranks: %s needs 4- and 8-rank runs" % args.directory)
    h, w, o, e = fit_host(rows4)
    host = (e, h, w)  # cost_projection's -E, -H, -W
    factors = {}
    for row in rows4:
        factors.setdefault(key(row), []).append(phase_factors(row, components(row, host, o,
                                                                                args.build)))
    pool_local_factors(factors)
    with open(os.path.join(out, "parameters.json"), "w", encoding="utf-8") as f:
        json.dump({"transport_ns_per_byte": h, "transport_us_per_message": w,
                   "ns_per_entry": e, "other_ns_per_element": o,
                   "fitted_on": sorted({r["size"] + "/" + str(r["gbits"]) for r in rows4})},
                  f, indent=1)
    print("fitted on the 4-rank runs: transport %.3f ns per byte, %.1f us per message; "
          "%.1f ns per entry, %.3f ns per element after the exchange" % (h, w, e, o))
    by_file = {}
    out_rows = []
    for row in rows8:
        predicted = components(row, host, o, args.build)
        fits = factors.get(key(row))
        out_row = {"algorithm": row["algorithm"], "density": row["density"],
                   "count": row["count"], "ranks": row["ranks"], "gbits": row["gbits"],
                   "measured_ms": row["measured_ms"], "predicted_ms": predicted["total"],
                   "error": predicted["total"] / row["measured_ms"] - 1,
                   "predicted_components_ms": predicted,
                   "measured_phases_ms": measured_phases(row)}
        if fits:
            # Several 4-rank rows of one key (dense is measured once per density block): their
            # mean factors.
            mean = {phase: sum(f[phase] for f in fits) / len(fits) for phase in fits[0]}
            fitted = sum(mean[phase] * predicted[phase] for phase in mean)
            out_row.update(factors=mean, fitted_ms=fitted,
                           fitted_error=fitted / row["measured_ms"] - 1)
        out_rows.append(out_row)
    fit_token_buckets(rows4, rows8, out_rows)
    for row, out_row in zip(rows8, out_rows):
        by_file.setdefault((row["gbits"], row["size"]), []).append(out_row)
    for (gbits, size), rows in sorted(by_file.items()):
        name = "fit_n8_%dgbit_%s" % (gbits, size)
        with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"ranks": 8, "gbits": gbits, "count": int(size), "host": host,
                       "rows": rows}, f, indent=1)
        with open(os.path.join(out, name + ".md"), "w", encoding="utf-8") as f:
            f.write("| algorithm | density | measured ms (local + entries + comm) | model ms "
                    "(local + entries + comm) | error | fitted ms | fitted error |\n")
            f.write("| --- | --- | --- | --- | --- | --- | --- |\n")
            for r in rows:
                m, c = r["measured_phases_ms"], r["predicted_components_ms"]
                fitted = ("%.1f | %+.0f %%" % (r["fitted_ms"], 100 * r["fitted_error"])
                          if "fitted_ms" in r else "- | -")
                f.write("| %s | %s | %.1f (%.1f + %.1f + %.1f) | %.1f (%.1f + %.1f + %.1f) | "
                        "%+.0f %% | %s |\n" % (r["algorithm"], r["density"], r["measured_ms"],
                                               m["local"], m["entries"], m["comm"], c["total"],
                                               c["local"], c["entries"], c["comm"],
                                               100 * r["error"], fitted))


if __name__ == "__main__":
    main()
