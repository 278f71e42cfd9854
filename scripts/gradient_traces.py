#!/usr/bin/python3
"""Real gradient traces for sparsecoll's sparse all-reduce tests and benchmarks.

Trains a small CNN on Fashion-MNIST with W simulated data-parallel workers and, at chosen
iterations, writes each worker's local gradient to a trace file. Each global batch of
W * batch samples is split into W contiguous shards; worker w runs forward/backward on shard w
alone, and the optimizer steps on the mean of the W worker gradients (what a dense all-reduce
followed by division by W would give). Iteration i (1-based) is the i-th optimizer step: its
gradients are computed at the parameters left by the i-1 steps before it, so iteration 1 is the
gradient at initialization.

Model (37,610 float32 parameters):
    conv(1->8, 5x5) -> relu -> maxpool 2 -> conv(8->16, 5x5) -> relu -> maxpool 2
    -> flatten (16*4*4 = 256) -> fc(256->128) -> relu -> fc(128->10)
Data: the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/, gzipped
IDX, big-endian), parsed with gzip + struct + numpy; nothing is downloaded. Pixels are scaled to
[0, 1] and normalized with the training-set mean and standard deviation.
Determinism: torch.manual_seed(seed) for the initial weights, a numpy RandomState(seed)
permutation of the training set per epoch, torch.use_deterministic_algorithms(True), and a fixed
intra-op thread count (--threads, default 1); the same command writes the same bytes on the same
torch build.

Trace file format (all integers little-endian; 48-byte header, then the payload):
    offset  size  field
         0     8  magic "SCCLTRC1"
         8     4  uint32 format version (1)
        12     4  uint32 dtype, numbered as scclDataType_t (7 = scclFloat32)
        16     8  uint64 count, number of values in the payload
        24     4  uint32 iteration (1-based optimizer step)
        28     4  uint32 worker (0-based)
        32     4  uint32 workers (W)
        36     4  uint32 reserved, 0
        40     8  uint64 FNV-1a 64 checksum of the payload bytes
        48  4*count  float32 values: all of model.parameters() flattened and concatenated in
                     that order (conv1.weight, conv1.bias, conv2.weight, ..., fc2.bias)
File names: {prefix}_it{iteration:05d}_w{worker}.sccltrace (prefix default "fmnist_cnn").
The C++ reader is tests/support/gradient_trace.h; docs/gradient_traces.md describes both.

Usage:
    /usr/bin/python3 scripts/gradient_traces.py --out tests/data/traces --iterations 1,100,1400
    /usr/bin/python3 scripts/gradient_traces.py --stats tests/data/traces   # Markdown table
(/usr/bin/python3: Debian's python3-torch; the python3 first on PATH may have no torch.)
"""

import argparse
import gzip
import math
import os
import struct
import sys
import time

import numpy as np

MAGIC = b"SCCLTRC1"
FORMAT_VERSION = 1
DTYPE_FLOAT32 = 7  # scclFloat32 in scclDataType_t
HEADER = struct.Struct("<8sIIQIIIIQ")  # 48 bytes, see the module docstring
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
TOP_K_DENSITY = 0.01  # k = max(1, floor(0.01 * count)) for the threshold columns of --stats


def fnv1a64(data):
    """FNV-1a 64-bit hash of a bytes-like object."""
    h = FNV_OFFSET
    for byte in bytes(data):
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def read_idx_images(path):
    """Reads a gzipped IDX image file (magic 0x803) into a uint8 array [n, rows, cols]."""
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 0x00000803:
            raise ValueError(f"{path}: bad IDX image magic {magic:#x}")
        pixels = np.frombuffer(f.read(), dtype=np.uint8)
    if pixels.size != n * rows * cols:
        raise ValueError(f"{path}: {pixels.size} pixels, header says {n}x{rows}x{cols}")
    return pixels.reshape(n, rows, cols)


