"""Pipeline schedules: closed-form oracles, the authors' own schedules and simulator numbers,
absorption of a slow link, and properties.

Absorption statement checked here (replay of a plan, one slow link k with extra one-way delay c,
sends off the GPU stream, every slackness Δ_i >= 1; c1 = (Δ_k - 1)(t_F + t_B) / 2 with t_B the
full backward for 1F1B and the input-gradient part for zero bubble; c2 = c1 + Δ_k t_W / 2):

* 1F1B: T(c) = T(0) + 2c exactly for 0 <= c <= c1;
* zero bubble, any order: T(0) + c <= T(c) <= T(0) + 2c for c <= c1; T(c) = T(0) + c exactly
  for the PipeMorph artifact's Fig. 8 plans (greedy, planned under a small delay);
* zero bubble with a memory budget (one W per steady cycle): T(c) - T(0) does not depend on m
  for c < c2;
* beyond: the slope dT/dc reaches at least 2 ceil(m / w_k) (checked for c >= T(0)), i.e. O(m c).
"""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import (
    MODES,
    OP_KINDS,
    SCHEDULE_KINDS,
    absorption_bound,
    pipeline_schedule,
    replan_warmups,
    simulate_pipeline,
    simulate_trace,
    slackness,
)

MS = 1e-3


def delays_on(p, link, c):
    d = np.zeros(p - 1)
    d[link] = c
    return d


def T(sched, tf, tb, tw=0.0, **kw):
    return simulate_pipeline(sched, tf, tb, tw, **kw).iteration_time


def span_bubbles(res):
    """Idle time inside each stage's own span (first start to last finish), s."""
    p = res.schedule.p
    out = np.empty(p)
    for s in range(p):
        ids = np.flatnonzero((res.stage == s) & (res.kind <= 2))
        out[s] = res.finish[ids].max() - res.start[ids].min() - res.busy[s]
    return out


# --------------------------------------------------------------------------- closed forms


def test_1f1b_oracle_from_the_megatron_paper():
    s = pipeline_schedule("1f1b", p=4, m=8)
    assert T(s, 1.0, 2.0) == pytest.approx(33.0)
    assert T(s, 1.0, 1.0, 1.0) == pytest.approx(33.0)  # B is the full backward t_b + t_w


@pytest.mark.parametrize("p, m", [(1, 1), (2, 1), (2, 5), (4, 8), (8, 3), (8, 32)])
@pytest.mark.parametrize("kind", ["1f1b", "gpipe"])
def test_1f1b_and_gpipe_makespan_and_bubble(kind, p, m):
    f, b = 0.7, 1.9
    res = simulate_pipeline(pipeline_schedule(kind, p, m), f, b)
    assert res.iteration_time == pytest.approx((m + p - 1) * (f + b))
    assert res.bubble_fraction[0] == pytest.approx((p - 1) / (m + p - 1))


@pytest.mark.parametrize("v, expected", [(2, 28.5), (4, 26.25)])
def test_interleaved_oracle(v, expected):
    res = simulate_pipeline(pipeline_schedule("interleaved", 4, 8, v=v), 1.0, 2.0)
    assert res.iteration_time == pytest.approx(expected)
    assert expected == pytest.approx(8 * 3 + 3 * 3 / v)


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 4, 3), (4, 12, 2), (8, 16, 2), (3, 9, 5)])
def test_interleaved_formula(p, m, v):
    f, b = 1.3, 2.1
    res = simulate_pipeline(pipeline_schedule("interleaved", p, m, v=v), f, b)
    assert res.iteration_time == pytest.approx(m * (f + b) + (p - 1) * (f + b) / v)
    # Megatron warm-up 2(p-i-1) + (v-1)p chunk forwards, plus the first steady one
    want = [min(2 * (p - i - 1) + (v - 1) * p + 1, m * v) if m != p else m * v for i in range(p)]
    assert list(res.warmups) == want
    assert res.peak_memory.tolist() == pytest.approx([x / v for x in want])  # a chunk is 1/v


#: The Zero Bubble authors' hand-made orders for p = 4, m = 8, as their own generator prints them
#: (``get_hand_schedule`` in megatron/core/pipeline_parallel/efficiency.py, branch ``arxiv``,
#: f68d3879 of sail-sg/zero-bubble-pipeline-parallelism).
AUTHORS_ORDERS = {
    "zb-h1": [
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7",
    ],
    "zb-h2": [
        "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 B4 W2 B5 W3 B6 W4 B7 W5 W6 W7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 W2 W3 W4 W5 W6 W7",
    ],
}


@pytest.mark.parametrize("kind", ["zb-h1", "zb-h2"])
def test_zero_bubble_orders_are_the_authors(kind):
    res = simulate_pipeline(pipeline_schedule(kind, 4, 8), 1.0, 1.0, 1.0)
    assert [" ".join(res.order(s)) for s in range(4)] == AUTHORS_ORDERS[kind]


