"""Expert-parallel dispatch and combine on a topology: routing → bytes → time.

This module joins three pieces: routing (:mod:`uneven.ep.routing`), the byte matrices of
dispatch and combine (:mod:`uneven.ep.traffic`), and the link-load engine. One EP phase is timed
with the bottleneck model, the IB copies and the NVLink forwards of the relay scheme
counted in the same phase: DeepEP pipelines them in chunks, so the slower of the two resources
sets the pace. Every timed result names what binds as the link loads find it: ``bound_kind``
(the busiest link's kind, a :data:`uneven.topology.LINK_KINDS` name such as ``'nic_up'`` or
``'leaf_up'``), ``bound`` (its resource, :data:`uneven.ep.BOUND_NAMES`: 'NVLink', 'NIC', 'spine'
for a leaf's uplinks, 'UB port', 'UB node uplink'; or 'forwarding') and ``drain_by_kind`` (the
busiest link's drain time of every kind, s).

**Replicated experts.** :func:`route_ep_group` and :func:`ep_step` take ``replicas`` (one count
for every expert, or one per expert; laid out by :func:`uneven.ep.placement.replicated_slots`)
or a ``placement`` (:class:`uneven.ep.placement.Placement`: EPLB's ``phy2log`` / ``log2phy`` /
``logcnt``, e.g. from :func:`uneven.ep.placement.eplb_placement`). Each chosen expert of a token
is served by one replica, picked by ``replica_rule`` (:data:`uneven.ep.placement.REPLICA_RULES`):
``"nearest"`` by default (own GPU, then own node, then own leaf switch group, then anywhere; ties
go round robin by source GPU on the own node, by source node beyond it, so that one rail's tokens
do not all go to one copy), so 256 experts x 2 replicas run on 512 GPUs, and a token whose expert
has a replica on its own node sends nothing over the NIC for it. The copy rule then counts copies
to the chosen slots' GPUs exactly as without replicas.

Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from numba import carray

from .._fields import (
    Checked,
    any_value,
    array,
    check_fields,
    choice,
    instance,
    integer,
    optional,
    real,
)
from .._jit import njit
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_int,
    check_real,
)
from ..engines.linkload import LinkLoads, link_loads, link_loads_matrix
from ..limits import check_bytes, check_steps
from ..topology import LINK_KINDS, Topology, h800_cluster
from ._checks import bytes_per_token, check_path, check_slot_fill, replica_counts
from ._kernels import (
    _add_copies,
    _bias_transposed,
    _counter_args,
    _gen_top2,
    _mark_token,
    _route_8x32,
    _route_generated,
    _stack_ptr,
    _transposed,
)
from .fabrics import BOUND_NAMES
from .placement import REPLICA_RULES, Placement, replica_table, replicated_slots
from .routing import node_limited_route, synthetic_gate_scores
from .traffic import EpTraffic, ep_dispatch_traffic, local_buffer_writes

__all__ = [
    "EpPhase",
    "EpRouting",
    "EpRound",
    "ep_phase",
    "route_ep_group",
    "ep_round",
    "deepep_benchmark",
    "fanout_per_token",
    "decode_tpot_bound",
    "nvlink_fanout_limit",
    "min_node_cap",
    "EpStep",
    "ep_step",
]

_NIC_KINDS = [LINK_KINDS.index(k) for k in ("nic_up", "nic_down", "leaf_up", "leaf_down")]
_NVL_KINDS = [LINK_KINDS.index(k) for k in ("nvl_out", "nvl_in")]
# What a phase's ``bound`` can say: a link resource, or the forwarders' buffer writes.
_PHASE_BOUNDS = (*dict.fromkeys(BOUND_NAMES.values()), "forwarding")


@dataclass(frozen=True)
class EpPhase(Checked):
    """One dispatch or combine phase: total ``time`` (s), the busiest network-side (NIC, leaf)
    and NVLink-side drain times (s), the busiest forwarder's write time (s; 0 unless local
    buffer writes are counted), what binds, the per-link ``loads`` and the ``efficiency`` they
    were timed with (None, a number or a dict per link kind, as :meth:`LinkLoads.time`).

    ``bound``: the resource of the busiest link (:data:`uneven.ep.BOUND_NAMES`: 'NVLink', 'NIC',
    'spine', 'UB port', 'UB node uplink'), or 'forwarding' when the forwarders' writes take
    longer than every link. :attr:`bound_kind` and :attr:`drain_by_kind` come from ``loads``
    and ``efficiency``, so they always say what the link loads say.
    """

    time: float = real(lo=0.0, unit="s")
    nic_time: float = real(lo=0.0, unit="s")
    nvlink_time: float = real(lo=0.0, unit="s")
    bound: str = choice(_PHASE_BOUNDS)
    loads: LinkLoads = instance(LinkLoads, repr=False)
    forward_time: float = real(lo=0.0, unit="s", default=0.0)
    efficiency: object = any_value(default=None, repr=False)

    def __post_init__(self):
        check_fields(self)
        self.loads.topo.scaled_capacity(self.efficiency)  # a bad efficiency fails here, named

    @property
    def bound_kind(self) -> str:
        """The kind of the busiest link (:meth:`LinkLoads.bottleneck_kind`: 'nic_up', 'leaf_up',
        'nvl_in', 'npu_out', ...); it names the busiest link even when ``bound`` is
        'forwarding'."""
        return self.loads.bottleneck_kind(self.efficiency)

    @property
    def drain_by_kind(self) -> dict:
        """The busiest link's drain time of each link kind of the topology (s, efficiency
        applied; :meth:`LinkLoads.drain_by_kind`): its largest value is the busiest link's."""
        return self.loads.drain_by_kind(self.efficiency)


def _maps_agree(r) -> bool:
    """Whether an :class:`EpRouting`'s placement fits its GPUs and experts (``expert_gpu`` the
    GPU of each expert's first replica) and its ``slot_ids`` (required with replicas) hold the
    expert of the same choice."""
    p = r.placement
    if (p.n_gpus, p.gpus_per_node) != (r.n_nodes * r.gpus_per_node, r.gpus_per_node) or not (
            np.array_equal(r.expert_gpu, p.slot_gpu[p.log2phy[:, 0]])):
        return False
    if r.slot_ids is None:
        return bool(p.logcnt.max() == 1)
    return bool(np.array_equal(p.phy2log[r.slot_ids], r.expert_ids))


