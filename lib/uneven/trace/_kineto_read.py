"""Reading PyTorch profiler (Kineto) Chrome-trace JSON into per-rank event lists (private).

Used by :mod:`uneven.trace.kineto`. What is kept of a trace, per file (one file = one rank):

* GPU ops: ``ph: "X"`` events of ``cat`` ``"kernel"``, ``"gpu_memcpy"``, ``"gpu_memset"``, with
  their device (``pid``), stream (``args.stream``, else ``tid``) and ``args.correlation`` (the id
  the CUDA runtime gave the call that launched them);
* CPU-side calls: ``cat`` ``"cuda_runtime"`` / ``"cuda_driver"`` (``cudaLaunchKernel``,
  ``cudaEventRecord``, ``cudaStreamWaitEvent``, ``cudaStreamSynchronize`` ...) with their thread
  (``pid``, ``tid``) and correlation;
* ``cat: "cuda_sync"`` events (written when the profiler ran with
  ``experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)``):
  ``"Stream Wait Event"``, ``"Event Sync"``, ``"Stream Sync"``, ``"Context Sync"`` with
  ``args.stream``, ``args.wait_on_stream`` and ``args.wait_on_cuda_event_record_corr_id``;
* ``"ac2g"`` flow events (``ph`` ``"s"`` on the launch, ``"f"`` on the GPU op, ``id`` = the
  correlation), used where an op lacks ``args.correlation``;
* the rank (``distributedInfo.rank``) and process groups (``distributedInfo.pg_config``).

Times become integer nanoseconds (Kineto writes microseconds with three decimals): the replay
then adds integers, so an unmodified replay can hit recorded starts exactly. Every error names
the file (or ``trace #k`` for a parsed dict) and the event (its index in ``traceEvents``, its
name and timestamp).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from .._validate import _show
from ..limits import check_bytes

PARAM = "path_or_paths"
GPU_CATS = {"kernel": 0, "gpu_memcpy": 1, "gpu_memset": 2}
CPU_CATS = ("cuda_runtime", "cuda_driver")
SYNC_CAT = "cuda_sync"
MAX_FILES = 4096
#: Python objects take about this many bytes per byte of JSON text once parsed.
_PARSED_PER_BYTE = 12


class RankEvents:
    """What one trace file holds that the replay uses (plain lists; times in integer ns)."""

    def __init__(self, source: str, rank, pg_ranks: dict):
        self.source = source
        self.rank = rank  # None when the file has no distributedInfo.rank
        self.rank_note = "distributedInfo.rank"  # where the rank came from
        self.pg_ranks = pg_ranks  # process-group name -> tuple of global ranks
        # GPU ops
        self.g_name, self.g_ts, self.g_dur, self.g_dev, self.g_stream = [], [], [], [], []
        self.g_corr, self.g_cat, self.g_event, self.g_args = [], [], [], []
        # CPU-side runtime/driver calls
        self.c_name, self.c_ts, self.c_dur, self.c_pid, self.c_tid = [], [], [], [], []
        self.c_corr, self.c_event, self.c_args = [], [], []
        # cuda_sync events: (kind, device, stream, ts, correlation, wait_on_stream, record_corr)
        self.syncs = []
        # ac2g flow events, read only if an op lacks args.correlation (see :meth:`flows`)
        self.flow_events = []
        self._flows = None

    @property
    def n_gpu(self) -> int:
        return len(self.g_ts)

    def flows(self):
        """``(start, finish)``: the ids of the ``ac2g`` flows by ``(pid, tid, ts)``."""
        if self._flows is None:
            self._flows = ({}, {})
            for k, ev in self.flow_events:
                _flow(self, ev, k)
        return self._flows


def where(source: str, k: int, ev) -> str:
    """How an error names one event: file, index in traceEvents, name and timestamp."""
    name = ev.get("name") if isinstance(ev, dict) else None
    ts = ev.get("ts") if isinstance(ev, dict) else None
    bits = [f"event #{k}"]
    if isinstance(name, str):
        bits.append(f"{name[:60]!r}")
    if isinstance(ts, (Real, str)) and not isinstance(ts, bool):
        bits.append(f"ts {_show(ts)}")
    return f"{source}, {' '.join(bits)}"


def fail(message: str):
    raise ValueError(f"{PARAM}: {message}")


def _ns(value, what: str, source: str, k: int, ev, *, lo_zero=False) -> int:
    """A Kineto time (µs, number or numeric string) as integer nanoseconds."""
    kind = type(value)
    if kind is float and -4e15 < value < 4e15 and (value >= 0.0 or not lo_zero):
        return int(round(value * 1000.0))  # the common case, without the checks below
    if kind is int and -4 * 10**15 < value < 4 * 10**15 and (value >= 0 or not lo_zero):
        return value * 1000
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            fail(f"{where(source, k, ev)}: '{what}' must be a number of microseconds; "
                 f"got {_show(value)}")
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(float(value)):
        fail(f"{where(source, k, ev)}: '{what}' must be a finite number of microseconds; "
             f"got {_show(value)}")
    if isinstance(value, Integral):
        out = int(value) * 1000
    else:
        out = int(round(float(value) * 1000.0))
    if abs(out) > 2**62 or (lo_zero and out < 0):
        fail(f"{where(source, k, ev)}: '{what}' must be {'>= 0 and ' if lo_zero else ''}"
             f"at most 4.6e15 µs; got {_show(value)}")
    return out


def _int(value, what: str, source: str, k: int, ev, *, required=True) -> int | None:
    """An integer field (pid, tid, stream, correlation): int or an integral numeric string."""
    if type(value) is int and -(2**62) <= value <= 2**62:
        return value  # the common case
    if value is None and not required:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, Integral) or abs(int(value)) > 2**62:
        if not required:
            return None
        fail(f"{where(source, k, ev)}: '{what}' must be an integer; got {_show(value)}")
    return int(value)


def _ranks(text) -> tuple | None:
    """Global ranks of a process group as Kineto writes them ("[0, 1]" or a list)."""
    if isinstance(text, str):
        text = text.strip().strip("[]")
        if not text:
            return None
        try:
            return tuple(int(x) for x in text.split(","))
        except ValueError:
            return None
    if isinstance(text, (list, tuple)) and text and all(
            isinstance(x, Integral) and not isinstance(x, bool) for x in text):
        return tuple(int(x) for x in text)
    return None


def _distributed(info, source: str):
    """(rank or None, {pg name: ranks}) from a trace's ``distributedInfo``."""
    if info is None:
        return None, {}
    if not isinstance(info, dict):
        fail(f"{source}: 'distributedInfo' must be an object; got {_show(info)}")
    rank = info.get("rank")
    if rank is not None:
        if isinstance(rank, str) and rank.strip().isdigit():
            rank = int(rank)
        if isinstance(rank, bool) or not isinstance(rank, Integral) or not 0 <= rank < 2**31:
            fail(f"{source}: distributedInfo.rank must be an integer >= 0; got {_show(rank)}")
        rank = int(rank)
    groups = {}
    config = info.get("pg_config")
    if isinstance(config, list):
        for pg in config:
            if isinstance(pg, dict) and "pg_name" in pg:
                ranks = _ranks(pg.get("ranks"))
                if ranks is not None:
                    groups[str(pg["pg_name"])] = ranks
    return rank, groups


