"""Write any timeline as Chrome Trace Event JSON, the format Perfetto and ``chrome://tracing`` open.

:func:`to_chrome` takes a library result (a pipeline iteration, an MoE layer, a decode layer, a
superpod core phase, fluid flows, a replayed profiler trace: :func:`uneven.trace.adapters
.as_table` knows them all) or a :class:`~uneven.trace._table.TraceTable`, and writes:

* one **process** per GPU / rank / die and one **thread** per resource in it (compute stream,
  communication stream, CPU sender, core group), named by metadata events;
* one complete event (``"ph": "X"``) per op with its real start and duration in µs (the format's
  unit; the simulator's seconds times 1e6, printed to the ns);
* ``args`` naming the op (stage, micro-batch, expert, bytes ... as the adapter gives them), its
  ``op`` id, and ``waited_for``: the predecessor that finished last (a dependency, or the op
  before it on its thread), i.e. what it was waiting for when it started;
* a **flow** arrow (``"ph": "s"`` / ``"f"``) for every dependency between two threads: a send
  and the op that receives it.

GPU ops carry Kineto's fields (``cat`` ``"kernel"`` / ``"gpu_memcpy"``, ``args.stream``,
``args.device``), and communication ops on a GPU are named ``ncclDevKernel_<op>`` (with the plain
name in ``args.op``): the convention PyTorch-trace analysers key on, so Holistic Trace Analysis
reads the export like a profiler trace (``per_rank=True`` writes one file per rank with its
``distributedInfo``, the layout HTA expects). CPU-side ops are ``cat "cpu_op"``.

The file is streamed a chunk of ops at a time: names and args are made per chunk, never a list
of all events. A path ending in ``.gz`` is gzip-compressed.

Open the file at https://ui.perfetto.dev (drag it onto the page) or in ``chrome://tracing``.

>>> import tempfile, json, os
>>> from uneven.schedulers.moe_layer import layer_timeline
>>> path = to_chrome(layer_timeline(strategy="sp_ep", inter_op=True),
...                  os.path.join(tempfile.mkdtemp(), "layer.json.gz"))
>>> events = json.load(gzip.open(path))["traceEvents"]
>>> sorted({e["ph"] for e in events})
['M', 'X', 'f', 's']
"""

from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path

import numpy as np

from .._validate import _show, check_bool, check_instance, check_int
from ._table import CATEGORIES, COMMUNICATION, CPU, MEMORY, SYNC, TraceTable

__all__ = ["to_chrome", "save", "waited_for", "CHUNK"]

#: Ops formatted per chunk while streaming.
CHUNK = 65_536
# Kineto's event categories for each of CATEGORIES.
_KINETO_CAT = {0: "kernel", COMMUNICATION: "kernel", MEMORY: "gpu_memcpy", CPU: "cpu_op",
               SYNC: "user_annotation"}
_NCCL_PREFIX = "ncclDevKernel_"


def to_chrome(result, path, *, per_rank: bool = False, flows: bool = True,
              kineto_names: bool = True, chunk_size: int = CHUNK, **options):
    """Write ``result``'s timeline to ``path`` as Chrome Trace Event JSON; return the path.

    ``result``: a :class:`~uneven.trace._table.TraceTable` or any result
    :func:`uneven.trace.adapters.as_table` accepts (``options`` go to its adapter, e.g.
    ``sources=`` for fluid flows). ``path``: a file (``.json`` or ``.json.gz``); with
    ``per_rank=True`` a directory that receives ``rank<r>.json`` (or ``.json.gz`` when ``path``
    ends in ``.gz``, e.g. ``"trace.gz"``), one per process, each with Kineto's
    ``distributedInfo`` (a list of the paths is returned). ``flows``: draw send -> receive
    arrows. ``kineto_names``: name GPU communication ops ``ncclDevKernel_<op>`` so profiler-trace
    tools classify them. ``chunk_size``: ops formatted at a time (memory vs speed).
    """
    from .adapters import as_table

    table = as_table(result, **options)
    per_rank = check_bool("per_rank", per_rank)
    flows = check_bool("flows", flows)
    kineto_names = check_bool("kineto_names", kineto_names)
    chunk_size = check_int("chunk_size", chunk_size, lo=1, hi=10_000_000)
    if not isinstance(path, (str, Path)) or not str(path):
        raise ValueError(f"path must be a file or directory path (str or Path); got {_show(path)}")
    path = Path(path)
    waited = waited_for(table)
    if not per_rank:
        _write(path, table, np.arange(table.n_ops), range(len(table.process_names)), waited,
               flows, kineto_names, chunk_size, None)
        return path
    gz = path.name.endswith(".gz")
    folder = path.with_name(path.name[:-3]) if gz else path
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"path must be a directory for per_rank=True; {str(folder)!r} is a file")
    folder.mkdir(parents=True, exist_ok=True)
    proc = table.process
    order = np.argsort(proc, kind="stable")
    bounds = np.searchsorted(proc[order], np.arange(len(table.process_names) + 1))
    out = []
    for p, rank in enumerate(table.ranks):
        f = folder / f"rank{rank}.json{'.gz' if gz else ''}"
        _write(f, table, order[bounds[p]:bounds[p + 1]], [p], waited, flows, kineto_names,
               chunk_size, (rank, len(table.process_names)))
        out.append(f)
    return out