@pytest.mark.parametrize("kind, c", [("zb-h1", 1), ("zb-h2", 2)])
@pytest.mark.parametrize("p, m, want", [(4, 8, 27.0), (8, 16, 55.0)])
def test_zero_bubble_makespans_of_the_paper(kind, c, p, m, want):
    """F = B = W = 1: the authors' hand-made ZB-H1 and ZB-H2 both take 3m + p - 1 (27 and 55),
    holding p and 2p - 1 micro-batches (F done, W not yet) on every stage."""
    res = simulate_pipeline(pipeline_schedule(kind, p, m), 1.0, 1.0, 1.0)
    assert res.iteration_time == pytest.approx(want)
    assert res.iteration_time == pytest.approx(3 * m + p - 1)
    assert res.peak_memory.tolist() == [float(c * p - (c - 1))] * p


@pytest.mark.parametrize("kind", ["zb-h1", "zb-h2"])
@pytest.mark.parametrize("p, m", [(4, 8), (4, 12), (6, 30), (8, 16)])
def test_budgeted_dispatcher_rebuilds_the_hand_made_orders(kind, p, m):
    """With equal op times, the dispatcher given ZB-H1's or ZB-H2's warm-ups and memory budget
    (kind 'zb') finds the authors' makespan: the budget alone explains their W placement."""
    hand = pipeline_schedule(kind, p, m)
    ours = pipeline_schedule("zb", p, m, warmups=hand.warmups, memory=hand.memory)
    a, b = (simulate_pipeline(s, 1.0, 1.0, 1.0) for s in (hand, ours))
    assert a.iteration_time == pytest.approx(b.iteration_time)
    assert b.peak_memory.max() <= hand.memory
    if kind == "zb-h1":
        assert all(a.order(s) == b.order(s) for s in range(p))


@pytest.mark.parametrize("tf, tb, tw", [(1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 0.5, 0.5),
                                        (1.5, 1, 0.7), (1, 1, 0.3)])
@pytest.mark.parametrize("p, m", [(4, 12), (4, 24), (6, 30), (8, 64)])
def test_zb_h1_closed_form(tf, tb, tw, p, m):
    """Zero Bubble: ZB-H1 takes m(F + B + W) + (p-1)(F + B - W) (B the input gradient) when
    W <= B, i.e. (p-1)(F + B_full - 2W) of idle time on stage 0 (DualPipe's table)."""
    res = simulate_pipeline(pipeline_schedule("zb-h1", p, m), tf, tb, tw)
    assert res.iteration_time == pytest.approx(m * (tf + tb + tw) + (p - 1) * (tf + tb - tw))
    assert res.iteration_time - res.busy[0] == pytest.approx((p - 1) * (tf + (tb + tw) - 2 * tw))
    assert res.peak_memory.tolist() == [p] * p


def test_zb_h1_equal_times_bubble_is_a_third_of_1f1b():
    p, m = 4, 12
    zb = simulate_pipeline(pipeline_schedule("zb-h1", p, m), 1.0, 1.0, 1.0)
    ob = simulate_pipeline(pipeline_schedule("1f1b", p, m), 1.0, 1.0, 1.0)
    assert (zb.iteration_time - zb.busy[0]) * 3 == pytest.approx(ob.iteration_time - ob.busy[0])


@pytest.mark.parametrize("tf, tb, tw", [(1, 1, 1), (2, 1, 1), (1, 0.5, 0.5), (1.5, 1, 0.7)])
@pytest.mark.parametrize("p, m", [(4, 24), (6, 30), (8, 64)])
def test_zb_h2_stage0_bubble(tf, tb, tw, p, m):
    """Zero Bubble: ZB-H2's bubble is (p-1)(F + B - 2W), zero when F + B <= 2W (stage 0's span);
    the last stage starts after p-1 forwards and never idles."""
    res = simulate_pipeline(pipeline_schedule("zb-h2", p, m), tf, tb, tw)
    assert span_bubbles(res)[0] == pytest.approx(max(0.0, (p - 1) * (tf + tb - 2 * tw)))
    assert span_bubbles(res)[-1] == pytest.approx(0.0, abs=1e-9)
    assert res.peak_memory.tolist() == [2 * p - 1] * p


def test_gpipe_holds_every_micro_batch():
    res = simulate_pipeline(pipeline_schedule("gpipe", 3, 5), 1.0, 1.0)
    assert res.peak_memory.tolist() == [5, 5, 5]


def test_per_stage_times_slowest_stage_dominates():
    tf = np.array([1.0, 1.0, 3.0, 1.0])
    res = simulate_pipeline(pipeline_schedule("1f1b", 4, 20), tf, 2 * tf)
    assert res.iteration_time >= 20 * 9.0  # stage 2 alone is busy 20 * (3 + 6)
    assert np.argmin(res.bubble_fraction) == 2