def parse_trace(doc, source: str) -> RankEvents:
    """One parsed trace (the JSON object, or a bare list of events) -> :class:`RankEvents`."""
    if isinstance(doc, list):
        events, info = doc, None
    elif isinstance(doc, dict):
        events = doc.get("traceEvents")
        info = doc.get("distributedInfo")
        if not isinstance(events, list):
            fail(f"{source} has no 'traceEvents' list (is it a PyTorch profiler trace?); "
                 f"its keys: {_show(sorted(map(str, doc))[:8])}")
    else:
        fail(f"{source} must hold a JSON object with 'traceEvents'; got {_show(doc)}")
    rank, groups = _distributed(info, source)
    out = RankEvents(source, rank, groups)
    for k, ev in enumerate(events):
        if not isinstance(ev, dict):
            fail(f"{source}, event #{k} must be an object; got {_show(ev)}")
        cat = ev.get("cat")
        ph = ev.get("ph")
        if cat == "ac2g" and ph in ("s", "f"):
            out.flow_events.append((k, ev))
            continue
        if ph != "X" or not isinstance(cat, str):
            continue
        if cat in GPU_CATS:
            _gpu(out, ev, k, GPU_CATS[cat])
        elif cat in CPU_CATS:
            _cpu(out, ev, k)
        elif cat == SYNC_CAT:
            _sync(out, ev, k)
    return out


