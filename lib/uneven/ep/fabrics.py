"""One EP dispatch on every topology family the library has, at equal bytes.

The chapter's papers answer "EP breaks the rail assumption" in two opposite ways. On a
**scale-out** fabric (NICs, rails or planes, leaf and spine switches) a token's network copy is
sent once per destination node to the GPU with the sender's own local index, which forwards it
over NVLink: the copy stays on its rail (DeepSeek-V3 on H800, notebook 03; the same-index relay of
Balancing and Beyond on H20, notebook 05). In a **scale-up** domain there are no rails: EP stays
inside one NVLink node (MegaScale-MoE, notebook 04) or inside a load/store superpod (UBEP,
notebook 06), where the bytes are cheap and latency and synchronisation set the time.

:func:`dispatch_on_fabrics` routes the same workload — every GPU (or die) holds the same number of
tokens, each sent to its top-``k`` of ``n_experts`` uniformly popular experts, every copy the same
FP8 payload — and times one dispatch on each family with the link-load engine (the busiest link's
bytes over its capacity, plus the longest path latency). For the superpod it also runs the
core-level model of :mod:`uneven.ep.superpod` (per-write latency by hop class, barriers),
because there the bytes are not what binds.

Units: seconds, bytes.

>>> rows = dispatch_on_fabrics(tokens_per_gpu=16)
>>> [r.bound for r in rows][:2]
['NIC', 'NIC']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fields import Checked, check_fields, choice, mapping, real, text
from .._validate import (
    _show,
    check_int,
    check_real,
    trusted,
)

__all__ = ["FabricDispatch", "dispatch_on_fabrics", "BOUND_NAMES", "FAMILIES"]

#: The two families of :class:`FabricDispatch`.
FAMILIES = ("scale-out", "scale-up")
_MAX_S = 1e15  # s: the longest time a row holds
_MAX_BYTES = 1e18  # bytes per rank a row may hold

#: Link kinds of :data:`uneven.topology.LINK_KINDS` grouped into the resource they belong to.
BOUND_NAMES = {"nvl_out": "NVLink", "nvl_in": "NVLink", "nic_up": "NIC", "nic_down": "NIC",
               "leaf_up": "spine", "leaf_down": "spine", "npu_out": "UB port",
               "npu_in": "UB port", "node_up": "UB node uplink", "node_down": "UB node uplink"}


@dataclass(frozen=True)
class FabricDispatch(Checked):
    """One dispatch on one topology family (times in s, bytes per GPU or die).

    ``family``: ``"scale-out"`` or ``"scale-up"``; ``name``: the setting; ``notebook``: where
    the library models it in depth; ``time`` = ``drain`` (the busiest link's bytes over its
    capacity) + ``latency`` (the longest path's); ``bound``: the resource of the busiest link;
    ``offered``: payload bytes each rank dispatches (the same on every row); ``network``: bytes
    per rank that cross a NIC (scale-out) or leave a node (superpod); ``core_model``: for the
    superpod, the core-level dispatch latency of the serialised baseline and of UBEP (s).
    Checked on construction: strings, one of :data:`FAMILIES`, times in [0, 1e15] s, bytes in
    [0, 1e18], ``core_model`` a dict of at most 16 names -> times.
    """

    family: str = choice(FAMILIES)
    name: str = text()
    notebook: str = text()
    time: float = real(lo=0.0, hi=_MAX_S, unit="s")
    drain: float = real(lo=0.0, hi=_MAX_S, unit="s")
    latency: float = real(lo=0.0, hi=_MAX_S, unit="s")
    bound: str = text()
    offered: float = real(lo=0.0, hi=_MAX_BYTES, unit="bytes")
    network: float = real(lo=0.0, hi=_MAX_BYTES, unit="bytes")
    core_model: dict = mapping(default_factory=dict)

    def __post_init__(self):
        check_fields(self)
        if len(self.core_model) > 16:
            raise ValueError(f"core_model must have at most 16 entries; got {len(self.core_model)}")
        for k, v in self.core_model.items():
            if not isinstance(k, str):
                raise ValueError(f"core_model keys must be strings; got {_show(k)}")
            self.core_model[k] = check_real(f"core_model[{k!r}]", v, lo=0.0, hi=_MAX_S, unit="s")


def _route(n_ranks, tokens, k, n_experts, seed):
    from .routing import contiguous_placement, synthetic_gate_scores, topk_route

    scores = synthetic_gate_scores(n_ranks * tokens, n_experts, 0.0, seed=seed)
    ids = topk_route(scores, k).expert_ids
    src = np.repeat(np.arange(n_ranks, dtype=np.int64), tokens)
    return ids, src, contiguous_placement(n_experts, n_ranks)


def dispatch_on_fabrics(*, tokens_per_gpu: int = 128, k: int = 8, n_experts: int = 256,
                        hidden: int = 7168, seed: int = 0) -> list:
    """Time one EP dispatch of ``tokens_per_gpu`` tokens per rank (top-``k`` of ``n_experts``,
    FP8 copies of ``hidden`` values) on each family; returns :class:`FabricDispatch` rows:

    1. 8 H800 nodes (one 400 Gb/s NIC per GPU, eight planes), one copy per expert GPU;
    2. the same with one copy per node through the same-index GPU (notebook 03);
    3. 8 H20 nodes (two GPUs share a NIC), one copy per expert GPU (DeepEP's default);
    4. the same with one copy per host through the same-index relay (notebook 05);
    5. one H800 node: EP8 over NVLink only (notebook 04);
    6. a CloudMatrix-like superpod, 64 dies (notebook 06): bytes on the UB links, and the
       core-level model's dispatch latency (serialised baseline and UBEP, 128 tokens per die
       unless ``tokens_per_gpu`` says otherwise; INT8 copies of 7,172 bytes there).

    Largest sizes: ``tokens_per_gpu <= 1024``, ``k <= 32``, ``n_experts <= 4096`` (a multiple
    of 64), ``hidden <= 65536``; ``seed`` in [0, 2**31).
    """
    from ..engines.linkload import link_loads_matrix
    from ..topology import LINK_KINDS, h20_cluster, h800_cluster
    from .superpod import CoreCosts, die_superpod, phase_latency, phase_plan, superpod_traffic
    from .superpod import scheme as core_scheme
    from .traffic import dispatch_bytes_per_token, ep_dispatch_traffic

    tokens = check_int("tokens_per_gpu", tokens_per_gpu, lo=1, hi=1024)
    k = check_int("k", k, lo=1, hi=32)
    n_experts = check_int("n_experts", n_experts, lo=64, hi=4096)
    if n_experts % 64:
        raise ValueError(f"n_experts must be a multiple of 64 (EP64); got {n_experts}")
    hidden = check_int("hidden", hidden, lo=128, hi=1 << 16)
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    copy = dispatch_bytes_per_token(hidden, "fp8")
    offered = tokens * k * copy
    cases = [
        ("scale-out", "8 H800 nodes, one copy per expert GPU", "03", h800_cluster(8), 8,
         "direct"),
        ("scale-out", "8 H800 nodes, one copy per node via the same-index GPU", "03",
         h800_cluster(8), 8, "relay"),
        ("scale-out", "8 H20 nodes (2 GPUs per NIC), one copy per expert GPU", "05",
         h20_cluster(8), 8, "direct"),
        ("scale-out", "8 H20 nodes, one copy per host via the same-index relay", "05",
         h20_cluster(8), 8, "relay"),
        ("scale-up", "one H800 node: EP8 over NVLink", "04", h800_cluster(1), 8, "direct"),
        ("scale-up", "superpod, 64 dies on the UB fabric", "06", die_superpod(4), 16, "direct"),
    ]
    rows = []
    for family, name, nb, topo, gpn, mode in cases:
        ids, src, owner = _route(topo.n_gpus, tokens, k, n_experts, seed)
        tr = ep_dispatch_traffic(ids, src, owner, gpn, copy, mode=mode, n_gpus=topo.n_gpus)
        loads = link_loads_matrix(topo, tr.network + tr.nvlink)
        link, _, drain = loads.bottleneck()
        extra = {}
        if topo.kind == "superpod":
            traffic = superpod_traffic(64, tokens_per_rank=tokens, k=k, n_experts=n_experts,
                                       hidden=hidden, seed=seed)
            extra = {label: phase_latency(phase_plan(traffic, CoreCosts(), core_scheme(kind)))
                     for label, kind in (("serialised baseline", "baseline"), ("UBEP", "ubep"))}
        rows.append(trusted(
            FabricDispatch, family=family, name=name, notebook=nb, time=float(loads.time()),
            drain=float(drain), latency=float(loads.max_latency),
            bound=BOUND_NAMES[LINK_KINDS[int(topo.link_kind[link])]], offered=float(offered),
            network=float(tr.network.sum()) / topo.n_gpus, core_model=extra))
    return rows
