"""Notebook 02 (ByteScale): a long sequence, a static DP x CP mesh and a pooled one."""

from __future__ import annotations

from . import register


def _ring_gb():
    # A 1M-token sequence (2**20) on a ring of 8 ranks, GQA with 8 KV heads of 128, BF16:
    # bytes each rank sends in one layer's forward, in GB.
    from ..ring_attention import kv_bytes_per_token, ring_volume

    return ring_volume(2**20, 8, kv_bytes_per_token(8, 128, 2)) / 1e9


def _explorer_speedup(nic_gbps=800.0):
    # The explorer's defaults with the NIC at 800 Gb/s: balanced HDP over the static mesh.
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


register("02.1", _ring_gb, unit="GB", rtol=0.01,
         mistakes=[(lambda e: e / 2, "K and V both travel: two vectors per token and head."),
                   (lambda e: e * 8 / 7, "A rank keeps its own block: it forwards N − 1 blocks, "
                                         "not N."),
                   (lambda e: e / 1.073741824, "That is GiB; the question asks for GB (10⁹ "
                                               "bytes).")],
         hint="count the blocks a rank forwards and the bytes of one token's K and V.")
register("02.2", _explorer_speedup, rtol=0.04,
         mistakes=[(lambda e: _explorer_speedup(400.0), "That is the 400 Gb/s default: move "
                                                        "the NIC slider.")],
         hint="which scheme's step is bound by the ring's transfers, and which is not?")
register("02.3", lambda: "c", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("b", "A mean over each micro-batch's own tokens weights a token by the size "
                         "of the micro-batch it landed in, and by how many its rank ran."),
                   ("a", "The all-reduce averages whatever the ranks computed; it cannot undo an "
                         "unequal weighting inside a rank.")])
register("02.4", _ranks_300k, kind="exact",
         mistakes=[(lambda e: (e[0] - 1, e[1]), "Round up: 36 ranks hold only 294,912 tokens."),
                   (lambda e: (e[0], e[0]), "The static mesh splits every sequence over its whole "
                                            "CP group, whatever its length.")],
         hint="HDP: ceil(s / C). The static mesh: the CP degree fixed for the longest sequence.")


#: The worked solutions of the notebook's <details> blocks.
SOLUTIONS = {"02.1": 3.76, "02.2": 1.65, "02.3": "c", "02.4": (37, 256)}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "02.1": [4.29, 1.88, 3.5, 7.5],  # N blocks; K or V only; GiB; backward
    # 400 Gb/s, or both steps shrinking alike; 100 Gb/s (= 32 KV heads, printed in Section 6);
    # the static step halved outright; no speed-up; naive HDP's; a speed-up that doubles
    "02.2": [2.34, 3.69, 1.17, 1.0, 0.87, 4.7],
    "02.3": ["a", "b", "d"],
    "02.4": [(36, 256), (37, 37), (37, 128), (256, 256)],
}
