"""Mixture-of-experts routing: plain top-k, DeepSeek-V3 node-limited top-k, bias balancing.

Everything starts from a gate-score matrix ``scores[token, expert]`` (float64, unitless). In
DeepSeek-V3 the scores are sigmoids of the token-expert affinity, so they lie in (0, 1).

Routing rule of DeepSeek-V3 (training), implemented by :func:`node_limited_route`:

1. ``sb = scores + bias``; the bias only steers *which* experts are chosen;
2. the experts are cut into ``n_groups`` contiguous groups (one group = the experts of one node);
   a group's score is the sum of its two largest biased scores;
3. only the ``max_groups`` best groups stay (so a token reaches at most that many nodes);
4. the ``k`` largest biased scores inside the kept groups are the token's experts;
5. the weights are the *unbiased* scores of those ``k`` experts, normalised to sum to one and
   multiplied by ``route_scale`` (2.5 in DeepSeek-V3).

Ties are broken by the lowest index (expert or group), so results are reproducible bit for bit.
Between steps the bias is nudged towards balance by :func:`update_bias` (the auxiliary-loss-free
balancing of DeepSeek-V3).

>>> import numpy as np
>>> s = np.array([[0.9, 0.1, 0.8, 0.7]])
>>> ids, w = topk_route(s, 2)
>>> ids.tolist(), np.round(w, 3).tolist()
([[0, 2]], [[0.529, 0.471]])
>>> node_limited_route(s, 2, n_groups=2, max_groups=1).expert_ids.tolist()
[[2, 3]]
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._jit import njit
from .._validate import as_float_array, as_int_array, check_int, check_real, frozen_array
from ..limits import check_bytes, check_steps
from ._kernels import (
    _U,
    _bias_transposed,
    _counter_args,
    _gen_top2,
    _one_score,
    _rank_order,
    _route_8x32,
    _route_generated,
    _transposed,
)

__all__ = [
    "Routing",
    "topk_route",
    "node_limited_route",
    "update_bias",
    "expert_load",
    "load_ratio",
    "synthetic_gate_scores",
    "skew_for_load_ratio",
    "expected_distinct_groups",
    "contiguous_placement",
    "counter_gate_scores",
    "generated_route",
]


class _RoutingFields(NamedTuple):
    expert_ids: np.ndarray
    weights: np.ndarray


class Routing(_RoutingFields):
    """The result of routing ``T`` tokens to ``k`` experts each.

    ``expert_ids`` int64 ``[T, k]``: chosen experts, best (largest biased score) first.
    ``weights`` float64 ``[T, k]``: gate weights (unitless), each row sums to ``route_scale``.
    Unpacks like a tuple: ``ids, w = topk_route(scores, k)``. Checked when made (ids >= 0, finite
    weights of the same shape); both arrays are read-only.
    """

    __slots__ = ()

    def __new__(cls, expert_ids, weights):
        ids = frozen_array("expert_ids", expert_ids, dtype="int", ndim=2, lo=0)
        w = frozen_array("weights", weights, shape=ids.shape)
        return super().__new__(cls, ids, w)


# --------------------------------------------------------------------------------------------
# kernels


@njit(inline="always")
def _finish(scores, t, k, order, out_ids, out_w, route_scale):
    """Write the ``k`` best ids and their unbiased scores normalised to sum to ``route_scale``."""
    total = 0.0
    for j in range(k):
        out_ids[t, j] = order[j]
        out_w[t, j] = scores[t, order[j]]
        total += out_w[t, j]
    for j in range(k):
        if total > 0.0:
            out_w[t, j] = out_w[t, j] / total * route_scale
        else:  # all chosen scores are zero: no preference, share equally
            out_w[t, j] = route_scale / k


# Speed notes (both kernels). Scanning 256 scores with a sorted top-k buffer mispredicts a
# branch on most of its ~30 insertions. Instead: find a threshold ``tau`` that at least ``k``
# candidates reach (from block maxima, or from the kept groups' second-best scores), collect the
# candidates >= tau without branching (always write, advance the cursor by the comparison; ~10
# survive), and rank those few without branching. Every top-k value is >= tau and every tie at
# tau is collected, so the answer, tie rule included, equals a full sort's. min/max compile to
# vminsd/vmaxsd. Measured on a shared 2-vCPU VM (256 experts, top-8 of 4/8 groups, in-cache):
# ~300 ns/token for the top-2 pass, ~190 for the collection, ~250 for the rest. Reading the
# scores alone costs ~80 ns/token (2 KB from L3), so the floor is not far below.


@njit(nogil=True)
def _topk_kernel(scores, bias, k, route_scale, out_ids, out_w, sb, cand, cval, order):
    """Returns -1, or the first token with a negative or non-finite score (then stops)."""
    n_tokens, n_experts = scores.shape
    block = n_experts // k  # k blocks; the last one takes the remainder
    for t in range(n_tokens):
        lo = 0.0
        nan = 0.0
        for e in range(n_experts):
            x = scores[t, e]
            lo = min(lo, x)
            nan += x - x  # NaN once any score is NaN or infinite
            sb[e] = x + bias[e]
        if lo < 0.0 or nan != 0.0:
            return t
        # tau = smallest of the k block maxima: each block holds a candidate >= tau
        tau = np.inf
        for b in range(k):
            hi = n_experts if b == k - 1 else (b + 1) * block
            best = -np.inf
            for e in range(b * block, hi):
                best = max(best, sb[e])
            tau = min(tau, best)
        m = 0
        for e in range(n_experts):
            v = sb[e]
            cand[m] = e
            cval[m] = v
            m += v >= tau
        _rank_order(cval, cand, m, order)
        _finish(scores, t, k, order, out_ids, out_w, route_scale)
    return -1


@njit(nogil=True)
def _node_limited_kernel(
    scores, bits, bias, k, n_groups, max_groups, route_scale, out_ids, out_w,
    gbest, gsecond, gscore, kept, tops, cand, cval, order,
):
    """Returns -1, or the first token with a negative or non-finite score (then stops).

    ``bits`` is ``scores`` viewed as int64 (same memory), for a vectorised validity check."""
    n_tokens, n_experts = scores.shape
    gsize = n_experts // n_groups
    q = gsize - gsize % 4  # the first q experts of a group go through four interleaved lanes
    n_kept = max_groups * gsize
    n_tops = 2 * max_groups if k <= 2 * max_groups else 2 * ((k + 1) // 2)
    inf = np.inf
    for tt in range(n_tokens):
        t = _U(tt)
        # validity from the bit patterns (an integer max vectorises, a float one does not): the
        # sign bit plus the 11 exponent bits reach 0x7FF only for a negative, inf or NaN score
        hi = 0
        for e in range(n_experts):
            hi = max(hi, (bits[t, _U(e)] >> 52) & 0xFFF)
        if hi >= 0x7FF:  # a sign bit, inf or NaN: check precisely (-0.0 is fine)
            for e in range(n_experts):
                x = scores[t, _U(e)]
                if not (x >= 0.0 and x < inf):
                    return tt
        # pass 1: each group's two largest biased scores. Four independent lanes (stride 4) keep
        # the max/min dependency chains short; a group's top two are merged from its lanes'.
        for g in range(n_groups):
            base = g * gsize
            a0 = a1 = a2 = a3 = -inf  # each lane's largest so far
            b0 = b1 = b2 = b3 = -inf  # each lane's second largest so far
            for i in range(0, q, 4):
                e = _U(base + i)
                v0 = scores[t, e] + bias[e]
                v1 = scores[t, e + _U(1)] + bias[e + _U(1)]
                v2 = scores[t, e + _U(2)] + bias[e + _U(2)]
                v3 = scores[t, e + _U(3)] + bias[e + _U(3)]
                b0 = max(b0, min(a0, v0))
                b1 = max(b1, min(a1, v1))
                b2 = max(b2, min(a2, v2))
                b3 = max(b3, min(a3, v3))
                a0 = max(a0, v0)
                a1 = max(a1, v1)
                a2 = max(a2, v2)
                a3 = max(a3, v3)
            for i in range(q, gsize):
                e = _U(base + i)
                v0 = scores[t, e] + bias[e]
                b0 = max(b0, min(a0, v0))
                a0 = max(a0, v0)
            # top two of a union = larger max, and max(smaller max, larger second)
            b0 = max(min(a0, a1), max(b0, b1))
            a0 = max(a0, a1)
            b2 = max(min(a2, a3), max(b2, b3))
            a2 = max(a2, a3)
            b0 = max(min(a0, a2), max(b0, b2))
            a0 = max(a0, a2)
            gbest[_U(g)] = a0
            gsecond[_U(g)] = b0
            gscore[_U(g)] = a0 + b0 if gsize > 1 else a0
        # keep the max_groups best groups (ties: lower index), listed in increasing index
        nk = 0
        for g in range(n_groups):
            gs = gscore[_U(g)]
            r = 0
            for h in range(n_groups):
                vh = gscore[_U(h)]
                r += (vh > gs) | ((vh == gs) & (h < g))
            kept[_U(nk)] = g
            nk += r < max_groups
        # tau = the k-th largest of n_tops >= k values held by distinct kept experts (the top two
        # of blocks of the kept experts), so at least k kept experts reach tau and all of the
        # top k are >= tau. Usually the blocks are the kept groups, whose top two are known.
        if k == n_kept:
            tau = -inf  # every kept expert is chosen
        else:
            if k <= 2 * max_groups:
                for j in range(max_groups):
                    tops[_U(2 * j)] = gbest[_U(kept[_U(j)])]
                    tops[_U(2 * j + 1)] = gsecond[_U(kept[_U(j)])]
            else:  # more picks than two per kept group: cut the kept experts into blocks
                nb = n_tops // 2
                blk = n_kept // nb  # >= 2 because k < n_kept
                a0 = b0 = -inf
                p = 0
                i = 0
                for j in range(max_groups):
                    base = kept[_U(j)] * gsize
                    for e in range(base, base + gsize):
                        v0 = scores[t, _U(e)] + bias[_U(e)]
                        b0 = max(b0, min(a0, v0))
                        a0 = max(a0, v0)
                        p += 1
                        if p == blk and i < nb - 1:
                            tops[_U(2 * i)] = a0
                            tops[_U(2 * i + 1)] = b0
                            a0 = b0 = -inf
                            p = 0
                            i += 1
                tops[_U(2 * i)] = a0
                tops[_U(2 * i + 1)] = b0
            tau = inf
            if k == n_tops:
                for i in range(n_tops):
                    tau = min(tau, tops[_U(i)])
            else:
                for i in range(n_tops):
                    vi = tops[_U(i)]
                    r = 0
                    for j in range(n_tops):
                        r += tops[_U(j)] > vi
                    tau = min(tau, vi if r < k else inf)
        # pass 2: the kept experts >= tau (~k of them) in increasing id, then the k best
        m = 0
        for j in range(max_groups):
            base = kept[_U(j)] * gsize
            for i in range(gsize):
                e = _U(base + i)
                v = scores[t, e] + bias[e]
                cand[_U(m)] = e
                cval[_U(m)] = v
                m += v >= tau
        _rank_order(cval, cand, m, order)
        _finish(scores, tt, k, order, out_ids, out_w, route_scale)
    return -1


# --------------------------------------------------------------------------------------------
# pure-Python references (tests only): sort everything, obviously correct


def _reference_weights(row, chosen, route_scale):
    picked = [float(row[e]) for e in chosen]
    total = 0.0
    for v in picked:
        total += v
    if total > 0.0:
        return [v / total * route_scale for v in picked]
    return [route_scale / len(chosen)] * len(chosen)


def _reference_topk(scores, bias, k, route_scale):
    n_tokens, n_experts = scores.shape
    out_ids = np.zeros((n_tokens, k), dtype=np.int64)
    out_w = np.zeros((n_tokens, k))
    for t in range(n_tokens):
        sb = [scores[t, e] + bias[e] for e in range(n_experts)]
        chosen = sorted(range(n_experts), key=lambda e: (-sb[e], e))[:k]
        out_ids[t] = chosen
        out_w[t] = _reference_weights(scores[t], chosen, route_scale)
    return out_ids, out_w


def _reference_node_limited(scores, bias, k, n_groups, max_groups, route_scale):
    n_tokens, n_experts = scores.shape
    gsize = n_experts // n_groups
    out_ids = np.zeros((n_tokens, k), dtype=np.int64)
    out_w = np.zeros((n_tokens, k))
    for t in range(n_tokens):
        sb = [scores[t, e] + bias[e] for e in range(n_experts)]
        gscore = []
        for g in range(n_groups):
            top = sorted(sb[g * gsize:(g + 1) * gsize], reverse=True)
            gscore.append(top[0] + top[1] if gsize > 1 else top[0])
        kept = sorted(range(n_groups), key=lambda g: (-gscore[g], g))[:max_groups]
        allowed = [e for e in range(n_experts) if e // gsize in kept]
        chosen = sorted(allowed, key=lambda e: (-sb[e], e))[:k]
        out_ids[t] = chosen
        out_w[t] = _reference_weights(scores[t], chosen, route_scale)
    return out_ids, out_w


# --------------------------------------------------------------------------------------------
# public API


def _scores_and_bias(scores, bias):
    # A float64 C-contiguous matrix is used as is: the kernels check finiteness and sign on the
    # fly (a copy plus two numpy passes would cost more than the routing itself).
    if not (
        isinstance(scores, np.ndarray)
        and scores.dtype == np.float64
        and scores.ndim == 2
        and scores.flags.c_contiguous
    ):
        scores = as_float_array("scores", scores, ndim=2, lo=0.0)
    n_experts = scores.shape[1]
    if n_experts < 1:
        raise ValueError(f"scores must have at least one expert column; got shape {scores.shape}")
    if bias is None:
        bias = np.zeros(n_experts)
    else:
        # Bounded so that score + bias stays finite for any finite score below 1e300.
        bias = as_float_array("bias", bias, shape=(n_experts,), lo=-1e300, hi=1e300)
    return scores, bias


def _check_weights(out_w, route_scale, scores):
    """Each row of weights must sum to ``route_scale``; it does not when the chosen scores sum
    beyond the range of a float (scores near 1e308)."""
    if out_w.size:
        sums = out_w.sum(axis=1)
        if not np.all(np.abs(sums - route_scale) <= 1e-6 * route_scale):
            raise ValueError("scores must be small enough that k of them sum to a finite number "
                             f"(largest score {float(np.max(scores)):.3g})")


def _raise_bad_scores(scores, t):
    """The kernel stopped at token ``t``: let the shared validator word the error."""
    as_float_array("scores", scores[t:t + 1], ndim=2, lo=0.0)
    raise ValueError(f"scores row {t} must be finite and >= 0")  # not reached


def topk_route(scores, k: int, bias=None, route_scale: float = 1.0) -> Routing:
    """Plain top-k routing: each token picks the ``k`` experts with the largest ``scores + bias``.

    ``scores``: float64 ``[tokens, experts]``, entries >= 0 (unitless gate scores; any size the
    caller could allocate: the output is ``16 k`` bytes per token).
    ``bias``: optional float64 ``[experts]``, used for selection only, entries within +-1e300.
    Returns :class:`Routing` (``expert_ids`` best first, ties to the lower index; ``weights`` =
    unbiased scores of the chosen experts normalised over the ``k`` and times ``route_scale``;
    if all ``k`` chosen scores are 0 the weights are equal).

    >>> topk_route([[0.2, 0.5, 0.5, 0.1]], 2).expert_ids.tolist()  # tie: expert 1 before 2
    [[1, 2]]
    """
    scores, bias = _scores_and_bias(scores, bias)
    n_experts = scores.shape[1]
    k = check_int("k", k, lo=1, hi=n_experts)
    route_scale = check_real("route_scale", route_scale, lo=0.0, lo_open=True)
    n_tokens = scores.shape[0]
    out_ids = np.empty((n_tokens, k), dtype=np.int64)
    out_w = np.empty((n_tokens, k))
    bad = _topk_kernel(
        scores, bias, np.int64(k), route_scale, out_ids, out_w,
        np.empty(n_experts), np.empty(n_experts, dtype=np.int64), np.empty(n_experts),
        np.empty(n_experts, dtype=np.int64),
    )
    if bad >= 0:
        _raise_bad_scores(scores, bad)
    _check_weights(out_w, route_scale, scores)
    return Routing(out_ids, out_w)


def node_limited_route(
    scores, k: int, n_groups: int, max_groups: int, bias=None, route_scale: float = 1.0
) -> Routing:
    """DeepSeek-V3 node-limited routing (see the module docstring for the five steps).

    ``scores``: float64 ``[tokens, experts]``, entries >= 0; ``experts`` must be a multiple of
    ``n_groups`` (contiguous groups of ``experts // n_groups``; in training a group is a node).
    ``max_groups``: at most this many groups per token (4 in DeepSeek-V3);
    ``k <= max_groups * group size``. ``bias`` float64 ``[experts]`` steers selection only.
    ``route_scale``: the weights of a token sum to this (2.5 in DeepSeek-V3).
    With ``max_groups == n_groups`` this is exactly :func:`topk_route`.

    >>> s = [[0.9, 0.1, 0.8, 0.7, 0.6, 0.6]]   # group scores 1.0, 1.5, 1.2
    >>> node_limited_route(s, 3, n_groups=3, max_groups=2).expert_ids.tolist()  # 0.9 is left out
    [[2, 3, 4]]
    """
    scores, bias = _scores_and_bias(scores, bias)
    n_experts = scores.shape[1]
    n_groups = check_int("n_groups", n_groups, lo=1, hi=n_experts)
    if n_experts % n_groups:
        raise ValueError(
            f"n_groups must divide the number of experts ({n_experts}); got {n_groups}"
        )
    max_groups = check_int("max_groups", max_groups, lo=1, hi=n_groups)
    gsize = n_experts // n_groups
    k = check_int("k", k, lo=1, hi=max_groups * gsize)
    route_scale = check_real("route_scale", route_scale, lo=0.0, lo_open=True)
    n_tokens = scores.shape[0]
    out_ids = np.empty((n_tokens, k), dtype=np.int64)
    out_w = np.empty((n_tokens, k))
    n_tops = 2 * max(max_groups, (k + 1) // 2)
    bad = _node_limited_kernel(
        scores, scores.view(np.int64), bias, np.int64(k), np.int64(n_groups),
        np.int64(max_groups), route_scale, out_ids, out_w,
        np.empty(n_groups), np.empty(n_groups), np.empty(n_groups),
        np.empty(n_groups, dtype=np.int64), np.empty(n_tops),
        np.empty(n_experts, dtype=np.int64), np.empty(n_experts),
        np.empty(n_experts, dtype=np.int64),
    )
    if bad >= 0:
        _raise_bad_scores(scores, bad)
    _check_weights(out_w, route_scale, scores)
    return Routing(out_ids, out_w)


def expert_load(expert_ids, n_experts: int) -> np.ndarray:
    """Tokens routed to each expert: int64 ``[n_experts]`` counts of ``expert_ids`` entries.

    ``n_experts`` up to the memory budget of :mod:`uneven.limits` (16 bytes each).

    >>> expert_load([[0, 2], [2, 1]], 4).tolist()
    [1, 1, 2, 0]
    """
    n_experts = check_int("n_experts", n_experts, lo=1)
    check_bytes("n_experts", n_experts, 16 * n_experts, "one count per expert")
    ids = as_int_array("expert_ids", expert_ids, lo=0, hi=n_experts - 1)
    return np.bincount(ids.ravel(), minlength=n_experts).astype(np.int64)


def load_ratio(load) -> float:
    """Busiest over median load (unitless, >= 1); ``inf`` when the median is zero.

    >>> load_ratio([1, 2, 2, 6])
    3.0
    """
    load = as_float_array("load", load, ndim=1, lo=0.0)
    if load.size == 0:
        raise ValueError("load must have at least one entry; got an empty array")
    med = float(np.median(load))
    top = float(load.max())
    if med == 0.0:
        return math.inf if top > 0.0 else 1.0
    return top / med


def update_bias(bias, expert_load, gamma: float) -> np.ndarray:
    """One step of auxiliary-loss-free balancing; returns a new bias array (float64).

    Sign convention (the bias is *added* to the scores for selection, so raising it attracts
    tokens): an expert whose load is above the mean load is overloaded and gets ``bias - gamma``;
    below the mean, ``bias + gamma``; exactly at the mean, unchanged. That is
    ``bias - gamma * sign(load - mean(load))``. DeepSeek-V3 used ``gamma = 0.001``.

    >>> update_bias([0.0, 0.0, 0.0], [5, 1, 3], 0.001).tolist()
    [-0.001, 0.001, 0.0]
    """
    bias = as_float_array("bias", bias, ndim=1)
    if bias.size == 0:
        raise ValueError("bias must have one entry per expert; got an empty array")
    load = as_float_array("expert_load", expert_load, shape=bias.shape, lo=0.0)
    gamma = check_real("gamma", gamma, lo=0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        out = bias - gamma * np.sign(load - load.mean())
    if not np.isfinite(out).all():
        raise ValueError(f"bias and gamma must be small enough that bias -/+ gamma stays finite; "
                         f"got gamma={gamma:.3g} and |bias| up to {np.abs(bias).max():.3g}")
    return out


def synthetic_gate_scores(
    n_tokens: int, n_experts: int, skew: float = 0.0, seed: int = 0, *, popularity_seed=None
) -> np.ndarray:
    """Seeded sigmoid-like gate scores in [0, 1) with controllable expert popularity.

    Model: each expert ``e`` gets a popularity offset ``mu_e = skew * z_e`` with ``z_e`` standard
    normal, and each score is ``s = sigmoid(mu_e + L)`` where ``L`` is standard logistic noise,
    independent per (token, expert). Equivalently ``s = u·w / (u·w + 1 - u)`` with ``u`` uniform
    and ``w = exp(mu_e)``: the expert's odds are multiplied by ``w``. ``skew = 0`` gives i.i.d.
    Uniform(0, 1) scores (every expert equally popular); larger ``skew`` gives a wider spread of
    expert loads. The offsets come from ``popularity_seed`` (default: ``seed``) and the noise from
    ``seed``, so chunks generated with different ``seed`` and one ``popularity_seed`` share the
    same hot experts. Returns float64 ``[n_tokens, n_experts]`` in [0, 1] (a very large ``skew``
    pushes an expert's scores to exactly 0 or 1). Size: the matrix and its temporaries (about
    32 bytes per score) within the memory budget of :mod:`uneven.limits`.

    >>> s = synthetic_gate_scores(3, 4, seed=1)
    >>> s.shape, bool(((s >= 0) & (s < 1)).all())
    ((3, 4), True)
    """
    n_tokens = check_int("n_tokens", n_tokens, lo=0)
    n_experts = check_int("n_experts", n_experts, lo=1)
    check_bytes("n_tokens", n_tokens, 32.0 * n_tokens * n_experts,
                f"an n_tokens x {n_experts} score matrix and its temporaries")
    skew = check_real("skew", skew, lo=0.0)
    seed = check_int("seed", seed, lo=0)
    popularity_seed = seed if popularity_seed is None else popularity_seed
    popularity_seed = check_int("popularity_seed", popularity_seed, lo=0)
    u = np.random.default_rng([seed, 1]).random((n_tokens, n_experts))
    if skew == 0.0:
        return u  # exact Uniform(0, 1): no rounding from the odds formula
    z = np.random.default_rng([popularity_seed, 0]).standard_normal(n_experts)
    with np.errstate(over="ignore"):
        w = np.exp(skew * z)
    uw = u * w
    with np.errstate(invalid="ignore", over="ignore"):
        s = uw / (uw + (1.0 - u))
    hot = ~np.isfinite(w)
    if hot.any():  # odds multiplied by infinity: the limit is 1 (0 where u is exactly 0)
        s[:, hot] = (u[:, hot] > 0.0).astype(np.float64)
    return s


def skew_for_load_ratio(
    target: float,
    n_experts: int,
    k: int,
    *,
    n_tokens: int = 8192,
    seed: int = 0,
    max_skew: float = 8.0,
    iterations: int = 30,
) -> float:
    """The ``skew`` of :func:`synthetic_gate_scores` whose plain top-k load hits a busiest/median
    ratio of ``target`` (bisection on one seeded sample of ``n_tokens`` tokens).

    Even ``skew = 0`` shows sampling noise (busiest/median ≈ 1.15 for 8192 tokens, 256 experts,
    top-8); a target at or below that floor returns 0.0. A target beyond what ``max_skew`` gives
    returns ``max_skew``. Cost: ``iterations`` routings of ``n_tokens`` tokens.

    >>> skew_for_load_ratio(1.0, 16, 2, n_tokens=256)
    0.0
    """
    target = check_real("target", target, lo=1.0)
    n_experts = check_int("n_experts", n_experts, lo=1)
    k = check_int("k", k, lo=1, hi=n_experts)
    n_tokens = check_int("n_tokens", n_tokens, lo=1)
    seed = check_int("seed", seed, lo=0)
    max_skew = check_real("max_skew", max_skew, lo=0.0, lo_open=True)
    iterations = check_int("iterations", iterations, lo=1, hi=200)
    check_bytes("n_tokens", n_tokens, 32.0 * n_tokens * n_experts, "one sample of scores")
    check_steps("n_tokens", n_tokens, 8.0 * (iterations + 2) * n_tokens * n_experts,
                f"{iterations + 2} routings of n_tokens tokens over {n_experts} experts")

    def ratio(skew):
        s = synthetic_gate_scores(n_tokens, n_experts, skew, seed)
        return load_ratio(expert_load(topk_route(s, k).expert_ids, n_experts))

    if ratio(0.0) >= target:
        return 0.0
    if ratio(max_skew) <= target:
        return max_skew
    lo, hi = 0.0, max_skew
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if ratio(mid) < target:
            lo = mid
        else:
            hi = mid
    return hi


def expected_distinct_groups(n_experts: int, n_groups: int, k: int) -> float:
    """Expected number of distinct groups hit by ``k`` distinct experts drawn uniformly at random.

    ``E = G · (1 − C(N − N/G, k) / C(N, k))`` for ``N`` experts in ``G`` equal groups: each group
    is missed only when all ``k`` picks avoid its ``N/G`` experts. This is unconstrained top-k of
    i.i.d. scores. With groups = nodes it is the average nodes per token; with groups = GPUs, the
    average distinct GPUs. Any ``n_experts`` below 2**63; ``k`` up to the memory budget of
    :mod:`uneven.limits` (computed as a sum of ``k`` logarithms, not as exact binomials).

    >>> round(expected_distinct_groups(256, 8, 8), 2)
    5.29
    """
    n_experts = check_int("n_experts", n_experts, lo=1)
    n_groups = check_int("n_groups", n_groups, lo=1, hi=n_experts)
    if n_experts % n_groups:
        raise ValueError(f"n_groups must divide n_experts ({n_experts}); got {n_groups}")
    k = check_int("k", k, lo=1, hi=n_experts)
    check_bytes("k", k, 16 * k, "one term per pick")
    # C(N - N/G, k) / C(N, k) = prod_{i<k} (N - N/G - i) / (N - i), as a sum of log1p terms
    # (exact big-integer binomials of N = 10**7 would take minutes).
    a = n_experts - n_experts // n_groups
    i = np.arange(k, dtype=np.float64)
    if k > a:
        miss = 0.0  # more picks than experts outside a group: every group is hit
    else:
        miss = float(np.exp(np.sum(np.log1p(-(n_experts - a) / (n_experts - i)))))
    return n_groups * (1.0 - miss)


def contiguous_placement(n_experts: int, n_gpus: int) -> np.ndarray:
    """Expert → GPU map with ``n_experts / n_gpus`` consecutive experts per GPU (int64).

    This is the plain EP layout (DeepSeek-V3 EP64: 256 experts, 4 per GPU, 32 per node), so
    contiguous expert groups line up with nodes.

    >>> contiguous_placement(8, 4).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    n_gpus = check_int("n_gpus", n_gpus, lo=1)
    n_experts = check_int("n_experts", n_experts, lo=n_gpus)
    check_bytes("n_experts", n_experts, 8 * n_experts, "one GPU id per expert")
    if n_experts % n_gpus:
        raise ValueError(f"n_gpus must divide n_experts ({n_experts}); got {n_gpus}")
    return np.arange(n_experts, dtype=np.int64) // (n_experts // n_gpus)


# --------------------------------------------------------------------------------------------
# Counter-based gate scores, generated inside the routing kernel
#
# At DeepSeek-V3 training scale (8.4M tokens x 256 experts per step) a score matrix is 8.6 GB in
# float32 and generating it with numpy costs as much as routing it. Here each score is a pure
# function of (seed, token, expert): score(t, e) takes 24 bits of SplitMix64's output for the
# counter c = t * ceil(E / 2) + e // 2 (the high 24 bits for an even e, bits 16..39 for an odd e),
# u = bits / 2**24, a float32 uniform in [0, 1) with 24 random bits; with skew, the expert's odds
# are multiplied by w_e = exp(skew * z_e) as in synthetic_gate_scores, in float32:
# s = u w / (u w + (1 - u)). So any token range can be generated anywhere (a thread, a worker)
# without a stream to hand over, and the routing kernel generates each token's scores in L1
# cache, never in memory. The selection then runs on float64(s) + bias, exactly as
# node_limited_route does on the float64 cast of the same scores.


@njit(nogil=True)
def _counter_scores_kernel(key, first_token, n_tokens, n_experts, w32, skew_on, out):
    n_pairs = (n_experts + 1) // 2
    for i in range(n_tokens):
        t = first_token + i
        for e in range(n_experts):
            out[i, e] = _one_score(key, t, e, n_pairs, w32, skew_on)


@njit(nogil=True)
def _generated_route_kernel(key, first_token, n_tokens, n_experts, n_groups, max_groups, k,
                            w32, w32t, skew_on, has_bias, biast, route_scale, out_ids, out_w):
    gsize = n_experts // n_groups
    n_pairs = (n_experts + 1) // 2
    n_tops = 2 * max(max_groups, (k + 1) // 2)
    buf = np.empty(n_experts, dtype=biast.dtype)
    top = np.empty(n_groups, dtype=biast.dtype)
    sec = np.empty(n_groups, dtype=biast.dtype)
    hi_s = np.empty(128, dtype=biast.dtype)
    lo_s = np.empty(128, dtype=biast.dtype)
    gscore = np.empty(n_groups)
    kept = np.empty(n_groups, dtype=np.int64)
    tops = np.empty(n_tops)
    cand = np.empty(n_experts, dtype=np.int64)
    cval = np.empty(n_experts, dtype=biast.dtype)
    order = np.empty(n_experts, dtype=np.int64)
    rank = np.empty(n_groups, dtype=np.int64)
    rank16 = np.empty(16, dtype=np.int32)
    fast = n_groups == 8 and gsize == 32
    for i in range(n_tokens):
        t = first_token + i
        _gen_top2(key, t, n_pairs, gsize, n_groups, w32t, skew_on, has_bias, biast, buf, top,
                  sec, hi_s, lo_s)
        if fast:
            _route_8x32(buf, top, sec, max_groups, k, gscore, rank, kept, tops, cand,
                        cval, order, rank16)
        else:
            _route_generated(buf, top, sec, gsize, n_groups, max_groups, k, gscore, kept, tops,
                             cand, cval, order, True)
        total = 0.0
        for j in range(k):
            e = order[j]
            s = np.float64(_one_score(key, t, e, n_pairs, w32, skew_on))
            out_ids[i, j] = e
            out_w[i, j] = s
            total += s
        for j in range(k):
            if total > 0.0:
                out_w[i, j] = out_w[i, j] / total * route_scale
            else:
                out_w[i, j] = route_scale / k


def _reference_counter_scores(key, first_token, n_tokens, n_experts, w32=None):
    """Pure-Python counter-based scores (test oracle): Python integers masked to 64 bits."""
    mask = 2**64 - 1
    key = int(key)
    n_pairs = (n_experts + 1) // 2
    out = np.zeros((n_tokens, n_experts), dtype=np.float32)
    for i in range(n_tokens):
        t = first_token + i
        for e in range(n_experts):
            x = (key + (t * n_pairs + e // 2) * 0x9E3779B97F4A7C15) & mask
            x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
            x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
            x ^= x >> 31
            bits = x >> 40 if e % 2 == 0 else (x >> 16) & 0xFFFFFF
            u = np.float32(bits) * np.float32(2.0**-24)
            if w32 is not None:
                uw = np.float32(u * w32[e])
                u = np.float32(uw / np.float32(uw + np.float32(np.float32(1.0) - u)))
            out[i, e] = u
    return out


def counter_gate_scores(
    n_tokens: int, n_experts: int, skew: float = 0.0, seed: int = 0, *, first_token: int = 0,
    popularity_seed=None,
) -> np.ndarray:
    """Counter-based gate scores: float32 ``[n_tokens, n_experts]`` in [0, 1].

    The scores :func:`generated_route` and :func:`uneven.ep.model.ep_step` generate inside their
    kernels, as a matrix (for tests, plots and the other routers). Score ``(t, e)`` is a pure
    function of ``seed``, the token index ``t`` (rows are tokens ``first_token`` ...) and the
    expert: 24 bits of a SplitMix64 hash, so any range of tokens can be made anywhere, in any
    order, with the same result. ``skew`` multiplies each expert's odds by ``exp(skew z_e)``
    (``z_e`` standard normal from ``popularity_seed``, default ``seed``; float32 arithmetic), the
    model of :func:`synthetic_gate_scores`; ``skew = 0`` gives uniform scores. Different numbers
    from :func:`synthetic_gate_scores` with the same seed (another generator). Size: 4 bytes per
    score within the memory budget of :mod:`uneven.limits`.

    >>> s = counter_gate_scores(2, 4, seed=1)
    >>> s.dtype, s.shape, bool(((s >= 0) & (s < 1)).all())
    (dtype('float32'), (2, 4), True)
    >>> bool((counter_gate_scores(1, 4, seed=1, first_token=1) == s[1:]).all())
    True
    """
    n_tokens = check_int("n_tokens", n_tokens, lo=0)
    n_experts, key, first_token, w32, skew_on = _counter_args(
        n_experts, skew, seed, first_token, popularity_seed, n_tokens)
    check_bytes("n_tokens", n_tokens, 4.0 * n_tokens * n_experts,
                f"an n_tokens x {n_experts} float32 score matrix")
    out = np.empty((n_tokens, n_experts), dtype=np.float32)
    _counter_scores_kernel(key, np.int64(first_token), np.int64(n_tokens), np.int64(n_experts),
                           w32, skew_on, out)
    return out


def generated_route(
    n_tokens: int, n_experts: int, k: int, n_groups: int, max_groups: int, *,
    skew: float = 0.0, seed: int = 0, first_token: int = 0, popularity_seed=None, bias=None,
    route_scale: float = 1.0,
) -> Routing:
    """Node-limited routing of counter-generated scores, generated inside the kernel.

    Exactly ``node_limited_route(counter_gate_scores(...).astype(float64), k, n_groups,
    max_groups, bias, route_scale)`` (same ids, same weights, bit for bit), without the score
    matrix: each token's scores are made in cache and routed at once. Arguments as in
    :func:`counter_gate_scores` and :func:`node_limited_route`. Size: the output (``16 k`` bytes
    per token) within the memory budget; ``n_tokens x n_experts`` steps within the work budget
    of :mod:`uneven.limits`.

    >>> r = generated_route(3, 16, 2, n_groups=4, max_groups=2, seed=5)
    >>> s = counter_gate_scores(3, 16, seed=5).astype(float)
    >>> bool((r.expert_ids == node_limited_route(s, 2, 4, 2).expert_ids).all())
    True
    """
    n_tokens = check_int("n_tokens", n_tokens, lo=0)
    n_experts, key, first_token, w32, skew_on = _counter_args(
        n_experts, skew, seed, first_token, popularity_seed, n_tokens)
    n_groups = check_int("n_groups", n_groups, lo=1, hi=n_experts)
    if n_experts % n_groups:
        raise ValueError(f"n_groups must divide n_experts ({n_experts}); got {n_groups}")
    max_groups = check_int("max_groups", max_groups, lo=1, hi=n_groups)
    k = check_int("k", k, lo=1, hi=max_groups * (n_experts // n_groups))
    route_scale = check_real("route_scale", route_scale, lo=0.0, lo_open=True)
    biast = _bias_transposed(bias, n_experts, n_groups)
    check_bytes("n_tokens", n_tokens, 16.0 * n_tokens * k + 64.0 * n_experts,
                f"the expert ids and weights of {n_tokens:,} tokens")
    check_steps("n_tokens", n_tokens, float(n_tokens) * n_experts,
                f"generating and routing {n_tokens:,} tokens over {n_experts} experts")
    out_ids = np.empty((n_tokens, k), dtype=np.int64)
    out_w = np.empty((n_tokens, k))
    _generated_route_kernel(
        key, np.int64(first_token), np.int64(n_tokens), np.int64(n_experts),
        np.int64(n_groups), np.int64(max_groups), np.int64(k), w32,
        _transposed(w32, n_groups, np.float32), skew_on, bias is not None, biast, route_scale,
        out_ids, out_w)
    _check_weights(out_w, route_scale, out_w)
    return Routing(out_ids, out_w)
