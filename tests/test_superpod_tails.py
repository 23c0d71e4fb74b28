"""Stragglers with tails (a slow die for a whole step, Pareto per-op delays), the fit of the
writes in flight to CloudMatrix384's dispatch, and a core's write time from its hop mix
(uneven.ep.superpod): old numbers when the new models are off, order properties, the kernel
against its reference on the new draws, closed forms."""

import math

import numpy as np
import pytest
from _superpod_reference import reference_tpot
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep import superpod as M
from uneven.ep.superpod import (
    CLOUDMATRIX_DISPATCH,
    CoreCosts,
    core_write_time,
    decode_steps,
    fit_writes_in_flight,
    latency_samples,
    phase_latency,
    phase_plan,
    scheme,
    superpod_traffic,
)
from uneven.order_stats import expected_max


@pytest.fixture(scope="module")
def small():
    return superpod_traffic(16, tokens_per_rank=16, seed=1)


def _steps(t, kind, n=60, layers=3, **kw):
    return decode_steps(t, CoreCosts(cores=8), scheme(kind), n_steps=n, n_layers=layers,
                        seed=5, **kw)


# --------------------------------------------------------------------------- off means off


@pytest.mark.parametrize("kind", ["baseline", "ubep"])
def test_zero_straggler_probability_and_scale_give_the_old_numbers(small, kind):
    old = _steps(small, kind, jitter=2e-6).tpot
    for kw in (dict(slow_prob=0.0, slowdown=3.0), dict(slow_prob=0.2, slowdown=1.0),
               dict(pareto_scale=0.0, pareto_alpha=1.3)):
        assert np.array_equal(_steps(small, kind, jitter=2e-6, **kw).tpot, old)
    p = phase_plan(small, CoreCosts(cores=8), scheme(kind))
    assert np.array_equal(latency_samples(p, 40, 2e-6, seed=3, slow_prob=0.0, slowdown=2.0),
                          latency_samples(p, 40, 2e-6, seed=3))


# --------------------------------------------------------------------------- order properties


@settings(max_examples=15, deadline=None)
@given(prob=st.floats(0.01, 0.5), slowdown=st.floats(1.05, 4.0),
       kind=st.sampled_from(["baseline", "ubep"]))
def test_a_slow_die_slows_a_step_by_at_most_its_slowdown(small, prob, slowdown, kind):
    """Same draws: a slow die never speeds a step up, and never slows it by more than scaling
    every op of every die by ``slowdown`` would (a step is sums and maxima of op times)."""
    calm = _steps(small, kind, jitter=1e-6)
    slow = _steps(small, kind, jitter=1e-6, slow_prob=prob, slowdown=slowdown)
    assert np.all(slow.tpot >= calm.tpot - 1e-12)
    assert np.all(slow.tpot <= slowdown * calm.tpot + 1e-12)
    assert slow.p99 >= slow.p50
    more = _steps(small, kind, jitter=1e-6, slow_prob=prob, slowdown=slowdown + 0.5)
    assert np.all(more.tpot >= slow.tpot - 1e-12)  # the same dies, slower still


def test_a_slow_die_costs_the_barrier_case_at_least_as_much_at_ep64():
    """Notebook 06's finding at EP64, 128 tokens per die: on the steps a slow die hits, the
    serialised baseline loses at least as much time as UBEP (it waits at every barrier), yet
    UBEP's relative gain at P99 is below its gain at P50 (both wait for the slow die's data)."""
    t = superpod_traffic(64, seed=0)
    c = CoreCosts(writes_in_flight=7)
    kw = dict(n_steps=300, n_layers=8, seed=7, jitter=2e-6)
    b0, u0 = (decode_steps(t, c, scheme(k), **kw) for k in ("baseline", "ubep"))
    b1, u1 = (decode_steps(t, c, scheme(k), slow_prob=0.01, slowdown=1.5, **kw)
              for k in ("baseline", "ubep"))
    hit = (b1.tpot - b0.tpot) > 1e-6
    assert hit.sum() > 10
    assert (b1.tpot - b0.tpot)[hit].mean() >= (u1.tpot - u0.tpot)[hit].mean()
    assert 1 - u1.p99 / b1.p99 < 1 - u1.p50 / b1.p50


