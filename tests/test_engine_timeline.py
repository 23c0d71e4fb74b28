"""Timeline engine: hand cases, engine == reference on random DAGs, monotonicity, deadlocks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines._timeline_kernel import _reference_timeline
from uneven.engines.timeline import edges_to_csr, run_timeline

# --------------------------------------------------------------------------- hand cases


def test_chain_on_one_resource_runs_back_to_back():
    tl = run_timeline([1.0, 2.0, 3.0], [0, 0, 0])
    assert tl.start.tolist() == [0.0, 1.0, 3.0]
    assert tl.finish.tolist() == [1.0, 3.0, 6.0]
    assert tl.makespan == 6.0


def test_two_resources_with_a_delayed_edge():
    # op 2 on resource 1 needs op 0 plus 0.5 s; op 3 needs ops 1 and 2
    ptr, src, dly = edges_to_csr(4, src=[0, 1, 2], dst=[2, 3, 3], delay=[0.5, 0.0, 0.25])
    tl = run_timeline([1.0, 2.0, 1.0, 1.0], [0, 0, 1, 1], ptr, src, dly)
    assert tl.start.tolist() == [0.0, 1.0, 1.5, 3.0]  # op 3: max(3.0, 2.5 + 0.25, 2.5)
    assert tl.makespan == 4.0


def test_release_times_and_idle_resources():
    tl = run_timeline([1.0, 1.0], [0, 0], release=[2.0, 0.0])
    assert tl.start.tolist() == [2.0, 3.0]  # op 1 waits for op 0 in the fixed order


def test_sequence_sets_the_order_on_a_resource():
    tl = run_timeline([2.0, 1.0, 1.0], [0, 0, 0], sequence=[2, 0, 1])
    assert tl.start.tolist() == [2.0, 0.0, 1.0]


def test_empty_timeline():
    tl = run_timeline([], [])
    assert tl.makespan == 0.0 and tl.start.size == 0


def test_result_arrays_are_read_only():
    tl = run_timeline([1.0], [0])
    with pytest.raises(ValueError):
        tl.start[0] = 5.0


def test_edges_to_csr_groups_predecessors_by_destination():
    ptr, src, dly = edges_to_csr(3, src=[2, 0, 1], dst=[1, 2, 2], delay=[0.3, 0.1, 0.2])
    assert ptr.tolist() == [0, 0, 1, 3]
    assert src.tolist() == [2, 0, 1]
    assert dly.tolist() == [0.3, 0.1, 0.2]


# --------------------------------------------------------------------------- deadlocks


def test_cycle_across_two_resources_is_reported():
    ptr, src, dly = edges_to_csr(2, src=[0, 1], dst=[1, 0])
    with pytest.raises(ValueError, match="deadlock") as err:
        run_timeline([1.0, 1.0], [0, 1], ptr, src, dly, labels=["send", "recv"])
    assert "send (resource 0)" in str(err.value) and "recv (resource 1)" in str(err.value)


def test_cycle_through_the_fixed_order_is_reported():
    # op 0 runs before op 1 on resource 0, but op 0 needs op 2, which needs op 1
    ptr, src, dly = edges_to_csr(3, src=[2, 1], dst=[0, 2])
    with pytest.raises(ValueError, match=r"3 of 3 ops can never start") as err:
        run_timeline([1.0, 1.0, 1.0], [0, 0, 1], ptr, src, dly)
    msg = str(err.value)
    assert "earlier on the same resource" in msg and "stuck resources: [0, 1]" in msg


def test_ops_downstream_of_a_cycle_are_stuck_too():
    ptr, src, dly = edges_to_csr(3, src=[0, 1, 1], dst=[1, 0, 2])
    with pytest.raises(ValueError, match=r"3 of 3 ops"):
        run_timeline([1.0, 1.0, 1.0], [0, 1, 2], ptr, src, dly)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(duration=[-1.0], resource=[0]), "duration"),
        (dict(duration=[np.nan], resource=[0]), "duration"),
        (dict(duration=[1.0], resource=[-1]), "resource"),
        (dict(duration=[1.0, 1.0], resource=[0]), "resource"),
        (dict(duration=[1.0], resource=[0], dep_ptr=[0, 0]), "dep_ptr and dep_src"),
        (dict(duration=[1.0], resource=[0], dep_ptr=[0, 1], dep_src=[3]), "dep_src"),
        (dict(duration=[1.0], resource=[0], dep_ptr=[0, 2], dep_src=[0]), "dep_ptr"),
        (dict(duration=[1.0, 1.0], resource=[0, 1], dep_ptr=[0, 0], dep_src=[]), "dep_ptr"),
        (
            dict(duration=[1.0, 1.0], resource=[0, 1], dep_ptr=[0, 0, 1], dep_src=[0],
                 dep_delay=[-0.1]),
            "dep_delay",
        ),
        (dict(duration=[1.0], resource=[0], release=[-1.0]), "release"),
        (dict(duration=[1.0], resource=[0], sequence=[0, 1]), "sequence"),
        (dict(duration=[1.0], resource=[0], labels=["a", "b"]), "labels"),
    ],
)
def test_validation_names_the_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        run_timeline(**kwargs)


def test_edges_to_csr_validation():
    with pytest.raises(ValueError, match="dst"):
        edges_to_csr(2, src=[0], dst=[5])
    with pytest.raises(ValueError, match="delay"):
        edges_to_csr(2, src=[0], dst=[1], delay=[-1.0])
    with pytest.raises(ValueError, match="n_ops"):
        edges_to_csr(-1, src=[], dst=[])


# --------------------------------------------------------------------------- random DAGs


@st.composite
def random_dags(draw, max_ops=25):
    """Random acyclic instances: a hidden topological order decides both edges and orders."""
    n = draw(st.integers(1, max_ops))
    n_res = draw(st.integers(1, 4))
    rank = draw(st.permutations(range(n)))  # rank[i]: position of op i in a topological order
    resource = [draw(st.integers(0, n_res - 1)) for _ in range(n)]
    duration = [draw(st.floats(0.0, 5.0)) for _ in range(n)]
    release = [draw(st.sampled_from([0.0, 0.0, 1.0, 2.5])) for _ in range(n)]
    src, dst, dly = [], [], []
    for _ in range(draw(st.integers(0, 2 * n))):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if rank[a] < rank[b]:
            src.append(a)
            dst.append(b)
            dly.append(draw(st.floats(0.0, 3.0)))
    return dict(n=n, resource=resource, duration=duration, release=release, sequence=rank,
                src=src, dst=dst, delay=dly)


def _run(inst, duration=None, delay=None, release=None):
    duration = inst["duration"] if duration is None else duration
    delay = inst["delay"] if delay is None else delay
    release = inst["release"] if release is None else release
    ptr, src, dly = edges_to_csr(inst["n"], inst["src"], inst["dst"], delay)
    return run_timeline(duration, inst["resource"], ptr, src, dly, sequence=inst["sequence"],
                        release=release)


@settings(max_examples=150, deadline=None)
@given(random_dags())
def test_engine_equals_reference(inst):
    tl = _run(inst)
    deps = [[] for _ in range(inst["n"])]
    for a, b, d in zip(inst["src"], inst["dst"], inst["delay"], strict=True):
        deps[b].append((a, d))
    start, finish = _reference_timeline(inst["duration"], inst["resource"], deps,
                                        sequence=inst["sequence"], release=inst["release"])
    np.testing.assert_allclose(tl.start, start, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tl.finish, finish, rtol=1e-12, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(random_dags(), st.data())
def test_longer_durations_or_delays_never_finish_anything_sooner(inst, data):
    base = _run(inst)
    grow = st.floats(0.0, 2.0)
    duration = [d + data.draw(grow) for d in inst["duration"]]
    delay = [d + data.draw(grow) for d in inst["delay"]]
    release = [r + data.draw(grow) for r in inst["release"]]
    slower = _run(inst, duration, delay, release)
    assert np.all(slower.finish >= base.finish - 1e-12)
    assert np.all(slower.start >= base.start - 1e-12)


@settings(max_examples=60, deadline=None)
@given(random_dags(), st.data())
def test_a_back_edge_against_the_order_deadlocks(inst, data):
    # ops a before b on one resource; an edge b -> a closes a cycle
    by_res = {}
    for i in sorted(range(inst["n"]), key=lambda i: inst["sequence"][i]):
        by_res.setdefault(inst["resource"][i], []).append(i)
    pairs = [ops[:2] for ops in by_res.values() if len(ops) >= 2]
    if not pairs:
        return
    a, b = data.draw(st.sampled_from(pairs))
    inst = dict(inst, src=inst["src"] + [b], dst=inst["dst"] + [a], delay=inst["delay"] + [0.0])
    with pytest.raises(ValueError, match="deadlock"):
        _run(inst)
    deps = [[] for _ in range(inst["n"])]
    for s, d, w in zip(inst["src"], inst["dst"], inst["delay"], strict=True):
        deps[d].append((s, w))
    with pytest.raises(ValueError, match="deadlock"):
        _reference_timeline(inst["duration"], inst["resource"], deps, sequence=inst["sequence"])


def test_large_random_chain_matches_reference():
    rng = np.random.default_rng(0)
    n = 400
    resource = rng.integers(0, 8, n)
    duration = rng.uniform(0, 1, n)
    src = rng.integers(0, n, 3 * n)
    dst = rng.integers(0, n, 3 * n)
    keep = src < dst  # op id is a topological order; the default sequence is the op id
    src, dst = src[keep], dst[keep]
    dly = rng.uniform(0, 0.5, src.size)
    tl = run_timeline(duration, resource, *edges_to_csr(n, src, dst, dly))
    deps = [[] for _ in range(n)]
    for a, b, d in zip(src, dst, dly, strict=True):
        deps[b].append((int(a), float(d)))
    start, _ = _reference_timeline(duration.tolist(), resource.tolist(), deps)
    np.testing.assert_allclose(tl.start, start, rtol=1e-12, atol=1e-12)
