"""The notebooks' exercises: each answer is computed by the library when a student checks."""

from __future__ import annotations

import numpy as np

from .exercises import register


def _ex00_1():
    # Uniform all-to-all, 1 MB per pair, 4 H800 nodes, bandwidth term only.
    from .collectives import all_to_all
    from .topology import h800_cluster

    r = all_to_all(h800_cluster(4), 1e6)
    return (r.time - r.loads.max_latency) * 1e6


def _ex00_2():
    # The same all-to-all when node 0 receives 4x: time in µs, bandwidth term only.
    from .collectives import all_to_all
    from .topology import h800_cluster

    W = np.ones((4, 4))
    W[:, 0] *= 4
    r = all_to_all(h800_cluster(4), node_weights=W, block=np.full((8, 8), 1e6))
    return (r.time - r.loads.max_latency) * 1e6


register("00.1", _ex00_1, unit="µs", rtol=0.02,
         hint="which link does every byte that leaves a node cross, and how many bytes is that?")
register("00.2", _ex00_2, unit="µs", rtol=0.02,
         hint="look at the NICs of node 0: how much arrives there from the other nodes?")
