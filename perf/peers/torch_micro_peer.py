#!/usr/bin/env python3
"""The MiCRO step as the papers' code runs it, in PyTorch: a peer of sparse_allreduce_perf -g 1.

  torch_micro_peer.py [-b COUNT] [-D 0.001,0.01] [-n 20] [-w 10] [-L 1000] [-c 1] [-s SEED]
                      [--device cuda|cpu] [-J FILE]
  torchrun --nproc_per_node N torch_micro_peer.py ...      N ranks (nccl on CUDA, gloo on CPU)

One rank needs no launcher and runs no collective (the reference skips them at one worker).

Each call is kljp/micro's MicroReducer.reduce (cnn-lstm/gradient_reducers.py of that
repository) on one flat float32 gradient:
  1. acc = grad + residual (the harness's send_buffer = grad + memory);
  2. the threshold, from the previous call's k' (k = int(density * count)): delta_0 = 1/(2 sqrt(k)),
     then with exam = k'/k: x1.005 above 1.1, x1.00125 above 0.909 (the reference's in-band
     branch), else x0.995;
  3. rank r takes partition (t mod n + r) mod n of n equal contiguous ranges (the first count % n
     one longer) and selects idx = nonzero(|acc[part]| >= delta) + start; none selected: the one
     index start + t mod size;
  4. n > 1: all_gather of the counts (int64), all_gather of idx padded to max k_i with
     uninitialised entries, concatenation of the k_i valid ones (k' = sum k_i, disjoint), values
     = acc[flat_idx] all-reduced (sum);
  5. out = zeros, out[flat_idx] = values / n; the residual is acc with acc[flat_idx] = 0.
Bytes per rank and call (as the library counts them, docs/algorithms/micro.md): sent 8 + 8 max_k
+ 4 k' 2(n-1)/n, received 8 (n-1) + 8 max_k (n-1) + 4 k' 2(n-1)/n; nothing with one rank.

Where this differs from the reference, each time in the reference's favour or neutral: the
gradient is one tensor, so its list_to_tensor flattening copies are left out; the counts are read
to the host once (the reference compares 0-d CUDA tensors one by one); k' is the number of indices
selected also with one rank (the reference leaves it 0 there, so its threshold falls 0.5 % every
call and k' grows without bound).

Inputs: a fresh Laplace gradient per call and rank (torch generator seeded with -s and the rank),
scale b = 1/(2 sqrt(k) ln(1/d)) as sparse_allreduce_perf's (perf/sparse/inputs.cc), so that
delta_0 selects about k of the first gradient. Generated before the call and not timed.
Timing: CUDA events around each call (perf_counter on --device cpu), after a barrier with several
ranks; warm-up of at least -w calls, then until k'/k is within the reference's band
[0.909, 1.1] (its band rule moves delta 0.5 % per call: hundreds of calls at d = 0.001), at most
-L; the median of -n timed calls, the slowest rank's. -c 1: one more call checked against a dense
recomputation (residual bit for bit; output bit for bit with one rank, with several to the
rounding of a sum in another order); a wrong element exits 1. --device cuda without a usable GPU
(or no torch at all): the one line "SKIP: ..." and exit 77, as the perf binaries.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

SKIP_EXIT_CODE = 77

try:
    import torch
    import torch.distributed as dist
except ImportError as error:  # the GPU machine's python3 may lack it: a skip, not a failure
    print(f"SKIP: torch is not importable ({error})")
    sys.exit(SKIP_EXIT_CODE)

BAND_HIGH, BAND_LOW = 1.1, 0.909  # the reference's exam bounds
STEP_UP, STEP_IN_BAND, STEP_DOWN = 1.005, 1.00125, 0.995


def parse_count(text):
    """A count with the perf binaries' binary suffixes K, M, G (26000000 is exact)."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    value = int(text[:-1] if scale > 1 else text) * scale
    if value < 1:
        raise argparse.ArgumentTypeError(f"count {text} is not positive")
    return value


def parse_densities(text):
    densities = [float(d) for d in text.split(",")]
    if not densities or any(not 0 < d <= 1 for d in densities):
        raise argparse.ArgumentTypeError(f"densities {text}: each in (0, 1]")
    return densities


