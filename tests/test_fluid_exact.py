"""Fluid exact mode is exact at any clock offset, checked against an independent simulator.

The engine and its pure-Python reference share one event rule, so comparing them cannot catch a
wrong rule. Here an event-by-event max-min simulator on exact rationals (``fractions.Fraction``,
written from the definition: no tie windows, no batching) is the oracle, and the property the
issue asks for is tested directly: shifting every arrival by 10^4 s shifts every finish by the
same 10^4 s, within 1e-9 of each flow's completion time.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines import fluid
from uneven.engines.fluid import _reference_simulate_fluid, simulate_fluid

OFFSET = 1e4


def exact_fluid(ptr, links, capacity, size, arrival, weight=None, latency=None):
    """Finish times (as Fractions) of an event-by-event max-min fair simulation on rationals.

    Every input float is converted exactly; rates come from progressive filling in exact
    arithmetic (every link at the minimum share freezes its flows at once), and a flow completes
    when its remaining bytes are exactly zero. Events: the next arrival or the next completion.
    """
    n = len(ptr) - 1
    paths = [[int(x) for x in links[ptr[f]:ptr[f + 1]]] for f in range(n)]
    cap = [Fraction(float(c)) for c in capacity]
    rem = [Fraction(float(s)) for s in size]
    arr = [Fraction(float(a)) for a in arrival]
    w = [Fraction(float(x)) for x in (weight if weight is not None else [1.0] * n)]
    lat = [Fraction(float(x)) for x in (latency if latency is not None else [0.0] * n)]
    pending = sorted(range(n), key=lambda f: (arr[f], f))
    active, finish = [], [None] * n
    now = Fraction(0)
    while pending or active:
        rate = {}
        unfrozen = set(active)
        used = [Fraction(0)] * len(cap)
        while unfrozen:
            shares = {}
            for l in range(len(cap)):
                ws = sum((w[f] for f in unfrozen if l in paths[f]), Fraction(0))
                if ws:
                    shares[l] = (cap[l] - used[l]) / ws
            best = min(shares.values())
            for l, sh in shares.items():
                if sh != best:
                    continue
                for f in [f for f in unfrozen if l in paths[f]]:
                    unfrozen.discard(f)
                    rate[f] = best
                    for l2 in paths[f]:
                        used[l2] += w[f] * best
        t_c = min((now + rem[f] / rate[f] for f in active), default=None)
        t_a = arr[pending[0]] if pending else None
        t = t_c if t_a is None or (t_c is not None and t_c <= t_a) else t_a
        for f in active:
            rem[f] -= rate[f] * (t - now)
        now = t
        for f in [f for f in active if rem[f] == 0]:
            active.remove(f)
            finish[f] = now + lat[f]
        while pending and arr[pending[0]] == now:
            f = pending.pop(0)
            if paths[f]:
                active.append(f)
            else:
                finish[f] = now + lat[f]
    return finish


def _close_to_exact(got, exact, arrival, rel=1e-9):
    """|got - exact| within ``rel`` of each flow's exact completion time, plus 8 ulps of the
    clock (what rounding the finish time itself can cost)."""
    for g, e, a in zip(got, exact, arrival, strict=True):
        fct = float(e - Fraction(float(a)))
        slack = rel * fct + 8 * math.ulp(float(e))
        assert abs(Fraction(float(g)) - e) <= Fraction(slack), (float(g), float(e), fct)


# --------------------------------------------------------------------------- the issue's instance


def test_issue_instance_at_an_offset_matches_the_unshifted_run():
    """3 flows on one 1 GB/s link, 1000, 1002 and 1e6 bytes: 3000, 3004, 1,002,002 ns, at t = 0
    and at t = 1e4 s (the old rule gave 3006 and 1,002,004 there)."""
    args = ([0, 1, 2, 3], [0, 0, 0], [1e9], [1000.0, 1002.0, 1e6])
    base = simulate_fluid(*args).finish
    assert np.allclose(base * 1e9, [3000.0, 3004.0, 1002002.0], rtol=1e-12)
    shifted = simulate_fluid(*args, arrival=[OFFSET] * 3).finish
    # 1e-9 of 3 us is below one ulp of 1e4 s (1.8e-12 s): compare to the exact rational run.
    exact = exact_fluid(*args, [OFFSET] * 3)
    _close_to_exact(shifted, exact, [OFFSET] * 3)
    assert np.allclose((shifted - OFFSET) * 1e9, [3000.0, 3004.0, 1002002.0], atol=2e-3)


def test_offset_regression_the_old_clock_relative_tie_fails():
    """A case where the old rule (ties within 1e-12 of the clock: 10 ns at 1e4 s) is wrong by more
    than 1e-9 of the completion times, and the new rule (1e-12 of the step + two ulps) is not.
    The pure-Python reference reads the tie constants at call time, so it can run either rule."""
    ptr, links, cap = [0, 1, 2, 3], [0, 0, 0], [1e4]
    size = [1000.0, 1000.0 + 3e-5, 1e6]  # the first two finish 9 ns apart at 0.3 s
    arrival = [OFFSET] * 3
    exact = exact_fluid(ptr, links, cap, size, arrival)
    unshifted = simulate_fluid(ptr, links, cap, size).finish
    for run in (simulate_fluid(ptr, links, cap, size, arrival=arrival),
                _reference_simulate_fluid(ptr, links, cap, size, arrival=arrival)):
        _close_to_exact(run.finish, exact, arrival)
        assert np.all(np.abs((run.finish - OFFSET) - unshifted) <= 1e-9 * unshifted)
    old = (fluid._TIE, fluid._ULP2)
    try:
        fluid._TIE, fluid._ULP2 = 0.0, 1e-12  # exactly the old window: 1e-12 * |t_c|
        stale = _reference_simulate_fluid(ptr, links, cap, size, arrival=arrival).finish
    finally:
        fluid._TIE, fluid._ULP2 = old
    assert np.max(np.abs((stale - OFFSET) - unshifted) / unshifted) > 1e-9


# --------------------------------------------------------------------------- the level cut

# Six flows of an 8-node H800 all-to-all (PXN: NVLink to the rail GPU, then its NIC); found by
# comparing the engine with SimGrid. (src GPU, dst GPU, bytes, arrival s)
H800_SIX = [(28, 33, 6656838.0, 0.00020467070755415473),
            (26, 9, 4986357.0, 0.00024346060527408062),
            (46, 33, 4304107.0, 0.00032364203624555773),
            (14, 33, 1058004.0, 0.000351815638241507),
            (27, 17, 1703941.0, 0.0003518238570608445),
            (61, 33, 640533.0, 0.0003999335891906991)]


def test_a_flow_at_the_departing_level_reached_by_another_link_is_refilled():
    """At 443 us flow 5 leaves its NIC link at 16.7 GB/s. Flow 2 shares that link at 16.7 GB/s
    too (exactly 50/3 GB/s, but computed through another order of freezes, an ulp below flow 5's
    rate); it must rise to 33.3 GB/s. An engine that re-fills only the flows at or above the
    departing rate, compared in floating point, left it at 16.7 GB/s: flow 0 then finished 8.6 us
    late. SimGrid 3.32 gives 468.7963 and 471.6134 us for flows 0 and 1."""
    from uneven.topology import h800_cluster

    topo = h800_cluster(8)
    src, dst, size, arrival = (list(c) for c in zip(*H800_SIX, strict=True))
    ptr, links = topo.paths(src, dst)
    exact = exact_fluid(ptr, links, topo.capacity, size, arrival)
    for run in (simulate_fluid(ptr, links, topo.capacity, size, arrival=arrival),
                _reference_simulate_fluid(ptr, links, topo.capacity, size, arrival=arrival)):
        _close_to_exact(run.finish, exact, arrival)
    assert np.allclose([float(x) * 1e6 for x in exact[:2]], [468.7963, 471.6134], atol=1e-4)


def test_engine_matches_reference_on_an_all_to_all_of_300_flows():
    """Random sizes and Poisson arrivals on an 8-node H800 all-to-all (the benchmark's workload,
    scaled down): every rate is shared with ~20 others and many levels tie exactly."""
    from uneven.topology import h800_cluster

    topo = h800_cluster(8)
    rng = np.random.default_rng(0)
    n = 300
    src = rng.integers(0, 64, n)
    dst = (src + rng.integers(1, 64, n)) % 64
    size = np.round(np.exp(rng.uniform(np.log(64e3), np.log(16e6), n)))
    arrival = np.cumsum(rng.exponential(1.5e-6, n))
    ptr, links = topo.paths(src, dst)
    got = simulate_fluid(ptr, links, topo.capacity, size, arrival=arrival)
    ref = _reference_simulate_fluid(ptr, links, topo.capacity, size, arrival=arrival)
    assert np.all(np.abs(got.finish - ref.finish) <= 1e-9 * (ref.finish - arrival))


# --------------------------------------------------------------------------- random instances


@st.composite
def instances(draw, max_flows=6, max_links=3):
    n_links = draw(st.integers(1, max_links))
    n = draw(st.integers(1, max_flows))
    paths = [draw(st.lists(st.integers(0, n_links - 1), max_size=n_links, unique=True))
             for _ in range(n)]
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64)
    links = np.array([x for p in paths for x in p], dtype=np.int64)
    cap = [draw(st.sampled_from([1.0, 2.0, 3.0, 5.0, 7.5])) for _ in range(n_links)]
    # Sizes near one another (equal, or a hair apart) make the near-ties the rule is about;
    # completion times are seconds, so 1e-9 of them is far above the ulps of a 1e4 s clock.
    base = draw(st.sampled_from([10.0, 30.0, 100.0]))
    size = [base * draw(st.sampled_from([1.0, 2.0, 3.0])) + draw(st.sampled_from(
        [0.0, 0.0, 1e-9, 3e-8, 1e-6, 0.5])) for _ in range(n)]
    arrival = [draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 7.0])) for _ in range(n)]
    weight = [float(draw(st.integers(1, 3))) for _ in range(n)]
    return ptr, links, cap, size, arrival, weight


@settings(max_examples=150, deadline=None)
@given(instances())
def test_engine_and_reference_match_exact_rationals_at_zero_and_at_an_offset(inst):
    ptr, links, cap, size, arrival, weight = inst
    for off in (0.0, OFFSET):
        arr = [a + off for a in arrival]
        exact = exact_fluid(ptr, links, cap, size, arr, weight)
        got = simulate_fluid(ptr, links, cap, size, arrival=arr, weight=weight).finish
        _close_to_exact(got, exact, arr)
        ref = _reference_simulate_fluid(ptr, links, cap, size, arrival=arr, weight=weight).finish
        _close_to_exact(ref, exact, arr)


@settings(max_examples=150, deadline=None)
@given(instances(max_flows=12, max_links=4))
def test_shifting_every_arrival_shifts_every_finish(inst):
    """The issue's test: finish - offset equals the unshifted run within 1e-9 relative."""
    ptr, links, cap, size, arrival, weight = inst
    base = simulate_fluid(ptr, links, cap, size, arrival=arrival, weight=weight)
    shifted = simulate_fluid(ptr, links, cap, size, arrival=[a + OFFSET for a in arrival],
                             weight=weight)
    fct = base.finish - base.start
    assert np.all(np.abs((shifted.finish - OFFSET) - base.finish) <= 1e-9 * fct)
    assert shifted.n_events == base.n_events


@pytest.mark.parametrize("capacity, weight", [([5e-324], None), ([1e-300], [2.0**60])])
def test_degenerate_capacities_are_refused_not_divided_by(capacity, weight):
    with pytest.raises(ValueError, match="capacity|weight"):
        simulate_fluid([0, 1], [0], capacity, [1.0], weight=weight)
