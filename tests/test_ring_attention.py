"""Ring context parallelism: zig-zag balance counted token by token, the ring volume's closed
form against an explicit ring, the overlap model, and ring steps on the link-load engine."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ring_attention import (
    causal_pairs,
    chunk_assignment,
    hide_threshold,
    kv_bytes_per_token,
    ring_flows,
    ring_layer_time,
    ring_step_time,
    ring_volume,
    zigzag_chunks,
)
from uneven.topology import h800_cluster


def mask_pairs(n, c, scheme):
    """Count causal (query >= key) pairs per rank from the token-level mask."""
    L = 2 * n * c
    owner = np.empty(L, dtype=int)
    for rank, chunks in enumerate(chunk_assignment(n, scheme)):
        for ch in chunks:
            owner[ch * c:(ch + 1) * c] = rank
    q = np.arange(L)[:, None]
    k = np.arange(L)[None, :]
    mask = q >= k
    return np.bincount(owner, weights=mask.sum(axis=1), minlength=n).astype(int)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("c", [1, 2, 5])
def test_causal_pairs_match_the_mask_token_by_token(n, c):
    for scheme in ("zigzag", "contiguous"):
        assert causal_pairs(n, c, scheme).tolist() == mask_pairs(n, c, scheme).tolist()


@given(st.integers(1, 4096), st.integers(1, 64))
def test_zigzag_equalises_causal_work_exactly(n, c):
    pairs = causal_pairs(n, c)
    assert np.all(pairs == 2 * n * c * c + c)
    assert pairs.sum() == (2 * n * c) * (2 * n * c + 1) // 2  # every causal pair once
    if n > 1:
        plain = causal_pairs(n, c, "contiguous")
        assert plain.max() > plain.min()


def test_zigzag_chunks_cover_every_chunk_once():
    for n in (1, 4, 7):
        z = zigzag_chunks(n)
        assert sorted(z.ravel().tolist()) == list(range(2 * n))


def explicit_ring_bytes(tokens, n, kvb):
    """Pass blocks around a ring step by step; count what rank 0 sends."""
    block = tokens / n * kvb
    held = list(range(n))  # rank k holds block k
    sent = 0.0
    for _ in range(n - 1):
        sent += block  # rank 0 forwards the block it holds
        held = held[-1:] + held[:-1]
    return sent


@given(st.integers(1, 2048), st.integers(1, 1 << 22))
def test_ring_volume_closed_form_and_independent_of_n(n, tokens):
    kvb = kv_bytes_per_token(8, 128)
    v = ring_volume(tokens, n, kvb)
    assert v == pytest.approx(explicit_ring_bytes(tokens, n, kvb))
    assert v == pytest.approx((n - 1) / n * tokens * kvb)
    assert v <= tokens * kvb  # never more than 2 L n_kv d_head b, whatever N
    assert ring_volume(tokens, n, kvb, backward=True) == pytest.approx(2 * v)


def test_ring_volume_is_about_two_l_nkv_dhead_b():
    L, kvh, d, b = 2**20, 8, 128, 2
    big = [ring_volume(L, n, kv_bytes_per_token(kvh, d, b)) / (2 * L * kvh * d * b)
           for n in (64, 256, 1024)]
    assert all(0.98 < r <= 1.0 for r in big)


def test_ring_layer_time_regimes():
    # compute-bound: the ring costs A / N (plus the linear part)
    r = ring_layer_time(1.0, 8192, 8, 4096, 100e9, linear=0.01)
    assert r.hidden and r.exposed == 0.0
    assert r.time == pytest.approx(1.0 / 8 + 0.01)
    # transfer-bound: (N - 1) steps of transfer plus one local step
    r = ring_layer_time(1e-3, 8192, 8, 4096, 1e9)
    assert not r.hidden
    assert r.time == pytest.approx(1e-3 / 64 + 7 * 8192 * 4096 / 1e9)
    assert r.exposed == pytest.approx(7 * (8192 * 4096 / 1e9 - 1e-3 / 64))
    back = ring_layer_time(1e-3, 8192, 8, 4096, 1e9, backward=True)
    assert back.time == pytest.approx(2 * r.time)
    # one rank: no ring at all
    assert ring_layer_time(0.5, 8192, 1, 4096, 1e9).time == pytest.approx(0.5)


@given(st.floats(1e-12, 1e-10), st.integers(1, 64), st.floats(1e10, 1e12), st.integers(2, 512))
@settings(max_examples=60)
def test_hide_threshold_separates_hidden_from_exposed(alpha, kv_heads, bw, n):
    kvb = kv_bytes_per_token(kv_heads, 128)
    beta = 1e-7
    c_star = hide_threshold(alpha, kvb, bw, beta=beta, n_ranks=n)
    for c, hidden in ((c_star * 1.01 + 1, True), (c_star * 0.99, False)):
        if c <= 0:
            continue
        s = n * c
        r = ring_layer_time(alpha * s * s + beta * s, c, n, kvb, bw)
        assert r.hidden == hidden


def test_ring_step_on_the_engine_matches_the_hop_model():
    """The closed form the scheduler uses (bytes per GPU / slowest hop + a hop latency) agrees with
    the link-load engine for random disjoint rings of 2-GPU ranks (rails meet in the spines)."""
    topo = h800_cluster(16, fabric="multi_rail", cross_rail="spine")
    rng = np.random.default_rng(0)
    for _ in range(30):
        ranks = rng.permutation(topo.n_gpus // 2)
        sizes = rng.integers(2, 9, size=4)
        rings, pos = [], 0
        for k in sizes:
            r = np.sort(ranks[pos:pos + k])
            rings.append(np.stack([2 * r, 2 * r + 1], axis=1))
            pos += k
        nbytes = 64e6
        t = ring_step_time(topo, rings, nbytes)
        closed = []
        for g in rings:
            nodes = np.unique(g[:, 0] // 8)
            bw = 50e9 if nodes.size > 1 else 160e9
            closed.append(nbytes / 2 / bw)
        assert t == pytest.approx(max(closed), abs=4e-6)  # latencies are a few microseconds


def test_ring_flows_and_validation():
    src, dst = ring_flows([[3]])
    assert src.size == dst.size == 0
    with pytest.raises(ValueError, match="repeat"):
        ring_flows([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="n_ranks"):
        chunk_assignment(0)
    with pytest.raises(ValueError, match="scheme"):
        chunk_assignment(4, "random")
    with pytest.raises(ValueError, match="bandwidth"):
        ring_layer_time(1.0, 10, 2, 1.0, 0.0)
    with pytest.raises(ValueError, match="backward"):
        ring_volume(10, 2, 1.0, backward=1)
    with pytest.raises(ValueError, match="disjoint"):
        ring_step_time(h800_cluster(2), [[[0], [1]], [[1], [2]]], 1.0)


def test_ranges_keep_every_result_finite():
    from dataclasses import replace

    r = ring_layer_time(1.0, 8192, 4, 4096, 100e9)
    with pytest.raises(ValueError, match="step_comm"):
        replace(r, step_comm=float("inf"))
    with pytest.raises(ValueError, match="n_ranks"):
        replace(r, n_ranks=True)
    with pytest.raises(ValueError, match="bandwidth"):
        ring_layer_time(1.0, 8192, 4, 4096, 5e-324)
    with pytest.raises(ValueError, match="tokens"):
        ring_volume(1e308, 4, 1e308)
    with pytest.raises(ValueError, match="alpha"):
        hide_threshold(5e-324, 4096, 100e9)
    with pytest.raises(ValueError, match="chunk_tokens"):
        causal_pairs(1 << 20, 1 << 24)  # more query-key pairs than int64 holds
    assert causal_pairs(1 << 10, 1 << 24).dtype == np.int64


def test_ring_step_time_reads_one_ring_or_a_list_of_rings():
    topo = h800_cluster(2)
    one = ring_step_time(topo, [[0, 1], [8, 9]], 1e6)
    assert ring_step_time(topo, np.array([[0, 1], [8, 9]]), 1e6) == one
    assert ring_step_time(topo, [[[0, 1], [8, 9]], [[2], [3]]], 1e6) >= one  # ragged list
    for bad, name in ((np.array(0.0), "rings"), ([1, 2], "rings"), ([[0, 1], [8]], "rings"),
                      ([[0, 16]], "rings"), (None, "rings")):
        with pytest.raises(ValueError, match=name):
            ring_step_time(topo, bad, 1e6)
    with pytest.raises(ValueError, match="topo"):
        ring_step_time("h800", [[0, 1]], 1e6)
    with pytest.raises(ValueError, match="bytes_per_rank"):
        ring_step_time(topo, [[0, 1]], float("nan"))
