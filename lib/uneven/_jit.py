"""One place that decides how numba compiles the library's kernels.

``njit`` is ``numba.njit(cache=True)`` with two safety nets:

* caching is switched off (not a crash) when no cache location is writable, which happens on
  locked-down classroom hubs where both the package folder and ``$HOME`` are read-only;
* ``UNEVEN_NUMBA_CACHE=0`` turns caching off on purpose (coverage runs, debugging).

Kernels never use ``parallel=True``: they sit behind widgets on 2-core machines and Binder pods,
where a thread pool sized from the host's cores only adds jitter.
"""

from __future__ import annotations

import os

import numba

__all__ = ["njit", "CACHE_ENABLED"]

CACHE_ENABLED = os.environ.get("UNEVEN_NUMBA_CACHE", "1") not in ("0", "false", "no", "off")


def njit(*args, **kwargs):
    """Like ``numba.njit`` but with ``cache=True`` unless caching is impossible or turned off.

    >>> from uneven._jit import njit
    >>> @njit
    ... def add(a, b):
    ...     return a + b
    >>> add(1.0, 2.0)
    3.0
    """
    kwargs.setdefault("cache", CACHE_ENABLED)

    def wrap(func):
        try:
            return numba.njit(**kwargs)(func)
        except RuntimeError as err:  # "cannot cache function ...: no locator available"
            if "cache" not in str(err):
                raise
            kwargs["cache"] = False
            return numba.njit(**kwargs)(func)

    if len(args) == 1 and callable(args[0]) and not kwargs.get("_signature_given"):
        return wrap(args[0])
    if args:  # an explicit signature was passed positionally
        sig = args[0]

        def wrap_sig(func):
            try:
                return numba.njit(sig, **kwargs)(func)
            except RuntimeError as err:
                if "cache" not in str(err):
                    raise
                kwargs["cache"] = False
                return numba.njit(sig, **kwargs)(func)

        return wrap_sig
    return wrap
