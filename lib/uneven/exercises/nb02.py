"""Notebook 02 (ByteScale): a long sequence, a static DP x CP mesh and a pooled one."""

from __future__ import annotations

from . import register

#: The NIC rate (Gb/s) of exercise 02.2: twice the Fig. 18 calibration's effective 85 Gb/s.
FAST_NIC_GBPS = 170.0


def _ring_bytes(L, N, n_kv, d_head, b):
    # bytes one rank of a ring of N sends in one layer's forward over a sequence of L tokens
    from ..ring_attention import kv_bytes_per_token, ring_volume

    return ring_volume(L, N, kv_bytes_per_token(n_kv, d_head, b))


def _draw_ring(rng):
    # 1K..4M tokens, rings of 2..1,024 ranks, 1..64 KV heads of 64..256, FP8 to FP32
    return (int(rng.integers(1, 4097)) * 1024, int(rng.integers(2, 1025)),
            int(rng.choice([1, 2, 4, 8, 16, 32, 64])), int(rng.choice([64, 96, 128, 256])),
            int(rng.choice([1, 2, 4])))


def _explorer_speedup(nic_gbps=FAST_NIC_GBPS):
    # The explorer's defaults (the Fig. 18 calibration) with the NIC at nic_gbps: balanced HDP
    # over the static mesh.
    from ..explorers.nb02 import bytescale_state

    return bytescale_state(nic_gbps=nic_gbps).speedups["balanced HDP"]


def _ranks_300k():
    # C = 8K, the case study's static mesh (2M context): ranks a 300,000-token sequence uses.
    import math

    from ..schedulers.sequences import HdpSetup, select_ranks

    setup = HdpSetup()
    n, _ = select_ranks([300_000], setup)
    assert int(n[0]) == math.ceil(300_000 / setup.capacity)
    return (int(n[0]), setup.d_cp)


def _pack_ratio():
    # attention alpha s**2 per sequence: one 32K sequence over sixteen of 2K
    return 32768**2 / (16 * 2048**2)


register("02.1", _ring_bytes, kind="function", params=("L", "N", "n_kv", "d_head", "b"),
         unit="bytes", rtol=1e-9, atol=1e-6, draw=_draw_ring,
         examples=[(2**20, 8, 8, 128, 2), (2**21, 256, 8, 128, 2)],
         solution="(N - 1) * (L / N) * 2 * n_kv * d_head * b",
         mistakes=[(lambda L, N, h, d, b: L * 2 * h * d * b,
                    "A rank keeps its own block: it forwards N − 1 blocks of L / N tokens, not "
                    "the whole sequence."),
                   (lambda L, N, h, d, b: (N - 1) * (L / N) * h * d * b,
                    "K and V both travel: two vectors per token and KV head."),
                   (lambda L, N, h, d, b: 2 * (N - 1) * (L / N) * 2 * h * d * b,
                    "That is the backward pass, where the KV gradients travel too; the forward "
                    "sends half of it.")],
         hint="count the blocks a rank forwards, the tokens in a block, and the bytes of one "
              "token's K and V.")
register("02.2", _explorer_speedup, rtol=0.04,
         mistakes=[(lambda e: _explorer_speedup(85.0), "That is the calibrated 85 Gb/s: move the "
                                                       "NIC slider to 170.")],
         hint="which scheme's step is bound by the ring's transfers, and which is not?")
register("02.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("b", "A mean over each micro-batch's own tokens weights a token by the size "
                         "of the micro-batch it landed in, and by how many its rank ran."),
                   ("a", "The all-reduce averages whatever the ranks computed; it cannot undo an "
                         "unequal weighting inside a rank.")])
register("02.4", _ranks_300k, kind="exact",
         mistakes=[(lambda e: (e[0] - 1, e[1]), "Can the last rank's piece be left out? Round "
                                                "the division the other way."),
                   (lambda e: (e[0], e[0]), "The static mesh splits every sequence over its whole "
                                            "CP group, whatever its length.")],
         hint="HDP: the fewest ranks whose capacity holds the sequence. The static mesh: the CP "
              "degree fixed for the longest sequence.")
register("02.5", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "The buckets hold equal work by construction (19 s each here)."),
                   ("c", "Both rules run with δ = 0 in the example.")])
register("02.6", _pack_ratio, rtol=0.01,
         mistakes=[(lambda e: 1.0, "Equal tokens: that is what a token count sees, not what "
                                   "attention costs."),
                   (lambda e: e * e, "Each sequence costs s², not s⁴: square the length once.")],
         hint="attention grows as the square of each sequence's own length.")


#: The worked solutions of the notebook's <details> blocks (02.1: the function's expression).
SOLUTIONS = {"02.1": lambda L, N, n_kv, d_head, b: (N - 1) * (L / N) * 2 * n_kv * d_head * b,
             "02.2": 1.65, "02.3": "c", "02.4": (37, 256), "02.5": "b", "02.6": 16.0}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "02.1": [lambda L, N, n_kv, d_head, b: L * 2 * n_kv * d_head * b,
             lambda L, N, n_kv, d_head, b: (N - 1) * L * 2 * n_kv * d_head * b,
             lambda L, N, n_kv, d_head, b: 2 * (N - 1) * (L / N) * 2 * n_kv * d_head * b],
    # 85 Gb/s; the Fig. 6a ranks' 2.34; the static step halved outright; no speed-up; a
    # speed-up that doubles
    "02.2": [2.37, 2.34, 1.19, 1.0, 4.74],
    "02.3": ["a", "b", "d"],
    "02.4": [(36, 256), (37, 37), (37, 128), (256, 256)],
    "02.5": ["a", "c", "d"],
    "02.6": [1.0, 4.0, 256.0],
}