def parse():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", dest="count", type=parse_count, default=26_000_000,
                   help="float32 elements of the gradient [26000000]")
    p.add_argument("-D", dest="densities", type=parse_densities, default=[0.001, 0.01],
                   help="target densities, comma separated [0.001,0.01]")
    p.add_argument("-n", dest="iters", type=int, default=20, help="timed calls [20]")
    p.add_argument("-w", dest="warmup", type=int, default=10, help="fewest warm-up calls [10]")
    p.add_argument("-L", dest="warmup_limit", type=int, default=1000,
                   help="most warm-up calls, settled or not [1000]")
    p.add_argument("-c", dest="check", type=int, choices=(0, 1), default=1,
                   help="1: check one more call against a dense recomputation [1]")
    p.add_argument("-s", dest="seed", type=int, default=12345, help="input seed [12345]")
    p.add_argument("-J", dest="json", default="", help="also write the rows as JSON to FILE")
    p.add_argument("-t", dest="threads", type=int, default=0,
                   help="torch CPU threads (--device cpu) [torch's default]")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="[cuda]")
    a = p.parse_args()
    if a.iters < 1 or a.warmup < 0 or a.warmup_limit < a.warmup:
        p.error("need -n >= 1 and 0 <= -w <= -L")
    return a


class Ranks:
    """This process's place among the ranks; the collectives are skipped with one rank."""

    def __init__(self, device_kind):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if device_kind == "cuda":
            local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
            if local_world > torch.cuda.device_count():  # NCCL refuses two ranks on one GPU
                sys.exit(f"torch_micro_peer: {local_world} ranks on this machine, "
                         f"{torch.cuda.device_count()} GPU(s): NCCL needs one GPU per rank")
            self.device = torch.device("cuda", local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group("nccl" if device_kind == "cuda" else "gloo")
            self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def barrier(self):
        if self.world > 1 and self.device.type == "cuda":
            dist.barrier(device_ids=[self.device.index])
        elif self.world > 1:
            dist.barrier()

    def max(self, value):
        """The largest value over the ranks (a float)."""
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def sum(self, value):
        """The sum of an integer over the ranks."""
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.int64, device=self.device)
        dist.all_reduce(t)
        return int(t.item())

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()


class LaplaceGradients:
    """A fresh float32 Laplace gradient of scale b per call, from a seeded torch generator."""

    def __init__(self, ranks, count, density, seed):
        k = max(1.0, math.floor(density * count))
        self.scale = 1.0 / (2.0 * math.sqrt(k) * max(math.log(1.0 / density), 0.1))
        self.generator = torch.Generator(device=ranks.device)
        self.generator.manual_seed(seed + 1_000_003 * ranks.rank)
        self.buffer = torch.empty(count, dtype=torch.float32, device=ranks.device)

    def next(self):
        # u in [0, 1) -> v = u - 1/2; -ln(1 - 2|v|) is Exp(1), sign(v) a fair sign.
        v = self.buffer.uniform_(generator=self.generator).sub_(0.5)
        magnitude = v.abs().mul_(-2.0).add_(1.0).clamp_(min=2.0 ** -24).log_().mul_(-self.scale)
        return magnitude.mul_(torch.sign(v))


