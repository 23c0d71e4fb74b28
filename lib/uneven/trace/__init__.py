"""Timelines out, traces in.

* :func:`to_chrome` writes any timeline of the library (pipeline iteration, MoE layer, decode
  layer, superpod core phase, fluid flows, a replayed profile) as Chrome Trace Event JSON for
  Perfetto (https://ui.perfetto.dev) and profiler-trace tools (:mod:`uneven.trace.chrome`);
  :func:`save` puts it beside the figures (``figures/traces/``).
* :func:`as_table` turns a result into the columnar :class:`TraceTable` the writer streams
  (:mod:`uneven.trace.adapters`).
"""

from ._table import CATEGORIES, TraceTable
from .adapters import as_table
from .chrome import save, to_chrome, waited_for

__all__ = ["TraceTable", "CATEGORIES", "as_table", "to_chrome", "save", "waited_for"]