@dataclass(frozen=True)
class EpRouting(Checked):
    """Tokens routed in one EP group: chosen (logical) experts ``expert_ids [T, k]``, each
    token's GPU ``src_gpu [T]``, and ``expert_gpu [n_experts]``: the GPU of each expert's first
    replica (its only one without replicas).

    ``placement`` (:class:`uneven.ep.placement.Placement` on the group's GPUs, or None): the
    slots, replicas included; ``slot_ids [T, k]`` (or None when no expert has a second replica):
    the slot that serves each choice, chosen by the routing's replica rule. :attr:`targets` is
    what the copy rule reads. Checked when made: ids in range, the maps consistent (each slot
    holds its choice's expert, ``expert_gpu`` the first replicas' GPUs).
    """

    expert_ids: np.ndarray = array("int", ndim=2, lo=0, repr=False)
    src_gpu: np.ndarray = array("int", shape=lambda r: (r.expert_ids.shape[0],), lo=0,
                                hi=lambda r: r.n_nodes * r.gpus_per_node - 1, repr=False)
    expert_gpu: np.ndarray = array("int", ndim=1, nonempty=True, lo=0,
                                   hi=lambda r: r.n_nodes * r.gpus_per_node - 1, repr=False)
    n_nodes: int = integer(lo=1)
    gpus_per_node: int = integer(lo=1)
    placement: Placement = optional(instance(Placement), default=None, repr=False)
    slot_ids: np.ndarray = optional(array(
        "int", shape=lambda r: r.expert_ids.shape, lo=0,
        hi=lambda r: (0 if r.placement is None else r.placement.n_slots) - 1), default=None,
        repr=False)
    check_first = ("n_nodes", "gpus_per_node")

    def __post_init__(self):
        check_fields(self)
        if self.expert_ids.size and self.expert_ids.max() >= self.expert_gpu.size:
            raise ValueError(f"expert_ids must be expert ids < {self.expert_gpu.size}; got up to "
                             f"{self.expert_ids.max()}")
        if self.placement is not None and not _maps_agree(self):
            raise ValueError("placement must fit the routing's GPUs, experts and slot_ids")

    @property
    def targets(self) -> tuple:
        """``(ids, gpu)``: what each choice is sent to and the GPU of each id — the slots and
        ``placement.slot_gpu`` with replicas, else ``expert_ids`` and ``expert_gpu``: the
        ``expert_ids`` and ``expert_gpu`` of :func:`uneven.ep.traffic.ep_dispatch_traffic`."""
        if self.slot_ids is None:
            return self.expert_ids, self.expert_gpu
        return self.slot_ids, self.placement.slot_gpu


@dataclass(frozen=True)
class EpRound(Checked):
    """Dispatch and combine of one routed batch, with DeepEP-style bandwidths per GPU.

    ``logical_bytes_per_gpu`` / ``network_bytes_per_gpu`` (bytes, dispatch): DeepEP's "RDMA" bytes
    (every destination node counted, the sender's own included) and the bytes that really leave
    through the NIC, averaged over GPUs. ``logical_bw`` / ``true_bw`` (bytes/s) divide them by the
    dispatch time; ``combine_logical_bw`` / ``combine_true_bw`` do the same for combine with its
    payload (0 when a phase takes no time: every copy already on its GPU). Averages over GPUs
    divided by the phase time, which under skew is lower than what the busiest rank would
    report for itself.
    """

    dispatch: EpPhase = instance(EpPhase)
    combine: EpPhase = instance(EpPhase)
    dispatch_traffic: EpTraffic = instance(EpTraffic, repr=False)
    logical_bytes_per_gpu: float = real(lo=0.0, unit="bytes")
    network_bytes_per_gpu: float = real(lo=0.0, unit="bytes")
    logical_bw: float = real(lo=0.0, unit="bytes/s")
    true_bw: float = real(lo=0.0, unit="bytes/s")
    combine_logical_bw: float = real(lo=0.0, unit="bytes/s")
    combine_true_bw: float = real(lo=0.0, unit="bytes/s")


def ep_phase(topo: Topology, traffic: EpTraffic, efficiency=None,
             local_writes=None) -> EpPhase:
    """Time one EP phase on ``topo``: network copies and NVLink copies as one bottleneck phase.

    ``efficiency`` is passed to :meth:`LinkLoads.time` (a number or a dict per link kind).
    ``local_writes`` (bytes per GPU, e.g. :func:`uneven.ep.traffic.local_buffer_writes`): if
    given, each GPU's buffer writes — its NVLink sends plus these local copies — are also timed at
    its NVLink port's rate, a model of DeepEP's forwarder warps, which make both kinds of write.
    """
    check_instance("topo", topo, Topology, "from uneven.topology")
    if not isinstance(traffic, EpTraffic):
        raise ValueError(f"traffic must be an EpTraffic; got {type(traffic).__name__}")
    if traffic.n_gpus != topo.n_gpus or traffic.gpus_per_node != topo.gpus_per_node:
        raise ValueError(
            f"traffic has {traffic.n_gpus} GPUs in nodes of {traffic.gpus_per_node} but topo has "
            f"{topo.n_gpus} in nodes of {topo.gpus_per_node}; build them alike"
        )
    loads = link_loads_matrix(topo, traffic.network + traffic.nvlink)
    per_link = loads.seconds_per_link(efficiency)
    nic = float(per_link[np.isin(topo.link_kind, _NIC_KINDS)].max(initial=0.0))
    nvl = float(per_link[np.isin(topo.link_kind, _NVL_KINDS)].max(initial=0.0))
    time = loads.time(efficiency)
    fwd = 0.0
    if local_writes is not None:
        if topo.kind != "cluster":
            raise ValueError("local_writes applies to a cluster's NVLink ports; topo is a "
                             f"{topo.kind}")
        extra = as_float_array("local_writes", local_writes, shape=(topo.n_gpus,), lo=0.0,
                               unit="bytes")
        out = LINK_KINDS.index("nvl_out")
        ports = np.flatnonzero(topo.link_kind == out)  # one per GPU, in GPU order
        writes = loads.bytes[ports] + extra
        with np.errstate(over="ignore"):
            fwd = float((writes / topo.capacity[ports] / _kind_efficiency(efficiency, "nvl_out"))
                        .max(initial=0.0))
        if not math.isfinite(fwd):
            raise ValueError("local_writes are too large for the NVLink ports: the forwarding "
                             "time is beyond the range of a float")
        time = max(time, fwd + loads.max_latency)
    # what binds, exactly as the link loads find it (ties: the lowest link id)
    link = int(np.argmax(per_link))
    bound = ("forwarding" if fwd > float(per_link[link])
             else BOUND_NAMES[LINK_KINDS[int(topo.link_kind[link])]])
    eff = dict(efficiency) if isinstance(efficiency, dict) else efficiency
    return EpPhase(time, nic, nvl, bound, loads, fwd, eff)


def _kind_efficiency(efficiency, kind: str) -> float:
    if efficiency is None:
        return 1.0
    if isinstance(efficiency, dict):
        return float(efficiency.get(kind, 1.0))
    return float(efficiency)


