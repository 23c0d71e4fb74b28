"""Small drawing helpers shared by the explorers, and checks for the figure recipes' inputs."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .._validate import _show, as_float_array, check_instance, check_real


def show_grid(image, ax, grid):
    """Put ``grid`` into a heatmap and fit the axes to its shape (it may change with a slider)."""
    image.set_data(grid)
    image.set_extent((-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5))
    ax.set_xlim(-0.5, grid.shape[1] - 0.5)
    ax.set_ylim(grid.shape[0] - 0.5, -0.5)


def check_dict(name, value, *, key=None, item=None, lo=1, hi=64) -> dict:
    """``value`` as a dict of ``lo``..``hi`` entries; ``key(k)`` and ``item(v)`` must be true."""
    if not isinstance(value, dict) or not lo <= len(value) <= hi:
        raise ValueError(f"{name} must be a dict of {lo} to {hi} entries; got {_show(value)}")
    for k, v in value.items():
        if key is not None and not key(k):
            raise ValueError(f"{name} has a key it cannot use: {_show(k)}")
        if item is not None and not item(v):
            raise ValueError(f"{name}[{_show(k)}] is not what it must be; got {_show(v)}")
    return value


def is_real(x, lo=None) -> bool:
    """A finite real number (not a bool), at least ``lo`` if given."""
    try:
        check_real("x", x, lo=lo)
    except ValueError:
        return False
    return True


def is_int(x) -> bool:
    from numbers import Integral

    return isinstance(x, Integral) and not isinstance(x, bool) and -(2**62) < int(x) < 2**62


def instances(name, value, cls) -> dict:
    """Every value of the dict ``value`` is a ``cls``."""
    for k, v in value.items():
        check_instance(f"{name}[{_show(k)}]", v, cls)
    return value


def curve(name, value, n=None, lo=None) -> np.ndarray:
    """A 1-d array of finite numbers (``n`` of them if given)."""
    arr = as_float_array(name, value, ndim=1, lo=lo)
    if (n is not None and arr.size != n) or arr.size == 0:
        raise ValueError(f"{name} must have {n or 'at least one'} entries; got {arr.size}")
    return arr


@contextmanager
def handed_on(name: str):
    """Inside the block ``name`` is handed on unchanged to a library call whose checks name it
    otherwise: a ``ValueError`` they raise names ``name`` too."""
    try:
        yield
    except ValueError as err:
        if name in str(err):
            raise
        raise ValueError(f"{name}: {err}") from err


def N_(message: str, context: str | None = None) -> str:
    """Mark ``message`` for the catalogs without translating it: a name that code keeps in
    English (a dict key the notebooks index by) and that is translated only where it is shown,
    with ``_(name)``. ``tests/test_i18n_explorers_*.py`` collect these as they collect ``_()``.

    >>> N_("re-plan only (HOL)")
    're-plan only (HOL)'
    """
    return message


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospaced font: two for a wide (CJK) character, else one.

    >>> display_width("rank"), display_width("階段 2")
    (4, 6)
    """
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` columns of a monospaced font, where a CJK
    character takes two columns (``format(text, "<24s")`` counts it as one, so a translated
    table would lose its alignment); English text comes out exactly as ``format`` gives it.
    ``align``: ``"<"`` (left), ``">"`` (right) or ``"^"`` (centre).

    >>> pad("rank", 6) + "|", pad("階段", 6, ">") + "|", pad("rank", 6) == format("rank", "<6s")
    ('rank  |', '  階段|', True)
    """
    if align not in ("<", ">", "^"):
        raise ValueError(f"align must be '<', '>' or '^'; got {align!r}")
    fill = max(int(width) - display_width(str(text)), 0)
    if align == "<":
        return f"{text}{' ' * fill}"
    if align == ">":
        return f"{' ' * fill}{text}"
    return f"{' ' * (fill // 2)}{text}{' ' * (fill - fill // 2)}"


def options(values, context: str | None = None) -> list:
    """Dropdown options for ``values`` whose shown text follows the language
    (:func:`uneven.set_language`): when any value's text translates, every value becomes a
    ``(label, value)`` pair (a dropdown takes all pairs or none); when none does (English), the
    options are exactly ``values``.

    >>> options(["2M", "1M"])
    ['2M', '1M']
    """
    from ..i18n import gettext

    values = list(values)
    labels = [gettext(v, context) if isinstance(v, str) else v for v in values]
    if labels == values:
        return values
    return [(str(label), v) for label, v in zip(labels, values, strict=True)]
