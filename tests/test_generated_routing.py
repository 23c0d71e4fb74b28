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
from uneven.ep.routing import (
    _reference_counter_scores,
    _reference_node_limited,
    contiguous_placement,
    counter_gate_scores,
    expert_load,
    generated_route,
    node_limited_route,
)
from uneven.ep.traffic import ep_dispatch_traffic


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