def _layout(n_experts, n_gpus, g, replicas, placement, n_groups, max_nodes, k, replica_rule,
            size_word, cluster_gpus=None) -> SimpleNamespace:
    """The expert layout of one EP group of ``n_gpus`` GPUs (``g`` per node), checked: its
    :class:`Placement` (from ``placement``, else ``replicas`` laid out by
    :func:`replicated_slots`), the node-limited routing groups and groups kept per token, ``k``
    and the replica rule. Errors name the caller's parameters; an impossible layout says why and
    what would work (``size_word`` names the group size, ``cluster_gpus`` what it must divide)."""
    replica_rule = check_choice("replica_rule", replica_rule, REPLICA_RULES)
    nodes = n_gpus // g
    if placement is not None:
        p = check_instance("placement", placement, Placement,
                           "from uneven.ep.placement, e.g. eplb_placement(...)")
        if not (isinstance(replicas, (int, np.integer)) and not isinstance(replicas, bool)
                and replicas == 1):
            raise ValueError(f"replicas must be 1 (the default) when a placement is given, which "
                             f"holds its own replicas; got {_show(replicas)}")
        if (p.n_gpus, p.gpus_per_node) != (n_gpus, g):
            raise ValueError(f"placement must hold the {n_gpus} GPUs of one EP group, {g} per "
                             f"node; got {p.n_gpus} GPUs, {p.gpus_per_node} per node")
        if p.n_experts != n_experts:
            raise ValueError(f"n_experts must be the placement's expert count {p.n_experts}; "
                             f"got {n_experts}")
    else:
        counts = replica_counts(replicas, n_experts)
        name = "n_experts" if counts.max() == 1 else "replicas"
        check_slot_fill(name, n_experts, counts, n_gpus, g, size_word, cluster_gpus)
        p = replicated_slots(n_experts, n_gpus, counts, gpus_per_node=g, gpus_per_nic=1)
    if n_groups is None:  # one routing group per node of one copy of the experts
        r = int(p.logcnt.min())
        n_groups = nodes // r if nodes % r == 0 else 0
        if n_groups == 0 or n_experts % n_groups:
            raise ValueError(
                f"n_groups must be given (a divisor of n_experts={n_experts}): the default, one "
                f"routing group per node of one copy of the experts ({nodes} nodes / {r} "
                f"replicas), is not a whole divisor")
    n_groups = check_int("n_groups", n_groups, lo=1, hi=n_experts)
    if n_experts % n_groups:
        raise ValueError(f"n_groups must divide n_experts ({n_experts}); got {n_groups}")
    max_groups = min(check_int("max_nodes", max_nodes, lo=1), n_groups)
    k = check_int("k", k, lo=1, hi=max_groups * (n_experts // n_groups))
    return SimpleNamespace(placement=p, n_groups=n_groups, max_groups=max_groups, k=k,
                           rule=replica_rule, replicated=bool(p.logcnt.max() > 1))


def route_ep_group(
    n_nodes: int,
    tokens_per_gpu: int,
    *,
    n_experts: int = 256,
    k: int = 8,
    max_nodes: int = 4,
    gpus_per_node: int = 8,
    skew: float = 0.0,
    seed: int = 0,
    replicas=1,
    placement=None,
    n_groups=None,
    replica_rule: str = "nearest",
    nodes_per_leaf=None,
) -> EpRouting:
    """Route ``tokens_per_gpu`` tokens on every GPU of an EP group of ``n_nodes`` nodes.

    Experts are placed contiguously (one group of experts per node, as in DeepSeek-V3's EP64
    training and DeepEP's tests), routing is node-limited with groups = nodes and at most
    ``max_nodes`` nodes per token (capped at ``n_nodes``), on seeded synthetic gate scores
    (:func:`uneven.ep.routing.synthetic_gate_scores`; ``skew`` makes some experts
    popular). Scores are generated per GPU so memory stays small for large groups.

    Replicas: ``replicas`` (an int for every expert, or one count per expert) lays out
    ``sum(replicas)`` slots with :func:`uneven.ep.placement.replicated_slots` (``r`` equal
    replicas: ``r`` copies of the contiguous layout side by side); ``placement`` takes any
    :class:`uneven.ep.placement.Placement` instead (EPLB's maps). The slots must fill the GPUs
    evenly, at least one per GPU. ``n_groups`` (routing groups of consecutive experts; default:
    one per node of one copy, ``n_nodes / min(replicas)``) and ``max_nodes`` (groups kept per
    token) set the node-limited routing; each choice then goes to the replica that
    ``replica_rule`` picks (``"nearest"``: own GPU, own node, own leaf group of
    ``nodes_per_leaf`` nodes if given, then any; ties round-robin by source GPU on the own
    node, by source node beyond it;
    ``"round_robin"``: replica ``src mod logcnt``). With ``replicas=1`` the result is what it
    was without these arguments, bit for bit.

    Size: the routed ids (``8 k`` bytes per token, twice with replicas), one GPU's scores and
    the replica table (``n_gpus x n_experts``) within the memory budget of :mod:`uneven.limits`;
    ``tokens x n_experts`` routing steps within its work budget (2e9 by default: e.g. 64 GPUs x
    4096 tokens x 256 experts x 2).

    >>> r = route_ep_group(2, 4, seed=0)
    >>> r.expert_ids.shape, r.expert_gpu.size
    ((64, 8), 256)
    >>> two = route_ep_group(64, 1, replicas=2)   # 256 experts x 2 on 512 GPUs
    >>> two.placement.n_slots, two.slot_ids.shape
    (512, (512, 8))
    """
    n_nodes = check_int("n_nodes", n_nodes, lo=1)
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1)
    g = check_int("gpus_per_node", gpus_per_node, lo=1)
    n_gpus = n_nodes * g
    n_experts = check_int("n_experts", n_experts, lo=1)
    check_bytes("n_experts", n_experts, 8.0 * 6 * n_experts, "the expert placement")
    lay = _layout(n_experts, n_gpus, g, replicas, placement, n_groups, max_nodes, k,
                  replica_rule, "n_nodes")
    k, p = lay.k, lay.placement
    seed = check_int("seed", seed, lo=0)
    skew = check_real("skew", skew, lo=0.0)
    tokens = n_gpus * tokens_per_gpu
    check_bytes("tokens_per_gpu", tokens_per_gpu, 8.0 * tokens * (2 * k + 1)
                + 40.0 * tokens_per_gpu * n_experts, f"routing {tokens:,} tokens")
    check_steps("tokens_per_gpu", tokens_per_gpu, 2.0 * tokens * n_experts,
                f"routing {tokens:,} tokens over {n_experts} experts")
    table = None
    if lay.replicated:
        table = replica_table(p, rule=lay.rule, nodes_per_leaf=nodes_per_leaf)
    elif nodes_per_leaf is not None:
        check_int("nodes_per_leaf", nodes_per_leaf, lo=1)
    # One independent score stream per GPU; all GPUs share the experts' popularity (``seed``).
    gpu_seeds = np.random.SeedSequence(seed).generate_state(n_gpus, dtype=np.uint32)
    ids = np.empty((n_gpus * tokens_per_gpu, k), dtype=np.int64)
    for gpu in range(n_gpus):
        scores = synthetic_gate_scores(tokens_per_gpu, n_experts, skew, int(gpu_seeds[gpu]),
                                       popularity_seed=seed)
        rows = slice(gpu * tokens_per_gpu, (gpu + 1) * tokens_per_gpu)
        ids[rows] = node_limited_route(scores, k, n_groups=lay.n_groups,
                                       max_groups=lay.max_groups)[0]
    src = np.repeat(np.arange(n_gpus, dtype=np.int64), tokens_per_gpu)
    slots = None if table is None else table[src[:, None], ids]
    first = p.slot_gpu[p.log2phy[:, 0]]
    return EpRouting(ids, src, first, n_nodes, g, p, slots)


def ep_round(
    topo: Topology,
    routing: EpRouting,
    *,
    hidden: int = 7168,
    dispatch_dtype="fp8",
    combine_dtype="bf16",
    mode: str = "relay",
    efficiency=None,
    count_local_writes: bool = False,
) -> EpRound:
    """Dispatch then combine ``routing`` on ``topo`` and time both phases.

    ``hidden`` values per token; ``dispatch_dtype`` / ``combine_dtype`` as in
    :func:`uneven.ep.traffic.dispatch_bytes_per_token`; ``mode`` 'relay' (one network copy per
    remote node, NVLink forwarding) or 'direct'; ``efficiency`` scales link capacities (a number
    or a dict per link kind). Combine is dispatch reversed with the combine payload, so its byte
    matrices are the dispatch ones transposed and rescaled (one aggregation pass, not two).
    ``count_local_writes`` (relay only): also time each forwarder's writes into its own receive
    buffer (see :func:`ep_phase`); DeepEP's kernels make them, and its test's "NVL" bytes count
    them.

    >>> r = ep_round(h800_cluster(2), route_ep_group(2, 64, seed=1))
    >>> r.dispatch.bound, round(r.logical_bytes_per_gpu / r.network_bytes_per_gpu, 1)
    ('NVLink', 2.0)
    """
    if not isinstance(routing, EpRouting):
        raise ValueError(f"routing must be an EpRouting; got {type(routing).__name__}")
    if not isinstance(topo, Topology):
        raise ValueError(f"topo must be a Topology; got {type(topo).__name__}")
    if (routing.n_nodes, routing.gpus_per_node) != (topo.n_nodes, topo.gpus_per_node):
        raise ValueError(
            f"routing was made for {routing.n_nodes} nodes of {routing.gpus_per_node} GPUs but "
            f"topo has {topo.n_nodes} nodes of {topo.gpus_per_node}; build them alike"
        )
    mode = check_path(mode)
    bd = bytes_per_token(hidden, dispatch_dtype, "dispatch_dtype")
    bc = bytes_per_token(hidden, combine_dtype, "combine_dtype")
    ids, gpu_of = routing.targets  # the chosen slots with replicas, else the experts
    args = (ids, routing.src_gpu, gpu_of, routing.gpus_per_node)
    disp_t = ep_dispatch_traffic(*args, bd, mode=mode, n_gpus=topo.n_gpus)
    scale = bc / bd
    comb_t = EpTraffic(
        np.ascontiguousarray(disp_t.network.T) * scale,
        np.ascontiguousarray(disp_t.nvlink.T) * scale,
        disp_t.nodes_per_token, disp_t.remote_nodes_per_token, disp_t.gpus_per_token, mode,
        "combine", disp_t.gpus_per_node, bc,
    )
    local = None
    if check_bool("count_local_writes", count_local_writes) and mode == "relay":
        local = local_buffer_writes(*args, bd, n_gpus=topo.n_gpus)
    disp = ep_phase(topo, disp_t, efficiency, local)
    comb = ep_phase(topo, comb_t, efficiency, None if local is None else local * scale)
    # DeepEP's definition counts every destination node, own node included; the NIC sees the rest.
    n = topo.n_gpus
    log_gpu = float(disp_t.nodes_per_token.sum()) * bd / n
    net_gpu = float(disp_t.remote_nodes_per_token.sum()) * bd / n
    def rate(nbytes, seconds):  # nothing to move (every copy on its own GPU): no rate
        return nbytes / seconds if seconds > 0.0 else 0.0

    return EpRound(
        disp, comb, disp_t, log_gpu, net_gpu, rate(log_gpu, disp.time), rate(net_gpu, disp.time),
        rate(log_gpu * scale, comb.time), rate(net_gpu * scale, comb.time),
    )


def deepep_benchmark(
    ep_sizes=(16, 32, 64, 128),
    *,
    tokens_per_gpu: int = 4096,
    hidden: int = 7168,
    k: int = 8,
    max_nodes: int = 4,
    skew: float = 0.0,
    seed: int = 0,
    efficiency=None,
    topology=h800_cluster,
    count_local_writes: bool = False,
) -> list[dict]:
    """DeepEP's internode benchmark as a model: one row per EP size (a multiple of 8).

    Each row: ``ep``, ``dispatch_logical_GBps``, ``dispatch_true_GBps``,
    ``combine_logical_GBps``, ``combine_true_GBps``, ``dispatch_bound``, ``combine_bound`` (and
    the busiest link's kind, ``dispatch_bound_kind``, ``combine_bound_kind``), the times (s),
    and ``nvl_writes_per_token`` (NVLink buffer writes per token as DeepEP's test counts them,
    the forwarder's writes to itself included) beside ``nvlink_copies_per_token`` (the copies
    that cross NVLink). ``topology(n_nodes)`` builds the cluster (default: the H800
    preset); ``count_local_writes`` as in :func:`ep_round`. ``ep_sizes``: a list of at most 64
    sizes; the routing of each must fit the budgets of :func:`route_ep_group`.

    >>> rows = deepep_benchmark([16], tokens_per_gpu=16)
    >>> rows[0]["ep"], rows[0]["dispatch_bound"]
    (16, 'NVLink')
    """
    check_callable("topology", topology, "n_nodes -> Topology")
    if isinstance(ep_sizes, (str, bytes)) or not isinstance(ep_sizes, (list, tuple, np.ndarray)):
        raise ValueError(f"ep_sizes must be a list of EP sizes (multiples of 8); "
                         f"got {_show(ep_sizes)}")
    sizes = as_int_array("ep_sizes", ep_sizes, ndim=1, lo=16)
    if sizes.size > 64:
        raise ValueError(f"ep_sizes must list at most 64 sizes; got {sizes.size}")
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1)
    check_steps("ep_sizes", ep_sizes, 2.0 * float(sizes.sum()) * tokens_per_gpu * 256,
                "routing every EP size")
    rows = []
    for ep in sizes.tolist():
        if ep % 8:
            raise ValueError(f"ep_sizes must be multiples of 8 (whole nodes); got {ep}")
        nodes = ep // 8
        routing = route_ep_group(nodes, tokens_per_gpu, k=k, max_nodes=max_nodes, skew=skew,
                                 seed=seed)
        try:
            topo = topology(nodes)
        except Exception as err:  # the caller's callable: say which argument failed
            raise ValueError(f"topology({nodes}) failed: {type(err).__name__}: {err}") from err
        check_instance("topology(n_nodes)", topo, Topology, "the topology callable's result")
        r = ep_round(topo, routing, hidden=hidden, efficiency=efficiency,
                     count_local_writes=count_local_writes)
        T = routing.expert_ids.shape[0]
        bd = r.dispatch_traffic.bytes_per_copy
        local = local_buffer_writes(routing.expert_ids, routing.src_gpu, routing.expert_gpu,
                                    routing.gpus_per_node, 1.0, n_gpus=nodes * 8).sum()
        rows.append({
            "ep": ep,
            "dispatch_logical_GBps": r.logical_bw / 1e9,
            "dispatch_true_GBps": r.true_bw / 1e9,
            "combine_logical_GBps": r.combine_logical_bw / 1e9,
            "combine_true_GBps": r.combine_true_bw / 1e9,
            "dispatch_bound": r.dispatch.bound,
            "combine_bound": r.combine.bound,
            "dispatch_bound_kind": r.dispatch.bound_kind,
            "combine_bound_kind": r.combine.bound_kind,
            "dispatch_s": r.dispatch.time,
            "combine_s": r.combine.time,
            "nvlink_copies_per_token": r.dispatch_traffic.nvlink_bytes / bd / T,
            "nvl_writes_per_token": r.dispatch_traffic.nvlink_bytes / bd / T + local / T,
        })
    return rows


