"""Core groups, barriers and hop mix (uneven.ep.superpod): closed forms, properties, kernels
against their references, the rank-level kernel against the timeline engine, validation."""

import math

import numpy as np
import pytest
from _superpod_reference import reference_tpot
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep import superpod as M
from uneven.ep.superpod import (
    CoreCosts,
    Scheme,
    best_split,
    blocks_per_copy,
    core_loads,
    core_timeline,
    decode_steps,
    die_superpod,
    latency_samples,
    phase_latency,
    phase_plan,
    scheme,
    superpod_traffic,
)

ABLATION = [
    scheme("baseline"),
    scheme("baseline", assignment="hop_mix"),
    scheme("baseline", assignment="hop_mix", concurrent=True),
    scheme("baseline", assignment="hop_mix", concurrent=True, sync="flag"),
    scheme("ubep"),
    Scheme(concurrent=False, sync="flag"),
    Scheme(concurrent=False, sync="block", assignment="hop_mix"),
    Scheme(concurrent=True, sync="barrier", assignment="contiguous", count_cores=3),
]


@pytest.fixture(scope="module")
def ep32():
    return superpod_traffic(32, tokens_per_rank=64, seed=0)


def _traffic_from(copies, g=16):
    """A SuperpodTraffic with a given copy matrix (for closed forms and properties)."""
    copies = np.asarray(copies, dtype=np.int64)
    n = copies.shape[0]
    topo = M.superpod(max(1, -(-n // g)), npus_per_node=g, npu_bw=1e11,
                      hop_latency=(1e-7, 5e-7, 1.15e-6))
    copies.flags.writeable = False
    return M.SuperpodTraffic(topo, n, 1, 1, n, 7172, 14336, copies)


# --------------------------------------------------------------------------- blocks and flags


def test_blocks_per_copy_hand_values():
    assert blocks_per_copy(7172, 512, 8, True) == 15 == blocks_per_copy(7172, 512, 8, False)
    assert blocks_per_copy(14336, 512, 8, True) == 29 and blocks_per_copy(14336, 512, 8,
                                                                           False) == 28
    assert blocks_per_copy(7172, 128, 8, True) == 60 and blocks_per_copy(7172, 128, 8,
                                                                          False) == 57


@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 1 << 16), b=st.sampled_from([64, 128, 256, 512, 1024]),
       f=st.integers(1, 32))
def test_flag_in_block_needs_at_most_the_flag_write_it_replaces(m, b, f):
    """With the flag inside, a copy never needs more block writes than payload blocks plus one
    separate flag write, as long as the flag's share of the copy stays under one block
    (m·f <= b·(b − f)); beyond that (large copies, small blocks) it can."""
    inside = blocks_per_copy(m, b, f, True)
    separate = blocks_per_copy(m, b, f, False) + 1
    if m * f <= b * (b - f):
        assert inside <= separate
    assert inside >= blocks_per_copy(m, b, f, False)


def test_flag_in_block_sends_no_more_writes_than_separate_flags_at_512_bytes(ep32):
    c = CoreCosts(cores=16)
    inside = phase_plan(ep32, c, scheme("ubep")).writes.sum(axis=1)
    separate = phase_plan(ep32, c, scheme("ubep", sync="flag")).writes.sum(axis=1)
    assert np.all(inside <= separate)  # 7,172 B leave room for 15 flags in 15 blocks
    # A BF16 combine copy fills 28 blocks exactly: its flags need a 29th block per copy, more
    # than one separate flag per destination ...
    inside = phase_plan(ep32, c, scheme("ubep"), "combine").writes.sum(axis=1)
    separate = phase_plan(ep32, c, scheme("ubep", sync="flag"), "combine").writes.sum(axis=1)
    assert np.all(inside > separate)
    # ... and so do 128-B blocks in dispatch (60 blocks against 57)
    inside = phase_plan(ep32, c, scheme("ubep", block_bytes=128)).writes.sum(axis=1)
    separate = phase_plan(ep32, c, scheme("ubep", block_bytes=128, sync="flag")).writes.sum(1)
    assert np.all(inside > separate)