def read_idx_labels(path):
    """Reads a gzipped IDX label file (magic 0x801) into a uint8 array [n]."""
    with gzip.open(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic != 0x00000801:
            raise ValueError(f"{path}: bad IDX label magic {magic:#x}")
        labels = np.frombuffer(f.read(), dtype=np.uint8)
    if labels.size != n:
        raise ValueError(f"{path}: {labels.size} labels, header says {n}")
    return labels


def load_fashion_mnist(data_dir):
    """Returns (train_x, train_y, test_x, test_y) as normalized float32 / int64 numpy arrays."""

    def part(prefix):
        images = read_idx_images(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
        labels = read_idx_labels(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
        if len(images) != len(labels):
            raise ValueError(f"{prefix}: {len(images)} images but {len(labels)} labels")
        return images.astype(np.float32) / 255.0, labels.astype(np.int64)

    train_x, train_y = part("train")
    test_x, test_y = part("t10k")
    mean, std = float(train_x.mean()), float(train_x.std())
    train_x = ((train_x - mean) / std)[:, None, :, :]
    test_x = ((test_x - mean) / std)[:, None, :, :]
    return train_x, train_y, test_x, test_y


def build_model(torch):
    """The traced CNN; see the module docstring for its layers and parameter count."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )


def flat_gradient(model):
    """All parameter gradients flattened and concatenated in model.parameters() order."""
    return np.concatenate([p.grad.detach().reshape(-1).numpy() for p in model.parameters()])


def write_trace(path, values, iteration, worker, workers):
    """Writes one trace file (format in the module docstring)."""
    payload = np.ascontiguousarray(values, dtype="<f4").tobytes()
    header = HEADER.pack(MAGIC, FORMAT_VERSION, DTYPE_FLOAT32, len(values), iteration, worker,
                         workers, 0, fnv1a64(payload))
    with open(path, "wb") as f:
        f.write(header)
        f.write(payload)


def read_trace(path):
    """Reads and validates one trace file; returns (header dict, float32 array)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < HEADER.size:
        raise ValueError(f"{path}: {len(blob)} bytes, shorter than the {HEADER.size}-byte header")
    magic, version, dtype, count, iteration, worker, workers, reserved, checksum = \
        HEADER.unpack_from(blob)
    if magic != MAGIC or version != FORMAT_VERSION or dtype != DTYPE_FLOAT32 or reserved != 0:
        raise ValueError(f"{path}: not a version-1 float32 sparsecoll trace")
    if worker >= workers or len(blob) != HEADER.size + 4 * count:
        raise ValueError(f"{path}: inconsistent header (worker/workers or count vs file size)")
    payload = blob[HEADER.size:]
    if fnv1a64(payload) != checksum:
        raise ValueError(f"{path}: payload checksum mismatch")
    header = {"iteration": iteration, "worker": worker, "workers": workers, "count": count}
    return header, np.frombuffer(payload, dtype="<f4")


def evaluate(torch, model, x, y, batch=1000):
    """Top-1 accuracy of model on (x, y)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(x), batch):
            logits = model(torch.from_numpy(x[start:start + batch]))
            correct += int((logits.argmax(1).numpy() == y[start:start + batch]).sum())
    model.train()
    return correct / len(x)


def train(args):
    """Trains with simulated workers, writing traces at args.iterations; prints accuracy."""
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    train_x, train_y, test_x, test_y = load_fashion_mnist(args.data)
    model = build_model(torch)
    count = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()

    global_batch = args.workers * args.batch
    steps_per_epoch = len(train_x) // global_batch  # the last partial batch is dropped
    if steps_per_epoch == 0:
        raise SystemExit(f"global batch {global_batch} exceeds the {len(train_x)} training images")
    steps = args.steps if args.steps else args.epochs * steps_per_epoch
    wanted = sorted(set(args.iterations))
    if wanted and wanted[-1] > steps:
        raise SystemExit(f"iteration {wanted[-1]} is beyond the last step ({steps})")
    os.makedirs(args.out, exist_ok=True)
    print(f"model: {count} parameters; {args.workers} workers x batch {args.batch}; "
          f"{steps} steps ({steps_per_epoch} per epoch); traces at {wanted} -> {args.out}")

    rng = np.random.RandomState(args.seed)
    order = None
    started = time.time()
    for step in range(steps):
        iteration = step + 1
        position = step % steps_per_epoch
        if position == 0:
            order = rng.permutation(len(train_x))
        batch_ids = order[position * global_batch:(position + 1) * global_batch]
        grads = []
        losses = []
        for worker in range(args.workers):
            ids = batch_ids[worker * args.batch:(worker + 1) * args.batch]
            model.zero_grad(set_to_none=True)
            loss = loss_fn(model(torch.from_numpy(train_x[ids])), torch.from_numpy(train_y[ids]))
            loss.backward()
            losses.append(float(loss))
            grads.append([p.grad.detach().clone() for p in model.parameters()])
            if iteration in wanted:
                path = os.path.join(args.out,
                                    f"{args.prefix}_it{iteration:05d}_w{worker}.sccltrace")
                write_trace(path, flat_gradient(model), iteration, worker, args.workers)
        for index, p in enumerate(model.parameters()):
            p.grad = torch.stack([g[index] for g in grads]).mean(0)
        optimizer.step()
        if iteration in wanted or iteration % args.log_every == 0 or iteration == steps:
            print(f"iteration {iteration:5d}  loss {sum(losses) / len(losses):.4f}  "
                  f"({time.time() - started:.1f} s)", flush=True)

    accuracy = evaluate(torch, model, test_x, test_y)
    print(f"test accuracy after {steps} iterations: {100.0 * accuracy:.2f}% "
          f"({len(test_x)} images)")


def stats_table(directory):
    """Prints a Markdown table of per-trace statistics for every *.sccltrace in directory.

    k = max(1, floor(TOP_K_DENSITY * count)) as src/estimators (1%). "hard threshold" is the
    reference's fixed threshold 1/(2 sqrt(k)); "density at or above it" is the fraction of
    entries with |g| >= it, what the hard-threshold algorithm would select, against the 1% a
    top-k wants. "exact 1% threshold" is the k-th largest |g| of that trace.
    """
    names = sorted(n for n in os.listdir(directory) if n.endswith(".sccltrace"))
    if not names:
        raise SystemExit(f"no .sccltrace files in {directory}")
    print("| trace | iteration | worker | count | L2 norm | max abs | hard threshold | "
          "density at or above it | exact 1% threshold |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        header, values = read_trace(os.path.join(directory, name))
        magnitudes = np.abs(values.astype(np.float64))
        count = header["count"]
        k = max(1, int(math.floor(TOP_K_DENSITY * count)))
        threshold = 1.0 / (2.0 * math.sqrt(k))
        above = float((magnitudes >= threshold).mean())
        kth_largest = float(np.sort(magnitudes)[count - k])
        print(f"| {name} | {header['iteration']} | {header['worker']} | {count} | "
              f"{math.sqrt(float((magnitudes ** 2).sum())):.4g} | {magnitudes.max():.4g} | "
              f"{threshold:.4g} | {above:.3%} | {kth_largest:.4g} |")


def parse_iterations(text):
    """'1,100,1000' -> [1, 100, 1000]; every entry must be a positive integer."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}")
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("iterations are 1-based")
    return values


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="traces", help="output directory (default: traces)")
    parser.add_argument("--workers", type=int, default=4, help="simulated workers (default 4)")
    parser.add_argument("--batch", type=int, default=32, help="batch per worker (default 32)")
    parser.add_argument("--iterations", type=parse_iterations, default=[1, 100, 1400],
                        help="comma-separated 1-based iterations to trace (default 1,100,1400)")
    parser.add_argument("--epochs", type=int, default=3,
                        help="epochs to train when --steps is not given (default 3)")
    parser.add_argument("--steps", type=int, default=0,
                        help="optimizer steps to train (overrides --epochs)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--lr", type=float, default=0.02, help="learning rate (default 0.02)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--data", default=DEFAULT_DATA_DIR, help="Fashion-MNIST IDX directory")
    parser.add_argument("--prefix", default="fmnist_cnn", help="trace file name prefix")
    parser.add_argument("--log-every", type=int, default=200, help="loss print interval")
    parser.add_argument("--stats", metavar="DIR",
                        help="print a Markdown statistics table of DIR's traces and exit")
    args = parser.parse_args(argv)
    if args.stats:
        stats_table(args.stats)
        return 0
    if args.workers < 1 or args.batch < 1 or args.threads < 1:
        parser.error("--workers, --batch and --threads must be positive")
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