def _name(ev, source, k) -> str:
    name = ev.get("name")
    if not isinstance(name, str) or not name:
        fail(f"{where(source, k, ev)}: 'name' must be a non-empty string; got {_show(name)}")
    return name


def _args(ev, source, k) -> dict:
    args = ev.get("args", {})
    if not isinstance(args, dict):
        fail(f"{where(source, k, ev)}: 'args' must be an object; got {_show(args)}")
    return args


def _times(ev, source, k):
    if "ts" not in ev:
        fail(f"{where(source, k, ev)} has no 'ts' (start, µs)")
    if "dur" not in ev:
        fail(f"{where(source, k, ev)} has no 'dur' (duration, µs)")
    return (_ns(ev["ts"], "ts", source, k, ev),
            _ns(ev["dur"], "dur", source, k, ev, lo_zero=True))


def _gpu(out: RankEvents, ev, k, cat):
    src = out.source
    name = _name(ev, src, k)
    ts, dur = _times(ev, src, k)
    args = _args(ev, src, k)
    stream = _int(args.get("stream"), "args.stream", src, k, ev, required=False)
    if stream is None:
        stream = _int(ev.get("tid"), "tid", src, k, ev, required=False)
    if stream is None:
        fail(f"{where(src, k, ev)}: a GPU op needs its stream (args.stream or an integer tid); "
             f"got args.stream={_show(args.get('stream'))}, tid={_show(ev.get('tid'))}")
    device = _int(args.get("device", ev.get("pid")), "pid (device)", src, k, ev)
    corr = _int(args.get("correlation"), "args.correlation", src, k, ev, required=False)
    out.g_name.append(name)
    out.g_ts.append(ts)
    out.g_dur.append(dur)
    out.g_dev.append(device)
    out.g_stream.append(stream)
    out.g_corr.append(-1 if corr is None else corr)
    out.g_cat.append(cat)
    out.g_event.append(k)
    out.g_args.append(args)


def _cpu(out: RankEvents, ev, k):
    src = out.source
    name = _name(ev, src, k)
    ts, dur = _times(ev, src, k)
    args = _args(ev, src, k)
    pid = _int(ev.get("pid"), "pid", src, k, ev)
    tid = _int(ev.get("tid"), "tid", src, k, ev)
    corr = _int(args.get("correlation"), "args.correlation", src, k, ev, required=False)
    out.c_name.append(name)
    out.c_ts.append(ts)
    out.c_dur.append(dur)
    out.c_pid.append(pid)
    out.c_tid.append(tid)
    out.c_corr.append(-1 if corr is None else corr)
    out.c_event.append(k)
    out.c_args.append(args)


def _sync(out: RankEvents, ev, k):
    src = out.source
    name = _name(ev, src, k)
    ts, _ = _times(ev, src, k)
    args = _args(ev, src, k)
    kind = args.get("cuda_sync_kind", name)
    device = _int(args.get("device", ev.get("pid")), "pid (device)", src, k, ev)
    stream = _int(args.get("stream"), "args.stream", src, k, ev, required=False)
    corr = _int(args.get("correlation"), "args.correlation", src, k, ev, required=False)
    on = _int(args.get("wait_on_stream"), "args.wait_on_stream", src, k, ev, required=False)
    rec = _int(args.get("wait_on_cuda_event_record_corr_id"),
               "args.wait_on_cuda_event_record_corr_id", src, k, ev, required=False)
    if kind == "Stream Wait Event" and (stream is None or stream < 0):
        fail(f"{where(src, k, ev)}: a Stream Wait Event needs args.stream (the waiting "
             f"stream); got {_show(args.get('stream'))}")
    out.syncs.append((str(kind), device, -1 if stream is None else stream, ts,
                      -1 if corr is None else corr, -1 if on is None else on,
                      -1 if rec is None else rec, k))


