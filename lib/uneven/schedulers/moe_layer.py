"""One MoE transformer layer on a node, operator by operator, on the timeline engine.

A layer's forward and backward pass for one micro-batch on one GPU of an ``n``-GPU group (an
8-GPU H800 node by default), built from the shapes of :class:`uneven.parallel_volumes.MoeShape`
and timed with :func:`uneven.engines.timeline.run_timeline`. Three resources per GPU: its SMs
(compute stream), its NVLink port (the in-node collectives) and its NIC (pipeline sends to the
next stage, the only traffic that leaves the node).

**Operators.** Attention: QKV GEMM, attention core (FlashAttention), output projection. FFN:
the SwiGLU experts as two grouped GEMMs (fc1 and fc3 together, then fc2). Per GPU, with
``T = b·s`` tokens:

============== ======================================== ========================================
strategy       attention                                FFN
============== ======================================== ========================================
``"tp_tp"``    all-gather → QKV (1/n of the weights)    all-gather → fc1/fc3, fc2 (1/n of every
               → core (h/n heads) → projection →        expert) → reduce-scatter
               reduce-scatter
``"sp_ep"``    QKV (all weights, T/n tokens) →          dispatch all-to-all → the GPU's E/n
               all-to-all → core (h/n heads, all        experts → combine all-to-all
               tokens) → all-to-all → projection
``"sp_agrs"``  as ``sp_ep``                             all-gather → the GPU's experts →
                                                        reduce-scatter (MegaScale-MoE's k > n
                                                        variant)
============== ======================================== ========================================

FLOPs: a GEMM ``[M, K] x [K, N]`` costs ``2MNK``; the causal attention core ``2·b·s²·h`` forward
for the whole layer, split over ``n``; backward doubles every GEMM (dgrad + wgrad, two separate
ops) and the core costs 2.5× its forward. Communication bytes are those of
:mod:`uneven.parallel_volumes`, timed with :func:`uneven.parallel_volumes.collective_time`
(ring collectives at the NVLink bandwidth, all-to-alls at ``a2a_efficiency`` of it). Norms,
RoPE, the router and token permutation are left out (model).

**Overlap.**

* none: every operator waits for the one before it; communication blocks the SMs.
* ``inter_op``: communication runs on its own stream and waits only for the data it carries;
  in the backward pass each weight-gradient GEMM is deferred to run while the next
  communication is in flight (and the QKV weight gradient of the layer above overlaps this
  layer's first all-to-all, the steady state of a stack of layers). MegaScale-MoE schedules
  this by hand per model; this greedy rule is the model's.
* ``intra_op``: every GEMM next to a collective is fused with it at tile level
  (:mod:`uneven.overlap`): GEMM → all-to-all sends each tile when written, all-to-all → GEMM
  starts each tile when its rows are in. Token ``order`` ("sorted" by source, or "random")
  matters for the expert GEMMs fed by the dispatch (and, backward, by the combine gradient).

Communication kernels that run beside compute take ``comm_sms`` of the 132 SMs: a GEMM tile of
a GEMM → all-to-all fusion and a weight-gradient GEMM placed under a collective run
``132 / (132 - comm_sms)`` times longer. All-to-all → GEMM fusions move data with copy engines
(MegaScale-MoE) and pay nothing.

Units: seconds, bytes, FLOP/s, bytes/s.

>>> base = layer_timeline(strategy="tp_tp")
>>> best = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True)
>>> round(base.layer_time * 1e3, 2), round(best.layer_time * 1e3, 2)
(8.29, 5.42)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._fields import (
    Checked,
    any_value,
    array,
    check_fields,
    choice,
    flag,
    graph,
    integer,
    mapping,
    real,
    recorded,
    strings,
)
from .._tiles import _fused_block
from .._validate import (
    _show,
    as_float_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    check_str,
    trusted,
)
from ..engines.timeline import edges_to_csr, run_timeline
from ..limits import check_bytes, check_steps
from ..overlap import ORDERS
from ..parallel_volumes import INTERNAL_352B, MoeShape, collective_time

__all__ = [
    "NodeModel",
    "H800_NODE",
    "STRATEGIES",
    "LAYER_KINDS",
    "LayerTimeline",
    "layer_timeline",
    "ablation",
    "fit_memory_bound",
    "ClusterLayerTimeline",
    "cluster_layer_timeline",
    "iteration_model",
    "training_flops_per_token",
    "mfu",
    "memory_per_gpu",
]

STRATEGIES = ("tp_tp", "sp_ep", "sp_agrs")
#: Op kinds of a layer timeline (codes index this tuple): forward compute, backward input
#: gradient (and the attention core's backward), weight gradient, NVLink transfer, NIC send.
LAYER_KINDS = ("F", "B", "W", "comm", "send")
_F, _B, _W, _COMM, _SEND = range(5)
RESOURCES = ("SMs", "NVLink", "NIC")


@dataclass(frozen=True)
class NodeModel(Checked):
    """Hardware and efficiency assumptions of the layer model.

    ``peak_flops`` dense BF16 FLOP/s; ``gemm_efficiency`` and ``attention_efficiency``: share of
    the peak that GEMMs and the attention core reach; ``nvlink_bw`` and ``nic_bw`` bytes/s per
    GPU per direction; ``a2a_efficiency`` all-to-all bandwidth relative to ring collectives;
    ``alpha`` latency per collective step (s); ``total_sms`` and ``comm_sms`` (SMs a
    communication kernel takes from the GEMM beside it); ``tile_latency`` added to each
    transferred tile (s); ``memory_bound``: the memory-bound operators the layer has no op for
    (norms, RoPE, the router, token permutation), as a multiple of each module's GEMM and
    attention time, run on the SMs before the module and again in its backward (0: left out;
    :func:`fit_memory_bound` fits it). ``sources`` says where each number comes from.
    Every field is checked when made (also by :meth:`with_` and ``dataclasses.replace``).

    >>> H800_NODE.with_(comm_sms=0).comm_sms, H800_NODE.total_sms
    (0, 132)
    """

    peak_flops: float = real(lo=0.0, lo_open=True, unit="FLOP/s", default=989e12)
    gemm_efficiency: float = real(lo=0.0, hi=1.0, lo_open=True, default=0.75)
    attention_efficiency: float = real(lo=0.0, hi=1.0, lo_open=True, default=0.55)
    nvlink_bw: float = real(lo=0.0, lo_open=True, unit="bytes/s", default=160e9)
    nic_bw: float = real(lo=0.0, lo_open=True, unit="bytes/s", default=50e9)
    a2a_efficiency: float = real(lo=0.0, hi=1.0, lo_open=True, default=0.75)
    alpha: float = real(lo=0.0, unit="s", default=3.33e-6)
    total_sms: int = integer(lo=1, hi=100_000, default=132)
    comm_sms: int = integer(lo=0, hi=lambda m: m.total_sms - 1, default=8)
    tile_latency: float = real(lo=0.0, unit="s", default=0.0)
    memory_bound: float = real(lo=0.0, hi=100.0, default=0.0)
    sources: dict = mapping(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        check_fields(self)
        if len(self.sources) > 64 or not all(isinstance(k, str) and isinstance(v, str)
                                             and len(v) <= 10_000 for k, v in self.sources.items()):
            raise ValueError(f"sources must be a dict of at most 64 entries, field name -> "
                             f"text; got {_show(self.sources)}")

    def with_(self, **changes) -> NodeModel:
        """A copy with some fields changed (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)


