"""Collectives against closed forms, nccl-tests definitions, and the workload generators."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.collectives import (
    BUSBW_FACTOR,
    algbw,
    all_to_all,
    alpha_beta_time,
    busbw,
    ring_all_gather,
    ring_all_reduce,
    ring_reduce_scatter,
    send_recv,
)
from uneven.topology import cluster, h800_cluster
from uneven.workloads import (
    episodic_delay_trace,
    expert_loads,
    expert_popularity,
    gaussian_delay_trace,
    sequence_lengths,
    token_share_above,
)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(2, 8),
    nbytes=st.floats(1e3, 1e10),
    alpha=st.floats(0.0, 1e-4),
    bw=st.floats(1e9, 1e12),
)
def test_ring_collectives_on_a_flat_ring_match_alpha_beta(n, nbytes, alpha, bw):
    # One NVLink domain: each ring hop is one out-port (latency alpha) and one in-port.
    flat = cluster(1, gpus_per_node=n, nics_per_node=1, nvlink_bw=bw, nic_bw=1.0,
                   nvlink_latency=alpha)
    ar = ring_all_reduce(flat, nbytes)
    expect = 2 * (n - 1) * alpha + 2 * (n - 1) / n * nbytes / bw
    assert ar.time == pytest.approx(expect, rel=1e-9)
    assert ar.time == pytest.approx(alpha_beta_time("all_reduce", n, nbytes, alpha, bw))
    ag = ring_all_gather(flat, nbytes)
    rs = ring_reduce_scatter(flat, nbytes)
    assert ag.time == pytest.approx(rs.time)
    assert ar.time == pytest.approx(2 * ag.time)
    # With no latency, the ring's bus bandwidth is exactly the link bandwidth.
    if alpha == 0:
        assert ar.busbw == pytest.approx(bw)
        assert ag.busbw == pytest.approx(bw)


def test_ring_bytes_per_link():
    t = cluster(1, gpus_per_node=4, nics_per_node=1, nvlink_bw=1e9, nic_bw=1.0)
    r = ring_all_reduce(t, 4e6)
    # Each out-port carries 2(n-1) chunks of S/n.
    assert r.loads.grid("nvl_out").ravel() == pytest.approx([6e6] * 4)


def test_ring_across_nodes_is_bound_by_the_nic():
    t = h800_cluster(2)
    ranks = [0, 8]  # one GPU per node, same rail
    r = ring_all_gather(t, 2e9, ranks=ranks)
    assert r.loads.bottleneck()[1].startswith(("nic_up", "nic_down"))
    assert r.time == pytest.approx(1e9 / 50e9 + 2.8e-6)


def test_send_recv_and_nccl_definitions():
    t = h800_cluster(2)
    r = send_recv(t, 0, 8, 5e9)
    assert r.time == pytest.approx(0.1 + 2.8e-6)
    assert algbw(1e9, 0.5) == 2e9
    for op, f in BUSBW_FACTOR.items():
        assert busbw(op, 8, 1e9, 1.0) == pytest.approx(1e9 * f(8))
    assert BUSBW_FACTOR["all_reduce"](8) == pytest.approx(1.75)


def test_all_to_all_forms_agree():
    t = h800_cluster(2)
    n = t.n_gpus
    T = np.full((n, n), 1e6)
    np.fill_diagonal(T, 0)
    a = all_to_all(t, 1e6)
    b = all_to_all(t, traffic=T)
    c = all_to_all(t, node_weights=np.ones((2, 2)), block=np.full((8, 8), 1e6))
    assert a.time == pytest.approx(b.time) == pytest.approx(c.time)
    np.testing.assert_allclose(a.loads.bytes, b.loads.bytes)


def test_all_to_all_more_bytes_never_faster():
    t = h800_cluster(4)
    times = [all_to_all(t, s).time for s in (1e3, 1e5, 1e6, 1e7)]
    assert times == sorted(times)


def test_collective_validation():
    t = h800_cluster(1)
    with pytest.raises(ValueError, match="exactly one"):
        all_to_all(t)
    with pytest.raises(ValueError, match="ranks"):
        ring_all_reduce(t, 1e6, ranks=[0, 0])
    with pytest.raises(ValueError, match="op"):
        busbw("gossip", 4, 1, 1)
    with pytest.raises(ValueError, match="nbytes"):
        ring_all_gather(t, -1)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 300), ratio=st.floats(1.0, 50.0), seed=st.integers(0, 1000))
def test_expert_popularity_hits_its_ratio(n, ratio, seed):
    p = expert_popularity(n, ratio, seed)
    assert p.sum() == pytest.approx(1.0)
    assert p.max() / np.median(p) == pytest.approx(ratio, rel=1e-6)


def test_expert_loads_are_seeded_and_sum():
    a = expert_loads(256, 10**6, 8.0, seed=3)
    b = expert_loads(256, 10**6, 8.0, seed=3)
    assert np.array_equal(a, b)
    assert a.sum() == 10**6
    assert a.max() / np.median(a) == pytest.approx(8.0, rel=0.01)
    assert not np.array_equal(a, expert_loads(256, 10**6, 8.0, seed=4))


def test_sequence_lengths_are_heavy_tailed():
    L = sequence_lengths(200_000, seed=0)
    assert 0.7 < np.mean(L <= 4096) < 0.85
    assert 0.3 < token_share_above(L, 131072) < 0.6
    assert np.mean(L >= 131072) < 0.02
    assert np.array_equal(L, sequence_lengths(200_000, seed=0))


def test_delay_traces():
    tr = episodic_delay_trace(1200, 7, seed=1)
    assert tr.shape == (1200, 7)
    busy = (tr > 0).any(axis=1)
    assert busy.sum() == 9 * 70
    assert tr[tr > 0].min() >= 0.020 and tr.max() <= 0.060
    per_it = (tr > 0).sum(axis=1)
    assert per_it.max() <= 3
    g = gaussian_delay_trace(500, 4, seed=2)
    assert g.min() >= 0 and g.shape == (500, 4)
    with pytest.raises(ValueError, match="n_episodes"):
        episodic_delay_trace(100, 7)
    with pytest.raises(ValueError, match="busiest_over_median"):
        expert_popularity(8, 0.5)


def test_fluid_transfers_agree_with_the_bottleneck_model():
    from uneven.collectives import fluid_transfers

    t = h800_cluster(2)
    n = t.n_gpus
    s, d = np.meshgrid(np.arange(n), np.arange(n))
    s, d = s.ravel(), d.ravel()
    keep = s != d
    fluid = fluid_transfers(t, s[keep], d[keep], np.full(keep.sum(), 1e6))
    assert fluid.makespan == pytest.approx(all_to_all(t, 1e6).time)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 40))
def test_fluid_makespan_is_at_least_the_busiest_link(seed, m):
    from uneven.collectives import fluid_transfers
    from uneven.engines.linkload import link_loads

    t = cluster(2, gpus_per_node=4, nics_per_node=2, nvlink_bw=4e9, nic_bw=1e9)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, t.n_gpus, m)
    dst = (src + rng.integers(1, t.n_gpus, m)) % t.n_gpus
    size = rng.uniform(1e3, 1e6, m)
    fluid = fluid_transfers(t, src, dst, size)
    loads = link_loads(t, src, dst, size)
    assert fluid.makespan >= loads.seconds_per_link().max() * (1 - 1e-9)
    # A transfer that starts later never finishes before it could have alone.
    late = fluid_transfers(t, src, dst, size, arrival=np.full(m, 1.0))
    assert late.finish.min() >= 1.0
