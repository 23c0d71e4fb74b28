"""Bind a few controls to a library function and redraw one figure quickly.

The pattern every notebook uses::

    ex = explore(compute, draw, {"delay_ms": slider(0, 60, 1, 10, "delay (ms)"), ...})

* ``compute(**values)`` calls the library and returns a *state* (any object);
* ``draw(fig, state, **values)`` draws that state into a fresh figure;
* the figure is shown first as a plain PNG output, so a notebook read without a widget front end
  (GitHub, nbviewer, CI) still shows the result; with a live kernel, moving a control recomputes
  and replaces that same output in place (``update_display``), so nothing is drawn twice;
* an exception inside ``compute`` or ``draw`` is shown as a message under the controls and the
  explorer keeps working with the last good figure;
* sliders use ``continuous_update=False``, so a kernel runs once per release, not per pixel.

Tests drive an :class:`Explorer` headless: set ``ex.controls["delay_ms"].value`` and look at
``ex.state`` and ``ex.error``.
"""

from __future__ import annotations

import html
import io
import time
from collections.abc import Callable

import ipywidgets as W
from IPython.display import Image, display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image as Image_

from ._validate import (
    _show,
    check_bool,
    check_callable,
    check_instance,
    check_int,
    check_pair,
    check_real,
    check_str,
)
from .i18n import gettext as _
from .plots import DISPLAY_DPI, MAX_INCHES, blank_figure, color, style

__all__ = ["Explorer", "explore", "reuse", "slider", "int_slider", "dropdown", "toggle"]


def reuse(fig, key: str, build: Callable) -> dict:
    """Artists of ``fig`` built once by ``build(fig) -> dict`` and kept for later redraws.

    A widget's draw function calls ``art = reuse(fig, "a2a", build)`` and then only updates data
    (``set_data``, ``set_text``, ...): creating axes and ticks is the slow part of a redraw. The
    artists listed under ``art["dynamic"]`` are the ones that change; on an explorer's figure they
    are drawn over a cached background (blitting), so an update renders only them. The draw
    function returns a *layout key* (anything hashable) that changes whenever the background
    would (axis limits, ticks, shapes); ``None`` means "always redraw everything".
    A figure that was cleared, or built for another key, is rebuilt.
    """
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure, "a matplotlib Figure")
    check_str("key", key, max_len=200)
    check_callable("build", build, "fig -> dict of artists")
    cache = getattr(fig, "_uneven_artists", None)
    if cache is None or cache[0] != key or not fig.axes:
        fig.clear()
        try:
            art = build(fig)
        except Exception as err:  # the caller's build function: say which argument failed
            raise ValueError(f"build failed on this figure: {type(err).__name__}: {err}") from err
        if not isinstance(art, dict):
            raise ValueError(f"build must return a dict of artists; it returned {_show(art)}")
        if getattr(fig, "_uneven_live", False):
            for artist in art.get("dynamic", ()):
                artist.set_animated(True)  # left out of the background, drawn on top
        cache = (key, art)
        fig._uneven_artists = cache
    return cache[1]


def _encode_png(canvas) -> bytes:
    """PNG bytes of an Agg canvas's current buffer: RGB (figures are opaque) and light
    compression, because this runs on every update."""
    width, height = canvas.get_width_height()
    img = Image_.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    out = io.BytesIO()
    img.convert("RGB").save(out, format="PNG", compress_level=1)
    return out.getvalue()


def slider(lo: float, hi: float, step: float, value: float, description: str,
           **kw) -> W.FloatSlider:
    """A float slider that fires on release (``continuous_update=False``).

    ``lo < hi``, ``step > 0`` and ``lo <= value <= hi``, all finite.
    """
    lo, hi, step, value = _range("slider", lo, hi, step, value, check_real)
    description = check_str("description", description, max_len=500)
    return W.FloatSlider(min=lo, max=hi, step=step, value=value, description=description,
                         continuous_update=False, style={"description_width": "initial"}, **kw)


def int_slider(lo: int, hi: int, step: int, value: int, description: str, **kw) -> W.IntSlider:
    """An integer slider that fires on release (``lo < hi``, ``step >= 1``, ``value`` in
    ``[lo, hi]``, all integers)."""
    lo, hi, step, value = _range("int_slider", lo, hi, step, value, check_int)
    description = check_str("description", description, max_len=500)
    return W.IntSlider(min=lo, max=hi, step=step, value=value, description=description,
                       continuous_update=False, style={"description_width": "initial"}, **kw)