H800_NODE = NodeModel(sources={
    "peak_flops": "989 TFLOPS dense BF16 per H800 (MegaScale-MoE and DeepSeek-V3 [paper])",
    "gemm_efficiency": "0.75 of peak for large GEMMs [model]",
    "attention_efficiency": "0.55 of peak for FlashAttention, forward and backward [model]",
    "nvlink_bw": "160 GB/s per direction achieved (DeepSeek-V3 ISCA'25 [paper])",
    "nic_bw": "one 400 Gb/s NIC per GPU = 50 GB/s [paper]",
    "a2a_efficiency": "0.75: puts the AG/RS vs all-to-all crossover at k = 6 for n = 8, where "
    "MegaScale-MoE's Fig. 7 has it [derived]",
    "alpha": "3.33 us per collective step: NVLink 64-B latency, ISCA'25 Table 5 [paper]",
    "comm_sms": "8 of 132 SMs drive a fused all-to-all or a collective beside compute [model; "
    "the paper says 'a few']",
})


@dataclass(frozen=True)
class LayerTimeline(Checked):
    """Forward + backward of one layer for one micro-batch on one GPU (or a node, see
    :func:`cluster_layer_timeline`).

    ``layer_time`` (s): until the GPU's SMs and NVLink port are done (NIC sends to the next
    stage are asynchronous and not counted); ``forward_time`` (s): end of the forward pass;
    ``backward_time`` = ``layer_time - forward_time``. ``compute_time`` and ``comm_time``: busy
    seconds of the SMs and the NVLink port; ``exposed_comm`` = ``layer_time - compute_time``
    (time the SMs wait). Per op: ``start``, ``finish`` (s), ``resource`` (0 SMs, 1 NVLink,
    2 NIC), ``kind`` (index into :data:`LAYER_KINDS`), ``item`` (index into ``names``);
    ``dep_ptr``, ``dep_src``: the predecessor CSR the ops ran with (what each op waited for,
    besides the op before it on its resource; ``None`` when not recorded), for the trace export
    (:func:`uneven.trace.to_chrome`). Every field is checked when made directly; arrays are
    read-only.

    >>> t = layer_timeline(strategy="tp_tp")
    >>> t.names[:3], t.item_time("ag_attn")[0]
    (('ag_attn', 'qkv', 'attn'), 0.0)
    """

    strategy: str = choice(STRATEGIES)
    inter_op: bool = flag()
    intra_op: bool = flag()
    layer_time: float = real(lo=0.0, unit="s")
    forward_time: float = real(lo=0.0, hi="layer_time", unit="s")
    compute_time: float = real(lo=0.0, unit="s")
    comm_time: float = real(lo=0.0, unit="s")
    start: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    finish: np.ndarray = array(shape=("ops",), lo=0.0, repr=False)
    resource: np.ndarray = array("int", shape=("ops",), lo=0, hi=len(RESOURCES) - 1, repr=False)
    kind: np.ndarray = array("int", shape=("ops",), lo=0, hi=len(LAYER_KINDS) - 1, repr=False)
    item: np.ndarray = array("int", shape=("ops",), lo=0, hi=lambda t: len(t.names) - 1,
                             repr=False)
    names: tuple = strings(repr=False)
    dep_ptr: object = graph(ops=lambda t: t.start.size, default=None, repr=False, compare=False)
    dep_src: object = any_value(default=None, repr=False, compare=False)
    check_first = ("names",)

    def __post_init__(self):
        check_fields(self)
        if not 1 <= len(self.names) <= 100_000:
            raise ValueError(f"names must be a non-empty tuple of operator names (strings); got "
                             f"{_show(self.names)}")
        if np.any(self.finish < self.start):
            raise ValueError("finish must not be before start for any op")

    @property
    def backward_time(self) -> float:
        """Seconds from the end of the forward pass to the end of the layer."""
        return self.layer_time - self.forward_time

    @property
    def exposed_comm(self) -> float:
        """Seconds the SMs are not computing during the layer."""
        return self.layer_time - self.compute_time

    def item_time(self, name: str) -> tuple[float, float]:
        """(start, finish) in s of the operator called ``name`` (e.g. ``'dispatch'``)."""
        name = check_str("name", name, max_len=200)
        if name not in self.names:
            raise ValueError(f"name must be one of {', '.join(self.names)}; got {name!r}")
        sel = self.item == self.names.index(name)
        if not sel.any():
            raise ValueError(f"name {name!r} has no operations in this timeline")
        return float(self.start[sel].min()), float(self.finish[sel].max())


# --------------------------------------------------------------------------- the program


@dataclass
class _Item:
    name: str
    kind: int  # _F, _B, _W, _COMM, _SEND
    seconds: float
    deps: list
    loaded: bool = False  # scales with this GPU's expert load
    resource: int = 0
    taxed: bool = False  # runs beside a communication kernel
    # a fused pair: (compute seconds, comm seconds, direction, order-sensitive, loaded parts)
    fused: tuple | None = None


def _ratio(a: float, b: float) -> float:
    """``a / b``, infinite when ``b`` underflowed to 0 (refused later by the size check)."""
    return a / b if b > 0 else math.inf


