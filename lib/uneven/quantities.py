"""Quantities at the boundary: a parameter in seconds, bytes or bytes/s also takes its unit.

Every public parameter the library declares in SI (``unit="s"``, ``"bytes"``, ``"bytes/s"``;
also the display units ``"ms"``, ``"µs"``, ``"GB/s"``, ``"Gb/s"``, ``"MB"``) accepts, besides a
plain number in that unit:

* a string with a unit: ``"400 Gb/s"``, ``"50 GB/s"``, ``"10 ms"``, ``"7 KB"``, ``"1.5 GiB"``,
  ``"2 us"`` (parsed by pint; ``b`` is a bit and ``B`` a byte, ``K``/``k`` both kilo, decimal
  prefixes are powers of 10 and binary ones powers of 2, as vendors use them);
* a pint ``Quantity`` (of any registry).

A plain number that is implausible for its kind warns (:class:`UnitWarning`) naming the
parameter and the likely slip, e.g. ``nic_bw=400`` (bytes/s: did you mean ``'400 Gb/s'``?) or
``t_f=10`` (10 s for one micro-batch on one stage: did you mean ``'10 ms'``?). Only numbers the
caller passed warn: the library's own intermediate values never do.

>>> to_unit("nic_bw", "400 Gb/s", "bytes/s")
50000000000.0
>>> to_unit("t_f", "10 ms", "s")
0.01
>>> to_unit("size", "1.5 GiB", "bytes")
1610612736.0
"""

from __future__ import annotations

import functools
import re
import sys
import warnings

import numpy as np

__all__ = ["UnitWarning", "is_quantity", "PLAUSIBLE", "format_quantity"]


class UnitWarning(UserWarning):
    """A plain number that is implausible for its unit: most likely a unit slip."""


# Our unit labels -> pint's names (labels with no entry take no units: tokens, FLOP/s ...).
_PINT_NAME = {"s": "second", "ms": "millisecond", "µs": "microsecond", "us": "microsecond",
              "bytes": "byte", "B": "byte", "MB": "megabyte", "bytes/s": "byte / second",
              "GB/s": "gigabyte / second", "Gb/s": "gigabit / second"}
_KIND = {"s": "time", "ms": "time", "µs": "time", "us": "time", "bytes": "size", "B": "size",
         "MB": "size", "bytes/s": "bandwidth", "GB/s": "bandwidth", "Gb/s": "bandwidth"}
_EXAMPLE = {"time": "'10 ms'", "size": "'7 KB'", "bandwidth": "'400 Gb/s'"}

#: Plausible ranges of plain numbers, in SI: (kind, parameter-name pattern) -> (low, high). The
#: first matching pattern wins; ``None`` is no bound.
PLAUSIBLE = (
    ("bandwidth", r".*nic.*", (1e6, 2e11)),    # a NIC: 8 Mb/s .. 1.6 Tb/s
    ("bandwidth", r".*", (1e6, 1e14)),          # any link: 1 MB/s .. 100 TB/s
    ("time", r"t_[a-z]{1,3}", (None, 5.0)),     # one op of one micro-batch (t_f, t_b, t_w)
    ("time", r".*timeout.*", (None, 1e7)),      # a time limit: an hour is sensible
    ("time", r".*", (None, 100.0)),
    ("size", r".*", (None, 1e15)),              # 1 PB
)


@functools.lru_cache(maxsize=1)
def _registry():
    import pint

    return pint.UnitRegistry()


def is_quantity(value) -> bool:
    """Whether ``value`` is a pint ``Quantity`` (checked without importing pint)."""
    mod = type(value).__module__ or ""
    return mod.split(".")[0] == "pint" and hasattr(value, "magnitude") and hasattr(value, "to")


_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*")


def _normalise(text: str) -> str:
    """Vendors' spellings to pint's: 'Gb/s' and 'Gbps' are gigabit/s, 'KB' is a kilobyte.

    >>> [_normalise(x) for x in ("400 Gb/s", "400 Gbps", "7 KB", "1 KiB", "25 GBps")]
    ['400 Gbit/s', '400 Gbit/s', '7 kB', '1 KiB', '25 GB/s']
    """
    m = _NUMBER.fullmatch(text)
    if not m:
        return text
    num, u = m.groups()
    u = re.sub(r"bps$", "bit/s", u)
    u = re.sub(r"Bps$", "B/s", u)
    u = re.sub(r"(?<![A-Za-z])([kKMGTPE]i?)?b(?![A-Za-z])",
               lambda g: (g.group(1) or "") + "bit", u)
    u = re.sub(r"(?<![A-Za-z])K(?=B|bit)", "k", u)
    return f"{num} {u}"


