"""Data-parallel training of a small CNN on Fashion-MNIST with sparsecoll's DDP hook.

    mpirun -np 4 --oversubscribe /usr/bin/python3 examples/python/train_fashion_mnist.py \
        --algorithm exdyna --density 0.01 --epochs 4

DDP uses the gloo process group for set-up (parameter broadcast, bucket order); the gradients
travel through sparsecoll: the three lines marked "sparsecoll" below are the whole change to an
ordinary DDP script (--momentum-correction only adds momentum=... to the HookState line and
takes it out of the optimizer: DGC's momentum correction, see HookState; --optimizer adam, adamw
or adadelta with --in-hook puts the optimizer's rule in the hook and steps with SGD,
docs/python.md "Adaptive optimizers"). Every rank trains on its own quarter of each epoch's
shuffled training set.
Per epoch rank 0 prints the test accuracy, the density actually sent (distinct entries aggregated
/ gradient size), and the bytes this rank sent per step against a dense ring all-reduce of the same
gradient (2 (n-1)/n x 4 bytes x elements).

Data: the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), or --data.
Launch: mpirun (the mpi transport; every rank must be one MPI job) or, with an inter-process
transport other than mpi selected through SCCL_TRANSPORT, torchrun.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import sparsecoll
import sparsecoll.torch

# Preset names the experiment uses; sidco_exp is the sidco preset with its exponential estimator.
ALGORITHMS = {
    "dense": {"algorithm": "dense"},
    "topk": {"algorithm": "topk"},
    "cltk": {"algorithm": "cltk"},
    "micro": {"algorithm": "micro"},
    "exdyna": {"algorithm": "exdyna"},
    "sidco_exp": {"algorithm": "sidco", "estimator": "sidco_exp"},
    "s2": {"algorithm": "s2"},
}
MEAN, STD = 0.2860, 0.3530  # of the Fashion-MNIST training images


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


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 5)
        self.conv2 = torch.nn.Conv2d(16, 32, 5)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def rank_and_size():
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMIX_RANK", "OMPI_COMM_WORLD_SIZE"), ("RANK", "WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--algorithm", default="exdyna", choices=sorted(ALGORITHMS))
    p.add_argument("--density", type=float, default=0.01)
    p.add_argument("--config", help="extra sparsifier settings as a JSON object (overrides)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--optimizer", default="sgd", choices=("sgd", "adam", "adamw", "adadelta"),
                   help="sgd (with --momentum), adam, adamw (weight decay --weight-decay) or "
                   "adadelta (default sgd)")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: 0.05 sgd, 0.001 adam/adamw, 1.0 adadelta)")
    p.add_argument("--momentum", type=float, default=0.9, help="sgd only")
    p.add_argument("--weight-decay", type=float, default=0.01, help="adamw only")
    p.add_argument("--in-hook", action="store_true",
                   help="adam/adamw/adadelta: the optimizer's per-coordinate rule runs in the hook "
                   "on each rank's dense gradient and the sparse all-reduce carries the update "
                   "(HookState preconditioner); the optimizer becomes SGD")
    p.add_argument("--betas", default="0.9,0.999", help="Adam's (b1, b2) in the optimizer")
    p.add_argument("--hook-betas", help="with --in-hook: the hook's (b1, b2) (default: the "
                   "hook's, 0,0.999)")
    p.add_argument("--lr-step-gamma", type=float, default=1.0,
                   help="multiply the learning rate by this after every epoch (StepLR; 1: off)")
    p.add_argument("--momentum-correction", action="store_true",
                   help="DGC momentum correction: --momentum moves from the optimizer into the "
                   "hook (velocity fed to the sparse all-reduce, masked where sent)")
    p.add_argument("--momentum-warmup", metavar="START,STEPS",
                   help="with --momentum-correction: the hook's momentum rises from START to "
                   "--momentum over the first STEPS steps, the gradient scaled so that the "
                   "effective step stays (HookState momentum_warmup)")
    p.add_argument("--no-momentum-masking", action="store_true",
                   help="with --momentum-correction: keep the velocity where an entry was sent "
                   "(HookState momentum_masking=False)")
    p.add_argument("--nesterov", action="store_true",
                   help="Nesterov momentum: in the optimizer (torch.optim.SGD nesterov=True), or with "
                   "--momentum-correction in the hook (HookState nesterov=True: the all-reduce "
                   "gets g + momentum * u)")
    p.add_argument("--clip-grad-norm", type=float, default=0.0,
                   help="clip the aggregated gradient to this L2 norm before the step (0: off)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-limit", type=int, default=0,
                   help="use only the first N training images (smoke runs); 0: all 60000")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--port", type=int, default=29531, help="gloo rendezvous port (mpirun)")
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit with status 1 when the last epoch's test accuracy is below this")
    p.add_argument("--stats-every", type=int, default=0,
                   help="record the sparsifiers' statistics every N steps in the JSON (0: off)")
    p.add_argument("--json-out", help="rank 0 writes the per-epoch records here")
    args = p.parse_args()
    args.betas = tuple(float(b) for b in args.betas.split(","))
    if args.lr is None:
        args.lr = {"sgd": 0.05, "adam": 0.001, "adamw": 0.001, "adadelta": 1.0}[args.optimizer]
    if args.optimizer != "sgd" and args.momentum_correction:
        p.error("--momentum-correction is DGC's correction of SGD momentum (--optimizer sgd)")
    if args.momentum_warmup and not args.momentum_correction:
        p.error("--momentum-warmup is for the hook's momentum (--momentum-correction)")
    if args.momentum_warmup:
        try:
            start, steps = args.momentum_warmup.split(",")
            args.momentum_warmup = {"start": float(start), "steps": int(steps)}
        except ValueError:
            p.error("--momentum-warmup takes START,STEPS (e.g. 0.5,936), not %r" %
                    args.momentum_warmup)
    if args.nesterov and (args.optimizer != "sgd" or args.momentum == 0.0):
        p.error("--nesterov is for --optimizer sgd with a --momentum")
    if args.in_hook and args.optimizer == "sgd":
        p.error("--in-hook is for adam, adamw and adadelta (sgd: --momentum-correction)")
    return args


def preconditioner(args):
    """HookState's preconditioner for --in-hook (None otherwise)."""
    if not args.in_hook:
        return None
    return "adadelta" if args.optimizer == "adadelta" else "adam"


