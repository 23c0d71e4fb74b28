"""Megatron 1F1B written the way a SimPy user would write it (the peer of the timeline engine).

One SimPy process per stage runs its ops in the 1F1B order: ``w_s`` forwards (``w_s = p - s``
unless given, counting the first steady forward as :mod:`uneven.schedulers.pipeline` does), then
B/F pairs, then the remaining B's. Activations and gradients travel through ``simpy.Store``
queues, one per stage and direction; a forward waits for its activation (``get``), a backward for
its gradient. A send is what :func:`uneven.schedulers.pipeline.simulate_pipeline` models:

* ``hol=False``: a CPU sender per stage and direction (a ``simpy.Resource`` of capacity 1, FIFO)
  is busy for ``transfer[link]``; the tensor then needs ``delays[link]`` more on the wire; the
  stage's compute goes on meanwhile (a separate process per message);
* ``hol=True``: the send sits on the stage's GPU stream for ``transfer + delay`` before the
  stage's next op can start.

Shared by ``benchmarks/bench_simpy.py`` and ``tests/test_simpy_peer.py``; needs ``simpy`` only.
"""

from __future__ import annotations

import simpy

F, B = 0, 1


def one_f_one_b_order(p: int, m: int, s: int, warmup: int | None = None) -> list:
    """Stage ``s``'s ops as ``(kind, micro-batch)``: ``w`` F's, then B/F pairs, then B's."""
    w = min(p - s, m) if warmup is None else min(warmup, m)
    order = [(F, j) for j in range(w)]
    for k in range(m - w):
        order += [(B, k), (F, w + k)]
    order += [(B, k) for k in range(m - w, m)]
    return order


def simpy_1f1b(p, m, t_f, t_b, delays=None, transfer=None, *, hol=False, warmups=None,
               record=True):
    """Simulate one 1F1B iteration in SimPy.

    ``t_f``, ``t_b``: per-stage op times (lists of ``p``; ``t_b`` is the whole backward, B + W);
    ``delays``, ``transfer``: per link (lists of ``p - 1``, default zeros); ``warmups``: per
    stage (default ``p - s``). Returns ``(iteration_time, ops)`` where ``ops`` maps
    ``(stage, kind, micro-batch)`` to ``(start, finish)`` (empty unless ``record``).
    """
    delays = [0.0] * (p - 1) if delays is None else [float(x) for x in delays]
    transfer = [0.0] * (p - 1) if transfer is None else [float(x) for x in transfer]
    env = simpy.Environment()
    acts = [simpy.Store(env) for _ in range(p)]   # activations arriving at stage s
    grads = [simpy.Store(env) for _ in range(p)]  # gradients arriving at stage s
    senders = [(simpy.Resource(env, 1), simpy.Resource(env, 1)) for _ in range(p)]
    ops = {}
    finish = [0.0] * p

    def wire(store, item, sender, tx, delay):
        """A CPU sender busy for ``tx`` (FIFO), then ``delay`` of latency, then delivery."""
        if tx > 0.0:
            with sender.request() as req:
                yield req
                yield env.timeout(tx)
        yield env.timeout(delay)
        yield store.put(item)

    def send(s, direction, j):
        link = s if direction == F else s - 1
        store = acts[s + 1] if direction == F else grads[s - 1]
        tx, delay = transfer[link], delays[link]
        if hol:  # the send occupies this stage's stream until it has completed
            if tx + delay > 0.0:
                yield env.timeout(tx + delay)
            yield store.put(j)
        else:
            env.process(wire(store, j, senders[s][direction], tx, delay))

    def stage(s):
        w = None if warmups is None else warmups[s]
        for kind, j in one_f_one_b_order(p, m, s, w):
            if kind == F and s > 0:
                got = yield acts[s].get()
                assert got == j, (s, kind, j, got)  # FIFO links deliver in order
            elif kind == B and s < p - 1:
                got = yield grads[s].get()
                assert got == j, (s, kind, j, got)
            start = env.now
            yield env.timeout(t_f[s] if kind == F else t_b[s])
            if record:
                ops[(s, kind, j)] = (start, env.now)
            if kind == F and s < p - 1:
                yield from send(s, F, j)
            elif kind == B and s > 0:
                yield from send(s, B, j)
        finish[s] = env.now

    for s in range(p):
        env.process(stage(s))
    env.run()
    return max(finish), ops
