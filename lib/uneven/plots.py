"""One house style for every figure: timelines, link-load heatmaps, topologies, CDFs.

Functions draw into a matplotlib ``Axes`` you pass in and return it, so notebooks can compose
panels freely. :func:`figure` makes a :class:`NotebookFigure`: a figure that pyplot does not track
(widgets redraw it without duplicate inline copies) and that shows itself as a PNG image in any
notebook front end, whether or not pyplot was ever imported; :func:`save` writes
``figures/NN_what.png``.

Named things (schedules, placements, transports, fabrics, resources) have one colour each,
everywhere: :func:`color` looks it up in :data:`PALETTE`. Legends go outside the data, on the right
or below (:func:`legend`), so no line ever hides behind one.

>>> fig, ax = figure(4, 2)
>>> _ = cdf(ax, [1.0, 2.0, 2.0, 5.0], label="demo", unit="ms")
>>> ax.get_xlabel()
'value (ms)'
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.ticker import MaxNLocator

from ._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_pair,
    check_real,
    check_str,
)
from .i18n import get_language
from .i18n import gettext as _
from .limits import PY_STEP, check_bytes, check_steps

__all__ = [
    "SIZES",
    "TITLE",
    "LABEL",
    "PANEL",
    "LEGEND",
    "NOTE",
    "SMALL",
    "TINY",
    "recipe",
    "style_problems",
    "house_colors",
    "RAMP",
    "HEAT",
    "ramp",
    "COLORS",
    "KIND_COLORS",
    "PALETTE",
    "color",
    "legend",
    "NotebookFigure",
    "DISPLAY_DPI",
    "style",
    "figure",
    "blank_figure",
    "save",
    "figures_dir",
    "png_bytes",
    "gantt",
    "link_heatmap",
    "draw_topology",
    "cdf",
    "time_scale",
    "paper_map",
    "LiveGantt",
    "nice_ceiling",
    "CJK_FONTS",
    "CJK_FONT_PACKAGE",
    "cjk_fonts",
]

# A colour-blind-safe palette (Okabe-Ito), named by role.
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "grey": "#7F7F7F",
    "ink": "#222222",
    "pale": "#D4D4D4",  # idle time behind a timeline's ops
}
# Timeline op kinds: forward, backward (input grad), weight grad, sends, idle/bubble.
KIND_COLORS = {
    "F": COLORS["blue"],
    "B": COLORS["orange"],
    "W": COLORS["green"],
    "BW": COLORS["orange"],
    "send": COLORS["grey"],
    "send-act": COLORS["grey"],
    "send-grad": COLORS["purple"],
    "recv": COLORS["sky"],
    "comm": COLORS["purple"],
    "wait": COLORS["red"],
}

# One colour per named thing across every notebook. Lines of one family share a hue; variants of
# one thing (a cap, a bound) reuse its colour with another line style.
PALETTE = {
    # pipeline schedules and approaches (notebook 01)
    "GPipe": COLORS["grey"],
    "1F1B": COLORS["blue"],
    "interleaved": COLORS["purple"],
    "ZB-H1": COLORS["sky"],
    "ZB-H2": COLORS["orange"],
    "ZB-V": COLORS["red"],
    "DualPipe": COLORS["ink"],
    "DualPipeV": COLORS["ink"],
    "interleaved ZB": COLORS["purple"],
    "looped BFS": COLORS["purple"],
    "offload only": COLORS["purple"],
    "re-plan only": COLORS["red"],
    "PipeMorph": COLORS["green"],
    # resources
    "NIC": COLORS["blue"],
    "NVLink": COLORS["orange"],
    "compute": COLORS["green"],
    "barrier": COLORS["red"],
    # fabrics (notebook 03)
    "MPFT": COLORS["orange"],
    "MRFT": COLORS["blue"],
    "MRFT, no PXN": COLORS["sky"],
    "FT2": COLORS["blue"],
    "FT3": COLORS["green"],
    # expert placements (notebook 05)
    "contiguous": COLORS["grey"],
    "EPLB": COLORS["blue"],
    "NIC-aware": COLORS["green"],
    "NIC-aware + swaps": COLORS["purple"],
    # EP transports
    "direct": COLORS["grey"],
    "one copy per node": COLORS["orange"],
    "relay": COLORS["green"],
    # layouts of an MoE layer (notebook 04)
    "TP+TP": COLORS["grey"],
    "SP+EP": COLORS["blue"],
    "SP + EP by AG/RS": COLORS["sky"],
    # sequence schedulers (notebook 02)
    "static mesh": COLORS["grey"],
    "naive HDP": COLORS["sky"],
    "balanced HDP": COLORS["green"],
    # orders of one pipeline plan (notebook 01)
    "order: artifact's plan": COLORS["ink"],
    "order: W's at the tail": COLORS["grey"],
    "order: memory budget": COLORS["orange"],
    # EP inside a superpod (notebook 06)
    "serialised baseline": COLORS["grey"],
    "UBEP": COLORS["green"],
    "hop mix": COLORS["green"],
    # fabrics of one EP dispatch and kinds of evidence (notebook 07)
    "UB": COLORS["purple"],
    "testbed": COLORS["blue"],
    "production": COLORS["green"],
    "simulation": COLORS["purple"],
    "analysis": COLORS["grey"],
    "chapter-only": COLORS["red"],
    # what a number is
    "paper": COLORS["ink"],
    "model": COLORS["blue"],
    "healthy": COLORS["ink"],
}

#: The house text sizes (points), by role: a figure's or panel's title, axis labels and body
#: text, a legend, a note written on a plot, small print (tick labels of dense panels, bar
#: values), the smallest print (a crowded panel's legend). Recipes name a role, never a number.
SIZES = {"title": 10.5, "label": 9.5, "panel": 9.0, "legend": 8.5, "note": 8.0, "small": 7.5,
         "tiny": 6.5}
TITLE, LABEL, PANEL, LEGEND, NOTE, SMALL, TINY = (SIZES[k] for k in (
    "title", "label", "panel", "legend", "note", "small", "tiny"))

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": LABEL,
    "axes.titlesize": TITLE,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": LABEL,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": LEGEND,
    "axes.prop_cycle": matplotlib.cycler(
        color=[COLORS[c] for c in ("blue", "orange", "green", "red", "purple", "sky", "grey")]
    ),
}

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}

#: The fonts that draw the zh-TW edition's Chinese, most preferred first: the project declares
#: Noto Sans CJK TC (Debian/Ubuntu package :data:`CJK_FONT_PACKAGE`, installed by ``.ci/run``
#: and Binder), then others commonly present (the Japanese and Simplified cuts of the same
#: family draw Traditional characters too; Source Han Sans is its Adobe name; PingFang TC on
#: macOS, Microsoft JhengHei on Windows).
CJK_FONTS = ("Noto Sans CJK TC", "Noto Sans CJK JP", "Noto Sans CJK SC", "Source Han Sans TW",
             "Source Han Sans TC", "PingFang TC", "Microsoft JhengHei")
#: The Debian/Ubuntu package that provides :data:`CJK_FONTS`' first choice.
CJK_FONT_PACKAGE = "fonts-noto-cjk"
# File names of those fonts, for one installed after matplotlib built its font cache.
_CJK_FILES = ("notosanscjk", "sourcehansans", "pingfang", "msjh")

#: CSS pixels per inch of a figure shown in a notebook. Figures are rendered at twice this (crisp
#: on HiDPI screens) and shown at this size, so 9.5 pt text is 13 CSS px.
DISPLAY_DPI = 100.0
_RENDER_SCALE = 2.0


# --------------------------------------------------------------------------- argument checks
#: Largest figure side in inches, and the most pixels one rendering may have.
MAX_INCHES = 100.0
MAX_PIXELS = 1.2e8
_LAYOUTS = ("constrained", "compressed", "tight", "none")


def _ax(ax):
    from matplotlib.axes import Axes

    return check_instance("ax", ax, Axes, "a matplotlib Axes, e.g. from plots.figure()")


def _fig(fig, name="fig"):
    return check_instance(name, fig, Figure, "a matplotlib Figure, e.g. from plots.figure()")


def _opt_str(name, value):
    return None if value is None else check_str(name, value, max_len=2000)


def _inches(name, value) -> float:
    return check_real(name, value, lo=0.0, lo_open=True, hi=MAX_INCHES, unit="inches")


def _check_render(name, value, fig, dpi) -> None:
    """Refuse a rendering of more than :data:`MAX_PIXELS` pixels (or beyond the memory budget)."""
    w, h = fig.get_size_inches()
    pixels = float(w) * float(h) * float(dpi) ** 2
    if pixels > MAX_PIXELS:
        raise ValueError(f"{name}={_show(value)} would render {pixels:.3g} pixels "
                         f"({w:g} x {h:g} inches at {float(dpi):g} dpi), above {MAX_PIXELS:g}")
    check_bytes(name, value, 8.0 * pixels, "the rendered image")


def _check_rows(name, value, n_rows) -> None:
    if n_rows > 2000:
        raise ValueError(f"{name} must have at most 2000 rows (resources) to draw; "
                         f"got ids up to {n_rows - 1}")


def _str_seq(name, value, n=None) -> list:
    if isinstance(value, np.ndarray) and value.size <= 10_000:
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not all(
        isinstance(x, str) for x in value
    ):
        raise ValueError(f"{name} must be a list of strings; got {_show(value)}")
    if n is not None and len(value) < n:
        raise ValueError(f"{name} must name at least {n} entries; got {len(value)}")
    return list(value)


def color(name: str) -> str:
    """The colour of a named thing (a schedule, a fabric, a placement ...) from :data:`PALETTE`,
    or one of the base colours of :data:`COLORS` by its name (for series that name nothing).

    >>> color("PipeMorph") == PALETTE["PipeMorph"], color("grey") == COLORS["grey"]
    (True, True)
    """
    if isinstance(name, str) and name in PALETTE:
        return PALETTE[name]
    if isinstance(name, str) and name in COLORS:
        return COLORS[name]
    if isinstance(name, str):  # any case, when that names one thing
        folded = [k for k in (*PALETTE, *COLORS) if k.casefold() == name.casefold()]
        if len(set(folded)) == 1:
            return PALETTE.get(folded[0], COLORS.get(folded[0]))
    known = ", ".join(sorted(PALETTE))
    raise ValueError(f"name must be one of the named things in PALETTE ({known}) or a base "
                     f"colour of COLORS ({', '.join(COLORS)}); got {_show(name)}")


def legend(ax, where: str = "right", **kw):
    """The house legend: outside the axes, on the ``'right'`` or ``'below'`` them (or
    ``'inside'`` for a panel with free space, upper left). Returns the legend."""
    ax = _ax(ax)
    where = check_choice("where", where, ("right", "below", "inside"))
    with style():
        if where == "right":
            kw = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), **kw}
        elif where == "below":
            kw = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18), "ncol": 3, **kw}
        else:
            kw = {"loc": "upper left", **kw}
        return ax.legend(**kw)


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, read from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


class NotebookFigure(Figure):
    """A ``Figure`` that shows itself as a PNG image in any notebook front end.

    IPython only turns a plain ``Figure`` into an image when matplotlib's inline backend has been
    activated (by importing pyplot); otherwise it prints ``<Figure size ...>``. This class carries
    its own rich representation instead: a PNG rendered at twice :data:`DISPLAY_DPI` with a width
    hint, so JupyterLab, Notebook 7, VS Code, Colab and nbconvert all show the same crisp picture.

    >>> fig, ax = figure(3, 2)
    >>> data, meta = fig._repr_mimebundle_()
    >>> data["image/png"][1:4] == b"PNG", meta["image/png"]["width"] > 200
    (True, True)

    ``figsize`` (inches, each side at most :data:`MAX_INCHES`), ``dpi`` and ``layout`` are
    checked; a rendering may have at most :data:`MAX_PIXELS` pixels.
    """

    def __init__(self, figsize=None, dpi=None, layout=None):
        if figsize is not None:
            w, h = check_pair("figsize", figsize)
            figsize = (_inches("figsize[0]", w), _inches("figsize[1]", h))
        if dpi is not None:
            dpi = check_real("dpi", dpi, lo=10.0, hi=2000.0)
        if layout is not None:
            layout = check_choice("layout", layout, _LAYOUTS)
        super().__init__(figsize=figsize, dpi=dpi, layout=layout)
        if layout in ("constrained", "compressed"):  # the same layout, noting where it starts
            engine = _LayoutFromStart(compress=layout == "compressed")
            engine.set(**self.get_layout_engine().get())
            self.set_layout_engine(engine)

    def _repr_mimebundle_(self, include=None, exclude=None):
        png = self.to_png()
        w, h = _png_size(png)
        size = {"width": round(w / _RENDER_SCALE), "height": round(h / _RENDER_SCALE)}
        title = self._suptitle.get_text() if self._suptitle is not None else ""
        if not title and self.axes:
            title = self.axes[0].get_title(loc="left") or self.axes[0].get_title()
        if title:
            text = _("[figure: {title}]", context="plain-text figure").format(title=title)
        else:
            text = _("[figure]", context="plain-text figure")
        return {"image/png": png, "text/plain": text}, {"image/png": size}

    def to_png(self, scale: float = _RENDER_SCALE) -> bytes:
        """PNG bytes at ``scale`` (0.1 to 20) times the display resolution (tight bounding
        box)."""
        scale = check_real("scale", scale, lo=0.1, hi=20.0)
        _check_render("scale", scale, self, DISPLAY_DPI * scale)
        buf = io.BytesIO()
        with style():
            self.savefig(buf, format="png", dpi=DISPLAY_DPI * scale, metadata={"Software": None})
        return buf.getvalue()


@functools.lru_cache(maxsize=1)
def cjk_fonts() -> tuple[str, ...]:
    """The fonts of :data:`CJK_FONTS` that matplotlib can use here, in order of preference
    (empty when none is installed: Chinese text then renders as boxes, with matplotlib's
    "Glyph ... missing from font" warning). A font installed after matplotlib built its font
    cache is found too: its files are added to the font manager.

    >>> set(cjk_fonts()) <= set(CJK_FONTS)
    True
    """
    from matplotlib import font_manager

    manager = font_manager.fontManager
    names = {f.name for f in manager.ttflist}
    if not names & set(CJK_FONTS):
        for path in font_manager.findSystemFonts():
            stem = Path(path).name.lower().replace("-", "").replace("_", "")
            if stem.startswith(_CJK_FILES):
                with contextlib.suppress(Exception):  # an unreadable file: not a font we use
                    manager.addfont(path)
        names = {f.name for f in manager.ttflist}
    return tuple(name for name in CJK_FONTS if name in names)


def _font_rc() -> dict:
    """The font settings of the language in force: none in English (matplotlib's own sans-serif,
    DejaVu Sans); in Chinese the installed CJK fonts first, then the usual sans-serif list for
    any glyph they lack (matplotlib falls back glyph by glyph along the list)."""
    if get_language() == "en":
        return {}
    cjk = list(cjk_fonts())
    if not cjk:
        return {}
    rest = [f for f in matplotlib.rcParamsDefault["font.sans-serif"] if f not in cjk]
    return {"font.family": ["sans-serif"], "font.sans-serif": cjk + rest}


@contextlib.contextmanager
def style():
    """Context manager applying the house style (used by every function here); in the zh-TW
    edition (:func:`uneven.set_language`) with a CJK font first (:func:`cjk_fonts`)."""
    with matplotlib.rc_context({**_RC, **_font_rc()}):
        yield


def recipe(fn):
    """Decorator for a figure recipe or a ``draw_*`` function: it draws in the house style
    whether or not its caller is inside :func:`style` (a title or legend a recipe makes gets the
    house sizes, never matplotlib's defaults).

    >>> @recipe
    ... def demo():
    ...     fig, ax = figure(3, 2)
    ...     return ax.set_title("t")
    >>> demo().get_fontsize() == TITLE
    True
    """
    @functools.wraps(fn)
    def styled(*args, **kwargs):
        with style():
            out = fn(*args, **kwargs)
        if _CHECK_STYLE:  # the notebook tests run every recipe this way (tests/test_notebooks.py)
            fig = out if isinstance(out, Figure) else args[0] if args and isinstance(
                args[0], Figure) else None
            problems = [] if fig is None else style_problems(fig)
            if problems:
                raise ValueError(f"{fn.__name__} drew outside the house style: "
                                 + "; ".join(problems[:5]))
        return out

    return styled


_CHECK_STYLE = os.environ.get("UNEVEN_CHECK_STYLE") == "1"


#: The house colour maps: a ramp for an ordered number (a slack, a top-k, a load) and a heat
#: scale for "how far from the best" tables.
RAMP, HEAT = "viridis", "YlOrRd"


def ramp(n: int) -> list:
    """``n`` colours along :data:`RAMP`, for curves of an ordered parameter (a number, not a
    named thing).

    >>> len(ramp(3)), ramp(1)[0] == ramp(3)[0]
    (3, True)
    """
    n = check_int("n", n, lo=1, hi=256)
    cmap = matplotlib.colormaps[RAMP]
    return [cmap(x) for x in (np.linspace(0.0, 0.9, n) if n > 1 else [0.0])]


def house_colors() -> frozenset:
    """Every flat colour a recipe may draw with (lower-case hex): the base colours, the named
    things of :data:`PALETTE` and the timeline kinds, matplotlib's default text black, and white
    (text on dark bars). Colours along :data:`RAMP` and :data:`HEAT` are house colours too."""
    from matplotlib.colors import to_hex

    return frozenset(to_hex(c) for c in (*COLORS.values(), *PALETTE.values(),
                                         *KIND_COLORS.values(), "white", "black"))


@functools.cache
def _map_samples():
    return np.vstack([matplotlib.colormaps[m](np.linspace(0.0, 1.0, 1024))[:, :3]
                      for m in (RAMP, HEAT)])


def _on_house_map(rgba) -> bool:
    return bool(np.abs(_map_samples() - np.asarray(rgba[:3])).max(axis=1).min() < 2.0 / 255)


def style_problems(fig) -> list[str]:
    """What in ``fig`` is not the house style: a text whose size is not one of :data:`SIZES`,
    an axes title that is not bold, or a line, patch, text or flat-coloured collection whose
    colour is not one of :func:`house_colors` (colour maps, images and invisible artists
    excepted). An empty list means the figure is in the house style.

    >>> fig, ax = figure(3, 2)
    >>> _ = ax.plot([0, 1], color=color("EPLB")); _ = ax.set_title("default")
    >>> style_problems(fig)
    ["text 'default' has size 12", "title 'default' is not bold"]
    >>> fig, ax = figure(3, 2)
    >>> with style():
    ...     _ = ax.set_title("the house title")
    >>> style_problems(fig)
    []
    """
    from matplotlib.colors import to_hex
    from matplotlib.text import Text

    fig = _fig(fig)
    ok_sizes = {round(v, 2) for v in SIZES.values()}
    allowed = house_colors()
    out = []

    def col(c):
        try:
            return to_hex(c, keep_alpha=False)
        except ValueError:
            return None

    def check_color(what, c):
        if c is None or (len(c) == 4 and c[3] == 0):
            return
        h = col(c)
        if h is not None and h not in allowed and not _on_house_map(c):
            out.append(f"{what} has colour {h}")

    for t in fig.findobj(Text):
        if t.get_text() and t.get_visible():
            if round(t.get_fontsize(), 2) not in ok_sizes:
                out.append(f"text {t.get_text()[:30]!r} has size {t.get_fontsize():g}")
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            t = ax.title if loc == "center" else getattr(ax, f"_{loc}_title")
            if t.get_text() and t.get_fontweight() not in ("bold", 700):
                out.append(f"title {t.get_text()[:30]!r} is not bold")
        for line in ax.get_lines():
            if line.get_visible():
                check_color(f"line {line.get_label()[:30]!r}", _rgba(line.get_color()))
        for patch in ax.patches:
            if patch.get_visible():
                check_color("a patch", patch.get_facecolor())
        for c in ax.collections:
            if c.get_visible() and c.get_array() is None:
                for fc in c.get_facecolor()[:1]:
                    check_color("a collection", tuple(fc))
        for t in ax.texts:
            if t.get_text() and t.get_visible():
                check_color(f"text {t.get_text()[:30]!r}", _rgba(t.get_color()))
    return sorted(set(out))


def _rgba(c):
    from matplotlib.colors import to_rgba

    try:
        return to_rgba(c)
    except ValueError:
        return None


def figure(width: float = 7.0, height: float = 3.2, ncols: int = 1, nrows: int = 1, **kw):
    """A styled, untracked Figure and its axes (``ax`` or an array of them).

    ``width``, ``height`` in inches (at most :data:`MAX_INCHES`); ``ncols``, ``nrows`` at most
    20; other keywords go to ``Figure.subplots``.

    >>> fig, axes = figure(6, 3, ncols=2)
    >>> len(axes)
    2
    """
    width = _inches("width", width)
    height = _inches("height", height)
    ncols = check_int("ncols", ncols, lo=1, hi=20)
    nrows = check_int("nrows", nrows, lo=1, hi=20)
    with style():
        fig = NotebookFigure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=True, **kw)
    return fig, axes


def blank_figure(width: float = 7.0, height: float = 3.2, layout: str | None = None) -> Figure:
    """An untracked Figure with no axes. Widgets pass ``layout=None``: constrained layout costs
    more than the rest of a redraw, so their draw functions place axes with fixed margins."""
    return NotebookFigure(figsize=(_inches("width", width), _inches("height", height)),
                          layout=layout)


def figures_dir() -> Path:
    """Where figures go: ``$UNEVEN_FIGURES`` if set, else the repository's ``figures/``, and in
    another language than English (:func:`uneven.set_language`) its subfolder ``figures/zh_TW/``,
    so the zh-TW edition never overwrites the English figures.

    The repository is found by walking up from the current directory to a folder that holds both
    ``figures/`` and ``notebooks/`` (the zh-TW notebooks in ``notebooks/zh_TW/`` find the same
    one); failing that, ``./figures`` is used.
    """
    env = os.environ.get("UNEVEN_FIGURES")
    if env:
        path = Path(env)
    else:
        here = Path.cwd().resolve()
        path = here / "figures"
        for parent in (here, *here.parents):
            if (parent / "figures").is_dir() and (parent / "notebooks").is_dir():
                path = parent / "figures"
                break
    language = get_language()
    if language != "en":
        path = path / language
    path.mkdir(parents=True, exist_ok=True)
    return path


# Constrained layout starts from where the axes stand: each rendering moves them a little (a
# tick label more or less, a pixel of margin), and the next one starts from there. A figure saved
# after it was shown (or saved before) came out a few pixels different from one saved fresh, so
# `make figures` could change a committed PNG without a change to the notebook. save() puts every
# axes and figure title back where it stood before the first rendering, so the file is what a
# fresh figure gives, however often the figure was drawn.

def _layout_items(fig: Figure) -> tuple[list, list]:
    """What a layout engine moves: every axes of ``fig`` (colorbars included), and the figure's
    super-title and super-labels."""
    texts = [getattr(fig, k, None) for k in ("_suptitle", "_supxlabel", "_supylabel")]
    return list(fig.axes), [t for t in texts if t is not None]


def _remember_layout_start(fig: Figure) -> None:
    """Before constrained layout moves anything in ``fig``: note where each axes and title not
    seen before stands."""
    start = fig.__dict__.setdefault("_uneven_layout_start", {})
    axes, texts = _layout_items(fig)
    for ax in axes:
        if ax not in start:
            start[ax] = (ax.get_position(original=True), ax.get_position(), ax.get_in_layout())
    for text in texts:
        if text not in start:
            start[text] = (text.get_position(), text.get_verticalalignment())


class _LayoutFromStart(ConstrainedLayoutEngine):
    """Constrained layout that first notes where the axes stand (for :func:`save`)."""

    def execute(self, fig):
        _remember_layout_start(fig)
        return super().execute(fig)


def _restore_layout_start(fig: Figure) -> None:
    """Put what constrained layout moved back where :func:`_remember_layout_start` saw it (a
    figure without that layout engine is left as it is: only its own code moves its axes)."""
    start = fig.__dict__.get("_uneven_layout_start")
    if not start or not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        return
    axes, texts = _layout_items(fig)
    for ax in axes:
        if ax in start:
            original, active, in_layout = start[ax]
            ax.set_position(original, which="original")
            ax.set_position(active, which="active")
            ax.set_in_layout(in_layout)  # set_position takes an axes out of the layout
    for text in texts:
        if text in start:
            text.set_position(start[text][0])
            text.set_verticalalignment(start[text][1])


def save(fig: Figure, name: str) -> Path:
    """Write ``fig`` as ``figures/<name>.png`` (name like ``'01_knee'``); return the path. The
    file does not depend on whether ``fig`` was shown or saved before (no ``Software`` entry
    either: it does not name matplotlib's version)."""
    import re

    fig = _fig(fig)
    if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,119}", name)
            and not name.endswith(".png") and ".." not in name):
        raise ValueError(f"name must be a bare file stem like '01_knee'; got {_show(name)}")
    _check_render("fig", "this figure", fig, _RC["savefig.dpi"])
    path = figures_dir() / f"{name}.png"
    _restore_layout_start(fig)
    with style():
        fig.savefig(path, metadata={"Software": None})
    return path