# --------------------------------------------------------------------------- hop mix


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_hop_mix_gives_every_core_the_same_copies_of_each_hop_class(data):
    n = data.draw(st.integers(1, 40))
    g = data.draw(st.sampled_from([1, 2, 4, 8, 16]))
    cores = data.draw(st.integers(1, 24))
    copies = data.draw(st.lists(st.integers(0, 12), min_size=n * n, max_size=n * n))
    t = _traffic_from(np.reshape(copies, (n, n)), g)
    hc, _ = core_loads(t, cores, "hop_mix")
    assert np.all(hc.max(axis=1) - hc.min(axis=1) <= 1)
    assert np.array_equal(hc.sum(axis=1).sum(axis=1), t.copies.sum(axis=1))
    hcc, _ = core_loads(t, cores, "contiguous")
    per_core = hcc.sum(axis=2)
    assert np.all(per_core.max(axis=1) - per_core.min(axis=1) <= 1)  # equal copies per core


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_loads_kernel_matches_its_reference(data):
    n = data.draw(st.integers(1, 20))
    g = data.draw(st.sampled_from([1, 3, 4, 16]))
    cores = data.draw(st.integers(1, 12))
    copies = np.reshape(data.draw(st.lists(st.integers(0, 9), min_size=n * n,
                                           max_size=n * n)), (n, n))
    t = _traffic_from(copies, g)
    for mix in (False, True):
        got = core_loads(t, cores, "hop_mix" if mix else "contiguous")
        want = M._reference_loads(t.copies, t.hop_matrix(), cores, mix)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_max_core_time_matches_the_closed_forms():
    # Two nodes of 16 ranks, 4 copies to every rank: from rank 0, 4 local, 60 one-hop and 64
    # two-hop copies over 8 sending cores.
    t = _traffic_from(np.full((32, 32), 4))
    c = CoreCosts(cores=8)
    w = np.array([c.write_time(h, 512) for h in range(3)]) * 15
    naive = phase_plan(t, c, scheme("baseline"))
    mix = phase_plan(t, c, scheme("baseline", assignment="hop_mix"))
    # contiguous: half the cores hold only far copies, n / C of them
    assert math.isclose(naive.send_time[0].max(), 128 / 8 * w[2], rel_tol=1e-12)
    # hop mix: each class dealt evenly (64 far copies: 8 each; 60 one-hop: 7 or 8; 4 local)
    assert math.isclose(mix.send_time[0].max(), 8 * w[1] + 8 * w[2], rel_tol=1e-12)
    n_h = t.copies_by_hop(0)
    assert n_h.tolist() == [4, 60, 64]
    bound = sum(math.ceil(n_h[h] / 8) * w[h] for h in range(3))
    mean = sum(n_h[h] / 8 * w[h] for h in range(3))
    assert mean <= mix.send_time[0].max() <= bound
    # all classes divisible by the cores: the slowest core is exactly the mean
    t2 = _traffic_from(np.full((32, 32), 8))
    mix2 = phase_plan(t2, c, scheme("baseline", assignment="hop_mix"))
    n2 = t2.copies_by_hop(0)
    assert all(x % 8 == 0 for x in n2)
    assert math.isclose(mix2.send_time[0].max(), sum(n2[h] / 8 * w[h] for h in range(3)),
                        rel_tol=1e-12)


# --------------------------------------------------------------------------- phases


def test_concurrent_groups_are_never_slower_than_the_same_groups_serialised(ep32):
    """Without jitter, with C_cnt + C_send fixed, running the two groups at once never takes
    longer than running the same groups one after the other (count, [barrier], send)."""
    for c_cnt in (1, 3, 8, 15):
        for sync in ("barrier", "flag", "block"):
            c = CoreCosts(cores=16)
            p = phase_plan(ep32, c, Scheme(concurrent=True, count_cores=c_cnt, sync=sync))
            cnt, snd, _, flg, poll = M._plan_args(p)
            a = np.zeros(p.n_ranks)
            z = np.zeros(p.n_ranks)
            sends = M._sends(p)[0]
            lat = c.hop_latency
            g = p.traffic.ranks_per_node
            serial = max(M._reference_phase(a, cnt, snd, cnt + snd, flg, poll, z, z, z,
                                            sync == "barrier", False, True, sync == "barrier",
                                            sends, c.barrier_cost, lat, g))
            assert phase_latency(p) <= serial + 1e-15