@settings(max_examples=10, deadline=None)
@given(alpha=st.floats(1.2, 5.0), scale=st.floats(1e-7, 5e-6))
def test_pareto_delays_add_time_and_a_tail(small, alpha, scale):
    calm = _steps(small, "baseline", jitter=0.0)
    heavy = _steps(small, "baseline", jitter=0.0, pareto_alpha=alpha, pareto_scale=scale)
    assert np.all(heavy.tpot > calm.tpot)
    assert heavy.p99 >= heavy.p50 and np.ptp(calm.tpot) == 0.0


def test_slow_die_scales_every_op_of_that_rank_exactly():
    """One rank of one, always slow at 2x and no jitter: the whole step takes twice as long
    (nothing waits for anything but its own ops; the flight of its writes, a hop latency, is
    made negligible), for every scheme."""
    t = superpod_traffic(1, tokens_per_rank=8, seed=0)
    for s in (scheme("baseline"), scheme("ubep"), scheme("ubep", sync="flag"),
              scheme("baseline", sync="flag")):
        c = CoreCosts(cores=4, barrier_cost=0.0, local_latency=1e-12)
        base = decode_steps(t, c, s, n_steps=3, n_layers=2, jitter=0.0)
        slow = decode_steps(t, c, s, n_steps=3, n_layers=2, jitter=0.0, slow_prob=1.0,
                            slowdown=2.0)
        assert np.allclose(slow.tpot, 2 * base.tpot, rtol=1e-9)
        p = phase_plan(t, c, s)
        one = latency_samples(p, 2, 0.0, slow_prob=1.0, slowdown=2.0)
        # the hop latency of the rank's own arrival is not scaled: only its ops are
        assert np.all(one <= 2 * phase_latency(p) + 1e-12) and np.all(one > phase_latency(p))


def test_pareto_draws_follow_the_lomax_law_and_the_order_statistics():
    d = M._Draws(0, 0.0, pareto_alpha=3.0, pareto_scale=1.0)
    x = d((20000, 64))
    assert abs(x.mean() - 0.5) < 0.02  # Lomax mean: scale / (alpha - 1)
    want = expected_max("pareto", 64, scale=1.0, alpha=3.0) - 1.0  # classical minus its minimum
    assert abs(x.max(axis=1).mean() - want) < 0.05 * want


def test_decode_kernel_matches_its_reference_with_tails():
    t = superpod_traffic(20, tokens_per_rank=3, seed=2)
    c = CoreCosts(cores=5)
    kw = dict(slow_prob=0.3, slowdown=1.7, pareto_alpha=1.5, pareto_scale=1e-6)
    for s in (scheme("baseline"), scheme("ubep"), scheme("ubep", sync="flag"),
              scheme("baseline", sync="flag")):
        steps = decode_steps(t, c, s, n_steps=3, n_layers=4, jitter=3e-6, seed=9, **kw)
        d = phase_plan(t, c, s, "dispatch")
        cb = phase_plan(t, c, s, "combine")
        jit = M._Draws(9, 3e-6, 0.0, 0.0, 1.5, 1e-6)((3, 4, 7, 20))
        n = 20
        base = np.stack([np.full(n, 500e-6), d.rank_count, M._send_base(d),
                         np.full(n, d.poll_time), np.full(n, 100e-6), M._send_base(cb),
                         np.full(n, cb.poll_time)])
        jit = M._SlowDies(9, 0.3, 1.7, base).add(jit)
        want = reference_tpot(t, c, s, jit)
        assert np.allclose(steps.tpot, want, rtol=0, atol=1e-13)


def test_chunked_tail_draws_equal_one_draw(small):
    p = phase_plan(small, CoreCosts(cores=4), scheme("baseline"))
    kw = dict(slow_prob=0.1, slowdown=2.0, pareto_alpha=1.5, pareto_scale=1e-6)
    old = M._CHUNK_DRAWS
    try:
        M._CHUNK_DRAWS = 3 * 16 * 7
        chunked = latency_samples(p, 30, 2e-6, seed=3, **kw)
    finally:
        M._CHUNK_DRAWS = old
    assert np.array_equal(chunked, latency_samples(p, 30, 2e-6, seed=3, **kw))


@pytest.mark.parametrize("kw, match", [
    (dict(slow_prob=1.5), "slow_prob"), (dict(slowdown=0.5), "slowdown"),
    (dict(pareto_alpha=1.0), "pareto_alpha"), (dict(pareto_scale=-1e-6), "pareto_scale"),
    (dict(pareto_scale=math.nan), "pareto_scale"), (dict(slow_ops="ub"), "slow_ops")])