def png_bytes(fig: Figure, dpi: float = 80) -> bytes:
    """Render ``fig`` to PNG bytes (what widgets push to the page); ``dpi`` 10 to 2000."""
    fig = _fig(fig)
    dpi = check_real("dpi", dpi, lo=10.0, hi=2000.0)
    _check_render("dpi", dpi, fig, dpi)
    buf = io.BytesIO()
    # No tight bounding box (it draws the figure twice) and light compression: this runs on every
    # widget update, where encoding time matters more than a few kilobytes.
    with matplotlib.rc_context({"savefig.bbox": "standard", **_font_rc()}):
        fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 5, 7.5 x 10^k that is >= ``x`` (an axis limit that stays put
    while ``x`` moves a little, so a widget can keep its cached background).

    >>> nice_ceiling(390.0), nice_ceiling(0.042), nice_ceiling(0.0)
    (500.0, 0.05, 1.0)
    """
    x = check_real("x", x, hi=1e300)
    if not x > 0:
        return 1.0
    exp = np.floor(np.log10(x))
    for step in (1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0):
        value = float(step * 10.0**exp)
        if value >= x * (1 - 1e-12):
            return round(value, 12)
    return float(10.0 ** (exp + 1))


def time_scale(seconds_max: float) -> tuple[str, float]:
    """A readable unit for times up to ``seconds_max``: ('ms', 1e-3) and the like.

    >>> time_scale(0.02)
    ('ms', 0.001)
    """
    seconds_max = check_real("seconds_max", seconds_max, unit="s")
    if seconds_max >= 1.0:
        return "s", 1.0
    if seconds_max >= 1e-3:
        return "ms", 1e-3
    return "us", 1e-6


def gantt(
    ax,
    resource,
    start,
    finish,
    kind,
    *,
    kind_names=None,
    labels=None,
    resource_names=None,
    time_unit: str = "ms",
    title: str | None = None,
    legend: bool = True,
):
    """Draw a timeline: one row per resource, one bar per operation (times in seconds).

    ``kind`` holds an integer code per op; ``kind_names[code]`` names it (and picks its colour
    from :data:`KIND_COLORS`). ``labels`` (e.g. micro-batch numbers) are printed inside bars when
    there are few enough of them to read. At most 2000 rows; the bars must fit in the work
    budget of :mod:`uneven.limits` (one artist per kind, one label per op).
    """
    ax = _ax(ax)
    time_unit = check_choice("time_unit", time_unit, _TIME_UNITS)
    start = as_float_array("start", start, ndim=1, unit="s")
    finish = as_float_array("finish", finish, ndim=1, unit="s")
    resource = as_int_array("resource", resource, ndim=1, lo=0)
    kind = as_int_array("kind", kind, ndim=1, lo=0)
    if not (start.size == finish.size == resource.size == kind.size):
        raise ValueError("resource, start, finish and kind must have the same length")
    title = _opt_str("title", title)
    legend = check_bool("legend", legend)
    scale = 1.0 / _TIME_UNITS[time_unit]
    n_res = int(resource.max()) + 1 if resource.size else 0
    _check_rows("resource", resource, n_res)
    check_steps("start", f"{start.size} ops", start.size * 10 + np.unique(kind).size * PY_STEP,
                "the bars")
    if kind_names is None:
        names = {}
    elif isinstance(kind_names, dict):
        names = kind_names
        if not all(isinstance(v, str) for v in names.values()):
            raise ValueError(f"kind_names must map codes to strings; got {_show(kind_names)}")
    else:
        names = _str_seq("kind_names", kind_names, int(kind.max()) + 1 if kind.size else 0)
    if labels is not None:
        if not (isinstance(labels, np.ndarray) and labels.ndim == 1 or isinstance(
            labels, (list, tuple)
        )) or len(labels) != start.size:
            raise ValueError(f"labels must have one entry per op ({start.size}); "
                             f"got {_show(labels)}")
    if resource_names is not None:
        resource_names = _str_seq("resource_names", resource_names, n_res)[:n_res]
    with style():
        for code in np.unique(kind):
            sel = kind == code
            name = names[code] if code in names or isinstance(names, (list, tuple)) else str(code)
            color = KIND_COLORS.get(name, COLORS["grey"])
            ax.barh(
                resource[sel], (finish[sel] - start[sel]) * scale, left=start[sel] * scale,
                height=0.8, color=color, edgecolor="white", linewidth=0.4, label=name,
            )
        if labels is not None and start.size <= 400:
            for r, s, f, text in zip(resource, start, finish, labels, strict=False):
                if f > s:
                    ax.text((s + f) / 2 * scale, r, str(text), ha="center", va="center",
                            fontsize=TINY, color="white")
        ax.set_yticks(range(n_res))
        ax.set_yticklabels(resource_names or _stage_names(n_res))
        ax.set_ylim(n_res - 0.5, -0.5)
        ax.set_xlabel(_time_label(time_unit))
        ax.grid(axis="y", visible=False)
        if title:
            ax.set_title(title)
        if legend and kind.size:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=NOTE)
    return ax


def _stage_names(n: int) -> list[str]:
    return [_("stage {i}", context="timeline row").format(i=i) for i in range(n)]


def _time_label(time_unit: str) -> str:
    unit = "µs" if time_unit == "us" else time_unit
    return _("time ({unit})", context="axis label").format(unit=unit)


def link_heatmap(
    ax,
    grid,
    *,
    row_label: str | None = None,
    col_label: str | None = None,
    unit: str = "MB",
    title: str | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
):
    """Heatmap of bytes per link (a 2-d array from ``LinkLoads.grid``), shown in ``unit``.
    ``row_label`` and ``col_label`` default to "node" and "GPU / NIC index" (in the language in
    force)."""
    units = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    ax = _ax(ax)
    unit = check_choice("unit", unit, units)
    grid = as_float_array("grid", grid, ndim=2) / units[unit]
    if row_label is None:
        row_label = _("node", context="axis label")
    if col_label is None:
        col_label = _("GPU / NIC index", context="axis label")
    row_label = check_str("row_label", row_label, max_len=2000)
    col_label = check_str("col_label", col_label, max_len=2000)
    title = _opt_str("title", title)
    if vmax is not None:
        vmax = check_real("vmax", vmax)
    colorbar = check_bool("colorbar", colorbar)
    with style():
        im = ax.imshow(grid, aspect="auto", cmap=RAMP, vmin=0.0, vmax=vmax,
                       interpolation="nearest")
        ax.set_xlabel(col_label)
        ax.set_ylabel(row_label)
        ax.grid(False)
        # Rows and columns are nodes and ports: whole numbers only.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if title:
            ax.set_title(title)
        if colorbar:
            ax.figure.colorbar(im, ax=ax, shrink=0.85,
                               label=_("bytes on link ({unit})").format(unit=unit))
    return ax


def cdf(ax, values, *, label: str | None = None, unit: str = "", log: bool = False):
    """Empirical CDF of ``values`` (a step line); ``unit`` goes in the x label."""
    ax = _ax(ax)
    v = np.sort(as_float_array("values", values, ndim=1))
    if v.size == 0:
        raise ValueError("values must not be empty")
    label = _opt_str("label", label)
    unit = check_str("unit", unit, max_len=200)
    log = check_bool("log", log)
    if log and v[0] <= 0:
        raise ValueError(f"values must be > 0 for log=True; smallest entry is {v[0]}")
    y = np.arange(1, v.size + 1) / v.size
    with style():
        ax.step(v, y, where="post", label=label)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel(_("fraction ≤ x"))
        ax.set_xlabel(_("value ({unit})").format(unit=unit) if unit else _("value"))
        if log:
            ax.set_xscale("log")
        if label:
            ax.legend(loc="lower right")
    return ax


def draw_topology(ax, topo, *, max_nodes: int = 4, highlight=None, title: str | None = None):
    """Draw a small cluster or superpod: nodes with their GPUs, NICs, leaves and spines.

    ``highlight`` is an optional ``(src, dst)`` pair whose route is drawn in red. Only the first
    ``max_nodes`` nodes are drawn; a note says how many were left out.
    """
    from .topology import Topology

    ax = _ax(ax)
    if not isinstance(topo, Topology):
        raise ValueError(f"topo must be a Topology; got {type(topo).__name__}")
    max_nodes = check_int("max_nodes", max_nodes, lo=1, hi=64)
    title = _opt_str("title", title)
    if topo.gpus_per_node > 64:
        raise ValueError(f"topo must have at most 64 devices per node to be drawn; got "
                         f"{topo.gpus_per_node}")
    if highlight is not None:
        pair = check_pair("highlight", highlight)
        highlight = tuple(check_int(f"highlight[{i}]", x, lo=0, hi=topo.n_gpus - 1)
                          for i, x in enumerate(pair))
    n_show = min(topo.n_nodes, max_nodes)
    g = topo.gpus_per_node
    node_w = g * 1.0 + 0.6
    gap = 0.8
    pos = {}
    with style():
        ax.set_axis_off()
        rail_colors = [COLORS[c] for c in ("blue", "orange", "green", "red", "purple", "sky",
                                           "yellow", "grey")]
        for a in range(n_show):
            x0 = a * (node_w + gap)
            ax.add_patch(FancyBboxPatch((x0, 0), node_w, 2.2, boxstyle="round,pad=0.05",
                                        fc="#F4F4F4", ec=COLORS["ink"], lw=0.8))
            ax.text(x0 + 0.15, 2.02, _("node {a}").format(a=a), ha="left", va="center",
                    fontsize=SMALL)
            ax.text(x0 + node_w - 0.15, 2.02, _("NVLink switch") if topo.kind == "cluster"
                    else _("L1 UB switch"), ha="right", va="center", fontsize=TINY,
                    color=COLORS["grey"])
            for i in range(g):
                gx = x0 + 0.3 + i + 0.5
                rail = i // topo.gpus_per_nic if topo.kind == "cluster" else 0
                ax.add_patch(Rectangle((gx - 0.4, 1.0), 0.8, 0.7,
                                       fc=rail_colors[rail % 8], ec="white"))
                ax.text(gx, 1.35, str(i), ha="center", va="center", fontsize=TINY, color="white")
                pos[("gpu", a * g + i)] = (gx, 1.35)
            if topo.kind == "cluster":
                for r in range(topo.nics_per_node):
                    span = topo.gpus_per_nic
                    nx = x0 + 0.3 + r * span + span / 2
                    ax.add_patch(Rectangle((nx - 0.35 * span, 0.25), 0.7 * span, 0.45,
                                           fc="white", ec=rail_colors[r % 8], lw=1.2))
                    ax.text(nx, 0.47, "NIC", ha="center", va="center", fontsize=TINY)
                    pos[("nic", a, r)] = (nx, 0.47)
        total_w = n_show * (node_w + gap) - gap
        if topo.kind == "cluster":
            lpr = int(topo.iparams[5])
            groups = min(lpr, -(-n_show // topo.nodes_per_leaf))
            y_leaf = -1.6
            for r in range(topo.nics_per_node):
                for grp in range(groups):
                    lx = (r + 0.5) / topo.nics_per_node * total_w + grp * 0.25
                    ax.add_patch(Rectangle((lx - 0.35, y_leaf - 0.25 - grp * 0.6), 0.7, 0.5,
                                           fc=rail_colors[r % 8], ec="white"))
                    pos[("leaf", r, grp)] = (lx, y_leaf - grp * 0.6)
                    for a in range(grp * topo.nodes_per_leaf,
                                   min(n_show, (grp + 1) * topo.nodes_per_leaf)):
                        nx, ny = pos[("nic", a, r)]
                        ax.plot([nx, lx], [0.25, y_leaf + 0.25 - grp * 0.6],
                                color=rail_colors[r % 8], lw=0.5, alpha=0.6)
            y_sp = y_leaf - 1.2 - (groups - 1) * 0.6
            label = (_("spines: one set per plane (no shared switch)")
                     if topo.fabric == "multi_plane" else _("shared spines (all rails meet here)"))
            ax.add_patch(FancyBboxPatch((0, y_sp - 0.3), total_w, 0.5, boxstyle="round,pad=0.05",
                                        fc="#EAEAEA", ec=COLORS["ink"], lw=0.6))
            ax.text(total_w / 2, y_sp - 0.05, label, ha="center", va="center", fontsize=SMALL)
            if topo.n_nodes > n_show:
                ax.text(total_w + 0.3, 1.1, _("+{n} more nodes").format(n=topo.n_nodes - n_show),
                        fontsize=SMALL, va="center", color=COLORS["grey"])
            ax.text(-0.4, y_leaf - 0.75 - (groups - 1) * 0.6,
                    _("rail-optimised leaf switches (colour = rail)"), fontsize=SMALL,
                    color=COLORS["grey"])
            bottom = y_sp - 0.6
        else:
            ax.add_patch(FancyBboxPatch((0, -1.4), total_w, 0.5, boxstyle="round,pad=0.05",
                                        fc="#EAEAEA", ec=COLORS["ink"], lw=0.6))
            ax.text(total_w / 2, -1.15, _("L2 UB switches (non-blocking)"), ha="center",
                    va="center", fontsize=SMALL)
            if topo.n_nodes > n_show:
                ax.text(total_w + 0.3, 1.1, _("+{n} more nodes").format(n=topo.n_nodes - n_show),
                        fontsize=SMALL, va="center", color=COLORS["grey"])
            bottom = -1.8
        if highlight is not None:
            _draw_route(ax, topo, highlight, pos)
        ax.set_xlim(-0.5, total_w + (2.8 if topo.n_nodes > n_show else 0.5))
        ax.set_ylim(bottom, 2.6)
        ax.set_aspect("equal")
        ax.set_title(title or topo.name)
    return ax


def _draw_route(ax, topo, pair, pos):
    src, dst = pair
    path = [int(x) for x in topo.route(src, dst)]
    names = [topo.link_name(x) for x in path]
    pts = [pos.get(("gpu", src))]
    for nm in names:
        kind, rest = nm.split("[", 1)
        nums = [int(s.split()[-1]) for s in rest.rstrip("]").split(",")]
        if kind == "nvl_in":
            # Through the NVLink switch above the GPUs, not across the other GPUs' labels.
            here, there = pts[-1], pos.get(("gpu", nums[0] * topo.gpus_per_node + nums[1]))
            if here is not None and there is not None:
                pts += [(here[0], 1.88), (there[0], 1.88)]
            pts.append(there)
        elif kind == "nic_up":
            # Even when no leaf link is loaded (same leaf), the bytes pass through the leaf switch.
            pts.append(pos.get(("nic", nums[0], nums[1])))
            pts.append(pos.get(("leaf", nums[1], nums[0] // topo.nodes_per_leaf)))
        elif kind == "nic_down":
            pts.append(pos.get(("leaf", nums[1], nums[0] // topo.nodes_per_leaf)))
            pts.append(pos.get(("nic", nums[0], nums[1])))
        elif kind in ("leaf_up", "leaf_down"):
            pts.append(pos.get(("leaf", nums[0], nums[1])))
    pts.append(pos.get(("gpu", dst)))
    pts = [p for p in pts if p is not None]
    if len(pts) >= 2:
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, color=COLORS["red"], lw=2.2, zorder=5, marker="o", ms=3)
        ax.text(xs[0], 2.45, _("route {src} → {dst}: {n} links").format(
            src=src, dst=dst, n=len(path)), color=COLORS["red"], fontsize=SMALL)


def paper_map(ax, papers=None, *, highlight: str | None = None):
    """The chapter's map: papers placed by parallelism (columns) and workload (rows)."""
    from .papers import PAPERS, Paper

    ax = _ax(ax)
    if papers is not None:
        if not isinstance(papers, (list, tuple)) or not all(isinstance(p, Paper)
                                                            for p in papers):
            raise ValueError(f"papers must be a list of uneven.papers.Paper; got {_show(papers)}")
    highlight = _opt_str("highlight", highlight)
    papers = papers or PAPERS
    cols = ["PP", "DP×CP", "EP"]
    rows = ["training", "serving"]
    cells: dict = {}
    for p in papers:
        cells.setdefault((p.parallelism, p.workload), []).append(p)
    with style():
        ax.set_xlim(-0.5, len(cols) - 0.5)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xticks(range(len(cols)), cols)
        ax.set_yticks(range(len(rows)), [_(r, context="workload") for r in rows])
        ax.tick_params(length=0)
        ax.grid(False)
        for x in range(len(cols) - 1):
            ax.axvline(x + 0.5, color=COLORS["grey"], lw=0.5)
        ax.axhline(0.5, color=COLORS["grey"], lw=0.5)
        for (par, work), items in cells.items():
            cx, cy = cols.index(par), rows.index(work)
            for k, p in enumerate(items):
                dy = (k - (len(items) - 1) / 2) * 0.34
                hot = highlight == p.key
                text = _("{notebook} · {title}\n{venue}\nslow: {slow_piece}").format(
                    notebook=p.notebook[:2], title=p.title, venue=p.venue,
                    slow_piece=_(p.slow_piece, context="slow piece"))
                ax.text(cx, cy + dy, text, wrap=True,
                        ha="center", va="center", fontsize=NOTE,
                        bbox=dict(boxstyle="round,pad=0.3", lw=1.4 if hot else 0.6,
                                  fc="#FFF4E0" if hot else "white",
                                  ec=COLORS["red"] if hot else COLORS["ink"]))
        ax.set_xlabel(_("parallelism that meets the slow piece"))
        ax.set_title(_("Six papers, one theme: the slowest piece sets the pace"))
    return ax


