"""The exact search over warm-up plans, against PipeMorph's closed-form planner."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uneven.schedulers.pipeline import pipeline_schedule, replan_warmups, simulate_pipeline
from uneven.schedulers.warmup_search import best_warmups, planner_gaps

MS = 1e-3


@given(st.integers(2, 3), st.integers(1, 6), st.lists(st.floats(0.0, 0.06), min_size=2,
                                                      max_size=2),
       st.sampled_from([(10, 10, 10), (10, 3, 10), (10, 20, 0), (20, 10, 5)]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_search_tries_every_plan_and_never_loses_to_the_planner(p, m, delays, times):
    tf, tb, tw = (x * MS for x in times)
    r = best_warmups(p, m, tf, tb, tw, delays=delays[:p - 1])
    assert r.n_plans == math.comb(m + p - 1, p)
    assert r.best_time <= r.planner_time + 1e-12 and r.gap >= -1e-12
    assert list(r.best) == sorted(r.best, reverse=True) and max(r.best) <= m
    # the planner's time is the re-plan mode's own (the search uses the same dispatcher)
    replan = simulate_pipeline(pipeline_schedule("zb-h2", p, m), tf, tb, tw,
                               delays=delays[:p - 1], mode="replan")
    assert r.planner == tuple(replan_warmups(delays[:p - 1], t_f=tf, m=m))
    assert r.planner_time == pytest.approx(replan.iteration_time)


def test_equal_op_times_the_closed_form_is_the_best_plan_and_a_short_backward_is_not():
    assert planner_gaps(3, 6, 10 * MS, 10 * MS, 10 * MS, n_cases=20).max() < 1e-9
    r = best_warmups(3, 6, 10 * MS, 3 * MS, 10 * MS, delays=[47 * MS, 0.0])
    assert r.planner == (6, 3, 1) and r.best == (6, 2, 1) and 0.03 < r.gap < 0.04


def test_sizes_are_refused_by_name():
    with pytest.raises(ValueError, match="p=8, m=32"):
        best_warmups(8, 32, 0.01, 0.01, delays=np.zeros(7))
    with pytest.raises(ValueError, match="delays"):
        best_warmups(3, 6, 0.01, 0.01, delays=[0.0])
    with pytest.raises(ValueError, match="n_cases"):
        planner_gaps(3, 6, 0.01, 0.01, n_cases=0)
