"""Placing one global batch of variable-length sequences on DP x CP (x PP) ranks.

This is the mechanism of ByteScale (Ge et al., SIGCOMM 2025; arXiv:2502.21231 v1) as a cost model
and three schedulers, timed with the timeline engine. Vocabulary (units: tokens, bytes, seconds):

* a **rank** is one tensor-parallel group of ``tp`` GPUs (one pipeline of ``pp`` stages when
  ``pp > 1``); it holds ``C`` (``capacity``) tokens of one micro-batch;
* ``d_hdp = n_gpus / (tp * pp)`` ranks; a static mesh splits them into ``d_dp`` groups of
  ``d_cp = ceil(context / C)`` (the smallest CP degree that fits the context).

Cost model (per layer, per rank, forward; :class:`CostModel`): a pack of sequences ``s_k`` on one
rank costs ``sum_k (alpha s_k**2 + beta_attn s_k) + beta_linear sum_k s_k + gamma``. Causal
attention's half square is inside ``alpha``; a pack costs ``sum s_k**2``, never
``(sum s_k)**2``. :func:`default_cost_model` fits it to the attention and MLP times ByteScale
measured (Fig. 6a, read from an OCR of the figure [fig-OCR]; hardware undisclosed) and adds the
attention projections to the MLP in proportion to their FLOPs (model). Training a layer costs three
forwards (backward = 2x forward, compute and ring traffic alike; ``HdpSetup.backward_factor``;
model). A piece of a ring of
``n`` ranks runs as in :func:`uneven.ring_attention.ring_layer_time` over the slowest hop of its
ring (NVLink inside a node, the NIC across nodes, from :meth:`HdpSetup.topology`).

Three ways to run a step (:func:`schedule_step`):

* ``"static"`` — the static mesh: every sequence is packed (best-fit decreasing) into micro-batches
  of ``d_cp * C`` tokens, and each pack is split over all ``d_cp`` ranks of one DP group with
  zig-zag chunks, so even a short sequence pays the ring; packs go to the DP groups round-robin
  (equal counts, longest packs spread first — generous to the baseline).
* ``"naive"`` — naive HDP (the paper's Alg. 1): a sequence of ``s >= C`` tokens gets
  ``ceil(s / C)`` ranks (with ``offload``, fewer: :func:`select_ranks`); shorter ones are
  best-fit packed into ``C``-token packs that run on one rank and send no ring traffic. Items
  fill rounds of ``d_hdp`` ranks in data order, so every rank runs about the same number of
  micro-batches.
* ``"balanced"`` — balanced HDP (the paper's Alg. 2): the items are sorted by their work
  (rank-seconds), largest first, and cut into buckets of about equal work (:func:`flop_buckets`;
  how many the paper does not say: :func:`default_buckets`). Repeatedly, the ranks whose time
  trails the busiest by more than ``delta`` (a fraction of its time; all ranks when none trails)
  take items, lightest first: under ``balance="dp"`` (DP-Balance) from the first bucket that is
  not empty, so a round runs one length level across the pool; under ``balance="pp"``
  (PP-Balance) each from its own bucket in turn (rank ``r`` of ``R`` starts at bucket
  ``r * B // R``; our reading of "all buckets in turn"), so a pipeline keeps to one length level
  and the pipelines of short items run more of them. A ring item takes as many trailing ranks as
  it needs. Ranks therefore run different numbers of micro-batches. With pipelines, PP-Balance
  ranks a pipeline by its 1F1B time, fill and drain included (``(sum t_j + (pp - 1) max t_j) /
  pp``; the model's estimate). Each sequence keeps the ranks its memory needs, as in Alg. 1.
  Two variants of the model's own, off by default: ``balance="longest-first"`` (no buckets,
  the 1F1B key) and ``widen=True`` (:func:`widen_rings`: long sequences take ranks that would
  otherwise sit idle). The scheduler keeps the naive plan if its own is slower
  (``SequenceStep.fallback``; the model's safeguard).

The step: each rank (pipeline stage) runs its micro-batches in order; the ranks of a ring start
a ring piece together (a zero-length barrier op in the timeline); with ``pp > 1`` every pipeline
runs Megatron's 1F1B order (the rule of :mod:`uneven.schedulers.pipeline`) with activations sent
between stages; ring items are aligned to the same micro-batch index on all their pipelines
(empty slots are zero-length). The step ends at the slowest rank plus the gradient
synchronisation (ZeRO-1 over all ranks, a ring all-reduce of the BF16 gradients; model).

Exactness: a token-level loss (sum over tokens / tokens in the global batch) gives the same
gradient for every assignment of sequences to ranks and micro-batches; a loss averaged per
micro-batch does not (:func:`assignment_gradient`).

>>> setup = HdpSetup(n_gpus=64, context=131072, capacity=8192)
>>> lengths = global_batch(2**22, context=131072, seed=0)     # 4M tokens, up to 128K each
>>> steps = compare_schemes(lengths, setup)
>>> {name: round(s.step_time, 1) for name, s in steps.items()}
{'static mesh': 13.8, 'naive HDP': 13.5, 'balanced HDP': 10.7}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from numbers import Real

import numpy as np

from .._fields import (
    Checked,
    array,
    check_fields,
    choice,
    flag,
    instance,
    integer,
    items,
    real,
    text,
)
from .._jit import njit
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..limits import check_bytes, check_steps, max_steps
from ..units import gbit_per_s, gbyte_per_s

__all__ = [
    "FIG6A",
    "ModelShape",
    "LLAMA_7B_GQA",
    "CostModel",
    "fit_cost_model",
    "default_cost_model",
    "DATA_MIXES",
    "global_batch",
    "length_shares",
    "best_fit_pack",
    "HdpSetup",
    "offload_ranks",
    "select_ranks",
    "Items",
    "plan_items",
    "WIDEN_SLACKS",
    "widen_rings",
    "minimal_offload",
    "SCHEMES",
    "BALANCES",
    "SequenceStep",
    "schedule_step",
    "compare_schemes",
    "list_schedule",
    "flop_buckets",
    "default_buckets",
    "BalancePlan",
    "balance_rounds",
    "optimal_makespan",
    "assignment_gradient",
]

#: ByteScale Fig. 6a, per-layer forward time by sequence length (ms) [fig-OCR]: attention and
#: MLP. Read from an OCR of the figure, so the layout (which number is which) is uncertain.
FIG6A = {
    "tokens": (4096, 8192, 16384, 32768, 65536, 131072),
    "attention_ms": (0.8, 1.8, 4.8, 14.1, 48.2, 175.5),
    "mlp_ms": (0.9, 1.8, 3.6, 7.5, 15.1, 28.2),
}

_MAX_SEQS = 2_000_000  # sequences in one global batch
_MAX_GPUS = 1 << 17
_MAX_OPS = 20_000_000  # timeline ops of one step
_MAX_LEN = 1 << 40  # tokens of one sequence
_MAX_TOKENS = float(1 << 50)  # tokens of one pack or item, or any token count
_MAX_COEF = 1e6  # cost-model coefficients (s/token^2, s/token, s)
_MAX_TIME = 1e40  # any time (s) a result holds: a guard for finiteness, not a physical bound
_BW = (1e3, 1e18)  # bandwidths accepted (bytes/s)


# --------------------------------------------------------------------------------------------
# model shape and cost
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape(Checked):
    """A dense transformer's shape: ``layers``, ``hidden``, MLP width ``ffn``, attention heads,
    KV heads (``kv_heads < heads`` is grouped-query attention, GQA), ``head_dim``, and the bytes
    of one activation value (``dtype_bytes``, 2 for BF16). Each size an integer in [1, 2**20];
    ``kv_heads`` divides ``heads``; ``name`` a string of at most 200 characters."""

    name: str = text(max_len=200)
    layers: int = integer(lo=1, hi=1 << 20)
    hidden: int = integer(lo=1, hi=1 << 20)
    ffn: int = integer(lo=1, hi=1 << 20)
    heads: int = integer(lo=1, hi=1 << 20)
    kv_heads: int = integer(lo=1, hi=1 << 20)
    head_dim: int = integer(lo=1, hi=1 << 20)
    dtype_bytes: int = integer(unit="bytes", lo=1, hi=1 << 20, default=2)

    def __post_init__(self):
        check_fields(self)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads={self.heads}; got {self.kv_heads}")

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token in one layer (bytes): ``2 * kv_heads * head_dim * dtype``."""
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def act_bytes_per_token(self) -> float:
        """Activations kept for backward per token per layer (bytes): ``34 * hidden`` with BF16
        and flash attention (Korthikanti et al., MLSys 2023, without the attention-score term;
        model)."""
        return 17.0 * self.hidden * self.dtype_bytes

    @property
    def projection_over_mlp(self) -> float:
        """FLOPs of the attention projections (Q, K, V, O) over the MLP's (3 matrices)."""
        proj = 2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * self.head_dim
        return proj / (3 * self.hidden * self.ffn)

    @property
    def params(self) -> float:
        """Parameters of the transformer layers (embeddings left out)."""
        per_layer = (2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads *
                     self.head_dim + 3 * self.hidden * self.ffn)
        return float(self.layers * per_layer)


#: LLaMA-7B's shape with grouped-query attention switched on (8 KV heads): model.
LLAMA_7B_GQA = ModelShape("LLaMA-7B-like, GQA (8 KV heads)", layers=32, hidden=4096, ffn=11008,
                          heads=32, kv_heads=8, head_dim=128)


@dataclass(frozen=True)
class CostModel(Checked):
    """Per-layer forward time of one rank (s): ``alpha s**2 + beta_attn s`` of attention per
    sequence of ``s`` tokens, ``beta_linear`` per token outside attention, ``gamma`` per pack.
    Each coefficient a finite number in [0, 1e6]; token counts up to 2**50.

    >>> c = CostModel(1e-11, 1e-7, 2e-7)
    >>> round(c.layer_time([4096] * 8) / c.layer_time([32768]), 3)   # 8 x 4K vs one 32K
    0.543
    """

    alpha: float = real(lo=0.0, hi=_MAX_COEF, unit="s/token^2")
    beta_attn: float = real(lo=0.0, hi=_MAX_COEF, unit="s/token")
    beta_linear: float = real(lo=0.0, hi=_MAX_COEF, unit="s/token")
    gamma: float = real(lo=0.0, hi=_MAX_COEF, unit="s", default=0.0)

    def attention(self, s):
        """Attention time (s) of sequences of ``s`` tokens (an array, or a number: a float
        back), one rank."""
        return self._apply("s", s, self._att)

    def linear(self, tokens):
        """Time (s) outside attention for ``tokens`` tokens (an array, or a number: a float
        back)."""
        return self._apply("tokens", tokens, self._lin)

    def _att(self, s):  # trusted float64 input
        return self.alpha * s * s + self.beta_attn * s

    def _lin(self, tokens):
        return self.beta_linear * tokens

    @staticmethod
    def _apply(name, value, fn):
        if isinstance(value, Real) and not isinstance(value, np.ndarray):
            return float(fn(check_real(name, value, lo=0.0, hi=_MAX_TOKENS)))
        arr = as_float_array(name, value, lo=0.0, hi=_MAX_TOKENS)
        return fn(arr.reshape(np.shape(value)) if arr.size == np.size(value) else arr)

    def scaled(self, attention: float = 1.0, linear: float = 1.0) -> CostModel:
        """This model with its attention terms (``alpha``, ``beta_attn``) times ``attention`` and
        its linear terms (``beta_linear``, ``gamma``) times ``linear`` (each in (0, 1e3]): a
        slower or faster rank. Coefficients leaving [0, 1e6] are refused.

        >>> CostModel(1e-11, 1e-7, 2e-7).scaled(2.0, 3.0).beta_linear
        6e-07
        """
        a = check_real("attention", attention, lo=0.0, hi=1e3, lo_open=True)
        b = check_real("linear", linear, lo=0.0, hi=1e3, lo_open=True)
        return CostModel(self.alpha * a, self.beta_attn * a, self.beta_linear * b, self.gamma * b)

    def layer_time(self, lengths) -> float:
        """Forward time (s) of one layer for one pack of sequences ``lengths`` on one rank
        (each at most 2**40 tokens)."""
        s = as_float_array("lengths", lengths, ndim=1, lo=0.0, hi=_MAX_LEN)
        return float(self._att(s).sum() + self._lin(s.sum()) + self.gamma)

    def crossover(self, beta_linear: float | None = None) -> float:
        """Sequence length (tokens) where attention time equals the time outside attention
        (``beta_linear`` per token, in [0, 1e6], by default this model's); ``inf`` when
        attention never catches up (``alpha`` = 0, or the length is beyond a float's range)."""
        bl = self.beta_linear if beta_linear is None else check_real(
            "beta_linear", beta_linear, lo=0.0, hi=_MAX_COEF, unit="s/token")
        if self.alpha <= 0:
            return math.inf
        x = max(0.0, (bl - self.beta_attn) / self.alpha)
        return x if math.isfinite(x) else math.inf


