"""Parameter sweeps: one function over a grid, on local processes or a Dask cluster.

:func:`grid_sweep` calls ``fn(**point)`` for every point of a grid and returns a tidy table, one
row per point: the parameters, then the results, then an ``error`` column. It does not schedule
anything itself: points are cut into chunks, and the chunks run on a :class:`concurrent.futures`
process pool (the default: local processes, one per core) or on a Dask distributed ``Client``
when one is given (a ``LocalCluster`` on a laptop, a real cluster elsewhere). The table is the same
whichever runs it: rows come back in grid order, and each point's seed depends only on the sweep's
``seed`` and the point's index.

It is the general sweep: any function, any parameters. Two narrower scans have their own names:
:func:`uneven.schedulers.pipeline.delay_scan` (one pipeline schedule, one link's delay) and
:func:`uneven.ep.model.deepep_benchmark` (DeepEP's bandwidth test over EP sizes).

* **Grid**: a dict of lists (their product, the last key varying fastest, as
  :func:`itertools.product`) or a list of dicts with the same keys (points as given).
  Every key must be a parameter of ``fn`` (unless ``fn`` takes ``**kwargs``) and every parameter
  of ``fn`` without a default must be in the grid: a misspelt key is refused before any point runs.
* **Results**: ``fn`` returns a dict of named scalar results (numbers, bools, strings, None) or
  one number (column ``result``). Points may return different keys; a missing one is NaN.
* **Seeds**: if ``fn`` takes a ``seed`` argument (or ``**kwargs``) and the grid does not set one,
  every point gets its own: ``SeedSequence(seed, spawn_key=(index,))``, 63 bits, in column
  ``seed``. So the sweep is reproducible and the points' random streams are independent.
* **Failures**: a point whose ``fn`` raises keeps its row: result columns NaN and ``error`` the
  exception's type and message (``""`` for points that ran); so does a point that kills its
  worker process or runs longer than ``timeout``. A warning names how many failed and the
  parameters of the first; the other points' results are all there.
* **Table**: a pandas ``DataFrame`` when pandas is installed (``table="pandas"``), else a numpy
  structured array (``table="numpy"``); ``path`` writes it too (``.csv``, or ``.parquet`` with
  pandas and pyarrow).
* **Workers**: ``setup`` (a callable with no arguments, e.g. one that calls the kernels the sweep
  will use) runs once in every worker before its first chunk, so numba's caches are loaded once
  per worker, not per point. A progress bar (tqdm) shows for long sweeps.

Dask, pandas, pyarrow and tqdm are the ``research`` extra (``pip install -e '.[research]'``);
without them local processes and numpy tables still work.

>>> def bubble(p, m):
...     return {"bubble": (p - 1) / (m + p - 1)}
>>> t = grid_sweep(bubble, {"p": [2, 4], "m": [4, 8]}, processes=1, table="numpy", progress=False)
>>> t["p"].tolist(), t["m"].tolist(), t["bubble"].round(3).tolist()
([2, 2, 4, 4], [4, 8, 4, 8], [0.2, 0.111, 0.429, 0.273])
"""

from __future__ import annotations

import csv
import difflib
import inspect
import itertools
import math
import os
import pickle
import signal
import sys
import time
import types
import warnings
from collections import deque
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from ._moved import renamed_names
from ._validate import _show, check_bool, check_callable, check_choice, check_int, check_real
from .quantities import is_quantity

__all__ = ["grid_sweep", "SweepWarning", "MAX_POINTS"]

#: The largest grid :func:`sweep` accepts (points); the table of a bigger one would not fit
#: comfortably in memory, and such a sweep should be split by the caller.
MAX_POINTS = 10**7
_MAX_KEYS = 64
_RESERVED = ("error",)




class SweepWarning(UserWarning):
    """Some points of a :func:`sweep` failed; their rows carry the error, the others are whole."""


# --------------------------------------------------------------------------- the grid