# --------------------------------------------------------------------------- paper numbers


def test_fig5_artifact_zb_replay_390_400_440():
    """The artifact's Fig. 5: its "ZB" (OurPolicy: greedy, no memory budget), S=4, N=12,
    t=10 ms, planned on a healthy network and replayed under delay on link 0-1."""
    s = pipeline_schedule("greedy", 4, 12)
    got = [T(s, 10 * MS, 10 * MS, 10 * MS, delays=[c * MS, 0, 0]) / MS for c in (0, 10, 20)]
    np.testing.assert_allclose(got, [390, 400, 440], atol=1e-6)
    res = simulate_pipeline(s, 10 * MS, 10 * MS, 10 * MS)
    assert res.warmups == (7, 5, 3, 1)
    assert res.peak_memory.tolist() == [12] * 4  # every W drifts to the tail: all m held


def test_zb_h2_within_its_budget_absorbs_more():
    """ZB-H2 with its 2p - 1 budget puts a W into every steady cycle: 20 ms costs 30, not 50."""
    s = pipeline_schedule("zb-h2", 4, 12)
    got = [T(s, 10 * MS, 10 * MS, 10 * MS, delays=[c * MS, 0, 0]) / MS for c in (0, 10, 20)]
    np.testing.assert_allclose(got, [390, 400, 420], atol=1e-6)


def test_zb_h1_tolerates_no_delay():
    s = pipeline_schedule("zb-h1", 4, 12)
    got = [T(s, 10 * MS, 10 * MS, 10 * MS, delays=[c * MS, 0, 0]) / MS for c in (0, 10, 20)]
    np.testing.assert_allclose(got, [390, 460, 560], atol=1e-6)


#: The PipeMorph artifact's Fig. 8 (figures.ipynb, branch AE bc31ab09), rerun from its own
#: simulator: extra ms over the healthy 910 ms, S = 2, N = 30, t = 10 ms, for c = 0, 5, ..., 60.
ARTIFACT_FIG8 = {
    2: [0, 5, 10, 110, 210, 310, 410, 510, 610, 710, 810, 910, 1010],
    3: [0, 5, 10, 15, 20, 100, 180, 260, 340, 420, 500, 580, 660],
    4: [0, 5, 10, 15, 20, 25, 30, 90, 150, 210, 270, 330, 390],
    5: [0, 5, 10, 15, 20, 25, 30, 35, 40, 90, 140, 190, 240],
    6: [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 100, 150],
}


def test_fig8_reproduces_the_artifact_exactly():
    """Each curve's plan is the greedy policy's under a planning delay of 5(Δ-2) ms, replayed."""
    t = 10 * MS
    s = pipeline_schedule("greedy", 2, 30)
    for delta, want in ARTIFACT_FIG8.items():
        plan = [5 * (delta - 2) * MS]
        assert simulate_pipeline(s, t, t, t, plan_delays=plan).warmups == (delta + 1, 1)
        got = [T(s, t, t, t, delays=[c * MS], plan_delays=plan) / MS - 910 for c in range(0, 61, 5)]
        np.testing.assert_allclose(got, want, atol=1e-6)
        # exactly +c up to the knee (Δ-1)t
        knee = absorption_bound(delta, t, t)
        assert T(s, t, t, t, delays=[knee], plan_delays=plan) / MS == pytest.approx(910 + knee / MS)


def test_replan_example_960ms():
    """Notes' [sim]: S=4, N=30, t=10 ms, 30 ms on link 0-1: plan [10,5,3,1], 930 + c = 960 ms."""
    assert replan_warmups([30 * MS, 0, 0], 10 * MS) == (10, 5, 3, 1)
    s = pipeline_schedule("zb-h1", 4, 30)
    healthy = simulate_pipeline(s, 10 * MS, 10 * MS, 10 * MS)
    res = simulate_pipeline(s, 10 * MS, 10 * MS, 10 * MS, delays=[30 * MS, 0, 0], mode="replan")
    assert healthy.iteration_time / MS == pytest.approx(930)
    assert res.warmups == (10, 5, 3, 1)
    assert res.iteration_time / MS == pytest.approx(960)
    assert res.peak_memory.tolist() == [10] * 4  # the budget is raised to what the plan needs
    # the delay-aware greedy list scheduler reaches the same time with more memory
    greedy = simulate_pipeline(pipeline_schedule("greedy", 4, 30), 10 * MS, 10 * MS, 10 * MS,
                               delays=[30 * MS, 0, 0], mode="online")
    assert greedy.warmups == (13, 5, 3, 1)
    assert greedy.iteration_time / MS == pytest.approx(960)