def dropdown(options, value, description: str, **kw) -> W.Dropdown:
    """A dropdown; ``options`` as a list or a list of ``(label, value)`` pairs; ``value`` must
    be one of the values."""
    if isinstance(options, (str, bytes)) or not isinstance(options, (list, tuple)) or not (
        1 <= len(options) <= 10_000
    ):
        raise ValueError(f"options must be a non-empty list of values or (label, value) pairs; "
                         f"got {_show(options)}")
    values = []
    for opt in options:
        if isinstance(opt, tuple):
            if len(opt) != 2 or not isinstance(opt[0], str):
                raise ValueError(f"options must hold values or (label, value) pairs; got "
                                 f"{_show(opt)}")
            values.append(opt[1])
        else:
            values.append(opt)
    if not any(_same(value, v) for v in values):
        raise ValueError(f"value must be one of the options' values; got {_show(value)}")
    description = check_str("description", description, max_len=500)
    return W.Dropdown(options=options, value=value, description=description,
                      style={"description_width": "initial"}, **kw)


def toggle(value: bool, description: str, **kw) -> W.Checkbox:
    """A checkbox."""
    value = check_bool("value", value)
    description = check_str("description", description, max_len=500)
    return W.Checkbox(value=value, description=description, indent=False, **kw)


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # e.g. arrays: not an option value
        return False


def _range(what, lo, hi, step, value, check):
    lo = check("lo", lo)
    hi = check("hi", hi)
    if not lo < hi:
        raise ValueError(f"lo must be below hi for a {what}; got lo={lo}, hi={hi}")
    if check is check_int:
        step = check_int("step", step, lo=1)
    else:
        step = check_real("step", step, lo=0.0, lo_open=True)
    value = check("value", value, lo=lo, hi=hi)
    return lo, hi, step, value


