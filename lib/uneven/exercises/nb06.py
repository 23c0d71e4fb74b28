"""Notebook 06 (UBEP): inside a superpod a dispatch is mostly waiting, for far writes and for
barriers."""

from __future__ import annotations

from . import register

#: Exercise 06.1's fixed inputs: 15 blocks of 512 B per copy (an INT8 token copy), the
#: library's hop latencies and a core's share of the die's bandwidth.
BLOCKS, BLOCK_BYTES = 15, 512


def _q():
    # the writes in flight the notebook uses: fitted to CloudMatrix384's dispatch
    from ..explorers.nb06 import fitted_q

    return fitted_q()


def _core_us(n0, n1, n2, q):
    # µs one core spends on n_h copies of hop class h, q writes in flight
    from ..ep.superpod import CoreCosts, core_write_time

    return core_write_time([n0, n1, n2], CoreCosts(writes_in_flight=q), BLOCKS,
                           BLOCK_BYTES) * 1e6


def _draw_core(rng):
    return (int(rng.integers(0, 201)), int(rng.integers(0, 201)), int(rng.integers(0, 201)),
            int(rng.integers(1, 33)))


_LAT = (0.12, 0.60, 1.38)  # µs
_PUSH = BLOCK_BYTES / (392e9 / 96) * 1e6  # µs to push one block at a core's share


def _no_bytes(n0, n1, n2, q):
    return sum(n * BLOCKS * lat / q for n, lat in zip((n0, n1, n2), _LAT, strict=True))


def _bytes_over_q(n0, n1, n2, q):
    return sum(n * BLOCKS * (lat + _PUSH) / q for n, lat in zip((n0, n1, n2), _LAT, strict=True))


def _per_copy(n0, n1, n2, q):
    return sum(n * (lat / q + _PUSH) for n, lat in zip((n0, n1, n2), _LAT, strict=True))


def _latency_not_shared(n0, n1, n2, q):
    return sum(n * BLOCKS * (lat + _PUSH) for n, lat in zip((n0, n1, n2), _LAT, strict=True))


def _hop_ratio():
    # EP32 (two nodes of 16 dies), 8 copies from every die to every die, 8 sending cores, the
    # notebook's q: the slowest core's send time, contiguous over hop mix.
    from ..ep.superpod import CoreCosts, phase_plan, scheme, uniform_traffic

    t = uniform_traffic(32, 8)
    c = CoreCosts(cores=8, writes_in_flight=_q())
    naive = phase_plan(t, c, scheme("baseline")).send_time[0].max()
    mix = phase_plan(t, c, scheme("baseline", assignment="hop_mix")).send_time[0].max()
    return naive / mix


def _hop_ratio_latency_only(expected):
    # The same ratio when a write costs only its latency (no bytes term).
    from ..ep.superpod import CoreCosts

    lat = CoreCosts().hop_latency
    return 32 * lat[2] / (lat[0] + 15 * lat[1] + 16 * lat[2])


def _hop_ratio_library_q(expected):
    # The ratio at the unfitted guess q = 4 instead of the fitted q.
    from ..ep.superpod import CoreCosts, phase_plan, scheme, uniform_traffic

    t = uniform_traffic(32, 8)
    c = CoreCosts(cores=8, writes_in_flight=4)
    return (phase_plan(t, c, scheme("baseline")).send_time[0].max()
            / phase_plan(t, c, scheme("baseline", assignment="hop_mix")).send_time[0].max())


def _flat_fabric_ubep_us():
    # The explorer at its defaults (EP64, the fitted q) with every hop as cheap as a local
    # access and no jitter.
    from ..explorers.nb06 import ubep_state

    return ubep_state(hop_ratio=1.0, jitter_us=0.0, writes_in_flight=_q()).ubep.latency * 1e6


