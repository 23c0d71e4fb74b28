"""Numba helpers that several :mod:`uneven.ep` modules compile into their kernels (private).

Three groups, each written once:

* **the copy rule** — which copies a token makes and on which links (:func:`_copy_path`, with
  :func:`_mark_token` and :func:`_add_copies` counting them), used by :mod:`~uneven.ep.traffic`,
  :mod:`~uneven.ep.model` and :mod:`~uneven.ep.transport`; :func:`_reference_copy_path` and
  :func:`_reference_copies` are its pure-Python twins for the tests;
* **counter-generated gate scores and in-cache node-limited routing** — used by
  :func:`uneven.ep.routing.generated_route` and :func:`uneven.ep.model.ep_step`;
* **stack scratch** (:func:`_stack_ptr`) for kernels whose scratch arrays must not alias.

Everything here is ``inline="always"`` (or an intrinsic) unless it prepares a kernel's arguments
in Python; the public modules validate input before any of it runs.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import njit
from .._validate import as_float_array, check_int, check_real
from ..limits import check_bytes

# Indices cast to uint64 need no negative-index wrap-around code in the compiled kernels.
_U = np.uint64


# --------------------------------------------------------------------------------------------
# The copy rule
#
# A token on GPU s sends one copy towards each of its targets d. What a target is depends on the
# caller's *unit*: a distinct GPU ("gpu": the GPU runs all its experts of the token on one copy)
# or an expert slot ("slot": every chosen expert gets its own copy, even two on one GPU). Where a
# copy travels depends only on s, d and the *path*:
#
#   d == s                   nothing crosses a link (the token is already there)
#   d on s's node            NVLink s -> d
#   other node, "direct"     network s -> d
#   other node, "relay"      network s -> r, where r is the GPU of d's node with s's local index
#                            (same rail, same plane); one network copy per node and token,
#                            however many of its targets sit there; then NVLink r -> d unless
#                            d == r
#
# On s's own node the relay of the formula is s itself, so in relay mode the NVLink sender is
# always r. Node and local index come from lookup tables: an integer division per copy costs
# more than the rest of the rule.


@njit(inline="always")
def _copy_path(s, s_node, s_local, d, relay, gpu_node, node_first_gpu):
    """Where the copy GPU ``s`` (on node ``s_node`` at local index ``s_local``) sends towards
    GPU ``d`` travels: ``(net, on_net, hub, on_nvl)``.

    The copy crosses the network to GPU ``net`` if ``on_net`` (``d`` itself, or its node's relay)
    and reaches ``d`` over NVLink from GPU ``hub`` if ``on_nvl`` (``s``, or the relay). Indices
    are valid even when their flag is off, so callers add the flags without branching.
    """
    d_node = gpu_node[d]
    remote = d_node != s_node
    if relay:
        r = node_first_gpu[d_node] + s_local
        return r, remote, r, r != d
    return d, remote, s, (not remote) & (d != s)


@njit(inline="always")
def _mark_token(stamp, s, experts, k, expert_gpu, per_slot, gpu_node, gpu_stamp, node_stamp,
                unit_cnt, node_cnt, expert_cnt):
    """Count one token's copies by unit: ``unit_cnt[d]`` += the copies its source ``s`` owes GPU
    ``d`` (1 per distinct target GPU, or per chosen expert if ``per_slot``), ``node_cnt[nd]`` += 1
    per distinct target node, and ``expert_cnt[e]`` += 1 per chosen expert (its load).
    ``experts[:k]``: the token's experts (valid ids); ``stamp`` is unique to the token
    (``gpu_stamp[g] == stamp`` marks GPU ``g`` as seen, likewise per node, so nothing is cleared
    between tokens). Returns the token's distinct nodes, remote nodes and GPUs. Stamps are
    written unconditionally and counters advance by the comparison: no branch.
    """
    s_node = gpu_node[s]
    n_g = 0
    n_n = 0
    remote = 0
    for j in range(k):
        e = experts[j]
        expert_cnt[e] += 1
        d = expert_gpu[e]
        new_gpu = gpu_stamp[d] != stamp
        gpu_stamp[d] = stamp
        unit_cnt[d] += per_slot | new_gpu
        n_g += new_gpu
        nd = gpu_node[d]
        new_node = node_stamp[nd] != stamp
        node_stamp[nd] = stamp
        node_cnt[nd] += new_node
        n_n += new_node
        remote += new_node & (nd != s_node)
    return n_n, remote, n_g


@njit(inline="always")
def _add_copies(s, unit_cnt, node_cnt, relay, gpu_node, node_first_gpu, gpu_local, network,
                nvlink):
    """Put source ``s``'s counted copies on the links: ``nvlink[hub, d]`` += the copies owed to
    each GPU ``d`` that arrive over NVLink, ``network[s, net]`` += those that cross the network:
    one per unit in direct mode, one per remote node (``node_cnt``) in relay mode."""
    s_node = gpu_node[s]
    s_local = gpu_local[s]
    direct = not relay
    for d in range(unit_cnt.shape[0]):
        w = unit_cnt[d]
        net, on_net, hub, on_nvl = _copy_path(s, s_node, s_local, d, relay, gpu_node,
                                              node_first_gpu)
        nvlink[hub, d] += w * on_nvl
        network[s, net] += w * (on_net & direct)
    if relay:
        for nd in range(node_cnt.shape[0]):
            net, on_net, _, _ = _copy_path(s, s_node, s_local, node_first_gpu[nd], relay,
                                           gpu_node, node_first_gpu)
            network[s, net] += node_cnt[nd] * on_net


def _reference_copy_path(s, d, gpus_per_node, relay):
    """:func:`_copy_path` in plain Python, with divisions instead of lookup tables (tests and
    the pure-Python references only)."""
    s, d = int(s), int(d)
    (s_node, s_local), d_node = divmod(s, gpus_per_node), d // gpus_per_node
    if d_node == s_node:
        return -1, (s if d != s else -1)
    if not relay:
        return d, -1
    r = d_node * gpus_per_node + s_local
    return r, (r if r != d else -1)


def _reference_copies(src, target_gpus, gpus_per_node, relay, per_slot):
    """The copy rule in plain Python (tests only): ``{("network" | "nvlink", a, b): copies}``
    for one token on GPU ``src`` whose chosen experts sit on ``target_gpus`` (one entry each)."""
    targets = [int(g) for g in target_gpus]
    if not per_slot:
        targets = sorted(set(targets))
    out = {}
    relays = set()
    for d in targets:
        net, nvl = _reference_copy_path(src, d, gpus_per_node, relay)
        if nvl >= 0:
            out["nvlink", nvl, d] = out.get(("nvlink", nvl, d), 0) + 1
        if net >= 0 and relay:
            relays.add(net)  # one network copy per remote node, whatever its targets
        elif net >= 0:
            out["network", int(src), net] = out.get(("network", int(src), net), 0) + 1
    for r in relays:
        out["network", int(src), r] = 1
    return out


# --------------------------------------------------------------------------------------------
# Stack scratch


@intrinsic
def _stack_ptr(typingctx, n, dtype):
    """Room for ``n`` (a literal) values of ``dtype`` on the calling kernel's stack; view it
    with ``numba.carray``. Scratch arrays there are provably distinct from every other array,
    so LLVM keeps their values in registers and vectorises across them; heap scratch arrays
    (``np.empty``) may alias each other and cost ~3x in the routing loops."""
    if not isinstance(n, types.IntegerLiteral):
        return None
    if isinstance(dtype, types.DType):
        ty = dtype.dtype
    elif isinstance(dtype, types.NumberClass):
        ty = dtype.instance_type
    else:
        return None
    count = n.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_data_type(ty), size=count)

    return types.CPointer(ty)(n, dtype), codegen


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


@njit(inline="always")
def _rank_order(cval, cand, m, order):
    """Sort the ``m`` candidates (ids ``cand``, values ``cval``) into ``order``: larger value
    first, ties to the smaller id. The ids must be increasing, so a tie goes to the earlier
    position. Each rank is counted over a fixed-length loop without branching (variable-length
    inner loops mispredicted their exits); ``m`` is ~k after thresholding. Indices are cast to
    ``uint64`` so numba emits no negative-index wrap-around code."""
    for i in range(m):
        vi = cval[_U(i)]
        r = 0
        for j in range(m):
            vj = cval[_U(j)]
            r += (vj > vi) | ((vj == vi) & (j < i))
        order[_U(r)] = cand[_U(i)]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK24 = np.uint64(0xFFFFFF)
_INV24 = np.float32(2.0**-24)
_SH40 = np.uint64(40)
_SH16 = np.uint64(16)
_SH30 = np.uint64(30)
_SH27 = np.uint64(27)
_SH31 = np.uint64(31)
_ONE32 = np.float32(1.0)
_F32_MAX = float(np.finfo(np.float32).max)


@njit(inline="always")
def _mix64(x):
    """SplitMix64's output function (Steele, Lea & Flood 2014): a bijection of 64-bit words."""
    x = (x ^ (x >> _SH30)) * _MIX1
    x = (x ^ (x >> _SH27)) * _MIX2
    return x ^ (x >> _SH31)


@njit(inline="always")
def _pair_uniforms(key, counter):
    """Two float32 uniforms in [0, 1) with 24 random bits each, from one 64-bit hash."""
    z = _mix64(key + counter * _GOLDEN)
    hi = np.float32(np.int64(z >> _SH40)) * _INV24
    lo = np.float32(np.int64((z >> _SH16) & _MASK24)) * _INV24
    return hi, lo


@njit(inline="always")
def _skewed(u, w):
    uw = u * w
    return uw / (uw + (_ONE32 - u))


@njit(inline="always")
def _one_score(key, t, e, n_pairs, w32, skew_on):
    hi, lo = _pair_uniforms(key, np.uint64(t) * np.uint64(n_pairs) + np.uint64(e >> 1))
    u = hi if (e & 1) == 0 else lo
    if skew_on:
        return _skewed(u, w32[e])
    return u


@njit(inline="always")
def _top2(a, b, v):
    """The two largest of (a, b, v) when a >= b are the two largest so far."""
    return max(a, v), max(b, min(a, v))


@njit(inline="always")
def _gen_top2(key, t, n_pairs, gsize, n_groups, w32t, skew_on, has_bias, biast, buf, top, sec,
              hi_s, lo_s):
    """Generate token ``t``'s biased scores into ``buf`` and each group's two largest into
    ``top`` and ``sec``. ``buf`` has the dtype of ``biast``: float32 when there is no bias (the
    scores themselves), float64 otherwise (``float64(s) + bias``, as node_limited_route computes).

    Layout (:func:`_buf_pos`): groups are the fastest index, so every loop below runs across
    groups and vectorises; even experts of a group fill the first half of ``buf``, odd ones the
    second, so one 64-bit hash (an expert pair) writes one entry of each half.

    Eight groups of 32 experts (DeepSeek-V3: 256 experts, one group per node of EP64) take a fast
    path: the two halves are merged pairwise into (larger, smaller), then folded in halves
    (16 -> 8 -> 4 -> 2 -> 1 rows of 8 lanes), each level a flat loop over contiguous arrays;
    ``hi_s`` and ``lo_s`` (128 entries, buf's dtype) are its scratch."""
    tbase = np.uint64(t) * np.uint64(n_pairs)
    if n_groups == 8 and gsize == 32:
        if skew_on:
            for i2 in range(16):
                c0 = tbase + np.uint64(i2)
                for g in range(8):
                    u0, u1 = _pair_uniforms(key, c0 + np.uint64(16 * g))
                    q = 8 * i2 + g
                    buf[q] = _skewed(u0, w32t[q]) + biast[q]
                    buf[128 + q] = _skewed(u1, w32t[128 + q]) + biast[128 + q]
        elif has_bias:
            for i2 in range(16):
                c0 = tbase + np.uint64(i2)
                for g in range(8):
                    u0, u1 = _pair_uniforms(key, c0 + np.uint64(16 * g))
                    q = 8 * i2 + g
                    buf[q] = u0 + biast[q]
                    buf[128 + q] = u1 + biast[128 + q]
        else:
            for i2 in range(16):
                c0 = tbase + np.uint64(i2)
                for g in range(8):
                    u0, u1 = _pair_uniforms(key, c0 + np.uint64(16 * g))
                    q = 8 * i2 + g
                    buf[q] = u0
                    buf[128 + q] = u1
        for q in range(128):
            x0 = buf[q]
            x1 = buf[128 + q]
            hi_s[q] = max(x0, x1)
            lo_s[q] = min(x0, x1)
        n = 64
        while n >= 8:  # fold row q with row q + n (both of lane q % 8)
            for q in range(n):
                h0 = hi_s[q]
                h1 = hi_s[q + n]
                hi_s[q] = max(h0, h1)
                lo_s[q] = max(min(h0, h1), max(lo_s[q], lo_s[q + n]))
            n //= 2
        for g in range(8):
            top[g] = hi_s[g]
            sec[g] = lo_s[g]
        return
    top[0] = -np.inf
    ninf = top[0]  # -inf in buf's dtype
    for g in range(n_groups):
        top[g] = ninf
        sec[g] = ninf
    half = ((gsize + 1) // 2) * n_groups
    for i in range(gsize):
        r0 = (i & 1) * half + (i >> 1) * n_groups
        for g in range(n_groups):
            e = g * gsize + i
            hi, lo = _pair_uniforms(key, tbase + np.uint64(e >> 1))
            u = hi if (e & 1) == 0 else lo
            if skew_on:
                u = _skewed(u, w32t[r0 + g])
            v = u + biast[r0 + g]
            buf[r0 + g] = v
            a = top[g]
            sec[g] = max(sec[g], min(a, v))
            top[g] = max(a, v)


@njit(inline="always")
def _buf_pos(x, g, n_groups, half):
    """Where expert ``x`` of group ``g`` sits in the kernels' score buffer."""
    return (x & 1) * half + (x >> 1) * n_groups + g


@njit(inline="always")
def _route_8x32(buf, top, sec, max_groups, k, gscore, rank, kept, tops, cand, cval,
                order, rank16):
    """``_route_generated`` for eight groups of 32 experts (DeepSeek-V3): the same answer with
    fixed-length loops and no branch but on rare cases. Fast only on scratch arrays LLVM can tell
    apart (``_stack_ptr``); on heap arrays every store may alias every load (~3x slower).

    Groups: each group's rank is counted in one pass over the others. Threshold ``tau``: as
    ``_route_generated``, a value of ``buf`` at most the k-th largest kept score, kept in buf's
    dtype in a local. Collection: positions ``>= tau`` (always stored, the cursor advances by the
    comparison), then their ids by shifts. Ranking: up to 16 candidates in a fixed 16 x 16 pass
    padded with -inf, 16 ranks updated at once (``cval`` has buf's dtype; the candidates are in
    increasing id, so ties go to the lower id); more candidates (k > 8) take ``_rank_order``.
    ``rank16`` (int32, 16) is its scratch."""
    for g in range(8):  # in float64, as node_limited_route (exact for float32 inputs)
        gscore[g] = np.float64(top[g]) + np.float64(sec[g])
        rank[g] = 0
    for h in range(8):
        vh = gscore[h]
        for g in range(8):
            gs = gscore[g]
            rank[g] += (vh > gs) | ((vh == gs) & (h < g))
    nk = 0
    for g in range(8):
        kept[nk] = g
        nk += rank[g] < max_groups
    if k == 2 * max_groups:  # the kept groups' two best: tau = the smallest (a second best)
        tau = sec[kept[0]]
        for j in range(1, max_groups):
            tau = min(tau, sec[kept[j]])
    else:
        if k < 2 * max_groups:  # the kept groups' two best
            n_tops = 2 * max_groups
            for j in range(max_groups):
                tops[2 * j] = top[kept[j]]
                tops[2 * j + 1] = sec[kept[j]]
        else:  # block maxima and runners-up of the kept experts, in increasing expert id
            nb = (k + 1) // 2
            n_tops = 2 * nb
            blk = (max_groups * 32) // nb
            for i in range(nb):
                tops[2 * i] = -np.inf
                a0 = tops[2 * i]  # -inf in buf's dtype
                b0 = a0
                hi = (i + 1) * blk if i < nb - 1 else max_groups * 32
                for p in range(i * blk, hi):
                    x = p & 31
                    v0 = buf[(x & 1) * 128 + (x >> 1) * 8 + kept[p >> 5]]
                    b0 = max(b0, min(a0, v0))
                    a0 = max(a0, v0)
                tops[2 * i] = a0
                tops[2 * i + 1] = b0
        tau = tops[0]  # the k-th largest of tops: tau <= the k-th largest kept score
        for i in range(n_tops):
            tau = max(tau, tops[i])
        for i in range(n_tops):
            vi = tops[i]
            r = 0
            for j in range(n_tops):
                r += tops[j] > vi
            tau = min(tau, vi) if r < k else tau
    m = 0  # positions >= tau first (always store, advance by the comparison), then ids
    for j in range(max_groups):
        p = kept[j]
        for _i2 in range(16):
            cand[m] = p
            m += buf[p] >= tau
            cand[m] = p + 128
            m += buf[p + 128] >= tau
            p += 8
    for j in range(m):
        p = cand[j]
        cval[j] = buf[p]
        cand[j] = ((p & 7) << 5) | (((p & 127) >> 3) << 1) | (p >> 7)
    if m <= 16:
        ninf = -np.inf
        for j in range(m, 16):
            cval[j] = ninf
        for i in range(16):
            rank16[i] = 0
        for j in range(16):  # 16 lanes of i at once
            vj = cval[j]
            for i in range(16):
                vi = cval[i]
                rank16[i] += np.int32((vj > vi) | ((vj == vi) & (j < i)))
        for i in range(16):
            order[rank16[i]] = cand[i]
    else:
        _rank_order(cval, cand, m, order)


@njit(inline="always")
def _route_generated(buf, top, sec, gsize, n_groups, max_groups, k, gscore, kept, tops, cand,
                     cval, order, ordered):
    """Node-limited top-k of one token whose biased scores are in ``buf`` (group-transposed):
    the same rule, tie breaks and threshold trick as ``_node_limited_kernel``. Writes the ``k``
    chosen expert ids to ``order[:k]``, best first if ``ordered`` (else in increasing id when
    exactly ``k`` experts reach the threshold: the set is the same, the ranking is skipped)."""
    inf = np.inf
    half = ((gsize + 1) // 2) * n_groups
    for g in range(n_groups):  # in float64, as node_limited_route (exact for float32 inputs)
        gscore[g] = np.float64(top[g]) + np.float64(sec[g]) if gsize > 1 else np.float64(top[g])
    nk = 0
    for g in range(n_groups):
        gs = gscore[g]
        r = 0
        for h in range(n_groups):
            vh = gscore[h]
            r += (vh > gs) | ((vh == gs) & (h < g))
        kept[nk] = g
        nk += r < max_groups
    n_kept = max_groups * gsize
    n_tops = 2 * max_groups if k <= 2 * max_groups else 2 * ((k + 1) // 2)
    if k == n_kept:
        tau = -inf
    else:
        if k <= 2 * max_groups:
            for j in range(max_groups):
                tops[2 * j] = np.float64(top[kept[j]])
                tops[2 * j + 1] = np.float64(sec[kept[j]])
        else:  # blocks of the kept experts, in increasing expert id
            nb = n_tops // 2
            blk = n_kept // nb
            a0 = -inf
            b0 = -inf
            p = 0
            i = 0
            for j in range(max_groups):
                g = kept[j]
                for x in range(gsize):
                    v0 = np.float64(buf[_buf_pos(x, g, n_groups, half)])
                    b0 = max(b0, min(a0, v0))
                    a0 = max(a0, v0)
                    p += 1
                    if p == blk and i < nb - 1:
                        tops[2 * i] = a0
                        tops[2 * i + 1] = b0
                        a0 = -inf
                        b0 = -inf
                        p = 0
                        i += 1
            tops[2 * i] = a0
            tops[2 * i + 1] = b0
        tau = inf
        if k == n_tops:
            for i in range(n_tops):
                tau = min(tau, tops[i])
        else:
            for i in range(n_tops):
                vi = tops[i]
                r = 0
                for j in range(n_tops):
                    r += tops[j] > vi
                tau = min(tau, vi if r < k else inf)
    # the kept experts >= tau (~k of them), in increasing id
    m = 0
    if n_groups == 8 and gsize == 32:  # positions first (one store each), ids by shifts
        for j in range(max_groups):
            p = kept[j]
            for _i2 in range(16):
                cand[m] = p
                m += buf[p] >= tau
                cand[m] = p + 128
                m += buf[p + 128] >= tau
                p += 8
        for j in range(m):
            p = cand[j]
            if ordered or m != k:
                cval[j] = np.float64(buf[p])
            cand[j] = ((p & 7) << 5) | (((p & 127) >> 3) << 1) | (p >> 7)
    else:
        for j in range(max_groups):
            g = kept[j]
            base = g * gsize
            for x in range(gsize):
                v = np.float64(buf[_buf_pos(x, g, n_groups, half)])
                cand[m] = base + x
                cval[m] = v
                m += v >= tau
    if not ordered and m == k:  # exactly k: the set is known, its order is not needed
        for j in range(k):
            order[j] = cand[j]
    else:
        _rank_order(cval, cand, m, order)


def _counter_key(seed: int) -> np.uint64:
    """The 64-bit key of a seed (SeedSequence-spread, so nearby seeds give unrelated keys)."""
    return np.random.SeedSequence(seed).generate_state(1, dtype=np.uint64)[0]


def _popularity_odds(skew: float, n_experts: int, popularity_seed: int) -> np.ndarray:
    """Each expert's odds factor exp(skew z_e) as float32 (z from popularity_seed, as in
    synthetic_gate_scores), capped at the largest float32 so the formula never sees inf."""
    z = np.random.default_rng([popularity_seed, 0]).standard_normal(n_experts)
    with np.errstate(over="ignore"):
        w = np.exp(skew * z)
    return np.minimum(w, _F32_MAX).astype(np.float32)


def _counter_args(n_experts, skew, seed, first_token, popularity_seed, n_tokens):
    n_experts = check_int("n_experts", n_experts, lo=1)
    # The per-expert odds (and the normals behind them) are made before any kernel runs.
    check_bytes("n_experts", n_experts, 16.0 * n_experts, f"odds of {n_experts:,} experts")
    skew = check_real("skew", skew, lo=0.0)
    seed = check_int("seed", seed, lo=0)
    first_token = check_int("first_token", first_token, lo=0)
    if first_token + n_tokens >= 2**62 // max(1, (n_experts + 1) // 2):
        raise ValueError(f"first_token + n_tokens must stay below 2**62 / ceil(n_experts / 2) "
                         f"(the counter space); got first_token={first_token}")
    popularity_seed = seed if popularity_seed is None else popularity_seed
    popularity_seed = check_int("popularity_seed", popularity_seed, lo=0)
    skew_on = skew > 0.0
    w32 = _popularity_odds(skew, n_experts, popularity_seed) if skew_on else np.ones(
        n_experts, dtype=np.float32)
    return n_experts, _counter_key(seed), first_token, w32, skew_on


def _transposed(values, n_groups, dtype):
    """Per-expert values in the kernels' buffer order (see ``_buf_pos``): rows of one entry per
    group, even experts of each group first, then odd ones."""
    v = np.asarray(values, dtype=dtype).reshape(n_groups, -1)  # [group, expert in group]
    return np.ascontiguousarray(np.concatenate([v[:, 0::2].T.ravel(), v[:, 1::2].T.ravel()]))


def _bias_transposed(bias, n_experts, n_groups):
    """The bias in the kernels' order: float32 zeros without a bias (then the kernel selects on
    the float32 scores themselves), else float64, so selection runs on float64(s) + bias."""
    if bias is None:
        return np.zeros(n_experts, dtype=np.float32)
    bias = as_float_array("bias", bias, shape=(n_experts,), lo=-1e300, hi=1e300)
    return _transposed(bias, n_groups, np.float64)

