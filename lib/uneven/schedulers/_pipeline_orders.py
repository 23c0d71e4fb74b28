"""The fixed per-stage orders of :mod:`uneven.schedulers.pipeline`, one numba kernel for all.

:func:`fixed_order_kernel` fills, for every stage ``s``, the slots ``okind[s, :olen[s]]`` (op
codes of :mod:`uneven.schedulers._replay`: 0 F, 1 B, 2 W, 5 F&B, 6 BW), ``omb`` (micro-batch),
``ochunk`` (chunk; for DualPipe the direction) and ``opair`` (for an F&B, the micro-batch of its
backward half, whose chunk is ``1 - chunk``; a 1 x 1 placeholder for orders without pairs).
The tests (``tests/test_pipeline_schedules.py``) rebuild every order below from its published
step program in plain Python and compare slot by slot. Which order each kind follows, and what
the tests check against its source (op times: F, B the input gradient, W; "B_full" = B + W):

* ``looped-bfs``: PyTorch's ``ScheduleLoopedBFS`` (torch/distributed/pipelining/schedules.py),
  for the breadth-first schedule of Lamy-Poirier ("Breadth-First Pipeline Parallelism", MLSys
  2023, arXiv:2211.05953) in its looped placement (stage ``i`` holds chunks ``i, i+p, ...``):
  each chunk's forwards for every micro-batch, chunk after chunk; then the backwards from the
  last chunk down, each chunk's micro-batches last first. With ``m >= p``: the looped bubble
  ``(p-1)(F+B_full)/v`` (the interleaved schedule's, Narayanan et al. SC'21 §2.2.2) and all
  ``m`` micro-batches held, as in GPipe.
* ``interleaved-zb``: PyTorch's ``ScheduleInterleavedZeroBubble`` ("ZB1P" with chunks, after Qi
  et al., Zero Bubble Pipeline Parallelism, ICLR 2024): Megatron's interleaved order with
  ``(v-1) r + (p-1-s)`` warm-up forwards (``r`` micro-batches per round, ``m // max(1, m // p)``),
  B for the input gradient only, and after stage ``s``'s first ``s`` steady steps a W (oldest B
  first) after each B. The model gives ZB-H1's ``m(F+B+W) + (p-1)(F+B-W)`` with the bubble
  divided by ``v`` (``W <= B``), and ``p`` micro-batches held when ``p`` divides ``m``.
* ``zb-v``: PyTorch's ``ScheduleZBVZeroBubble``, the Zero Bubble paper's hand-made ZB-V
  (arXiv:2401.10241 v2 §6; written for ``max(2p-1, m)`` micro-batches, those beyond ``m``
  then left out): stage ``i`` holds chunks ``i`` and ``2p-1-i``. The authors' table (README of
  sail-sg/zero-bubble-pipeline-parallelism, T_F = T_B = T_W): bubble rate 0 and 1F1B's
  activation memory, which the model gives once ``m >= 2p - 1``.
* ``dualpipe``: DeepSeek's ``dualpipe.py`` (github deepseek-ai/DualPipe; DeepSeek-V3 report
  §3.2.1): ``m/2`` micro-batches enter at each end; stage ``i`` runs the eight-step program of
  rank ``min(i, p-1-i)`` of a ``p/2``-rank half, its phase 0 the direction whose first stage is
  on its half. Table 2 of the report: bubble ``(PP/2-1)(F&B + B_full - 3W)``, parameters 2x,
  activations ``PP + 1``; the model gives both on every stage when ``F = B``, ``W <= F`` and an
  F&B costs ``F + B_full``, and the bubble as the largest idle time over the stages for an F&B
  between ``2t`` and ``3t`` at equal op times ``t``.
* ``dualpipe-v``: DeepSeek's ``dualpipev.py`` and PyTorch's ``ScheduleDualPipeV``, the
  "cut-in-half" DualPipe (Sea AI Lab): rank ``i`` of ``p`` holds chunks ``i`` and ``2p-1-i``
  (PP = 2p chunks of half a stage each); the same Table 2 bubble and ``PP + 1`` chunks of
  activations (``p + 1/2`` stage micro-batches here).

The model times these orders with its own rules: sends are eager (DualPipe's runtime batches
each send with the next step's receives, some one op later), an F&B's two outputs leave
together when it ends, and a backward not split for zero bubble is one BW op.

One kernel rather than one per kind: warming up the first-edition kinds compiles them all.
"""

