"""Cross-stream waits and blocking CPU calls of Kineto traces (private; see :mod:`.kineto`).

Per rank, from its ``cuda_sync`` events (``Stream Wait Event`` names the waiting stream, the
recorded stream and the ``cudaEventRecord`` call; ``Stream Sync``/``Event Sync``/``Context Sync``
the call that blocked) or, without them, inferred from the order of the thread's runtime calls.
Ops are display ops of :mod:`._kineto_graph` (times in integer ns).
"""

from __future__ import annotations

import numpy as np

_RECORD = ("cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord",
           "cuEventRecordWithFlags")
_WAIT = ("cudaStreamWaitEvent", "cuStreamWaitEvent")
_STREAM_SYNC = ("cudaStreamSynchronize", "cuStreamSynchronize")
_EVENT_SYNC = ("cudaEventSynchronize", "cuEventSynchronize")
_DEVICE_SYNC = ("cudaDeviceSynchronize", "cuCtxSynchronize")
#: Copies that return only when done (the *Async ones do not).
_SYNC_COPY = ("cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol",
              "cudaMemcpyFromSymbol")
BLOCKING = frozenset(_STREAM_SYNC + _EVENT_SYNC + _DEVICE_SYNC + _SYNC_COPY)


class _Streams:
    """Per stream, its ops in run order and their issue times (made non-decreasing), to find
    the last op issued before a time and the first issued after it."""

    def __init__(self, g):
        self.ops, self.keys = {}, {}
        for t in g.gpu_threads:
            ops = g.thread_order[g.thread_ptr[t]:g.thread_ptr[t + 1]]
            self.ops[t] = ops
            self.keys[t] = np.maximum.accumulate(g.issue[ops]) if ops.size else ops

    def before(self, t, time) -> int:
        """The last op of thread ``t`` issued before ``time`` (strictly), or -1."""
        if t is None or t not in self.ops:
            return -1
        k = int(np.searchsorted(self.keys[t], time, side="left")) - 1
        return int(self.ops[t][k]) if k >= 0 else -1

    def after(self, t, time) -> int:
        """The first op of thread ``t`` issued after ``time`` (strictly), or -1."""
        if t is None or t not in self.ops:
            return -1
        k = int(np.searchsorted(self.keys[t], time, side="right"))
        return int(self.ops[t][k]) if k < self.ops[t].size else -1


def dependencies(g, ranks: list, waits: str):
    """Cross-stream waits (src op, dst op) and CPU calls that block on GPU ops, per rank from
    the recorded cuda_sync events or inferred from the order of the runtime calls."""
    streams = _Streams(g)
    src, dst, awaits, modes, unresolved = [], [], [], [], 0
    g.contradicted = 0
    for p, ev in enumerate(ranks):
        mode = waits
        if waits == "auto":
            mode = "recorded" if ev.syncs else "inferred"
        modes.append(mode)
        if mode == "recorded":
            unresolved += _recorded(g, p, ev, streams, src, dst, awaits)
        elif mode == "inferred":
            s, d, a = [], [], []
            _inferred(g, p, streams, s, d, a)
            # a guessed wait that the recorded times contradict (the op started before the op
            # it would wait for had ended; the call returned before its GPU work was done) is
            # a wrong guess: drop it
            keep = [k for k in range(len(s)) if g.rec_start[d[k]] >= g.rec_finish[s[k]]]
            kept = [x for x in a if g.rec_finish[x[0]] >= g.rec_finish[x[1]]]
            g.contradicted += len(s) - len(keep) + len(a) - len(kept)
            src += [s[k] for k in keep]
            dst += [d[k] for k in keep]
            awaits += kept
    _copies(g, awaits)
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), awaits,
            tuple(modes), unresolved)


def _call_time(g, p, corr, fallback):
    k = g.call_by_corr.get((p, corr)) if corr >= 0 else None
    return (int(g.rec_start[k]), k) if k is not None else (fallback, None)


