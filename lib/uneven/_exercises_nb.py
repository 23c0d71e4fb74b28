"""The notebooks' exercises: each answer is computed by the library when a student checks."""

from __future__ import annotations

import numpy as np

from .exercises import register


def _ex00_1():
    # Uniform all-to-all, 2 MB per pair, 8 H800 nodes, bandwidth term only (µs).
    from .collectives import all_to_all
    from .topology import h800_cluster

    r = all_to_all(h800_cluster(8), 2e6)
    return (r.time - r.loads.max_latency) * 1e6


def _ex00_2():
    # 1 MB per pair on 8 nodes, GPUs of node 0 receive 3x: bandwidth term only (µs).
    from .collectives import all_to_all
    from .topology import h800_cluster

    W = np.ones((8, 8))
    W[:, 0] *= 3
    r = all_to_all(h800_cluster(8), node_weights=W, block=np.full((8, 8), 1e6))
    return (r.time - r.loads.max_latency) * 1e6


register("00.1", _ex00_1, unit="µs", rtol=0.02,
         hint="which link does every byte that leaves a node cross, and how many bytes is that?")
register("00.2", _ex00_2, unit="µs", rtol=0.02,
         hint="look at the NICs of node 0: how much arrives there from the other nodes?")


# --------------------------------------------------------------------------- notebook 03
def _ex03_1(mode):
    from .ep_traffic import dispatch_bytes_per_token, ep_dispatch_traffic

    # One token on GPU 3 (node 0) to experts placed on GPUs 6, 10, 13, 19.
    t = ep_dispatch_traffic([[0, 1, 2, 3]], [3], [6, 10, 13, 19], 8,
                            dispatch_bytes_per_token(7168, "fp8"), mode=mode, n_gpus=24)
    return t.network_bytes


def _ex03_2():
    from .ep_model import nvlink_fanout_limit
    from .units import gbit_per_s, gbyte_per_s

    return nvlink_fanout_limit(gbyte_per_s(180), gbit_per_s(400))


def _ex03_3():
    from .ep_model import min_node_cap

    return min_node_cap(32, 9.0)


def _ex03_4():
    from .ep_model import decode_tpot_bound

    return decode_tpot_bound(400e9) * 1e3


register("03.1a", lambda: _ex03_1("direct"), unit="bytes", rtol=1e-6,
         hint="count the expert GPUs that are not on the token's own node")
register("03.1b", lambda: _ex03_1("dedup"), unit="bytes", rtol=1e-6,
         hint="count the other nodes, not the GPUs")
register("03.2", _ex03_2, rtol=0.01, hint="how many copies fit through NVLink while one drains "
         "through the NIC? Mind Gb/s versus GB/s.")
register("03.3", _ex03_3, kind="exact", hint="each of the M nodes gets 32/M experts")
register("03.4", _ex03_4, unit="ms", rtol=0.02,
         hint="(1 + 2) bytes × tokens × experts × hidden / bandwidth, per round")


# --------------------------------------------------------------------------- notebook 01
def _ex01_1():
    from .schedulers.pipeline import absorption_bound

    return absorption_bound(4, 0.012, 0.008) * 1e3


def _ex01_2():
    from .schedulers.pipeline import replan_warmups

    return replan_warmups([0.025, 0.0, 0.012, 0.0], t_f=0.010)


def _ex01_3(delay):
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    zb = pipeline_schedule("zb-h2", 5, 10)
    delays = [0.0, delay, 0.0, 0.0]  # link 1<->2
    return simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=delays).iteration_time * 1e3


def _ex01_4():
    from .schedulers.pipeline import absorption_bound

    return next(d for d in range(1, 100) if absorption_bound(d, 0.01, 0.01) >= 0.035)


register("01.1", _ex01_1, unit="ms", rtol=0.01,
         hint="count what each side of the link does between F_j leaving and B_j coming back")
register("01.2", _ex01_2, kind="exact",
         hint="start from the last stage (w = 1) and walk upstream, adding ⌈c/t_F⌉ + 2 per link")
register("01.3a", lambda: _ex01_3(0.0), unit="ms", rtol=0.01,
         hint="how long until the last stage starts, and is any stage idle after that?")
register("01.3b", lambda: _ex01_3(0.008), unit="ms", rtol=0.01,
         hint="is 8 ms within what slackness 2 absorbs, and which regime is it in?")
register("01.4", _ex01_4, kind="exact", hint="solve (Δ − 1)·t ≥ c for the smallest integer Δ")