def _points(grid) -> tuple[list[str], list[dict]]:
    """Validated parameter names and the list of points (dicts) of ``grid``."""
    if isinstance(grid, Mapping):
        if not grid:
            raise ValueError("grid must name at least one parameter; got an empty dict")
        names = _names(list(grid))
        values = []
        total = 1
        for name in names:
            vals = grid[name]
            if isinstance(vals, (str, bytes, Mapping)) or not isinstance(
                vals, (list, tuple, range, np.ndarray)
            ):
                raise ValueError(f"grid[{name!r}] must be a list of values; got {_show(vals)}")
            if isinstance(vals, np.ndarray) and vals.ndim != 1:
                raise ValueError(f"grid[{name!r}] must be a 1-d list of values; got an array of "
                                 f"shape {vals.shape}")
            vals = [_scalar(f"grid[{name!r}]", v) for v in vals]
            if not vals:
                raise ValueError(f"grid[{name!r}] must hold at least one value; got an empty list")
            total *= len(vals)
            if total > MAX_POINTS:
                raise ValueError(f"grid must have at most {MAX_POINTS:,} points; the product of "
                                 f"its lists has more ({_show(list(grid))})")
            values.append(vals)
        return names, [dict(zip(names, combo, strict=True))
                       for combo in itertools.product(*values)]
    if isinstance(grid, (list, tuple)):
        if not grid:
            raise ValueError("grid must hold at least one point; got an empty list")
        if len(grid) > MAX_POINTS:
            raise ValueError(f"grid must have at most {MAX_POINTS:,} points; got {len(grid):,}")
        names = None
        points = []
        for i, point in enumerate(grid):
            if not isinstance(point, Mapping) or not point:
                raise ValueError(f"grid[{i}] must be a non-empty dict of parameter values; "
                                 f"got {_show(point)}")
            if names is None:
                names = _names(list(point))
            elif set(point) != set(names):
                raise ValueError(f"grid[{i}] must have the same keys as grid[0] {names}; "
                                 f"got {_show(list(point))}")
            points.append({n: _scalar(f"grid[{i}][{n!r}]", point[n]) for n in names})
        return names, points
    raise ValueError(f"grid must be a dict of lists or a list of dicts; got {_show(grid)}")


def _names(keys) -> list[str]:
    if len(keys) > _MAX_KEYS:
        raise ValueError(f"grid must name at most {_MAX_KEYS} parameters; got {len(keys)}")
    for key in keys:
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"grid keys must be parameter names (Python identifiers); "
                             f"got {_show(key)}")
        if key in _RESERVED:
            raise ValueError(f"grid keys must not be {key!r} (a column of the result table)")
    return list(keys)


def _scalar(name, value):
    """A grid value as a plain Python scalar (numbers, bools, strings, None)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        value = float(value)
        return value
    raise ValueError(f"{name} must be a number, a bool, a string or None (one table cell); "
                     f"got {_show(value)}")


def _check_keys(fn, names: list[str]) -> None:
    """Refuse a grid whose keys ``fn`` cannot take, or that leaves out one it needs, before any
    point runs (a misspelt key would otherwise fail every point, one ``error`` per row)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read (some builtins): let the points tell
        return
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = [k for k in names if k not in named]
        if unknown:
            lower = {n.casefold(): n for n in named}  # parameter names are case-sensitive
            close = {k: difflib.get_close_matches(k.casefold(), list(lower), n=1)
                     for k in unknown}
            hints = "; ".join(f"{k!r}: did you mean {lower[c[0]]!r}?"
                              for k, c in close.items() if c)
            raise ValueError(f"grid keys {unknown} are not parameters of {_fn_name(fn)} (it takes "
                             f"{named})" + (f"; {hints}" if hints else ""))
    missing = [n for n in named if params[n].default is params[n].empty and n not in names
               and n != "seed"]  # a seed is given to every point
    if missing:
        raise ValueError(f"grid must give every parameter of {_fn_name(fn)} without a default; "
                         f"missing {missing} (the grid has {names})")


