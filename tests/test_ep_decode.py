"""Decode-time EP: direct per-expert copies against the same-index relay, the decode-layer
timeline with per-expert overlap, the drifting workload and many-step runs."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep.decode import (
    H20_DECODE,
    DecodeHardware,
    DecodeSetup,
    _reference_sample,
    _sample_kernel,
    decode_layer,
    drifting_popularity,
    expert_bytes,
    make_placement,
    sample_routing,
    simulate_decode,
)
from uneven.ep.placement import (
    contiguous_slots,
    nic_aware_placement,
    placement_from_phy2log,
    route_to_slots,
)
from uneven.ep.routing import load_ratio
from uneven.ep.transport import (
    SM_FREE,
    SM_RESIDENT,
    Transport,
    _reference_traffic,
    decode_traffic,
    expected_remote_hosts,
    send_order,
)


def _random_step(seed, n_hosts=3, gpn=4, gpnic=2, spg=2, extra=0, k=3, tokens=40):
    rng = np.random.default_rng(seed)
    n_gpus = n_hosts * gpn
    n_exp = n_gpus * spg - extra
    phy2log = np.concatenate([rng.permutation(n_exp), rng.integers(0, n_exp, extra)])
    phy2log = rng.permutation(phy2log)
    p = placement_from_phy2log(phy2log, n_exp, n_gpus, gpus_per_node=gpn, gpus_per_nic=gpnic)
    ids = np.array([rng.choice(n_exp, k, replace=False) for _ in range(tokens)])
    src = rng.integers(0, n_gpus, tokens)
    return p, route_to_slots(p, ids, src), src


# ---------------------------------------------------------------------------------------------
# copies


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["direct", "relay"]),
       st.sampled_from([(4, 2), (4, 1), (2, 2), (8, 2)]), st.integers(0, 4))
def test_traffic_kernel_matches_reference(seed, mode, shape, extra):
    gpn, gpnic = shape
    p, slots, src = _random_step(seed, gpn=gpn, gpnic=gpnic, extra=extra)
    t = decode_traffic(p, slots, src, mode)
    ref = _reference_traffic(slots, src, p.slots_per_gpu, gpn, gpnic, p.n_gpus, mode == "relay")
    for got, want in zip((t.rdma_in, t.rdma_back, t.nvl_in, t.nvl_back, t.tokens, t.rdma_sent,
                          t.rdma_returned), ref[:7], strict=True):
        np.testing.assert_array_equal(got, want)
    items = sorted(zip(t.ret_src.tolist(), t.ret_kind.tolist(), t.ret_op.tolist(), strict=True))
    assert items == ref[7]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6))
def test_relay_never_sends_more_rdma_than_direct_and_conserves_copies(seed, k):
    p, slots, src = _random_step(seed, k=k)
    d = decode_traffic(p, slots, src, "direct")
    r = decode_traffic(p, slots, src, "relay")
    n_copies = slots.size
    assert (r.remote_hosts <= d.remote_slots).all()
    np.testing.assert_array_equal(r.remote_hosts, d.remote_hosts)
    assert r.rdma_copies == r.remote_hosts.sum() <= d.rdma_copies == d.remote_slots.sum()
    for t in (d, r):
        assert t.tokens.sum() == n_copies  # every (token, slot) is served once
        assert t.rdma_in.sum() == t.rdma_back.sum() == t.rdma_sent.sum() == t.rdma_returned.sum()
        np.testing.assert_array_equal(t.nvl_in, t.nvl_back)  # combine retraces dispatch
    # direct: each copy is one RDMA write, one NVLink copy or local
    local = int((d.ret_kind == 2).sum())
    assert d.rdma_copies + d.nvl_in.sum() + local == n_copies
    # relay: the remote deliveries are the fan-outs plus those that land on the relay itself;
    # a source waits for one combine item per own-host slot and one per remote host
    own = n_copies - int(r.remote_tokens.sum())
    assert r.ret_src.size == own + r.remote_hosts.sum()
    assert r.nvl_in.sum() <= d.nvl_in.sum() + r.remote_tokens.sum()


def test_relay_copies_match_the_expected_distinct_hosts():
    h, k, e = 4, 8, 256
    p = contiguous_slots(e, 32)  # 4 hosts of 8 GPUs
    rng = np.random.default_rng(0)
    ids = np.argsort(rng.random((20_000, e)), axis=1)[:, :k]  # uniform k-subsets
    src = rng.integers(0, 32, 20_000)
    r = decode_traffic(p, route_to_slots(p, ids, src), src, "relay")
    mean = r.remote_hosts.mean()
    assert mean == pytest.approx(expected_remote_hosts(k, h, n_experts=e), rel=0.01)
    assert mean == pytest.approx(expected_remote_hosts(k, h), rel=0.02)  # with replacement
    assert r.remote_slots.mean() == pytest.approx(k * (h - 1) / h, rel=0.01)
    assert expected_remote_hosts(8, 4) == pytest.approx(3 * (1 - 0.75**8))
    assert round(expected_remote_hosts(8, 4), 2) == 2.70


def test_relay_loads_nics_by_host_not_by_gpu():
    """With the relay a NIC receives one copy per (token, host) from the senders on its rail, so
    moving experts between GPUs of one host changes no NIC load."""
    rng = np.random.default_rng(1)
    ids = np.array([rng.choice(64, 4, replace=False) for _ in range(3000)])
    src = rng.integers(0, 16, 3000)
    a = contiguous_slots(64, 16, gpus_per_node=8, gpus_per_nic=2)
    perm = np.arange(64)
    perm[:32] = rng.permutation(32)  # shuffle experts inside host 0
    b = placement_from_phy2log(perm, 64, 16, gpus_per_node=8, gpus_per_nic=2)
    ra = decode_traffic(a, route_to_slots(a, ids, src), src, "relay")
    rb = decode_traffic(b, route_to_slots(b, ids, src), src, "relay")
    np.testing.assert_array_equal(ra.nic_in(), rb.nic_in())
    da = decode_traffic(a, route_to_slots(a, ids, src), src, "direct")
    db = decode_traffic(b, route_to_slots(b, ids, src), src, "direct")
    assert not np.array_equal(da.nic_in(), db.nic_in())


def test_send_order_deals_ranks_round_robin_over_gpus():
    p = contiguous_slots(8, 4, gpus_per_node=2, gpus_per_nic=1)
    assert send_order(p).tolist() == [0, 2, 1, 3, 0, 2, 1, 3]


# ---------------------------------------------------------------------------------------------
# the layer timeline


def _two_gpu_case(T, hw):
    """Two hosts of one GPU; each GPU's T tokens all go to the expert on the other one."""
    p = placement_from_phy2log([0, 1], 2, 2, gpus_per_node=1, gpus_per_nic=1)
    ids = np.array([[1]] * T + [[0]] * T)
    src = np.array([0] * T + [1] * T)
    return p, decode_traffic(p, route_to_slots(p, ids, src), src, "direct")


