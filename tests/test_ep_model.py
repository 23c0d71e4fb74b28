"""EP dispatch/combine on a topology: closed forms, DeepEP's byte definitions, the explorer."""

import dataclasses
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven import topology as topologies
from uneven.ep.fabrics import BOUND_NAMES
from uneven.ep.model import (
    EpRouting,
    decode_tpot_bound,
    deepep_benchmark,
    ep_phase,
    ep_round,
    ep_step,
    fanout_per_token,
    min_node_cap,
    nvlink_fanout_limit,
    route_ep_group,
)
from uneven.ep.placement import (
    contiguous_slots,
    eplb_placement,
    placement_from_phy2log,
    replicated_slots,
)
from uneven.ep.traffic import EpTraffic, ep_dispatch_traffic
from uneven.explorers import deepseek_explorer
from uneven.topology import LINK_KINDS, Topology, cluster, h800_cluster, superpod
from uneven.units import gbyte_per_s


def test_decode_bound_reproduces_the_papers_arithmetic():
    assert decode_tpot_bound(50e9) * 1e3 == pytest.approx(14.76, abs=0.005)
    assert decode_tpot_bound(900e9) * 1e3 == pytest.approx(0.82, abs=0.005)
    # More bandwidth never hurts; latency only adds.
    assert decode_tpot_bound(100e9) < decode_tpot_bound(50e9)
    assert decode_tpot_bound(50e9, latency_per_exchange=1e-6) > decode_tpot_bound(50e9)


def test_fanout_limit_and_node_cap():
    assert nvlink_fanout_limit(160e9, 50e9) == pytest.approx(3.2)
    assert min_node_cap(32, 9.0) == 4
    assert min_node_cap(8, 8.0) == 1
    with pytest.raises(ValueError, match="fanout_limit"):
        min_node_cap(8, 0.0)


def test_node_limited_fanout_matches_derived_numbers():
    free = fanout_per_token(8, 8, n_tokens=16384)
    capped = fanout_per_token(4, 8, n_tokens=16384)
    assert free["nodes"] == pytest.approx(5.29, abs=0.05)
    assert capped["nodes"] == pytest.approx(3.95, abs=0.05)
    assert capped["ib_copies"] == pytest.approx(3.46, abs=0.06)
    assert capped["ib_copies"] < free["ib_copies"]


def test_uniform_routing_logical_over_true_is_n_over_n_minus_1():
    for nodes in (2, 4, 8):
        r = ep_round(h800_cluster(nodes), route_ep_group(nodes, 256, max_nodes=nodes, seed=1))
        ratio = r.logical_bytes_per_gpu / r.network_bytes_per_gpu
        assert ratio == pytest.approx(nodes / (nodes - 1), rel=0.05)


def test_ep16_is_nvlink_bound_and_larger_groups_nic_bound():
    rows = deepep_benchmark((16, 64), tokens_per_gpu=512)
    assert rows[0]["dispatch_bound"] == "NVLink"
    assert rows[1]["dispatch_bound"] == "NIC"
    # The NIC can never move more than its line rate of true bytes.
    for r in rows:
        assert r["dispatch_true_GBps"] <= 50.0 + 1e-9


def test_relay_never_needs_more_nic_time_than_direct():
    topo = h800_cluster(4)
    routing = route_ep_group(4, 128, max_nodes=4, seed=2)
    args = (routing.expert_ids, routing.src_gpu, routing.expert_gpu, 8, 7392.0)
    relay = ep_phase(topo, ep_dispatch_traffic(*args, mode="relay", n_gpus=32))
    direct = ep_phase(topo, ep_dispatch_traffic(*args, mode="direct", n_gpus=32))
    assert relay.nic_time <= direct.nic_time + 1e-15


def test_ep_phase_validation():
    routing = route_ep_group(2, 16)
    t = ep_dispatch_traffic(routing.expert_ids, routing.src_gpu, routing.expert_gpu, 8, 1.0,
                            n_gpus=16)
    with pytest.raises(ValueError, match="GPUs"):
        ep_phase(h800_cluster(4), t)
    with pytest.raises(ValueError, match="traffic"):
        ep_phase(h800_cluster(2), np.zeros((16, 16)))
    with pytest.raises(ValueError, match="n_experts"):
        route_ep_group(3, 16)


