"""Speed of the timeline engine and of the pipeline simulator built on it.

* the engine against its pure-Python reference (fixed-point sweeps) and against its own Kahn
  kernel run as plain Python (same run, same input): on the DAG of one pipeline iteration
  (~20k ops, the real workload) and on a random DAG of 20,000 ops whose edges jump anywhere
  (the cache-unfriendly worst case);
* one training iteration of p = 64 stages and m = 1,024 micro-batches (about 200k ops), replayed
  and re-planned under link delays;
* a widget-sized call (p = 4, m = 12), the latency a slider sees.

Run alone: ``python benchmarks/bench_timeline.py``.
"""

from __future__ import annotations

import time

import numpy as np
from _timing import best_of

from uneven.engines._timeline_kernel import _reference_timeline
from uneven.engines.timeline import (
    _resource_orders,
    _timeline_kernel,
    edges_to_csr,
    run_timeline,
)
from uneven.schedulers import pipeline as P
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline


def _random_dag(n, n_res=16, per_op=3, seed=0):
    rng = np.random.default_rng(seed)
    resource = rng.integers(0, n_res, n)
    duration = rng.uniform(0.0, 1.0, n)
    src = rng.integers(0, n, per_op * n)
    dst = rng.integers(0, n, per_op * n)
    keep = src < dst  # op ids are a topological order, and so are the resource orders
    delay = rng.uniform(0.0, 0.5, keep.sum())
    return resource, duration, edges_to_csr(n, src[keep], dst[keep], delay)


def _pipeline_dag(p=8, m=512):
    """The DAG of one ZB-H1 iteration with head-of-line sends (~20k ops), its ops
    renumbered in a topological order (by healthy start time) so the pure-Python reference
    settles in one sweep and the comparison measures the engines, not the sweep count."""
    sched = pipeline_schedule("zb-h1", p, m)
    t = np.full(p, 0.01)
    lt = np.zeros(p)
    ld = np.full(p, 0.002)
    order = P._fixed_order(sched)  # ZB-H1 is the authors' hand-made order
    dur, res, _, _, _, _, ptr, src, dly = P._dag(sched, order, t, t, t, ld, lt, True)
    start = run_timeline(dur, res, ptr, src, dly).start
    perm = np.lexsort((np.arange(dur.size), start))  # new id k is old op perm[k]
    new_id = np.empty_like(perm)
    new_id[perm] = np.arange(perm.size)
    dst = np.repeat(np.arange(dur.size), np.diff(ptr))
    ptr2, src2, dly2 = edges_to_csr(dur.size, new_id[src], new_id[dst], dly)
    return res[perm], dur[perm], (ptr2, src2, dly2)


def _engine_vs_reference(name, resource, duration, csr):
    ptr, src, dly = csr
    n = duration.size
    run_timeline(duration[:10], resource[:10])  # warm the JIT
    engine = best_of(lambda: run_timeline(duration, resource, ptr, src, dly), 5)[0]
    deps = [[] for _ in range(n)]
    for i in range(n):
        for k in range(ptr[i], ptr[i + 1]):
            deps[i].append((int(src[k]), float(dly[k])))
    dur_list, res_list = duration.tolist(), resource.tolist()
    reference = best_of(lambda: _reference_timeline(dur_list, res_list, deps), 1)[0]
    order_ptr, order_ops = _resource_orders(resource)

    def interpreted():
        start, finish, done = np.empty(n), np.empty(n), np.zeros(n, dtype=np.int64)
        _timeline_kernel.py_func(duration, np.zeros(n), order_ptr, order_ops, ptr, src, dly,
                                 start, finish, done)

    kahn_py = best_of(interpreted, 1)[0]
    size = f"{name}: {n:,} ops, {int(ptr[-1]):,} edges"
    return [
        {
            "benchmark": "timeline engine vs pure-Python reference",
            "size": size,
            "seconds": engine,
            "reference_seconds": reference,
            "ratio": reference / engine,
            "metric": f"{n / engine:.3g} ops/s",
            "target": ">= 50x",
            "met": reference / engine >= 50,
        },
        {
            "benchmark": "timeline engine vs its own kernel run as plain Python",
            "size": size,
            "seconds": engine,
            "reference_seconds": kahn_py,
            "ratio": kahn_py / engine,
            "metric": f"{n / engine:.3g} ops/s",
            "target": ">= 50x",
            "met": kahn_py / engine >= 50,
        },
    ]


def _big_iteration(p=64, m=1024):
    rng = np.random.default_rng(1)
    delays = np.where(rng.random(p - 1) < 0.1, 0.03, 0.0)
    t = 0.01
    out = []
    for kind, mode in (("zb-h1", "replay"), ("zb-h1", "replan"), ("1f1b", "replay")):
        small = pipeline_schedule(kind, 4, 12)
        simulate_pipeline(small, t, t, t, delays=[0.01, 0, 0], mode=mode)  # warm the JIT
        sched = pipeline_schedule(kind, p, m)
        holder = {}

        def go(sched=sched, mode=mode, holder=holder):
            holder["r"] = simulate_pipeline(sched, t, t, t, delays=delays, mode=mode)

        secs = best_of(go, 2)[0]
        n_ops = holder["r"].start.size
        out.append({
            "benchmark": f"pipeline iteration, {kind} {mode}",
            "size": f"p={p}, m={m:,} ({n_ops:,} ops)",
            "seconds": secs,
            "metric": f"{n_ops / secs:.3g} ops/s",
            "target": "report",
            "met": None,
        })
    return out


def _widget_call():
    sched = pipeline_schedule("zb-h2", 4, 12)
    simulate_pipeline(sched, 0.01, 0.01, 0.01, delays=[0.01, 0, 0])
    reps = 200
    t0 = time.perf_counter()
    for i in range(reps):
        simulate_pipeline(sched, 0.01, 0.01, 0.01, delays=[0.0001 * i, 0, 0])
    secs = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for i in range(reps):
        simulate_pipeline(sched, 0.01, 0.01, 0.01, delays=[0.0001 * i, 0, 0], mode="replan")
    secs_replan = (time.perf_counter() - t0) / reps
    return [
        {
            "benchmark": "widget-sized call, zb-h2 replay",
            "size": "p=4, m=12",
            "seconds": secs,
            "metric": f"{secs * 1e3:.2f} ms per call",
            "target": "< 50 ms",
            "met": secs < 0.05,
        },
        {
            "benchmark": "widget-sized call, re-plan",
            "size": "p=4, m=12",
            "seconds": secs_replan,
            "metric": f"{secs_replan * 1e3:.2f} ms per call",
            "target": "< 50 ms",
            "met": secs_replan < 0.05,
        },
    ]


def run() -> list[dict]:
    """All timeline benchmarks (JIT warmed before timing)."""
    rows = _engine_vs_reference("pipeline DAG p=8 m=512", *_pipeline_dag())
    rows += _engine_vs_reference("random DAG", *_random_dag(20_000))
    return rows + _big_iteration() + _widget_call()


if __name__ == "__main__":
    for row in run():
        print(row)
