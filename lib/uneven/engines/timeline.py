"""Timeline engine: start and finish times of a DAG of operations on serial resources.

The model (everything in seconds):

* op ``i`` runs on resource ``resource[i]`` (a GPU stream, a CPU sender, a core group ...) for
  ``duration[i]`` seconds and cannot be interrupted;
* a resource runs one op at a time, **in a fixed order** given by ``sequence`` (ops of one
  resource run in increasing ``sequence``, ties broken by op id; the default is the op id, so a
  builder that emits each resource's ops in order needs no ``sequence`` at all);
* dependency edges, stored as CSR over *predecessors*: op ``i`` waits for every
  ``dep_src[k]`` with ``dep_ptr[i] <= k < dep_ptr[i+1]`` to finish, plus ``dep_delay[k]``
  seconds (a link latency, a transfer time, a traced delay);
* op ``i`` never starts before ``release[i]``.

So ``start[i] = max(release[i], finish[previous op on its resource],
max_k finish[dep_src[k]] + dep_delay[k])`` and ``finish = start + duration``. Because the orders
are fixed, this is a max-plus system: making any duration or delay longer never makes anything
finish sooner (the tests check this). If the fixed orders and the edges form a cycle, no op on
the cycle can ever start: that is a deadlock, reported as a ``ValueError`` naming the ops.

The kernel walks the ops once in topological order (Kahn's algorithm); cost O(ops + edges).

>>> import numpy as np
>>> # two ops on resource 0, then one on resource 1 that needs op 0's output 0.5 s later
>>> ptr, src, delay = edges_to_csr(3, src=[0], dst=[2], delay=[0.5])
>>> tl = run_timeline([1.0, 2.0, 1.0], [0, 0, 1], ptr, src, delay)
>>> tl.start.tolist(), tl.finish.tolist(), tl.makespan
([0.0, 1.0, 1.5], [1.0, 3.0, 2.5], 3.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, real
from .._validate import _show, as_float_array, as_int_array, check_int, trusted
from ..limits import check_bytes
from ._timeline_kernel import _deadlock_message, _resource_orders, _timeline_kernel

__all__ = ["Timeline", "run_timeline", "edges_to_csr"]


@dataclass(frozen=True)
class Timeline(Checked):
    """Result of :func:`run_timeline`.

    ``start``, ``finish``: per op, seconds. ``resource``: per op (as given). ``makespan``: the
    latest finish (s; 0 for no ops). Arrays are read-only; every field is checked when made.
    """

    start: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=("ops",), repr=False)
    resource: np.ndarray = array("int", shape=("ops",), lo=0, repr=False)
    makespan: float = real(lo=0.0, unit="s")


def edges_to_csr(n_ops, src, dst, delay=None):
    """Turn an edge list ``src[k] -> dst[k]`` (delay s) into the predecessor CSR of the engine.

    Returns ``(dep_ptr, dep_src, dep_delay)`` with ``dep_ptr`` of length ``n_ops + 1``; ``n_ops``
    is limited by the memory budget of :mod:`uneven.limits`.

    >>> edges_to_csr(3, [0, 1], [2, 2], [0.1, 0.2])[0].tolist()
    [0, 0, 0, 2]
    """
    n = _check_n(n_ops)
    check_bytes("n_ops", n, 16 * (n + 1), "the CSR offsets and edge counts")
    src = as_int_array("src", src, ndim=1, lo=0, hi=n - 1 if n else -1)
    dst = as_int_array("dst", dst, ndim=1, shape=(src.size,), lo=0, hi=n - 1 if n else -1)
    if delay is None:
        delay = np.zeros(src.size)
    delay = as_float_array("delay", delay, ndim=1, shape=(src.size,), lo=0.0, unit="s")
    order = np.argsort(dst, kind="stable")
    counts = np.bincount(dst, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, np.ascontiguousarray(src[order]), np.ascontiguousarray(delay[order])


def run_timeline(
    duration,
    resource,
    dep_ptr=None,
    dep_src=None,
    dep_delay=None,
    *,
    sequence=None,
    release=None,
    labels=None,
) -> Timeline:
    """Start/finish times (s) of ops with fixed per-resource orders and delayed dependencies.

    Parameters
    ----------
    duration : (n,) seconds >= 0.
    resource : (n,) integers >= 0; ops with the same value run one at a time.
    dep_ptr, dep_src, dep_delay : predecessor CSR (see module doc); ``dep_delay`` in seconds
        >= 0, default zeros. Omit all three for no dependencies. :func:`edges_to_csr` builds them.
    sequence : (n,) integers, optional: position of each op in its resource's order (ties by
        op id). Default: op id.
    release : (n,) seconds >= 0, optional earliest start per op. Default 0.
    labels : optional sequence of n strings, used only to name ops in a deadlock message.

    Raises ``ValueError`` for malformed input and for a deadlock (a cycle of waits), naming the
    ops and resources on one cycle. Size: about 120 bytes per op and 40 per edge must fit in the
    memory budget of :mod:`uneven.limits` (2 GiB by default: some 15 million ops); the cost is
    O(ops + edges). Resource ids may be any integers >= 0 (sparse ids cost nothing extra).

    >>> run_timeline([2.0, 1.0], [0, 0], sequence=[1, 0]).start.tolist()  # op 1 runs first
    [1.0, 0.0]
    """
    dur = as_float_array("duration", duration, ndim=1, lo=0.0, unit="s")
    n = dur.size
    res = as_int_array("resource", resource, ndim=1, shape=(n,), lo=0)
    n_edges = np.size(dep_src) if isinstance(dep_src, np.ndarray) else 0
    check_bytes("duration", f"{n} ops", 120 * n + 40 * n_edges, "the timeline of the ops")
    if dep_ptr is None and dep_src is None and dep_delay is None:
        ptr = np.zeros(n + 1, dtype=np.int64)
        src = np.zeros(0, dtype=np.int64)
        dly = np.zeros(0)
    else:
        if dep_ptr is None or dep_src is None:
            raise ValueError(
                "dep_ptr and dep_src must be given together (predecessor CSR); got "
                f"dep_ptr={'None' if dep_ptr is None else 'array'}, "
                f"dep_src={'None' if dep_src is None else 'array'}"
            )
        ptr, src = check_csr(n, dep_ptr, dep_src)
        if dep_delay is None:
            dly = np.zeros(src.size)
        else:
            dly = as_float_array(
                "dep_delay", dep_delay, ndim=1, shape=(src.size,), lo=0.0, unit="s"
            )
    if release is None:
        rel = np.zeros(n)
    else:
        rel = as_float_array("release", release, ndim=1, shape=(n,), lo=0.0, unit="s")
    seq = None if sequence is None else as_int_array("sequence", sequence, ndim=1, shape=(n,))
    if labels is not None:
        if not isinstance(labels, (list, tuple, np.ndarray)) or np.ndim(labels) != 1:
            raise ValueError(f"labels must be a list of n strings (one per op); "
                             f"got {_show(labels)}")
        if len(labels) != n:
            raise ValueError(f"labels must have one entry per op ({n}); got {len(labels)}")
        labels = [str(x)[:200] for x in labels]
    check_bytes("dep_src", f"{n} ops, {src.size} edges", 120 * n + 40 * src.size,
                "the timeline of the ops")

    compact, n_res = _compact(res)
    order_ptr, order_ops = _resource_orders(compact, seq, n_res)
    start = np.empty(n)
    finish = np.empty(n)
    done = np.zeros(n, dtype=np.int64)
    n_done = _timeline_kernel(dur, rel, order_ptr, order_ops, ptr, src, dly, start, finish, done)
    if n_done < n:
        raise ValueError(_deadlock_message(done, res, order_ptr, order_ops, ptr, src, labels))
    timeline = _freeze(start, finish, res)
    if not np.isfinite(timeline.makespan):  # finish >= 0, so a finite max means all are finite
        raise ValueError("duration, dep_delay and release add up to a finish time beyond the "
                         "range of a float; use times of sensible magnitude")
    return timeline


def check_csr(n: int, dep_ptr, dep_src, names=("dep_ptr", "dep_src")):
    """``(dep_ptr, dep_src)`` as int arrays after checking they are a predecessor CSR of ``n``
    ops (``dep_ptr``: ``n + 1`` offsets from 0, never decreasing, ending at ``len(dep_src)``;
    ``dep_src``: op ids), or ``(None, None)`` for none. ``names``: the two parameter names the
    messages use.

    >>> [a.tolist() for a in check_csr(2, [0, 0, 1], [0])]
    [[0, 0, 1], [0]]
    """
    pn, sn = names
    if dep_ptr is None and dep_src is None:
        return None, None
    if dep_ptr is None or dep_src is None:
        raise ValueError(f"{pn} and {sn} must be given together (predecessor CSR); got "
                         f"{pn}={_show(dep_ptr)}, {sn}={_show(dep_src)}")
    ptr = as_int_array(pn, dep_ptr, ndim=1, shape=(n + 1,), lo=0)
    src = as_int_array(sn, dep_src, ndim=1, lo=0, hi=max(n - 1, 0))
    if src.size and n == 0:
        raise ValueError(f"{sn} must be empty when there are no ops; got {src.size} entries")
    if ptr[0] != 0 or ptr[-1] != src.size or np.any(np.diff(ptr) < 0):
        raise ValueError(
            f"{pn} must start at 0, never decrease and end at len({sn}) "
            f"= {src.size}; got {pn}[0]={ptr[0]}, {pn}[-1]={ptr[-1]}"
        )
    return ptr, src


def check_recorded(name: str, ops, n_ops: int | None, keys=()) -> dict | None:
    """A result's record of its run (``None``, or a dict with per-op ``start``, ``finish`` (s,
    finite, ``finish >= start``), ``resource`` and the predecessor CSR ``dep_ptr``, ``dep_src``,
    plus ``keys``), checked; ``n_ops`` the number of ops it must hold (``None``: any)."""
    if ops is None:
        return None
    if not isinstance(ops, dict):
        raise ValueError(f"{name} must be None or a dict of the run's op arrays; got "
                         f"{_show(ops)}")
    need = {"start", "finish", "resource", "dep_ptr", "dep_src", *keys}
    if set(ops) != need:
        raise ValueError(f"{name} must have the keys {sorted(need)}; got {sorted(map(str, ops))}")
    start = as_float_array(f"{name}['start']", ops["start"], ndim=1, lo=0.0, unit="s")
    n = start.size if n_ops is None else n_ops
    start = as_float_array(f"{name}['start']", start, ndim=1, shape=(n,), unit="s")
    finish = as_float_array(f"{name}['finish']", ops["finish"], ndim=1, shape=(n,), unit="s")
    if np.any(finish < start):
        raise ValueError(f"{name}['finish'] must be >= start for every op")
    res = as_int_array(f"{name}['resource']", ops["resource"], ndim=1, shape=(n,), lo=0)
    ptr, src = check_csr(n, ops["dep_ptr"], ops["dep_src"],
                         (f"{name}['dep_ptr']", f"{name}['dep_src']"))
    out = dict(ops, start=start, finish=finish, resource=res, dep_ptr=ptr, dep_src=src)
    for a in (start, finish, res, ptr, src):
        a.flags.writeable = False
    return out


def _compact(res: np.ndarray):
    """``(ids, count)``: resource ids renumbered 0..k-1 in the same order when they are sparse
    (e.g. [0, 10**8]), so that per-resource arrays never grow with the largest id."""
    if not res.size:
        return res, 0
    top = int(res.max())
    if top >= 2 * res.size:
        uniq, inverse = np.unique(res, return_inverse=True)
        return inverse.astype(np.int64).reshape(res.shape), uniq.size
    return res, top + 1


def _check_n(n_ops) -> int:
    return check_int("n_ops", n_ops, lo=0)


def _freeze(start, finish, res) -> Timeline:
    for a in (start, finish, res):
        a.flags.writeable = False
    return trusted(Timeline, start=start, finish=finish, resource=res,
                   makespan=float(finish.max()) if finish.size else 0.0)