def _flat_fabric_writes_only_us(expected):
    # The slowest sending core's block writes alone, each as cheap as a local one: 1,024 copies
    # dealt over 47 senders give the busiest 22 copies of 15 blocks.
    from ..ep.superpod import CoreCosts, blocks_per_copy

    c = CoreCosts(writes_in_flight=_q())
    copies = -(-128 * 8 // (c.cores - 1))
    return copies * blocks_per_copy(7172) * c.write_time(0, 512) * 1e6


def _default_ubep_us(expected):
    from ..explorers.nb06 import ubep_state

    return ubep_state(jitter_us=0.0, writes_in_flight=_q()).ubep.latency * 1e6


def _flat_fabric_library_q_us(expected):
    from ..explorers.nb06 import ubep_state

    return ubep_state(hop_ratio=1.0, jitter_us=0.0, writes_in_flight=4).ubep.latency * 1e6


def _combine_blocks():
    # A BF16 combine copy (hidden 7,168) in 256-byte atomic blocks, an 8-byte flag in each.
    from ..ep.superpod import blocks_per_copy

    return blocks_per_copy(2 * 7168, 256, 8, True)


def _combine_blocks_payload_only(expected):
    from ..ep.superpod import blocks_per_copy

    return blocks_per_copy(2 * 7168, 256, 8, False)


register("06.1", _core_us, kind="function", params=("n0", "n1", "n2", "q"), unit="µs",
         rtol=1e-3, atol=1e-9, draw=_draw_core, examples=[(1, 15, 16, 7), (32, 0, 0, 4)],
         solution="15 * (n0 * (0.12 / q + 512 * 96 / 392e3) + n1 * (0.60 / q + 512 * 96 / 392e3)"
                  " + n2 * (1.38 / q + 512 * 96 / 392e3))",
         mistakes=[(_no_bytes, "Each block write also pushes its 512 bytes through the core: "
                               "add that time to every write."),
                   (_bytes_over_q, "Writes in flight overlap the waiting, not the pushing: "
                                   "only the latency is divided by q."),
                   (_per_copy, "A copy is 15 block writes, each paying its latency share and "
                               "its bytes."),
                   (_latency_not_shared, "With q writes outstanding a core waits only 1/q of "
                                         "each write's latency.")],
         hint="per block write: the hop class's latency over the writes in flight, plus 512 B "
              "at the core's bandwidth; 15 of them per copy.")
register("06.2", _hop_ratio, rtol=0.01,
         mistakes=[(_hop_ratio_latency_only, "Each write also pushes its 512 bytes through the "
                                             "core: add that time to every write."),
                   (_hop_ratio_library_q, "That is at the unfitted q = 4; the fitted q gives the "
                                          "per-write costs the exercise states.")],
         hint="the contiguous cores that get only far copies hold n / C of them; with the hop "
              "mix every core holds n_h / C of each class.")
register("06.3", _flat_fabric_ubep_us, unit="µs", rtol=0.02,
         mistakes=[(_default_ubep_us, "That is UBEP at the default hop costs: set the two-hop / "
                                      "local latency slider to 1."),
                   (_flat_fabric_writes_only_us, "That is the slowest core's writes alone: add "
                                                 "the last write's flight and the poll."),
                   (_flat_fabric_library_q_us, "That is at q = 4: leave the writes-in-flight "
                                               "slider where the explorer opens.")],
         hint="set the jitter to 0 and the two-hop / local latency to 1, keep the rest at the "
              "defaults, and read UBEP's latency in its panel title.")
register("06.4", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Compare the slow-die model's P99 with the light model's: the slow "
                         "dies are what sets it."),
                   ("d", "Look at the absolute gaps: UBEP saves about as many milliseconds at "
                         "P99 as at P50.")])
register("06.5", _combine_blocks, kind="exact",
         mistakes=[(_combine_blocks_payload_only, "14,336 bytes fill 56 blocks of 256 bytes "
                                                  "exactly: where do the 8-byte flags go?"),
                   (lambda e: _combine_blocks_payload_only(e) + 1,
                    "One extra block is what the flags cost at 512 bytes: add up the flag bytes "
                    "at 256.")],
         hint="each block carries 256 − 8 bytes of payload.")


#: The worked solutions of notebook 06's <details> blocks (06.1: the function's expression).
SOLUTIONS = {"06.1": lambda n0, n1, n2, q: 15 * (n0 * (0.12 / q + 512 * 96 / 392e3)
                                                 + n1 * (0.60 / q + 512 * 96 / 392e3)
                                                 + n2 * (1.38 / q + 512 * 96 / 392e3)),
             "06.2": 1.22, "06.3": 48.2, "06.4": "b", "06.5": 58}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "06.1": [_no_bytes, _bytes_over_q, _per_copy, _latency_not_shared],
    "06.2": [1.0, 1.42, 1.27, 2.0],  # no difference; latency only; q = 4; all far
    "06.3": [88.5, 100.5, 47.0, 52.4, 96.3],  # the baseline; UBEP at default hops; the writes
    # alone; q = 4; twice
    "06.5": [56, 57, 59, 29, 15],  # payload only; one flag block; off by one; 512-B blocks; INT8
}
