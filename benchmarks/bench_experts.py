"""Speed of MoE routing and EP dispatch-traffic aggregation at DeepSeek-V3 training scale.

One training step of DeepSeek-V3's MoE layer: 2,048 GPUs × 4,096 tokens = 8.4M tokens, each
routed to 8 of 256 experts (at most 4 of 8 nodes), in 32 independent EP64 groups (8 nodes of
8 GPUs, 4 experts per GPU). A full score matrix would be 8.4M × 256 float32 = 8.6 GB, so
:func:`uneven.ep.model.ep_step` never makes one: each token's scores come from a counter-based
generator inside the routing kernel (in L1 cache), are routed, and the token's dispatch copies are
counted at once; then the link-load engine times the dispatch on the whole cluster. The step row
counts all of it, score generation included, and states the floor: what generating the scores
alone costs (the RNG, measured here) and the bytes touched.

Run alone: ``python benchmarks/bench_experts.py``.
"""

from __future__ import annotations

import os
import time

import numpy as np
from _timing import best_of

from uneven._jit import njit
from uneven.ep._kernels import _counter_key, _pair_uniforms
from uneven.ep.model import ep_step
from uneven.ep.routing import (
    _reference_node_limited,
    contiguous_placement,
    generated_route,
    node_limited_route,
    synthetic_gate_scores,
)
from uneven.ep.traffic import _reference_ep, ep_dispatch_traffic

N_GPUS, GPUS_PER_NODE, EP = 2048, 8, 64
TOKENS_PER_GPU = 4096
N_EXPERTS, K, N_GROUPS, MAX_GROUPS = 256, 8, 8, 4
HIDDEN = 7168
THREADS = 2  # the routing kernel releases the GIL: route THREADS GPUs' chunks at once


def _route(scores):
    return node_limited_route(scores, K, N_GROUPS, MAX_GROUPS, route_scale=2.5)


def _routing_vs_reference(n_tokens=10_000):
    scores = synthetic_gate_scores(n_tokens, N_EXPERTS, 0.5, seed=1)
    bias = np.random.default_rng(2).normal(0.0, 0.01, N_EXPERTS)
    engine = best_of(lambda: node_limited_route(scores, K, N_GROUPS, MAX_GROUPS, bias, 2.5), 5)[0]
    t0 = time.perf_counter()
    _reference_node_limited(scores, bias, K, N_GROUPS, MAX_GROUPS, 2.5)
    reference = time.perf_counter() - t0
    return _vs_reference_row(
        "experts.node_limited_route vs pure-Python reference",
        f"{n_tokens:,} tokens × {N_EXPERTS} experts, top-{K} in {MAX_GROUPS}/{N_GROUPS} groups",
        engine, reference, n_tokens,
    )


def _aggregation_vs_reference(n_tokens=10_000):
    scores = synthetic_gate_scores(n_tokens, N_EXPERTS, 0.0, seed=3)
    ids = _route(scores).expert_ids
    src = np.arange(n_tokens) % EP
    place = contiguous_placement(N_EXPERTS, EP)
    engine = best_of(lambda: ep_dispatch_traffic(ids, src, place, GPUS_PER_NODE, 1.0), 5)[0]
    t0 = time.perf_counter()
    _reference_ep(ids, src, place, GPUS_PER_NODE, True, EP)
    reference = time.perf_counter() - t0
    return _vs_reference_row(
        "ep.traffic.ep_dispatch_traffic (relay) vs pure-Python reference",
        f"{n_tokens:,} tokens × top-{K}, EP{EP}", engine, reference, n_tokens,
    )


def _vs_reference_row(name, size, engine, reference, n_tokens):
    """A table row for an engine timed against its pure-Python reference (seconds)."""
    return {"benchmark": name, "size": size, "seconds": engine, "reference_seconds": reference,
            "ratio": reference / engine, "metric": f"{engine / n_tokens * 1e9:.0f} ns/token",
            "target": None, "met": None}


def _numpy_then_route(n_tokens=65536):
    """The old way, per GPU chunk: numpy scores (float64 matrix), then route (seconds)."""
    t0 = time.perf_counter()
    scores = synthetic_gate_scores(n_tokens, N_EXPERTS, 0.0, seed=1)
    _route(scores)
    return time.perf_counter() - t0


