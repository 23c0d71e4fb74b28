"""Notebook 07 (what the six papers agree on, and where they differ): cross-notebook exercises."""

from __future__ import annotations

from . import register


def _slowest_of_64_us():
    from ..order_stats import expected_max

    return expected_max("exponential", 64, scale=2e-6) * 1e6


def _extremes_at_one():
    # (notebook of the baseline furthest above its ideal, notebook of the system closest to it)
    # with every knob at s = 1, as the explorer's preset "twice each setting" shows.
    from ..papers import paper
    from ..unevenness import PAPER_KEYS, slow_piece

    pieces = [slow_piece(k, 1.0) for k in PAPER_KEYS]
    worst = max(pieces, key=lambda p: p.baseline_ratio)
    best = min(pieces, key=lambda p: p.system_ratio)
    return (int(paper(worst.key).notebook[:2]), int(paper(best.key).notebook[:2]))


register("07.1", _slowest_of_64_us, unit="µs", rtol=0.02,
         mistakes=[(lambda e: 2.0, "That is the mean die: the barrier waits for the slowest."),
                   (lambda e: 2.0 * 4.1588830833596715,
                    "ln N alone leaves out Euler's constant: H_N ≈ ln N + 0.577.")],
         hint="the largest of N exponentials with mean σ has mean σ·H_N, H_N = 1 + 1/2 + … + 1/N.")
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
         mistakes=[("c", "Shared NICs make the NIC side slower, which overlap would hide more "
                         "of, not less.")])


#: The worked solutions of notebook 07's <details> blocks.
SOLUTIONS = {"07.1": 9.49, "07.2": (3, 1), "07.3": "c", "07.4": "d"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "07.1": [2.0, 8.32, 7.49, 4.74, 12.0],  # the mean; ln N; max minus mean; sigma = 1; sqrt
    "07.2": [(3, 4), (1, 3), (2, 1), (3, 6), (5, 1)],
    "07.3": ["a", "b", "d", "c, d"],
    "07.4": ["a", "b", "c", "b, d"],
}