def _fn_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _takes_seed(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _point_seed(seed: int, index: int) -> int:
    """The seed of point ``index``: independent streams, reproducible from ``seed``."""
    state = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))


# --------------------------------------------------------------------------- workers

_DASK_READY: set = set()
#: Seconds of results a local worker gathers before it sends them (one message per point would
#: wake the sweep's process thousands of times a second, on a core the workers need).
_FLUSH_S = 0.05


class _SetupFailed(RuntimeError):
    """``setup`` raised in a worker: the sweep cannot run there (raised to the caller)."""


def _dumps(obj) -> bytes:
    try:
        import cloudpickle
    except ImportError:  # plain pickle: fn must then be importable by name
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def _worker_main(conn, running, fn_bytes, setup_bytes):
    """A local worker process: set up, then run the chunks it is sent. ``running`` (shared
    with the sweep) holds the index of the point running now (-1 between points) and when it
    started, so the sweep knows which point to blame if this process dies or overruns; the
    results go back in batches (every :data:`_FLUSH_S` and at the end of each chunk), so
    that the sweep is not woken once per point."""
    try:
        fn = pickle.loads(fn_bytes)
        if setup_bytes is not None:
            pickle.loads(setup_bytes)()
    except Exception as err:
        conn.send(("setup", _error_text(err)))
        return
    conn.send(("ready", None))
    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):  # the sweep is gone
            return
        if chunk is None:
            return
        done, sent = [], time.monotonic()
        for index, kwargs in chunk:
            running[1] = time.monotonic()  # the start first: the sweep reads index, then start
            running[0] = index
            outcome = _run_point(fn, kwargs)
            running[0] = -1.0
            done.append((index, outcome))
            if time.monotonic() - sent >= _FLUSH_S:
                conn.send(("points", done))
                done, sent = [], time.monotonic()
        if done:
            conn.send(("points", done))


def _dask_chunk(fn, setup, points):
    _dask_setup(setup)
    return _run_chunk(fn, points)


def _dask_setup(setup):
    """Run ``setup`` once per worker process (a worker may receive many chunks)."""
    if setup is None:
        return
    key = id(setup) if not hasattr(setup, "__qualname__") else (
        getattr(setup, "__module__", ""), setup.__qualname__)
    if key not in _DASK_READY:
        try:
            setup()
        except Exception as err:
            raise _SetupFailed(f"setup failed on a Dask worker: {type(err).__name__}: "
                               f"{err}") from None
        _DASK_READY.add(key)


def _run_chunk(fn, points):
    """``[(results dict or None, error text)]`` for each ``(index, kwargs)`` of the chunk."""
    return [_run_point(fn, kwargs) for _, kwargs in points]


def _run_point(fn, kwargs):
    """``(results dict, "")``, or ``(None, error text)`` if ``fn`` raised."""
    try:
        return _results(fn(**kwargs)), ""
    except Exception as err:  # one bad point must not lose the others
        return None, _error_text(err)


def _error_text(err) -> str:
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= 500 else text[:497] + "..."


def _results(value) -> dict:
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str) or key in _RESERVED:
                raise TypeError(f"fn must return a dict with string keys other than 'error'; "
                                f"got key {_show(key)}")
            out[key] = _cell(key, v)
        return out
    return {"result": _cell("result", value)}


def _cell(key, v):
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, np.generic) and v.shape == ():
        v = v.item()
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v.item()
    if isinstance(v, (bool, str)):
        return v
    if isinstance(v, Integral):
        return int(v)
    if isinstance(v, Real):
        return float(v)
    raise TypeError(f"fn must return scalars (numbers, bools, strings, None) or a dict of them; "
                    f"result {key!r} is {_show(v)}")


# --------------------------------------------------------------------------- the table


