"""The schedules of torch.distributed.pipelining added in issue 25: looped BFS, interleaved zero
bubble, ZB-V, DualPipe and DualPipeV.

* their orders, slot by slot, against the published step programs rebuilt here in plain Python;
* every op exactly once, dependencies respected, no deadlock, on a grid of p, m (and v);
* the closed forms their sources give, at equal op times (each test names its table);
* peak memory as the sources state it, DualPipe's two parameter copies;
* the one-pass kernel against the timeline engine, bit for bit, with F&B times of any length;
* ``PipelineResult.dependencies`` against the reference route's edges, and replayed by
  ``run_timeline`` back to the result's start times;
* more delay never shortens a replayed iteration; a slow link replays (and a fixed order
  refuses the dispatcher's modes, naming ``mode``).
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines.timeline import run_timeline
from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import (
    OP_KINDS,
    delay_scan,
    pipeline_schedule,
    simulate_pipeline,
    simulate_trace,
)

NEW = ("looped-bfs", "interleaved-zb", "zb-v", "dualpipe", "dualpipe-v")
CODE = {"F": 0, "B": 1, "W": 2, "FB": 5, "BW": 6}


# --------------------------------------------------------------------------- published orders
# Each stage's order as (op, chunk, micro-batch, micro-batch of an F&B's backward half), written
# from the step programs of PyTorch's schedules.py (LoopedBFS, InterleavedZeroBubble,
# ZBVZeroBubble, DualPipeV) and DeepSeek's dualpipe.py / dualpipev.py, independently of the
# library's kernel.


def ref_looped_bfs(p, m, v):
    fwd = [("F", c, j, -1) for c in range(v) for j in range(m)]
    bwd = [("B", c, j, -1) for c in reversed(range(v)) for j in reversed(range(m))]
    return [fwd + bwd for _ in range(p)]


def ref_interleaved_zb(p, m, v):
    per_round = m // max(1, m // p)
    out = []
    for r in range(p):
        warm = min((v - 1) * per_round + p - 1 - r, v * m)
        nxt_f, nxt_b, owed, ops = [0] * v, [0] * v, [], []
        for step in range(v * m + warm):
            if step < v * m:
                c = (step // per_round) % v
                ops.append(("F", c, nxt_f[c], -1))
                nxt_f[c] += 1
            if step >= warm:
                c = v - 1 - ((step - warm) // per_round) % v
                ops.append(("B", c, nxt_b[c], -1))
                owed.append((c, nxt_b[c]))
                nxt_b[c] += 1
                if step - warm >= r:
                    ops.append(("W", *owed.pop(0), -1))
        ops += [("W", c, j, -1) for c, j in owed]
        out.append(ops)
    return out


def ref_zb_v(p, m):
    n = max(2 * p - 1, m)  # written for at least 2p - 1 micro-batches, the rest dropped
    out = []
    for r in range(p):
        ops, f, b = [], [0, 0], [0, 0]

        def put(op, c, j, ops=ops):
            if j < m:
                ops.append((op, c, j, -1))

        def fwd(c, f=f, put=put):
            put("F", c, f[c])
            f[c] += 1

        def bw(c, b=b, put=put):
            put("B", c, b[c])
            put("W", c, b[c])
            b[c] += 1

        for _ in range(2 * (p - r) - 1):
            fwd(0)
        for _ in range(r):
            fwd(1)
            fwd(0)
        for _ in range(p - r):
            fwd(1)
            bw(1)
        while f[1] < f[0] or f[0] < n:
            if f[0] < n:
                fwd(0)
            bw(0)
            fwd(1)
            bw(1)
        w = list(b)
        for _ in range(r):
            put("B", 0, b[0])
            put("B", 1, b[1])
            b[0] += 1
            b[1] += 1
        for _ in range(p - r):
            put("B", 0, b[0])
            put("W", 0, w[0])
            b[0] += 1
            w[0] += 1
        ops += [("W", 1, j, -1) for j in range(w[1], b[1]) if j < m]
        ops += [("W", 0, j, -1) for j in range(w[0], b[0]) if j < m]
        out.append(ops)
    return out


def _dual_rank(ranks, r, n_mb, chunk_of, mb_of, turn):
    """The eight steps of dualpipe.py for one rank, in phases 0 and 1."""
    ops, f, b, owed = [], [0, 0], [0, 0], []

    def F(ph):
        ops.append(("F", chunk_of(ph), mb_of(ph, f[ph]), -1))
        f[ph] += 1

    def B(ph, zero_bubble):
        j = mb_of(ph, b[ph])
        b[ph] += 1
        if zero_bubble:
            ops.append(("B", chunk_of(ph), j, -1))
            owed.append((chunk_of(ph), j))
        else:
            ops.append(("BW", chunk_of(ph), j, -1))

    def FB(ph):
        other = 1 - ph
        ops.append(("FB", chunk_of(ph), mb_of(ph, f[ph]), mb_of(other, b[other])))
        f[ph] += 1
        b[other] += 1

    def W():
        if owed:
            ops.append(("W", *owed.pop(0), -1))

    for _ in range(2 * (ranks - r - 1)):
        F(0)
    for _ in range(r + 1):
        F(0)
        F(1)
    for _ in range(ranks - r - 1):
        B(1, True)
        W()
        F(1)
    for i in range(n_mb - 2 * ranks + r + 1):
        if i == 0 and turn:
            F(0)
            B(1, False)
        else:
            FB(0)
        FB(1)
    for _ in range(ranks - r - 1):
        B(1, False)
        FB(1)
    split = False
    for i in range(r + 1):
        if i == (r + 1) // 2 and r % 2 == 1:
            split = True
        B(1, split)
        if i == (r + 1) // 2 and r % 2 == 0:
            split = True
        B(0, split)
    for _ in range(ranks - r - 1):
        W()
        B(0, True)
    for _ in range(r + 1):
        W()
    assert not owed
    return ops


def ref_dualpipe_v(p, m):
    return [_dual_rank(p, r, m, lambda ph: ph, lambda ph, k: k, r == p - 1) for r in range(p)]


def ref_dualpipe(p, m):
    half, out = m // 2, []
    for r in range(p):
        near = 0 if r < p // 2 else 1  # the direction whose first stage is on this half
        h = min(r, p - 1 - r)
        out.append(_dual_rank(p // 2, h, half, lambda ph, near=near: near ^ ph,
                              lambda ph, k, near=near: (near ^ ph) * half + k, h == p // 2 - 1))
    return out


REFERENCE = {"looped-bfs": ref_looped_bfs, "interleaved-zb": ref_interleaved_zb,
             "zb-v": lambda p, m, v: ref_zb_v(p, m),
             "dualpipe": lambda p, m, v: ref_dualpipe(p, m),
             "dualpipe-v": lambda p, m, v: ref_dualpipe_v(p, m)}


def library_order(sched):
    okind, omb, ochunk, opair, olen = P._full_order(P._fixed_order(sched), sched.p)
    names = {code: name for name, code in CODE.items()}
    return [[(names[int(okind[s, i])], int(ochunk[s, i]), int(omb[s, i]),
              int(opair[s, i]) if okind[s, i] == CODE["FB"] else -1)
             for i in range(olen[s])] for s in range(sched.p)]


def grid():
    """(kind, p, m, v) for every new kind: p up to 8, m from its least to past 3p."""
    out = []
    for p in range(1, 9):
        for m in range(1, 3 * p + 4):
            for v in (2, 3):
                out.append(("looped-bfs", p, m, v))
                if m % max(1, m // p) == 0:
                    out.append(("interleaved-zb", p, m, v))
            out.append(("zb-v", p, m, 2))
            if m >= 2 * p:
                out.append(("dualpipe-v", p, m, 2))
                if p % 2 == 0 and m % 2 == 0:
                    out.append(("dualpipe", p, m, 2))
    return out


GRID = grid()


def make(kind, p, m, v=2):
    return pipeline_schedule(kind, p, m, v=v if kind in ("looped-bfs", "interleaved-zb")
                             else None)


def test_orders_are_the_published_programs():
    for kind, p, m, v in GRID:
        assert library_order(make(kind, p, m, v)) == REFERENCE[kind](p, m, v), (kind, p, m, v)


def test_a_few_orders_by_hand():
    """Small cases worked through the step programs by hand: ZB-V and DualPipeV on their last
    stage (p = 2), looped BFS on stage 0. ``F3.1``: micro-batch 3, chunk 1; ``FB2.1+0``: the
    F of 2.1 overlapped with the full backward of micro-batch 0 on the other chunk."""
    z = library_order(make("zb-v", 2, 3))
    assert [f"{o}{j}.{c}" for o, c, j, _ in z[1]] == [
        "F0.0", "F0.1", "F1.0", "F1.1", "B0.1", "W0.1", "F2.0", "B0.0", "W0.0", "F2.1",
        "B1.1", "W1.1", "B1.0", "B2.1", "B2.0", "W1.0", "W2.1", "W2.0"]
    d = library_order(make("dualpipe-v", 2, 4))
    assert [f"{o}{j}.{c}" + (f"+{jb}" if jb >= 0 else "") for o, c, j, jb in d[1]] == [
        "F0.0", "F0.1", "F1.0", "F1.1", "F2.0", "BW0.1", "FB2.1+0", "FB3.0+1", "FB3.1+1",
        "BW2.1", "BW2.0", "B3.1", "B3.0", "W3.1", "W3.0"]
    b = library_order(make("looped-bfs", 2, 2, 2))
    assert [f"{o}{j}.{c}" for o, c, j, _ in b[0]] == [
        "F0.0", "F1.0", "F0.1", "F1.1", "B1.1", "B0.1", "B1.0", "B0.0"]


# --------------------------------------------------------------------------- validity


def _atoms(order):
    """The F, B and W each slot runs: a BW is a B and its W, an F&B an F and a BW."""
    out = []
    for op, c, j, jb in order:
        if op == "FB":
            out += [("F", c, j), ("B", 1 - c, jb), ("W", 1 - c, jb)]
        elif op == "BW":
            out += [("B", c, j), ("W", c, j)]
        else:
            out.append((op, c, j))
    return out


def _expected_atoms(sched, s):
    m, v = sched.m, sched.v
    kinds = ("F", "B", "W") if sched.split_backward else ("F", "B")
    if sched.kind == "dualpipe":  # chunk = direction; each micro-batch has one
        pairs = [(j // (m // 2), j) for j in range(m)]
    else:
        pairs = [(c, j) for c in range(v) for j in range(m)]
    return sorted((k, c, j) for k in kinds for c, j in pairs)


def test_every_op_exactly_once_and_the_warmups_stated():
    for kind, p, m, v in GRID:
        sched = make(kind, p, m, v)
        order = library_order(sched)
        for s in range(p):
            assert sorted(_atoms(order[s])) == _expected_atoms(sched, s), (kind, p, m, v, s)
            first_b = next(i for i, o in enumerate(order[s]) if o[0] in ("B", "BW", "FB"))
            assert sum(o[0] == "F" for o in order[s][:first_b]) == sched.warmups[s]


def test_no_deadlock_and_dependencies_respected_on_the_grid():
    """Unit times and random per-stage times, healthy and with delays and transfers: every op
    runs, after every op it depends on (plus the delay its edge carries)."""
    rng = np.random.default_rng(7)
    for n, (kind, p, m, v) in enumerate(GRID):
        sched = make(kind, p, m, v)
        t = rng.uniform(0.5, 2.0, (3, p)) if n % 2 else np.ones((3, p))
        n_links = p - 1 if P._wrap_v(sched) == 1 else p
        ld = rng.choice([0.0, 0.3, 1.0], n_links) if n % 3 else 0.0
        r = simulate_pipeline(sched, *t, delays=ld, transfer=0.1 * (n % 5 == 0),
                              hol=bool(n % 4 == 1))
        comp = np.isin(r.kind, P.COMPUTE_KINDS)
        slots = sum(P._full_order(P._fixed_order(sched), p)[4])
        assert comp.sum() == slots and np.isfinite(r.finish).all()
        ptr, src = r.dependencies()
        dst = np.repeat(np.arange(r.kind.size), np.diff(ptr))
        assert np.all(r.start[dst] >= r.finish[src] - 1e-9), (kind, p, m, v)


def test_the_reference_route_agrees_on_the_grid():
    """The timeline engine on the DAG (which raises on a cycle) gives the kernel's result."""
    for kind, p, m, v in GRID[::7]:
        sched = make(kind, p, m, v)
        t = np.full(p, 1.0)
        ld, lt = P._link_array("d", 0.25, p, P._wrap_v(sched)), np.zeros(max(p, 1))
        fast = P._simulate(sched, t, t, t, ld, lt, "replay", False, None, None)
        slow = P._simulate_dag(sched, t, t, t, ld, lt, "replay", False, None, None)
        assert np.array_equal(fast.start, slow.start) and fast.warmups == slow.warmups


