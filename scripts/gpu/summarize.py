#!/usr/bin/env python3
"""Writes the JSON summary of a GPU bundle run (run.sh calls it; docs/gpu.md).

Inputs, in run.sh's work folder: steps.tsv (group, name, status, seconds, exit code, note, output
file, perf JSON file: one step a line), machine.tsv (key, value) and the steps' output files. The
CUDA runtime, driver API and NCCL versions are asked of the libraries themselves (ctypes, with
run.sh's LD_LIBRARY_PATH), so they are what the run loaded. peer_comparison: sparsecoll's MiCRO
rows of sparse_allreduce_perf -g 1 over the PyTorch peer's time at the same size and density.
Only the standard library is used.
"""

import argparse
import ctypes
import datetime
import json
import os
import platform
import re

SCHEMA = 1


def read_tsv(path, width):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            rows.append(fields + [""] * (width - len(fields)))
    return rows


def number(text):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if re.fullmatch(r"-?\d+", text) else value


def parse_table(text):
    """Rows of a perf binary's table: a '#' header line whose column titles match the number of
    fields of the data lines after it (perf/common/report.cc prints both)."""
    rows, header = [], None
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if line.startswith("#"):
            titles = line[1:].split()
            if len(titles) >= 4 and not any(t.endswith(":") for t in titles[:1]):
                header = titles
            continue
        if header is None or len(fields) != len(header):
            continue
        if not re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", fields[0]):
            continue
        rows.append({title: number(field) for title, field in zip(header, fields)})
    return rows


def device_line(text):
    for line in text.splitlines():
        if line.startswith("# ") and " on " in line and "-g 1" in line:
            return line[2:].strip()
    return ""


def perf_of(step):
    group, name, status, _, _, _, out, perf_json = step[:8]
    text = ""
    if out and os.path.exists(out):
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
    entry = {"tool": name, "group": group, "status": status, "header": device_line(text)}
    if perf_json and os.path.exists(perf_json):
        try:
            with open(perf_json, encoding="utf-8") as f:
                data = json.load(f)
            entry["rows"] = data.get("results", [])
            entry["options"] = data.get("options", {})
            entry["header"] = data.get("header", entry["header"])  # the PyTorch peer's own
            return entry
        except (OSError, ValueError):
            pass
    entry["rows"] = parse_table(text)
    return entry