def to_unit(name: str, value, unit: str):
    """``value`` (a string with a unit, or a pint Quantity) as a float (or array) in ``unit``,
    one of our labels ("s", "bytes", "bytes/s", "ms", ...). Raises ``ValueError`` naming
    ``name`` for a string without a unit, an unknown unit or the wrong kind of quantity."""
    from ._validate import _show, check_str

    check_str("name", name, max_len=200)
    check_str("unit", unit, max_len=50)
    target = _PINT_NAME.get(unit)
    if target is None:
        raise ValueError(f"{name} takes a plain number (in {unit or 'its own unit'}), not a "
                         f"quantity with a unit; got {_show(value)}")
    ureg = _registry()
    kind = _KIND[unit]
    try:
        if isinstance(value, str):
            if len(value) > 200:
                raise ValueError
            q = ureg.Quantity(_normalise(value))
            if not isinstance(q, ureg.Quantity) or q.unitless:
                raise ValueError(f"{name} as a string needs a unit, e.g. {name}="
                                 f"{_EXAMPLE[kind]}; got {_show(value)}")
        else:
            q = ureg.Quantity(value.magnitude, str(value.units))
        out = q.to(target).magnitude
    except ValueError as err:
        if str(err).startswith(name):
            raise
        raise ValueError(f"{name} must be a {kind} in {unit}: a number or a quantity such as "
                         f"{_EXAMPLE[kind]}; got {_show(value)}") from None
    except Exception:  # pint's own errors: undefined unit, wrong dimension, bad syntax
        raise ValueError(f"{name} must be a {kind} in {unit}: a number or a quantity such as "
                         f"{_EXAMPLE[kind]}; got {_show(value)}") from None
    if isinstance(out, np.ndarray):
        return out.astype(np.float64)
    try:
        return float(out)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a {kind} with a real magnitude; got "
                         f"{_show(value)}") from None


@functools.lru_cache(maxsize=1024)
def _bounds(kind: str, name: str) -> tuple:
    for k, pattern, bounds in PLAUSIBLE:
        if k == kind and re.fullmatch(pattern, name):
            return bounds
    return (None, None)  # pragma: no cover - every kind has a catch-all


def plausible(name: str, value, unit: str) -> bool:
    """Whether the plain number(s) ``value`` in ``unit`` are in the plausible range of their
    kind for a parameter called ``name`` (:data:`PLAUSIBLE`; zero always is)."""
    kind = _KIND.get(unit)
    if kind is None:
        return True
    low, high = _bounds(kind, name)
    f = _factor(unit)
    if isinstance(value, np.ndarray):
        a = np.abs(value[np.isfinite(value)]) * f
        a = a[a > 0]
        if not a.size:
            return True
        lo_v, hi_v = float(a.min()), float(a.max())
    else:
        lo_v = hi_v = abs(float(value)) * f
        if lo_v == 0.0:
            return True
    return not ((low is not None and lo_v < low) or (high is not None and hi_v > high))


def warn_implausible(name: str, value, unit: str, *, passed: bool = False) -> None:
    """Warn (:class:`UnitWarning`) that a plain number the caller passed is outside the
    plausible range of its kind, saying what was probably meant; nothing for the library's
    own intermediate values. ``passed=True``: the caller gave ``value`` inside a structure
    (an entry of a dict, a file), so warn without asking the call stack who passed it."""
    kind = _KIND.get(unit)
    if kind is None or plausible(name, value, unit) or not (passed or _from_caller(name)):
        return
    low, _high = _bounds(kind, name)
    a = np.abs(np.atleast_1d(np.asarray(value, dtype=float))) * _factor(unit)
    a = a[np.isfinite(a) & (a > 0)]
    small = low is not None and float(a.min()) < low
    x = float(a.min() if small else a.max())
    warnings.warn(_slip(name, x, unit, kind, small), UnitWarning, stacklevel=_user_level())


