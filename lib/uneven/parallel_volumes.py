"""Per-layer communication volume of tensor, sequence and expert parallelism in an MoE layer.

One transformer layer of a mixture-of-experts (MoE) model: attention, then a routed FFN of
SwiGLU experts. A group of ``n`` GPUs shares the layer in one of these ways:

=================== =========================================================================
attention ``"tp"``  Megatron tensor parallelism with sequence parallelism: all-gather the
                    ``[b, s, h]`` tokens before the QKV GEMM, reduce-scatter after the output
                    projection (an all-reduce without sequence parallelism moves the same bytes)
attention ``"sp"``  Ulysses-style sequence parallelism: weights replicated, each GPU holds
                    ``s/n`` tokens; an all-to-all turns sequence shards of Q, K, V into head
                    shards before attention, another turns the output back
FFN ``"tp"``        every expert split over the ``n`` GPUs: all-gather, GEMMs, reduce-scatter
FFN ``"ep"``        expert parallelism: each token's ``k`` copies travel to the GPUs holding its
                    experts (dispatch all-to-all) and back (combine)
FFN ``"ep_agrs"``   EP built from ring collectives, MegaScale-MoE's choice when ``k > n``:
                    all-gather the tokens, pick locally, GEMMs, then reduce-scatter
=================== =========================================================================

**Volume** is what one GPU *sends* in one layer's forward pass, in values (multiply by the bytes
per value), under uniform routing. With ``b`` micro-batch, ``s`` sequence length, ``h`` hidden
size, ``m`` query heads per KV head and ``k`` experts per token:

* TP (attention or FFN): two ring collectives of ``bsh`` values, ``2·bsh·(n-1)/n``
  (MegaScale-MoE's Eq. 1 and Eq. 4);
* EP: ``b·s/n`` tokens per GPU, ``k`` copies each, a share ``(n-1)/n`` of them to other GPUs,
  there and back: ``2k·bsh·(n-1)/n²`` (Eq. 3);
* EP from AG + RS: the same two ring collectives as TP, ``2·bsh·(n-1)/n``;
* SP, **derived from the tensor shapes**: before attention a GPU holds Q ``[b, s/n, h]`` and K, V
  ``[b, s/n, h/m]`` and keeps ``1/n`` of them; after attention it holds ``[b, s, h/n]`` and keeps
  ``1/n`` of it. So it sends ``(1 + 2/m)·bsh(n-1)/n² + bsh(n-1)/n² = (2 + 2/m)·bsh(n-1)/n²``.
  The paper prints Eq. 2 as ``2bsh(n-1)/n · (2 + 2/m)/n``, twice this; the same accounting that
  gives Eq. 1 and Eq. 3 exactly gives half of Eq. 2, so this module uses the derived form by
  default (``formula="paper"`` gives the printed one). Then SP/TP = ``(1 + 1/m)/n``: 0.156 at
  m = 4, n = 8.

Units: volumes in values (elements), bytes, seconds, bytes/s.

>>> shape = INTERNAL_352B
>>> v = layer_volume(shape, 8, attention="sp", ffn="ep")
>>> round(v.attention / 1e6, 2), round(v.ffn / 1e6, 2)   # MB per GPU per layer, BF16
(18.35, 44.04)
>>> comm_volume(shape, 8, "attention", "sp") / comm_volume(shape, 8, "attention", "tp")
0.15625
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._fields import Checked, check_fields, choice, integer, real, text
from ._validate import (
    check_callable,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)

__all__ = [
    "MoeShape",
    "INTERNAL_352B",
    "MIXTRAL_8X7B",
    "DEEPSEEK_V3",
    "ATTENTION_STRATEGIES",
    "FFN_STRATEGIES",
    "comm_volume",
    "LayerVolume",
    "layer_volume",
    "inter_node_fraction",
    "collective_time",
    "ep_crossover_k",
    "group_comm_times",
    "A2A_EFFICIENCY",
]

ATTENTION_STRATEGIES = ("tp", "sp")
FFN_STRATEGIES = ("tp", "ep", "ep_agrs")

#: All-to-all bandwidth as a share of what a ring collective achieves on the same links. The
#: value is chosen so that AG/RS beats the all-to-all from k > 6 at n = 8, where MegaScale-MoE's
#: Fig. 7 puts the crossover for Mixtral-8x7B [paper]; it is a fit, not a measurement [derived].
A2A_EFFICIENCY = 0.75

# Largest sizes accepted (guards against absurd inputs from sliders or typos).
_MAX_N = 16384
_MAX_DIM = 10**6
_MAX_SEQ = 10**8
#: Largest bytes per value accepted (FP64 is 8; room for packed formats with metadata).
_MAX_BYTES_PER_VALUE = 1024.0


@dataclass(frozen=True)
class MoeShape(Checked):
    """The shapes of one MoE transformer layer and the micro-batch it processes.

    ``hidden`` h; ``heads`` query heads and ``kv_heads`` key/value heads (m = heads / kv_heads);
    ``ffn_hidden`` h_ffn, the intermediate size of one SwiGLU expert; ``n_experts`` routed
    experts, ``top_k`` k of them per token; ``seq_len`` s and ``micro_batch`` b; ``layers`` and
    ``vocab`` for whole-model counts. ``sources`` says where the numbers come from.
    Sizes are integers (bools refused): every dimension up to 10**6, ``seq_len`` and ``vocab``
    up to 10**8; ``kv_heads`` must divide ``heads`` and ``top_k`` is at most ``n_experts``.

    >>> toy = MoeShape("toy", hidden=64, heads=8, kv_heads=2, ffn_hidden=256, n_experts=8,
    ...                top_k=2, seq_len=128)
    >>> toy.m, toy.f, toy.tokens, toy.expert_params()
    (4.0, 4.0, 128, 49152.0)
    """

    name: str = text(max_len=200)
    hidden: int = integer(lo=1, hi=_MAX_DIM)
    heads: int = integer(lo=1, hi=_MAX_DIM)
    kv_heads: int = integer(lo=1, hi="heads")
    ffn_hidden: int = integer(lo=1, hi=_MAX_DIM)
    n_experts: int = integer(lo=1, hi=_MAX_DIM)
    top_k: int = integer(lo=1, hi="n_experts")
    seq_len: int = integer(lo=1, hi=_MAX_SEQ)
    micro_batch: int = integer(lo=1, hi=_MAX_DIM, default=1)
    layers: int = integer(lo=1, hi=_MAX_DIM, default=1)
    vocab: int = integer(lo=0, hi=_MAX_SEQ, default=0)
    sources: str = text(default="")

    def __post_init__(self):
        check_fields(self)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads={self.heads}; got {self.kv_heads}")

    @property
    def m(self) -> float:
        """Query heads per KV head (grouped-query attention)."""
        return self.heads / self.kv_heads

    @property
    def f(self) -> float:
        """h_ffn / h."""
        return self.ffn_hidden / self.hidden

    @property
    def tokens(self) -> int:
        """Tokens in one micro-batch, b·s."""
        return self.micro_batch * self.seq_len

    @property
    def bsh(self) -> float:
        """Values in one ``[b, s, h]`` activation."""
        return float(self.micro_batch) * self.seq_len * self.hidden

    def with_(self, **changes) -> MoeShape:
        """A copy with some fields changed (validated again).

        >>> INTERNAL_352B.with_(top_k=8).top_k
        8
        """
        from dataclasses import replace

        return replace(self, **changes)

    def attention_params(self) -> float:
        """Attention weights of one layer: QKV ``h·h(1 + 2/m)`` plus output ``h·h``."""
        h = float(self.hidden)
        return h * h * (1 + 2 / self.m) + h * h

    def expert_params(self) -> float:
        """Weights of one SwiGLU expert: fc1, fc3 (``h x h_ffn``) and fc2 (``h_ffn x h``)."""
        return 3.0 * self.hidden * self.ffn_hidden

    def total_params(self) -> float:
        """All weights: every layer's attention, router and experts, plus input and output
        embeddings (norms left out).

        >>> round(INTERNAL_352B.total_params() / 1e9)   # the paper calls it 352B
        341
        """
        per_layer = (self.attention_params() + self.hidden * self.n_experts
                     + self.n_experts * self.expert_params())
        return self.layers * per_layer + 2.0 * self.vocab * self.hidden


INTERNAL_352B = MoeShape(
    "Internal-352B", hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, n_experts=32, top_k=3,
    seq_len=8192, micro_batch=1, layers=60, vocab=65536,
    sources="MegaScale-MoE Table 2 [paper]; micro-batch 1 [model]",
)
MIXTRAL_8X7B = MoeShape(
    "Mixtral-8x7B", hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, n_experts=8, top_k=2,
    seq_len=4096, micro_batch=1, layers=32, vocab=32000,
    sources="Mixtral-8x7B public config (arXiv 2401.04088) [3rd]; sequence 4,096 [model]",
)
DEEPSEEK_V3 = MoeShape(
    "DeepSeek-V3", hidden=7168, heads=128, kv_heads=128, ffn_hidden=2048, n_experts=256, top_k=8,
    seq_len=4096, micro_batch=1, layers=61, vocab=129280,
    sources="github.com/deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json at 9b4e978 "
    "(dim 7168, moe_inter_dim 2048, 8 of 256 routed experts, 61 layers, n_heads 128, vocab "
    "129280) [repo]; sequence 4,096 (V3 report [paper]); its attention is MLA, so m is not "
    "meaningful here (set to 1); only h, h_ffn, k are used [model]",
)


def _check_shape(shape) -> MoeShape:
    return check_instance("shape", shape, MoeShape, "e.g. INTERNAL_352B or MoeShape(...)")


def _finite(value: float, names: str) -> float:
    """``value`` if finite; else a ValueError naming the parameters that made it overflow."""
    if not math.isfinite(value):
        raise ValueError(f"{names} give a result beyond the range of a float ({value}); use "
                         "values of sensible magnitude")
    return value


def comm_volume(shape: MoeShape, n: int, module: str, strategy: str, *,
                formula: str = "derived") -> float:
    """Values one GPU sends in one layer's forward pass for ``module`` ("attention" or "ffn")
    split over ``n`` GPUs with ``strategy`` (see the module table), uniform routing.

    ``formula``: "derived" (from the tensor shapes, the default) or "paper" (MegaScale-MoE's
    printed equations; they differ only for SP attention, by a factor 2). ``n`` up to 16,384.

    >>> s = INTERNAL_352B
    >>> comm_volume(s, 8, "ffn", "ep") / comm_volume(s, 8, "ffn", "tp")   # k / n
    0.375
    >>> comm_volume(s, 8, "attention", "sp", formula="paper") / comm_volume(s, 8, "attention", "sp")
    2.0
    """
    shape = _check_shape(shape)
    n = check_int("n", n, lo=1, hi=_MAX_N)
    module = check_choice("module", module, ("attention", "ffn"))
    formula = check_choice("formula", formula, ("derived", "paper"))
    strategies = ATTENTION_STRATEGIES if module == "attention" else FFN_STRATEGIES
    strategy = check_choice("strategy", strategy, strategies)
    bsh = shape.bsh
    ring = 2.0 * bsh * (n - 1) / n  # two ring collectives of the whole [b, s, h]
    if strategy in ("tp", "ep_agrs"):
        return ring
    if strategy == "ep":
        return 2.0 * shape.top_k * bsh * (n - 1) / n**2
    derived = (2.0 + 2.0 / shape.m) * bsh * (n - 1) / n**2
    return derived if formula == "derived" else 2.0 * derived


def inter_node_fraction(n: int, gpus_per_node: int = 8, pattern: str = "all_to_all") -> float:
    """Share of a GPU's sent bytes that leave its node, for a group of ``n`` consecutive GPUs
    placed ``gpus_per_node`` to a node (averaged over the group's GPUs).

    ``pattern`` "all_to_all": a GPU sends equally to the ``n - 1`` others, of which
    ``n - min(n, g)`` are on other nodes. "ring": a ring ordered node by node crosses a node
    boundary on ``n / g`` of its ``n`` links (none if the group fits in one node).

    >>> inter_node_fraction(8), inter_node_fraction(16), inter_node_fraction(16, pattern="ring")
    (0.0, 0.5333333333333333, 0.125)
    """
    n = check_int("n", n, lo=1, hi=_MAX_N)
    g = check_int("gpus_per_node", gpus_per_node, lo=1, hi=_MAX_N)
    pattern = check_choice("pattern", pattern, ("all_to_all", "ring"))
    local = min(n, g)
    if n <= g:
        return 0.0
    if pattern == "all_to_all":
        return (n - local) / (n - 1)
    return (n / g) / n


@dataclass(frozen=True)
class LayerVolume(Checked):
    """Bytes one GPU sends in one layer's forward pass: ``attention``, ``ffn``, ``total``, and
    the ``intra`` (NVLink) and ``inter`` (NIC) shares of the total, averaged over the group."""

    attention: float = real(lo=0.0, unit="bytes")
    ffn: float = real(lo=0.0, unit="bytes")
    total: float = real(lo=0.0, unit="bytes")
    intra: float = real(lo=0.0, unit="bytes")
    inter: float = real(lo=0.0, unit="bytes")
    attention_strategy: str = choice(ATTENTION_STRATEGIES)
    ffn_strategy: str = choice(FFN_STRATEGIES)
    n: int = integer(lo=1, hi=_MAX_N)

    def __post_init__(self):
        check_fields(self)
        for parts, what in (((self.attention, self.ffn), "attention + ffn"),
                            ((self.intra, self.inter), "intra + inter")):
            if abs(sum(parts) - self.total) > 1e-9 * max(self.total, 1.0):
                raise ValueError(f"total must be {what} = {sum(parts)}; got {self.total}")


def layer_volume(shape: MoeShape, n: int, *, attention: str = "sp", ffn: str = "ep",
                 gpus_per_node: int = 8, bytes_per_value: float = 2.0,
                 formula: str = "derived") -> LayerVolume:
    """Per-GPU bytes of one layer's forward communication (see :func:`comm_volume`), split into
    bytes that stay in the node and bytes that cross the network (:func:`inter_node_fraction`).

    ``attention`` one of :data:`ATTENTION_STRATEGIES`, ``ffn`` one of :data:`FFN_STRATEGIES`;
    ``n`` and ``gpus_per_node`` up to 16,384; ``bytes_per_value`` in (0, 1024].

    >>> v = layer_volume(INTERNAL_352B, 16, attention="tp", ffn="tp")
    >>> round(v.inter / v.total, 3)     # a 16-GPU ring crosses the node boundary on 1/8 of links
    0.125
    """
    shape = _check_shape(shape)
    n = check_int("n", n, lo=1, hi=_MAX_N)
    attention = check_choice("attention", attention, ATTENTION_STRATEGIES)
    ffn = check_choice("ffn", ffn, FFN_STRATEGIES)
    bpv = check_real("bytes_per_value", bytes_per_value, lo=0.0, lo_open=True,
                     hi=_MAX_BYTES_PER_VALUE, unit="bytes")
    att = comm_volume(shape, n, "attention", attention, formula=formula) * bpv
    ffn_b = comm_volume(shape, n, "ffn", ffn) * bpv
    g = check_int("gpus_per_node", gpus_per_node, lo=1, hi=_MAX_N)
    pat_att = "ring" if attention == "tp" else "all_to_all"
    pat_ffn = "all_to_all" if ffn == "ep" else "ring"
    inter = att * inter_node_fraction(n, g, pat_att) + ffn_b * inter_node_fraction(n, g, pat_ffn)
    total = att + ffn_b
    return trusted(LayerVolume, attention=att, ffn=ffn_b, total=total, intra=total - inter,
                   inter=inter, attention_strategy=attention, ffn_strategy=ffn, n=n)


def collective_time(nbytes_per_gpu: float, n: int, pattern: str, *, bandwidth: float,
                    a2a_efficiency: float = A2A_EFFICIENCY, alpha: float = 0.0) -> float:
    """α–β time (s) of a collective in which each of ``n`` GPUs sends ``nbytes_per_gpu`` bytes
    over links of ``bandwidth`` bytes/s: ``(n - 1)·alpha + bytes / (bandwidth · eff)``, with
    ``eff = 1`` for a ring collective and ``a2a_efficiency`` for an all-to-all. ``n`` up to
    16,384; a time beyond the range of a float is refused.

    >>> collective_time(75e6, 8, "all_to_all", bandwidth=100e9)   # 75 MB at 75 GB/s
    0.001
    """
    nb = check_real("nbytes_per_gpu", nbytes_per_gpu, lo=0.0, unit="bytes")
    n = check_int("n", n, lo=1, hi=_MAX_N)
    pattern = check_choice("pattern", pattern, ("ring", "all_to_all"))
    bw = check_real("bandwidth", bandwidth, lo=0.0, lo_open=True, unit="bytes/s")
    eff = check_real("a2a_efficiency", a2a_efficiency, lo=0.0, hi=1.0, lo_open=True)
    alpha = check_real("alpha", alpha, lo=0.0, unit="s")
    if n == 1:
        return 0.0
    rate = bw * (eff if pattern == "all_to_all" else 1.0)
    t = (n - 1) * alpha + (nb / rate if rate > 0 else math.inf)  # rate underflows only if absurd
    return _finite(t, "nbytes_per_gpu, bandwidth, a2a_efficiency and alpha")


def ep_crossover_k(n: int, a2a_efficiency: float = A2A_EFFICIENCY) -> float:
    """Experts per token above which AG + RS beats the all-to-all for EP over ``n`` GPUs.

    The all-to-all sends ``k/n`` of the ring collectives' bytes but at ``a2a_efficiency`` of
    their bandwidth, so the two cost the same at ``k = n · a2a_efficiency`` (latency aside).

    >>> ep_crossover_k(8)
    6.0
    """
    n = check_int("n", n, lo=1, hi=_MAX_N)
    eff = check_real("a2a_efficiency", a2a_efficiency, lo=0.0, hi=1.0, lo_open=True)
    return n * eff


def group_comm_times(shape: MoeShape, n: int, *, attention: str = "sp", ffn: str = "ep",
                     topology=None, a2a_efficiency: float = A2A_EFFICIENCY,
                     bytes_per_value: float = 2.0) -> dict:
    """Time (s) of each forward collective of one layer for a group of ``n`` consecutive GPUs on
    a cluster, from the link-load engine: ring collectives with
    :func:`uneven.collectives.ring_all_gather`, all-to-alls as one phase of a traffic matrix
    with link capacities scaled by ``a2a_efficiency``.

    ``topology(n_nodes)`` builds the cluster (default :func:`uneven.topology.h800_cluster`);
    the group fills ``ceil(n / 8)`` nodes of 8 GPUs. Returns ``{"attention": s, "ffn": s,
    "total": s, "bound": {"attention": kind, "ffn": kind}}`` where ``kind`` names the busiest
    link kind (``"nvl_out"``, ``"nic_up"`` ...). ``n`` up to 512.

    Compare groups at equal tokens per GPU (scale ``micro_batch`` with ``n``): EP over two
    nodes sends as many bytes per GPU as over one, but half of them through the NIC.

    >>> t8 = group_comm_times(INTERNAL_352B, 8)
    >>> t16 = group_comm_times(INTERNAL_352B.with_(micro_batch=2), 16)
    >>> t8["bound"]["ffn"], t16["bound"]["ffn"], round(t16["ffn"] / t8["ffn"], 2)
    ('nvl_out', 'nic_up', 1.83)
    """
    from .collectives import ring_all_gather
    from .engines.linkload import link_loads_matrix
    from .topology import Topology, h800_cluster

    shape = _check_shape(shape)
    n = check_int("n", n, lo=2, hi=512)
    attention = check_choice("attention", attention, ATTENTION_STRATEGIES)
    ffn = check_choice("ffn", ffn, FFN_STRATEGIES)
    eff = check_real("a2a_efficiency", a2a_efficiency, lo=0.0, hi=1.0, lo_open=True)
    bpv = check_real("bytes_per_value", bytes_per_value, lo=0.0, lo_open=True,
                     hi=_MAX_BYTES_PER_VALUE, unit="bytes")
    build = h800_cluster if topology is None else topology
    check_callable("topology", build, "n_nodes -> Topology")
    g = 8
    n_nodes = -(-n // g)
    try:
        topo = build(n_nodes)
    except Exception as err:  # the caller's callable: say which argument failed
        raise ValueError(f"topology({n_nodes}) failed: {type(err).__name__}: {err}") from err
    check_instance("topology(n_nodes)", topo, Topology, "the topology callable's result")
    if topo.gpus_per_node != g or topo.n_gpus < n:
        raise ValueError(f"topology must build {n_nodes} node(s) of 8 GPUs; got "
                         f"{topo.n_gpus} GPUs, {topo.gpus_per_node} per node")
    ranks = np.arange(n, dtype=np.int64)
    out, bound = {}, {}
    for module, strat in (("attention", attention), ("ffn", ffn)):
        vol = comm_volume(shape, n, module, strat) * bpv
        if strat in ("tp", "ep_agrs"):
            # Two ring collectives, each of a whole [b, s, h] buffer: every GPU sends half of vol.
            r = ring_all_gather(topo, vol / 2 * n / (n - 1), ranks)
            out[module] = 2 * r.time
            bound[module] = r.loads.bottleneck()[1].split("[")[0]
        else:
            T = np.zeros((topo.n_gpus, topo.n_gpus))
            T[:n, :n] = vol / (n - 1)
            np.fill_diagonal(T, 0.0)
            loads = link_loads_matrix(topo, T)
            try:
                out[module] = loads.time(eff)
            except ValueError as err:  # a drain time beyond the float range
                raise ValueError(f"a2a_efficiency={eff} and bytes_per_value={bpv} on this "
                                 f"topology give no finite time: {err}") from None
            bound[module] = loads.bottleneck(eff)[1].split("[")[0]
    out["total"] = _finite(out["attention"] + out["ffn"], "shape and bytes_per_value")
    out["bound"] = bound
    return out