@pytest.mark.parametrize("T", [1, 16, 300])
def test_layer_time_closed_form(T):
    hw = DecodeHardware(gpus_per_node=1, gpus_per_nic=1)
    tr = Transport("t", fixed=5e-6, per_message=1e-7, sm_tax=0.0)
    p, traffic = _two_gpu_case(T, hw)
    lr = decode_layer(p, traffic, tr, hw)
    t_d = T * (hw.dispatch_bytes / hw.nic_bw + 1e-7)
    t_c = T * (hw.combine_bytes / hw.nic_bw + 1e-7)
    comp = max(hw.expert_bytes / hw.hbm_bw, T * hw.token_time)
    want = 5e-6 + t_d + hw.nic_latency + comp + 5e-6 + t_c + hw.nic_latency
    assert lr.layer_time == pytest.approx(want)
    np.testing.assert_allclose(lr.completion, want)
    assert lr.dispatch_end == pytest.approx(5e-6 + t_d + hw.nic_latency)
    assert lr.exposed_comm == pytest.approx(want - comp)
    # overlap changes nothing with one expert per GPU, except the SM tax
    taxed = Transport("t", fixed=5e-6, per_message=1e-7, sm_tax=0.5)
    assert decode_layer(p, traffic, taxed, hw, overlap=True).layer_time == pytest.approx(
        want + comp)
    assert decode_layer(p, traffic, taxed, hw, overlap=False).layer_time == pytest.approx(want)


