"""Every timeline the library makes, as a :class:`~uneven.trace._table.TraceTable`.

:func:`as_table` picks the adapter by the result's type:

=============================================== ================================================
result                                          processes / threads
=============================================== ================================================
``PipelineResult`` (``simulate_pipeline``)      one per stage / its GPU stream, its activation
                                                and gradient CPU senders
``LayerTimeline`` (``layer_timeline``)          the GPU / SMs, NVLink port, NIC
``ClusterLayerTimeline``                        one per GPU / SMs, NVLink port
``LayerResult`` (``ep.decode.decode_layer``)    one per GPU (dispatch NVLink, experts, combine
                                                NVLink), per NIC (dispatch and combine RDMA
                                                streams), per host (relay chain)
``CoreTimeline`` (``ep.superpod.core_timeline``) one per rank (die) / one per core; the
                                                zero-length joins of barriers and arrivals
                                                in a process of their own
``FluidResult`` (``engines.fluid``)             one per source (``sources=``; else one) /
                                                lanes of flows that do not overlap
anything with ``trace_table()``                 what that method says (a replayed profile)
=============================================== ================================================

Every time is the model's (s). The adapters only read the results; none re-runs a simulation.

>>> from uneven.schedulers.moe_layer import layer_timeline
>>> t = as_table(layer_timeline(strategy="sp_ep"))
>>> t.process_names, t.thread_names
(('GPU 0 (model)',), ('SMs', 'NVLink', 'NIC'))
"""

from __future__ import annotations

import numpy as np

from .._validate import _show, as_int_array
from ._table import COMMUNICATION, COMPUTE, CPU, SYNC, TraceTable

__all__ = ["as_table"]


def as_table(result, **options) -> TraceTable:
    """The :class:`TraceTable` of a library result (see the module doc); ``options`` go to the
    adapter (only fluid flows take one: ``sources``, the source GPU of each flow)."""
    if isinstance(result, TraceTable):
        _no_options(options, "a TraceTable")
        return result
    if hasattr(result, "trace_table") and callable(result.trace_table):
        return result.trace_table(**options)
    for cls_path, fn in _ADAPTERS:
        if _is(result, cls_path):
            return fn(result, **options)
    kinds = ", ".join(c.rsplit(".", 1)[1] for c, _ in _ADAPTERS)
    raise ValueError(f"result must be a timeline result ({kinds}, a TraceTable, or an object "
                     f"with a trace_table() method); got {_show(result)}")


def _is(obj, cls_path: str) -> bool:
    mod, name = cls_path.rsplit(".", 1)
    return any(c.__name__ == name and c.__module__ == mod for c in type(obj).__mro__)


def _no_options(options, what):
    if options:
        raise ValueError(f"options {sorted(options)} do not apply to {what}")


def _names(labels, codes):
    labels = list(labels)
    return lambda ids: [labels[c] for c in codes[ids].tolist()]


# -------------------------------------------------------------------------------- pipeline


def _pipeline(r, **options):
    from ..schedulers.pipeline import COMPUTE_KINDS, OP_KINDS, SEND_ACT, SEND_GRAD

    _no_options(options, "a pipeline result")
    p = r.schedule.p
    stage_of_res = np.r_[np.arange(p), np.repeat(np.arange(p), 2)]
    cat = np.where(np.isin(r.kind, COMPUTE_KINDS), COMPUTE,
                   np.where(r.resource < p, COMMUNICATION, CPU))
    deps = r.dependencies() if hasattr(r, "dependencies") else (None, None)
    short = {SEND_ACT: "send act ", SEND_GRAD: "send grad "}

    bases = [short.get(k, OP_KINDS[k]) for k in range(len(OP_KINDS))]

    def label(ids):
        out = list(map(str.__add__, [bases[k] for k in r.kind[ids].tolist()],
                       map(str, r.microbatch[ids].tolist())))
        if r.schedule.v > 1:
            out = list(map(str.__add__, out, [f".{c}" for c in r.chunk[ids].tolist()]))
        pair = r.pair_microbatch[ids]
        for k in np.flatnonzero(pair >= 0).tolist():  # F&B: both halves' micro-batches
            out[k] = f"F{r.microbatch[ids[k]]}&B{pair[k]}"
        return out

    def details(ids):
        return {"stage": r.stage[ids], "microbatch": r.microbatch[ids], "chunk": r.chunk[ids],
                "kind": [OP_KINDS[k] for k in r.kind[ids].tolist()],
                "pair_microbatch": r.pair_microbatch[ids]}  # an F&B's backward half (else -1)

    return TraceTable(
        start=r.start, finish=r.finish, thread=r.resource,
        thread_process=tuple(stage_of_res.tolist()),
        thread_names=tuple("GPU stream" if i < p else n.split(" ", 2)[2]
                           for i, n in enumerate(r.resource_names)),
        process_names=tuple(f"stage {s} (model)" for s in range(p)),
        category=cat, label=label, details=details, dep_ptr=deps[0], dep_src=deps[1],
        metadata={"source": "uneven.schedulers.pipeline.simulate_pipeline",
                  "schedule": r.schedule.kind, "p": p, "m": r.schedule.m, "mode": r.mode,
                  "iteration_time_s": r.iteration_time})


