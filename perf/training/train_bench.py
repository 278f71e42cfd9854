#!/usr/bin/env python3
"""Wall-clock time to accuracy of DDP training: PyTorch's own all-reduce over gloo against
sparsecoll's hook, one process per rank (scripts/cluster/train_bench.sh starts one per emulated
node; two local processes make the CTest smoke run):

  train_bench.py --rank R --world N --master ADDR [--port P]
                 --mode dense|sparse|sparse_async|sparse_node
                 [--algorithm micro] [--density 0.01] [--model wide_mlp|pixel_embedding]
                 [--epochs 2] [--batch 64] [--lr L] [--eval-every 20] [--target A] [--seed 0]
                 [--max-steps N] [--stop-at-target] [--data DIR] [--json FILE]

Modes: dense is DistributedDataParallel as users run it (its gloo all-reduce, overlapped with
backward by DDP itself); sparse is the same script with sparsecoll.torch.hook, sparse_async with
sparsecoll.torch.async_hook, both with docs/python.md's recommended SGD settings (momentum 0.9 as
the hook's Nesterov momentum correction with its warm-up over the first epoch). Dense uses
torch.optim.SGD(momentum=0.9, nesterov=True) with the same learning rate.

Measured on every rank, reported by rank 0: the wall-clock training time (evaluation excluded),
the step time of every step, test accuracy every --eval-every steps against training time and
steps, the time and step at which the accuracy first reached --target (fixed before the run; with
--stop-at-target the run ends there, as time-to-train benchmarks such as MLPerf do, and --epochs
only bounds it), the
bytes each rank sent per step (sparse: the library's count; dense: a ring all-reduce's 2 (n-1)/n
x 4 bytes x parameters, what gloo's ring sends), and the compute part of a step, measured before
training with a hook that returns the bucket unchanged (no communication; the model is a copy
and is thrown away): the exposed communication is the step time minus it.
"""
import argparse
import gzip
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

MEAN, STD = 0.2860, 0.3530  # of the Fashion-MNIST training images
DATA = "/usr/share/datasets/fashion-mnist"


def parse():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--port", type=int, default=29591)
    # sparse_node: the synchronous hook with "hierarchy": "node" (nodes from SCCL_RANKS_PER_NODE
    # or the host names; scripts/cluster/train_bench.sh --per-node).
    p.add_argument("--mode", choices=("dense", "sparse", "sparse_async", "sparse_node"),
                   required=True)
    p.add_argument("--algorithm", default="micro")
    p.add_argument("--density", type=float, default=0.01)
    p.add_argument("--model", choices=sorted(MODELS), default="wide_mlp")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=None, help="default: the model's (MODEL_DEFAULTS)")
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--target", type=float, default=None,
                   help="default: the model's, fixed before the runs (MODEL_DEFAULTS)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (smoke)")
    p.add_argument("--stop-at-target", action="store_true",
                   help="end the run at the first evaluation that reaches --target (every rank "
                   "sees the same all-reduced accuracy, so all stop at the same step)")
    p.add_argument("--plain-hook", action="store_true",
                   help="sparse modes without the momentum correction (plain SGD, no momentum): "
                   "how much of a sparse step the correction's passes over the bucket cost")
    p.add_argument("--calibration-steps", type=int, default=10)
    p.add_argument("--data", default=DATA)
    p.add_argument("--json", default="")
    a = p.parse_args()
    for key, value in MODEL_DEFAULTS[a.model].items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    return a


def wide_mlp():
    """784 -> 2048 -> 1024 -> 10: 3.7 M parameters, about 7.4 MFLOP per image forward."""
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 2048), torch.nn.ReLU(),
                               torch.nn.Linear(2048, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 10))


