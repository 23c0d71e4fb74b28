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


def ns(x):
    """Nanoseconds to seconds."""
    return x * NS


def us(x):
    """Microseconds to seconds."""
    return x * US


def ms(x):
    """Milliseconds to seconds."""
    return x * MS


def to_ns(seconds):
    """Seconds to nanoseconds."""
    return seconds / NS


def to_us(seconds):
    """Seconds to microseconds."""
    return seconds / US


def to_ms(seconds):
    """Seconds to milliseconds."""
    return seconds / MS


def gbyte_per_s(x):
    """GB/s (10**9 bytes per second) to bytes per second."""
    return x * 1e9


def gbit_per_s(x):
    """Gb/s (10**9 bits per second, how NICs are sold) to bytes per second."""
    return x * 1e9 / 8.0


def to_gbyte_per_s(bytes_per_s):
    """Bytes per second to GB/s."""
    return bytes_per_s / 1e9


def to_gbit_per_s(bytes_per_s):
    """Bytes per second to Gb/s."""
    return bytes_per_s * 8.0 / 1e9
