"""The one shape every exported timeline takes: :class:`TraceTable` (columnar, per op).

Each timeline kind of the library (pipeline iteration, MoE layer, decode layer, superpod core
phase, fluid flows, a replayed profiler trace) has an adapter that turns its result into a
``TraceTable``; :func:`uneven.trace.to_chrome` writes any table as Chrome Trace Event JSON.
Names and ``args`` are produced lazily, a chunk of op ids at a time (``label(ids)``,
``details(ids)``), so a table of millions of ops is never a list of event dicts in memory.

Times are seconds. Processes are GPUs/ranks/dies (``process_names``); threads are resources
inside one process (compute stream, communication stream, CPU sender, core group:
``thread_names``, each with its process in ``thread_process``). ``category`` codes index
:data:`CATEGORIES` and decide how a trace consumer classifies the op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, any_value, array, function, graph, mapping, optional, strings
from .._validate import as_int_array

__all__ = ["TraceTable", "CATEGORIES", "COMPUTE", "COMMUNICATION", "MEMORY", "CPU", "SYNC"]

#: What an op is, for the consumer: GPU compute, GPU communication (a collective or a send),
#: memory copy/set, a CPU-side op (a launch, a CPU sender), a zero-work join (barrier, wait).
CATEGORIES = ("compute", "communication", "memory", "cpu", "sync")
COMPUTE, COMMUNICATION, MEMORY, CPU, SYNC = range(5)


def _no_details(ids) -> list:
    """No ``args`` beyond the exporter's own: one empty dict per op id."""
    return [{} for _ in range(as_int_array("ids", ids, ndim=1).size)]


@dataclass(frozen=True, eq=False)
class TraceTable(Checked):
    """Ops of a timeline, column by column (arrays of one length ``n``; times in s).

    * ``start``, ``finish``: per op (s; ``finish >= start``).
    * ``thread``: per op, index into ``thread_names`` (a tuple of strings);
      ``thread_process[t]`` is the process of thread ``t`` (index into ``process_names``).
    * ``category``: per op, code into :data:`CATEGORIES`.
    * ``label(ids) -> list[str]``: op names for an int array of op ids (e.g. ``'F3'``,
      ``'dispatch'``); ``details(ids)``: JSON-able ``args`` of those ops (stage, micro-batch,
      expert, bytes ...), either a list of dicts (one per op) or, faster, a dict of columns
      (``{"stage": array, ...}``, each of ``len(ids)`` values); default: no ``args`` of its
      own.
    * ``dep_ptr``, ``dep_src``: optional predecessor CSR (as :func:`uneven.engines.timeline
      .edges_to_csr` returns): op ``i`` waited for ``dep_src[dep_ptr[i]:dep_ptr[i+1]]``. An
      edge between two threads is drawn as a flow arrow (send -> receive); the exporter names,
      per op, its last-finishing predecessor (data or the previous op on its thread).
    * ``rank_of_process``: the rank each process stands for (default its index), written as
      Kineto's ``distributedInfo`` when the export is one file per rank.
    * ``metadata``: JSON-able facts written into the trace (source function, "model").

    >>> t = TraceTable(start=[0.0, 1e-3], finish=[1e-3, 3e-3], thread=[0, 1],
    ...                thread_process=(0, 0), thread_names=("compute", "comm"),
    ...                process_names=("GPU 0",), category=[0, 1],
    ...                label=lambda ids: [f"op{i}" for i in ids])
    >>> t.n_ops, t.label(np.arange(2))
    (2, ['op0', 'op1'])
    """

    start: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=("ops",), lo="start", repr=False)
    thread: np.ndarray = array("int", shape=("ops",), lo=0,
                               hi=lambda t: len(t.thread_names) - 1, repr=False)
    thread_process: np.ndarray = array("int", shape=lambda t: (len(t.thread_names),), lo=0,
                                       hi=lambda t: len(t.process_names) - 1, repr=False)
    thread_names: tuple = strings(repr=False)
    process_names: tuple = strings()
    category: np.ndarray = array("int", shape=("ops",), lo=0, hi=len(CATEGORIES) - 1,
                                 repr=False)
    label: Callable = function("an int array of op ids -> their names", repr=False)
    details: Callable | None = optional(function("op ids -> list of dicts or dict of columns"),
                                        default=None, repr=False)
    dep_ptr: np.ndarray | None = graph(ops=lambda t: t.start.size, default=None, repr=False)
    dep_src: np.ndarray | None = any_value(default=None, repr=False)
    rank_of_process: np.ndarray | None = optional(
        array("int", shape=lambda t: (len(t.process_names),), lo=0), default=None, repr=False)
    metadata: dict = mapping(json=True, default_factory=dict, repr=False)
    check_first = ("thread_names", "process_names", "start")

    def args(self, ids) -> list | dict:
        """``details(ids)`` for an int array of op ids, or one empty dict per op when the table
        has no details."""
        ids = as_int_array("ids", ids, ndim=1, lo=0, hi=self.n_ops - 1)
        return _no_details(ids) if self.details is None else self.details(ids)

    @property
    def ranks(self) -> tuple:
        """The rank of each process (``rank_of_process``, default the process index)."""
        if self.rank_of_process is None:
            return tuple(range(len(self.process_names)))
        return tuple(self.rank_of_process.tolist())

    @property
    def n_ops(self) -> int:
        """Number of ops."""
        return int(self.start.size)

    @property
    def process(self) -> np.ndarray:
        """Per op, its process (index into ``process_names``)."""
        return np.asarray(self.thread_process, dtype=np.int64)[self.thread]
