"""Notebook 05 (Balancing and Beyond): hot experts, the NICs behind them, one copy per host."""

from __future__ import annotations

from functools import lru_cache

from . import register

#: MoE layers per decode step: DeepSeek-V3 has 61 layers, the first 3 dense.
MOE_LAYERS = 58
#: The NIC bandwidth (Gb/s) of exercise 05.2: half of H20's 400 Gb/s.
SLOW_NIC_GBPS = 200.0


def _relay_copies(n_hosts, k):
    from ..ep.transport import expected_remote_hosts

    return expected_remote_hosts(k, n_hosts)  # each expert's host drawn independently


def _draw_hosts(rng):
    # 2..64 hosts, top-1..16 routing
    return (int(rng.integers(2, 65)), int(rng.integers(1, 17)))


def _relay_speedup(nic_gbps=SLOW_NIC_GBPS):
    # The explorer's defaults with slower NICs: layer time with one copy per expert over layer
    # time with one copy per host.
    from ..explorers.nb05 import balancing_state

    return (balancing_state(mode="direct", nic_gbps=nic_gbps).layer_time
            / balancing_state(mode="relay", nic_gbps=nic_gbps).layer_time)


@lru_cache(maxsize=1)
def _section3_layer_time():
    # Section 3's run with swaps: its median layer time (s)
    from ..ep.decode import DecodeSetup, simulate_decode

    return simulate_decode(DecodeSetup(), placement="NIC-aware", swaps=True, n_steps=120,
                           seed=0).median()


def _swap_copy_time():
    from ..ep.decode import H20_DECODE

    # a GPU in a swap sends one expert and receives one: opposite directions of its NVLink port,
    # at the same time
    return H20_DECODE.expert_bytes / H20_DECODE.nvlink_bw


def _swaps_per_step():
    # swaps one GPU could take part in while the swapped layer waits for the next step
    return MOE_LAYERS * _section3_layer_time() / _swap_copy_time()


register("05.1", _relay_copies, kind="function", params=("H", "k"), unit="copies per token",
         rtol=1e-6, atol=1e-9, draw=_draw_hosts, examples=[(8, 8), (4, 8)],
         solution="(H - 1) * (1 - (1 - 1 / H) ** k)",
         mistakes=[(lambda h, k: k * (h - 1) / h, "That is one copy per remote expert, "
                                                  "k(H − 1)/H: the relay sends one per remote "
                                                  "host."),
                   (lambda h, k: h * (1 - (1 - 1 / h) ** k), "Count only the other hosts: the "
                                                             "token's own host needs no RDMA "
                                                             "copy.")],
         hint="a remote host needs a copy unless all k experts miss it.")
register("05.2", _relay_speedup, rtol=0.04,
         mistakes=[(lambda e: 6.0 / 2.70, "That is the ratio of RDMA copies alone: the experts' "
                                          "time and the fixed costs do not shrink."),
                   (lambda e: 1.0, "Look at the NIC bars: one copy per host changes them."),
                   (lambda e: _relay_speedup(400.0), "That is the ratio at 400 Gb/s: set the "
                                                     "NIC slider to 200.")],
         hint="set the NIC slider to 200 Gb/s, switch 'copies' and read the layer times in the "
              "title.")
register("05.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Host 0's own tokens reach its experts over NVLink: which copies "
                         "enter host 0's NICs from the other hosts?"),
                   ("d", "That is Section 4's case: moving experts inside host 0 left the "
                         "relay's NIC loads as they were.")])
register("05.4", _swaps_per_step, unit="swaps per GPU per step", rtol=0.05,
         mistakes=[(lambda e: e / 2, "The two experts of a swap cross NVLink in opposite "
                                     "directions at the same time, and 450 GB/s is per "
                                     "direction."),
                   (lambda e: 2 * e, "NVLink's 900 GB/s counts both directions together: one "
                                     "expert moves at 450 GB/s."),
                   (lambda e: e / MOE_LAYERS, "A swapped expert is needed again only when its "
                                              "layer runs in the next step: the copy has the "
                                              "whole step, all 58 MoE layers."),
                   (lambda e: e / 8, "Mind GB/s against Gb/s: NVLink's figure is in bytes.")],
         hint="the time the copy may take, over the time one swap keeps a GPU's NVLink port busy.")


#: Exercise 05.5: EP64 on H20 (8 hosts of 8 GPUs), one spare slot per GPU.
EP64_HOSTS, EP64_SLOTS, EXPERT_GROUPS = 8, 320, 8