def test_knee_and_slopes_two_stages():
    """Notes' Fig 8 setting (S=2, N=30, t=10 ms): knees at (Δ-1)t, then slopes 20, 16, 12, 10."""
    t, m = 10 * MS, 30
    for delta, slope in zip((2, 3, 4, 5), (20, 16, 12, 10), strict=True):
        s = pipeline_schedule("zb", 2, m, warmups=[delta + 1, 1])
        knee = absorption_bound(delta, t, t)
        assert knee == pytest.approx((delta - 1) * t)
        base = T(s, t, t, t)
        grow = T(s, t, t, t, delays=[knee]) - base
        assert knee <= grow + 1e-12 and grow <= 2 * knee + 1e-12  # bounded, independent of m
        after = (T(s, t, t, t, delays=[knee + 2 * MS]) - T(s, t, t, t, delays=[knee + MS])) / MS
        assert after == pytest.approx(slope)


def test_artifact_1f1b_tolerance_depends_on_the_link():
    """Notes: the artifact's 1F1B (warm-ups [8,7,4,1]) tolerates 0 ms on link 0-1, 30 ms on 2-3."""
    t = 10 * MS
    s = pipeline_schedule("1f1b", 4, 30, warmups=[8, 7, 4, 1])
    assert absorption_bound(slackness(s.warmups), t, 2 * t).tolist() == pytest.approx(
        [0.0, 0.03, 0.03])
    base = T(s, t, t, t)
    grow = lambda link, c: T(s, t, t, t, delays=delays_on(4, link, c * MS)) - base  # noqa: E731
    assert grow(0, 10) / MS == pytest.approx(180.0)  # Δ = 1: cascades at once
    assert grow(2, 30) / MS == pytest.approx(60.0)  # Δ = 3: 2c up to (Δ-1)(F+B)/2 = 30 ms
    assert (grow(2, 31) - grow(2, 30)) / MS == pytest.approx(16.0)  # then O(m) per ms


def test_sweep_on_link_2_pipemorph_stays_at_plus_c():
    t = 10 * MS
    zb = pipeline_schedule("greedy", 4, 30)
    for c in (10, 20, 30, 40, 60):
        pm = T(zb, t, t, t, delays=delays_on(4, 2, c * MS), mode="replan")
        assert pm / MS == pytest.approx(930 + c)
    assert T(zb, t, t, t, delays=delays_on(4, 2, 20 * MS)) / MS == pytest.approx(1140)


def test_1f1b_online_is_its_replay():
    s = pipeline_schedule("1f1b", 4, 10)
    d = [0.3, 0.0, 1.2]
    assert T(s, 1.0, 2.0, delays=d, mode="online") == pytest.approx(T(s, 1.0, 2.0, delays=d))


# --------------------------------------------------------------------------- absorption


@st.composite
def warmup_plans(draw, kind):
    p = draw(st.integers(2, 6))
    steps = [draw(st.integers(1, 4)) for _ in range(p - 1)]
    w = [1]
    for d in reversed(steps):
        w.insert(0, w[0] + d)
    m = draw(st.integers(w[0], w[0] + 30))  # no clipping: every Δ_i >= 1
    return pipeline_schedule(kind, p, m, warmups=w), draw(st.integers(0, p - 2))


times = st.floats(0.5, 2.0)


@settings(max_examples=40, deadline=None)
@given(warmup_plans("1f1b"), times, times, st.floats(0.0, 1.0))
def test_absorption_1f1b_grows_by_exactly_2c(plan, tf, tb, tw):
    s, k = plan
    cstar = absorption_bound(s.warmups[k] - s.warmups[k + 1], tf, tb + tw)
    base = T(s, tf, tb, tw)
    for c in np.linspace(0.0, cstar, 4)[1:]:
        assert T(s, tf, tb, tw, delays=delays_on(s.p, k, c)) - base == pytest.approx(2 * c)


@settings(max_examples=40, deadline=None)
@given(warmup_plans("zb"), times, times, st.floats(0.2, 2.0))
def test_absorption_zero_bubble_between_c_and_2c(plan, tf, tb, tw):
    s, k = plan
    cstar = absorption_bound(s.warmups[k] - s.warmups[k + 1], tf, tb)
    base = T(s, tf, tb, tw)
    for c in np.linspace(0.0, cstar, 4)[1:]:
        grow = T(s, tf, tb, tw, delays=delays_on(s.p, k, c)) - base
        assert c - 1e-9 <= grow <= 2 * c + 1e-9


@settings(max_examples=40, deadline=None)
@given(warmup_plans("zb"))
def test_absorption_healthy_plans_equal_times_grow_by_exactly_c_up_to_one_op(plan):
    """Planned on a healthy network, the W's of stage k go to its tail: the last gradient's
    crossing is hidden while c <= t (and exposed beyond, up to 2c - t)."""
    s, k = plan
    if s.warmups[k] - s.warmups[k + 1] < 2:
        return
    base = T(s, 1.0, 1.0, 1.0)
    for c in (0.25, 0.5, 1.0):
        assert T(s, 1.0, 1.0, 1.0, delays=delays_on(s.p, k, c)) - base == pytest.approx(c)


