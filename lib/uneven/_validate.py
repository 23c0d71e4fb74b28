"""Input checks shared by every public function.

Each check raises ``ValueError`` that names the parameter, shows the bad value and says what is
accepted, so a reader who typed ``delay=-5`` into a notebook learns exactly what to change.
Array helpers return contiguous float64/int64 copies: kernels then see one type whatever a
slider or a list produced, and numba compiles each kernel once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_bool",
    "as_float_array",
    "as_int_array",
]


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(name: str, value, *, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[lo, hi]``; else raise ``ValueError``.

    >>> check_int("p", 4, lo=1)
    4
    >>> check_int("p", 0, lo=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 1; got 0
    """
    ok_type = isinstance(value, Integral) and not isinstance(value, bool)
    if not ok_type and isinstance(value, Real) and float(value).is_integer():
        ok_type = True  # 4.0 from a float slider is fine
    if not ok_type:
        raise ValueError(f"{name} must be an integer{_range_text(lo, hi)}; got {_show(value)}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an integer{_range_text(lo, hi)}; got {value}")
    return value


def check_real(
    name: str,
    value,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    unit: str = "",
) -> float:
    """Return ``value`` as ``float`` if it is a finite real in the given interval.

    >>> check_real("delay", 0.01, lo=0.0, unit="s")
    0.01
    >>> check_real("delay", -1, lo=0.0, unit="s")
    Traceback (most recent call last):
    ...
    ValueError: delay must be a finite number >= 0.0 (in s); got -1
    """
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
    bad = not ok
    if ok:
        v = float(value)
        if lo is not None and (v < lo or (lo_open and v == lo)):
            bad = True
        if hi is not None and (v > hi or (hi_open and v == hi)):
            bad = True
    if bad:
        rng = _range_text(lo, hi, lo_open, hi_open)
        unit_text = f" (in {unit})" if unit else ""
        raise ValueError(f"{name} must be a finite number{rng}{unit_text}; got {_show(value)}")
    return float(value)


def check_choice(name: str, value, choices: Iterable):
    """Return ``value`` if it is one of ``choices``; else raise ``ValueError`` listing them."""
    choices = tuple(choices)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {_show(value)}")
    return value


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is a bool (or numpy bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {_show(value)}")
    return bool(value)


def as_float_array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    lo: float | None = None,
    lo_open: bool = False,
    unit: str = "",
) -> np.ndarray:
    """A contiguous float64 copy of ``value``, checked for finiteness, shape and a lower bound."""
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers; got {_show(value)}") from None
    _check_shape(name, arr, ndim, shape)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers; got {_show(value)}")
    if lo is not None and arr.size:
        worst = arr.min()
        if worst < lo or (lo_open and worst == lo):
            cmp = ">" if lo_open else ">="
            unit_text = f" (in {unit})" if unit else ""
            raise ValueError(
                f"{name} must have every entry {cmp} {lo}{unit_text}; smallest entry is {worst}"
            )
    return np.ascontiguousarray(arr)


def as_int_array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> np.ndarray:
    """A contiguous int64 copy of ``value``; every entry must be an integer in ``[lo, hi]``."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of integers; got {_show(value)}") from None
    if raw.dtype.kind == "f":
        if raw.size and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
            raise ValueError(f"{name} must contain only integers; got {_show(value)}")
    elif raw.dtype.kind not in "iub" and raw.size:
        raise ValueError(f"{name} must be an array of integers; got {_show(value)}")
    arr = np.ascontiguousarray(raw.astype(np.int64))
    _check_shape(name, arr, ndim, shape)
    if arr.size:
        if lo is not None and arr.min() < lo:
            raise ValueError(f"{name} entries must be >= {lo}; smallest entry is {arr.min()}")
        if hi is not None and arr.max() > hi:
            raise ValueError(f"{name} entries must be <= {hi}; largest entry is {arr.max()}")
    return arr


def _check_shape(name, arr, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array; got shape {arr.shape}")
    if shape is not None:
        for want, got in zip(shape, arr.shape, strict=False):
            if want is not None and want != got:
                raise ValueError(f"{name} must have shape {shape}; got {arr.shape}")
        if len(shape) != arr.ndim:
            raise ValueError(f"{name} must have shape {shape}; got {arr.shape}")


def _range_text(lo, hi, lo_open=False, hi_open=False) -> str:
    if lo is not None and hi is not None:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        return f" in {left}{lo}, {hi}{right}"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {hi}"
    return ""
