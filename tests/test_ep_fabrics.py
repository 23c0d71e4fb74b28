"""One EP dispatch per topology family: equal bytes offered, the relay's savings, the binding
resources, and the link-load engine's own accounting."""

import numpy as np
import pytest

from uneven.ep.fabrics import dispatch_on_fabrics
from uneven.ep.roofline import (
    EXPERT_COSTS,
    ExpertCost,
    crossover_tokens,
    expert_time,
    roofline_hiding_ratio,
)
from uneven.overlap import H800, hiding_ratio


@pytest.fixture(scope="module")
def rows():
    return dispatch_on_fabrics(tokens_per_gpu=32)


def test_equal_bytes_and_the_relay(rows):
    assert len({r.offered for r in rows}) == 1
    assert rows[0].offered == pytest.approx(32 * 8 * 7392)
    h800_direct, h800_node, h20_direct, h20_relay, node, pod = rows
    assert h800_node.network < h800_direct.network and h20_relay.network < h20_direct.network
    assert h800_direct.network == pytest.approx(h20_direct.network)  # same routing, same rules
    # two GPUs share an H20 NIC: its busiest NIC carries up to twice an H800 NIC's bytes
    assert 1.5 * h800_direct.drain < h20_direct.drain <= 2 * h800_direct.drain + 1e-12
    assert node.network == 0 and node.bound == "NVLink"
    assert pod.bound == "UB port" and set(pod.core_model) == {"serialised baseline", "UBEP"}
    assert all(r.time == pytest.approx(r.drain + r.latency) for r in rows)


def test_fabrics_validation():
    with pytest.raises(ValueError, match="n_experts"):
        dispatch_on_fabrics(n_experts=100)
    with pytest.raises(ValueError, match="tokens_per_gpu"):
        dispatch_on_fabrics(tokens_per_gpu=0)


def test_roofline_and_hiding_ratio():
    for c in EXPERT_COSTS.values():
        n = crossover_tokens(c)
        assert expert_time(c, n) == pytest.approx(c.weight_bytes / c.hbm_bw)
        assert expert_time(c, 2 * n) == pytest.approx(2 * expert_time(c, n))
        assert expert_time(c, 0) == 0.0
        r = roofline_hiding_ratio(c, np.array([n / 4, n / 2, n, 4 * n]))
        assert r[0] == pytest.approx(2 * r[1]) and r[2] == pytest.approx(r[3])
    # compute-bound, the roofline's R is MegaScale-MoE's (notebook 04's hiding_ratio)
    wide = EXPERT_COSTS["Internal-352B expert, H800 training (BF16), NVLink"]
    narrow = EXPERT_COSTS["DeepSeek-V3 expert, H800 training (BF16), NIC"]
    assert roofline_hiding_ratio(wide, 1e5) == pytest.approx(hiding_ratio(14336, H800["nvlink_bw"]))
    assert roofline_hiding_ratio(narrow, 1e5) == pytest.approx(hiding_ratio(2048, H800["nic_bw"]))
    with pytest.raises(ValueError, match="tokens"):
        roofline_hiding_ratio(wide, 0)
    with pytest.raises(ValueError, match="link_bw"):
        ExpertCost("x", 1.0, 1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="cost"):
        expert_time("H20", 4)


def test_rows_and_costs_are_checked():
    import dataclasses

    from uneven.ep.fabrics import FabricDispatch

    row = dispatch_on_fabrics(tokens_per_gpu=4)[-1]
    for change, name in (({"family": "scale-sideways"}, "family"), ({"time": -1.0}, "time"),
                         ({"core_model": {"x": float("nan")}}, "core_model"),
                         ({"network": 1j}, "network"), ({"name": 7}, "name")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(row, **change)
    assert isinstance(row, FabricDispatch)
    with pytest.raises(ValueError, match="seed"):
        dispatch_on_fabrics(tokens_per_gpu=4, seed=-1)
    c = EXPERT_COSTS["DeepSeek-V3 expert, H20 decode (FP8), shared NIC"]
    for change, name in (({"hbm_bw": 5e-324}, "hbm_bw"), ({"token_time": 1e300}, "token_time"),
                         ({"remote_fraction": 5e-324}, "remote_fraction")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(c, **change)
    with pytest.raises(ValueError, match="tokens"):
        expert_time(c, 1e300)
    with pytest.raises(ValueError, match="tokens"):
        roofline_hiding_ratio(c, 5e-324)
    assert expert_time(c, np.array(4.0)) == expert_time(c, 4)  # a 0-d array is a number