@settings(max_examples=40, deadline=None)
@given(warmup_plans("zb"), st.integers(0, 2), times, times, times, st.data())
def test_absorption_with_a_memory_budget_does_not_grow_with_m(plan, extra, tf, tb, tw, data):
    """A budget puts one W into every steady cycle, and each adds t_W / 2 of slack: up to
    c2 = ((Δ-1)(t_F+t_B) + Δ t_W)/2 the cost does not depend on m (between c and 2c up to c1)."""
    s0, k = plan
    budget = s0.warmups[0] + extra
    m1 = s0.warmups[0] + budget + 10
    delta = s0.warmups[k] - s0.warmups[k + 1]
    c1 = absorption_bound(delta, tf, tb)
    c2 = absorption_bound(delta, tf, tb, t_w=tw)

    def grow(m, c):
        s = pipeline_schedule("zb", s0.p, m, warmups=s0.warmups, memory=budget)
        return T(s, tf, tb, tw, delays=delays_on(s.p, k, c)) - T(s, tf, tb, tw)

    c = data.draw(st.floats(0.0, c1)) if c1 > 0 else 0.0
    assert c - 1e-9 <= grow(m1, c) <= 2 * c + 1e-9
    c = data.draw(st.floats(c1, max(c1, 0.999 * c2)))
    assert grow(m1, c) == pytest.approx(grow(m1 + 12, c), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["1f1b", "zb"]).flatmap(warmup_plans), times, times, times)
def test_beyond_the_bound_growth_is_order_m_c(plan, tf, tb, tw):
    s, k = plan
    base = T(s, tf, tb, tw)
    c1, c2 = base, 2 * base  # past every knee: the most-crossing path dominates
    slope = (T(s, tf, tb, tw, delays=delays_on(s.p, k, c2))
             - T(s, tf, tb, tw, delays=delays_on(s.p, k, c1))) / (c2 - c1)
    assert slope >= 2 * math.ceil(s.m / s.warmups[k]) - 1e-6


@pytest.mark.parametrize("p, m", [(2, 30), (4, 12), (4, 30), (6, 24)])
def test_absorption_on_every_link(p, m):
    t = 10 * MS
    s = pipeline_schedule("zb-h2", p, m)
    base = T(s, t, t, t)
    for link in range(p - 1):
        for c in (2.5 * MS, 5 * MS, 10 * MS):
            assert T(s, t, t, t, delays=delays_on(p, link, c)) - base == pytest.approx(c)
        # just past the knee the growth is no longer bounded by 2c
        c = 12 * MS
        far = (T(s, t, t, t, delays=delays_on(p, link, 4 * c)) - base) / (4 * c)
        assert far > 2.0


# --------------------------------------------------------------------------- properties


configs = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["1f1b", "gpipe", "zb-h1", "zb-h2", "greedy", "interleaved"]),
        "p": st.integers(1, 6),
        "m": st.integers(1, 6),
        "tf": times,
        "tb": times,
        "tw": st.floats(0.0, 2.0),
        "hol": st.booleans(),
        "tx": st.sampled_from([0.0, 0.0, 0.3]),
    }
)


def make(cfg):
    m = cfg["m"] * cfg["p"] if cfg["kind"] == "interleaved" else cfg["m"] * 3
    v = 2 if cfg["kind"] == "interleaved" else 1
    return pipeline_schedule(cfg["kind"], cfg["p"], m, v=v)


def link_delays(data, p, v):
    n = p - 1 if v == 1 else p
    return np.array([data.draw(st.sampled_from([0.0, 0.0, 0.4, 1.5, 3.0])) for _ in range(n)])