# --------------------------------------------------------------------------- closed forms


def span_bubbles(r):
    """Idle time inside each stage's own span (first start to last finish)."""
    out = []
    for s in range(r.schedule.p):
        ids = np.flatnonzero((r.stage == s) & np.isin(r.kind, P.COMPUTE_KINDS))
        out.append(r.finish[ids].max() - r.start[ids].min() - r.busy[s])
    return np.array(out)


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 4, 3), (4, 8, 2), (4, 12, 4), (8, 16, 2),
                                     (3, 9, 5)])
def test_looped_bfs_bubble_and_memory(p, m, v):
    """Looped placement (Lamy-Poirier §3; Narayanan et al. §2.2.2 for the looped bubble):
    with m >= p the bubble is (p-1)(F+B)/v, so T = m(F+B) + (p-1)(F+B)/v, the interleaved
    schedule's; breadth first holds every micro-batch, as GPipe: m per stage."""
    f, b = 1.3, 2.1
    r = simulate_pipeline(make("looped-bfs", p, m, v), f, b)
    assert r.iteration_time == pytest.approx(m * (f + b) + (p - 1) * (f + b) / v)
    assert r.peak_memory.tolist() == [float(m)] * p
    inter = simulate_pipeline(pipeline_schedule("interleaved", p, m, v=v), f, b)
    assert r.iteration_time == pytest.approx(inter.iteration_time)
    assert r.peak_memory.min() >= inter.peak_memory.max()  # the price of breadth first