def test_tail_parameters_are_validated_by_name(small, kw, match):
    with pytest.raises(ValueError, match=match):
        _steps(small, "ubep", **kw)
    with pytest.raises(ValueError, match=match):
        latency_samples(phase_plan(small, CoreCosts(cores=8), scheme("ubep")), 2, **kw)


# --------------------------------------------------------------------------- a core's writes


@settings(max_examples=40, deadline=None)
@given(n=st.lists(st.integers(0, 500), min_size=3, max_size=3), q=st.integers(1, 64),
       blocks=st.integers(1, 60), block=st.sampled_from([128, 256, 512, 1024]))
def test_core_write_time_is_the_hop_mix_closed_form(n, q, blocks, block):
    c = CoreCosts(writes_in_flight=q)
    lat = (0.12e-6, 0.6e-6, 1.38e-6)
    want = sum(n[h] * blocks * (lat[h] / q + block / (392e9 / 96)) for h in range(3))
    assert math.isclose(core_write_time(n, c, blocks, block), want, rel_tol=1e-12,
                        abs_tol=1e-18)


def test_core_write_time_is_the_plans_send_time():
    t = M.uniform_traffic(32, 8)
    p = phase_plan(t, CoreCosts(cores=8), scheme("baseline", assignment="hop_mix"))
    for c in range(8):
        assert math.isclose(core_write_time(p.hop_copies[0, c], CoreCosts(cores=8)),
                            p.send_time[0, c], rel_tol=1e-12)
    with pytest.raises(ValueError, match="hop_copies"):
        core_write_time([1, 2])
    with pytest.raises(ValueError, match="hop_copies"):
        core_write_time([1.5, 2, 3])


# --------------------------------------------------------------------------- the fit


def test_fit_is_the_argmin_of_its_scan_and_reproduces_its_model():
    fit = fit_writes_in_flight(q_values=range(2, 12))
    assert fit.q == int(fit.q_values[np.argmin(fit.rms_by_q)])
    assert fit.rms == fit.rms_by_q.min()
    for ep, m in zip(fit.eps, fit.model, strict=True):
        t = superpod_traffic(ep, seed=0)
        assert math.isclose(m, phase_latency(phase_plan(t, fit.costs, scheme("baseline"))))
    assert np.allclose(fit.residual, fit.model / fit.target - 1)
    assert fit.eps == tuple(CLOUDMATRIX_DISPATCH)
    # the report's bandwidths are its latencies over about 8 KB per copy
    assert all(abs(b - 8030) < 30 for b in fit.target_copy_bytes.values())


def test_fit_of_a_single_point_lands_on_it_and_larger_q_is_never_slower_to_fit_less():
    # one target built from the model itself at q = 5 comes back as q = 5, residual 0
    t = superpod_traffic(8, seed=0)
    at5 = phase_latency(phase_plan(t, CoreCosts(writes_in_flight=5), scheme("ubep")))
    fit = fit_writes_in_flight({8: at5}, kind="ubep", q_values=range(1, 10))
    assert fit.q == 5 and abs(fit.residual[0]) < 1e-12
    # the latency falls as q grows (more writes in flight hide more latency)
    assert np.all(np.diff([phase_latency(phase_plan(t, CoreCosts(writes_in_flight=q),
                                                    scheme("ubep"))) for q in (1, 2, 4, 8)]) < 0)


@pytest.mark.parametrize("kw, match", [
    (dict(targets={}), "targets"), (dict(targets={8: -1.0}), "latency"),
    (dict(targets={8: (1e-4, 2e9, 3)}), "targets"), (dict(kind="cann"), "kind"),
    (dict(q_values=[1.5]), "q_values"), (dict(q_values=[]), "q_values"),
    (dict(jitter=-1e-6), "jitter"), (dict(jitter=2e-6, runs=5), "runs")])
def test_fit_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        fit_writes_in_flight(**kw)


def test_the_library_default_q_is_the_fitted_one():
    # CoreCosts' default writes in flight is the value CloudMatrix384's dispatch fits; if the
    # model's costs change, the fit and the default must move together.
    from uneven.ep.superpod import CoreCosts, fit_writes_in_flight

    assert CoreCosts().writes_in_flight == fit_writes_in_flight(kind="baseline").q


