"""Fixed-vs-per-workload policy tables: the arithmetic on random tables, and the builders against
the simulators they call."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from uneven.ep.superpod import CoreCosts, best_split, scheme, superpod_traffic
from uneven.policies import (
    SERIAL_SPLIT,
    core_split_table,
    policy_table,
    transport_policy_table,
    warmup_policy_table,
)
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline

times = arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 6)),
               elements=st.floats(0.1, 10.0))


@given(t=times, criterion=st.sampled_from(["mean", "worst"]))
def test_table_arithmetic(t, criterion):
    pt = policy_table(t, [f"p{i}" for i in range(t.shape[0])],
                      [f"w{j}" for j in range(t.shape[1])], criterion=criterion)
    assert np.array_equal(pt.adaptive, t.min(axis=0))
    assert np.all(pt.ratio >= 1.0) and np.all(pt.loss >= -1e-15)
    score = pt.ratio.mean(axis=1) if criterion == "mean" else pt.ratio.max(axis=1)
    assert score[pt.fixed] == score.min()
    for j, i in enumerate(pt.best):
        assert t[i, j] == t[:, j].min()
    # a policy that is best everywhere is the best fixed one and loses nothing
    if np.all(pt.best == pt.best[0]):
        assert pt.fixed == pt.best[0] and np.allclose(pt.loss, 0.0)


def test_table_validation():
    with pytest.raises(ValueError, match="policies"):
        policy_table([[1.0]], ["a", "a"], ["w"])
    with pytest.raises(ValueError, match="times"):
        policy_table([[1.0, 0.0]], ["a"], ["w", "v"])
    with pytest.raises(ValueError, match="criterion"):
        policy_table([[1.0]], ["a"], ["w"], criterion="median")
    t = policy_table([[1.0]], ["a"], ["w"])
    with pytest.raises(ValueError, match="policy"):
        t.loss_of("b")


def test_warmup_table_matches_the_pipeline_simulator():
    d = {"healthy": [0.0, 0.0, 0.0], "30 ms on 0": [0.03, 0.0, 0.0], "30 ms on 2": [0.0, 0.0, 0.03]}
    t = warmup_policy_table(d, p=4, m=12, cap=None, baselines=("zb-h2",))
    zb = pipeline_schedule("zb-h2", 4, 12)
    for name, delays in d.items():
        # a plan run under its own profile is PipeMorph's re-plan
        want = simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=delays, mode="replan")
        assert t.time_of(f"plan for {name}", name) == pytest.approx(want.iteration_time)
        assert t.info[f"plan for {name}"] == want.warmups
        replay = simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=delays).iteration_time
        assert t.time_of("ZB-H2, planned healthy", name) == pytest.approx(replay)
    assert t.time_of("plan for 30 ms on 0", "30 ms on 0") < t.time_of("plan for healthy",
                                                                         "30 ms on 0")
    with pytest.raises(ValueError, match="profiles"):
        warmup_policy_table({"x": [0.0, 0.0]}, p=4, m=12)
    with pytest.raises(ValueError, match="baselines"):
        warmup_policy_table(d, p=4, m=12, baselines=("gpipe",))


def test_core_split_table_agrees_with_best_split():
    costs = CoreCosts(cores=8)
    t = core_split_table([(16, 4), (32, 64)], count_cores=range(1, 8), costs=costs)
    for j, (ep, tok) in enumerate(((16, 4), (32, 64))):
        traffic = superpod_traffic(ep, tokens_per_rank=tok, seed=0)
        k, lat = best_split(traffic, costs, scheme("ubep"))
        concurrent = t.times[:-1, j]
        assert concurrent.min() == pytest.approx(lat)
        assert t.policies[int(concurrent.argmin())] == f"count on {k}, send on {8 - k}"
    assert t.policies[-1] == SERIAL_SPLIT
    with pytest.raises(ValueError, match="count_cores"):
        core_split_table([(16, 4)], count_cores=(8,), costs=costs)


def test_transport_table_small():
    t = transport_policy_table([2, 32], n_steps=2, n_hosts=2)
    assert t.workloads == ("2 tokens/GPU", "32 tokens/GPU") and t.times.shape == (4, 2)
    assert np.all(t.times > 0)
    with pytest.raises(ValueError, match="batches"):
        transport_policy_table([4, 4])


@settings(max_examples=5, deadline=None)
@given(scale=st.floats(0.5, 4.0))
def test_scaling_every_time_keeps_the_choice(scale):
    t = np.array([[1.0, 3.0, 2.0], [2.0, 1.0, 2.5], [1.5, 1.5, 1.5]])
    a = policy_table(t, ["a", "b", "c"], ["x", "y", "z"])
    b = policy_table(t * scale, ["a", "b", "c"], ["x", "y", "z"])
    assert a.fixed == b.fixed and np.allclose(a.loss, b.loss)


def test_tables_are_checked_and_read_only():
    import dataclasses

    t = policy_table([[1.0, 4.0], [1.5, 2.0]], ["a", "b"], ["w1", "w2"], info={"a": (1, 2)})
    assert not t.times.flags.writeable and t.info == {"a": (1, 2)}
    for change, name in (({"times": [[1.0, 1j], [1.0, 1.0]]}, "times"),
                         ({"times": [[1.0, 0.0], [1.0, 1.0]]}, "times"),
                         ({"workloads": np.zeros((2, 2, 2))}, "workloads"),
                         ({"policies": ["a", 3]}, "policies"),
                         ({"info": {"c": 1}}, "info"),
                         ({"info": {"a": float("nan")}}, "info"),
                         ({"criterion": "median"}, "criterion")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(t, **change)
    mine = np.array([[1.0, 2.0], [2.0, 1.0]])
    policy_table(mine, ["a", "b"], ["x", "y"])
    assert mine.flags.writeable  # the caller's array is copied, not frozen


def test_builders_name_their_own_parameters():
    with pytest.raises(ValueError, match="workloads"):
        core_split_table([(1025, 4)])  # beyond the largest die superpod (1,024 dies)
    with pytest.raises(ValueError, match="workloads"):
        core_split_table([(512, 4096)])  # more than 2**20 tokens in all
    with pytest.raises(ValueError, match="options"):
        transport_policy_table([4], options={"x": {"mode": "teleport"}})
    with pytest.raises(ValueError, match="options"):
        transport_policy_table([4], options={"x": {"placement": "EPLB"}})
    with pytest.raises(ValueError, match="placement"):
        transport_policy_table([4], placement="random")
    with pytest.raises(ValueError, match="n_hosts"):
        transport_policy_table([4], n_hosts=3)  # 24 GPUs do not divide 256 experts
    d = {"healthy": [0.0, 0.0, 0.0]}
    with pytest.raises(ValueError, match="baselines"):
        warmup_policy_table(d, p=4, m=12, baselines=("1f1b", "1f1b"))
    with pytest.raises(ValueError, match="profiles"):
        warmup_policy_table({1: [0.0, 0.0, 0.0]}, p=4, m=12)
    with pytest.raises(ValueError, match="t_op"):
        warmup_policy_table({"x": [0.03, 0.0, 0.0]}, p=4, m=12, t_op=1e-300)