@settings(max_examples=80, deadline=None)
@given(configs, st.data())
def test_replay_more_delay_never_shortens_an_iteration(cfg, data):
    s = make(cfg)
    d1 = link_delays(data, s.p, s.v)
    d2 = d1 + link_delays(data, s.p, s.v)
    kw = dict(hol=cfg["hol"], transfer=cfg["tx"])
    r1 = simulate_pipeline(s, cfg["tf"], cfg["tb"], cfg["tw"], delays=d1, **kw)
    r2 = simulate_pipeline(s, cfg["tf"], cfg["tb"], cfg["tw"], delays=d2, **kw)
    assert r2.iteration_time >= r1.iteration_time - 1e-9
    c1, c2 = r1.kind <= 2, r2.kind <= 2  # compute ops, listed in the same plan order
    assert np.all(r2.finish[c2] >= r1.finish[c1] - 1e-9)


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["1f1b", "zb-h1", "zb-h2", "greedy"]),
    st.integers(1, 7),
    st.integers(1, 25),
    times, times, st.floats(0.0, 2.0),
    st.booleans(),
    st.sampled_from([0.0, 0.3]),
    st.one_of(st.none(), st.integers(1, 20)),
    st.data(),
)
def test_dispatched_plans_never_deadlock(kind, p, m, tf, tb, tw, hol, tx, cap, data):
    s = pipeline_schedule(kind, p, m)
    d = link_delays(data, p, 1)
    for mode in ("online", "replan"):
        res = simulate_pipeline(s, tf, tb, tw, delays=d, mode=mode, hol=hol, transfer=tx,
                                cap=cap if mode == "replan" else None)
        assert np.all(np.isfinite(res.finish))
        assert np.sum(res.kind <= 2) == p * m * (3 if s.split_backward else 2)
        budget = P._mode_memory(s, mode, res.warmups)
        if kind == "1f1b":
            assert res.peak_memory.tolist() == list(res.warmups)
        elif budget is not None:
            assert res.peak_memory.max() <= budget
        if mode == "replan" and cap is not None:
            assert res.warmups[0] <= cap
            assert np.all(np.diff(res.warmups) <= 0)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["1f1b", "zb-h1", "zb-h2", "greedy"]),
    st.integers(1, 6), st.integers(1, 20), times, times, times, st.booleans(),
    st.sampled_from([0.0, 0.3]), st.sampled_from(MODES), st.data(),
)
def test_dispatcher_and_timeline_engine_agree(kind, p, m, tf, tb, tw, hol, tx, mode, data):
    """The live dispatcher's own clock equals the timeline engine run on the order it chose."""
    s = pipeline_schedule(kind, p, m)
    d = link_delays(data, p, 1)
    res = simulate_pipeline(s, tf, tb, tw, delays=d, mode=mode, hol=hol, transfer=tx)
    if mode == "replay":
        d = np.zeros(p - 1)
    arr = lambda x: np.full(p, float(x))  # noqa: E731
    ld, lt = P._link_array("d", d, p, 1), P._link_array("t", tx, p, 1)
    warm = P._mode_warmups(s, mode, ld, arr(tf), None)
    if mode == "replay" and not s.dispatched:
        return
    okind, omb, _, ostart = P._dispatch(s, arr(tf), arr(tb), arr(tw), ld, lt, hol, warm,
                                        s.split_backward, P._alternates(s, mode),
                                        P._mode_memory(s, mode, warm) if warm else s.memory)
    if mode == "replay":  # the plan was made on the healthy network: replay it there
        res = simulate_pipeline(s, tf, tb, tw, hol=hol, transfer=tx)
    for st_ in range(p):
        ids = np.flatnonzero((res.stage == st_) & (res.kind <= 2))
        ids = ids[np.argsort(res.start[ids], kind="stable")]
        np.testing.assert_allclose(res.start[ids], ostart[st_], atol=1e-9)
        assert res.kind[ids].tolist() == okind[st_].tolist()


def test_replan_is_not_monotone_at_plan_switches():
    """More delay can buy more slack: the +2 rule under-provisions when t_B >> t_F."""
    s = pipeline_schedule("zb-h1", 2, 9)
    a = simulate_pipeline(s, 0.5, 1.6, 0.6, delays=[0.0], mode="replan")
    b = simulate_pipeline(s, 0.5, 1.6, 0.6, delays=[0.1], mode="replan")
    assert (a.warmups, b.warmups) == ((3, 1), (4, 1))
    assert b.iteration_time < a.iteration_time


# --------------------------------------------------------------------------- HOL and transfers


def test_hol_blocks_the_sending_stream_hand_case():
    s = pipeline_schedule("gpipe", 2, 2)
    assert T(s, 1.0, 1.0, delays=[1.0]) == pytest.approx(8.0)
    res = simulate_pipeline(s, 1.0, 1.0, delays=[1.0], hol=True)
    assert res.iteration_time == pytest.approx(10.0)
    assert res.order(0) == ["F0", ">0", "F1", ">1", "B0", "B1"]
    assert res.order(1) == ["F0", "F1", "B0", "<0", "B1", "<1"]


def test_cpu_sender_transfer_hand_case():
    s = pipeline_schedule("gpipe", 2, 2)
    res = simulate_pipeline(s, 1.0, 1.0, transfer=1.5)
    assert res.iteration_time == pytest.approx(10.0)
    sends = res.kind >= 3
    assert sorted(res.resource_names[r] for r in set(res.resource[sends].tolist())) == [
        "stage 0 act sender", "stage 1 grad sender"]
    assert OP_KINDS[res.kind[np.flatnonzero(res.resource == 2)[0]]] == "send-act"


def test_offloading_removes_head_of_line_blocking():
    s = pipeline_schedule("zb-h2", 4, 12)
    kw = dict(delays=[30 * MS, 0, 0])
    on = T(s, 10 * MS, 10 * MS, 10 * MS, hol=True, **kw)
    off = T(s, 10 * MS, 10 * MS, 10 * MS, hol=False, **kw)
    assert on > off
    assert on >= 12 * (30 + 40) * MS - 1e-9  # stage 0 also holds 12 sends of 30 ms


