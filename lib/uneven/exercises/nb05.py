"""Notebook 05 (Balancing and Beyond): hot experts, the NICs behind them, one copy per host."""

from __future__ import annotations

from . import register


def _relay_copies():
    from ..ep_transport import expected_remote_hosts

    return expected_remote_hosts(8, 8)  # EP64 on H20: 8 hosts, top-8, hosts drawn independently


def _relay_speedup():
    # The explorer's defaults, one copy per expert against one copy per host: layer-time ratio.
    from ..explorers.nb05 import balance_state

    return balance_state(mode="direct").layer_time / balance_state(mode="relay").layer_time


def _swap_copy_us():
    from ..ep_decode import H20_DECODE

    # a swap exchanges two experts: the two copies cross NVLink in opposite directions at once
    return H20_DECODE.expert_bytes / H20_DECODE.nvlink_bw * 1e6


register("05.1", _relay_copies, unit="copies per token", rtol=0.01,
         mistakes=[(lambda e: 7.0, "That is one copy per remote expert, k(H − 1)/H: the relay "
                                   "sends one per remote host."),
                   (lambda e: e * 8 / 7, "Count only the other hosts: the token's own host "
                                         "needs no RDMA copy.")],
         hint="a remote host needs a copy unless all k experts miss it.")
register("05.2", _relay_speedup, rtol=0.04,
         mistakes=[(lambda e: 6.0 / 2.70, "That is the ratio of RDMA copies alone: the experts' "
                                          "time and the fixed costs do not shrink."),
                   (lambda e: 1.0, "Look at the NIC bars: one copy per host changes them.")],
         hint="switch 'copies' in the explorer and read the layer time in the title.")
register("05.3", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Fewer bytes lower every NIC, but say why the hot GPU's NIC is no "
                         "longer hotter than its neighbour.")])
register("05.4", _swap_copy_us, unit="µs", rtol=0.02,
         mistakes=[(lambda e: 2 * e, "The two copies travel in opposite directions, and NVLink's "
                                     "450 GB/s is per direction."),
                   (lambda e: 8 * e, "Mind GB/s against Gb/s: NVLink's figure is in bytes.")],
         hint="bytes of one expert's weights over NVLink's bandwidth per direction.")
