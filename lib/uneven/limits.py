"""How big a call may get: a memory budget and a work budget, checked before anything runs.

Every public entry point estimates the memory it is about to allocate and, where a loop's length
follows from a parameter rather than from the data passed in, the number of loop steps it is about
to run. Above a budget it raises ``ValueError`` naming the parameter, its value, the estimate and
the limit, before allocating or looping, so a mistyped ``n_nodes=10**6`` costs a message instead
of a frozen kernel.

* memory: :func:`max_bytes`, 2 GiB unless the environment variable ``UNEVEN_MAX_BYTES`` says
  otherwise (bytes, e.g. ``UNEVEN_MAX_BYTES=8e9`` or ``8GiB``);
* work: :func:`max_steps`, ``2e9`` loop steps (a few seconds of compiled code) unless
  ``UNEVEN_MAX_STEPS`` says otherwise. A step is one iteration of an inner loop of a compiled
  kernel; one iteration of a Python-level loop counts as :data:`PY_STEP` steps.

The budgets are read at every check, so a notebook can raise them for one cell with
``os.environ["UNEVEN_MAX_BYTES"] = "16GiB"``.

>>> check_bytes("n", 10, 10 * 8, "a vector")  # well within budget: no error
>>> check_bytes("n", 10**12, 8 * 10**12, "a vector of n float64",
...             limit=2 * 2**30)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: n=1000000000000 needs about 7.28 TiB (a vector of n float64), above the memory ...
"""

from __future__ import annotations

import math
import os
import re
from numbers import Integral, Real

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_STEPS",
    "PY_STEP",
    "MIN_BYTES",
    "MIN_STEPS",
    "max_bytes",
    "max_steps",
    "check_bytes",
    "check_steps",
    "format_bytes",
]

DEFAULT_MAX_BYTES = 2 * 2**30
DEFAULT_MAX_STEPS = 2 * 10**9
#: The budgets can be set lower, but not below these floors (checks of estimates under them are
#: skipped: a kernel's small temporaries are never worth a refusal, or the time of reading the
#: environment).
MIN_BYTES = 2**20
MIN_STEPS = 10**5
#: Steps charged for one iteration of a Python-level loop (it costs about as much as 1,000
#: iterations of a compiled one).
PY_STEP = 1000

_SUFFIX = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
           "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
           "tib": 2**40}


_PARSED: dict = {}


def _read_env(var: str, default: int, suffixes: bool) -> int:
    text = os.environ.get(var, "")
    key = (var, text)
    if key in _PARSED:
        return _PARSED[key]
    value = _parse_env(var, text.strip(), default, suffixes)
    if len(_PARSED) > 64:
        _PARSED.clear()
    _PARSED[key] = value
    return value


def _parse_env(var: str, text: str, default: int, suffixes: bool) -> int:
    if not text:
        return default
    m = re.fullmatch(r"([0-9.eE+]+)\s*([A-Za-z]*)", text)
    unit = m.group(2).lower() if m else ""
    try:
        number = float(m.group(1)) if m else math.nan
    except ValueError:
        number = math.nan
    if not m or unit not in (_SUFFIX if suffixes else ("",)) or not (
        math.isfinite(number) and number >= 1
    ):
        accepted = "a number >= 1, optionally with KB/MB/GB/TB or KiB/MiB/GiB/TiB" if suffixes \
            else "a number >= 1"
        raise ValueError(f"environment variable {var} must be {accepted}; got {text!r}")
    return int(number * _SUFFIX[unit])


def max_bytes() -> int:
    """The memory budget of one call, in bytes (``UNEVEN_MAX_BYTES``, default 2 GiB, at least
    :data:`MIN_BYTES`)."""
    return max(MIN_BYTES, _read_env("UNEVEN_MAX_BYTES", DEFAULT_MAX_BYTES, suffixes=True))


def max_steps() -> int:
    """The work budget of one call, in loop steps (``UNEVEN_MAX_STEPS``, default 2e9, at least
    :data:`MIN_STEPS`)."""
    return max(MIN_STEPS, _read_env("UNEVEN_MAX_STEPS", DEFAULT_MAX_STEPS, suffixes=False))


def format_bytes(n) -> str:
    """``n`` bytes in binary units, e.g. ``'1.5 GiB'``.

    >>> format_bytes(1536 * 2**20), format_bytes(100)
    ('1.5 GiB', '100 B')
    """
    n = _amount("n", n)
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _show(value) -> str:
    from ._validate import _show as show

    return show(value)


def _amount(name, value) -> float:
    """A count of bytes or steps: an integer of any size, or a real number, >= 0 (not NaN)."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        if value >= 0:
            return float(value) if value < 2**1000 else math.inf
    elif isinstance(value, Real) and not isinstance(value, bool):
        try:
            v = float(value)
        except OverflowError:
            v = math.inf if value > 0 else -math.inf
        if not math.isnan(v) and v >= 0:
            return v
    raise ValueError(f"{name} must be a number >= 0; got {_show(value)}")


def _check_args(name, what, limit):
    if not isinstance(name, str) or not isinstance(what, str):
        raise ValueError(f"name and what must be strings; got name={_show(name)}, "
                         f"what={_show(what)}")
    if limit is not None and not (isinstance(limit, Integral) and not isinstance(limit, bool)
                                  and 1 <= limit < 2**63):
        raise ValueError(f"limit must be None or an integer in [1, 2**63); got {_show(limit)}")


def check_bytes(name: str, value, nbytes, what: str, *, limit: int | None = None) -> None:
    """Raise ``ValueError`` if allocating ``nbytes`` (an estimate) would exceed :func:`max_bytes`.

    ``name``/``value`` are the parameter that makes the call big and its value; ``what`` says
    what would be allocated; ``limit`` overrides the budget (bytes).
    """
    if type(nbytes) in (int, float) and 0 <= nbytes <= MIN_BYTES and limit is None and type(
        name
    ) is str and type(what) is str:
        return  # below every budget: the common case, without reading the environment
    _check_args(name, what, limit)
    nbytes = _amount("nbytes", nbytes)
    limit = max_bytes() if limit is None else limit
    if nbytes > limit:
        raise ValueError(
            f"{name}={_show(value)} needs about {format_bytes(nbytes)} ({what}), above the memory "
            f"limit of {format_bytes(limit)} (UNEVEN_MAX_BYTES); use a smaller {name} or raise "
            "the limit"
        )


def check_steps(name: str, value, steps, what: str, *, limit: int | None = None) -> None:
    """Raise ``ValueError`` if a loop of ``steps`` (an estimate) would exceed :func:`max_steps`.

    >>> check_steps("m", 10**15, 10**15, "dispatching every op",
    ...             limit=2 * 10**9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: m=1000000000000000 needs about 1e+15 loop steps (dispatching every op), ...
    """
    if type(steps) in (int, float) and 0 <= steps <= MIN_STEPS and limit is None and type(
        name
    ) is str and type(what) is str:
        return
    _check_args(name, what, limit)
    steps = _amount("steps", steps)
    limit = max_steps() if limit is None else limit
    if steps > limit:
        raise ValueError(
            f"{name}={_show(value)} needs about {float(steps):.3g} loop steps ({what}), above the "
            f"work limit of {float(limit):.3g} (UNEVEN_MAX_STEPS); use a smaller {name} or raise "
            "the limit"
        )
