"""Compile (and cache) every numba kernel once: ``python -m uneven.warmup``.

Binder's postBuild runs this so a reader's first slider move does not wait for the compiler.
Every call uses the same float64/int64 types as the public wrappers, so the cached
specialisations are the ones notebooks hit.
"""

from __future__ import annotations

import importlib
import time

import numpy as np

# (module, function name) pairs, each a no-argument warm-up. Modules are optional so that a
# partial install still warms what it has.
_STEPS = []


def _step(fn):
    _STEPS.append(fn)
    return fn


@_step
def _linkload():
    from .collectives import all_to_all, ring_all_reduce
    from .engines.linkload import link_loads, link_loads_matrix
    from .topology import cloudmatrix384, h800_cluster

    t = h800_cluster(2)
    link_loads(t, [0], [9], [1.0])
    link_loads_matrix(t, np.ones((16, 16)))
    all_to_all(t, 1.0)
    all_to_all(cloudmatrix384(2), 1.0)
    ring_all_reduce(t, 1.0)


@_step
def _optional_modules():
    # Modules that carry their own warm-up function.
    for name in ("uneven.engines.timeline", "uneven.engines.fluid", "uneven.schedulers.pipeline",
                 "uneven.schedulers.experts", "uneven.ep_traffic"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        fn = getattr(mod, "_warmup", None)
        if fn is not None:
            fn()


def main() -> None:
    """Run every warm-up step and print how long each took."""
    for fn in _STEPS:
        t0 = time.perf_counter()
        fn()
        print(f"warm-up {fn.__name__.lstrip('_')}: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
