"""Notebook 06 (UBEP): inside a superpod, barriers and hop distance set the time."""

from __future__ import annotations

from . import register


def _hop_ratio():
    # EP32 (two nodes of 16 dies), 8 copies from every die to every die, 8 sending cores:
    # the slowest core's send time, contiguous over hop mix.
    from ..ep.superpod import CoreCosts, phase_plan, scheme, uniform_traffic

    t = uniform_traffic(32, 8)
    c = CoreCosts(cores=8)
    naive = phase_plan(t, c, scheme("baseline")).send_time[0].max()
    mix = phase_plan(t, c, scheme("baseline", assignment="hop_mix")).send_time[0].max()
    return naive / mix


def _hop_ratio_latency_only(expected):
    # The same ratio when a write costs only its latency (no bytes term).
    from ..ep.superpod import CoreCosts

    lat = CoreCosts().hop_latency
    return 32 * lat[2] / (lat[0] + 15 * lat[1] + 16 * lat[2])


def _flat_fabric_ubep_us():
    # The explorer at EP64 with every hop as cheap as a local access and no jitter.
    from ..explorers.nb06 import ubep_state

    return ubep_state(hop_ratio=1.0, jitter_us=0.0).ubep.latency * 1e6


def _flat_fabric_writes_only_us(expected):
    # The slowest sending core's block writes alone, each as cheap as a local one: 1,024 copies
    # dealt over 47 senders give the busiest 22 copies of 15 blocks.
    from ..ep.superpod import CoreCosts, blocks_per_copy

    c = CoreCosts()
    copies = -(-128 * 8 // (c.cores - 1))
    return copies * blocks_per_copy(7172) * c.write_time(0, 512) * 1e6


def _default_ubep_us(expected):
    from ..explorers.nb06 import ubep_state

    return ubep_state(jitter_us=0.0).ubep.latency * 1e6


def _combine_blocks():
    # A BF16 combine copy (hidden 7,168) in 256-byte atomic blocks, an 8-byte flag in each.
    from ..ep.superpod import blocks_per_copy

    return blocks_per_copy(2 * 7168, 256, 8, True)


def _combine_blocks_payload_only(expected):
    from ..ep.superpod import blocks_per_copy

    return blocks_per_copy(2 * 7168, 256, 8, False)


register("06.1", _hop_ratio, rtol=0.01,
         mistakes=[(_hop_ratio_latency_only, "Each write also pushes its 512 bytes through the "
                                             "core: add that time to every write.")],
         hint="the contiguous cores that get only far copies hold n / C of them; with the hop "
              "mix every core holds n_h / C of each class.")
register("06.2", _flat_fabric_ubep_us, unit="µs", rtol=0.02,
         mistakes=[(_default_ubep_us, "That is UBEP at the default hop costs: set the two-hop / "
                                      "local latency slider to 1."),
                   (_flat_fabric_writes_only_us, "That is the slowest core's writes alone: add "
                                                 "the last write's flight and the poll.")],
         hint="set the jitter to 0 and the two-hop / local latency to 1, keep the rest at the "
              "defaults, and read UBEP's latency in its panel title.")
register("06.3", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Try larger jitter in decode_steps: the two gains still move together.")])
register("06.4", _combine_blocks, kind="exact",
         mistakes=[(_combine_blocks_payload_only, "14,336 bytes fill 56 blocks of 256 bytes "
                                                  "exactly: where do the 8-byte flags go?"),
                   (lambda e: _combine_blocks_payload_only(e) + 1,
                    "One extra block is what the flags cost at 512 bytes: add up the flag bytes "
                    "at 256.")],
         hint="each block carries 256 − 8 bytes of payload.")


#: The worked solutions of notebook 06's <details> blocks.
SOLUTIONS = {"06.1": 1.27, "06.2": 52.4, "06.3": "b", "06.4": 58}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "06.1": [1.0, 1.42, 1.17, 2.0],  # no difference; latency only; EP64's far share; all far
    "06.2": [92.8, 143.0, 26.2, 104.8, 51.3],  # the baseline; UBEP at default hops; x2 slips;
    # the slowest core's writes without the last flight and the poll
    "06.4": [56, 57, 59, 29, 15],  # payload only; one flag block; off by one; 512-B blocks; INT8
}