def _columns(names, seeded, points, outcomes):
    """Column name -> list of cells, in table order (parameters, seed, results, error), and the
    results moved to a numbered column because their ``_result`` name was taken too."""
    cols = {n: [p[1][n] for p in points] for n in names}
    if seeded:
        cols["seed"] = [p[1]["seed"] for p in points]
    keys = []
    for res, _ in outcomes:
        for key in res or ():
            if key not in keys:
                keys.append(key)
    # Every name in use is reserved first, so a result never takes a column that a parameter
    # or another result already owns, whatever order the points returned their keys in.
    taken = set(cols) | set(keys) | set(_RESERVED)
    moved = []
    for key in keys:
        col = key
        if key in cols:
            col, k = f"{key}_result", 2
            while col in taken:
                col, k = f"{key}_result{k}", k + 1
            if k > 2:
                moved.append((key, col))
            taken.add(col)
        cols[col] = [None if res is None else res.get(key) for res, _ in outcomes]
    cols["error"] = [err for _, err in outcomes]
    return cols, moved


def _dtype(values):
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present) and len(present) == len(values):
        return np.bool_
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        if len(present) == len(values) and all(isinstance(v, int) for v in present) and all(
                abs(v) < 2**63 for v in present):
            return np.int64
        return np.float64
    if all(isinstance(v, str) for v in values):
        return f"U{max(1, max(len(v) for v in values))}"
    return object


def _numpy_table(cols):
    dtypes = [(name, _dtype(vals)) for name, vals in cols.items()]
    n = len(next(iter(cols.values())))
    table = np.empty(n, dtype=dtypes)
    for name, dt in dtypes:
        vals = cols[name]
        if dt is np.float64:
            vals = [math.nan if v is None else float(v) for v in vals]
        table[name] = vals
    return table


def _pandas_table(cols):
    import pandas as pd

    data = {}
    for name, vals in cols.items():
        dt = _dtype(vals)
        if dt is np.float64:
            vals = [math.nan if v is None else float(v) for v in vals]
            data[name] = np.array(vals, dtype=np.float64)
        elif dt is np.int64 or dt is np.bool_:
            data[name] = np.array(vals, dtype=dt)
        elif dt is not object:  # strings: pandas' own string dtype
            data[name] = pd.Series(vals)
        else:
            data[name] = pd.Series(vals, dtype=object)
    return pd.DataFrame(data)


def _write(table, cols, path: Path, kind: str):
    if path.suffix.lower() == ".parquet":
        table.to_parquet(path, index=False)
    elif kind == "pandas":
        table.to_csv(path, index=False)
    else:
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(cols))
            for row in zip(*cols.values(), strict=True):
                w.writerow(["" if v is None else v for v in row])


def _have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- public API


