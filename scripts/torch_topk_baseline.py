#!/usr/bin/python3
"""torch.topk on |x| for the sizes and densities of estimator_perf's cost mode.

The SIDCo paper's speed-ups are against torch.topk; this measures that baseline on the same
machine so that docs/results/estimators.md can set it next to the library's exact top-k and the
estimators. Input: Laplace(0, 1) float32 (numpy default_rng(seed)), the time of
torch.topk(x.abs(), k) (values and indices, as a top-k compressor calls it), median of --iters
after one warm-up, with --threads intra-op threads (default 2, the kernels' thread count here).
Debian's python3-torch and python3-numpy; nothing is downloaded.

Usage:
    /usr/bin/python3 scripts/torch_topk_baseline.py --json docs/results/estimators_torch_topk.json
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="260000,2600000,26000000")
    parser.add_argument("--densities", default="0.1,0.01,0.001")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    counts = [int(c) for c in args.counts.split(",")]
    densities = [float(d) for d in args.densities.split(",")]
    rng = np.random.default_rng(args.seed)
    full = torch.from_numpy(rng.laplace(0.0, 1.0, max(counts)).astype(np.float32))
    rows = []
    print(f"# torch {torch.__version__}, {args.threads} threads, median of {args.iters}")
    print(f"{'count':>10} {'density':>8} {'k':>8} {'topk(us)':>10}")
    for count in counts:
        x = full[:count].contiguous()
        for density in densities:
            k = max(1, int(density * count))
            times = []
            for i in range(args.iters + 1):
                start = time.perf_counter()
                torch.topk(x.abs(), k, sorted=False)
                if i > 0:
                    times.append((time.perf_counter() - start) * 1e6)
            median = statistics.median(times)
            rows.append({"count": count, "density": density, "k": k, "torch_topk_us": median})
            print(f"{count:>10} {density:>8g} {k:>8} {median:>10.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tool": "torch_topk_baseline.py", "torch": torch.__version__,
                       "threads": args.threads, "iters": args.iters, "results": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
