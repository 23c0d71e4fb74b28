"""What-if replays of PyTorch profiler (Kineto) traces on the library's timeline engine.

:func:`read_kineto` reads the Chrome-trace JSON that ``torch.profiler`` exports (one file per
rank, ``.json`` or ``.json.gz``) into a :class:`KinetoTrace`: a timeline DAG calibrated so that
replaying it unmodified puts every op back where the trace recorded it. Its what-ifs
(:meth:`KinetoTrace.scale`, :meth:`~KinetoTrace.delay_comm`, :meth:`~KinetoTrace.slow_rank`,
:meth:`~KinetoTrace.what_if`) each return a :class:`KinetoReplay` with the new step time, its
change against the unmodified replay, the critical path, and a
:class:`~uneven.trace._table.TraceTable` for Perfetto (``trace_table()``).
:func:`sample_kineto_traces` writes a small synthetic (model) trace for trying it out.

**The model** (times from the traces, in integer nanoseconds inside, seconds outside):

* resources: one per (rank, GPU, stream) and one per (rank, CPU thread); GPU ops (kernels,
  memcpy, memset) run one at a time per stream, in recorded order; CPU-side runtime and driver
  calls (``cudaLaunchKernel`` ...) keep their thread's recorded order and start-to-start gaps,
  because the what-ifs change GPU work, not the Python that issues it. A *blocking* call
  (``cudaStreamSynchronize``, ``cudaEventSynchronize``, ``cudaDeviceSynchronize``, a
  synchronous ``cudaMemcpy``) returns only when the GPU work it waits for is done, so a slower
  GPU delays every later launch of that thread, as it would;
* a GPU op never starts before its launch (matched by ``args.correlation``, or the ``ac2g``
  flow) plus a launch latency; cross-stream waits: the first op issued on a stream after a
  ``cudaStreamWaitEvent`` waits for the last op issued on the recorded stream before the
  matching ``cudaEventRecord``. With ``waits="auto"`` these come from the trace's
  ``cuda_sync`` events (``Stream Wait Event`` with ``wait_on_stream`` and
  ``wait_on_cuda_event_record_corr_id``; PyTorch writes them when profiling with
  ``experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)``),
  and, for a rank whose trace has none, are *inferred*: a record is taken on the stream of the
  thread's latest launch, a wait waits for the thread's latest record and holds the stream of
  its next launch (right for ``ProcessGroupNCCL``'s stream syncs; a heuristic elsewhere);
* a collective: NCCL kernels of one process group (``Process Group Name``, members from
  ``Process Group Ranks`` or ``distributedInfo``) are matched across ranks by PyTorch's
  sequence number ``Seq``, or, in traces without it, by their order within the group on each
  rank (the order in which the ranks issued them, which NCCL requires to agree). Each rank's
  kernel *arrives* when its stream reaches it, waits for every member to arrive, then takes its
  own *transfer* time: its recorded end minus the last recorded arrival. So a collective ends no
  earlier than its last member arrives, and a late rank holds up all of them. Point-to-point
  send/recv kernels are replayed unjoined (their recorded length);
* calibration: a launch latency is the recorded launch-to-start time of the ops the trace shows
  waiting for their launch (not for their stream or a wait), and that rank's median for the
  others (never more than their own launch-to-start time). An op that started later than
  anything modelled explains keeps its recorded start as an earliest start.

**Reproduction.** When a trace agrees with these dependencies, the unmodified replay puts
every op at its recorded start to the nanosecond: the written traces of the tests and every
sample do, all their op starts within 1 ns; so did all 18 distinct GPU traces of Holistic Trace
Analysis' test data (repository at ``f4d0062``: single ranks of 1 to 22,290 GPU ops, with and
without ``cuda_sync`` events, CUDA graphs, ROCm; measured once, not stored here). Ops the trace
shows overlapping on one stream (a CUDA graph's kernels) run on parallel lanes of it. Where a
trace does not agree (a recorded start before a modelled predecessor ended: clocks of different
hosts, a wrongly inferred wait) the op starts later; :attr:`KinetoTrace.replay_error` says by
how much at most, and :attr:`KinetoTrace.diagnostics` counts what the model had to assume.

>>> trace = read_kineto(sample_kineto_traces(n_ranks=2, n_layers=2))
>>> trace.ranks, trace.n_collectives, trace.replay_error
((0, 1), 5, 0.0)
>>> slow = trace.delay_comm(200e-6, rank=1)  # each of 5 collectives in a row 200 µs late
>>> round(slow.change * 1e6)  # µs the step grew (model)
1000
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, instance, named, real, text
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_choice,
    check_int,
    check_real,
    trusted,
)
from ..limits import PY_STEP, check_steps
from ._kineto_graph import build
from ._kineto_kinds import GROUPS, KINDS, TABLE_CATEGORY, kinds_of
from ._kineto_read import read_all
from ._kineto_replay import NS, display_edges, run
from ._kineto_sample import sample_traces
from ._table import TraceTable

__all__ = ["read_kineto", "KinetoTrace", "KinetoReplay", "sample_kineto_traces",
           "KINETO_KINDS", "KINETO_GROUPS"]

#: What a profiled op can be (``KinetoTrace.kind`` indexes it): GEMM, attention, other compute,
#: the collectives, memcpy/memset, and ``"cpu"`` for a CPU-side call.
KINETO_KINDS = KINDS
#: Names for several kinds at once: ``compute``, ``communication``, ``memory``, ``gpu``, ``cpu``.
KINETO_GROUPS = GROUPS

WAIT_MODES = ("auto", "recorded", "inferred", "none")
_MAX_FACTOR = 1e6
_MAX_DELAY = 1e6  # s
_MAX_TIME = 1e10  # s: longer than any trace Kineto can write (its clock counts µs in int64)


def read_kineto(path_or_paths, *, waits: str = "auto", unmatched: str = "error"):
    """A :class:`KinetoTrace` from PyTorch profiler traces: a path (``.json``/``.json.gz``), a
    folder of them, a parsed trace (the dict ``json.load`` gives) or a list of those, one per
    rank (the rank is ``distributedInfo.rank``, else the position in the list).

    ``waits``: where cross-stream waits and blocking calls come from: ``"auto"`` (a rank's
    ``cuda_sync`` events if its trace has any, else inferred), ``"recorded"``, ``"inferred"``
    or ``"none"``. ``unmatched``: an NCCL kernel whose collective lacks a member of its process
    group among the traces is an error (``"error"``, naming file and event), or is replayed on
    its own (``"ignore"``; e.g. a window that cut a collective on one rank). Errors in a file
    (bad JSON, a missing field, a GPU op with no stream) name the file and the event.

    >>> read_kineto(sample_kineto_traces(n_layers=1)).n_gpu_ops
    28
    """
    return KinetoTrace(path_or_paths, waits=waits, unmatched=unmatched)


class KinetoTrace:
    """Profiler traces of one or several ranks as a replayable timeline (see the module doc).

    Built by :func:`read_kineto` (same arguments). Per op (GPU ops first, then CPU calls):
    ``rank``, ``kind`` (index into :data:`KINETO_KINDS`), ``recorded_start`` and
    ``recorded_finish`` (s from the earliest event of the traces), ``is_gpu``; ``label(ids)``
    gives names. The trace:
    ``ranks``, ``sources``, ``n_collectives`` (joined across ranks), ``wait_modes`` (per rank),
    ``unresolved_waits`` (recorded waits whose ``cudaEventRecord`` is not in the trace),
    ``baseline`` (the unmodified :class:`KinetoReplay`), ``replay_error`` (s) and
    ``diagnostics`` (what the model had to assume).

    >>> t = read_kineto(sample_kineto_traces(n_layers=1))
    >>> t.wait_modes, t.recorded_step_time == t.baseline.step_time
    (('recorded', 'recorded'), True)
    """

    def __init__(self, path_or_paths, *, waits: str = "auto", unmatched: str = "error"):
        waits = check_choice("waits", waits, WAIT_MODES)
        unmatched = check_choice("unmatched", unmatched, ("error", "ignore"))
        ranks = read_all(path_or_paths)
        n_events = sum(ev.n_gpu + len(ev.c_ts) for ev in ranks)
        check_steps("path_or_paths", f"{n_events} ops", 2 * PY_STEP * n_events,
                    "building and calibrating the timeline of the traces")
        self._g = build(ranks, waits, unmatched)
        g = self._g
        n = g.n_gpu + g.n_cpu
        self._rank = np.asarray(g.ranks, dtype=np.int64)[g.op_proc]
        self._ones = np.ones(n)
        for a in (self._rank, g.kind, g.rec_start, g.rec_finish):
            a.flags.writeable = False
        self.baseline = self._replay(self._ones, None, "unmodified replay", None)

    # ---- what the trace holds
    @property
    def ranks(self) -> tuple:
        """The ranks, in increasing order."""
        return self._g.ranks

    @property
    def sources(self) -> tuple:
        """The file (or ``trace #k``) of each rank."""
        return self._g.sources

    @property
    def n_ops(self) -> int:
        """GPU ops plus CPU calls."""
        return self._g.n_gpu + self._g.n_cpu

    @property
    def n_gpu_ops(self) -> int:
        """Kernels, memcpy and memset."""
        return self._g.n_gpu

    @property
    def n_collectives(self) -> int:
        """Collectives joined across two or more ranks."""
        return int(np.sum(np.diff(self._g.coll_ptr) > 1))

    @property
    def wait_modes(self) -> tuple:
        """Per rank, where its waits came from: ``recorded``, ``inferred`` or ``none``."""
        return self._g.wait_mode

    @property
    def unresolved_waits(self) -> int:
        """Recorded stream waits left out: their event record is not in the trace."""
        return int(self._g.unresolved)

    @property
    def diagnostics(self) -> dict:
        """How well the trace fits the model (counts): ``overlapping_ops`` (ops the trace shows
        overlapping an earlier op of their stream, put on a parallel lane of it),
        ``without_launch`` (GPU ops whose launch call is not in the trace),
        ``unexplained_starts`` (ops that started later than anything modelled explains: they
        keep their recorded start as an earliest start), ``unresolved_waits`` and
        ``contradicted_guesses`` (inferred waits the recorded times rule out, dropped)."""
        g = self._g
        return {"overlapping_ops": int(g.overlapping),
                "without_launch": int(np.sum(g.launch < 0)),
                "unexplained_starts": int(g.pinned.sum()),
                "unresolved_waits": int(g.unresolved),
                "contradicted_guesses": int(g.contradicted)}

    @property
    def rank(self) -> np.ndarray:
        """Per op, its rank."""
        return self._rank

    @property
    def kind(self) -> np.ndarray:
        """Per op, index into :data:`KINETO_KINDS`."""
        return self._g.kind

    @property
    def is_gpu(self) -> np.ndarray:
        """Per op, True for a GPU op."""
        return np.arange(self.n_ops) < self._g.n_gpu

    @property
    def recorded_start(self) -> np.ndarray:
        """Per op, the recorded start (s from the earliest event of the traces)."""
        return self._g.rec_start * NS

    @property
    def recorded_finish(self) -> np.ndarray:
        """Per op, the recorded finish (s)."""
        return self._g.rec_finish * NS

    @property
    def recorded_step_time(self) -> float:
        """The recorded span: earliest event to the last finish (s)."""
        return float(self._g.rec_finish.max()) * NS

    @property
    def replay_error(self) -> float:
        """The largest distance between an op's unmodified replayed start and its recorded
        start (s); 0 when the trace agrees with the modelled dependencies."""
        err = np.abs(self.baseline.start - self.recorded_start)
        return float(np.round(err.max() / NS)) * NS if err.size else 0.0

    def label(self, ids) -> list:
        """Names of the ops ``ids`` (kernel names, runtime call names)."""
        ids = _ids("ids", ids, self.n_ops)
        names = self._g.names
        return [names[i] for i in ids.tolist()]

    def streams(self, rank: int) -> tuple:
        """The GPU streams of ``rank`` (ids as the trace names them)."""
        rank = check_choice("rank", rank, self.ranks)
        g = self._g
        p = self.ranks.index(rank)
        return tuple(sorted({int(s) for s, q in zip(g.stream.tolist(), g.op_proc[:g.n_gpu]
                                                    .tolist(), strict=True) if q == p}))

    def select(self, pattern: str | None = None, category: str | None = None,
               rank: int | None = None, stream: int | None = None) -> np.ndarray:
        """Per op, True for a GPU op whose name matches the regular expression ``pattern``
        (searched, case-insensitive), whose kind is ``category`` (a kind of
        :data:`KINETO_KINDS` or a group of :data:`KINETO_GROUPS`), on ``rank`` and ``stream``;
        None means any.

        >>> t = read_kineto(sample_kineto_traces(n_layers=1))
        >>> int(t.select(category="all-to-all").sum()), int(t.select("gemm", rank=0).sum())
        (4, 3)
        """
        g = self._g
        mask = self.is_gpu.copy()
        if pattern is not None:
            if not isinstance(pattern, str) or len(pattern) > 1000:
                raise ValueError(f"pattern must be a regular expression (a string of at most "
                                 f"1000 characters) or None; got {_show(pattern)}")
            try:
                rx = re.compile(pattern, re.IGNORECASE)
            except re.error as err:
                raise ValueError(f"pattern is not a valid regular expression: {err}; got "
                                 f"{_show(pattern)}") from None
            hit = np.fromiter((rx.search(n) is not None for n in g.names[:g.n_gpu]),
                              dtype=bool, count=g.n_gpu)
            mask[:g.n_gpu] &= hit
        if category is not None:
            category = check_choice("category", category, KINDS + tuple(GROUPS))
            codes = [KINDS.index(k) for k in kinds_of(category)]
            mask &= np.isin(g.kind, codes)
        if rank is not None:
            rank = check_choice("rank", rank, self.ranks)
            mask &= self._rank == rank
        if stream is not None:
            stream = check_int("stream", stream)
            on = np.zeros(self.n_ops, dtype=bool)
            on[:g.n_gpu] = g.stream == stream
            mask &= on
        return mask

    # ---- what-ifs
    def replay(self):
        """The unmodified replay (:attr:`baseline`)."""
        return self.baseline

    def what_if(self, factor=None, delay=None, what: str = "what-if"):
        """Replay with each op's length times ``factor[i]`` (per op, >= 0; a collective's
        factor scales its own transfer, not its wait) and ``delay[i]`` seconds (per op, >= 0)
        added to each communication op: its collective's transfers start that much after the
        last member arrives, on every member (the largest delay of its members counts). CPU
        entries of either are ignored. ``what``: a label for the result.

        >>> t = read_kineto(sample_kineto_traces(n_layers=1))
        >>> f = np.where(t.select(category="gemm"), 2.0, 1.0)
        >>> t.what_if(factor=f).step_time > t.baseline.step_time
        True
        """
        n = self.n_ops
        if factor is None:
            factor = self._ones
        else:
            factor = as_float_array("factor", factor, ndim=1, shape=(n,), lo=0.0,
                                    hi=_MAX_FACTOR)
        if delay is not None:
            delay = as_float_array("delay", delay, ndim=1, shape=(n,), lo=0.0, hi=_MAX_DELAY,
                                   unit="s") / NS
        if not isinstance(what, str) or len(what) > 500:
            raise ValueError(f"what must be a short label (at most 500 characters); got "
                             f"{_show(what)}")
        return self._replay(factor, delay, what, self.baseline.step_time)

    def scale(self, factor: float, pattern: str | None = None, category: str | None = None,
              rank: int | None = None):
        """Replay with the GPU ops that :meth:`select` picks (``pattern``, ``category``,
        ``rank``; none given: every GPU op) taking ``factor`` times as long (``factor`` >= 0).

        >>> t = read_kineto(sample_kineto_traces(n_layers=1))
        >>> t.scale(1.5, category="all-to-all").step_time > t.baseline.step_time
        True
        """
        factor = check_real("factor", factor, lo=0.0, hi=_MAX_FACTOR)
        mask = self._picked(self.select(pattern, category, rank), pattern=pattern,
                            category=category, rank=rank)
        picked = [f"/{pattern}/" if pattern is not None else "",
                  category if category is not None else "" if pattern else "GPU ops",
                  "" if rank is None else f"of rank {rank}"]
        return self.what_if(np.where(mask, factor, 1.0), None,
                            " ".join(p for p in picked if p) + f" ×{factor:g}")

    def delay_comm(self, seconds: float, rank: int | None = None, stream: int | None = None):
        """Replay with every communication op of ``rank`` (and ``stream``; None: all) late by
        ``seconds`` (>= 0): each collective it takes part in ends that much later on every
        member, its unjoined ops take that much longer.

        >>> t = read_kineto(sample_kineto_traces(n_layers=1))
        >>> round(t.delay_comm(1e-3, rank=0).change * 1e3, 3)  # 3 collectives in a row (model)
        3.0
        """
        seconds = check_real("seconds", seconds, lo=0.0, hi=_MAX_DELAY, unit="s")
        mask = self._picked(self.select(category="communication", rank=rank, stream=stream),
                            rank=rank, stream=stream, what="communication op")
        where = "" if rank is None else f" of rank {rank}"
        where += "" if stream is None else f" on stream {stream}"
        return self.what_if(None, np.where(mask, seconds, 0.0),
                            f"communication{where} delayed by {seconds * 1e6:g} µs")

    def slow_rank(self, rank: int, factor: float):
        """Replay with every GPU op of ``rank`` taking ``factor`` times as long (>= 0).

        >>> t = read_kineto(sample_kineto_traces(n_layers=1))
        >>> t.slow_rank(1, 1.2).ratio > 1.0
        True
        """
        rank = check_choice("rank", rank, self.ranks)
        factor = check_real("factor", factor, lo=0.0, hi=_MAX_FACTOR)
        mask = self.select(rank=rank)
        return self.what_if(np.where(mask, factor, 1.0), None,
                            f"GPU ops of rank {rank} ×{factor:g}")

    def _picked(self, mask, what="GPU op", **given):
        if not mask.any():
            said = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
            names = ", ".join(sorted(KINDS[k] for k in set(self._g.kind[:self._g.n_gpu])))
            name = next((k for k, v in given.items() if v is not None), "category")
            raise ValueError(f"{name}: no {what} matches {said or 'the selection'}; the trace "
                             f"has kinds {names}")
        return mask

    def _replay(self, factor, delay_ns, what, baseline):
        start, finish, step, crit, share = run(self._g, factor, delay_ns)
        for a in (start, finish, crit):
            a.flags.writeable = False
        return trusted(KinetoReplay, trace=self, start=start, finish=finish, step_time=step,
                       baseline_step_time=step if baseline is None else baseline,
                       critical_path=crit, critical_time=share, what=what)

    def __repr__(self) -> str:
        return (f"KinetoTrace(ranks={self.ranks}, {self.n_gpu_ops} GPU ops, "
                f"{self.n_ops - self.n_gpu_ops} CPU calls, {self.n_collectives} collectives, "
                f"waits {self.wait_modes})")


def _ids(name, ids, n):
    return as_int_array(name, ids, ndim=1, lo=0, hi=n - 1)


@dataclass(frozen=True)
class KinetoReplay(Checked):
    """One replay of a :class:`KinetoTrace` (times in s from the traces' earliest event).

    ``start``, ``finish``: per op; ``step_time``: the last finish; ``baseline_step_time``: the
    unmodified replay's; ``change`` (s) and ``ratio`` against it; ``critical_path``: op ids of
    the chain that set the step, first to last (from the last-finishing op back through the
    predecessor that set each start: the previous op on its stream or thread, its launch, a
    wait, or the collective member that arrived last); ``critical_time``: where that chain's
    time went (s per kind, ``launch latency``, ``cpu``, ``waits``, ``before the first op``);
    ``what``: the what-if. :meth:`trace_table` gives it to :func:`uneven.trace.to_chrome`.

    >>> r = read_kineto(sample_kineto_traces(n_layers=1)).replay()
    >>> r.change, len(r.critical_path) > 0
    (0.0, True)
    """

    trace: object = instance("uneven.trace.kineto:KinetoTrace")
    start: np.ndarray = array(shape=lambda r: (r.trace.n_ops,), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=lambda r: (r.trace.n_ops,), lo="start", repr=False)
    step_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    baseline_step_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    critical_path: np.ndarray = array("int", ndim=1, lo=0, hi=lambda r: r.trace.n_ops - 1,
                                      repr=False)
    critical_time: dict = named(real(lo=0.0, hi=_MAX_TIME, unit="s"), lo=0, hi=64, repr=False)
    what: str = text(max_len=500)

    @property
    def change(self) -> float:
        """Step time minus the unmodified replay's (s)."""
        return self.step_time - self.baseline_step_time

    @property
    def ratio(self) -> float:
        """Step time over the unmodified replay's (1 when that is under a femtosecond)."""
        base = self.baseline_step_time
        return self.step_time / base if base >= 1e-15 else 1.0

    @property
    def critical_ranks(self) -> tuple:
        """The ranks the critical path passes through, in the order it does (repeats merged)."""
        out = []
        for r in self.trace.rank[self.critical_path].tolist():
            if not out or out[-1] != r:
                out.append(r)
        return tuple(out)

    def report(self) -> str:
        """The step, its change, and where its critical path spends its time (model)."""
        top = sorted(self.critical_time.items(), key=lambda kv: -kv[1])[:4]
        where = ", ".join(f"{k} {v / self.step_time:.0%}" for k, v in top) if (
            self.step_time > 0) else "-"
        return (f"{self.what}: step {self.step_time * 1e3:.3f} ms ({self.change * 1e3:+.3f} ms, "
                f"{self.ratio - 1:+.1%}) (model); critical path: {self.critical_path.size} ops "
                f"on ranks {self.critical_ranks}; its time: {where}")

    def trace_table(self) -> TraceTable:
        """This replay as a :class:`~uneven.trace._table.TraceTable`: one process per rank, one
        thread per stream and CPU thread, the ops' names, and ``args`` with each op's kind,
        recorded and replayed start (µs), collective, and whether it is on the critical path;
        predecessors: launches, stream waits, blocking calls and, for a collective, its member
        that arrived last."""
        tr = self.trace
        g = tr._g
        crit = np.zeros(tr.n_ops, dtype=bool)
        crit[self.critical_path] = True
        ptr, src = display_edges(g, self.start)
        names = g.names
        kind = g.kind
        rec = g.rec_start
        start = self.start

        def details(ids):
            out = []
            for i in np.asarray(ids, dtype=np.int64).tolist():
                d = {"kind": KINDS[kind[i]], "rank": int(tr.rank[i]),
                     "recorded start (us)": round(rec[i] / 1000.0, 3),
                     "replayed start (us)": round(start[i] * 1e6, 3),
                     "critical path": bool(crit[i])}
                if g.corr[i] >= 0:
                    d["correlation"] = int(g.corr[i])
                if i < g.n_gpu and g.op_coll[i] >= 0:
                    args = g.args[i]
                    for key in ("Collective name", "Process Group Name", "Seq"):
                        if key in args and isinstance(args[key], (str, int, float)):
                            d[key] = args[key]
                out.append(d)
            return out

        return TraceTable(
            start=self.start, finish=self.finish, thread=g.op_thread,
            thread_process=g.thread_proc, thread_names=g.thread_names,
            process_names=tuple(f"rank {r}" for r in g.ranks),
            category=np.asarray(TABLE_CATEGORY, dtype=np.int64)[kind],
            label=lambda ids: [names[i] for i in np.asarray(ids, dtype=np.int64).tolist()],
            details=details, dep_ptr=ptr, dep_src=src, rank_of_process=g.ranks,
            metadata={"source": "uneven.trace.kineto replay (model)", "what_if": self.what,
                      "step_time_s": self.step_time,
                      "baseline_step_time_s": self.baseline_step_time,
                      "traces": list(g.sources)})


def sample_kineto_traces(n_ranks: int = 2, n_layers: int = 4, *, seed: int = 0,
                         bucket: int = 2, rank_speed=None, sync_events: bool = True) -> list:
    """A **synthetic (model)** training step in Kineto's trace format: one dict per rank, as
    ``json.load`` would give it (write it with ``json.dump`` to get a file).

    Each of ``n_ranks`` ranks (1-64) runs ``n_layers`` (1-20,000) forward and backward layers:
    GEMMs, attention and elementwise kernels on a compute stream, an MoE all-to-all per layer
    and direction and a gradient all-reduce every ``bucket`` layers on an NCCL stream (stream
    waits both ways, the all-reduces not waited for until the optimizer), launched from one CPU
    thread with ``ac2g`` flows, then a device-to-host copy and a ``cudaStreamSynchronize``.
    Kernel lengths are nominal values times ``rank_speed[r]`` (default 1 for every rank) times a
    seeded jitter; the times come from the library's timeline engine, not from a GPU.
    ``sync_events``: write the ``cuda_sync`` events (else the reader infers the waits).

    >>> traces = sample_kineto_traces(n_ranks=2, n_layers=1)
    >>> len(traces), traces[1]["distributedInfo"]["rank"]
    (2, 1)
    """
    n_ranks = check_int("n_ranks", n_ranks, lo=1, hi=64)
    n_layers = check_int("n_layers", n_layers, lo=1, hi=20_000)
    seed = check_int("seed", seed, lo=0, hi=2**63 - 1)
    bucket = check_int("bucket", bucket, lo=1, hi=20_000)
    if rank_speed is None:
        rank_speed = np.ones(n_ranks)
    rank_speed = as_float_array("rank_speed", rank_speed, ndim=1, shape=(n_ranks,), lo=0.01,
                                hi=100.0)
    if not isinstance(sync_events, (bool, np.bool_)):
        raise ValueError(f"sync_events must be True or False; got {_show(sync_events)}")
    check_steps("n_layers", n_layers, 60 * PY_STEP * n_ranks * n_layers,
                "writing the sample trace's events")
    return sample_traces(n_ranks, n_layers, seed, bucket, rank_speed, bool(sync_events))
