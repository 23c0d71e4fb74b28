"""Notebook 05's exercise checkers: worked solutions pass, neighbouring regimes fail, no bisection,
hints only for the registered slips (the generic tests of tests/test_exercises.py also run over
every registered exercise, these included)."""

import math

import pytest

from uneven.exercises import check, exercise, registered

#: The worked solutions of notebook 05's <details> blocks.
SOLUTIONS = {"05.1": 4.59, "05.2": 1.38, "05.3": "b", "05.4": 98.0}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "05.1": [7.0, 5.25, 2.70, 4.0],  # one copy per remote expert; own host counted; EP32's value
    "05.2": [1.0, 2.22, 1.2, 1.6],  # no change; the byte ratio alone; too little; too much
    "05.3": ["a", "c", "d", "a, b"],
    "05.4": [196.0, 783.0, 49.0],  # both copies in one direction; Gb/s; half
}


def test_every_exercise_of_notebook_05_is_registered_and_has_a_solution():
    keys = {k for k in registered() if k.startswith("05.")}
    assert keys == set(SOLUTIONS)


@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solution_passes(key):
    fb = check(key, SOLUTIONS[key])
    assert fb.ok, f"{key}: {fb.message}"


@pytest.mark.parametrize("key, wrong", [(k, v) for k, vs in REGIME_NEIGHBOURS.items() for v in vs])
def test_neighbouring_regimes_are_rejected(key, wrong):
    assert not check(key, wrong).ok


def test_expected_values_come_from_the_library():
    assert exercise("05.1").expected() == pytest.approx(7 * (1 - (7 / 8) ** 8))
    assert exercise("05.4").expected() == pytest.approx(3 * 7168 * 2048 / 450e9 * 1e6)
    assert 1.2 < exercise("05.2").expected() < 1.6


@pytest.mark.parametrize("key", ["05.1", "05.2", "05.4"])
def test_registered_slips_get_their_hint(key):
    ex = exercise(key)
    e = float(ex.expected())
    for wrong, message in ex.mistakes:
        value = float(wrong(e))
        if not math.isclose(value, e, rel_tol=ex.rtol):
            assert message in check(key, value).message
