"""Start page (00): an all-to-all on an H800-like cluster."""

from __future__ import annotations

from . import register


def _uniform_2mb():
    # Uniform all-to-all, 2 MB per pair, 8 H800 nodes: the bandwidth term only (µs).
    from ..collectives import all_to_all
    from ..topology import h800_cluster

    r = all_to_all(h800_cluster(8), 2e6)
    return (r.time - r.loads.max_latency) * 1e6


def _a2a_us(hot_factor):
    # 1 MB per pair on 8 nodes, node 0 receives hot_factor x: what the explorer reports (µs).
    from ..explorers.nb00 import start_state

    return start_state(n_nodes=8, mb_per_pair=1.0, hot_factor=hot_factor).time * 1e6


register("00.1", _uniform_2mb, unit="µs", rtol=0.02,
         mistakes=[(lambda e: e * 8, "Mind the units: a 400 Gb/s NIC moves 50 GB/s."),
                   (lambda e: e * 8 / 7, "Blocks to GPUs of the sender's own node never reach "
                                         "a NIC.")],
         hint="follow the bytes that leave one node through one NIC.")
register("00.2", lambda: _a2a_us(3.0), unit="µs", rtol=0.03,
         mistakes=[(lambda e: _a2a_us(1.0), "That is the uniform all-to-all: what changes at "
                                            "node 0?")],
         hint="which NICs carry the extra bytes, and how many bytes is that?")
register("00.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Without PXN, which NIC does a block leave its node through?")])

#: The worked solutions of the notebook's <details> blocks (tests/test_exercises.py checks them).
SOLUTIONS = {"00.1": 2240.0, "00.2": 3360.0, "00.3": "c"}

#: Answers from the neighbouring regime, which the checkers must reject.
REGIME_NEIGHBOURS: dict = {}
