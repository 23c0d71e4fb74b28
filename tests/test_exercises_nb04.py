"""Notebook 04's exercise checkers: the worked solutions pass, neighbouring regimes do not.

The generic checks (no bisection, each mistake triggers only its own hint) in
``tests/test_exercises.py`` run over every registered exercise, these included."""

import pytest

from uneven.exercises import check, registered

#: The worked solutions of the notebook's <details> blocks.
SOLUTIONS = {"04.1": 22.02, "04.2": 1.23, "04.3": 0.66, "04.4": "b"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "04.1": [44.04, 25.17, 11.01, 18.35],  # printed Eq. 2; no (n-1)/n; values not bytes; 352B
    "04.2": [2.46, 0.61, 1.0, 0.5],  # both directions; FP8 peak; "just hides"; H800's NVLink
    # no cost; forward only; k = 3 (the transfer time printed in Section 3, not rescaled);
    # with inter-op overlap on
    "04.3": [0.0, 0.33, 0.41, 0.59],
    "04.4": ["a", "c", "d"],
}


def test_every_exercise_of_notebook_04_has_a_solution():
    keys = [k for k in registered() if k.startswith("04.")]
    assert sorted(keys) == sorted(SOLUTIONS)
    assert len(keys) >= 3


@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solution_passes(key):
    fb = check(key, SOLUTIONS[key])
    assert fb.ok, f"{key}: {fb.message}"


@pytest.mark.parametrize("key, wrong", [(k, v) for k, vs in REGIME_NEIGHBOURS.items() for v in vs])
def test_neighbouring_regimes_are_rejected(key, wrong):
    assert not check(key, wrong).ok
