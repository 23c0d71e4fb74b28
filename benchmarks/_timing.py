"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import time


def best_of(fn, repeat: int = 3):
    """Run ``fn`` ``repeat`` times; return (fastest wall time in s, the last result).

    The fastest run is the least disturbed by the other core's work on a shared machine.
    """
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def best_cpu_of(fn, repeat: int = 3):
    """Like :func:`best_of`, in CPU seconds of this process (``time.process_time``).

    For single-threaded code on a shared machine: time spent waiting for the core while another
    process runs does not count, so two single-threaded codes compare fairly under load.
    """
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out