# sparsecoll's MiCRO rows compared with the PyTorch peer (perf/peers/torch_micro_peer.py: the
# seeds' MiCRO step in torch), which run.sh times on the same GPU right after them.
PEER_TOOL = "torch_micro_peer"
SPARSECOLL_TOOL = "sparse_allreduce_perf -g 1"
COMPARED_ALGORITHMS = ("micro", "micro_sync_free", "micro_sync_free:graph")


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_number(a, b):
    return is_number(a) and is_number(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def peer_comparison(perf):
    """Per density and MiCRO row of sparse_allreduce_perf -g 1: its median time over the peer's
    (ratio below 1: sparsecoll is faster), with both k'/count. Empty unless both steps have rows."""
    ours = [p for p in perf if p["tool"] == SPARSECOLL_TOOL and p.get("rows")]
    peers = [p for p in perf if p["tool"].split()[0] == PEER_TOOL and p.get("rows")]
    if not ours or not peers:
        return []
    compared = []
    for peer in peers[0]["rows"]:
        for name in COMPARED_ALGORITHMS:
            match = [r for r in ours[0]["rows"] if r.get("algorithm") == name and
                     same_number(r.get("target_density"), peer.get("target_density")) and
                     same_number(r.get("count"), peer.get("count"))]
            if not match:
                continue
            row = match[0]
            ours_us, peer_us = row.get("time_us"), peer.get("time_us")
            valid = is_number(ours_us) and is_number(peer_us) and peer_us > 0
            compared.append({
                "count": peer.get("count"), "density": peer.get("target_density"),
                "algorithm": name, "sparsecoll_time_us": ours_us, "peer_time_us": peer_us,
                "ratio_sparsecoll_to_peer": ours_us / peer_us if valid else None,
                "sparsecoll_actual_density": row.get("actual_density"),
                "peer_actual_density": peer.get("actual_density")})
    return compared


def load(names):
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def versions(bundle):
    """CUDA runtime, CUDA driver API and NCCL versions as the loaded libraries report them."""
    found = {}
    lib = os.path.join(bundle, "lib")
    cudart_names = sorted(n for n in os.listdir(lib) if n.startswith("libcudart.so")) \
        if os.path.isdir(lib) else []
    cudart = load([os.path.join(lib, n) for n in cudart_names] + ["libcudart.so.13", "libcudart.so"])
    if cudart is not None:
        value = ctypes.c_int(0)
        if cudart.cudaRuntimeGetVersion(ctypes.byref(value)) == 0:
            found["cuda_runtime"] = "%d.%d" % (value.value // 1000, value.value % 1000 // 10)
        value = ctypes.c_int(0)
        if cudart.cudaDriverGetVersion(ctypes.byref(value)) == 0 and value.value > 0:
            found["cuda_driver_api"] = "%d.%d" % (value.value // 1000, value.value % 1000 // 10)
    nccl = load(["libnccl.so.2"])
    if nccl is not None:
        value = ctypes.c_int(0)
        if nccl.ncclGetVersion(ctypes.byref(value)) == 0:
            v = value.value
            major, minor, patch = (v // 10000, v % 10000 // 100, v % 100) if v >= 20900 else \
                (v // 1000, v % 1000 // 100, v % 100)
            found["nccl"] = "%d.%d.%d" % (major, minor, patch)
    return found


# The presets of run.sh's counts step, in its -a order: the counting tool writes one line per
# sparsifier in the order of first use.
def call_counts(path, presets):
    """The counting tool's lines (tools/cuda_call_count: launches, copies, waits per call), each
    named by its preset when there is one line per preset of the counts step (run.sh's
    counted_presets, in its -a order)."""
    try:
        with open(path, encoding="utf-8") as f:
            runs = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    if len(runs) == len(presets):
        for run, preset in zip(runs, presets):
            run["preset"] = preset
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--reason", default="")
    parser.add_argument("--started", type=int, required=True)
    parser.add_argument("--finished", type=int, required=True)
    parser.add_argument("--counted-presets", default="",
                        help="the counts step's presets, comma-separated, in its -a order")
    args = parser.parse_args()

    build = {}
    try:
        with open(os.path.join(args.bundle, "BUILD_INFO.json"), encoding="utf-8") as f:
            build = json.load(f)
    except (OSError, ValueError):
        pass
    machine = {k: v for k, v in read_tsv(os.path.join(args.work, "machine.tsv"), 2)}
    machine.update(versions(args.bundle))
    machine.setdefault("hostname", platform.node())
    machine["cpus"] = os.cpu_count()
    machine["kernel"] = platform.release()

    steps, perf = [], []
    for step in read_tsv(os.path.join(args.work, "steps.tsv"), 8):
        group, name, status, seconds, code, note = step[:6]
        steps.append({"group": group, "name": name, "status": status,
                      "seconds": float(seconds or 0), "exit_code": int(code) if code else None,
                      "note": note})
        if group in ("perf", "mpirun") and status in ("pass", "fail"):
            perf.append(perf_of(step))

    counts = {}
    for step in steps:
        counts[step["status"]] = counts.get(step["status"], 0) + 1
    started = datetime.datetime.fromtimestamp(args.started, datetime.timezone.utc)
    summary = {
        "schema": SCHEMA,
        "status": args.status,
        "exit_code": args.exit_code,
        "reason": args.reason,
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": args.finished - args.started,
        "commit": build.get("commit", "unknown"),
        "bundle": build,
        "machine": machine,
        "counts": counts,
        "steps": steps,
        "perf": perf,
        "peer_comparison": peer_comparison(perf),
        "call_counts": call_counts(os.path.join(os.path.dirname(args.out), "call_counts.jsonl"),
                                   [p for p in args.counted_presets.split(",") if p]),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
