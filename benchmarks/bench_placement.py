"""Speed of expert placement: EPLB for 256 experts × 58 MoE layers on 320 slots (DeepSeek-V3's
MoE layers, EP32 with 64 spare slots), the NIC-aware placement of one layer, and the
notebook 05 explorer's update latency.

Run alone: ``python benchmarks/bench_placement.py``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from _timing import best_of

from uneven.ep.placement import (
    _reference_packing,
    _reference_replicate,
    nic_aware_placement,
    rebalance_experts,
)
from uneven.explorers.nb05 import balancing_explorer

LAYERS, EXPERTS, SLOTS, GPUS, NODES, GROUPS = 58, 256, 320, 32, 4, 8


def _loads(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.pareto(1.5, (LAYERS, EXPERTS)) + 0.05) * 1000


def _eplb_rows():
    w = _loads()
    rebalance_experts(w[:1], SLOTS, 1, 1, GPUS)  # compile
    rows = []
    for policy, g, n in (("global", 1, 1), ("hierarchical", GROUPS, NODES)):
        sec, _ = best_of(lambda g=g, n=n: rebalance_experts(w, SLOTS, g, n, GPUS), 5)
        rows.append({"benchmark": f"EPLB rebalance_experts, {policy} policy",
                     "size": f"{EXPERTS} experts × {LAYERS} layers on {SLOTS} slots, {GPUS} GPUs",
                     "seconds": sec, "metric": f"{sec / LAYERS * 1e6:.0f} µs per layer",
                     "target": "< 100 ms", "met": sec < 0.1})
    return rows


def _vs_reference():
    """The two kernels against their pure-Python references, one layer."""
    w = _loads()[0]
    engine = best_of(lambda: rebalance_experts(w[None], SLOTS, 1, 1, GPUS), 5)[0]
    t0 = time.perf_counter()
    _, _, cnt = _reference_replicate(w, SLOTS)
    reps = np.array([w[e] / cnt[e] for e in _reference_replicate(w, SLOTS)[0]])
    _reference_packing(reps, GPUS)
    reference = time.perf_counter() - t0
    return {"benchmark": "EPLB global policy vs pure-Python reference (replicate + pack)",
            "size": f"one layer, {EXPERTS} experts on {SLOTS} slots", "seconds": engine,
            "reference_seconds": reference, "ratio": reference / engine,
            "metric": "engine includes index bookkeeping", "target": None, "met": None}


def _nic_aware():
    w = _loads()[0]
    nic_aware_placement(w, SLOTS, GPUS)
    sec, _ = best_of(lambda: nic_aware_placement(w, SLOTS, GPUS), 5)
    return {"benchmark": "NIC-aware placement, one layer", "size": f"{EXPERTS} experts on "
            f"{SLOTS} slots, 4 hosts × 4 NICs × 2 GPUs", "seconds": sec,
            "metric": f"× {LAYERS} layers = {sec * LAYERS * 1e3:.0f} ms", "target": None,
            "met": None}


def _widget():
    rows = []
    ex = balancing_explorer(show=False)
    for control, values in (("skew", [2.0, 4.0, 6.0, 8.0, 12.0]),
                            ("placement", ["contiguous", "EPLB", "NIC-aware"]),
                            ("tokens_per_gpu", [32, 48, 64, 80, 96])):
        for v in values:  # warm: compile, caches, first draw
            ex.controls[control].value = v
        ex.timings.clear()
        for v in values * 4:
            ex.controls[control].value = v
        med = statistics.median(ex.timings)
        rows.append({"benchmark": "widget update, balancing and beyond (05)",
                     "size": f"median of {len(ex.timings)}, moving '{control}'", "seconds": med,
                     "metric": "compute + draw + PNG encode", "target": "< 50 ms",
                     "met": med < 0.05})
    return rows


def run():
    return [*_eplb_rows(), _vs_reference(), _nic_aware(), *_widget()]


if __name__ == "__main__":
    for r in run():
        print(r)
