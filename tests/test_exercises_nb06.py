"""Notebook 06's exercises beyond the shared checks of tests/test_exercises.py: each recognised
slip gets its hint, the derived function is the library's, the distractors of 06.4 are wrong,
and 06.3's answer is the flat core send."""

import numpy as np

from uneven.exercises import check


def test_recognised_slips_get_their_hint():
    assert "512 bytes" in check("06.2", 1.415).message
    assert "q = 4" in check("06.2", 1.2743).message
    assert "flight and the poll" in check("06.3", 47.04).message
    assert "q = 4" in check("06.3", 52.40).message
    assert "56 blocks" in check("06.5", 56).message
    assert "at 512 bytes" in check("06.5", 57).message
    assert not check("06.4", "a").ok and "slow-die" in check("06.4", "a").message


def test_exercise_06_1_derived_function_and_its_slips():
    from uneven.exercises.nb06 import REGIME_NEIGHBOURS, SOLUTIONS

    assert check("06.1", SOLUTIONS["06.1"], seed=3).ok
    hints = ("512 bytes", "only the latency", "15 block writes", "1/q")
    for slip, hint in zip(REGIME_NEIGHBOURS["06.1"], hints, strict=True):
        fb = check("06.1", slip, seed=3)
        assert not fb.ok and hint in fb.message
    # the solution's printed formula with its printed constants, and the exercise's rounded
    # bandwidths, are right too (the checker's tolerance is 1e-3)
    for push in (0.1254, 512 / 4.0833e3, 512 / 4.083e3, 512 / 4.08e3):
        def printed(n0, n1, n2, q, push=push):
            return 15 * (n0 * (0.12 / q + push) + n1 * (0.60 / q + push) + n2 * (1.38 / q + push))

        assert check("06.1", printed, seed=3).ok, push
    # the page's example: the hop-mix core of Exercise 06.2 at q = 7 (in µs)
    assert abs(SOLUTIONS["06.1"](1, 15, 16, 7) - 127.04) < 0.01


def test_exercise_06_2_numbers_the_page_states():
    """The per-write costs the exercise gives at the fitted q = 7, and its two send times."""
    from uneven.ep.superpod import CoreCosts
    from uneven.exercises import exercise

    c = CoreCosts(writes_in_flight=7)
    assert [round(c.write_time(h, 512) * 1e9, 1) for h in range(3)] == [142.5, 211.1, 322.5]
    assert round(32 * 15 * c.write_time(2, 512) * 1e6, 1) == 154.8
    assert round(exercise("06.2").expected(), 2) == 1.22


def test_exercise_06_4_distractors_are_wrong():
    """Solution 06.4: under the slow-die model the P99 is set by the slow dies (against (a)),
    UBEP saves about as many ms at P99 as at P50 (against (d)); (b) the same absolute saving on
    a longer step."""
    from uneven.ep.superpod import CoreCosts, decode_steps, scheme, superpod_traffic

    t, c = superpod_traffic(64, seed=0), CoreCosts(writes_in_flight=7)
    kw = dict(n_steps=1000, seed=7, jitter=2e-6)
    light = [decode_steps(t, c, scheme(k), **kw) for k in ("baseline", "ubep")]
    slow = [decode_steps(t, c, scheme(k), slow_prob=1e-3, slowdown=1.5, **kw)
            for k in ("baseline", "ubep")]
    assert slow[0].p99 > 1.3 * light[0].p99  # (a) is wrong: the slow dies set the P99
    d50, d99 = slow[0].p50 - slow[1].p50, slow[0].p99 - slow[1].p99
    assert abs(d99 - d50) < 0.2 * d50  # about the same ms saved
    assert 1 - slow[1].p99 / slow[0].p99 < 1 - slow[1].p50 / slow[0].p50 - 0.01
    # (c) is wrong: with its counting core alone made 1.5x slower, UBEP's dispatch is unchanged
    from uneven.ep.superpod import phase_latency, phase_plan

    p = phase_plan(t, c, scheme("ubep"))
    slower_count = p.count_time.max() * 1.5
    assert slower_count < p.send_time.max()
    assert np.isfinite(phase_latency(p))


def test_exercise_06_3_writes_alone_is_the_flat_core_send():
    """The recognised slip of 06.3: 22 copies of 15 local writes (330 × 142.5 ns = 47.0 µs),
    within 2.4% of the answer but outside its tolerance."""
    from uneven.exercises import exercise

    ex = exercise("06.3")
    e = ex.expected()
    slip = ex.mistakes[1][0](e)
    assert round(slip, 1) == 47.0 and round(e, 1) == 48.2
    assert abs(slip - e) > ex.rtol * e
