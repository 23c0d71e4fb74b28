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


def _cap_ratio():
    # The explorer's defaults, node cap M = 8 against M = 4: dispatch time ratio.
    from ..explorers.nb03 import deepseek_state

    return deepseek_state(max_nodes=8).dispatch_time / deepseek_state(max_nodes=4).dispatch_time


register("03.1a", lambda: _network_bytes("direct"), unit="bytes", rtol=1e-6,
         mistakes=[(lambda e: e * 4 / 3, "The expert on the token's own node is reached over "
                                         "NVLink.")],
         hint="count the expert GPUs that are not on the token's own node.")
register("03.1b", lambda: _network_bytes("relay"), unit="bytes", rtol=1e-6,
         mistakes=[(lambda e: e * 3 / 2, "That is one copy per expert GPU: how many other "
                                         "nodes are there?")],
         hint="count the other nodes, not the GPUs.")
register("03.2", _fanout_limit, rtol=0.01,
         mistakes=[(lambda e: e / 8, "Mind Gb/s against GB/s: 400 Gb/s is 50 GB/s."),
                   (lambda e: e * 2, "180 GB/s is already per direction.")],
         hint="how many copies drain through NVLink while one drains through the NIC?")
register("03.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Count the GPUs a forwarder can copy to inside an 8-GPU node.")])
register("03.4", _cap_ratio, rtol=0.04,
         mistakes=[(lambda e: 1.0, "Look at the IB copies per token in the bytes figure: do "
                                   "they change with M?")],
         hint="the NIC binds at the defaults: compare IB copies per token at M = 4 and M = 8.")

#: The worked solutions of the notebook's <details> blocks (tests/test_exercises.py checks them).
SOLUTIONS = {"03.1a": 22176, "03.1b": 14784, "03.2": 3.6, "03.3": "c", "03.4": 1.33}

#: Answers from the neighbouring regime, which the checkers must reject.
REGIME_NEIGHBOURS = {
    "03.4": [1.0, 1.16, 1.5],  # no change; NVLink-bound guess; too much
}
