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
        return nb07.unevenness_state(**{**kw, "ubep": 2.0})

    ex.compute = bad
    ex.controls["deepseek"].value = 0.2
    assert ex.error is not None and "ubep must be" in ex.error and ex.state is not None
    with pytest.raises(ValueError, match="ubep"):
        nb07.unevenness_state(ubep=-1.0)


def test_figure_recipes_draw():
    t = policy_table([[1.0, 2.0], [1.5, 1.0]], ["a", "b"], ["x", "y"])
    figs = [nb07.policy_figure({"demo": t}, defaults={"demo": "a"})]
    ns = np.array([1, 2, 8])
    figs.append(nb07.order_stats_figure(ns, {"g": ns * 0.1}, {"g": ([2], [0.1], [0.01])},
                                        asymptote=(ns, ns * 0.1)))
    figs.append(nb07.compute_tax_figure([TaxRow("a", "b", 2.0, 1.0)], bound=("c", 0.2)))
    figs.append(nb07.evidence_figure(evidence_rows()))
    figs.append(nb07.unevenness_figure(nb07.unevenness_state()))
    for fig in figs:
        assert plots.png_bytes(fig)[1:4] == b"PNG"
    md = nb07.evidence_markdown(evidence_rows())
    assert md.count("\n") == len(evidence_rows()) + 2 and "[chapter]" in md


