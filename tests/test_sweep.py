"""uneven.sweep: one table whoever runs it (in process, local processes, a Dask LocalCluster),
failures kept with their parameters, bad grids refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from uneven import sweep as sweep_fn
from uneven.sweep import MAX_POINTS, SweepWarning, sweep

pd = pytest.importorskip("pandas")

GRID = {"kind": ["1f1b", "zb-h1"], "p": [2, 4], "m": [4, 8, 16], "delay": [0.0, 0.005]}


def pipeline_point(kind, p, m, delay, seed):
    """A real library call plus a seeded draw: both must be reproduced exactly."""
    from uneven import pipeline_schedule, simulate_pipeline

    r = simulate_pipeline(pipeline_schedule(kind, p, m), 0.01, 0.02, 0.01 if "zb" in kind else 0,
                          delays=delay)
    return {"iteration_s": r.iteration_time, "bubble": float(r.bubble_fraction.mean()),
            "noise": float(np.random.default_rng(seed).random()), "ok": True}


def sometimes_fails(x, y):
    if x == 2 and y == "b":
        raise ZeroDivisionError("point (2, b) is bad")
    return x * 10.0


def warm():
    from uneven import pipeline_schedule, simulate_pipeline

    simulate_pipeline(pipeline_schedule("1f1b", 2, 2), 0.01, 0.02)


@pytest.fixture(scope="module")
def in_process():
    return sweep(pipeline_point, GRID, processes=1, progress=False)


def test_the_doc_example_is_re_exported():
    assert sweep_fn is sweep


def test_table_layout_and_values(in_process):
    t = in_process
    assert list(t.columns) == ["kind", "p", "m", "delay", "seed", "iteration_s", "bubble",
                               "noise", "ok", "error"]
    assert len(t) == 2 * 2 * 3 * 2
    # the last key varies fastest, as itertools.product
    assert t["delay"].tolist()[:2] == [0.0, 0.005] and t["m"].tolist()[:4] == [4, 4, 8, 8]
    assert (t["error"] == "").all() and t["ok"].all()
    one = t[(t.kind == "1f1b") & (t.p == 4) & (t.m == 8) & (t.delay == 0.0)].iloc[0]
    assert one.iteration_s == pytest.approx((8 + 4 - 1) * 0.03)  # (m + p - 1)(F + B)
    assert t["seed"].nunique() == len(t)


def test_local_processes_give_the_same_table(in_process):
    t = sweep(pipeline_point, GRID, processes=2, chunk_size=5, setup=warm, progress=False)
    pd.testing.assert_frame_equal(t, in_process)


def test_dask_local_cluster_gives_the_same_table(in_process):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        t = sweep(pipeline_point, GRID, client=client, chunk_size=7, setup=warm, progress=False)
        pd.testing.assert_frame_equal(t, in_process)
        # a failure on a worker is reported the same way
        with pytest.warns(SweepWarning, match=r"1 of 6 points failed.*'x': 2, 'y': 'b'"):
            f = sweep(sometimes_fails, {"x": [1, 2, 3], "y": ["a", "b"]}, client=client,
                      chunk_size=2, progress=False)
    assert f["error"].tolist()[3] == "ZeroDivisionError: point (2, b) is bad"


def test_a_failing_point_keeps_its_parameters_and_the_other_results():
    with pytest.warns(SweepWarning, match=r"1 of 6 points failed.*'x': 2, 'y': 'b'"):
        t = sweep(sometimes_fails, {"x": [1, 2, 3], "y": ["a", "b"]}, processes=2,
                  chunk_size=2, progress=False)
    assert t["x"].tolist() == [1, 1, 2, 2, 3, 3] and t["y"].tolist() == ["a", "b"] * 3
    assert math.isnan(t["result"][3]) and t["error"][3].startswith("ZeroDivisionError")
    assert t["result"].drop(index=3).tolist() == [10.0, 10.0, 20.0, 30.0, 30.0]
    assert (t["error"].drop(index=3) == "").all()


def test_numpy_table_without_pandas_matches_the_dataframe(in_process):
    arr = sweep(pipeline_point, GRID, processes=1, table="numpy", progress=False)
    assert arr.dtype.names == tuple(in_process.columns)
    for name in arr.dtype.names:
        assert arr[name].tolist() == in_process[name].tolist()


def test_list_of_dicts_and_one_number_results():
    t = sweep(lambda a, b: a + b, [{"a": 1, "b": 2}, {"b": 5, "a": 3}], processes=1,
              progress=False)
    assert list(t.columns) == ["a", "b", "result", "error"]  # lambda takes no seed
    assert t["result"].tolist() == [3, 8]


def test_results_may_differ_between_points_and_clash_with_parameters():
    def f(x):
        return {"x": x * 2, "odd": 1.0} if x % 2 else {"x": x * 2}

    t = sweep(f, {"x": [1, 2]}, processes=1, progress=False)
    assert list(t.columns) == ["x", "x_result", "odd", "error"]
    assert t["odd"].tolist()[0] == 1.0 and math.isnan(t["odd"].tolist()[1])


def test_non_scalar_results_fail_that_point_only():
    def f(x):
        return {"v": np.arange(x)} if x else {"v": 1.0}

    with pytest.warns(SweepWarning):
        t = sweep(f, {"x": [0, 2]}, processes=1, progress=False)
    assert t["v"].tolist()[0] == 1.0 and "scalars" in t["error"][1]


def test_seeds_depend_on_the_sweep_seed_and_the_point_only():
    def draw(i, seed):
        return float(np.random.default_rng(seed).random())

    a = sweep(draw, {"i": list(range(6))}, seed=3, processes=1, progress=False)
    b = sweep(draw, {"i": list(range(6))}, seed=3, processes=2, chunk_size=4, progress=False)
    c = sweep(draw, {"i": list(range(6))}, seed=4, processes=1, progress=False)
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a["result"], c["result"])
    # a seed set by the grid is used as given
    d = sweep(draw, {"i": [0], "seed": [11]}, processes=1, progress=False)
    assert d["result"][0] == np.random.default_rng(11).random()


def test_writes_csv_and_parquet(tmp_path, in_process):
    csv_path = tmp_path / "out.csv"
    sweep(pipeline_point, GRID, processes=1, progress=False, path=csv_path)
    back = pd.read_csv(csv_path, keep_default_na=False)
    assert back["iteration_s"].tolist() == in_process["iteration_s"].tolist()
    pytest.importorskip("pyarrow")
    pq = tmp_path / "out.parquet"
    sweep(pipeline_point, GRID, processes=1, progress=False, path=pq)
    pd.testing.assert_frame_equal(pd.read_parquet(pq), in_process)
    np_csv = tmp_path / "np.csv"
    sweep(pipeline_point, GRID, processes=1, progress=False, table="numpy", path=np_csv)
    assert pd.read_csv(np_csv, keep_default_na=False).equals(back)


@pytest.mark.parametrize("grid, match", [
    ({}, "at least one parameter"),
    ([], "at least one point"),
    ({"p": []}, "at least one value"),
    ({"p": 3}, "list of values"),
    ({"p": "abc"}, "list of values"),
    ({"p": [[1, 2]]}, "number, a bool"),
    ({"p": np.ones((2, 2))}, "1-d"),
    ({1: [1]}, "parameter names"),
    ({"not a name": [1]}, "parameter names"),
    ({"error": [1]}, "must not be 'error'"),
    ([{"p": 1}, {"q": 2}], "same keys"),
    ([{"p": 1}, 5], "non-empty dict"),
    ("p=1", "dict of lists or a list of dicts"),
    ({"a": list(range(10**4)), "b": list(range(10**4))}, "at most"),
])
def test_bad_grids_are_refused(grid, match):
    with pytest.raises(ValueError, match=match):
        sweep(lambda **k: 0.0, grid, processes=1, progress=False)
    assert MAX_POINTS == 10**7


@pytest.mark.parametrize("kwargs, match", [
    ({"fn": 5}, "fn must be a callable"),
    ({"client": "tcp://x"}, "client must be"),
    ({"processes": 0}, "processes"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"seed": -1}, "seed"),
    ({"table": "excel"}, "table"),
    ({"path": "out.xlsx"}, r"\.csv or \.parquet"),
    ({"path": "/no/such/dir/x.csv"}, "existing folder"),
    ({"progress": 1}, "progress"),
    ({"setup": 3}, "setup"),
])
def test_bad_arguments_are_refused(kwargs, match):
    args = {"fn": lambda x: x, "grid": {"x": [1]}, "processes": 1, "progress": False, **kwargs}
    with pytest.raises(ValueError, match=match):
        sweep(**args)


def test_progress_bar_does_not_change_the_table():
    pytest.importorskip("tqdm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tqdm's notebook detection
        t = sweep(lambda x: x + 1, {"x": list(range(5))}, processes=1, progress=True)
    assert t["result"].tolist() == [1, 2, 3, 4, 5]


def _bad_setup():
    raise OSError("no cache here")


def _dies(x):
    import os

    if x == 1:
        os._exit(3)  # the worker process dies mid-chunk
    return float(x)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_failing_setup_is_raised_with_its_reason(processes):
    with pytest.raises(RuntimeError, match="setup failed.*OSError: no cache here"):
        sweep(lambda x: x, {"x": [1, 2, 3]}, processes=processes, chunk_size=1, setup=_bad_setup,
              progress=False)


def test_a_dead_worker_fails_its_points_not_the_sweep():
    with pytest.warns(SweepWarning, match="worker lost"):
        t = sweep(_dies, {"x": [0, 1]}, processes=2, chunk_size=1, progress=False)
    assert t["error"][1].startswith("worker lost")