class LiveGantt:
    """A Gantt chart whose bars can be replaced quickly (one polygon collection per op kind).

    Widgets use it: :meth:`update` swaps the rectangles without rebuilding axes or ticks.
    Times in seconds; ``time_unit`` sets the axis unit.

    >>> fig, ax = figure(4, 2)
    >>> live = LiveGantt(ax, ("F", "B"))
    >>> live.update([0, 1], [0.0, 0.001], [0.001, 0.003], [0, 1])
    (('stage 0', 'stage 1'), 3.0)
    """

    def __init__(self, ax, kind_names, *, time_unit: str = "ms", legend: bool = True):
        self.ax = _ax(ax)
        kind_names = _str_seq("kind_names", kind_names)
        if not 1 <= len(kind_names) <= 64:
            raise ValueError(f"kind_names must name 1 to 64 kinds; got {len(kind_names)}")
        legend = check_bool("legend", legend)
        self.kind_names = tuple(kind_names)
        self.scale = 1.0 / _TIME_UNITS[check_choice("time_unit", time_unit, _TIME_UNITS)]
        self.collections = []
        with style():
            for name in self.kind_names:
                coll = PolyCollection([], facecolors=KIND_COLORS.get(name, COLORS["grey"]),
                                      edgecolors="white", linewidths=0.4, label=name)
                ax.add_collection(coll)
                self.collections.append(coll)
            ax.set_xlabel(_time_label(time_unit))
            ax.grid(axis="y", visible=False)
            if legend:
                ax.legend(handles=self.collections, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                          fontsize=NOTE)

    def update(self, resource, start, finish, kind, *, row_names=None, xmax=None):
        """Replace every bar; rows are resource ids, ``kind`` codes index ``kind_names``."""
        resource = as_int_array("resource", resource, ndim=1, lo=0)
        start = as_float_array("start", start, shape=resource.shape, unit="s") * self.scale
        finish = as_float_array("finish", finish, shape=resource.shape, unit="s") * self.scale
        kind = as_int_array("kind", kind, shape=resource.shape, lo=0,
                            hi=len(self.kind_names) - 1)
        _check_rows("resource", resource, int(resource.max()) + 1 if resource.size else 0)
        check_steps("start", f"{start.size} ops", 20 * start.size, "the bars")
        if row_names is not None:
            row_names = _str_seq("row_names", row_names,
                                 int(resource.max()) + 1 if resource.size else 1)
        if xmax is not None:
            xmax = check_real("xmax", xmax, lo=0.0, lo_open=True, hi=1e250, unit="s")
        for code, coll in enumerate(self.collections):
            sel = kind == code
            y = resource[sel].astype(float)
            x0, x1 = start[sel], finish[sel]
            verts = np.empty((y.size, 4, 2))
            verts[:, 0, 0] = verts[:, 3, 0] = x0
            verts[:, 1, 0] = verts[:, 2, 0] = x1
            verts[:, 0, 1] = verts[:, 1, 1] = y - 0.4
            verts[:, 2, 1] = verts[:, 3, 1] = y + 0.4
            coll.set_verts(verts)
        n_rows = int(resource.max()) + 1 if resource.size else 1
        names = tuple(row_names or _stage_names(n_rows))[:n_rows]
        right = float(xmax * self.scale if xmax is not None else
                      (finish.max() if finish.size else 1.0))
        layout = (names, right)
        if layout != getattr(self, "_layout", None):  # ticks are slow: touch them only on change
            self.ax.set_yticks(range(n_rows), names)
            self.ax.set_ylim(n_rows - 0.5, -0.5)
            self.ax.set_xlim(0, right)
            self._layout = layout
        return layout
