"""Notebook 04 (MegaScale-MoE): keep EP and SP inside the node, hide the all-to-all in the GEMM."""

from __future__ import annotations

from . import register


def _sp_bytes(b, s, h, m, n):
    # bytes one GPU sends in one layer's Ulysses SP all-to-alls (forward, BF16): the library's
    # count from the tensor shapes (m query heads per KV head; 8 KV heads)
    from ..parallel_volumes import MoeShape, comm_volume

    shape = MoeShape("exercise", hidden=h, heads=8 * m, kv_heads=8, ffn_hidden=h, n_experts=8,
                     top_k=2, seq_len=s, micro_batch=b)
    return comm_volume(shape, n, "attention", "sp") * 2


def _draw_sp(rng):
    # micro-batches of 1..8, 1K..32K tokens, hidden 1K..16K (a multiple of the heads), m 1..8,
    # groups of 2..16 GPUs
    m = int(rng.integers(1, 9))
    return (int(rng.integers(1, 9)), int(rng.integers(1, 33)) * 1024,
            int(rng.integers(1, 17)) * 1024, m, int(rng.integers(2, 17)))


def _hide_h_ffn():
    # the expert width at which R = 1 across one 50 GB/s NIC, BF16, forward, 989 TFLOPS:
    # R = 1.5 h_ffn BW / peak (the paper's approximation)
    return 989e12 / (1.5 * 50e9)


#: MegaScale-MoE's Table 3 [paper]: Megatron-LM at 240 GPUs, tokens/s; an iteration is 720
#: sequences of 8,192 tokens.
MEGATRON_240_TOKENS_PER_S = 151.1e3


def _implied_iteration_s():
    return 720 * 8192 / MEGATRON_240_TOKENS_PER_S


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


register("04.1", _sp_bytes, kind="function", params=("b", "s", "h", "m", "n"), unit="bytes",
         rtol=1e-9, atol=1e-6, draw=_draw_sp,
         examples=[(2, 4096, 5120, 5, 8), (1, 8192, 4096, 4, 8)],
         solution="(2 + 2 / m) * b * s * h * (n - 1) / n**2 * 2",
         mistakes=[(lambda b, s, h, m, n: 2 * (2 + 2 / m) * b * s * h * (n - 1) / n**2 * 2,
                    "That is the paper's printed Eq. 2. Count each tensor once: what does one "
                    "GPU send in the two all-to-alls?"),
                   (lambda b, s, h, m, n: (2 + 2 / m) * b * s * h / n * 2,
                    "A GPU keeps its own shard: only (n − 1)/n of it leaves."),
                   (lambda b, s, h, m, n: (2 + 2 / m) * b * s * h * (n - 1) / n**2,
                    "BF16 is 2 bytes per value.")],
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
register("04.4", _hide_h_ffn, rtol=0.02,
         mistakes=[(lambda e: e / 8, "Mind Gb/s and GB/s: 400 Gb/s is 50 GB/s."),
                   (lambda e: e / 2, "That is the backward pass, which does twice the GEMM work "
                                     "for the same bytes; the question asks for the forward.")],
         hint="set R = 1 in R ≈ 1.5 · h_ffn · bandwidth / peak.")
register("04.6", lambda: "b", kind="choice", options=("a", "b", "c", "d"),
         mistakes=[("a", "Fewer bytes would change the transfer's length, not which rows a tile "
                         "waits for."),
                   ("d", "Which side is longer sets the pair's time, not whether order "
                         "matters.")])
register("04.5", _implied_iteration_s, unit="s", rtol=0.005,
         mistakes=[(lambda e: 39.94, "That is the iteration time Table 3 prints; the question "
                                     "asks what its tokens/s imply."),
                   (lambda e: e / 8192, "An iteration is 720 sequences of 8,192 tokens each.")],
         hint="tokens per iteration over tokens per second.")


#: The worked solutions of the notebook's <details> blocks.
SOLUTIONS = {"04.1": lambda b, s, h, m, n: (2 + 2 / m) * b * s * h * (n - 1) / n**2 * 2,
             "04.2": 1.23, "04.3": 0.66, "04.4": 13187.0, "04.5": 39.04, "04.6": "b"}

#: Answers from the neighbouring regime, which must be rejected.
REGIME_NEIGHBOURS = {
    # printed Eq. 2; no (n-1)/n; values not bytes
    "04.1": [lambda b, s, h, m, n: 2 * (2 + 2 / m) * b * s * h * (n - 1) / n**2 * 2,
             lambda b, s, h, m, n: (2 + 2 / m) * b * s * h / n * 2,
             lambda b, s, h, m, n: (2 + 2 / m) * b * s * h * (n - 1) / n**2],
    "04.2": [2.46, 0.61, 1.0, 0.5],  # both directions; FP8 peak; "just hides"; H800's NVLink
    # no cost; forward only; k = 3 (the transfer time printed in Section 3, not rescaled);
    # with inter-op overlap on
    "04.3": [0.0, 0.33, 0.41, 0.59],
    # Gb/s as GB/s; backward; DeepSeek-V3's own 2,048; the 352B model's 14,336
    "04.4": [1648.0, 6593.0, 2048.0, 14336.0],
    "04.5": [39.94, 30.0, 21.61],  # Table 3's printed time; round; MegaScale-MoE's
    "04.6": ["a", "c", "d"],
}
