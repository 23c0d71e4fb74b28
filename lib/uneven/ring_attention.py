"""Ring context parallelism: which rank holds which chunk, what it sends, and when that hides.

A sequence of ``L`` tokens is split over a ring of ``N`` ranks. Each rank keeps the queries of
its own tokens and passes key/value (KV) blocks to the next rank; after ``N - 1`` steps every
rank has seen every block, and in each step it computes attention between its queries and the
block it holds while the next block is in flight.

* **Zig-zag chunks.** With causal attention a token attends only to earlier tokens, so the rank
  holding the end of the sequence would do most of the work. Cut the sequence into ``2N``
  chunks and give rank ``k`` chunks ``k`` and ``2N - 1 - k``: every rank then has exactly the
  same number of query-key pairs (:func:`causal_pairs` counts them).
* **Volume.** Each rank forwards ``N - 1`` blocks of ``L / N`` tokens per layer, so it sends
  ``(N - 1) / N * L * kv`` bytes, where ``kv = 2 * n_kv_heads * head_dim * dtype_bytes`` is
  the K and V of one token: about ``2 * L * n_kv * d_head * b``, *independent of N*
  (:func:`ring_volume`). The backward pass sends the KV blocks again plus their gradients,
  twice that. This derivation is ours [derived]; ByteScale's v1 gives no formula.
* **Hiding.** A step computes about ``A / N**2`` seconds of attention (``A`` = the sequence's
  whole attention time, quadratic in ``L``) while it moves ``L / N`` tokens of KV (linear).
  The transfer hides when the chunk per rank is long enough: :func:`hide_threshold`.

:func:`ring_step_time` times one step on a :class:`~uneven.topology.Topology` with the link-load
engine (every GPU of a rank sends its share of the heads to the same GPU of the next rank);
:func:`ring_layer_time` combines compute and transfer per step, overlapped.

Units: tokens, bytes, seconds, bytes/s.

>>> zigzag_chunks(4).tolist()
[[0, 7], [1, 6], [2, 5], [3, 4]]
>>> causal_pairs(4, 2).tolist()          # equal: zig-zag balances causal work exactly
[34, 34, 34, 34]
>>> causal_pairs(4, 2, scheme="contiguous").tolist()
[10, 26, 42, 58]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._fields import Checked, integer, real
from ._validate import (
    _show,
    as_int_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from .limits import check_bytes

__all__ = [
    "CHUNK_SCHEMES",
    "chunk_assignment",
    "zigzag_chunks",
    "causal_pairs",
    "kv_bytes_per_token",
    "ring_volume",
    "RingLayerTime",
    "ring_layer_time",
    "hide_threshold",
    "ring_flows",
    "ring_step_time",
]

CHUNK_SCHEMES = ("zigzag", "contiguous")
_MAX_RANKS = 1 << 20  # a ring of a million ranks is far beyond any cluster; refuse bigger
_MAX_TOKENS = float(2**40)  # tokens of one sequence or one rank (a trillion)
_MAX_SECONDS = 1e12  # any time argument (s): far beyond a training run
_MAX_BYTES_PER_TOKEN = 2.0**40  # kv_bytes (bytes per token)
_BW = (1e3, 1e18)  # bandwidths accepted (bytes/s)


def _finite(value: float, names: str) -> float:
    """``value`` if it is a finite float; else a ValueError naming the inputs that made it."""
    if not math.isfinite(value):
        raise ValueError(f"{names} are too large together: the result overflows a float")
    return value


def chunk_assignment(n_ranks: int, scheme: str = "zigzag") -> np.ndarray:
    """Chunk ids held by each rank, shape ``(n_ranks, 2)`` (int64), for ``2 * n_ranks`` chunks.

    ``"zigzag"``: rank ``k`` holds chunks ``k`` and ``2N - 1 - k``; ``"contiguous"``: chunks
    ``2k`` and ``2k + 1`` (the plain split). At most 2**20 ranks (and the arrays within the
    memory budget of :mod:`uneven.limits`).

    >>> chunk_assignment(3, "contiguous").tolist()
    [[0, 1], [2, 3], [4, 5]]
    """
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    scheme = check_choice("scheme", scheme, CHUNK_SCHEMES)
    check_bytes("n_ranks", n, 8 * 5 * n, "the chunk ids of every rank")
    k = np.arange(n, dtype=np.int64)
    if scheme == "zigzag":
        return np.stack([k, 2 * n - 1 - k], axis=1)
    return np.stack([2 * k, 2 * k + 1], axis=1)


def zigzag_chunks(n_ranks: int) -> np.ndarray:
    """Zig-zag assignment: rank ``k`` holds chunks ``k`` and ``2N - 1 - k`` (see
    :func:`chunk_assignment`)."""
    return chunk_assignment(n_ranks, "zigzag")


def causal_pairs(n_ranks: int, chunk_tokens: int, scheme: str = "zigzag") -> np.ndarray:
    """Causal query-key pairs each rank computes (int64), chunks of ``chunk_tokens`` tokens.

    Chunk ``i`` attends fully to the ``i`` chunks before it (``i * c**2`` pairs) and to itself
    causally (``c (c + 1) / 2`` pairs, the diagonal included). Zig-zag gives every rank
    ``2N c**2 + c`` pairs; the contiguous split gives rank ``k`` ``(4k + 2) c**2 + c``, so the
    last rank does about ``2N - 1`` times the work of the first. Exact integers (the tests count
    the mask token by token): ``4 N c**2`` must stay below 2**62 (e.g. 2**20 ranks of 2**20
    tokens per chunk).
    """
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    c = check_int("chunk_tokens", chunk_tokens, lo=1, hi=1 << 24)
    if 4 * n * c * c >= 2**62:
        raise ValueError(f"n_ranks={n} and chunk_tokens={c} count more than 2**62 query-key "
                         "pairs (int64); use fewer ranks or shorter chunks")
    chunks = chunk_assignment(n, scheme)
    per_chunk = chunks * c * c + c * (c + 1) // 2
    return per_chunk.sum(axis=1)


def kv_bytes_per_token(n_kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> int:
    """Bytes of K and V for one token in one layer: ``2 * n_kv_heads * head_dim * dtype_bytes``.

    >>> kv_bytes_per_token(8, 128)     # GQA with 8 KV heads of 128, BF16
    4096
    """
    h = check_int("n_kv_heads", n_kv_heads, lo=1, hi=1 << 12)
    d = check_int("head_dim", head_dim, lo=1, hi=1 << 12)
    b = check_int("dtype_bytes", dtype_bytes, lo=1, hi=8)
    return 2 * h * d * b


def ring_volume(tokens: float, n_ranks: int, kv_bytes: float, *, backward: bool = False) -> float:
    """Bytes one rank sends per layer in a ring of ``n_ranks`` over ``tokens`` tokens.

    Forward: ``(N - 1)`` blocks of ``tokens / N`` tokens, ``kv_bytes`` each (see
    :func:`kv_bytes_per_token`). Backward (``backward=True``): the KV blocks and their gradients
    travel, twice that. A ring of one rank sends nothing. ``tokens`` at most 2**40 and
    ``kv_bytes`` at most 2**40 bytes.

    >>> ring_volume(2**20, 128, 4096) / 1e9        # 1M tokens, GQA-8 BF16: ~4.3 GB per rank
    4.261412864
    >>> ring_volume(2**20, 1024, 4096) / 1e9       # 8x more ranks, almost the same bytes each
    4.290772992
    """
    tokens = check_real("tokens", tokens, lo=0.0, hi=_MAX_TOKENS)
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    kv_bytes = check_real("kv_bytes", kv_bytes, lo=0.0, hi=_MAX_BYTES_PER_TOKEN, unit="bytes")
    backward = check_bool("backward", backward)
    sent = (n - 1) / n * tokens * kv_bytes
    return 2.0 * sent if backward else sent


@dataclass(frozen=True)
class RingLayerTime(Checked):
    """One rank's time in one layer of ring attention (s), forward (or backward if asked).

    ``time`` = ``linear`` + the ring; ``compute`` = attention compute of the rank; ``comm`` = the
    transfers; ``exposed`` = the part of ``comm`` that compute does not hide; ``step_compute``
    and ``step_comm`` are one ring step's compute and transfer (the step hides iff
    ``step_compute >= step_comm``).
    """

    time: float = real(lo=0.0, unit="s")
    linear: float = real(lo=0.0, unit="s")
    compute: float = real(lo=0.0, unit="s")
    comm: float = real(lo=0.0, unit="s")
    exposed: float = real(lo=0.0, unit="s")
    step_compute: float = real(lo=0.0, unit="s")
    step_comm: float = real(lo=0.0, unit="s")
    n_ranks: int = integer(lo=1, hi=_MAX_RANKS)

    @property
    def hidden(self) -> bool:
        """Whether every ring step hides its transfer behind its compute."""
        return self.step_compute >= self.step_comm


def ring_layer_time(attention: float, tokens_per_rank: float, n_ranks: int, kv_bytes: float,
                    bandwidth: float, *, latency: float = 0.0, linear: float = 0.0,
                    backward: bool = False) -> RingLayerTime:
    """Time (s) of one layer on one rank of a ring, compute and transfers overlapped.

    ``attention``: the whole attention time of what the ring holds (s, as if on one rank; the
    ring splits it evenly with zig-zag chunks); ``tokens_per_rank``: tokens each rank holds;
    ``kv_bytes``: K and V bytes per token; ``bandwidth``: bytes/s of the slowest hop of the ring
    for one rank; ``latency``: s per step; ``linear``: the rank's time outside attention (MLP,
    projections). Model: the first of ``N`` steps works on the rank's own KV, each of the other
    ``N - 1`` steps lasts ``max(compute, transfer)``. Backward doubles compute and transfers.
    Ranges: times up to 1e12 s, ``tokens_per_rank`` and ``kv_bytes`` up to 2**40, ``bandwidth``
    in [1e3, 1e18] bytes/s, ``n_ranks`` up to 2**20 (every result is then a finite float).

    >>> r = ring_layer_time(1.0, 8192, 4, 4096, 100e9)
    >>> round(r.time, 4), r.hidden                 # compute-bound: A / N = 0.25 s
    (0.25, True)
    """
    a = check_real("attention", attention, lo=0.0, hi=_MAX_SECONDS, unit="s")
    c = check_real("tokens_per_rank", tokens_per_rank, lo=0.0, hi=_MAX_TOKENS)
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    kvb = check_real("kv_bytes", kv_bytes, lo=0.0, hi=_MAX_BYTES_PER_TOKEN, unit="bytes")
    bw = check_real("bandwidth", bandwidth, lo=_BW[0], hi=_BW[1], unit="bytes/s")
    lat = check_real("latency", latency, lo=0.0, hi=_MAX_SECONDS, unit="s")
    lin = check_real("linear", linear, lo=0.0, hi=_MAX_SECONDS, unit="s")
    k = 2.0 if check_bool("backward", backward) else 1.0
    step_c = k * a / (n * n)
    step_t = (k * c * kvb / bw + lat) if n > 1 else 0.0
    ring = step_c + (n - 1) * max(step_c, step_t)
    exposed = (n - 1) * max(0.0, step_t - step_c)
    return trusted(RingLayerTime, time=k * lin + ring, linear=k * lin, compute=k * a / n,
                   comm=(n - 1) * step_t, exposed=exposed, step_compute=step_c,
                   step_comm=step_t, n_ranks=n)


def hide_threshold(alpha: float, kv_bytes: float, bandwidth: float, *, beta: float = 0.0,
                   n_ranks: int | None = None) -> float:
    """Tokens per rank above which a ring step hides its KV transfer (model).

    With attention ``alpha * s**2 + beta * s`` for a sequence of ``s = N c`` tokens, a step
    computes ``alpha c**2 + beta c / N`` seconds and moves ``c * kv_bytes`` bytes at
    ``bandwidth``; it hides when ``c >= (kv_bytes / bandwidth - beta / N) / alpha``. Without
    ``n_ranks`` the large-ring limit (``beta / N -> 0``) is returned. Ranges: ``alpha`` in
    (0, 1e6] s/token², ``beta`` up to 1e6 s/token, ``kv_bytes`` up to 2**40, ``bandwidth`` in
    [1e3, 1e18] bytes/s; a threshold beyond a float's range is refused.

    >>> round(hide_threshold(8.8e-12, 4096, 100e9))   # GQA-8 BF16, 2 x 50 GB/s per rank
    4655
    """
    alpha = check_real("alpha", alpha, lo=0.0, lo_open=True, hi=1e6, unit="s/token^2")
    kvb = check_real("kv_bytes", kv_bytes, lo=0.0, hi=_MAX_BYTES_PER_TOKEN, unit="bytes")
    bw = check_real("bandwidth", bandwidth, lo=_BW[0], hi=_BW[1], unit="bytes/s")
    beta = check_real("beta", beta, lo=0.0, hi=1e6, unit="s/token")
    n = math.inf if n_ranks is None else check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    return _finite(max(0.0, (kvb / bw - beta / n) / alpha), "alpha, kv_bytes and bandwidth")


def ring_flows(groups) -> tuple[np.ndarray, np.ndarray]:
    """Sources and destinations (GPU ids) of one ring step.

    ``groups``: ``(N, g)`` GPU ids, rank ``k`` of the ring on the ``g`` GPUs of row ``k`` (its
    tensor-parallel group: each GPU holds ``1/g`` of the KV heads and sends them to the GPU in the
    same column of the next rank). A ring of one rank has no flows. GPU ids below 2**62, each
    at most once.

    >>> [a.tolist() for a in ring_flows([[0, 1], [8, 9], [16, 17]])]
    [[0, 1, 8, 9, 16, 17], [8, 9, 16, 17, 0, 1]]
    """
    g = _groups("groups", groups)
    if g.shape[0] == 1:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return g.ravel().copy(), np.roll(g, -1, axis=0).ravel().copy()


def _groups(name, groups, hi=2**62):
    """``groups`` as an ``(N, g)`` int64 array of distinct GPU ids in [0, hi]."""
    g = as_int_array(name, groups, ndim=2, lo=0, hi=hi)
    if g.shape[0] < 1 or g.shape[1] < 1:
        raise ValueError(f"{name} must have at least one rank of at least one GPU; got shape "
                         f"{g.shape}")
    if np.unique(g).size != g.size:
        raise ValueError(f"{name} must not repeat a GPU")
    return g


def ring_step_time(topo, rings, bytes_per_rank: float) -> float:
    """Time (s) of one ring step on ``topo``, all rings at once, with the link-load engine.

    ``rings``: one ``groups`` array (see :func:`ring_flows`) or a list of them (disjoint rings
    stepping together). Every rank sends ``bytes_per_rank`` bytes (at most 1e18), split evenly
    over its GPUs. The result is the bottleneck link's drain time plus the longest path latency.

    >>> from uneven.topology import h800_cluster
    >>> t = h800_cluster(2, fabric="multi_rail", cross_rail="spine")
    >>> round(ring_step_time(t, [[0, 1], [8, 9]], 64e6) * 1e3, 3)   # 32 MB per GPU over a NIC
    0.643
    """
    from .engines.linkload import link_loads
    from .topology import Topology

    check_instance("topo", topo, Topology, "e.g. uneven.topology.h800_cluster(2)")
    b = check_real("bytes_per_rank", bytes_per_rank, lo=0.0, hi=1e18, unit="bytes")
    hi = topo.n_gpus - 1
    try:
        nd = np.ndim(rings)  # 2: one ring, an (N, g) array
    except (ValueError, TypeError):  # a ragged list: a list of rings of different shapes
        nd = -1
    if nd == 2:
        arr = [_groups("rings", rings, hi=hi)]
    else:
        if not isinstance(rings, (list, tuple, np.ndarray)) or nd == 0 or not (
            1 <= len(rings) <= hi + 1
        ):
            raise ValueError(f"rings must be one (N, g) array of GPU ids below {hi + 1} or a "
                             f"list of 1 to {hi + 1} of them; got {_show(rings)}")
        arr = [_groups(f"rings[{i}]", g, hi=hi) for i, g in enumerate(rings)]
    if sum(g.size for g in arr) != np.unique(np.concatenate([g.ravel() for g in arr])).size:
        raise ValueError("rings must be disjoint (a GPU appears in two rings)")
    src, dst, nbytes = [], [], []
    for g in arr:
        s, d = ring_flows(g)
        src.append(s)
        dst.append(d)
        nbytes.append(np.full(s.size, b / g.shape[1]))
    src, dst, nbytes = (np.concatenate(x) for x in (src, dst, nbytes))
    return _finite(link_loads(topo, src, dst, nbytes).time(), "bytes_per_rank and topo")