@pytest.mark.parametrize("tf, tb, tw", [(1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 1, 0.5),
                                        (1.5, 1, 0.7), (1, 0.5, 0.5), (1, 1, 0.3)])
@pytest.mark.parametrize("p, m, v", [(4, 8, 2), (4, 12, 3), (8, 16, 2), (4, 24, 2), (2, 6, 3)])
def test_interleaved_zb_is_zb_h1_with_the_bubble_over_v(tf, tb, tw, p, m, v):
    """ZB-H1's closed form, m(F+B+W) + (p-1)(F+B-W) for W <= B (DualPipe's table: bubble
    (p-1)(F+B_full-2W)), with the bubble divided by v as interleaving divides 1F1B's
    [derived, model]; ZB-H1's memory, p per stage (m a multiple of p)."""
    r = simulate_pipeline(make("interleaved-zb", p, m, v), float(tf), float(tb), float(tw))
    assert r.iteration_time == pytest.approx(m * (tf + tb + tw) + (p - 1) * (tf + tb - tw) / v)
    assert r.iteration_time - r.busy[0] == pytest.approx((p - 1) * (tf + tb + tw - 2 * tw) / v)
    if m % p == 0:
        assert r.peak_memory.tolist() == [float(p)] * p


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_zb_v_has_no_bubble_and_1f1b_memory(p):
    """Zero Bubble, ZB-V (arXiv 2401.10241 §6; the authors' README table, T_F = T_B = T_W):
    bubble rate 0 and 1F1B's activation memory, p micro-batches per stage, once
    m >= 2p - 1 (PyTorch's order is written for that many); one stage-time per hop of fill."""
    for m in (2 * p - 1, 2 * p, 3 * p + 1):
        r = simulate_pipeline(make("zb-v", p, m), 1.0, 1.0, 1.0)
        assert np.allclose(span_bubbles(r), 0.0)
        assert r.peak_memory.tolist() == [float(p)] * p
        assert r.iteration_time == pytest.approx(3 * m + (p - 1) / 2)
        ob = simulate_pipeline(pipeline_schedule("1f1b", p, m), 1.0, 2.0)
        assert r.peak_memory.max() == ob.peak_memory.max()
    short = simulate_pipeline(make("zb-v", p, 2 * p - 2), 1.0, 1.0, 1.0)
    assert span_bubbles(short).max() > 0  # too few micro-batches to fill it


