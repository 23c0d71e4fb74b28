"""Counterfactuals: a network fix on a pipeline link, a transport before and after balancing,
bandwidth against barriers, and communication on the compute units."""

import numpy as np
import pytest

from uneven.counterfactuals import (
    bandwidth_sweep,
    compute_unit_tax,
    network_fix_sweep,
    transport_before_after,
)
from uneven.schedulers.pipeline import absorption_bound


def test_network_fix_sweep_closed_forms_and_monotonicity():
    r = network_fix_sweep(0.06, np.linspace(0, 1, 13), p=4, m=12)
    assert np.all(np.diff(r["zb_cpu"]) <= 1e-12) and np.all(np.diff(r["zb_hol"]) <= 1e-12)
    assert r["zb_cpu"][-1] == pytest.approx(r["healthy"]) == pytest.approx(r["zb_hol"][-1])
    assert np.all(r["zb_hol"] >= r["zb_cpu"] - 1e-12)  # a blocked stream is never faster
    assert r["pipemorph"] == pytest.approx(r["healthy"] + 0.06)  # healthy + c
    assert r["knee"] == pytest.approx(absorption_bound(2, 0.01, 0.01, t_w=0.01))
    below = r["shares"] >= 1 - r["knee"] / 0.06 - 1e-9  # residual delay within the knee
    assert np.all(r["zb_cpu"][below] <= r["healthy"] + 2 * 0.06 * (1 - r["shares"][below]) + 1e-9)
    with pytest.raises(ValueError, match="shares"):
        network_fix_sweep(0.01, [0.5, 1.5])
    with pytest.raises(ValueError, match="link"):
        network_fix_sweep(0.01, [0.5], p=4, link=3)


def test_bandwidth_cannot_buy_back_the_barriers():
    r = bandwidth_sweep([0.5, 1, 4, np.inf], ep=32, tokens_per_die=32)
    for kind in ("baseline", "ubep"):
        assert np.all(np.diff(r[kind]) < 0)
    assert np.all(r["baseline"] - r["ubep"] > r["barriers"] * 0.5)
    assert r["factors"][-1] == np.inf
    # past the most a core may push (1e15 bytes/s), a factor stands for unlimited bandwidth
    top = bandwidth_sweep([1e6, 1e12, np.inf], ep=32, tokens_per_die=32)
    for kind in ("baseline", "ubep"):
        assert top[kind][0] == top[kind][1] == top[kind][2] == r[kind][-1]
    with pytest.raises(ValueError, match="factors"):
        bandwidth_sweep([0.0])


def test_transport_before_after_shape():
    r = transport_before_after(n_steps=3)
    assert set(r) == {(s, t) for s in ("skewed", "balanced") for t in ("SM-resident",
                                                                        "SM-free")}
    assert all(v >= 0 for v in r.values())
    assert r["balanced", "SM-free"] < r["balanced", "SM-resident"]


def test_compute_unit_tax_rows():
    rows = compute_unit_tax(n_steps=2, comm_sms=(8, 20))
    assert [r.system.split(":")[0] for r in rows] == ["pipeline"] * 2 + ["decode"] + \
        ["training layer"] * 2
    assert all(r.on >= r.off > 0 and 0 <= r.share < 1 for r in rows)
    assert rows[1].share > rows[0].share  # a delayed link makes a blocked stream far worse
    assert rows[3].share <= rows[4].share  # more SMs taken, never cheaper
    with pytest.raises(ValueError, match="comm_sms"):
        compute_unit_tax(n_steps=1, comm_sms=(200,))


def test_hardened_inputs():
    import dataclasses

    from uneven.counterfactuals import TaxRow

    row = TaxRow("x", "y", 2.0, 1.0)
    for change, name in (({"on": 0.0}, "on"), ({"off": float("nan")}, "off"),
                         ({"system": None}, "system"), ({"on": 1e300}, "on")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(row, **change)
    for bad in ([1 + 1j], ["a"], [[1.0, 2.0]], [True], np.zeros(2000) + 1, [-np.inf]):
        with pytest.raises(ValueError, match="factors"):
            bandwidth_sweep(bad, ep=16, tokens_per_die=4)
    with pytest.raises(ValueError, match="ep"):
        bandwidth_sweep([1.0], ep=1025)  # beyond the largest die superpod
    with pytest.raises(ValueError, match="t_op"):
        network_fix_sweep(0.03, [0.5], t_op=1e-300)
    with pytest.raises(ValueError, match="comm_sms"):
        compute_unit_tax(comm_sms=np.broadcast_to(1.0, (2**40,)))
    r = network_fix_sweep(0.03, [0.0, 1.0], p=4, m=12)
    assert not r["zb_cpu"].flags.writeable and not r["shares"].flags.writeable


def test_decode_runs_count_against_the_work_budget(monkeypatch):
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "1e6")
    with pytest.raises(ValueError, match="n_steps=.*UNEVEN_MAX_STEPS"):
        transport_before_after(n_steps=5)
    with pytest.raises(ValueError, match="n_steps=.*UNEVEN_MAX_STEPS"):
        compute_unit_tax(n_steps=5)


# ---- notebook 07's boundary cases: where each agreement stops holding --------------------------

def test_a_network_fix_that_removes_the_whole_delay_beats_the_replan():
    # congestion that ECMP or spraying removes fully: the fixed schedule is back to healthy,
    # below PipeMorph's re-plan under the whole delay (healthy + c); removing nothing, it is
    # above it
    r = network_fix_sweep(0.06, [0.0, 1.0])
    assert r["zb_cpu"][1] == pytest.approx(r["healthy"]) and r["zb_cpu"][1] < r["pipemorph"]
    assert r["zb_cpu"][0] > r["pipemorph"]


def test_at_one_token_per_gpu_the_better_transport_pays_before_balancing():
    # fixed and per-message costs bind, not the hot NIC: the saving on the skewed layer is as
    # large as on the balanced one; at 64 tokens it is well under half of it (notebook 07, Sec. 3)
    small = transport_before_after(tokens_per_gpu=1, n_steps=6)
    big = transport_before_after(tokens_per_gpu=64, n_steps=6)

    def gain(r, s):
        return 1 - r[s, "SM-free"] / r[s, "SM-resident"]

    assert gain(small, "skewed") > 0.4 and gain(small, "skewed") >= gain(small, "balanced") - 0.05
    assert gain(big, "skewed") < 0.5 * gain(big, "balanced")


def test_a_bytes_bound_superpod_dispatch_gains_from_bandwidth():
    # with many writes in flight (the hop latency hidden) and a large batch, bytes bind: twice
    # the bandwidth cuts the serialised dispatch by more than a third; at the default (7 in
    # flight, 128 tokens) by under 15%
    bound = bandwidth_sweep([1, 2], ep=64, tokens_per_die=1024, writes_in_flight=64)
    default = bandwidth_sweep([1, 2], ep=64, tokens_per_die=128)
    assert 1 - bound["baseline"][1] / bound["baseline"][0] > 1 / 3
    assert 1 - default["baseline"][1] / default["baseline"][0] < 0.15
    assert bandwidth_sweep([1], ep=16, tokens_per_die=8, writes_in_flight=7)["baseline"][0] == \
        pytest.approx(bandwidth_sweep([1], ep=16, tokens_per_die=8)["baseline"][0])
    with pytest.raises(ValueError, match="writes_in_flight"):
        bandwidth_sweep([1], ep=16, tokens_per_die=8, writes_in_flight=0)