def save(result, name: str, **options) -> Path:
    """Write ``result``'s trace as ``figures/traces/<name>.json.gz`` (beside the figures, see
    :func:`uneven.plots.figures_dir`; git ignores the folder) and return the path; ``options`` as
    :func:`to_chrome`. For notebooks: one line gives the reader a file to open in Perfetto.
    """
    import re

    from ..plots import figures_dir

    if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,119}", name)
            and ".." not in name and not name.endswith((".json", ".gz"))):
        raise ValueError(f"name must be a bare file stem like '04_layer_timeline'; got "
                         f"{_show(name)}")
    folder = figures_dir() / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    return to_chrome(result, folder / f"{name}.json.gz", **options)


def waited_for(table: TraceTable) -> np.ndarray:
    """Per op, the id of the predecessor that finished last (-1 for none): among its
    dependencies (``dep_src``) and the op before it on its thread (by start time, ties by id).

    >>> t = TraceTable(start=[0.0, 0.0, 2.0], finish=[1.0, 2.0, 3.0], thread=[0, 1, 0],
    ...                thread_process=(0, 0), thread_names=("a", "b"), process_names=("p",),
    ...                category=[0, 0, 0], label=lambda ids: [str(i) for i in ids],
    ...                dep_ptr=[0, 0, 0, 1], dep_src=[1])
    >>> waited_for(t).tolist()  # op 2 follows op 0 on its thread but waits for op 1
    [-1, -1, 1]
    """
    check_instance("table", table, TraceTable, "from uneven.trace.as_table(result)")
    n = table.n_ops
    best = np.full(n, -1, dtype=np.int64)
    best_t = np.full(n, -np.inf)
    if n:
        order = np.lexsort((np.arange(n), table.start, table.thread))
        same = table.thread[order[1:]] == table.thread[order[:-1]]
        cur, prev = order[1:][same], order[:-1][same]
        best[cur] = prev
        best_t[cur] = table.finish[prev]
    if table.dep_src is not None and table.dep_src.size:
        dst = np.repeat(np.arange(n), np.diff(table.dep_ptr))
        src = table.dep_src
        key = table.finish[src]
        o = np.lexsort((key, dst))
        last = np.ones(o.size, dtype=bool)
        last[:-1] = dst[o[1:]] != dst[o[:-1]]
        d, s = dst[o[last]], src[o[last]]
        win = table.finish[s] >= best_t[d]  # a dependency wins a tie: it names the data
        best[d[win]] = s[win]
    return best


# --------------------------------------------------------------------------------------------
# streaming writer


def _open(path: Path):
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "wb", compresslevel=6), encoding="utf-8")
    return open(path, "w", encoding="utf-8")