def dualpipe_bubble(stages, t_fb, b_full, w):
    """DeepSeek-V3 report, Table 2 (and the DualPipe README): (PP/2 - 1)(F&B + B - 3W), PP
    the number of model stages, F&B / B / W the times of one chunk."""
    return (stages / 2 - 1) * (t_fb + b_full - 3 * w)


@pytest.mark.parametrize("tw", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16), (6, 12), (8, 20), (8, 32)])
def test_dualpipe_bubble_memory_and_copies(p, m, tw):
    """DualPipe on p stages (PP = p): T - busy = (PP/2-1)(F&B + B - 3W) on every stage, with
    F&B = F + B + W (no gain from the overlap, this model's default), where t_b = t_f and
    t_w <= t_f; activations PP + 1 (Table 2), counting an F&B's F before its backward frees;
    two parameter copies."""
    tf = tb = 1.0
    r = simulate_pipeline(make("dualpipe", p, m), tf, tb, tw)
    want = dualpipe_bubble(p, tf + tb + tw, tb + tw, tw)
    assert r.iteration_time - r.busy == pytest.approx(np.full(p, want))
    assert r.busy.tolist() == pytest.approx([m * (tf + tb + tw)] * p)
    assert r.peak_memory.tolist() == [p + 1.0] * p
    assert r.schedule.parameter_copies == 2