def test_deepseek_explorer_headless():
    ex = deepseek_explorer(show=False)
    base = ex.state
    ex.controls["ib_gbps"].value = 200.0
    assert ex.error is None and ex.state.dispatch_time > base.dispatch_time
    ex.controls["max_nodes"].value = 8
    assert ex.state.ib_copies > base.ib_copies
    ex.controls["n_nodes"].value = 2  # the cap M = 8 is clamped to the 2 nodes there are
    assert ex.error is None and ex.state.max_nodes == 2
    ex.controls["k"].value = 16
    ex.controls["max_nodes"].value = 1  # 16 experts cannot fit in one node's 128: still fine
    assert ex.error is None
    ex.preset_menu.value = "NVLink 9× the NIC"
    assert ex.state.ratio == 9.0
    ex.controls["skew"].value = 2.0
    assert ex.state.recv.max() > 1.2 * ex.state.recv.mean()  # one GPU's ports bind



# ---------------------------------------------------------------------------------------------
# replicated experts


def test_256_experts_x_2_replicas_run_on_512_gpus():
    """The layout the old check refused: 256 experts on 512 GPUs, two replicas each."""
    topo = h800_cluster(64)
    r = route_ep_group(64, 8, replicas=2, nodes_per_leaf=topo.nodes_per_leaf, seed=3)
    assert r.placement.n_slots == 512 and r.slot_ids.shape == r.expert_ids.shape == (4096, 8)
    assert np.array_equal(r.placement.phy2log[r.slot_ids], r.expert_ids)  # each pair once
    rnd = ep_round(topo, r)
    assert rnd.dispatch.time > 0 and rnd.combine.time > rnd.dispatch.time
    assert rnd.dispatch.bound == "NIC" and rnd.dispatch.drain_by_kind["leaf_up"] == 0.0
    st_ = ep_step(512, 8, ep=512, replicas=2, seed=3)  # on h800_cluster(64)
    assert st_.placement.n_slots == 512 and st_.slot_load.shape == (1, 512)
    assert st_.slot_load.sum() == 512 * 8 * 8 == st_.expert_load.sum()
    assert np.array_equal(st_.expert_load[0], st_.slot_load[0, :256] + st_.slot_load[0, 256:])
    assert st_.bound_kind == st_.loads.bottleneck_kind() and st_.time > 0


def test_two_copies_on_two_leaf_groups_are_two_ep_groups():
    """With the nearest rule every token of leaf group q uses copy q (H800: 32 nodes per leaf),
    so EP512 with 256 experts x 2 moves exactly the bytes of two EP256 groups."""
    two = ep_step(512, 3, ep=512, replicas=2, seed=5)
    half = ep_step(512, 3, ep=256, seed=5)
    net, nvl = two.network[0], two.nvlink[0]
    for q in range(2):
        blk = slice(256 * q, 256 * (q + 1))
        assert np.array_equal(net[blk, blk], half.network[q])
        assert np.array_equal(nvl[blk, blk], half.nvlink[q])
    assert net.sum() == half.network.sum() and two.time == half.time
    assert np.array_equal(two.slot_load[0], half.slot_load.ravel())
    # round robin ignores the leaves: half the tokens cross the spine
    rr = ep_step(512, 3, ep=512, replicas=2, seed=5, replica_rule="round_robin")
    assert rr.drain_by_kind["leaf_up"] > 0 == two.drain_by_kind["leaf_up"]


