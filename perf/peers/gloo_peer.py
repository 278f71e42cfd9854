#!/usr/bin/env python3
"""torch.distributed (gloo) as a peer of sparse_allreduce_perf, on the same links.

One process per rank (start them yourself, e.g. one per emulated node):

  gloo_peer.py --rank R --world N --master ADDR [--port P] --count C --densities 0.01,0.001
               [--iters 5] [--warmup 2] [--json FILE]

For each density it times, on a float32 gradient of C Laplace values (fresh per rank, seeded):
  gloo_dense   dist.all_reduce of the dense tensor (sum);
  gloo_sparse  the sparse all-reduce a PyTorch user would write for top-k sparsification: each
               rank keeps its exact top-k (k = density * C) as a COO tensor and all-reduces it
               (gloo's sparse all-reduce gathers every rank's indices and values), then coalesces.
Times are the median over --iters of the slowest rank's wall time, after a barrier, as
sparse_allreduce_perf measures. Rank 0 prints a table and writes JSON rows."""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--port", type=int, default=29577)
    p.add_argument("--count", type=int, default=25_000_000)
    p.add_argument("--densities", default="0.01,0.001")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", default="")
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args()


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(iters):
        dist.barrier()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        worst = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        samples.append(worst.item() * 1e6)
    return statistics.median(samples)


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = a.master, str(a.port)
    dist.init_process_group("gloo", rank=a.rank, world_size=a.world)
    generator = torch.Generator().manual_seed(12345 + a.rank)
    u = torch.rand(a.count, generator=generator, dtype=torch.float32).clamp_(min=1e-7)
    grad = -torch.log(u) * torch.where(torch.rand(a.count, generator=generator) < 0.5, -1.0, 1.0)
    rows = []
    dense = grad.clone()
    dense_us = timed(lambda: dist.all_reduce(dense.copy_(grad)), a.iters, a.warmup)
    rows.append({"algorithm": "gloo_dense", "count": a.count, "target_density": 1.0,
                 "time_us": dense_us, "bytes_sent": 2 * (a.world - 1) * a.count * 4 // a.world})
    for density in [float(d) for d in a.densities.split(",")]:
        k = max(1, int(density * a.count))

        def sparse_allreduce():
            _, idx = torch.topk(grad.abs(), k, sorted=False)
            sparse = torch.sparse_coo_tensor(idx.unsqueeze(0), grad[idx], (a.count,))
            dist.all_reduce(sparse)
            return sparse.coalesce()

        sparse_us = timed(sparse_allreduce, a.iters, a.warmup)
        rows.append({"algorithm": "gloo_sparse", "count": a.count, "target_density": density,
                     "time_us": sparse_us,
                     # every rank's int64 indices and float32 values reach every other rank
                     "bytes_sent": (a.world - 1) * k * 12})
    if a.rank == 0:
        print(f"# gloo_peer: torch {torch.__version__}, {a.world} ranks, count {a.count}")
        print(f"# {'algorithm':>12} {'density':>8} {'time(us)':>12} {'speedup':>8}")
        for row in rows:
            row["speedup_vs_gloo_dense"] = dense_us / row["time_us"]
            print(f"  {row['algorithm']:>12} {row['target_density']:8.4f} {row['time_us']:12.1f} "
                  f"{row['speedup_vs_gloo_dense']:8.2f}")
        if a.json:
            with open(a.json, "w") as out:
                json.dump({"peer": "gloo", "torch": torch.__version__, "ranks": a.world,
                           "rows": rows}, out, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