def test_giving_up_a_sending_core_can_cost_more_than_counting_hides():
    """Against serialising on *all* cores, concurrency pays only when counting is worth a core:
    with 8 cores and a cheap count, one counting core costs 1/8 of the send capacity."""
    t = superpod_traffic(64, tokens_per_rank=128, seed=0)
    c8 = CoreCosts(cores=8, barrier_cost=0.0)
    serial = phase_latency(phase_plan(t, c8, Scheme(sync="block", assignment="hop_mix")))
    _, conc = best_split(t, c8, Scheme(concurrent=True, sync="block", assignment="hop_mix"))
    assert conc > serial
    c48 = CoreCosts()
    assert phase_latency(phase_plan(t, c48, scheme("ubep"))) < phase_latency(
        phase_plan(t, c48, scheme("baseline")))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), jitter=st.floats(0.0, 20e-6),
       which=st.integers(0, len(ABLATION) - 1), phase=st.sampled_from(["dispatch", "combine"]),
       tokens=st.sampled_from([2, 8, 64]))
def test_rank_kernel_matches_the_core_timeline(seed, jitter, which, phase, tokens):
    t = superpod_traffic(24, tokens_per_rank=tokens, seed=seed % 7)
    p = phase_plan(t, CoreCosts(cores=6), ABLATION[which], phase)
    start = np.random.default_rng(seed).random(24) * 30e-6
    tl = core_timeline(p, jitter=jitter, seed=seed, start=start, straggler_prob=0.05,
                       straggler_delay=40e-6)
    cnt, snd, ser, flg, poll = M._plan_args(p)
    sends = M._sends(p)[0]
    j = tl.jitter
    want = M._reference_phase(start, cnt, snd, ser, flg, poll, j[0], j[1], j[2], p.barrier1,
                              p.scheme.concurrent, p.has_count, p.scheme.sync == "barrier",
                              sends, p.costs.barrier_cost, p.costs.hop_latency,
                              t.ranks_per_node)
    assert np.allclose(tl.end, want, rtol=0, atol=1e-15)
    first = latency_samples(p, 3, jitter, seed, straggler_prob=0.05, straggler_delay=40e-6)[0]
    tl0 = core_timeline(p, jitter=jitter, seed=seed, straggler_prob=0.05,
                        straggler_delay=40e-6)
    assert math.isclose(first, tl0.latency, rel_tol=0, abs_tol=1e-15)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_phase_kernel_matches_its_reference_including_sparse_senders(data):
    n = data.draw(st.integers(1, 40))
    g = data.draw(st.sampled_from([1, 4, 16]))
    rng = np.random.default_rng(data.draw(st.integers(0, 10**6)))
    density = data.draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    sends = (rng.random((n, n)) < density).astype(np.int8)
    cnt, snd, flg, j1, j2, j3, a = (rng.random(n) * 1e-4 for _ in range(7))
    ser = cnt + snd
    poll = 1e-6
    lat = (1e-7, 5e-7, 1.2e-6)
    for b1, conc, has, sb in [(True, False, True, True), (False, True, True, False),
                              (False, False, True, False), (False, False, False, False),
                              (False, True, True, True), (False, False, False, True)]:
        want = M._reference_phase(a, cnt, snd, ser, flg, poll, j1, j2, j3, b1, conc, has, sb,
                                  sends, 2e-5, lat, g)
        got = np.empty(n)
        nn = -(-n // g)
        M._phase(a, cnt, snd, ser, flg, poll, j1, j2, j3, b1, conc, has, sb, sends,
                 bool(sends.all()), M._full_own(sends, g), 2e-5, *lat, np.int64(g), got,
                 np.empty(n), np.empty(n),
                 np.empty(n), np.empty(nn), np.empty(nn, dtype=np.int64), np.empty(nn),
                 np.empty(n, dtype=np.int64))
        assert np.allclose(got, want, rtol=0, atol=1e-15)


def test_decode_kernel_matches_its_reference():
    t = superpod_traffic(20, tokens_per_rank=3, seed=2)
    c = CoreCosts(cores=5)
    for s in (scheme("baseline"), scheme("ubep"), scheme("ubep", sync="flag")):
        steps = decode_steps(t, c, s, n_steps=3, n_layers=4, jitter=3e-6, straggler_prob=0.02,
                             straggler_delay=30e-6, seed=9)
        jit = M._Draws(9, 3e-6, 0.02, 30e-6)((3, 4, 7, 20))
        want = reference_tpot(t, c, s, jit)
        assert np.allclose(steps.tpot, want, rtol=0, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), jitter=st.floats(0.0, 30e-6),
       which=st.sampled_from([0, 1, 2]))
