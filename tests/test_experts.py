"""Routing: top-k, DeepSeek-V3 node-limited top-k, bias balancing, synthetic scores, oracles."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep.routing import (
    Routing,
    _reference_node_limited,
    _reference_topk,
    expected_distinct_groups,
    expert_load,
    load_ratio,
    node_limited_route,
    skew_for_load_ratio,
    synthetic_gate_scores,
    topk_route,
    update_bias,
)

# ---------------------------------------------------------------------------------------------
# hand cases


def test_topk_hand_case_and_weights():
    ids, w = topk_route([[0.9, 0.1, 0.8, 0.7]], 2)
    assert ids.tolist() == [[0, 2]]
    np.testing.assert_allclose(w, [[0.9 / 1.7, 0.8 / 1.7]])
    assert ids.dtype == np.int64 and w.dtype == np.float64


def test_topk_bias_steers_selection_but_not_weights():
    s = [[0.5, 0.4, 0.3]]
    ids, w = topk_route(s, 2, bias=[0.0, 0.0, 0.3], route_scale=2.5)
    assert ids.tolist() == [[2, 0]]  # 0.6 > 0.5 > 0.4
    np.testing.assert_allclose(w, [[0.3 / 0.8 * 2.5, 0.5 / 0.8 * 2.5]])


def test_ties_go_to_the_lowest_index():
    assert topk_route([[0.5, 0.5, 0.5, 0.5]], 2).expert_ids.tolist() == [[0, 1]]
    # two groups with equal scores: group 0 wins; inside it, experts 0 and 1
    r = node_limited_route([[0.5] * 8], 2, n_groups=4, max_groups=1)
    assert r.expert_ids.tolist() == [[0, 1]]


def test_node_limited_hand_case_group_score_is_top2_sum():
    # group 0 has the single best expert (0.95) but its top-2 sum is 0.95 + 0.0 = 0.95;
    # group 1 sums to 0.6 + 0.6 = 1.2, so with one group allowed, group 1 is chosen.
    s = [[0.95, 0.0, 0.6, 0.6]]
    assert node_limited_route(s, 2, n_groups=2, max_groups=1).expert_ids.tolist() == [[2, 3]]
    # the group score uses the BIASED scores
    r = node_limited_route(s, 2, n_groups=2, max_groups=1, bias=[0.0, 0.5, 0.0, 0.0])
    assert r.expert_ids.tolist() == [[0, 1]]
    np.testing.assert_allclose(r.weights, [[1.0, 0.0]])  # weights from unbiased scores


def test_deepseek_route_scale_sums():
    s = synthetic_gate_scores(50, 256, 0.3, seed=3)
    r = node_limited_route(s, 8, n_groups=8, max_groups=4, route_scale=2.5)
    np.testing.assert_allclose(r.weights.sum(axis=1), 2.5)


def test_zero_scores_give_equal_weights():
    ids, w = topk_route(np.zeros((2, 5)), 3, route_scale=1.5)
    assert ids.tolist() == [[0, 1, 2]] * 2
    np.testing.assert_allclose(w, 0.5)


def test_routing_unpacks_and_has_names():
    r = topk_route([[0.1, 0.2]], 1)
    assert isinstance(r, Routing)
    ids, w = r
    assert ids is r.expert_ids and w is r.weights


def test_empty_token_batch():
    r = node_limited_route(np.zeros((0, 16)), 4, 4, 2)
    assert r.expert_ids.shape == (0, 4) and r.weights.shape == (0, 4)


# ---------------------------------------------------------------------------------------------
# properties


def _random_case(data):
    n_groups = data.draw(st.sampled_from([1, 2, 3, 4, 8]))
    gsize = data.draw(st.integers(1, 6))
    n_experts = n_groups * gsize
    max_groups = data.draw(st.integers(1, n_groups))
    k = data.draw(st.integers(1, max_groups * gsize))
    n_tokens = data.draw(st.integers(0, 12))
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    if data.draw(st.booleans()):  # coarse values force plenty of exact ties
        scores = rng.integers(0, 3, (n_tokens, n_experts)).astype(float) / 2
        bias = rng.integers(-1, 2, n_experts).astype(float) / 4
    else:
        scores = rng.random((n_tokens, n_experts))
        bias = rng.normal(0.0, 0.1, n_experts)
    return scores, bias, k, n_groups, max_groups


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_node_limited_engine_equals_reference(data):
    scores, bias, k, n_groups, max_groups = _random_case(data)
    r = node_limited_route(scores, k, n_groups, max_groups, bias=bias, route_scale=2.5)
    ref_ids, ref_w = _reference_node_limited(scores, bias, k, n_groups, max_groups, 2.5)
    np.testing.assert_array_equal(r.expert_ids, ref_ids)
    np.testing.assert_allclose(r.weights, ref_w, rtol=1e-12, atol=0)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_topk_engine_equals_reference(data):
    scores, bias, k, _, _ = _random_case(data)
    r = topk_route(scores, k, bias=bias, route_scale=1.5)
    ref_ids, ref_w = _reference_topk(scores, bias, k, 1.5)
    np.testing.assert_array_equal(r.expert_ids, ref_ids)
    np.testing.assert_allclose(r.weights, ref_w, rtol=1e-12, atol=0)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_node_limited_respects_the_group_cap(data):
    scores, bias, k, n_groups, max_groups = _random_case(data)
    gsize = scores.shape[1] // n_groups
    ids = node_limited_route(scores, k, n_groups, max_groups, bias=bias).expert_ids
    for t in range(ids.shape[0]):
        row = ids[t]
        assert len(set(row.tolist())) == k  # k distinct experts
        groups = set((row // gsize).tolist())
        assert len(groups) <= max_groups
        # the chosen groups are exactly the best-scored ones: recompute them
        sb = scores[t] + bias
        gscore = [
            sum(sorted(sb[g * gsize:(g + 1) * gsize], reverse=True)[:2]) for g in range(n_groups)
        ]
        kept = sorted(range(n_groups), key=lambda g: (-gscore[g], g))[:max_groups]
        assert groups <= set(kept)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_all_groups_allowed_equals_plain_topk(data):
    scores, bias, k, n_groups, _ = _random_case(data)
    k = min(k, scores.shape[1])
    a = node_limited_route(scores, k, n_groups, n_groups, bias=bias, route_scale=2.0)
    b = topk_route(scores, k, bias=bias, route_scale=2.0)
    np.testing.assert_array_equal(a.expert_ids, b.expert_ids)
    np.testing.assert_array_equal(a.weights, b.weights)


def test_more_groups_allowed_never_lowers_the_best_total_biased_score():
    s = synthetic_gate_scores(200, 64, 0.5, seed=9)
    prev = -np.inf
    for m in range(1, 9):
        ids = node_limited_route(s, 8, 8, m).expert_ids
        total = np.take_along_axis(s, ids, axis=1).sum()
        assert total >= prev - 1e-9
        prev = total


# ---------------------------------------------------------------------------------------------
# oracles


def test_expected_distinct_groups_oracle():
    assert expected_distinct_groups(256, 8, 8) == pytest.approx(5.29, abs=0.005)
    exact = 8 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert expected_distinct_groups(256, 8, 8) == pytest.approx(exact, rel=1e-15)
    assert expected_distinct_groups(256, 64, 8) == pytest.approx(7.68, abs=0.01)  # GPUs, EP64
    assert expected_distinct_groups(10, 10, 3) == pytest.approx(3.0)  # one expert per group
    assert expected_distinct_groups(12, 1, 5) == pytest.approx(1.0)


def test_monte_carlo_distinct_nodes_matches_closed_form():
    # i.i.d. scores, unlimited top-8 of 256 experts on 8 nodes: E[nodes] = 5.29
    n = 20_000
    ids = topk_route(synthetic_gate_scores(n, 256, 0.0, seed=11), 8).expert_ids
    nodes = np.array([len(set(row)) for row in (ids // 32).tolist()])
    se = nodes.std() / math.sqrt(n)
    assert abs(nodes.mean() - expected_distinct_groups(256, 8, 8)) < 4 * se


def test_monte_carlo_node_limited_nodes():
    # with the 4-node cap the paper notes' derivation gives about 3.95 nodes per token
    ids = node_limited_route(synthetic_gate_scores(20_000, 256, 0.0, seed=12), 8, 8, 4).expert_ids
    nodes = np.array([len(set(row)) for row in (ids // 32).tolist()])
    assert nodes.max() == 4
    assert nodes.mean() == pytest.approx(3.95, abs=0.03)


# ---------------------------------------------------------------------------------------------
# balancing and loads


def test_expert_load_counts():
    assert expert_load([[0, 2], [2, 1]], 4).tolist() == [1, 1, 2, 0]
    assert expert_load(np.zeros((0, 3)), 2).tolist() == [0, 0]


def test_update_bias_direction():
    b = update_bias([0.1, 0.1, 0.1, 0.1], [10, 0, 5, 5], 0.01)
    np.testing.assert_allclose(b, [0.09, 0.11, 0.1, 0.1])
    assert update_bias([0.0, 0.0], [3, 3], 0.5).tolist() == [0.0, 0.0]


def test_bias_balancing_reduces_imbalance():
    # hot experts lose bias, cold ones gain it; a few hundred steps flatten the load
    n_experts, k = 64, 4
    bias = np.zeros(n_experts)
    first = last = None
    for step in range(300):
        s = synthetic_gate_scores(512, n_experts, 1.0, seed=step, popularity_seed=0)
        load = expert_load(node_limited_route(s, k, 8, 4, bias=bias).expert_ids, n_experts)
        if step == 0:
            first = load_ratio(load)
        last = load_ratio(load)
        bias = update_bias(bias, load, 0.01)
    assert first > 3.0
    assert last < first / 2


def test_load_ratio():
    assert load_ratio([1, 2, 2, 6]) == 3.0
    assert load_ratio([0, 0, 5]) == math.inf
    assert load_ratio([0, 0]) == 1.0


# ---------------------------------------------------------------------------------------------
# synthetic scores


def test_synthetic_scores_seeded_and_in_range():
    a = synthetic_gate_scores(100, 16, 0.7, seed=5)
    b = synthetic_gate_scores(100, 16, 0.7, seed=5)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (100, 16) and a.dtype == np.float64
    assert ((a >= 0) & (a < 1)).all()
    assert not np.array_equal(a, synthetic_gate_scores(100, 16, 0.7, seed=6))


def test_synthetic_scores_popularity_seed_shares_hot_experts():
    a = synthetic_gate_scores(4000, 16, 2.0, seed=1, popularity_seed=7)
    b = synthetic_gate_scores(4000, 16, 2.0, seed=2, popularity_seed=7)
    assert np.argmax(a.mean(axis=0)) == np.argmax(b.mean(axis=0))


def test_skew_zero_is_uniform_and_skew_increases_imbalance():
    s = synthetic_gate_scores(20_000, 8, 0.0, seed=2)
    assert s.mean() == pytest.approx(0.5, abs=0.005)
    ratios = [
        load_ratio(expert_load(topk_route(synthetic_gate_scores(4096, 64, sk, 3), 4)[0], 64))
        for sk in (0.0, 0.5, 1.0, 2.0)
    ]
    assert ratios == sorted(ratios)
    assert ratios[0] < 1.5 < ratios[-1]


def test_skew_for_load_ratio_hits_the_target():
    sk = skew_for_load_ratio(3.0, 64, 4, n_tokens=2048, seed=4)
    s = synthetic_gate_scores(2048, 64, sk, 4)
    got = load_ratio(expert_load(topk_route(s, 4).expert_ids, 64))
    assert got == pytest.approx(3.0, rel=0.1)
    assert skew_for_load_ratio(1.0, 64, 4, n_tokens=512) == 0.0
    assert skew_for_load_ratio(1e6, 64, 4, n_tokens=512, max_skew=0.5) == 0.5


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: topk_route([[0.1, 0.2]], 3), "k must be"),
        (lambda: topk_route([[0.1, 0.2]], 0), "k must be"),
        (lambda: topk_route([0.1, 0.2], 1), "scores must be a 2-d"),
        (lambda: topk_route([[0.1, -0.2]], 1), "scores must have every entry >= 0"),
        (lambda: topk_route([[0.1, np.nan]], 1), "scores must contain only finite"),
        (lambda: topk_route([[0.1, 0.2]], 1, bias=[0.0]), "bias must have shape"),
        # float64 arrays skip the copy: the kernels find bad values themselves
        (lambda: topk_route(np.array([[0.1, 0.2], [0.3, np.nan]]), 1), "only finite"),
        (lambda: topk_route(np.array([[0.1, np.inf]]), 1), "only finite"),
        (lambda: topk_route(np.array([[0.1, 0.2], [-0.3, 0.0]]), 1), "every entry >= 0"),
        (lambda: node_limited_route(np.array([[0.1, 0.2], [0.3, np.nan]]), 1, 2, 1), "finite"),
        (lambda: node_limited_route(np.array([[0.1, -np.inf]]), 1, 1, 1), "finite"),
        (lambda: node_limited_route(np.array([[0.0, 0.2, -1e-300, 0]]), 1, 2, 2), ">= 0"),
        (lambda: topk_route([[0.1, 0.2]], 1, route_scale=0), "route_scale"),
        (lambda: node_limited_route(np.ones((1, 6)), 2, 4, 2), "n_groups must divide"),
        (lambda: node_limited_route(np.ones((1, 8)), 2, 4, 5), "max_groups must be"),
        (lambda: node_limited_route(np.ones((1, 8)), 5, 4, 2), "k must be"),
        (lambda: node_limited_route(np.ones((1, 8)), 2, 0, 1), "n_groups must be"),
        (lambda: expert_load([[0, 4]], 4), "expert_ids entries must be <= 3"),
        (lambda: expert_load([[0, 1]], 0), "n_experts must be"),
        (lambda: update_bias([0.0, 0.0], [1, 2, 3], 0.1), "expert_load must have shape"),
        (lambda: update_bias([0.0, 0.0], [1, 2], -0.1), "gamma must be"),
        (lambda: synthetic_gate_scores(-1, 4), "n_tokens must be"),
        (lambda: synthetic_gate_scores(4, 4, skew=-1), "skew must be"),
        (lambda: synthetic_gate_scores(4, 4, seed=-1), "seed must be"),
        (lambda: expected_distinct_groups(256, 7, 8), "n_groups must divide"),
        (lambda: expected_distinct_groups(256, 8, 300), "k must be"),
        (lambda: skew_for_load_ratio(0.5, 16, 2), "target must be"),
        (lambda: load_ratio([]), "load must have at least one"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