class PixelEmbedding(torch.nn.Module):
    """An embedding-heavy model: each image is the bag of its 784 (pixel, intensity level)
    features, averaged through an EmbeddingBag of 784 x 8 rows of 1024, then one linear layer:
    6.4 M parameters for about 0.8 MFLOP per image forward, so that the exchange of its gradient
    outweighs its computation (the communication-bound model)."""

    LEVELS, DIM = 8, 1024

    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(784 * self.LEVELS, self.DIM, mode="mean")
        self.out = torch.nn.Linear(self.DIM, 10)
        self.register_buffer("base", torch.arange(784) * self.LEVELS, persistent=False)

    def forward(self, x):
        value = (x.flatten(1) * STD + MEAN).clamp(0.0, 1.0)
        level = (value * self.LEVELS).long().clamp(max=self.LEVELS - 1)
        return self.out(torch.relu(self.bag(level + self.base)))


MODELS = {"wide_mlp": wide_mlp, "pixel_embedding": PixelEmbedding}
# The learning rate (best of 1, 4, 16, 32, 64 for the embedding model, one process, batch 256, one
# epoch of SGD with Nesterov momentum 0.9: 16 gave 83.0 %) and the target accuracy, fixed before
# the benchmark's runs: about dense's accuracy after one epoch minus half a point.
MODEL_DEFAULTS = {"wide_mlp": {"lr": 0.05, "target": 0.85},
                  "pixel_embedding": {"lr": 16.0, "target": 0.825}}


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(directory, split):
    images = load_idx(os.path.join(directory, "%s-images-idx3-ubyte.gz" % split))
    labels = load_idx(os.path.join(directory, "%s-labels-idx1-ubyte.gz" % split))
    x = (torch.from_numpy(images.astype(np.float32) / 255.0) - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def evaluate(model, x, y, rank, size):
    """Test accuracy, each rank scoring its share; the counts summed over gloo."""
    model.eval()
    correct = torch.zeros(2, dtype=torch.int64)
    with torch.no_grad():
        for start in range(rank * 1000, len(x), size * 1000):
            logits = model(x[start:start + 1000])
            correct[0] += int((logits.argmax(1) == y[start:start + 1000]).sum())
            correct[1] += len(logits)
    dist.all_reduce(correct)
    model.train()
    return float(correct[0]) / float(correct[1])


def no_communication_hook(state, bucket):
    """Compute only: the bucket comes back unchanged, nothing is exchanged."""
    del state
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def compute_step_seconds(a, x_train, y_train):
    """The median step time without communication, on a copy of the model."""
    torch.manual_seed(a.seed)
    model = DistributedDataParallel(MODELS[a.model]())
    model.register_comm_hook(None, no_communication_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr)
    times = []
    for step in range(a.calibration_steps + 2):
        batch = torch.arange(step * a.batch, (step + 1) * a.batch) % len(x_train)
        start = time.perf_counter()
        optimizer.zero_grad()
        F.cross_entropy(model(x_train[batch]), y_train[batch]).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:])