def grid_sweep(fn, grid, *, client=None, seed: int = 0, chunk_size: int | None = None,
               processes: int | None = None, setup=None, progress: bool | None = None,
               table: str = "auto", path=None, timeout: float | None = None):
    """Evaluate ``fn(**point)`` at every point of ``grid``; return one row per point.

    ``fn``: a callable taking the grid's keys as keyword arguments (and ``seed`` if it wants one,
    see the module docstring), returning a dict of scalar results or one number. It must be
    picklable (cloudpickle, installed with Dask, also takes lambdas and notebook functions).
    ``grid``: a dict of lists (their product) or a list of dicts with the same keys; at most
    :data:`MAX_POINTS` points, values numbers, bools, strings or None.
    ``client``: a ``dask.distributed.Client``; the chunks run on its workers. ``None`` (default):
    local processes. ``seed``: int >= 0, the sweep's seed (each point gets its own from it).
    ``chunk_size``: points per task (default: about 4 chunks per worker, at most 1,000 points).
    ``processes`` (local only): worker processes, 1 = run in this process (default: one per core,
    at most one per chunk). ``setup``: a no-argument callable run once per worker before its first
    chunk (warm numba kernels there). ``progress``: show a tqdm bar (default: when tqdm is
    installed and the sweep has at least 1,000 points). ``table``: ``"auto"`` (pandas if
    installed), ``"pandas"`` or ``"numpy"`` (a structured array). ``path``: also write the table
    to this ``.csv`` or ``.parquet`` file. ``timeout`` (local only): seconds one point may run,
    in (0, 1e7], or a string with its unit (``"10 min"``); a point still running then fails
    (``TimeoutError`` in its ``error``) and its worker process is stopped and replaced.
    ``None`` (default): no limit. A point can only be stopped in another process, so with a
    timeout the points always run in worker processes (``processes=1``: one worker); ``setup``
    is not timed. Dask cannot stop a running task, so a timeout with a ``client`` is refused:
    give ``fn`` its own deadline there.

    Columns: the parameters, ``seed`` (when given to ``fn``), the results, ``error`` (``""``
    where ``fn`` returned). Nothing is overwritten: a result named like a parameter (or ``seed``)
    gets the suffix ``_result``, and if a parameter or another result already has that name,
    ``_result2`` (``_result3``, ...: the first free one, with a :class:`SweepWarning` naming
    both keys). The same names in every table kind and file.

    Local worker processes that die (a crash, ``os._exit``, the out-of-memory killer) lose only
    the point they were running: it fails with ``worker lost`` and the exit code (it is not
    retried, so a point that kills every worker cannot loop). The rest of its chunk runs on a
    fresh worker, with the points it had finished but not yet reported (workers report every
    50 ms): ``fn`` may be called twice for those, with the same seed. On Dask, a chunk whose
    worker dies is retried by Dask's scheduler (up to
    ``distributed.scheduler.allowed-failures`` times), then each of its points alone; only a
    point that still kills its workers fails.

    >>> def noisy(sigma, seed):
    ...     return float(np.random.default_rng(seed).normal(0.0, sigma))
    >>> t = grid_sweep(noisy, {"sigma": [0.0, 1.0]}, processes=1, table="numpy", progress=False)
    >>> t.dtype.names, t["result"][0], bool(t["seed"][0] != t["seed"][1])
    (('sigma', 'seed', 'result', 'error'), np.float64(0.0), True)
    """
    check_callable("fn", fn, "called as fn(**point)")
    names, points = _points(grid)
    _check_keys(fn, names)
    seed = check_int("seed", seed, lo=0, hi=2**63 - 1)
    seeded = "seed" not in names and _takes_seed(fn)
    indexed = []
    for i, p in enumerate(points):
        if seeded:
            p["seed"] = _point_seed(seed, i)
        indexed.append((i, p))
    processes, chunk_size, progress, kind, path, timeout = _sweep_options(
        client, processes, chunk_size, setup, progress, table, path, timeout)
    outcomes = _run_points(fn, indexed, client, processes, chunk_size, setup, progress, timeout)
    cols, moved = _columns(names, seeded, indexed, outcomes)
    result = _pandas_table(cols) if kind == "pandas" else _numpy_table(cols)
    for key, col in moved:
        warnings.warn(f"sweep: result {key!r} is in column {col!r}: {key!r} is a parameter and "
                      f"{key + '_result'!r} is taken too", SweepWarning, stacklevel=2)
    failed = [i for i, (_, err) in enumerate(outcomes) if err]
    if failed:
        first = {k: v for k, v in indexed[failed[0]][1].items()}
        warnings.warn(f"sweep: {len(failed)} of {len(indexed)} points failed (their rows have an "
                      f"'error'); the first, at {first}: {outcomes[failed[0]][1]}", SweepWarning,
                      stacklevel=2)
    if path is not None:
        _write(result, cols, path, kind)
    return result


