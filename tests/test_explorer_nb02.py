"""Notebook 02's explorer driven headless: it recomputes, shows errors instead of raising,
checks its state, and its figure recipes refuse bad input by name."""

import numpy as np
import pytest

from uneven.explorers import nb02


def test_explorer_recomputes_headless():
    ex = nb02.bytescale_explorer(show=False)
    assert ex.error is None and ex.png[:4] == b"\x89PNG"
    base = ex.state
    assert base.speedups["balanced HDP"] > base.speedups["naive HDP"] > 1.0
    ex.controls["nic_gbps"].value = 40.0  # half the calibrated rate: the static mesh suffers most
    assert ex.error is None
    assert ex.state.steps["static mesh"] > 1.5 * base.steps["static mesh"]
    assert ex.state.steps["balanced HDP"] < 1.3 * base.steps["balanced HDP"]
    ex.preset_menu.value = "Fig. 6a ranks, 400 Gb/s"  # Fig. 6a's rank is several times faster
    assert ex.error is None and ex.state.steps["balanced HDP"] < base.steps["balanced HDP"] / 3
    ex.controls["rank"].value = "fig18"
    ex.controls["nic_gbps"].value = 85.0
    ex.controls["delta"].value = 0.3
    assert ex.error is None and ex.state.steps["balanced HDP"] <= ex.state.steps["naive HDP"]
    ex.controls["d_pp"].value = 2
    assert ex.error is None and ex.state.pp == 2 and ex.state.d_hdp == 256
    ex.controls["kv_heads"].value = 32
    ex.controls["offload"].value = True
    assert ex.error is None and ex.state.offloaded > 0
    ex.preset_menu.value = "GitHub-like, 2M"
    assert ex.controls["mix"].value == "github" and ex.state.pp == 1
    assert ex.state.speedups["balanced HDP"] > 2.0


def test_explorer_shows_errors_instead_of_raising():
    ex = nb02.bytescale_explorer(show=False)
    good = ex.state
    ex.compute = lambda **kw: nb02.bytescale_state(**{**kw, "context": "3M"})
    ex.controls["delta"].value = 0.1
    assert ex.error and "context" in ex.error
    assert ex.state is good


def test_explorer_state_validation():
    with pytest.raises(ValueError, match="capacity_k"):
        nb02.bytescale_state(capacity_k=6)
    with pytest.raises(ValueError, match="kv_heads"):
        nb02.bytescale_state(kv_heads=16)
    with pytest.raises(ValueError, match="d_pp"):
        nb02.bytescale_state(d_pp=3)


def test_busy_profiles_are_sorted_and_bounded_by_the_step():
    s = nb02.bytescale_state()
    for name, busy in s.busy.items():
        assert np.all(np.diff(busy) <= 0)
        assert busy[0] <= s.steps[name]


def test_explorer_state_is_checked_when_made():
    from dataclasses import replace

    s = nb02.bytescale_state()
    assert all(not b.flags.writeable for b in s.busy.values())
    assert replace(s).steps == s.steps  # a valid copy passes its own checks
    for field, bad in (("steps", {"static mesh": 1.0}), ("steps", {**s.steps, "naive HDP": 0.0}),
                       ("busy", {**s.busy, "naive HDP": np.zeros(0)}),
                       ("comm_share", {**s.comm_share, "naive HDP": 1.5}),
                       ("microbatches", (3, 2)), ("d_cp", True), ("fallback", 1),
                       ("offloaded", -1)):
        with pytest.raises(ValueError, match=field):
            replace(s, **{field: bad})
    with pytest.raises(ValueError, match="state"):
        nb02.draw_bytescale(nb02.plots.figure()[0], s.steps)
    with pytest.raises(ValueError, match="fig"):
        nb02.draw_bytescale(None, s)


def test_figure_recipes_refuse_bad_input_by_name():
    from uneven.schedulers.sequences import FIG6A, CostModel, default_cost_model

    cost = default_cost_model()
    with pytest.raises(ValueError, match="labels"):
        nb02.length_figure(None, [0.5], [0.5], {}, {})
    with pytest.raises(ValueError, match="token_share"):
        nb02.length_figure(["a"], [0.5], [2.0], {"length": [1], "samples": [1],
                                                  "tokens": [1]}, {})
    with pytest.raises(ValueError, match="cdf"):
        nb02.length_figure(["a"], [0.5], [0.5], {"length": [1]}, {})
    with pytest.raises(ValueError, match="cost"):
        nb02.cost_figure(CostModel(0.0, 0.0, 1e-7), cost, FIG6A, [1e-3], pack_tokens=8192)
    with pytest.raises(ValueError, match="pack_times"):
        nb02.cost_figure(cost, cost, FIG6A, [0.0, 1e-3], pack_tokens=8192)
    with pytest.raises(ValueError, match="fig6a"):
        nb02.cost_figure(cost, cost, {"tokens": [1]}, [1e-3], pack_tokens=8192)
    with pytest.raises(ValueError, match="pairs"):
        nb02.ring_figure({"zigzag": [0, 0]}, [1024], [1e-3], {"a": [1e-3]}, {})
    with pytest.raises(ValueError, match="step_comm"):
        nb02.ring_figure({"zigzag": [1, 1]}, [1024], [1e-3], {"a": [1e-3, 1.0]}, {})
    with pytest.raises(ValueError, match="thresholds"):
        nb02.ring_figure({"zigzag": [1, 1]}, [1024], [1e-3], {"a": [1e-3]}, {"x": 0.0})
    with pytest.raises(ValueError, match="steps"):
        nb02.timeline_figure({"no such scheme": None})
    with pytest.raises(ValueError, match="throughput"):
        nb02.context_figure([2**18], {"static mesh": [float("inf")]})
    with pytest.raises(ValueError, match="contexts"):
        nb02.context_figure(None, {"static mesh": [1.0]})
    with pytest.raises(ValueError, match="paper"):
        nb02.ablation_figure(["a", "b"], [1.0], {})
    with pytest.raises(ValueError, match="models"):
        nb02.ablation_figure(["a"], [1.0], {"m": [1.0, 2.0]})
    fig = nb02.ablation_figure(["a", "b"], [1.0, None], {"m": [1.2, float("nan")]})
    assert fig is not None  # nan marks a rung the model leaves out