def _recorded(g, p, ev, streams, src, dst, awaits) -> int:
    unresolved = 0
    origin = g.origin
    for kind, dev, stream, ts, corr, on, rec, _k in ev.syncs:
        t_call, call = _call_time(g, p, corr, ts - origin)
        record_at = None
        if rec >= 0 and (p, rec) in g.call_by_corr:
            record_at = int(g.rec_start[g.call_by_corr[(p, rec)]])
        if kind == "Stream Wait Event":
            if record_at is None or on < 0:
                unresolved += 1
                continue
            a = streams.before(g.stream_key.get((p, dev, on)), record_at)
            b = streams.after(g.stream_key.get((p, dev, stream)), t_call)
            if a >= 0 and b >= 0 and g.op_thread[a] != g.op_thread[b]:
                src.append(a)
                dst.append(b)
            continue
        if call is None or g.names[call] not in BLOCKING:
            continue  # cudaEventQuery also reports an "Event Sync": it does not block
        if kind == "Event Sync" and record_at is not None and on >= 0:
            a = streams.before(g.stream_key.get((p, dev, on)), record_at)
            if a >= 0:
                awaits.append((call, a))
        elif kind == "Stream Sync" and stream >= 0:
            a = streams.before(g.stream_key.get((p, dev, stream)), t_call)
            if a >= 0:
                awaits.append((call, a))
        elif kind == "Context Sync":
            for (pp, dd, _s), t in g.stream_key.items():
                if pp == p and dd == dev:
                    a = streams.before(t, t_call)
                    if a >= 0:
                        awaits.append((call, a))
    return unresolved


def _inferred(g, p, streams, src, dst, awaits):
    """Without cuda_sync events: an event is recorded on the stream of the thread's latest
    launch; a cudaStreamWaitEvent waits for the thread's latest record and makes the stream of
    the thread's next launch wait; a stream synchronize waits for the latest launch's stream."""
    first_gpu = {}
    for i in np.flatnonzero(g.launch >= 0):
        first_gpu.setdefault(int(g.launch[i]), int(i))
    cpu_threads = [t for t in g.cpu_threads if g.thread_proc[t] == p]
    my_streams = [t for (pp, _d, _s), t in g.stream_key.items() if pp == p]
    for t in cpu_threads:
        last_stream, last_record, pending = None, None, []
        for k in g.thread_order[g.thread_ptr[t]:g.thread_ptr[t + 1]]:
            k = int(k)
            name, at = g.names[k], int(g.rec_start[k])
            op = first_gpu.get(k)
            if op is not None:
                last_stream = int(g.op_thread[op])
                for w_at, (r_at, r_stream) in pending:
                    a = streams.before(r_stream, r_at)
                    b = streams.after(last_stream, w_at)
                    if a >= 0 and b >= 0 and r_stream != last_stream:
                        src.append(a)
                        dst.append(b)
                pending = []
            elif name in _RECORD and last_stream is not None:
                last_record = (at, last_stream)
            elif name in _WAIT and last_record is not None:
                pending.append((at, last_record))
            elif name in _STREAM_SYNC and last_stream is not None:
                a = streams.before(last_stream, at)
                if a >= 0:
                    awaits.append((k, a))
            elif name in _EVENT_SYNC and last_record is not None:
                a = streams.before(last_record[1], last_record[0])
                if a >= 0:
                    awaits.append((k, a))
            elif name in _DEVICE_SYNC:
                for s in my_streams:
                    a = streams.before(s, at)
                    if a >= 0:
                        awaits.append((k, a))


def _copies(g, awaits):
    """A synchronous cudaMemcpy returns when its own copy is done."""
    for i in np.flatnonzero(g.launch >= 0):
        call = int(g.launch[i])
        if g.names[call] in _SYNC_COPY:
            awaits.append((call, int(i)))
