"""Running a calibrated Kineto DAG on the timeline engine, and its critical path (private).

Used by :mod:`uneven.trace.kineto`. The engine runs in nanoseconds (the traces' own resolution:
integer lengths add up exactly); results leave in seconds.
"""

from __future__ import annotations

import numpy as np

from ..engines.timeline import edges_to_csr, run_timeline
from ._kineto_graph import (
    ARRIVE,
    CHAIN,
    GATHER,
    JOIN,
    LAUNCH,
    POINT,
    RETURN,
    SCATTER,
    SYNC,
    WAIT,
)
from ._kineto_kinds import KINDS

NS = 1e-9
#: Two times closer than this (ns) are the same instant when the critical path picks the
#: predecessor that set an op's start (the engine adds integers; what-ifs add a little rounding).
TIE_NS = 1e-3


def run(g, factor, delay_ns):
    """Replay with per-op length ``factor`` (GPU ops) and per-op communication ``delay_ns``.

    Returns ``(start_s, finish_s, step_s, critical_ops, breakdown)``.
    """
    dur = g.base_dur.copy()
    dur[g.scaled] *= factor[g.node_op[g.scaled]]
    dly = g.dep_delay
    if delay_ns is not None and g.scatter_pos.size:
        per_coll = np.zeros(g.coll_ptr.size - 1)
        np.maximum.at(per_coll, g.op_coll[g.coll_ops], delay_ns[g.coll_ops])
        dly = dly.copy()
        dly[g.scatter_pos] += per_coll[g.scatter_coll]
    tl = run_timeline(dur, g.node_res, g.dep_ptr, g.dep_src, dly, release=g.release)
    start, finish = np.asarray(tl.start), np.asarray(tl.finish)
    op_start = start[g.begin]
    op_finish = finish[g.end]
    n_gpu = g.n_gpu
    cpu_finish = op_start[n_gpu:] + g.rec_dur[n_gpu:]
    ret = g.node_role[g.end[n_gpu:]] == RETURN
    cpu_finish[ret] = start[g.end[n_gpu:][ret]] + g.tail[n_gpu:][ret]
    op_finish[n_gpu:] = cpu_finish
    last = int(np.argmax(op_finish))
    nodes, via = _critical_nodes(g, start, finish, dly, int(g.end[last]))
    ops, breakdown = _critical_ops(g, nodes, via, start, finish, op_finish[last])
    return op_start * NS, op_finish * NS, float(op_finish[last]) * NS, ops, breakdown


def _binding(g, start, finish, dly):
    """Per node, the predecessor that set its start: the previous node on its resource when it
    did (preferred on a tie), else the dependency edge that did, else -1 (its earliest start,
    or time 0)."""
    n = g.n_nodes
    res = g.node_res
    prev = np.full(n, -1, dtype=np.int64)
    same = res[1:] == res[:-1]
    prev[1:][same] = np.arange(n - 1)[same]
    prev_ready = np.where(prev >= 0, finish[np.maximum(prev, 0)], -np.inf)
    ready = finish[g.dep_src] + dly
    ptr = g.dep_ptr
    has = ptr[1:] > ptr[:-1]
    best = np.full(n, -np.inf)
    first = np.full(n, -1, dtype=np.int64)
    if ready.size:
        seg = ptr[:-1][has]
        best[has] = np.maximum.reduceat(ready, seg)
        hit = ready >= best[g.dep_dst] - TIE_NS
        pos = np.where(hit, np.arange(ready.size), ready.size)
        first[has] = np.minimum.reduceat(pos, seg)
    edge_src = np.where(first >= 0, g.dep_src[np.maximum(first, 0)], -1)
    bind = np.full(n, -1, dtype=np.int64)
    by_prev = prev_ready >= start - TIE_NS
    by_edge = ~by_prev & (best >= start - TIE_NS)
    bind[by_prev] = prev[by_prev]
    bind[by_edge] = edge_src[by_edge]
    via = np.full(n, -1, dtype=np.int64)  # edge kind that bound it (-1: resource order)
    via[by_edge] = g.dep_kind[np.maximum(first, 0)][by_edge]
    return bind, via


def _critical_nodes(g, start, finish, dly, last_node):
    """The chain of nodes that set the end of ``last_node``, first to last, and per node the
    kind of edge that bound it."""
    bind, via = _binding(g, start, finish, dly)
    path = []
    node = last_node
    while node >= 0 and len(path) <= g.n_nodes:  # binding predecessors start no later
        path.append(node)
        node = int(bind[node])
    path.reverse()
    return path, via


def _critical_ops(g, nodes, via, start, finish, end_time):
    """Display ops along the critical path (forward, each once) and where its time went:
    the GPU kinds, ``launch latency``, ``cpu`` (calls and gaps of a CPU thread) and
    ``before the first op`` (seconds)."""
    ops = []
    for v in nodes:
        op = int(g.node_op[v])
        if op >= 0 and (not ops or ops[-1] != op):
            ops.append(op)
    share = {}

    def add(key, ns):
        if ns > 0:
            share[key] = share.get(key, 0.0) + float(ns) * NS

    if nodes:
        add("before the first op", start[nodes[0]])
    for k, v in enumerate(nodes):
        role = g.node_role[v]
        op = int(g.node_op[v])
        if role not in (POINT, RETURN, JOIN, ARRIVE):
            add(KINDS[g.kind[op]], finish[v] - start[v])
        if k:
            u = nodes[k - 1]
            gap = start[v] - finish[u]
            how = via[v]
            if how == LAUNCH:
                add("launch latency", gap)
            elif role in (POINT, RETURN) or how == CHAIN:
                add("cpu", gap)
            elif how == SCATTER:
                add("communication delay", gap)  # a what-if's delay on a collective
            elif how in (WAIT, GATHER, SYNC):
                add("waits", gap)
            else:
                add("other", gap)
    if nodes:
        add("cpu", end_time - finish[nodes[-1]])  # a CPU call's own length after its start
    return np.asarray(ops, dtype=np.int64), share


def display_edges(g, start_s):
    """Predecessor CSR over display ops for a trace table: launches, stream waits, blocking
    calls, and for each collective the participant that arrived last (replayed)."""
    keep = np.isin(g.dep_kind, (LAUNCH, WAIT, SYNC))
    src = g.node_op[g.dep_src[keep]]
    dst = g.node_op[g.dep_dst[keep]]
    extra_src, extra_dst = [], []
    for c in range(g.coll_ptr.size - 1):
        ops = g.coll_ops[g.coll_ptr[c]:g.coll_ptr[c + 1]]
        if ops.size < 2:
            continue
        last = int(ops[np.argmax(start_s[ops])])
        others = ops[ops != last]
        extra_src.append(np.full(others.size, last))
        extra_dst.append(others)
    if extra_src:
        src = np.concatenate([src] + extra_src)
        dst = np.concatenate([dst] + extra_dst)
    ok = (src >= 0) & (dst >= 0) & (src != dst)
    ptr, dep_src, _ = edges_to_csr(g.n_gpu + g.n_cpu, src[ok], dst[ok])
    return ptr, dep_src
