"""The one-pass replay kernel against the generic route (ops and predecessors timed by the
timeline engine, and by its pure-Python reference), and the quick input checks of
``simulate_pipeline`` against the full ones."""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from uneven.engines._timeline_kernel import _reference_timeline
from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline

FIELDS = ("iteration_time", "bubble_fraction", "busy", "peak_memory", "warmups", "resource",
          "start", "finish", "kind", "microbatch", "chunk", "stage", "pair_microbatch",
          "resource_names")


@st.composite
def cases(draw, max_p=6, max_m=10):
    """A schedule of any kind, per-stage times and per-link delays and transfers (seconds); half
    the cases on a grid of whole and quarter numbers, so that ties are exact."""
    kind = draw(st.sampled_from(P.SCHEDULE_KINDS))
    p = draw(st.integers(1, max_p))
    if kind == "interleaved":
        v = draw(st.integers(2, 3))
        m = p * draw(st.integers(1, 3))
        sched = pipeline_schedule(kind, p, m, v=v)
    elif kind in ("looped-bfs", "interleaved-zb"):
        v = draw(st.integers(2, 3))
        m = draw(st.integers(1, max_m).filter(lambda m: m % max(1, m // p) == 0))
        sched = pipeline_schedule(kind, p, m, v=v)
    elif kind in ("zb-v", "dualpipe-v", "dualpipe"):
        if kind == "dualpipe":
            p = 2 * max(1, p // 2)
        lo = 2 * p if kind != "zb-v" else 1
        m = draw(st.integers(lo, lo + max_m))
        m += m % 2 if kind == "dualpipe" else 0
        sched = pipeline_schedule(kind, p, m)
        v = sched.v
    else:
        v, m = 1, draw(st.integers(1, max_m))
        warm = None
        if kind == "zb":  # any warm-ups that do not grow along the pipe
            warm = sorted(draw(st.lists(st.integers(1, m), min_size=p, max_size=p)),
                          reverse=True)
        sched = pipeline_schedule(kind, p, m, warmups=warm)
    n_links = p - 1 if P._wrap_v(sched) == 1 else p
    grid = draw(st.booleans())
    pos = st.sampled_from([0.25, 0.5, 1.0, 2.0]) if grid else st.floats(0.01, 3.0)
    nonneg = st.sampled_from([0.0, 0.25, 1.0, 3.0]) if grid else st.floats(0.0, 3.0)
    arr = lambda n, elems: np.array(draw(st.lists(elems, min_size=n, max_size=n)),  # noqa: E731
                                     dtype=float)
    tf, tb, tw = arr(p, pos), arr(p, pos), arr(p, nonneg)
    ld, lt = arr(n_links, nonneg), arr(n_links, nonneg)
    mode = draw(st.sampled_from(P.MODES if sched.kind in P._LIVE else ("replay",)))
    return sched, tf, tb, tw, ld, lt, mode, draw(st.booleans())


def _prepared(sched, tf, tb, tw, ld, lt, mode):
    p, v = sched.p, P._wrap_v(sched)
    ld_, lt_ = P._link_array("delays", ld, p, v), P._link_array("transfer", lt, p, v)
    return ld_, lt_, P._mode_warmups(sched, mode, ld_, tf, None)


def assert_same(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name


@settings(max_examples=150, deadline=None)
@given(cases())
def test_replay_kernel_equals_the_timeline_engine_route(case):
    """Every field bit-identical: same op ids, same rounding of every start and finish."""
    sched, tf, tb, tw, ld, lt, mode, hol = case
    ld_, lt_, warm = _prepared(sched, tf, tb, tw, ld, lt, mode)
    fast = P._simulate(sched, tf, tb, tw, ld_, lt_, mode, hol, warm, None)
    slow = P._simulate_dag(sched, tf, tb, tw, ld_, lt_, mode, hol, warm, None)
    assert_same(fast, slow)
    assert fast.resource.flags.writeable is False and fast.bubble_fraction.flags.writeable is False


@settings(max_examples=40, deadline=None)
@given(cases(max_p=4, max_m=5))
def test_replay_kernel_equals_the_pure_python_reference(case):
    """The ops and predecessors of the generic route, relaxed to a fixed point in plain Python."""
    sched, tf, tb, tw, ld, lt, mode, hol = case
    ld_, lt_, warm = _prepared(sched, tf, tb, tw, ld, lt, mode)
    res = P._simulate(sched, tf, tb, tw, ld_, lt_, mode, hol, warm, None)
    order = P._order(sched, tf, tb, tw, ld_, lt_, mode, hol, warm, None)
    dur, rsc, *_, ptr, src, dly = P._dag(sched, order, tf, tb, tw, ld_, lt_, hol)
    deps = [list(zip(src[ptr[i]:ptr[i + 1]].tolist(), dly[ptr[i]:ptr[i + 1]].tolist(),
                     strict=True)) for i in range(dur.size)]
    start, finish = _reference_timeline(dur.tolist(), rsc.tolist(), deps)
    assert res.start.tolist() == start and res.finish.tolist() == finish
    assert res.resource.tolist() == rsc.tolist()


def test_hand_case_of_one_stage_and_of_a_wrap_link():
    """p = 1 has no link (and no send), also when its chunks hand over to each other;
    interleaved chunks cross the wrap link p-1 -> 0."""
    r = simulate_pipeline(pipeline_schedule("1f1b", 1, 3), 1.0, 2.0, delays=[], transfer=[])
    assert r.iteration_time == 9.0 and r.kind.tolist() == [0, 1] * 3
    one = simulate_pipeline(pipeline_schedule("interleaved", 1, 2, v=2), 1.0, 2.0, delays=0.5,
                            transfer=0.25, hol=True)
    assert one.iteration_time == 6.0 and one.kind.max() <= 2  # (F + B) m, no sends
    s = pipeline_schedule("interleaved", 2, 2, v=2)
    base = simulate_pipeline(s, 1.0, 1.0).iteration_time
    wrap = simulate_pipeline(s, 1.0, 1.0, delays=[0.0, 0.5]).iteration_time
    assert wrap > base


# Values a caller passes: floats, ints, lists, arrays of other dtypes and shapes, and bad ones.
_scalar = st.one_of(st.sampled_from([0.0, -0.0, 1e-3, 2.5, -1.0, float("nan"), float("inf"),
                                     1e300]), st.integers(-2, 3), st.booleans())


def _value(n_ok):
    arrays = st.builds(lambda xs, dt: np.nan_to_num(np.array(xs, dtype=float), nan=-1.0)
                       .astype(dt) if dt is np.int64 else np.array(xs, dtype=dt),
                       st.lists(st.sampled_from([0.0, 1e-3, 1.0, -1.0, float("nan")]),
                                min_size=0, max_size=n_ok + 1),
                       st.sampled_from([np.float64, np.float32, np.int64]))
    lists = st.lists(st.sampled_from([0.0, 1.0, 2]), min_size=n_ok, max_size=n_ok)
    # Mostly what the quick path takes (positive floats, float64 arrays of the right length).
    good = st.one_of(st.sampled_from([1e-3, 2.5]),
                     st.lists(st.sampled_from([1e-3, 1.0, 7.5]), min_size=n_ok, max_size=n_ok)
                     .map(lambda xs: np.array(xs, dtype=np.float64)))
    anything = st.one_of(_scalar, arrays, lists, arrays.map(lambda a: a.reshape(1, -1)))
    return st.integers(0, 9).flatmap(lambda k: good if k < 8 else anything)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["1f1b", "interleaved", "zb-h1"]), st.integers(2, 4), st.data())
def test_quick_checks_accept_exactly_what_the_full_checks_accept(kind, p, data):
    """Whatever the quick checks pass, the full checks pass with the same arrays and bound;
    whatever the full checks refuse, the quick checks refuse (and leave the message to them)."""
    sched = pipeline_schedule(kind, p, p, v=2 if kind == "interleaved" else 1)
    v = sched.v
    n_links = p if v > 1 else p - 1
    tf, tb, tw = (data.draw(_value(p)) for _ in range(3))
    ld, lt = (data.draw(_value(n_links)) for _ in range(2))
    quick = P._quick_inputs(sched, tf, tb, tw, ld, lt)
    try:
        _, *times, _, _ = P._check_common(sched, tf, tb, tw, "replay", False)
        times += [P._link_array("delays", ld, p, v), P._link_array("transfer", lt, p, v)]
    except ValueError:
        assert quick is None
        return
    if quick is None:  # a legal value of another type: the full checks take it
        assert any(type(x) is not float and not (isinstance(x, np.ndarray)
                                                 and x.dtype == np.float64)
                   for x in (tf, tb, tw, ld, lt)) or any(np.ndim(x) > 1 for x in (ld, lt))
        return
    event("quick path")
    for got, want in zip(quick[:5], times, strict=True):
        assert got.dtype == np.float64 and np.array_equal(got, want)
    f, b, w, d, t = times
    m = sched.m
    bound = (m * (sum(f.tolist()) + sum(b.tolist()) + sum(w.tolist()))
             + 2.0 * m * v * p * (float(d.max()) + float(t.max())))
    assert quick[5] == bound


def test_quick_and_full_paths_give_the_same_result():
    """Floats and float64 arrays take the quick path; lists and ints the full one."""
    s = pipeline_schedule("zb-h2", 4, 12)
    tf = np.array([0.01, 0.012, 0.01, 0.011])
    quick = simulate_pipeline(s, tf, 0.02, 0.01, delays=np.array([0.0, 0.03, 0.0]),
                              transfer=0.001, hol=True)
    full = simulate_pipeline(s, tf.tolist(), 0.02, 0.01, delays=[0, 0.03, 0], transfer=0.001,
                             hol=True)
    assert_same(quick, full)
    with pytest.raises(ValueError, match="t_b must have every entry > 0"):
        simulate_pipeline(s, tf, -0.02)
    with pytest.raises(ValueError, match="delays must contain only finite"):
        simulate_pipeline(s, tf, 0.02, delays=np.array([0.0, np.inf, 0.0]))


def test_replay_kernel_reports_a_deadlocked_order():
    """Stage 0 wants B0 before its F0: nothing can run. (No schedule makes such an order; the
    kernel still says so rather than return half a timeline.)"""
    from uneven.schedulers._replay import replay_kernel

    okind = np.array([[1, 0], [0, 1]])
    zeros = np.zeros((2, 2), dtype=np.int64)
    ones = np.ones(2)
    out = [np.empty(8, dtype=np.int64) for _ in range(5)] + [np.empty(8), np.empty(8)]
    n, makespan = replay_kernel(2, 1, 1, okind, zeros, zeros, ones, ones, 0 * ones, 0 * ones,
                                0 * ones, False, False, *out, np.empty(2), np.empty(2),
                                np.empty(2), np.empty(2, dtype=np.int64))
    assert n == -1 and np.isnan(makespan)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_replaying_a_results_own_order_gives_it_back(case):
    """``order=result`` under the result's own delays: the same ops at the same times, whichever
    mode (online, replan, replay) chose the order."""
    sched, tf, tb, tw, ld, lt, mode, hol = case
    r = simulate_pipeline(sched, tf, tb, tw, delays=ld, transfer=lt, mode=mode, hol=hol)
    again = simulate_pipeline(sched, tf, tb, tw, delays=ld, transfer=lt, hol=hol, order=r)
    for name in FIELDS:
        if name != "warmups":  # replan reports its plan there, a replay what it ran
            x, y = getattr(r, name), getattr(again, name)
            assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y), name


@settings(max_examples=150, deadline=None)
@given(cases(), st.data())
def test_a_fixed_order_never_gets_earlier_when_a_delay_grows(case, data):
    """The fixed-order replay is monotone in every link delay (a longest path through a DAG
    whose edge weights grew); the online dispatcher is not (next test)."""
    sched, tf, tb, tw, ld, lt, mode, hol = case
    r = simulate_pipeline(sched, tf, tb, tw, delays=ld, transfer=lt, mode=mode, hol=hol)
    more = ld + np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=ld.size,
                                            max_size=ld.size)))
    later = simulate_pipeline(sched, tf, tb, tw, delays=more, transfer=lt, hol=hol, order=r)
    assert later.iteration_time >= r.iteration_time - 1e-9 * max(1.0, r.iteration_time)
    # compute ops only: a link whose delay grows from zero may gain send ops (hol)
    cr, cl = (np.isin(x.kind, P.COMPUTE_KINDS) for x in (r, later))
    assert np.array_equal(r.kind[cr], later.kind[cl])
    assert np.all(later.finish[cl] >= r.finish[cr] - 1e-9 * max(1.0, r.iteration_time))