def _write(path, table, ids, processes, waited, flows, kineto_names, chunk_size, rank):
    try:
        fh = _open(path)
    except OSError as e:
        raise ValueError(f"path {str(path)!r} cannot be written: {e.strerror}") from None
    with fh:
        head = {"schemaVersion": 1, "displayTimeUnit": "ns",
                "otherData": {"generator": "uneven (model)", **_jsonable(table.metadata)}}
        if rank is not None:
            head["distributedInfo"] = {"rank": int(rank[0]), "world_size": int(rank[1]),
                                       "backend": "model"}
        fh.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        first = True
        for line in _metadata_events(table, processes):
            fh.write(("" if first else ",\n") + line)
            first = False
        for lo in range(0, ids.size, chunk_size):
            chunk = ids[lo:lo + chunk_size]
            lines = _op_events(table, chunk, waited, kineto_names)
            if lines:
                fh.write(("" if first else ",\n") + ",\n".join(lines))
                first = False
        if flows and table.dep_src is not None:
            for lines in _flow_events(table, ids, chunk_size):
                if lines:
                    fh.write(("" if first else ",\n") + ",\n".join(lines))
                    first = False
        fh.write("\n]}\n")


def _jsonable(d: dict) -> dict:
    return json.loads(json.dumps(d, default=str))


def _metadata_events(table, processes):
    procs = set(int(p) for p in processes)
    for p in sorted(procs):
        name = json.dumps(table.process_names[p])
        yield (f'{{"ph": "M", "name": "process_name", "pid": {p}, "tid": 0, '
               f'"args": {{"name": {name}}}}}')
        yield (f'{{"ph": "M", "name": "process_sort_index", "pid": {p}, "tid": 0, '
               f'"args": {{"sort_index": {p}}}}}')
    for t, p in enumerate(table.thread_process):
        if p in procs:
            name = json.dumps(table.thread_names[t])
            yield (f'{{"ph": "M", "name": "thread_name", "pid": {p}, "tid": {t}, '
                   f'"args": {{"name": {name}}}}}')


def _args_columns(table, ids) -> list[str]:
    """The ``args`` members of each op as a JSON fragment (``', "stage": 3, "mb": 1'``)."""
    got = table.args(ids)
    n = len(ids)
    if isinstance(got, dict):
        out = [""] * n
        for key, col in got.items():
            vals = _column_text(col)
            if len(vals) != n:
                raise ValueError(f"details column {key!r} must have one value per op ({n}); "
                                 f"got {len(vals)}")
            k = ", " + json.dumps(str(key)) + ": "
            out = list(map(str.__add__, out, map(k.__add__, vals)))
        return out
    rows = list(got)
    if len(rows) != n:
        raise ValueError(f"details must give one dict per op ({n}); got {len(rows)}")
    return [(", " + json.dumps(r, default=str)[1:-1]) if r else "" for r in rows]


def _column_text(col) -> list[str]:
    """JSON text of each value of a column (fast paths for numpy ints, bools and floats)."""
    if isinstance(col, np.ndarray) and col.ndim == 1:
        if col.dtype.kind == "b":
            return ["true" if x else "false" for x in col.tolist()]
        if col.dtype.kind in "iu":
            return list(map(str, col.tolist()))
        if col.dtype.kind == "f":
            if np.isfinite(col).all():
                return list(map(repr, col.tolist()))
            return [repr(x) if math.isfinite(x) else json.dumps(str(x)) for x in col.tolist()]
    memo = {}
    out = []
    for v in (col.tolist() if isinstance(col, np.ndarray) else col):
        key = (type(v), v) if isinstance(v, (str, int, float, bool)) else None
        text = memo.get(key) if key is not None else None
        if text is None:
            text = _value(v)
            if key is not None:
                memo[key] = text
        out.append(text)
    return out


def _value(v) -> str:
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else json.dumps(str(v))
    if isinstance(v, (bool, int)) or v is None:
        return json.dumps(v)
    return json.dumps(str(v))


_EVENT = ('{{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {:.3f}, '
          '"dur": {:.3f}, "args": {{"op": {}, "op_id": {}, "category": "{}"{}{}{}}}}}')