def _ep64_nic_ratio(n_groups=EXPERT_GROUPS, n_slots=EP64_SLOTS, level="nic"):
    # Section 1's expected load, placed by EPLB on 8 hosts; busiest / mean at one level
    from ..ep.decode import DecodeSetup
    from ..ep.placement import (
        gpu_loads,
        host_loads,
        nic_loads,
        placement_from_phy2log,
        rebalance_experts,
    )
    from ..explorers.nb05 import step_skew

    setup = DecodeSetup()
    load = step_skew(setup).load
    n_gpus = EP64_HOSTS * setup.hw.gpus_per_node
    nodes = EP64_HOSTS if n_groups > 1 else 1
    phy2log = rebalance_experts(load[None], n_slots, n_groups, nodes, n_gpus)[0][0]
    p = placement_from_phy2log(phy2log, setup.n_experts, n_gpus,
                               gpus_per_node=setup.hw.gpus_per_node,
                               gpus_per_nic=setup.hw.gpus_per_nic)
    per = {"nic": nic_loads, "gpu": gpu_loads, "host": host_loads}[level](p, load)
    return float(per.max() / per.mean())


@lru_cache(maxsize=1)
def _matched_setup():
    # Section 6's calibration: the batch where the model's DeepEP default exposes 190.21 µs
    from ..ep.decode import DecodeSetup, matching_batch
    from ..explorers.nb05 import PAPER_COMM

    batch, _ = matching_batch(PAPER_COMM[0] * 1e-6, lo=1, hi=64, placement="contiguous")
    return DecodeSetup(tokens_per_gpu=batch)


@lru_cache(maxsize=2)
def _relay_cost_us(cost="relay_copy"):
    # the relay cost (µs) at which all mechanisms expose the paper's 134.00 µs
    from ..ep.decode import relay_cost_for
    from ..explorers.nb05 import ABLATION, PAPER_COMM, TRANSPORTS

    kw = dict(ABLATION[-1][1])
    kw["transport"] = TRANSPORTS[kw["transport"]]
    return 1e6 * relay_cost_for(PAPER_COMM[1] * 1e-6, _matched_setup(), cost=cost, **kw)


register("05.5", _ep64_nic_ratio, unit="busiest NIC / mean", rtol=0.004,
         mistakes=[(lambda e: _ep64_nic_ratio(n_groups=1), "That is the global policy (one "
                                                           "group, one node): the question asks "
                                                           "for the hierarchical one."),
                   (lambda e: _ep64_nic_ratio(level="gpu"), "That is the busiest GPU: add up "
                                                            "the two GPUs behind each NIC."),
                   (lambda e: _ep64_nic_ratio(level="host"), "That is the busiest host: a NIC "
                                                             "serves two of its GPUs."),
                   (lambda e: _ep64_nic_ratio(n_slots=256), "That is with no spare slots: "
                                                            "use 320.")],
         hint="rebalance_experts(load[None], 320, 8, 8, 64), then placement_from_phy2log and "
              "nic_loads.")
register("05.6", _relay_cost_us, unit="µs per forwarded copy", rtol=0.03,
         mistakes=[(lambda e: 1000 * e, "Give it in µs, not ns."),
                   (lambda e: e * 1e-6, "Give it in µs, not seconds."),
                   (lambda e: _relay_cost_us("relay_sync"), "That is the sync per crossing "
                                                            "that Section 6 solved for: this "
                                                            "time the sync is free and each "
                                                            "forwarded copy costs.")],
         hint="relay_cost_for(134e-6, setup, cost='relay_copy', ...) with the last rung's "
              "keywords, at Section 6's matched batch.")


#: The worked solutions of notebook 05's <details> blocks.
def _copies_solution(H, k):  # noqa: N803 - the page's symbol
    return (H - 1) * (1 - (1 - 1 / H) ** k)


SOLUTIONS = {"05.1": _copies_solution, "05.2": 1.71, "05.3": "c", "05.4": 370.0,
             "05.5": 1.14, "05.6": 0.81}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    # one copy per remote expert; own host counted; k experts on k distinct hosts; the number
    "05.1": [lambda h, k: k * (h - 1) / h, lambda h, k: h * (1 - (1 - 1 / h) ** k),
             lambda h, k: min(k, h - 1), lambda h, k: 4.59],
    # no change; the byte ratio alone; the 400 Gb/s ratio (on screen in Section 5 and the
    # explorer's default); too much
    "05.2": [1.0, 2.22, 1.38, 1.9],
    # host 0's own tokens; NVLink speed; Section 4's case again; two letters
    "05.3": ["a", "b", "d", "a, c"],
    # copies serialised; 900 GB/s per direction; one layer only; Gb/s; 98 (the copy time in µs)
    "05.4": [185.0, 741.0, 6.4, 46.0, 98.0],
    # global policy; busiest GPU; busiest host; no spare slots
    "05.5": [1.003, 1.156, 1.132, 1.748],
    # the sync of Section 6 (µs); where the relay stops paying (relay rung, last rung); in ns
    "05.6": [47.0, 0.27, 0.004, 814.0],
}