def fit_cost_model(tokens, attention, mlp, *, linear_factor: float = 1.0) -> CostModel:
    """Fit :class:`CostModel` to measured per-layer times (s): ``attention = alpha s**2 +
    beta_attn s`` and ``mlp = beta s`` by least squares on relative error; the linear term is
    ``beta * linear_factor`` (e.g. 1 + the projections' share of the MLP's FLOPs).
    Ranges: ``tokens`` in [1, 2**40], times in [1e-12, 1e6] s, ``linear_factor`` in [0, 1e3],
    at most 10,000 points; a fit whose coefficients leave :class:`CostModel`'s range is refused.
    The attention fit has two coefficients, so ``tokens`` must hold at least two distinct
    lengths (closer than one part in 10**9 they count as one): at one length any split of the
    time between ``alpha`` and ``beta_attn`` fits equally well.

    >>> c = fit_cost_model([1e3, 2e3, 4e3], [2e-3, 6e-3, 2e-2], [1e-3, 2e-3, 4e-3])
    >>> round(c.alpha * 1e9, 3), round(c.beta_attn * 1e6, 3), round(c.beta_linear * 1e6, 3)
    (1.0, 1.0, 1.0)
    """
    s = as_float_array("tokens", tokens, ndim=1, lo=1.0, hi=_MAX_LEN)
    a = as_float_array("attention", attention, ndim=1, shape=(s.size,), lo=1e-12, hi=1e6,
                       unit="s")
    m = as_float_array("mlp", mlp, ndim=1, shape=(s.size,), lo=1e-12, hi=1e6, unit="s")
    factor = check_real("linear_factor", linear_factor, lo=0.0, hi=1e3)
    if not 2 <= s.size <= 10_000:
        raise ValueError(f"tokens must hold 2 to 10,000 lengths to fit two coefficients; got "
                         f"{s.size}")
    _check_distinct_lengths(s, tokens)
    design = np.stack([s * s, s], axis=1) / a[:, None]
    try:
        (alpha, beta_a), *_ = np.linalg.lstsq(design, np.ones(s.size), rcond=None)
    except np.linalg.LinAlgError:
        alpha = beta_a = math.nan
    beta_m = float(np.sum(s / m) / np.sum((s / m) ** 2)) * factor
    alpha, beta_a = max(float(alpha), 0.0), max(float(beta_a), 0.0)
    if not (alpha <= _MAX_COEF and beta_a <= _MAX_COEF):  # also NaN from a failed fit
        raise ValueError(f"attention={_show(attention)} over tokens={_show(tokens)} fits "
                         f"alpha={alpha:.3g}, beta_attn={beta_a:.3g}; each must be at most "
                         f"{_MAX_COEF:g}")
    if not beta_m <= _MAX_COEF:
        raise ValueError(f"mlp={_show(mlp)} with linear_factor={factor:g} fits beta_linear="
                         f"{beta_m:.3g}; it must be at most {_MAX_COEF:g}")
    return trusted(CostModel, alpha=alpha, beta_attn=beta_a, beta_linear=beta_m, gamma=0.0)


def _check_distinct_lengths(s, tokens):
    """Refuse lengths that cannot tell ``alpha`` from ``beta_attn``: with every ``s`` equal the
    columns ``s**2`` and ``s`` of the fit are proportional (nearly so when nearly equal)."""
    if s.max() - s.min() <= 1e-9 * s.max():
        raise ValueError(f"tokens must hold at least 2 distinct lengths to fit alpha and "
                         f"beta_attn (attention = alpha s**2 + beta_attn s); got {s.size} "
                         f"lengths, all {s[0]:.10g} ({_show(tokens)})")


def default_cost_model(model: ModelShape = LLAMA_7B_GQA, *, projections: bool = True) -> CostModel:
    """The cost model fitted to ByteScale's Fig. 6a [fig-OCR] (crossover near 8K tokens), with the
    attention projections added to the MLP in proportion to their FLOPs (``projections``)."""
    check_instance("model", model, ModelShape, "e.g. LLAMA_7B_GQA")
    projections = check_bool("projections", projections)
    extra = model.projection_over_mlp if projections else 0.0
    if extra > 999.0:
        raise ValueError(f"model={model.name!r} has attention projections {extra:.3g} times the "
                         "MLP's FLOPs; at most 999 are supported (ffn too small for the heads)")
    return _fig6a_cost(extra)


@lru_cache(maxsize=16)
def _fig6a_cost(extra: float) -> CostModel:
    return fit_cost_model(FIG6A["tokens"], np.array(FIG6A["attention_ms"]) * 1e-3,
                          np.array(FIG6A["mlp_ms"]) * 1e-3, linear_factor=1.0 + extra)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

#: Synthetic mixes for :func:`uneven.workloads.sequence_lengths` (model). ``"byted"``: its
#: defaults, calibrated to ByteScale's Byted facts (about 80% of samples at most 4K tokens; the
#: 1% at 128K or more hold 44.3% of the tokens) [paper, Fig. 4]. ``"github"``: calibrated here to
#: the GitHub facts (16.2% of tokens in sequences above 128K, 9.8% above 256K) [paper, Fig. 4].
DATA_MIXES = {
    "byted": {},
    "github": {"tail_index": 1.5, "tail_fraction": 0.27, "tail_start": 8192},
}


def global_batch(total_tokens: int, *, mix: str = "byted", context: int = 2**21,
                 tail_weight: float = 1.0, seed=0) -> np.ndarray:
    """Sequence lengths (int64 tokens) of one global batch of exactly ``total_tokens`` tokens.

    Lengths come from the named :data:`DATA_MIXES` entry, clipped to ``context``; ``tail_weight``
    scales the mix's share of heavy-tailed samples. The last sequence is cut so the tokens add up
    exactly. Seeded. At most 2,000,000 sequences (``total_tokens`` up to 2**40, ``context`` in
    [128, 2**30], ``tail_weight`` in [0, 1e6]).

    >>> x = global_batch(1_000_000, seed=1)
    >>> int(x.sum()), int(x.max()) <= 2**21
    (1000000, True)
    """
    from ..workloads import rng_from, sequence_lengths

    total = check_int("total_tokens", total_tokens, lo=1, hi=1 << 40)
    mix = check_choice("mix", mix, DATA_MIXES)
    context = check_int("context", context, lo=128, hi=1 << 30)
    weight = check_real("tail_weight", tail_weight, lo=0.0, hi=1e6)
    params = dict(DATA_MIXES[mix])
    params["tail_fraction"] = min(1.0, params.get("tail_fraction", 0.08) * weight)
    rng = rng_from(seed)
    parts, have = [], 0
    while have < total:
        n = int(min(_MAX_SEQS, max(64, 1.3 * (total - have) / 4000)))
        x = sequence_lengths(n, max_len=context, min_len=min(128, context), seed=rng, **params)
        parts.append(x)
        have += int(x.sum())
        if sum(p.size for p in parts) > _MAX_SEQS:
            raise ValueError(f"total_tokens={total} needs more than {_MAX_SEQS:,} sequences")
    lengths = np.concatenate(parts)
    cut = int(np.searchsorted(np.cumsum(lengths), total))
    lengths = lengths[: cut + 1].copy()
    lengths[-1] -= int(lengths.sum()) - total
    return lengths


def length_shares(lengths, edges) -> tuple[np.ndarray, np.ndarray]:
    """Share of samples and share of tokens per length bucket ``[edges[i], edges[i+1])``.

    ``lengths``: tokens, each at most 2**40; ``edges``: increasing, finite.

    >>> s, t = length_shares([1, 1, 2], [0, 2, 3])
    >>> s.tolist(), t.tolist()
    ([0.6666666666666666, 0.3333333333333333], [0.5, 0.5])
    """
    x = as_float_array("lengths", lengths, ndim=1, lo=0.0, hi=_MAX_LEN)
    e = as_float_array("edges", edges, ndim=1, lo=-1e300, hi=1e300)
    if x.size == 0 or x.sum() <= 0:
        raise ValueError("lengths must be non-empty with a positive sum")
    if e.size < 2 or np.any(e[1:] <= e[:-1]):
        raise ValueError(f"edges must be at least two increasing values; got {_show(edges)}")
    idx = np.searchsorted(e, x, side="right") - 1
    ok = (idx >= 0) & (idx < e.size - 1)
    n = np.bincount(idx[ok], minlength=e.size - 1)
    t = np.bincount(idx[ok], weights=x[ok], minlength=e.size - 1)
    return n / x.size, t / x.sum()


# --------------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------------


def best_fit_pack(lengths, capacity: int) -> np.ndarray:
    """Best-fit decreasing: the bin (pack) of every sequence (int64), bins of ``capacity`` tokens.

    Sequences are taken longest first; each goes into the open bin it fills most tightly, or a
    new bin. Every length must be at most ``capacity`` (at most 2**40). Bins are numbered in
    order of opening. At most 2,000,000 sequences, and the search (sequences x open bins) within
    the work budget of :mod:`uneven.limits`.

    >>> best_fit_pack([5, 3, 2, 4, 6], 10).tolist()   # 6 + 4 and 5 + 3 + 2
    [1, 1, 1, 0, 0]
    """
    x = as_int_array("lengths", lengths, ndim=1, lo=0)
    cap = check_int("capacity", capacity, lo=1, hi=1 << 40)
    if x.size > _MAX_SEQS:
        raise ValueError(f"lengths must hold at most {_MAX_SEQS:,} sequences; got {x.size:,}")
    if x.size and x.max() > cap:
        raise ValueError(f"lengths must be <= capacity={cap}; the longest is {x.max()}")
    _check_pack_steps(x, cap)
    order = np.argsort(-x, kind="stable").astype(np.int64)
    out = np.empty(x.size, dtype=np.int64)
    _bfd_kernel(x, order, cap, out)
    return out


def _check_pack_steps(x, cap):
    """Best fit scans the open bins for every sequence; any fit leaves at most one bin at most
    half full, so there are at most ``2 sum / cap + 1`` bins."""
    n = x.size
    bins = min(n, 2.0 * float(x.sum()) / cap + 1.0)
    check_steps("lengths", x, n * bins + n, "best-fit packing")


@njit
def _bfd_kernel(x, order, cap, out):  # pragma: no cover - compiled
    n = x.size
    fill = np.zeros(max(n, 1), dtype=np.int64)
    n_bins = 0
    for k in range(n):
        i = order[k]
        s = x[i]
        best = -1
        best_rem = cap + 1
        for b in range(n_bins):
            rem = cap - fill[b]
            if s <= rem < best_rem:
                best = b
                best_rem = rem
                if rem == s:
                    break
        if best < 0:
            best = n_bins
            n_bins += 1
        fill[best] += s
        out[i] = best
    return n_bins