@pytest.mark.parametrize("call, match", [
    (lambda: route_ep_group(64, 4), r"n_experts=256 with replicas=1 gives 256 expert slots, "
     r"which cannot fill 512 GPUs evenly: every GPU needs .* at least one.*replicas=2 \(512 "
     r"slots, 1 per GPU\); n_nodes=32"),
    (lambda: ep_step(512, 4, ep=512), r"every GPU needs.*multiple of ep \(512\).*replicas=2.*"
     r"ep=256"),
    (lambda: route_ep_group(64, 4, replicas=3), r"replicas=3 with n_experts=256.*replicas=2"),
    (lambda: ep_step(64, 4, replicas=[1] * 255 + [2]), r"replicas \(counts .* sum to 257\)"),
    (lambda: route_ep_group(2, 4, replicas=2, placement=contiguous_slots(256, 16)), "replicas"),
    (lambda: route_ep_group(2, 4, placement=contiguous_slots(256, 8)), "placement must hold"),
    (lambda: route_ep_group(2, 4, placement=replicated_slots(64, 16, 2)), "n_experts must be"),
    (lambda: route_ep_group(2, 4, placement="eplb"), "placement"),
    (lambda: route_ep_group(2, 4, replica_rule="least_loaded"), "replica_rule"),
    (lambda: route_ep_group(2, 4, n_groups=3), "n_groups must divide"),
    (lambda: route_ep_group(3, 4, n_experts=48, replicas=2), "n_groups must be given"),
    (lambda: route_ep_group(2, 4, nodes_per_leaf=0), "nodes_per_leaf"),
])
def test_impossible_layouts_say_why_and_what_would_work(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# Recorded from the code before replicas existed (same seeds): replicas=1 must not move a bit.
_BEFORE = {
    "step": (42075264.0, 98941920.0, 4302695, 43083835872.0, 3.601799242424242,
             1.7670479999999998e-05),
    "route": (1667082041, 1.65894e-05, 2.78804e-05),
}


def test_one_replica_is_bit_identical_to_the_model_before_replicas():
    for kw in ({}, {"replicas": 1}, {"replicas": np.ones(256, int)},
               {"placement": contiguous_slots(256, 32, gpus_per_node=8, gpus_per_nic=1)}):
        st_ = ep_step(64, 33, ep=32, **kw)
        load = st_.expert_load
        got = (st_.network.sum(), st_.nvlink.sum(),
               int((load * np.arange(load.size).reshape(load.shape)).sum()),
               float((st_.network * np.arange(st_.network.size).reshape(st_.network.shape)).sum()),
               st_.nodes_per_token, st_.time)
        assert got == _BEFORE["step"], kw
        assert st_.slot_load is not None and np.array_equal(st_.slot_load, load)
    for kw in ({}, {"replicas": 1, "replica_rule": "round_robin"}):
        r = route_ep_group(2, 40, **kw)
        rnd = ep_round(h800_cluster(2), r, count_local_writes=True)
        ids = r.expert_ids
        assert (int((ids * np.arange(ids.size).reshape(ids.shape)).sum()), rnd.dispatch.time,
                rnd.combine.time) == _BEFORE["route"]
        assert r.slot_ids is None and r.targets[0] is r.expert_ids


def test_a_replica_on_the_own_node_keeps_the_token_off_the_nic():
    """A full copy of the experts on every node: the nearest rule sends nothing over the NIC,
    round robin sends the tokens of every other GPU to the other node."""
    near = route_ep_group(2, 32, n_experts=16, k=4, replicas=2, seed=1)
    rr = route_ep_group(2, 32, n_experts=16, k=4, replicas=2, seed=1, replica_rule="round_robin")
    assert np.array_equal(near.expert_ids, rr.expert_ids)  # same routing, other replicas
    topo = h800_cluster(2)
    a, b = ep_round(topo, near), ep_round(topo, rr)
    assert a.dispatch_traffic.network_bytes == 0.0 == a.network_bytes_per_gpu
    assert a.dispatch.bound == "NVLink" and a.dispatch.drain_by_kind["nic_up"] == 0.0
    # round robin: GPU s uses copy s mod 2 (copy q on node q), near or far
    far = (near.src_gpu % 2) != (near.src_gpu // 8)
    assert (b.dispatch_traffic.remote_nodes_per_token == far).all()
    assert b.dispatch_traffic.network_bytes > 0 and b.dispatch.drain_by_kind["nic_up"] > 0


def _conserved(r):
    """Every (token, expert) pair lands exactly once: one slot copy each, minus own-GPU ones."""
    ids, gpu = r.targets
    t = ep_dispatch_traffic(ids, r.src_gpu, gpu, r.gpus_per_node, 1.0, mode="direct",
                            n_gpus=r.n_nodes * r.gpus_per_node, unit="slot")
    own = int((gpu[ids] == r.src_gpu[:, None]).sum())
    assert t.network_bytes + t.nvlink_bytes + own == ids.size
    relay = ep_dispatch_traffic(ids, r.src_gpu, gpu, r.gpus_per_node, 1.0, mode="relay",
                                n_gpus=r.n_nodes * r.gpus_per_node)
    assert relay.network_bytes == relay.remote_nodes_per_token.sum()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["nearest", "round_robin"]))