def _sweep_options(client, processes, chunk_size, setup, progress, table, path, timeout):
    """:func:`sweep`'s run and output options checked: ``(processes, chunk_size, progress,
    table kind, path, timeout)``."""
    if client is not None:
        _check_client(client)
    if processes is not None:
        processes = check_int("processes", processes, lo=1, hi=1024)
        if client is not None:
            raise ValueError("processes applies to local runs only; got processes with a client")
    if chunk_size is not None:
        chunk_size = check_int("chunk_size", chunk_size, lo=1, hi=MAX_POINTS)
    if setup is not None:
        check_callable("setup", setup, "called once per worker with no arguments")
    if progress is not None:
        progress = check_bool("progress", progress)
    if timeout is not None:
        # "10 min" or a pint quantity as everywhere; a plain number is seconds, and hours are
        # a sensible limit, so it takes no unit-slip warning (plausible times stop at 100 s)
        unit = "s" if isinstance(timeout, str) or is_quantity(timeout) else ""
        timeout = check_real("timeout", timeout, lo=0.0, lo_open=True, hi=1e7, unit=unit)
        if client is not None:
            raise ValueError(f"timeout applies to local processes only (Dask cannot stop a "
                             f"running task); got timeout={timeout:g} with a client")
    table = check_choice("table", table, ("auto", "pandas", "numpy"))
    kind = table
    if table == "auto":
        kind = "pandas" if _have("pandas") else "numpy"
    elif table == "pandas" and not _have("pandas"):
        raise ValueError("table='pandas' needs pandas (pip install -e '.[research]'); "
                         "use table='numpy'")
    if path is not None:
        path = _checked_path(path, kind)
    return processes, chunk_size, progress, kind, path, timeout


def _checked_path(path, kind) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"path must be a file name ending in .csv or .parquet; "
                         f"got {_show(path)}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"path must end in .csv or .parquet; got {_show(str(path))}")
    if suffix == ".parquet" and (kind != "pandas" or not _have("pyarrow")):
        raise ValueError("path ending in .parquet needs pandas and pyarrow "
                         "(pip install -e '.[research]'); write a .csv instead")
    if not path.parent.is_dir():
        raise ValueError(f"path must be in an existing folder; got {_show(str(path))}")
    return path


def _run_points(fn, indexed, client, processes, chunk_size, setup, progress, timeout) -> list:
    """Every point's ``(result, error)``, in order: on the Dask ``client``, in this process, or
    on local worker processes, in chunks of ``chunk_size`` points."""
    n = len(indexed)
    if client is not None:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
    else:
        workers = processes or os.cpu_count() or 1
    if chunk_size is None:
        chunk_size = max(1, min(1000, math.ceil(n / (4 * workers))))
    chunks = [indexed[i:i + chunk_size] for i in range(0, n, chunk_size)]
    if progress is None:
        progress = n >= 1000 and _have("tqdm")
    bar = _bar(progress, n)
    try:
        if client is not None:
            return _on_dask(client, fn, setup, chunks, bar)
        if timeout is None and (processes == 1 or len(chunks) == 1 and processes is None):
            if setup is not None:
                try:
                    setup()
                except Exception as err:
                    raise RuntimeError(f"setup failed: {type(err).__name__}: {err}") from err
            outcomes = []
            for chunk in chunks:
                outcomes += _run_chunk(fn, chunk)
                bar.update(len(chunk))
            return outcomes
        return _on_processes(fn, setup, chunks, min(workers, len(chunks)), bar, timeout)
    finally:
        bar.close()


def _check_client(client):
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("client must be a dask.distributed.Client, and Dask is not installed "
                         "(pip install -e '.[research]'); got "
                         f"{_show(client)}") from None
    if not isinstance(client, Client):
        raise ValueError(f"client must be a dask.distributed.Client (or None for local "
                         f"processes); got {_show(client)}")
    if client.status != "running":
        raise ValueError(f"client must be connected (status 'running'); got status "
                         f"{client.status!r}")


class _NoBar:
    def update(self, _n):
        pass

    def close(self):
        pass


def _bar(show, n):
    if not show:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=n, desc="sweep", unit="point")


# --------------------------------------------------------------------------- local processes


