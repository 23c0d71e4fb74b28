"""Expert parallelism: everything that moves a token to an expert, one module per mechanism.

* :mod:`~uneven.ep.routing` — which experts a token chooses: plain and node-limited top-k, the
  bias that balances them, seeded and counter-generated gate scores;
* :mod:`~uneven.ep.placement` — which GPU holds which expert: contiguous, EPLB, NIC-aware,
  replicas (and which replica serves a token: nearest or round robin), swaps over NVLink;
* :mod:`~uneven.ep.traffic` — dispatch and combine as GPU × GPU byte matrices;
* :mod:`~uneven.ep.model` — those phases timed on a topology (with the binding link named),
  DeepEP-style bandwidths, the DeepSeek-V3 step at cluster scale (replicated experts too), the
  decode bound;
* :mod:`~uneven.ep.transport` — decode-time copies per expert slot and per NIC, and what a
  transport costs besides bytes;
* :mod:`~uneven.ep.decode` — a decode MoE layer on the timeline engine: skew with drift,
  per-expert overlap, P99;
* :mod:`~uneven.ep.superpod` — EP inside a superpod: writes by hop class, core groups, barriers;
* :mod:`~uneven.ep.fabrics` — one dispatch on five fabrics; :mod:`~uneven.ep.roofline` — an
  expert GEMM's roofline and when it hides a transfer.

Every public name is re-exported here: ``from uneven.ep import ep_round, eplb_placement``.

**The vocabulary, once.** Every model here applies one *copy rule* (written once, in
``uneven/ep/_kernels.py``), described by two words:

*path* — how a copy reaches a target on another node (the ``mode`` argument):
  ``"relay"``: one network copy per remote node and token, sent to the GPU there with the
  sender's local index (same rail, same plane), which forwards it over NVLink to that node's
  other targets. DeepSeek-V3's training dispatch (DeepEP's normal kernels) and the same-index
  relay of *Balancing and Beyond* both work this way. The old word ``"dedup"`` still means this
  for one release (with a ``DeprecationWarning``).
  ``"direct"``: the sender sends every target its own copy, over the network when the target is
  on another node.
  On the sender's own node both paths use NVLink; the sender's own GPU costs nothing.

*unit* — what one copy serves:
  ``"gpu"``: one copy per distinct target GPU, which runs all its experts of the token on it
  (DeepEP's normal kernels); the default of :mod:`~uneven.ep.traffic` and :mod:`~uneven.ep.model`.
  ``"slot"``: one copy per chosen expert (slot), even two on one GPU, as DeepEP's low-latency
  kernels send (one message per token and top-k entry). :mod:`~uneven.ep.transport` and
  :mod:`~uneven.ep.decode` always count per slot; :func:`ep_dispatch_traffic` can (``unit=``).

The superpod model (:mod:`~uneven.ep.superpod`) has no network and no relay: one load/store
fabric, one copy per slot, its cost set by the hop class of each write (a rank's writes to
itself included). Its traffic type is :class:`SuperpodTraffic`, a rank × rank copy count; the
cluster type is :class:`EpTraffic`, GPU × GPU bytes on two link kinds.

>>> from uneven.ep import ep_dispatch_traffic
>>> relay = ep_dispatch_traffic([[0, 1, 2, 3]], [0], [0, 1, 2, 3], 2, 1.0, mode="relay")
>>> direct = ep_dispatch_traffic([[0, 1, 2, 3]], [0], [0, 1, 2, 3], 2, 1.0, mode="direct")
>>> relay.network_bytes, direct.network_bytes     # one copy to node 1, or one per GPU there
(1.0, 2.0)
"""

