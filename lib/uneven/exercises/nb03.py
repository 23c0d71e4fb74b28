"""Notebook 03 (Insights into DeepSeek-V3): the NIC that EP must cross."""

from __future__ import annotations

from . import register


def _network_bytes(mode):
    from ..ep.traffic import dispatch_bytes_per_token, ep_dispatch_traffic

    # One token on GPU 3 (node 0) to experts placed on GPUs 6, 10, 13, 19.
    t = ep_dispatch_traffic([[0, 1, 2, 3]], [3], [6, 10, 13, 19], 8,
                            dispatch_bytes_per_token(7168, "fp8"), mode=mode, n_gpus=24)
    return t.network_bytes


def _fanout_limit():
    from ..ep.model import nvlink_fanout_limit
    from ..units import gbit_per_s, gbyte_per_s

    return nvlink_fanout_limit(gbyte_per_s(180), gbit_per_s(400))


def _nic_rate(logical, n_nodes):
    # DeepEP's "RDMA GB/s" counts the bytes to every destination node, the sender's own included;
    # with uniform routing the own node is 1 of n_nodes, so the NIC carries (N - 1) / N of them
    return logical * (n_nodes - 1) / n_nodes


def _draw_rate(rng):
    return (float(rng.integers(10, 200)), int(rng.integers(2, 65)))


def _cost_ratio():
    # USD per endpoint at 8,192 GPUs: the single-plane design (an FT3) over eight planes (MPFT)
    from ..fabric import cost_per_endpoint_curve

    c = cost_per_endpoint_curve([8192], k=64, planes=8)
    return float(c["single plane"][0] / c["MPFT"][0])


def _tpot_400_ms():
    # the paper's decode bound at 400 GB/s, with 3.7 us per dispatch and per combine
    from ..ep.model import decode_tpot_bound
    from ..units import gbyte_per_s

    return decode_tpot_bound(gbyte_per_s(400), latency_per_exchange=3.7e-6) * 1e3


def _cap_ratio():
    # The explorer's defaults, node cap M = 8 against M = 4: dispatch time ratio.
    from ..explorers.nb03 import deepseek_state

    return deepseek_state(max_nodes=8).dispatch_time / deepseek_state(max_nodes=4).dispatch_time


_NO_SCALES = ("FP8 carries one 4-byte scale per 128 values: a copy is 7,168 + 224 = 7,392 "
              "bytes.")
register("03.1a", lambda: _network_bytes("direct"), unit="bytes", rtol=1e-6,
         mistakes=[(lambda e: e * 4 / 3, "The expert on the token's own node is reached over "
                                         "NVLink."),
                   (lambda e: e * 7168 / 7392, _NO_SCALES)],
         hint="count the expert GPUs that are not on the token's own node.")
register("03.1b", lambda: _network_bytes("relay"), unit="bytes", rtol=1e-6,
         mistakes=[(lambda e: e * 3 / 2, "That is one copy per expert GPU: how many other "
                                         "nodes are there?"),
                   (lambda e: e * 7168 / 7392, _NO_SCALES)],
         hint="count the other nodes, not the GPUs.")
register("03.2", _fanout_limit, rtol=0.01,
         mistakes=[(lambda e: e / 8, "Mind Gb/s against GB/s: 400 Gb/s is 50 GB/s."),
                   (lambda e: e * 2, "180 GB/s is already per direction.")],
         hint="how many copies drain through NVLink while one drains through the NIC?")
register("03.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Count the GPUs a forwarder can copy to inside an 8-GPU node."),
                   ("d", "Experts on one GPU share a copy: count target GPUs, not experts.")])
register("03.5", _nic_rate, kind="function", params=("logical", "n_nodes"), unit="GB/s",
         rtol=1e-9, atol=1e-9, draw=_draw_rate, examples=[(51.0, 8), (43.0, 2)],
         solution="logical * (n_nodes - 1) / n_nodes",
         mistakes=[(lambda g, n: g, "DeepEP's figure counts the bytes to the sender's own node "
                                    "too: they never reach the NIC."),
                   (lambda g, n: g * n / (n - 1), "The other way round: the NIC carries fewer "
                                                  "bytes than the logical figure."),
                   (lambda g, n: g * (n - 1) / n / 8, "The answer stays in GB/s.")],
         hint="what share of a token's destination nodes is its own node, with uniform routing?")
register("03.6", _cost_ratio, rtol=0.02,
         mistakes=[(lambda e: 1.0, "Below 2,048 GPUs both build the same tree; 8,192 needs "
                                   "more than one two-layer plane.")],
         hint="read both curves of the cost panel at 8,192 GPUs.")
register("03.7", _tpot_400_ms, unit="ms", rtol=0.02,
         mistakes=[(lambda e: 14.76 * 50 / 400, "That is the bytes alone: add 3.7 µs for every "
                                                "dispatch and every combine."),
                   (lambda e: 14.76 * 50 / 400 + 122 * 3.7e-3, "Each micro-batch has a dispatch "
                                                               "and a combine: 244 exchanges.")],
         hint="the bytes scale as 1 / bandwidth; the latencies do not.")
register("03.4", _cap_ratio, rtol=0.04,
         mistakes=[(lambda e: 1.0, "Look at the IB copies per token in the bytes figure: do "
                                   "they change with M?")],
         hint="the NIC binds at the defaults: compare IB copies per token at M = 4 and M = 8.")

#: The worked solutions of the notebook's <details> blocks (tests/test_exercises.py checks them).
SOLUTIONS = {"03.1a": 22176, "03.1b": 14784, "03.2": 3.6, "03.3": "c", "03.4": 1.33,
             "03.5": lambda logical, n_nodes: logical * (n_nodes - 1) / n_nodes,
             "03.6": 1.7, "03.7": 2.75}

#: Answers from the neighbouring regime, which the checkers must reject.
REGIME_NEIGHBOURS = {
    "03.4": [1.0, 1.16, 1.5],  # no change; NVLink-bound guess; too much
    "03.5": [lambda logical, n_nodes: logical,
             lambda logical, n_nodes: logical * n_nodes / (n_nodes - 1)],
    "03.7": [1.85, 2.3, 14.76],  # bytes only; half the exchanges; 50 GB/s
}
