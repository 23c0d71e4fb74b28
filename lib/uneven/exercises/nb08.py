"""Notebook 08 (a research quickstart): the binding link, a sweep, an anomaly, a NIC's time."""

from __future__ import annotations

import numpy as np

from . import register

#: The quickstart's pipeline: 16 stages, 64 micro-batches, 4 ms per F, B and W, link 7 delayed.
_P, _M, _LINK, _OP = 16, 64, 7, 4e-3


def _extra_ms(kind: str, delay_ms: float) -> float:
    # The replayed schedule's extra iteration time (ms) for a delay on link 7, as the notebook's
    # `iteration` function and its sweep compute it.
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    s = pipeline_schedule(kind, _P, _M)
    d = np.zeros(_P - 1)
    d[_LINK] = delay_ms * 1e-3
    base = simulate_pipeline(s, _OP, _OP, _OP).iteration_time
    return (simulate_pipeline(s, _OP, _OP, _OP, delays=d).iteration_time - base) * 1e3


def _first_delay_over(kind: str, extra_ms: float, delays=range(21)) -> int:
    # The smallest whole-ms delay in `delays` whose extra time is at least `extra_ms`.
    return next(int(x) for x in delays if _extra_ms(kind, x) >= extra_ms)


def _nic_send_s(tokens, remote_nodes, copy_bytes, nic_gbps):
    # One GPU's NIC sends one copy of each token per remote node it reaches (the relay): the
    # mean NIC's drain time (s), with the NIC's rate given in Gb/s (vendor G = 1e9, 8 bits a byte).
    return tokens * remote_nodes * copy_bytes / (nic_gbps * 1e9 / 8)


def _draw_nic(rng):
    # 16..65,536 tokens per GPU, 0.5..8 remote nodes per token, 1..64 kB copies, 25..1,600 Gb/s
    return (int(rng.integers(16, 65_537)), float(np.round(rng.uniform(0.5, 8.0), 3)),
            int(rng.integers(1_000, 64_001)), float(rng.choice([25, 100, 200, 400, 800, 1600])))


register("08.1", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "At 1:1 each leaf uplink carries what its leaf's NICs send out of the "
                         "leaf, which is less than they send: run the step and read "
                         "drain_by_kind."),
                   ("d", "A NIC sends its own GPU's tokens but receives what every sender "
                         "routed to its GPU's experts: run the step and compare the two NIC "
                         "directions in drain_by_kind.")])
register("08.2", lambda: _first_delay_over("zb-h2", 100.0), kind="exact", unit="ms",
         mistakes=[(lambda e: 12, "12 ms is the first point of Section 3's grid past 100 ms; the "
                                  "grid skips 9, 10 and 11: sweep every whole millisecond."),
                   (lambda e: 10, "At 10 ms ZB-H2 ends 96 ms late, just short of 100: the first "
                                  "delay at or past 100 ms is the next one.")],
         hint="sweep delay_ms over range(21) for 'zb-h2' only and compare each row with the "
              "zero-delay one.")
register("08.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Replay the 2 ms order under 1 ms: if the times were wrong, that run "
                         "could not beat the 1 ms online run."),
                   ("b", "The memory budget is the same at both delays; what differs is which op "
                         "is ready when the stage picks.")])
register("08.4", _nic_send_s, kind="function",
         params=("tokens", "remote_nodes", "copy_bytes", "nic_gbps"), rtol=1e-9, atol=1e-15,
         draw=_draw_nic, examples=[(4096, 3.873, 7392, 400.0)],
         solution="tokens * remote_nodes * copy_bytes / (nic_gbps * 1e9 / 8)",
         mistakes=[(lambda t, r, b, g: t * r * b / (g * 1e9),
                    "Mind the units: a NIC's rate is in gigabits; 400 Gb/s moves 50 GB/s."),
                   (lambda t, r, b, g: t * 8 * b / (g * 1e9 / 8),
                    "That sends one copy per expert (k = 8); the relay sends one per remote node "
                    "and fans out over NVLink."),
                   (lambda t, r, b, g: t * r * b / (g * 1e9 / 8) * 1e3,
                    "That is in milliseconds; the checker wants seconds.")],
         hint="count the bytes one GPU's NIC sends, then divide by its rate in bytes per second.")

#: The worked solutions of notebook 08's <details> blocks (08.4: the function's expression).
SOLUTIONS = {"08.1": "b", "08.2": 11, "08.3": "c",
             "08.4": lambda tokens, remote_nodes, copy_bytes, nic_gbps:
             tokens * remote_nodes * copy_bytes / (nic_gbps * 1e9 / 8)}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "08.1": ["a", "c", "d", "a, b"],
    "08.2": [10, 12, 6, 7],
    "08.3": ["a", "b", "d", "b, c"],
    # Gb/s read as GB/s; a copy per expert; milliseconds
    "08.4": [lambda tokens, remote_nodes, copy_bytes, nic_gbps:
             tokens * remote_nodes * copy_bytes / (nic_gbps * 1e9),
             lambda tokens, remote_nodes, copy_bytes, nic_gbps:
             tokens * 8 * copy_bytes / (nic_gbps * 1e9 / 8)],
}