def _op_events(table, ids, waited, kineto_names) -> list[str]:
    if not ids.size:
        return []
    names = table.label(ids)
    if len(names) != ids.size:
        raise ValueError(f"label must give one name per op ({ids.size}); got {len(names)}")
    raw_memo, shown_memo = {}, {}
    raw = []
    for x in names:
        t = raw_memo.get(x)
        if t is None:
            t = raw_memo[x] = json.dumps(str(x))
        raw.append(t)
    thread = table.thread[ids]
    cat = table.category[ids]
    on_gpu = np.asarray(_gpu_threads(table), dtype=bool)[thread]
    nccl = on_gpu & (cat == COMMUNICATION) if kineto_names else np.zeros(ids.size, dtype=bool)
    shown = []
    for x, r, pre in zip(names, raw, nccl.tolist(), strict=True):
        if pre:
            t = shown_memo.get(x)
            if t is None:
                t = shown_memo[x] = json.dumps(_NCCL_PREFIX + str(x))
            shown.append(t)
        else:
            shown.append(r)
    proc = np.asarray(table.thread_process, dtype=np.int64)[thread]
    kcat = np.where(on_gpu, cat, CPU)  # an op on a CPU thread is a CPU op to the consumer
    cat_text = [_KINETO_CAT[c] for c in range(len(CATEGORIES))]
    extra = [f', "stream": {t}, "device": {p}, "correlation": {i}' if g else ""
             for t, p, i, g in zip(thread.tolist(), proc.tolist(), ids.tolist(),
                                   on_gpu.tolist(), strict=True)]
    w = waited[ids]
    has_w = w >= 0
    wtext = [""] * ids.size
    if has_w.any():
        wl = table.label(w[has_w])
        for k, wk, name in zip(np.flatnonzero(has_w).tolist(), w[has_w].tolist(), wl,
                               strict=True):
            wtext[k] = f', "waited_for": {json.dumps(str(name))}, "waited_for_op": {wk}'
    # µs to the ns; the duration from the rounded ends, so that back-to-back ops stay so
    t0 = np.round(table.start[ids] * 1e6, 3)
    dur = np.maximum(np.round(table.finish[ids] * 1e6, 3) - t0, 0.0)
    return list(map(_EVENT.format, [cat_text[c] for c in kcat.tolist()], shown, proc.tolist(),
                    thread.tolist(), t0.tolist(), dur.tolist(), raw, ids.tolist(),
                    [CATEGORIES[c] for c in cat.tolist()], extra, wtext,
                    _args_columns(table, ids)))


def _gpu_threads(table) -> list[bool]:
    """A thread is a GPU stream unless every op on it is a CPU op (a CPU sender, a launch)."""
    cache = table.__dict__.get("_gpu_threads")
    if cache is None:
        n_t = len(table.thread_names)
        cpu = np.bincount(table.thread[table.category == CPU], minlength=n_t)
        alln = np.bincount(table.thread, minlength=n_t)
        cache = ((cpu < alln) | (alln == 0)).tolist()
        object.__setattr__(table, "_gpu_threads", cache)
    return cache


def _flow_events(table, ids, chunk_size):
    """Flow arrows for the dependencies between two threads whose ends are both in ``ids``."""
    n = table.n_ops
    inside = np.zeros(n, dtype=bool)
    inside[ids] = True
    ptr, src = table.dep_ptr, table.dep_src
    tproc = np.asarray(table.thread_process)
    for lo in range(0, n, chunk_size):
        hi = min(n, lo + chunk_size)
        dst = np.repeat(np.arange(lo, hi), np.diff(ptr[lo:hi + 1]))
        s = src[ptr[lo]:ptr[hi]]
        keep = inside[dst] & inside[s] & (table.thread[dst] != table.thread[s])
        e_id = np.flatnonzero(keep) + ptr[lo]
        d, s = dst[keep], s[keep]
        ta, tb = table.thread[s], table.thread[d]
        rows = zip(e_id.tolist(), tproc[ta].tolist(), ta.tolist(), (table.start[s] * 1e6).tolist(),
                   tproc[tb].tolist(), tb.tolist(), (table.start[d] * 1e6).tolist(), strict=True)
        lines = []
        for k, pa, a, ts_a, pb, b, ts_b in rows:
            lines.append(f'{{"ph": "s", "cat": "dependency", "name": "dependency", "id": {k}, '
                         f'"pid": {pa}, "tid": {a}, "ts": {ts_a:.3f}}}')
            lines.append(f'{{"ph": "f", "bp": "e", "cat": "dependency", "name": "dependency", '
                         f'"id": {k}, "pid": {pb}, "tid": {b}, "ts": {ts_b:.3f}}}')
        yield lines