def _h20_step(seed=0, mode="direct", tokens_per_gpu=32, placement="NIC-aware"):
    s = DecodeSetup(tokens_per_gpu=tokens_per_gpu)
    pop = drifting_popularity(256, 1, 8.0, seed=seed)[0]
    p = make_placement(placement, s, pop)
    src = np.repeat(np.arange(32), tokens_per_gpu)
    ids = sample_routing(pop, src.size, 8, seed=seed)
    return p, decode_traffic(p, route_to_slots(p, ids, src), src, mode)


@pytest.mark.parametrize("mode", ["direct", "relay"])
def test_faster_links_and_cheaper_transports_never_finish_later(mode):
    p, tr = _h20_step(mode=mode)
    base = decode_layer(p, tr, SM_RESIDENT, H20_DECODE)
    for hw in (DecodeHardware(nic_bw=100e9), DecodeHardware(nvlink_bw=900e9),
               DecodeHardware(hbm_bw=8e12)):
        assert decode_layer(p, tr, SM_RESIDENT, hw).layer_time <= base.layer_time + 1e-12
    assert decode_layer(p, tr, SM_FREE, H20_DECODE).layer_time <= base.layer_time
    assert (base.arrival <= base.compute_start + 1e-12).all()
    assert (base.compute_end <= base.layer_time + 1e-12).all()


@pytest.mark.parametrize("mode", ["direct", "relay"])
def test_per_expert_overlap_starts_experts_earlier(mode):
    p, tr = _h20_step(mode=mode, tokens_per_gpu=64)
    free = Transport("no tax", SM_RESIDENT.fixed, SM_RESIDENT.per_message, 0.0)
    a = decode_layer(p, tr, free, H20_DECODE, overlap=False)
    b = decode_layer(p, tr, free, H20_DECODE, overlap=True)
    assert b.compute_start.min() <= a.compute_start.min()
    assert b.layer_time <= a.layer_time
    np.testing.assert_allclose(a.compute_time, b.compute_time)
    np.testing.assert_allclose(a.arrival, b.arrival)


def test_relay_beats_direct_when_the_nic_binds():
    pd, d = _h20_step(mode="direct", tokens_per_gpu=128)
    _, r = _h20_step(mode="relay", tokens_per_gpu=128)
    a = decode_layer(pd, d, SM_RESIDENT, H20_DECODE)
    b = decode_layer(pd, r, SM_RESIDENT, H20_DECODE)
    assert b.layer_time < 0.8 * a.layer_time
    assert b.nic_in.max() < a.nic_in.max()


def test_layer_rejects_mismatches():
    p, tr = _h20_step()
    with pytest.raises(ValueError, match="placement"):
        decode_layer("p", tr)
    with pytest.raises(ValueError, match="gpus_per_nic|GPUs per node"):
        decode_layer(p, tr, hw=DecodeHardware(gpus_per_nic=1))
    with pytest.raises(ValueError, match="traffic"):
        decode_layer(contiguous_slots(512, 32), tr)
    with pytest.raises(ValueError, match="overlap"):
        decode_layer(p, tr, overlap=1)
    with pytest.raises(ValueError, match="sm_tax"):
        Transport("x", 0.0, 0.0, 1.0)


# ---------------------------------------------------------------------------------------------
# workload


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 4))
def test_sampler_kernel_matches_reference(seed, k):
    rng = np.random.default_rng(seed)
    p = rng.pareto(1.0, 12) + 0.01
    u = rng.random(400)
    out = np.empty((20, k), dtype=np.int64)
    done, _, _ = _sample_kernel(np.cumsum(p), p, k, u, out, 0, np.zeros(12, dtype=bool), 10**9)
    if done == 20:
        np.testing.assert_array_equal(out, _reference_sample(p, 20, k, u))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 4), st.integers(2, 6))
