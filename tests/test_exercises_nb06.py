"""Notebook 06's exercise checkers: the worked solutions pass, neighbouring regimes fail. The
generic checks (no bisection, each mistake triggers only its own hint) run over every registered
exercise in tests/test_exercises.py."""

import pytest

from uneven.exercises import check, registered

#: The worked solutions of notebook 06's <details> blocks.
SOLUTIONS = {"06.1": 1.27, "06.2": 52.4, "06.3": "b", "06.4": 29}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "06.1": [1.0, 1.42, 1.17, 2.0],  # no difference; latency only; EP64's far share; all far
    "06.2": [92.8, 143.0, 26.2, 104.8],  # the baseline; UBEP at default hops; per core x2 slips
    "06.4": [28, 30, 15],  # payload only; off by one; the dispatch copy
}


def test_every_notebook_06_exercise_has_a_solution():
    keys = [k for k in registered() if k.startswith("06.")]
    assert len(keys) >= 3 and set(keys) == set(SOLUTIONS)


@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solution_passes(key):
    fb = check(key, SOLUTIONS[key])
    assert fb.ok, f"{key}: {fb.message}"


@pytest.mark.parametrize("key, wrong", [(k, v) for k, vs in REGIME_NEIGHBOURS.items() for v in vs])
def test_neighbouring_regimes_are_rejected(key, wrong):
    assert not check(key, wrong).ok


def test_recognised_slips_get_their_hint():
    assert "512 bytes" in check("06.1", 1.415).message
    assert "28 blocks" in check("06.4", 28).message
    assert not check("06.3", "a").ok and "larger jitter" in check("06.3", "a").message