def test_a_barrier_waits_for_the_slowest_rank(seed, jitter, which):
    t = superpod_traffic(16, tokens_per_rank=16, seed=1)
    p = phase_plan(t, CoreCosts(cores=4), ABLATION[which])
    tl = core_timeline(p, jitter=jitter, seed=seed)
    bar = tl.kind == M.K_BARRIER
    before = (tl.core >= 0) & ~bar & (tl.kind != M.K_POLL)
    for b_start in np.unique(tl.start[bar]):
        # every op that ends before the barrier's release starts: the slowest rank is inside
        ended = tl.finish[before][tl.finish[before] <= b_start + 1e-15]
        assert b_start >= ended.max() - 1e-15
    # the release is no earlier than every rank's slowest pre-barrier core
    last_send = np.full(16, -np.inf)
    sel = tl.kind == M.K_SEND
    np.maximum.at(last_send, tl.rank[sel], tl.finish[sel])
    assert tl.end.min() >= last_send.max() + p.costs.barrier_cost - 1e-15


def test_more_delay_never_finishes_sooner(ep32):
    p = phase_plan(ep32, CoreCosts(cores=8), scheme("baseline"))
    lo = latency_samples(p, 50, 1e-6, seed=4)
    hi = latency_samples(p, 50, 4e-6, seed=4)  # same draws, scaled up
    assert np.all(hi >= lo)
    slower = phase_plan(ep32, CoreCosts(cores=8, two_hop_factor=15.0), scheme("baseline"))
    assert phase_latency(slower) >= phase_latency(p)


def test_percentiles_and_decode_steps(ep32):
    c = CoreCosts(cores=16)
    r = decode_steps(ep32, c, scheme("baseline"), n_steps=40, n_layers=3, jitter=5e-6, seed=1)
    assert r.p99 >= r.p50 > 0 and r.tpot.shape == (40,)
    assert not r.tpot.flags.writeable
    base = decode_steps(ep32, c, scheme("baseline"), n_steps=40, n_layers=3, jitter=0.0)
    assert np.ptp(base.tpot) == 0.0
    assert base.p50 <= r.p50


def test_chunked_draws_equal_one_draw():
    t = superpod_traffic(8, tokens_per_rank=8, seed=0)
    p = phase_plan(t, CoreCosts(cores=4), scheme("ubep"))
    old = M._CHUNK_DRAWS
    try:
        M._CHUNK_DRAWS = 3 * 8 * 7  # 7 steps per chunk
        chunked = latency_samples(p, 30, 2e-6, seed=3)
    finally:
        M._CHUNK_DRAWS = old
    assert np.array_equal(chunked, latency_samples(p, 30, 2e-6, seed=3))


def test_ep320_on_160_npus_is_expressible():
    topo = die_superpod(20)
    assert topo.n_gpus == 320 and topo.n_gpus // 2 == 160
    t = superpod_traffic(320, tokens_per_rank=16, seed=0)
    assert t.n_experts == 320 and t.topo.n_gpus == 320
    assert t.copies.sum() == 320 * 16 * 8
    assert t.copies_by_hop(0).tolist()[0] <= t.copies[0, 0]
    p = phase_plan(t, CoreCosts(), scheme("ubep"))
    assert p.send_time.shape == (320, 47)
    s = latency_samples(p, 20, 2e-6, seed=0)
    assert np.all(s >= phase_latency(p))


def test_traffic_counts_every_copy_once():
    t = superpod_traffic(16, tokens_per_rank=10, k=4, seed=3)
    assert t.copies.sum() == 16 * 10 * 4
    assert np.array_equal(t.copies.sum(axis=1), np.full(16, 40))
    assert not t.copies.flags.writeable
    skewed = superpod_traffic(16, tokens_per_rank=200, k=4, skew=2.0, seed=3)
    recv = skewed.copies.sum(axis=0)
    assert recv.max() > 2 * np.median(recv)


