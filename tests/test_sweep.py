"""uneven.sweep: one table whoever runs it (in process, local processes, a Dask LocalCluster),
failures kept with their parameters, bad grids refused."""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from uneven import grid_sweep as sweep_fn
from uneven.sweep import MAX_POINTS, SweepWarning, grid_sweep

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
    return grid_sweep(pipeline_point, GRID, processes=1, progress=False)


def test_the_doc_example_is_re_exported():
    assert sweep_fn is grid_sweep


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
    t = grid_sweep(pipeline_point, GRID, processes=2, chunk_size=5, setup=warm, progress=False)
    pd.testing.assert_frame_equal(t, in_process)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_dask_local_cluster_gives_the_same_table(in_process, dask_client):
    client = dask_client
    t = grid_sweep(pipeline_point, GRID, client=client, chunk_size=7, setup=warm, progress=False)
    pd.testing.assert_frame_equal(t, in_process)
    # a failure on a worker is reported the same way
    with pytest.warns(SweepWarning, match=r"1 of 6 points failed.*'x': 2, 'y': 'b'"):
        f = grid_sweep(sometimes_fails, {"x": [1, 2, 3], "y": ["a", "b"]}, client=client,
                  chunk_size=2, progress=False)
    assert f["error"].tolist()[3] == "ZeroDivisionError: point (2, b) is bad"


def test_a_failing_point_keeps_its_parameters_and_the_other_results():
    with pytest.warns(SweepWarning, match=r"1 of 6 points failed.*'x': 2, 'y': 'b'"):
        t = grid_sweep(sometimes_fails, {"x": [1, 2, 3], "y": ["a", "b"]}, processes=2,
                  chunk_size=2, progress=False)
    assert t["x"].tolist() == [1, 1, 2, 2, 3, 3] and t["y"].tolist() == ["a", "b"] * 3
    assert math.isnan(t["result"][3]) and t["error"][3].startswith("ZeroDivisionError")
    assert t["result"].drop(index=3).tolist() == [10.0, 10.0, 20.0, 30.0, 30.0]
    assert (t["error"].drop(index=3) == "").all()


def test_numpy_table_without_pandas_matches_the_dataframe(in_process):
    arr = grid_sweep(pipeline_point, GRID, processes=1, table="numpy", progress=False)
    assert arr.dtype.names == tuple(in_process.columns)
    for name in arr.dtype.names:
        assert arr[name].tolist() == in_process[name].tolist()


def test_list_of_dicts_and_one_number_results():
    t = grid_sweep(lambda a, b: a + b, [{"a": 1, "b": 2}, {"b": 5, "a": 3}], processes=1,
              progress=False)
    assert list(t.columns) == ["a", "b", "result", "error"]  # lambda takes no seed
    assert t["result"].tolist() == [3, 8]


def test_results_may_differ_between_points_and_clash_with_parameters():
    def f(x):
        return {"x": x * 2, "odd": 1.0} if x % 2 else {"x": x * 2}

    t = grid_sweep(f, {"x": [1, 2]}, processes=1, progress=False)
    assert list(t.columns) == ["x", "x_result", "odd", "error"]
    assert t["odd"].tolist()[0] == 1.0 and math.isnan(t["odd"].tolist()[1])


def test_non_scalar_results_fail_that_point_only():
    def f(x):
        return {"v": np.arange(x)} if x else {"v": 1.0}

    with pytest.warns(SweepWarning):
        t = grid_sweep(f, {"x": [0, 2]}, processes=1, progress=False)
    assert t["v"].tolist()[0] == 1.0 and "scalars" in t["error"][1]


def test_seeds_depend_on_the_sweep_seed_and_the_point_only():
    def draw(i, seed):
        return float(np.random.default_rng(seed).random())

    a = grid_sweep(draw, {"i": list(range(6))}, seed=3, processes=1, progress=False)
    b = grid_sweep(draw, {"i": list(range(6))}, seed=3, processes=2, chunk_size=4, progress=False)
    c = grid_sweep(draw, {"i": list(range(6))}, seed=4, processes=1, progress=False)
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a["result"], c["result"])
    # a seed set by the grid is used as given
    d = grid_sweep(draw, {"i": [0], "seed": [11]}, processes=1, progress=False)
    assert d["result"][0] == np.random.default_rng(11).random()


