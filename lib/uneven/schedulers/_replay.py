"""Time a pipeline's per-stage op order in one pass, without building its DAG.

:func:`uneven.schedulers.pipeline.simulate_pipeline` hands a per-stage order (kinds, micro-batch
and chunk per slot) to :func:`replay_kernel`, which walks every stage's order, starting each op
when its stage is free and its input has arrived, and writes the same op arrays the generic route
(ops and predecessor CSR from ``_build_dag``, then the timeline engine's Kahn traversal) produces:
same op ids, same floating-point sums, so every start and finish time is bit-identical
(``tests/test_pipeline_replay.py`` checks that on random schedules, modes and links). It exists
for speed: no edge lists and no successor lists, only a ring of the stages that can go on, and a
few loads and stores per op.

Units are seconds throughout. An arrival time of ``-1`` means "not produced yet".
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

__all__ = ["replay_kernel"]


@njit
def replay_kernel(p, m, v, okind, omb, ochunk, tf, tb, tw, ld, lt, hol, split,
                  res, kind, mb, chunk, stage, start, finish,
                  busy, bubble, peak, warm):  # pragma: no cover - compiled
    """Fill the op arrays (compute ops, each send right after its producer) and the per-stage
    ``busy`` (s), ``bubble`` (idle fraction), ``peak`` (micro-batches held) and ``warm`` (F's
    before the first B); return ``(ops, makespan)``, or ``(-1, nan)`` when the order deadlocks
    (an op waits for one queued behind it).

    ``tf``/``tb``/``tw``: per-stage op times (s) of a whole micro-batch (a chunk op takes
    ``1/v`` of it; without ``split`` the backward is ``tb + tw``). ``ld``/``lt``: delay and
    transfer time per link (entry ``p-1`` is the interleaved wrap link). ``hol``: a send sits on
    its stage's stream for ``transfer + delay``; otherwise it occupies the CPU sender of its
    stage and direction for ``transfer`` and the delay follows.
    """
    n_per = okind.shape[1]
    n_virt = p * v
    release = 2 if split else 1
    # Chunk op times, rounded as the generic route's numpy expressions round them.
    dF = np.empty(p)
    dB = np.empty(p)
    dW = np.empty(p)
    for s in range(p):
        dF[s] = tf[s] / v
        dB[s] = (tb[s] if split else tb[s] + tw[s]) / v
        dW[s] = tw[s] / v
    # Pass 1, over the order only: where each stage's op ids begin (a send follows its producer),
    # the most micro-batches held and the F's before the first B.
    base = np.empty(p, dtype=np.int64)
    n = 0
    for s in range(p):
        base[s] = n
        held = 0
        top = 0
        first_b = False
        n_f = 0
        for pos in range(n_per):
            k = okind[s, pos]
            n += 1
            if k == 0:
                held += 1
                if not first_b:
                    n_f += 1
            elif k == 1:
                first_b = True
            if k == release:
                held -= 1
            if pos == 0 or held > top:
                top = held
            link = _link(p, n_virt, k, ochunk[s, pos] * p + s, s)
            if link >= 0 and _has_send(link, ld, lt, hol):
                n += 1
        peak[s] = top / v
        warm[s] = n_f
        busy[s] = 0.0
    # Pass 2: time the ops, writing each one's fields as it runs. act[q, j] / grad[q, j]: when
    # micro-batch j's activation / gradient can be used by virtual stage q; f_last[j]: its F on
    # the last virtual stage done; b_done[q, j]: its B on virtual stage q done (for the W).
    act = np.full((n_virt, m), -1.0)
    grad = np.full((n_virt, m), -1.0)
    b_done = np.full((n_virt, m), -1.0)
    f_last = np.full(m, -1.0)
    pos = np.zeros(p, dtype=np.int64)
    nxt = base.copy()
    free = np.zeros(p)
    sfree = np.zeros((p, 2))
    # Stages to run, each at most once in the ring: a stage runs until its next op's input is
    # missing, and is queued again when a neighbour sends it a tensor.
    ring = np.arange(p)
    queued = np.ones(p, dtype=np.bool_)
    head = 0
    waiting = p
    done = 0
    while waiting > 0:
        s = ring[head]
        head = head + 1 if head < p - 1 else 0
        waiting -= 1
        queued[s] = False
        ps = pos[s]
        i = nxt[s]
        fr = free[s]
        used = busy[s]
        while ps < n_per:
            k = okind[s, ps]
            c = ochunk[s, ps]
            j = omb[s, ps]
            q = c * p + s
            if k == 0:
                ready = act[q, j] if q > 0 else 0.0
                d = dF[s]
            elif k == 1:
                ready = grad[q, j] if q < n_virt - 1 else f_last[j]
                d = dB[s]
            else:
                ready = b_done[q, j]
                d = dW[s]
            if ready < 0.0:
                break
            t = fr if fr > ready else ready
            f = t + d
            kind[i] = k
            mb[i] = j
            chunk[i] = c
            stage[i] = s
            res[i] = s
            start[i] = t
            finish[i] = f
            fr = f
            used += d
            if k == 1:
                b_done[q, j] = f
            elif k == 0 and q == n_virt - 1:
                f_last[j] = f
            i += 1
            if _moves(n_virt, k, q):
                link = _link(p, n_virt, k, q, s)
                there = f + 0.0  # p = 1: every chunk on this GPU, no link to cross
                if link >= 0:
                    if _has_send(link, ld, lt, hol):
                        direction = 0 if k == 0 else 1
                        if hol:  # on the stream, right after its producer
                            sd = lt[link] + ld[link]
                            st = f
                            sf = st + sd
                            fr = sf
                            there = sf + 0.0
                            res[i] = s
                        else:  # FIFO CPU sender of this stage and direction
                            sd = lt[link]
                            st = f if f > sfree[s, direction] else sfree[s, direction]
                            sf = st + sd
                            sfree[s, direction] = sf
                            there = sf + ld[link]
                            res[i] = p + 2 * s + direction
                        kind[i] = 3 + direction
                        mb[i] = j
                        chunk[i] = c
                        stage[i] = s
                        start[i] = st
                        finish[i] = sf
                        i += 1
                    else:
                        there = f + ld[link]
                if k == 0:
                    act[q + 1, j] = there
                    to = s + 1 if s < p - 1 else 0
                else:
                    grad[q - 1, j] = there
                    to = s - 1 if s > 0 else p - 1
                if to != s and not queued[to] and pos[to] < n_per:
                    tail = head + waiting
                    ring[tail if tail < p else tail - p] = to
                    queued[to] = True
                    waiting += 1
            ps += 1
            done += 1
        pos[s] = ps
        nxt[s] = i
        free[s] = fr
        busy[s] = used
    # Nothing left to run: either every op ran, or every stage waits on another.
    if done < p * n_per:
        return -1, np.nan
    makespan = 0.0
    for i in range(n):
        if finish[i] > makespan:
            makespan = finish[i]
    for s in range(p):
        bubble[s] = 1.0 - busy[s] / makespan
    return n, makespan


@njit(inline="always")
def _moves(n_virt, k, q):  # pragma: no cover - compiled
    """Whether an F (``k = 0``) or B (``k = 1``) of virtual stage ``q`` hands its tensor to the
    next virtual stage (up for an F, down for a B)."""
    return (k == 0 and q < n_virt - 1) or (k == 1 and q > 0)


@njit(inline="always")
def _link(p, n_virt, k, q, s):  # pragma: no cover - compiled
    """The link an op of virtual stage ``q`` on stage ``s`` sends its tensor over; -1: none (a W,
    the ends of the pipe, or ``p = 1``, where every chunk is on one GPU)."""
    if p == 1 or not _moves(n_virt, k, q):
        return -1
    if k == 0:
        return s if s < p - 1 else p - 1
    return s - 1 if s > 0 else p - 1


@njit(inline="always")
def _has_send(link, ld, lt, hol):  # pragma: no cover - compiled
    """Whether the tensor needs a send op (it does when the send takes any time)."""
    return (lt[link] + ld[link] > 0.0) if hol else (lt[link] > 0.0)


@njit
def input_horizon(m, v, tf, tb, tw, ld, lt):  # pragma: no cover - compiled
    """The bound on any finish time (s) that ``_check_size`` computes, or ``-1`` when an input
    is out of range (``tf``, ``tb`` not all finite and > 0, or the others not all finite and
    >= 0): the caller then runs the full checks, which name the parameter."""
    p = tf.size
    s_f = 0.0
    s_b = 0.0
    s_w = 0.0
    for s in range(p):
        if not (0.0 < tf[s] < np.inf and 0.0 < tb[s] < np.inf and 0.0 <= tw[s] < np.inf):
            return -1.0
        s_f += tf[s]
        s_b += tb[s]
        s_w += tw[s]
    top_d = 0.0
    top_t = 0.0
    for i in range(ld.size):
        if not (0.0 <= ld[i] < np.inf and 0.0 <= lt[i] < np.inf):
            return -1.0
        top_d = max(top_d, ld[i])
        top_t = max(top_t, lt[i])
    return m * (s_f + s_b + s_w) + 2.0 * m * v * p * (top_d + top_t)