def fanout_per_token(
    max_nodes: int,
    k: int,
    *,
    n_nodes: int = 8,
    n_experts: int = 256,
    gpus_per_node: int = 8,
    n_tokens: int = 8192,
    seed: int = 0,
) -> dict:
    """Per-token copies of the relay dispatch, averaged over tokens.

    Tokens start on GPUs spread evenly over the group; returns ``ib_copies`` (copies that cross
    the network), ``nvlink_copies`` (forwards plus same-node sends), ``own_node_sends`` (the
    same-node sends: NVLink, no NIC), ``nvl_writes`` (one NVLink-buffer write per distinct target
    GPU, a forwarder's write to itself included, as DeepEP's kernels make them), ``nodes``
    (distinct nodes),
    ``experts_per_node`` (k / nodes) and ``target_gpus_per_node`` (distinct target GPUs per
    node reached). ``n_tokens`` is rounded down to a multiple of the GPU count (at least one
    token per GPU). Sizes as in :func:`route_ep_group`.
    """
    n_nodes = check_int("n_nodes", n_nodes, lo=1)
    gpus_per_node = check_int("gpus_per_node", gpus_per_node, lo=1)
    max_nodes = check_int("max_nodes", max_nodes, lo=1, hi=n_nodes)
    n_tokens = check_int("n_tokens", n_tokens, lo=1)
    n_gpus = n_nodes * gpus_per_node
    tokens_per_gpu = max(1, n_tokens // n_gpus)
    routing = route_ep_group(n_nodes, tokens_per_gpu, n_experts=n_experts, k=k,
                             max_nodes=max_nodes, gpus_per_node=gpus_per_node, seed=seed)
    t = ep_dispatch_traffic(routing.expert_ids, routing.src_gpu, routing.expert_gpu,
                            gpus_per_node, 1.0, mode="relay", n_gpus=n_gpus)
    T = routing.expert_ids.shape[0]
    nodes = t.nodes_per_token.mean()
    # per token: its distinct target GPUs, and those on its own node other than its source
    gpu = routing.expert_gpu[routing.expert_ids]  # (T, k)
    srt = np.sort(gpu, axis=1)
    distinct = np.concatenate([np.ones((T, 1), bool), srt[:, 1:] != srt[:, :-1]], axis=1)
    src = routing.src_gpu[:, None]
    own = distinct & (srt // gpus_per_node == src // gpus_per_node) & (srt != src)
    return {
        "ib_copies": t.network_bytes / T,
        "nvlink_copies": t.nvlink_bytes / T,
        "own_node_sends": float(own.sum() / T),
        "nvl_writes": float(distinct.sum() / T),
        "nodes": float(nodes),
        "experts_per_node": k / float(nodes),
        "target_gpus_per_node": float(t.gpus_per_token.mean() / nodes),
    }


def decode_tpot_bound(
    bandwidth: float,
    *,
    tokens: int = 32,
    experts_per_token: int = 9,
    hidden: int = 7000,
    dispatch_bytes_per_value: float = 1.0,
    combine_bytes_per_value: float = 2.0,
    layers: int = 61,
    microbatches: int = 2,
    latency_per_exchange: float = 0.0,
) -> float:
    """Lower bound on time per output token (s) when EP communication alone sets the pace.

    The DeepSeek-V3 ISCA paper's argument (§2.3.2): one dispatch + combine moves
    (1 B + 2 B) x tokens x experts x hidden bytes through a GPU's link of ``bandwidth`` bytes/s;
    with two micro-batches overlapping compute, each layer pays two such rounds; 61 layers.
    ``latency_per_exchange`` (s) adds a fixed cost per dispatch and per combine.

    >>> round(decode_tpot_bound(50e9) * 1e3, 2)     # 50 GB/s of scale-out bandwidth
    14.76
    """
    bandwidth = check_real("bandwidth", bandwidth, lo=0.0, lo_open=True, unit="bytes/s")
    tokens = check_int("tokens", tokens, lo=1)
    experts = check_int("experts_per_token", experts_per_token, lo=1)
    hidden = check_int("hidden", hidden, lo=1)
    bd = check_real("dispatch_bytes_per_value", dispatch_bytes_per_value, lo=0.0, lo_open=True)
    bc = check_real("combine_bytes_per_value", combine_bytes_per_value, lo=0.0, lo_open=True)
    layers = check_int("layers", layers, lo=1)
    mb = check_int("microbatches", microbatches, lo=1)
    lat = check_real("latency_per_exchange", latency_per_exchange, lo=0.0, unit="s")
    with np.errstate(over="ignore"):
        per_round = float(np.float64(bd + bc) * tokens * experts * hidden / bandwidth + 2 * lat)
        out = float(np.float64(layers) * mb * per_round)
    if not math.isfinite(out):
        raise ValueError("bandwidth, tokens, experts_per_token, hidden, layers and microbatches "
                         "give a time beyond the range of a float")
    return out


def nvlink_fanout_limit(nvlink_bw: float, nic_bw: float) -> float:
    """Largest number of NVLink copies per IB copy that keeps NVLink off the critical path.

    While one IB copy drains through the NIC in B / nic_bw seconds, the forwarder can push
    nvlink_bw / nic_bw copies of the same size over NVLink (DeepSeek-V3: 160 / 50 = 3.2).

    >>> nvlink_fanout_limit(160e9, 50e9)
    3.2
    """
    nvlink_bw = check_real("nvlink_bw", nvlink_bw, lo=0.0, lo_open=True, unit="bytes/s")
    nic_bw = check_real("nic_bw", nic_bw, lo=0.0, lo_open=True, unit="bytes/s")
    out = nvlink_bw / nic_bw
    if not (math.isfinite(out) and out > 0.0):
        raise ValueError(f"nvlink_bw / nic_bw must be a finite ratio > 0; got {nvlink_bw:.3g} / "
                         f"{nic_bw:.3g}")
    return out


def min_node_cap(k: int, fanout_limit: float) -> int:
    """Smallest node cap M for which ``k`` experts per token, spread evenly over M nodes, keep
    each node's NVLink fan-out at or below ``fanout_limit`` copies per IB copy: ceil(k / limit).

    >>> min_node_cap(8, 3.2), min_node_cap(13, 3.2)
    (3, 5)
    """
    k = check_int("k", k, lo=1)
    fanout_limit = check_real("fanout_limit", fanout_limit, lo=0.0, lo_open=True)
    nodes = k / fanout_limit
    if not nodes < 2.0**62:
        raise ValueError(f"k / fanout_limit must be below 2**62 nodes; got {k} / "
                         f"{fanout_limit:.3g}")
    return max(1, int(np.ceil(nodes - 1e-12)))


# --------------------------------------------------------------------------------------------
# one training step's dispatch over a whole cluster


@dataclass(frozen=True, eq=False)
class EpStep(Checked):
    """The dispatch of one MoE layer over a whole cluster, from :func:`ep_step`.

    ``network`` / ``nvlink``: float64 ``[n_groups, ep, ep]``, dispatch bytes inside each EP group
    (GPU ids local to the group; group ``q`` holds GPUs ``q ep ... q ep + ep - 1``).
    ``expert_load``: int64 ``[n_groups, n_experts]``, tokens routed to each expert of each group.
    ``nodes_per_token``, ``remote_nodes_per_token``, ``gpus_per_token``: averages over tokens.
    ``loads``: the dispatch's :class:`LinkLoads` on the whole cluster; ``time`` (s): its phase
    time (bottleneck model, as :func:`ep_phase` without forwarding); ``bytes_per_copy`` (bytes).
    ``placement``: the expert slots of every EP group (GPU ids local to the group, replicas
    included); ``slot_load``: int64 ``[n_groups, n_slots]``, tokens served by each slot
    (``expert_load`` sums them per expert). :attr:`bound`, :attr:`bound_kind` and
    :attr:`drain_by_kind` name what binds, as for :class:`EpPhase`.
    Arrays are read-only; everything is checked when made.
    """

    n_gpus: int = integer(lo=1)
    ep: int = integer(lo=1)
    tokens_per_gpu: int = integer(lo=1)
    k: int = integer(lo=1)
    network: np.ndarray = array(shape=lambda s: (s.n_gpus // s.ep, s.ep, s.ep), lo=0.0,
                                repr=False)
    nvlink: np.ndarray = array(shape=lambda s: (s.n_gpus // s.ep, s.ep, s.ep), lo=0.0,
                               repr=False)
    expert_load: np.ndarray = array("int", shape=lambda s: (s.n_gpus // s.ep, None), lo=0,
                                    repr=False)
    nodes_per_token: float = real(lo=0.0)
    remote_nodes_per_token: float = real(lo=0.0)
    gpus_per_token: float = real(lo=0.0)
    loads: LinkLoads = instance(LinkLoads, repr=False)
    time: float = real(lo=0.0, unit="s")
    bytes_per_copy: float = real(lo=0.0, unit="bytes")
    placement: Placement = optional(instance(Placement), default=None, repr=False)
    slot_load: np.ndarray = optional(array("int", shape=lambda s: (
        s.n_gpus // s.ep, 0 if s.placement is None else s.placement.n_slots), lo=0),
        default=None, repr=False)

    def __post_init__(self):
        if check_int("n_gpus", self.n_gpus, lo=1) % check_int("ep", self.ep, lo=1):
            raise ValueError(f"ep must divide n_gpus ({self.n_gpus}); got {self.ep}")
        check_fields(self)
        if 0.0 < self.bytes_per_copy < 2.0**-10:  # copies = bytes / bytes_per_copy stays finite
            raise ValueError("bytes_per_copy must be 0 or at least 2**-10 bytes; got "
                             f"{self.bytes_per_copy!r}")

    @property
    def bound_kind(self) -> str:
        """The kind of the busiest link (:meth:`LinkLoads.bottleneck_kind`, e.g. 'nic_up')."""
        return self.loads.bottleneck_kind()

    @property
    def bound(self) -> str:
        """The busiest link's resource (:data:`uneven.ep.BOUND_NAMES`: 'NIC', 'spine', ...)."""
        return BOUND_NAMES[self.bound_kind]

    @property
    def drain_by_kind(self) -> dict:
        """The busiest link's drain time of each link kind (s; :meth:`LinkLoads.drain_by_kind`)."""
        return self.loads.drain_by_kind()

    @property
    def network_copies_per_token(self) -> float:
        """Copies that cross the network per token (unitless)."""
        return self._copies(self.network)

    @property
    def nvlink_copies_per_token(self) -> float:
        """Copies that cross NVLink per token (unitless)."""
        return self._copies(self.nvlink)

    def _copies(self, matrix) -> float:
        if self.bytes_per_copy == 0.0:
            return 0.0
        return float(matrix.sum()) / self.bytes_per_copy / (self.n_gpus * self.tokens_per_gpu)


def ep_step(
    n_gpus: int,
    tokens_per_gpu: int = 4096,
    *,
    ep: int = 64,
    gpus_per_node: int = 8,
    n_experts: int = 256,
    k: int = 8,
    max_nodes: int = 4,
    skew: float = 0.0,
    seed: int = 0,
    bias=None,
    hidden: int = 7168,
    dispatch_dtype="fp8",
    mode: str = "relay",
    topology=h800_cluster,
    threads: int = 1,
    replicas=1,
    placement=None,
    n_groups=None,
    replica_rule: str = "nearest",
) -> EpStep:
    """One DeepSeek-V3-style MoE dispatch over ``n_gpus`` GPUs: generate, route, count, time.

    The cluster is cut into EP groups of ``ep`` GPUs (``ep / gpus_per_node`` nodes, experts
    placed contiguously, ``n_experts / ep`` per GPU). Every GPU holds ``tokens_per_gpu`` tokens;
    token ``t`` (numbered GPU by GPU over the cluster) has the gate scores of
    :func:`uneven.ep.routing.counter_gate_scores` (``skew``, ``seed``), is routed by
    node-limited top-``k`` with the group's nodes as groups and at most ``max_nodes`` of them
    (``bias`` float ``[n_experts]`` steers selection), and its dispatch copies are counted at
    once (``mode`` 'relay' or 'direct', as :func:`uneven.ep.traffic.ep_dispatch_traffic`). One
    compiled pass per token: no score or id matrix is ever stored, so 2,048 GPUs x 4,096 tokens
    (8.4M tokens) need a few MB. The byte matrices then go through the link-load engine on
    ``topology(n_gpus // gpus_per_node)`` (default :func:`uneven.topology.h800_cluster`).
    ``threads`` (1-64) run the GPUs in parallel (the kernel releases the GIL); the result does
    not depend on it. Identical to routing each GPU's tokens with
    :func:`uneven.ep.routing.generated_route` (``first_token = gpu * tokens_per_gpu``)
    and counting them with :func:`uneven.ep.traffic.ep_dispatch_traffic` (tests).

    Replicas, as in :func:`route_ep_group`: ``replicas`` (an int, or a count per expert) or a
    ``placement`` of one EP group (GPU ids local to the group), the same in every group; the
    slots must fill the group's GPUs evenly. ``n_groups``: routing groups (default one per node
    of one copy, ``ep / gpus_per_node / min(replicas)``), ``max_nodes`` of them kept per token.
    Each choice goes to the slot that ``replica_rule`` picks (``"nearest"`` counts the
    topology's leaf groups, ``nodes_per_leaf`` of the cluster's nodes each): the same as mapping
    the routed ids through :func:`uneven.ep.placement.replica_table` of the group (with
    ``first_node`` = the group's first node) before counting. ``replicas=1`` gives today's
    result bit for bit.

    Size: ``n_gpus x tokens_per_gpu x n_experts`` steps within the work budget of
    :mod:`uneven.limits` (the DeepSeek-V3 step, 2.1e9, needs ``UNEVEN_MAX_STEPS`` raised); the
    per-group matrices (``16 ep^2 + 8 (n_slots + n_experts)`` bytes per group per thread) and the
    replica tables within its memory
    budget.

    >>> st = ep_step(32, 64, ep=16)
    >>> st.network.shape, round(st.nodes_per_token, 2), st.time > 0
    ((2, 16, 16), 1.99, True)
    >>> two = ep_step(512, 2, ep=512, replicas=2)     # 256 experts x 2 replicas on 512 GPUs
    >>> two.slot_load.shape, two.bound_kind, two.drain_by_kind["leaf_up"]  # each leaf group
    ((1, 512), 'nic_down', 0.0)
    """
    a = _step_args(n_gpus, tokens_per_gpu, ep, gpus_per_node, n_experts, k, max_nodes, skew,
                   seed, bias, hidden, dispatch_dtype, mode, topology, threads, replicas,
                   placement, n_groups, replica_rule)
    network, nvlink, slot_load, stats = _count_step(a)
    load = _expert_loads(slot_load, a.placement)
    network *= a.bd
    nvlink *= a.bd
    # flows: every nonzero entry of the group matrices, on the whole cluster
    both = network + nvlink
    grp, i, j = np.nonzero(both)
    loads = link_loads(a.topo, grp * a.ep + i, grp * a.ep + j, both[grp, i, j])
    tokens = a.n_gpus * a.tokens_per_gpu
    return EpStep(a.n_gpus, a.ep, a.tokens_per_gpu, a.k, network, nvlink, load, stats[0] / tokens,
                  stats[1] / tokens, stats[2] / tokens, loads, loads.time(), a.bd, a.placement,
                  slot_load)


def _expert_loads(slot_load, p: Placement) -> np.ndarray:
    """Tokens per expert of each group: the sum over the expert's slots."""
    if p.logcnt.max() == 1 and np.array_equal(p.phy2log, np.arange(p.n_slots)):
        return slot_load
    out = np.zeros((slot_load.shape[0], p.n_experts), dtype=np.int64)
    np.add.at(out.T, p.phy2log, slot_load.T)
    return out


def _slot_tables(a, topo):
    """The slot each source GPU uses for each expert: ``table [rows, n_experts]`` (slot ids local
    to the group) and ``row_of [n_gpus]`` (each GPU's row). Without replicas one row (each
    expert's only slot); with them one row per GPU of the group and per distinct way the group's
    nodes fall into leaf switch groups (usually one)."""
    p = a.placement
    if not a.replicated:
        return (np.ascontiguousarray(p.log2phy[:, 0][None, :]),
                np.zeros(a.n_gpus, dtype=np.int64))
    npl = topo.nodes_per_leaf if a.rule == "nearest" else None
    first = np.arange(a.groups, dtype=np.int64) * a.nodes_ep
    if npl is None:
        reps, pattern = first[:1], np.zeros(a.groups, dtype=np.int64)
    else:
        leaf = (first[:, None] + np.arange(a.nodes_ep)) // npl
        _, idx, pattern = np.unique(leaf - leaf[:, :1], axis=0, return_index=True,
                                    return_inverse=True)
        reps = first[idx]
    table = np.concatenate([replica_table(p, rule=a.rule, nodes_per_leaf=npl,
                                          first_node=int(f)) for f in reps])
    gpu = np.arange(a.n_gpus, dtype=np.int64)
    return table, pattern.reshape(-1)[gpu // a.ep] * a.ep + gpu % a.ep


def _step_args(n_gpus, tokens_per_gpu, ep, gpus_per_node, n_experts, k, max_nodes, skew, seed,
               bias, hidden, dispatch_dtype, mode, topology, threads, replicas=1,
               placement=None, n_groups=None, replica_rule="nearest") -> SimpleNamespace:
    """:func:`ep_step`'s arguments checked (and its budgets), with the kernel's inputs: the
    counter key and odds, the bias in the kernel's order, the topology built, the expert
    layout and the replica tables."""
    n_gpus = check_int("n_gpus", n_gpus, lo=1)
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1)
    g = check_int("gpus_per_node", gpus_per_node, lo=1)
    ep = check_int("ep", ep, lo=g)
    if ep % g:
        raise ValueError(f"ep must be a multiple of gpus_per_node ({g}); got {ep}")
    if n_gpus % ep:
        raise ValueError(f"n_gpus must be a multiple of ep ({ep}); got {n_gpus}")
    n_experts = check_int("n_experts", n_experts, lo=1)
    check_bytes("n_experts", n_experts, 8.0 * 8 * n_experts, "the expert placement")
    nodes_ep = ep // g
    lay = _layout(n_experts, ep, g, replicas, placement, n_groups, max_nodes, k, replica_rule,
                  "ep", n_gpus)
    k, p = lay.k, lay.placement
    mode = check_path(mode)
    threads = check_int("threads", threads, lo=1, hi=64)
    check_callable("topology", topology, "n_nodes -> Topology")
    bd = bytes_per_token(hidden, dispatch_dtype, "dispatch_dtype")
    groups = n_gpus // ep
    tokens = n_gpus * tokens_per_gpu
    check_bytes("n_gpus", n_gpus, 8.0 * groups * (2 * ep * ep + p.n_slots + n_experts)
                * (threads + 2) + 48.0 * groups * ep * ep + 64.0 * n_experts,
                f"per-group byte matrices of {groups:,} EP groups")
    check_steps("tokens_per_gpu", tokens_per_gpu, float(tokens) * n_experts,
                f"generating and routing {tokens:,} tokens over {n_experts} experts")
    n_experts, key, _, w32, skew_on = _counter_args(n_experts, skew, seed, 0, None, tokens)
    biast = _bias_transposed(bias, n_experts, lay.n_groups)
    w32t = _transposed(w32, lay.n_groups, np.float32)
    try:
        topo = topology(n_gpus // g)
    except Exception as err:  # the caller's callable: say which argument failed
        raise ValueError(f"topology({n_gpus // g}) failed: {type(err).__name__}: {err}") from err
    check_instance("topology(n_nodes)", topo, Topology, "the topology callable's result")
    if topo.n_gpus != n_gpus or topo.gpus_per_node != g:
        raise ValueError(f"topology({n_gpus // g}) must have {n_gpus} GPUs in nodes of {g}; got "
                         f"{topo.n_gpus} in nodes of {topo.gpus_per_node}")
    a = SimpleNamespace(n_gpus=n_gpus, tokens_per_gpu=tokens_per_gpu, g=g, ep=ep,
                        n_experts=n_experts, nodes_ep=nodes_ep, n_groups=lay.n_groups,
                        max_groups=lay.max_groups, k=k, relay=mode == "relay", threads=threads,
                        bd=bd, groups=groups, key=key, skew_on=skew_on,
                        has_bias=bias is not None, biast=biast, w32t=w32t, topo=topo,
                        placement=p, replicated=lay.replicated, rule=lay.rule)
    a.table, a.row_of = _slot_tables(a, topo)
    return a


def _count_step(a):
    """Run the generate-route-count kernel over every GPU, on ``a.threads`` threads (each on its
    own GPUs and matrices, summed after); returns copy counts ``network``, ``nvlink``
    ``[groups, ep, ep]``, the slot loads ``[groups, n_slots]`` and the (nodes, remote nodes,
    GPUs) sums."""
    ep, g = a.ep, a.g
    n_slots = a.placement.n_slots
    network = np.zeros((a.groups, ep, ep))
    nvlink = np.zeros((a.groups, ep, ep))
    load = np.zeros((a.groups, n_slots), dtype=np.int64)
    stats = np.zeros(3, dtype=np.int64)
    cuts = np.linspace(0, a.n_gpus, min(a.threads, a.n_gpus) + 1).round().astype(np.int64)
    slot_gpu = np.ascontiguousarray(a.placement.slot_gpu)
    gpu_ids = np.arange(ep, dtype=np.int64)

    def part(lo, hi, net, nvl, ld, st):
        _generated_step_kernel(
            a.key, np.int64(lo), np.int64(hi), np.int64(lo // ep), np.int64(a.tokens_per_gpu),
            np.int64(ep), np.int64(g), np.int64(a.n_experts), np.int64(a.n_groups),
            np.int64(a.max_groups), np.int64(a.k), a.w32t, a.skew_on, a.has_bias, a.biast,
            a.relay, a.table, a.row_of, slot_gpu, gpu_ids // g,
            np.arange(0, ep, g, dtype=np.int64), gpu_ids % g, net, nvl, ld, st)

    if cuts.size == 2:
        part(0, a.n_gpus, network, nvlink, load, stats)
        return network, nvlink, load, stats
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        g_lo, g_hi = lo // ep, (hi - 1) // ep + 1
        n_g = g_hi - g_lo
        jobs.append((lo, hi, g_lo, np.zeros((n_g, ep, ep)), np.zeros((n_g, ep, ep)),
                     np.zeros((n_g, n_slots), dtype=np.int64), np.zeros(3, np.int64)))
    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(lambda j: part(j[0], j[1], j[3], j[4], j[5], j[6]), jobs))
    for _, _, g_lo, net, nvl, ld, st in jobs:
        n_g = net.shape[0]
        network[g_lo:g_lo + n_g] += net
        nvlink[g_lo:g_lo + n_g] += nvl
        load[g_lo:g_lo + n_g] += ld
        stats += st
    return network, nvlink, load, stats


@njit(inline="always")
def _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, n_experts,
               n_groups, max_groups, k, w32t, skew_on, has_bias, biast, relay, slot_table,
               row_of, slot_gpu, gpu_node, node_first_gpu, gpu_local, network, nvlink, load,
               stats, fast, scratch):
    """The body of :func:`_generated_step_kernel` on the scratch arrays it is given (a tuple:
    fewer than 30 arguments, or CPython passes them as ``*args``, which numba cannot inline).
    Each token is generated, routed, its experts mapped to the slots its GPU uses (its row of
    ``slot_table``) and its copies counted (:func:`uneven.ep._kernels._mark_token`) in cache;
    each source GPU's counts go on the links once, after its tokens
    (:func:`uneven.ep._kernels._add_copies`)."""
    (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank, rank16,
     gpu_stamp, node_stamp, gpu_cnt, node_cnt, slots) = scratch
    gsize = n_experts // n_groups
    n_pairs = (n_experts + 1) // 2
    n_nodes_sum = 0
    remote_sum = 0
    gpus_sum = 0
    stamp = 0
    for gpu in range(gpu_lo, gpu_hi):
        grp = gpu // ep - group_lo
        s = gpu % ep
        row = slot_table[row_of[gpu]]
        gpu_cnt[:] = 0
        node_cnt[:] = 0
        t0 = gpu * tokens_per_gpu
        for t in range(t0, t0 + tokens_per_gpu):
            _gen_top2(key, t, n_pairs, gsize, n_groups, w32t, skew_on, has_bias, biast, buf, top,
                      sec, hi_s, lo_s)
            if fast:
                _route_8x32(buf, top, sec, max_groups, k, gscore, rank, kept, tops, cand,
                            cval, order, rank16)
            else:
                _route_generated(buf, top, sec, gsize, n_groups, max_groups, k, gscore, kept,
                                 tops, cand, cval, order, False)
            for j in range(k):  # the replica (slot) this GPU's tokens use for each expert
                slots[j] = row[order[j]]
            stamp += 1
            n_n, n_r, n_g = _mark_token(stamp, s, slots, k, slot_gpu, False, gpu_node,
                                        gpu_stamp, node_stamp, gpu_cnt, node_cnt, load[grp])
            n_nodes_sum += n_n
            remote_sum += n_r
            gpus_sum += n_g
        _add_copies(s, gpu_cnt, node_cnt, relay, gpu_node, node_first_gpu, gpu_local,
                    network[grp], nvlink[grp])
    stats[0] += n_nodes_sum
    stats[1] += remote_sum
    stats[2] += gpus_sum


@njit(nogil=True)
def _step_kernel_8x32(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                      max_groups, k, w32t, skew_on, has_bias, biast, relay, slot_table, row_of,
                      slot_gpu, gpu_node, node_first_gpu, gpu_local, network, nvlink, load,
                      stats):
    """:func:`_generated_step_kernel` for 256 experts in 8 groups, its scratch on the stack."""
    dt = biast.dtype
    buf = carray(_stack_ptr(256, dt), 256)
    top = carray(_stack_ptr(8, dt), 8)
    sec = carray(_stack_ptr(8, dt), 8)
    hi_s = carray(_stack_ptr(128, dt), 128)
    lo_s = carray(_stack_ptr(128, dt), 128)
    gscore = carray(_stack_ptr(8, np.float64), 8)
    kept = carray(_stack_ptr(8, np.int64), 8)
    tops = carray(_stack_ptr(256, dt), 256)
    cand = carray(_stack_ptr(256, np.int64), 256)
    cval = carray(_stack_ptr(256, dt), 256)
    order = carray(_stack_ptr(256, np.int64), 256)
    rank = carray(_stack_ptr(8, np.int64), 8)
    rank16 = carray(_stack_ptr(16, np.int32), 16)
    slots = carray(_stack_ptr(256, np.int64), 256)
    gpu_stamp = np.zeros(ep, dtype=np.int64)
    node_stamp = np.zeros(ep // gpus_per_node, dtype=np.int64)
    gpu_cnt = np.empty(ep, dtype=np.int64)
    node_cnt = np.empty(ep // gpus_per_node, dtype=np.int64)
    _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, 256, 8,
               max_groups, k, w32t, skew_on, has_bias, biast, relay, slot_table, row_of,
               slot_gpu, gpu_node, node_first_gpu, gpu_local, network, nvlink, load, stats, True,
               (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank,
                rank16, gpu_stamp, node_stamp, gpu_cnt, node_cnt, slots))


@njit(nogil=True)
def _generated_step_kernel(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                           n_experts, n_groups, max_groups, k, w32t, skew_on, has_bias, biast,
                           relay, slot_table, row_of, slot_gpu, gpu_node, node_first_gpu,
                           gpu_local, network, nvlink, load, stats):
    """Dispatch copy counts of the tokens of GPUs ``[gpu_lo, gpu_hi)``, each token's gate
    scores generated (counter-based, as ``counter_gate_scores``) and node-limited-routed in cache
    (``n_groups`` groups of consecutive experts, ``max_groups`` kept), its copies counted at
    once: no score matrix, no id matrix. ``network``/``nvlink`` ``[groups, ep, ep]`` and
    ``load`` ``[groups, n_slots]`` (tokens per slot) are indexed by EP group minus
    ``group_lo``, GPUs by their index inside the group. A token of GPU ``g`` sends its copy for
    expert ``e`` to slot ``slot_table[row_of[g], e]`` on GPU ``slot_gpu[slot]`` (without
    replicas one row: each expert's only slot). ``stats`` += (nodes, remote nodes, GPUs) summed
    over tokens. The node and local index of a GPU come from lookup tables (``gpu_node``,
    ``node_first_gpu``, ``gpu_local``): an integer division per copy would cost more than the
    routing. 256 experts in 8 groups (DeepSeek-V3) run :func:`_step_kernel_8x32`."""
    if n_experts == 256 and n_groups == 8:
        _step_kernel_8x32(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                          max_groups, k, w32t, skew_on, has_bias, biast, relay, slot_table,
                          row_of, slot_gpu, gpu_node, node_first_gpu, gpu_local, network,
                          nvlink, load, stats)
        return
    n_tops = 2 * max(max_groups, (k + 1) // 2)
    dt = biast.dtype
    n_nodes = ep // gpus_per_node
    buf = np.empty(n_experts, dtype=dt)
    top = np.empty(n_groups, dtype=dt)
    sec = np.empty(n_groups, dtype=dt)
    hi_s = np.empty(128, dtype=dt)
    lo_s = np.empty(128, dtype=dt)
    gscore = np.empty(n_groups)
    kept = np.empty(n_groups, dtype=np.int64)
    tops = np.empty(n_tops)
    cand = np.empty(n_experts, dtype=np.int64)
    cval = np.empty(n_experts, dtype=dt)
    order = np.empty(n_experts, dtype=np.int64)
    rank = np.empty(n_groups, dtype=np.int64)
    rank16 = np.empty(16, dtype=np.int32)
    slots = np.empty(k, dtype=np.int64)
    gpu_stamp = np.zeros(ep, dtype=np.int64)
    node_stamp = np.zeros(n_nodes, dtype=np.int64)
    gpu_cnt = np.empty(ep, dtype=np.int64)
    node_cnt = np.empty(n_nodes, dtype=np.int64)
    _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, n_experts,
               n_groups, max_groups, k, w32t, skew_on, has_bias, biast, relay, slot_table,
               row_of, slot_gpu, gpu_node, node_first_gpu, gpu_local, network, nvlink, load,
               stats, False,
               (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank,
                rank16, gpu_stamp, node_stamp, gpu_cnt, node_cnt, slots))


# DeepEP's benchmark was called deepep_sweep, easy to confuse with uneven.grid_sweep (one release)
__getattr__ = renamed_names(__name__, {"deepep_sweep": "deepep_benchmark"})