from .._moved import renamed_names
from ._checks import PATHS, UNITS
from .decode import (
    H20_DECODE,
    H800_DECODE,
    PLACEMENTS,
    RELAY_COSTS,
    DecodeHardware,
    DecodeRun,
    DecodeSetup,
    LayerResult,
    decode_layer,
    drifting_popularity,
    expert_bytes,
    isolated_phases,
    make_placement,
    matching_batch,
    relay_cost_for,
    sample_routing,
    simulate_decode,
)
from .fabrics import BOUND_NAMES, FAMILIES, FabricDispatch, dispatch_on_fabrics
from .model import (
    EpPhase,
    EpRound,
    EpRouting,
    EpStep,
    decode_tpot_bound,
    deepep_benchmark,
    ep_phase,
    ep_round,
    ep_step,
    fanout_per_token,
    min_node_cap,
    nvlink_fanout_limit,
    route_ep_group,
)
from .placement import (
    MAX_EXPERTS,
    MAX_LAYERS,
    MAX_SLOTS,
    REPLICA_RULES,
    Placement,
    SwapResult,
    balanced_packing,
    busiest_gpu_floor,
    contiguous_slots,
    eplb_placement,
    gpu_loads,
    host_loads,
    nic_aware_placement,
    nic_loads,
    nvlink_swaps,
    placement_from_phy2log,
    rebalance_experts,
    replica_table,
    replicate_experts,
    replicated_slots,
    route_to_slots,
    slot_loads,
)
from .roofline import (
    EXPERT_COSTS,
    MAX_TOKENS,
    ExpertCost,
    crossover_tokens,
    expert_time,
    roofline_hiding_ratio,
)
from .routing import (
    Routing,
    contiguous_placement,
    counter_gate_scores,
    expected_distinct_groups,
    expert_load,
    generated_route,
    load_ratio,
    node_limited_route,
    skew_for_load_ratio,
    synthetic_gate_scores,
    topk_route,
    update_bias,
)
from .superpod import (
    ASSIGNMENTS,
    CLOUDMATRIX_DISPATCH,
    CORE_OP_KINDS,
    MAX_RANKS,
    SCHEMES,
    SYNC_MODES,
    CoreCosts,
    CoreTimeline,
    DecodeSteps,
    PhasePlan,
    Scheme,
    SuperpodTraffic,
    WritesFit,
    best_split,
    blocks_per_copy,
    core_loads,
    core_timeline,
    core_write_time,
    decode_steps,
    die_superpod,
    fit_writes_in_flight,
    latency_samples,
    phase_latency,
    phase_plan,
    scheme,
    superpod_traffic,
    uniform_traffic,
)
from .traffic import (
    MODES,
    DeepEpBytes,
    EpTraffic,
    combine_bytes_per_token,
    deepep_logical_bytes,
    dispatch_bytes_per_token,
    ep_combine_traffic,
    ep_dispatch_traffic,
    local_buffer_writes,
)
from .transport import (
    SM_FREE,
    SM_RESIDENT,
    TRANSPORT_MODES,
    DecodeTraffic,
    Transport,
    decode_traffic,
    expected_remote_hosts,
    send_order,
)

__all__ = [
    # the vocabulary
    "PATHS", "UNITS", "MODES", "TRANSPORT_MODES",
    # routing
    "Routing", "topk_route", "node_limited_route", "update_bias", "expert_load", "load_ratio",
    "synthetic_gate_scores", "skew_for_load_ratio", "expected_distinct_groups",
    "contiguous_placement", "counter_gate_scores", "generated_route",
    # placement
    "Placement", "SwapResult", "balanced_packing", "replicate_experts", "rebalance_experts",
    "eplb_placement", "contiguous_slots", "nic_aware_placement", "placement_from_phy2log",
    "route_to_slots", "slot_loads", "gpu_loads", "nic_loads", "host_loads", "nvlink_swaps",
    "MAX_LAYERS", "MAX_EXPERTS", "MAX_SLOTS", "busiest_gpu_floor", "replicated_slots",
    "replica_table", "REPLICA_RULES",
    # traffic
    "EpTraffic", "DeepEpBytes", "ep_dispatch_traffic", "ep_combine_traffic",
    "deepep_logical_bytes", "local_buffer_writes", "dispatch_bytes_per_token",
    "combine_bytes_per_token",
    # model
    "EpPhase", "EpRouting", "EpRound", "EpStep", "ep_phase", "route_ep_group", "ep_round",
    "deepep_benchmark", "fanout_per_token", "decode_tpot_bound", "nvlink_fanout_limit",
    "min_node_cap", "ep_step",
    # transport
    "Transport", "SM_RESIDENT", "SM_FREE", "DecodeTraffic", "decode_traffic", "send_order",
    "expected_remote_hosts",
    # decode
    "DecodeHardware", "H20_DECODE", "H800_DECODE", "DecodeSetup", "LayerResult", "DecodeRun",
    "PLACEMENTS", "drifting_popularity", "sample_routing", "decode_layer", "make_placement",
    "simulate_decode", "expert_bytes", "isolated_phases", "RELAY_COSTS", "matching_batch",
    "relay_cost_for",
    # superpod
    "CoreCosts", "Scheme", "scheme", "SCHEMES", "SYNC_MODES", "ASSIGNMENTS", "CORE_OP_KINDS",
    "blocks_per_copy", "die_superpod", "SuperpodTraffic", "superpod_traffic", "uniform_traffic",
    "core_loads", "PhasePlan", "phase_plan", "phase_latency", "CoreTimeline", "core_timeline",
    "latency_samples", "DecodeSteps", "decode_steps", "best_split", "MAX_RANKS",
    "core_write_time", "CLOUDMATRIX_DISPATCH", "WritesFit", "fit_writes_in_flight",
    # fabrics and roofline
    "FabricDispatch", "dispatch_on_fabrics", "BOUND_NAMES", "FAMILIES",
    "ExpertCost", "EXPERT_COSTS", "expert_time", "crossover_tokens", "roofline_hiding_ratio",
    "MAX_TOKENS",
]

__getattr__ = renamed_names(__name__, {"deepep_sweep": "deepep_benchmark"})  # one release
