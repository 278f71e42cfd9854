"""HookState's preconditioner (sparsecoll/torch.py): the optimizer's per-coordinate rule in the
hook on each rank's dense gradient, then SGD. With the dense algorithm and identical gradients it
is torch's optimizer; with a sparse one the ranks stay identical; bad settings are refused."""

import pytest
import torch

import sparsecoll.torch
from thread_ranks import run_ranks


def seeded_linear(inputs, outputs, seed):
    """A Linear layer whose weights come from a private generator: the ranks are threads, so the
    global seed would be shared between them."""
    model = torch.nn.Linear(inputs, outputs)
    init = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=init) * 0.3)
    return model


def _preconditioned_against_torch(preconditioner, optimizer_class, lr, steps=6, **options):
    """Two ranks with the same data, dense, the hook's preconditioner (or its momentum correction,
    in options) + SGD: each rank's update is the same, so their average is torch's optimizer step
    on that gradient."""
    decay = options.pop("weight_decay", 0.0)

    def body(comm):
        model = seeded_linear(12, 4, seed=3)
        reference = torch.nn.Linear(12, 4)
        reference.load_state_dict(model.state_dict())
        sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm, algorithm="dense",
                                                     preconditioner=preconditioner, **options)
        sgd = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=decay)
        wanted = optimizer_class(reference.parameters(), lr=lr,
                                 **({"weight_decay": decay} if decay else {}))
        for step in range(steps):
            x = torch.randn(8, 12, generator=torch.Generator().manual_seed(step))
            y = torch.arange(8) % 4
            for net, opt in ((model, sgd), (reference, wanted)):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), y).backward()
            sync.synchronize()
            sgd.step()
            wanted.step()
        sync.close()
        return [(a.detach().clone(), b.detach().clone())
                for a, b in zip(model.parameters(), reference.parameters())]

    for result in run_ranks(2, body):
        for got, want in result:
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()


def test_hook_preconditioner_adam_dense_is_torch_adam():
    _preconditioned_against_torch("adam", torch.optim.Adam, 0.01, betas=(0.9, 0.999))


def test_hook_preconditioner_adamw_with_sgd_weight_decay_is_torch_adamw():
    _preconditioned_against_torch("adam", torch.optim.AdamW, 0.01, weight_decay=0.1,
                                  betas=(0.9, 0.999))


def test_hook_nesterov_momentum_dense_is_torch_nesterov_sgd():
    """HookState(momentum=0.9, nesterov=True), dense, then SGD: torch's Nesterov SGD."""
    def nesterov_sgd(parameters, lr):
        return torch.optim.SGD(parameters, lr=lr, momentum=0.9, nesterov=True)

    _preconditioned_against_torch(None, nesterov_sgd, 0.1, momentum=0.9, nesterov=True)


def test_hook_preconditioner_adam_default_has_no_first_moment():
    """The hook's default b1 is 0: dense, it is Adam with betas (0, 0.999)."""
    def adam_without_momentum(parameters, lr):
        return torch.optim.Adam(parameters, lr=lr, betas=(0.0, 0.999))

    _preconditioned_against_torch("adam", adam_without_momentum, 0.01)


def test_hook_preconditioner_adadelta_dense_is_torch_adadelta():
    _preconditioned_against_torch("adadelta", torch.optim.Adadelta, 1.0)


def test_hook_preconditioner_rejects_bad_settings():
    def body(comm):
        for settings in ({"preconditioner": "sgd"}, {"preconditioner": "adam", "momentum": 0.9},
                         {"preconditioner": "adam", "betas": (0.9, 1.0)},
                         {"preconditioner": "adadelta", "rho": -0.1},
                         {"preconditioner": "adam", "eps": -1e-8},
                         {"preconditioner": "adam", "eps": float("nan")}):
            with pytest.raises(ValueError):
                sparsecoll.torch.HookState(comm, algorithm="dense", **settings)
        return True

    assert run_ranks(1, body) == [True]


def test_hook_preconditioner_sparse_keeps_ranks_identical():
    """micro with Adam's rule in the hook, each rank its own data: the aggregated updates, and so
    the parameters after SGD, are bitwise the same on every rank; the hook kept moments."""
    def body(comm):
        model = seeded_linear(40, 8, seed=5)
        sync = sparsecoll.torch.GradientSynchronizer(model.parameters(), comm, algorithm="micro",
                                                     density=0.1, preconditioner="adam")
        sgd = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(5):
            data = torch.Generator().manual_seed(100 * comm.rank + step)
            x, y = torch.randn(16, 40, generator=data), torch.randint(0, 8, (16,), generator=data)
            sgd.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            sync.synchronize()
            sgd.step()
        assert len(sync.state.moments) == 1 and sync.state.moments[0]["step"] == 5
        sync.close()
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    first, second = run_ranks(2, body)
    assert torch.equal(first, second)