# -------------------------------------------------------------------------------- MoE layer


def _layer_category(kind, resource):
    from ..schedulers.moe_layer import LAYER_KINDS

    comm = (kind == LAYER_KINDS.index("comm")) | (kind == LAYER_KINDS.index("send"))
    return np.where(comm | (resource > 0), COMMUNICATION, COMPUTE)


def _moe_layer(t, **options):
    from ..schedulers.moe_layer import LAYER_KINDS, RESOURCES

    _no_options(options, "a layer timeline")
    return TraceTable(
        start=t.start, finish=t.finish, thread=t.resource, thread_process=(0, 0, 0),
        thread_names=RESOURCES, process_names=("GPU 0 (model)",),
        category=_layer_category(t.kind, t.resource), label=_names(t.names, t.item),
        details=lambda ids: {"kind": [LAYER_KINDS[k] for k in t.kind[ids].tolist()]},
        dep_ptr=t.dep_ptr, dep_src=t.dep_src,
        metadata={"source": "uneven.schedulers.moe_layer.layer_timeline",
                  "strategy": t.strategy, "layer_time_s": t.layer_time})


def _cluster_layer(c, **options):
    from ..schedulers.moe_layer import LAYER_KINDS, RESOURCES

    _no_options(options, "a cluster layer timeline")
    ops = _recorded(c.ops, "cluster layer timeline")
    k = ops["ops_per_gpu"]
    n_gpus = c.gpu_time.size
    per_node = n_gpus // c.node_time.size
    tmpl = np.arange(ops["start"].size) % k
    kind, item = np.asarray(ops["kind"])[tmpl], np.asarray(ops["item"])[tmpl]
    names = ops["names"]
    return TraceTable(
        start=ops["start"], finish=ops["finish"], thread=ops["resource"],
        thread_process=tuple(np.repeat(np.arange(n_gpus), 2).tolist()),
        thread_names=tuple(RESOURCES[:2]) * n_gpus,
        process_names=tuple(f"GPU {g} (node {g // per_node}, model)" for g in range(n_gpus)),
        category=_layer_category(kind, ops["resource"] % 2), label=_names(names, item),
        details=lambda ids: {"kind": [LAYER_KINDS[x] for x in kind[ids].tolist()],
                             "gpu": ids // k, "load": c.loads[ids // k]},
        dep_ptr=ops["dep_ptr"], dep_src=ops["dep_src"],
        metadata={"source": "uneven.schedulers.moe_layer.cluster_layer_timeline",
                  "makespan_s": c.makespan})


def _recorded(ops, what):
    if ops is None:
        raise ValueError(f"result must carry its ops (the {what} was built without them); "
                         "use the result the library function returns")
    return ops


# -------------------------------------------------------------------------------- decode layer


def _decode_layer(r, **options):
    _no_options(options, "a decode layer")
    ops = _recorded(r.ops, "decode layer")
    K, N, H, sph = ops["n_nics"], ops["n_gpus"], ops["n_hosts"], ops["streams_per_nic"]
    res = ops["resource"]
    # resources: [K dispatch RDMA | N dispatch NVLink | N experts | N combine NVLink |
    #             K combine RDMA | H relay chains]; threads keep that order
    proc = np.r_[N + np.arange(K), np.arange(N), np.arange(N), np.arange(N), N + np.arange(K),
                 N + K + np.arange(H)]
    tnames = (("dispatch RDMA",) * K + ("dispatch NVLink",) * N + ("experts",) * N
              + ("combine NVLink",) * N + ("combine RDMA",) * K + ("relay chain",) * H)
    n_threads = 2 * K + 3 * N + H
    block = np.empty(res.size, dtype=np.int64)
    names = list(ops["blocks"])
    for b, (lo, hi) in enumerate(ops["blocks"].values()):
        block[lo:hi] = b
    first = np.array([lo for lo, _ in ops["blocks"].values()])
    cat = np.where(block == names.index("expert"), COMPUTE, COMMUNICATION)
    tr = r.traffic
    slot_tokens = tr.tokens

    def label(ids):
        idx = ids - first[block[ids]]
        return [f"{names[b]} {i}" for b, i in zip(block[ids].tolist(), idx.tolist(), strict=True)]

    def details(ids):
        b = block[ids]
        idx = ids - first[b]
        is_slot = (b >= 1) & (b <= 3)
        return {"block": [names[x] for x in b.tolist()],
                "slot": np.where(is_slot, idx, -1),
                "gpu": np.where(is_slot, ops["slot_gpu"][np.where(is_slot, idx, 0)], -1),
                "tokens": np.where(b == 2, slot_tokens[np.where(b == 2, idx, 0)], 0),
                "nic_stream": np.where(is_slot, -1, idx % sph)}

    return TraceTable(
        start=ops["start"], finish=ops["finish"], thread=res,
        thread_process=tuple(proc[:n_threads].tolist()), thread_names=tnames,
        process_names=tuple([f"GPU {g} (model)" for g in range(N)]
                            + [f"NIC {k} (model)" for k in range(K)]
                            + [f"host {h} relay (model)" for h in range(H)]),
        category=cat, label=label, details=details, dep_ptr=ops["dep_ptr"],
        dep_src=ops["dep_src"], rank_of_process=tuple(range(N + K + H)),
        metadata={"source": "uneven.ep.decode.decode_layer", "layer_time_s": r.layer_time})


# -------------------------------------------------------------------------------- superpod cores


def _core_timeline(t, **options):
    from ..ep.superpod import CORE_OP_KINDS

    _no_options(options, "a core timeline")
    n, C = t.plan.n_ranks, t.cores
    join = t.core < 0
    # threads: rank r core c -> r*C + c; all joins on one thread of one extra process
    thread = np.where(join, n * C, t.rank * C + t.core)
    kinds = CORE_OP_KINDS + ("join",)
    code = np.where(join, len(CORE_OP_KINDS), t.kind)
    cat = np.where(join, SYNC, np.where(t.kind == 2, COMMUNICATION, COMPUTE))
    return TraceTable(
        start=t.start, finish=t.finish, thread=thread,
        thread_process=tuple(np.r_[np.repeat(np.arange(n), C), n].tolist()),
        thread_names=tuple(f"core {c}" for c in range(C)) * n + ("joins",),
        process_names=tuple(f"die {r} (model)" for r in range(n)) + ("barriers and arrivals",),
        category=cat, label=_names(kinds, code),
        details=lambda ids: {"rank": t.rank[ids], "core": t.core[ids]},
        dep_ptr=t.dep_ptr, dep_src=t.dep_src,
        metadata={"source": "uneven.ep.superpod.core_timeline", "latency_s": t.latency})


# -------------------------------------------------------------------------------- fluid flows


def _fluid(r, *, sources=None, names=None):
    n = r.start.size
    if sources is None:
        src = np.zeros(n, dtype=np.int64)
    else:
        src = as_int_array("sources", sources, ndim=1, shape=(n,), lo=0)
    finish = np.where(np.isnan(r.finish), r.start, r.finish)
    uniq, proc = np.unique(src, return_inverse=True)
    lane = _lanes(proc, r.start, finish)
    # one thread per (process, lane)
    key = proc * (int(lane.max()) + 1 if n else 1) + lane
    tkeys, thread = np.unique(key, return_inverse=True)
    width = int(lane.max()) + 1 if n else 1
    tproc = (tkeys // width).tolist()
    if names is not None and len(names) != n:
        raise ValueError(f"names must give one name per flow ({n}); got {len(names)}")
    label = ((lambda ids: [str(names[i]) for i in ids.tolist()]) if names is not None
             else (lambda ids: [f"flow {i}" for i in ids.tolist()]))
    return TraceTable(
        start=r.start, finish=finish, thread=thread.ravel(),
        thread_process=tuple(tproc) if n else (0,),
        thread_names=tuple(f"flows {k % width}" for k in tkeys.tolist()) if n else ("flows",),
        process_names=(tuple(f"GPU {s} (model)" for s in uniq.tolist()) if sources is not None
                       else ("flows (model)",)) if n else ("flows (model)",),
        category=np.full(n, COMMUNICATION), label=label,
        details=lambda ids: {"bytes": r.delivered[ids], "source": src[ids]},
        rank_of_process=tuple(uniq.tolist()) if (sources is not None and n) else None,
        metadata={"source": "uneven.engines.fluid.simulate_fluid", "makespan_s": r.makespan})


def _lanes(group, start, finish) -> np.ndarray:
    """Smallest lane per flow so that flows of one group on one lane never overlap (greedy by
    start time): a trace viewer nests the events of a thread, and flows overlap freely."""
    import heapq

    lane = np.zeros(start.size, dtype=np.int64)
    busy: dict = {}  # group -> heap of (finish, lane)
    idle: dict = {}  # group -> heap of free lanes
    top: dict = {}
    for i in np.lexsort((start, group)).tolist():
        g = int(group[i])
        b, f = busy.setdefault(g, []), idle.setdefault(g, [])
        while b and b[0][0] <= start[i]:
            heapq.heappush(f, heapq.heappop(b)[1])
        if f:
            use = heapq.heappop(f)
        else:
            use = top.get(g, 0)
            top[g] = use + 1
        lane[i] = use
        heapq.heappush(b, (float(finish[i]), use))
    return lane


_ADAPTERS = (
    ("uneven.schedulers.pipeline.PipelineResult", _pipeline),
    ("uneven.schedulers.moe_layer.LayerTimeline", _moe_layer),
    ("uneven.schedulers.moe_layer.ClusterLayerTimeline", _cluster_layer),
    ("uneven.ep.decode.LayerResult", _decode_layer),
    ("uneven.ep.superpod.CoreTimeline", _core_timeline),
    ("uneven.engines.fluid.FluidResult", _fluid),
)