def test_random_replica_layouts_route_every_pair_once_to_a_nearest_replica(seed, rule):
    rng = np.random.default_rng(seed)
    n_nodes, g = int(rng.integers(1, 4)), int(rng.choice([1, 2, 4]))
    n_gpus = n_nodes * g
    n_slots = n_gpus * int(rng.integers(1, 4))
    n_exp = int(rng.integers(1, n_slots + 1))
    counts = 1 + rng.multinomial(n_slots - n_exp, np.ones(n_exp) / n_exp)
    if rng.random() < 0.5:
        kw = {"replicas": counts}
    else:  # EPLB's maps
        kw = {"placement": eplb_placement(rng.pareto(1.0, n_exp) + 0.1, n_slots, n_gpus,
                                          gpus_per_node=g, gpus_per_nic=1)}
    k = int(rng.integers(1, min(n_exp, 4) + 1))
    r = route_ep_group(n_nodes, int(rng.integers(1, 9)), n_experts=n_exp, k=k, max_nodes=1,
                       gpus_per_node=g, n_groups=1, seed=seed, replica_rule=rule, **kw)
    p = r.placement
    ids, gpu = r.targets
    if r.slot_ids is None:  # no second replica: each expert's only slot
        assert p.logcnt.max() == 1 and np.array_equal(gpu[ids], p.slot_gpu[p.log2phy[ids, 0]])
    else:
        assert np.array_equal(p.phy2log[ids], r.expert_ids)
    _conserved(r)
    if rule == "nearest":  # no replica of the chosen expert is closer than the one used
        def dist(a, b):
            return np.where(a == b, 0, np.where(a // g == b // g, 1, 2))
        used = dist(gpu[ids], r.src_gpu[:, None])
        for j in range(p.log2phy.shape[1]):
            slot = p.log2phy[r.expert_ids, j]
            d = np.where(slot >= 0, dist(p.slot_gpu[np.maximum(slot, 0)], r.src_gpu[:, None]), 9)
            assert (used <= d).all()
    rnd = ep_round(h800_cluster(n_nodes) if g == 8 else cluster(
        n_nodes, gpus_per_node=g, nics_per_node=g, nvlink_bw=gbyte_per_s(160),
        nic_bw=gbyte_per_s(50)), r)
    assert rnd.dispatch.bound_kind == rnd.dispatch.loads.bottleneck_kind()


def test_ep_step_takes_eplb_maps():
    load = np.random.default_rng(0).pareto(1.0, 64) + 0.1
    p = eplb_placement(load, 96, 32, gpus_per_node=8, gpus_per_nic=1)  # 32 extra replicas
    st_ = ep_step(64, 16, ep=32, n_experts=64, k=4, placement=p, n_groups=4, max_nodes=2)
    assert st_.slot_load.sum() == 64 * 16 * 4 == st_.expert_load.sum()
    want = np.zeros_like(st_.expert_load)
    np.add.at(want.T, p.phy2log, st_.slot_load.T)
    assert np.array_equal(st_.expert_load, want)
    with pytest.raises(ValueError, match="placement must hold"):
        ep_step(64, 4, ep=16, n_experts=64, placement=p)


def test_ep_routing_checks_its_replica_maps():
    r = route_ep_group(2, 2, n_experts=16, replicas=2, k=2)
    bad = r.slot_ids.copy()
    bad[0, 0] = (bad[0, 0] + 1) % 32  # a slot of another expert
    other = placement_from_phy2log(np.arange(16), 16, 8, gpus_per_node=8, gpus_per_nic=1)
    for change in ({"slot_ids": None}, {"slot_ids": bad},
                   {"placement": replicated_slots(16, 8, 4, gpus_per_node=8)},
                   {"expert_gpu": r.expert_gpu[::-1].copy()}):
        with pytest.raises(ValueError, match="placement must fit"):
            dataclasses.replace(r, **change)
    for change in ({"placement": None}, {"placement": other}):  # too few slots for slot_ids
        with pytest.raises(ValueError, match="slot_ids"):
            dataclasses.replace(r, **change)
    with pytest.raises(ValueError, match="slot_ids"):
        dataclasses.replace(r, slot_ids=r.slot_ids + 32)
    assert isinstance(EpRouting(r.expert_ids, r.src_gpu, r.expert_gpu, 2, 8), EpRouting)
    st_ = ep_step(16, 2, n_experts=16, k=2, ep=16, replicas=2)
    with pytest.raises(ValueError, match="slot_load"):
        dataclasses.replace(st_, slot_load=st_.slot_load[:, :8].copy())


# ---------------------------------------------------------------------------------------------
# what binds


def test_a_leaf_uplink_that_binds_is_named_not_called_nic():
    """The old ``bound`` said 'NIC' whenever any network-side link was busiest."""
    topo = h800_cluster(4, nodes_per_leaf=1, oversubscription=8.0)
    r = ep_round(topo, route_ep_group(4, 64, seed=1))
    d = r.dispatch
    assert d.bound == "spine" and d.bound_kind in ("leaf_up", "leaf_down")
    assert d.nic_time == max(d.drain_by_kind[k] for k in ("nic_up", "nic_down", "leaf_up",
                                                          "leaf_down"))
    assert d.drain_by_kind[d.bound_kind] > max(d.drain_by_kind["nic_up"],
                                               d.drain_by_kind["nic_down"])
    assert r.combine.bound_kind in ("leaf_up", "leaf_down")
    # the same routing on a non-blocking fabric: the NIC binds, as before
    assert ep_round(h800_cluster(4), route_ep_group(4, 64, seed=1)).dispatch.bound == "NIC"
    # efficiency moves the bottleneck, and the names follow
    slow = ep_round(topo, route_ep_group(4, 64, seed=1), efficiency={"nvl_in": 0.001})
    assert (slow.dispatch.bound, slow.dispatch.bound_kind) == ("NVLink", "nvl_in")
    rows = deepep_benchmark([16], tokens_per_gpu=16)
    assert rows[0]["dispatch_bound"] == "NVLink" and rows[0]["dispatch_bound_kind"][:3] == "nvl"


def _every_fabric():
    """Every fabric the library builds: the three cluster fabrics (one leaf oversubscribed so
    the spine side can bind), a superpod, and every preset of :mod:`uneven.topology`."""
    bw = {"nvlink_bw": gbyte_per_s(160), "nic_bw": gbyte_per_s(50)}
    out = {
        "multi_plane": cluster(4, gpus_per_node=4, nics_per_node=4, **bw),
        "multi_rail, PXN": cluster(4, gpus_per_node=4, nics_per_node=2, fabric="multi_rail",
                                   nodes_per_leaf=2, oversubscription=4.0, **bw),
        "multi_rail, spine": cluster(4, gpus_per_node=4, nics_per_node=2, fabric="multi_rail",
                                     cross_rail="spine", nodes_per_leaf=1,
                                     oversubscription=2.0, **bw),
        "superpod": superpod(3, npus_per_node=4, npu_bw=gbyte_per_s(392),
                             node_uplink_bw=gbyte_per_s(392)),
    }
    for name in topologies.__all__:
        make = getattr(topologies, name)
        if name in ("cluster", "superpod") or not callable(make) or isinstance(make, type):
            continue
        for args in ((2,), ()):
            try:
                t = make(*args)
            except (TypeError, ValueError):
                continue
            if isinstance(t, Topology) and t.n_gpus <= 1024:
                out[name] = t
                break
    assert {"h800_cluster", "h20_cluster", "cloudmatrix384"} <= set(out)
    return out


FABRICS = _every_fabric()


def _by_hand(topo, loads, efficiency):
    """The busiest link, by kind, from bytes and capacities (no LinkLoads method)."""
    eff = np.ones(topo.n_links)
    for kind, v in (efficiency or {}).items():
        eff[topo.link_kind == LINK_KINDS.index(kind)] = v
    per_link = loads.bytes / (topo.capacity * eff)
    kinds = [LINK_KINDS[k] for k in topo.link_kind]
    drains = {}
    for kind, v in zip(kinds, per_link, strict=True):
        drains[kind] = max(drains.get(kind, 0.0), float(v))
    return kinds[int(np.argmax(per_link))], drains


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(FABRICS)), st.integers(0, 10**6), st.floats(0.02, 1.0),
       st.sampled_from([None, "nvl", "net", "leaf"]))
