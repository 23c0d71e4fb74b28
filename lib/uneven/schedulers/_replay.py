"""Time a pipeline's per-stage op order in one pass, without building its DAG.

:func:`uneven.schedulers.pipeline.simulate_pipeline` hands a per-stage order (kinds, micro-batch
and chunk per slot) to :func:`replay_orders`, which walks every stage's order, starting each op
when its stage is free and its inputs have arrived, and writes the same op arrays the generic
route (ops and predecessor CSR from :mod:`uneven.schedulers._pipeline_dag`, then the timeline
engine's Kahn traversal) produces: same op ids, same floating-point sums, so every start and
finish time is bit-identical (``tests/test_pipeline_replay.py`` and
``tests/test_pipeline_schedules.py`` check that on random schedules, modes and links). It exists
for speed: no edge lists and no successor lists, only a ring of the stages that can go on, and a
few loads and stores per op.

Placements (where each virtual stage of a micro-batch's path lives; link ``i`` joins stages
``i`` and ``i+1``, and a delay hits both directions):

* ``LOOPED`` (0): virtual stage ``q`` on stage ``q % p`` as chunk ``q // p``; chunk ``c`` hands
  over to chunk ``c + 1`` over the wrap link ``p-1`` (stage ``p-1`` -> stage 0).
* ``V_SHAPE`` (1): stage ``i`` holds virtual stages ``i`` (chunk 0) and ``2p-1-i`` (chunk 1): the
  second chunk flows back ``p-1 -> 0`` over the same links, and the turn at stage ``p-1`` is
  local (no link).
* ``BIDIRECTIONAL`` (2): two pipes in opposite directions, chunk = direction; a micro-batch of
  direction 1 enters at stage ``p-1`` and its virtual stage ``q`` is on stage ``p-1-q``.

Op codes in an order: 0 F, 1 B (the full backward when the schedule does not split B and W),
2 W, 5 F&B (the F of ``(chunk, microbatch)`` overlapped with the full backward of
``(1 - chunk, pair)``), 6 BW (a full backward in a schedule that otherwise splits them); codes
3 and 4 are the sends the kernels add. Units are seconds throughout. An arrival time of ``-1``
means "not produced yet".
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

__all__ = ["replay_kernel", "replay_orders", "LOOPED", "V_SHAPE", "BIDIRECTIONAL"]

LOOPED, V_SHAPE, BIDIRECTIONAL = 0, 1, 2
# op codes (those of uneven.schedulers.pipeline.OP_KINDS)
_F, _B, _W, _FB, _BW = 0, 1, 2, 5, 6


def replay_kernel(p, m, v, okind, omb, ochunk, tf, tb, tw, ld, lt, hol, split,
                  res, kind, mb, chunk, stage, start, finish, busy, bubble, peak, warm):
    """:func:`replay_orders` for a looped placement with full rows and no F&B ops (the kinds
    of the first edition: GPipe, 1F1B, interleaved and the zero-bubble kinds), with the
    argument list those had."""
    n_per = okind.shape[1]
    olen = np.full(p, n_per, dtype=np.int64)
    opair = np.full((1, 1), -1, dtype=np.int64)
    pair = np.full(res.size, -1, dtype=np.int64)
    return replay_orders(p, m, v, LOOPED, okind, omb, ochunk, opair, olen, tf, tb, tw, tf,
                         ld, lt, hol, split, res, kind, mb, chunk, stage, pair, start, finish,
                         busy, bubble, peak, warm)


@njit
def replay_orders(p, m, div, place, okind, omb, ochunk, opair, olen, tf, tb, tw, tfb, ld, lt,
                  hol, split, res, kind, mb, chunk, stage, pair, start, finish,
                  busy, bubble, peak, warm):  # pragma: no cover - compiled
    """Fill the op arrays (compute ops, each one's sends right after it: activation, then
    gradient) and the per-stage ``busy`` (s), ``bubble`` (idle fraction), ``peak`` (micro-batches
    held) and ``warm`` (F's before the first backward); return ``(ops, makespan)``, or
    ``(-1, nan)`` when the order deadlocks (an op waits for one queued behind it).

    ``okind``/``omb``/``ochunk``/``opair`` ``[p, slots]``: the order (op code, micro-batch, chunk,
    and for an F&B the micro-batch of its backward half), ``olen[s]`` slots used on stage ``s``.
    ``div``: visits of a micro-batch per stage (a chunk op takes ``1/div`` of the stage's time and
    holds ``1/div`` of its activations). ``place``: :data:`LOOPED`, :data:`V_SHAPE` or
    :data:`BIDIRECTIONAL`. ``tf``/``tb``/``tw``/``tfb``: per-stage times (s) of a whole
    micro-batch (without ``split`` a B is ``tb + tw``; a BW always is; an F&B is ``tfb``).
    ``ld``/``lt``: delay and transfer time per link (entry ``p-1`` is the looped wrap link).
    ``hol``: a send sits on its stage's stream for ``transfer + delay``; otherwise it occupies
    the CPU sender of its stage and direction for ``transfer`` and the delay follows. ``pair``
    (an F&B's backward micro-batch per op) must come filled with -1: only F&B ops write it.
    """
    n_virt = n_virtual(place, p, div)
    vq, dest, link_to, sends = route_tables(place, p, div, ld, lt, hol)
    any_send = sends.sum() > 0  # most calls: no send ops at all, nothing to count
    release = 2 if split else 1
    # Chunk op times, rounded as the generic route's numpy expressions round them.
    dF = np.empty(p)
    dB = np.empty(p)
    dW = np.empty(p)
    dBW = np.empty(p)
    dFB = np.empty(p)
    for s in range(p):
        dF[s] = tf[s] / div
        dB[s] = (tb[s] if split else tb[s] + tw[s]) / div
        dW[s] = tw[s] / div
        dBW[s] = (tb[s] + tw[s]) / div
        dFB[s] = tfb[s] / div
    # Pass 1, over the order only: where each stage's op ids begin (sends follow their
    # producer), the most micro-batches held and the F's before the first backward.
    base = np.empty(p, dtype=np.int64)
    n = 0
    n_slots = 0
    for s in range(p):
        base[s] = n
        held = 0
        top = 0
        first_b = False
        n_f = 0
        for pos in range(olen[s]):
            k = okind[s, pos]
            c = ochunk[s, pos]
            n += 1
            if k == _F:
                if any_send:
                    n += sends[s, c, 0]
                held += 1
                if not first_b:
                    n_f += 1
            elif k == _FB:  # the F stores before the backward frees
                n += sends[s, c, 0] + sends[s, 1 - c, 1]
                held += 1
                if held > top:
                    top = held
                first_b = True
            elif k == _B or k == _BW:
                if any_send:
                    n += sends[s, c, 1]
                first_b = True
            if k == release or k == _BW or k == _FB:
                held -= 1
            if pos == 0 or held > top:
                top = held
        n_slots += olen[s]
        peak[s] = top / div
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
        while ps < olen[s]:
            k = okind[s, ps]
            c = ochunk[s, ps]
            j = omb[s, ps]
            q = vq[s, c]
            cb = c  # the chunk, micro-batch and virtual stage of the backward (half)
            jb = j
            qb = q
            if k == _F:
                ready = act[q, j] if q > 0 else 0.0
                d = dF[s]
            elif k == _B or k == _BW:
                ready = grad[q, j] if q < n_virt - 1 else f_last[j]
                d = dB[s] if k == _B else dBW[s]
            elif k == _W:
                ready = b_done[q, j]
                d = dW[s]
            else:  # F&B: both inputs must be there
                cb = 1 - c
                jb = opair[s, ps]
                qb = vq[s, cb]
                r_f = act[q, j] if q > 0 else 0.0
                r_b = grad[qb, jb] if qb < n_virt - 1 else f_last[jb]
                ready = -1.0 if (r_f < 0.0 or r_b < 0.0) else (r_f if r_f > r_b else r_b)
                d = dFB[s]
            if ready < 0.0:
                break
            t = fr if fr > ready else ready
            f = t + d
            kind[i] = k
            mb[i] = j
            chunk[i] = c
            stage[i] = s
            if k == _FB:  # every other op's entry is -1 already (a store per op costs 20%)
                pair[i] = jb
            res[i] = s
            start[i] = t
            finish[i] = f
            fr = f
            used += d
            i += 1
            if k == _W:
                ps += 1
                done += 1
                continue
            if k != _F:
                b_done[qb, jb] = f
            # the tensors this op hands on: its activation (part 0), then its gradient (part 1)
            lo = 1 if (k == _B or k == _BW) else 0
            hi = 1 if k == _F else 2
            for part in range(lo, hi):
                if part == 0:
                    cs, js = c, j
                    if q == n_virt - 1:
                        f_last[j] = f
                        continue
                else:
                    cs, js = cb, jb
                    if qb == 0:
                        continue
                link = link_to[s, cs, part]
                to = dest[s, cs, part]
                there = f + 0.0  # a local hand-over: no link to cross
                if link >= 0:
                    if sends[s, cs, part]:
                        if hol:  # on the stream, right after its producer (and its other send)
                            st = fr
                            sf = st + (lt[link] + ld[link])
                            fr = sf
                            there = sf + 0.0
                            res[i] = s
                        else:  # FIFO CPU sender of this stage and direction
                            st = f if f > sfree[s, part] else sfree[s, part]
                            sf = st + lt[link]
                            sfree[s, part] = sf
                            there = sf + ld[link]
                            res[i] = p + 2 * s + part
                        kind[i] = 3 + part
                        mb[i] = js
                        chunk[i] = cs
                        stage[i] = s
                        start[i] = st
                        finish[i] = sf
                        i += 1
                    else:
                        there = f + ld[link]
                if part == 0:
                    act[q + 1, j] = there
                else:
                    grad[qb - 1, jb] = there
                if to != s and not queued[to] and pos[to] < olen[to]:
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
    if done < n_slots:
        return -1, np.nan
    makespan = 0.0
    for i in range(n):
        if finish[i] > makespan:
            makespan = finish[i]
    for s in range(p):
        bubble[s] = 1.0 - busy[s] / makespan
    return n, makespan


@njit
def route_tables(place, p, div, ld, lt, hol):  # pragma: no cover - compiled
    """Where each chunk's tensors go, once per call rather than once per op: ``vq[s, c]`` the
    virtual stage of chunk ``c`` on stage ``s``; for its activation (``[..., 0]``) and gradient
    (``[..., 1]``): ``dest`` the stage that uses it next, ``link`` the link it crosses (-1: a
    hand-over on the same stage), ``sends`` 1 when that crossing is a send op. Entries for a
    tensor that goes nowhere (the pipe's ends) are never read."""
    n_virt = n_virtual(place, p, div)
    n_chunks = div if place == LOOPED else 2
    vq = np.empty((p, n_chunks), dtype=np.int64)
    dest = np.zeros((p, n_chunks, 2), dtype=np.int64)
    link = np.full((p, n_chunks, 2), -1, dtype=np.int64)
    sends = np.zeros((p, n_chunks, 2), dtype=np.int64)
    for s in range(p):
        for c in range(n_chunks):
            q = virtual_stage(place, p, s, c)
            vq[s, c] = q
            for part in range(2):
                nq = q + 1 if part == 0 else q - 1
                if nq < 0 or nq >= n_virt:
                    continue
                to, _ = host(place, p, nq, c)
                dest[s, c, part] = to
                lk = hop(place, p, s, to, part == 0)
                link[s, c, part] = lk
                if lk >= 0 and has_send(lk, ld, lt, hol):
                    sends[s, c, part] = 1
    return vq, dest, link, sends


@njit
def n_virtual(place, p, div):  # pragma: no cover - compiled
    """Virtual stages on a micro-batch's path."""
    if place == LOOPED:
        return p * div
    if place == V_SHAPE:
        return 2 * p
    return p


@njit
def virtual_stage(place, p, s, c):  # pragma: no cover - compiled
    """The virtual stage of chunk ``c`` on stage ``s`` (for :data:`BIDIRECTIONAL`, ``c`` is the
    direction)."""
    if place == LOOPED:
        return c * p + s
    if c == 0:
        return s
    return (2 * p - 1 - s) if place == V_SHAPE else (p - 1 - s)


@njit
def host(place, p, q, c):  # pragma: no cover - compiled
    """``(stage, chunk)`` holding virtual stage ``q`` of a micro-batch of chunk/direction ``c``
    (``c`` matters only for :data:`BIDIRECTIONAL`)."""
    if place == LOOPED:
        return q % p, q // p
    if place == V_SHAPE:
        return (q, 0) if q < p else (2 * p - 1 - q, 1)
    return (q, c) if c == 0 else (p - 1 - q, c)


@njit
def hop(place, p, s, to, up):  # pragma: no cover - compiled
    """The link a tensor crosses from stage ``s`` to stage ``to`` (``up``: an activation);
    -1 when both are the same stage. Looped chunks hand over on the wrap link ``p-1``."""
    if to == s:
        return -1
    if place == LOOPED:
        if up:
            return s if s < p - 1 else p - 1
        return s - 1 if s > 0 else p - 1
    return s if to > s else to


@njit
def has_send(link, ld, lt, hol):  # pragma: no cover - compiled
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