def test_best_split_is_the_argmin(ep32):
    c = CoreCosts(cores=6)
    k, lat = best_split(ep32, c, scheme("ubep"))
    lats = [phase_latency(phase_plan(ep32, c, scheme("ubep", count_cores=x))) for x in range(1,
                                                                                            6)]
    assert lat == min(lats) and k == 1 + int(np.argmin(lats))


def test_core_timeline_waits_show_the_barrier(ep32):
    p = phase_plan(ep32, CoreCosts(cores=8), scheme("baseline"))
    tl = core_timeline(p, jitter=5e-6, seed=1)
    w = tl.waits(0)
    assert w["core"].size > 0 and np.all(w["finish"] > w["start"])
    ops = tl.of_rank(0)
    assert set(np.unique(ops["kind"]).tolist()) == {M.K_COUNT, M.K_BARRIER, M.K_SEND, M.K_POLL}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("kw, match", [
    ({"cores": 0}, "cores"), ({"two_hop_factor": 2.0}, "two_hop_factor"),
    ({"writes_in_flight": True}, "writes_in_flight"), ({"barrier_cost": -1.0}, "barrier_cost"),
    ({"local_latency": 0.0}, "local_latency"),
])
def test_costs_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        CoreCosts(**kw)


def test_scheme_and_function_validation(ep32):
    with pytest.raises(ValueError, match="sync"):
        Scheme(sync="fence")
    with pytest.raises(ValueError, match="flag_bytes"):
        Scheme(block_bytes=64, flag_bytes=64)
    with pytest.raises(ValueError, match="concurrent"):
        Scheme(concurrent=1)
    with pytest.raises(ValueError, match="kind"):
        scheme("deepep")
    with pytest.raises(ValueError, match="count_cores"):
        phase_plan(ep32, CoreCosts(cores=4), scheme("ubep", count_cores=4))
    with pytest.raises(ValueError, match="n_ranks"):
        superpod_traffic(0)
    with pytest.raises(ValueError, match="n_experts"):
        superpod_traffic(12, n_experts=100)
    with pytest.raises(ValueError, match="tokens_per_rank"):
        superpod_traffic(1024, tokens_per_rank=8192)
    with pytest.raises(ValueError, match="plan"):
        latency_samples("plan")
    with pytest.raises(ValueError, match="straggler_prob"):
        latency_samples(phase_plan(ep32, CoreCosts(), scheme("ubep")), 2, straggler_prob=2.0)
    with pytest.raises(ValueError, match="traffic"):
        phase_plan(None, CoreCosts(), scheme("ubep"))
    with pytest.raises(ValueError, match="scheme"):
        best_split(ep32, CoreCosts(), scheme("baseline"))
    with pytest.raises(ValueError, match="n_ranks \\* cores"):
        core_timeline(phase_plan(superpod_traffic(320, tokens_per_rank=4), CoreCosts(cores=256),
                                 scheme("ubep")))
    with pytest.raises(ValueError, match="hop"):
        CoreCosts().write_time(3, 512)


def test_breakdown_adds_up_to_each_cores_span(ep32):
    p = phase_plan(ep32, CoreCosts(cores=8), scheme("baseline"))
    tl = core_timeline(p, jitter=3e-6, seed=2)
    b = tl.breakdown(0)
    ops = tl.of_rank(0)
    span = np.zeros(8)
    np.maximum.at(span, ops["core"], ops["finish"])
    assert math.isclose(sum(b.values()), span.mean(), rel_tol=1e-12)
    assert math.isclose(b["barrier"], 2 * p.costs.barrier_cost, rel_tol=1e-12)
    assert b["flag"] == 0.0


# --------------------------------------------------------------------------- explorer


