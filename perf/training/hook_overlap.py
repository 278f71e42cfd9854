#!/usr/bin/env python3
"""Does the asynchronous DDP hook hide the exchange behind the backward pass? One process per rank
(scripts/cluster/hook_overlap_bench.sh starts one per emulated node):

  hook_overlap.py --rank R --world N --master ADDR [--port P] [--algorithm micro]
                  [--density 0.01] [--width 768] [--depth 6] [--batch 64] [--bucket-mb 2.5]
                  [--rounds 4] [--steps 8] [--json FILE]

Two DistributedDataParallel copies of one MLP (depth equal hidden layers, one per DDP bucket) (gloo sets DDP up; sparsecoll's communicator, over
the transport SCCL_TRANSPORT names, carries the gradients), one with sparsecoll.torch.hook and one
with sparsecoll.torch.async_hook, train on the same data in interleaved rounds (sync steps, then
async steps, --rounds times), each step after a barrier. A step's time is the slowest rank's
forward + backward + optimizer step. Also measured, with the synchronous hook: the time its
all-reduces take inside the step (the exposed communication) and the rest (the compute). Rank 0 prints the medians and the ratio async / sync, checks that both copies end with bitwise the
same parameters (the two hooks compute the same thing), and writes JSON."""
import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll
import sparsecoll.torch as sparse_torch


def parse():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--port", type=int, default=29581)
    p.add_argument("--algorithm", default="micro")
    p.add_argument("--density", type=float, default=0.01)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--bucket-mb", type=float, default=2.5)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default="")
    return p.parse_args()


def make_model(width, depth):
    """depth hidden layers of width x width: layers of equal size, so that DDP's buckets (one
    layer each at the default bucket size) become ready one after another during backward."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(512, width), torch.nn.ReLU()]
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def timed_hook():
    """The synchronous hook with the time of its calls summed per step (exposed communication);
    DDP wants a function (it reads the hook's __name__)."""
    def timed_sync_hook(state, bucket):
        start = time.perf_counter()
        future = sparse_torch.hook(state, bucket)
        timed_sync_hook.seconds += time.perf_counter() - start
        return future
    timed_sync_hook.seconds = 0.0
    return timed_sync_hook


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (a.master, a.port),
                            rank=a.rank, world_size=a.world)
    comm = sparsecoll.Communicator.from_process_group(timeout_ms=300000)
    runs = {}
    for mode in ("sync", "async"):
        model = make_model(a.width, a.depth)
        ddp = DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
        state = sparse_torch.HookState(comm, algorithm=a.algorithm, density=a.density)
        hook = timed_hook() if mode == "sync" else sparse_torch.async_hook
        ddp.register_comm_hook(state, hook)
        runs[mode] = {"model": model, "ddp": ddp, "state": state, "hook": hook,
                      "optimizer": torch.optim.SGD(ddp.parameters(), lr=0.01),
                      "step": 0, "times": [], "comm": []}
    parameters = sum(p.numel() for p in runs["sync"]["model"].parameters())

    def step(run):
        g = torch.Generator().manual_seed(1000 * run["step"] + a.rank)
        x = torch.randn(a.batch, 512, generator=g)
        y = torch.randint(0, 10, (a.batch,), generator=g)
        dist.barrier()
        if run["hook"] is not sparse_torch.async_hook:
            run["hook"].seconds = 0.0
        start = time.perf_counter()
        run["optimizer"].zero_grad()
        torch.nn.functional.cross_entropy(run["ddp"](x), y).backward()
        run["optimizer"].step()
        run["times"].append(time.perf_counter() - start)
        if run["hook"] is not sparse_torch.async_hook:
            run["comm"].append(run["hook"].seconds)
        run["step"] += 1

    for mode in ("sync", "async"):  # warm-up: buckets built, sparsifiers created
        step(runs[mode])
    for _ in range(a.rounds):
        for mode in ("sync", "async"):
            for _ in range(a.steps):
                step(runs[mode])
    # The slowest rank's time of each step.
    result = {}
    for mode, run in runs.items():
        times = torch.tensor(run["times"][1:], dtype=torch.float64)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        result[mode] = times.tolist()
    exposed = torch.tensor(runs["sync"]["comm"][1:], dtype=torch.float64)
    dist.all_reduce(exposed, op=dist.ReduceOp.MAX)
    same = all(torch.equal(p, q) for p, q in zip(runs["sync"]["model"].parameters(),
                                                   runs["async"]["model"].parameters()))
    same_everywhere = torch.tensor([1 if same else 0])
    dist.all_reduce(same_everywhere, op=dist.ReduceOp.MIN)
    stats = runs["sync"]["state"].traffic.summary()
    buckets = len(runs["sync"]["state"].sparsifiers)
    for run in runs.values():
        run["state"].close()
    if a.rank == 0:
        sync_ms = statistics.median(result["sync"]) * 1e3
        async_ms = statistics.median(result["async"]) * 1e3
        comm_ms = statistics.median(exposed.tolist()) * 1e3
        row = {"algorithm": a.algorithm, "density": a.density, "world": a.world,
               "parameters": parameters, "width": a.width, "depth": a.depth, "batch": a.batch, "bucket_mb": a.bucket_mb,
               "buckets": buckets,
               "steps_per_mode": len(result["sync"]),
               "sync_step_ms_median": sync_ms, "async_step_ms_median": async_ms,
               "sync_step_ms": [t * 1e3 for t in result["sync"]],
               "async_step_ms": [t * 1e3 for t in result["async"]],
               "sync_exposed_comm_ms_median": comm_ms,
               "sync_compute_ms_median": sync_ms - comm_ms,
               "async_over_sync": async_ms / sync_ms,
               "bitwise_equal_parameters": bool(same_everywhere.item()),
               "traffic": stats}
        print("%s d=%g, %d ranks, %d parameters in %d buckets: sync %.1f ms (exposed comm %.1f, "
              "rest %.1f), async %.1f ms, async/sync %.2f, parameters equal: %s" %
              (a.algorithm, a.density, a.world, parameters, row["buckets"], sync_ms, comm_ms,
               sync_ms - comm_ms, async_ms, row["async_over_sync"], row["bitwise_equal_parameters"]),
              flush=True)
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(row, f, indent=1)
    dist.destroy_process_group()
    return 0 if bool(same_everywhere.item()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