def _reference_best_fit(lengths, capacity):
    """Obviously-correct best-fit decreasing (lists)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    fill, out = [], [0] * len(lengths)
    for i in order:
        s = lengths[i]
        fits = [b for b in range(len(fill)) if capacity - fill[b] >= s]
        if fits:
            b = min(fits, key=lambda b: (capacity - fill[b], b))
        else:
            b = len(fill)
            fill.append(0)
        fill[b] += s
        out[i] = b
    return out


# --------------------------------------------------------------------------------------------
# the cluster
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HdpSetup(Checked):
    """A training job: GPUs, parallel degrees, the rank capacity ``C``, the model, the network.

    ``n_gpus`` GPUs on 8-GPU H800-like nodes (model: each GPU its own 400 Gb/s NIC, NVLink
    160 GB/s per direction; rails meet in non-blocking spines, so disjoint rings share no link);
    ``tp`` GPUs per rank, ``pp`` pipeline stages; ``capacity``: ByteScale's ``C``, tokens per
    micro-batch per **rank**, and a rank is a TP group of ``tp`` GPUs, not one GPU (the default
    ``tp=2`` makes ``capacity=8192`` two GPUs' worth; "32K tokens per GPU" is ``tp=1,
    capacity=32768``, and ``repr`` says which); ``context``: the longest sequence; ``pcie_bw``:
    host-device bandwidth per GPU and direction (bytes/s, for offload). ``cost``: the
    :class:`CostModel`; ``None`` (the default) means :func:`default_cost_model` of ``model`` (see
    :attr:`cost_model`). ``backward_factor``: a layer's backward over its forward, compute and
    ring traffic alike (model: 2; in [0.5, 10]; :mod:`uneven.schedulers.calibration` fits it to
    ByteScale's Fig. 18b). At most 131,072 GPUs; ``capacity`` in [16, 2**24], ``context`` in
    [128, 2**30]; bandwidths in [1e3, 1e18] bytes/s.
    Checked when made, also by ``dataclasses.replace``.

    >>> s = HdpSetup()
    >>> s.d_hdp, s.d_cp, s.d_dp
    (512, 256, 2)
    >>> repr(s).split(", ")[3]
    'capacity=8192 tokens per rank of tp=2 GPUs'
    """

    n_gpus: int = integer(lo=8, hi=_MAX_GPUS, default=1024)
    tp: int = integer(lo=1, hi=8, default=2)
    pp: int = integer(lo=1, hi=256, default=1)
    capacity: int = integer(lo=16, hi=1 << 24, default=8192)
    context: int = integer(lo=128, hi=1 << 30, default=2**21)
    model: ModelShape = instance(ModelShape, "e.g. LLAMA_7B_GQA", default=LLAMA_7B_GQA)
    cost: CostModel | None = None
    nic_bw: float = real(lo=_BW[0], hi=_BW[1], unit="bytes/s", default=gbit_per_s(400))
    nvlink_bw: float = real(lo=_BW[0], hi=_BW[1], unit="bytes/s", default=gbyte_per_s(160))
    pcie_bw: float = real(lo=_BW[0], hi=_BW[1], unit="bytes/s", default=gbyte_per_s(50))
    backward_factor: float = real(lo=0.5, hi=10.0, default=2.0)

    def __post_init__(self):
        check_fields(self)
        n, tp, pp, ranks = self.n_gpus, self.tp, self.pp, self.n_gpus // (self.tp * self.pp)
        for bad, why in ((n % 8, f"n_gpus must be a multiple of 8 (8-GPU nodes); got {n}"),
                         (8 % tp, f"tp must divide the 8 GPUs of a node (1, 2, 4, 8); got {tp}"),
                         ((tp * pp) % 8 and 8 % (tp * pp),
                          f"tp * pp must divide 8 or be a multiple of 8; got {tp * pp}"),
                         (n % (tp * pp), f"tp * pp = {tp * pp} must divide n_gpus = {n}"),
                         (self.model.layers % pp,
                          f"pp must divide the model's {self.model.layers} layers; got {pp}"),
                         (ranks % self.d_cp,
                          f"the static mesh's CP degree ceil(context / capacity) = {self.d_cp} "
                          f"must divide the {ranks} ranks; change context={self.context}, "
                          f"capacity={self.capacity} or n_gpus={n}")):
            if bad:
                raise ValueError(why)
        if self.cost is None:
            default_cost_model(self.model)  # the model must have one (cached)
        else:
            check_instance("cost", self.cost, CostModel, "or None")

    def __repr__(self) -> str:
        # capacity is per rank (a TP group), the slip the issue tracker saw: say so where it shows
        from .._fields import _unit_repr

        return _unit_repr(self).replace(
            f"capacity={self.capacity}",
            f"capacity={self.capacity} tokens per rank of tp={self.tp} GPU"
            + ("s" if self.tp > 1 else ""), 1)

    @property
    def cost_model(self) -> CostModel:
        """``cost``, or the model's :func:`default_cost_model` when ``cost`` is None (so
        ``dataclasses.replace(setup, model=...)`` gets the new model's cost)."""
        return self.cost if self.cost is not None else default_cost_model(self.model)

    @property
    def d_hdp(self) -> int:
        """Ranks (pipelines when ``pp > 1``) in the pool: ``n_gpus / (tp * pp)``."""
        return self.n_gpus // (self.tp * self.pp)

    @property
    def d_cp(self) -> int:
        """The static mesh's CP degree: the fewest ranks whose capacity holds the context."""
        return -(-self.context // self.capacity)

    @property
    def d_dp(self) -> int:
        """The static mesh's DP degree ``d_hdp / d_cp``."""
        return self.d_hdp // self.d_cp

    @property
    def layers_per_stage(self) -> int:
        """Layers each pipeline stage (each rank when ``pp = 1``) holds."""
        return self.model.layers // self.pp

    @property
    def ranks_per_node(self) -> int:
        """Ranks whose GPUs share a node (0 when one rank's pipeline spans nodes)."""
        k = self.tp * self.pp
        return 8 // k if k <= 8 else 0

    def topology(self):
        """The H800-like cluster (multi-rail, cross-rail traffic through the spines)."""
        from ..topology import h800_cluster

        return _topology(self.n_gpus // 8, self.nic_bw, self.nvlink_bw, h800_cluster)

    def hops(self) -> dict:
        """Bandwidth (bytes/s per rank: ``tp`` GPUs each send their share of the heads) and
        latency (s) of a ring hop inside a node and across nodes, read from :meth:`topology`."""
        t = self.topology()
        inter_dst = 9 if t.n_gpus > 9 else 1
        return {"intra_bw": self.tp * self.nvlink_bw, "inter_bw": self.tp * self.nic_bw,
                "intra_lat": t.path_latency(0, 1), "inter_lat": t.path_latency(0, inter_dst)}

    def grad_sync_time(self) -> float:
        """ZeRO-1 gradient synchronisation (s): a ring all-reduce of each GPU's BF16 gradient
        shard over the ``d_hdp`` ranks through the NICs (model)."""
        from ..collectives import alpha_beta_time

        nbytes = 2.0 * self.model.params / (self.tp * self.pp)
        return alpha_beta_time("all_reduce", self.d_hdp, nbytes, self.hops()["inter_lat"],
                               self.nic_bw)


@lru_cache(maxsize=32)
def _topology(n_nodes, nic_bw, nvlink_bw, factory):
    return factory(n_nodes, fabric="multi_rail", cross_rail="spine", nic_bw=nic_bw,
                   nvlink_bw=nvlink_bw)


# --------------------------------------------------------------------------------------------
# how many ranks a long sequence gets
# --------------------------------------------------------------------------------------------


def offload_ranks(lengths, setup: HdpSetup) -> tuple[np.ndarray, np.ndarray]:
    """ByteScale's selective offload [paper, Eq. 3]: fewest ranks ``D(s)`` and offload ratio ``r``.

    With ``l`` layers per rank and ``Act(x)`` one layer's activations for ``x`` tokens,
    ``D(s) = ceil([2 Act(s) + (1 - r)(l - 2) Act(s)] / [l Act(C)])`` is minimised over ``r``
    subject to ``T(s) >= r Act(s) / B`` (offloading one layer hides behind its forward, ``B`` =
    the rank's PCIe bandwidth) and ``1 >= r >= min(1, l Act(C) / ((l - 2) Act(s)))``. When no
    ``r`` satisfies both, the sequence is not offloaded (``r = 0``, ``D = ceil(s / C)``).
    Returns ``(D, r)`` per sequence (int64, float64); sequences shorter than ``C`` get (1, 0).
    Lengths in [1, 2**40] tokens.

    >>> D, r = offload_ranks([65536, 2**21], HdpSetup())
    >>> D.tolist(), [round(float(v), 2) for v in r]
    ([3, 16], [0.73, 1.0])
    """
    s = as_float_array("lengths", lengths, ndim=1, lo=1.0, hi=_MAX_LEN)
    _check_setup(setup)
    C = float(setup.capacity)
    n_max = np.ceil(s / C)
    l = setup.layers_per_stage
    act = setup.model.act_bytes_per_token
    if l <= 2:
        return n_max.astype(np.int64), np.zeros(s.size)
    bw = setup.tp * setup.pcie_bw
    cost = setup.cost_model
    t = cost._att(s) + cost._lin(s) + cost.gamma
    r_hi = np.minimum(1.0, t * bw / (act * s))
    r_lo = np.minimum(1.0, l * C / ((l - 2) * s))
    r = np.where(r_hi >= r_lo, r_hi, 0.0)
    D = np.ceil((2.0 + (1.0 - r) * (l - 2)) * s / (l * C) - 1e-9)
    D = np.clip(D, 1, n_max)
    r = np.where(s < C, 0.0, r)
    return D.astype(np.int64), r


def select_ranks(lengths, setup: HdpSetup, *, offload: bool = False):
    """Ranks per sequence in HDP, and the offload ratio each needs (model).

    Without ``offload``: ``ceil(s / C)``. With it, the fewest ranks memory allows is
    :func:`offload_ranks`'s ``D(s)``; but a ring on fewer ranks only pays while its steps still
    overlap compute and transfer, and below that point it just takes longer for the same
    rank-time. So this model gives a sequence ``clip(n_hide, D(s), ceil(s / C))`` ranks, where
    ``n_hide`` is the largest ring whose cross-node steps hide their KV transfer, and offloads
    only the ratio ``r`` those ranks need (0 when it keeps ``ceil(s / C)``). This reading of
    "selective" is the model's, not the paper's text. Returns ``(ranks, r)``. Lengths in
    [1, 2**40] tokens.

    >>> n, r = select_ranks([65536, 2**21], HdpSetup(), offload=True)
    >>> n.tolist(), r.tolist()                    # GQA on a 400 Gb/s NIC: rings already hide
    ([8, 256], [0.0, 0.0])
    """
    s = as_float_array("lengths", lengths, ndim=1, lo=1.0, hi=_MAX_LEN)
    offload = check_bool("offload", offload)
    _check_setup(setup)
    C = float(setup.capacity)
    n_max = np.maximum(np.ceil(s / C), 1.0)
    if not offload:
        return n_max.astype(np.int64), np.zeros(s.size)
    D, _ = offload_ranks(s, setup)
    kvb = setup.model.kv_bytes_per_token
    bw = setup.hops()["inter_bw"]
    n_hide = np.floor(setup.cost_model._att(s) * bw / (s * kvb))
    n = np.clip(n_hide, D, n_max)
    n = np.where(s < C, 1.0, n)
    l = setup.layers_per_stage
    need = np.zeros(s.size)
    if l > 2:
        need = 1.0 - (n * l * C / s - 2.0) / (l - 2)
    r = np.where(n < n_max, np.clip(need, 0.0, 1.0), 0.0)
    return n.astype(np.int64), r


def _check_setup(setup):
    return check_instance("setup", setup, HdpSetup, "e.g. HdpSetup()")


# --------------------------------------------------------------------------------------------
# items: the work units of one step
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Items(Checked):
    """The micro-batches of one step, each run by ``width`` ranks at once.

    ``seq_ptr``/``seq_ids``: the sequences of item ``i`` are ``seq_ids[seq_ptr[i]:seq_ptr[i+1]]``
    (a long sequence of a ring alone, or a pack); ``tokens``; ``width`` (ranks); ``attention`` (s,
    whole item, one layer, forward, as if on one rank); ``offload_ratio``. Per rank of the item,
    one layer forward (s): ``fwd_intra``/``fwd_inter`` if its ring stays in a node / crosses
    nodes, and the part of it that is exposed ring transfer, ``exposed_intra``/``exposed_inter``.
    ``act_bytes``: one stage's activation message per rank (bytes, for ``pp > 1``).

    Checked when made (:func:`plan_items` builds them without re-checking): at least one item;
    ``seq_ptr`` a CSR pointer over ``seq_ids``; per-item arrays of one length, finite and >= 0
    (at most 1e40), ``width`` in [1, 131072], ``offload_ratio`` in [0, 1], ``order`` item ids.
    The arrays are read-only.
    """

    scheme: str = choice(lambda: SCHEMES)
    seq_ptr: np.ndarray = array("int", shape=lambda it: (it.tokens.size + 1,), lo=0, repr=False)
    seq_ids: np.ndarray = array("int", ndim=1, lo=0, repr=False)
    tokens: np.ndarray = array(shape=("n",), nonempty=True, lo=0.0, hi=_MAX_TIME, repr=False)
    width: np.ndarray = array("int", shape=("n",), lo=1, hi=_MAX_GPUS, repr=False)
    attention: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    offload_ratio: np.ndarray = array(shape=("n",), lo=0.0, hi=1.0, repr=False)
    fwd_intra: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    fwd_inter: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    exposed_intra: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    exposed_inter: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    act_bytes: np.ndarray = array(shape=("n",), lo=0.0, hi=_MAX_TIME, repr=False)
    order: np.ndarray = array("int", shape=("n",), lo=0, hi=lambda it: it.tokens.size - 1,
                              repr=False)
    check_first = ("scheme", "tokens")

    def __post_init__(self):
        check_fields(self)
        ptr = self.seq_ptr
        if ptr[0] != 0 or ptr[-1] != self.seq_ids.size or np.any(ptr[1:] < ptr[:-1]):
            raise ValueError(f"seq_ptr must rise from 0 to the {self.seq_ids.size} seq_ids; got "
                             f"{_show(self.seq_ptr)}")

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.tokens.size)

    @property
    def ring(self) -> np.ndarray:
        """Whether each item is split over a ring of ranks."""
        return self.width > 1


def plan_items(lengths, setup: HdpSetup, scheme: str, *, offload: bool = False) -> Items:
    """Cut one global batch into the items of ``scheme`` (``"static"`` packs of ``d_cp * C``
    tokens over ``d_cp`` ranks; ``"naive"``/``"balanced"``: HDP items) and time each one.

    ``Items.order`` is the data order in which a naive loader meets the items (by their first
    sequence). ``offload`` (HDP only) uses :func:`select_ranks`. At most 2,000,000 sequences,
    each at most ``setup.context`` tokens; the working arrays (about 200 bytes per sequence)
    within the memory budget of :mod:`uneven.limits`.
    """
    x = as_int_array("lengths", lengths, ndim=1, lo=1)
    _check_setup(setup)
    scheme = check_choice("scheme", scheme, SCHEMES)
    offload = check_bool("offload", offload)
    _check_lengths(x, setup)
    C = setup.capacity
    if scheme == "static":
        if offload:
            raise ValueError("offload applies to HDP (scheme 'naive' or 'balanced'), not the "
                             "static mesh")
        bins = best_fit_pack(x, setup.d_cp * C)
        n_items = int(bins.max()) + 1
        width = np.full(n_items, setup.d_cp, dtype=np.int64)
        ratio = np.zeros(n_items)
        seq_order = np.argsort(bins, kind="stable")
        counts = np.bincount(bins, minlength=n_items)
    else:
        long_ = x >= C
        n_long, r_long = select_ranks(x[long_], setup, offload=offload)
        short_idx = np.flatnonzero(~long_)
        bins = best_fit_pack(x[short_idx], C) if short_idx.size else np.zeros(0, np.int64)
        n_packs = int(bins.max()) + 1 if bins.size else 0
        long_idx = np.flatnonzero(long_)
        # items: the long sequences first (one each), then the packs
        item_of = np.empty(x.size, dtype=np.int64)
        item_of[long_idx] = np.arange(long_idx.size)
        item_of[short_idx] = long_idx.size + bins
        n_items = long_idx.size + n_packs
        width = np.concatenate([n_long, np.ones(n_packs, dtype=np.int64)])
        ratio = np.concatenate([r_long, np.zeros(n_packs)])
        seq_order = np.argsort(item_of, kind="stable")
        counts = np.bincount(item_of, minlength=n_items)
        bins = item_of
    seq_ptr = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(counts, out=seq_ptr[1:])
    seq_ids = seq_order.astype(np.int64)
    xf = x.astype(np.float64)
    tokens = np.add.reduceat(xf[seq_ids], seq_ptr[:-1]) if n_items else np.zeros(0)
    attention = np.add.reduceat(setup.cost_model._att(xf[seq_ids]), seq_ptr[:-1])
    first = np.minimum.reduceat(seq_ids, seq_ptr[:-1])
    order = np.argsort(first, kind="stable").astype(np.int64)
    return _timed_items(scheme, seq_ptr, seq_ids, tokens, width, attention, ratio, order, setup)


def _check_lengths(x, setup):
    if x.size == 0:
        raise ValueError("lengths must hold at least one sequence")
    if x.size > _MAX_SEQS:
        raise ValueError(f"lengths must hold at most {_MAX_SEQS:,} sequences; got {x.size:,}")
    if x.max() > setup.context:
        raise ValueError(f"lengths must be <= context={setup.context} (setup.context); the "
                         f"longest is {x.max()}")
    check_bytes("lengths", x, 200 * x.size, "planning the items")


def _ring_times(tokens, attention, width, setup, where):
    """Per rank of an item, one layer forward (s), and the part of it that is exposed ring
    transfer, for rings inside a node (``where="intra"``) or across nodes (``"inter"``)."""
    hops = setup.hops()
    cost = setup.cost_model
    w = np.asarray(width, dtype=np.float64)
    c = tokens / w
    step_c = attention / (w * w)
    step_t = np.where(w > 1, c * setup.model.kv_bytes_per_token / hops[f"{where}_bw"]
                      + hops[f"{where}_lat"], 0.0)
    fwd = step_c + cost._lin(c) + cost.gamma + (w - 1) * np.maximum(step_c, step_t)
    return fwd, (w - 1) * np.maximum(0.0, step_t - step_c)


def _timed_items(scheme, seq_ptr, seq_ids, tokens, width, attention, ratio, order, setup):
    out = {}
    for where in ("intra", "inter"):
        out[f"fwd_{where}"], out[f"exposed_{where}"] = _ring_times(tokens, attention, width,
                                                                   setup, where)
    c = tokens / width.astype(np.float64)
    act = c * setup.model.hidden * setup.model.dtype_bytes
    arrays = dict(seq_ptr=seq_ptr, seq_ids=seq_ids, tokens=tokens, width=width,
                  attention=attention, offload_ratio=ratio, act_bytes=act, order=order, **out)
    for a in arrays.values():
        a.flags.writeable = False
    return trusted(Items, scheme=scheme, **arrays)


def minimal_offload(items: Items, setup: HdpSetup) -> Items:
    """Alg. 1 read literally [paper]: every single-sequence HDP item gets the fewest ranks its
    memory allows with offload, :func:`offload_ranks`'s ``D(s)``, at the largest offload ratio
    the copy hides behind (re-timed; packs unchanged). The model's own rule is
    :func:`select_ranks` with ``offload=True``, which keeps a ring as wide as still hides its
    transfer; this is the other reading, for comparison.

    >>> setup = HdpSetup()
    >>> items = plan_items([2**21, 4096], setup, "naive")
    >>> items.width.tolist(), minimal_offload(items, setup).width.tolist()
    ([256, 1], [16, 1])
    """
    check_instance("items", items, Items, "from plan_items(...)")
    _check_setup(setup)
    if items.scheme == "static":
        raise ValueError("items must be HDP items (scheme 'naive' or 'balanced'), not the static "
                         "mesh's packs")
    single = (np.diff(items.seq_ptr) == 1) & (items.tokens >= setup.capacity)
    width = items.width.astype(np.int64).copy()
    ratio = items.offload_ratio.copy()
    if single.any():
        D, r = offload_ranks(items.tokens[single], setup)
        width[single] = D
        ratio[single] = np.where(D < np.ceil(items.tokens[single] / setup.capacity), r, 0.0)
    return _timed_items(items.scheme, items.seq_ptr, items.seq_ids, items.tokens, width,
                        items.attention, ratio, items.order, setup)


#: The targets (multiples of ``W / R``) the balance scheduler tries when it widens rings; it
#: keeps the widths whose rounds end first (model). Below 1, rings end before ``W / R`` and the
#: other items fill the ranks around them more easily.
WIDEN_SLACKS = (0.6, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.5, 2.0)


def widen_rings(items: Items, setup: HdpSetup, *, slack: float = 1.0) -> Items:
    """The balance scheduler's rank allotment (model): a long sequence gets more ranks than its
    memory needs when the rest of the pool would otherwise sit idle waiting for it.

    A ring of ``N`` ranks divides a sequence's compute by ``N`` and leaves each rank's ring
    volume almost unchanged, so while its steps hide their KV transfer, widening it costs no
    rank-time: ``N t(N)`` stays the sequence's attention + linear time (plus ``gamma`` per rank).
    With ``W`` the step's rank-time and ``R`` the ranks (pipelines), no schedule ends before
    ``W / R``. Every single-sequence item that would run longer than the target ``slack * W / R``
    gets the fewest ranks that bring it down to the target — never more than the largest ring
    whose cross-node steps still hide their transfer (``lat N**2 + (s kv / bw) N <= attention``;
    past it, extra ranks add exposed transfer and rank-time) and never more than ``R``; an item
    keeps its width when that is larger already. Repeated until the widths settle. Widened items
    offload nothing (they hold fewer than ``C`` tokens per rank). Items that need no widening are
    returned unchanged (the same object). :func:`schedule_step` tries every ``slack`` of
    :data:`WIDEN_SLACKS` and keeps the fastest plan.

    ByteScale allows any rank count in [1, d_hdp] [paper]; this rule for choosing one beyond
    memory is the model's. ``slack`` in [0.001, 1e6].

    >>> setup = HdpSetup(n_gpus=64, context=131072, capacity=8192)    # 32 ranks
    >>> items = plan_items([131072] + [4096] * 8, setup, "balanced")
    >>> items.width.tolist(), widen_rings(items, setup).width.tolist()
    ([16, 1, 1, 1, 1], [30, 1, 1, 1, 1])
    """
    check_instance("items", items, Items, "from plan_items(...)")
    _check_setup(setup)
    slack = check_real("slack", slack, lo=1e-3, hi=1e6)
    if items.scheme == "static":
        raise ValueError("items must be HDP items (scheme 'naive' or 'balanced'), not the static "
                         "mesh's packs")
    R = setup.d_hdp
    cand = np.flatnonzero((np.diff(items.seq_ptr) == 1) & (items.tokens >= setup.capacity))
    if cand.size == 0 or R == 1:
        return items
    cost = setup.cost_model
    hops = setup.hops()
    s, att = items.tokens[cand], items.attention[cand]
    work = att + cost._lin(s)  # one layer forward of the whole sequence, as on one rank (s)
    b = s * setup.model.kv_bytes_per_token / hops["inter_bw"]
    lat = hops["inter_lat"]
    if lat > 0:
        n_hide = np.floor((np.sqrt(b * b + 4.0 * lat * att) - b) / (2.0 * lat) + 1e-9)
    else:
        n_hide = np.floor(att / b + 1e-9)
    n_cap = np.clip(n_hide, 1.0, R)
    w0 = items.width[cand].astype(np.float64)
    width = items.width.astype(np.int64).copy()
    fwd_all = np.where(width > 1, items.fwd_inter, items.fwd_intra)
    for _ in range(8):
        target = slack * float((fwd_all * width).sum()) / R  # W / R, one layer forward (s)
        room = target - cost.gamma
        if room > 0:
            with np.errstate(over="ignore"):  # beyond a float: more ranks than n_cap anyway
                need = np.ceil(work / room - 1e-9)
        else:
            need = n_cap
        n = np.maximum(w0, np.minimum(need, n_cap)).astype(np.int64)
        if np.array_equal(n, width[cand]):
            break
        width[cand] = n
        fwd_all[cand] = _ring_times(s, att, n, setup, "inter")[0]
    if np.array_equal(width, items.width):
        return items
    ratio = np.where(width >= np.ceil(items.tokens / setup.capacity), 0.0, items.offload_ratio)
    return _timed_items(items.scheme, items.seq_ptr, items.seq_ids, items.tokens, width,
                        items.attention, ratio, items.order, setup)


# --------------------------------------------------------------------------------------------
# assignment of items to ranks
# --------------------------------------------------------------------------------------------

SCHEMES = ("static", "naive", "balanced")
#: The balance scheduler's rules: the paper's DP-Balance and PP-Balance (Alg. 2), and the model's
#: longest-first variant (no buckets; a pipeline's 1F1B time as its key).
BALANCES = ("dp", "pp", "longest-first")


def flop_buckets(work, n_buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2's buckets [paper]: items sorted by ``work`` (FLOPs, or rank-seconds), largest
    first, cut into ``n_buckets`` runs of about equal total work. Returns ``(order, ptr)``: bucket
    ``b`` holds items ``order[ptr[b]:ptr[b + 1]]`` (an item whose work straddles a boundary goes
    where its work starts, so a bucket may be empty when one item outweighs it). ``work``:
    finite numbers >= 0 (at most 1e40); ``n_buckets`` in [1, 2**20].

    >>> order, ptr = flop_buckets([1.0, 8.0, 1.0, 4.0, 2.0], 2)
    >>> order.tolist(), ptr.tolist()       # 8 | 4 + 2 + 1 + 1: equal halves of 16
    ([1, 3, 4, 0, 2], [0, 1, 5])
    """
    w = as_float_array("work", work, ndim=1, lo=0.0, hi=_MAX_TIME)
    B = check_int("n_buckets", n_buckets, lo=1, hi=1 << 20)
    order = np.argsort(-w, kind="stable").astype(np.int64)
    return order, _bucket_ptr(w[order], B)


def _bucket_ptr(sorted_work, B):
    total = float(sorted_work.sum())
    before = np.cumsum(sorted_work) - sorted_work
    b = np.floor(before * B / total + 1e-12) if total > 0 else np.zeros(sorted_work.size)
    counts = np.bincount(np.clip(b, 0, B - 1).astype(np.int64), minlength=B)
    ptr = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


def _static_assign(items: Items, setup: HdpSetup):
    """Pack ``i`` to DP group ``i mod d_dp`` (all its ``d_cp`` ranks), in pack order."""
    d_dp, d_cp = setup.d_dp, setup.d_cp
    group = np.arange(items.n) % d_dp
    slot = np.arange(items.n) // d_dp
    ranks = (group[:, None] * d_cp + np.arange(d_cp)[None, :]).ravel()
    slots = np.repeat(slot, d_cp)
    return ranks.astype(np.int64), slots.astype(np.int64)


@njit
def _naive_kernel(order, width, R, ranks, slots, item_ptr):  # pragma: no cover - compiled
    """First fit of items (in ``order``) into rounds of ``R`` ranks, contiguous in a round."""
    n = order.size
    fill = np.zeros(n + 1, dtype=np.int64)
    n_rounds = 0
    first_open = 0
    for k in range(n):
        i = order[k]
        w = width[i]
        r = first_open
        while r < n_rounds and R - fill[r] < w:
            r += 1
        if r == n_rounds:
            n_rounds += 1
        base = item_ptr[i]
        for j in range(w):
            ranks[base + j] = fill[r] + j
            slots[base + j] = r
        fill[r] += w
        while first_open < n_rounds and fill[first_open] >= R:
            first_open += 1
    return n_rounds


def _reference_naive(order, width, R):
    """Rounds filled first-fit, plain lists: item -> (ranks, round)."""
    fill = []
    out = {}
    for i in order:
        w = width[i]
        r = next((k for k, f in enumerate(fill) if R - f >= w), None)
        if r is None:
            r = len(fill)
            fill.append(0)
        out[i] = (list(range(fill[r], fill[r] + w)), r)
        fill[r] += w
    return out


@njit
def _place(i, chosen, w, t_intra, t_inter, ranks_per_node, item_ptr, ranks, slots, load, count,
           maxt, key, p, pp_key, align, kmax, item_start):  # pragma: no cover - compiled
    """Put item ``i`` on the ranks ``chosen[:w]``: it starts when the last of them is free
    (``item_start[i]``). Updates the ranks' loads, counts and keys; returns the new largest
    key."""
    start = 0.0
    slot = 0
    node0 = -1
    intra = ranks_per_node > 1
    for j in range(w):
        r = chosen[j]
        if load[r] > start:
            start = load[r]
        if count[r] > slot:
            slot = count[r]
        nd = r // ranks_per_node if ranks_per_node > 0 else r
        if node0 < 0:
            node0 = nd
        elif nd != node0:
            intra = False
    if w == 1:
        intra = True
    t = t_intra[i] if intra else t_inter[i]
    item_start[i] = start
    base = item_ptr[i]
    for j in range(w):
        r = chosen[j]
        ranks[base + j] = r
        if align:
            slots[base + j] = slot
            count[r] = slot + 1
        else:
            slots[base + j] = count[r]
            count[r] += 1
        load[r] = start + t
        if t > maxt[r]:
            maxt[r] = t
        key[r] = (load[r] + (p - 1) * maxt[r]) / p if pp_key else load[r]
        if key[r] > kmax:
            kmax = key[r]
    return kmax


@njit
def _balance_kernel(order, bucket_ptr, width, t_intra, t_inter, R, delta, p, mode, align,
                    ranks_per_node, item_ptr, ranks, slots, load, item_start,
                    max_steps=2**62):  # pragma: no cover - compiled
    """Rounds of the balance scheduler; fills ``ranks``/``slots`` per item, ``load`` per rank.

    ``order``: the items sorted, cut into buckets ``order[bucket_ptr[b]:bucket_ptr[b + 1]]``.
    Each round, the ranks whose key trails the largest by more than ``delta`` (all ranks when
    none does) take items, lightest rank first. ``mode`` 0 (DP-Balance) and 2 (longest-first):
    the next items of ``order`` (the first bucket that is not empty); mode 1 (PP-Balance): each
    trailing rank takes the next item of its own bucket, ``b = r * B // R``, or of the next
    bucket that is not empty. A ring item takes more trailing ranks (the lightest); when too few
    trail, the round ends, or, if it has placed nothing, the item takes the lightest ranks.
    ``load`` is a rank's finish estimate (exact for ``p = 1``); the key is ``load`` (mode 0) or
    ``(load + (p - 1) max_t) / p`` (modes 1, 2: a pipeline's 1F1B time); ``item_start``: each
    item's start estimate (exact for ``p = 1``). Returns the items
    placed, or -1 when the rounds would take more than ``max_steps`` steps (a round sorts the
    ``R`` ranks: about ``R log2 R`` steps).
    """
    n = order.size
    B = bucket_ptr.size - 1
    bpos = bucket_ptr[:-1].copy()
    count = np.zeros(R, dtype=np.int64)
    maxt = np.zeros(R)
    key = np.zeros(R)
    used = np.zeros(R, dtype=np.bool_)
    chosen = np.empty(R, dtype=np.int64)
    pp_key = mode != 0
    for r in range(R):
        load[r] = 0.0
    pos = 0
    kmax = 0.0
    round_steps = R * (1 + int(np.log2(R + 1)))
    steps = 0
    while pos < n:
        steps += round_steps
        if steps > max_steps:
            return -1
        srt = np.argsort(key, kind="mergesort")  # stable: ties go to the lower rank id
        thr = kmax * (1.0 - delta)
        n_s = 0
        while n_s < R and key[srt[n_s]] < thr:
            n_s += 1
        if n_s == 0:
            n_s = R
        if mode != 1:
            k = 0
            while k < n_s and pos < n:
                i = order[pos]
                w = width[i]
                if k + w <= n_s:
                    lo = k
                    k += w
                elif k == 0:
                    lo = 0
                    k = n_s
                else:
                    break
                for j in range(w):
                    chosen[j] = srt[lo + j]
                kmax = _place(i, chosen, w, t_intra, t_inter, ranks_per_node, item_ptr, ranks,
                              slots, load, count, maxt, key, p, pp_key, align, kmax, item_start)
                pos += 1
            continue
        for j in range(R):
            used[j] = False
        placed = 0
        k = 0
        while k < n_s and pos < n:
            r = srt[k]
            if used[r]:
                k += 1
                continue
            b = (r * B) // R
            while bpos[b] >= bucket_ptr[b + 1]:  # an item is left somewhere: pos < n
                b = (b + 1) % B
            i = order[bpos[b]]
            w = width[i]
            m = 1
            chosen[0] = r
            q = k + 1
            while m < w and q < n_s:
                if not used[srt[q]]:
                    chosen[m] = srt[q]
                    m += 1
                q += 1
            if m < w:
                if placed > 0:
                    break
                for j in range(w):  # nothing placed yet: the lightest ranks, and the round ends
                    chosen[j] = srt[j]
                k = n_s
            for j in range(w):
                used[chosen[j]] = True
            kmax = _place(i, chosen, w, t_intra, t_inter, ranks_per_node, item_ptr, ranks, slots,
                          load, count, maxt, key, p, pp_key, align, kmax, item_start)
            bpos[b] += 1
            pos += 1
            placed += 1
            k += 1
    return pos


def _reference_balance(order, bucket_ptr, width, t_intra, t_inter, R, delta, p, mode, align,
                       ranks_per_node):
    """The same rounds with plain lists: item -> (ranks, slots); and the final loads."""
    load, key, maxt, count = [0.0] * R, [0.0] * R, [0.0] * R, [0] * R
    out = {}
    order = list(order)
    buckets = [order[bucket_ptr[b]:bucket_ptr[b + 1]] for b in range(len(bucket_ptr) - 1)]
    B = len(buckets)
    state = {"kmax": 0.0}

    def place(i, chosen):
        nodes = {(r // ranks_per_node) if ranks_per_node > 0 else r for r in chosen}
        intra = len(chosen) == 1 or (ranks_per_node > 1 and len(nodes) == 1)
        t = t_intra[i] if intra else t_inter[i]
        start = max(load[r] for r in chosen)
        slot = max(count[r] for r in chosen)
        slots = []
        for r in chosen:
            if align:
                slots.append(slot)
                count[r] = slot + 1
            else:
                slots.append(count[r])
                count[r] += 1
            load[r] = start + t
            maxt[r] = max(maxt[r], t)
            key[r] = (load[r] + (p - 1) * maxt[r]) / p if mode != 0 else load[r]
            state["kmax"] = max(state["kmax"], key[r])
        out[i] = (list(chosen), slots)

    pos = 0
    while pos < len(order):
        srt = sorted(range(R), key=lambda r: (key[r], r))
        thr = state["kmax"] * (1.0 - delta)
        n_s = len([r for r in srt if key[r] < thr]) or R
        trailing = srt[:n_s]
        if mode != 1:
            k = 0
            while k < n_s and pos < len(order):
                i = order[pos]
                w = width[i]
                if k + w <= n_s:
                    chosen, k = srt[k:k + w], k + w
                elif k == 0:
                    chosen, k = srt[:w], n_s
                else:
                    break
                place(i, chosen)
                pos += 1
            continue
        used, placed = set(), 0
        for k, r in enumerate(trailing):
            if pos == len(order):
                break
            if r in used:
                continue
            b = r * B // R
            while not buckets[b]:
                b = (b + 1) % B
            i = buckets[b][0]
            free = [q for q in trailing[k + 1:] if q not in used]
            if 1 + len(free) < width[i]:
                if placed:
                    break
                chosen = srt[:width[i]]
            else:
                chosen = [r] + free[:width[i] - 1]
            used.update(chosen)
            place(i, chosen)
            buckets[b].pop(0)
            pos += 1
            placed += 1
            if len(chosen) > 1 + len(free):
                break
    return out, load


# --------------------------------------------------------------------------------------------
# the step: a DAG on the timeline engine
# --------------------------------------------------------------------------------------------


@njit
def _step_dag(p, R, rank_ptr, rank_items, item_ptr, t_f, act, act_intra_bw, act_inter_bw,
              act_lat_intra, act_lat_inter, tp, dur, res, kind, item_of, rank_of, slot_of,
              src, dst, dly, opid, bwd=2.0):  # pragma: no cover - compiled
    """Ops (1F1B per stage, or one F+B op per slot when p = 1), ring barriers and edges.

    Compute ops are numbered resource by resource in run order (the engine's default order);
    ``opid[(rank_ptr[r] + slot) * 2p + 2s + k]`` is the op of kind k (0 F, 1 B) on stage s (for
    p = 1 only k = 0, kind code 2 = F + B). A ring item gets one zero-length barrier per stage
    and kind, on a resource of its own: it waits for every member's previous op and stage input,
    and the members' ops wait for it. A backward takes ``bwd`` forwards. Returns (n_ops, n_edges).
    """
    n = 0
    for r in range(R):
        lo = rank_ptr[r]
        m = rank_ptr[r + 1] - lo
        for s in range(p):
            res_id = r * p + s
            if p == 1:
                for j in range(m):
                    it = rank_items[lo + j]
                    dur[n] = (1.0 + bwd) * t_f[it] if it >= 0 else 0.0
                    res[n] = res_id
                    kind[n] = 2
                    item_of[n] = it
                    rank_of[n] = r
                    slot_of[n] = j
                    opid[(lo + j) * 2] = n
                    n += 1
                continue
            w = min(p - s, m)
            for step in range(2 * m):
                # Megatron 1F1B: w forwards, then (B k, F w + k) pairs, then the last B's
                if step < w:
                    k_op = 0
                    j = step
                elif step < w + 2 * (m - w):
                    q = step - w
                    if q % 2 == 0:
                        k_op = 1
                        j = q // 2
                    else:
                        k_op = 0
                        j = w + q // 2
                else:
                    k_op = 1
                    j = step - w - (m - w)
                it = rank_items[lo + j]
                base = t_f[it] if it >= 0 else 0.0
                dur[n] = base if k_op == 0 else bwd * base
                res[n] = res_id
                kind[n] = k_op
                item_of[n] = it
                rank_of[n] = r
                slot_of[n] = j
                opid[(lo + j) * 2 * p + 2 * s + k_op] = n
                n += 1
    n_compute = n
    next_res = R * p
    e = 0
    n_items = item_ptr.size - 1
    barrier = np.full(max(n_items * 2 * p, 1), -1, dtype=np.int64)
    for o in range(n_compute):
        r = rank_of[o]
        it = item_of[o]
        k_op = kind[o]
        s = res[o] - r * p
        j = slot_of[o]
        lo = rank_ptr[r]
        dep = -1
        ddl = 0.0
        a = act[it] if it >= 0 else 0.0
        if p > 1:
            other = -1
            if k_op == 0 and s > 0:
                dep = opid[(lo + j) * 2 * p + 2 * (s - 1)]
                other = s - 1
            elif k_op == 1 and s < p - 1:
                dep = opid[(lo + j) * 2 * p + 2 * (s + 1) + 1]
                other = s + 1
            elif k_op == 1:
                dep = opid[(lo + j) * 2 * p + 2 * s]
            if other >= 0 and a > 0.0:
                if ((r * p + other) * tp) // 8 == ((r * p + s) * tp) // 8:
                    ddl = a / act_intra_bw + act_lat_intra
                else:
                    ddl = a / act_inter_bw + act_lat_inter
        ring = it >= 0 and item_ptr[it + 1] - item_ptr[it] > 1
        if not ring:
            if dep >= 0:
                src[e] = dep
                dst[e] = o
                dly[e] = ddl
                e += 1
            continue
        key = it * 2 * p + 2 * s + (k_op if p > 1 else 0)
        b = barrier[key]
        if b < 0:
            b = n
            n += 1
            dur[b] = 0.0
            res[b] = next_res
            next_res += 1
            kind[b] = -1
            item_of[b] = it
            rank_of[b] = -1
            slot_of[b] = -1
            barrier[key] = b
        if o > 0 and res[o - 1] == res[o]:  # the member's previous op on its stream
            src[e] = o - 1
            dst[e] = b
            dly[e] = 0.0
            e += 1
        if dep >= 0:
            src[e] = dep
            dst[e] = b
            dly[e] = ddl
            e += 1
        src[e] = b
        dst[e] = o
        dly[e] = 0.0
        e += 1
    return n, e


def _reference_step(p, R, rank_lists, widths, t_f, act, bw, lat, tp, bwd=2.0):
    """Pure-Python twin of the DAG build + timeline: per op (rank, stage, kind, slot) its
    (start, finish). ``rank_lists[r]``: item per slot (-1 empty); ``bw``/``lat``: (intra, inter)
    for activation messages. Fixed-point relaxation in 1F1B order, ring members together."""
    from ..engines._timeline_kernel import _reference_timeline

    ops, deps, durs, res = [], [], [], []
    index = {}
    for r in range(R):
        m = len(rank_lists[r])
        for s in range(p):
            if p == 1:
                seq = [(2, j) for j in range(m)]
            else:
                w = min(p - s, m)
                seq = [(0, j) for j in range(w)]
                for k in range(m - w):
                    seq += [(1, k), (0, w + k)]
                seq += [(1, k) for k in range(m - w, m)]
            for k_op, j in seq:
                it = rank_lists[r][j]
                base = t_f[it] if it >= 0 else 0.0
                index[r, s, k_op, j] = len(ops)
                ops.append((r, s, k_op, j, it))
                durs.append({0: 1.0, 1: bwd, 2: 1.0 + bwd}[k_op] * base)
                res.append(r * p + s)
                deps.append([])
    barriers = {}
    n_compute = len(ops)
    for o in range(n_compute):
        r, s, k_op, j, it = ops[o]
        dep = None
        if p > 1:
            a = act[it] if it >= 0 else 0.0
            other = s - 1 if k_op == 0 else s + 1
            if (k_op == 0 and s > 0) or (k_op == 1 and s < p - 1):
                same = ((r * p + other) * tp) // 8 == ((r * p + s) * tp) // 8
                d = 0.0 if a <= 0 else (a / bw[0] + lat[0] if same else a / bw[1] + lat[1])
                dep = (index[r, other, k_op, j], d)
            elif k_op == 1:
                dep = (index[r, s, 0, j], 0.0)
        if it < 0 or widths[it] == 1:
            if dep:
                deps[o].append(dep)
            continue
        key = (it, s, k_op)
        if key not in barriers:
            barriers[key] = len(ops)
            ops.append(None)
            durs.append(0.0)
            res.append(R * p + len(barriers))
            deps.append([])
        b = barriers[key]
        prev = [q for q in range(n_compute) if res[q] == res[o] and q < o]
        if prev:
            deps[b].append((max(prev), 0.0))
        if dep:
            deps[b].append(dep)
        deps[o].append((b, 0.0))
    start, finish = _reference_timeline(durs, res, deps)
    return {ops[o][:4]: (start[o], finish[o]) for o in range(n_compute)}


@dataclass(frozen=True)
class SequenceStep(Checked):
    """One training step of a global batch under one scheme (times in s).

    ``step_time`` = ``compute_time`` (the slowest rank's last op) + ``sync_time`` (gradients).
    Per rank (pipeline): ``busy`` (s of work, each stage's sum when ``pp > 1``: the busiest
    stage), ``exposed`` (s of ring transfer not hidden), ``microbatches`` (items run).
    Per timeline op (for Gantt charts; barriers and empty slots left out): ``resource`` (rank, or
    ``rank * pp + stage``), ``start``, ``finish``, ``kind`` (0 forward, 1 backward, 2 forward +
    backward when ``pp = 1``), ``item``. Item placement: ``item_ptr``/``item_ranks`` (CSR),
    ``intra`` (its ring stays in one node). ``fallback``: the balanced scheduler kept the naive
    plan. ``lower_bound``: no schedule of these items can be faster (``pp = 1``: the larger of the
    longest item and the total rank-time over all ranks; with ``pp > 1`` the same, divided by the
    stages).

    Checked when made (:func:`schedule_step` builds it without re-checking): ``setup`` and
    ``items`` of their classes, names from :data:`SCHEMES`/:data:`BALANCES`, finite times >= 0,
    per-rank arrays of ``setup.d_hdp`` entries, per-op arrays of one length with resources,
    kinds and items in range, ``item_ptr``/``item_ranks`` a CSR placement of every item. The
    arrays are read-only.
    """

    scheme: str = choice(lambda: SCHEMES)
    balance: str = choice(lambda: BALANCES)
    delta: float = real(lo=0.0, hi=1.0, hi_open=True)
    offload: bool = flag()
    setup: HdpSetup = instance(HdpSetup, "e.g. HdpSetup()", repr=False)
    items: Items = instance(Items, "from plan_items(...)", repr=False)
    step_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    compute_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    sync_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    lower_bound: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    busy: np.ndarray = array(shape=lambda st: (st.setup.d_hdp,), lo=0.0, repr=False)
    exposed: np.ndarray = array(shape=lambda st: (st.setup.d_hdp,), lo=0.0, repr=False)
    microbatches: np.ndarray = array("int", shape=lambda st: (st.setup.d_hdp,), lo=0,
                                     repr=False)
    resource: np.ndarray = array("int", shape=("ops",), lo=0,
                                 hi=lambda st: st.setup.d_hdp * st.setup.pp - 1, repr=False)
    start: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    kind: np.ndarray = array("int", shape=("ops",), lo=0, hi=2, repr=False)
    item: np.ndarray = array("int", shape=("ops",), lo=0, hi=lambda st: st.items.n - 1,
                             repr=False)
    item_ptr: np.ndarray = array("int", shape=lambda st: (st.items.n + 1,), lo=0, repr=False)
    item_ranks: np.ndarray = array("int", shape=lambda st: (int(st.item_ptr[-1]),), lo=0,
                                   hi=lambda st: st.setup.d_hdp - 1, repr=False)
    intra: np.ndarray = array("bool", shape=lambda st: (st.items.n,), repr=False)
    fallback: bool = flag(default=False)
    check_first = ("setup", "items")

    def __post_init__(self):
        check_fields(self)
        if (self.items.scheme == "static") != (self.scheme == "static"):
            raise ValueError(f"items of scheme {self.items.scheme!r} cannot make a step of scheme "
                             f"{self.scheme!r}")
        ptr = self.item_ptr
        if ptr[0] != 0 or np.any(ptr[1:] < ptr[:-1]):
            raise ValueError(f"item_ptr must rise from 0; got {_show(self.item_ptr)}")

    @property
    def tokens_per_s(self) -> float:
        """Throughput: tokens of the global batch per second of step (``inf`` for a step of no
        time: a cost model of zeros on a single rank)."""
        if self.step_time <= 0:
            return math.inf
        return float(self.items.tokens.sum()) / self.step_time

    @property
    def widened(self) -> int:
        """Sequences given more ranks than ``ceil(s / C)`` (balanced HDP's widened rings)."""
        if self.items.scheme == "static":
            return 0
        need = np.maximum(np.ceil(self.items.tokens / self.setup.capacity), 1.0)
        return int((self.items.width > need).sum())

    @property
    def busy_spread(self) -> float:
        """Busiest over least busy rank (``inf`` when a rank has no work)."""
        lo = float(self.busy.min())
        return float(self.busy.max()) / lo if lo > 0 else math.inf

    @property
    def comm_share(self) -> float:
        """Exposed ring transfer as a share of all ranks' busy time."""
        total = float(self.busy.sum())
        return float(self.exposed.sum()) / total if total > 0 else 0.0


def schedule_step(lengths, setup: HdpSetup, scheme: str = "balanced", *, balance: str = "dp",
                  delta: float = 0.0, offload: bool = False, widen: bool = False,
                  n_buckets: int | None = None, items: Items | None = None,
                  _naive: SequenceStep | None = None) -> SequenceStep:
    """Schedule and time one step of the global batch ``lengths`` (see the module doc).

    ``scheme``: ``"static"``, ``"naive"`` or ``"balanced"`` (:data:`SCHEMES`); ``balance``
    (balanced only): ``"dp"`` or ``"pp"`` (Alg. 2's DP- and PP-Balance) or ``"longest-first"``
    (the model's variant, :data:`BALANCES`); ``delta`` in [0, 1): how far below the busiest rank,
    as a fraction of its time, a rank must trail to take more work; ``n_buckets``: Alg. 2's
    buckets (in [1, 2**20]; ``None``: :func:`default_buckets`); ``offload``: HDP's selective
    offload (see :func:`select_ranks`); ``widen`` (balanced only; the model's variant, off by
    default): give long sequences the ranks that would otherwise sit idle (:func:`widen_rings`;
    the plan without widening is kept when faster). Pass ``items`` from :func:`plan_items` to
    reuse them.
    """
    _check_setup(setup)
    scheme = check_choice("scheme", scheme, SCHEMES)
    balance = check_choice("balance", balance, BALANCES)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    offload = check_bool("offload", offload)
    widen = check_bool("widen", widen)
    if n_buckets is not None:
        n_buckets = check_int("n_buckets", n_buckets, lo=1, hi=1 << 20)
    if items is None:
        items = plan_items(lengths, setup, scheme, offload=offload)
    elif not isinstance(items, Items) or (items.scheme == "static") != (scheme == "static"):
        raise ValueError(f"items must come from plan_items with the same kind of scheme as "
                         f"scheme={scheme!r}; got {_show(items)}")
    R = setup.d_hdp
    if items.width.max() > R:
        raise ValueError(f"items need up to {items.width.max()} ranks for one sequence but "
                         f"setup's pool has {R}")
    if _naive is not None and not (isinstance(_naive, SequenceStep) and _naive.items is items
                                   and _naive.setup == setup and _naive.scheme == "naive"
                                   and _naive.offload == offload):
        raise ValueError("_naive must be the naive step of the same items and setup, or None; "
                         f"got {_show(_naive)}")
    step = _place_and_run(items, setup, scheme, balance, delta, offload, n_buckets)
    if scheme == "balanced":
        wide = _widened_step(items, setup, balance, delta, offload, n_buckets) if widen else None
        if wide is not None and wide.step_time < step.step_time:
            step = wide
        naive = _naive if _naive is not None else schedule_step(
            lengths, setup, "naive", offload=offload, items=items)
        if naive.step_time < step.step_time:
            return trusted(SequenceStep, **{**naive.__dict__, "scheme": "balanced",
                                            "balance": balance, "delta": delta,
                                            "fallback": True})
    return step


def default_buckets(widths, n_ranks: int) -> int:
    """The number of Alg. 2's buckets when none is given (model; the paper does not say): the
    mean number of micro-batches per rank, ``ceil(sum(widths) / n_ranks)``, at least 1 and at
    most the number of items."""
    w = as_int_array("widths", widths, ndim=1, lo=1)
    R = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_GPUS)
    if w.size == 0:
        raise ValueError("widths must hold at least one item")
    return int(min(w.size, max(1, -(-int(w.sum()) // R))))


def _balance_plan(items, setup, balance, delta, item_ptr, n_buckets=None):
    """The balance rounds on ``items``: ranks and slots per item, each rank's estimated finish
    (s; exact when ``pp = 1``), and the number of buckets used."""
    R, p = setup.d_hdp, setup.pp
    # a rank's whole share of the model, forward + backward
    t_unit = (1.0 + setup.backward_factor) * setup.model.layers
    t_in = items.fwd_intra * t_unit
    t_out = items.fwd_inter * t_unit
    mode = BALANCES.index(balance)
    if mode == 2:
        order = np.argsort(-t_out, kind="stable").astype(np.int64)
        bucket_ptr = np.array([0, items.n], dtype=np.int64)
    else:
        B = default_buckets(items.width, R) if n_buckets is None else min(n_buckets, items.n)
        order, bucket_ptr = flop_buckets(t_out * items.width, B)
    ranks = np.empty(item_ptr[-1], dtype=np.int64)
    slots = np.empty(item_ptr[-1], dtype=np.int64)
    load = np.empty(R)
    limit = max_steps()
    done = _balance_kernel(order, bucket_ptr, items.width, t_in, t_out, R, delta, p, mode, p > 1,
                           setup.ranks_per_node, item_ptr, ranks, slots, load,
                           np.empty(items.n), limit)
    if done < 0:
        check_steps("lengths", items.tokens, limit + 1, f"balance rounds over {R} ranks, "
                    "stopped at the limit")
    return ranks, slots, load


def _widened_step(items, setup, balance, delta, offload, n_buckets):
    """Among the widths :func:`widen_rings` gives for :data:`WIDEN_SLACKS`, the balanced step
    that ends first, or None when no ring is widened. With ``pp = 1`` the balance rounds' finish
    is exact and picks the widths; with pipelines every candidate is timed."""
    cands, seen = [], set()
    for slack in WIDEN_SLACKS:
        wide = widen_rings(items, setup, slack=slack)
        key = wide.width.tobytes()
        if wide is not items and key not in seen:
            seen.add(key)
            cands.append(wide)
    if not cands:
        return None
    if setup.pp == 1:
        ends = []
        for wide in cands:
            ptr = np.zeros(wide.n + 1, dtype=np.int64)
            np.cumsum(wide.width, out=ptr[1:])
            ends.append(float(_balance_plan(wide, setup, balance, delta, ptr, n_buckets)[2].max()))
        cands = [cands[int(np.argmin(ends))]]
    steps = [_place_and_run(w, setup, "balanced", balance, delta, offload, n_buckets)
             for w in cands]
    return min(steps, key=lambda st: st.step_time)


def _place_and_run(items, setup, scheme, balance, delta, offload, n_buckets=None):
    """Assign ``items`` to ranks and slots under ``scheme`` and time the step."""
    R = setup.d_hdp
    item_ptr = np.zeros(items.n + 1, dtype=np.int64)
    np.cumsum(items.width, out=item_ptr[1:])
    if scheme == "static":
        ranks, slots = _static_assign(items, setup)
    elif scheme == "naive":
        # first fit: any two rounds hold more than R ranks together, so at most 2 W / R + 1
        rounds = min(items.n, 2.0 * float(item_ptr[-1]) / R + 1.0)
        check_steps("lengths", items.tokens, items.n * rounds + item_ptr[-1],
                    "filling the naive rounds")
        ranks = np.empty(item_ptr[-1], dtype=np.int64)
        slots = np.empty(item_ptr[-1], dtype=np.int64)
        _naive_kernel(items.order, items.width, R, ranks, slots, item_ptr)
    else:
        ranks, slots, _ = _balance_plan(items, setup, balance, delta, item_ptr, n_buckets)
    return _run(items, setup, scheme, balance, delta, offload, item_ptr, ranks, slots,
                setup.layers_per_stage)


def _run(items, setup, scheme, balance, delta, offload, item_ptr, ranks, slots, layers):
    R, p = setup.d_hdp, setup.pp
    node = (ranks * setup.tp * p) // 8
    same = np.minimum.reduceat(node, item_ptr[:-1]) == np.maximum.reduceat(node, item_ptr[:-1])
    intra = (items.width == 1) | (same & (setup.ranks_per_node > 1))
    fwd = np.where(intra, items.fwd_intra, items.fwd_inter)
    exposed = np.where(intra, items.exposed_intra, items.exposed_inter)
    t_f = fwd * layers
    # per rank lists (slots may leave gaps when pp > 1: empty, zero-length micro-batches)
    count = np.zeros(R, dtype=np.int64)
    np.maximum.at(count, ranks, slots + 1)
    if p == 1:  # no alignment needed: compact each rank's slots in order
        rank_ptr = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(np.bincount(ranks, minlength=R), out=rank_ptr[1:])
        key = ranks * (slots.max() + 1 if slots.size else 1) + slots
        srt = np.argsort(key, kind="stable")
        item_id = np.repeat(np.arange(items.n), items.width)
        rank_items = item_id[srt].astype(np.int64)
        pos_of = np.empty_like(srt)
        pos_of[srt] = np.arange(srt.size)
        slots = (pos_of - rank_ptr[ranks]).astype(np.int64)
    else:
        rank_ptr = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(count, out=rank_ptr[1:])
        rank_items = np.full(rank_ptr[-1], -1, dtype=np.int64)
        item_id = np.repeat(np.arange(items.n), items.width)
        rank_items[rank_ptr[ranks] + slots] = item_id
    n_slots = int(rank_ptr[-1])
    n_ring = int((items.width > 1).sum())
    n_max = n_slots * (1 if p == 1 else 2 * p) + n_ring * (1 if p == 1 else 2 * p)
    if n_max > _MAX_OPS:
        raise ValueError(f"lengths: the step would need {n_max:,} timeline ops (at most "
                         f"{_MAX_OPS:,}); use fewer micro-batches or stages")
    e_max = n_slots * (1 if p == 1 else 2 * p) * 3 + 8
    # the DAG's arrays (48 bytes an op, 24 an edge, 8 an op id) and the timeline's (about 64 an
    # op and 16 an edge)
    check_bytes("lengths", items.tokens, 112 * n_max + 40 * e_max + 16 * n_slots * p,
                "the step's timeline")
    dur = np.empty(n_max)
    res = np.empty(n_max, dtype=np.int64)
    kind = np.empty(n_max, dtype=np.int64)
    item_of = np.empty(n_max, dtype=np.int64)
    rank_of = np.empty(n_max, dtype=np.int64)
    slot_of = np.empty(n_max, dtype=np.int64)
    src = np.empty(e_max, dtype=np.int64)
    dst = np.empty(e_max, dtype=np.int64)
    dly = np.empty(e_max)
    opid = np.full(max(n_slots * 2 * p, 1), -1, dtype=np.int64)
    hops = setup.hops()
    act_intra_bw = setup.tp * setup.nvlink_bw
    act_inter_bw = setup.tp * setup.nic_bw
    n, e = _step_dag(p, R, rank_ptr, rank_items, item_ptr, t_f,
                     np.ascontiguousarray(items.act_bytes), act_intra_bw, act_inter_bw,
                     hops["intra_lat"], hops["inter_lat"], setup.tp, dur, res, kind, item_of,
                     rank_of, slot_of, src, dst, dly, opid, setup.backward_factor)
    from ..engines.timeline import edges_to_csr, run_timeline

    ptr, psrc, pdly = edges_to_csr(n, src[:e], dst[:e], dly[:e])
    tl = run_timeline(dur[:n], res[:n], ptr, psrc, pdly)
    keep = (kind[:n] >= 0) & (item_of[:n] >= 0)
    r_of = res[:n][keep]
    d_of = dur[:n][keep]
    it_of = item_of[:n][keep]
    busy_res = np.bincount(r_of, weights=d_of, minlength=R * p)
    bwd = setup.backward_factor
    mult = np.where(kind[:n][keep] == 2, 1.0 + bwd, np.where(kind[:n][keep] == 1, bwd, 1.0))
    exp_res = np.bincount(r_of, weights=mult * exposed[it_of] * layers, minlength=R * p)
    busy = busy_res.reshape(R, p).max(axis=1)
    exposed_rank = exp_res.reshape(R, p).max(axis=1)
    mbs = np.bincount(ranks, minlength=R)
    compute_time = tl.makespan
    sync = setup.grad_sync_time()
    unit = (1.0 + bwd) * t_f  # one item's work on one of its ranks, one stage
    longest = float(unit.max()) * p if unit.size else 0.0  # one micro-batch through every stage
    per_stage = float((unit * items.width).sum()) / R  # every stage runs all its micro-batches
    lower = max(longest, per_stage) + sync
    out = dict(busy=busy, exposed=exposed_rank, microbatches=mbs, resource=tl.resource[keep],
               start=tl.start[keep], finish=tl.finish[keep], kind=kind[:n][keep], item=it_of,
               item_ptr=item_ptr, item_ranks=ranks, intra=intra)
    for a in out.values():
        a.flags.writeable = False
    return trusted(
        SequenceStep, scheme=scheme, balance=balance, delta=delta, offload=offload, setup=setup,
        items=items, step_time=compute_time + sync, compute_time=compute_time, sync_time=sync,
        lower_bound=lower, fallback=False, **out)


def compare_schemes(lengths, setup: HdpSetup, *, balance: str = "dp", delta: float = 0.0,
                    offload: bool = False, widen: bool = False,
                    n_buckets: int | None = None) -> dict:
    """The three schemes on one global batch: ``{"static mesh": ..., "naive HDP": ...,
    "balanced HDP": ...}`` (:class:`SequenceStep` each; HDP items are planned once)."""
    _check_setup(setup)
    check_choice("balance", balance, BALANCES)
    check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    check_bool("offload", offload)
    check_bool("widen", widen)
    static = schedule_step(lengths, setup, "static")
    items = plan_items(lengths, setup, "naive", offload=offload)
    naive = schedule_step(lengths, setup, "naive", offload=offload, items=items)
    bal = schedule_step(lengths, setup, "balanced", balance=balance, delta=delta,
                        offload=offload, widen=widen, n_buckets=n_buckets, items=items,
                        _naive=naive)
    return {"static mesh": static, "naive HDP": naive, "balanced HDP": bal}


# --------------------------------------------------------------------------------------------
# small instances: the heuristic against an exact optimum
# --------------------------------------------------------------------------------------------


def list_schedule(durations, widths, n_ranks: int, *, delta: float = 0.0) -> float:
    """Makespan (s) of the balance scheduler's rounds on bare items (``pp = 1``): item ``i``
    needs ``widths[i]`` ranks at once for ``durations[i]`` seconds; longest first.

    Durations in [0, 1e30] s; ``n_ranks`` up to 131,072; the placements (16 bytes per rank of
    every item) within the memory budget and the rounds within the work budget of
    :mod:`uneven.limits`.

    >>> list_schedule([3.0, 2.0, 2.0, 1.0], [1, 1, 1, 1], 2)
    4.0
    """
    d = as_float_array("durations", durations, ndim=1, lo=0.0, hi=1e30, unit="s")
    w = as_int_array("widths", widths, ndim=1, shape=(d.size,), lo=1)
    R = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_GPUS)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    if d.size and w.max() > R:
        raise ValueError(f"widths must be <= n_ranks={R}; the widest item needs {w.max()}")
    ptr = np.zeros(d.size + 1, dtype=np.int64)
    np.cumsum(w, out=ptr[1:])
    check_bytes("widths", w, 16.0 * ptr[-1] + 32.0 * R, "the placement of every item")
    order = np.argsort(-d, kind="stable").astype(np.int64)
    ranks = np.empty(ptr[-1], dtype=np.int64)
    slots = np.empty(ptr[-1], dtype=np.int64)
    load = np.empty(R)
    limit = max_steps()
    one = np.array([0, d.size], dtype=np.int64)
    done = _balance_kernel(order, one, w, d, d, R, delta, 1, 0, False, 0, ptr, ranks, slots,
                           load, np.empty(d.size), limit)
    if done < 0:
        check_steps("durations", d, limit + 1, f"balance rounds over {R} ranks, stopped at the "
                    "limit")
    return float(load.max()) if d.size else 0.0


@dataclass(frozen=True)
class BalancePlan(Checked):
    """Where :func:`balance_rounds` put each item (times in s): ``ranks[i]`` (a tuple of rank
    ids), ``start``/``finish`` per item, ``bucket`` per item (its Alg. 2 bucket), ``load`` per
    rank (its finish), ``makespan``. Checked when made (:func:`balance_rounds` builds it without
    re-checking): a name from :data:`BALANCES`, one tuple of rank ids per item, finite times >= 0
    (at most 1e40); the arrays are read-only."""

    balance: str = choice(lambda: BALANCES)
    ranks: tuple = items(items(integer(lo=0, hi=_MAX_GPUS - 1), hi=_MAX_GPUS), hi=1 << 20)
    start: np.ndarray = array(shape=lambda pl: (len(pl.ranks),), lo=0.0, hi=_MAX_TIME,
                              repr=False)
    finish: np.ndarray = array(shape=lambda pl: (len(pl.ranks),), lo=0.0, hi=_MAX_TIME,
                               repr=False)
    bucket: np.ndarray = array("int", shape=lambda pl: (len(pl.ranks),), lo=0, repr=False)
    load: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=_MAX_TIME, repr=False)
    makespan: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    check_first = ("ranks",)

    def __post_init__(self):
        check_fields(self)


def balance_rounds(durations, widths, n_ranks: int, *, balance: str = "dp",
                   n_buckets: int | None = None, delta: float = 0.0,
                   stages: int = 1) -> BalancePlan:
    """The balance scheduler's rounds on bare items, for small worked examples: item ``i``
    needs ``widths[i]`` ranks at once for ``durations[i]`` seconds.

    ``balance``: ``"dp"`` (Alg. 2's DP-Balance: the trailing ranks take the next items of the
    first bucket, so a round runs one length level), ``"pp"`` (PP-Balance: each trailing rank
    takes from its own bucket in turn, ``b = r * B // R``, so a rank keeps to one length level)
    or ``"longest-first"`` (the model's variant: no buckets); ``n_buckets`` in [1, 2**20]
    (``None``: :func:`default_buckets`); ``delta`` in [0, 1); ``stages`` in [1, 256]: with more
    than one, the PP rules rank a pipeline by its 1F1B time ``(sum t + (stages - 1) max t) /
    stages`` (the model's estimate). At most 10,000 items (durations in [0, 1e30] s) and 4,096
    ranks.

    >>> t = [4, 4, 2, 2, 2, 2, 1, 1, 1, 1]       # buckets of 10 s: 4, 4, 2 | 2, 2, 2, 1 x 4
    >>> dp = balance_rounds(t, [1] * 10, 4, n_buckets=2)
    >>> pp = balance_rounds(t, [1] * 10, 4, balance="pp", n_buckets=2)
    >>> dp.ranks[:4], pp.ranks[:4]           # PP: ranks 0, 1 keep to bucket 0, ranks 2, 3 to 1
    (((0,), (1,), (2,), (3,)), ((0,), (1,), (0,), (2,)))
    >>> dp.makespan, pp.makespan             # with one stage, keeping to a bucket costs time
    (5.0, 6.0)
    """
    d = as_float_array("durations", durations, ndim=1, lo=0.0, hi=1e30, unit="s")
    w = as_int_array("widths", widths, ndim=1, shape=(d.size,), lo=1)
    R = check_int("n_ranks", n_ranks, lo=1, hi=4096)
    balance = check_choice("balance", balance, BALANCES)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    p = check_int("stages", stages, lo=1, hi=256)
    if not 1 <= d.size <= 10_000:
        raise ValueError(f"durations must hold 1 to 10,000 items; got {d.size}")
    if w.max() > R:
        raise ValueError(f"widths must be <= n_ranks={R}; the widest item needs {w.max()}")
    B = default_buckets(w, R) if n_buckets is None else check_int("n_buckets", n_buckets, lo=1,
                                                                    hi=1 << 20)
    mode = BALANCES.index(balance)
    if mode == 2:
        order = np.argsort(-d, kind="stable").astype(np.int64)
        bucket_ptr = np.array([0, d.size], dtype=np.int64)
    else:
        order, bucket_ptr = flop_buckets(d * w, min(B, d.size))
    ptr = np.zeros(d.size + 1, dtype=np.int64)
    np.cumsum(w, out=ptr[1:])
    ranks = np.empty(ptr[-1], dtype=np.int64)
    slots = np.empty(ptr[-1], dtype=np.int64)
    load = np.empty(R)
    start = np.empty(d.size)
    _balance_kernel(order, bucket_ptr, w, d, d, R, delta, p, mode, False, 0, ptr, ranks, slots,
                    load, start)
    bucket = np.empty(d.size, dtype=np.int64)
    bucket[order] = np.repeat(np.arange(bucket_ptr.size - 1), np.diff(bucket_ptr))
    finish = start + d
    for a in (start, finish, bucket, load):
        a.flags.writeable = False
    return trusted(BalancePlan, balance=balance,
                   ranks=tuple(tuple(int(r) for r in ranks[ptr[i]:ptr[i + 1]])
                               for i in range(d.size)),
                   start=start, finish=finish, bucket=bucket, load=load,
                   makespan=float(load.max()))


def optimal_makespan(durations, widths, n_ranks: int) -> float:
    """Exact shortest makespan (s) of items that each need ``widths[i]`` of ``n_ranks`` identical
    ranks at once for ``durations[i]`` seconds (no pre-emption), by trying every order with a
    serial schedule that starts each item as early as the free ranks allow. At most 8 items
    (durations in [0, 1e30] s) and 64 ranks.

    >>> optimal_makespan([3.0, 2.0, 2.0, 1.0], [1, 1, 1, 1], 2)
    4.0
    >>> optimal_makespan([2.0, 1.0, 1.0], [2, 1, 1], 2)
    3.0
    """
    d = as_float_array("durations", durations, ndim=1, lo=0.0, hi=1e30, unit="s")
    w = as_int_array("widths", widths, ndim=1, shape=(d.size,), lo=1)
    R = check_int("n_ranks", n_ranks, lo=1, hi=64)
    if d.size > 8:
        raise ValueError(f"durations must hold at most 8 items (an exhaustive search); got "
                         f"{d.size}")
    if d.size and w.max() > R:
        raise ValueError(f"widths must be <= n_ranks={R}; the widest item needs {w.max()}")
    if d.size == 0:
        return 0.0
    # No schedule beats the longest item, the area over the ranks, or the items wider than
    # R / (k + 1), which run at most k at a time; an order that reaches this bound is optimal.
    lower = max(float(d.max()), float((d * w).sum()) / R,
                *(float(d[(k + 1) * w > R].sum()) / k for k in range(1, d.size + 1)))
    dl, wl = d.tolist(), w.tolist()  # plain floats and ints: the search is pure Python
    n = d.size
    # an item identical to an earlier one goes after it (swapping them changes nothing)
    twin = [max((j for j in range(i) if (dl[j], wl[j]) == (dl[i], wl[i])), default=-1)
            for i in range(n)]
    placed, used, best = [], [False] * n, [math.inf]

    def start(di, wi):
        """The earliest time the free ranks allow (serial schedule generation)."""
        cands = sorted({0.0, *(b for _, b, _ in placed)})
        for t in cands:
            pts = [t] + [a for a, _, _ in placed if t < a < t + di]
            if all(sum(ww for a, b, ww in placed if a <= q < b) + wi <= R for q in pts):
                return t
        return cands[-1]  # not reached: every item fits once all others have ended

    def search(end, depth):
        """Every order, depth first, sharing prefixes; a prefix that already ends no earlier
        than the best schedule is cut. True once the lower bound is reached."""
        if depth == n:
            best[0] = min(best[0], end)
            return best[0] <= lower
        for i in range(n):
            if used[i] or (twin[i] >= 0 and not used[twin[i]]):
                continue
            t = start(dl[i], wl[i])
            new_end = max(end, t + dl[i])
            if new_end >= best[0]:
                continue
            used[i] = True
            placed.append((t, t + dl[i], wl[i]))
            done = search(new_end, depth + 1)
            placed.pop()
            used[i] = False
            if done:
                return True
        return False

    search(0.0, 0)
    return float(best[0])


# --------------------------------------------------------------------------------------------
# exactness of unequal micro-batch counts
# --------------------------------------------------------------------------------------------


def _assignment_parts(assignment, n):
    """Per sequence, the list of its ``(rank, micro_batch)`` pieces, checked."""
    if not isinstance(assignment, (list, tuple, np.ndarray)) or len(assignment) != n:
        got = len(assignment) if isinstance(assignment, (list, tuple, np.ndarray)) else \
            _show(assignment)
        raise ValueError(f"assignment must be a list with one (rank, micro_batch) pair, or a "
                         f"list of such pairs, per sequence ({n}); got {got}")
    out, total = [], 0
    for i, a in enumerate(assignment):
        if isinstance(a, np.ndarray):
            a = a.tolist()
        if not isinstance(a, (list, tuple)) or not a:
            raise ValueError(f"assignment[{i}] must be a (rank, micro_batch) pair or a list of "
                             f"them; got {_show(a)}")
        pair = len(a) == 2 and not isinstance(a[0], (list, tuple, np.ndarray))
        parts = [a] if pair else list(a)
        total += len(parts)
        if len(parts) > 4096 or total > 100_000:
            raise ValueError(f"assignment[{i}] splits a sequence over {len(parts)} pieces; at "
                             "most 4,096 per sequence and 100,000 in all")
        checked = []
        for part in parts:
            if isinstance(part, np.ndarray):
                part = part.tolist()
            if not isinstance(part, (list, tuple)) or len(part) != 2:
                raise ValueError(f"assignment[{i}] must hold (rank, micro_batch) pairs; got "
                                 f"{_show(part)}")
            checked.append((check_int(f"assignment[{i}] rank", part[0], lo=0, hi=1 << 20),
                            check_int(f"assignment[{i}] micro_batch", part[1], lo=0,
                                      hi=1 << 20)))
        out.append(checked)
    return out


def assignment_gradient(lengths, assignment, *, loss: str = "token", seed=0,
                        dim: int = 4) -> np.ndarray:
    """Data-parallel gradient of a tiny linear model under one assignment to micro-batches.

    Token ``t`` of the batch has features ``x_t`` and target ``y_t`` (seeded); the model predicts
    ``w . x_t`` with squared error. ``assignment`` gives, per sequence, ``(rank, micro_batch)``
    — or, to split a sequence over a ring, a list of such pairs that share its tokens evenly.
    Each rank sums its micro-batches' gradients and the ranks' sums are averaged (DP all-reduce
    of the mean); ``loss`` says how each micro-batch normalises:

    * ``"token"``: by the tokens of the *global* batch (ByteScale's token-level loss), times the
      number of ranks to undo the DP mean — the same gradient for every assignment;
    * ``"microbatch"``: by its own tokens, and each rank divides by its micro-batch count (the
      usual gradient accumulation) — the gradient then depends on the assignment;
    * ``"sequence"``: a per-sequence mean — each sequence (or piece of one) averages over its own
      tokens, the micro-batch averages over its sequences, each rank over its micro-batches —
      which depends on the assignment too.

    Returns the gradient at ``w = 0`` (length ``dim``, at most 64). At most 10,000 sequences
    and 1,000,000 tokens (the token features, ``8 * tokens * dim`` bytes, within the memory
    budget of :mod:`uneven.limits`); ranks and micro-batch ids at most 2**20; a ring of at most
    4,096 pieces per sequence, 100,000 pieces in all.
    """
    from ..workloads import rng_from

    x = as_int_array("lengths", lengths, ndim=1, lo=1, hi=1 << 20)
    loss = check_choice("loss", loss, ("token", "microbatch", "sequence"))
    dim = check_int("dim", dim, lo=1, hi=64)
    if x.size == 0 or x.size > 10_000 or x.sum() > 1_000_000:
        raise ValueError(f"lengths must hold 1 to 10,000 sequences and at most 1,000,000 "
                         f"tokens; got {x.size} sequences of {int(x.sum()):,} tokens")
    parts_of = _assignment_parts(assignment, x.size)
    check_bytes("lengths", x, 8.0 * float(x.sum()) * (2 * dim + 3), "the token features")
    rng = rng_from(seed)
    feats = rng.normal(size=(int(x.sum()), dim))
    target = rng.normal(size=int(x.sum()))
    per_token = -2.0 * target[:, None] * feats  # d/dw (w.x - y)^2 at w = 0
    starts = np.concatenate([[0], np.cumsum(x)[:-1]])
    pieces = {}  # (rank, mb) -> list of token index arrays
    for i, parts in enumerate(parts_of):
        idx = np.arange(starts[i], starts[i] + x[i])
        for k, chunk in enumerate(np.array_split(idx, len(parts))):
            if chunk.size == 0:  # a sequence shorter than its ring: this rank gets no token
                continue
            pieces.setdefault(parts[k], []).append(chunk)
    by_rank = {}  # rank -> its (rank, mb) keys, in the order they were met
    for key in pieces:
        by_rank.setdefault(key[0], []).append(key)
    ranks = sorted(by_rank)
    n_tok = float(x.sum())
    grad = np.zeros(dim)
    for r in ranks:
        mbs = by_rank[r]
        g_rank = np.zeros(dim)
        for key in mbs:
            tok = np.concatenate(pieces[key])
            g = per_token[tok].sum(axis=0)
            if loss == "token":
                g_rank += g / n_tok * len(ranks)
            elif loss == "microbatch":
                g_rank += g / tok.size / len(mbs)
            else:
                per_seq = [per_token[c].mean(axis=0) for c in pieces[key]]
                g_rank += np.mean(per_seq, axis=0) / len(mbs)
        grad += g_rank / len(ranks)
    return grad