# --------------------------------------------------------------------------- what a slow die slows


@pytest.mark.parametrize("kind", ["baseline", "ubep"])
def test_communication_only_slow_die_is_the_slow_die_without_other_work_and_experts(small,
                                                                                     kind):
    """slow_ops="comm" slows only count, send and poll: with no other work and no experts it is
    exactly the all-ops slow die; with them it lies between no straggler and the all-ops one
    (same draws); "count" slows the count alone, at most as much as "comm"."""
    kw = dict(jitter=2e-6, slow_prob=0.3, slowdown=2.0)
    bare = dict(other_time=0.0, expert_time=0.0)
    assert np.array_equal(_steps(small, kind, slow_ops="comm", **bare, **kw).tpot,
                          _steps(small, kind, **bare, **kw).tpot)
    assert np.array_equal(_steps(small, kind, **kw).tpot,
                          _steps(small, kind, slow_ops="all", **kw).tpot)  # the default
    none = _steps(small, kind, jitter=2e-6).tpot
    comm = _steps(small, kind, slow_ops="comm", **kw).tpot
    count = _steps(small, kind, slow_ops="count", **kw).tpot
    every = _steps(small, kind, **kw).tpot
    assert (none <= comm + 1e-15).all() and (comm <= every + 1e-15).all()
    assert (comm < every - 1e-9).any()  # other work and experts were slowed before
    assert (none <= count + 1e-15).all() and (count <= comm + 1e-15).all()
    p = phase_plan(small, CoreCosts(cores=8), scheme(kind))
    lat = dict(n_steps=40, jitter=2e-6, seed=3, slow_prob=0.3, slowdown=2.0)
    assert np.array_equal(latency_samples(p, slow_ops="comm", **lat),
                          latency_samples(p, **lat))  # a phase is all communication
    assert (latency_samples(p, slow_ops="count", **lat)
            <= latency_samples(p, **lat) + 1e-15).all()


def test_slow_counting_costs_ubep_its_single_counting_core():
    """The counting core is UBEP's one serial piece: with the count 10x slower on a slow die,
    it is no longer hidden behind 47 sending cores and UBEP's EP64 dispatch grows, while the
    baseline (counting on all 48 cores) barely moves."""
    t, c = superpod_traffic(64, seed=0), CoreCosts()
    kw = dict(n_steps=30, jitter=0.0, seed=1, slow_prob=1.0, slowdown=10.0, slow_ops="count")
    for kind, grows in (("baseline", False), ("ubep", True)):
        p = phase_plan(t, c, scheme(kind))
        slowed = latency_samples(p, **kw)
        assert (slowed > 1.5 * phase_latency(p)).all() == grows
        assert (slowed >= phase_latency(p) - 1e-15).all()


# --------------------------------------------------------------------------- the jittered fit


def test_jittered_fit_fits_medians_that_are_never_below_the_jitter_free_latency():
    """fit_writes_in_flight(jitter > 0) compares medians of jittered runs: at every q they are
    at least the jitter-free latency (delays only add), so the jittered fit needs more writes
    in flight; jitter=0 is the old fit."""
    calm = fit_writes_in_flight(q_values=range(4, 16))
    jit = fit_writes_in_flight(q_values=range(4, 16), jitter=2e-6, runs=50)
    assert calm.jitter == 0.0 and jit.jitter == 2e-6
    assert fit_writes_in_flight(q_values=range(4, 16), jitter=0.0).q == calm.q
    assert (jit.rms_by_q >= 0).all() and jit.q > calm.q
    for q in (4, 9, 15):
        one = fit_writes_in_flight(q_values=[q], jitter=2e-6, runs=50)
        assert (one.model >= fit_writes_in_flight(q_values=[q]).model - 1e-15).all()


def test_jittered_fit_at_the_notebooks_settings():
    """Notebook 06's second reading: with 2-µs exponential jitter the medians fit CloudMatrix-
    Infer's 116/152 µs at q = 13, where a two-hop write's latency share (1.38 µs / 13) is
    below its bytes (512 B at 392 GB/s / 96)."""
    fit = fit_writes_in_flight(jitter=2e-6)
    assert fit.q == 13 and fit.rms < 0.02 and max(abs(fit.residual)) < 0.025
    c = fit.costs
    assert c.hop_latency[2] / c.writes_in_flight < 512 / c.core_bandwidth
