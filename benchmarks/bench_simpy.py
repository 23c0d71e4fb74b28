"""The pipeline simulator against SimPy, the discrete-event library a Python user would pick.

The same Megatron 1F1B iteration, written idiomatically in SimPy (``_simpy_pipeline.py``: one
process per stage, ``Store`` queues for activations and gradients, a ``Resource`` per CPU sender,
one process per message on the wire) and simulated by
:func:`uneven.schedulers.pipeline.simulate_pipeline` (fixed 1F1B order, ``mode="replay"``), on
uneven stages (op times drawn per stage), with slow links (a tenth of the links 30 % of a forward
late) and a transfer time on every link. Before timing, every compute op's start time and the
iteration time are checked identical (``==``, not a tolerance). SimPy is timed without recording
per-op times (its leanest run); the engine always returns them. Both are single-threaded and
timed in CPU seconds (best of 5 for the engine, of 3 for SimPy), so another process on the shared
cores does not bend the ratio. The time is the whole call: input checks, the order, timing every
op (the one-pass replay kernel of ``uneven.schedulers._replay``) and the result.

A second row per size, for context and without a target, times the generic timeline engine
(:func:`uneven.engines.timeline.run_timeline`) on the same ops and predecessors, given ready-made
(what ``simulate_pipeline`` ran before it had its own kernel, and what the tests compare that
kernel against): it pays for edge lists, successor lists and a queue.

Needs ``simpy`` (the ``research`` extra); skipped with a row saying so when it is missing.
Run alone: ``python benchmarks/bench_simpy.py``.
"""

from __future__ import annotations

import numpy as np
from _timing import best_cpu_of

from uneven.engines.timeline import run_timeline
from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline

SIZES = ((8, 64), (16, 256), (32, 512))
TARGET = 100.0


def _case(p, m, seed=0):
    rng = np.random.default_rng(seed)
    tf = rng.uniform(0.009, 0.011, p)
    tb = 2.0 * tf
    delays = np.where(rng.random(p - 1) < 0.1, 0.003, 0.0)
    transfer = np.full(p - 1, 0.0002)
    return tf, tb, delays, transfer


def _check_same(p, m, hol, simpy_1f1b):
    """Both simulators on one case; raise if any compute op starts at a different time."""
    tf, tb, delays, transfer = _case(p, m, seed=p + m)
    r = simulate_pipeline(pipeline_schedule("1f1b", p, m), tf, tb, delays=delays,
                          transfer=transfer, hol=hol)
    it, ops = simpy_1f1b(p, m, tf.tolist(), tb.tolist(), delays.tolist(), transfer.tolist(),
                         hol=hol)
    comp = r.kind <= 1
    theirs = np.array([ops[(int(s), int(k), int(j))][0] for s, k, j in
                       zip(r.stage[comp], r.kind[comp], r.microbatch[comp], strict=True)])
    if it != r.iteration_time or not np.array_equal(theirs, r.start[comp]):
        raise AssertionError(f"SimPy and the engine disagree at p={p}, m={m}, hol={hol}: "
                             f"iteration {it!r} vs {r.iteration_time!r}, largest start "
                             f"difference {np.abs(theirs - r.start[comp]).max():.3g} s")
    return len(ops)


def run() -> list[dict]:
    try:
        import simpy
        from _simpy_pipeline import simpy_1f1b
    except ImportError:
        return [{"benchmark": "simulate_pipeline vs SimPy (1F1B)", "size": "",
                 "metric": "SKIPPED: simpy is not installed (pip install -e '.[research]')",
                 "target": f">= {TARGET:.0f}x", "met": None}]
    simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 1.0, 2.0, delays=0.1, transfer=0.01)
    rows = []
    for p, m in SIZES:
        for hol in (False, True):
            checked = _check_same(p, m, hol, simpy_1f1b)
            tf, tb, delays, transfer = _case(p, m)
            sched = pipeline_schedule("1f1b", p, m)
            eng, r = best_cpu_of(lambda s=sched, a=tf, b=tb, d=delays, x=transfer, h=hol:
                             simulate_pipeline(s, a, b, delays=d, transfer=x, hol=h), 5)
            lists = tf.tolist(), tb.tolist(), delays.tolist(), transfer.tolist()
            ref, (it, _) = best_cpu_of(lambda p=p, m=m, a=lists, h=hol:
                                       simpy_1f1b(p, m, *a, hol=h, record=False), 3)
            if it != r.iteration_time:
                raise AssertionError(f"iteration times differ: SimPy {it!r}, engine "
                                     f"{r.iteration_time!r}")
            ratio = ref / eng
            how = "sends on the GPU stream" if hol else "CPU senders"
            gen = _generic_engine_seconds(sched, tf, tb, delays, transfer, hol, r)
            rows.append({
                "benchmark": f"simulate_pipeline vs SimPy {simpy.__version__} (1F1B, {how})",
                "size": f"p={p}, m={m:,} ({2 * p * m:,} compute ops)",
                "seconds": eng,
                "reference_seconds": ref,
                "ratio": ratio,
                "metric": f"CPU time; iteration time identical ({it:.6g} s), {checked:,} op starts "
                          f"identical; SimPy {2 * p * m / ref:.3g} ops/s, engine "
                          f"{2 * p * m / eng:.3g} ops/s",
                "target": f">= {TARGET:.0f}x",
                "met": ratio >= TARGET,
            })
            rows.append({
                "benchmark": f"generic timeline engine vs SimPy (1F1B, {how})",
                "size": f"p={p}, m={m:,}",
                "seconds": gen,
                "reference_seconds": ref,
                "ratio": ref / gen,
                "metric": "CPU time of run_timeline on the ready-made ops and predecessors "
                          "(same start times); for context",
                "target": "",
                "met": None,
            })
    return rows


def _generic_engine_seconds(sched, tf, tb, delays, transfer, hol, result):
    """CPU seconds of ``run_timeline`` on the case's ops and predecessors (built untimed); checks
    it reproduces ``result``'s start times."""
    p, v = sched.p, sched.v
    ld, lt = P._link_array("delays", delays, p, v), P._link_array("transfer", transfer, p, v)
    order = P._fixed_order(sched)
    dur, res, *_, ptr, src, dly = P._dag(sched, order, tf, tb, np.zeros(p), ld, lt, hol)
    sec, tl = best_cpu_of(lambda: run_timeline(dur, res, ptr, src, dly), 5)
    if not np.array_equal(tl.start, result.start):
        raise AssertionError("the generic engine and simulate_pipeline disagree")
    return sec


if __name__ == "__main__":
    for row in run():
        print(row)