def main():
    a = parse()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (a.master, a.port),
                            rank=a.rank, world_size=a.world)
    x_train, y_train = load_split(a.data, "train")
    x_test, y_test = load_split(a.data, "t10k")
    dist.barrier()  # every rank loaded: the calibration runs while the others compute too
    compute_s = compute_step_seconds(a, x_train, y_train)

    torch.manual_seed(a.seed)
    model = MODELS[a.model]()
    parameters = sum(p.numel() for p in model.parameters())
    steps_per_epoch = len(x_train) // a.world // a.batch
    ddp = DistributedDataParallel(model)
    state = comm = None
    if a.mode == "dense":
        optimizer = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9, nesterov=True)
    else:
        import sparsecoll
        import sparsecoll.torch
        comm = sparsecoll.Communicator.from_process_group(timeout_ms=600000)
        # docs/python.md's recommendation for SGD with momentum: the momentum warm-up goes with
        # the density warm-up (without it, 3-4 of 10 seeds of the Fashion-MNIST example diverged).
        correction = {} if a.plain_hook else dict(
            momentum=0.9, nesterov=True, momentum_warmup={"start": 0.5, "steps": steps_per_epoch},
            density_warmup={"start": 0.1, "calls": 150})
        if a.mode == "sparse_node":
            correction["hierarchy"] = "node"
        state = sparsecoll.torch.HookState(comm, algorithm=a.algorithm, density=a.density,
                                           **correction)
        hook = sparsecoll.torch.async_hook if a.mode == "sparse_async" else sparsecoll.torch.hook
        ddp.register_comm_hook(state, hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=a.lr)

    generator = torch.Generator().manual_seed(a.seed)
    step_times, curve = [], []
    trained_s, step_count, reached = 0.0, 0, None
    dist.barrier()
    for epoch in range(a.epochs):
        order = torch.randperm(len(x_train), generator=generator)  # the same on every rank
        mine = order[a.rank::a.world]
        for step in range(steps_per_epoch):
            batch = mine[step * a.batch:(step + 1) * a.batch]
            start = time.perf_counter()
            optimizer.zero_grad()
            F.cross_entropy(ddp(x_train[batch]), y_train[batch]).backward()
            optimizer.step()
            elapsed = time.perf_counter() - start
            step_times.append(elapsed)
            trained_s += elapsed
            step_count += 1
            last = step_count == a.max_steps or (epoch == a.epochs - 1 and
                                                 step == steps_per_epoch - 1)
            if step_count % a.eval_every == 0 or last:
                accuracy = evaluate(model, x_test, y_test, a.rank, a.world)
                curve.append({"step": step_count, "seconds": trained_s, "accuracy": accuracy})
                if reached is None and accuracy >= a.target:
                    reached = {"step": step_count, "seconds": trained_s}
            if (last and a.max_steps) or (reached and a.stop_at_target):
                break
        if (a.max_steps and step_count >= a.max_steps) or (reached and a.stop_at_target):
            break
    traffic = state.traffic.summary() if state is not None else None
    if state is not None:
        state.close()
        comm.destroy()
    # Every rank's training time; the run's is the slowest rank's.
    times = torch.tensor([trained_s, compute_s])
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    if a.rank == 0:
        dense_bytes = 2.0 * (a.world - 1) / a.world * 4 * parameters
        sent = traffic["bytes_sent_per_step"] if traffic else dense_bytes
        median_ms = statistics.median(step_times) * 1e3
        ordered = sorted(step_times)
        row = {"mode": a.mode + ("_plain" if a.plain_hook and a.mode != "dense" else ""), "algorithm": a.algorithm if a.mode != "dense" else "dense",
               "density": a.density if a.mode != "dense" else 1.0, "model": a.model,
               "parameters": parameters, "world": a.world, "batch": a.batch, "lr": a.lr,
               "epochs": a.epochs, "stop_at_target": a.stop_at_target, "steps": step_count,
               "seed": a.seed, "target": a.target,
               "train_seconds": float(times[0]), "step_ms_median": median_ms,
               "step_ms_p10": ordered[len(ordered) // 10] * 1e3,
               "step_ms_p90": ordered[(9 * len(ordered)) // 10] * 1e3,
               "compute_ms": float(times[1]) * 1e3,
               "exposed_comm_ms": max(0.0, median_ms - float(times[1]) * 1e3),
               "bytes_sent_per_step": sent, "dense_bytes_per_step": dense_bytes,
               "final_accuracy": curve[-1]["accuracy"] if curve else None,
               "time_to_target_s": reached["seconds"] if reached else None,
               "steps_to_target": reached["step"] if reached else None,
               "curve": curve, "step_ms": [t * 1e3 for t in step_times]}
        print("%s %s d=%g: %d steps in %.1f s, step %.1f ms (compute %.1f), %.0f bytes/step, "
              "accuracy %.4f, target %.3f reached %s" %
              (a.mode, row["algorithm"], row["density"], step_count, row["train_seconds"],
               median_ms, row["compute_ms"], sent, row["final_accuracy"] or 0, a.target,
               "at %.1f s (step %d)" % (reached["seconds"], reached["step"]) if reached else
               "never"), flush=True)
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(row, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