@pytest.mark.parametrize("tw", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("p, m", [(1, 2), (2, 4), (3, 6), (4, 10), (4, 16), (8, 16)])
def test_dualpipe_v_bubble_memory_and_copies(p, m, tw):
    """DualPipeV on p stages holds PP = 2p chunks, each half a stage's time: the same Table 2
    bubble with chunk times; activations PP + 1 chunks, p + 1/2 of a stage's micro-batch; one
    parameter copy of its share (the table's 2x compares with 1F1B on 2p devices)."""
    tf = tb = 1.0
    r = simulate_pipeline(make("dualpipe-v", p, m), tf, tb, tw)
    want = dualpipe_bubble(2 * p, (tf + tb + tw) / 2, (tb + tw) / 2, tw / 2)
    assert r.iteration_time - r.busy == pytest.approx(np.full(p, want))
    assert r.peak_memory.tolist() == [(2 * p + 1) / 2] * p
    assert r.schedule.parameter_copies == 1


@pytest.mark.parametrize("kind, p, m", [("dualpipe", 4, 12), ("dualpipe", 8, 24),
                                        ("dualpipe-v", 4, 12), ("dualpipe-v", 3, 9)])
def test_overlapped_f_and_b_reading(kind, p, m):
    """With the overlap gaining time (F&B shorter than F + B + W; equal op times t), stages run
    different numbers of pairs and idle differently: for F&B between 2t and 3t Table 2's
    formula is the largest idle time over the stages; below 2t it no longer holds."""
    stages, unit = (p, 1.0) if kind == "dualpipe" else (2 * p, 0.5)
    for t_fb in (2.0, 2.25, 2.5, 2.75, 3.0):
        r = simulate_pipeline(make(kind, p, m), 1.0, 1.0, 1.0, t_fb=t_fb)
        want = dualpipe_bubble(stages, t_fb * unit, 2 * unit, unit)
        assert (r.iteration_time - r.busy).max() == pytest.approx(want)
    r = simulate_pipeline(make(kind, p, m), 1.0, 1.0, 1.0, t_fb=1.5)
    assert (r.iteration_time - r.busy).max() > dualpipe_bubble(stages, 1.5 * unit, 2 * unit,
                                                               unit) + 0.1
    base = simulate_pipeline(make(kind, p, m), 1.0, 1.0, 1.0).iteration_time
    assert r.iteration_time < base  # a faster pair still shortens the iteration


def test_dualpipe_beats_1f1b_and_zb_h1_at_equal_times():
    """DeepSeek's Table 2 ordering at F = B = W (PP = 8): DualPipe's bubble (6 t) below
    ZB1P's (7 t) below 1F1B's (21 t)."""
    p, m = 8, 32
    t = 1.0
    runs = {k: simulate_pipeline(pipeline_schedule(k, p, m), t, t, t)
            for k in ("1f1b", "zb-h1", "dualpipe")}
    bubble = {k: r.iteration_time - r.busy.max() for k, r in runs.items()}
    assert bubble == pytest.approx({"1f1b": 21.0, "zb-h1": 7.0, "dualpipe": 6.0})


# --------------------------------------------------------------------------- kernel = engine


@st.composite
def new_cases(draw, max_p=6, max_m=8):
    kind = draw(st.sampled_from(NEW))
    p = draw(st.integers(1, max_p))
    v = draw(st.integers(2, 3))
    if kind == "dualpipe":
        p = 2 * max(1, p // 2)
    lo = 2 * p if kind.startswith("dualpipe") else 1
    m = draw(st.integers(lo, lo + max_m))
    if kind == "dualpipe":
        m += m % 2
    if kind == "interleaved-zb":
        m = draw(st.sampled_from([x for x in range(1, max_m + 1) if x % max(1, x // p) == 0]))
    sched = make(kind, p, m, v)
    n_links = p - 1 if P._wrap_v(sched) == 1 else p
    grid = draw(st.booleans())
    pos = st.sampled_from([0.25, 0.5, 1.0, 2.0]) if grid else st.floats(0.01, 3.0)
    nonneg = st.sampled_from([0.0, 0.25, 1.0, 3.0]) if grid else st.floats(0.0, 3.0)

    def arr(n, elems):
        return np.array(draw(st.lists(elems, min_size=n, max_size=n)), dtype=float)

    tf, tb, tw = arr(p, pos), arr(p, pos), arr(p, nonneg)
    tfb = arr(p, pos) if kind.startswith("dualpipe") and draw(st.booleans()) else None
    ld, lt = arr(n_links, nonneg), arr(n_links, nonneg)
    return sched, tf, tb, tw, tfb, ld, lt, draw(st.booleans())


def _links(sched, ld, lt):
    v = P._wrap_v(sched)
    return P._link_array("delays", ld, sched.p, v), P._link_array("transfer", lt, sched.p, v)


FIELDS = ("iteration_time", "bubble_fraction", "busy", "peak_memory", "warmups", "resource",
          "start", "finish", "kind", "microbatch", "chunk", "stage", "pair_microbatch")


@settings(max_examples=120, deadline=None)
@given(new_cases())
def test_kernel_equals_the_timeline_engine_bit_for_bit(case):
    sched, tf, tb, tw, tfb, ld, lt, hol = case
    ld_, lt_ = _links(sched, ld, lt)
    tfb_ = tf + tb + tw if tfb is None else tfb
    fast = P._simulate(sched, tf, tb, tw, ld_, lt_, "replay", hol, None, None, tfb_)
    slow = P._simulate_dag(sched, tf, tb, tw, ld_, lt_, "replay", hol, None, None, tfb_)
    for name in FIELDS:
        a, b = getattr(fast, name), getattr(slow, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        else:
            assert a == b, name
    public = simulate_pipeline(sched, tf, tb, tw, delays=ld, transfer=lt, hol=hol, t_fb=tfb)
    assert np.array_equal(public.start, fast.start)


# --------------------------------------------------------------------------- dependencies()


def _virtual_stage(sched, s, c):
    p = sched.p
    if sched.kind in ("zb-v", "dualpipe-v"):
        return s if c == 0 else 2 * p - 1 - s
    if sched.kind == "dualpipe":
        return s if c == 0 else p - 1 - s
    return c * p + s


def _inputs(r, i):
    """What op i waits for, in the order the CSR lists it: 'act' / 'grad' (a tensor from
    another op, maybe over a link), 'own' (same stage, no link)."""
    sc, k = r.schedule, int(r.kind[i])
    n_virt = {"zb-v": 2 * sc.p, "dualpipe-v": 2 * sc.p, "dualpipe": sc.p}.get(sc.kind,
                                                                               sc.p * sc.v)
    s, c = int(r.stage[i]), int(r.chunk[i])
    if k in (3, 4):
        return ["own"]
    if k == 2:
        return ["own"]
    out = []
    if k in (0, 5) and _virtual_stage(sc, s, c) > 0:
        out.append("act")
    if k in (1, 5, 6):
        qb = _virtual_stage(sc, s, 1 - c if k == 5 else c)
        out.append("grad" if qb < n_virt - 1 else "own")
    return out


def _edge_delay(r, src, dst, what, ld):
    """The delay an edge carries: a link's delay unless it starts at a send on the stream."""
    a, b = int(r.stage[src]), int(r.stage[dst])
    if what == "own" or a == b:
        return 0.0
    if r.kind[src] in (3, 4) and r.hol:
        return 0.0  # the send op lasted transfer + delay already
    p = r.schedule.p
    looped = r.schedule.kind in P._LOOPED_CHUNKS
    if looped and what == "act" and a == p - 1 and b == 0:
        return ld[p - 1]  # the hand-over from chunk c to c + 1
    if looped and what == "grad" and a == 0 and b == p - 1:
        return ld[p - 1]
    assert abs(a - b) == 1
    return ld[min(a, b)]


@settings(max_examples=150, deadline=None)
@given(new_cases())
def test_dependencies_are_the_reference_routes_edges_and_replay_the_result(case):
    sched, tf, tb, tw, tfb, ld, lt, hol = case
    ld_, lt_ = _links(sched, ld, lt)
    r = simulate_pipeline(sched, tf, tb, tw, delays=ld, transfer=lt, hol=hol, t_fb=tfb)
    _check_dependencies(r, sched, tf, tb, tw, tfb, ld_, lt_, hol)


def _check_dependencies(r, sched, tf, tb, tw, tfb, ld_, lt_, hol, mode="replay", warm=None):
    order = P._order(sched, tf, tb, tw, ld_, lt_, mode, hol, warm, None)
    dur, res, kind, mb, chunk, stage, ptr, src, _, pair = P._dag(
        sched, order, tf, tb, tw, ld_, lt_, hol, tfb, with_pairs=True)
    for name, ref in (("kind", kind), ("microbatch", mb), ("chunk", chunk), ("stage", stage),
                      ("resource", res), ("pair_microbatch", pair)):
        assert np.array_equal(getattr(r, name), ref), name
    dep_ptr, dep_src = r.dependencies()
    assert dep_ptr.dtype == dep_src.dtype == np.int64 and dep_ptr.size == r.kind.size + 1
    assert np.array_equal(dep_ptr, ptr) and np.array_equal(dep_src, src)
    # replay: the result's durations, these edges with the link delays, the resource orders
    delay = np.empty(dep_src.size)
    for i in range(r.kind.size):
        lo, hi = dep_ptr[i], dep_ptr[i + 1]
        what = _inputs(r, i)
        assert len(what) == hi - lo
        for e, w in zip(range(lo, hi), what, strict=True):
            delay[e] = _edge_delay(r, dep_src[e], i, w, ld_)
    tl = run_timeline(r.finish - r.start, r.resource, dep_ptr, dep_src, delay)
    scale = max(1.0, r.iteration_time)
    np.testing.assert_allclose(tl.start, r.start, rtol=0, atol=1e-12 * scale * 64)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["1f1b", "gpipe", "zb-h1", "zb-h2", "greedy", "interleaved", "zb"]),
       st.integers(1, 5), st.integers(1, 8), st.booleans(), st.sampled_from(P.MODES),
       st.data())
def test_dependencies_of_the_first_editions_kinds(kind, p, m, hol, mode, data):
    """The same for GPipe, 1F1B, interleaved and the dispatched kinds, in every mode."""
    v = 2 if kind == "interleaved" else None
    if kind == "interleaved":
        m = p * max(1, m // p)
    warm = sorted(data.draw(st.lists(st.integers(1, m), min_size=p, max_size=p)),
                  reverse=True) if kind == "zb" else None
    sched = pipeline_schedule(kind, p, m, v=v, warmups=warm)
    if kind in ("gpipe", "interleaved"):
        mode = "replay"
    n_links = p - 1 if P._wrap_v(sched) == 1 else p
    vals = st.sampled_from([0.0, 0.0, 0.5, 2.0])
    ld = np.array(data.draw(st.lists(vals, min_size=n_links, max_size=n_links)))
    lt = np.array(data.draw(st.lists(vals, min_size=n_links, max_size=n_links)))
    t = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 1.5]), min_size=3 * p,
                                    max_size=3 * p))).reshape(3, p)
    r = simulate_pipeline(sched, *t, delays=ld, transfer=lt, hol=hol, mode=mode)
    ld_, lt_ = _links(sched, ld, lt)
    _check_dependencies(r, sched, *t, None, ld_, lt_, hol, mode,
                        P._mode_warmups(sched, mode, ld_, t[0], None))


# --------------------------------------------------------------------------- delays


@settings(max_examples=80, deadline=None)
@given(new_cases(max_p=5, max_m=6), st.data())
def test_more_delay_never_shortens_a_replayed_iteration(case, data):
    sched, tf, tb, tw, tfb, ld, lt, hol = case
    extra = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.0, 0.4, 1.5, 3.0]),
                                        min_size=ld.size, max_size=ld.size)))
    kw = dict(transfer=lt, hol=hol, t_fb=tfb)
    r1 = simulate_pipeline(sched, tf, tb, tw, delays=ld, **kw)
    r2 = simulate_pipeline(sched, tf, tb, tw, delays=ld + extra, **kw)
    assert r2.iteration_time >= r1.iteration_time - 1e-9
    c1, c2 = (np.isin(r.kind, P.COMPUTE_KINDS) for r in (r1, r2))
    assert np.array_equal(r1.kind[c1], r2.kind[c2])  # the same fixed order, op for op
    assert np.all(r2.finish[c2] >= r1.finish[c1] - 1e-9)