@njit(nogil=True)
def _rng_only(key, n_tokens):
    """The RNG alone, into an L1-resident buffer: the floor of generating every score."""
    buf = np.empty(N_EXPERTS, dtype=np.float32)
    acc = np.float32(0.0)
    for t in range(n_tokens):
        base = np.uint64(t) * np.uint64(N_EXPERTS // 2)
        for j in range(N_EXPERTS // 2):
            hi, lo = _pair_uniforms(key, base + np.uint64(j))
            buf[j] = hi
            buf[j + N_EXPERTS // 2] = lo
        acc += buf[t % N_EXPERTS]
    return acc


def _generated_vs_numpy(n_tokens=65536):
    generated_route(64, N_EXPERTS, K, N_GROUPS, MAX_GROUPS)
    engine = best_of(lambda: generated_route(n_tokens, N_EXPERTS, K, N_GROUPS, MAX_GROUPS,
                                             route_scale=2.5), 3)[0]
    old = min(_numpy_then_route(n_tokens) for _ in range(3))
    return {"benchmark": "generated_route (scores made in the kernel) vs numpy scores + route",
            "size": f"{n_tokens:,} tokens × {N_EXPERTS} experts, top-{K} in {MAX_GROUPS}/"
            f"{N_GROUPS} groups", "seconds": engine, "reference_seconds": old,
            "ratio": old / engine, "metric": f"{engine / n_tokens * 1e9:.0f} ns/token incl. "
            "generation; identical ids to node_limited_route on the same scores (tests)",
            "target": None, "met": None}


def _step(threads=THREADS):
    """One DeepSeek-V3 step with ep_step: (wall s, CPU s, EpStep)."""
    old = os.environ.get("UNEVEN_MAX_STEPS")
    os.environ["UNEVEN_MAX_STEPS"] = "1e12"  # 2.1e9 score steps: above the default budget
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        st = ep_step(N_GPUS, TOKENS_PER_GPU, ep=EP, k=K, max_nodes=MAX_GROUPS, hidden=HIDDEN,
                     threads=threads)
        return time.perf_counter() - t0, time.process_time() - c0, st
    finally:
        if old is None:
            os.environ.pop("UNEVEN_MAX_STEPS", None)
        else:
            os.environ["UNEVEN_MAX_STEPS"] = old


def _warm():
    s = synthetic_gate_scores(64, N_EXPERTS, 0.0, seed=0)
    ids = _route(s).expert_ids
    ep_dispatch_traffic(ids, np.arange(64), contiguous_placement(N_EXPERTS, EP), 8, 1.0)
    ep_step(128, 8, threads=THREADS)
    _rng_only(_counter_key(0), 4)


def run() -> list[dict]:
    _warm()
    rows = [_routing_vs_reference(), _aggregation_vs_reference(), _generated_vs_numpy()]
    n_tokens = N_GPUS * TOKENS_PER_GPU
    scores = n_tokens * N_EXPERTS
    walls = []
    for _ in range(2):  # the faster of two runs: the other core is shared on this machine
        walls.append(_step())
    wall, cpu, st = min(walls, key=lambda x: x[0])
    rng_s = best_of(lambda: _rng_only(_counter_key(0), 65536), 3)[0] / 65536 / N_EXPERTS
    floor = rng_s * scores / THREADS
    size = f"{N_GPUS:,} GPUs × {TOKENS_PER_GPU:,} tokens = {n_tokens / 1e6:.1f}M tokens, top-{K}"
    matrices = 2 * st.network.nbytes / 1e6
    rows.append({
        "benchmark": f"DeepSeek-V3 step: generate + route + aggregate + link loads "
        f"({THREADS} threads, ep_step)",
        "size": size,
        "seconds": wall,
        "metric": (
            f"{wall / n_tokens * 1e9:.0f} ns/token wall, CPU {cpu:.2f} s "
            f"({cpu / n_tokens * 1e9:.0f} ns/token, {cpu / THREADS:.2f} s per core); "
            f"{st.nodes_per_token:.2f} nodes/token, {st.network_copies_per_token:.2f} network + "
            f"{st.nvlink_copies_per_token:.2f} NVLink copies/token, dispatch "
            f"{st.time * 1e3:.2f} ms (model). Floor: RNG {rng_s * 1e9:.2f} ns/score × "
            f"{scores / 1e9:.1f}G scores = {floor:.2f} s on {THREADS} cores; bytes: scores "
            f"never leave L1 (1 KB/token, 8.6 GB never stored), {matrices:.0f} MB of byte matrices"
        ),
        "target": f"< 2 s on {THREADS} cores, score generation included",
        "met": wall < 2.0,
    })
    return rows
