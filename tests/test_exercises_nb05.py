"""Notebook 05's exercises beyond the shared checks of tests/test_exercises.py (which run the
worked solutions, the neighbouring regimes and the no-bisection rule over every exercise): the
expected values come from the library, and each registered slip gets its hint."""

import math

import pytest

from uneven.ep.decode import DecodeSetup, simulate_decode
from uneven.exercises import check, exercise
from uneven.explorers.nb05 import balancing_state


def test_expected_values_come_from_the_library():
    assert exercise("05.1").expected(8, 8) == pytest.approx(7 * (1 - (7 / 8) ** 8))
    copy = 3 * 7168 * 2048 / 450e9
    layer = simulate_decode(DecodeSetup(), placement="NIC-aware", swaps=True, n_steps=120,
                            seed=0).median()
    assert exercise("05.4").expected() == pytest.approx(58 * layer / copy)
    slow = [balancing_state(mode=m, nic_gbps=200.0).layer_time for m in ("direct", "relay")]
    assert exercise("05.2").expected() == pytest.approx(slow[0] / slow[1])


def test_the_predict_exercise_answer_is_not_the_default_ratio():
    # the explorer's default ratio (400 Gb/s) is on screen; the exercise's must be clearly apart
    default = [balancing_state(mode=m).layer_time for m in ("direct", "relay")]
    assert round(default[0] / default[1], 2) == 1.38  # the ratio the prompt states
    e = exercise("05.2").expected()
    assert e > 1.15 * default[0] / default[1]
    assert not check("05.2", default[0] / default[1]).ok


@pytest.mark.parametrize("key", ["05.2", "05.4", "05.5", "05.6"])  # 05.1: test_exercises_derive.py
def test_registered_slips_get_their_hint(key):
    ex = exercise(key)
    e = float(ex.expected())
    for wrong, message in ex.mistakes:
        value = float(wrong(e))
        if not math.isclose(value, e, rel_tol=ex.rtol):
            assert message in check(key, value).message


def test_the_placement_exercise_is_the_hierarchical_policy_at_ep64():
    from uneven.ep.placement import nic_loads, placement_from_phy2log, rebalance_experts
    from uneven.explorers.nb05 import step_skew

    load = step_skew(DecodeSetup()).load
    ratios = {}
    for groups, nodes in ((8, 8), (1, 1)):
        phy2log = rebalance_experts(load[None], 320, groups, nodes, 64)[0][0]
        n = nic_loads(placement_from_phy2log(phy2log, 256, 64), load)
        ratios[groups] = n.max() / n.mean()
    assert exercise("05.5").expected() == pytest.approx(ratios[8])
    # the two policies sit in different regimes: the hierarchical one cannot move load across hosts
    assert ratios[8] > 1.1 > 1.01 > ratios[1]
    assert check("05.5", round(ratios[8], 2)).ok and not check("05.5", ratios[1]).ok


def test_the_inverse_problem_exercise_solves_for_a_per_copy_cost():
    from uneven.ep.decode import relay_cost_for
    from uneven.explorers.nb05 import ABLATION, TRANSPORTS

    e = exercise("05.6").expected()
    last = {**ABLATION[-1][1], "transport": TRANSPORTS["SM-free"]}
    s = DecodeSetup(tokens_per_gpu=19)  # Section 6's matched batch
    r = simulate_decode(s, n_steps=60, seed=1, relay_copy=e * 1e-6, **last)
    assert r.median("exposed_comm") == pytest.approx(134.00e-6, abs=1e-8)
    # the solution's claim: the relay stops paying at about 0.27 µs per forwarded copy
    relay = {**ABLATION[3][1]}
    swaps = simulate_decode(s, n_steps=60, seed=1, **ABLATION[2][1]).median("exposed_comm")
    even = relay_cost_for(swaps, s, cost="relay_copy", **relay)
    assert round(even * 1e6, 2) == 0.27 and even * 1e6 < e / 2
    # and with all mechanisms on, at about 0.004 µs per copy (where the relay is worth 0.3 µs)
    from uneven.explorers.nb05 import matched_ablation

    m = matched_ablation()
    assert round(m.break_even_final["relay_copy"] * 1e6, 3) == 0.004
    assert round(m.direct_final - m.abl.med[-1], 1) == 0.3
    # and 0.81 µs is about 50 times a token's NVLink byte time (7,392 bytes: 16 ns)
    from uneven.ep.decode import H20_DECODE

    byte_time = H20_DECODE.dispatch_bytes / H20_DECODE.nvlink_bw
    assert round(byte_time * 1e9) == 16 and 45 < e * 1e-6 / byte_time < 55


def test_the_relay_exercise_answer_is_the_only_change_that_moves_host_0s_nics():
    # 05.3: which change alters what host 0's NICs receive under the relay? Each option, run.
    import numpy as np

    from uneven.ep.placement import placement_from_phy2log, route_to_slots
    from uneven.ep.transport import decode_traffic
    from uneven.explorers.nb05 import placement_loads, shuffled_host, step_skew

    setup = DecodeSetup()
    step = step_skew(setup)
    plc = placement_loads(setup, step.load).placements["NIC-aware"]
    src = np.repeat(np.arange(setup.n_gpus), setup.tokens_per_gpu)
    nics0 = plc.n_gpus // plc.gpus_per_nic // setup.n_hosts  # host 0's NICs

    def host0(p, ids, s):
        return decode_traffic(p, route_to_slots(p, ids, s), s, "relay").nic_in()[:nics0]

    base = host0(plc, step.ids, src)
    keep = ~((src < 8) & (np.arange(src.size) % 2 == 1))  # (a) half of host 0's own tokens
    assert np.array_equal(host0(plc, step.ids[keep], src[keep]), base)
    # (b) NVLink bandwidth is not an input of the copy counts at all
    ph = plc.phy2log.copy()  # (c) host 0's hottest expert for host 1's coldest
    per_host = ph.size // setup.n_hosts
    i = int(np.argmax(step.load[ph[:per_host]]))
    j = per_host + int(np.argmin(step.load[ph[per_host:2 * per_host]]))
    ph[i], ph[j] = ph[j], ph[i]
    moved = placement_from_phy2log(ph, plc.logcnt.size, plc.n_gpus,
                                   gpus_per_node=plc.gpus_per_node, gpus_per_nic=plc.gpus_per_nic)
    assert not np.array_equal(host0(moved, step.ids, src), base)
    # the solution's numbers
    assert base.tolist() == [348, 342, 348, 344]
    assert host0(moved, step.ids, src).tolist() == [343, 332, 336, 337]
    for seed in (1, 2):  # (d) host 0 reshuffled again
        assert np.array_equal(shuffled_host(plc, step.ids, src, seed=seed).relay.nic_in(),
                              decode_traffic(plc, route_to_slots(plc, step.ids, src), src,
                                             "relay").nic_in())
    assert exercise("05.3").expected() == "c" and check("05.3", "c").ok
    assert "Section 4" in check("05.3", "d").message