def _forward_program(shape: MoeShape, strategy: str, n: int, hw: NodeModel):
    """Forward operators in order: (name, kind 'gemm'|'attn'|'comm'|'mem', seconds, pattern,
    loaded)."""
    T, h, hf, k, m = shape.tokens, shape.hidden, shape.ffn_hidden, shape.top_k, shape.m
    bsh = shape.bsh

    def gemm(flops):
        return _ratio(flops, hw.peak_flops * hw.gemm_efficiency)

    def comm(values, pattern):
        try:
            return collective_time(values * 2.0, n, pattern, bandwidth=hw.nvlink_bw,
                                   a2a_efficiency=hw.a2a_efficiency, alpha=hw.alpha)
        except ValueError:
            raise ValueError(_TOO_LONG) from None

    attn_core = _ratio(2.0 * shape.micro_batch * shape.seq_len**2 * h / n,
                       hw.peak_flops * hw.attention_efficiency)
    ring = bsh * (n - 1) / n  # values one GPU sends in one all-gather or reduce-scatter
    ops = []
    attn_work = gemm(2.0 * T * h * h * (2 + 2 / m) / n) + attn_core  # QKV + projection + core
    if hw.memory_bound > 0:  # RMSNorm, RoPE: before the attention module
        ops.append(("attn_other", "mem", hw.memory_bound * attn_work, None, False))
    if strategy == "tp_tp":
        ops += [("ag_attn", "comm", comm(ring, "ring"), "ring", False),
                ("qkv", "gemm", gemm(2.0 * T * h * h * (1 + 2 / m) / n), None, False),
                ("attn", "attn", attn_core, None, False),
                ("proj", "gemm", gemm(2.0 * T * h * h / n), None, False),
                ("rs_attn", "comm", comm(ring, "ring"), "ring", False)]
    else:
        a2a_qkv = (1 + 2 / m) * bsh * (n - 1) / n**2
        a2a_out = bsh * (n - 1) / n**2
        ops += [("qkv", "gemm", gemm(2.0 * T / n * h * h * (1 + 2 / m)), None, False),
                ("a2a_qkv", "comm", comm(a2a_qkv, "all_to_all"), "all_to_all", False),
                ("attn", "attn", attn_core, None, False),
                ("a2a_out", "comm", comm(a2a_out, "all_to_all"), "all_to_all", False),
                ("proj", "gemm", gemm(2.0 * T / n * h * h), None, False)]
    # Expert work per GPU is the same in all three layouts: T·k token-expert pairs over n GPUs.
    fc13 = gemm(4.0 * T * k * h * hf / n)
    fc2 = gemm(2.0 * T * k * h * hf / n)
    if hw.memory_bound > 0:  # RMSNorm, the router, token permutation: before the experts
        ops.append(("ffn_other", "mem", hw.memory_bound * (fc13 + fc2), None, False))
    if strategy == "tp_tp":
        ops += [("ag_ffn", "comm", comm(ring, "ring"), "ring", False),
                ("fc13", "gemm", fc13, None, False), ("fc2", "gemm", fc2, None, False),
                ("rs_ffn", "comm", comm(ring, "ring"), "ring", False)]
    elif strategy == "sp_ep":
        ep = k * bsh * (n - 1) / n**2
        ops += [("dispatch", "comm", comm(ep, "all_to_all"), "all_to_all", True),
                ("fc13", "gemm", fc13, None, True), ("fc2", "gemm", fc2, None, True),
                ("combine", "comm", comm(ep, "all_to_all"), "all_to_all", True)]
    else:
        ops += [("ag_ffn", "comm", comm(ring, "ring"), "ring", False),
                ("fc13", "gemm", fc13, None, True), ("fc2", "gemm", fc2, None, True),
                ("rs_ffn", "comm", comm(ring, "ring"), "ring", False)]
    return ops


#: Forward fusions: (gemm, comm, direction of the forward pair, token order matters).
_FUSIONS = {
    "tp_tp": [("qkv", "ag_attn", "a2a_gemm", False), ("proj", "rs_attn", "gemm_a2a", False),
              ("fc13", "ag_ffn", "a2a_gemm", True), ("fc2", "rs_ffn", "gemm_a2a", False)],
    "sp_ep": [("qkv", "a2a_qkv", "gemm_a2a", False), ("proj", "a2a_out", "a2a_gemm", False),
              ("fc13", "dispatch", "a2a_gemm", True), ("fc2", "combine", "gemm_a2a", False)],
}
_FUSIONS["sp_agrs"] = _FUSIONS["sp_ep"][:2] + [("fc13", "ag_ffn", "a2a_gemm", True),
                                               ("fc2", "rs_ffn", "gemm_a2a", False)]


