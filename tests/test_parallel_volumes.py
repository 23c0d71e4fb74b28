"""Per-layer communication volumes of TP, Ulysses SP and EP against hand-counted tensor shapes."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.collectives import ring_all_gather
from uneven.parallel_volumes import (
    INTERNAL_352B,
    MIXTRAL_8X7B,
    MoeShape,
    collective_time,
    comm_volume,
    ep_crossover_k,
    group_comm_times,
    inter_node_fraction,
    layer_volume,
)
from uneven.topology import h800_cluster


def _shape(b=1, s=64, h=32, heads=8, kv=2, k=2, experts=8):
    return MoeShape("toy", hidden=h, heads=heads, kv_heads=kv, ffn_hidden=4 * h,
                    n_experts=experts, top_k=k, seq_len=s, micro_batch=b)


def _count_sp_by_hand(shape, n):
    """Values GPU 0 sends in Ulysses SP, counted tensor by tensor and destination by
    destination: before attention its sequence shard of Q [b, s/n, h] and K, V [b, s/n, h/m]
    goes out head shard by head shard; after attention its head shard of the output
    [b, s, h/n] goes out sequence shard by sequence shard."""
    b, s, h, m = shape.micro_batch, shape.seq_len, shape.hidden, shape.m
    sent = 0.0
    for dst in range(1, n):  # GPU 0 keeps its own shard
        del dst
        sent += b * (s / n) * (h / n)  # Q: my tokens, the destination's heads
        sent += 2 * b * (s / n) * (h / m / n)  # K and V
        sent += b * (s / n) * (h / n)  # output: the destination's tokens, my heads
    return sent


def _count_ep_by_hand(shape, n):
    """Values GPU 0 sends in EP dispatch + combine with experts spread so that every token's k
    copies land on GPUs uniformly (round-robin over all n GPUs)."""
    b, s, h, k = shape.micro_batch, shape.seq_len, shape.hidden, shape.top_k
    tokens = b * s // n
    copies = np.arange(tokens * k) % n  # destination GPU of each copy
    remote = int(np.count_nonzero(copies != 0))
    return 2 * remote * h  # there and back


def _count_tp_by_hand(shape, n):
    """Values GPU 0 sends in a ring all-gather and a ring reduce-scatter of [b, s, h]."""
    chunk = shape.bsh / n
    return 2 * (n - 1) * chunk


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("kv", [1, 2, 8])
def test_sp_volume_is_what_the_tensors_hold(n, kv):
    shape = _shape(kv=kv, s=64 * n)
    assert comm_volume(shape, n, "attention", "sp") == pytest.approx(_count_sp_by_hand(shape, n))


def test_paper_eq2_is_twice_the_shapes_and_ratio_to_tp():
    s = INTERNAL_352B
    sp = comm_volume(s, 8, "attention", "sp")
    printed = comm_volume(s, 8, "attention", "sp", formula="paper")
    tp = comm_volume(s, 8, "attention", "tp")
    assert printed == pytest.approx(2 * sp)
    assert sp / tp == pytest.approx((1 + 1 / 4) / 8) == pytest.approx(0.15625)
    assert printed / tp == pytest.approx(0.3125)
    # the same accounting reproduces the paper's Eq. 3 for EP exactly
    n, k = 8, s.top_k
    assert comm_volume(s, n, "ffn", "ep") == pytest.approx(2 * k / n * s.bsh * (n - 1) / n)


@pytest.mark.parametrize("n, k", [(2, 1), (4, 2), (8, 3), (8, 8), (8, 2)])
def test_ep_and_tp_volumes_match_hand_counts(n, k):
    shape = _shape(k=k, s=64 * n, experts=8)
    assert comm_volume(shape, n, "ffn", "ep") == pytest.approx(_count_ep_by_hand(shape, n))
    assert comm_volume(shape, n, "ffn", "tp") == pytest.approx(_count_tp_by_hand(shape, n))
    assert comm_volume(shape, n, "attention", "tp") == pytest.approx(_count_tp_by_hand(shape, n))
    assert comm_volume(shape, n, "ffn", "ep_agrs") == comm_volume(shape, n, "ffn", "tp")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 64), kv=st.sampled_from([1, 2, 4, 8]), k=st.integers(1, 8))
def test_volume_properties(n, kv, k):
    shape = _shape(heads=8, kv=kv, k=k)
    sp = comm_volume(shape, n, "attention", "sp")
    tp = comm_volume(shape, n, "attention", "tp")
    ep = comm_volume(shape, n, "ffn", "ep")
    assert 0 <= sp <= tp and ep >= 0
    if n > 1:
        assert ep / comm_volume(shape, n, "ffn", "tp") == pytest.approx(k / n)
        assert sp / tp == pytest.approx((1 + 1 / shape.m) / n)
    else:
        assert sp == tp == ep == 0


def test_intra_and_inter_node_split():
    assert inter_node_fraction(8) == 0.0 and inter_node_fraction(4, 8, "ring") == 0.0
    assert inter_node_fraction(16) == pytest.approx(8 / 15)
    assert inter_node_fraction(32, pattern="ring") == pytest.approx(1 / 8)
    for n in (4, 8, 16, 32):
        v = layer_volume(INTERNAL_352B.with_(micro_batch=4), n)
        assert v.intra + v.inter == pytest.approx(v.total)
        assert (v.inter == 0) == (n <= 8)


def test_crossover_of_all_to_all_and_ring_collectives():
    n, eff = 8, 0.75
    k_star = ep_crossover_k(n, eff)
    assert k_star == 6.0
    for k, a2a_faster in ((5, True), (7, False)):
        shape = MIXTRAL_8X7B.with_(top_k=k)
        t_a2a = collective_time(comm_volume(shape, n, "ffn", "ep") * 2, n, "all_to_all",
                                bandwidth=160e9, a2a_efficiency=eff)
        t_ring = collective_time(comm_volume(shape, n, "ffn", "ep_agrs") * 2, n, "ring",
                                 bandwidth=160e9)
        assert (t_a2a < t_ring) == a2a_faster
    shape = MIXTRAL_8X7B.with_(top_k=6)
    assert collective_time(comm_volume(shape, n, "ffn", "ep"), n, "all_to_all", bandwidth=1e9,
                           a2a_efficiency=eff) == pytest.approx(
        collective_time(comm_volume(shape, n, "ffn", "ep_agrs"), n, "ring", bandwidth=1e9))
    assert collective_time(1e9, 1, "ring", bandwidth=1e9) == 0.0


def test_ring_on_the_topology_equals_alpha_beta():
    # A ring inside one H800 node: each of n-1 steps moves S/n at 160 GB/s plus NVLink latency.
    S = 64e6
    r = ring_all_gather(h800_cluster(1), S)
    t = collective_time(S * 7 / 8, 8, "ring", bandwidth=160e9, alpha=3.33e-6)
    assert r.time == pytest.approx(t)
    tp = group_comm_times(INTERNAL_352B, 8, attention="tp", ffn="tp")
    vol = comm_volume(INTERNAL_352B, 8, "attention", "tp") * 2
    # two ring collectives of half the volume each
    assert tp["attention"] == pytest.approx(2 * collective_time(vol / 2, 8, "ring",
                                                                bandwidth=160e9, alpha=3.33e-6))


def test_leaving_the_node_makes_the_nic_the_bound():
    one = group_comm_times(INTERNAL_352B, 8)
    two = group_comm_times(INTERNAL_352B.with_(micro_batch=2), 16)  # same tokens per GPU
    assert set(one["bound"].values()) == {"nvl_out"}
    assert set(two["bound"].values()) == {"nic_up"}
    assert two["total"] > 1.5 * one["total"]
    tp_two = group_comm_times(INTERNAL_352B.with_(micro_batch=2), 16, attention="tp", ffn="tp")
    assert tp_two["total"] > 3 * two["total"]


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="module"):
        comm_volume(INTERNAL_352B, 8, "router", "tp")
    with pytest.raises(ValueError, match="strategy"):
        comm_volume(INTERNAL_352B, 8, "attention", "ep")
    with pytest.raises(ValueError, match="formula"):
        comm_volume(INTERNAL_352B, 8, "attention", "sp", formula="guess")
    with pytest.raises(ValueError, match="n must"):
        comm_volume(INTERNAL_352B, 0, "attention", "sp")
    with pytest.raises(ValueError, match="shape"):
        comm_volume({"hidden": 1}, 8, "attention", "sp")
    with pytest.raises(ValueError, match="kv_heads"):
        MoeShape("bad", hidden=8, heads=6, kv_heads=4, ffn_hidden=8, n_experts=2, top_k=1,
                 seq_len=8)
    with pytest.raises(ValueError, match="top_k"):
        INTERNAL_352B.with_(top_k=33)
    with pytest.raises(ValueError, match="a2a_efficiency"):
        ep_crossover_k(8, 1.5)
    with pytest.raises(ValueError, match="bandwidth"):
        collective_time(1.0, 8, "ring", bandwidth=0.0)
    with pytest.raises(ValueError, match="topology"):
        group_comm_times(INTERNAL_352B, 8, topology="h800")


def test_model_counts():
    s = INTERNAL_352B
    assert s.total_params() / 1e9 == pytest.approx(341.5, abs=0.5)
    assert s.m == 4 and s.f == pytest.approx(3.5)
    assert math.isclose(s.attention_params(), 4096 * 4096 * 2.5)


# --------------------------------------------------------------------------- hardening


def test_shape_fields_are_checked_and_normalised():
    import dataclasses

    s = _shape()
    assert dataclasses.replace(s, hidden=64.0).hidden == 64 and isinstance(
        dataclasses.replace(s, hidden=64.0).hidden, int)
    for field, bad in (("hidden", True), ("seq_len", 10**400), ("name", 3), ("sources", None),
                       ("top_k", 99), ("kv_heads", 3)):
        with pytest.raises(ValueError, match=field):
            dataclasses.replace(s, **{field: bad})
    with pytest.raises(ValueError, match="shape"):
        comm_volume("INTERNAL_352B", 8, "ffn", "ep")


def test_layer_volume_is_checked_and_names_its_parameters():
    import dataclasses

    v = layer_volume(INTERNAL_352B, 8)
    assert v.total == v.attention + v.ffn
    with pytest.raises(ValueError, match="total"):
        dataclasses.replace(v, total=v.total + 1e6)
    with pytest.raises(ValueError, match="attention"):
        dataclasses.replace(v, attention=math.nan)
    with pytest.raises(ValueError, match="ffn_strategy"):
        dataclasses.replace(v, ffn_strategy="dp")
    for kw, name in (({"attention": ["sp"]}, "attention"), ({"ffn": "ep2"}, "ffn"),
                     ({"bytes_per_value": 1e308}, "bytes_per_value")):
        with pytest.raises(ValueError, match=name):
            layer_volume(INTERNAL_352B, 8, **kw)


def test_collective_time_refuses_overflow_and_underflow():
    with pytest.raises(ValueError, match="nbytes_per_gpu"):
        collective_time(1e308, 8, "ring", bandwidth=1e-10)
    with pytest.raises(ValueError, match="bandwidth"):  # bandwidth x efficiency underflows to 0
        collective_time(1.0, 8, "all_to_all", bandwidth=5e-324, a2a_efficiency=0.5)
    with pytest.raises(ValueError, match="alpha"):
        collective_time(1.0, 8, "ring", bandwidth=1e9, alpha=1e308)


def test_group_comm_times_checks_the_topology_callable():
    def boom(n_nodes):
        raise RuntimeError("no cluster")

    with pytest.raises(ValueError, match="topology"):
        group_comm_times(INTERNAL_352B, 8, topology=boom)
    with pytest.raises(ValueError, match="topology"):
        group_comm_times(INTERNAL_352B, 8, topology=lambda n: None)
    with pytest.raises(ValueError, match="topology"):
        group_comm_times(INTERNAL_352B, 8, topology=h800_cluster(1))  # not a callable
    with pytest.raises(ValueError, match="a2a_efficiency"):
        group_comm_times(INTERNAL_352B, 8, a2a_efficiency=5e-324)
