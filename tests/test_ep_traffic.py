"""EP dispatch/combine bytes: hand cases, engine == reference, conservation, DeepEP bytes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep._kernels import _copy_path, _reference_copies, _reference_copy_path
from uneven.ep.routing import (
    contiguous_placement,
    node_limited_route,
    synthetic_gate_scores,
    topk_route,
)
from uneven.ep.traffic import (
    DeepEpBytes,
    EpTraffic,
    _reference_ep,
    combine_bytes_per_token,
    deepep_logical_bytes,
    dispatch_bytes_per_token,
    ep_combine_traffic,
    ep_dispatch_traffic,
)

# ---------------------------------------------------------------------------------------------
# bytes per token


def test_bytes_per_token_oracles():
    assert dispatch_bytes_per_token(7168) == 7392.0  # H (1 + 4/128)
    assert dispatch_bytes_per_token(7168, "fp8") == pytest.approx(7168 * (1 + 4 / 128))
    assert dispatch_bytes_per_token(7168, "bf16") == 14336.0
    assert combine_bytes_per_token(7168) == 14336.0
    assert combine_bytes_per_token(7168, "fp32") == 28672.0
    assert combine_bytes_per_token(7168, 1.25) == 8960.0  # a 10-bit format, no scales
    assert dispatch_bytes_per_token(100, "FP8") == 104.0  # a partial block still has a scale


@pytest.mark.parametrize("dtype", ["int4", None, True, 0, -1.0])
def test_bytes_per_token_rejects_unknown_dtype(dtype):
    with pytest.raises(ValueError, match="dtype must be"):
        dispatch_bytes_per_token(7168, dtype)


def test_bytes_per_token_rejects_bad_hidden():
    with pytest.raises(ValueError, match="hidden must be"):
        combine_bytes_per_token(0)


# ---------------------------------------------------------------------------------------------
# hand cases (2 nodes × 4 GPUs unless said; expert e on GPU e)

PLACE8 = np.arange(8)


def test_relay_hand_case():
    # token on GPU 1 (node 0, local 1) -> experts on GPUs 1, 2, 4, 5, 7
    t = ep_dispatch_traffic([[1, 2, 4, 5, 7]], [1], PLACE8, 4, 10.0, mode="relay")
    net = np.zeros((8, 8))
    net[1, 5] = 10.0  # one network copy to node 1, to local index 1 = GPU 5
    nvl = np.zeros((8, 8))
    nvl[1, 2] = 10.0  # own node: straight from the source
    nvl[5, 4] = nvl[5, 7] = 10.0  # forwarder 5 is itself a target: forwards to 4 and 7 only
    np.testing.assert_array_equal(t.network, net)
    np.testing.assert_array_equal(t.nvlink, nvl)
    assert t.nodes_per_token.tolist() == [2]
    assert t.remote_nodes_per_token.tolist() == [1]
    assert t.gpus_per_token.tolist() == [5]
    assert (t.mode, t.direction, t.n_gpus, t.gpus_per_node) == ("relay", "dispatch", 8, 4)


def test_direct_hand_case():
    t = ep_dispatch_traffic([[1, 2, 4, 5, 7]], [1], PLACE8, 4, 10.0, mode="direct")
    net = np.zeros((8, 8))
    net[1, [4, 5, 7]] = 10.0
    nvl = np.zeros((8, 8))
    nvl[1, 2] = 10.0
    np.testing.assert_array_equal(t.network, net)
    np.testing.assert_array_equal(t.nvlink, nvl)


def test_forwarder_that_is_not_a_target_still_relays():
    # token on GPU 0; its only remote target is GPU 6; forwarder on node 1 is GPU 4
    t = ep_dispatch_traffic([[6]], [0], PLACE8, 4, 1.0)
    assert t.network[0, 4] == 1.0 and t.network.sum() == 1.0
    assert t.nvlink[4, 6] == 1.0 and t.nvlink.sum() == 1.0


def test_two_experts_on_one_gpu_send_one_copy():
    place = [0, 0, 1, 1]  # 2 experts per GPU, 1 GPU per node
    for mode in ("relay", "direct"):
        t = ep_dispatch_traffic([[2, 3]], [0], place, 1, 5.0, mode=mode)
        assert t.network.tolist() == [[0.0, 5.0], [0.0, 0.0]]
        assert t.gpus_per_token.tolist() == [1]


def test_own_gpu_costs_nothing():
    t = ep_dispatch_traffic([[0, 1]], [0], [0, 0], 2, 100.0)
    assert t.network_bytes == 0.0 and t.nvlink_bytes == 0.0
    assert t.nodes_per_token.tolist() == [1] and t.remote_nodes_per_token.tolist() == [0]


def test_combine_is_the_transposed_mirror():
    ids = [[1, 2, 4, 5, 7], [0, 3, 6, 6, 6]]
    d = ep_dispatch_traffic(ids, [1, 6], PLACE8, 4, 7392.0)
    c = ep_combine_traffic(ids, [1, 6], PLACE8, 4, 14336.0)
    ratio = 14336.0 / 7392.0
    np.testing.assert_allclose(c.network, d.network.T * ratio)
    np.testing.assert_allclose(c.nvlink, d.nvlink.T * ratio)
    assert c.direction == "combine"
    np.testing.assert_array_equal(c.nodes_per_token, d.nodes_per_token)


def test_n_gpus_default_rounds_up_to_whole_nodes():
    t = ep_dispatch_traffic([[0]], [0], [5], 4, 1.0)
    assert t.n_gpus == 8
    assert ep_dispatch_traffic([[0]], [0], [5], 4, 1.0, n_gpus=12).n_gpus == 12


def test_empty_token_batch():
    t = ep_dispatch_traffic(np.zeros((0, 8), dtype=int), [], PLACE8, 4, 1.0)
    assert t.network_bytes == 0.0 and t.nodes_per_token.shape == (0,)


# ---------------------------------------------------------------------------------------------
# properties


@st.composite
def ep_cases(draw):
    gpn = draw(st.integers(1, 4))
    n_nodes = draw(st.integers(1, 4))
    n_gpus = gpn * n_nodes
    n_experts = draw(st.integers(1, 12))
    k = draw(st.integers(1, 6))
    n_tokens = draw(st.integers(0, 25))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    expert_gpu = rng.integers(0, n_gpus, n_experts)
    expert_ids = rng.integers(0, n_experts, (n_tokens, k))  # repeats allowed on purpose
    src_gpu = rng.integers(0, n_gpus, n_tokens)
    return expert_ids, src_gpu, expert_gpu, gpn, n_gpus


@settings(max_examples=150, deadline=None)
@given(ep_cases(), st.sampled_from(["relay", "direct"]), st.sampled_from(["gpu", "slot"]))
def test_engine_equals_reference(case, mode, unit):
    ids, src, place, gpn, n_gpus = case
    t = ep_dispatch_traffic(ids, src, place, gpn, 3.0, mode=mode, n_gpus=n_gpus, unit=unit)
    net, nvl, nodes, remote, gpus = _reference_ep(ids, src, place, gpn, mode == "relay", n_gpus,
                                                  per_slot=unit == "slot")
    assert (t.mode, t.unit) == (mode, unit)
    np.testing.assert_array_equal(t.network, net * 3.0)
    np.testing.assert_array_equal(t.nvlink, nvl * 3.0)
    np.testing.assert_array_equal(t.nodes_per_token, nodes)
    np.testing.assert_array_equal(t.remote_nodes_per_token, remote)
    np.testing.assert_array_equal(t.gpus_per_token, gpus)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(1, 5), st.data())
def test_the_copy_rule_kernel_equals_its_reference(gpn, n_nodes, data):
    """The one copy rule (ep/_kernels.py), compiled and in plain Python, on every pair kind."""
    n = gpn * n_nodes
    s, d = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    relay = data.draw(st.booleans())
    ids = np.arange(n, dtype=np.int64)
    net, on_net, hub, on_nvl = _copy_path(s, s // gpn, s % gpn, d, relay, ids // gpn,
                                          np.arange(0, n, gpn, dtype=np.int64))
    got = (int(net) if on_net else -1, int(hub) if on_nvl else -1)
    assert got == _reference_copy_path(s, d, gpn, relay)


def test_the_copy_rule_by_hand():
    # 2 nodes of 4 GPUs; a token on GPU 1 (node 0, local index 1)
    assert _reference_copy_path(1, 1, 4, True) == (-1, -1)     # its own GPU: nothing
    assert _reference_copy_path(1, 3, 4, True) == (-1, 1)      # same node: NVLink 1 -> 3
    assert _reference_copy_path(1, 6, 4, False) == (6, -1)     # direct: network 1 -> 6
    assert _reference_copy_path(1, 6, 4, True) == (5, 5)       # relay: network to 5, NVLink 5 -> 6
    assert _reference_copy_path(1, 5, 4, True) == (5, -1)      # the relay itself is the target
    two_on_gpu6 = _reference_copies(1, [6, 6, 7], 4, relay=True, per_slot=True)
    assert two_on_gpu6 == {("network", 1, 5): 1, ("nvlink", 5, 6): 2, ("nvlink", 5, 7): 1}
    assert _reference_copies(1, [6, 6, 7], 4, relay=False, per_slot=False) == {
        ("network", 1, 6): 1, ("network", 1, 7): 1}


@settings(max_examples=150, deadline=None)
@given(ep_cases())
def test_per_slot_copies_reach_every_chosen_expert(case):
    ids, src, place, gpn, n_gpus = case
    t = ep_dispatch_traffic(ids, src, place, gpn, 1.0, mode="direct", n_gpus=n_gpus, unit="slot")
    arrivals = np.zeros(n_gpus)
    for tok in range(ids.shape[0]):
        for e in ids[tok]:
            if place[e] != src[tok]:
                arrivals[place[e]] += 1
    np.testing.assert_array_equal(t.network.sum(axis=0) + t.nvlink.sum(axis=0), arrivals)
    per_gpu = ep_dispatch_traffic(ids, src, place, gpn, 1.0, mode="direct", n_gpus=n_gpus)
    assert per_gpu.network_bytes <= t.network_bytes


def test_old_mode_word_still_means_relay():
    with pytest.warns(DeprecationWarning, match="relay"):
        old = ep_dispatch_traffic([[1, 2, 4, 5, 7]], [1], PLACE8, 4, 10.0, mode="dedup")
    new = ep_dispatch_traffic([[1, 2, 4, 5, 7]], [1], PLACE8, 4, 10.0, mode="relay")
    assert old.mode == "relay"
    np.testing.assert_array_equal(old.network, new.network)


@settings(max_examples=150, deadline=None)
@given(ep_cases())
def test_relay_never_sends_more_over_the_network(case):
    ids, src, place, gpn, n_gpus = case
    dd = ep_dispatch_traffic(ids, src, place, gpn, 7.0, mode="relay", n_gpus=n_gpus)
    dr = ep_dispatch_traffic(ids, src, place, gpn, 7.0, mode="direct", n_gpus=n_gpus)
    assert dd.network_bytes <= dr.network_bytes
    # and each source sends no more than it would directly
    assert np.all(dd.network.sum(axis=1) <= dr.network.sum(axis=1))


@settings(max_examples=150, deadline=None)
@given(ep_cases())
def test_byte_conservation(case):
    ids, src, place, gpn, n_gpus = case
    b = 5.0
    dr = ep_dispatch_traffic(ids, src, place, gpn, b, mode="direct", n_gpus=n_gpus)
    dd = ep_dispatch_traffic(ids, src, place, gpn, b, mode="relay", n_gpus=n_gpus)
    # direct: every target GPU other than the source receives exactly one copy per token
    arrivals = np.zeros(n_gpus)
    relays = 0
    for t in range(ids.shape[0]):
        targets = {int(place[e]) for e in ids[t]}
        for g in targets - {int(src[t])}:
            arrivals[g] += b
        s_node, s_local = divmod(int(src[t]), gpn)
        for nd in {g // gpn for g in targets} - {s_node}:
            relays += (nd * gpn + s_local) not in targets
    np.testing.assert_array_equal(dr.network.sum(axis=0) + dr.nvlink.sum(axis=0), arrivals)
    # relay delivers the same copies, plus one relay copy for each remote node whose
    # forwarder is not itself a target
    total_dr = dr.network_bytes + dr.nvlink_bytes
    assert dd.network_bytes + dd.nvlink_bytes == pytest.approx(total_dr + relays * b)
    # network bytes = one copy per remote node
    assert dd.network_bytes == pytest.approx(b * dd.remote_nodes_per_token.sum())
    # counts are consistent
    assert np.all(dd.nodes_per_token <= dd.gpus_per_token)
    assert np.all(dd.gpus_per_token <= ids.shape[1])
    diff = dd.nodes_per_token - dd.remote_nodes_per_token
    assert np.all((diff == 0) | (diff == 1))


@settings(max_examples=60, deadline=None)
@given(ep_cases())
def test_deepep_bytes_match_the_traffic(case):
    ids, src, place, gpn, n_gpus = case
    b = deepep_logical_bytes(ids, src, place, gpn, 2.0, n_gpus=n_gpus)
    t = ep_dispatch_traffic(ids, src, place, gpn, 2.0, n_gpus=n_gpus)
    np.testing.assert_allclose(b.network, t.network.sum(axis=1))
    assert b.logical_total == pytest.approx(2.0 * t.nodes_per_token.sum())
    assert b.logical_total >= b.network_total


# ---------------------------------------------------------------------------------------------
# DeepSeek-V3-like oracles


def _ep_setup(n_nodes, n_tokens_per_gpu, seed, node_limited=True):
    """EP over n_nodes × 8 GPUs, 256 experts contiguous, tokens spread evenly over GPUs."""
    n_gpus = 8 * n_nodes
    scores = synthetic_gate_scores(n_gpus * n_tokens_per_gpu, 256, 0.0, seed=seed)
    if node_limited:
        ids = node_limited_route(scores, 8, n_groups=8, max_groups=4).expert_ids
    else:
        ids = topk_route(scores, 8).expert_ids
    src = np.repeat(np.arange(n_gpus), n_tokens_per_gpu)
    return ids, src, contiguous_placement(256, n_gpus)


def test_deepep_logical_over_true_ratio_is_n_over_n_minus_1():
    # EP16: 2 nodes, 128 experts each. Node-limited routing hits both nodes almost always,
    # so the logical count doubles the true network bytes.
    ids, src, place = _ep_setup(2, 256, seed=1)
    b = deepep_logical_bytes(ids, src, place, 8, 7392.0)
    assert isinstance(b, DeepEpBytes)
    assert b.ratio == pytest.approx(2.0, rel=0.01)
    # EP64: 8 nodes -> 8/7 in expectation (source node uniform and independent of routing)
    ids, src, place = _ep_setup(8, 256, seed=2)
    assert deepep_logical_bytes(ids, src, place, 8, 7392.0).ratio == pytest.approx(8 / 7, rel=0.01)


def test_ep64_copies_per_token():
    # Node-limited top-8 of 256 experts, i.i.d. scores, EP64 (32 experts per node):
    # 3.95 nodes per token, 3.95·7/8 = 3.46 remote network copies with relay.
    ids, src, place = _ep_setup(8, 256, seed=3)
    t = ep_dispatch_traffic(ids, src, place, 8, 1.0)
    n = ids.shape[0]
    assert t.nodes_per_token.mean() == pytest.approx(3.95, abs=0.03)
    assert t.network_bytes / n == pytest.approx(3.95 * 7 / 8, abs=0.04)
    # direct sends one network copy per remote GPU instead: 3.95 nodes × ~1.9 GPUs × 7/8
    d = ep_dispatch_traffic(ids, src, place, 8, 1.0, mode="direct")
    assert d.network_bytes / n > 1.7 * t.network_bytes / n
    # without the node limit: 5.29 nodes per token (the closed form)
    ids, src, place = _ep_setup(8, 256, seed=4, node_limited=False)
    t = ep_dispatch_traffic(ids, src, place, 8, 1.0)
    assert t.nodes_per_token.mean() == pytest.approx(5.29, abs=0.04)
    assert isinstance(t, EpTraffic)


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(expert_ids=[[0, 9]]), "expert_ids entries must be <= 7"),
        (dict(expert_ids=[0, 1]), "expert_ids must be a 2-d"),
        (dict(expert_ids=np.array([[0, 1], [8, 0]]), src_gpu=[0, 0]), "entries must be <= 7"),
        (dict(expert_ids=np.array([[0, -1]])), "expert_ids entries must be >= 0"),
        (dict(src_gpu=[0, 1]), "src_gpu must have shape"),
        (dict(src_gpu=[-1]), "src_gpu entries must be >= 0"),
        (dict(expert_gpu=[]), "expert_gpu must place at least one"),
        (dict(expert_gpu=[[0, 1]]), "expert_gpu must be a 1-d"),
        (dict(gpus_per_node=0), "gpus_per_node must be"),
        (dict(bytes_per_copy=-1.0), "bytes_per_copy must be"),
        (dict(mode="both"), "mode must be one of"),
        (dict(n_gpus=10), "n_gpus must be a multiple"),
        (dict(n_gpus=4), "n_gpus must be an integer >= 8"),
    ],
)
def test_validation_errors(kwargs, match):
    args = dict(
        expert_ids=[[0, 1]], src_gpu=[0], expert_gpu=PLACE8, gpus_per_node=4, bytes_per_copy=1.0
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ep_dispatch_traffic(**args)


def test_validation_errors_other_entry_points():
    with pytest.raises(ValueError, match="mode must be"):
        ep_combine_traffic([[0]], [0], [0], 1, 1.0, mode="x")
    with pytest.raises(ValueError, match="bytes_per_copy"):
        deepep_logical_bytes([[0]], [0], [0], 1, float("nan"))


def _reference_local_writes(ids, src, egpu, g, n):
    """One self-write per distinct target GPU that shares the token's local index (DeepEP's
    forwarder writing into its own receive buffer)."""
    out = [0] * n
    for row, s in zip(ids, src, strict=True):
        for t in {int(egpu[e]) for e in row}:
            if t % g == s % g:
                out[t] += 1
    return out


def test_local_buffer_writes_match_reference_on_random_routings():
    from uneven.ep.traffic import local_buffer_writes

    rng = np.random.default_rng(7)
    for _ in range(20):
        g = int(rng.integers(1, 5))
        nodes = int(rng.integers(1, 5))
        n = g * nodes
        n_exp = n * int(rng.integers(1, 4))
        T, k = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        ids = rng.integers(0, n_exp, size=(T, k))
        src = rng.integers(0, n, size=T)
        egpu = rng.integers(0, n, size=n_exp)
        got = local_buffer_writes(ids, src, egpu, g, 3.0, n_gpus=n)
        assert got.tolist() == [3.0 * x for x in _reference_local_writes(ids, src, egpu, g, n)]


def test_deepep_buffer_writes_are_distinct_ranks_and_bind_at_ep16():
    """DeepEP's NVL-buffer writes per token = distinct destination ranks (6.52 at EP16 in its
    test routing), of which 7/8 cross NVLink; counting the forwarder's self-writes makes EP16
    'forwarding'-bound and leaves EP32/64 NIC-bound."""
    from uneven.ep.model import deepep_benchmark

    plain = deepep_benchmark((16, 32), tokens_per_gpu=1024)
    fwd = deepep_benchmark((16, 32), tokens_per_gpu=1024, count_local_writes=True)
    assert plain[0]["nvlink_copies_per_token"] == pytest.approx(5.71, abs=0.05)
    assert plain[0]["nvl_writes_per_token"] == pytest.approx(6.52, abs=0.05)
    assert fwd[0]["dispatch_bound"] == "forwarding"
    assert fwd[0]["dispatch_logical_GBps"] < plain[0]["dispatch_logical_GBps"]
    assert fwd[1]["dispatch_logical_GBps"] == pytest.approx(plain[1]["dispatch_logical_GBps"])
    with pytest.raises(ValueError, match="local_writes"):
        from uneven.ep.model import ep_phase
        from uneven.ep.traffic import ep_dispatch_traffic
        from uneven.topology import h800_cluster

        t = ep_dispatch_traffic([[0]], [0], [9], 8, 1.0, n_gpus=16)
        ep_phase(h800_cluster(2), t, local_writes=[1.0])


def test_slot_ids_with_replicas_count_like_expert_ids_on_their_gpus():
    """The byte matrices need only each choice's GPU: slots of a replicated layout give the same
    bytes as expert ids on a one-replica layout that puts each expert where its slot is."""
    from uneven.ep.model import route_ep_group

    r = route_ep_group(4, 16, n_experts=32, k=4, replicas=2, seed=3, nodes_per_leaf=2)
    ids, gpu = r.targets
    flat = gpu[ids]  # the GPU of every choice
    # one pseudo-expert per (token, choice) on that GPU
    fake_ids = np.arange(flat.size).reshape(flat.shape)
    for mode in ("relay", "direct"):
        a = ep_dispatch_traffic(ids, r.src_gpu, gpu, 8, 1.0, mode=mode, n_gpus=32)
        b = ep_dispatch_traffic(fake_ids, r.src_gpu, flat.ravel(), 8, 1.0, mode=mode, n_gpus=32)
        assert np.array_equal(a.network, b.network) and np.array_equal(a.nvlink, b.nvlink)
    logical = deepep_logical_bytes(ids, r.src_gpu, gpu, 8, 2.0, n_gpus=32)
    relay = ep_dispatch_traffic(ids, r.src_gpu, gpu, 8, 2.0, n_gpus=32)
    assert logical.network_total == relay.network_bytes == 2.0 * relay.remote_nodes_per_token.sum()
    from uneven.ep.traffic import local_buffer_writes

    writes = local_buffer_writes(ids, r.src_gpu, gpu, 8, 1.0, n_gpus=32)
    assert writes.sum() <= ids.size