def test_interleaved_wrap_link_delay():
    s = pipeline_schedule("interleaved", 2, 4, v=2)
    base = T(s, 1.0, 2.0)
    assert T(s, 1.0, 2.0, delays=[0.0, 0.5]) > base  # the p-1 -> 0 hand-over link
    assert T(s, 1.0, 2.0, delays=0.5) >= T(s, 1.0, 2.0, delays=[0.5, 0.0])


# --------------------------------------------------------------------------- traces


def test_trace_replay_equals_single_iterations():
    s = pipeline_schedule("zb-h1", 4, 12)
    trace = np.array([[0, 0, 0], [0.02, 0, 0], [0, 0.05, 0.01], [0.02, 0, 0]])
    tr = simulate_trace(s, 0.01, 0.01, 0.01, delay_trace=trace)
    want = [T(s, 0.01, 0.01, 0.01, delays=row) for row in trace]
    np.testing.assert_allclose(tr.iteration_times, want)
    assert not tr.switched.any() and tr.total_time == pytest.approx(sum(want))


def test_trace_replan_switches_at_iteration_boundaries():
    s = pipeline_schedule("zb-h1", 4, 30)
    trace = np.zeros((5, 3))
    trace[2:, 0] = 0.03
    lag1 = simulate_trace(s, 0.01, 0.01, 0.01, delay_trace=trace, mode="replan")
    lag0 = simulate_trace(s, 0.01, 0.01, 0.01, delay_trace=trace, mode="replan", lag=0)
    assert lag1.warmups[2].tolist() == [7, 5, 3, 1]  # still the healthy plan
    assert lag1.warmups[3].tolist() == [10, 5, 3, 1]
    assert lag1.switched.tolist() == [False, False, False, True, False]
    assert lag0.switched.tolist() == [False, False, True, False, False]
    for k in range(5):
        one = simulate_pipeline(s, 0.01, 0.01, 0.01, delays=trace[k], mode="replan")
        assert lag0.iteration_times[k] == pytest.approx(one.iteration_time)
    assert lag1.iteration_times[3] == pytest.approx(0.96)


# --------------------------------------------------------------------------- small API


def test_slackness_and_bound():
    assert slackness([7, 5, 3, 1]).tolist() == [2, 2, 2]
    assert slackness([10, 5, 3, 1]).tolist() == [5, 2, 2]
    assert absorption_bound(1, 0.01, 0.01) == 0.0
    assert absorption_bound(4, 0.02, 0.01) == pytest.approx(0.045)
    assert absorption_bound(np.array([2, 3]), 1.0, 1.0).tolist() == [1.0, 2.0]


def test_replan_warmups_rules():
    assert replan_warmups([0.0, 0.0, 0.0], 0.01) == (7, 5, 3, 1)
    assert replan_warmups([0.07, 0.0], 0.01) == (12, 3, 1)  # ceil(7.000000000000001) is 7
    assert replan_warmups([0.015, 0.0], [0.01, 0.02, 0.03]) == (7, 3, 1)
    assert replan_warmups([0.03, 0, 0], 0.01, m=6) == (6, 5, 3, 1)
    assert replan_warmups([], 0.01) == (1,)
    # memory caps: the budget goes to the slow link first, the plan stays non-increasing
    assert replan_warmups([0.03, 0, 0], 0.01, cap=7) == (7, 3, 2, 1)
    assert replan_warmups([0.03, 0, 0], 0.01, cap=10) == (10, 5, 3, 1)
    assert replan_warmups([0.03, 0, 0], 0.01, cap=2) == (2, 2, 2, 1)
    assert replan_warmups([0.0, 0.05, 0.0], 0.01, cap=9) == (9, 8, 2, 1)


def test_schedule_warmups_and_clipping():
    assert pipeline_schedule("1f1b", 4, 8).warmups == (4, 3, 2, 1)
    assert pipeline_schedule("zb-h1", 4, 8).warmups == (4, 3, 2, 1)
    assert pipeline_schedule("zb-h2", 4, 5).warmups == (5, 5, 3, 1)
    assert pipeline_schedule("zb", 3, 4, warmups=[9, 2, 1]).warmups == (4, 2, 1)
    assert pipeline_schedule("greedy", 4, 8).warmups is None
    # issue 25 added every schedule torch.distributed.pipelining ships
    assert set(SCHEDULE_KINDS) == {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb",
                                   "greedy", "looped-bfs", "interleaved-zb", "zb-v", "dualpipe",
                                   "dualpipe-v"}


