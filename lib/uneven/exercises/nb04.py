"""Notebook 04 (MegaScale-MoE): keep EP and SP inside the node, hide the all-to-all in the GEMM."""

from __future__ import annotations

from . import register


def _sp_volume_mb():
    # b = 2, s = 4,096, h = 5,120, 40 query heads over 8 KV heads (m = 5), n = 8, BF16.
    from ..parallel_volumes import MoeShape, comm_volume

    shape = MoeShape("exercise", hidden=5120, heads=40, kv_heads=8, ffn_hidden=13824,
                     n_experts=16, top_k=2, seq_len=4096, micro_batch=2)
    return comm_volume(shape, 8, "attention", "sp") * 2 / 1e6


def _hiding_ratio_rack():
    # 2,250 TFLOPS dense BF16, NVLink 1.8 TB/s counted in both directions, h_ffn = 2,048.
    from ..overlap import hiding_ratio

    return hiding_ratio(2048, 1.8e12 / 2, 2250e12)


def _order_cost_ms():
    # The explorer's defaults with k = 5 and inter-operator overlap off: random minus sorted
    # layer time.
    from ..explorers.nb04 import megascale_state

    kw = dict(inter_op=False, intra_op=True, n_tiles=16, k=5)
    rand = megascale_state(order="random", **kw).timeline.layer_time
    return (rand - megascale_state(order="sorted", **kw).timeline.layer_time) * 1e3


register("04.1", _sp_volume_mb, unit="MB", rtol=0.02,
         mistakes=[(lambda e: 2 * e, "That is the paper's printed Eq. 2. Count each tensor once: "
                                     "what does one GPU send in the two all-to-alls?"),
                   (lambda e: e * 8 / 7, "A GPU keeps its own shard: only (n − 1)/n of it "
                                         "leaves."),
                   (lambda e: e / 2, "BF16 is 2 bytes per value.")],
         hint="write down the shapes a GPU holds before and after attention and the share it "
              "keeps.")
register("04.2", _hiding_ratio_rack, rtol=0.03,
         mistakes=[(lambda e: 2 * e, "1.8 TB/s counts both directions; a dispatch uses one.")],
         hint="R ≈ 1.5 · h_ffn · bandwidth per direction / peak.")
register("04.3", _order_cost_ms, unit="ms", rtol=0.07,
         mistakes=[(lambda e: e / 2, "The backward pass has an all-to-all feeding the expert "
                                     "GEMMs too.")],
         hint="with random order, which fused GEMMs must wait for (almost) all of their "
              "transfer, and how long is that transfer once each token goes to 5 experts?")
register("04.4", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("c", "R does not depend on k: the expert work and the bytes both grow with "
                         "it."),
                   ("d", "Work out R in BF16 across the NIC for h_ffn = 2,048.")])


#: The worked solutions of the notebook's <details> blocks.
SOLUTIONS = {"04.1": 22.02, "04.2": 1.23, "04.3": 0.66, "04.4": "b"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    "04.1": [44.04, 25.17, 11.01, 18.35],  # printed Eq. 2; no (n-1)/n; values not bytes; 352B
    "04.2": [2.46, 0.61, 1.0, 0.5],  # both directions; FP8 peak; "just hides"; H800's NVLink
    # no cost; forward only; k = 3 (the transfer time printed in Section 3, not rescaled);
    # with inter-op overlap on
    "04.3": [0.0, 0.33, 0.41, 0.59],
    "04.4": ["a", "c", "d"],
}
