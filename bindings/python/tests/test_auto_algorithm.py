"""algorithm="auto" from Python: the library's cost model picks a preset at creation, the same on
every rank, and Sparsifier.algorithm names it (docs/cost_model.md)."""

import numpy as np
import pytest

from sparsecoll import Result, SparsecollError, Sparsifier
from thread_ranks import run_ranks

CANDIDATES = {"dense", "micro", "exdyna", "cltk"}


def test_auto_picks_one_candidate_on_every_rank_and_runs_it():
    count = 50000

    def body(comm):
        with Sparsifier(comm, count, algorithm="auto", density=0.01) as sp:
            rng = np.random.default_rng(comm.rank)
            grad = rng.standard_normal(count).astype(np.float32)
            out = sp.allreduce(grad)
            return sp.algorithm, out, sp.stats().predicted_time_us

    results = run_ranks(2, body)
    names = [name for name, _, _ in results]
    assert names[0] in CANDIDATES
    assert names[0] == names[1]
    assert np.array_equal(results[0][1], results[1][1])
    # The model's time of one call of the chosen preset, agreed: positive and the same everywhere.
    assert results[0][2] > 0
    assert results[0][2] == results[1][2]


def test_a_named_preset_has_no_predicted_time():
    def body(comm):
        with Sparsifier(comm, 1000, algorithm="micro", density=0.01) as sp:
            stats = sp.stats()
            return stats.predicted_time_us, stats.auto_switches, stats.auto_settled

    assert run_ranks(1, body)[0] == (0, 0, 1)


def test_auto_settles_within_four_windows_on_every_rank():
    count = 20000

    def body(comm):
        with Sparsifier(comm, count, algorithm="auto", density=0.01) as sp:
            rng = np.random.default_rng(comm.rank)
            assert sp.stats().auto_settled == 0
            outs, names = [], []
            for _ in range(44):  # 4 windows of 3 + 8 calls at most
                outs.append(sp.allreduce(rng.standard_normal(count).astype(np.float32)))
                names.append(sp.algorithm)
            stats = sp.stats()
            return names, np.stack(outs), stats.auto_settled, stats.auto_switches

    results = run_ranks(2, body)
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])
    assert results[0][2] == 1 and results[1][2] == 1
    assert results[0][3] == results[1][3] <= 3
    assert set(results[0][0]) <= CANDIDATES


def test_auto_with_an_estimator_is_the_librarys_invalid_argument():
    def body(comm):
        with pytest.raises(SparsecollError) as caught:
            Sparsifier(comm, 1000, algorithm="auto", estimator="topk")
        return caught.value.code, caught.value.message

    code, message = run_ranks(1, body)[0]
    assert code == Result.INVALID_ARGUMENT
    assert "auto" in message