from __future__ import annotations

import functools

import numpy as np
from numba.extending import register_jitable

from .._jit import njit

__all__ = ["fixed_order_kernel", "fixed_order", "full_order", "check_chunks", "formula_warmups",
           "slots_per_stage", "ORDER_CODES", "NEW_KINDS", "LOOPED_CHUNKS"]

#: Branch of :func:`fixed_order_kernel` per schedule kind.
ORDER_CODES = {"gpipe": 0, "1f1b": 1, "interleaved": 2, "zb-h1": 3, "zb-h2": 4,
               "looped-bfs": 5, "interleaved-zb": 6, "zb-v": 7, "dualpipe-v": 8, "dualpipe": 9}
_F, _B, _W, _FB, _BW = 0, 1, 2, 5, 6


@njit
def fixed_order_kernel(code, p, m, v, w, okind, omb, ochunk, opair,
                       olen):  # pragma: no cover - compiled
    """Fill the order of schedule ``code`` (:data:`ORDER_CODES`) for ``p`` stages, ``m``
    micro-batches, ``v`` chunks and warm-ups ``w`` (first-edition kinds)."""
    # FIFO of the backward halves whose W is still owed (chunk, micro-batch), reused per stage
    wq_c = np.empty(max(2 * m * v, 1), dtype=np.int64)
    wq_j = np.empty(max(2 * m * v, 1), dtype=np.int64)
    # One function per order, called once per stage: a single body holding every order
    # compiles to a loop many times slower.
    for s in range(p):
        if code == 0:
            pos = _gpipe(s, m, okind, omb, ochunk, opair)
        elif code == 1:
            pos = _one_f_one_b(s, m, w[s], okind, omb, ochunk, opair)
        elif code == 2:
            pos = _interleaved(s, p, m, v, okind, omb, ochunk, opair)
        elif code <= 4:
            pos = _zb_hand_made(s, p, m, code - 2, okind, omb, ochunk, opair)
        elif code == 5:
            pos = _looped_bfs(s, m, v, okind, omb, ochunk, opair)
        elif code == 6:
            pos = _interleaved_zb(s, p, m, v, okind, omb, ochunk, opair, wq_c, wq_j)
        elif code == 7:
            pos = _zb_v(s, p, m, okind, omb, ochunk, opair)
        elif code == 8:  # DualPipeV: the program of a rank of a p-rank DualPipe half
            pos = _dual(s, s, p, m, 0, 0, 0, s == p - 1, okind, omb, ochunk, opair, wq_c, wq_j)
        else:  # DualPipe: ranks r and p-1-r run the same program, mirrored
            half_p = p // 2
            near = 0 if s < half_p else 1
            h = min(s, p - 1 - s)
            half_m = m // 2
            base0 = near * half_m  # first micro-batch of the direction of phase 0 / phase 1
            base1 = (1 - near) * half_m
            pos = _dual(s, h, half_p, half_m, near, base0, base1, h == half_p - 1, okind, omb,
                        ochunk, opair, wq_c, wq_j)
        olen[s] = pos


