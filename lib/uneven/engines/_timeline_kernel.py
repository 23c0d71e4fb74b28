"""The timeline engine's kernel, its resource orders and deadlock report, and its pure-Python
reference (private: shared by :func:`uneven.engines.timeline.run_timeline` and the schedulers that
build their own ops, e.g. :mod:`uneven.schedulers.pipeline`). The model is described in
:mod:`uneven.engines.timeline`; times in seconds.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


def _resource_orders(res: np.ndarray, seq: np.ndarray | None = None, n_res: int | None = None):
    """CSR of op ids per resource, in run order (resource, then sequence, then op id).

    ``seq=None`` means the op id order, the common case, done by one counting sort. ``n_res``:
    the number of resources (default: the largest id + 1).
    """
    if n_res is None:
        n_res = int(res.max()) + 1 if res.size else 0
    if seq is None:
        ids = np.arange(res.size, dtype=np.int64)
    else:
        ids = np.argsort(seq, kind="stable").astype(np.int64)
    order_ptr = np.zeros(n_res + 1, dtype=np.int64)
    order_ops = np.empty(res.size, dtype=np.int64)
    _counting_sort(res, ids, order_ptr, order_ops)
    return order_ptr, order_ops



@njit
def _counting_sort(res, ids, order_ptr, order_ops):  # pragma: no cover - compiled
    """Stable bucket of ``ids`` (already in sequence order) by resource."""
    for i in range(res.size):
        order_ptr[res[i] + 1] += 1
    for r in range(order_ptr.size - 1):
        order_ptr[r + 1] += order_ptr[r]
    fill = order_ptr[:-1].copy()
    for k in range(ids.size):
        i = ids[k]
        order_ops[fill[res[i]]] = i
        fill[res[i]] += 1



@njit
def _timeline_kernel(dur, rel, order_ptr, order_ops, dep_ptr, dep_src, dep_delay,
                     start, finish, done):  # pragma: no cover - compiled
    """Kahn traversal. Fills start/finish/done; returns how many ops could run."""
    n = dur.size
    n_edges = dep_src.size
    n_res = order_ptr.size - 1
    # Successor lists (reverse of the predecessor CSR), built once by counting sort.
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(n_edges):
        succ_ptr[dep_src[k] + 1] += 1
    for i in range(n):
        succ_ptr[i + 1] += succ_ptr[i]
    fill = succ_ptr[:-1].copy()
    succ_dst = np.empty(n_edges, dtype=np.int64)
    succ_dly = np.empty(n_edges)
    indeg = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            s = dep_src[k]
            succ_dst[fill[s]] = i
            succ_dly[fill[s]] = dep_delay[k]
            fill[s] += 1
        indeg[i] = dep_ptr[i + 1] - dep_ptr[i]
    # The next op on the same resource is one more successor (delay 0).
    nxt = np.full(n, -1, dtype=np.int64)
    for r in range(n_res):
        for k in range(order_ptr[r], order_ptr[r + 1] - 1):
            a = order_ops[k]
            b = order_ops[k + 1]
            nxt[a] = b
            indeg[b] += 1
    est = rel.copy()  # earliest start known so far
    queue = np.empty(n, dtype=np.int64)
    head = 0
    tail = 0
    for i in range(n):
        if indeg[i] == 0:
            queue[tail] = i
            tail += 1
    while head < tail:
        i = queue[head]
        head += 1
        start[i] = est[i]
        f = est[i] + dur[i]
        finish[i] = f
        done[i] = 1
        for k in range(succ_ptr[i], succ_ptr[i + 1]):
            j = succ_dst[k]
            t = f + succ_dly[k]
            if t > est[j]:
                est[j] = t
            indeg[j] -= 1
            if indeg[j] == 0:
                queue[tail] = j
                tail += 1
        # The same release step for the next op on this resource. Written out, not factored into
        # a helper: an inlined helper returning the queue tail measured about 2x slower here.
        j = nxt[i]
        if j >= 0:
            if f > est[j]:
                est[j] = f
            indeg[j] -= 1
            if indeg[j] == 0:
                queue[tail] = j
                tail += 1
    for i in range(n):
        if done[i] == 0:
            start[i] = np.nan
            finish[i] = np.nan
    return head



def _deadlock_message(done, res, order_ptr, order_ops, dep_ptr, dep_src, labels) -> str:
    """Describe one cycle among the ops that never ran (they all wait on each other)."""
    n = done.size
    prev = np.full(n, -1, dtype=np.int64)
    for r in range(order_ptr.size - 1):
        ops = order_ops[order_ptr[r]:order_ptr[r + 1]]
        prev[ops[1:]] = ops[:-1]
    stuck = np.flatnonzero(done == 0)

    def name(i):
        base = labels[i] if labels is not None else f"op {i}"
        return f"{base} (resource {res[i]})"

    def blocker(i):
        # Every op that never ran has at least one predecessor that never ran.
        if prev[i] >= 0 and not done[prev[i]]:
            return int(prev[i]), "it comes earlier on the same resource"
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            if not done[dep_src[k]]:
                return int(dep_src[k]), "needs its output"
        return -1, ""

    seen = {}
    path = []
    i = int(stuck[0])
    while i >= 0 and i not in seen:
        seen[i] = len(path)
        j, why = blocker(i)
        path.append((i, j, why))
        i = j
    cycle = path[seen[i]:] if i >= 0 else path
    steps = "; ".join(f"{name(a)} waits for {name(b)} ({why})" for a, b, why in cycle)
    resources = sorted({int(r) for r in res[stuck]})
    return (
        f"deadlock: the fixed resource orders plus the dependencies contain a cycle, so "
        f"{stuck.size} of {n} ops can never start (stuck resources: {resources}). One cycle: "
        f"{steps}."
    )



def _reference_timeline(duration, resource, deps, sequence=None, release=None):
    """Obviously-correct reference: relax ``start = max(...)`` to a fixed point.

    ``deps`` is a list (one per op) of ``(src, delay)`` pairs. Raises ``ValueError`` on a cycle.
    Returns ``(start, finish)`` as lists of floats.
    """
    n = len(duration)
    seq = list(range(n)) if sequence is None else list(sequence)
    rel = [0.0] * n if release is None else [float(r) for r in release]
    prev = [-1] * n
    by_res = {}
    for i in sorted(range(n), key=lambda i: (resource[i], seq[i], i)):
        r = resource[i]
        if r in by_res:
            prev[i] = by_res[r]
        by_res[r] = i
    preds = [[(p, float(d)) for p, d in deps[i]] + ([(prev[i], 0.0)] if prev[i] >= 0 else [])
             for i in range(n)]
    # Acyclicity: peel off ops whose predecessors are all peeled.
    peeled = set()
    changed = True
    while changed:
        changed = False
        for i in range(n):
            if i not in peeled and all(p in peeled for p, _ in preds[i]):
                peeled.add(i)
                changed = True
    if len(peeled) < n:
        raise ValueError("deadlock: cycle in the reference graph")
    # Sweep the equations until nothing changes (in place, so a sweep in a topological order
    # already settles everything; any order converges on an acyclic graph).
    start = rel[:]
    changed = True
    while changed:
        changed = False
        for i in range(n):
            s = max([rel[i]] + [start[p] + duration[p] + d for p, d in preds[i]])
            if s != start[i]:
                start[i] = s
                changed = True
    return start, [s + d for s, d in zip(start, duration, strict=True)]

