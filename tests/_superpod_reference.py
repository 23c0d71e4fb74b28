"""The pure-Python reference of the superpod decode kernel, fed from the library's own plans.

Shared by tests/test_cores.py and tests/test_superpod_tails.py: both compare ``decode_steps``
with :func:`uneven.ep.superpod._reference_decode` on the same draws.
"""

from __future__ import annotations

from uneven.ep import superpod as M


def reference_tpot(t, c, s, jit, *, n_layers=4, other=500e-6, expert=100e-6):
    """Steps' times per output token the reference gives for traffic ``t``, costs ``c``, scheme
    ``s`` and per-op delays ``jit`` (s), with ``other`` and ``expert`` time per layer (s)."""
    d = M.phase_plan(t, c, s, "dispatch")
    cb = M.phase_plan(t, c, s, "combine")
    dargs = (*M._plan_args(d), d.barrier1, M._sends(d)[0])
    cargs = M._plan_args(cb)
    return M._reference_decode(jit, n_layers, other, expert, dargs,
                               (cargs[1], cargs[3], cargs[4], M._sends(cb)[0]),
                               s.concurrent, s.sync == "barrier", c.barrier_cost,
                               c.hop_latency, t.ranks_per_node)
