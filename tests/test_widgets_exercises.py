"""Widgets driven headless, and the exercise checkers."""

import numpy as np
import pytest

from uneven.explorers import start_explorer, start_state
from uneven.widgets import explore, int_slider


def test_start_page_explorer_recomputes_when_a_control_moves():
    ex = start_explorer(show=False)
    before = ex.state.time
    assert ex.png and ex.png[:4] == b"\x89PNG"
    ex.controls["mb_per_pair"].value = 4.0
    assert ex.error is None
    assert ex.state.time > before
    ex.controls["hot_factor"].value = 4.0
    assert ex.state.nic_down[0].sum() > ex.state.nic_down[1].sum()
    assert len(ex.timings) == 3


def test_presets_set_several_controls_with_one_update():
    ex = start_explorer(show=False)
    n = len(ex.timings)
    ex.preset_menu.value = "hot node 8×"
    assert ex.controls["n_nodes"].value == 8 and ex.controls["hot_factor"].value == 8.0
    assert len(ex.timings) == n + 1
    assert ex.state.n_gpus == 64
    ex.controls["hot_factor"].value = 2.0  # moving a control by hand leaves the preset
    assert ex.preset_menu.value == "(custom)" and ex.state.n_gpus == 64


def test_a_bad_value_gives_a_message_not_an_exception():
    def compute(m):
        if m > 5:
            raise ValueError(f"m must be <= 5; got {m}")
        return m * 2

    def draw(fig, state, **_):
        fig.subplots().bar([0], [state])

    ex = explore(compute, draw, {"m": int_slider(1, 10, 1, 2, "m")}, show=False)
    ex.controls["m"].value = 9
    assert ex.error and "m must be <= 5" in ex.error
    assert "m must be" in ex.message.value
    assert ex.state == 4  # last good state kept
    ex.controls["m"].value = 3
    assert ex.error is None and ex.state == 6 and ex.message.value == ""


def test_explore_rejects_defaults_that_fail():
    with pytest.raises(ValueError, match="default"):
        explore(lambda m: 1 / 0, lambda fig, s, **_: None,
                {"m": int_slider(1, 3, 1, 1, "m")}, show=False)


def test_a2a_state_validation():
    with pytest.raises(ValueError, match="fabric"):
        start_state(fabric="torus")
    with pytest.raises(ValueError, match="hot_factor"):
        start_state(hot_factor=0.5)


def _pixels(png):
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def test_blitted_updates_draw_the_same_picture_as_a_fresh_figure():
    from uneven.explorers import deepseek_explorer, pipemorph_explorer

    for build, control, path in ((start_explorer, "mb_per_pair", (2.0, 4.0, 3.0)),
                                 (pipemorph_explorer, "delay_ms", (20.0, 5.0, 12.0)),
                                 (deepseek_explorer, "ib_gbps", (200.0, 600.0, 350.0))):
        moved = build(show=False)
        for value in path:  # several updates over one cached background
            moved.controls[control].value = value
        fresh = build(show=False)
        fresh._background = None  # force the next update to render everything
        fresh.controls[control].value = path[-1]
        diff = np.abs(_pixels(moved.png) - _pixels(fresh.png))
        assert diff.max() <= 8, f"{build.__name__}: blitted picture differs from a fresh one"