def _program(shape, strategy, n, hw, inter_op, intra_op):
    """The layer as a list of :class:`_Item` in issue order (the SMs' order for compute)."""
    fwd = _forward_program(shape, strategy, n, hw)
    by_name = {op[0]: op for op in fwd}
    fusions = _FUSIONS[strategy] if intra_op else []
    pair_of_comm = {c: (g, d, o) for g, c, d, o in fusions}
    pair_of_gemm = {g: (c, d, o) for g, c, d, o in fusions}
    items: list[_Item] = []

    def add(item):
        items.append(item)
        return item.name

    # Forward: a chain (each operator needs the previous one's output).
    prev = None
    done = set()
    for name, typ, secs, _, loaded in fwd:
        if name in done:
            continue
        deps = [prev] if prev else []
        if name in pair_of_comm or name in pair_of_gemm:
            g, c = (name, pair_of_gemm[name][0]) if name in pair_of_gemm else (
                pair_of_comm[name][0], name)
            d, o = (pair_of_gemm[g][1], pair_of_gemm[g][2])
            first, second = (g, c) if d == "gemm_a2a" else (c, g)
            prev = add(_Item(f"{first}+{second}", _F, 0.0, deps, fused=(
                by_name[g][2], by_name[c][2], d, o, by_name[g][4], by_name[c][4])))
            done.update((g, c))
            continue
        kind = _COMM if typ == "comm" else _F
        prev = add(_Item(name, kind, secs, deps, loaded, 1 if typ == "comm" else 0))
        done.add(name)
    fwd_end = prev

    # Backward: the forward chain reversed; GEMMs split into dgrad (on the chain) and wgrad.
    chain = []  # main backward ops in order
    done = set()
    for name, typ, secs, _, loaded in reversed(fwd):
        if name in done:
            continue
        if name in pair_of_comm or name in pair_of_gemm:
            g, c = (name, pair_of_gemm[name][0]) if name in pair_of_gemm else (
                pair_of_comm[name][0], name)
            d, o = pair_of_gemm[g][1], pair_of_gemm[g][2]
            # The backward of GEMM -> A2A is A2A -> GEMM and vice versa; the token order of
            # the rows arriving at the experts matters for the backward of fc2 -> combine.
            bd = "a2a_gemm" if d == "gemm_a2a" else "gemm_a2a"
            bo = (g == "fc2")
            first, second = (f"{g}_d", f"{c}_b") if bd == "gemm_a2a" else (f"{c}_b", f"{g}_d")
            chain.append(("fused", f"{first}+{second}", (by_name[g][2], by_name[c][2], bd, bo,
                                                         by_name[g][4], by_name[c][4]), g))
            done.update((g, c))
            continue
        if typ == "comm":
            chain.append(("comm", f"{name}_b", secs, loaded))
        elif typ == "mem":  # its backward reads and writes as much again: one more pass
            chain.append(("mem", f"{name}_b", secs, loaded))
        elif typ == "attn":
            chain.append(("attn", "attn_b", 2.5 * secs, loaded))
        else:
            chain.append(("gemm", f"{name}_d", secs, loaded, name))
        done.add(name)

    pending: list[_Item] = []
    # The first GEMM of the forward pass (QKV) has the last wgrad of the backward pass.
    first_w = next(name for name, typ, *_ in fwd if typ == "gemm")
    prev = fwd_end

    def wgrad(gname, deps):
        return _Item(f"{gname}_w", _W, by_name[gname][2], deps, by_name[gname][4])

    if inter_op:
        # Steady state of a stack of layers: the layer above's QKV wgrad runs here, beside this
        # layer's first collective (it needs nothing of this layer); this layer's own QKV wgrad
        # goes to the layer below in turn.
        items.append(_Item(f"{first_w}_w (layer above)", _W, by_name[first_w][2], [fwd_end],
                           by_name[first_w][4], taxed=chain[0][0] == "comm"))
    for idx, entry in enumerate(chain):
        nxt = chain[idx + 1] if idx + 1 < len(chain) else None
        deps = [prev] if prev else []
        w = None
        if entry[0] == "fused":
            _, fname, spec, gname = entry
            prev = add(_Item(fname, _B, 0.0, deps, fused=spec))
            # the wgrad needs the upstream gradient: the block's input, or, when the block
            # itself brings it (A2A -> GEMM), the block
            w = wgrad(gname, deps if spec[2] == "gemm_a2a" else [prev])
            # a GEMM -> A2A fusion sends while later compute runs (its SMs are taxed already)
            flush, tax = spec[2] == "gemm_a2a", False
        elif entry[0] == "comm":
            prev = add(_Item(entry[1], _COMM, entry[2], deps, entry[3], 1))
            flush = tax = False
        else:
            prev = add(_Item(entry[1], _B, entry[2], deps, entry[3]))
            if entry[0] == "gemm":
                w = wgrad(entry[4], deps)
            # an unfused collective comes next: hide the pending wgrads behind it
            flush = tax = nxt is not None and nxt[0] == "comm"
        if not inter_op:
            if w is not None:  # no overlap: the wgrad runs right after its dgrad, in the chain
                w.deps = [prev]
                prev = add(w)
            continue
        if w is not None and entry[-1] != first_w:
            pending.append(w)
        if flush and pending:
            for p in pending:
                p.taxed = tax
                items.append(p)
            pending = []
    items.extend(pending)  # nothing left to hide behind
    return items, fwd_end


def _expand(items, hw, n_tiles, order, seed, n_ranks):
    """Ops of a program for one GPU: arrays and per-item first/last op ids."""
    dur, res, kind, item_idx, loaded = [], [], [], [], []
    esrc, edst = [], []
    first, last, comm_item = {}, {}, {}
    tax = hw.total_sms / (hw.total_sms - hw.comm_sms)
    n_ops = 0
    for idx, it in enumerate(items):
        if it.fused is None:
            secs = it.seconds * (tax if it.taxed else 1.0)
            dur.append(secs)
            res.append(it.resource)
            kind.append(it.kind)
            item_idx.append(idx)
            loaded.append(it.loaded)
            first[it.name] = last[it.name] = np.array([n_ops])
            comm_item[it.name] = it.kind == _COMM
            n_ops += 1
            continue
        G, C, direction, order_matters, g_loaded, c_loaded = it.fused
        o = order if order_matters else "sorted"
        t = tax if direction == "gemm_a2a" else 1.0  # A2A -> GEMM moves data with copy engines
        d, r, _tile, s, dd, fst, lst, _ = _fused_block(G, C, n_tiles, direction, o, n_ranks,
                                                       seed, t, hw.tile_latency)
        dur.extend(d.tolist())
        res.extend(r.tolist())
        kind.extend(np.where(r == 1, _COMM, it.kind).tolist())
        item_idx.extend([idx] * d.size)
        loaded.extend(np.where(r == 1, c_loaded, g_loaded).tolist())
        esrc.extend((s + n_ops).tolist())
        edst.extend((dd + n_ops).tolist())
        first[it.name] = fst + n_ops
        last[it.name] = lst + n_ops
        comm_item[it.name] = True
        n_ops += d.size
    for it in items:
        for dep in it.deps:
            for a in last[dep]:
                for b in first[it.name]:
                    esrc.append(int(a))
                    edst.append(int(b))
    return (np.asarray(dur, float), np.asarray(res, np.int64), np.asarray(kind, np.int64),
            np.asarray(item_idx, np.int64), np.asarray(loaded, bool),
            np.asarray(esrc, np.int64), np.asarray(edst, np.int64), first, last, comm_item)


_TOO_LONG = ("shape and hw give operator times beyond the range of a float (a layer longer than "
             "1e290 s); use hardware numbers of sensible magnitude")


