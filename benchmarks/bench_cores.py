"""Speed of the core-group model (uneven.ep.superpod) and of notebook 06's explorer.

* 10,000 jittered EP320 dispatches through the rank-level kernel (draws included), against the
  pure-Python reference of the same equations (timed on a few steps, scaled per step);
* 1,000 decode steps of EP64 (58 MoE layers, dispatch and combine in every layer);
* one EP64 dispatch as ops on all 3,072 cores, run on the timeline engine (what the explorer's
  Gantt charts draw);
* the explorer's update latency: median of 20 updates (compute + draw + PNG) at 1.5x, as in
  ``bench_widgets.py``.

Run alone: ``python benchmarks/bench_cores.py``.
"""

from __future__ import annotations

import statistics

import numpy as np
from _timing import best_of

from uneven.ep import superpod as M
from uneven.ep.superpod import (
    CoreCosts,
    core_timeline,
    decode_steps,
    latency_samples,
    phase_plan,
    scheme,
    superpod_traffic,
)
from uneven.explorers import nb06


def _dispatch_steps(n_steps=10_000, ep=320):
    traffic = superpod_traffic(ep, seed=0)
    costs = CoreCosts()
    rows = []
    for kind in ("baseline", "ubep"):
        plan = phase_plan(traffic, costs, scheme(kind))
        latency_samples(plan, 2, 2e-6, seed=0)  # warm the JIT
        secs, out = best_of(lambda plan=plan: latency_samples(plan, n_steps, 2e-6, seed=1), 3)
        # the reference on a few steps, with the same draws
        k = 5
        jit = M._Draws(1, 2e-6)((k, 3, ep))
        cnt, snd, ser, flg, poll = (np.asarray(x).tolist() if not isinstance(x, float) else x
                                    for x in M._plan_args(plan))
        sends = M._sends(plan)[0]
        sends = sends.tolist()
        lat = costs.hop_latency

        def ref(jit=jit, plan=plan, cnt=cnt, snd=snd, ser=ser, flg=flg, poll=poll, sends=sends,
                lat=lat):
            z = [0.0] * ep
            return [max(M._reference_phase(z, cnt, snd, ser, flg, poll, j[0], j[1], j[2],
                                           plan.barrier1, plan.scheme.concurrent, True,
                                           plan.scheme.sync == "barrier", sends,
                                           costs.barrier_cost, lat, traffic.ranks_per_node))
                    for j in jit]

        ref_secs, ref_out = best_of(ref, 1)
        assert np.allclose(ref_out, out[:k], rtol=0, atol=1e-15)
        ref_per_run = ref_secs / k * n_steps
        rows.append({
            "benchmark": f"EP{ep} jittered dispatch, {kind}, rank-level kernel",
            "size": f"{n_steps:,} steps x {ep} ranks (draws included)",
            "seconds": secs,
            "reference_seconds": ref_per_run,
            "ratio": ref_per_run / secs,
            "metric": f"{n_steps / secs:,.0f} steps/s; reference timed on {k} steps",
            "target": "< 1 s",
            "met": secs < 1.0,
        })
    return rows


def _decode(n_steps=1000, ep=64):
    traffic = superpod_traffic(ep, seed=0)
    costs = CoreCosts()
    decode_steps(traffic, costs, scheme("ubep"), n_steps=2, n_layers=2)  # warm the JIT
    secs, _ = best_of(lambda: decode_steps(traffic, costs, scheme("ubep"), n_steps=n_steps,
                                           jitter=2e-6, seed=1), 2)
    return [{
        "benchmark": f"EP{ep} decode steps (58 MoE layers), UBEP",
        "size": f"{n_steps:,} steps",
        "seconds": secs,
        "metric": f"{n_steps / secs:,.0f} steps/s",
        "target": "report",
        "met": None,
    }]


def _core_timeline(ep=64):
    traffic = superpod_traffic(ep, seed=0)
    plan = phase_plan(traffic, CoreCosts(), scheme("baseline"))
    core_timeline(plan, jitter=2e-6)  # warm the JIT
    holder = {}

    def go():
        holder["t"] = core_timeline(plan, jitter=2e-6, seed=1)

    secs = best_of(go, 5)[0]
    n_ops = holder["t"].start.size
    return [{
        "benchmark": f"EP{ep} dispatch as core ops on the timeline engine",
        "size": f"{ep} dies x 48 cores, {n_ops:,} ops",
        "seconds": secs,
        "metric": f"{n_ops / secs:.3g} ops/s (graph building included)",
        "target": "report",
        "met": None,
    }]


def _widget(control="jitter_us", values=(0.0, 1.0, 2.0, 3.0, 5.0)):
    ex = nb06.ubep_explorer(show=False)
    for v in values:  # warm: compile, caches, first draw
        ex.controls[control].value = v
    ex.timings.clear()
    for v in list(values) * 4:
        ex.controls[control].value = v
    med = statistics.median(ex.timings)
    return [{
        "benchmark": "widget update, UBEP (06)",
        "size": f"median of {len(ex.timings)}, moving '{control}'",
        "seconds": med,
        "metric": "compute + draw + PNG encode",
        "target": "< 50 ms",
        "met": med < 0.05,
    }]


def run() -> list[dict]:
    """All core-group benchmarks (JIT warmed before timing)."""
    return _dispatch_steps() + _decode() + _core_timeline() + _widget()


if __name__ == "__main__":
    for row in run():
        print(row)