def _flow(out: RankEvents, ev, k):
    src = out.source
    fid = _int(ev.get("id"), "id", src, k, ev, required=False)
    pid = _int(ev.get("pid"), "pid", src, k, ev, required=False)
    tid = _int(ev.get("tid"), "tid", src, k, ev, required=False)
    if fid is None or pid is None or tid is None or "ts" not in ev:
        return  # a flow we cannot place is only a drawing hint; the correlation args suffice
    key = (pid, tid, _ns(ev["ts"], "ts", src, k, ev))
    out._flows[0 if ev["ph"] == "s" else 1].setdefault(key, fid)


# --------------------------------------------------------------------------- files


def load_file(path: Path, source: str):
    """The JSON document of a ``.json`` or ``.json.gz`` trace file (gzip found by its magic)."""
    try:
        size = path.stat().st_size
        check_bytes(PARAM, source, _PARSED_PER_BYTE * size, f"parsing {source}")
        raw = path.read_bytes()
    except OSError as err:
        fail(f"cannot read {source}: {err.strerror or err}")
    if not raw.strip():
        fail(f"{source} is empty (a Git LFS file not fetched, or a trace still being written?)")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            fail(f"{source} is not a readable gzip file: {err}")
        check_bytes(PARAM, source, _PARSED_PER_BYTE * len(raw), f"parsing {source}")
    try:
        return json.loads(raw)
    except UnicodeDecodeError as err:
        fail(f"{source} is not UTF-8 text: {err.reason} at byte {err.start}")
    except json.JSONDecodeError as err:
        fail(f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}")
    except RecursionError:
        fail(f"{source} nests JSON too deeply to be a trace")


def _trace_files(folder: Path) -> list:
    files = sorted(p for p in folder.iterdir() if p.is_file() and (
        p.name.endswith(".json") or p.name.endswith(".json.gz")))
    if not files:
        fail(f"the folder {folder} holds no .json or .json.gz trace files")
    return files


def sources(path_or_paths) -> list:
    """``[(document_or_path, name)]`` for a path, a folder, a parsed trace or a list of them."""
    if isinstance(path_or_paths, (str, os.PathLike, dict)):
        items = [path_or_paths]
    elif isinstance(path_or_paths, (list, tuple)):
        items = list(path_or_paths)
        if not items:
            fail("give at least one trace (a path, a folder or a parsed trace); got an empty "
                 "list")
    else:
        fail("must be a path to a trace file (.json or .json.gz), a folder of them, a parsed "
             f"trace (dict) or a list of those; got {_show(path_or_paths)}")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            out.append((item, f"trace #{i}"))
        elif isinstance(item, (str, os.PathLike)):
            try:
                path = Path(item)
                is_dir = path.is_dir()
            except (OSError, ValueError, TypeError) as err:
                fail(f"cannot use {_show(item)} as a path: {err}")
            if is_dir:
                out.extend((p, str(p)) for p in _trace_files(path))
            else:
                out.append((path, str(path)))
        else:
            fail(f"entry {i} must be a path or a parsed trace (dict); got {_show(item)}")
        if len(out) > MAX_FILES:
            fail(f"at most {MAX_FILES} trace files at once; got more")
    return out


def read_all(path_or_paths) -> list:
    """Every trace as :class:`RankEvents`, ranks resolved (distributedInfo, else list order)."""
    ranks = []
    for i, (item, source) in enumerate(sources(path_or_paths)):
        doc = load_file(item, source) if isinstance(item, Path) else item
        ev = parse_trace(doc, source)
        if ev.rank is None:
            ev.rank = i
            ev.rank_note = "its position in the list (no distributedInfo.rank)"
        ranks.append(ev)
    seen = {}
    for ev in ranks:
        if ev.rank in seen:
            fail(f"{seen[ev.rank].source} and {ev.source} are both rank {ev.rank} (from "
                 f"{ev.rank_note}); give one trace per rank")
        seen[ev.rank] = ev
    if not any(ev.n_gpu for ev in ranks):
        what = f"{ranks[0].source} holds" if len(ranks) == 1 else "the traces hold"
        fail(f"{what} no GPU ops (events of cat 'kernel', 'gpu_memcpy' or 'gpu_memset'); was "
             "the profiler run with ProfilerActivity.CUDA?")
    return sorted(ranks, key=lambda ev: ev.rank)