def _check_common(shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed,
                  n_name="n"):
    shape = check_instance("shape", shape, MoeShape, "e.g. INTERNAL_352B or MoeShape(...)")
    strategy = check_choice("strategy", strategy, STRATEGIES)
    n = check_int(n_name, n, lo=1, hi=8)
    if strategy != "tp_tp" and shape.kv_heads % n:
        raise ValueError(f"{n_name} must divide the KV heads ({shape.kv_heads}) for sequence "
                         f"parallelism over heads; got {n_name}={n}")
    if shape.n_experts % n:
        raise ValueError(f"{n_name} must divide the number of experts ({shape.n_experts}); got "
                         f"{n}")
    inter_op = check_bool("inter_op", inter_op)
    intra_op = check_bool("intra_op", intra_op)
    n_tiles = check_int("n_tiles", n_tiles, lo=1, hi=512)
    order = check_choice("order", order, ORDERS)
    check_instance("hw", hw, NodeModel, "e.g. H800_NODE or H800_NODE.with_(...)")
    seed = check_int("seed", seed, lo=0)
    return shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed


def _check_seconds(seconds, scale=1.0):
    """Refuse operator times whose (scaled) sum is not comfortably finite."""
    total = math.fsum(seconds) if all(math.isfinite(x) for x in seconds) else math.inf
    if not total * scale < 1e290:
        raise ValueError(_TOO_LONG)


@lru_cache(maxsize=128)
def _template(shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed, pp_sends):
    items, fwd_end = _program(shape, strategy, n, hw, inter_op, intra_op)
    _check_seconds([it.seconds for it in items] + [x for it in items if it.fused
                                                   for x in it.fused[:2]])
    out = _expand(items, hw, n_tiles, order, seed, n)
    dur, res, kind, item_idx, loaded, esrc, edst, first, last, comm_item = out
    names = [it.name for it in items]
    fwd_last = last[fwd_end]
    if pp_sends:
        # The stage boundary: this GPU's [b, s/n, h] activation forward, its gradient backward.
        nbytes = shape.tokens / n * shape.hidden * 2.0
        secs = nbytes / hw.nic_bw
        bwd_last = np.flatnonzero(res != 2)
        send_f = dur.size
        dur = np.append(dur, [secs, secs])
        res = np.append(res, [2, 2])
        kind = np.append(kind, [_SEND, _SEND])
        item_idx = np.append(item_idx, [len(names), len(names) + 1])
        loaded = np.append(loaded, [False, False])
        names += ["pp_send (activation)", "pp_send (gradient)"]
        esrc = np.concatenate([esrc, fwd_last, bwd_last])
        edst = np.concatenate([edst, np.full(fwd_last.size, send_f),
                               np.full(bwd_last.size, send_f + 1)])
    # Each op at most 64 times longer (the largest load), and every finish at most the sum of
    # all the ops of a node: keep that sum far inside the float range.
    _check_seconds(dur.tolist(), scale=64.0 * 8.0)
    fwd_ops = np.zeros(dur.size, bool)
    fwd_ops[: int(max(last[fwd_end])) + 1] = True
    for a in (dur, res, kind, item_idx, loaded, esrc, edst, fwd_ops):
        a.flags.writeable = False
    return dur, res, kind, item_idx, loaded, esrc, edst, fwd_ops, tuple(names), items, first, \
        last, comm_item


def layer_timeline(shape: MoeShape = INTERNAL_352B, strategy: str = "sp_ep", *, n: int = 8,
                   inter_op: bool = False, intra_op: bool = False, n_tiles: int = 16,
                   order: str = "sorted", load: float = 1.0, hw: NodeModel = H800_NODE,
                   pp_sends: bool = True, seed: int = 0) -> LayerTimeline:
    """Forward + backward of one layer for one micro-batch on one GPU of an ``n``-GPU group.

    ``strategy``: "tp_tp", "sp_ep" or "sp_agrs" (module doc); ``n`` GPUs in the group (≤ 8,
    inside one node; must divide the KV heads for SP and the experts); ``inter_op`` /
    ``intra_op`` overlap (module doc); ``n_tiles`` per fused GEMM (≤ 512); ``order`` of the
    rows entering the expert GEMMs, "sorted" or "random" (seeded); ``load``: this GPU's expert
    tokens relative to the mean (≥ 1 for the busiest GPU; scales its expert GEMMs and EP
    transfers; ignored by TP, which splits every expert); ``hw`` the hardware model;
    ``pp_sends``: show the pipeline sends on the NIC. Shapes and hardware numbers whose
    operator times would leave the range of a float (above about 1e290 s) are refused.

    >>> t = layer_timeline(strategy="sp_ep")
    >>> round(t.exposed_comm / t.layer_time, 3)   # no overlap: every all-to-all is exposed
    0.192
    """
    shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed = _check_common(
        shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed)
    load = check_real("load", load, lo=0.0, lo_open=True, hi=64.0)
    pp_sends = check_bool("pp_sends", pp_sends)
    (dur, res, kind, item_idx, loaded, esrc, edst, fwd_ops, names, *_rest) = _template(
        shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed, pp_sends)
    d = np.where(loaded, dur * load, dur) if load != 1.0 else dur
    ptr, src, dly = edges_to_csr(d.size, esrc, edst)
    tl = run_timeline(d, res, ptr, src, dly)
    own = res != 2
    layer = float(tl.finish[own].max())
    fwd = float(tl.finish[fwd_ops & own].max())
    # Built from checked input: the trusted path (the template's arrays are read-only).
    return trusted(LayerTimeline, strategy=strategy, inter_op=inter_op, intra_op=intra_op,
                   layer_time=layer, forward_time=fwd, compute_time=float(d[res == 0].sum()),
                   comm_time=float(d[res == 1].sum()), start=tl.start, finish=tl.finish,
                   resource=tl.resource, kind=kind, item=item_idx, names=names,
                   dep_ptr=_frozen(ptr), dep_src=_frozen(src))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


#: The ablation of MegaScale-MoE's Table 5 [paper]: strategy, inter-op, intra-op.
ABLATION_STEPS = (
    ("baseline: TP+TP, no overlap", "tp_tp", False, False),
    ("+ SP+EP", "sp_ep", False, False),
    ("+ inter-operator overlap", "sp_ep", True, False),
    ("+ intra-operator overlap", "sp_ep", True, True),
)