@pytest.mark.parametrize("kind", NEW)
def test_a_slow_link_replays_and_the_dispatchers_modes_are_refused(kind):
    """Every new kind replays under a slow link like the first edition's fixed orders (the
    sweep and the trace agree with single runs); it is a fixed order, so online and replan
    are refused, naming mode."""
    p, m = 4, 12
    s = make(kind, p, m)
    t = 0.01
    d = [0.02, 0.0, 0.0] + ([0.0] if P._wrap_v(s) > 1 else [])
    healthy = simulate_pipeline(s, t, t, t)
    slow = simulate_pipeline(s, t, t, t, delays=d)
    assert slow.iteration_time > healthy.iteration_time
    sw = delay_scan(s, t, t, t, link=0, delays=[0.0, 0.01, 0.02])
    assert sw.iteration_times[-1] == pytest.approx(slow.iteration_time)
    assert np.all(np.diff(sw.iteration_times) >= 0)
    tr = simulate_trace(s, t, t, t, delay_trace=np.array([np.zeros(len(d)), d]))
    assert tr.iteration_times.tolist() == pytest.approx([healthy.iteration_time,
                                                         slow.iteration_time])
    for mode in ("online", "replan"):
        with pytest.raises(ValueError, match="mode must be 'replay'"):
            simulate_pipeline(s, t, t, t, delays=d, mode=mode)