class _Worker:
    """One local worker process, the points it has not reported yet, and the slot it shares
    with the sweep: the index of the point running now (-1 between points) and its start
    (``time.monotonic``, one clock for all processes of the machine)."""

    def __init__(self, ctx, fn_bytes, setup_bytes):
        self.conn, child = ctx.Pipe()
        self.running = ctx.RawArray("d", [-1.0, 0.0])
        self.process = ctx.Process(target=_worker_main,
                                   args=(child, self.running, fn_bytes, setup_bytes),
                                   daemon=True, name="uneven-sweep-worker")
        self.process.start()
        child.close()  # so that this end sees EOF when the worker dies
        self.ready = False
        self.todo: deque = deque()

    def give(self, chunk) -> bool:
        """Send ``chunk`` to run; ``False`` if the worker has gone (it is not taken)."""
        try:
            self.conn.send(chunk)
        except OSError:
            return False
        self.todo.extend(chunk)
        return True

    def receive(self, outcomes, bar) -> bool:
        """Take in the messages waiting; ``False`` once the worker has gone (end of pipe)."""
        while True:
            try:
                if not self.conn.poll():
                    return True
                kind, value = self.conn.recv()
            except (EOFError, OSError):
                return False
            if kind == "ready":
                self.ready = True
            elif kind == "setup":
                raise RuntimeError(f"setup failed in a worker process: {value}")
            else:
                for index, outcome in value:  # in chunk order
                    self.todo.popleft()
                    outcomes[index] = outcome
                bar.update(len(value))

    def current(self):
        """``(index, start)`` of the point running now, or ``None`` between points."""
        index = self.running[0]
        start = self.running[1]
        if index < 0 or self.running[0] != index:  # it moved on while we read: ask again
            return None
        return int(index), start

    def stop(self, wait: float):
        """End the process: ask it (when idle), wait up to ``wait`` s, then kill it."""
        if self.process.is_alive() and not self.todo:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(wait if not self.todo else 0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def _on_processes(fn, setup, chunks, workers, bar, timeout):
    """Run the chunks on ``workers`` local processes; a worker that dies or overruns ``timeout``
    fails the point it was running, and its other unreported points go to a fresh worker."""
    import multiprocessing
    from multiprocessing.connection import wait

    # spawn, not fork: forking a process that runs threads (a Jupyter kernel, numba's pool)
    # can deadlock the child.
    ctx = multiprocessing.get_context("spawn")
    code = (_dumps(fn), None if setup is None else _dumps(setup))
    pending = deque(chunks)
    outcomes: dict = {}
    n = sum(len(c) for c in chunks)
    live: list[_Worker] = []
    blameless, done_then = 0, -1  # deaths between points, with no point done since
    try:
        while len(outcomes) < n:
            for w in live:
                if w.ready and not w.todo and pending:
                    chunk = pending.popleft()
                    if not w.give(chunk):
                        pending.appendleft(chunk)  # it died idle: its sentinel tells below
            idle = sum(1 for w in live if not w.todo)
            while len(live) < workers and len(pending) > idle:
                live.append(_Worker(ctx, *code))
                idle += 1
            ended = set(wait([w.conn for w in live] + [w.process.sentinel for w in live],
                             _time_left(live, timeout)))
            for w in list(live):
                # read every pipe before any verdict: a point that returned just now is kept
                if not w.receive(outcomes, bar) or w.process.sentinel in ended:
                    w.process.join(5.0)  # its pipe is closed: it is exiting, if not gone yet
                    if not w.ready:
                        raise RuntimeError(f"setup failed: a worker process died before its "
                                           f"first point ({_exit_text(w.process)})")
                    culprit = w.current()
                    if culprit is None:  # it died between points: they all run again
                        blameless = blameless + 1 if done_then == len(outcomes) else 1
                        done_then = len(outcomes)
                        if blameless > 3:
                            raise RuntimeError(f"worker processes keep dying between points "
                                               f"({_exit_text(w.process)})")
                    reason = (f"worker lost: the worker process died while running this point "
                              f"({_exit_text(w.process)})")
                elif timeout is not None and (culprit := w.current()) is not None and (
                        time.monotonic() - culprit[1] >= timeout):
                    reason = (f"TimeoutError: still running after timeout={timeout:g} s; its "
                              f"worker process was stopped")
                else:
                    continue
                live.remove(w)
                _retire(w, None if culprit is None else culprit[0], reason, outcomes, pending,
                        bar)
    finally:
        for w in live:
            w.stop(5.0)
    return [outcomes[i] for chunk in chunks for i, _ in chunk]


def _retire(worker, culprit, reason, outcomes, pending, bar):
    """Stop ``worker``: point ``culprit`` fails with ``reason``; the worker's other unreported
    points (done but not sent yet, or not started) go back to the front of ``pending``."""
    rest = [point for point in worker.todo if point[0] != culprit]
    if len(rest) < len(worker.todo):
        outcomes[culprit] = (None, reason)
        bar.update(1)
    if rest:
        pending.appendleft(rest)
    worker.todo.clear()
    worker.stop(0.0)


def _time_left(live, timeout):
    """Seconds until the first running point reaches ``timeout`` (None: wait for a message)."""
    if timeout is None:
        return None
    now = time.monotonic()
    starts = [now if (c := w.current()) is None else c[1] for w in live if w.todo]
    return None if not starts else max(0.0, min(starts) + timeout - now)


def _exit_text(process) -> str:
    code = process.exitcode
    if code is None:
        return "it did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-code}, {name}"
    return f"exit code {code}"


# --------------------------------------------------------------------------- Dask


def _on_dask(client, fn, setup, chunks, bar):
    """Run the chunks on the Dask ``client``; a chunk whose workers kept dying is split into
    single points, so that only the point that kills them fails."""
    from distributed import as_completed as dask_completed

    futures, chunk_of, outcomes = [], {}, {}

    def submit(chunk):
        fut = client.submit(_dask_chunk, fn, setup, chunk, pure=False)
        futures.append(fut)
        chunk_of[fut.key] = chunk
        return fut

    running = dask_completed([submit(chunk) for chunk in chunks])
    try:
        for fut in running:
            chunk = chunk_of.pop(fut.key)
            parts = _dask_outcomes(fut, chunk)
            if parts is None:
                for point in chunk:
                    running.add(submit([point]))
                continue
            for (i, _), outcome in zip(chunk, parts, strict=True):
                outcomes[i] = outcome
            bar.update(len(chunk))
    finally:
        for fut in futures:
            fut.release()
    return [outcomes[i] for chunk in chunks for i, _ in chunk]


def _dask_outcomes(fut, chunk):
    """The chunk's outcomes; ``None`` if Dask gave up on a chunk of several points because its
    workers died (run them one by one); a point it gave up on fails with the reason."""
    from distributed.scheduler import KilledWorker  # where every supported version defines it

    try:
        return fut.result()
    except _SetupFailed as err:
        raise RuntimeError(str(err)) from None
    except KilledWorker as err:
        if len(chunk) > 1:
            return None
        return [(None, f"worker lost: the Dask workers running this point died ({err})"[:500])]
    except Exception as err:  # the task was lost some other way (cancelled, a comm error)
        text = f"worker lost: {type(err).__name__}: {err}"[:500]
        return [(None, text)] * len(chunk)


# --------------------------------------------------------------------------- the old name

class _CallableModule(types.ModuleType):
    """``uneven.sweep`` was the function and is now this module (so ``help(uneven.sweep)`` shows
    the documentation above); calling it still works for one release, with a warning."""

    def __call__(self, *args, **kwargs):
        warnings.warn("uneven.sweep(...) is now uneven.grid_sweep(...) (uneven.sweep is the module;"
                      " calling it goes in the next release)", DeprecationWarning, stacklevel=2)
        return grid_sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
__getattr__ = renamed_names(__name__, {"sweep": "grid_sweep"})
