"""Notebook 05's exercises beyond the shared checks of tests/test_exercises.py (which run the
worked solutions, the neighbouring regimes and the no-bisection rule over every exercise): the
expected values come from the library, and each registered slip gets its hint."""

import math

import pytest

from uneven.ep.decode import DecodeSetup, simulate_decode
from uneven.exercises import check, exercise
from uneven.explorers.nb05 import balancing_state


def test_expected_values_come_from_the_library():
    assert exercise("05.1").expected(8, 8) == pytest.approx(7 * (1 - (7 / 8) ** 8))
    copy = 3 * 7168 * 2048 / 450e9
    layer = simulate_decode(DecodeSetup(), placement="NIC-aware", swaps=True, n_steps=120,
                            seed=0).median()
    assert exercise("05.4").expected() == pytest.approx(58 * layer / copy)
    slow = [balancing_state(mode=m, nic_gbps=200.0).layer_time for m in ("direct", "relay")]
    assert exercise("05.2").expected() == pytest.approx(slow[0] / slow[1])


def test_the_predict_exercise_answer_is_not_the_default_ratio():
    # the explorer's default ratio (400 Gb/s) is on screen; the exercise's must be clearly apart
    default = [balancing_state(mode=m).layer_time for m in ("direct", "relay")]
    e = exercise("05.2").expected()
    assert e > 1.15 * default[0] / default[1]
    assert not check("05.2", default[0] / default[1]).ok


@pytest.mark.parametrize("key", ["05.2", "05.4"])  # 05.1: test_exercises_derive.py
def test_registered_slips_get_their_hint(key):
    ex = exercise(key)
    e = float(ex.expected())
    for wrong, message in ex.mistakes:
        value = float(wrong(e))
        if not math.isclose(value, e, rel_tol=ex.rtol):
            assert message in check(key, value).message