def test_the_v_shapes_cross_each_link_both_ways():
    """ZB-V's second chunk comes back over link 0 (stage 1 -> 0): a delay there costs more
    than on a one-way 1F1B link, and the turn at stage p-1 is local (no link, no send)."""
    s = make("zb-v", 2, 6)
    r = simulate_pipeline(s, 1.0, 1.0, 1.0, transfer=0.5)
    act = r.kind == P.SEND_ACT
    assert set(zip(r.stage[act].tolist(), r.chunk[act].tolist(), strict=True)) == {(0, 0), (1, 1)}
    grad = r.kind == P.SEND_GRAD
    assert set(zip(r.stage[grad].tolist(), r.chunk[grad].tolist(), strict=True)) == {(1, 0), (0, 1)}
    one = simulate_pipeline(s, 1.0, 1.0, 1.0, delays=[1.0]).iteration_time
    assert one > simulate_pipeline(s, 1.0, 1.0, 1.0).iteration_time


def test_dualpipe_sends_both_ways_and_labels_its_pairs():
    """p = 2, m = 4 by hand: stage 0 starts direction 0 (micro-batches 0, 1), stage 1
    direction 1 (2, 3, chunk 1); one step-4 round, where the turning stage runs F1 and BW2.1
    apart, then the pair F3.1&B0; then B3 whole and B1 split, whose W closes the stage."""
    r = simulate_pipeline(make("dualpipe", 2, 4), 1.0, 1.0, 1.0)
    assert r.order(0) == ["F0", "F2.1", "F1", "BW2.1", "F3.1&B0", "BW3.1", "B1", "W1"]
    assert r.order(1) == ["F2.1", "F0", "F3.1", "BW0", "F1&B2.1", "BW1", "B3.1", "W3.1"]
    fb = np.flatnonzero(r.kind == P.FB)
    assert fb.size and np.all(r.pair_microbatch[fb] >= 0)
    assert np.all(r.pair_microbatch[r.kind != P.FB] == -1)
    assert OP_KINDS[P.FB] == "F&B" and OP_KINDS[P.BW] == "BW"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("args, kwargs, word", [
    (("looped-bfs", 4, 8), {}, "v must be an integer >= 2"),
    (("interleaved-zb", 4, 8), {"v": 1}, "v must be an integer >= 2"),
    (("interleaved-zb", 4, 9), {"v": 2}, "m must be a multiple of max"),
    (("zb-v", 4, 8), {"v": 3}, "v must be 2"),
    (("dualpipe", 3, 12), {}, "p and m must both be even"),
    (("dualpipe", 4, 9), {}, "p and m must both be even"),
    (("dualpipe", 4, 6), {}, "m must be at least 2p"),
    (("dualpipe", 4, 10), {"v": 2}, None),
    (("dualpipe-v", 4, 7), {}, "m must be at least 2p"),
    (("zb-v", 4, 8), {"warmups": [4, 3, 2, 1]}, "warmups is accepted only"),
    (("dualpipe", 4, 8), {"memory": 5}, "memory is accepted only"),
    (("1f1b", 4, 8), {"v": 2}, "v must be 1"),
])
def test_schedule_validation(args, kwargs, word):
    if word is None:
        assert pipeline_schedule(*args, **kwargs).v == 2
        return
    with pytest.raises(ValueError, match=word):
        pipeline_schedule(*args, **kwargs)


