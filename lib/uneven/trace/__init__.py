"""Timelines out, traces in.

* :func:`to_chrome` writes any timeline of the library (pipeline iteration, MoE layer, decode
  layer, superpod core phase, fluid flows, a replayed profile) as Chrome Trace Event JSON for
  Perfetto (https://ui.perfetto.dev) and profiler-trace tools (:mod:`uneven.trace.chrome`);
  :func:`save` puts it beside the figures (``figures/traces/``).
* :func:`as_table` turns a result into the columnar :class:`TraceTable` the writer streams
  (:mod:`uneven.trace.adapters`).
* :func:`read_kineto` reads PyTorch profiler traces of one or several ranks into a timeline
  that replays to their recorded starts; its what-ifs (scale kernels, delay a rank's
  communication, slow a rank) return new replays with the critical path
  (:mod:`uneven.trace.kineto`).
"""

from ._table import CATEGORIES, TraceTable
from .adapters import as_table
from .chrome import save, to_chrome, waited_for
from .kineto import (
    KINETO_GROUPS,
    KINETO_KINDS,
    KinetoReplay,
    KinetoTrace,
    read_kineto,
    sample_kineto_traces,
)

__all__ = ["TraceTable", "CATEGORIES", "as_table", "to_chrome", "save", "waited_for",
           "read_kineto", "KinetoTrace", "KinetoReplay", "sample_kineto_traces", "KINETO_KINDS",
           "KINETO_GROUPS"]
