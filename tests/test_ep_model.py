"""EP dispatch/combine on a topology: closed forms, DeepEP's byte definitions, the explorer."""

import numpy as np
import pytest

from uneven.ep.model import (
    decode_tpot_bound,
    deepep_sweep,
    ep_phase,
    ep_round,
    fanout_per_token,
    min_node_cap,
    nvlink_fanout_limit,
    route_ep_group,
)
from uneven.ep.traffic import ep_dispatch_traffic
from uneven.explorers import deepseek_explorer
from uneven.topology import h800_cluster


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
    rows = deepep_sweep((16, 64), tokens_per_gpu=512)
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
