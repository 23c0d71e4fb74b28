"""Units. Everything inside the library is SI: seconds, bytes, bytes per second.

Vendors' GB are 10**9 bytes (nccl-tests, DeepEP and NVIDIA data sheets all use 1e9), and a
"400 Gb/s" NIC moves 400e9 / 8 = 50e9 bytes per second. These helpers convert at the edges, so a
notebook can say ``gbit_per_s(400)`` and a plot can say ``to_us(t)``.

>>> gbit_per_s(400) == gbyte_per_s(50)
True
>>> to_ms(ms(12.5))
12.5
"""

from __future__ import annotations

from numbers import Real

import numpy as np

__all__ = [
    "KB", "MB", "GB", "KiB", "MiB", "GiB",
    "NS", "US", "MS",
    "ns", "us", "ms",
    "to_ns", "to_us", "to_ms",
    "gbyte_per_s", "gbit_per_s", "to_gbyte_per_s", "to_gbit_per_s",
]

KB, MB, GB = 1e3, 1e6, 1e9
KiB, MiB, GiB = 1024.0, 1024.0**2, 1024.0**3
NS, US, MS = 1e-9, 1e-6, 1e-3


def _convert(name: str, x, factor: float):
    """``x * factor`` for a finite real number or an array of them; a clean error otherwise."""
    from ._validate import _show, as_float_array

    if isinstance(x, Real) and not isinstance(x, (bool, np.bool_)):
        try:
            v = float(x)
        except OverflowError:
            v = float("inf")
        out = v * factor
        if not (np.isfinite(v) and np.isfinite(out)):
            raise ValueError(f"{name} must be a finite number whose conversion is finite; "
                             f"got {_show(x)}")
        return out
    arr = as_float_array(name, x)
    with np.errstate(over="ignore"):
        out = arr * factor
    if not np.isfinite(out).all():
        raise ValueError(f"{name} has entries whose conversion overflows; got {_show(x)}")
    return out.reshape(np.shape(x))


def ns(x):
    """Nanoseconds to seconds (a number or an array of numbers).

    >>> ns(1500)
    1.5e-06
    """
    return _convert("x", x, NS)


def us(x):
    """Microseconds to seconds."""
    return _convert("x", x, US)


def ms(x):
    """Milliseconds to seconds."""
    return _convert("x", x, MS)


def to_ns(seconds):
    """Seconds to nanoseconds."""
    return _convert("seconds", seconds, 1.0 / NS)


def to_us(seconds):
    """Seconds to microseconds."""
    return _convert("seconds", seconds, 1.0 / US)


def to_ms(seconds):
    """Seconds to milliseconds."""
    return _convert("seconds", seconds, 1.0 / MS)


def gbyte_per_s(x):
    """GB/s (10**9 bytes per second) to bytes per second."""
    return _convert("x", x, 1e9)


def gbit_per_s(x):
    """Gb/s (10**9 bits per second, how NICs are sold) to bytes per second."""
    return _convert("x", x, 1e9 / 8.0)


def to_gbyte_per_s(bytes_per_s):
    """Bytes per second to GB/s."""
    return _convert("bytes_per_s", bytes_per_s, 1e-9)


def to_gbit_per_s(bytes_per_s):
    """Bytes per second to Gb/s."""
    return _convert("bytes_per_s", bytes_per_s, 8.0 / 1e9)
