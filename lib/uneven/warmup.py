"""Compile (and cache) every numba kernel once: ``python -m uneven.warmup``.

Binder's postBuild runs this so a reader's first slider move does not wait for the compiler.
Every call uses the same float64/int64 types as the public wrappers, so the cached
specialisations are the ones notebooks hit.
"""

from __future__ import annotations

import time

import numpy as np

# A command-line entry point (``python -m uneven.warmup``), not API: nothing is exported.
__all__: list[str] = []

# Each step calls the public entry points with tiny inputs of the types notebooks use.
_STEPS = []


def _step(fn):
    _STEPS.append(fn)
    return fn


@_step
def _linkload():
    from .collectives import all_to_all, ring_all_reduce
    from .engines.linkload import link_loads, link_loads_matrix
    from .topology import cloudmatrix384, h800_cluster

    t = h800_cluster(2)
    t.route(0, 9)
    t.hop_class(0, 9)
    link_loads(t, [0], [9], [1.0])
    link_loads_matrix(t, np.ones((16, 16)))
    all_to_all(t, 1.0)
    all_to_all(cloudmatrix384(2), 1.0)
    ring_all_reduce(t, 1.0)


@_step
def _pipeline():
    from .engines.timeline import run_timeline
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline, simulate_trace

    run_timeline([1.0, 1.0], [0, 1], [0, 0, 1], [0], [0.0])
    for kind in ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "greedy"):
        sched = pipeline_schedule(kind, 4, 8, v=2 if kind == "interleaved" else 1)
        for mode in ("replay", "online", "replan"):
            if mode != "replay" and kind in ("gpipe", "interleaved"):
                continue
            for hol in (False, True):
                simulate_pipeline(sched, 0.01, 0.01, 0.01, delays=[0.01, 0.0, 0.0], mode=mode,
                                  hol=hol)
    simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 0.01, 0.02)  # floats: the quick checks
    simulate_trace(pipeline_schedule("zb-h2", 4, 8), 0.01, 0.01, 0.01,
                   delay_trace=np.zeros((2, 3)), mode="replan")


@_step
def _fluid():
    from .collectives import fluid_transfers
    from .topology import h800_cluster

    fluid_transfers(h800_cluster(2), [0, 1], [8, 9], [1.0, 2.0], arrival=[0.0, 0.5])
    fluid_transfers(h800_cluster(2), [0, 1], [8, 9], [1.0, 2.0], quantum=1e-3)
    from .engines.fluid import max_min_rates

    max_min_rates(np.array([0, 1, 2]), np.array([0, 0]), np.array([1.0]))


@_step
def _experts():
    try:
        from .explorers import deepseek_state
    except ImportError:  # a partial install without the EP modules
        return
    from .ep.routing import synthetic_gate_scores, topk_route

    topk_route(synthetic_gate_scores(4, 16, seed=0), 2)
    deepseek_state(tokens_per_gpu=128, n_nodes=2, max_nodes=2)
    # The counter-generated scores: as a matrix, routed in the kernel, and the whole EP step.
    from .ep.model import ep_step
    from .ep.routing import counter_gate_scores, generated_route

    counter_gate_scores(2, 16, skew=0.5, seed=0)
    generated_route(2, 16, 2, n_groups=4, max_groups=2, seed=0)
    ep_step(16, 2, ep=16, n_experts=32, k=2, max_nodes=2, hidden=64)
    ep_step(64, 1, ep=64, n_experts=256, k=8, max_nodes=4, hidden=64)  # DeepSeek-V3's own kernel


@_step
def _placement_and_decode():
    from .ep.decode import DecodeSetup, simulate_decode
    from .ep.placement import balanced_packing, replicate_experts

    balanced_packing([1.0, 2.0, 3.0, 4.0], 2)
    replicate_experts([1.0, 2.0], 3)
    for mode in ("direct", "relay"):
        simulate_decode(DecodeSetup(n_hosts=1, n_experts=8, n_slots=8, k=2, tokens_per_gpu=2),
                        n_steps=2, mode=mode, swaps=True)


@_step
def _sequences():
    from .explorers.nb02 import bytescale_state
    from .schedulers.sequences import HdpSetup, compare_schemes, list_schedule

    lengths = [131072, 70000, 9000, 5000, 3000, 1000]
    compare_schemes(lengths, HdpSetup(n_gpus=64, context=131072, capacity=8192))
    compare_schemes(lengths, HdpSetup(n_gpus=64, pp=2, context=131072, capacity=16384),
                    balance="pp", offload=True)
    list_schedule([1.0, 2.0], [1, 1], 2)
    bytescale_state()


@_step
def _cores():
    from .ep.superpod import (
        CoreCosts,
        core_timeline,
        decode_steps,
        latency_samples,
        phase_plan,
        scheme,
        superpod_traffic,
    )

    t = superpod_traffic(16, tokens_per_rank=4)
    c = CoreCosts(cores=4)
    for kind in ("baseline", "ubep"):
        p = phase_plan(t, c, scheme(kind))
        latency_samples(p, 2, 1e-6)
        core_timeline(p)
    decode_steps(t, c, scheme("ubep"), n_steps=1, n_layers=1)


@_step
def _explorers():
    """Each paper's explorer at its defaults (from :data:`uneven.papers.PAPERS`, so a new
    paper's explorer is warmed without editing this file): the reader's first slider move."""
    try:
        from . import explorers
    except ImportError:  # a partial install without matplotlib or ipywidgets
        return
    from .papers import PAPERS

    for p in PAPERS:
        getattr(explorers, f"{p.key}_state")()


def main() -> None:
    """Run every warm-up step and print how long each took."""
    for fn in _STEPS:
        t0 = time.perf_counter()
        fn()
        print(f"warm-up {fn.__name__.lstrip('_')}: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