class Explorer:
    """Controls + compute + draw, with a static first figure and in-place updates.

    Attributes: ``controls`` (name -> widget), ``state`` (last good compute result), ``error``
    (message of the last failed update, or ``None``), ``timings`` (seconds per update, compute
    plus draw plus PNG encoding), ``png`` (bytes of the figure shown), ``custom`` (the preset
    menu's "no preset" entry, ``"(custom)"`` in English, in the language in force when the
    explorer was built).

    The figure is shown ``figsize`` inches wide at :data:`uneven.plots.DISPLAY_DPI` CSS pixels per
    inch (9 pt text is 12.5 px) and rendered at ``scale`` times that, so it stays sharp on HiDPI
    screens; 1.5 keeps an update under 50 ms on two cores (``make bench``).

    >>> def draw(fig, state, **_):
    ...     art = reuse(fig, "demo", lambda f: {"title": f.suptitle("")})
    ...     art["title"].set_text(f"x doubled is {state:g}")
    >>> ex = explore(lambda x: 2 * x, draw, {"x": slider(0.0, 1.0, 0.1, 0.5, "x")}, show=False)
    >>> ex.state
    1.0
    >>> ex.controls["x"].value = 0.2
    >>> ex.state, ex.error, sorted(ex.values())
    (0.4, None, ['x'])
    """

    def __init__(self, compute: Callable, draw: Callable, controls: dict, *,
                 presets: dict | None = None, figsize=(7.5, 3.4), scale: float = 1.5,
                 columns: int = 2):
        if not callable(compute) or not callable(draw):
            raise ValueError("compute and draw must be callables")
        if not isinstance(controls, dict) or not controls or not all(
            isinstance(k, str) and isinstance(w, W.ValueWidget) for k, w in controls.items()
        ):
            raise ValueError("controls must be a non-empty dict of name -> ipywidget with a "
                             f"value; got {_show(controls)}")
        if presets is not None and not (isinstance(presets, dict) and all(
            isinstance(k, str) and isinstance(v, dict) for k, v in presets.items()
        )):
            raise ValueError(f"presets must be a dict of name -> dict of control values; got "
                             f"{_show(presets)}")
        w, h = check_pair("figsize", figsize)
        figsize = (check_real("figsize[0]", w, lo=0.5, hi=MAX_INCHES),
                   check_real("figsize[1]", h, lo=0.5, hi=MAX_INCHES))
        scale = check_real("scale", scale, lo=0.25, hi=4.0)
        columns = check_int("columns", columns, lo=1, hi=12)
        self.compute = compute
        self.draw = draw
        self.controls = dict(controls)
        self.presets = dict(presets or {})
        self.figsize = figsize
        self.scale = float(scale)
        self.dpi = DISPLAY_DPI * self.scale
        self.columns = columns
        self.state = None
        self.error: str | None = None
        self.png: bytes | None = None
        self.timings: list[float] = []
        self._handle = None
        self._fig = None
        self._holding = False
        self.message = W.HTML(value="")
        self.preset_menu = None
        #: The preset menu's entry for "no preset" (in the language in force when built).
        self.custom = _("(custom)", context="preset menu")
        if self.presets:
            names = [self.custom, *self.presets]
            self.preset_menu = W.Dropdown(options=names, value=self.custom,
                                          description=_("preset", context="preset menu"),
                                          style={"description_width": "initial"})
            self.preset_menu.observe(self._apply_preset, names="value")
        for w in self.controls.values():
            w.observe(self.update, names="value")
        self.update()

    def values(self) -> dict:
        """Current control values by name."""
        return {name: w.value for name, w in self.controls.items()}

    def update(self, change=None) -> None:
        """Recompute and redraw; on failure keep the last figure and show the message."""
        if self._holding:
            return
        if change is not None and self.preset_menu is not None:
            self.preset_menu.value = self.custom  # a hand-moved control leaves the preset
        t0 = time.perf_counter()
        values = self.values()
        try:
            state = self.compute(**values)
            with style():
                # One figure for the explorer's life: draw functions update their artists in
                # place (see ``reuse``) and only the changing ones are re-rendered.
                if self._fig is None:
                    self._fig = blank_figure(*self.figsize)
                    self._fig.set_dpi(self.dpi)
                    self._fig._uneven_live = True
                    self._canvas = FigureCanvasAgg(self._fig)
                    self._layout = self._background = None
                layout = self.draw(self._fig, state, **values)
                png = self._render(layout)
        except Exception as err:  # shown to the reader, never raised into the widget machinery
            self._fig = None  # a half-drawn figure is not reused
            self.error = f"{type(err).__name__}: {err}"
            self.message.value = (
                f"<span style='color:{color('red')}'>⚠ {html.escape(self.error)}</span>"
                + html.escape(_(" — the figure shows the last valid setting."))
            )
            return
        self.state = state
        self.png = png
        self.error = None
        self.message.value = ""
        self.timings.append(time.perf_counter() - t0)
        if self._handle is not None:
            self._handle.update(self._image())

    def _render(self, layout) -> bytes:
        fig, canvas = self._fig, self._canvas
        art = getattr(fig, "_uneven_artists", (None, {}))[1]
        if layout is None or layout != self._layout or self._background is None:
            canvas.draw()  # animated (dynamic) artists are skipped here ...
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._layout = layout
        else:
            canvas.restore_region(self._background)
        for artist in art.get("dynamic", ()):
            fig.draw_artist(artist)  # ... and drawn on top of the background here
        return _encode_png(canvas)

    def _image(self) -> Image:
        """The current PNG, with the width at which it is shown (CSS px)."""
        width = round(self.figsize[0] * DISPLAY_DPI)
        return Image(data=self.png, width=width)

    def _apply_preset(self, change) -> None:
        name = change["new"]
        if name not in self.presets:
            return
        self._holding = True
        try:
            for key, value in self.presets[name].items():
                if key not in self.controls:
                    raise ValueError(f"preset {name!r} names unknown control {key!r}")
                self.controls[key].value = value
        finally:
            self._holding = False
        self.update()

    def widget(self) -> W.Widget:
        """The control panel (presets, controls in a grid, message line)."""
        items = list(self.controls.values())
        rows = [W.HBox(items[i : i + self.columns]) for i in range(0, len(items), self.columns)]
        top = [self.preset_menu] if self.preset_menu is not None else []
        return W.VBox([*top, *rows, self.message])

    def show(self) -> None:
        """Display the current figure as a static PNG, then the controls below it."""
        self._handle = display(self._image(), display_id=True)
        display(self.widget())


def explore(compute: Callable, draw: Callable, controls: dict, *, presets: dict | None = None,
            show: bool = True, **kw) -> Explorer:
    """Build an :class:`Explorer`, draw its first figure, and (by default) display it."""
    show = check_bool("show", show)
    ex = Explorer(compute, draw, controls, presets=presets, **kw)
    if ex.error is not None:
        raise ValueError(f"the default values of controls do not compute: {ex.error}")
    if show:
        ex.show()
    return ex