def test_simulate_validation():
    s = make("dualpipe-v", 2, 4)
    with pytest.raises(ValueError, match="t_fb"):
        simulate_pipeline(s, 1.0, 1.0, 1.0, t_fb=0.0)
    with pytest.raises(ValueError, match="t_fb"):
        simulate_pipeline(s, 1.0, 1.0, 1.0, t_fb=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="t_fb applies"):
        simulate_pipeline(make("zb-v", 2, 4), 1.0, 1.0, 1.0, t_fb=2.0)
    with pytest.raises(ValueError, match="delays"):  # the V shapes have no wrap link
        simulate_pipeline(make("zb-v", 3, 6), 1.0, 1.0, 1.0, delays=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="plan_delays"):
        simulate_pipeline(make("zb-v", 3, 6), 1.0, 1.0, 1.0, plan_delays=[0.0, 0.0])
    import dataclasses
    with pytest.raises(ValueError, match="warmups must be"):
        dataclasses.replace(make("zb-v", 4, 3), m=12)  # its warm-ups depend on m


def test_new_kinds_without_jit():
    """The order kernels and the generalised replay stay correct as plain Python."""
    code = (
        "from uneven.schedulers.pipeline import *\n"
        "out = []\n"
        "for k, v in (('looped-bfs', 2), ('interleaved-zb', 2), ('zb-v', None),"
        " ('dualpipe', None), ('dualpipe-v', None)):\n"
        "    r = simulate_pipeline(pipeline_schedule(k, 4, 8, v=v), 1.0, 1.0, 1.0,"
        " delays=[0.5, 0.0, 0.25] + ([0.0] if v else []), transfer=0.1, hol=True)\n"
        "    out.append((round(r.iteration_time, 9), r.peak_memory.tolist()))\n"
        "print(out)\n"
    )
    runs = []
    for disable in ("0", "1"):
        env = dict(os.environ, NUMBA_DISABLE_JIT=disable)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.strip())
    assert runs[0] == runs[1]
