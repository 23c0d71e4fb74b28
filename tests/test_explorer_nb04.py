"""Notebook 04's explorer driven headless, and its figure recipes."""

import io

import numpy as np
import pytest
from PIL import Image

from uneven.explorers import nb04
from uneven.overlap import tile_overlap
from uneven.schedulers.moe_layer import ablation, layer_timeline


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def test_defaults_are_megascale_moe_and_controls_recompute():
    ex = nb04.megascale_explorer(show=False)
    assert ex.error is None and ex.png[:4] == b"\x89PNG"
    s = ex.state
    assert s.strategy == "sp_ep" and s.timeline.inter_op and s.timeline.intra_op
    assert s.baseline / s.timeline.layer_time == pytest.approx(1.53, abs=0.01)
    assert s.r_nvlink == pytest.approx(3.48, abs=0.01) and s.r_nic == pytest.approx(1.09, abs=0.01)
    before = s.timeline.layer_time
    ex.controls["order"].value = "random"
    assert ex.state.timeline.layer_time > before
    ex.controls["h_ffn"].value = 2048
    assert ex.state.r_nvlink == pytest.approx(0.50, abs=0.01)
    ex.controls["strategy"].value = "tp_tp"
    assert ex.state.strategy == "tp_tp" and ex.error is None


def test_presets_and_notes():
    ex = nb04.megascale_explorer(show=False)
    ex.preset_menu.value = "baseline (TP+TP, no overlap)"
    t = ex.state.timeline
    assert not t.inter_op and not t.intra_op
    assert t.layer_time == pytest.approx(ex.state.baseline)
    ex.preset_menu.value = "MegaScale-MoE (SP+EP, both overlaps)"
    ex.controls["k"].value = 12
    assert ex.state.notes and "k = 12 > n = 8" in ex.state.notes[0]


def test_an_impossible_setting_is_shown_not_raised():
    ex = nb04.megascale_explorer(show=False)
    good = ex.state
    ex.controls["m"].value = 8  # 4 KV heads cannot be split over 8 GPUs by heads
    assert ex.error and "KV heads" in ex.error
    assert "KV heads" in ex.message.value and ex.state is good
    ex.controls["m"].value = 4
    assert ex.error is None


def test_blitted_updates_draw_the_same_picture_as_a_fresh_figure():
    moved = nb04.megascale_explorer(show=False)
    for value in (4096, 8192, 12288):
        moved.controls["h_ffn"].value = value
    fresh = nb04.megascale_explorer(show=False)
    fresh._background = None
    fresh.controls["h_ffn"].value = 12288
    diff = np.abs(_pixels(moved.png) - _pixels(fresh.png))
    assert diff.max() <= 8


def test_state_validation():
    with pytest.raises(ValueError, match="strategy"):
        nb04.megascale_state(strategy="ep")
    with pytest.raises(ValueError, match="nvlink_gbps"):
        nb04.megascale_state(nvlink_gbps=0.0)
    with pytest.raises(ValueError, match="n must be one of"):
        nb04.megascale_state(n=3)


def test_figure_recipes_draw():
    t = layer_timeline()
    rows = ablation()
    paper = {r["label"]: v for r, v in zip(rows, (1.0, 1.13, 1.22, 1.28), strict=True)}
    figs = [
        nb04.layer_figure({"a": t}),
        nb04.ablation_figure(rows, paper, one_node=(1.149, 1.329)),
        nb04.tile_figure({"unfused": (1e-3, 5e-4, "a2a_gemm"),
                          "fused": tile_overlap(1e-3, 5e-4, direction="a2a_gemm")}),
        nb04.hiding_figure(np.array([1024.0, 2048.0]),
                           {("NVLink", "BF16"): np.array([0.2, 0.5])}, {"x": 2048}),
        nb04.hiding_figure(np.array([1024.0, 2048.0]),
                           {("NIC", "BF16"): np.array([0.1, 0.16])}, {"x": 2048},
                           {"plain": (1024, 0.3), "lifted": (2048, 0.47, 0.16, "a NIC point")}),
        nb04.volume_figure([1, 2], {"TP": [1, 1]}, {"EP all-to-all": [0.5, 1.0]}, [1, 2],
                           {"TP": [1, 1]}, n=2, crossover=1.5),
    ]
    for fig in figs:
        data, _ = fig._repr_mimebundle_()
        assert data["image/png"][:4] == b"\x89PNG"


def test_state_is_checked_when_made_directly():
    import dataclasses

    s = nb04.megascale_state()
    for field, bad in (("timeline", None), ("baseline", 0.0), ("r_nic", float("nan")),
                       ("strategy", "ep"), ("n", True), ("notes", ["a note"]),
                       ("baseline", s.timeline.layer_time / 1e4)):
        with pytest.raises(ValueError, match=field):
            dataclasses.replace(s, **{field: bad})
    assert dataclasses.replace(s).baseline == s.baseline
    from uneven.plots import blank_figure

    with pytest.raises(ValueError, match="state"):
        nb04.draw_megascale(blank_figure(), "state")
    with pytest.raises(ValueError, match="fig"):
        nb04.draw_megascale(None, s)
    with pytest.raises(ValueError, match="show"):
        nb04.megascale_explorer(show=1)


def test_figure_recipes_refuse_bad_input_by_name():
    t = layer_timeline()
    rows = ablation()
    paper = {r["label"]: 1.0 for r in rows}
    h = [1024.0, 2048.0]
    cases = [
        ("timelines", lambda: nb04.layer_figure([t])),
        ("timelines", lambda: nb04.layer_figure({"a": "t"})),
        ("rows", lambda: nb04.ablation_figure([], paper)),
        ("rows", lambda: nb04.ablation_figure(rows * 2, paper)),
        ("paper", lambda: nb04.ablation_figure(rows, {})),
        ("one_node", lambda: nb04.ablation_figure(rows, paper, one_node=(1.0,))),
        ("runs", lambda: nb04.tile_figure({"x": (1e-3, 5e-4, "sideways")})),
        ("runs", lambda: nb04.tile_figure({"x": (1e300, 5e-4, "gemm_a2a")})),
        ("unit", lambda: nb04.tile_figure({"x": (1e-3, 5e-4, "gemm_a2a")}, unit="s")),
        ("h_ffn", lambda: nb04.hiding_figure([0.0, 2048.0], {}, {})),
        ("curves", lambda: nb04.hiding_figure(h, {("NVLink", "FP4"): [1.0, 2.0]}, {})),
        ("curves", lambda: nb04.hiding_figure(h, {("NIC", "BF16"): [1.0, -2.0]}, {})),
        ("marks", lambda: nb04.hiding_figure(h, {("NIC", "BF16"): [1.0, 2.0]}, {"x": None})),
        ("points", lambda: nb04.hiding_figure(h, {("NIC", "BF16"): [1.0, 2.0]}, {},
                                              {"p": (2048, 0.5, 0.1)})),
        ("m_values", lambda: nb04.volume_figure([1], {"TP": [1]}, {"TP": [1]}, [0], {"TP": [1]},
                                                n=2, crossover=1.0)),
        ("ffn_mb", lambda: nb04.volume_figure([1, 2], {"TP": [1]}, {"TP": [1, 2]}, [1],
                                              {"TP": [1]}, n=2, crossover=1.0)),
        ("crossover", lambda: nb04.volume_figure([1], {"TP": [1]}, {"TP": [1]}, [1], {"TP": [1]},
                                                 n=2, crossover=float("inf"))),
    ]
    for name, call in cases:
        with pytest.raises(ValueError, match=name):
            call()