def test_explorer_recomputes_and_shows_errors_without_raising():
    from uneven.explorers import nb06

    ex = nb06.ubep_explorer(show=False)
    assert ex.error is None and ex.png[:4] == b"\x89PNG"
    before = ex.state.base.latency
    ex.controls["barrier_us"].value = 40.0
    assert ex.error is None and ex.state.base.latency > before
    ubep = ex.state.ubep.latency
    ex.controls["barrier_us"].value = 0.0
    assert ex.state.ubep.latency == ubep  # UBEP has no barrier
    ex.controls["jitter_us"].value = 10.0
    assert ex.state.base_samples.mean() > ex.state.ubep_samples.mean()
    ex.controls["count_cores"].value = 24
    ex.controls["cores"].value = 8  # fewer cores than counting cores: capped, with a note
    assert ex.error is None and ex.state.count_cores == 7 and ex.state.notes
    ex.preset_menu.value = "flat fabric (every hop = local)"
    assert ex.error is None and any("one-hop" in n for n in ex.state.notes)
    ex.preset_menu.value = "128-B blocks"
    assert ex.state.ubep.plan.blocks == 60
    n = len(ex.timings)
    ex.controls["hop_ratio"].value = 0.5  # below the slider's range: refused, shown, kept
    assert ex.error is None or "hop_ratio" in ex.error
    assert len(ex.timings) >= n


def test_explorer_state_validation():
    from uneven.explorers.nb06 import ubep_state

    with pytest.raises(ValueError, match="ep"):
        ubep_state(ep=12)
    with pytest.raises(ValueError, match="block"):
        ubep_state(block=300)
    with pytest.raises(ValueError, match="hop_ratio"):
        ubep_state(hop_ratio=0.5)


def test_blitted_explorer_draws_the_same_picture_as_a_fresh_one():
    import io

    from PIL import Image

    from uneven.explorers import nb06

    def pixels(png):
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)

    moved = nb06.ubep_explorer(show=False)
    for v in (5.0, 1.0, 3.0):  # updates over one cached background (axis limits stick)
        moved.controls["jitter_us"].value = v
    blitted = moved.png
    moved._background = None  # the same figure, drawn in full
    moved.update()
    a, b = pixels(blitted), pixels(moved.png)
    assert a.shape == b.shape and (np.abs(a - b) > 8).mean() < 1e-3


# --------------------------------------------------------------------------- hardening