def ablation(shape: MoeShape = INTERNAL_352B, **kw) -> list[dict]:
    """The four steps of MegaScale-MoE's ablation as layer timelines: one row per step with
    ``label``, ``timeline`` (:class:`LayerTimeline`), ``layer_time`` (s) and ``speedup`` over
    the baseline (layer time ratio). ``kw`` as :func:`layer_timeline` (not ``strategy``,
    ``inter_op``, ``intra_op``).

    >>> [round(r["speedup"], 2) for r in ablation()]
    [1.0, 1.3, 1.34, 1.53]
    """
    for bad in ("strategy", "inter_op", "intra_op"):
        if bad in kw:
            raise ValueError(f"{bad} is set by each ablation step; do not pass it")
    rows = []
    for label, strategy, inter, intra in ABLATION_STEPS:
        t = layer_timeline(shape, strategy, inter_op=inter, intra_op=intra, **kw)
        rows.append({"label": label, "timeline": t, "layer_time": t.layer_time})
    base = rows[0]["layer_time"]
    for r in rows:
        r["speedup"] = base / r["layer_time"]
    return rows


def fit_memory_bound(shape: MoeShape = INTERNAL_352B, *, share: float = 1.0 / 3.0,
                     hw: NodeModel = H800_NODE, **kw) -> float:
    """The ``memory_bound`` factor of :class:`NodeModel` at which attention and the GEMMs take
    ``share`` (in (0, 1]) of the time of MegaScale-MoE's layer (SP+EP, both overlaps) — the
    paper puts attention plus GroupedGEMM at about one third of a layer (§7, Fig. 13a) [paper].
    ``kw`` as :func:`layer_timeline` (not ``strategy``, ``inter_op``, ``intra_op``, ``hw``).
    Returns 0 when the layer already meets the share. Bisection to 1e-6 (model).

    >>> round(fit_memory_bound(), 2)
    3.05
    """
    share = check_real("share", share, lo=0.0, hi=1.0, lo_open=True)
    check_instance("hw", hw, NodeModel, "e.g. H800_NODE")
    for bad in ("strategy", "inter_op", "intra_op"):
        if bad in kw:
            raise ValueError(f"{bad} is fixed by the fit (MegaScale-MoE's layer); do not pass it")

    def run(r):
        return layer_timeline(shape, "sp_ep", inter_op=True, intra_op=True,
                              hw=hw.with_(memory_bound=r), **kw)

    kernels = run(0.0).compute_time  # attention and the GEMMs, SM taxes included
    if kernels <= share * run(0.0).layer_time:
        return 0.0
    lo, hi = 0.0, 100.0
    if kernels > share * run(hi).layer_time:
        raise ValueError(f"share={share:g} needs memory-bound work beyond 100x the kernels")
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if kernels > share * run(mid).layer_time else (lo, mid)
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------- a whole cluster


@dataclass(frozen=True)
class ClusterLayerTimeline(Checked):
    """One layer (forward + backward, one micro-batch) on every GPU of a cluster of nodes.

    ``gpu_time`` (s, per GPU): when its SMs and NVLink port are done; ``node_time`` (s, per
    node): its slowest GPU; ``makespan`` (s): the slowest node; ``loads``: expert load of each
    GPU (relative to the mean); ``n_ops``, ``n_edges``: size of the DAG that was run;
    ``ops``: the run itself, for the trace export (:func:`uneven.trace.to_chrome`; ``None``
    when not recorded): a dict of per-op ``start``, ``finish`` (s), ``resource`` (``2g`` the SMs
    and ``2g + 1`` the NVLink port of GPU ``g``), the predecessor CSR ``dep_ptr``, ``dep_src``,
    and the one-GPU template the ops copy (``ops_per_gpu`` ops, op ``g * ops_per_gpu + j`` is
    template op ``j`` on GPU ``g``): ``kind`` and ``item`` per template op, ``names``. Every
    field is checked when made directly; arrays are read-only.
    """

    gpu_time: np.ndarray = array(ndim=1, lo=0.0, repr=False)
    node_time: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, repr=False)
    loads: np.ndarray = array(ndim=1, lo=0.0, hi=64.0, repr=False)
    makespan: float = real(lo=0.0, unit="s")
    n_ops: int = integer(lo=0)
    n_edges: int = integer(lo=0)
    ops: object = recorded(("ops_per_gpu", "kind", "item", "names"), ops="n_ops", default=None,
                           repr=False, compare=False)

    def __post_init__(self):
        check_fields(self)
        gpu, node = self.gpu_time.size, self.node_time.size
        if gpu % node or gpu // node > 8:
            raise ValueError(f"gpu_time must hold a whole number of GPUs per node, at most 8 "
                             f"({node} nodes); got {gpu} entries")
        if self.loads.shape != self.gpu_time.shape:
            raise ValueError(f"loads must have one entry per GPU ({gpu}); got {self.loads.size}")
        if self.loads.size and self.loads.min() <= 0:
            raise ValueError(f"loads must be in (0, 64]; got entries from {self.loads.min()}")
        if self.makespan != float(self.node_time.max()):
            raise ValueError(f"makespan must be the slowest node's time "
                             f"{float(self.node_time.max())}; got {self.makespan}")


