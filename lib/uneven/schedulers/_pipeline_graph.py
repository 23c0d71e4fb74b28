"""The data edges of a simulated pipeline iteration, rebuilt from its op arrays.

:meth:`uneven.schedulers.pipeline.PipelineResult.dependencies` calls :func:`data_edges`: the
same edges the reference route gives the timeline engine (``_build_dag`` in
:mod:`uneven.schedulers.pipeline`), computed here with numpy from what the result holds, so a
trace exporter can draw them without re-running anything. The tests compare the two edge for
edge. Placements and op codes are those of :mod:`uneven.schedulers._replay`.
"""

from __future__ import annotations

import numpy as np

from ._replay import BIDIRECTIONAL, LOOPED, V_SHAPE

__all__ = ["data_edges"]

_F, _B, _W, _SEND_ACT, _SEND_GRAD, _FB, _BW = 0, 1, 2, 3, 4, 5, 6


def data_edges(p, m, place, div, kind, stage, chunk, mb, pair):
    """Predecessor CSR ``(dep_ptr, dep_src)`` (int64) of the ops ``kind``, ``stage``, ``chunk``,
    ``mb``, ``pair`` (one entry per op, in op id order: each stage's ops in run order, each op's
    sends right after it) of a pipeline with ``p`` stages, ``m`` micro-batches, placement
    ``place`` and ``div`` visits per stage. See ``PipelineResult.dependencies``.

    >>> ptr, src = data_edges(2, 1, 0, 1, np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]),
    ...                       np.zeros(4, int), np.zeros(4, int), np.full(4, -1))
    >>> ptr.tolist(), src.tolist()
    ([0, 0, 1, 2, 3], [3, 0, 2])
    """
    kind, stage, chunk, mb, pair = (np.asarray(a, dtype=np.int64)
                                    for a in (kind, stage, chunk, mb, pair))
    n = kind.size
    ids = np.arange(n, dtype=np.int64)
    is_send = (kind == _SEND_ACT) | (kind == _SEND_GRAD)
    # the producer of a send is the last compute op before it (ids follow each stage's order)
    last = np.maximum.accumulate(np.where(is_send, -1, ids)) if n else ids
    act_send = np.full(n, -1, dtype=np.int64)
    grad_send = np.full(n, -1, dtype=np.int64)
    sa, sg = np.flatnonzero(kind == _SEND_ACT), np.flatnonzero(kind == _SEND_GRAD)
    act_send[last[sa]] = sa
    grad_send[last[sg]] = sg
    n_virt = _n_virtual(place, p, div)
    is_fb = kind == _FB
    q = _virtual_stage(place, p, stage, chunk)
    cb = np.where(is_fb, 1 - chunk, chunk)  # the backward (half): chunk, micro-batch, stage
    jb = np.where(is_fb, pair, mb)
    qb = _virtual_stage(place, p, stage, cb)
    is_f = (kind == _F) | is_fb
    is_b = (kind == _B) | (kind == _BW) | is_fb
    prod_f = np.full((n_virt, m), -1, dtype=np.int64)
    prod_f[q[is_f], mb[is_f]] = ids[is_f]
    prod_b = np.full((n_virt, m), -1, dtype=np.int64)
    prod_b[qb[is_b], jb[is_b]] = ids[is_b]
    first = np.full(n, -1, dtype=np.int64)  # the activation's edge, or an op's only edge
    second = np.full(n, -1, dtype=np.int64)  # an F&B's gradient edge
    first[is_send] = last[is_send]
    sel = is_f & (q > 0)
    a = prod_f[q[sel] - 1, mb[sel]]
    first[sel] = np.where(act_send[a] >= 0, act_send[a], a)
    grad = np.full(n, -1, dtype=np.int64)
    mid = is_b & (qb < n_virt - 1)
    g = prod_b[qb[mid] + 1, jb[mid]]
    grad[mid] = np.where(grad_send[g] >= 0, grad_send[g], g)
    end = is_b & (qb == n_virt - 1)  # the last virtual stage: its own F
    grad[end] = prod_f[qb[end], jb[end]]
    plain = is_b & ~is_fb
    first[plain] = grad[plain]
    second[is_fb] = grad[is_fb]
    is_w = kind == _W
    first[is_w] = prod_b[q[is_w], mb[is_w]]
    counts = (first >= 0).astype(np.int64) + (second >= 0)
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    dep_src = np.empty(int(dep_ptr[-1]), dtype=np.int64)
    has_first = first >= 0
    dep_src[dep_ptr[:-1][has_first]] = first[has_first]
    has_second = second >= 0
    dep_src[dep_ptr[:-1][has_second] + has_first[has_second]] = second[has_second]
    return dep_ptr, dep_src


def _n_virtual(place, p, div):
    if place == LOOPED:
        return p * div
    return 2 * p if place == V_SHAPE else p


def _virtual_stage(place, p, s, c):
    if place == LOOPED:
        return c * p + s
    other = (2 * p - 1 - s) if place == V_SHAPE else (p - 1 - s)
    assert place in (V_SHAPE, BIDIRECTIONAL)
    return np.where(c == 0, s, other)
