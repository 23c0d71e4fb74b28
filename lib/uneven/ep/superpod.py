"""Core groups, barriers and hop mix: EP dispatch and combine inside a load/store superpod.

Inside a CloudMatrix384-like superpod an EP rank (one NPU die) writes tokens straight into the
memory of other dies. No NIC sits in the way, and the bytes are cheap. What costs time is the
*latency of each write*, which depends on how far it goes (its hop class), and the
*synchronisation* around the writes. This module is a core-level model of one dispatch (or
combine) on every rank of an EP group, plus a rank-level kernel that replays it over many jittered
decode steps.

**One rank's cores.** A die has ``C`` vector cores. A core keeps ``q`` writes in flight, so a
block write of hop class ``h`` costs it ``ℓ_h / q`` of latency plus ``block_bytes / bw_core`` to
push the bytes (:meth:`CoreCosts.write_time`). A token copy is cut into blocks
(:func:`blocks_per_copy`). A core's send time is the sum over its copies; the rank's send phase
ends when its slowest core ends.

**Which core sends which copy** (``assignment``). The rank's copies (one per token and chosen
expert) are ordered and split over the sending cores:

* ``"contiguous"``: ordered by destination rank, cut into equal consecutive chunks. Destinations
  on other nodes are consecutive, so some cores get only far (two-hop) copies;
* ``"hop_mix"``: ordered by hop class, then destination, and dealt round-robin, so every core gets
  the same number of copies of each hop class, plus or minus one.

**The phases** (``Scheme``). Every rank starts at its own time ``a_r``:

* *serialised* (``concurrent=False``): every core first counts its share of the routing entries
  and publishes one count per destination rank, then sends; with ``sync="barrier"`` a global
  barrier separates the two (the senders need global offsets), as in a CANN-like operator:
  count → barrier → send → barrier → poll;
* *concurrent core groups* (``concurrent=True``): ``count_cores`` cores count while the other
  ``C - count_cores`` send, at the same time (the model's reading: a per-source slot layout
  needs no global offsets);
* how a receiver learns that its data is complete (``sync``): ``"barrier"``, a global barrier
  after the sends (every rank waits for the slowest); ``"flag"``, after its sends each rank waits
  for its writes to land (a fence, one two-hop latency) and writes a separate flag to every
  destination; ``"block"``, the flag travels inside every atomic block, which costs
  ``flag_bytes`` of every block and nothing else (the chapter names the flag inside 512-byte
  atomic writes; that it is an epoch number, so no buffer is ever cleared, is the model's
  reading). Without a
  barrier a receiver waits only for what it needs: the counts of every source and the data of
  the sources that send it something, each landing ``ℓ(s, r)`` after its source wrote it;
* finally every core *polls* (reads the counts or the last flags), ``poll_cost``.

Barriers cost ``barrier_cost`` after the last rank arrives, so per-rank jitter turns into waiting
for the slowest rank at every barrier. Jitter is an extra delay per rank and per op (count, send,
poll), exponentially distributed with mean ``jitter`` seconds, drawn from a seeded
``numpy.random.Generator``.

:func:`core_timeline` builds the phase as operations on cores (one resource per core of every
rank, plus zero-length join nodes for barriers and arrivals) and runs it on
:func:`uneven.engines.timeline.run_timeline`, so its Gantt chart can be drawn.
:func:`latency_samples` and :func:`decode_steps` replay the same equations rank by rank in a numba
kernel (the tests check that both agree), fast enough for 10,000 steps of EP320.

Everything is SI: seconds, bytes, bytes/s. Every default is a model assumption unless stated:
two hops cost 11.5 local accesses (the chapter page's UBEP figure), 48 vector cores per die and
about 392 GB/s of UB bandwidth per NPU of two dies (the CloudMatrix384 report).

>>> t = superpod_traffic(32, tokens_per_rank=64, seed=0)
>>> base = phase_plan(t, CoreCosts(), scheme("baseline"))
>>> ubep = phase_plan(t, CoreCosts(), scheme("ubep"))
>>> bool(phase_latency(ubep) < phase_latency(base))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .._fields import (
    Checked,
    any_value,
    array,
    check_fields,
    choice,
    flag,
    graph,
    instance,
    integer,
    items,
    mapping,
    real,
    text,
)
from .._jit import njit
from .._routes import _hop_class
from .._validate import (
    _show,
    as_float_array,
    check_bool,
    check_choice,
    check_int,
    check_real,
    frozen_array,
    trusted,
)
from ..limits import PY_STEP, check_bytes, check_steps
from ..topology import Topology, cloudmatrix384, superpod

__all__ = [
    "CoreCosts",
    "Scheme",
    "scheme",
    "SCHEMES",
    "SYNC_MODES",
    "ASSIGNMENTS",
    "CORE_OP_KINDS",
    "blocks_per_copy",
    "die_superpod",
    "SuperpodTraffic",
    "superpod_traffic",
    "uniform_traffic",
    "core_loads",
    "PhasePlan",
    "phase_plan",
    "phase_latency",
    "CoreTimeline",
    "core_timeline",
    "latency_samples",
    "DecodeSteps",
    "decode_steps",
    "best_split",
    "MAX_RANKS",
    "core_write_time",
    "CLOUDMATRIX_DISPATCH",
    "WritesFit",
    "fit_writes_in_flight",
]

SYNC_MODES = ("barrier", "flag", "block")
ASSIGNMENTS = ("contiguous", "hop_mix")
SCHEMES = ("baseline", "ubep")
#: Op kinds of :class:`CoreTimeline` (codes index this tuple).
CORE_OP_KINDS = ("count", "barrier", "send", "flag", "poll")
K_COUNT, K_BARRIER, K_SEND, K_FLAG, K_POLL, K_JOIN = 0, 1, 2, 3, 4, -1
#: Largest EP group the functions accept (a CloudMatrix384 has 768 dies; 64 nodes of 16 dies).
MAX_RANKS = 1024
_MAX_CORES = 256
#: Bounds of the cost fields and jitter (s): every sum the kernels form stays finite.
_MAX_COST = 1e3
_MAX_LATENCY = 1.0
_MAX_FACTOR = 1e4
#: Largest time (s) a directly built PhasePlan or CoreTimeline may hold, and largest start time.
_MAX_TIME = 1e30
_MAX_START = 1e9
#: Largest copies one rank may send in one phase of a directly built SuperpodTraffic.
_MAX_ROW_COPIES = 1 << 32
_MAX_COPY_BYTES = 1 << 30

_CM = cloudmatrix384(1)
_L0 = float(_CM.hop_latency[0])


# --------------------------------------------------------------------------- costs and schemes


@dataclass(frozen=True)
class CoreCosts(Checked):
    """What one die's cores pay (SI units). Every field is checked when the object is built.

    ``cores``: vector cores per die (48 AIV cores on an Ascend 910C die [paper]).
    ``local_latency``: latency of one access to the die's own memory (s; 0.12 µs [model], the
    :func:`uneven.topology.cloudmatrix384` default). ``one_hop_factor``, ``two_hop_factor``:
    latency of a one-hop (same node) and two-hop (another node) access as multiples of a local
    one (5 [model] and 11.5 [chapter]). ``writes_in_flight``: writes a core keeps outstanding
    (7 [model]: fitted to CloudMatrix384's measured dispatch, :func:`fit_writes_in_flight`).
    ``core_bandwidth``: bytes/s one core can push (392 GB/s per NPU [paper], two dies,
    48 cores: 4.08 GB/s [derived]). ``barrier_cost``: what a group-wide barrier costs after the
    last rank arrives (20 µs [model]: a stage switch plus a flag exchange). ``count_cost``: s per
    routing entry counted (20 ns [model]). ``poll_cost``: s a core spends reading the counts or the
    last flags once its data is complete (1 µs [model]). Ranges: ``cores`` 1..256,
    ``local_latency`` up to 1 s, hop factors 1..1e4 (two hops at least one), ``writes_in_flight``
    1..4096, ``core_bandwidth`` 1..1e15 bytes/s, the three costs 0..1,000 s.

    >>> c = CoreCosts()
    >>> [round(x * 1e6, 2) for x in c.hop_latency]
    [0.12, 0.6, 1.38]
    >>> round(c.write_time(2, 512) * 1e9)  # ns: 197 of latency + 125 of bytes
    323
    """

    cores: int = integer(lo=1, hi=_MAX_CORES, default=48)
    local_latency: float = real(lo=0.0, lo_open=True, hi=_MAX_LATENCY, unit="s", default=_L0)
    one_hop_factor: float = real(lo=1.0, hi=_MAX_FACTOR, default=5.0)
    two_hop_factor: float = real(lo="one_hop_factor", hi=_MAX_FACTOR, default=11.5)
    writes_in_flight: int = integer(lo=1, hi=4096, default=7)
    core_bandwidth: float = real(lo=1.0, hi=1e15, unit="bytes/s", default=392e9 / 2 / 48)
    barrier_cost: float = real(lo=0.0, hi=_MAX_COST, unit="s", default=20e-6)
    count_cost: float = real(lo=0.0, hi=_MAX_COST, unit="s", default=20e-9)
    poll_cost: float = real(lo=0.0, hi=_MAX_COST, unit="s", default=1e-6)

    @property
    def hop_latency(self) -> tuple:
        """Access latency (s) of hop class 0 (own die), 1 (same node), 2 (another node)."""
        lat = self.local_latency
        return (lat, lat * self.one_hop_factor, lat * self.two_hop_factor)

    def write_time(self, hop: int, nbytes: float) -> float:
        """Seconds one core spends on one write of ``nbytes`` bytes of hop class ``hop``:
        ``ℓ_hop / writes_in_flight + nbytes / core_bandwidth``."""
        hop = check_int("hop", hop, lo=0, hi=2)
        nbytes = check_real("nbytes", nbytes, lo=0.0, unit="bytes")
        return self.hop_latency[hop] / self.writes_in_flight + nbytes / self.core_bandwidth

    def with_(self, **changes) -> CoreCosts:
        """A copy with some fields changed (checked again)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Scheme(Checked):
    """How a rank's cores run one dispatch or combine (see the module docstring).

    ``concurrent``: count and send on separate core groups at once (else every core counts,
    then sends). ``count_cores``: size of the counting group when ``concurrent`` (the other cores
    send). ``sync``: ``"barrier"``, ``"flag"`` (a separate flag per destination after a fence) or
    ``"block"`` (the flag inside every atomic block). ``assignment``: ``"contiguous"`` or
    ``"hop_mix"``. ``block_bytes``: atomic write size (512 on the 910C [chapter]; 128 on the
    next generation [3rd]). ``flag_bytes``: size of one flag or count word (8 [model]).
    """

    name: str = text(max_len=200, default="custom")
    concurrent: bool = flag(default=False)
    count_cores: int = integer(lo=1, hi=_MAX_CORES - 1, default=2)
    sync: str = choice(SYNC_MODES, default="barrier")
    assignment: str = choice(ASSIGNMENTS, default="contiguous")
    block_bytes: int = integer(unit="bytes", lo=16, hi=1 << 20, default=512)
    flag_bytes: int = integer(unit="bytes", lo=1, hi=lambda s: s.block_bytes - 1, default=8)

    def with_(self, **changes) -> Scheme:
        """A copy with some fields changed (checked again); the name becomes ``'custom'``
        unless given."""
        changes.setdefault("name", "custom")
        return replace(self, **changes)


def scheme(kind: str = "ubep", **changes) -> Scheme:
    """A named scheme, optionally changed.

    ``"baseline"``: serialised, two barriers, contiguous assignment (a CANN-like EP operator
    [model]). ``"ubep"``: concurrent core groups (one counting core, which is enough at every
    batch up to 512 tokens per rank with the default costs [model]), the flag inside each 512-B
    block, equal hop mix.

    >>> scheme("ubep").sync, scheme("baseline", block_bytes=128).block_bytes
    ('block', 128)
    """
    kind = check_choice("kind", kind, SCHEMES)
    if kind == "baseline":
        base = Scheme("serialised baseline", False, 2, "barrier", "contiguous")
    else:
        base = Scheme("UBEP", True, 1, "block", "hop_mix")
    return replace(base, **changes) if changes else base


def blocks_per_copy(copy_bytes: int, block_bytes: int = 512, flag_bytes: int = 8,
                    flag_in_block: bool = True) -> int:
    """Atomic block writes needed for one token copy of ``copy_bytes`` bytes.

    With the flag inside each block only ``block_bytes - flag_bytes`` carry payload.

    >>> blocks_per_copy(7172, 512, 8, True), blocks_per_copy(7172, 512, 8, False)
    (15, 15)
    >>> blocks_per_copy(7172, 128, 8, True), blocks_per_copy(7172, 128, 8, False)
    (60, 57)
    """
    copy_bytes = check_int("copy_bytes", copy_bytes, lo=1, hi=1 << 30, unit="bytes")
    block_bytes = check_int("block_bytes", block_bytes, lo=16, hi=1 << 20, unit="bytes")
    flag_bytes = check_int("flag_bytes", flag_bytes, lo=1, hi=block_bytes - 1, unit="bytes")
    flag_in_block = check_bool("flag_in_block", flag_in_block)
    payload = block_bytes - flag_bytes if flag_in_block else block_bytes
    return -(-copy_bytes // payload)


# --------------------------------------------------------------------------- traffic


def die_superpod(n_nodes: int = 24) -> Topology:
    """A CloudMatrix384-like superpod seen as EP ranks: one rank per NPU die, 16 dies per node
    (8 NPUs of two dies), the hop latencies of :func:`uneven.topology.cloudmatrix384`.

    Largest size: 64 nodes (1,024 dies, :data:`MAX_RANKS`); a CloudMatrix384 has 48.

    >>> t = die_superpod(20)   # EP320 on 160 NPUs, as CloudMatrix-Infer decodes
    >>> t.n_gpus, t.hop_class(0, 1), t.hop_class(0, 16)
    (320, 1, 2)
    """
    n_nodes = check_int("n_nodes", n_nodes, lo=1, hi=MAX_RANKS // 16)
    return superpod(n_nodes, npus_per_node=16, npu_bw=392e9 / 2,
                    node_uplink_bw=0.97 * 16 * 392e9 / 2, hop_latency=_CM.hop_latency,
                    name=f"CloudMatrix-like dies x {n_nodes} nodes",
                    sources={"dies": "two dies per 910C NPU, 8 NPUs per node (CloudMatrix384 "
                                     "report [paper]); one EP rank per die as in its EP320"})


@dataclass(frozen=True)
class SuperpodTraffic(Checked):
    """Token copies of one EP dispatch on ``n_ranks`` ranks (ranks ``0 .. n_ranks-1`` of
    ``topo``).

    ``copies[s, d]`` (int64): copies rank ``s`` sends to rank ``d`` in dispatch (one per token and
    chosen expert on ``d``); combine sends ``copies.T`` back. ``hops[s, d]``: hop class of the
    pair (computed from ``topo``; if given it must agree). ``dispatch_bytes`` and
    ``combine_bytes``: bytes of one copy (INT8 hidden + a 4-byte scale; BF16 hidden).

    Every field is checked when the object is built directly (``topo`` a superpod with at least
    ``n_ranks`` devices; ``n_ranks`` 1..1,024; ``copies`` ``[n_ranks, n_ranks]`` integers >= 0,
    at most 2**32 per rank; copy sizes 1 byte..1 GiB; ``tokens_per_rank`` 0..2**32, ``k`` and
    ``n_experts`` up to 65,536); :func:`superpod_traffic` and :func:`uniform_traffic` build it
    without re-checking.
    """

    topo: Topology = field(repr=False)
    n_ranks: int = integer(lo=1, hi=MAX_RANKS)
    tokens_per_rank: int = integer(lo=0, hi=_MAX_ROW_COPIES)
    k: int = integer(lo=1, hi=65536)
    n_experts: int = integer(lo=1, hi=65536)
    dispatch_bytes: int = integer(unit="bytes", lo=1, hi=_MAX_COPY_BYTES)
    combine_bytes: int = integer(unit="bytes", lo=1, hi=_MAX_COPY_BYTES)
    copies: np.ndarray = array("int", shape=("n_ranks", "n_ranks"), lo=0, hi=_MAX_ROW_COPIES,
                               repr=False)
    hops: np.ndarray = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        topo = _check_topo(self.topo)
        check_fields(self)
        n = self.n_ranks
        if topo.n_gpus < n:
            raise ValueError(f"topo must have at least n_ranks = {n} devices; got {topo.n_gpus}")
        if self.copies.sum(axis=1, dtype=np.float64).max() > _MAX_ROW_COPIES:
            raise ValueError(f"copies must send at most 2**32 copies per rank; got a row of "
                             f"{int(self.copies.sum(axis=1, dtype=np.float64).max()):,}")
        hops = _hops_of(topo, n)
        if self.hops is not None and not np.array_equal(
                frozen_array("hops", self.hops, dtype="int", shape=(n, n), lo=0), hops):
            raise ValueError("hops must be the hop classes of topo's first n_ranks devices "
                             "(or None, to compute them)")
        object.__setattr__(self, "hops", hops)

    @property
    def ranks_per_node(self) -> int:
        """EP ranks (dies) per node."""
        return self.topo.gpus_per_node

    def hop_matrix(self) -> np.ndarray:
        """Hop class (int64 0/1/2, read-only) of every (source, destination) pair."""
        return self.hops

    def copies_by_hop(self, rank: int = 0) -> np.ndarray:
        """Copies rank ``rank`` sends in dispatch, per hop class (int64, length 3)."""
        rank = check_int("rank", rank, lo=0, hi=self.n_ranks - 1)
        hops = self.hop_matrix()[rank]
        return np.bincount(hops, weights=self.copies[rank], minlength=3).astype(np.int64)


def _check_topo(topo) -> Topology:
    if not isinstance(topo, Topology) or topo.kind != "superpod":
        raise ValueError(f"topo must be a superpod Topology (see die_superpod()); got "
                         f"{_show(topo)}")
    return topo


def _hops_of(topo, n) -> np.ndarray:
    """Hop classes (int64, read-only) of ranks ``0 .. n-1`` of ``topo``."""
    out = np.empty((n, n), dtype=np.int64)
    _hop_matrix(topo.iparams, out)
    out.flags.writeable = False
    return out


def _traffic(topo, n_ranks, tokens_per_rank, k, n_experts, dispatch_bytes, combine_bytes,
             copies) -> SuperpodTraffic:
    """A SuperpodTraffic from checked values, without re-checking them (``copies`` read-only)."""
    return trusted(SuperpodTraffic, topo=topo, n_ranks=n_ranks, tokens_per_rank=tokens_per_rank,
                   k=k, n_experts=n_experts, dispatch_bytes=dispatch_bytes,
                   combine_bytes=combine_bytes, copies=copies, hops=_hops_of(topo, n_ranks))


@njit
def _hop_matrix(ip, out):  # pragma: no cover - compiled
    n = out.shape[0]
    for s in range(n):
        for d in range(n):
            out[s, d] = _hop_class(ip, s, d)


def superpod_traffic(n_ranks: int, *, tokens_per_rank: int = 128, k: int = 8,
                     n_experts: int | None = None, skew: float = 0.0, hidden: int = 7168,
                     topo: Topology | None = None, seed: int = 0) -> SuperpodTraffic:
    """Route ``tokens_per_rank`` decode tokens on each of ``n_ranks`` ranks to ``k`` experts.

    Scores come from :func:`uneven.ep.routing.synthetic_gate_scores` (``skew`` = 0: every
    expert equally popular) and :func:`~uneven.ep.routing.topk_route`; experts sit on
    ranks contiguously (:func:`~uneven.ep.routing.contiguous_placement`).
    ``n_experts`` defaults to the smallest multiple of ``n_ranks`` that is at least 256 (256 for
    EP8 ... EP256; 320 for EP320, one expert slot per die as in CloudMatrix-Infer, its shared and
    redundant slots routed like the others [model]). ``topo`` defaults to
    :func:`die_superpod` with enough nodes. Largest sizes: ``n_ranks <= 1024``,
    ``tokens_per_rank <= 8192``, ``n_ranks * tokens_per_rank <= 2**20``, ``n_experts <= 65536``,
    ``hidden <= 2**20``, and about 10 loop steps per gate score, so with the default work budget
    (:mod:`uneven.limits`) ``n_ranks * tokens_per_rank * n_experts <= 2e8``.

    >>> t = superpod_traffic(8, tokens_per_rank=4, seed=1)
    >>> int(t.copies.sum()), t.n_experts, t.dispatch_bytes, t.combine_bytes
    (256, 256, 7172, 14336)
    """
    from .routing import contiguous_placement, synthetic_gate_scores, topk_route

    n_ranks = check_int("n_ranks", n_ranks, lo=1, hi=MAX_RANKS)
    tokens_per_rank = check_int("tokens_per_rank", tokens_per_rank, lo=1, hi=8192)
    if n_ranks * tokens_per_rank > 1 << 20:
        raise ValueError(f"n_ranks * tokens_per_rank must be <= {1 << 20}; got "
                         f"{n_ranks} * {tokens_per_rank}")
    if n_experts is None:
        n_experts = n_ranks * max(1, -(-256 // n_ranks))
    n_experts = check_int("n_experts", n_experts, lo=n_ranks, hi=65536)
    if n_experts % n_ranks:
        raise ValueError(f"n_experts must be a multiple of n_ranks = {n_ranks}; got {n_experts}")
    k = check_int("k", k, lo=1, hi=min(64, n_experts))
    skew = check_real("skew", skew, lo=0.0)
    hidden = check_int("hidden", hidden, lo=1, hi=1 << 20)
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    if topo is None:
        topo = die_superpod(max(1, -(-n_ranks // 16)))
    _check_topo(topo)
    if topo.n_gpus < n_ranks:
        raise ValueError(f"topo must have at least n_ranks = {n_ranks} devices; got "
                         f"{topo.n_gpus}")
    n_tokens = n_ranks * tokens_per_rank
    check_steps("n_experts", n_experts, 10 * n_tokens * n_experts,
                f"{n_tokens:,} tokens' gate scores over {n_experts:,} experts")
    owner_of_expert = contiguous_placement(n_experts, n_ranks)
    copies = np.zeros((n_ranks, n_ranks), dtype=np.int64)
    chunk = max(1, (1 << 21) // n_experts)  # about 16 MB of scores at a time
    for i, lo in enumerate(range(0, n_tokens, chunk)):
        hi = min(n_tokens, lo + chunk)
        scores = synthetic_gate_scores(hi - lo, n_experts, skew, seed=seed * 4096 + i,
                                       popularity_seed=seed)
        ids = topk_route(scores, k).expert_ids
        src = (np.arange(lo, hi) // tokens_per_rank).repeat(k)
        dst = owner_of_expert[ids.ravel()]
        np.add.at(copies, (src, dst), 1)
    copies.flags.writeable = False
    return _traffic(topo, n_ranks, tokens_per_rank, k, n_experts, hidden + 4, 2 * hidden,
                    copies)


def uniform_traffic(n_ranks: int, copies_per_pair: int, *, hidden: int = 7168,
                    topo: Topology | None = None) -> SuperpodTraffic:
    """Every rank sends ``copies_per_pair`` copies to every rank (itself included): the evenly
    spread traffic of the closed forms (``tokens_per_rank`` is then ``n_ranks *
    copies_per_pair``, ``k`` = 1, one expert per rank). Largest sizes: ``n_ranks <= 1024``,
    ``copies_per_pair <= 65536``, ``hidden <= 2**20``.

    >>> t = uniform_traffic(32, 8)
    >>> t.copies_by_hop(0).tolist()   # own die, 15 on its node, 16 on the other node
    [8, 120, 128]
    """
    n_ranks = check_int("n_ranks", n_ranks, lo=1, hi=MAX_RANKS)
    copies_per_pair = check_int("copies_per_pair", copies_per_pair, lo=0, hi=1 << 16)
    hidden = check_int("hidden", hidden, lo=1, hi=1 << 20)
    if topo is None:
        topo = die_superpod(max(1, -(-n_ranks // 16)))
    if not isinstance(topo, Topology) or topo.kind != "superpod" or topo.n_gpus < n_ranks:
        raise ValueError(f"topo must be a superpod Topology with at least {n_ranks} devices; "
                         f"got {_show(topo)}")
    copies = np.full((n_ranks, n_ranks), copies_per_pair, dtype=np.int64)
    copies.flags.writeable = False
    return _traffic(topo, n_ranks, n_ranks * copies_per_pair, 1, n_ranks, hidden + 4,
                    2 * hidden, copies)


# --------------------------------------------------------------------------- per-core loads


@njit
def _loads_kernel(copies, ip, cores, hop_mix, hop_copies, hop_dests):  # pragma: no cover
    """Per rank, split its copies over ``cores`` sending cores; count, per core and hop class,
    the copies and the distinct destinations it writes to."""
    n = copies.shape[0]
    full = np.zeros(3, dtype=np.int64)
    touch_all = np.zeros(3, dtype=np.int64)
    for r in range(n):
        total = 0
        for d in range(n):
            total += copies[r, d]
        base = total // cores
        extra = total - base * cores
        big = extra * (base + 1)  # copies held by the first `extra` cores (one more each)
        pos = 0
        full[:] = 0
        touch_all[:] = 0
        n_pass = 3 if hop_mix else 1
        for p in range(n_pass):
            for d in range(n):
                m = copies[r, d]
                if m == 0:
                    continue
                h = _hop_class(ip, r, d)
                if hop_mix and h != p:
                    continue
                if hop_mix:
                    # copies pos .. pos+m-1 go to cores i % cores
                    q = m // cores
                    rem = m - q * cores
                    full[h] += q
                    if q > 0:
                        touch_all[h] += 1
                    start = pos % cores
                    for j in range(rem):
                        c = start + j
                        if c >= cores:
                            c -= cores
                        hop_copies[r, c, h] += 1
                        if q == 0:
                            hop_dests[r, c, h] += 1
                    pos += m
                else:
                    left = m
                    while left > 0:
                        if pos < big:
                            c = pos // (base + 1)
                            end = (c + 1) * (base + 1)
                        else:
                            c = extra + (pos - big) // base
                            end = big + (c - extra + 1) * base
                        take = min(left, end - pos)
                        hop_copies[r, c, h] += take
                        hop_dests[r, c, h] += 1
                        pos += take
                        left -= take
        if hop_mix:
            for c in range(cores):
                for h in range(3):
                    hop_copies[r, c, h] += full[h]
                    hop_dests[r, c, h] += touch_all[h]


def _reference_loads(copies, hops, cores, hop_mix):
    """Obviously-correct reference: list every copy, order it, deal it, count."""
    n = copies.shape[0]
    hc = np.zeros((n, cores, 3), dtype=np.int64)
    hd = np.zeros((n, cores, 3), dtype=np.int64)
    for r in range(n):
        items = [(int(hops[r, d]), d) for d in range(n) for _ in range(int(copies[r, d]))]
        items.sort(key=(lambda x: (x[0], x[1])) if hop_mix else (lambda x: x[1]))
        total = len(items)
        owner = []
        if hop_mix:
            owner = [i % cores for i in range(total)]
        else:
            base, extra = divmod(total, cores)
            for c in range(cores):
                owner += [c] * (base + (1 if c < extra else 0))
        seen = set()
        for (h, d), c in zip(items, owner, strict=True):
            hc[r, c, h] += 1
            if (c, d) not in seen:
                seen.add((c, d))
                hd[r, c, h] += 1
    return hc, hd


def core_loads(traffic: SuperpodTraffic, cores: int, assignment: str = "hop_mix",
               phase: str = "dispatch") -> tuple[np.ndarray, np.ndarray]:
    """How a phase's copies split over ``cores`` sending cores of every rank.

    Returns ``(hop_copies, hop_dests)``, int64 arrays ``[n_ranks, cores, 3]``: copies, and
    distinct destination ranks, per core and hop class. ``phase="combine"`` splits the copies
    that go back (``copies.T``).

    Size: two arrays of ``24 * n_ranks * cores`` bytes and up to ``n_ranks**2 * (4 + cores)``
    loop steps, within the budgets of :mod:`uneven.limits`.

    >>> t = superpod_traffic(32, tokens_per_rank=64, seed=0)
    >>> hc, _ = core_loads(t, 16, "hop_mix")
    >>> int(np.ptp(hc[0, :, 2])) <= 1   # every core: the same far copies, +-1
    True
    """
    _check_traffic(traffic)
    cores = check_int("cores", cores, lo=1, hi=_MAX_CORES)
    assignment = check_choice("assignment", assignment, ASSIGNMENTS)
    phase = check_choice("phase", phase, ("dispatch", "combine"))
    n = traffic.n_ranks
    check_bytes("cores", cores, 48 * n * cores, f"per-core loads of {n} ranks")
    check_steps("cores", cores, n * n * (4 + (cores if assignment == "hop_mix" else 1)),
                f"dealing the copies of {n} ranks")
    copies = traffic.copies  # read-only, and so is its transpose below: one compiled version
    if phase == "combine":
        copies = np.ascontiguousarray(copies.T)
        copies.flags.writeable = False
    hc = np.zeros((n, cores, 3), dtype=np.int64)
    hd = np.zeros((n, cores, 3), dtype=np.int64)
    _loads_kernel(copies, traffic.topo.iparams, np.int64(cores),
                  assignment == "hop_mix", hc, hd)
    return hc, hd


def _check_traffic(traffic):
    if not isinstance(traffic, SuperpodTraffic):
        raise ValueError(f"traffic must be an SuperpodTraffic from superpod_traffic(); got "
                         f"{type(traffic).__name__}")
    return traffic


# --------------------------------------------------------------------------- one phase, per core


@dataclass(frozen=True)
class PhasePlan(Checked):
    """Deterministic per-core work of one dispatch or combine on every rank (times in s).

    ``count_time`` ``[n_ranks, n_count]``: the counting cores (core ids ``0 .. n_count-1``; with a
    serialised scheme every core counts, then sends, so ``n_count == cores``; 0 in combine).
    ``send_time``, ``flag_time``, ``writes`` (block and flag writes), ``bytes_sent``
    ``[n_ranks, n_send]``: the sending cores (core ids ``send_offset ..``). ``hop_copies``
    ``[n_ranks, n_send, 3]``: copies per hop class. ``poll_time``: per core. ``blocks``: blocks
    per copy. The per-rank maxima the rank-level kernel uses are properties.

    Built directly (or by ``dataclasses.replace``), every field is checked: the core split must
    be the one :func:`phase_plan` makes for ``phase``, ``scheme`` and ``costs``, the arrays must
    have the shapes above and hold finite values >= 0 (times at most 1e30 s).
    """

    phase: str = choice(("dispatch", "combine"))
    scheme: Scheme = instance(Scheme, "see scheme()")
    costs: CoreCosts = instance(CoreCosts)
    traffic: SuperpodTraffic = field(repr=False)
    n_count: int = integer(lo=lambda p: p.split[0], hi=lambda p: p.split[0])
    send_offset: int = integer(lo=lambda p: p.split[1], hi=lambda p: p.split[1])
    n_send: int = integer(lo=lambda p: p.split[2], hi=lambda p: p.split[2])
    blocks: int = integer(lo=1, hi=_MAX_COPY_BYTES)
    count_time: np.ndarray = array(shape=lambda p: (p.traffic.n_ranks, p.n_count), lo=0.0,
                                   hi=_MAX_TIME, repr=False)
    send_time: np.ndarray = array(shape=lambda p: (p.traffic.n_ranks, p.n_send), lo=0.0,
                                  hi=_MAX_TIME, repr=False)
    flag_time: np.ndarray = array(shape=lambda p: (p.traffic.n_ranks, p.n_send), lo=0.0,
                                  hi=_MAX_TIME, repr=False)
    writes: np.ndarray = array("int", shape=lambda p: (p.traffic.n_ranks, p.n_send), lo=0,
                               repr=False)
    bytes_sent: np.ndarray = array(shape=lambda p: (p.traffic.n_ranks, p.n_send), lo=0.0,
                                   hi=_MAX_TIME, repr=False)
    hop_copies: np.ndarray = array("int", shape=lambda p: (p.traffic.n_ranks, p.n_send, 3), lo=0,
                                   repr=False)
    poll_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s", default=0.0)
    check_first = ("phase", "scheme", "costs")

    @property
    def split(self) -> tuple:
        """``(n_count, send_offset, n_send)``: the cores this phase's scheme gives to counting
        and to sending."""
        return _split(self.phase, self.scheme, self.costs.cores)

    def __post_init__(self):
        _check_traffic(self.traffic)
        check_fields(self)

    @property
    def n_ranks(self) -> int:
        """EP ranks."""
        return self.traffic.n_ranks

    @property
    def has_count(self) -> bool:
        """True when the phase counts (dispatch); combine reuses dispatch's layout."""
        return self.n_count > 0

    @property
    def barrier1(self) -> bool:
        """True when a global barrier separates counting and sending."""
        return self.has_count and not self.scheme.concurrent and self.scheme.sync == "barrier"

    @property
    def rank_count(self) -> np.ndarray:
        """Per rank: the slowest counting core (s)."""
        return self.count_time.max(axis=1) if self.has_count else np.zeros(self.n_ranks)

    @property
    def rank_send(self) -> np.ndarray:
        """Per rank: the slowest sending core's send time (s)."""
        return self.send_time.max(axis=1)

    @property
    def rank_serial(self) -> np.ndarray:
        """Per rank, serialised scheme: the slowest core's count + send (s)."""
        if self.has_count and not self.scheme.concurrent:
            return (self.count_time + self.send_time).max(axis=1)
        return self.rank_send

    @property
    def rank_flag(self) -> np.ndarray:
        """Per rank: the slowest core's fence and flag writes (s; 0 unless ``sync='flag'``)."""
        return self.flag_time.max(axis=1)


def phase_plan(traffic: SuperpodTraffic, costs: CoreCosts, scheme: Scheme,
               phase: str = "dispatch") -> PhasePlan:
    """Per-core work of one ``phase`` (``"dispatch"`` or ``"combine"``) under ``scheme``.

    Counting (dispatch only): a counting core scans its share of the rank's routing entries
    (``count_cost`` each) and publishes its share of the ``n_ranks`` counts, dealt round-robin by
    destination (one small write each, ``write_time(hop, flag_bytes)``). Sending: each copy is
    ``blocks`` writes of ``block_bytes`` (:func:`blocks_per_copy`), at ``write_time`` of its hop
    class. With ``sync="flag"``, after the rank's sends a fence (one two-hop latency) and one flag
    write per destination, dealt round-robin over the sending cores.
    Size: about ``16 n_ranks**2 + 240 n_ranks cores`` bytes (80 MB at 1,024 ranks of 256
    cores), within the memory budget of :mod:`uneven.limits`.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> p = phase_plan(t, CoreCosts(cores=8), scheme("ubep", count_cores=2))
    >>> p.n_count, p.send_offset, p.n_send, p.blocks
    (2, 2, 6, 15)
    """
    _check_traffic(traffic)
    if not isinstance(costs, CoreCosts):
        raise ValueError(f"costs must be a CoreCosts; got {type(costs).__name__}")
    if not isinstance(scheme, Scheme):
        raise ValueError(f"scheme must be a Scheme (see scheme()); got {type(scheme).__name__}")
    phase = check_choice("phase", phase, ("dispatch", "combine"))
    C = costs.cores
    n = traffic.n_ranks
    n_count, send_offset, n_send = _split(phase, scheme, C)
    check_bytes("traffic", f"{n} ranks", 16 * n * n + 240 * n * C,
                f"the per-core work of {n} ranks of {C} cores")
    copy_bytes = traffic.dispatch_bytes if phase == "dispatch" else traffic.combine_bytes
    nb = blocks_per_copy(copy_bytes, scheme.block_bytes, scheme.flag_bytes,
                         scheme.sync == "block")
    lat = np.array(costs.hop_latency)
    q = costs.writes_in_flight
    w_block = lat / q + scheme.block_bytes / costs.core_bandwidth  # s per block, per hop class
    w_small = lat / q + scheme.flag_bytes / costs.core_bandwidth  # s per count or flag word
    hop_copies, _ = core_loads(traffic, n_send, scheme.assignment, phase)
    send_time = hop_copies @ (nb * w_block)
    writes = hop_copies.sum(axis=2) * nb
    nbytes = writes.astype(np.float64) * scheme.block_bytes
    hops = traffic.hop_matrix()
    if scheme.sync == "flag":
        # Round-robin by destination id: flag d goes to core d % cores (so do the counts).
        by_core = _words_by_core(hops, n_send)
        flag_time = lat[2] + by_core @ w_small
        writes = writes + by_core.sum(axis=2)
        nbytes = nbytes + by_core.sum(axis=2) * scheme.flag_bytes
    else:
        flag_time = np.zeros((n, n_send))
    if n_count:
        copies = traffic.copies if phase == "dispatch" else traffic.copies.T
        entries = copies.sum(axis=1)
        base, extra = np.divmod(entries, n_count)
        share = base[:, None] + (np.arange(n_count)[None, :] < extra[:, None])
        count_time = share * costs.count_cost + _words_by_core(hops, n_count) @ w_small
    else:
        count_time = np.zeros((n, 0))
    writes = writes.astype(np.int64)
    for a in (count_time, send_time, flag_time, writes, nbytes, hop_copies):
        a.flags.writeable = False
    return trusted(PhasePlan, phase=phase, scheme=scheme, costs=costs, traffic=traffic,
                   n_count=n_count, send_offset=send_offset, n_send=n_send, blocks=nb,
                   count_time=count_time, send_time=send_time, flag_time=flag_time,
                   writes=writes, bytes_sent=nbytes, hop_copies=hop_copies,
                   poll_time=float(costs.poll_cost))


def _split(phase, scheme, cores) -> tuple:
    """``(n_count, send_offset, n_send)`` of a phase: who counts and who sends."""
    if scheme.concurrent and phase == "dispatch":
        if scheme.count_cores >= cores:
            raise ValueError(f"count_cores must leave at least one sending core of cores = "
                             f"{cores}; got {scheme.count_cores}")
        n_count, send_offset = scheme.count_cores, scheme.count_cores
    elif phase == "dispatch":
        n_count, send_offset = cores, 0
    else:
        n_count, send_offset = 0, 0
    return n_count, send_offset, cores - send_offset


def _times(name, value, shape=None, lo=0.0, ndim=None) -> np.ndarray:
    """A read-only float64 array of ``shape`` with finite entries in ``[lo, 1e30]`` (s)."""
    arr = frozen_array(name, value, shape=shape, ndim=ndim, lo=lo)
    if arr.size and arr.max() > _MAX_TIME:
        raise ValueError(f"{name} must have every entry <= {_MAX_TIME:g} (in s); largest entry "
                         f"is {arr.max()}")
    return arr


def _words_by_core(hops, cores):
    """Per rank, core and hop class: one small write per destination rank, destination d on
    core d % cores."""
    n = hops.shape[0]
    out = np.zeros((n, cores, 3), dtype=np.float64)
    onehot = (np.arange(n)[:, None] % cores == np.arange(cores)[None, :]).astype(np.float64)
    for h in range(3):
        # out[r, c, h] = destinations d with d % cores == c and hop class h from r
        out[:, :, h] = (hops == h).astype(np.float64) @ onehot
    return out


# --------------------------------------------------------------------------- rank-level kernel
#
# One phase on every rank, from start times a[r] (s). Per rank: C[r] when its counts are out
# (-inf without counting), S[r] when its data (and separate flags) are out, E[r] = max of both,
# i.e. when its own cores are done. With a barrier every rank polls after max(E) + barrier_cost.
# Without one, rank r polls after max(E[r], A[r]), where A[r] is when the last count (from every
# source) and the last data (from the sources that send r something) have landed: a source's
# finish plus the latency of its hop class to r.


@njit
def _node_top2(v, g, max1, arg1, max2):  # pragma: no cover - compiled
    """Per node (ranks r // g): the largest value, its rank, the second largest; returns the
    best node, its value and the best value of any other node."""
    n = v.size
    nn = (n + g - 1) // g
    for nd in range(nn):
        max1[nd] = -np.inf
        max2[nd] = -np.inf
        arg1[nd] = -1
    for s in range(n):
        nd = s // g
        if v[s] > max1[nd]:
            max2[nd] = max1[nd]
            max1[nd] = v[s]
            arg1[nd] = s
        elif v[s] > max2[nd]:
            max2[nd] = v[s]
    best1 = -np.inf
    best2 = -np.inf
    node1 = -1
    for nd in range(nn):
        if max1[nd] > best1:
            best2 = best1
            best1 = max1[nd]
            node1 = nd
        elif max1[nd] > best2:
            best2 = max1[nd]
    return node1, best2, best1


_TOP = 16  # latest sources kept for the sparse arrival walk


@njit
def _arrival(cnt_end, snd_end, recv, dense, full_own, g, l0, l1, l2, out, max1, arg1, max2,
             order):  # pragma: no cover - compiled
    """out[r] = max(max_s cnt_end[s] + l(s, r), max_{s: recv[r, s]} snd_end[s] + l(s, r)),
    l = l0 for s == r, l1 on one node (s // g == r // g), l2 across nodes; -inf if nothing
    arrives; ``recv[r, s]`` (int8) says whether s sends r data, ``full_own[r]`` whether every
    rank of r's node does. The count part and a dense data part cost O(n) (two largest values
    per node).
    A sparse data part scans the receiver's own node, then the latest sources (kept in
    ``order[:_TOP]``, latest first) for the first remote one that sends to r; only when none of
    them does, all sources."""
    n = snd_end.size
    node1, other1, best1 = _node_top2(cnt_end, g, max1, arg1, max2)
    for r in range(n):
        nd = r // g
        t = cnt_end[r] + l0
        same = max2[nd] if arg1[nd] == r else max1[nd]
        if same + l1 > t:
            t = same + l1
        far = other1 if node1 == nd else best1
        if far + l2 > t:
            t = far + l2
        out[r] = t
    node1, other1, best1 = _node_top2(snd_end, g, max1, arg1, max2)
    if dense:
        for r in range(n):
            nd = r // g
            t = snd_end[r] + l0
            same = max2[nd] if arg1[nd] == r else max1[nd]
            if same + l1 > t:
                t = same + l1
            far = other1 if node1 == nd else best1
            if far + l2 > t:
                t = far + l2
            if t > out[r]:
                out[r] = t
        return
    # the k latest sources, latest first (insertion into a short sorted list)
    k = 0
    top = min(n, _TOP)
    for s in range(n):
        v = snd_end[s]
        if k == top and v <= snd_end[order[k - 1]]:
            continue
        j = k if k < top else top - 1
        while j > 0 and snd_end[order[j - 1]] < v:
            order[j] = order[j - 1]
            j -= 1
        order[j] = s
        if k < top:
            k += 1
    for r in range(n):
        nd = r // g
        t = out[r]
        if full_own[r]:  # every rank of the node sends to r: the node's two latest decide
            if snd_end[r] + l0 > t:
                t = snd_end[r] + l0
            same = max2[nd] if arg1[nd] == r else max1[nd]
            if same + l1 > t:
                t = same + l1
        else:
            lo = nd * g
            hi = min(n, lo + g)
            for s in range(lo, hi):  # own node, self included
                if recv[r, s]:
                    v = snd_end[s] + (l0 if s == r else l1)
                    if v > t:
                        t = v
        found = False
        for i in range(k):  # latest first: the first remote sender is the answer
            s = order[i]
            if s // g != nd and recv[r, s]:
                if snd_end[s] + l2 > t:
                    t = snd_end[s] + l2
                found = True
                break
        if not found and k == _TOP:
            far = -np.inf
            for s in range(n):
                if s // g != nd and recv[r, s] and snd_end[s] > far:
                    far = snd_end[s]
            if far + l2 > t:
                t = far + l2
        out[r] = t


@njit
def _phase(a, cnt, snd, ser, flg, poll, j1, j2, j3, barrier1, concurrent, has_count,
           sync_barrier, sends, dense, full_own, tbar, l0, l1, l2, g, out, c_end, s_end, arr,
           max1, arg1, max2, order):  # pragma: no cover - compiled
    """One phase on every rank: start times ``a`` -> end times ``out`` (see above)."""
    n = a.size
    for r in range(n):
        c_end[r] = a[r] + cnt[r] + j1[r] if has_count else -np.inf
    if barrier1:
        g1 = -np.inf
        for r in range(n):
            if c_end[r] > g1:
                g1 = c_end[r]
        for r in range(n):
            s_end[r] = g1 + tbar + snd[r] + j2[r]
    elif has_count and not concurrent:
        for r in range(n):
            s_end[r] = a[r] + ser[r] + j1[r] + j2[r] + flg[r]
    else:
        for r in range(n):
            s_end[r] = a[r] + snd[r] + j2[r] + flg[r]
    if sync_barrier:
        g2 = -np.inf
        for r in range(n):
            e = max(c_end[r], s_end[r])
            if e > g2:
                g2 = e
        for r in range(n):
            out[r] = g2 + tbar + poll + j3[r]
        return
    _arrival(c_end, s_end, sends, dense, full_own, g, l0, l1, l2, arr, max1, arg1, max2, order)
    for r in range(n):
        out[r] = max(c_end[r], s_end[r], arr[r]) + poll + j3[r]


@njit
def _samples_kernel(jit, cnt, snd, ser, flg, poll, barrier1, concurrent, has_count,
                    sync_barrier, sends, dense, full_own, tbar, l0, l1, l2, g,
                    out):  # pragma: no cover - compiled
    """Latency of ``jit.shape[0]`` independent phases, every rank starting at 0."""
    n = cnt.size
    nn = (n + g - 1) // g
    a = np.zeros(n)
    end = np.empty(n)
    c_end = np.empty(n)
    s_end = np.empty(n)
    arr = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    max1 = np.empty(nn)
    max2 = np.empty(nn)
    arg1 = np.empty(nn, dtype=np.int64)
    for s in range(jit.shape[0]):
        _phase(a, cnt, snd, ser, flg, poll, jit[s, 0], jit[s, 1], jit[s, 2], barrier1,
               concurrent, has_count, sync_barrier, sends, dense, full_own, tbar, l0, l1, l2, g,
               end, c_end, s_end, arr, max1, arg1, max2, order)
        m = -np.inf
        for r in range(n):
            if end[r] > m:
                m = end[r]
        out[s] = m


@njit
def _decode_kernel(jit, n_layers, other, expert, d_cnt, d_snd, d_ser, d_flg, d_poll, d_b1,
                   d_sends, d_dense, d_full, c_snd, c_flg, c_poll, c_sends, c_dense, c_full,
                   concurrent, sync_barrier, tbar, l0, l1, l2, g, yes, no,
                   out):  # pragma: no cover - compiled
    """Decode steps: per layer other work, dispatch, expert, combine; out[s] = step time.

    ``jit[s, layer]`` rows: 0 other, 1-3 dispatch (count, send, poll), 4 expert, 5-6 combine
    (send, poll). ``yes``/``no`` are True/False passed in, so that :func:`_phase` is compiled
    once for plain bools rather than again for each literal."""
    n = d_cnt.size
    nn = (n + g - 1) // g
    t = np.empty(n)
    a = np.empty(n)
    x = np.empty(n)
    c_end = np.empty(n)
    s_end = np.empty(n)
    arr = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    max1 = np.empty(nn)
    max2 = np.empty(nn)
    arg1 = np.empty(nn, dtype=np.int64)
    zero = np.zeros(n)
    for s in range(jit.shape[0]):
        for r in range(n):
            t[r] = 0.0
        for layer in range(n_layers):
            j = jit[s, layer]
            for r in range(n):
                a[r] = t[r] + other + j[0, r]
            _phase(a, d_cnt, d_snd, d_ser, d_flg, d_poll, j[1], j[2], j[3], d_b1, concurrent,
                   yes, sync_barrier, d_sends, d_dense, d_full, tbar, l0, l1, l2, g, x, c_end,
                   s_end, arr, max1, arg1, max2, order)
            for r in range(n):
                x[r] = x[r] + expert + j[4, r]
            _phase(x, zero, c_snd, c_snd, c_flg, c_poll, zero, j[5], j[6], no, concurrent,
                   no, sync_barrier, c_sends, c_dense, c_full, tbar, l0, l1, l2, g, t, c_end,
                   s_end, arr, max1, arg1, max2, order)
        m = -np.inf
        for r in range(n):
            if t[r] > m:
                m = t[r]
        out[s] = m


def _reference_phase(a, cnt, snd, ser, flg, poll, j1, j2, j3, barrier1, concurrent, has_count,
                     sync_barrier, sends, tbar, lat, g):
    """Plain-Python reference of :func:`_phase`, with the arrival as a double loop;
    ``sends[r][s]`` says whether r receives data from s."""
    n = len(a)
    inf = float("inf")
    c_end = [a[r] + cnt[r] + j1[r] if has_count else -inf for r in range(n)]
    if barrier1:
        g1 = max(c_end)
        s_end = [g1 + tbar + snd[r] + j2[r] for r in range(n)]
    elif has_count and not concurrent:
        s_end = [a[r] + ser[r] + j1[r] + j2[r] + flg[r] for r in range(n)]
    else:
        s_end = [a[r] + snd[r] + j2[r] + flg[r] for r in range(n)]
    e = [max(c_end[r], s_end[r]) for r in range(n)]
    if sync_barrier:
        return [max(e) + tbar + poll + j3[r] for r in range(n)]

    def hop(s, r):
        return 0 if s == r else (1 if s // g == r // g else 2)

    out = []
    for r in range(n):
        t = e[r]
        for s in range(n):
            t = max(t, c_end[s] + lat[hop(s, r)])
            if sends[r][s]:
                t = max(t, s_end[s] + lat[hop(s, r)])
        out.append(t + poll + j3[r])
    return out


def _plan_args(plan: PhasePlan):
    return (np.ascontiguousarray(plan.rank_count, dtype=np.float64),
            np.ascontiguousarray(plan.rank_send, dtype=np.float64),
            np.ascontiguousarray(plan.rank_serial, dtype=np.float64),
            np.ascontiguousarray(plan.rank_flag, dtype=np.float64),
            float(plan.poll_time))


def _sends(plan: PhasePlan):
    """``recv[r, s]`` (int8): rank r receives data from source s in this phase (receiver-major,
    so a receiver's row is contiguous); whether every pair does; and per receiver (int8) whether
    every rank of its own node does."""
    copies = plan.traffic.copies if plan.phase == "dispatch" else plan.traffic.copies.T
    recv = np.ascontiguousarray(copies.T > 0, dtype=np.int8)
    return recv, bool(recv.all()), _full_own(recv, plan.traffic.ranks_per_node)


def _full_own(recv, g):
    n = recv.shape[0]
    node = np.arange(n) // g
    same = node[:, None] == node[None, :]
    return np.ascontiguousarray(np.all(recv.astype(bool) | ~same, axis=1), dtype=np.int8)


def _check_plan(plan) -> PhasePlan:
    if not isinstance(plan, PhasePlan):
        raise ValueError(f"plan must be a PhasePlan from phase_plan(); got {type(plan).__name__}")
    return plan


_CHUNK_DRAWS = 1 << 21  # jitter values drawn at a time (16 MB)


def _check_jitter(jitter, straggler_prob, straggler_delay):
    return (check_real("jitter", jitter, lo=0.0, hi=_MAX_COST, unit="s"),
            check_real("straggler_prob", straggler_prob, lo=0.0, hi=1.0),
            check_real("straggler_delay", straggler_delay, lo=0.0, hi=_MAX_COST, unit="s"))


def _phase_steps(n, dense) -> int:
    """Loop steps of one phase on ``n`` ranks in the rank-level kernel: a few per rank, plus a
    scan of every source per receiver when the data is sparse (the worst case)."""
    return n * (40 + (0 if dense else n))


class _Draws:
    """Seeded extra delays (s): ``jitter`` x standard exponential from ``default_rng(seed)``,
    plus ``straggler_delay`` where a uniform from ``default_rng([seed, 1])`` falls below
    ``straggler_prob``, plus ``pareto_scale`` x a Lomax (Pareto II, minimum 0) draw of shape
    ``pareto_alpha`` from ``default_rng([seed, 2])``, capped at 1,000 s. Separate streams, so
    drawing in chunks of steps gives the same values as drawing all steps at once, and a run
    without a Pareto part draws exactly what it drew before that part existed."""

    def __init__(self, seed, jitter, straggler_prob=0.0, straggler_delay=0.0, pareto_alpha=2.0,
                 pareto_scale=0.0):
        self.exp = np.random.default_rng(seed)
        self.uni = np.random.default_rng([seed, 1])
        self.par = np.random.default_rng([seed, 2])
        self.jitter = jitter
        self.prob = straggler_prob
        self.delay = straggler_delay
        self.alpha = pareto_alpha
        self.scale = pareto_scale

    def __call__(self, shape):
        if self.jitter > 0:
            out = self.exp.standard_exponential(shape) * self.jitter
        else:
            out = np.zeros(shape)
        if self.prob > 0 and self.delay > 0:
            out += (self.uni.random(shape) < self.prob) * self.delay
        if self.scale > 0:
            out += np.minimum(self.par.pareto(self.alpha, shape) * self.scale, _MAX_COST)
        return out


class _SlowDies:
    """Persistent stragglers: in each step (run) every rank is slow with probability ``prob``
    (uniforms from ``default_rng([seed, 3])``, one per step and rank), and a slow rank's ops
    all take ``slowdown`` times as long that whole step. ``base[k, r]``: the duration of op row
    ``k`` on rank ``r`` that the draws of row ``k`` add to; a slow rank gets ``(slowdown - 1) *
    base`` more in every layer."""

    def __init__(self, seed, prob, slowdown, base):
        self.rng = np.random.default_rng([seed, 3])
        self.prob = prob
        self.extra = (slowdown - 1.0) * np.asarray(base, dtype=np.float64)
        self.on = prob > 0 and slowdown > 1.0

    def add(self, jit):
        """Add the slow ranks' extra time to ``jit`` ``[steps, ..., rows, n]`` in place."""
        if not self.on:
            return jit
        m, n = jit.shape[0], jit.shape[-1]
        slow = self.rng.random((m, n)) < self.prob
        shape = (m,) + (1,) * (jit.ndim - 2) + (n,)
        jit += slow.reshape(shape) * self.extra
        return jit


#: What a slow die slows (``slow_ops`` of :func:`latency_samples` and :func:`decode_steps`):
#: ``"all"`` its every op; ``"comm"`` only its communication (count, send, poll of dispatch
#: and combine: a slow UB port, say), not its other work and experts; ``"count"`` only its
#: dispatch counting. Per op row of a phase (count, send, poll) and of a decode layer (other,
#: count, send, poll, experts, combine send, combine poll): 1 if the row is slowed.
SLOW_OPS = {"all": ((1, 1, 1), (1, 1, 1, 1, 1, 1, 1)),
            "comm": ((1, 1, 1), (0, 1, 1, 1, 0, 1, 1)),
            "count": ((1, 0, 0), (0, 1, 0, 0, 0, 0, 0))}


def _slow_rows(slow_ops, decode: bool) -> np.ndarray:
    """The row mask of :data:`SLOW_OPS` for ``slow_ops``, checked."""
    slow_ops = check_choice("slow_ops", slow_ops, tuple(SLOW_OPS))
    return np.array(SLOW_OPS[slow_ops][int(decode)], dtype=np.float64)[:, None]


def _check_tails(slow_prob, slowdown, pareto_alpha, pareto_scale):
    """The persistent and heavy-tailed straggler parameters, checked."""
    return (check_real("slow_prob", slow_prob, lo=0.0, hi=1.0),
            check_real("slowdown", slowdown, lo=1.0, hi=_MAX_FACTOR),
            check_real("pareto_alpha", pareto_alpha, lo=1.0, lo_open=True, hi=1e3),
            check_real("pareto_scale", pareto_scale, lo=0.0, hi=_MAX_COST, unit="s"))


def _send_base(plan) -> np.ndarray:
    """Per rank, the part of a phase's send path its send draw adds to: with a barrier before
    the sends or separate counting cores, the send and flag time; serialised without a first
    barrier, the serial count + send (+ flags) beyond the count (so that count plus send scale
    together)."""
    if plan.has_count and not plan.scheme.concurrent and not plan.barrier1:
        return plan.rank_serial - plan.rank_count + plan.rank_flag
    return plan.rank_send + plan.rank_flag


def latency_samples(plan: PhasePlan, n_steps: int = 1000, jitter: float = 0.0, seed: int = 0,
                    *, straggler_prob: float = 0.0, straggler_delay: float = 0.0,
                    slow_prob: float = 0.0, slowdown: float = 1.0, pareto_alpha: float = 2.0,
                    pareto_scale: float = 0.0, slow_ops: str = "all") -> np.ndarray:
    """Latency (s) of ``n_steps`` independent runs of the phase, every rank starting at 0.

    Each run draws fresh jitter: per rank and op (count, send, poll) an extra delay,
    exponential with mean ``jitter`` (s), plus ``straggler_delay`` (s) with probability
    ``straggler_prob``. Draws are ``[n_steps, 3, n_ranks]`` in C order (exponentials from
    ``default_rng(seed)``, straggler uniforms from ``default_rng([seed, 1])``), so two plans
    given one seed see the same jitter. Two straggler models with tails, both off by default
    (the draws are then the ones above): *a slow die*, each rank slow in a run with probability
    ``slow_prob`` (0..1), its count, send and poll then ``slowdown`` (1..1e4) times as long
    (``slow_ops="count"``: its count alone; see :data:`SLOW_OPS`);
    *heavy-tailed per-op delays*, ``pareto_scale`` (s) times a Lomax draw of shape
    ``pareto_alpha`` (> 1, at most 1e3; mean ``pareto_scale / (pareto_alpha - 1)``) added to
    every op (see :class:`_Draws`, :class:`_SlowDies` for the streams). ``jitter``,
    ``straggler_delay`` and ``pareto_scale``: 0..1,000 s. Largest
    size: ``n_steps * n_ranks * (40 + n_ranks)`` loop steps (``40`` instead of ``40 + n_ranks``
    when every rank sends to every rank) and ``8 * n_steps`` bytes, within the budgets of
    :mod:`uneven.limits` (by default ``n_steps * n_ranks`` up to about 5e7 for dense traffic).

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> p = phase_plan(t, CoreCosts(), scheme("baseline"))
    >>> s = latency_samples(p, 200, jitter=2e-6)
    >>> bool(np.percentile(s, 99) >= np.percentile(s, 50) >= phase_latency(p))
    True
    """
    plan = _check_plan(plan)
    n_steps = check_int("n_steps", n_steps, lo=1)
    jit3 = _check_jitter(jitter, straggler_prob, straggler_delay)
    slow_p, slow_f, p_alpha, p_scale = _check_tails(slow_prob, slowdown, pareto_alpha,
                                                    pareto_scale)
    seed = check_int("seed", seed, lo=0)
    n = plan.n_ranks
    check_bytes("n_steps", n_steps, 8 * n_steps, "one latency per step")
    sends, dense, full_own = _sends(plan)
    check_steps("n_steps", n_steps, n_steps * (3 * n + _phase_steps(n, dense)),
                f"{n_steps:,} runs of a phase on {n} ranks")
    draw = _Draws(seed, *jit3, p_alpha, p_scale)
    args = _plan_args(plan)
    rows = _slow_rows(slow_ops, decode=False)
    slow = _SlowDies(seed, slow_p, slow_f, rows * np.stack([args[0], _send_base(plan),
                                                            np.full(n, args[4])]))
    flags = _flags(plan)
    consts = _consts(plan)
    out = np.empty(n_steps)
    per = max(1, _CHUNK_DRAWS // (3 * n))
    for lo in range(0, n_steps, per):
        hi = min(n_steps, lo + per)
        jit = slow.add(draw((hi - lo, 3, n)))
        _samples_kernel(jit, *args, *flags, sends, dense, full_own, *consts, out[lo:hi])
    return out


def _flags(plan):
    s = plan.scheme
    return (plan.barrier1, bool(s.concurrent), plan.has_count, s.sync == "barrier")


def _consts(plan):
    lat = plan.costs.hop_latency
    return (float(plan.costs.barrier_cost), float(lat[0]), float(lat[1]), float(lat[2]),
            np.int64(plan.traffic.ranks_per_node))


def phase_latency(plan: PhasePlan) -> float:
    """Latency (s) of one phase without jitter, every rank starting at 0."""
    return float(latency_samples(plan, 1, 0.0)[0])


# --------------------------------------------------------------------------- core timeline


@dataclass(frozen=True)
class CoreTimeline(Checked):
    """One phase as operations on cores, from :func:`uneven.engines.timeline.run_timeline`.

    Per op: ``rank``, ``core`` (-1 for the zero-length join nodes of barriers and arrivals),
    ``kind`` (code into :data:`CORE_OP_KINDS`; -1 for joins), ``start``/``finish`` (s).
    ``end``: per rank, when its last core finishes polling (s). ``latency``: the latest end
    minus the earliest start (s). ``cores``: cores per rank; ``jitter``: the draws
    ``[3, n_ranks]`` (s) for count, send and poll. ``dep_ptr``, ``dep_src``: the predecessor
    CSR the ops ran with (``None`` when not recorded), for :func:`uneven.trace.to_chrome`.

    Built directly, every field is checked: ``cores`` must be ``plan.costs.cores``; the op
    arrays one entry per op (``rank`` in ``-1 .. n_ranks-1``, ``core`` in ``-1 .. cores-1``,
    ``kind`` in ``-1 .. 4``; ``start <= finish``); times finite, ``>= 0`` and at most 1e30 s.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> tl = core_timeline(phase_plan(t, CoreCosts(cores=8), scheme("baseline")), 1e-6)
    >>> round(tl.breakdown(0)["barrier"] * 1e6), tl.of_rank(1)["core"].size  # 2 barriers of 20 µs
    (40, 40)
    """

    plan: PhasePlan = field(repr=False)
    rank: np.ndarray = array("int", shape=("m",), lo=-1, hi=lambda t: t.plan.n_ranks - 1,
                             repr=False)
    core: np.ndarray = array("int", shape=("m",), lo=-1, hi=lambda t: t.cores - 1, repr=False)
    kind: np.ndarray = array("int", shape=("m",), lo=-1, hi=len(CORE_OP_KINDS) - 1, repr=False)
    start: np.ndarray = array(shape=("m",), lo=0.0, hi=_MAX_TIME, repr=False)
    finish: np.ndarray = array(shape=("m",), lo=0.0, hi=_MAX_TIME, repr=False)
    end: np.ndarray = array(shape=lambda t: (t.plan.n_ranks,), lo=0.0, hi=_MAX_TIME, repr=False)
    jitter: np.ndarray = array(shape=lambda t: (3, t.plan.n_ranks), lo=0.0, hi=_MAX_TIME,
                               repr=False)
    latency: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    cores: int = integer(lo=1, hi=_MAX_CORES)
    dep_ptr: object = graph(ops=lambda t: t.start.size, default=None, repr=False, compare=False)
    dep_src: object = any_value(default=None, repr=False, compare=False)
    check_first = ("cores",)

    def __post_init__(self):
        plan = _check_plan(self.plan)
        check_fields(self)
        if self.cores != plan.costs.cores:
            raise ValueError(f"cores must be plan.costs.cores = {plan.costs.cores}; got "
                             f"{self.cores}")
        if (self.finish < self.start).any():
            raise ValueError("finish must be >= start for every op")

    def of_rank(self, rank: int) -> dict:
        """The core ops of one rank: arrays ``core``, ``kind``, ``start``, ``finish``."""
        rank = check_int("rank", rank, lo=0, hi=self.plan.n_ranks - 1)
        sel = (self.rank == rank) & (self.core >= 0)
        return {k: getattr(self, k)[sel] for k in ("core", "kind", "start", "finish")}

    def waits(self, rank: int) -> dict:
        """Idle gaps between consecutive ops of each core of ``rank`` (waiting for a barrier or
        for data): arrays ``core``, ``start``, ``finish`` (s)."""
        ops = self.of_rank(rank)
        order = np.lexsort((ops["start"], ops["core"]))
        c, s, f = ops["core"][order], ops["start"][order], ops["finish"][order]
        gap = (c[1:] == c[:-1]) & (s[1:] > f[:-1] + 1e-12)
        return {"core": c[1:][gap], "start": f[:-1][gap], "finish": s[1:][gap]}

    def breakdown(self, rank: int = 0) -> dict:
        """Where the cores of ``rank`` spend the phase: mean seconds per core in each op kind
        of :data:`CORE_OP_KINDS` and ``"wait"`` (idle between ops), from the phase start to
        the core's last op."""
        ops = self.of_rank(rank)
        w = self.waits(rank)
        out = {}
        for code, name in enumerate(CORE_OP_KINDS):
            sel = ops["kind"] == code
            out[name] = float((ops["finish"][sel] - ops["start"][sel]).sum() / self.cores)
        out["wait"] = float((w["finish"] - w["start"]).sum() / self.cores)
        return out


def core_timeline(plan: PhasePlan, jitter: float = 0.0, seed: int = 0, start=None, *,
                  straggler_prob: float = 0.0, straggler_delay: float = 0.0) -> CoreTimeline:
    """Build the phase as ops on every core of every rank and run the timeline engine.

    Jitter as in :func:`latency_samples` (one seed gives the draws of its first step).
    ``start``: per-rank start times (s), default zeros. Ops per core, in order: counting cores
    ``count`` [``barrier``], sending cores ``send`` [``flag``]; then [``barrier``] and ``poll``.
    A barrier is an op of ``barrier_cost`` behind a join of every core's previous op. Without a
    barrier, a rank's polls wait for a join of the count ops of every source and of the send
    ops of the sources that send it data, each delayed by the hop latency to this rank.
    ``jitter`` and ``straggler_delay``: 0..1,000 s; ``start`` entries 0..1e9 s. Largest size:
    ``n_ranks * cores <= 65536``, and about ``64 n_ranks**2 + 400 n_ranks cores`` bytes of ops
    and edges within the memory budget of :mod:`uneven.limits`.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> p = phase_plan(t, CoreCosts(cores=8), scheme("baseline"))
    >>> tl = core_timeline(p)
    >>> bool(abs(tl.latency - phase_latency(p)) < 1e-12)
    True
    """
    from ..engines.timeline import edges_to_csr, run_timeline

    plan = _check_plan(plan)
    jit3 = _check_jitter(jitter, straggler_prob, straggler_delay)
    seed = check_int("seed", seed, lo=0)
    n, C = plan.n_ranks, plan.costs.cores
    if n * C > 65536:
        raise ValueError(f"plan must have n_ranks * cores <= 65536 for a core timeline; got "
                         f"{n} * {C}")
    check_bytes("plan", f"{n} ranks x {C} cores", 64 * n * n + 400 * n * C,
                "the ops and edges of a core timeline")
    a = np.zeros(n) if start is None else as_float_array("start", start, shape=(n,), lo=0.0,
                                                         hi=_MAX_START, unit="s")
    jit = _Draws(seed, *jit3)((1, 3, n))[0]
    dur, res, rel_all, kind, rk, co, e_src, e_dst, e_dly = _core_ops(plan, a, jit).arrays(n, C)
    ptr, esrc, edly = edges_to_csr(dur.size, e_src, e_dst, e_dly)
    tl = run_timeline(dur, res, ptr, esrc, edly, release=rel_all)
    poll = kind == K_POLL
    end = np.full(n, -np.inf)
    np.maximum.at(end, rk[poll], tl.finish[poll])
    latency = float(end.max() - a.min())
    for arr in (rk, co, kind, end, jit, ptr, esrc):
        arr.flags.writeable = False
    return trusted(CoreTimeline, plan=plan, rank=rk, core=co, kind=kind, start=tl.start,
                   finish=tl.finish, end=end, jitter=jit, latency=latency, cores=C,
                   dep_ptr=ptr, dep_src=esrc)


def _core_ops(plan, a, jit) -> _OpList:
    """The ops of one phase on every core of every rank, and their edges (see
    :func:`core_timeline`): ``a`` each rank's start (s), ``jit`` the jitter draws ``[3, n]``."""
    n = plan.n_ranks
    C = plan.costs.cores
    tbar = plan.costs.barrier_cost
    ops = _OpList()
    last = np.full((n, C), -1, dtype=np.int64)  # each core's latest op so far
    ranks = np.repeat(np.arange(n), C)
    cores = np.tile(np.arange(C), n)
    first = np.ones(n * C, dtype=bool)  # the next op of this core is its first (gets a release)

    def add(sel, kind, dur):
        rel = np.where(first[sel], a[ranks[sel]], 0.0)
        ids = ops.add(ranks[sel], cores[sel], kind, dur, rel)
        first[sel] = False
        last[ranks[sel], cores[sel]] = ids
        return ids

    def barrier():
        g = ops.join()
        ops.edges(last.ravel(), np.full(n * C, g))
        ids = add(np.ones(n * C, dtype=bool), K_BARRIER, np.full(n * C, tbar))
        ops.edges(np.full(n * C, g), ids)

    count_done = None
    if plan.has_count:
        sel = cores < plan.n_count
        add(sel, K_COUNT, plan.count_time[ranks[sel], cores[sel]] + jit[0][ranks[sel]])
        count_done = ops.join(n)
        ops.edges(last[ranks[sel], cores[sel]], count_done[ranks[sel]])
    if plan.barrier1:
        barrier()
    sel = cores >= plan.send_offset
    sr, sc = ranks[sel], cores[sel]
    add(sel, K_SEND, plan.send_time[sr, sc - plan.send_offset] + jit[1][sr])
    if plan.scheme.sync == "flag":
        local = ops.join(n)
        ops.edges(last[sr, sc], local[sr])
        ids = add(sel, K_FLAG, plan.flag_time[sr, sc - plan.send_offset])
        ops.edges(local[sr], ids)
    gate = None
    if plan.scheme.sync == "barrier":
        barrier()
    else:
        send_done = ops.join(n)
        ops.edges(last[sr, sc], send_done[sr])
        gate = ops.join(n)  # everything this rank waits for
        lat = np.array(plan.costs.hop_latency)
        hops = plan.traffic.hop_matrix()
        src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        src, dst = src.ravel(), dst.ravel()
        if count_done is not None:
            ops.edges(count_done[src], gate[dst], lat[hops.ravel()])
        recv = _sends(plan)[0]
        keep = recv.T.ravel() > 0  # in (source, destination) order, as src and dst
        ops.edges(send_done[src[keep]], gate[dst[keep]], lat[hops.ravel()[keep]])
    ids = add(np.ones(n * C, dtype=bool), K_POLL, plan.poll_time + jit[2][ranks])
    if gate is not None:
        ops.edges(gate[ranks], ids)
    return ops


class _OpList:
    """Collects ops (vectorised) and edges for :func:`core_timeline`."""

    def __init__(self):
        self.parts = []  # (rank, core, kind, dur, release)
        self.n = 0
        self.src, self.dst, self.dly = [], [], []

    def add(self, rank, core, kind, dur, release):
        m = len(rank)
        self.parts.append((np.asarray(rank), np.asarray(core), np.full(m, kind),
                           np.asarray(dur, dtype=np.float64),
                           np.asarray(release, dtype=np.float64)))
        ids = np.arange(self.n, self.n + m)
        self.n += m
        return ids

    def join(self, m=None):
        """One zero-length join op (or ``m`` of them, as an array of ids)."""
        k = 1 if m is None else m
        self.parts.append((np.full(k, -1), np.full(k, -1), np.full(k, K_JOIN), np.zeros(k),
                           np.zeros(k)))
        self.n += k
        return self.n - 1 if m is None else np.arange(self.n - k, self.n)

    def edges(self, src, dst, delay=None):
        src = np.asarray(src)
        dst = np.asarray(dst)
        keep = src >= 0
        self.src.append(src[keep])
        self.dst.append(dst[keep])
        self.dly.append(np.zeros(int(keep.sum())) if delay is None else np.asarray(delay)[keep])

    def arrays(self, n_ranks, cores):
        """Concatenated op arrays; ops of core c of rank r run on resource r * cores + c in
        op-id order (so a core's ops need no edges between them); each join has a resource of
        its own."""
        cat = np.concatenate
        rank = cat([p[0] for p in self.parts])
        core = cat([p[1] for p in self.parts])
        kind = cat([p[2] for p in self.parts]).astype(np.int64)
        dur = cat([p[3] for p in self.parts])
        rel = cat([p[4] for p in self.parts])
        res = rank * cores + core
        joins = np.flatnonzero(core < 0)
        res[joins] = n_ranks * cores + np.arange(joins.size)
        return (dur, res, rel, kind, rank, core, cat(self.src), cat(self.dst),
                cat(self.dly).astype(np.float64))


# --------------------------------------------------------------------------- decode steps


@dataclass(frozen=True)
class DecodeSteps(Checked):
    """Step times of many decode steps (s): ``tpot[s]`` is the time per output token of step
    ``s`` (every rank's tokens are done). ``p50``, ``p99``: percentiles (s). Built directly,
    ``tpot`` must hold at least one finite time >= 0, ``n_layers`` be 1..1,000 and ``jitter``
    0..1,000 s.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> r = decode_steps(t, CoreCosts(), scheme("baseline"), n_steps=20, n_layers=2)
    >>> r.tpot.size, r.n_layers, bool(r.p99 >= r.p50 > 0)
    (20, 2, True)
    """

    tpot: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=_MAX_TIME, repr=False)
    n_layers: int = integer(lo=1, hi=1000)
    jitter: float = real(lo=0.0, hi=_MAX_COST, unit="s")

    @property
    def p50(self) -> float:
        """Median time per output token (s)."""
        return float(np.percentile(self.tpot, 50))

    @property
    def p99(self) -> float:
        """99th-percentile time per output token (s)."""
        return float(np.percentile(self.tpot, 99))


def decode_steps(traffic: SuperpodTraffic, costs: CoreCosts, scheme: Scheme, *, n_steps: int = 1000,
                 n_layers: int = 58, other_time: float = 500e-6, expert_time: float = 100e-6,
                 jitter: float = 2e-6, straggler_prob: float = 0.0, straggler_delay: float = 0.0,
                 seed: int = 0, slow_prob: float = 0.0, slowdown: float = 1.0,
                 pareto_alpha: float = 2.0, pareto_scale: float = 0.0,
                 slow_ops: str = "all") -> DecodeSteps:
    """Time per output token over ``n_steps`` decode steps of ``n_layers`` MoE layers.

    A layer on rank r: other work (attention, gate, shared expert; ``other_time`` [model]),
    dispatch, its experts (``expert_time`` [model]), combine. Each of these, and the count, send
    and poll ops inside dispatch and the send and poll ops inside combine, gets its own jitter
    draw (as in :func:`latency_samples`). A step ends when every rank has finished its last
    layer; all ranks start a step together. Draws are ``[n_steps, n_layers, 7, n_ranks]`` (seeded
    as in :func:`latency_samples`), so schemes given one seed see the same jitter. Stragglers
    with tails, as in :func:`latency_samples`: a rank slow for a whole step with probability
    ``slow_prob`` runs every op of that step (other work, count, send, poll, experts, combine)
    ``slowdown`` times as long (``slow_ops="comm"``: only its count, send and poll ops, not its
    other work and experts; ``"count"``: only its dispatch counting; :data:`SLOW_OPS`);
    ``pareto_scale`` x Lomax(``pareto_alpha``) is added to every
    op. Both off by default, which gives exactly the step times of the plain jitter. Ranges:
    ``n_layers`` 1..1,000; ``other_time``, ``expert_time``, ``jitter``, ``straggler_delay``
    0..1,000 s. Largest size: ``n_steps * n_layers * n_ranks * (87 + 2 n_ranks)`` loop steps
    (``87`` alone when every rank sends to every rank) and ``8 * n_steps`` bytes, within the
    budgets of :mod:`uneven.limits`.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> r = decode_steps(t, CoreCosts(), scheme("ubep"), n_steps=50, n_layers=4)
    >>> bool(r.p99 >= r.p50 > 4 * (500e-6 + 100e-6))
    True
    """
    _check_traffic(traffic)
    n_steps = check_int("n_steps", n_steps, lo=1)
    n_layers = check_int("n_layers", n_layers, lo=1, hi=1000)
    other_time = check_real("other_time", other_time, lo=0.0, hi=_MAX_COST, unit="s")
    expert_time = check_real("expert_time", expert_time, lo=0.0, hi=_MAX_COST, unit="s")
    jit3 = _check_jitter(jitter, straggler_prob, straggler_delay)
    slow_p, slow_f, p_alpha, p_scale = _check_tails(slow_prob, slowdown, pareto_alpha,
                                                    pareto_scale)
    seed = check_int("seed", seed, lo=0)
    n = traffic.n_ranks
    check_bytes("n_steps", n_steps, 8 * n_steps, "one time per step")
    d = phase_plan(traffic, costs, scheme, "dispatch")
    c = phase_plan(traffic, costs, scheme, "combine")
    d_sends, d_dense, d_full = _sends(d)
    c_sends, c_dense, c_full = _sends(c)
    per_layer = 7 * n + _phase_steps(n, d_dense) + _phase_steps(n, c_dense)
    check_steps("n_steps", n_steps, n_steps * n_layers * per_layer,
                f"{n_steps:,} steps of {n_layers} layers on {n} ranks")
    d_cnt, d_snd, d_ser, d_flg, d_poll = _plan_args(d)
    _, c_snd, _, c_flg, c_poll = _plan_args(c)
    consts = _consts(d)
    draw = _Draws(seed, *jit3, p_alpha, p_scale)
    full = np.full(n, 1.0)
    rows = _slow_rows(slow_ops, decode=True)
    slow = _SlowDies(seed, slow_p, slow_f, rows * np.stack([
        other_time * full, d_cnt, _send_base(d), d_poll * full, expert_time * full,
        _send_base(c), c_poll * full]))
    out = np.empty(n_steps)
    per = max(1, _CHUNK_DRAWS // (7 * n * n_layers))
    for lo in range(0, n_steps, per):
        hi = min(n_steps, lo + per)
        jit = slow.add(draw((hi - lo, n_layers, 7, n)))
        _decode_kernel(jit, np.int64(n_layers), other_time, expert_time, d_cnt, d_snd, d_ser,
                       d_flg, d_poll, d.barrier1, d_sends, d_dense, d_full, c_snd, c_flg, c_poll,
                       c_sends, c_dense, c_full, bool(scheme.concurrent), scheme.sync == "barrier",
                       *consts, True, False, out[lo:hi])
    out.flags.writeable = False
    return trusted(DecodeSteps, tpot=out, n_layers=n_layers, jitter=jit3[0])


def _reference_decode(jit, n_layers, other, expert, d, c, concurrent, sync_barrier, tbar, lat,
                      g):
    """Plain-Python reference of :func:`_decode_kernel`; ``d`` = (cnt, snd, ser, flg, poll,
    barrier1, sends) of dispatch and ``c`` = (snd, flg, poll, sends) of combine."""
    d_cnt, d_snd, d_ser, d_flg, d_poll, d_b1, d_sends = d
    c_snd, c_flg, c_poll, c_sends = c
    n = len(d_cnt)
    zero = [0.0] * n
    out = []
    for s in range(jit.shape[0]):
        t = [0.0] * n
        for layer in range(n_layers):
            j = jit[s, layer]
            a = [t[r] + other + j[0, r] for r in range(n)]
            x = _reference_phase(a, d_cnt, d_snd, d_ser, d_flg, d_poll, j[1], j[2], j[3], d_b1,
                                 concurrent, True, sync_barrier, d_sends, tbar, lat, g)
            x = [x[r] + expert + j[4, r] for r in range(n)]
            t = _reference_phase(x, zero, c_snd, c_snd, c_flg, c_poll, zero, j[5], j[6], False,
                                 concurrent, False, sync_barrier, c_sends, tbar, lat, g)
        out.append(max(t))
    return out


# --------------------------------------------------------------------------- split


def best_split(traffic: SuperpodTraffic, costs: CoreCosts, scheme: Scheme) -> tuple[int, float]:
    """The counting-group size (1 .. cores-1) with the lowest jitter-free dispatch latency of a
    concurrent ``scheme``, and that latency (s). Ties go to fewer counting cores. Size: one
    :func:`phase_plan` per split, about ``(cores - 1) * (40 n_ranks**2 + 20 n_ranks cores)``
    loop steps within the work budget of :mod:`uneven.limits`.

    >>> t = superpod_traffic(16, tokens_per_rank=32, seed=0)
    >>> c, lat = best_split(t, CoreCosts(cores=8), scheme("ubep"))
    >>> 1 <= c <= 7 and lat > 0
    True
    """
    _check_traffic(traffic)
    if not isinstance(scheme, Scheme) or not scheme.concurrent:
        raise ValueError(f"scheme must be a concurrent Scheme; got {_show(scheme)}")
    if not isinstance(costs, CoreCosts) or costs.cores < 2:
        raise ValueError(f"costs must be a CoreCosts with cores >= 2 to split; got "
                         f"{_show(costs)}")
    n, C = traffic.n_ranks, costs.cores
    check_steps("costs", f"CoreCosts(cores={C})",
                (C - 1) * (100 * PY_STEP + 40 * n * n + 20 * n * C),
                f"{C - 1} phase plans of {n} ranks")
    best = (0, math.inf)
    for c in range(1, costs.cores):
        lat = phase_latency(phase_plan(traffic, costs, replace(scheme, count_cores=c)))
        if lat < best[1] - 1e-15:
            best = (c, lat)
    return best


# --------------------------------------------------------------------------- a core's writes


def core_write_time(hop_copies, costs: CoreCosts | None = None, blocks: int = 15,
                    block_bytes: int = 512) -> float:
    """Seconds one core spends sending ``hop_copies[h]`` token copies of hop class ``h``
    (0 own die, 1 same node, 2 another node), each ``blocks`` atomic writes of ``block_bytes``:
    ``Σ_h n_h · blocks · (ℓ_h / q + block_bytes / bw_core)`` (:meth:`CoreCosts.write_time`).
    ``hop_copies``: three integers 0..2**32; ``blocks`` 1..2**20; ``block_bytes`` 16..2**20.

    >>> round(core_write_time([1, 15, 16], CoreCosts(cores=8)) * 1e6, 1)   # µs
    127.0
    """
    hc = as_float_array("hop_copies", hop_copies, shape=(3,), lo=0.0, hi=float(_MAX_ROW_COPIES))
    if not np.array_equal(hc, np.round(hc)):
        raise ValueError(f"hop_copies must be three whole numbers of copies; got "
                         f"{_show(hop_copies)}")
    costs = CoreCosts() if costs is None else costs
    if not isinstance(costs, CoreCosts):
        raise ValueError(f"costs must be a CoreCosts; got {type(costs).__name__}")
    blocks = check_int("blocks", blocks, lo=1, hi=1 << 20)
    block_bytes = check_int("block_bytes", block_bytes, lo=16, hi=1 << 20, unit="bytes")
    return float(sum(hc[h] * blocks * costs.write_time(h, block_bytes) for h in range(3)))


# --------------------------------------------------------------------------- calibration

#: CloudMatrix-Infer's measured dispatch on CloudMatrix384, 128 tokens per rank, top-8, INT8
#: (arXiv:2506.12708 [paper]): EP size -> (latency s, bandwidth per rank bytes/s).
CLOUDMATRIX_DISPATCH = {8: (116e-6, 71e9), 256: (152e-6, 54e9)}


@dataclass(frozen=True)
class WritesFit(Checked):
    """The writes in flight per core that best fit measured dispatch latencies (see
    :func:`fit_writes_in_flight`). Times in s, bandwidths in bytes/s; arrays read-only.

    ``q``: the fitted writes in flight; ``costs``: the given costs with that ``q``; ``kind``:
    the scheme fitted; ``eps``; ``target`` and ``model`` latencies per EP size; ``residual``:
    ``model / target - 1``; ``rms``: the root mean square of ``residual``; ``q_values`` and
    ``rms_by_q``: the scan; ``copies``: copies one rank sends (1,024 at 128 tokens, top-8);
    ``copy_bytes``: payload bytes of one INT8 copy in the model; ``wire_bytes``: the bytes its
    atomic blocks carry (15 blocks of 512 B = 7,680); ``target_bandwidth``: EP size ->
    measured bandwidth, for the targets that give one; ``jitter``: the mean per-op jitter (s)
    of the fitted medians (0: the jitter-free latency). Checked when built directly (1 to 8 EP
    sizes, latencies in [1 ns, 1 s], 1 to 64 scanned ``q``).
    """

    q: int = integer(lo=1, hi=4096)
    costs: CoreCosts = instance(CoreCosts)
    kind: str = choice(SCHEMES)
    eps: tuple = items(integer(lo=1, hi=MAX_RANKS), hi=8)
    target: np.ndarray = array(shape=("n",), lo=1e-9, hi=1.0)
    model: np.ndarray = array(shape=("n",), lo=1e-12, hi=_MAX_TIME)
    residual: np.ndarray = array(shape=("n",), lo=-1.0, hi=1e15)
    rms: float = real(lo=0.0, hi=1e15)
    q_values: np.ndarray = array("int", shape=("m",), lo=1, hi=4096, nonempty=True)
    rms_by_q: np.ndarray = array(shape=("m",), lo=0.0, hi=1e15)
    copies: int = integer(lo=1, hi=10**9)
    copy_bytes: int = integer(unit="bytes", lo=1, hi=10**9)
    wire_bytes: int = integer(unit="bytes", lo=1, hi=10**9)
    target_bandwidth: dict = mapping()
    jitter: float = real(lo=0.0, hi=1e-3, unit="s")

    def __post_init__(self):
        check_fields(self)
        if len(self.eps) != self.target.size:
            raise ValueError(f"eps must name one EP size per target latency; got {len(self.eps)} "
                             f"sizes and {self.target.size} latencies")
        for ep, b in self.target_bandwidth.items():
            if ep not in self.eps or not (isinstance(b, (int, float)) and 0 < b <= 1e15):
                raise ValueError(f"target_bandwidth must map EP sizes of eps to bandwidths in "
                                 f"(0, 1e15] bytes/s; got {_show(self.target_bandwidth)}")

    @property
    def model_bandwidth(self) -> np.ndarray:
        """Block bytes one rank writes over the model's latency (bytes/s)."""
        return self.copies * self.wire_bytes / self.model

    @property
    def payload_bandwidth(self) -> np.ndarray:
        """Payload bytes one rank sends over the model's latency (bytes/s)."""
        return self.copies * self.copy_bytes / self.model

    @property
    def target_copy_bytes(self) -> dict:
        """EP size -> bytes per copy the measured bandwidth and latency imply (bandwidth x
        latency / copies), for the targets that give a bandwidth."""
        lat = dict(zip(self.eps, self.target.tolist(), strict=True))
        return {ep: b * lat[ep] / self.copies for ep, b in self.target_bandwidth.items()}


def fit_writes_in_flight(targets: dict | None = None, *, kind: str = "baseline",
                         costs: CoreCosts | None = None, q_values=tuple(range(1, 33)),
                         tokens_per_rank: int = 128, seed: int = 0, jitter: float = 0.0,
                         runs: int = 200) -> WritesFit:
    """Fit :attr:`CoreCosts.writes_in_flight` to measured dispatch latencies.

    ``targets``: EP size (ranks = dies) -> latency (s) or (latency s, bandwidth bytes/s);
    default :data:`CLOUDMATRIX_DISPATCH`. For every ``q`` of ``q_values`` (integers 1..4096,
    at most 64 of them) the jitter-free dispatch of scheme ``kind`` (``"baseline"`` or
    ``"ubep"``, :func:`scheme`) with ``costs`` (default :class:`CoreCosts`) but that ``q`` is
    compared with each target on :func:`superpod_traffic` of that size (``tokens_per_rank``,
    top-8, ``seed``); the ``q`` with the smallest root mean square of ``model / target - 1``
    wins (ties: the smaller ``q``). The bandwidths are not fitted: at a fixed number of copies
    they are the latencies divided into bytes, so they add no second constraint; they are kept
    to compare bytes per copy (:attr:`WritesFit.target_copy_bytes`). At most 8 targets of EP
    1..1,024 with latencies in [1 ns, 1 s]. ``jitter`` > 0 (s, at most 1 ms) fits the median of
    ``runs`` (10..2,000) jittered runs (:func:`latency_samples`, exponential per-op delays of
    that mean, seed 1, the same draws for every ``q``) instead of the jitter-free latency: the
    reading in which the measured operator has that much per-op jitter.

    >>> fit = fit_writes_in_flight({8: 116e-6}, q_values=range(2, 9))
    >>> fit.q, bool(abs(fit.residual[0]) < 0.05)
    (6, True)
    """
    targets = CLOUDMATRIX_DISPATCH if targets is None else targets
    if not isinstance(targets, dict) or not 1 <= len(targets) <= 8:
        raise ValueError(f"targets must be a dict of 1 to 8 EP sizes -> latency (s); got "
                         f"{_show(targets)}")
    eps, lat, bw = [], [], {}
    for ep, v in targets.items():
        eps.append(check_int("targets (EP size)", ep, lo=1, hi=MAX_RANKS))
        pair = v if isinstance(v, (tuple, list)) else (v, math.nan)
        if len(pair) != 2:
            raise ValueError(f"targets[{ep}] must be a latency (s) or (latency s, bandwidth "
                             f"bytes/s); got {_show(v)}")
        lat.append(check_real(f"targets[{ep}] latency", pair[0], lo=1e-9, hi=1.0, unit="s"))
        b = pair[1]
        if not (isinstance(b, float) and math.isnan(b)):
            bw[eps[-1]] = check_real(f"targets[{ep}] bandwidth", b, lo=0.0, lo_open=True,
                                     hi=1e15, unit="bytes/s")
    kind = check_choice("kind", kind, SCHEMES)
    costs = CoreCosts() if costs is None else costs
    if not isinstance(costs, CoreCosts):
        raise ValueError(f"costs must be a CoreCosts; got {type(costs).__name__}")
    if (isinstance(q_values, (str, bytes, dict)) or not hasattr(q_values, "__iter__")
            or (hasattr(q_values, "__len__") and len(q_values) > 64)):
        raise ValueError(f"q_values must be 1 to 64 integers in 1..4096; got {_show(q_values)}")
    qs = as_float_array("q_values", list(q_values), ndim=1, lo=1, hi=4096)
    if not 1 <= qs.size <= 64 or not np.array_equal(qs, np.round(qs)):
        raise ValueError(f"q_values must be 1 to 64 integers in 1..4096; got {_show(q_values)}")
    qs = qs.astype(np.int64)
    tokens_per_rank = check_int("tokens_per_rank", tokens_per_rank, lo=1, hi=8192)
    jitter = check_real("jitter", jitter, lo=0.0, hi=1e-3, unit="s")
    runs = check_int("runs", runs, lo=10, hi=2000)
    traffic = [superpod_traffic(ep, tokens_per_rank=tokens_per_rank, seed=seed) for ep in eps]
    sch = scheme(kind)
    target = np.array(lat)

    def latency(t, q):
        plan = phase_plan(t, costs.with_(writes_in_flight=int(q)), sch)
        if jitter == 0:
            return phase_latency(plan)
        return float(np.median(latency_samples(plan, runs, jitter, seed=1)))

    models = np.array([[latency(t, q) for t in traffic] for q in qs])
    rms_by_q = np.sqrt(np.mean((models / target - 1.0) ** 2, axis=1))
    best = int(np.argmin(rms_by_q))  # argmin keeps the first, i.e. the smaller q on a tie
    model = models[best]
    residual = model / target - 1.0
    plan0 = phase_plan(traffic[0], costs, sch)
    arrays = [target, model, residual, qs, rms_by_q]
    for a in arrays:
        a.flags.writeable = False
    return WritesFit(q=int(qs[best]), costs=costs.with_(writes_in_flight=int(qs[best])),
                     kind=kind, eps=tuple(eps), target=target, model=model, residual=residual,
                     rms=float(rms_by_q[best]), q_values=qs, rms_by_q=rms_by_q,
                     copies=int(traffic[0].copies[0].sum()),
                     copy_bytes=int(traffic[0].dispatch_bytes),
                     wire_bytes=int(plan0.blocks * sch.block_bytes), target_bandwidth=bw,
                     jitter=jitter)