def test_writes_csv_and_parquet(tmp_path, in_process):
    csv_path = tmp_path / "out.csv"
    grid_sweep(pipeline_point, GRID, processes=1, progress=False, path=csv_path)
    back = pd.read_csv(csv_path, keep_default_na=False)
    assert back["iteration_s"].tolist() == in_process["iteration_s"].tolist()
    pytest.importorskip("pyarrow")
    pq = tmp_path / "out.parquet"
    grid_sweep(pipeline_point, GRID, processes=1, progress=False, path=pq)
    pd.testing.assert_frame_equal(pd.read_parquet(pq), in_process)
    np_csv = tmp_path / "np.csv"
    grid_sweep(pipeline_point, GRID, processes=1, progress=False, table="numpy", path=np_csv)
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
        grid_sweep(lambda **k: 0.0, grid, processes=1, progress=False)
    assert MAX_POINTS == 10**7


class _Calls:
    """Counts calls across the refusal tests: a refused grid must call fn zero times."""
    n = 0


def _two_params(p, m, hol=False):
    _Calls.n += 1
    return p + m


@pytest.mark.parametrize("fn, grid, match", [
    (_two_params, {"p": [1], "mm": [2]}, r"grid keys \['mm'\] are not parameters of "
                                         r"_two_params.*'mm': did you mean 'm'\?"),
    (_two_params, {"p": [1], "m": [2], "HOL": [True]}, r"\['HOL'\].*did you mean 'hol'"),
    (_two_params, {"p": [1], "m": [2], "zzz": [1]}, r"\['zzz'\] are not parameters"),
    (_two_params, [{"p": 1, "q": 2}], r"\['q'\] are not parameters"),
    (_two_params, {"p": [1, 2]}, r"without a default; missing \['m'\]"),
    (lambda *a: 0, {"x": [1]}, r"\['x'\] are not parameters"),
])
def test_a_grid_key_fn_does_not_take_is_refused_before_any_point_runs(fn, grid, match):
    _Calls.n = 0
    with pytest.raises(ValueError, match=match):
        grid_sweep(fn, grid, processes=1, progress=False)
    assert _Calls.n == 0


def test_keys_are_free_for_kwargs_and_a_seed_need_not_be_in_the_grid():
    t = grid_sweep(lambda **k: len(k), {"anything": [1]}, processes=1, progress=False,
                   table="numpy")
    assert t["result"].tolist() == [2]  # anything and its seed
    t = grid_sweep(lambda x, seed: x, {"x": [3]}, processes=1, progress=False, table="numpy")
    assert t["result"].tolist() == [3]


def test_the_module_documents_itself_and_the_old_names_still_work():
    import pydoc

    import uneven
    import uneven.ep as ep
    import uneven.schedulers.pipeline as pipeline

    assert "one function over a grid" in pydoc.render_doc(uneven.sweep)
    assert uneven.sweep.grid_sweep is uneven.grid_sweep
    for old, new in [(lambda: uneven.sweep.sweep, uneven.grid_sweep),
                     (lambda: pipeline.delay_sweep, pipeline.delay_scan),
                     (lambda: pipeline.DelaySweep, pipeline.DelayScan),
                     (lambda: ep.deepep_sweep, ep.deepep_benchmark)]:
        with pytest.warns(DeprecationWarning, match="is now"):
            assert old() is new
    with pytest.warns(DeprecationWarning, match="now uneven.grid_sweep"):
        t = uneven.sweep(lambda x: 2 * x, {"x": [1, 2]}, processes=1, progress=False,
                         table="numpy")
    assert t["result"].tolist() == [2, 4]


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
    ({"timeout": 0}, "timeout"),
    ({"timeout": -1.0}, "timeout"),
    ({"timeout": math.nan}, "timeout"),
    ({"timeout": math.inf}, "timeout"),
    ({"timeout": 1e8}, "timeout"),
    ({"timeout": "soon"}, "timeout"),
    ({"timeout": "3 GB"}, "timeout"),
    ({"timeout": True}, "timeout"),
])
def test_bad_arguments_are_refused(kwargs, match):
    args = {"fn": lambda x: x, "grid": {"x": [1]}, "processes": 1, "progress": False, **kwargs}
    with pytest.raises(ValueError, match=match):
        grid_sweep(**args)


