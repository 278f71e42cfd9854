# Probe, calibration and their sum on the slowest rank of each run (command.sh's logs), and the
# medians per rank count and build.
import glob, os, re, statistics, sys

folder = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(folder, "N*_*_*.txt"))):
    n, which, run = re.match(r"N(\d+)_(\w+)_(\d+)\.txt", os.path.basename(path)).groups()
    probe = cal = total = 0.0
    for line in open(path):
        m = re.search(r"probe ([0-9.]+), calibration ([0-9.]+)\)", line)
        if m and "auto chose" in line:
            p, c = float(m.group(1)), float(m.group(2))
            probe, cal, total = max(probe, p), max(cal, c), max(total, p + c)
    rows.setdefault((int(n), which), []).append((probe, cal, total))
    print(f"N={n} {which} run {run}: probe {probe:.1f} ms, calibration {cal:.1f} ms, "
          f"probe + calibration {total:.1f} ms (slowest rank)")
for (n, which), values in sorted(rows.items()):
    print(f"N={n} {which}: median over {len(values)} runs: calibration "
          f"{statistics.median(v[1] for v in values):.1f} ms, probe + calibration "
          f"{statistics.median(v[2] for v in values):.1f} ms")
