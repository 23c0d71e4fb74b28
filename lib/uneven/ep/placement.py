"""Expert placement for expert parallelism: which GPU holds which expert, and how many copies.

Every placement here is a **physical-slot → logical-expert map** ``phy2log``: ``n_slots`` slots,
``n_slots / n_gpus`` consecutive slots per GPU (slot ``s`` sits on GPU ``s // slots_per_gpu``),
each holding one logical expert; a hot expert may hold several slots (replicas). From ``phy2log``
follow ``logcnt`` (replicas per expert) and ``log2phy`` (the slots of each expert, ``-1``-padded),
the same three outputs, with the same meaning, as DeepSeek's public load balancer EPLB
(github.com/deepseek-ai/EPLB, ``eplb.py``).

Placements:

* :func:`contiguous_slots` — ``n_experts / n_gpus`` consecutive experts per GPU, no replicas (the
  plain EP layout, DeepEP's tests);
* :func:`rebalance_experts` — EPLB's algorithm on a ``[layers, experts]`` load matrix, and
  :func:`eplb_placement` for one layer. Its steps: :func:`replicate_experts` (each extra slot goes
  to the expert with the largest load per replica), :func:`balanced_packing` (heaviest item first
  into the lightest pack that still has room; every pack gets the same number of items), and the
  *hierarchical* policy — expert groups packed onto nodes, replicas made inside each node, replicas
  packed onto that node's GPUs — used when the node count divides the group count; otherwise the
  *global* policy, the same routine with one group and one node;
* :func:`nic_aware_placement` — the same replication, then packing in three levels: replicas onto
  hosts, each host's replicas onto its NICs, each NIC's replicas onto the GPUs behind it. On a host
  whose GPUs share NICs (H20: two GPUs per 400 Gb/s NIC) this balances what crosses each NIC;
* :func:`nvlink_swaps` — one step of swaps inside each host: an expert on the hottest NIC's hottest
  GPU trades places with one on the coldest NIC's coldest GPU when that lowers the hotter NIC's
  load by more than a threshold. Weights move over NVLink, so only swaps inside a host are allowed.

Loads are unitless (tokens per expert, or any proportional weight). Which replica serves a token
is a rule of this library (EPLB leaves it to the serving framework), one of :data:`REPLICA_RULES`:

* ``"round_robin"`` — replica ``src_gpu mod logcnt[e]`` of expert ``e``: every source GPU always
  uses the same replica, and the numbers of sources that the replicas of one expert serve differ
  by at most one (the default of :func:`route_to_slots`, used by the serving models);
* ``"nearest"`` — the closest replica: on the token's own GPU, else on its node, else under its
  leaf switch group (``nodes_per_leaf``), else anywhere. Among the ``m`` equally close replicas
  (in replica order) a round robin picks one: number ``src_gpu mod m`` when they are on the
  token's node, number ``src_node mod m`` when they are on other nodes. The second is by node, not
  GPU, because the relay dispatch sends a token's network copy on its own rail: broken by GPU, a
  tie would send every even rail's tokens to one copy and every odd rail's to the other, doubling
  the busiest NIC's load (a 512-GPU dispatch of 256 experts x 2: 166 µs by node, 319 µs by GPU;
  model). A token whose expert has a replica on its own node never crosses the network for it.
  It is the default of the training EP model (:func:`uneven.ep.model.route_ep_group`,
  :func:`uneven.ep.model.ep_step`).

:func:`replicated_slots` lays out a replica count per expert (copy ``j`` of every expert after all
copies of rank below ``j``, so ``r`` equal replicas are ``r`` side-by-side copies of the contiguous
layout) and :func:`replica_table` tabulates a rule: the slot each GPU uses for each expert.

Ties: items of equal weight are packed in order of their index (a stable sort), and the first of
equal maxima wins. The public ``eplb.py`` sorts with torch's unstable sort in float32, so on inputs
with exactly equal loads the two may pack equal items in another order; on tie-free inputs they
give the same maps (``tests/test_placement.py`` compares them on saved outputs of the public code).

>>> load = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86]]
>>> phy2log, log2phy, logcnt = rebalance_experts(load, 16, 4, 2, 8)   # EPLB's README example
>>> phy2log.tolist()
[[5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1]]

One host of 4 GPUs, two per NIC, 8 experts with two hot ones:

>>> load = [8.0, 7.0, 1.0, 1.0, 2.0, 3.0, 1.0, 1.0]
>>> plain = contiguous_slots(8, 4, gpus_per_node=4, gpus_per_nic=2)
>>> eplb = eplb_placement(load, 12, 4, gpus_per_node=4, gpus_per_nic=2)
>>> nic = nic_aware_placement(load, 12, 4, gpus_per_node=4, gpus_per_nic=2)
>>> gpu_loads(plain, load).tolist(), nic_loads(eplb, load).tolist(), host_loads(nic, load).tolist()
([15.0, 2.0, 5.0, 2.0], [12.0, 12.0], [24.0])
>>> slot_loads(eplb, load).round(2).tolist()[:4]
[3.0, 2.0, 1.0, 2.67]
>>> route_to_slots(nic, [[0, 1], [0, 5]], [0, 3]).tolist()
[[6, 7], [6, 0]]
>>> two = replicated_slots(4, 4, 2, gpus_per_node=2, gpus_per_nic=1)   # 2 copies of 4 experts
>>> two.phy2log.tolist(), replica_table(two)[:, 0].tolist()   # GPUs 0, 1 use node 0's expert 0
([0, 1, 2, 3, 0, 1, 2, 3], [0, 0, 4, 4])
>>> swap = nvlink_swaps(plain, load, blocked=[False] * 7 + [True])
>>> swap.pairs.tolist(), swap.nic_max_before, swap.nic_max_after
([[1, 6]], 17.0, 13.0)
>>> [a.tolist() for a in balanced_packing([[5.0, 1.0, 4.0, 2.0], [1.0, 1.0, 3.0, 0.0]], 2)]
[[[0, 0, 1, 1], [1, 1, 0, 0]], [[0, 1, 0, 1], [0, 1, 0, 1]]]
>>> [a.tolist() for a in replicate_experts([[6.0, 2.0, 3.0]], 5)]
[[[0, 1, 2, 0, 0]], [[0, 0, 0, 1, 2]], [[3, 1, 1]]]
>>> placement_from_phy2log([0, 1, 2, 0, 3, 1], 4, 2, gpus_per_node=2, gpus_per_nic=1,
...                        phyrank=[0, 0, 0, 1, 0, 1], name="mine")
Placement(n_gpus=2, gpus_per_node=2, gpus_per_nic=1, name='mine')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, check_fields, instance, integer, real, text
from .._jit import njit
from .._validate import (
    as_int_array,
    check_choice,
    check_instance,
    check_int,
    check_real,
    check_str,
    frozen_array,
    trusted,
)
from ..limits import check_bytes, check_steps
from ._checks import MAX_SLOTS, check_loads, check_slot_fill, check_swap_budget, replica_counts

__all__ = [
    "Placement",
    "SwapResult",
    "balanced_packing",
    "replicate_experts",
    "rebalance_experts",
    "eplb_placement",
    "contiguous_slots",
    "nic_aware_placement",
    "placement_from_phy2log",
    "replicated_slots",
    "replica_table",
    "route_to_slots",
    "REPLICA_RULES",
    "slot_loads",
    "gpu_loads",
    "nic_loads",
    "host_loads",
    "busiest_gpu_floor",
    "nvlink_swaps",
    "MAX_LAYERS",
    "MAX_EXPERTS",
    "MAX_SLOTS",
]

#: Largest sizes accepted (bigger inputs are refused with a ValueError before any allocation).
#: Within them, every call also stays inside the memory and work budgets of :mod:`uneven.limits`
#: (2 GiB and 2e9 loop steps by default): the greedy replication costs ``rows x (slots -
#: experts) x experts`` steps, the packing ``rows x items x packs``.
MAX_LAYERS, MAX_EXPERTS = 4096, 65536
#: How a token picks one replica of a chosen expert (see the module docstring).
REPLICA_RULES = ("nearest", "round_robin")
_MAX_CELLS = 50_000_000  # layers x slots


@dataclass(frozen=True, eq=False)
class Placement(Checked):
    """One layer's expert placement on ``n_gpus`` GPUs.

    ``phy2log``: int64 ``[n_slots]``, the logical expert in each physical slot (slot ``s`` on GPU
    ``s // slots_per_gpu``). ``logcnt``: int64 ``[n_experts]``, replicas per expert (>= 1).
    ``log2phy``: int64 ``[n_experts, max(logcnt)]``, the slots of each expert in replica order,
    padded with -1. ``gpus_per_node`` and ``gpus_per_nic`` describe the hosts (GPU ``g`` sits on
    host ``g // gpus_per_node`` behind NIC ``g // gpus_per_nic``). ``name`` labels figures.
    """

    phy2log: np.ndarray = array("int", ndim=1, lo=0, repr=False)
    logcnt: np.ndarray = array("int", ndim=1, nonempty=True, lo=1, repr=False)
    log2phy: np.ndarray = array("int", shape=lambda p: (p.logcnt.size, None),
                                lo=-1, repr=False)
    n_gpus: int = integer(lo=1, hi=MAX_SLOTS)
    gpus_per_node: int = integer(lo=1, hi="n_gpus")
    gpus_per_nic: int = integer(lo=1, hi="gpus_per_node")
    name: str = text(max_len=200, default="placement")
    check_first = ("n_gpus", "gpus_per_node", "gpus_per_nic")

    def __post_init__(self):
        # Direct construction and dataclasses.replace: the three maps must describe one
        # placement (the library's own placements are made by placement_from_phy2log, unchecked
        # here a second time).
        check_fields(self)
        _check_hosts(self.n_gpus, self.gpus_per_node, self.gpus_per_nic)
        p2l, cnt, l2p = self.phy2log, self.logcnt, self.log2phy
        if p2l.size == 0 or p2l.size > MAX_SLOTS or p2l.size % self.n_gpus:
            raise ValueError(f"phy2log must have a positive multiple of n_gpus ({self.n_gpus}) "
                             f"slots (at most {MAX_SLOTS:,}); got {p2l.size}")
        if cnt.size > MAX_EXPERTS or p2l.max() >= cnt.size:
            raise ValueError(f"logcnt must have one entry per expert (1 .. {MAX_EXPERTS:,}), "
                             f"more than the largest expert id in phy2log ({p2l.max()}); got "
                             f"{cnt.size} entries")
        if not np.array_equal(np.bincount(p2l, minlength=cnt.size), cnt):
            raise ValueError("logcnt must count the slots of each expert in phy2log (each "
                             "expert at least once)")
        used = np.arange(l2p.shape[1])[None, :] < cnt[:, None]
        slots = l2p[used]  # expert by expert, in replica order
        if (l2p[~used] != -1).any() or slots.min() < 0 or not np.array_equal(
            p2l[np.minimum(slots, p2l.size - 1)], np.repeat(np.arange(cnt.size), cnt)
        ) or slots.max() >= p2l.size or np.bincount(slots, minlength=p2l.size).max() > 1:
            raise ValueError("log2phy must list each expert's slots of phy2log once each, in "
                             "its first logcnt entries, padded with -1")

    @property
    def n_slots(self) -> int:
        """Physical slots (replicas included)."""
        return int(self.phy2log.size)

    @property
    def n_experts(self) -> int:
        """Logical experts."""
        return int(self.logcnt.size)

    @property
    def slots_per_gpu(self) -> int:
        """Slots on each GPU."""
        return self.n_slots // self.n_gpus

    @property
    def n_nodes(self) -> int:
        """Hosts."""
        return self.n_gpus // self.gpus_per_node

    @property
    def n_nics(self) -> int:
        """NICs in all hosts."""
        return self.n_gpus // self.gpus_per_nic

    @property
    def slot_gpu(self) -> np.ndarray:
        """int64 ``[n_slots]``: the GPU of each slot."""
        return np.arange(self.n_slots, dtype=np.int64) // self.slots_per_gpu


@dataclass(frozen=True, eq=False)
class SwapResult(Checked):
    """What :func:`nvlink_swaps` did: the new ``placement``, the swapped slot pairs ``pairs``
    (int64 ``[n, 2]``, one row per swap), the bytes of expert weights copied over NVLink
    (``copy_bytes``, two experts per swap) and the largest NIC load before and after
    (``nic_max_before``, ``nic_max_after``, in the units of the load)."""

    placement: Placement = instance(Placement)
    pairs: np.ndarray = array("int", shape=(None, 2), lo=0, hi=lambda r: r.placement.n_slots - 1,
                              repr=False)
    copy_bytes: float = real(lo=0.0, unit="bytes")
    nic_max_before: float = real(lo=0.0)
    nic_max_after: float = real(lo=0.0)


# --------------------------------------------------------------------------------------------
# kernels


@njit
def _replicate_kernel(weight, n_phy, phy2log, rank, logcnt):
    """Greedy replication per row: each extra slot to argmax weight / count (first maximum)."""
    n_rows, n = weight.shape
    for r in range(n_rows):
        for e in range(n):
            phy2log[r, e] = e
            rank[r, e] = 0
            logcnt[r, e] = 1
        for i in range(n, n_phy):
            best = 0
            best_v = weight[r, 0] / logcnt[r, 0]
            for e in range(1, n):
                v = weight[r, e] / logcnt[r, e]
                if v > best_v:
                    best = e
                    best_v = v
            phy2log[r, i] = best
            rank[r, i] = logcnt[r, best]
            logcnt[r, best] += 1


@njit
def _packing_kernel(weight, order, n_packs, pack_index, rank_in_pack, pack_w, pack_n):
    """Per row: items in ``order`` (heaviest first) each to the lightest pack with room (first
    such pack on ties); every pack takes ``n / n_packs`` items."""
    n_rows, n = weight.shape
    per = n // n_packs
    for r in range(n_rows):
        for p in range(n_packs):
            pack_w[p] = 0.0
            pack_n[p] = 0
        for q in range(n):
            item = order[r, q]
            best = -1
            best_w = np.inf
            for p in range(n_packs):
                if pack_n[p] < per and pack_w[p] < best_w:
                    best = p
                    best_w = pack_w[p]
            pack_index[r, item] = best
            rank_in_pack[r, item] = pack_n[best]
            pack_w[best] += weight[r, item]
            pack_n[best] += 1


# --------------------------------------------------------------------------------------------
# pure-Python references (tests only)


def _reference_replicate(weight, n_phy):
    """Replication of one row with lists (tests only)."""
    w = [float(x) for x in weight]
    cnt = [1] * len(w)
    phy2log, rank = list(range(len(w))), [0] * len(w)
    for _ in range(len(w), n_phy):
        ratios = [w[e] / cnt[e] for e in range(len(w))]
        best = ratios.index(max(ratios))
        phy2log.append(best)
        rank.append(cnt[best])
        cnt[best] += 1
    return phy2log, rank, cnt


def _reference_packing(weight, n_packs):
    """Balanced packing of one row with lists (tests only)."""
    n = len(weight)
    per = n // n_packs
    if per == 1:
        return list(range(n)), [0] * n
    order = sorted(range(n), key=lambda i: (-float(weight[i]), i))
    load, count = [0.0] * n_packs, [0] * n_packs
    pack, rank = [0] * n, [0] * n
    for i in order:
        p = min((p for p in range(n_packs) if count[p] < per), key=lambda p: (load[p], p))
        pack[i], rank[i] = p, count[p]
        load[p] += float(weight[i])
        count[p] += 1
    return pack, rank


# --------------------------------------------------------------------------------------------
# EPLB's building blocks


def _as_rows(name, weight):
    w = check_loads(name, weight)
    if w.ndim not in (1, 2):
        raise ValueError(f"{name} must be a 1-d or 2-d array of loads; got shape {w.shape}")
    one = w.ndim == 1
    w = w.reshape(1, -1) if one else w
    if w.shape[1] == 0:
        raise ValueError(f"{name} must have at least one item per row; got shape {w.shape}")
    if w.shape[0] > MAX_LAYERS * 64 or w.shape[1] > MAX_SLOTS or w.size > _MAX_CELLS:
        raise ValueError(f"{name} is too large: shape {w.shape} (at most {_MAX_CELLS:,} entries)")
    return w, one


def _packing(w, n_packs):
    n_rows, n = w.shape
    pack = np.empty((n_rows, n), dtype=np.int64)
    rank = np.empty((n_rows, n), dtype=np.int64)
    if n // n_packs == 1:  # one item per pack: item i is pack i (no sorting), as EPLB does
        pack[:] = np.arange(n, dtype=np.int64)
        rank[:] = 0
        return pack, rank
    order = np.argsort(-w, axis=1, kind="stable").astype(np.int64)
    _packing_kernel(w, order, n_packs, pack, rank, np.empty(n_packs), np.empty(n_packs, np.int64))
    return pack, rank


def balanced_packing(weight, n_packs: int):
    """Pack ``n`` weighted items into ``n_packs`` packs of exactly ``n / n_packs`` items each.

    Greedy, as EPLB's ``balanced_packing``: items sorted heaviest first (ties by index), each put
    into the currently lightest pack that still has room (ties: the lower pack). With one item
    per pack, item ``i`` goes to pack ``i``. ``weight``: float ``[n]`` or ``[rows, n]`` (>= 0,
    unitless); rows are packed independently. Returns ``(pack_index, rank_in_pack)``, int64 of
    the same shape: the pack of each item and its position in that pack (0 = packed first).

    >>> pack, rank = balanced_packing([5.0, 1.0, 4.0, 2.0], 2)
    >>> pack.tolist(), rank.tolist()
    ([0, 0, 1, 1], [0, 1, 0, 1])
    """
    w, one = _as_rows("weight", weight)
    n = w.shape[1]
    n_packs = check_int("n_packs", n_packs, lo=1, hi=n)
    if n % n_packs:
        raise ValueError(f"n_packs must divide the number of items ({n}); got {n_packs}")
    check_bytes("weight", weight, 8.0 * 4 * w.size, "the packs and ranks of every item")
    check_steps("n_packs", n_packs, _packing_steps(w.shape[0], n, n_packs),
                "packing every item into the lightest pack")
    pack, rank = _packing(w, n_packs)
    return (pack[0], rank[0]) if one else (pack, rank)


def _packing_steps(rows, n, n_packs):
    """Loop steps of :func:`_packing` on ``rows`` rows of ``n`` items."""
    return float(rows) * n * (n_packs + 2 * max(1.0, math.log2(n)))


def _replicate_steps(rows, n, n_phy):
    """Loop steps of :func:`_replicate`: each extra slot scans every expert."""
    return float(rows) * (n + (n_phy - n) * n)


def _replicate(w, n_phy):
    n_rows, n = w.shape
    phy2log = np.empty((n_rows, n_phy), dtype=np.int64)
    rank = np.empty((n_rows, n_phy), dtype=np.int64)
    logcnt = np.empty((n_rows, n), dtype=np.int64)
    _replicate_kernel(w, n_phy, phy2log, rank, logcnt)
    return phy2log, rank, logcnt


def replicate_experts(weight, n_phy: int):
    """Give ``n_phy - n`` extra slots to the ``n`` experts so that the largest load per replica is
    as small as possible (greedy, as EPLB's ``replicate_experts``).

    Slots ``0 .. n-1`` hold experts ``0 .. n-1``; each further slot goes to the expert with the
    largest ``weight / replicas`` so far (the first such expert on ties). ``weight``: float
    ``[n]`` or ``[rows, n]`` (>= 0). Returns ``(phy2log, rank, logcnt)``: the expert of each slot
    ``[.., n_phy]``, its replica rank (0 = the original) and the replicas per expert ``[.., n]``.

    >>> phy2log, rank, logcnt = replicate_experts([6.0, 2.0, 3.0], 5)
    >>> phy2log.tolist(), rank.tolist(), logcnt.tolist()
    ([0, 1, 2, 0, 0], [0, 0, 0, 1, 2], [3, 1, 1])
    """
    w, one = _as_rows("weight", weight)
    n = w.shape[1]
    n_phy = check_int("n_phy", n_phy, lo=n, hi=MAX_SLOTS)
    if w.shape[0] * n_phy > _MAX_CELLS:
        raise ValueError(f"n_phy={n_phy} with {w.shape[0]} rows is too large")
    check_bytes("n_phy", n_phy, 8.0 * w.shape[0] * (2 * n_phy + n), "the slot maps")
    check_steps("n_phy", n_phy, _replicate_steps(w.shape[0], n, n_phy),
                "giving each extra slot to the busiest expert")
    out = _replicate(w, n_phy)
    return tuple(a[0] for a in out) if one else out


def _inverse_rows(perm):
    inv = np.empty_like(perm)
    rows = np.arange(perm.shape[0])[:, None]
    inv[rows, perm] = np.arange(perm.shape[1], dtype=np.int64)[None, :]
    return inv


def _eplb_hierarchical(w, n_phy, n_groups, n_nodes, n_gpus):
    """EPLB's three steps on loads ``w [L, E]``; returns phy2log, phyrank, logcnt."""
    n_layers, n_exp = w.shape
    group_size = n_exp // n_groups
    groups_per_node = n_groups // n_nodes
    exp_per_node = n_exp // n_nodes
    phy_per_node = n_phy // n_nodes
    gpus_per_node = n_gpus // n_nodes
    per_gpu = n_phy // n_gpus
    # 1. groups -> nodes. An expert's "node-major" id: its node's block, its group's place in the
    #    node, its place in the group.
    group_load = w.reshape(n_layers, n_groups, group_size).sum(axis=2)
    gpack, grank = _packing(group_load, n_nodes)
    first = (gpack * groups_per_node + grank) * group_size  # [L, G]
    log2m = (first[:, :, None] + np.arange(group_size)).reshape(n_layers, n_exp)
    m2log = _inverse_rows(log2m)
    # 2. replicas inside each node: one row per (layer, node)
    wm = np.take_along_axis(w, m2log, axis=1).reshape(n_layers * n_nodes, exp_per_node)
    phy2m, prank, mcnt = _replicate(wm, phy_per_node)
    # 3. a node's replicas -> its GPUs, by load per replica
    rep_load = np.take_along_axis(wm / mcnt, phy2m, axis=1)
    pack, rank = _packing(rep_load, gpus_per_node)
    pos = pack * per_gpu + rank  # where each replica ends up inside its node
    rows = np.arange(n_layers * n_nodes)[:, None]
    placed_m = np.empty_like(phy2m)
    placed_rank = np.empty_like(prank)
    placed_m[rows, pos] = phy2m
    placed_rank[rows, pos] = prank
    offset = (np.arange(n_nodes, dtype=np.int64) * exp_per_node)[None, :, None]
    m_global = (placed_m.reshape(n_layers, n_nodes, phy_per_node) + offset).reshape(n_layers, n_phy)
    phy2log = np.take_along_axis(m2log, m_global, axis=1)
    phyrank = placed_rank.reshape(n_layers, n_phy)
    logcnt = np.take_along_axis(mcnt.reshape(n_layers, n_exp), log2m, axis=1)
    return phy2log, phyrank, logcnt


def _log2phy(phy2log, phyrank, logcnt, name="n_replicas"):
    n_layers, n_phy = phy2log.shape
    width = int(logcnt.max())
    check_bytes(name, n_phy, 8.0 * logcnt.size * width,
                f"log2phy: {logcnt.size:,} experts x {width:,} replicas of the busiest")
    out = np.full((n_layers, logcnt.shape[1], width), -1, dtype=np.int64)
    rows = np.arange(n_layers)[:, None]
    out[rows, phy2log, phyrank] = np.arange(n_phy, dtype=np.int64)[None, :]
    return out


def rebalance_experts(weight, n_replicas: int, n_groups: int, n_nodes: int, n_gpus: int):
    """EPLB: replicate and place experts so that GPU loads are balanced.

    Same inputs and outputs as the public ``eplb.rebalance_experts``: ``weight`` float
    ``[layers, n_experts]`` (>= 0, predicted load per expert, e.g. a moving average of token
    counts); ``n_replicas`` physical slots per layer (a multiple of ``n_gpus``, at least
    ``n_experts``); ``n_groups`` expert groups (contiguous, must divide ``n_experts``);
    ``n_nodes`` hosts; ``n_gpus`` GPUs (a multiple of ``n_nodes``). If ``n_nodes`` divides
    ``n_groups`` the hierarchical policy runs (whole groups stay on one node, replicas are made
    inside each node); otherwise the global one (groups and nodes taken as 1).

    Returns ``(phy2log, log2phy, logcnt)``: int64 ``[layers, n_replicas]`` (expert of each slot;
    slots ``g*s .. g*s+s-1`` are GPU ``g``'s with ``s = n_replicas / n_gpus``),
    ``[layers, n_experts, max replicas]`` (slots of each expert by replica rank, -1 padded) and
    ``[layers, n_experts]`` (replicas per expert). Largest sizes: ``layers × n_replicas`` up to
    50 million.

    >>> p, l2p, cnt = rebalance_experts([[4.0, 1.0, 1.0, 2.0]], 6, 1, 1, 2)   # global policy
    >>> p.tolist(), cnt.tolist()
    ([[3, 0, 2, 0, 0, 1]], [[3, 1, 1, 1]])
    """
    w, _ = _as_rows("weight", weight)
    if np.asarray(weight).ndim != 2:
        raise ValueError(f"weight must be a 2-d array [layers, experts]; got shape "
                         f"{np.asarray(weight).shape}")
    n_layers, n_exp = w.shape
    if n_layers == 0 or n_layers > MAX_LAYERS or n_exp > MAX_EXPERTS:
        raise ValueError(f"weight must have 1 .. {MAX_LAYERS} layers and at most {MAX_EXPERTS} "
                         f"experts; got shape {w.shape}")
    n_gpus = check_int("n_gpus", n_gpus, lo=1, hi=MAX_SLOTS)
    n_replicas = check_int("n_replicas", n_replicas, lo=n_exp, hi=MAX_SLOTS)
    if n_replicas % n_gpus:
        raise ValueError(f"n_replicas must be a multiple of n_gpus ({n_gpus}); got {n_replicas}")
    if n_layers * n_replicas > _MAX_CELLS:
        raise ValueError(f"layers x n_replicas must be at most {_MAX_CELLS:,}; got "
                         f"{n_layers} x {n_replicas}")
    n_groups = check_int("n_groups", n_groups, lo=1, hi=n_exp)
    if n_exp % n_groups:
        raise ValueError(f"n_groups must divide the number of experts ({n_exp}); got {n_groups}")
    n_nodes = check_int("n_nodes", n_nodes, lo=1, hi=n_gpus)
    if n_gpus % n_nodes:
        raise ValueError(f"n_nodes must divide n_gpus ({n_gpus}); got {n_nodes}")
    hier = n_groups % n_nodes == 0
    g, nodes = (n_groups, n_nodes) if hier else (1, 1)
    check_bytes("n_replicas", n_replicas, 8.0 * n_layers * (12 * n_replicas + 6 * n_exp),
                "the slot maps of every layer")
    check_steps("n_replicas", n_replicas,
                _replicate_steps(n_layers * nodes, n_exp // nodes, n_replicas // nodes)
                + _packing_steps(n_layers, g, nodes)
                + _packing_steps(n_layers * nodes, n_replicas // nodes, n_gpus // nodes),
                "replicating and packing every layer")
    out = _eplb_hierarchical(w, n_replicas, g, nodes, n_gpus)
    phy2log, phyrank, logcnt = out
    return phy2log, _log2phy(phy2log, phyrank, logcnt), logcnt


# --------------------------------------------------------------------------------------------
# one-layer placements


def _check_hosts(n_gpus, gpus_per_node, gpus_per_nic):
    n_gpus = check_int("n_gpus", n_gpus, lo=1, hi=MAX_SLOTS)
    gpus_per_node = check_int("gpus_per_node", gpus_per_node, lo=1, hi=n_gpus)
    if n_gpus % gpus_per_node:
        raise ValueError(f"gpus_per_node must divide n_gpus ({n_gpus}); got {gpus_per_node}")
    gpus_per_nic = check_int("gpus_per_nic", gpus_per_nic, lo=1, hi=gpus_per_node)
    if gpus_per_node % gpus_per_nic:
        raise ValueError(f"gpus_per_nic must divide gpus_per_node ({gpus_per_node}); got "
                         f"{gpus_per_nic}")
    return n_gpus, gpus_per_node, gpus_per_nic


def placement_from_phy2log(phy2log, n_experts: int, n_gpus: int, *, gpus_per_node: int = 8,
                           gpus_per_nic: int = 2, phyrank=None, name: str = "placement"
                           ) -> Placement:
    """A :class:`Placement` from a slot → expert map (every expert needs at least one slot).

    ``phyrank`` (optional, int ``[n_slots]``): the replica rank of each slot, as EPLB returns it;
    by default replicas are ranked in slot order.

    >>> p = placement_from_phy2log([0, 1, 2, 0], 3, 2, gpus_per_node=2, gpus_per_nic=1)
    >>> p.logcnt.tolist(), p.log2phy.tolist()
    ([2, 1, 1], [[0, 3], [1, -1], [2, -1]])
    """
    n_gpus, gpn, gpnic = _check_hosts(n_gpus, gpus_per_node, gpus_per_nic)
    n_experts = check_int("n_experts", n_experts, lo=1, hi=MAX_EXPERTS)
    p2l = as_int_array("phy2log", phy2log, ndim=1, lo=0, hi=n_experts - 1)
    if p2l.size > MAX_SLOTS or p2l.size == 0 or p2l.size % n_gpus:
        raise ValueError(f"phy2log must have a positive multiple of n_gpus ({n_gpus}) slots (at "
                         f"most {MAX_SLOTS:,}); got {p2l.size}")
    logcnt = np.bincount(p2l, minlength=n_experts).astype(np.int64)
    if logcnt.min() < 1:
        missing = int(np.flatnonzero(logcnt == 0)[0])
        raise ValueError(f"phy2log must give every expert at least one slot; expert {missing} "
                         "has none")
    check_bytes("phy2log", phy2log, 8.0 * 6 * p2l.size, "the slot maps")
    name = check_str("name", name, max_len=200)
    if phyrank is None:
        order = np.argsort(p2l, kind="stable")
        starts = np.concatenate([[0], np.cumsum(logcnt)[:-1]])
        rank = np.empty_like(p2l)
        rank[order] = np.arange(p2l.size) - np.repeat(starts, logcnt)
    else:
        rank = as_int_array("phyrank", phyrank, shape=(p2l.size,), lo=0)
        if rank.max() >= logcnt.max() or np.any(rank >= logcnt[p2l]):
            raise ValueError("phyrank must number each expert's replicas 0 .. logcnt-1")
    log2phy = _log2phy_of(p2l, logcnt, rank, "phy2log")
    if np.any((log2phy < 0) & (np.arange(log2phy.shape[1]) < logcnt[:, None])):
        raise ValueError("phyrank must number each expert's replicas 0 .. logcnt-1 once each")
    return _placement(p2l, logcnt, log2phy, n_gpus, gpn, gpnic, name)


def _log2phy_of(p2l, logcnt, rank, name="n_slots"):
    """The slots of each expert by replica rank, -1 padded (from consistent maps)."""
    width = int(logcnt.max())
    check_bytes(name, p2l.size, 8.0 * logcnt.size * width,
                f"log2phy: {logcnt.size:,} experts x {width:,} replicas of the busiest")
    log2phy = np.full((logcnt.size, width), -1, dtype=np.int64)
    log2phy[p2l, rank] = np.arange(p2l.size, dtype=np.int64)
    return log2phy


def _placement(p2l, logcnt, log2phy, n_gpus, gpn, gpnic, name) -> Placement:
    """A Placement from maps this module just built and checked (no second check)."""
    for a in (p2l, logcnt, log2phy):
        a.flags.writeable = False
    return trusted(Placement, phy2log=p2l, logcnt=logcnt, log2phy=log2phy, n_gpus=n_gpus,
                   gpus_per_node=gpn, gpus_per_nic=gpnic, name=name)


def contiguous_slots(n_experts: int, n_gpus: int, *, gpus_per_node: int = 8,
                     gpus_per_nic: int = 2) -> Placement:
    """Expert ``e`` in slot ``e``: ``n_experts / n_gpus`` consecutive experts per GPU, no
    replicas (DeepEP's default layout).

    >>> contiguous_slots(8, 4, gpus_per_node=2, gpus_per_nic=1).slot_gpu.tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    n_gpus = check_int("n_gpus", n_gpus, lo=1, hi=MAX_SLOTS)
    n_experts = check_int("n_experts", n_experts, lo=n_gpus, hi=MAX_EXPERTS)
    if n_experts % n_gpus:
        raise ValueError(f"n_gpus must divide n_experts ({n_experts}); got {n_gpus}")
    n_gpus, gpn, gpnic = _check_hosts(n_gpus, gpus_per_node, gpus_per_nic)
    p2l = np.arange(n_experts, dtype=np.int64)
    return _placement(p2l, np.ones(n_experts, dtype=np.int64), p2l.reshape(-1, 1).copy(),
                      n_gpus, gpn, gpnic, "contiguous")


def replicated_slots(n_experts: int, n_gpus: int, replicas=1, *, gpus_per_node: int = 8,
                     gpus_per_nic: int = 2) -> Placement:
    """``replicas`` copies of each expert (an int for all, or an int ``[n_experts]`` of counts
    >= 1), laid out rank by rank: slot order is every expert's copy 0 (in expert order), then
    every copy 1 of the experts that have one, and so on; ``n_slots / n_gpus`` consecutive slots
    per GPU. Equal counts ``r`` give ``r`` copies of the contiguous layout side by side, each on
    ``n_gpus / r`` consecutive GPUs; ``replicas=1`` is :func:`contiguous_slots`. The slots must
    fill the GPUs evenly (a positive multiple of ``n_gpus``); the refusal says what would.

    >>> replicated_slots(4, 2, [1, 2, 1, 2], gpus_per_node=2, gpus_per_nic=1).phy2log.tolist()
    [0, 1, 2, 3, 1, 3]
    """
    n_gpus, gpn, gpnic = _check_hosts(n_gpus, gpus_per_node, gpus_per_nic)
    n_experts = check_int("n_experts", n_experts, lo=1, hi=MAX_EXPERTS)
    cnt = replica_counts(replicas, n_experts)
    check_bytes("replicas", replicas, 8.0 * 8 * int(cnt.sum()), "the slot maps")
    check_slot_fill("replicas", n_experts, cnt, n_gpus, gpn, "n_gpus")
    rank = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    expert = np.repeat(np.arange(n_experts, dtype=np.int64), cnt)
    order = np.lexsort((expert, rank))  # by replica rank, then expert
    p2l, prank = expert[order], rank[order]
    name = "contiguous" if cnt.max() == 1 else "replicated"
    return _placement(p2l, cnt, _log2phy_of(p2l, cnt, prank, "replicas"), n_gpus, gpn, gpnic,
                      name)


def eplb_placement(load, n_slots: int, n_gpus: int, *, gpus_per_node: int = 8,
                   gpus_per_nic: int = 2, n_groups: int = 1) -> Placement:
    """One layer's EPLB placement (:func:`rebalance_experts` on ``load [n_experts]``).

    ``n_groups = 1`` (default) gives EPLB's global policy, the one its README suggests for
    decode; DeepSeek-V3's 8 groups on a node count that divides 8 give the hierarchical one.

    >>> eplb_placement([4.0, 1.0, 1.0, 2.0], 6, 2, gpus_per_node=2, gpus_per_nic=1).phy2log.tolist()
    [3, 0, 2, 0, 0, 1]
    """
    n_gpus, gpn, gpnic = _check_hosts(n_gpus, gpus_per_node, gpus_per_nic)
    w = check_loads("load", load, ndim=1)
    if w.size == 0 or w.size > MAX_EXPERTS:
        raise ValueError(f"load must have 1 .. {MAX_EXPERTS} experts; got {w.size}")
    n_slots = check_int("n_slots", n_slots, lo=w.size, hi=MAX_SLOTS)
    if n_slots % n_gpus:
        raise ValueError(f"n_slots must be a multiple of n_gpus ({n_gpus}); got {n_slots}")
    n_groups = check_int("n_groups", n_groups, lo=1, hi=w.size)
    if w.size % n_groups:
        raise ValueError(f"n_groups must divide the number of experts ({w.size}); got "
                         f"{n_groups}")
    p2l, l2p, cnt = rebalance_experts(w[None, :], n_slots, n_groups, n_gpus // gpn, n_gpus)
    # EPLB's own maps (log2phy in its replica order): consistent, built here, not re-checked
    return _placement(p2l[0], cnt[0], l2p[0], n_gpus, gpn, gpnic, "EPLB")


def nic_aware_placement(load, n_slots: int, n_gpus: int, *, gpus_per_node: int = 8,
                        gpus_per_nic: int = 2) -> Placement:
    """Replicate as EPLB does, then pack in three levels: hosts, NICs, GPUs.

    1. :func:`replicate_experts` gives ``n_slots`` replicas, each with load ``load[e] / logcnt[e]``;
    2. :func:`balanced_packing` puts the replicas onto hosts (``n_slots / hosts`` each);
    3. inside each host, onto its NICs (equal counts). With tokens spread evenly over the hosts, a
       replica's *remote* receive load is ``(H - 1) / H`` of its load, so balancing load per NIC
       balances what crosses each NIC;
    4. inside each NIC, onto the GPUs behind it.

    The objective order is: the largest NIC load first, then the largest GPU load. On hosts with
    one GPU per NIC this is EPLB's global policy with a host level. Returns a :class:`Placement`
    (slots of host 0 first, then host 1, ...).

    >>> p = nic_aware_placement([8.0, 7.0, 1.0, 1.0], 4, 4, gpus_per_node=4, gpus_per_nic=2)
    >>> p.phy2log.tolist()          # the two hot experts sit behind different NICs
    [0, 3, 1, 2]
    """
    n_gpus, gpn, gpnic = _check_hosts(n_gpus, gpus_per_node, gpus_per_nic)
    w = check_loads("load", load, ndim=1)
    n_exp = w.size
    if n_exp == 0 or n_exp > MAX_EXPERTS:
        raise ValueError(f"load must have 1 .. {MAX_EXPERTS} experts; got {n_exp}")
    n_slots = check_int("n_slots", n_slots, lo=n_exp, hi=MAX_SLOTS)
    if n_slots % n_gpus:
        raise ValueError(f"n_slots must be a multiple of n_gpus ({n_gpus}); got {n_slots}")
    check_bytes("n_slots", n_slots, 8.0 * (12 * n_slots + 4 * n_exp), "the slot maps")
    check_steps("n_slots", n_slots, _replicate_steps(1, n_exp, n_slots)
                + _packing_steps(1, n_slots, n_gpus // gpn)
                + _packing_steps(n_gpus // gpn, n_slots // (n_gpus // gpn), gpn // gpnic)
                + _packing_steps(n_gpus // gpnic, n_slots // (n_gpus // gpnic), gpnic),
                "replicating and packing in three levels")
    phy2log, prank, cnt = _replicate(w[None, :], n_slots)
    rep = w[phy2log[0]] / cnt[0][phy2log[0]]
    # packing levels: hosts, NICs per host, GPUs per NIC; items keep their replica index
    items = np.arange(n_slots, dtype=np.int64)[None, :]
    for n_packs in (n_gpus // gpn, gpn // gpnic, gpnic):
        rows, per_row = items.shape
        pack, rank = _packing(rep[items], n_packs)
        per = per_row // n_packs
        nxt = np.empty((rows * n_packs, per), dtype=np.int64)
        r_idx = np.repeat(np.arange(rows), per_row)
        nxt[(r_idx * n_packs + pack.ravel()), rank.ravel()] = items.ravel()
        items = nxt
    order = items.ravel()  # slot order: host, NIC, GPU, position
    p2l, logcnt = phy2log[0][order], cnt[0]
    return _placement(p2l, logcnt, _log2phy_of(p2l, logcnt, prank[0][order]), n_gpus, gpn, gpnic,
                      "NIC-aware")


# --------------------------------------------------------------------------------------------
# using a placement


def _check_placement(placement):
    return check_instance("placement", placement, Placement, "from placement_from_phy2log(...)")


def route_to_slots(placement: Placement, expert_ids, src_gpu, *, rule: str = "round_robin",
                   nodes_per_leaf=None, first_node: int = 0) -> np.ndarray:
    """The slot that serves each (token, choice) under ``rule`` (:data:`REPLICA_RULES`; default
    ``"round_robin"``: replica ``src_gpu mod logcnt[e]`` of expert ``e``).

    ``expert_ids`` int ``[T, k]``; ``src_gpu`` int ``[T]`` (the GPU that holds each token);
    ``nodes_per_leaf`` (``"nearest"`` only): nodes under one leaf switch group, so that a replica
    there is nearer than one beyond the spine (None: all other nodes equally far), counted from
    the cluster's first node, of which the placement's node 0 is node ``first_node`` (an EP group
    inside a larger cluster). Returns int64 ``[T, k]`` slot ids (GPU = slot // slots_per_gpu).

    >>> p = placement_from_phy2log([0, 1, 2, 0], 3, 2, gpus_per_node=2, gpus_per_nic=1)
    >>> route_to_slots(p, [[0, 1], [0, 2]], [0, 1]).tolist()
    [[0, 1], [3, 2]]
    >>> route_to_slots(p, [[0, 1], [0, 2]], [0, 1], rule="nearest").tolist()  # own GPU's copy
    [[0, 1], [3, 2]]
    """
    p = _check_placement(placement)
    rule = check_choice("rule", rule, REPLICA_RULES)
    ids = as_int_array("expert_ids", expert_ids, ndim=2, lo=0, hi=p.n_experts - 1)
    width = 1 if rule == "round_robin" else p.log2phy.shape[1]
    check_bytes("expert_ids", expert_ids, 8.0 * 8 * ids.size * width,
                "the replica and slot of each copy")
    src = as_int_array("src_gpu", src_gpu, shape=(ids.shape[0],), lo=0, hi=p.n_gpus - 1)
    leaf = _node_leaf(p, nodes_per_leaf, first_node)
    return _chosen_slots(p, src[:, None], ids, rule, leaf)


def replica_table(placement: Placement, *, rule: str = "nearest", nodes_per_leaf=None,
                  first_node: int = 0) -> np.ndarray:
    """The slot each GPU's tokens use for each expert under ``rule`` (:data:`REPLICA_RULES`,
    default ``"nearest"``): int64 ``[n_gpus, n_experts]``, row ``g`` for tokens held by GPU ``g``.
    ``nodes_per_leaf`` and ``first_node`` as in :func:`route_to_slots`. Size: ``8 n_gpus
    n_experts`` bytes a few times per replica of the most replicated expert, within the memory
    budget of :mod:`uneven.limits`.

    >>> p = replicated_slots(4, 4, 2, gpus_per_node=2, gpus_per_nic=1)   # a copy per node
    >>> replica_table(p).tolist()                   # each node uses its own copy
    [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7], [4, 5, 6, 7]]
    >>> replica_table(p, rule="round_robin").tolist()  # GPU g uses copy g mod 2, near or far
    [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3], [4, 5, 6, 7]]
    """
    p = _check_placement(placement)
    rule = check_choice("rule", rule, REPLICA_RULES)
    check_bytes("placement", p.name, 8.0 * 8 * p.n_gpus * p.n_experts * p.log2phy.shape[1],
                f"a {p.n_gpus:,} x {p.n_experts:,} table of replicas")
    leaf = _node_leaf(p, nodes_per_leaf, first_node)
    src = np.arange(p.n_gpus, dtype=np.int64)[:, None]
    return _chosen_slots(p, src, np.arange(p.n_experts, dtype=np.int64)[None, :], rule, leaf)


def _node_leaf(p, nodes_per_leaf, first_node):
    """The leaf switch group of each of ``p``'s nodes (None: one group)."""
    first = check_int("first_node", first_node, lo=0, hi=2**62 - p.n_nodes)
    if nodes_per_leaf is None:
        return None
    npl = check_int("nodes_per_leaf", nodes_per_leaf, lo=1)
    return (first + np.arange(p.n_nodes, dtype=np.int64)) // npl


def _chosen_slots(p: Placement, src, ids, rule: str, node_leaf=None) -> np.ndarray:
    """The slot that a token on GPU ``src`` uses for expert ``ids`` (validated int arrays that
    broadcast together) under ``rule``; ``node_leaf`` (int ``[n_nodes]`` or None): the leaf
    switch group of each node. Vectorised over the replicas of each expert (the callers check
    the memory: ``8 x broadcast size x max(logcnt)`` bytes a few times)."""
    src = np.asarray(src, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    if rule == "round_robin":
        return p.log2phy[ids, src % p.logcnt[ids]]
    cand = p.log2phy[ids]  # (..., R): the expert's slots in replica order, -1 padded
    valid = cand >= 0
    gpu = np.where(valid, cand, 0) // p.slots_per_gpu
    s = src[..., None]
    g = p.gpus_per_node
    node, s_node = gpu // g, s // g
    far = 2 if node_leaf is None else np.where(node_leaf[node] == node_leaf[s_node], 2, 3)
    dist = np.where(gpu == s, 0, np.where(node == s_node, 1, far))
    dist = np.where(valid, dist, 4)
    best = dist.min(axis=-1, keepdims=True)
    tie = dist == best
    # round robin among the nearest: over source GPUs on the own node, over source nodes beyond
    # it (by GPU, a tie would follow the rails: see the module docstring)
    key = np.where(best[..., 0] <= 1, src, src // g)
    pick = key % tie.sum(axis=-1)
    hit = tie & (np.cumsum(tie, axis=-1) - 1 == pick[..., None])
    cand = np.broadcast_to(cand, hit.shape)
    return np.take_along_axis(cand, hit.argmax(axis=-1)[..., None], axis=-1)[..., 0]


def _reference_slot(p: Placement, src: int, expert: int, rule: str, node_leaf=None) -> int:
    """:func:`chosen_slots` for one token and expert in plain Python (tests only)."""
    slots = [int(x) for x in p.log2phy[expert][: int(p.logcnt[expert])]]
    if rule == "round_robin":
        return slots[src % len(slots)]
    g = p.gpus_per_node

    def distance(slot):
        d = slot // p.slots_per_gpu
        if d == src:
            return 0
        if d // g == src // g:
            return 1
        if node_leaf is None or node_leaf[d // g] == node_leaf[src // g]:
            return 2
        return 3

    best = min(distance(x) for x in slots)
    nearest = [x for x in slots if distance(x) == best]
    key = src if best <= 1 else src // g
    return nearest[key % len(nearest)]


def slot_loads(placement: Placement, expert_load) -> np.ndarray:
    """Expected load of each slot (float64 ``[n_slots]``): an expert's load split evenly over its
    replicas."""
    p = _check_placement(placement)
    w = check_loads("expert_load", expert_load, shape=(p.n_experts,))
    return w[p.phy2log] / p.logcnt[p.phy2log]


def gpu_loads(placement: Placement, expert_load) -> np.ndarray:
    """Load per GPU (float64 ``[n_gpus]``), replicas sharing their expert's load evenly.

    >>> p = contiguous_slots(4, 2, gpus_per_node=2, gpus_per_nic=1)
    >>> gpu_loads(p, [1.0, 2.0, 3.0, 4.0]).tolist()
    [3.0, 7.0]
    """
    p = _check_placement(placement)
    return slot_loads(p, expert_load).reshape(p.n_gpus, p.slots_per_gpu).sum(axis=1)


def nic_loads(placement: Placement, expert_load) -> np.ndarray:
    """Load behind each NIC (float64 ``[n_nics]``, NIC ``n`` serves GPUs
    ``n*gpus_per_nic ..``): the sum of its GPUs' loads."""
    p = _check_placement(placement)
    return gpu_loads(p, expert_load).reshape(p.n_nics, p.gpus_per_nic).sum(axis=1)


def host_loads(placement: Placement, expert_load) -> np.ndarray:
    """Load per host (float64 ``[n_nodes]``)."""
    p = _check_placement(placement)
    return gpu_loads(p, expert_load).reshape(p.n_nodes, p.gpus_per_node).sum(axis=1)


def busiest_gpu_floor(expert_load, n_gpus: int) -> float:
    """A lower bound on the busiest GPU's load when each of ``n_gpus`` GPUs holds
    ``m = n_experts / n_gpus`` experts and no expert has a replica: the mean GPU load, or the
    busiest expert plus the ``m − 1`` lightest others, whichever is larger (the busiest expert's
    GPU holds ``m − 1`` more experts, at best the lightest). ``n_gpus`` must divide the expert
    count (at most 65,536 experts).

    >>> busiest_gpu_floor([8.0, 1.0, 1.0, 2.0, 3.0, 1.0], 2)    # 8 + the two lightest
    10.0
    """
    load = check_loads("expert_load", expert_load, ndim=1)
    if not 1 <= load.size <= MAX_EXPERTS:
        raise ValueError(f"expert_load must hold one load per expert (1 .. {MAX_EXPERTS:,}); "
                         f"got {load.size:,}")
    n = check_int("n_gpus", n_gpus, lo=1, hi=load.size)
    if load.size % n:
        raise ValueError(f"n_gpus must divide the expert count ({load.size}); got {n}")
    m = load.size // n
    order = np.sort(load)
    return float(max(load.sum() / n, order[-1] + order[:m - 1].sum()))


def nvlink_swaps(placement: Placement, expert_load, *, threshold: float = 0.02,
                 blocked=None, expert_bytes: float = 44.04e6) -> SwapResult:
    """One step of per-host expert swaps over NVLink (at most one swap per host).

    In each host: take the NIC with the largest load ``n+`` and the one with the smallest ``n-``
    (with one GPU per NIC these are GPUs), the busiest GPU behind ``n+`` and the idlest behind
    ``n-``, and the pair of slots (one on each GPU, neither holding a ``blocked`` expert) whose
    exchange gives the smallest ``max(load(n+), load(n-))`` afterwards. The swap happens only if
    it lowers that maximum by more than ``threshold`` × the host's mean NIC load, and never raises
    the host's largest GPU load. ``expert_load`` float ``[n_experts]`` (>= 0, e.g. a short moving
    average of this layer's token counts); ``blocked`` bool ``[n_experts]`` (e.g. moved recently:
    hysteresis); ``expert_bytes`` (bytes per expert's weights, 44.04 MB for a DeepSeek-V3 expert
    in FP8) prices the copies: two experts cross NVLink per swap.

    >>> p = placement_from_phy2log([0, 1, 2, 3], 4, 4, gpus_per_node=4, gpus_per_nic=2)
    >>> r = nvlink_swaps(p, [5.0, 4.0, 1.0, 1.0])
    >>> r.placement.phy2log.tolist(), r.nic_max_before, r.nic_max_after
    ([2, 1, 0, 3], 9.0, 6.0)
    """
    p = _check_placement(placement)
    w = check_loads("expert_load", expert_load, shape=(p.n_experts,))
    threshold = check_real("threshold", threshold, lo=0.0, hi=1e3)
    expert_bytes = check_real("expert_bytes", expert_bytes, lo=0.0, hi=1e15, unit="bytes")
    if blocked is None:
        blk = np.zeros(p.n_experts, dtype=bool)
    else:
        blk = frozen_array("blocked", blocked, dtype="bool", shape=(p.n_experts,))
    check_swap_budget("placement", p)
    p2l = p.phy2log.copy()
    rep = w[p2l] / p.logcnt[p2l]
    spg, gpnic, gpn = p.slots_per_gpu, p.gpus_per_nic, p.gpus_per_node
    nics_per_host = gpn // gpnic
    pairs = []
    gpu = rep.reshape(p.n_gpus, spg).sum(axis=1)
    nic = gpu.reshape(p.n_nics, gpnic).sum(axis=1)
    before = float(nic.max())
    for h in range(p.n_nodes):
        nics = np.arange(h * nics_per_host, (h + 1) * nics_per_host)
        if nics.size < 2:
            break
        hot_nic = int(nics[np.argmax(nic[nics])])
        cold_nic = int(nics[np.argmin(nic[nics])])
        gp_hot = np.arange(hot_nic * gpnic, (hot_nic + 1) * gpnic)
        gp_cold = np.arange(cold_nic * gpnic, (cold_nic + 1) * gpnic)
        g_hot = int(gp_hot[np.argmax(gpu[gp_hot])])
        g_cold = int(gp_cold[np.argmin(gpu[gp_cold])])
        a = np.arange(g_hot * spg, (g_hot + 1) * spg)
        b = np.arange(g_cold * spg, (g_cold + 1) * spg)
        a = a[~blk[p2l[a]]]
        b = b[~blk[p2l[b]]]
        if a.size == 0 or b.size == 0:
            continue
        delta = rep[a][:, None] - rep[b][None, :]  # load that moves from hot to cold
        new_hot = nic[hot_nic] - delta
        new_cold = nic[cold_nic] + delta
        new_max = np.maximum(new_hot, new_cold)
        host_gpus = gpu[h * gpn:(h + 1) * gpn]
        gmax = host_gpus.max()
        new_gpu_max = np.maximum(gpu[g_hot] - delta, gpu[g_cold] + delta)
        others = np.delete(host_gpus, [g_hot - h * gpn, g_cold - h * gpn])
        rest = others.max() if others.size else -np.inf
        ok = np.maximum(new_gpu_max, rest) <= gmax + 1e-12
        old = max(nic[hot_nic], nic[cold_nic])
        gain = np.where(ok, old - new_max, -np.inf)
        i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
        if not gain[i, j] > threshold * nic[nics].mean():
            continue
        sa, sb = int(a[i]), int(b[j])
        d = float(delta[i, j])
        p2l[sa], p2l[sb] = p2l[sb], p2l[sa]
        rep[sa], rep[sb] = rep[sb], rep[sa]
        gpu[g_hot] -= d
        gpu[g_cold] += d
        nic[hot_nic] -= d
        nic[cold_nic] += d
        pairs.append((sa, sb))
    if pairs:  # the replica ranks travel with the experts
        rank = np.empty(p.n_slots, dtype=np.int64)
        valid = p.log2phy >= 0
        rank[p.log2phy[valid]] = np.nonzero(valid)[1]
        l2p = p.log2phy.copy()
        for sa, sb in pairs:
            rank[sa], rank[sb] = rank[sb], rank[sa]
            l2p[p2l[sa], rank[sa]] = sa  # each expert's replica now sits in the other slot
            l2p[p2l[sb], rank[sb]] = sb
        new = _placement(p2l, p.logcnt, l2p, p.n_gpus, gpn, gpnic, p.name)
    else:
        new = p  # nothing moved: the same (read-only) placement
    arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    arr.flags.writeable = False
    return trusted(SwapResult, placement=new, pairs=arr, copy_bytes=2.0 * expert_bytes * len(pairs),
                   nic_max_before=before, nic_max_after=float(nic.max()))
