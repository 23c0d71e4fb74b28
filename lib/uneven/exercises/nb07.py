"""Notebook 07 (what the six papers agree on, and where they differ): cross-notebook exercises."""

from __future__ import annotations

import math

import numpy as np

from . import register

_EULER = 0.5772156649015329  # Euler–Mascheroni constant


def _slowest(N, mean):
    # the expected lateness of the slowest of N dies, each late by an independent exponential
    # delay with the given mean: mean * H_N
    from ..order_stats import expected_max

    return expected_max("exponential", int(N), scale=float(mean))


def _draw_slowest(rng):
    # 1..100,000 dies, log-uniform (a few dies as often as thousands), a mean of 0.01..1,000
    # (any unit: the answer is in the same one)
    return (int(np.rint(10 ** rng.uniform(0, 5))), float(np.round(10 ** rng.uniform(-2, 3), 4)))


def _extremes_at_one():
    # (notebook of the baseline furthest above its ideal, notebook of the system closest to it)
    # with every knob at s = 1, as the explorer's preset "twice each setting" shows.
    from ..papers import paper
    from ..unevenness import PAPER_KEYS, slow_piece

    pieces = [slow_piece(k, 1.0) for k in PAPER_KEYS]
    worst = max(pieces, key=lambda p: p.baseline_ratio)
    best = min(pieces, key=lambda p: p.system_ratio)
    return (int(paper(worst.key).notebook[:2]), int(paper(best.key).notebook[:2]))


register("07.1", _slowest, kind="function", params=("N", "mean"), rtol=1e-6, atol=1e-12,
         draw=_draw_slowest, examples=[(64, 2.0), (1, 2.0)],
         solution="mean * sum(1 / i for i in range(1, N + 1))",
         mistakes=[(lambda N, m: m, "That is the mean die: the barrier waits for the slowest."),
                   (lambda N, m: m * math.log(N), "ln N alone leaves out Euler's constant (and "
                                                  "gives 0 for one die): H_N ≈ ln N + 0.577."),
                   (lambda N, m: m * sum(1 / i for i in range(2, N + 1)),
                    "That is how far the slowest is behind the mean die; the question asks how "
                    "late it is."),
                   (lambda N, m: m * math.sqrt(2 * math.log(N)), "√(2 ln N) is the Gaussian's "
                                                                 "growth, not the exponential's."),
                   (lambda N, m: m * (math.log(N) + _EULER), "ln N + 0.577 approximates H_N for "
                                                            "large N; the checker wants the exact "
                                                            "sum (one die: 1, not 0.58)."),
                   (lambda N, m: m * (math.log(N) + _EULER + 1 / (2 * N)),
                    "That is H_N's asymptotic series, close but not exact for small N: sum the "
                    "N terms."),
                   (lambda N, m: sum(1 / i for i in range(1, N + 1)),
                    "That is in units of the mean delay: multiply by `mean`.")],
         hint="the minimum of k exponentials with mean σ is exponential with mean σ/k: wait for "
              "the first of N, then the first of the N − 1 left, and so on.")
register("07.2", _extremes_at_one, kind="exact",
         mistakes=[(lambda e: (e[0], 4), "Notebook 04's capped system is flat, but the dropped "
                                         "tokens do not bring it down to its balanced layer: "
                                         "look again at which curve sits exactly on 1."),
                   (lambda e: (e[1], e[0]), "The pair is (furthest baseline, closest system): "
                                            "the other way round.")],
         hint="use the preset 'twice each setting (s = 1)' and read the two numbers in each "
              "panel's corner.")
register("07.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("d", "Count how many of the 4 nodes a token's 8 experts reach at EP64 "
                         "(notebook 03's expected_distinct_groups): a relay would have copies to "
                         "merge. Ask what it would save.")])
register("07.4", lambda: "d", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Fewer bytes leave less to hide: that gains nothing, it cannot make the "
                         "layer slower."),
                   ("c", "Shared NICs make the NIC side slower, which overlap would hide more "
                         "of, not less.")])


#: The worked solutions of notebook 07's <details> blocks (07.1: the function's expression).
SOLUTIONS = {"07.1": lambda N, mean: mean * sum(1 / i for i in range(1, N + 1)),
             "07.2": (3, 1), "07.3": "c", "07.4": "d"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    # the mean die; ln N; the gap to the mean die; the Gaussian's growth; H_N without the mean
    "07.1": [lambda N, mean: mean, lambda N, mean: mean * math.log(N),
             lambda N, mean: mean * sum(1 / i for i in range(2, N + 1)),
             lambda N, mean: mean * math.sqrt(2 * math.log(N)),
             lambda N, mean: sum(1 / i for i in range(1, N + 1))],
    "07.2": [(3, 4), (1, 3), (2, 1), (3, 6), (5, 1)],
    "07.3": ["a", "b", "d", "c, d"],
    "07.4": ["a", "b", "c", "b, d"],
}