def cluster_layer_timeline(n_nodes: int, shape: MoeShape = INTERNAL_352B,
                           strategy: str = "sp_ep", *, inter_op: bool = True,
                           intra_op: bool = True, n_tiles: int = 16, order: str = "sorted",
                           loads=None, hw: NodeModel = H800_NODE, seed: int = 0,
                           gpus_per_node: int = 8) -> ClusterLayerTimeline:
    """:func:`layer_timeline` on every GPU of ``n_nodes`` nodes (up to 4,096) in one run of the
    timeline engine, with the collectives coupling the GPUs of each node: a collective starts
    on a GPU only when every GPU of its node has produced its input, and its consumer waits
    for every GPU's part. Nodes are independent within one layer (pipeline and data-parallel
    traffic cross nodes between layers and iterations), so the slowest node's busiest GPU sets
    the layer's pace.

    ``loads`` (per GPU, ``n_nodes * gpus_per_node`` values > 0, the expert tokens of each GPU
    relative to the mean, at most 64) defaults to 1 everywhere. The run holds about
    ``n_nodes · gpus_per_node`` copies of one GPU's operators (some 250 ops at ``n_tiles=16``,
    some 8,000 at 512) and their edges, which must fit the budgets of :mod:`uneven.limits`
    at about 160 bytes per op and edge: with the default 2 GiB some 2,500 nodes at
    ``n_tiles=16``, some 100 at 512.

    >>> c = cluster_layer_timeline(2, loads=[1.0] * 15 + [1.3])
    >>> bool(c.node_time[1] > c.node_time[0]), c.makespan == float(c.node_time[1])
    (True, True)
    """
    n_nodes = check_int("n_nodes", n_nodes, lo=1, hi=4096)
    g = check_int("gpus_per_node", gpus_per_node, lo=1, hi=8)
    shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed = _check_common(
        shape, strategy, g, inter_op, intra_op, n_tiles, order, hw, seed, "gpus_per_node")
    n_gpus = n_nodes * g
    if loads is None:
        loads = np.ones(n_gpus)
    loads = as_float_array("loads", loads, ndim=1, shape=(n_gpus,), lo=0.0, lo_open=True)
    if loads.max() > 64:
        raise ValueError(f"loads must be <= 64 (relative to the mean); largest is {loads.max()}")
    (dur, res, t_kind, t_item, loaded, esrc, edst, _fwd, t_names, items, first, last,
     comm_item) = _template(shape, strategy, n, inter_op, intra_op, n_tiles, order, hw, seed,
                            False)
    k = dur.size
    n_pairs = sum(last[dep].size * first[it.name].size for it in items for dep in it.deps
                  if comm_item.get(it.name) or comm_item.get(dep))
    n_ops = n_gpus * k
    n_edges = n_gpus * esrc.size + n_nodes * g * (g - 1) * n_pairs
    what = f"{n_ops:,} ops and {n_edges:,} edges ({k} ops per GPU at n_tiles={n_tiles})"
    check_bytes("n_nodes", n_nodes, 160.0 * (n_ops + n_edges), what)
    check_steps("n_nodes", n_nodes, 4.0 * (n_ops + n_edges), what)
    # Per-GPU copies of the template.
    scale = np.where(loaded[None, :], loads[:, None], 1.0)
    durs = (dur[None, :] * scale).ravel()
    ress = (res[None, :] + 2 * np.arange(n_gpus)[:, None]).ravel()  # SMs and NVLink per GPU
    offs = (np.arange(n_gpus, dtype=np.int64) * k)[:, None]
    src = [(esrc[None, :] + offs).ravel()]
    dst = [(edst[None, :] + offs).ravel()]
    # Collective coupling inside each node: for every dependency that involves a collective,
    # the consumer on GPU v waits for the producer on every other GPU u of the node.
    pairs_a, pairs_b = [], []
    for it in items:
        for dep in it.deps:
            if comm_item.get(it.name) or comm_item.get(dep):
                for a in last[dep]:
                    for b in first[it.name]:
                        pairs_a.append(a)
                        pairs_b.append(b)
    if pairs_a and g > 1:
        pa = np.asarray(pairs_a, np.int64)
        pb = np.asarray(pairs_b, np.int64)
        u, v = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
        mask = u != v
        u, v = u[mask], v[mask]
        node = (np.arange(n_nodes, dtype=np.int64) * g)[:, None, None]
        gu = (node + u[None, :, None]) * k + pa[None, None, :]
        gv = (node + v[None, :, None]) * k + pb[None, None, :]
        src.append(gu.ravel())
        dst.append(gv.ravel())
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    ptr, s, dl = edges_to_csr(durs.size, src, dst)
    tl = run_timeline(durs, ress, ptr, s, dl)
    gpu_time = tl.finish.reshape(n_gpus, k).max(axis=1)
    node_time = gpu_time.reshape(n_nodes, g).max(axis=1)
    for a in (gpu_time, node_time, loads):
        a.flags.writeable = False
    ops = dict(start=tl.start, finish=tl.finish, resource=tl.resource, dep_ptr=_frozen(ptr),
               dep_src=_frozen(s), ops_per_gpu=k, kind=t_kind, item=t_item, names=t_names)
    return trusted(ClusterLayerTimeline, gpu_time=gpu_time, node_time=node_time, loads=loads,
                   makespan=float(node_time.max()), n_ops=int(durs.size), n_edges=int(src.size),
                   ops=ops)


# --------------------------------------------------------------------------- iteration, memory


def iteration_model(layer_forward: float, layer_backward: float, *, n_gpus: int,
                    global_batch: int = 720, pp: int = 15, layers: int = 60,
                    gpus_per_node: int = 8, seq_len: int = 8192,
                    pp_send: float = 0.0) -> dict:
    """Iteration time and throughput of a 1F1B pipeline built from one layer's times.

    ``layer_forward`` / ``layer_backward`` (s) per micro-batch of one sequence; the model has
    ``layers`` layers over ``pp`` stages of one node each; ``dp = n_gpus / (gpus_per_node·pp)``
    replicas share ``global_batch`` sequences, so each pipeline runs ``m = global_batch / dp``
    micro-batches. The iteration is simulated with :func:`uneven.schedulers.pipeline.
    simulate_pipeline` (1F1B), ``pp_send`` (s) per stage-to-stage transfer; data-parallel
    gradient traffic and the optimizer step are assumed hidden or negligible (model).

    Returns ``dp``, ``m``, ``iteration_s``, ``tokens_per_s`` and ``bubble`` (the share of the
    iteration a stage idles). Sizes: ``layer_forward``, ``layer_backward`` and ``pp_send`` up to
    10**6 s; ``pp`` up to 1,024; ``layers`` up to 10**6; ``seq_len`` up to 10**8;
    ``n_gpus`` up to 2**20; at most 20,000 micro-batches per pipeline.

    >>> r = iteration_model(1e-3, 2e-3, n_gpus=240)
    >>> r["dp"], r["m"], round(r["iteration_s"], 3)   # (m + p - 1) x 4 layers x 3 ms
    (2, 360, 4.488)
    """
    from .pipeline import pipeline_schedule, simulate_pipeline

    tf = check_real("layer_forward", layer_forward, lo=0.0, lo_open=True, hi=1e6, unit="s")
    tb = check_real("layer_backward", layer_backward, lo=0.0, lo_open=True, hi=1e6, unit="s")
    n_gpus = check_int("n_gpus", n_gpus, lo=1, hi=1 << 20)
    pp = check_int("pp", pp, lo=1, hi=1024)
    g = check_int("gpus_per_node", gpus_per_node, lo=1, hi=64)
    layers = check_int("layers", layers, lo=pp, hi=10**6)
    if layers % pp:
        raise ValueError(f"pp must divide layers={layers}; got {pp}")
    if n_gpus % (g * pp):
        raise ValueError(f"n_gpus must be a multiple of gpus_per_node x pp = {g * pp}; got "
                         f"{n_gpus}")
    dp = n_gpus // (g * pp)
    global_batch = check_int("global_batch", global_batch, lo=dp)
    if global_batch % dp:
        raise ValueError(f"global_batch must be a multiple of dp={dp}; got {global_batch}")
    m = global_batch // dp
    if m > 20000:
        raise ValueError(f"global_batch / dp must be <= 20,000 micro-batches; got {m}")
    seq_len = check_int("seq_len", seq_len, lo=1, hi=10**8)
    send = check_real("pp_send", pp_send, lo=0.0, hi=1e6, unit="s")
    per_stage = layers // pp
    sched = pipeline_schedule("1f1b", pp, m) if pp > 1 else None
    if sched is None:
        it = m * per_stage * (tf + tb)
        bubble = 0.0
    else:
        r = simulate_pipeline(sched, per_stage * tf, per_stage * tb, transfer=send)
        it = r.iteration_time
        bubble = float(np.mean(r.bubble_fraction))
    tokens_per_s = global_batch * seq_len / it if it > 0 else math.inf
    if not math.isfinite(tokens_per_s):
        raise ValueError(f"layer_forward and layer_backward are too short for a finite "
                         f"throughput; got {tf} s and {tb} s")
    return {"dp": dp, "m": m, "iteration_s": it, "tokens_per_s": tokens_per_s,
            "bubble": bubble}