def test_state_and_recipes_refuse_bad_input_by_name():
    import dataclasses

    from uneven.counterfactuals import bandwidth_sweep, network_fix_sweep

    s = nb07.unevenness_state()
    for change, name in (({"pieces": {"x": 1}}, "pieces"), ({"curves": {}}, "curves"),
                         ({"curves": {**s.curves, "ubep": {"s": [0.5], "baseline": [np.nan],
                                                           "system": [1.0]}}}, "curves")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(s, **change)
    with pytest.raises(ValueError, match="state"):
        nb07.unevenness_figure("state")
    with pytest.raises(ValueError, match="fig"):
        nb07.draw_unevenness(None, s)
    t = policy_table([[1.0, 2.0], [1.5, 1.0]], ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="defaults"):
        nb07.policy_figure({"demo": t}, defaults={"demo": "c"})
    with pytest.raises(ValueError, match="tables"):
        nb07.policy_figure([t])
    ns = np.array([1, 2, 8])
    with pytest.raises(ValueError, match="closed"):
        nb07.order_stats_figure(ns, {"g": [1.0, np.inf, 2.0]}, {})
    with pytest.raises(ValueError, match="simulated"):
        nb07.order_stats_figure(ns, {"g": ns * 0.1}, {"g": ([2], [0.1])})
    with pytest.raises(ValueError, match="pieces"):
        nb07.slow_pieces_figure({"ubep": s.pieces["deepseek"]})
    sweep = network_fix_sweep(0.03, [0.0, 1.0], p=4, m=12)
    bw = bandwidth_sweep([1, np.inf], ep=16, tokens_per_die=4)
    ba = {("skewed", "A"): 2e-4, ("skewed", "B"): 1e-4, ("balanced", "A"): 1e-4,
          ("balanced", "B"): 1e-4}
    with pytest.raises(ValueError, match="before_after"):
        nb07.network_fixes_figure(sweep, {**ba, ("skewed", "A"): 0.0}, bw)
    with pytest.raises(ValueError, match="bandwidth"):
        nb07.network_fixes_figure(sweep, ba, {**bw, "factors": [np.inf, np.inf]})
    with pytest.raises(ValueError, match="sweep"):
        nb07.network_fixes_figure({**sweep, "zb_cpu": sweep["zb_cpu"] * 1e300}, ba, bw)
    with pytest.raises(ValueError, match="rows"):
        nb07.compute_tax_figure([1, 2])
    with pytest.raises(ValueError, match="bound"):
        nb07.compute_tax_figure([TaxRow("a", "b", 2.0, 1.0)], bound=("c", np.nan))
    with pytest.raises(ValueError, match="rows"):
        nb07.fabrics_figure("rows")
    rows = evidence_rows()
    with pytest.raises(ValueError, match="rows"):
        nb07.evidence_figure([{**rows[0], "kind": "blog"}])
    with pytest.raises(ValueError, match="rows"):
        nb07.evidence_markdown([{**rows[0], "claim": None}])
    from uneven.ep.roofline import EXPERT_COSTS

    kw = dict(decode_tokens=(1, 256), training_tokens=(2000, 20000),
              decode_gain=([1, 4], [0.1, 0.2]), training_gain=0.1)
    with pytest.raises(ValueError, match="costs"):
        nb07.regimes_figure({"x": "cost"}, [1.0, 10.0], **kw)
    with pytest.raises(ValueError, match="decode_gain"):
        nb07.regimes_figure(EXPERT_COSTS, [1.0, 10.0], **{**kw, "decode_gain": ([1, 4], [0.1])})
    with pytest.raises(ValueError, match="tokens"):
        nb07.regimes_figure(EXPERT_COSTS, [0.0, 10.0], **kw)


def test_the_default_image_hides_the_curves_beyond_each_knob():
    # exercise 07.2 asks what s = 1 gives: the default picture (s = 0.5) must not show it
    s = nb07.unevenness_state()
    fig = nb07.unevenness_figure(s)
    for ax in fig.axes:
        for line in ax.get_lines():
            x = np.asarray(line.get_xdata(), dtype=float)
            if x.size > 2:  # a curve, not a marker or the ideal's line
                assert x.max() <= 0.5 + 1e-9
    s1 = nb07.unevenness_state(**dict.fromkeys(PAPER_KEYS, 1.0))
    fig = nb07.unevenness_figure(s1)
    assert max(np.asarray(line.get_xdata(), dtype=float).max(initial=0.0)
               for ax in fig.axes for line in ax.get_lines()) == pytest.approx(1.0)


def test_policy_figure_names_the_policy_fixed_in_advance():
    t = policy_table([[1.0, 2.0], [1.5, 1.0], [3.0, 3.0]], ["a", "b", "c"], ["x", "y"])
    fig = nb07.policy_figure({"demo": t}, defaults={"demo": "c"},
                             default_labels={"demo": "notebook 06's fixed split"})
    labels = [lab.get_text() for lab in fig.axes[0].get_yticklabels()]
    assert labels[2].endswith("◀ notebook 06's fixed split")
    assert "notebook 06's fixed split up to" in fig.axes[0].get_title("left")
    assert nb07.DEFAULT_LABELS["UBEP: counting cores per EP size and batch"] == \
        "notebook 06's fixed split"
    with pytest.raises(ValueError, match="default_labels"):
        nb07.policy_figure({"demo": t}, defaults={"demo": "c"}, default_labels={"other": "x"})


@pytest.fixture(scope="module")
def boundaries():
    return nb07.boundary_cases()


def test_each_agreement_has_a_boundary_case_where_it_stops(boundaries):
    b = boundaries
    assert len(b.rows) == 6 and b.markdown.count("\n") == 7
    # small delays: one fixed plan is the best on every workload, though ZB-H2 is not
    assert b.fixed.loss < 1e-9 and b.fixed.zb > 0.1
    # a shared cause: the slowest of 64 comes down to the mean
    assert b.gap[1.0] == 0.0 and b.gap[0.9] < 0.35 * b.gap[0.0]
    # a network fix that removes the whole delay beats the re-plan
    assert b.pipe.zb == pytest.approx(b.pipe.healthy) and b.pipe.zb < b.pipe.pipemorph
    # one token per GPU: the better transport pays before balancing as much as after
    assert b.transport["skewed"] > 0.4
    assert b.transport["skewed"] >= b.transport["balanced"] - 0.05
    # bytes-bound superpod (1,024 tokens per die): bandwidth pays, and free bytes beat removing
    # the barriers; at 128 tokens they do not
    assert b.pod.gain_2x > 0.15 and b.pod.baseline[-1] < b.pod.ubep[0]
    assert b.pod.small["baseline"][-1] > b.pod.small["ubep"][0]
    # healthy links: the stream tax is small
    assert 0.0 < b.tax < 0.03
    with pytest.raises(ValueError, match="delay"):
        nb07.boundary_cases(-1.0)