def test_progress_bar_does_not_change_the_table():
    pytest.importorskip("tqdm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tqdm's notebook detection
        t = grid_sweep(lambda x: x + 1, {"x": list(range(5))}, processes=1, progress=True)
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
        grid_sweep(lambda x: x, {"x": [1, 2, 3]}, processes=processes, chunk_size=1,
                   setup=_bad_setup, progress=False)


def test_a_dead_worker_fails_its_points_not_the_sweep():
    with pytest.warns(SweepWarning, match="worker lost"):
        t = grid_sweep(_dies, {"x": [0, 1]}, processes=2, chunk_size=1, progress=False)
    assert t["error"][1].startswith("worker lost")


# --------------------------------------------------------------------------- nothing is lost


@pytest.mark.parametrize("table", ["numpy", "pandas"])
def test_a_result_never_overwrites_another_column(tmp_path, table):
    # the reproducer: result 'p' would go to 'p_result', which result 'p_result' holds
    path = tmp_path / "t.csv"
    with pytest.warns(SweepWarning, match=r"result 'p' is in column 'p_result2'.*'p_result'"):
        t = grid_sweep(lambda p: {"p_result": 1.0, "p": 2.0}, {"p": [1]}, processes=1, table=table,
                  progress=False, path=path)
    names = t.dtype.names if table == "numpy" else tuple(t.columns)
    assert names == ("p", "p_result", "p_result2", "error")
    assert (t["p"][0], t["p_result"][0], t["p_result2"][0]) == (1, 1.0, 2.0)
    back = pd.read_csv(path, keep_default_na=False)
    assert tuple(back.columns) == names and back.iloc[0].tolist() == [1, 1.0, 2.0, ""]
    if table == "pandas" and _have_pyarrow():
        pq = tmp_path / "t.parquet"
        with pytest.warns(SweepWarning, match="'p_result2'"):
            t = grid_sweep(lambda p: {"p_result": 1.0, "p": 2.0}, {"p": [1]}, processes=1,
                      progress=False, path=pq)
        pd.testing.assert_frame_equal(pd.read_parquet(pq), t)

    # a parameter named like the suffixed column keeps its values, and so does the seed
    def f(x, x_result, seed):
        return {"x": -1.0, "seed": -2.0, "seed_result": -3.0}

    with pytest.warns(SweepWarning) as record:
        t = grid_sweep(f, {"x": [1, 2], "x_result": [5]}, processes=1, table=table, progress=False)
    names = t.dtype.names if table == "numpy" else tuple(t.columns)
    assert names == ("x", "x_result", "seed", "x_result2", "seed_result2", "seed_result", "error")
    assert list(t["x"]) == [1, 2] and list(t["x_result"]) == [5, 5]
    assert list(t["x_result2"]) == [-1.0, -1.0] and list(t["seed_result2"]) == [-2.0, -2.0]
    assert list(t["seed_result"]) == [-3.0, -3.0] and len(set(t["seed"])) == 2
    assert sorted(str(w.message).split(":")[1] for w in record) == [
        " result 'seed' is in column 'seed_result2'", " result 'x' is in column 'x_result2'"]


def _have_pyarrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _draw(i, seed):
    return float(np.random.default_rng(seed).random())


def _dies_at_3(i, seed):
    if i == 3:
        os._exit(3)  # the worker process dies mid-chunk
    return _draw(i, seed)


def _no_children():
    """No worker process of a sweep is left (each was reaped, so none is a zombie either); the
    module's Dask cluster has processes of its own."""
    return [p for p in multiprocessing.active_children()
            if p.name == "uneven-sweep-worker"] == []


@pytest.mark.parametrize("chunk_size", [1, 3, 4])
def test_a_point_that_kills_its_worker_fails_alone(chunk_size):
    # 3: the dead worker's chunk is [3, 4, 5] (4 and 5 had not started); 4: it is [0, 1, 2, 3]
    # (0-2 had run, their results not sent yet, so they run again)
    grid = {"i": list(range(8))}
    with pytest.warns(SweepWarning, match=r"1 of 8 points failed.*'i': 3.*worker lost.*died"):
        t = grid_sweep(_dies_at_3, grid, processes=2, chunk_size=chunk_size, progress=False)
    assert t["error"][3] == ("worker lost: the worker process died while running this point "
                             "(exit code 3)")
    assert math.isnan(t["result"][3])
    # every other point ran (the rest of the dead worker's chunk on a fresh one), in grid
    # order, with the seeds and results of an in-process run
    ref = grid_sweep(_draw, grid, processes=1, progress=False)
    keep = t.index != 3
    pd.testing.assert_frame_equal(t[keep], ref[keep])
    assert _no_children()


def _kills_odd(i):
    if i % 2:
        os.kill(os.getpid(), signal.SIGKILL) if i == 1 else os._exit(1)
    return float(i)


def test_points_that_kill_every_worker_they_touch_fail_and_do_not_loop():
    with pytest.warns(SweepWarning, match="3 of 6 points failed"):
        t = grid_sweep(_kills_odd, {"i": list(range(6))}, processes=2, chunk_size=2, progress=False)
    assert t["result"].tolist()[::2] == [0.0, 2.0, 4.0] and (t["error"][::2] == "").all()
    assert t["error"][1].endswith("(killed by signal 9, SIGKILL)")
    assert t["error"][3].endswith("(exit code 1)") and t["error"][5].endswith("(exit code 1)")
    with pytest.warns(SweepWarning, match="4 of 4 points failed"):
        t = grid_sweep(lambda i: os._exit(2), {"i": list(range(4))}, processes=2, progress=False)
    assert t["error"].str.startswith("worker lost").all()
    assert _no_children()


def _setup_dies():
    os._exit(4)


def test_a_setup_that_kills_its_worker_is_raised_not_retried():
    with pytest.raises(RuntimeError, match=r"setup failed.*died before its first point.*code 4"):
        grid_sweep(lambda x: x, {"x": [1, 2, 3]}, processes=2, chunk_size=1, setup=_setup_dies,
              progress=False)
    assert _no_children()


def _sleeps_at_1(x, pid_dir):
    if x == 1:
        Path(pid_dir, "pid").write_text(str(os.getpid()))
        time.sleep(300)  # far beyond the timeout: only the timeout can end this point
    return float(x)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_point_over_the_timeout_fails_and_its_worker_is_stopped(tmp_path, processes):
    grid = {"x": [0, 1, 2, 3], "pid_dir": [str(tmp_path)]}
    with pytest.warns(SweepWarning, match=r"1 of 4 points failed.*'x': 1.*TimeoutError"):
        t = grid_sweep(_sleeps_at_1, grid, processes=processes, chunk_size=3, timeout=0.5,
                  progress=False)
    assert t["error"][1] == ("TimeoutError: still running after timeout=0.5 s; its worker "
                             "process was stopped")
    # point 2 came after the sleeper in its chunk: it ran on a fresh worker
    assert t["result"].tolist()[::2] == [0.0, 2.0] and t["result"][3] == 3.0
    assert (t["error"].drop(index=1) == "").all()
    assert _no_children()
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "pid").read_text()), 0)  # the sleeper is gone, not orphaned