def test_library_results_are_read_only_and_equal_to_checked_construction(ep32):
    """Results built on the trusted path hold read-only arrays, and building the same fields
    directly (which runs every check) accepts them unchanged."""
    from dataclasses import fields, replace

    p = phase_plan(ep32, CoreCosts(cores=8), scheme("ubep", sync="flag"))
    tl = core_timeline(p, jitter=1e-6, seed=3)
    r = decode_steps(ep32, CoreCosts(cores=8), scheme("baseline"), n_steps=5, n_layers=2)
    for obj in (ep32, p, tl, r):
        for f in fields(obj):
            v = getattr(obj, f.name)
            if isinstance(v, np.ndarray):
                assert not v.flags.writeable, (type(obj).__name__, f.name)
        again = replace(obj)
        for f in fields(obj):
            a, b = getattr(obj, f.name), getattr(again, f.name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


@pytest.mark.parametrize("field_, value, match", [
    ("n_count", 3, r"n_count must be an integer in \[1, 1\]"),
    ("send_offset", 0, "send_offset"),
    ("send_time", "x", "send_time"),
    ("send_time", np.full((32, 7), np.nan), "send_time"),
    ("send_time", np.full((32, 7), 1e300), "send_time"),
    ("count_time", np.zeros((32, 2)), "count_time"),
    ("hop_copies", -np.ones((32, 7, 3), dtype=np.int64), "hop_copies"),
    ("blocks", True, "blocks"),
    ("phase", "gather", "phase"),
    ("traffic", None, "traffic"),
    ("poll_time", float("inf"), "poll_time"),
])
def test_phase_plan_checks_direct_construction(ep32, field_, value, match):
    from dataclasses import replace

    p = phase_plan(ep32, CoreCosts(cores=8), scheme("ubep"))
    with pytest.raises(ValueError, match=match):
        replace(p, **{field_: value})


def test_traffic_timeline_and_steps_check_direct_construction(ep32):
    from dataclasses import replace

    with pytest.raises(ValueError, match="copies"):
        replace(ep32, copies=np.ones((31, 31), dtype=np.int64))
    with pytest.raises(ValueError, match="copies"):
        replace(ep32, copies=np.full((32, 32), 2**40))
    with pytest.raises(ValueError, match="hops"):
        replace(ep32, hops=np.zeros((32, 32), dtype=np.int64))
    with pytest.raises(ValueError, match="topo"):
        replace(ep32, topo="pod")
    with pytest.raises(ValueError, match="n_ranks"):
        replace(ep32, n_ranks=True)
    with pytest.raises(ValueError, match="k"):
        replace(ep32, k=1.5)
    tl = core_timeline(phase_plan(ep32, CoreCosts(cores=8), scheme("baseline")))
    with pytest.raises(ValueError, match="cores"):
        replace(tl, cores=9)
    with pytest.raises(ValueError, match="core must have every entry <= 7"):
        replace(tl, core=np.full(tl.core.shape, 8))
    with pytest.raises(ValueError, match="finish"):
        replace(tl, finish=tl.start - 1e-6 * (tl.start > 0))
    with pytest.raises(ValueError, match="end"):
        replace(tl, end=np.zeros(3))
    r = decode_steps(ep32, CoreCosts(cores=8), scheme("baseline"), n_steps=3, n_layers=1)
    for bad in (np.zeros(0), None, np.array([np.inf]), [[1.0]], 0.5, [True]):
        with pytest.raises(ValueError, match="tpot"):
            replace(r, tpot=bad)
    with pytest.raises(ValueError, match="n_layers"):
        replace(r, n_layers=0)


@pytest.mark.parametrize("kw, match", [
    ({"core_bandwidth": 1e-300}, "core_bandwidth"), ({"barrier_cost": 1e300}, "barrier_cost"),
    ({"local_latency": 10.0}, "local_latency"), ({"one_hop_factor": 1e300}, "one_hop_factor"),
    ({"cores": 4.5}, "cores"), ({"poll_cost": 1 + 1j}, "poll_cost"),
])
def test_costs_bounded_so_every_time_stays_finite(kw, match):
    with pytest.raises(ValueError, match=match):
        CoreCosts(**kw)


def test_fields_are_normalised():
    c = CoreCosts(cores=8.0, barrier_cost=np.float32(1e-5))
    assert type(c.cores) is int and type(c.barrier_cost) is float
    s = Scheme(count_cores=np.int64(3), block_bytes=256.0)
    assert type(s.count_cores) is int and type(s.block_bytes) is int


def test_largest_ep_group_builds_and_budgets_refuse_by_name(ep32, monkeypatch):
    assert die_superpod(64).n_gpus == M.MAX_RANKS
    t = superpod_traffic(M.MAX_RANKS, tokens_per_rank=1, seed=0)  # was refused as 'n_nodes'
    assert t.copies.sum() == M.MAX_RANKS * 8
    with pytest.raises(ValueError, match="n_nodes"):
        die_superpod(65)
    ep320 = superpod_traffic(320, tokens_per_rank=1)
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "1e6")
    p = phase_plan(ep32, CoreCosts(), scheme("ubep"))
    with pytest.raises(ValueError, match="n_steps=.*UNEVEN_MAX_STEPS"):
        latency_samples(p, 10**5)
    with pytest.raises(ValueError, match="n_steps=.*UNEVEN_MAX_STEPS"):
        decode_steps(ep32, CoreCosts(), scheme("ubep"), n_steps=1000)
    with pytest.raises(ValueError, match="n_experts=.*UNEVEN_MAX_STEPS"):
        superpod_traffic(256, tokens_per_rank=64)
    with pytest.raises(ValueError, match="costs=.*UNEVEN_MAX_STEPS"):
        best_split(ep320, CoreCosts(cores=256), scheme("ubep"))
    with pytest.raises(ValueError, match="jitter"):
        latency_samples(p, 2, jitter=1e300)
    with pytest.raises(ValueError, match="start"):
        core_timeline(p, start=np.full(32, 1e300))