def training_flops_per_token(shape: MoeShape = INTERNAL_352B) -> float:
    """FLOPs per token of one training step as the layer model counts them, over all
    ``shape.layers`` layers: every GEMM three times its forward FLOPs (forward, input gradient,
    weight gradient) and the causal attention core 3.5 times (forward, then 2.5× in backward),
    exactly the work :func:`layer_timeline` times. Per token and layer the forward is
    ``2h²(1 + 2/m)`` (QKV) + ``2h²`` (projection) + ``6·k·h·h_ffn`` (SwiGLU experts) GEMM FLOPs
    and ``2·s·h`` in the attention core. Norms, router, embeddings and loss, and any
    recomputation are left out (model).

    >>> round(training_flops_per_token() / 1e9, 1)   # Internal-352B, 60 layers
    219.4
    """
    shape = check_instance("shape", shape, MoeShape, "e.g. INTERNAL_352B or MoeShape(...)")
    h, hf, k, m = float(shape.hidden), float(shape.ffn_hidden), shape.top_k, shape.m
    gemm = 2.0 * h * h * (1 + 2 / m) + 2.0 * h * h + 6.0 * k * h * hf
    core = 2.0 * shape.seq_len * h
    return shape.layers * (3.0 * gemm + 3.5 * core)


def mfu(tokens_per_s: float, flops_per_token: float, n_gpus: int,
        peak_flops: float = H800_NODE.peak_flops) -> float:
    """Model FLOPs utilisation: ``tokens_per_s · flops_per_token / (n_gpus · peak_flops)``, a
    share (0.3 means 30%). ``tokens_per_s`` for the whole job, ``flops_per_token`` per token of
    a training step, ``peak_flops`` per GPU (dense BF16 H800 by default).

    >>> round(mfu(1407.7e3, 282.2e9, 1440), 4)   # MegaScale-MoE at 1,440 H800 reports 27.89%
    0.2789
    """
    tps = check_real("tokens_per_s", tokens_per_s, lo=0.0, unit="tokens/s")
    fpt = check_real("flops_per_token", flops_per_token, lo=0.0, lo_open=True, unit="FLOP")
    n_gpus = check_int("n_gpus", n_gpus, lo=1, hi=1 << 24)
    peak = check_real("peak_flops", peak_flops, lo=0.0, lo_open=True, unit="FLOP/s")
    value = tps * fpt / (n_gpus * peak)
    if not math.isfinite(value):
        raise ValueError(f"tokens_per_s x flops_per_token must stay within the range of a "
                         f"float; got {tps} x {fpt}")
    return value


def memory_per_gpu(shape: MoeShape = INTERNAL_352B, strategy: str = "sp_ep", *, n: int = 8,
                   pp: int = 15, dp: int = 2, in_flight: int | None = None,
                   sar: bool = True) -> dict:
    """Memory per GPU (bytes) of the first pipeline stage: model state and activations.

    Model state per parameter: BF16 weight (2 B), FP32 gradient (4 B), FP32 master weight and
    Adam moments (12 B) sharded over the ``dp`` replicas (ZeRO-1). Attention weights are split
    ``n`` ways under TP and replicated under SP; experts are split ``n`` ways either way.
    Activations per layer and micro-batch from MegaScale-MoE's formula [paper],
    ``(2n + 2k + 3kf + 12 + 5/m)·bsh/n`` bytes, or with selective activation rematerialisation
    (``sar``) ``(2kf + 4 + 2/m)·bsh/n``; the same formula is used for TP+TP (the paper gives
    none for it). The first stage holds ``in_flight`` micro-batches (default ``pp``, 1F1B).
    Embeddings are left out. Returns ``weights``, ``grads``, ``optimizer``, ``activations``,
    ``total``.

    >>> sp = memory_per_gpu(strategy="sp_ep")["total"]
    >>> tp = memory_per_gpu(strategy="tp_tp")["total"]
    >>> round(100 * (sp / tp - 1), 1)        # SP's extra memory: replicated attention weights
    4.3
    """
    shape = check_instance("shape", shape, MoeShape, "e.g. INTERNAL_352B or MoeShape(...)")
    strategy = check_choice("strategy", strategy, STRATEGIES)
    n = check_int("n", n, lo=1, hi=1024)
    pp = check_int("pp", pp, lo=1, hi=shape.layers)
    dp = check_int("dp", dp, lo=1, hi=1 << 20)
    in_flight = pp if in_flight is None else check_int("in_flight", in_flight, lo=1, hi=1 << 16)
    sar = check_bool("sar", sar)
    layers = -(-shape.layers // pp)
    attn = shape.attention_params() / (n if strategy == "tp_tp" else 1)
    experts = shape.n_experts * shape.expert_params() / n
    params = layers * (attn + experts + shape.hidden * shape.n_experts)
    k, f, m = shape.top_k, shape.f, shape.m
    coef = (2 * k * f + 4 + 2 / m) if sar else (2 * n + 2 * k + 3 * k * f + 12 + 5 / m)
    act = layers * in_flight * coef * shape.bsh / n
    out = {"weights": 2.0 * params, "grads": 4.0 * params, "optimizer": 12.0 * params / dp,
           "activations": act}
    out["total"] = sum(out.values())
    return out