class SeedsMicroStep:
    """MicroReducer.reduce on one flat gradient (module docstring: the steps and differences)."""

    def __init__(self, ranks, count, density):
        self.ranks = ranks
        n = ranks.world
        quotient, remainder = divmod(count, n)
        self.part_size = [quotient + 1 if i < remainder else quotient for i in range(n)]
        self.part_start = [sum(self.part_size[:i]) for i in range(n)]
        self.k = max(1, int(density * count))  # max: the reference divides by k
        self.threshold = 1.0 / (2.0 * math.sqrt(self.k))
        self.k_prev = 0
        self.iteration = -1
        self.residual = torch.zeros(count, dtype=torch.float32, device=ranks.device)

    def partition(self):
        n = self.ranks.world
        part = (self.iteration % n + self.ranks.rank) % n
        return self.part_start[part], self.part_start[part] + self.part_size[part]

    def __call__(self, grad):
        """One call: returns (out, k', max_k); self.residual is the new residual."""
        n = self.ranks.world
        self.iteration += 1
        start, end = self.partition()
        if self.iteration > 0:
            exam = self.k_prev / self.k
            self.threshold *= STEP_UP if exam > BAND_HIGH else \
                STEP_IN_BAND if exam > BAND_LOW else STEP_DOWN
        acc = grad + self.residual
        indexes = (acc[start:end].abs() >= self.threshold).nonzero().squeeze(1)
        if indexes.numel() == 0:
            indexes = torch.full((1,), start + self.iteration % (end - start), dtype=torch.int64,
                                 device=acc.device)
        else:
            indexes += start
        if n > 1:
            local_k = torch.tensor([indexes.numel()], dtype=torch.int64, device=acc.device)
            ks = [torch.empty_like(local_k) for _ in range(n)]
            dist.all_gather(ks, local_k)
            ks = torch.cat(ks).tolist()
            max_k = max(ks)
            if indexes.numel() != max_k:
                pad = torch.empty(max_k - indexes.numel(), dtype=indexes.dtype, device=acc.device)
                indexes = torch.cat((indexes, pad))
            index_list = [torch.empty_like(indexes) for _ in range(n)]
            dist.all_gather(index_list, indexes)
            flat_indexes = torch.cat([il[:k] for il, k in zip(index_list, ks) if k > 0])
            values = acc[flat_indexes].contiguous()
            dist.all_reduce(values, op=dist.ReduceOp.SUM)
        else:
            flat_indexes, max_k = indexes, indexes.numel()
            values = acc[flat_indexes].contiguous()
        self.k_prev = flat_indexes.numel()
        out = torch.zeros_like(acc)
        out[flat_indexes] = values / n
        acc[flat_indexes] = 0.0
        self.residual = acc
        return out, self.k_prev, max_k


def bytes_moved(n, k_total, max_k):
    """(sent, received) per rank: count and padded index all-gathers, value all-reduce."""
    if n == 1:
        return 0, 0
    values = 4 * k_total * 2 * (n - 1) // n
    return 8 + 8 * max_k + values, 8 * (n - 1) + 8 * max_k * (n - 1) + values


def check_call(step, grad):
    """One more call against a dense recomputation; returns the wrong elements over all ranks."""
    ranks, n = step.ranks, step.ranks.world
    expected_acc = grad + step.residual
    out, k_total, _ = step(grad)
    start, end = step.partition()
    mine = torch.zeros_like(expected_acc, dtype=torch.int32)
    mine[start:end] = (expected_acc[start:end].abs() >= step.threshold).to(torch.int32)
    if int(mine.sum()) == 0:
        mine[start + step.iteration % (end - start)] = 1
    if n > 1:
        dist.all_reduce(mine)  # partitions are disjoint: the global selection, 0 or 1
    selected = mine > 0
    contribution = torch.where(selected, expected_acc, torch.zeros_like(expected_acc))
    if n > 1:
        dist.all_reduce(contribution)
    expected_out = contribution / n
    wrong = int((step.residual != torch.where(selected, torch.zeros_like(expected_acc),
                                              expected_acc)).sum())
    if n == 1:
        wrong += int((out != expected_out).sum())
    else:
        # The sparse and the dense all-reduce may add in different orders; each sum of n
        # addends is within (n - 1) n 2^-24 of the largest one of the exact sum, so the two
        # means differ by at most 2 (n - 1) 2^-24 of it (cancellation makes that large against
        # the mean itself).
        largest = ranks.max(float(expected_acc.abs().max()))
        tolerance = n * 2.0 ** -23 * largest
        wrong += int((~torch.isclose(out, expected_out, rtol=1e-5, atol=tolerance)).sum())
    wrong += int(k_total != int(selected.sum()))
    return ranks.sum(wrong)