def test_zb_h1_online_is_a_list_scheduling_anomaly_not_a_wrong_time():
    """ZB-H1, p = 8, m = 16, 10 ms ops, a delay on link 5 (model): the online dispatcher ends
    +32 ms late at 4 ms but +20 ms at 5 ms. The order it chose at 5 ms, replayed at 4 ms, ends
    +18 ms late: a better order existed under the shorter delay; greedy did not find it
    (Graham's anomaly). At 4 ms stage 5's B's are always ready first, so its W's wait."""
    s = pipeline_schedule("zb-h1", p=8, m=16)

    def at(ms, **kw):
        d = np.zeros(7)
        d[5] = ms * 1e-3
        return simulate_pipeline(s, 0.01, 0.01, 0.01, delays=d, **kw)

    base = at(0, mode="online").iteration_time
    late = {ms: at(ms, mode="online") for ms in (4, 5)}
    extra = {ms: round((r.iteration_time - base) * 1e3, 6) for ms, r in late.items()}
    assert extra == {4: 32.0, 5: 20.0}
    assert round((at(4, order=late[5]).iteration_time - base) * 1e3, 6) == 18.0
    assert round((at(5, order=late[4]).iteration_time - base) * 1e3, 6) == 40.0
    assert late[4].order(5)[6:8] == ["F4", "B2"] and late[5].order(5)[6:8] == ["F4", "W0"]


@pytest.mark.parametrize("kwargs, match", [
    ({"order": "F0 B0"}, "order must be a PipelineResult"),
    ({"order": "other schedule"}, "same schedule"),
    ({"order": "own", "mode": "online"}, "order applies to mode='replay'"),
])
def test_order_is_checked(kwargs, match):
    s = pipeline_schedule("zb-h1", p=4, m=8)
    own = simulate_pipeline(s, 1.0, 1.0, 1.0, mode="online")
    other = simulate_pipeline(pipeline_schedule("zb-h1", p=4, m=6), 1.0, 1.0, 1.0)
    kwargs = dict(kwargs)
    kwargs["order"] = {"own": own, "other schedule": other}.get(kwargs["order"], kwargs["order"])
    with pytest.raises(ValueError, match=match):
        simulate_pipeline(s, 1.0, 1.0, 1.0, **kwargs)
