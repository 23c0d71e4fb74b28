"""How close PipeMorph's closed-form warm-up plan comes to the best plan, on small pipelines.

PipeMorph plans warm-up counts with a closed form (``replan_warmups`` in
:mod:`uneven.schedulers.pipeline`, the artifact's ``get_adapted_warmup_fwds``) and reports it
within 1.7-2.3% of an ILP optimum on average, 5.5% at worst, for (S, N) = (3, 6) to (8, 32)
[paper, simulation]. The ILP itself is not in the artifact we read. This module gives the
reader an exact comparison to run: for a small pipeline it tries **every** warm-up plan
``m >= w_0 >= w_1 >= ... >= w_{p-1} >= 1`` with the live dispatcher the re-plan uses (B before F
before W, at most ``w_i`` micro-batches between their F and their B, ZB-H2's memory budget raised
to ``w_0``: mode ``"replan"`` with the plan given) and keeps the fastest. It is exact within that
family of plans, not over every possible op order (model). Units: seconds.

>>> r = best_warmups(3, 6, 0.01, 0.003, 0.01, delays=[0.047, 0.0])   # a short backward
>>> r.planner, r.best, r.n_plans, round(r.gap, 3)
((6, 3, 1), (6, 2, 1), 56, 0.034)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, check_fields, integer, items, real
from .._validate import as_float_array, check_int, check_real, trusted
from .pipeline import pipeline_schedule, replan_warmups, simulate_pipeline

__all__ = ["WarmupSearch", "best_warmups", "planner_gaps"]

_MAX_PLANS = 20_000


@dataclass(frozen=True)
class WarmupSearch(Checked):
    """The fastest warm-up plan (``best``, ``best_time`` s) against the closed-form planner's
    (``planner``, ``planner_time`` s) for one pipeline and its delays; ``n_plans`` tried.
    Checked when made (times up to 1e30 s, ``best_time`` at least 1e-15 s so that ``gap`` is
    finite)."""

    best: tuple = items(integer(lo=1, hi=4096), hi=64)
    best_time: float = real(lo=1e-15, hi=1e30, unit="s")
    planner: tuple = items(integer(lo=1, hi=4096), hi=64)
    planner_time: float = real(lo=0.0, hi=1e30, unit="s")
    n_plans: int = integer(lo=1, hi=_MAX_PLANS)

    def __post_init__(self):
        check_fields(self)

    @property
    def gap(self) -> float:
        """The planner's iteration over the best one's, minus 1 (0 when it finds the best)."""
        return self.planner_time / self.best_time - 1.0


def _plans(p, m):
    """Every non-increasing warm-up tuple with entries in [1, m]."""
    yield from itertools.combinations_with_replacement(range(m, 0, -1), p)


def best_warmups(p: int, m: int, t_f: float, t_b: float, t_w: float = 0.0, *,
                 delays) -> WarmupSearch:
    """Try every warm-up plan of a ``p``-stage pipeline of ``m`` micro-batches (equal op times
    ``t_f``, ``t_b``, ``t_w`` s on every stage) under the link ``delays`` (s, one per link) and
    return the fastest beside the closed-form planner's. ``p`` in [2, 8], ``m`` in [1, 32], at
    most 20,000 plans (``C(m + p - 1, p)``); times in (0, 1e3] s (``t_w`` may be 0), delays in
    [0, 1e3] s.
    """
    p = check_int("p", p, lo=2, hi=8)
    m = check_int("m", m, lo=1, hi=32)
    tf = check_real("t_f", t_f, lo=0.0, hi=1e3, lo_open=True, unit="s")
    tb = check_real("t_b", t_b, lo=0.0, hi=1e3, lo_open=True, unit="s")
    tw = check_real("t_w", t_w, lo=0.0, hi=1e3, unit="s")
    d = as_float_array("delays", delays, ndim=1, shape=(p - 1,), lo=0.0, hi=1e3, unit="s")
    from math import comb

    n = comb(m + p - 1, p)
    if n > _MAX_PLANS:
        raise ValueError(f"p={p}, m={m} has {n:,} warm-up plans; at most {_MAX_PLANS:,} are "
                         "tried (use fewer stages or micro-batches)")

    sched = pipeline_schedule("zb-h2", p, m)  # the re-plan's own dispatcher and memory budget

    def run(w):
        return simulate_pipeline(sched, tf, tb, tw, delays=d, mode="replan",
                                 warmups=w).iteration_time

    best, best_t, tried = None, np.inf, 0
    for w in _plans(p, m):
        t = run(w)
        tried += 1
        if t < best_t:
            best, best_t = w, t
    plan = tuple(int(v) for v in replan_warmups(d, t_f=tf, m=m))
    return trusted(WarmupSearch, best=tuple(int(v) for v in best), best_time=float(best_t),
                   planner=plan, planner_time=float(run(None)), n_plans=tried)


def planner_gaps(p: int, m: int, t_f: float, t_b: float, t_w: float = 0.0, *,
                 n_cases: int = 40, max_delay: float = 0.06, seed: int = 0) -> np.ndarray:
    """The planner's gap to the best plan (:func:`best_warmups`) on ``n_cases`` random delay
    vectors: each link slow with probability 1/2, its delay uniform in [0, ``max_delay``] s;
    op times ``t_f``, ``t_b``, ``t_w`` s. ``n_cases`` in [1, 1,000]; ``max_delay`` in [0, 1e3]
    s; ``seed`` an integer >= 0.

    >>> g = planner_gaps(3, 6, 0.01, 0.01, 0.01, n_cases=8)
    >>> bool(g.max() < 1e-9), g.size          # equal op times: the closed form is the best plan
    (True, 8)
    """
    n_cases = check_int("n_cases", n_cases, lo=1, hi=1000)
    max_delay = check_real("max_delay", max_delay, lo=0.0, hi=1e3, unit="s")
    p = check_int("p", p, lo=2, hi=8)
    rng = np.random.default_rng(check_int("seed", seed, lo=0))
    out = np.empty(n_cases)
    for k in range(n_cases):
        d = np.where(rng.random(p - 1) < 0.5, rng.uniform(0.0, max_delay, p - 1), 0.0)
        out[k] = best_warmups(p, m, t_f, t_b, t_w, delays=d).gap
    return np.maximum(out, 0.0)  # the planner's plan is one of those tried: no negative gap
