"""Issue 9, row by row: every reproduction of the table now ends in a named ValueError (or the
right answer), plus the pieces behind the fixes: size budgets, checked frozen dataclasses,
read-only arrays, validators that refuse bools, huge integers and complex numbers, and closed
forms that replaced loops (each checked against the loop it replaced)."""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven import limits
from uneven._validate import as_float_array, as_int_array, check_choice, check_int, check_real
from uneven.collectives import all_to_all
from uneven.engines.fluid import simulate_fluid
from uneven.engines.linkload import link_loads
from uneven.engines.timeline import run_timeline
from uneven.ep.model import decode_tpot_bound, deepep_benchmark, ep_phase, ep_round, route_ep_group
from uneven.ep.routing import expected_distinct_groups, synthetic_gate_scores
from uneven.ep.traffic import ep_dispatch_traffic
from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import (
    pipeline_schedule,
    replan_warmups,
    simulate_pipeline,
)
from uneven.topology import cluster, h800_cluster, superpod
from uneven.workloads import gaussian_delay_trace, sequence_lengths, token_share_above


def _named(match):
    return pytest.raises(ValueError, match=match)


def _in_subprocess(code):
    """Run ``code`` in a fresh interpreter (a regression to a segfault must not kill pytest)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)


# --------------------------------------------------------------------------- rows 1-2: crashes


def test_row1_schedules_that_do_not_fit_are_refused_not_simulated_out_of_bounds():
    out = _in_subprocess(
        "import dataclasses\n"
        "from uneven.schedulers.pipeline import *\n"
        "for make in (lambda: PipelineSchedule('1f1b', 4, 8, 1, (100,) * 4, False, False),\n"
        "             lambda: dataclasses.replace(pipeline_schedule('1f1b', 8, 64), m=2)):\n"
        "    try:\n"
        "        simulate_pipeline(make(), 1.0, 2.0)\n"
        "    except ValueError as err:\n"
        "        print('ValueError', str(err)[:40])\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("ValueError warmups") == 2


def test_row2_topologies_replaced_with_other_nodes_are_refused():
    out = _in_subprocess(
        "import dataclasses, numpy as np\n"
        "from uneven.topology import h800_cluster\n"
        "from uneven.engines.linkload import link_loads\n"
        "for n in (100_000, 64):\n"
        "    try:\n"
        "        h = dataclasses.replace(h800_cluster(2), n_nodes=n)\n"
        "        link_loads(h, np.arange(0, 800000, 997), np.arange(0, 800000, 997), 1.0)\n"
        "    except ValueError as err:\n"
        "        print('ValueError', str(err)[:20])\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("ValueError n_nodes=") == 2


# --------------------------------------------------------------------------- rows 3-16


def test_row3_capacities_are_read_only_and_checked_on_replace():
    t = h800_cluster(2)
    with pytest.raises(ValueError, match="read-only"):
        t.capacity[:] = np.nan
    for bad in (np.nan, -1.0, 0.0):
        with _named("capacity"):
            dataclasses.replace(t, capacity=np.full(t.n_links, bad))
    assert all_to_all(t, 1e6).time > 0


def test_row4_no_hangs_from_one_big_parameter():
    with _named("p must be an integer in"):
        pipeline_schedule("1f1b", 10**9, 8)
    assert expected_distinct_groups(10**7, 10, 10**6) == pytest.approx(10.0)
    assert replan_warmups([1.0, 0, 0], t_f=1e-9, cap=10**9) == (10**9, 3, 2, 1)


@pytest.mark.parametrize("call, name", [
    (lambda: ep_dispatch_traffic([[0, 1]], [0], [0, 12000], 8, 1.0), "expert_gpu"),
    (lambda: simulate_pipeline(pipeline_schedule("1f1b", 3000, 3000), 1.0, 2.0), "schedule"),
    (lambda: all_to_all(h800_cluster(1_250_000), 1.0), "topo"),
])
def test_row5_big_allocations_are_refused_before_allocating(call, name):
    with pytest.raises(ValueError) as err:
        call()
    msg = str(err.value)
    assert msg.startswith(name) and "needs about" in msg and "UNEVEN_MAX_BYTES" in msg


def test_row5_sparse_resource_ids_cost_nothing():
    tl = run_timeline([1.0, 1.0], [0, 10**8])
    assert tl.makespan == 1.0 and tl.resource.tolist() == [0, 10**8]


@pytest.mark.parametrize("call, name", [
    (lambda: check_real("x", 10**400), "x"),
    (lambda: cluster(2**64, nvlink_bw=1e9, nic_bw=1e9), "n_nodes"),
    (lambda: replan_warmups([1e20], t_f=1e-3), "delays"),
    (lambda: decode_tpot_bound(1e9, tokens=10**400), "tokens"),
])
def test_row6_huge_integers_give_named_errors_not_overflow(call, name):
    with _named(name):
        call()


def test_row7_times_beyond_a_float_are_refused():
    with _named("t_f, t_b, t_w"):
        simulate_pipeline(pipeline_schedule("zb-h2", 4, 8), 1e308, 1.0, 1.0)


def test_row8_degenerate_fluid_capacities_are_refused():
    with _named("capacity"):
        simulate_fluid([0, 1, 2], [0, 0], [5e-324], [1.0, 1.0])
    with _named("weight"):
        simulate_fluid([0, 1], [0], [1e-300], [1.0], weight=[1e30])


def test_row9_wrong_objects_and_out_of_range_ids_are_named():
    traffic = ep_dispatch_traffic([[0, 1]], [0], [0, 8], 8, 1.0)
    with _named("topo"):
        ep_phase(None, traffic)
    with _named("change_every"):
        gaussian_delay_trace(10, 3, change_every=(5,))
    with _named("src"):
        h800_cluster(2).path_latency(-1, -1)


def test_row10_bools_are_not_integers():
    with _named("n_nodes"):
        cluster(True, nvlink_bw=1e9, nic_bw=1e9)
    for bad in (True, np.bool_(False)):
        with _named("p"):
            check_int("p", bad)
    with _named("ids"):
        as_int_array("ids", [True, False])
    with _named("layers"):
        check_choice("layers", True, (1, 2, 3))


def test_row11_unvalidated_and_wrapping_inputs():
    with _named("lengths"):
        token_share_above([-5, 10], 1)
    with _named("max_len"):
        sequence_lengths(50, max_len=10**30, tail_fraction=1, tail_index=0.01)
    lengths = sequence_lengths(50, max_len=2**62, tail_fraction=1, tail_index=0.01)
    assert lengths.min() >= 128 and lengths.max() <= 2**62


def test_row12_large_skew_gives_scores_not_nan():
    s = synthetic_gate_scores(64, 256, skew=250)
    assert np.isfinite(s).all() and s.min() >= 0.0 and s.max() <= 1.0


def test_row13_mismatched_node_layouts_are_refused():
    with _named("routing was made for 4 nodes of 4 GPUs"):
        ep_round(h800_cluster(2), route_ep_group(4, 64, gpus_per_node=4))


def test_row14_complex_bytes_are_refused():
    with _named("nbytes"):
        link_loads(h800_cluster(2), [0], [9], nbytes=[1e6 + 5j])
    with _named("nbytes"):
        link_loads(h800_cluster(2), [0], [9], nbytes=np.array([1e6 + 0j]))


@pytest.mark.parametrize("call, name", [
    (lambda: superpod(2, npu_bw=1e9, hop_latency=None), "hop_latency"),
    (lambda: cluster(2, nvlink_bw=1e9, nic_bw=1e9, sources="abc"), "sources"),
    (lambda: deepep_benchmark(ep_sizes=16), "ep_sizes"),
    (lambda: link_loads(h800_cluster(2), [0], [9], [1.0]).grid("npu_out"), "kind"),
    (lambda: link_loads(h800_cluster(2), [0], [9], [1.0]).grid("node_up"), "kind"),
])
def test_row15_errors_name_the_parameter(call, name):
    with _named(name):
        call()


def test_row15_negative_zero_std_is_zero():
    trace = gaussian_delay_trace(10, 3, std=-0.0, slow_fraction=1.0)
    assert np.all(trace == trace[0, 0]) or np.unique(trace).size <= 10


# --------------------------------------------------------------------------- budgets


def test_budgets_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("UNEVEN_MAX_BYTES", "1MiB")
    assert limits.max_bytes() == 2**20
    with pytest.raises(ValueError) as err:
        sequence_lengths(10**6)
    msg = str(err.value)
    for part in ("n=1000000", "needs about", "1 MiB", "UNEVEN_MAX_BYTES"):
        assert part in msg
    monkeypatch.setenv("UNEVEN_MAX_BYTES", "lots")
    with _named("UNEVEN_MAX_BYTES"):
        limits.max_bytes()
    monkeypatch.delenv("UNEVEN_MAX_BYTES")
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "200000")
    with _named("schedule.*UNEVEN_MAX_STEPS"):
        simulate_pipeline(pipeline_schedule("greedy", 32, 64), 1.0, 1.0, 1.0)
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "1")  # below the floor: the floor applies
    assert limits.max_steps() == limits.MIN_STEPS


def test_huge_zero_copy_views_are_refused_before_copying():
    view = np.broadcast_to(1.0, (2**40,))
    with _named("size"):
        simulate_fluid([0, 1], [0], [1.0], view)
    with _named("x"):
        as_float_array("x", view)


# --------------------------------------------------------------------------- checked dataclasses


def test_frozen_results_are_checked_and_read_only():
    r = simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 1.0, 2.0)
    with pytest.raises(ValueError, match="read-only"):
        r.start[0] = -1.0
    with _named("iteration_time"):
        dataclasses.replace(r, iteration_time=math.nan)
    with _named("busy"):
        dataclasses.replace(r, busy=np.ones(3))
    f = simulate_fluid([0, 1], [0], [1.0], [1.0])
    with _named("finish"):
        dataclasses.replace(f, finish=[np.inf])
    with pytest.raises(ValueError, match="read-only"):
        f.fct[0] = 0.0


@pytest.mark.parametrize("changes, name", [
    ({"kind": "zb-h1"}, "split_backward"), ({"p": 5}, "warmups"), ({"memory": 3}, "memory"),
    ({"split_backward": True}, "split_backward"), ({"v": 2}, "v"),
])
def test_schedules_are_checked_on_replace(changes, name):
    with _named(name):
        dataclasses.replace(pipeline_schedule("1f1b", 4, 8), **changes)


# --------------------------------------------------------------------------- closed forms


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(2, 40), min_size=1, max_size=7),
       st.lists(st.sampled_from([0.0, 0.01, 0.02, 0.05]), min_size=7, max_size=7),
       st.integers(0, 120))
def test_share_slack_closed_form_equals_one_unit_at_a_time(want, delays, units):
    want = np.array(want, dtype=np.int64)
    c = np.array(delays[: want.size])
    got = P._share_slack(want, c, units)
    assert got.tolist() == P._reference_share_slack(want, c, units).tolist()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.data())
def test_expected_distinct_groups_matches_exact_binomials(n_groups, data):
    per = data.draw(st.integers(1, 8))
    n = n_groups * per
    k = data.draw(st.integers(1, n))
    exact = n_groups * (1 - math.comb(n - per, k) / math.comb(n, k))
    assert expected_distinct_groups(n, n_groups, k) == pytest.approx(exact, rel=1e-12, abs=1e-12)
