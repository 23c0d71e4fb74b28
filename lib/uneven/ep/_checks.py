"""Argument checks and conversions that several :mod:`uneven.ep` modules share (private).

The words themselves (``PATHS``, ``UNITS``) are explained once, in :mod:`uneven.ep`.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np

from .._validate import _show, as_float_array, as_int_array, check_choice, check_int, check_real
from ..limits import PY_STEP, check_bytes, check_steps

__all__ = ["PATHS", "UNITS", "check_path", "check_unit", "bytes_per_token", "check_loads",
           "MAX_LOAD", "MAX_SLOTS", "replica_counts", "check_slot_fill",
           "swap_steps", "check_swap_budget"]

#: How a copy reaches a target on another node (see :mod:`uneven.ep`).
PATHS = ("relay", "direct")
#: What one copy serves (see :mod:`uneven.ep`).
UNITS = ("gpu", "slot")

#: Largest load (or weight) of one expert: sums over a million slots stay far from overflow.
MAX_LOAD = 1e250


def check_path(value, name: str = "mode") -> str:
    """``"relay"`` or ``"direct"``; the old word ``"dedup"`` still means ``"relay"`` (with a
    ``DeprecationWarning``) for one release."""
    if isinstance(value, str) and value == "dedup":
        warnings.warn(f'{name}="dedup" is now called "relay" (one network copy per remote node, '
                      "to the GPU with the sender's local index); the old word goes in the "
                      "next release", DeprecationWarning, stacklevel=3)
        return "relay"
    return check_choice(name, value, PATHS)


def check_unit(value, name: str = "unit") -> str:
    """``"gpu"`` (one copy per distinct target GPU) or ``"slot"`` (one per chosen expert)."""
    return check_choice(name, value, UNITS)


_BYTES_PER_VALUE = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}


def bytes_per_token(hidden, dtype, name: str = "dtype") -> float:
    """Bytes of a token of ``hidden`` values in ``dtype`` (errors name ``name``, the caller's
    parameter): "fp8" (1 byte per value plus a float32 scale per block of 128 values),
    "bf16"/"fp16" (2), "fp32" (4), or a number of bytes per value in [2**-10, 1e6]."""
    hidden = check_int("hidden", hidden, lo=1, hi=2**40)
    if isinstance(dtype, Real) and not isinstance(dtype, (bool, np.bool_)):
        per = check_real(name, dtype, lo=2.0**-10, hi=1e6, unit="bytes per value")
        return hidden * per
    choices = ("fp8", *_BYTES_PER_VALUE)
    if not isinstance(dtype, str) or dtype.lower() not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))} or a number of bytes per "
            f"value in [2**-10, 1e6]; got {_show(dtype)}"
        )
    dtype = dtype.lower()
    if dtype == "fp8":
        # 1 byte per value plus one float32 scale per block of 128 values (a last, partial
        # block still needs its scale): H·(1 + 4/128) when 128 divides H.
        return float(hidden + 4 * math.ceil(hidden / 128))
    return hidden * _BYTES_PER_VALUE[dtype]


def check_loads(name: str, value, **kw) -> np.ndarray:
    """Loads (unitless, >= 0, at most :data:`MAX_LOAD` each) as float64; ``kw`` as
    :func:`uneven._validate.as_float_array` (``shape``, ``ndim``)."""
    return as_float_array(name, value, lo=0.0, hi=MAX_LOAD, **kw)


#: Most expert slots (replicas included) one layout may hold, as in :mod:`uneven.ep.placement`.
MAX_SLOTS = 1 << 20


def replica_counts(replicas, n_experts: int, name: str = "replicas") -> np.ndarray:
    """Replicas per expert as int64 ``[n_experts]`` (each >= 1, at most :data:`MAX_SLOTS` in
    all): one int for every expert, or one count per expert."""
    if isinstance(replicas, (int, np.integer, float, np.floating)) and not isinstance(
            replicas, (bool, np.bool_)):
        r = check_int(name, replicas, lo=1, hi=MAX_SLOTS)
        counts = np.full(n_experts, r, dtype=np.int64)
    else:
        counts = as_int_array(name, replicas, shape=(n_experts,), lo=1, hi=MAX_SLOTS)
    if float(counts.sum()) > MAX_SLOTS:
        raise ValueError(f"{name} must give at most {MAX_SLOTS:,} expert slots in all; got "
                         f"{float(counts.sum()):,.0f}")
    return counts


def _divisors(n: int) -> list:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def check_slot_fill(name: str, n_experts: int, counts, n_gpus: int, gpus_per_node: int,
                    size_word: str, cluster_gpus=None) -> int:
    """Slots per GPU when ``counts`` (replicas per expert) fill ``n_gpus`` GPUs evenly; otherwise
    a ValueError naming ``name`` that says why (every GPU needs the same whole number of expert
    slots, at least one) and what would work: a replica count that fills them, fewer GPUs (the
    group size ``size_word``: ``"n_gpus"``, ``"n_nodes"`` or ``"ep"``; with ``cluster_gpus`` a
    group size must also divide it) or more experts."""
    n_slots = int(np.sum(counts))
    if n_slots >= n_gpus and n_slots % n_gpus == 0:
        return n_slots // n_gpus
    r = int(counts[0])
    uniform = bool(np.all(counts == r))
    if not uniform:
        have = f"replicas (counts for {n_experts} experts that sum to {n_slots})"
    elif name == "replicas":
        have = f"replicas={r} with n_experts={n_experts}"
    else:
        have = f"{name}={n_experts} with replicas={r}"
    ways = []
    if uniform:
        fill = n_gpus // math.gcd(n_experts, n_gpus)  # the fewest replicas that fill every GPU
        ways.append(f"replicas={fill} ({n_experts * fill} slots, {n_experts * fill // n_gpus} "
                    "per GPU)")
    else:
        up = -(-n_slots // n_gpus) * n_gpus
        down = n_slots // n_gpus * n_gpus
        sums = [f"{down} ({n_slots - down} fewer)"] if down >= max(n_gpus, n_experts) else []
        ways.append(f"replica counts that sum to a multiple of {n_gpus}, e.g. "
                    f"{' or '.join([*sums, f'{up} ({up - n_slots} more)'])}")
    fits = [d for d in _divisors(n_slots) if d < n_gpus and d % gpus_per_node == 0
            and (cluster_gpus is None or cluster_gpus % d == 0)]
    if fits:
        d = fits[-1]
        value = d // gpus_per_node if size_word == "n_nodes" else d
        per = n_slots // d
        ways.append(f"{size_word}={value} ({d} GPUs, {per} slot{'s' if per > 1 else ''} each)")
    ways.append(f"n_experts a multiple of {n_gpus}")
    what = f"ep ({n_gpus})" if size_word == "ep" else f"the GPU count {n_gpus}"
    raise ValueError(
        f"{have} gives {n_slots} expert slots, which cannot fill {n_gpus} GPUs evenly: every "
        f"GPU needs the same whole number of expert slots, at least one, so the slots must be a "
        f"positive multiple of {what}. What would work: {'; '.join(ways[:-1])}; or {ways[-1]}."
    )


def swap_steps(p) -> float:
    """Loop steps of one :func:`nvlink_swaps` call: per host, a few dozen array operations and
    the ``slots_per_gpu²`` candidate pairs."""
    return p.n_nodes * (30.0 * PY_STEP + 12.0 * p.slots_per_gpu**2) + 10.0 * p.n_slots


def check_swap_budget(name: str, p, rounds: int = 1) -> None:
    """Refuse ``rounds`` calls of :func:`uneven.ep.placement.nvlink_swaps` on placement ``p``
    beyond the memory or work budget of :mod:`uneven.limits` (errors name ``name``)."""
    spg = p.slots_per_gpu
    check_bytes(name, f"a placement with {spg:,} slots per GPU", 8.0 * 10 * spg * spg,
                "the candidate swaps of one host")
    check_steps(name, f"a placement of {p.n_nodes:,} hosts", rounds * swap_steps(p),
                "trying swaps in every host")
