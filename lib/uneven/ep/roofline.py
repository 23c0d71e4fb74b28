"""Memory- or compute-bound experts, and what that does to hiding the all-to-all behind them.

An expert that receives ``n`` tokens must read its weights once (``W`` bytes at the HBM's
bandwidth) and compute ``n`` tokens (``n · t_tok``). Its time is the larger of the two, a
roofline:

    expert_time(n) = max(W / HBM, n · t_tok)          (0 when n = 0)

Below ``n* = W / (HBM · t_tok)`` tokens the expert is **memory-bound**: its time does not shrink
with fewer tokens. Small decode batches put most experts there (notebook 05: DeepSeek-V3's
experts on an H20 cross over at about 37 tokens); training micro-batches put thousands of tokens
on every expert, far into the **compute-bound** side (notebook 04).

The all-to-all of those ``n`` tokens costs ``n · b / BW`` for ``b`` bytes per token copy
(dispatch and combine) through the link it crosses. Their ratio is the hiding ratio of
notebook 04,

    R(n) = expert_time(n) / (n · b · r / BW),

with ``r`` the share of copies that cross the link. Compute-bound, ``R`` is a constant
(MegaScale-MoE's ``1.5 · h_ffn · BW / peak`` in BF16); memory-bound it falls as ``1/n``, so
whether overlap can hide the communication — and whether its cost, the SMs it takes from the
GEMMs, is worth paying — depends on the batch. Units: seconds, bytes, bytes/s.

>>> c = EXPERT_COSTS["DeepSeek-V3 expert, H20 decode (FP8), shared NIC"]
>>> round(crossover_tokens(c))
37
>>> e = ExpertCost("toy", 1e6, 1e12, 1e-9, 1e4, 1e10, 0.5)
>>> expert_time(e, [0, 10, 1e4]).tolist(), round(roofline_hiding_ratio(e, 2000), 6)
([0.0, 1e-06, 1e-05], 0.002)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fields import Checked, real, text
from .._validate import as_float_array

_MAX_BYTES = 1e15  # bytes: the largest expert or token copy
_MAX_BW = 1e18  # bytes/s
#: Most tokens per expert :func:`expert_time` and :func:`roofline_hiding_ratio` accept.
MAX_TOKENS = 1e12

__all__ = ["ExpertCost", "EXPERT_COSTS", "expert_time", "crossover_tokens",
           "roofline_hiding_ratio", "MAX_TOKENS"]


@dataclass(frozen=True)
class ExpertCost(Checked):
    """What one expert and one token copy cost on one machine (SI units).

    ``weight_bytes``: the expert's weights, read once per step it has tokens; ``hbm_bw``:
    bytes/s; ``token_time``: s of compute per token; ``copy_bytes``: bytes of one token's
    dispatch plus combine; ``link_bw``: bytes/s per GPU of the link the all-to-all crosses;
    ``remote_fraction``: share of the copies that cross it. ``source`` says where the numbers
    come from. Checked on construction: ``weight_bytes`` in [0, 1e15], ``copy_bytes`` in
    [1, 1e15], bandwidths in [1, 1e18], ``token_time`` in [1e-15, 1e3] s, ``remote_fraction`` in
    [1e-12, 1].
    """

    name: str = text()
    weight_bytes: float = real(lo=0.0, hi=_MAX_BYTES, unit="bytes")
    hbm_bw: float = real(lo=1.0, hi=_MAX_BW, unit="bytes/s")
    token_time: float = real(lo=1e-15, hi=1e3, unit="s")
    copy_bytes: float = real(lo=1.0, hi=_MAX_BYTES, unit="bytes")
    link_bw: float = real(lo=1.0, hi=_MAX_BW, unit="bytes/s")
    remote_fraction: float = real(lo=1e-12, hi=1.0, default=1.0)
    source: str = text(default="")


def _costs():
    from ..overlap import H800
    from ..parallel_volumes import DEEPSEEK_V3, INTERNAL_352B
    from .decode import H20_DECODE, H800_DECODE

    def decode(hw, name, nic_share):
        return ExpertCost(name, hw.expert_bytes, hw.hbm_bw, hw.token_time,
                          hw.dispatch_bytes + hw.combine_bytes, hw.nic_bw / nic_share,
                          source="notebook 05's DecodeHardware (FP8 dispatch, BF16 combine)")

    def training(shape, link, name):
        h, f = shape.hidden, shape.ffn_hidden
        return ExpertCost(name, 3.0 * h * f * 2.0, 3.35e12, 6.0 * h * f / H800["bf16_flops"],
                          4.0 * h, H800[link],
                          source="notebook 04's hiding ratio: BF16 GEMMs at 989 TFLOPS, BF16 "
                                 "dispatch and combine, H800 HBM 3.35 TB/s")

    return {
        "DeepSeek-V3 expert, H20 decode (FP8), shared NIC":
            decode(H20_DECODE, "DeepSeek-V3 expert, H20 decode (FP8), shared NIC",
                   H20_DECODE.gpus_per_nic),
        "DeepSeek-V3 expert, H800 decode (FP8), NIC":
            decode(H800_DECODE, "DeepSeek-V3 expert, H800 decode (FP8), NIC", 1),
        "DeepSeek-V3 expert, H800 training (BF16), NIC":
            training(DEEPSEEK_V3, "nic_bw", "DeepSeek-V3 expert, H800 training (BF16), NIC"),
        "Internal-352B expert, H800 training (BF16), NVLink":
            training(INTERNAL_352B, "nvlink_bw",
                     "Internal-352B expert, H800 training (BF16), NVLink"),
    }


#: Four experts on four machines: decode on H20 and H800 (notebook 05), training on H800 with
#: narrow (DeepSeek-V3) and wide (MegaScale-MoE's 352B) experts (notebook 04).
EXPERT_COSTS = _costs()


def _check_cost(cost):
    if not isinstance(cost, ExpertCost):
        raise ValueError(f"cost must be an ExpertCost; got {type(cost).__name__}")
    return cost


def expert_time(cost: ExpertCost, tokens):
    """The roofline ``max(W / HBM, n · t_tok)`` (s) of an expert with ``tokens`` tokens (0 for 0
    tokens); ``tokens`` a number or an array of numbers in [0, 1e12].

    >>> c = EXPERT_COSTS["DeepSeek-V3 expert, H20 decode (FP8), shared NIC"]
    >>> round(expert_time(c, 1) * 1e6, 1), round(expert_time(c, 100) * 1e6, 1)   # µs
    (11.0, 29.8)
    """
    c = _check_cost(cost)
    n = as_float_array("tokens", tokens, lo=0.0, hi=MAX_TOKENS)
    t = np.where(n > 0, np.maximum(c.weight_bytes / c.hbm_bw, n * c.token_time), 0.0)
    return float(t.ravel()[0]) if _is_scalar(tokens) else t.reshape(np.shape(n))


def crossover_tokens(cost: ExpertCost) -> float:
    """Tokens per expert at which the expert stops being memory-bound: ``W / (HBM · t_tok)``."""
    c = _check_cost(cost)
    return c.weight_bytes / c.hbm_bw / c.token_time


def roofline_hiding_ratio(cost: ExpertCost, tokens):
    """``R(n)``: the expert's time over the time its ``n`` tokens' copies take on the link
    (``n · copy_bytes · remote_fraction / link_bw``); ``tokens`` in [1e-6, 1e12], a number or
    an array.

    >>> c = EXPERT_COSTS["Internal-352B expert, H800 training (BF16), NVLink"]
    >>> round(roofline_hiding_ratio(c, 8192), 2)     # notebook 04: 3.48 when compute-bound
    3.48
    """
    c = _check_cost(cost)
    n = as_float_array("tokens", tokens, lo=1e-6, hi=MAX_TOKENS)
    comm = n * c.copy_bytes * c.remote_fraction / c.link_bw
    r = np.asarray(expert_time(c, n)) / comm
    return float(r.ravel()[0]) if _is_scalar(tokens) else r.reshape(np.shape(n))


def _is_scalar(x) -> bool:
    return not isinstance(x, (list, tuple, np.ndarray)) or (isinstance(x, np.ndarray)
                                                            and x.ndim == 0)
