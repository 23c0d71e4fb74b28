"""Notebook 07's explorer driven headless, and its figure recipes."""

import numpy as np
import pytest

from uneven import plots
from uneven.counterfactuals import TaxRow
from uneven.explorers import nb07
from uneven.papers import evidence_rows
from uneven.policies import policy_table
from uneven.unevenness import PAPER_KEYS


@pytest.fixture(scope="module")
def explorer():
    return nb07.unevenness_explorer(show=False)


def test_defaults_presets_and_controls(explorer):
    assert explorer.error is None and explorer.png[1:4] == b"PNG"
    s0 = explorer.state
    assert set(s0.pieces) == set(PAPER_KEYS) and all(p.s == 0.5 for p in s0.pieces.values())
    explorer.preset_menu.value = "all balanced (s = 0)"
    assert all(p.s == 0.0 for p in explorer.state.pieces.values())
    assert explorer.state.pieces["ubep"].baseline_ratio == pytest.approx(1.0)
    explorer.preset_menu.value = "twice each setting (s = 1)"
    s1 = explorer.state
    assert s1.pieces["deepseek"].baseline_ratio > s0.pieces["deepseek"].baseline_ratio
    explorer.controls["pipemorph"].value = 0.3
    assert explorer.state.pieces["pipemorph"].value == pytest.approx(18.0)
    assert explorer.state.pieces["deepseek"] is s1.pieces["deepseek"]  # the others are cached
    assert explorer.preset_menu.value == "(custom)" and explorer.error is None


def test_errors_are_shown_not_raised():
    ex = nb07.unevenness_explorer(show=False)

    def bad(**kw):
        return nb07.uneven_state(**{**kw, "ubep": 2.0})

    ex.compute = bad
    ex.controls["deepseek"].value = 0.2
    assert ex.error is not None and "ubep must be" in ex.error and ex.state is not None
    with pytest.raises(ValueError, match="ubep"):
        nb07.uneven_state(ubep=-1.0)


def test_figure_recipes_draw():
    t = policy_table([[1.0, 2.0], [1.5, 1.0]], ["a", "b"], ["x", "y"])
    figs = [nb07.policy_figure({"demo": t}, defaults={"demo": "a"})]
    ns = np.array([1, 2, 8])
    figs.append(nb07.order_stats_figure(ns, {"g": ns * 0.1}, {"g": ([2], [0.1], [0.01])},
                                        asymptote=(ns, ns * 0.1)))
    figs.append(nb07.compute_tax_figure([TaxRow("a", "b", 2.0, 1.0)], bound=("c", 0.2)))
    figs.append(nb07.evidence_figure(evidence_rows()))
    figs.append(nb07.unevenness_figure(nb07.uneven_state()))
    for fig in figs:
        assert plots.png_bytes(fig)[1:4] == b"PNG"
    md = nb07.evidence_markdown(evidence_rows())
    assert md.count("\n") == len(evidence_rows()) + 2 and "[chapter]" in md
