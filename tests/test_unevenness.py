"""Six slow pieces on one shared scale: knob mapping, balanced settings, ideals, and the
relations the notebook's prose states."""

import numpy as np
import pytest

from uneven.unevenness import GRID, KNOBS, PAPER_KEYS, slow_piece, unevenness_curves


def test_knobs_map_the_shared_scale():
    assert set(KNOBS) == set(PAPER_KEYS) and GRID[0] == 0.0 and GRID[-1] == 1.0
    for k in KNOBS.values():
        assert k.value(0.0) == k.lo and k.value(1.0) == k.hi
        assert k.value(0.5) == pytest.approx((k.lo + k.hi) / 2)
    with pytest.raises(ValueError, match="s"):
        KNOBS["ubep"].value(1.5)


@pytest.mark.parametrize("key", ["pipemorph", "megascale", "balancing", "ubep"])
def test_balanced_setting_is_its_own_ideal(key):
    r = slow_piece(key, 0.0)
    assert r.baseline_ratio == pytest.approx(1.0) and r.system_ratio == pytest.approx(1.0)


@pytest.mark.parametrize("key", PAPER_KEYS)
def test_the_step_is_never_below_its_ideal_at_the_reference(key):
    r = slow_piece(key, 0.5)
    assert r.baseline_step >= r.baseline_ideal * (1 - 1e-12)
    assert r.system_step >= r.system_ideal * (1 - 1e-12)
    assert r.per_rank.size >= 3 and not r.per_rank.flags.writeable


def test_pipemorph_pays_each_delay_once():
    for s in (0.3, 0.5, 1.0):
        r = slow_piece("pipemorph", s)
        assert r.system_step == pytest.approx(0.39 + r.value * 1e-3)  # healthy 390 ms + c
        assert r.system_ratio == pytest.approx(1.0)
    assert slow_piece("pipemorph", 1.0).baseline_ratio > 1.2


def test_monotone_where_the_model_is_deterministic():
    c = unevenness_curves(keys=("megascale", "ubep", "deepseek"))
    assert np.all(np.diff(c["megascale"]["baseline"]) >= -1e-12)
    assert np.all(np.diff(c["ubep"]["baseline"]) >= -1e-12)
    # the claims of exercise 07.2's solution
    assert c["deepseek"]["baseline"][-1] > 5 and c["deepseek"]["system"][-1] < 3.5
    assert round(c["megascale"]["system"][-1], 2) == 1.08
    # the capacity cap of the MegaScale-like system binds from a busiest / median of 1.4 on
    assert np.ptp(c["megascale"]["system"][5:]) < 1e-9


def test_cache_and_validation():
    assert slow_piece("ubep", 0.5) is slow_piece("ubep", 0.5000001)
    with pytest.raises(ValueError, match="key"):
        slow_piece("megatron", 0.5)
    with pytest.raises(ValueError, match="s"):
        slow_piece("ubep", -0.1)


def test_pieces_and_knobs_are_checked(monkeypatch):
    import dataclasses

    r = slow_piece("ubep", 0.5)
    for change, name in (({"per_rank": [1 + 1j]}, "per_rank"), ({"per_rank": []}, "per_rank"),
                         ({"key": "adaptra"}, "key"), ({"baseline_ideal": 0.0}, "baseline_ideal"),
                         ({"s": 2.0}, "s"), ({"value": float("inf")}, "value")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(r, **change)
    with pytest.raises(ValueError, match="hi"):
        dataclasses.replace(KNOBS["ubep"], hi=1e308)
    with pytest.raises(ValueError, match="piece"):
        dataclasses.replace(KNOBS["ubep"], piece=3)
    with pytest.raises(ValueError, match="keys"):
        unevenness_curves(keys={"nope": 1})
    with pytest.raises(ValueError, match="keys"):
        unevenness_curves(keys=("ubep", "ubep"))
    with pytest.raises(ValueError, match="s_values"):
        unevenness_curves(np.array(0.5))
    c = unevenness_curves([0.0, 0.5], keys=("ubep",))
    assert not c["ubep"]["baseline"].flags.writeable
    # uncached points count against the work budget; cached ones are free
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "1e6")
    assert unevenness_curves([0.0, 0.5], keys=("ubep",))["ubep"]["s"].tolist() == [0.0, 0.5]
    with pytest.raises(ValueError, match="s_values=.*UNEVEN_MAX_STEPS"):
        unevenness_curves([0.123, 0.456], keys=("deepseek",))