def test_figure_recipes_refuse_bad_input_by_name(ep32):
    from uneven.explorers import nb06

    costs = CoreCosts(cores=8)
    plan = phase_plan(ep32, costs, scheme("baseline"))
    tl = core_timeline(plan)
    with pytest.raises(ValueError, match="costs"):
        nb06.hop_cost_figure([1.0], {"contiguous": plan})
    with pytest.raises(ValueError, match="plans"):
        nb06.hop_cost_figure(costs, {"nope": plan})
    with pytest.raises(ValueError, match="plans"):
        nb06.hop_cost_figure(costs, {"contiguous": tl})
    with pytest.raises(ValueError, match="rank"):
        nb06.gantt_figure({"UBEP": tl}, rank=32)
    with pytest.raises(ValueError, match="timelines"):
        nb06.gantt_figure({})
    with pytest.raises(ValueError, match="rows"):
        nb06.ablation_figure([("base", 0.0), ("x", 1e-4)])
    with pytest.raises(ValueError, match="rows"):
        nb06.ablation_figure([("base", float("nan"))])
    good = {"serialised baseline": [2e-4, 3e-4], "UBEP": [1e-4, 2e-4]}
    with pytest.raises(ValueError, match="eps"):
        nb06.ep_sweep_figure([16, 8], good, good, paper={}, chapter={})
    with pytest.raises(ValueError, match="median"):
        nb06.ep_sweep_figure([8, 16], {"serialised baseline": [0.0, 1.0]}, good, paper={},
                             chapter={})
    with pytest.raises(ValueError, match="p99"):
        nb06.ep_sweep_figure([8, 16], good, {"UBEP": [1e-4, 2e-4]}, paper={"x": {8: 1.0}},
                             chapter={})
    with pytest.raises(ValueError, match="paper"):
        nb06.ep_sweep_figure([8, 16], good, good, paper={"x": {0: 1.0}}, chapter={})
    with pytest.raises(ValueError, match="calm"):
        nb06.ep_sweep_figure([8, 16], good, good, paper={}, chapter={},
                             calm={"DeepEP": [1e-4, 2e-4]})
    with pytest.raises(ValueError, match="calm"):
        nb06.ep_sweep_figure([8, 16], good, good, paper={}, chapter={},
                             calm={"UBEP": [1e-4]})
    r = decode_steps(ep32, costs, scheme("ubep"), n_steps=5, n_layers=1)
    with pytest.raises(ValueError, match="extra"):
        nb06.tpot_figure({"UBEP": r}, [0.0, 1.0], {"UBEP": [0.0]})
    with pytest.raises(ValueError, match="sigmas"):
        nb06.tpot_figure({"UBEP": r}, [-1.0], {"UBEP": [0.0]})
    with pytest.raises(ValueError, match="state"):
        nb06.draw_ubep(nb06.plots.blank_figure(), r)
    s = nb06.ubep_state(ep=16, cores=8, batch=16)
    from dataclasses import replace

    with pytest.raises(ValueError, match="count_cores"):
        replace(s, count_cores=8)
    with pytest.raises(ValueError, match="base_samples"):
        replace(s, base_samples=np.zeros(0))
    with pytest.raises(ValueError, match="ubep"):
        replace(s, ubep=r)


def test_nb06_second_reading_of_the_fit_and_the_communication_only_stragglers():
    """Notebook 06 §1 and Appendix C: both fits are reported (the jitter-free one is the
    notebook's costs); removing the barriers alone (hop-mix baseline -> UBEP) does not cut the
    P99 more than the P50 under a straggler that slows only communication; a slow counting core
    exposes UBEP's single counting core; the EP8 floor of Appendix B exceeds the measurement."""
    from uneven.ep.superpod import CoreCosts
    from uneven.explorers import nb06

    cal = nb06.calibration()
    assert cal.costs.writes_in_flight == cal.fits["baseline"].q == CoreCosts().writes_in_flight
    assert cal.fits["baseline, jittered"].q > cal.fits["baseline"].q
    assert cal.far_share["baseline"] > 0.5 > cal.far_share["baseline, jittered"]
    t = superpod_traffic(64, seed=0)
    r = nb06.barrier_tail(t, cal.costs, n_steps=300)
    ub, cnt = nb06.COMM_STRAGGLERS
    tail = r.tail[ub]
    assert tail["serialised baseline"] > tail["baseline + hop mix"] >= 0
    assert r.cut99[ub] < r.cut50[ub] + 0.01
    assert r.cut99[cnt] < 0 < r.cut50[cnt]
    b = nb06.barrier_needed(cal.costs, 2e-6, barrier_us=(20, 60, 100))
    assert all(f > 116e-6 * 1.3 for f in b.floor8.values())
    with pytest.raises(ValueError, match="barrier_us"):
        nb06.fit_sensitivity(barrier_us=(-1,))
