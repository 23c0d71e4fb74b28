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
