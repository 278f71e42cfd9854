"""Resuming DDP training from per-rank checkpoints in new processes (mpi_worker.py's
"checkpoint_save=DIR" and "checkpoint_resume=DIR" modes, two launches of test_multiprocess.py):
the first launch trains N + M steps uninterrupted and, separately, N steps saved with torch.save
(model, optimizer, HookState.state_dict per rank); the second launch, new processes, loads those
files, trains M steps and must end with bitwise the parameters of the uninterrupted run, for every
preset and hook form below."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import sparsecoll.torch as sparse_torch
from ddp_checks import check, data, model_for_tests

BEFORE, AFTER = 5, 6
SETTINGS = {
    "micro": dict(algorithm="micro", density=0.05),
    "exdyna": dict(algorithm="exdyna", density=0.05),
    "sidco": dict(algorithm="sidco", density=0.05),
    "s2": dict(algorithm="s2", density=0.05),
    "micro_sync_free": dict(algorithm="micro_sync_free", density=0.05),
    "micro_momentum": dict(algorithm="micro", density=0.05, momentum=0.9, nesterov=True,
                           momentum_warmup={"start": 0.5, "steps": 8},
                           density_warmup={"start": 0.2, "calls": 8}),
    "exdyna_adam": dict(algorithm="exdyna", density=0.05, preconditioner="adam",
                        density_warmup={"start": 0.2, "calls": 8}),
}


def _train(comm, settings, first, steps, checkpoint=None):
    rank = dist.get_rank()
    model = model_for_tests()
    ddp = DistributedDataParallel(model)
    state = sparse_torch.HookState(comm, **settings)
    ddp.register_comm_hook(state, sparse_torch.hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    if checkpoint is not None:
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state.load_state_dict(saved["hook"])
    for step in range(first, first + steps):
        x, y = data(rank, step)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        optimizer.step()
    return model, optimizer, state


def _paths(directory, name):
    rank = dist.get_rank()
    return (os.path.join(directory, "%s.whole.%d.pt" % (name, rank)),
            os.path.join(directory, "%s.checkpoint.%d.pt" % (name, rank)))


def save_phase(comm, directory):
    for name, settings in SETTINGS.items():
        whole_path, checkpoint_path = _paths(directory, name)
        model, _, state = _train(comm, settings, 0, BEFORE + AFTER)
        torch.save([p.detach().clone() for p in model.parameters()], whole_path)
        state.close()
        model, optimizer, state = _train(comm, settings, 0, BEFORE)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "hook": state.state_dict()}, checkpoint_path)
        state.close()
    print("checkpoints saved", flush=True)


def resume_phase(comm, directory):
    for name, settings in SETTINGS.items():
        whole_path, checkpoint_path = _paths(directory, name)
        model, _, state = _train(comm, settings, BEFORE, AFTER, checkpoint=checkpoint_path)
        whole = torch.load(whole_path)
        resumed = [p.detach() for p in model.parameters()]
        check(all(torch.equal(a, b) for a, b in zip(whole, resumed)),
              "%s: the resumed run's parameters differ from the uninterrupted run's (max %g)" %
              (name, max(float((a - b).abs().max()) for a, b in zip(whole, resumed))))
        check(state.traffic.steps == BEFORE + AFTER, "%s: traffic counts every step" % name)
        state.close()
    print("resume checks passed", flush=True)
