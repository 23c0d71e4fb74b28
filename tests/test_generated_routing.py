"""Gate scores generated inside the routing kernel (counter-based RNG) and the one-pass
DeepSeek-V3 step: same numbers as the pure-Python generator, same routing as the reference on the
same scores, same bytes as routing then aggregating."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep._kernels import _counter_key, _popularity_odds
from uneven.ep.model import EpStep, ep_step
from uneven.ep.placement import _reference_slot, replica_table, replicated_slots
from uneven.ep.routing import (
    _reference_counter_scores,
    _reference_node_limited,
    contiguous_placement,
    counter_gate_scores,
    expert_load,
    generated_route,
    node_limited_route,
)
from uneven.ep.traffic import _reference_ep, ep_dispatch_traffic
from uneven.topology import h800_cluster


@settings(max_examples=40, deadline=None)
@given(n_tokens=st.integers(0, 5), n_experts=st.integers(1, 13), first=st.integers(0, 10**6),
       seed=st.integers(0, 2**40), skew=st.sampled_from([0.0, 0.3, 2.0, 60.0]))
def test_counter_scores_equal_the_pure_python_generator(n_tokens, n_experts, first, seed, skew):
    w = _popularity_odds(skew, n_experts, seed) if skew else None
    ref = _reference_counter_scores(_counter_key(seed), first, n_tokens, n_experts, w)
    got = counter_gate_scores(n_tokens, n_experts, skew, seed, first_token=first)
    assert got.dtype == np.float32 and np.array_equal(got, ref)
    assert ((got >= 0) & (got <= 1)).all()


def test_counter_scores_are_uniform_and_any_range_reproduces():
    s = counter_gate_scores(4096, 256, seed=7)
    assert abs(float(s.mean()) - 0.5) < 2e-3 and abs(float(s.var()) - 1 / 12) < 1e-3
    # neighbouring experts (one hash) and neighbouring tokens are uncorrelated
    assert abs(np.corrcoef(s[:, 0], s[:, 1])[0, 1]) < 0.05
    assert abs(np.corrcoef(s[:-1].ravel(), s[1:].ravel())[0, 1]) < 0.01
    assert np.array_equal(counter_gate_scores(10, 256, seed=7, first_token=100), s[100:110])
    # skew makes popular experts: the busiest expert's mean score grows
    hot = counter_gate_scores(4096, 256, skew=1.5, seed=7)
    assert hot.mean(axis=0).max() > 0.9 > s.mean(axis=0).max()


CONFIGS = st.sampled_from([
    (256, 8, 4, 8), (256, 8, 4, 12), (256, 8, 8, 8), (256, 8, 1, 3), (256, 8, 4, 128),
    (12, 3, 2, 3), (15, 5, 2, 4), (15, 5, 5, 9), (8, 1, 1, 8), (16, 16, 3, 2), (64, 4, 2, 20),
])


@settings(max_examples=40, deadline=None)
@given(cfg=CONFIGS, skew=st.sampled_from([0.0, 0.8]), seed=st.integers(0, 100),
       first=st.integers(0, 10**5), with_bias=st.booleans(), scale=st.sampled_from([1.0, 2.5]))
def test_generated_route_equals_the_reference_on_the_same_scores(cfg, skew, seed, first,
                                                                 with_bias, scale):
    n_experts, n_groups, max_groups, k = cfg
    bias = np.random.default_rng(seed).normal(0, 0.05, n_experts) if with_bias else None
    n = 40
    r = generated_route(n, n_experts, k, n_groups, max_groups, skew=skew, seed=seed,
                        first_token=first, bias=bias, route_scale=scale)
    s = counter_gate_scores(n, n_experts, skew, seed, first_token=first).astype(np.float64)
    ids, w = _reference_node_limited(s, np.zeros(n_experts) if bias is None else bias, k,
                                     n_groups, max_groups, scale)
    assert np.array_equal(r.expert_ids, ids) and np.array_equal(r.weights, w)
    fast = node_limited_route(s, k, n_groups, max_groups, bias, scale)
    assert np.array_equal(r.expert_ids, fast.expert_ids)
    assert np.array_equal(r.weights, fast.weights)


def test_generated_route_ties_go_to_the_lower_expert():
    # a huge skew pushes hot experts' scores to exactly 1.0: many ties at the top
    r = generated_route(200, 256, 8, 8, 4, skew=60.0, seed=3)
    s = counter_gate_scores(200, 256, 60.0, 3).astype(np.float64)
    assert (s == 1.0).sum(axis=1).max() > 8
    assert np.array_equal(r.expert_ids, node_limited_route(s, 8, 8, 4).expert_ids)


def _route_then_count(n_gpus, tpg, ep, k, max_nodes, skew, seed, bias, mode, bpc):
    place = contiguous_placement(256, ep)
    nets, nvls, loads, nodes = [], [], [], []
    for q in range(n_gpus // ep):
        ids = np.concatenate([
            generated_route(tpg, 256, k, ep // 8, min(max_nodes, ep // 8), skew=skew, seed=seed,
                            bias=bias, first_token=gpu * tpg).expert_ids
            for gpu in range(q * ep, (q + 1) * ep)])
        t = ep_dispatch_traffic(ids, np.repeat(np.arange(ep), tpg), place, 8, bpc, mode=mode,
                                n_gpus=ep)
        nets.append(t.network)
        nvls.append(t.nvlink)
        loads.append(expert_load(ids, 256))
        nodes.append(t.nodes_per_token)
    return np.array(nets), np.array(nvls), np.array(loads), np.concatenate(nodes)


@pytest.mark.parametrize("n_gpus, tpg, ep, k, max_nodes, skew, mode, bias, threads", [
    (32, 40, 16, 8, 4, 0.0, "relay", False, 1),
    (64, 25, 32, 8, 2, 0.7, "direct", False, 3),
    (64, 15, 64, 8, 4, 0.0, "relay", True, 2),
    (128, 8, 64, 6, 3, 1.2, "relay", False, 4),
])
def test_ep_step_equals_routing_then_aggregating(n_gpus, tpg, ep, k, max_nodes, skew, mode, bias,
                                                 threads):
    b = np.random.default_rng(1).normal(0, 0.1, 256) if bias else None
    st_ = ep_step(n_gpus, tpg, ep=ep, k=k, max_nodes=max_nodes, skew=skew, seed=9, bias=b,
                  mode=mode, threads=threads)
    net, nvl, load, nodes = _route_then_count(n_gpus, tpg, ep, k, max_nodes, skew, 9, b, mode,
                                              st_.bytes_per_copy)
    assert np.array_equal(st_.network, net) and np.array_equal(st_.nvlink, nvl)
    assert np.array_equal(st_.expert_load, load)
    assert st_.nodes_per_token == pytest.approx(nodes.mean(), rel=1e-12)
    assert st_.expert_load.sum() == n_gpus * tpg * k
    # link loads: the bytes of every group on the whole cluster
    assert st_.loads.bytes.sum() > 0 and st_.time == st_.loads.time()


def test_ep_step_does_not_depend_on_threads_and_counts_copies():
    one = ep_step(128, 32, threads=1, seed=2)
    four = ep_step(128, 32, threads=4, seed=2)
    for name in ("network", "nvlink", "expert_load"):
        assert np.array_equal(getattr(one, name), getattr(four, name))
    assert one.time == four.time
    assert isinstance(one, EpStep)
    # relay: one network copy per remote node
    assert one.network_copies_per_token == pytest.approx(one.remote_nodes_per_token)
    assert 1.0 <= one.nodes_per_token <= 4.0


@pytest.mark.parametrize("kwargs, match", [
    ({"n_gpus": 100}, "multiple of ep"),
    ({"ep": 12}, "multiple of gpus_per_node"),
    ({"n_experts": 100}, "multiple of ep"),
    ({"k": 200}, "k must"),
    ({"mode": "relays"}, "mode"),
    ({"threads": 0}, "threads"),
    ({"topology": lambda n: None}, "topology"),
    ({"bias": [0.0] * 3}, "bias"),
    ({"n_gpus": 2**40}, "n_gpus|UNEVEN_MAX"),
])
def test_ep_step_refuses_bad_input(kwargs, match):
    args = {"n_gpus": 64, "tokens_per_gpu": 4, **kwargs}
    with pytest.raises(ValueError, match=match):
        ep_step(**args)


def test_generated_route_refuses_bad_input():
    with pytest.raises(ValueError, match="n_groups must divide"):
        generated_route(4, 10, 2, 3, 1)
    with pytest.raises(ValueError, match="first_token"):
        generated_route(4, 256, 2, 8, 1, first_token=2**61)
    with pytest.raises(ValueError, match="n_tokens"):
        counter_gate_scores(10**9, 256)


# ---------------------------------------------------------------------------------------------
# the step with replicated experts


def _route_map_count(n_gpus, tpg, ep, n_experts, k, n_groups, max_groups, replicas, rule, npl,
                     seed, skew, mode, bpc):
    """Route each GPU's tokens with generated_route, map each choice to the slot its GPU uses
    (replica_table of the group, its leaves counted from the group's first node), count."""
    p = replicated_slots(n_experts, ep, replicas, gpus_per_node=8, gpus_per_nic=1)
    src = np.repeat(np.arange(ep), tpg)
    nets, nvls, loads = [], [], []
    for q in range(n_gpus // ep):
        ids = np.concatenate([
            generated_route(tpg, n_experts, k, n_groups, max_groups, skew=skew, seed=seed,
                            first_token=gpu * tpg).expert_ids
            for gpu in range(q * ep, (q + 1) * ep)])
        table = replica_table(p, rule=rule, nodes_per_leaf=npl, first_node=q * ep // 8)
        slots = table[src[:, None], ids]
        t = ep_dispatch_traffic(slots, src, p.slot_gpu, 8, bpc, mode=mode, n_gpus=ep)
        nets.append(t.network)
        nvls.append(t.nvlink)
        loads.append(np.bincount(slots.ravel(), minlength=p.n_slots))
    return np.array(nets), np.array(nvls), np.array(loads), p


@pytest.mark.parametrize("n_gpus, tpg, ep, n_experts, k, max_nodes, n_groups, replicas, rule, "
                         "npl, mode, threads", [
    (64, 6, 32, 16, 4, 2, None, 2, "nearest", 3, "relay", 1),    # leaves cut groups two ways
    (64, 5, 32, 16, 4, 2, None, 2, "round_robin", 3, "direct", 3),
    (96, 4, 32, 16, 4, 1, None, 2, "nearest", 5, "direct", 2),
    (64, 4, 32, 64, 6, 2, 4, [3] * 32 + [1] * 32, "nearest", 32, "relay", 2),
    (128, 3, 128, 256, 8, 4, 8, 2, "nearest", 8, "relay", 1),    # 256 x 2 in 8 groups (fast)
    (32, 7, 32, 8, 2, 1, 1, 4, "nearest", 32, "relay", 1),       # a full copy on every node
])
def test_ep_step_with_replicas_equals_routing_mapping_then_counting(
        n_gpus, tpg, ep, n_experts, k, max_nodes, n_groups, replicas, rule, npl, mode, threads):
    st_ = ep_step(n_gpus, tpg, ep=ep, n_experts=n_experts, k=k, max_nodes=max_nodes,
                  n_groups=n_groups, replicas=replicas, replica_rule=rule, seed=4, skew=0.5,
                  mode=mode, threads=threads,
                  topology=lambda n: h800_cluster(n, nodes_per_leaf=npl))
    groups = n_groups or (ep // 8) // int(np.min(replicas))
    net, nvl, slot_load, p = _route_map_count(n_gpus, tpg, ep, n_experts, k, groups,
                                              min(max_nodes, groups), replicas, rule, npl, 4,
                                              0.5, mode, st_.bytes_per_copy)
    assert np.array_equal(st_.network, net) and np.array_equal(st_.nvlink, nvl)
    assert np.array_equal(st_.slot_load, slot_load)
    assert np.array_equal(st_.placement.phy2log, p.phy2log)
    assert st_.slot_load.sum() == n_gpus * tpg * k == st_.expert_load.sum()
    if n_experts == 8:  # every node holds every expert: the nearest rule crosses no NIC
        assert st_.network.sum() == 0.0 and st_.remote_nodes_per_token == 0.0


def test_ep_step_with_replicas_equals_the_pure_python_chain():
    """Counter scores, node-limited routing, replica choice and the copy rule, each by its
    pure-Python reference, on one small group with replicas."""
    n_gpus, tpg, n_experts, k, n_groups, max_groups = 16, 3, 8, 3, 2, 1
    p = replicated_slots(n_experts, n_gpus, [2, 1, 1, 2, 3, 1, 4, 2], gpus_per_node=8,
                         gpus_per_nic=1)
    st_ = ep_step(n_gpus, tpg, ep=16, n_experts=n_experts, k=k, max_nodes=max_groups,
                  n_groups=n_groups, placement=p, seed=2, hidden=128, dispatch_dtype="bf16")
    scores = _reference_counter_scores(_counter_key(2), 0, n_gpus * tpg, n_experts)
    ids, _ = _reference_node_limited(scores.astype(np.float64), np.zeros(n_experts), k,
                                     n_groups, max_groups, 1.0)
    src = np.repeat(np.arange(n_gpus), tpg)
    slots = np.array([[_reference_slot(p, int(s), int(e), "nearest") for e in row]
                      for s, row in zip(src, ids, strict=True)])
    net, nvl, *_ = _reference_ep(slots, src, p.slot_gpu, 8, True, n_gpus)
    assert np.array_equal(st_.network[0], net * 256.0)
    assert np.array_equal(st_.nvlink[0], nvl * 256.0)
    assert np.array_equal(st_.slot_load[0], np.bincount(slots.ravel(), minlength=p.n_slots))


@pytest.mark.parametrize("kwargs, match", [
    ({"n_gpus": 512, "ep": 512}, r"every GPU needs.*replicas=2"),
    ({"replicas": 0}, "replicas"),
    ({"replicas": [2] * 10}, "replicas"),
    ({"replica_rule": "nearer"}, "replica_rule"),
    ({"n_groups": 7}, "n_groups"),
    ({"placement": [0, 1]}, "placement"),
])
def test_ep_step_refuses_bad_replica_input(kwargs, match):
    args = {"n_gpus": 64, "tokens_per_gpu": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        ep_step(**args)
