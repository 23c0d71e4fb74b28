"""Input checks shared by every public function.

Each check raises ``ValueError`` that names the parameter, shows the bad value and says what is
accepted, so a reader who typed ``delay=-5`` into a notebook learns exactly what to change.
Array helpers return contiguous float64/int64 copies: kernels then see one type whatever a
slider or a list produced, and numba compiles each kernel once.
"""

from __future__ import annotations

import dataclasses
import math
import reprlib
from collections.abc import Iterable, Mapping
from numbers import Integral, Real

import numpy as np

from . import quantities as _units
from .limits import MIN_BYTES, check_bytes

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_bool",
    "check_str",
    "check_instance",
    "check_callable",
    "check_pair",
    "check_mapping",
    "as_float_array",
    "as_int_array",
    "frozen_array",
    "trusted",
    "INT64_MAX",
]

INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6
_repr.maxlevel = 3


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        if value.size > 6:
            return f"array of shape {value.shape} ({value.dtype})"
        text = repr(value)
    else:
        try:
            text = _repr.repr(value)
        except Exception:  # a repr that fails must not hide the real message
            text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(name: str, value, *, lo: int | None = None, hi: int | None = None,
              unit: str = "") -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[lo, hi]``; else raise ``ValueError``.

    Bools are not integers; an integer-valued float (``4.0`` from a slider) is. Without ``hi``
    the value must still fit in int64 (below 2**63), so that no kernel can overflow on it. With
    a ``unit`` ("bytes"), a string such as ``"7 KB"`` or a pint Quantity is converted first.

    >>> check_int("p", 4, lo=1)
    4
    >>> check_int("p", 0, lo=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 1; got 0
    >>> check_int("p", True, lo=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 1; got True (a bool, not an integer)
    """
    if unit and (isinstance(value, str) or _units.is_quantity(value)):
        value = _units.to_unit(name, value, unit)  # "7 KB" -> 7000.0
        if abs(value - round(value)) <= 1e-9 * max(1.0, abs(value)):
            value = round(value)
    ok_type = isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))
    if not ok_type and isinstance(value, Real) and not isinstance(value, (bool, np.bool_)):
        try:
            ok_type = float(value).is_integer()  # 4.0 from a float slider is fine
        except (OverflowError, ValueError):
            ok_type = False
    if not ok_type:
        why = " (a bool, not an integer)" if isinstance(value, (bool, np.bool_)) else ""
        unit_text = f" (in {unit})" if unit else ""
        raise ValueError(
            f"{name} must be an integer{_range_text(lo, hi)}{unit_text}; got {_show(value)}{why}"
        )
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an integer{_range_text(lo, hi)}; got {_show(value)}")
    if not _INT64_MIN <= value <= INT64_MAX:
        raise ValueError(
            f"{name} must be an integer{_range_text(lo, hi)} that fits in 64 bits (below 2**63); "
            f"got {_show(value)}"
        )
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
    plain = True
    if unit and (isinstance(value, str) or _units.is_quantity(value)):
        value, plain = _units.to_unit(name, value, unit), False  # "400 Gb/s", "10 ms"
    ok = isinstance(value, Real) and not isinstance(value, (bool, np.bool_))
    v = math.nan
    if ok:
        try:
            v = float(value)
        except (OverflowError, ValueError):
            ok = False
    ok = ok and math.isfinite(v)
    bad = not ok
    if ok:
        if lo is not None and (v < lo or (lo_open and v == lo)):
            bad = True
        if hi is not None and (v > hi or (hi_open and v == hi)):
            bad = True
    if bad:
        rng = _range_text(lo, hi, lo_open, hi_open)
        unit_text = f" (in {unit})" if unit else ""
        raise ValueError(f"{name} must be a finite number{rng}{unit_text}; got {_show(value)}")
    if plain and unit and not _units.plausible(name, v, unit):
        _units.warn_implausible(name, v, unit)
    return v + 0.0  # -0.0 becomes 0.0 (numpy refuses a scale of -0.0, for one)


def check_choice(name: str, value, choices: Iterable):
    """Return the entry of ``choices`` equal to ``value``; else raise ``ValueError`` listing them.

    Strings match strings, ignoring case when that leaves one choice ("1F1B" is "1f1b", "dp"
    is "DP"), and integers match integers (never a bool); anything else, arrays included, is
    simply not one of the choices.

    >>> check_choice("mode", "relay", ("relay", "direct"))
    'relay'
    >>> check_choice("kind", "1F1B", ("gpipe", "1f1b"))
    '1f1b'
    >>> check_choice("layers", True, (2, 3))
    Traceback (most recent call last):
    ...
    ValueError: layers must be one of 2, 3; got True
    """
    choices = tuple(choices)
    for c in choices:
        if _same_choice(value, c):
            return c
    if isinstance(value, str) and len(value) <= 1000:
        folded = [c for c in choices if isinstance(c, str) and c.casefold() == value.casefold()]
        if len(folded) == 1:
            return folded[0]
    listed = ", ".join(repr(c) for c in choices)
    raise ValueError(f"{name} must be one of {listed}; got {_show(value)}")


def _same_choice(value, choice) -> bool:
    if isinstance(value, (bool, np.bool_)) or isinstance(choice, bool):
        return value is choice
    if isinstance(choice, str):
        return isinstance(value, str) and value == choice
    if isinstance(choice, Integral):
        return isinstance(value, Integral) and int(value) == choice
    try:
        return type(value) is type(choice) and bool(value == choice)
    except Exception:  # an object whose == does not give a truth value is not a choice
        return False


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is a bool (or numpy bool); 0 and 1 are not bools here."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {_show(value)}")
    return bool(value)


def check_str(name: str, value, *, max_len: int = 10_000) -> str:
    """Return ``value`` if it is a string of at most ``max_len`` characters."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string; got {_show(value)}")
    if len(value) > max_len:
        raise ValueError(f"{name} must be at most {max_len} characters long; got {len(value)}")
    return value


def check_instance(name: str, value, cls, hint: str = ""):
    """Return ``value`` if it is an instance of ``cls`` (a class or a tuple of classes)."""
    if not isinstance(value, cls):
        names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        extra = f" ({hint})" if hint else ""
        raise ValueError(f"{name} must be a {names}{extra}; got {_show(value)}")
    return value


def check_callable(name: str, value, hint: str = ""):
    """Return ``value`` if it can be called."""
    if not callable(value):
        extra = f" ({hint})" if hint else ""
        raise ValueError(f"{name} must be a callable{extra}; got {_show(value)}")
    return value


def check_pair(name: str, value) -> tuple:
    """Return ``value`` as a 2-tuple if it is a tuple, list or 1-d array of two entries."""
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.size == 2:
        value = tuple(value.tolist())
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a pair (low, high); got {_show(value)}")
    return tuple(value)


def check_mapping(name: str, value) -> Mapping:
    """Return ``value`` if it is a mapping (a dict)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a dict; got {_show(value)}")
    return value


def _raw_array(name: str, value, what: str) -> np.ndarray:
    """``value`` as an ndarray without copying an ndarray, or a clear error."""
    kind = type(value)
    if kind is not np.ndarray and kind is not list and (
        isinstance(value, (str, bytes, Mapping)) or value is None
    ):
        raise ValueError(f"{name} must be {what}; got {_show(value)}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError, MemoryError):
        raise ValueError(f"{name} must be {what} (a regular, non-ragged one); "
                         f"got {_show(value)}") from None
    if raw.dtype.kind == "O":
        # Python objects: accept only real numbers (not bools), e.g. a list mixing ints and
        # numpy floats, and turn them into float64 or int64 here.
        flat = raw.ravel()
        if not all(isinstance(x, Real) and not isinstance(x, (bool, np.bool_)) for x in flat):
            raise ValueError(f"{name} must be {what}; got {_show(value)}")
        try:
            if all(isinstance(x, Integral) for x in flat):
                if flat.size and not all(_INT64_MIN <= int(x) <= INT64_MAX for x in flat):
                    raise ValueError(f"{name} entries must fit in 64 bits (below 2**63); "
                                     f"got {_show(value)}")
                raw = raw.astype(np.int64)
            else:
                raw = raw.astype(np.float64)
        except OverflowError:
            raise ValueError(f"{name} must contain only finite numbers; got {_show(value)}") \
                from None
    kind = raw.dtype.kind
    if kind == "f" or kind == "i":
        pass
    elif kind == "b":
        raise ValueError(f"{name} must be {what}, not booleans; got {_show(value)}")
    elif kind == "c":
        raise ValueError(f"{name} must be {what}, not complex numbers; got {_show(value)}")
    elif kind != "u":
        raise ValueError(f"{name} must be {what}; got {_show(value)} ({raw.dtype})")
    if raw.size > _SMALL:
        check_bytes(name, f"an array of shape {raw.shape}", 8 * raw.size, "a float64/int64 copy")
    return raw


_SMALL = MIN_BYTES // 8  # arrays this small are below every memory budget


def as_float_array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    lo: float | None = None,
    lo_open: bool = False,
    hi: float | None = None,
    unit: str = "",
    allow_nan: bool = False,
) -> np.ndarray:
    """A contiguous float64 copy of ``value``, checked for finiteness, shape and bounds.

    Real numbers only: strings, bools, complex numbers and ragged lists are refused, and so is
    an array whose float64 copy would exceed the memory budget (:mod:`uneven.limits`).
    ``allow_nan`` lets ``nan`` entries through (never infinities); bounds ignore them.

    >>> as_float_array("x", [1, 2.5]).tolist()
    [1.0, 2.5]
    >>> as_float_array("x", [1 + 2j])
    Traceback (most recent call last):
    ...
    ValueError: x must be an array of real numbers, not complex numbers; got [(1+2j)]
    """
    plain = True
    if unit and (isinstance(value, str) or _units.is_quantity(value)):
        value, plain = _units.to_unit(name, value, unit), False  # "10 ms", a pint Quantity
    elif unit and isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        value, plain = [_units.to_unit(name, x, unit) for x in value], False
    if type(value) is float or (type(value) is int and -(2**62) < value < 2**62):
        raw = np.array(float(value))  # the common scalar: no conversion checks needed
        fresh = True
    else:
        raw = _raw_array(name, value, "an array of real numbers")
        fresh = type(value) in (list, tuple)  # made here by np.asarray: no 2nd copy
    if ndim is not None or shape is not None:
        _check_shape(name, raw, ndim, shape)
    if fresh and raw.dtype == np.float64 and raw.flags.c_contiguous:
        arr = raw
    else:
        arr = np.array(raw, dtype=np.float64, copy=True, order="C")
    if not np.isfinite(arr).all():
        if not (allow_nan and (np.isfinite(arr) | np.isnan(arr)).all()):
            raise ValueError(f"{name} must contain only finite numbers; got {_show(value)}")
    if (lo is not None or hi is not None) and arr.size:
        vals = arr[~np.isnan(arr)] if allow_nan else arr
        unit_text = f" (in {unit})" if unit else ""
        if lo is not None and vals.size:
            worst = vals.min()
            if worst < lo or (lo_open and worst == lo):
                cmp = ">" if lo_open else ">="
                raise ValueError(f"{name} must have every entry {cmp} {lo}{unit_text}; smallest "
                                 f"entry is {worst}")
        if hi is not None and vals.size:
            worst = vals.max()
            if worst > hi:
                raise ValueError(f"{name} must have every entry <= {hi}{unit_text}; largest "
                                 f"entry is {worst}")
    if plain and unit and arr.size and not _units.plausible(name, arr, unit):
        _units.warn_implausible(name, arr, unit)
    return arr if arr.ndim else arr.reshape(1)  # a scalar comes back as an array of one entry


def as_int_array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> np.ndarray:
    """A contiguous int64 copy of ``value``; every entry must be an integer in ``[lo, hi]``.

    Integer-valued floats are accepted (``2.0``); bools, fractions, NaN and values that do not
    fit in int64 are not.

    >>> as_int_array("ids", [0, 2.0]).tolist()
    [0, 2]
    >>> as_int_array("ids", [1e300])
    Traceback (most recent call last):
    ...
    ValueError: ids entries must fit in 64 bits (below 2**63); got [1e+300]
    """
    raw = _raw_array(name, value, "an array of integers")
    fresh = type(value) in (list, tuple)
    if raw.dtype.kind == "f" and raw.size:
        if not np.all(np.isfinite(raw) & (raw == np.round(raw))):
            raise ValueError(f"{name} must contain only integers; got {_show(value)}")
        if raw.min() < -(2.0**63) or raw.max() >= 2.0**63:
            raise ValueError(f"{name} entries must fit in 64 bits (below 2**63); "
                             f"got {_show(value)}")
    if raw.dtype.kind == "u" and raw.size and raw.max() > INT64_MAX:
        raise ValueError(f"{name} entries must fit in 64 bits (below 2**63); got {_show(value)}")
    if fresh and raw.dtype == np.int64 and raw.ndim and raw.flags.c_contiguous:
        arr = raw  # made here from a list: no second copy
    else:
        arr = np.array(raw, dtype=np.int64, copy=True, order="C", ndmin=1)  # a scalar: one entry
    if ndim is not None or shape is not None:
        _check_shape(name, arr, ndim, shape)
    if arr.size:
        if lo is not None and arr.min() < lo:
            raise ValueError(f"{name} entries must be >= {lo}; smallest entry is {arr.min()}")
        if hi is not None and arr.max() > hi:
            raise ValueError(f"{name} entries must be <= {hi}; largest entry is {arr.max()}")
    return arr


def frozen_array(
    name: str,
    value,
    *,
    dtype: str = "float",
    ndim: int | None = None,
    shape: tuple | None = None,
    lo: float | None = None,
    allow_nan: bool = False,
) -> np.ndarray:
    """A read-only checked array for a field of a result dataclass.

    ``dtype`` is ``"float"`` (finite float64; ``allow_nan`` lets nan through), ``"int"`` (int64)
    or ``"bool"``. An array of that dtype that is already read-only, or that owns its memory
    (a fresh result), is checked and kept (frozen in place, no copy); anything else is converted
    as by :func:`as_float_array` / :func:`as_int_array` (a copy).
    """
    want = {"float": np.float64, "int": np.int64, "bool": np.bool_}[dtype]
    if isinstance(value, np.ndarray):
        check_bytes(name, f"an array of shape {value.shape}", 8 * value.size, "checking it")
    if isinstance(value, np.ndarray) and value.dtype == want and (
        not value.flags.writeable or (value.base is None and value.flags.c_contiguous)
    ):
        arr = value  # read-only, or owned and taken over: checked without a copy
        _check_shape(name, arr, ndim, shape)
        if dtype == "float" and arr.size:
            ok = np.isfinite(arr)
            if allow_nan:
                ok |= np.isnan(arr)
            if not ok.all():
                raise ValueError(f"{name} must contain only finite numbers")
        if lo is not None and arr.size:
            vals = arr[~np.isnan(arr)] if (dtype == "float" and allow_nan) else arr
            if vals.size and vals.min() < lo:
                raise ValueError(f"{name} entries must be >= {lo}; smallest entry is {vals.min()}")
    elif dtype == "bool":
        try:
            arr = np.array(value, copy=True)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.dtype != np.bool_:
            raise ValueError(f"{name} must be an array of booleans; got {_show(value)}")
        _check_shape(name, arr, ndim, shape)
    elif dtype == "int":
        arr = as_int_array(name, value, ndim=ndim, shape=shape, lo=lo)
    else:
        arr = as_float_array(name, value, ndim=ndim, shape=shape, lo=lo, allow_nan=allow_nan)
    if dtype != "bool" and arr.ndim == 0:
        arr = arr.reshape(1)
    arr.flags.writeable = False
    return arr


def trusted(cls, **fields):
    """An instance of the frozen dataclass ``cls`` made from ``fields`` without its checks.

    For the library's own results only: the fields were just computed from validated input, and
    their arrays are already read-only, so re-checking them would only cost time on every call
    (a widget update builds several). Direct construction and ``dataclasses.replace`` still run
    the checks of ``__post_init__``.
    """
    obj = object.__new__(cls)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(dataclasses.fields(cls))
    obj.__dict__.update(fields)  # frozen: assignments go around __setattr__
    if len(fields) != len(names):
        for f in names:
            if f.name not in fields:
                value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
                obj.__dict__[f.name] = value
    return obj


_FIELDS: dict = {}


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