def timed_call(ranks, step, gradients, cuda):
    """One call on a fresh gradient: (microseconds, k', max_k)."""
    grad = gradients.next()
    if cuda:
        torch.cuda.synchronize()  # the gradient is ready: the events time the call alone
    ranks.barrier()
    if cuda:
        begin, finish = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        _, k_total, max_k = step(grad)
        finish.record()
        finish.synchronize()
        return begin.elapsed_time(finish) * 1e3, k_total, max_k
    started = time.perf_counter()
    _, k_total, max_k = step(grad)
    return (time.perf_counter() - started) * 1e6, k_total, max_k


def run_density(a, ranks, density):
    cuda = ranks.device.type == "cuda"
    gradients = LaplaceGradients(ranks, a.count, density, a.seed)
    step = SeedsMicroStep(ranks, a.count, density)
    warmup = 0
    while warmup < a.warmup_limit:
        _, k_total, _ = timed_call(ranks, step, gradients, cuda)
        warmup += 1
        # k' is the same on every rank (several ranks: the sum of the gathered counts)
        if warmup >= a.warmup and BAND_LOW <= k_total / step.k <= BAND_HIGH:
            break
    times, totals, inflations, sent, received = [], [], [], [], []
    for _ in range(a.iters):
        us, k_total, max_k = timed_call(ranks, step, gradients, cuda)
        times.append(us)
        totals.append(k_total)
        inflations.append(ranks.world * max_k / k_total)
        s, r = bytes_moved(ranks.world, k_total, max_k)
        sent.append(s)
        received.append(r)
    wrong = check_call(step, gradients.next()) if a.check else None
    actual = statistics.fmean(totals) / a.count
    return {"algorithm": "torch_micro", "count": a.count, "type": "float",
            "target_density": density, "actual_density": actual,
            "density_ratio": actual / density, "warmup_calls": warmup,
            "time_us": ranks.max(statistics.median(times)),
            "bytes_sent": statistics.fmean(sent), "bytes_received": statistics.fmean(received),
            "gather_inflation": statistics.fmean(inflations), "threshold": step.threshold,
            "wrong": wrong if wrong is not None else "N/A"}


def device_name(ranks):
    if ranks.device.type == "cuda":
        return torch.cuda.get_device_name(ranks.device)
    return f"cpu ({torch.get_num_threads()} threads)"


def main():
    a = parse()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("SKIP: no usable CUDA device (torch.cuda.is_available() is False)")
        return SKIP_EXIT_CODE
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    ranks = Ranks(a.device)
    if a.count < ranks.world:
        sys.exit(f"torch_micro_peer: -b {a.count} gives a rank an empty partition")
    header = (f"torch_micro_peer --device {a.device} on {device_name(ranks)}: torch "
              f"{torch.__version__}, {ranks.world} rank(s), the seeds' MiCRO step "
              f"(kljp/micro MicroReducer), float32, median of {a.iters} calls")
    if ranks.rank == 0:
        print(f"# {header}")
        print(f"# {'count':>10} {'density':>8} {'actual':>9} {'warmup':>6} {'time(us)':>10} "
              f"{'sent(B)':>11} {'recv(B)':>11} {'f(t)':>5} {'#wrong':>6}")
    rows = []
    for density in a.densities:
        row = run_density(a, ranks, density)
        rows.append(row)
        if ranks.rank == 0:
            print(f"  {row['count']:>10} {density:8.4f} {row['actual_density']:9.5f} "
                  f"{row['warmup_calls']:>6} {row['time_us']:10.1f} {row['bytes_sent']:11.0f} "
                  f"{row['bytes_received']:11.0f} {row['gather_inflation']:5.2f} "
                  f"{row['wrong']:>6}", flush=True)
    if ranks.rank == 0 and a.json:
        options = {"count": a.count, "densities": a.densities, "iters": a.iters,
                   "warmup": a.warmup, "warmup_limit": a.warmup_limit, "check": a.check,
                   "seed": a.seed, "device": a.device}
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"tool": "torch_micro_peer", "peer": "torch", "header": header,
                       "torch": torch.__version__, "device": device_name(ranks),
                       "ranks": ranks.world, "options": options, "results": rows}, f, indent=1)
            f.write("\n")
    ranks.close()
    failed = any(isinstance(r["wrong"], int) and r["wrong"] > 0 for r in rows)
    if failed and ranks.rank == 0:
        print("torch_micro_peer: the check found wrong elements", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
