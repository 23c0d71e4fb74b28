"""Notebook 07's exercise checkers: the worked solutions pass, neighbouring regimes fail. The
generic checks (no bisection, each mistake triggers only its own hint) run over every registered
exercise in tests/test_exercises.py."""

import pytest

from uneven.exercises import check, registered

#: The worked solutions of notebook 07's <details> blocks.
SOLUTIONS = {"07.1": 9.49, "07.2": (3, 1), "07.3": "c", "07.4": "d"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "07.1": [2.0, 8.32, 7.49, 4.74, 12.0],  # the mean; ln N; max minus mean; sigma = 1; sqrt
    "07.2": [(3, 4), (1, 3), (2, 1), (3, 6), (5, 1)],
    "07.3": ["a", "b", "d", "c, d"],
    "07.4": ["a", "b", "c", "b, d"],
}


def test_every_notebook_07_exercise_has_a_solution():
    keys = [k for k in registered() if k.startswith("07.")]
    assert len(keys) >= 3 and set(keys) == set(SOLUTIONS)


@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solution_passes(key):
    fb = check(key, SOLUTIONS[key])
    assert fb.ok, f"{key}: {fb.message}"


@pytest.mark.parametrize("key, wrong", [(k, v) for k, vs in REGIME_NEIGHBOURS.items() for v in vs])
def test_neighbouring_regimes_are_rejected(key, wrong):
    assert not check(key, wrong).ok


def test_recognised_slips_get_their_hint():
    assert "mean die" in check("07.1", 2.0).message
    assert "Euler" in check("07.1", 8.32).message
    assert "capped system" in check("07.2", (3, 4)).message
    assert "other way round" in check("07.2", (1, 3)).message
    assert "expected_distinct_groups" in check("07.3", "d").message
    assert "hide more" in check("07.4", "c").message
    assert "Hint" not in check("07.3", "a").message  # no hint for an unrecognised answer


def test_the_07_3_solution_counts_nodes_as_stated():
    from uneven.ep.routing import expected_distinct_groups

    assert round(expected_distinct_groups(256, 8, 4), 1) == 3.3
