"""Hiding communication behind computation: the hiding ratio and tile-level fused GEMM + all-to-all.

**The hiding ratio R.** In expert parallelism each (token, expert) pair costs compute — a SwiGLU
expert runs three GEMMs of ``h x h_ffn``, ``6·h·h_ffn`` FLOPs forward — and communication: the
token goes to the expert's GPU (dispatch, ``h`` values) and comes back (combine, ``h`` values),
over a link for the share ``r`` of pairs whose expert is elsewhere. So

    R = compute time / communication time
      = (6·h·h_ffn / peak) / ((B_d + B_c)·h·r / BW)
      = 6·h_ffn·BW / ((B_d + B_c)·r·peak),

with ``B_d``, ``B_c`` bytes per value of dispatch and combine, ``peak`` FLOP/s and ``BW`` bytes/s.
In BF16 (2 + 2 bytes) and with ``r = 1`` this is MegaScale-MoE's ``R ≈ 1.5·h_ffn·BW/peak``
(Eqs. 5–9); uniform EP over ``n`` GPUs has ``r = (n-1)/n``, which the paper's "≈" drops. R does
not depend on k, n (beyond r), h or the number of experts. The all-to-all can hide behind the
expert GEMMs only if R > 1.

* **Backward**: the dgrad and wgrad GEMMs double the compute and the gradients travel the same
  way, so R doubles (``backward=True``).
* **FP8 GEMMs**: the peak doubles (1,979 vs 989 TFLOPS dense on H800), so R halves unless the
  bytes shrink too; FP8 dispatch (1 byte + a 4-byte scale per 128 values) brings it back to
  about 0.66 of the BF16 value.

**Tile-level fusion.** A GEMM split into ``T`` output tiles (each ``g = G/T`` seconds) and the
all-to-all that follows it split into ``T`` pieces (each ``c = C/T``): piece ``i`` is sent as
soon as tile ``i`` is written. With equal tiles the fused pair takes

    max(C, G) + min(c, g)      instead of      C + G,

exactly (``direction="gemm_a2a"``). The mirror image (``"a2a_gemm"``: an all-to-all feeding a
GEMM) depends on which rows a GEMM tile needs. Rows arrive source by source (the swizzled order
of MegaScale-MoE's kernels: the receiver takes one source at a time at full port speed; the
GPU's own rows need no transfer). With rows **sorted by source** a tile needs one or two sources
and starts as soon as they are in; with **random** order every tile holds rows of almost every
source and waits for nearly the whole transfer. Sorted is never slower than any other order
(the tests check this). Communication driven by SMs takes ``comm_sms`` of the ``total_sms``
from the GEMM, whose tiles then run ``total/(total - comm_sms)`` times longer.

Everything runs on the timeline engine (:func:`uneven.engines.timeline.run_timeline`): compute
tiles on one resource, transfer pieces on another, an edge per dependency. Units: seconds,
bytes, bytes/s, FLOP/s.

>>> round(hiding_ratio(14336, 160e9), 2), round(hiding_ratio(2048, 50e9), 2)
(3.48, 0.16)
>>> r = tile_overlap(1.0e-3, 0.5e-3, n_tiles=10)
>>> round(r.fused_time * 1e3, 3), round(r.sequential_time * 1e3, 3)   # G + c vs G + C
(1.05, 1.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._fields import Checked, array, check_fields, choice, integer, real
from ._tiles import ROWS_PER_TILE, _fused_block
from ._validate import (
    check_bool,
    check_choice,
    check_int,
    check_real,
    trusted,
)
from .engines.timeline import edges_to_csr, run_timeline

__all__ = [
    "H800",
    "hiding_ratio",
    "fused_time_closed_form",
    "TileOverlap",
    "tile_overlap",
    "ROWS_PER_TILE",
    "DIRECTIONS",
    "ORDERS",
]

#: H800 SXM numbers: dense peaks (NVIDIA data sheet [3rd]; 989 TFLOPS BF16 as the papers use
#: [paper]), NVLink 160 GB/s per direction achieved and one 50 GB/s NIC per GPU (DeepSeek-V3
#: ISCA'25 [paper]), 132 SMs [3rd].
H800 = {
    "bf16_flops": 989e12,
    "fp8_flops": 1979e12,
    "nvlink_bw": 160e9,
    "nic_bw": 50e9,
    "sms": 132,
}

DIRECTIONS = ("gemm_a2a", "a2a_gemm")
ORDERS = ("sorted", "random")
_MAX_TILES = 4096
_MAX_RANKS = 1024
#: Largest bytes per value accepted (FP64 is 8; room for packed formats with scales).
_MAX_BYTES_PER_VALUE = 1024.0
#: Largest time (s) any op or sum of ops may reach: far beyond any real kernel, and far enough
#: below the float range that no sum of a fused pair's ops can overflow.
_MAX_SECONDS = 1e300


def _finite(value: float, names: str) -> float:
    """``value`` if finite; else a ValueError naming the parameters that made it overflow."""
    if not math.isfinite(value):
        raise ValueError(f"{names} give a result beyond the range of a float ({value}); use "
                         "values of sensible magnitude")
    return value


def hiding_ratio(h_ffn: float, bandwidth: float, peak_flops: float = H800["bf16_flops"], *,
                 n: int | None = None, remote_fraction: float | None = None,
                 dispatch_bytes: float = 2.0, combine_bytes: float = 2.0,
                 backward: bool = False) -> float:
    """R = expert compute time / all-to-all time for one (token, expert) pair (see module doc).

    ``h_ffn`` expert intermediate size; ``bandwidth`` bytes/s of the link the all-to-all crosses;
    ``peak_flops`` FLOP/s. The share of pairs that cross the link is ``remote_fraction`` if
    given, ``(n-1)/n`` if ``n`` is given, else 1 (the paper's approximation). ``dispatch_bytes``
    and ``combine_bytes`` per value (BF16 2; FP8 with scales 1 + 4/128), each in [0, 1024].
    ``remote_fraction`` is a share in (0, 1]; ``n`` up to 2**20. ``backward``: the backward
    pass (twice the GEMM work, the same bytes). A ratio beyond the range of a float is refused.

    >>> round(hiding_ratio(14336, 160e9, n=8), 2)           # exact for uniform EP over 8 GPUs
    3.98
    >>> round(hiding_ratio(14336, 160e9, backward=True) / hiding_ratio(14336, 160e9), 1)
    2.0
    """
    h_ffn = check_real("h_ffn", h_ffn, lo=0.0, lo_open=True)
    bw = check_real("bandwidth", bandwidth, lo=0.0, lo_open=True, unit="bytes/s")
    peak = check_real("peak_flops", peak_flops, lo=0.0, lo_open=True, unit="FLOP/s")
    if n is not None and remote_fraction is not None:
        raise ValueError("give n or remote_fraction, not both (n sets remote_fraction=(n-1)/n)")
    if remote_fraction is not None:
        r = check_real("remote_fraction", remote_fraction, lo=0.0, lo_open=True, hi=1.0)
    elif n is not None:
        n = check_int("n", n, lo=2, hi=1 << 20)
        r = (n - 1) / n
    else:
        r = 1.0
    bd = check_real("dispatch_bytes", dispatch_bytes, lo=0.0, hi=_MAX_BYTES_PER_VALUE,
                    unit="bytes per value")
    bc = check_real("combine_bytes", combine_bytes, lo=0.0, hi=_MAX_BYTES_PER_VALUE,
                    unit="bytes per value")
    if bd + bc <= 0:
        raise ValueError("dispatch_bytes + combine_bytes must be > 0; got 0")
    work = 2.0 if check_bool("backward", backward) else 1.0
    num, den = 6.0 * h_ffn * work * bw, (bd + bc) * r * peak
    ratio = num / den if den > 0 else math.inf  # den underflows to 0 only for absurd inputs
    return _finite(ratio, "h_ffn, bandwidth and peak_flops")


def fused_time_closed_form(compute_time: float, comm_time: float, n_tiles: int, *,
                           direction: str = "gemm_a2a", n_ranks: int = 8) -> float:
    """Closed form of :func:`tile_overlap` with equal tiles, no SM tax and no per-tile latency.

    ``"gemm_a2a"``: ``max(C, G) + min(c, g)``. ``"a2a_gemm"`` with rows sorted by source and
    ``n_ranks`` dividing ``n_tiles`` (the first ``L = T/n`` tiles are the GPU's own rows):
    ``max(G, c + (T - L)·g, C + g)`` with ``c = C / (T - L)``. ``n_tiles`` up to 4,096,
    ``n_ranks`` up to 1,024; a time beyond the range of a float is refused.

    >>> fused_time_closed_form(1.0, 2.0, 4)
    2.25
    >>> fused_time_closed_form(1.0, 0.5, 8, direction="a2a_gemm", n_ranks=4)   # local rows first
    1.0
    """
    G = check_real("compute_time", compute_time, lo=0.0, unit="s")
    C = check_real("comm_time", comm_time, lo=0.0, unit="s")
    T = check_int("n_tiles", n_tiles, lo=1, hi=_MAX_TILES)
    direction = check_choice("direction", direction, DIRECTIONS)
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    names = "compute_time and comm_time"
    if direction == "gemm_a2a":
        return _finite(max(C, G) + min(C / T, G / T), names)
    if T % n:
        raise ValueError(f"n_ranks must divide n_tiles={T} for the closed form; got {n}")
    if n == 1:
        return G
    L = T // n
    g, c = G / T, C / (T - L)
    return _finite(max(G, c + (T - L) * g, C + g), names)


@dataclass(frozen=True)
class TileOverlap(Checked):
    """A fused GEMM + all-to-all on the timeline engine.

    ``fused_time`` (s) and ``sequential_time`` = G + C (s, no SM tax, no per-tile latency);
    ``compute_time`` and ``comm_time``: total busy time of the compute tiles (taxed) and of the
    transfer pieces (with latency), s. Per op: ``start``, ``finish`` (s), ``resource`` (0 = SMs,
    1 = link), ``tile`` (tile or piece index). ``n_pieces`` transfer pieces (at most
    ``n_tiles``). Every field is checked when made directly; arrays are read-only.
    """

    fused_time: float = real(lo=0.0, hi=_MAX_SECONDS, unit="s")
    sequential_time: float = real(lo=0.0, hi=_MAX_SECONDS, unit="s")
    compute_time: float = real(lo=0.0, hi=_MAX_SECONDS, unit="s")
    comm_time: float = real(lo=0.0, hi=_MAX_SECONDS, unit="s")
    n_tiles: int = integer(lo=1, hi=_MAX_TILES)
    n_pieces: int = integer(lo=0, hi="n_tiles")
    direction: str = choice(DIRECTIONS)
    order: str = choice(ORDERS)
    start: np.ndarray = array(shape=lambda r: (r.n_tiles + r.n_pieces,), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=lambda r: (r.n_tiles + r.n_pieces,), lo=0.0, repr=False)
    resource: np.ndarray = array("int", shape=lambda r: (r.n_tiles + r.n_pieces,), lo=0, hi=1,
                                 repr=False)
    tile: np.ndarray = array("int", shape=lambda r: (r.n_tiles + r.n_pieces,), lo=0, repr=False)

    def __post_init__(self):
        check_fields(self)
        if self.fused_time > 0 and not math.isfinite(self.sequential_time / self.fused_time):
            raise ValueError(f"fused_time must not be vanishingly small next to "
                             f"sequential_time={self.sequential_time}; got {self.fused_time}")
        if np.any(self.finish < self.start):
            raise ValueError("finish must not be before start for any op")

    @property
    def speedup(self) -> float:
        """sequential / fused."""
        return self.sequential_time / self.fused_time if self.fused_time > 0 else 1.0


def _check_overlap_args(compute_time, comm_time, n_tiles, direction, order, n_ranks, comm_sms,
                        total_sms, tile_latency, seed):
    G = check_real("compute_time", compute_time, lo=0.0, unit="s")
    C = check_real("comm_time", comm_time, lo=0.0, unit="s")
    T = check_int("n_tiles", n_tiles, lo=1, hi=_MAX_TILES)
    direction = check_choice("direction", direction, DIRECTIONS)
    order = check_choice("order", order, ORDERS)
    n = check_int("n_ranks", n_ranks, lo=1, hi=_MAX_RANKS)
    total = check_int("total_sms", total_sms, lo=1, hi=100_000)
    sms = check_int("comm_sms", comm_sms, lo=0, hi=total - 1)
    lat = check_real("tile_latency", tile_latency, lo=0.0, unit="s")
    seed = check_int("seed", seed, lo=0)
    return G, C, T, direction, order, n, total / (total - sms), lat, seed


def tile_overlap(compute_time: float, comm_time: float, *, n_tiles: int = 16,
                 direction: str = "gemm_a2a", order: str = "sorted", n_ranks: int = 8,
                 comm_sms: int = 0, total_sms: int = 132, tile_latency: float = 0.0,
                 seed: int = 0) -> TileOverlap:
    """Fuse a GEMM of ``compute_time`` seconds with an all-to-all of ``comm_time`` seconds at
    tile granularity and time it on the timeline engine (see the module doc).

    ``n_tiles`` GEMM output tiles (up to 4,096); ``direction`` "gemm_a2a" (send each tile when
    written) or "a2a_gemm" (start each tile when its rows have arrived); ``order`` of the rows in
    "a2a_gemm": "sorted" by source or "random" (seeded by ``seed``); ``n_ranks`` GPUs in the
    all-to-all (a ``1/n_ranks`` share of the rows is the GPU's own); ``comm_sms`` of
    ``total_sms`` SMs drive the transfer and are taken from the GEMM; ``tile_latency`` (s) is
    added to every transfer piece (signalling, a flag per tile). ``n_ranks`` up to 1,024;
    times whose sum would leave the range of a float (above 1e300 s), or a GEMM vanishingly
    short next to its transfer (a speedup beyond the float range), are refused.

    >>> r = tile_overlap(1e-3, 1e-3, n_tiles=16, direction="a2a_gemm", order="random")
    >>> r.fused_time > tile_overlap(1e-3, 1e-3, n_tiles=16, direction="a2a_gemm").fused_time
    True
    """
    G, C, T, direction, order, n, tax, lat, seed = _check_overlap_args(
        compute_time, comm_time, n_tiles, direction, order, n_ranks, comm_sms, total_sms,
        tile_latency, seed)
    # The makespan is at most the sum of every op's time: keep that sum finite.
    if not G * tax + C + 2 * T * lat <= _MAX_SECONDS:
        raise ValueError(f"compute_time, comm_time and tile_latency add up to more than "
                         f"{_MAX_SECONDS:g} s; got {G}, {C} and {lat}")
    dur, res, tile, src, dst, _, _, n_pieces = _fused_block(G, C, T, direction, order, n, seed,
                                                            tax, lat)
    ptr, esrc, edly = edges_to_csr(dur.size, src, dst)
    tl = run_timeline(dur, res, ptr, esrc, edly)
    fused = tl.makespan
    if fused > 0 and not math.isfinite((G + C) / fused):
        raise ValueError(f"compute_time={G} is vanishingly small next to comm_time={C}: the "
                         "speedup leaves the range of a float")
    busy_c = float(dur[res == 0].sum())
    busy_m = float(dur[res == 1].sum())
    tile.flags.writeable = False
    return trusted(TileOverlap, fused_time=fused, sequential_time=G + C, compute_time=busy_c,
                   comm_time=busy_m, n_tiles=T, n_pieces=n_pieces, direction=direction,
                   order=order, start=tl.start, finish=tl.finish, resource=tl.resource,
                   tile=tile)


def _reference_tile_overlap(compute, comm, need, direction):
    """Obviously-correct recurrences for one fused pair (tests only).

    ``compute``: tile durations; ``comm``: piece durations; ``need``: for "a2a_gemm" the last
    piece each tile waits for (-1 for none), ignored for "gemm_a2a" (piece i waits for tile i).
    Returns the makespan.
    """
    if direction == "gemm_a2a":
        t_tile = 0.0
        t_comm = 0.0
        for g, c in zip(compute, comm, strict=True):
            t_tile += g
            t_comm = max(t_comm, t_tile) + c
        return max(t_tile, t_comm)
    arrive = []
    t = 0.0
    for c in comm:
        t += c
        arrive.append(t)
    t_tile = 0.0
    for g, p in zip(compute, need, strict=True):
        ready = arrive[p] if p >= 0 else 0.0
        t_tile = max(t_tile, ready) + g
    return max([t_tile, *arrive[-1:]])