def test_bound_is_the_link_loads_bottleneck_on_every_fabric(name, seed, density, slow):
    topo = FABRICS[name]
    n, g = topo.n_gpus, topo.gpus_per_node
    rng = np.random.default_rng(seed)
    same = (np.arange(n)[:, None] // g) == (np.arange(n)[None, :] // g)
    T = rng.pareto(1.0, (n, n)) * 1e5 * (rng.random((n, n)) < density)
    np.fill_diagonal(T, 0.0)
    kinds = {LINK_KINDS[k] for k in np.unique(topo.link_kind)}
    wanted = {"nvl": ("nvl_in", "npu_in"), "net": ("nic_up", "node_up"),
              "leaf": ("leaf_down",)}.get(slow, ())
    eff = {k: 0.05 for k in wanted if k in kinds} or None
    traffic = EpTraffic(np.where(same, 0.0, T), np.where(same, T, 0.0), np.zeros(1, int),
                        np.zeros(1, int), np.zeros(1, int), "direct", "dispatch", g, 1.0)
    ph = ep_phase(topo, traffic, efficiency=eff)
    kind, drains = _by_hand(topo, ph.loads, eff)
    assert ph.bound_kind == kind == ph.loads.bottleneck_kind(eff)
    assert ph.bound == BOUND_NAMES[kind]
    assert ph.drain_by_kind == pytest.approx(drains, rel=1e-12, abs=0)
    assert ph.time == pytest.approx(max(drains.values()) + ph.loads.max_latency, rel=1e-12)
    if topo.kind == "cluster" and rng.random() < 0.5:  # forwarding binds only when it is longer
        writes = rng.random(n) * float(T.sum()) / n
        fw = ep_phase(topo, traffic, efficiency=eff, local_writes=writes)
        assert fw.bound_kind == kind
        assert (fw.bound == "forwarding") == (fw.forward_time > max(drains.values()))
        if fw.bound != "forwarding":
            assert fw.bound == BOUND_NAMES[kind]


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_ep_step_names_the_bottleneck_on_every_fabric(name):
    topo = FABRICS[name]
    n, g = topo.n_gpus, topo.gpus_per_node
    st_ = ep_step(n, 4, ep=n, gpus_per_node=g, n_experts=4 * n, k=4, max_nodes=topo.n_nodes,
                  topology=lambda _, t=topo: t)
    kind, drains = _by_hand(topo, st_.loads, None)
    assert st_.bound_kind == kind and st_.bound == BOUND_NAMES[kind]
    assert st_.drain_by_kind == pytest.approx(drains, rel=1e-12, abs=0)
    assert st_.time == pytest.approx(max(drains.values()) + st_.loads.max_latency, rel=1e-12)
    two = ep_step(n, 4, ep=n, gpus_per_node=g, n_experts=2 * n, k=2, max_nodes=1,
                  replicas=2, n_groups=1, topology=partial(lambda _, t: t, t=topo))
    assert two.bound_kind == two.loads.bottleneck_kind()