@pytest.mark.parametrize("timeout", [3600, "1 min"])
def test_a_timeout_does_not_change_the_table_of_quick_points(in_process, timeout):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an hour is a sensible limit: no unit-slip warning
        t = grid_sweep(pipeline_point, GRID, processes=1, timeout=timeout, progress=False)
    pd.testing.assert_frame_equal(t, in_process)
    assert _no_children()


def test_dask_a_point_that_kills_its_workers_fails_alone():
    distributed = pytest.importorskip("distributed")
    import dask

    grid = {"i": list(range(6))}
    # Dask gives up on a task at the first worker it kills (its default retries 3 times); one
    # task per worker at a time, so that only the task that killed a worker is charged with its
    # death (one queued behind it would be too). Two workers die here (the chunk [2, 3], then
    # point 3 alone), so three keep the cluster alive even if a nanny fails to restart its
    # worker (dask/distributed#7312).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}), \
            distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client, \
            pytest.warns(SweepWarning, match=r"1 of 6 points failed.*'i': 3.*worker lost"):
        t = grid_sweep(_dies_at_3, grid, client=client, chunk_size=2, progress=False)
    assert t["error"][3].startswith("worker lost: the Dask workers running this point died")
    # its chunk-mate (point 2) was run again alone and kept
    ref = grid_sweep(_draw, grid, processes=1, progress=False)
    keep = t.index != 3
    pd.testing.assert_frame_equal(t[keep], ref[keep])


def test_dask_refuses_a_timeout_it_could_not_enforce(dask_client):
    with pytest.raises(ValueError, match=r"timeout applies to local processes.*timeout=1"):
        grid_sweep(_draw, {"i": [0]}, client=dask_client, timeout=1.0, progress=False)