def test_result_is_read_only_and_labelled():
    res = simulate_pipeline(pipeline_schedule("zb-h1", 2, 3), 1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        res.start[0] = 0.0
    assert res.order(1)[:3] == ["F0", "B0", "F1"]
    assert res.kind_names == OP_KINDS
    assert len(res.resource_names) == 3 * 2
    assert res.microbatch.size == res.chunk.size == res.stage.size == 2 * 9


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "args, kwargs, word",
    [
        (("pipedream", 4, 8), {}, "kind"),
        (("1f1b", 0, 8), {}, "p"),
        (("1f1b", 4, 0), {}, "m"),
        (("1f1b", 4, 8), {"v": 2}, "v"),
        (("interleaved", 4, 8), {"v": 1}, "v"),
        (("interleaved", 4, 6), {"v": 2}, "m must be a multiple"),
        (("gpipe", 4, 8), {"warmups": [4, 3, 2, 1]}, "warmups"),
        (("zb", 4, 8), {}, "warmups is required"),
        (("zb", 4, 8), {"warmups": [3, 4, 2, 1]}, "never increase"),
        (("zb", 4, 8), {"warmups": [3, 2, 1]}, "warmups"),
        (("1f1b", 2, 8), {"warmups": [2, 0]}, "warmups"),
    ],
)
def test_schedule_validation(args, kwargs, word):
    with pytest.raises(ValueError, match=word):
        pipeline_schedule(*args, **kwargs)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"t_f": 0.0}, "t_f"),
        ({"t_b": -1.0}, "t_b"),
        ({"t_w": -1.0}, "t_w"),
        ({"t_f": [1.0, 1.0]}, "t_f"),
        ({"delays": [0.1, 0.1]}, "delays"),
        ({"delays": [-0.1, 0, 0]}, "delays"),
        ({"transfer": [0.1]}, "transfer"),
        ({"mode": "adaptive"}, "mode"),
        ({"hol": 1}, "hol"),
        ({"cap": 4}, "cap"),
        ({"cap": 0, "mode": "replan"}, "cap"),
    ],
)
def test_simulate_validation(kwargs, word):
    args = dict(t_f=1.0, t_b=1.0, t_w=1.0)
    args.update(kwargs)
    s = pipeline_schedule("zb-h1", 4, 8)
    with pytest.raises(ValueError, match=word):
        simulate_pipeline(s, **args)


def test_other_validation():
    with pytest.raises(ValueError, match="schedule"):
        simulate_pipeline("1f1b", 1.0, 1.0)
    with pytest.raises(ValueError, match="mode"):
        simulate_pipeline(pipeline_schedule("gpipe", 2, 2), 1.0, 1.0, mode="replan")
    s = pipeline_schedule("zb-h1", 4, 8)
    with pytest.raises(ValueError, match="delay_trace"):
        simulate_trace(s, 1.0, 1.0, delay_trace=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="delay_trace"):
        simulate_trace(s, 1.0, 1.0, delay_trace=np.zeros((0, 3)))
    with pytest.raises(ValueError, match="lag"):
        simulate_trace(s, 1.0, 1.0, delay_trace=np.zeros((2, 3)), lag=-1)
    with pytest.raises(ValueError, match="cap"):
        simulate_trace(s, 1.0, 1.0, delay_trace=np.zeros((2, 3)), cap=3)
    with pytest.raises(ValueError, match="delta"):
        absorption_bound(1.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="t_f"):
        absorption_bound(2, 0.0, 1.0)
    with pytest.raises(ValueError, match="warmups"):
        slackness([])
    with pytest.raises(ValueError, match="delays"):
        replan_warmups([-1.0], 0.01)
    with pytest.raises(ValueError, match="t_f"):
        replan_warmups([0.0], [0.01])
    with pytest.raises(ValueError, match="cap"):
        replan_warmups([0.0], 0.01, cap=0)
    with pytest.raises(ValueError, match="stage"):
        simulate_pipeline(s, 1.0, 1.0).order(4)


def test_kernels_without_jit():
    """The kernels stay correct as plain Python (NUMBA_DISABLE_JIT=1)."""
    code = (
        "from uneven.schedulers.pipeline import *\n"
        "s = pipeline_schedule('1f1b', 4, 8)\n"
        "assert simulate_pipeline(s, 1.0, 2.0).iteration_time == 33.0\n"
        "z = pipeline_schedule('zb-h2', 4, 12)\n"
        "t = [round(simulate_pipeline(z, .01, .01, .01, delays=[c, 0, 0]).iteration_time, 6)"
        " for c in (0, .01, .02)]\n"
        "assert t == [0.39, 0.4, 0.42], t\n"
        "r = simulate_pipeline(pipeline_schedule('zb-h1', 4, 30), .01, .01, .01,"
        " delays=[.03, 0, 0], mode='replan')\n"
        "assert r.warmups == (10, 5, 3, 1) and round(r.iteration_time, 6) == 0.96\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
