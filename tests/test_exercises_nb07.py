"""Notebook 07's exercises beyond the shared checks of tests/test_exercises.py: each recognised
slip gets its hint, the derive-it checker (07.1) takes a right function and refuses near
misses, and the 07.3 solution counts nodes as stated."""

import math

from uneven.exercises import check


def _h(n):
    return sum(1 / i for i in range(1, n + 1))


def test_recognised_slips_get_their_hint():
    assert "mean die" in check("07.1", lambda N, mean: mean).message
    assert "Euler" in check("07.1", lambda N, mean: mean * math.log(N)).message
    assert "behind the mean die" in check("07.1", lambda N, mean: mean * (_h(N) - 1)).message
    assert "Gaussian" in check("07.1",
                               lambda N, mean: mean * math.sqrt(2 * math.log(N))).message
    assert "capped system" in check("07.2", (3, 4)).message
    assert "other way round" in check("07.2", (1, 3)).message
    assert "expected_distinct_groups" in check("07.3", "d").message
    assert "hide more" in check("07.4", "c").message
    assert "Hint" not in check("07.3", "a").message  # no hint for an unrecognised answer


def test_07_1_takes_the_harmonic_sum_and_refuses_a_table_or_a_rounded_constant():
    assert check("07.1", lambda N, mean: mean * _h(N)).ok
    # ln N + Euler's constant is H_N only for large N: one die (H_1 = 1) or a few give it away
    gamma = 0.5772156649
    assert not check("07.1", lambda N, mean: mean * (math.log(N) + gamma), seed=3).ok
    # the page's example alone (64 dies of 2 µs: 9.49) is never one of the hidden inputs
    assert not check("07.1", lambda N, mean: 9.488 if (N, mean) == (64, 2.0) else 0.0).ok
    assert not check("07.1", lambda N, mean: mean * _h(N - 1)).ok  # one die short


def test_the_07_3_solution_counts_nodes_as_stated():
    # 256 experts on 4 nodes, top-8: a token reaches 3.61 of 4 nodes (the first edition's 3.3 was
    # expected_distinct_groups(256, 8, 4): 8 groups and 4 picks, the arguments swapped). Of its
    # 6 expected remote copies (8 x 3/4) a relay would keep one per remote node: 2.71, merging 55%.
    from uneven.ep.routing import expected_distinct_groups

    nodes = expected_distinct_groups(256, 4, 8)
    assert round(nodes, 2) == 3.61
    remote_nodes = 3 * nodes / 4
    assert round(remote_nodes, 2) == 2.71 and round(1 - remote_nodes / 6, 2) == 0.55