def make_optimizer(args, parameters, hook_momentum):
    """The --optimizer; with --momentum-correction the SGD momentum is in the hook already, with
    --in-hook the adaptive rule (then SGD applies lr, and AdamW's decoupled weight decay)."""
    if args.in_hook:
        decay = args.weight_decay if args.optimizer == "adamw" else 0.0
        return torch.optim.SGD(parameters, lr=args.lr, momentum=0.0, weight_decay=decay)
    if args.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=args.lr, betas=args.betas)
    if args.optimizer == "adamw":
        return torch.optim.AdamW(parameters, lr=args.lr, betas=args.betas,
                                 weight_decay=args.weight_decay)
    if args.optimizer == "adadelta":
        return torch.optim.Adadelta(parameters, lr=args.lr)
    momentum = args.momentum - hook_momentum
    return torch.optim.SGD(parameters, lr=args.lr, momentum=momentum,
                           nesterov=args.nesterov and momentum > 0.0)


def evaluate(model, x, y, rank, size):
    """Accuracy on the test set, each rank scoring its share; counts summed through gloo."""
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


def main():
    args = parse_args()
    torch.set_num_threads(1)
    rank, size = rank_and_size()
    if "RANK" not in os.environ:  # mpirun: gloo rendezvous on this host
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=size)

    torch.manual_seed(args.seed)
    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    model = SmallCnn()
    elements = sum(p.numel() for p in model.parameters())
    settings = dict(ALGORITHMS[args.algorithm], density=args.density)
    settings.update(json.loads(args.config) if args.config else {})
    hook_momentum = args.momentum if args.momentum_correction else 0.0

    hook_settings = dict(settings, momentum=hook_momentum, preconditioner=preconditioner(args))
    if args.no_momentum_masking:
        hook_settings["momentum_masking"] = False
    if args.nesterov and args.momentum_correction:
        hook_settings["nesterov"] = True
    if args.momentum_warmup:
        hook_settings["momentum_warmup"] = args.momentum_warmup
    if args.in_hook and args.hook_betas:
        hook_settings["betas"] = tuple(float(b) for b in args.hook_betas.split(","))

    # --- the change to a DDP script: three lines (sparsecoll) ---------------------------------
    comm = sparsecoll.Communicator.from_process_group()                  # sparsecoll
    state = sparsecoll.torch.HookState(comm, **hook_settings)            # sparsecoll
    model = DistributedDataParallel(model)
    model.register_comm_hook(state, sparsecoll.torch.hook)               # sparsecoll
    # -------------------------------------------------------------------------------------------

    optimizer = make_optimizer(args, model.parameters(), hook_momentum)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=args.lr_step_gamma)
    dense_bytes = 2.0 * (size - 1) / size * 4 * elements  # ring all-reduce, per rank and step
    if rank == 0:
        print("sparsecoll %s, %d ranks (%s transport), %d parameters, settings %s" %
              (sparsecoll.__version__, size, comm.transport, elements,
               json.dumps(dict(settings, momentum_correction=hook_momentum))),
              flush=True)
        print("epoch  train_loss  test_acc  density  bytes/step/rank  dense_bytes  reduction  s",
              flush=True)
    records, step_stats, global_step = [], [], 0
    generator = torch.Generator().manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        started = time.time()
        order = torch.randperm(len(x_train), generator=generator)  # same on every rank
        mine = order[rank::size]
        steps = len(mine) // args.batch
        before = state.traffic.summary()
        loss_sum = 0.0
        for step in range(steps):
            batch = mine[step * args.batch:(step + 1) * args.batch]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
            loss.backward()
            if args.clip_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
            optimizer.step()
            loss_sum += loss.item()
            global_step += 1
            if args.stats_every and global_step % args.stats_every == 0:
                stats = [sp.stats() for sp in state.sparsifiers.values()]
                step_stats.append({
                    "step": global_step, "loss": loss.item(),
                    "k_ratio": sum(st.k_global for st in stats) / sum(st.k_target for st in stats),
                    "threshold": [st.threshold for st in stats],
                    "residual_norm": sum(st.residual_norm**2 for st in stats)**0.5,
                    "grad_norm": sum(float(p.grad.norm())**2 for p in model.parameters())**0.5})
        after = state.traffic.summary()
        epoch_steps = after["steps"] - before["steps"]
        sent = (after["bytes_sent_per_step"] * after["steps"] -
                before["bytes_sent_per_step"] * before["steps"]) / max(1, epoch_steps)
        density = (after["density"] * after["elements_per_step"] * after["steps"] -
                   before["density"] * before["elements_per_step"] * before["steps"]) / max(
                       1.0, after["elements_per_step"] * epoch_steps)
        schedule.step()
        accuracy = evaluate(model, x_test, y_test, rank, size)
        record = {"epoch": epoch, "steps": steps, "train_loss": loss_sum / max(1, steps),
                  "test_accuracy": accuracy, "density": density, "bytes_sent_per_step": sent,
                  "dense_bytes_per_step": dense_bytes, "seconds": time.time() - started}
        records.append(record)
        if rank == 0:
            print("%5d  %10.4f  %7.2f%%  %7.4f  %15.0f  %11.0f  %8.1fx  %4.0f" %
                  (epoch, record["train_loss"], 100 * accuracy, density, sent, dense_bytes,
                   dense_bytes / max(1.0, sent), record["seconds"]), flush=True)
    if rank == 0 and args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"algorithm": args.algorithm, "settings": settings, "ranks": size,
                       "optimizer": args.optimizer, "lr": args.lr, "in_hook": args.in_hook,
                       "lr_step_gamma": args.lr_step_gamma,
                       "momentum": args.momentum, "momentum_correction": args.momentum_correction,
                       "momentum_masking": not args.no_momentum_masking,
                       "nesterov": args.nesterov,
                       "momentum_warmup": hook_settings.get("momentum_warmup"),
                       "parameters": elements, "epochs": records, "steps": step_stats}, f,
                      indent=1)
    state.close()
    comm.destroy()
    dist.barrier()
    dist.destroy_process_group()
    if records and records[-1]["test_accuracy"] < args.min_accuracy:
        print("test accuracy %.4f is below --min-accuracy %.4f" %
              (records[-1]["test_accuracy"], args.min_accuracy), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