@njit
def _gpipe(s, m, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """GPipe: all F, then all B."""
    pos = 0
    for j in range(m):
        pos = _put(okind, omb, ochunk, opair, s, pos, _F, j, 0, -1)
    for j in range(m):
        pos = _put(okind, omb, ochunk, opair, s, pos, _B, j, 0, -1)
    return pos


@njit
def _one_f_one_b(s, m, ws, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """1F1B with ``ws`` leading forwards."""
    pos = 0
    for j in range(ws):
        pos = _put(okind, omb, ochunk, opair, s, pos, _F, j, 0, -1)
    for k in range(m - ws):
        pos = _put(okind, omb, ochunk, opair, s, pos, _B, k, 0, -1)
        pos = _put(okind, omb, ochunk, opair, s, pos, _F, ws + k, 0, -1)
    for k in range(m - ws, m):
        pos = _put(okind, omb, ochunk, opair, s, pos, _B, k, 0, -1)
    return pos


@njit
def _interleaved(s, p, m, v, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """Megatron interleaved: forward k -> chunk (k//p)%v, backward reversed."""
    total = m * v
    if m == p:
        warm = total
    else:
        warm = min(2 * (p - s - 1) + (v - 1) * p, total)
    nf = 0
    nb = 0
    pos = 0
    for _ in range(warm):
        pos = _interleaved_put(okind, omb, ochunk, opair, s, pos, _F, nf, p, v)
        nf += 1
    for _ in range(total - warm):
        pos = _interleaved_put(okind, omb, ochunk, opair, s, pos, _F, nf, p, v)
        nf += 1
        pos = _interleaved_put(okind, omb, ochunk, opair, s, pos, _B, nb, p, v)
        nb += 1
    while nb < total:
        pos = _interleaved_put(okind, omb, ochunk, opair, s, pos, _B, nb, p, v)
        nb += 1
    return pos


@njit
def _zb_hand_made(s, p, m, c, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """Zero Bubble's hand-made ZB-H1 (c = 1) and ZB-H2 (c = 2), as the authors build them:
    (p-1-s)c forwards; then per i an F (while any remain), B_i, and from i >= s*c on a W; the
    W's still owed close the stage."""
    warm = min((p - 1 - s) * c, m)
    pos = 0
    for j in range(warm):
        pos = _put(okind, omb, ochunk, opair, s, pos, _F, j, 0, -1)
    nf = warm
    nw = 0
    for i in range(m):
        if nf < m:
            pos = _put(okind, omb, ochunk, opair, s, pos, _F, nf, 0, -1)
            nf += 1
        pos = _put(okind, omb, ochunk, opair, s, pos, _B, i, 0, -1)
        if i >= s * c:
            pos = _put(okind, omb, ochunk, opair, s, pos, _W, nw, 0, -1)
            nw += 1
    while nw < m:
        pos = _put(okind, omb, ochunk, opair, s, pos, _W, nw, 0, -1)
        nw += 1
    return pos


@register_jitable(inline="always")
def _put(okind, omb, ochunk, opair, s, pos, k, j, c, jb):  # pragma: no cover - compiled
    # ``opair`` is left alone: orders without F&B pairs pass a 1 x 1 placeholder (and a test
    # of its shape here would make every order's loop ten times slower)
    okind[s, pos] = k
    omb[s, pos] = j
    ochunk[s, pos] = c
    return pos + 1


@register_jitable(inline="always")
def _put_pair(okind, omb, ochunk, opair, s, pos, k, j, c, jb):  # pragma: no cover - compiled
    opair[s, pos] = jb
    return _put(okind, omb, ochunk, opair, s, pos, k, j, c, jb)


@register_jitable(inline="always")
def _interleaved_put(okind, omb, ochunk, opair, s, pos, kind, k, p, v):  # pragma: no cover
    group = k // (p * v)
    c = (k // p) % v
    # kind is F (0) or B (1): the backward runs the chunks the other way round, no branch
    return _put(okind, omb, ochunk, opair, s, pos, kind, group * p + k % p,
                c + kind * (v - 1 - 2 * c), -1)


@njit
def _looped_bfs(s, m, v, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """PyTorch's ScheduleLoopedBFS: every micro-batch of chunk 0, then of chunk 1, ...; then the
    backwards, last chunk first, each chunk's micro-batches in reverse."""
    pos = 0
    for c in range(v):
        for j in range(m):
            pos = _put(okind, omb, ochunk, opair, s, pos, _F, j, c, -1)
    for c in range(v - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            pos = _put(okind, omb, ochunk, opair, s, pos, _B, j, c, -1)
    return pos


@njit
def _interleaved_zb(s, p, m, v, okind, omb, ochunk, opair, wq_c,
                    wq_j):  # pragma: no cover - compiled
    """PyTorch's ScheduleInterleavedZeroBubble (ZB1P with chunks): Megatron's interleaved order
    with one warm-up forward per hop instead of two, B for the input only, and from the
    stage's ``s``-th steady step on one W (oldest B first) after each B."""
    total = m * v
    per_round = m // max(1, m // p)
    warm = min((v - 1) * per_round + (p - 1 - s), total)
    f_next = np.zeros(v, dtype=np.int64)
    b_next = np.zeros(v, dtype=np.int64)
    head = 0
    tail = 0
    pos = 0
    for step in range(total + warm):
        if step < total:
            c = (step // per_round) % v
            pos = _put(okind, omb, ochunk, opair, s, pos, _F, f_next[c], c, -1)
            f_next[c] += 1
        if step >= warm:
            c = v - 1 - ((step - warm) // per_round) % v
            pos = _put(okind, omb, ochunk, opair, s, pos, _B, b_next[c], c, -1)
            wq_c[tail] = c
            wq_j[tail] = b_next[c]
            tail += 1
            b_next[c] += 1
            if step - warm >= s:
                pos = _put(okind, omb, ochunk, opair, s, pos, _W, wq_j[head], wq_c[head], -1)
                head += 1
    while head < tail:
        pos = _put(okind, omb, ochunk, opair, s, pos, _W, wq_j[head], wq_c[head], -1)
        head += 1
    return pos


@njit
def _zb_v(s, p, m, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """PyTorch's ScheduleZBVZeroBubble (the Zero Bubble paper's hand-made ZB-V): written for
    ``max(2p - 1, m)`` micro-batches, the ops of micro-batches ``>= m`` then left out."""
    n = max(2 * p - 1, m)
    cnt = np.zeros(4, dtype=np.int64)  # F0, F1, B0, B1
    pos = 0
    for _ in range(2 * (p - s) - 1):
        pos = _zbv_f(0, m, cnt, s, pos, okind, omb, ochunk, opair)
    for _ in range(s):
        pos = _zbv_f(1, m, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _zbv_f(0, m, cnt, s, pos, okind, omb, ochunk, opair)
    for _ in range(p - s):
        pos = _zbv_f(1, m, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _zbv_bw(1, m, cnt, s, pos, okind, omb, ochunk, opair)
    while cnt[1] < cnt[0] or cnt[0] < n:
        if cnt[0] < n:
            pos = _zbv_f(0, m, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _zbv_bw(0, m, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _zbv_f(1, m, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _zbv_bw(1, m, cnt, s, pos, okind, omb, ochunk, opair)
    w0 = cnt[2]
    w1 = cnt[3]
    for _ in range(s):
        pos = _zbv_op(_B, 0, cnt[2], m, s, pos, okind, omb, ochunk, opair)
        cnt[2] += 1
        pos = _zbv_op(_B, 1, cnt[3], m, s, pos, okind, omb, ochunk, opair)
        cnt[3] += 1
    for _ in range(p - s):
        pos = _zbv_op(_B, 0, cnt[2], m, s, pos, okind, omb, ochunk, opair)
        cnt[2] += 1
        pos = _zbv_op(_W, 0, w0, m, s, pos, okind, omb, ochunk, opair)
        w0 += 1
    while w1 < cnt[3]:
        pos = _zbv_op(_W, 1, w1, m, s, pos, okind, omb, ochunk, opair)
        w1 += 1
    while w0 < cnt[2]:
        pos = _zbv_op(_W, 0, w0, m, s, pos, okind, omb, ochunk, opair)
        w0 += 1
    return pos


@register_jitable(inline="always")
def _zbv_op(k, c, j, m, s, pos, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    if j < m:  # micro-batches beyond m only pad the written order
        return _put(okind, omb, ochunk, opair, s, pos, k, j, c, -1)
    return pos


@register_jitable(inline="always")
def _zbv_f(c, m, cnt, s, pos, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    pos = _zbv_op(_F, c, cnt[c], m, s, pos, okind, omb, ochunk, opair)
    cnt[c] += 1
    return pos


@register_jitable(inline="always")
def _zbv_bw(c, m, cnt, s, pos, okind, omb, ochunk, opair):  # pragma: no cover - compiled
    """A B and its W right after it (the steady phase of ZB-V)."""
    j = cnt[2 + c]
    pos = _zbv_op(_B, c, j, m, s, pos, okind, omb, ochunk, opair)
    pos = _zbv_op(_W, c, j, m, s, pos, okind, omb, ochunk, opair)
    cnt[2 + c] += 1
    return pos


@njit
def _dual(s, r, n_ranks, n_mb, near, base0, base1, turn, okind, omb, ochunk, opair, wq_c,
          wq_j):  # pragma: no cover - compiled
    """The eight-step program of DeepSeek's DualPipe(V), written on stage ``s``: rank ``r`` of
    ``n_ranks``, with ``n_mb`` micro-batches per phase. Phase 0 is the chunk whose pipe starts
    nearer this rank (chunk ``near``; phase 1 the other), its micro-batches numbered from
    ``base0`` (phase 1: ``base1``). ``turn``: the rank whose first F0 and B1 are not
    overlapped. A full backward (B and W in one op) is a BW; a backward split for zero bubble is
    a B whose W waits in a FIFO for the next W step."""
    cnt = np.zeros(4, dtype=np.int64)  # F of phase 0, 1; backward of phase 0, 1
    base = np.array([base0, base1], dtype=np.int64)
    head = 0
    tail = 0
    pos = 0
    for _ in range((n_ranks - r - 1) * 2):  # 1: F0
        pos = _dual_f(0, near, base, cnt, s, pos, okind, omb, ochunk, opair)
    for _ in range(r + 1):  # 2: F0 F1
        pos = _dual_f(0, near, base, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _dual_f(1, near, base, cnt, s, pos, okind, omb, ochunk, opair)
    for _ in range(n_ranks - r - 1):  # 3: B1 (zero bubble) W F1
        pos, tail = _dual_b(1, True, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c,
                            wq_j, tail)
        pos, head = _dual_w(s, pos, okind, omb, ochunk, opair, wq_c, wq_j, head, tail)
        pos = _dual_f(1, near, base, cnt, s, pos, okind, omb, ochunk, opair)
    for i in range(n_mb - 2 * n_ranks + r + 1):  # 4: F0&B1 F1&B0
        if i == 0 and turn:
            pos = _dual_f(0, near, base, cnt, s, pos, okind, omb, ochunk, opair)
            pos, tail = _dual_b(1, False, near, base, cnt, s, pos, okind, omb, ochunk, opair,
                                wq_c, wq_j, tail)
        else:
            pos = _dual_fb(0, near, base, cnt, s, pos, okind, omb, ochunk, opair)
        pos = _dual_fb(1, near, base, cnt, s, pos, okind, omb, ochunk, opair)
    for _ in range(n_ranks - r - 1):  # 5: B1 F1&B0
        pos, tail = _dual_b(1, False, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c,
                            wq_j, tail)
        pos = _dual_fb(1, near, base, cnt, s, pos, okind, omb, ochunk, opair)
    zb = False
    steps = r + 1
    for i in range(steps):  # 6: B1 B0, the second half split for zero bubble
        if i == steps // 2 and r % 2 == 1:
            zb = True
        pos, tail = _dual_b(1, zb, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c,
                            wq_j, tail)
        if i == steps // 2 and r % 2 == 0:
            zb = True
        pos, tail = _dual_b(0, zb, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c,
                            wq_j, tail)
    for _ in range(n_ranks - r - 1):  # 7: W B0 (zero bubble)
        pos, head = _dual_w(s, pos, okind, omb, ochunk, opair, wq_c, wq_j, head, tail)
        pos, tail = _dual_b(0, True, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c,
                            wq_j, tail)
    for _ in range(r + 1):  # 8: W
        pos, head = _dual_w(s, pos, okind, omb, ochunk, opair, wq_c, wq_j, head, tail)
    return pos


@register_jitable(inline="always")
def _dual_f(ph, near, base, cnt, s, pos, okind, omb, ochunk, opair):  # pragma: no cover
    j = base[ph] + cnt[ph]
    cnt[ph] += 1
    return _put_pair(okind, omb, ochunk, opair, s, pos, _F, j, ph ^ near, -1)


@register_jitable(inline="always")
def _dual_b(ph, zb, near, base, cnt, s, pos, okind, omb, ochunk, opair, wq_c, wq_j,
            tail):  # pragma: no cover - compiled
    j = base[ph] + cnt[2 + ph]
    cnt[2 + ph] += 1
    c = ph ^ near
    if zb:
        wq_c[tail] = c
        wq_j[tail] = j
        return _put_pair(okind, omb, ochunk, opair, s, pos, _B, j, c, -1), tail + 1
    return _put_pair(okind, omb, ochunk, opair, s, pos, _BW, j, c, -1), tail


@register_jitable(inline="always")
def _dual_fb(ph, near, base, cnt, s, pos, okind, omb, ochunk, opair):  # pragma: no cover
    """The F of phase ``ph`` overlapped with the full backward of the other phase."""
    j = base[ph] + cnt[ph]
    cnt[ph] += 1
    other = 1 - ph
    jb = base[other] + cnt[2 + other]
    cnt[2 + other] += 1
    return _put_pair(okind, omb, ochunk, opair, s, pos, _FB, j, ph ^ near, jb)


@register_jitable(inline="always")
def _dual_w(s, pos, okind, omb, ochunk, opair, wq_c, wq_j, head,
            tail):  # pragma: no cover - compiled
    """The oldest W owed, if any."""
    if head == tail:
        return pos, head
    return _put_pair(okind, omb, ochunk, opair, s, pos, _W, wq_j[head], wq_c[head], -1), head + 1


# --------------------------------------------------------------------------------------------
# what each kind's order needs and gives, and the orders themselves as arrays (plain Python)
# --------------------------------------------------------------------------------------------

#: Kinds of this edition (their warm-ups are what their orders give, not a plan).
NEW_KINDS = ("looped-bfs", "interleaved-zb", "zb-v", "dualpipe", "dualpipe-v")
#: Kinds whose chunks are looped over the stages, with a wrap link p-1 -> 0 between chunks.
LOOPED_CHUNKS = ("interleaved", "looped-bfs", "interleaved-zb")
# Largest fixed order (op slots) kept in the cache of fixed_order: 1.5 MB of order arrays.
_CACHED_SLOTS = 1 << 16


def check_chunks(kind, p, m, v) -> int:
    """The chunks per stage of ``kind`` (``v``: as given, ``None`` when not), checked with ``m``
    against what the kind's order needs; a ``ValueError`` names what is wrong."""
    if kind in LOOPED_CHUNKS:
        if v is None or v < 2:
            raise ValueError(f"v must be an integer >= 2 for kind={kind!r} (chunks per stage); "
                             f"got {v}")
    elif kind in ("zb-v", "dualpipe", "dualpipe-v"):
        if v not in (None, 2):
            raise ValueError(f"v must be 2 for kind={kind!r} (two chunks per stage); got {v}")
        v = 2
    elif v not in (None, 1):
        raise ValueError(f"v must be 1 for kind={kind!r} (chunks need 'interleaved', "
                         f"'looped-bfs', 'interleaved-zb', 'zb-v' or a DualPipe); got {v}")
    else:
        v = 1
    if kind == "interleaved" and m % p:
        raise ValueError(
            f"m must be a multiple of p={p} for kind='interleaved' (Megatron's order); got {m}"
        )
    if kind == "interleaved-zb" and m % max(1, m // p):
        raise ValueError(f"m must be a multiple of max(1, m // p) = {max(1, m // p)} for "
                         f"kind='interleaved-zb' (PyTorch's rounds of micro-batches); got m={m}")
    if kind in ("dualpipe", "dualpipe-v") and m < 2 * p:
        raise ValueError(f"m must be at least 2p = {2 * p} for kind={kind!r}; got {m}")
    if kind == "dualpipe" and (p % 2 or m % 2):
        raise ValueError(f"p and m must both be even for kind='dualpipe' (two pipes that meet "
                         f"in the middle, m/2 micro-batches each); got p={p}, m={m}")
    return v


def _interleaved_warmup(p, m, v, s):
    """Megatron's count of warm-up chunk forwards (before the first steady forward)."""
    return 2 * (p - s - 1) + (v - 1) * p


def formula_warmups(kind, p, m, v):
    """The warm-ups a kind comes with (``None`` for kinds that take them from the caller)."""
    if kind == "zb-h1":
        return tuple(min(p - i, m) for i in range(p))
    if kind == "zb-h2":
        return tuple(min(2 * (p - i) - 1, m) for i in range(p))
    if kind == "gpipe":
        return (m,) * p
    if kind == "interleaved":
        w = tuple(_interleaved_warmup(p, m, v, i) + 1 if m != p else m * v for i in range(p))
        return tuple(min(x, m * v) for x in w)
    # This edition's fixed orders: the F's their orders run before the first backward.
    if kind == "looped-bfs":
        return (m * v,) * p
    if kind == "interleaved-zb":
        per_round = m // max(1, m // p)
        return tuple(min((v - 1) * per_round + p - i, m * v) for i in range(p))
    if kind == "zb-v":
        return tuple(min(2 * p - 1 - i, m) + min(i + 1, m) for i in range(p))
    # the DualPipes' turning stages run their first F0 and B1 apart: one more F before a B
    if kind == "dualpipe-v":
        return tuple(2 * p + (i == p - 1) for i in range(p))
    if kind == "dualpipe":
        return tuple(p + (i in (p // 2 - 1, p // 2)) for i in range(p))
    return None


def slots_per_stage(sched) -> int:
    """Order slots a stage has at most (each compute op one slot)."""
    if sched.kind == "dualpipe":
        return 3 * sched.m
    return (3 if sched.split_backward else 2) * sched.m * sched.v


_NO_PAIRS = np.full((1, 1), -1, dtype=np.int64)
_NO_PAIRS.flags.writeable = False


def full_order(order, p):
    """An order of 3 arrays (kinds, micro-batches, chunks: every slot used, no F&B) or 5 (also
    the F&B pairs' backward micro-batches and the slots used per stage), as 5."""
    if len(order) >= 5:
        return tuple(order[:5])
    okind, omb, ochunk = order[:3]
    return okind, omb, ochunk, _NO_PAIRS, np.full(p, okind.shape[1], dtype=np.int64)


def fixed_order(sched):
    """The fixed per-stage order: ``(kind, microbatch, chunk)`` for the first edition's kinds,
    plus ``(pair, length)`` (:func:`full_order`) for this edition's; kept for the last few
    small schedules (read-only), since a widget replays one schedule under many delays."""
    n_slots = sched.p * slots_per_stage(sched)
    return _small_fixed_order(sched) if n_slots <= _CACHED_SLOTS else _make_fixed_order(sched)


@functools.lru_cache(maxsize=16)
def _small_fixed_order(sched):
    order = _make_fixed_order(sched)
    for a in order:
        a.flags.writeable = False
    return order


def _make_fixed_order(sched):
    p, m, v = sched.p, sched.m, sched.v
    n_per = slots_per_stage(sched)
    # Every slot is written, except the DualPipes' rows, which differ in length and have pairs.
    pairs = sched.kind in ("dualpipe", "dualpipe-v")
    okind = np.full((p, n_per), -1, dtype=np.int64) if pairs else np.empty((p, n_per), np.int64)
    omb = np.empty((p, n_per), dtype=np.int64)
    ochunk = np.empty((p, n_per), dtype=np.int64)
    opair = np.full((p, n_per) if pairs else (1, 1), -1, dtype=np.int64)
    olen = np.empty(p, dtype=np.int64)
    w = np.array(sched.warmups, dtype=np.int64)
    fixed_order_kernel(ORDER_CODES[sched.kind], p, m, v, w, okind, omb, ochunk, opair, olen)
    if sched.kind in NEW_KINDS:
        return okind, omb, ochunk, opair, olen
    return okind, omb, ochunk