def test_sampler_kernel_matches_reference_when_few_experts_hold_the_popularity(seed, hot, k):
    """Popularity almost all on ``hot`` experts: past REJECT_CAP repeated draws, a choice is
    drawn directly from the experts left; kernel and reference agree on that too."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(hot) + 0.5, rng.random(8) * 1e-12])
    u = rng.random(4000)
    out = np.empty((20, k), dtype=np.int64)
    done, _, _ = _sample_kernel(np.cumsum(p), p, k, u, out, 0, np.zeros(p.size, dtype=bool),
                                10**9)
    if done == 20:
        np.testing.assert_array_equal(out, _reference_sample(p, 20, k, u))
        assert (np.sort(out, axis=1)[:, 1:] != np.sort(out, axis=1)[:, :-1]).all()


def test_sampling_from_a_popularity_held_by_k_experts_ends():
    """Before the direct draws, two experts with all but 1e-300 of the popularity and k = 3
    looped for ever; now the third expert of every token is one of the cold ones."""
    ids = sample_routing([1.0, 1.0, 1e-300, 1e-300, 0.0], 200, 3, seed=0)
    assert ids.shape == (200, 3)
    assert (np.sort(ids[:, :2], axis=1) == [0, 1]).all() and np.isin(ids[:, 2], [2, 3]).all()
    with pytest.raises(ValueError, match="popularity"):
        sample_routing([0.0, 0.0], 4, 1)


def test_sampled_routing_is_distinct_and_follows_popularity():
    pop = drifting_popularity(64, 1, 8.0, drift=0.0, seed=3)[0]
    ids = sample_routing(pop, 50_000, 4, seed=1)
    assert (np.sort(ids, axis=1)[:, 1:] != np.sort(ids, axis=1)[:, :-1]).all()
    counts = np.bincount(ids.ravel(), minlength=64)
    assert np.corrcoef(counts, pop)[0, 1] > 0.99
    assert 6.0 < load_ratio(counts) < 8.5  # drawing without replacement flattens the top a bit
    np.testing.assert_array_equal(ids, sample_routing(pop, 50_000, 4, seed=1))


def test_drifting_popularity_keeps_its_shape_while_the_hot_experts_move():
    p = drifting_popularity(256, 400, 8.0, drift=0.01, seed=0)
    for row in p[::50]:
        assert load_ratio(row) == pytest.approx(8.0, rel=1e-6)
        assert row.sum() == pytest.approx(1.0)
    still = drifting_popularity(256, 5, 8.0, drift=0.0, seed=0)
    assert (still == still[0]).all()
    c10 = np.corrcoef(p[0], p[10])[0, 1]
    c300 = np.corrcoef(p[0], p[300])[0, 1]
    assert c10 > 0.8 > c300


def test_expert_bytes_of_deepseek_v3():
    assert expert_bytes() == 3 * 7168 * 2048 == pytest.approx(44.04e6, rel=1e-3)


# ---------------------------------------------------------------------------------------------
# many steps


def test_simulate_decode_is_deterministic_and_reports_tails():
    s = DecodeSetup(tokens_per_gpu=16)
    a = simulate_decode(s, n_steps=12, seed=4, swaps=True)
    b = simulate_decode(s, n_steps=12, seed=4, swaps=True)
    np.testing.assert_array_equal(a.layer_time, b.layer_time)
    assert a.completion.shape == (12, 32)
    np.testing.assert_allclose(a.layer_time, a.completion.max(axis=1))
    assert a.p99() >= a.median() > 0
    assert a.copy_bytes == pytest.approx(2 * H20_DECODE.expert_bytes * a.swaps.sum())


def test_start_times_later_steps_of_the_same_run():
    s = DecodeSetup(tokens_per_gpu=16)
    full = simulate_decode(s, n_steps=9, seed=3, placement="EPLB")
    late = simulate_decode(s, n_steps=4, seed=3, placement="EPLB", start=5)
    # without swaps the untimed steps change nothing: the same steps, timed the same
    np.testing.assert_array_equal(late.layer_time, full.layer_time[5:])
    np.testing.assert_array_equal(late.nic_ratio, full.nic_ratio[5:])
    # with swaps the untimed steps still move experts; only the timed steps' swaps are counted
    sw_full = simulate_decode(s, n_steps=30, seed=3, swaps=True, placement="EPLB")
    sw_late = simulate_decode(s, n_steps=10, seed=3, swaps=True, placement="EPLB", start=20)
    np.testing.assert_array_equal(sw_late.layer_time, sw_full.layer_time[20:])
    np.testing.assert_array_equal(sw_late.swaps, sw_full.swaps[20:])
    assert sw_late.copy_bytes == pytest.approx(2 * H20_DECODE.expert_bytes * sw_late.swaps.sum())
    np.testing.assert_array_equal(sw_late.placement.phy2log, sw_full.placement.phy2log)
    pop = drifting_popularity(256, 7, seed=2)
    r = simulate_decode(s, n_steps=3, start=4, popularity=pop)
    assert r.layer_time.shape == (3,)
    with pytest.raises(ValueError, match="popularity"):
        simulate_decode(s, n_steps=3, start=4, popularity=pop[:3])
    with pytest.raises(ValueError, match="start"):
        simulate_decode(s, n_steps=3, start=-1)


def test_swaps_help_a_stale_placement():
    s = DecodeSetup(tokens_per_gpu=64, drift=0.02)
    no = simulate_decode(s, n_steps=40, seed=1, placement="EPLB")
    yes = simulate_decode(s, n_steps=40, seed=1, placement="EPLB", swaps=True)
    assert yes.swaps.sum() > 0
    assert yes.nic_ratio[20:].mean() < no.nic_ratio[20:].mean()


def test_setup_and_run_validation():
    with pytest.raises(ValueError, match="n_slots"):
        DecodeSetup(n_slots=250)
    with pytest.raises(ValueError, match="n_slots"):
        make_placement("contiguous", DecodeSetup(n_slots=288), np.ones(256))
    with pytest.raises(ValueError, match="kind"):
        make_placement("random", DecodeSetup(), np.ones(256))
    with pytest.raises(ValueError, match="setup"):
        simulate_decode("s")
    with pytest.raises(ValueError, match="k"):
        sample_routing([1.0, 0.0, 0.0], 3, 2)
    assert math.isclose(nic_aware_placement(np.ones(8), 8, 4, gpus_per_node=4,
                                            gpus_per_nic=2).n_slots, 8)


def test_results_are_read_only_and_checked_when_made_or_replaced():
    import dataclasses

    p, tr = _h20_step(mode="relay")
    lr = decode_layer(p, tr)
    for res, names in ((tr, ("rdma_in", "nvl_in", "ret_op", "remote_hosts")),
                       (lr, ("completion", "arrival", "nic_in"))):
        for name in names:
            assert not getattr(res, name).flags.writeable
    with pytest.raises(ValueError, match="ret_kind"):
        dataclasses.replace(tr, ret_kind=np.full(tr.ret_kind.size, 3))
    with pytest.raises(ValueError, match="nvl_back"):
        dataclasses.replace(tr, nvl_back=tr.nvl_back[:-1])
    with pytest.raises(ValueError, match="mode"):
        dataclasses.replace(tr, mode="both")
    with pytest.raises(ValueError, match="arrival"):
        dataclasses.replace(lr, arrival=-lr.arrival)
    with pytest.raises(ValueError, match="traffic"):
        dataclasses.replace(lr, traffic="x")
    # traffic counted on another placement is refused, not indexed out of range
    other = contiguous_slots(8, 8, gpus_per_node=8, gpus_per_nic=2)
    src = np.zeros(4, dtype=np.int64)
    small = decode_traffic(other, [[1, 2]] * 4, src, "direct")
    with pytest.raises(ValueError, match="traffic"):
        decode_layer(p, small)
    r = simulate_decode(DecodeSetup(n_hosts=1, n_experts=8, n_slots=8, k=2, tokens_per_gpu=2),
                        n_steps=2)
    assert not r.layer_time.flags.writeable and not r.completion.flags.writeable
    with pytest.raises(ValueError, match="layer_time"):
        dataclasses.replace(r, layer_time=np.zeros(0))
    with pytest.raises(ValueError, match="completion"):
        dataclasses.replace(r, completion=r.completion[:, :3])
    with pytest.raises(ValueError, match="hw"):
        DecodeSetup(hw=3)
    with pytest.raises(ValueError, match="name"):
        DecodeHardware(name=float("inf"))
    with pytest.raises(ValueError, match="nic_bw"):
        DecodeHardware(nic_bw=5e-324)
    with pytest.raises(ValueError, match="sm_tax"):
        Transport("x", 0.0, 0.0, True)


def test_simulate_decode_names_its_own_parameters():
    s = DecodeSetup(n_hosts=1, n_experts=8, n_slots=16, k=2, tokens_per_gpu=2)
    for kw, name in (({"placement": "x"}, "placement"), ({"placement": "contiguous"}, "placement"),
                     ({"swap_threshold": 1e300}, "swap_threshold"),
                     ({"cooldown": 2**63 - 1}, "cooldown"), ({"transport": "x"}, "transport"),
                     ({"popularity": np.eye(3, 8)}, "popularity"), ({"mode": 1}, "mode")):
        with pytest.raises(ValueError, match=name):
            simulate_decode(s, n_steps=3, **kw)
    with pytest.raises(ValueError, match="UNEVEN_MAX_STEPS"):
        simulate_decode(DecodeSetup(), n_steps=100_000)
    with pytest.raises(ValueError, match="UNEVEN_MAX_STEPS"):
        drifting_popularity(2, 5_000_000, 1.0)
    with pytest.raises(ValueError, match="n_experts"):
        expected_remote_hosts(8, 4, n_experts=10**18)


# ---------------------------------------------------------------------------------------------
# the relay's own costs, and the inverse problems


def _one_forwarded_copy():
    """2 H20 hosts, one expert per GPU; one token on GPU 0 whose only expert sits on GPU 9: the
    copy crosses to GPU 8 (the same-index relay), which forwards it to GPU 9 over NVLink."""
    p = contiguous_slots(16, 16)
    src = np.array([0])
    return p, decode_traffic(p, route_to_slots(p, [[9]], src), src, "relay")


def test_relay_costs_add_on_the_critical_path_closed_form():
    p, t = _one_forwarded_copy()
    free = decode_layer(p, t).layer_time
    c, s = 3e-6, 5e-6
    # one forwarded copy in dispatch and one in combine; one sync in each phase
    assert decode_layer(p, t, relay_copy=c).layer_time == pytest.approx(free + 2 * c, abs=1e-12)
    assert decode_layer(p, t, relay_sync=s).layer_time == pytest.approx(free + 2 * s, abs=1e-12)
    assert decode_layer(p, t, relay_copy=c, relay_sync=s).layer_time == pytest.approx(
        free + 2 * (c + s), abs=1e-12)
    # a copy that lands on the relay itself is not forwarded: no per-copy cost, the sync stays
    t8 = decode_traffic(p, route_to_slots(p, [[8]], [0]), [0], "relay")
    f8 = decode_layer(p, t8).layer_time
    assert decode_layer(p, t8, relay_copy=c).layer_time == pytest.approx(f8, abs=1e-12)
    assert decode_layer(p, t8, relay_sync=s).layer_time == pytest.approx(f8 + 2 * s, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 2e-5), st.floats(0.0, 2e-5), st.booleans())
def test_relay_costs_never_finish_sooner_and_leave_direct_alone(seed, c, s, overlap):
    hw = DecodeHardware(gpus_per_node=4, gpus_per_nic=2)
    p, slots, src = _random_step(seed)
    r = decode_traffic(p, slots, src, "relay")
    d = decode_traffic(p, slots, src, "direct")
    free = decode_layer(p, r, hw=hw, overlap=overlap)
    paid = decode_layer(p, r, hw=hw, overlap=overlap, relay_copy=c, relay_sync=s)
    assert (paid.completion >= free.completion - 1e-12).all()
    assert paid.layer_time <= free.layer_time + 2 * s + 2 * c * slots.size + 1e-12
    zero = decode_layer(p, r, hw=hw, overlap=overlap, relay_copy=0.0, relay_sync=0.0)
    np.testing.assert_array_equal(zero.completion, free.completion)  # the default is no cost
    a = decode_layer(p, d, hw=hw, overlap=overlap)
    b = decode_layer(p, d, hw=hw, overlap=overlap, relay_copy=c, relay_sync=s)
    np.testing.assert_array_equal(a.completion, b.completion)  # no relay, nothing to pay


def test_simulate_decode_passes_relay_costs_and_defaults_reproduce_todays_numbers():
    s = DecodeSetup(n_hosts=2, n_experts=16, n_slots=16, k=4, tokens_per_gpu=4)
    base = simulate_decode(s, mode="relay", n_steps=3, seed=1)
    same = simulate_decode(s, mode="relay", n_steps=3, seed=1, relay_copy=0.0, relay_sync=0.0)
    np.testing.assert_array_equal(base.layer_time, same.layer_time)
    dear = simulate_decode(s, mode="relay", n_steps=3, seed=1, relay_sync=1e-5)
    assert (dear.layer_time > base.layer_time).all()
    for kw, name in (({"relay_copy": -1.0}, "relay_copy"), ({"relay_sync": 2.0}, "relay_sync"),
                     ({"relay_sync": float("nan")}, "relay_sync")):
        with pytest.raises(ValueError, match=name):
            simulate_decode(s, mode="relay", n_steps=1, **kw)
        p, t = _one_forwarded_copy()
        with pytest.raises(ValueError, match=name):
            decode_layer(p, t, **kw)


_SMALL = DecodeSetup(n_hosts=2, n_experts=16, n_slots=16, k=4, tokens_per_gpu=4)


@pytest.mark.parametrize("cost", ["relay_sync", "relay_copy"])
def test_relay_cost_for_solves_the_inverse_problem(cost):
    from uneven.ep.decode import relay_cost_for

    kw = dict(mode="relay", placement="NIC-aware", n_steps=3, seed=1)
    free = simulate_decode(_SMALL, **kw).median("exposed_comm")
    target = free + 30e-6
    c = relay_cost_for(target, _SMALL, cost=cost, **kw)
    got = simulate_decode(_SMALL, **kw, **{cost: c}).median("exposed_comm")
    assert got == pytest.approx(target, abs=2e-8) and c > 0
    assert relay_cost_for(free, _SMALL, cost=cost, **kw) == 0.0  # nothing to add
    with pytest.raises(ValueError, match="target"):
        relay_cost_for(0.5 * free, _SMALL, cost=cost, **kw)  # the free relay is already slower


def test_relay_cost_for_and_matching_batch_check_their_arguments():
    from uneven.ep.decode import matching_batch, relay_cost_for

    for call, name in (
        (lambda: relay_cost_for(1e-4, _SMALL, n_steps=1), "mode"),
        (lambda: relay_cost_for(1e-4, _SMALL, mode="relay", cost="x", n_steps=1), "cost"),
        (lambda: relay_cost_for(-1.0, _SMALL, mode="relay", n_steps=1), "target"),
        (lambda: relay_cost_for(1e-4, _SMALL, mode="relay", n_steps=1, bogus=1), "bogus"),
        (lambda: relay_cost_for(1e-4, "x", mode="relay", n_steps=1), "setup"),
        (lambda: relay_cost_for(10.0, _SMALL, mode="relay", n_steps=1), "target"),
        (lambda: matching_batch(1e-4, _SMALL, lo=0), "lo"),
        (lambda: matching_batch(1e-4, _SMALL, lo=8, hi=4), "hi"),
        (lambda: matching_batch(1e-4, _SMALL, what="x"), "what"),
    ):
        with pytest.raises(ValueError, match=name):
            call()


def test_matching_batch_picks_the_closest_batch():
    from uneven.ep.decode import matching_batch

    kw = dict(n_steps=3, seed=1, placement="contiguous")
    b, t = matching_batch(100e-6, _SMALL, hi=64, **kw)

    def at(x):
        return simulate_decode(dataclasses.replace(_SMALL, tokens_per_gpu=x),
                               **kw).median("exposed_comm")

    assert t == at(b)
    assert abs(t - 100e-6) <= min(abs(at(b - 1) - 100e-6), abs(at(b + 1) - 100e-6))
    assert matching_batch(1e-9, _SMALL, hi=8, **kw)[0] == 1  # below every batch: the smallest
