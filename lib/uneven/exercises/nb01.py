"""Notebook 01 (Attack of the Bubbles): a slow link in a pipeline."""

from __future__ import annotations

from . import register

MS = 1e-3


def _knee(delta, t_f, t_b):
    # W's out of the steady phase; the bound is homogeneous in the op times, so any unit works
    from ..schedulers.pipeline import absorption_bound

    return absorption_bound(delta, t_f, t_b)


def _draw_knee(rng):
    # slackness 1..8 (1 absorbs nothing) and op times of 1..40 in the page's unit (ms)
    return (int(rng.integers(1, 9)), float(rng.integers(1, 41)), float(rng.integers(1, 41)))


def _explorer_knee_ms():
    # The explorer's "manual slackness" (zero-bubble order, no memory budget), Δ = 3, op times
    # 1 : 2 : 1 at 10 ms: where the cost of one more ms of delay on link 1<->2 jumps.
    from ..schedulers.pipeline import absorption_bound

    return absorption_bound(3, 10 * MS, 20 * MS) / MS


def _zb_h2_ms(delay):
    # ZB-H2, 5 stages, 10 micro-batches, 10 ms ops; the delay on link 2<->3
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    zb = pipeline_schedule("zb-h2", 5, 10)
    return simulate_pipeline(zb, 10 * MS, 10 * MS, 10 * MS,
                             delays=[0.0, 0.0, delay, 0.0]).iteration_time / MS


#: The artifact's 128-GPU logs [repo]: samples/s and the tokens per sample its scripts set.
LARGE_RUN = {"PipeMorph": (28.84, 256), "1F1B": (21.12, 1024), "ZeroBubble": (20.43, 256)}


def _per_token():
    (pm, s_pm), (f1, s_f1) = LARGE_RUN["PipeMorph"], LARGE_RUN["1F1B"]
    return pm * s_pm / (f1 * s_f1)


def _zb_h1_last_stage_memory():
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    r = simulate_pipeline(pipeline_schedule("zb-h1", 4, 8), 1.0, 1.0, 1.0)
    return int(r.peak_memory[-1])


register("01.1", _knee, kind="function", params=("delta", "t_f", "t_b"), rtol=1e-6,
         atol=1e-9, draw=_draw_knee, examples=[(4, 12.0, 8.0), (3, 10.0, 20.0)],
         solution="(delta - 1) * (t_f + t_b) / 2",
         mistakes=[(lambda d, f, b: (d - 1) * (f + b),
                    "The delay is paid on the way there and on the way back."),
                   (lambda d, f, b: d * (f + b) / 2,
                    "Count again what stage k runs between sending F_j and needing B_j: w_k "
                    "counts the first steady forward."),
                   (lambda d, f, b: (d - 1) * f,
                    "With unequal op times the bound uses (t_F + t_B) / 2, not one op time.")],
         hint="compare what each side of the link runs between F_j leaving and B_j returning.")
register("01.2", _explorer_knee_ms, unit="ms", rtol=0.04,
         mistakes=[(lambda e: e * 2 / 3, "With unequal op times the bound uses (t_F + t_B) / 2, "
                                         "not one op time.")],
         hint="move the delay 1 ms at a time and watch the extra time per extra ms.")
register("01.3a", lambda: _zb_h2_ms(0.0), unit="ms", atol=0.5, rtol=0.0,
         hint="how long until the last stage starts, and is it ever idle after that?")
register("01.3b", lambda: _zb_h2_ms(15 * MS), unit="ms", atol=0.5, rtol=0.0,
         mistakes=[(lambda e: _zb_h2_ms(0.0) + 15.0, "That is one crossing: below the knee the "
                                                     "cost does not grow with m, but it can be "
                                                     "more than c. Run the simulator.")],
         hint="15 ms is below ZB-H2's knee; how many of the link's crossings sit on the "
              "critical path?")
register("01.4", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "The re-plan does see the delay: look at its warm-ups in the table."),
                   ("b", "Look at stage 0's warm-up in the re-plan's row of the table.")])
register("01.6", _per_token, rtol=0.02,
         mistakes=[(lambda e: LARGE_RUN["PipeMorph"][0] / LARGE_RUN["1F1B"][0],
                    "That is samples per second; the two runs' samples hold different numbers "
                    "of tokens."),
                   (lambda e: LARGE_RUN["PipeMorph"][0] / LARGE_RUN["ZeroBubble"][0],
                    "That is PipeMorph over ZeroBubble; the question asks about 1F1B.")],
         hint="multiply each run's samples/s by its tokens per sample.")
register("01.5", _zb_h1_last_stage_memory, kind="exact",
         mistakes=[(lambda e: 1, "That is 1F1B's last stage: a W still needs the activations "
                                 "its F stored.")],
         hint="count the micro-batches whose F has run and whose W has not.")

#: The worked solutions of the notebook's <details> blocks (tests/test_exercises.py checks them).
def _knee_solution(delta, t_f, t_b):
    return (delta - 1) * (t_f + t_b) / 2


SOLUTIONS = {"01.1": _knee_solution, "01.2": 30.0, "01.3a": 340.0, "01.3b": 370.0, "01.4": "c",
             "01.5": 4, "01.6": 0.34}

#: Answers from the neighbouring regime, which the checkers must reject.
REGIME_NEIGHBOURS = {
    # one op time; no /2; Δ instead of Δ − 1; the page's number as a constant
    "01.1": [lambda d, f, b: (d - 1) * max(f, b), lambda d, f, b: (d - 1) * (f + b),
             lambda d, f, b: d * (f + b) / 2, lambda d, f, b: 30.0],
    "01.2": [20.0, 35.0, 40.0, 45.0],  # equal-time formula; "extra <= 2c"; off by one
    # +c; +t; 2c - t (the W's-at-the-tail regime); the last link's 390 ms
    "01.3b": [355.0, 350.0, 360.0, 390.0],
    "01.6": [1.365, 1.41, 1.0, 4.0],
    "01.5": [1, 2, 8],
}