def _factor(unit):
    return {"ms": 1e-3, "µs": 1e-6, "us": 1e-6, "MB": 1e6, "GB/s": 1e9,
            "Gb/s": 1e9 / 8}.get(unit, 1.0)


def _slip(name, x, unit, kind, small):
    if kind == "bandwidth" and small:
        return (f"{name}={x:g} B/s is implausible for a bandwidth (below 1 MB/s): did you mean "
                f"'{x:g} Gb/s' ({x * 1e9 / 8:.3g} B/s) or '{x:g} GB/s'? The library takes bytes "
                f"per second; a string with its unit says what you mean, e.g. "
                f"{name}='{x:g} Gb/s'.")
    if kind == "bandwidth":
        nic = re.fullmatch(r".*nic.*", name) is not None
        limit = "above any NIC (1.6 Tb/s = 2e11 B/s)" if nic else "above 100 TB/s"
        return (f"{name}={x:.3g} B/s is {limit}: bits read as bytes? {x:.3g} bit/s is "
                f"{x / 8:.3g} B/s; a string with its unit says what you mean, e.g. "
                f"{name}='{x / 1e9:g} Gb/s'.")
    if kind == "time":
        what = ("one op of one micro-batch" if re.fullmatch(r"t_[a-z]{1,3}", name)
                else "a time")
        return (f"{name}={x:g} s is implausible for {what}: did you mean '{x:g} ms' "
                f"({x * 1e-3:g} s)? A string with its unit says what you mean, e.g. "
                f"{name}='{x:g} ms'.")
    return (f"{name}={x:.3g} B is implausible for a size (above 1 PB); a string with its unit "
            f"says what you mean, e.g. {name}='7 KB' or '1.5 GiB'.")


def _from_caller(name: str) -> bool:
    """Whether parameter ``name`` came from outside the library: the first function the
    caller entered (walking up from here through uneven's own frames) takes a parameter of
    that name (a dataclass's generated ``__init__`` included; ``dataclasses.replace`` is
    looked through, so the library's own replace calls stay quiet)."""
    f = sys._getframe(2)
    entry = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod == "dataclasses":  # replace(...): whoever called it decides
            f = f.f_back
            continue
        if not _inside(f, mod):
            break
        entry = f
        f = f.f_back
    if entry is None or f is None:
        return False
    if entry.f_globals.get("__name__", "").startswith("uneven.engines"):
        return False  # the engines are unit-agnostic kernels: any consistent time unit will do
    code = entry.f_code
    n_args = code.co_argcount + code.co_kwonlyargcount
    return name in code.co_varnames[:n_args]


def _inside(frame, module: str) -> bool:
    """A frame of the library, or the ``__init__`` dataclasses generate for its types."""
    code = frame.f_code
    return (module == "uneven" or module.startswith("uneven.")
            or (code.co_filename == "<string>" and code.co_name == "__init__"))


def _user_level() -> int:
    """``stacklevel`` that points the warning at the caller's line."""
    level, f = 1, sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not _inside(f, mod):
            return level
        level += 1
        f = f.f_back
    return level


def format_quantity(value: float, unit: str) -> str:
    """A value in one of our SI units with a readable prefix: ``'12.5 ms'``, ``'50 GB/s'``.

    >>> format_quantity(0.0125, "s"), format_quantity(5e10, "bytes/s")
    ('12.5 ms', '50 GB/s')
    """
    from ._validate import check_real, check_str

    kind = _KIND.get(check_str("unit", unit, max_len=50))
    v = check_real("value", value) * _factor(unit)
    if kind == "time":
        steps = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
    elif kind in ("size", "bandwidth"):
        tail = "B/s" if kind == "bandwidth" else "B"
        steps = ((1e12, "T" + tail), (1e9, "G" + tail), (1e6, "M" + tail), (1e3, "k" + tail),
                 (1.0, tail))
    else:
        return f"{value:.4g} {unit}".strip()
    a = abs(v)
    if a == 0.0:
        return f"0 {steps[0][1]}"
    for scale, name in steps:
        if a >= scale or scale == steps[-1][0]:
            return f"{v / scale:.4g} {name}"
    return f"{v:.4g} {steps[-1][1]}"  # pragma: no cover
