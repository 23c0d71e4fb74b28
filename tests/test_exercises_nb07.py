"""Notebook 07's exercises beyond the shared checks of tests/test_exercises.py: each recognised
slip gets its hint, and the 07.3 solution counts nodes as stated."""


from uneven.exercises import check


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
