"""The ops of one fused GEMM + all-to-all at tile granularity (private: shared by
:func:`uneven.overlap.tile_overlap` and the MoE layer timeline of
:mod:`uneven.schedulers.moe_layer`). Times in seconds; the model is described in
:mod:`uneven.overlap`.
"""

from __future__ import annotations

import numpy as np

#: Rows (tokens) per GEMM output tile: the M size of one tile in the fused kernels [model].
ROWS_PER_TILE = 128


def _piece_dependencies(n_tiles: int, n_ranks: int, order: str, seed: int):
    """For an all-to-all feeding a GEMM: the number of transfer pieces and, per GEMM tile, the
    last piece it needs (-1: only the GPU's own rows). Rows are delivered source by source, the
    GPU's own rows (source 0) need no transfer, and pieces hold ``ROWS_PER_TILE`` rows."""
    R = ROWS_PER_TILE
    N = n_tiles * R
    local = N // n_ranks if n_ranks > 1 else N
    remote = N - local
    n_pieces = -(-remote // R)
    piece = np.full(N, -1, dtype=np.int64)  # piece of each row, in delivery (= sorted) order
    piece[local:] = np.arange(remote, dtype=np.int64) // R
    if order == "random":
        piece = piece[np.random.default_rng(seed).permutation(N)]
    need = piece.reshape(n_tiles, R).max(axis=1)
    return n_pieces, need



def _fused_block(G, C, n_tiles, direction, order, n_ranks, seed, tax, tile_latency):
    """Ops of one fused pair: ``(dur, res, kind_is_comm, tile_idx, src, dst, first, last)``.

    Local op ids: compute tiles and transfer pieces, in resource order. ``first``: ops that must
    wait for the block's input; ``last``: ops whose finish means the block's output is complete.
    """
    T = n_tiles
    g = G / T * tax
    if direction == "gemm_a2a":
        n_pieces = T
        c = C / T + tile_latency
        dur = np.concatenate([np.full(T, g), np.full(T, c)])
        res = np.concatenate([np.zeros(T, np.int64), np.ones(T, np.int64)])
        src = np.arange(T, dtype=np.int64)
        dst = T + src
        first = np.array([0], dtype=np.int64)
        last = np.array([T - 1, 2 * T - 1], dtype=np.int64)
    else:
        n_pieces, need = _piece_dependencies(T, n_ranks, order, seed)
        c = (C / n_pieces if n_pieces else 0.0) + tile_latency
        dur = np.concatenate([np.full(n_pieces, c), np.full(T, g)])
        res = np.concatenate([np.ones(n_pieces, np.int64), np.zeros(T, np.int64)])
        waits = np.flatnonzero(need >= 0)
        src = need[waits]
        dst = n_pieces + waits
        first = np.array([0, n_pieces] if n_pieces else [0], dtype=np.int64)
        last = np.array([n_pieces + T - 1], dtype=np.int64)
    tile = np.concatenate([np.arange(T), np.arange(n_pieces)]) if direction == "gemm_a2a" else (
        np.concatenate([np.arange(n_pieces), np.arange(T)]))
    return dur, res, tile.astype(np.int64), src, dst, first, last, n_pieces

