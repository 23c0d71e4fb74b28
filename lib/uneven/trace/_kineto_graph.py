"""The timeline DAG of a set of Kineto traces, calibrated to replay them (private).

Built by :mod:`uneven.trace.kineto`; the model is described there. Shapes (all times in
integer nanoseconds from the traces' common origin, the earliest recorded event):

* **display ops** (what a reader sees): every GPU op (ids ``0 .. n_gpu-1``) then every CPU-side
  runtime/driver call;
* **engine nodes** (what :func:`uneven.engines.timeline.run_timeline` runs): a plain GPU op is one
  node; an NCCL kernel is two on its stream, *arrive* (length 0) then *transfer*; a CPU call is a
  point (length 0) at its start, and a blocking call (``cudaStreamSynchronize`` ...) a second
  point where it returns; each collective has a *join* node on a resource of its own.

Edges: launch -> GPU op (calibrated launch latency), event record -> stream wait (GPU -> GPU),
arrivals -> join -> transfers (a collective), GPU op -> the blocking call that waited for it,
and consecutive calls of one CPU thread (their recorded gap, start to start).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ._kineto_kinds import KIND_CODE, comm_kind, compute_kind, is_nccl, is_p2p
from ._kineto_read import _ranks, fail, where
from ._kineto_waits import dependencies

# roles of engine nodes
PLAIN, ARRIVE, TRANSFER, POINT, RETURN, JOIN = range(6)
# kinds of edges
LAUNCH, WAIT, GATHER, SCATTER, CHAIN, SYNC = range(6)
EDGE_KINDS = ("launch", "stream wait", "arrival", "collective", "cpu order", "cpu sync")



class Graph:
    """Everything a replay needs, plus what the result's labels and details read."""


def _cat(parts, dtype):
    return np.asarray([x for p in parts for x in p], dtype=dtype)


def build(ranks: list, waits: str, unmatched: str) -> Graph:
    """The calibrated DAG of the traces ``ranks`` (list of RankEvents sorted by rank)."""
    g = Graph()
    g.ranks = tuple(ev.rank for ev in ranks)
    g.sources = tuple(ev.source for ev in ranks)
    g.rank_notes = tuple(ev.rank_note for ev in ranks)
    _ops(g, ranks)
    _threads(g)
    _lanes(g)
    _launches(g, ranks)
    _kinds(g)
    g.wait_src, g.wait_dst, g.awaits, g.wait_mode, g.unresolved = dependencies(g, ranks, waits)
    _collectives(g, ranks, unmatched)
    _nodes(g)
    _edges_and_calibration(g)
    return g


# --------------------------------------------------------------------------- display ops


def _ops(g: Graph, ranks: list):
    g.n_gpu = sum(ev.n_gpu for ev in ranks)
    g.n_cpu = sum(len(ev.c_ts) for ev in ranks)
    pos = [np.full(ev.n_gpu, i, dtype=np.int64) for i, ev in enumerate(ranks)]
    cpos = [np.full(len(ev.c_ts), i, dtype=np.int64) for i, ev in enumerate(ranks)]
    g.op_proc = np.concatenate(pos + cpos) if g.n_gpu + g.n_cpu else np.zeros(0, np.int64)
    ts = np.concatenate([_cat([ev.g_ts for ev in ranks], np.int64),
                         _cat([ev.c_ts for ev in ranks], np.int64)])
    dur = np.concatenate([_cat([ev.g_dur for ev in ranks], np.int64),
                          _cat([ev.c_dur for ev in ranks], np.int64)])
    g.origin = int(ts.min())  # ns, in the traces' own clock
    g.rec_start = ts - g.origin
    g.rec_finish = g.rec_start + dur
    g.rec_dur = dur
    g.names = [n for ev in ranks for n in ev.g_name] + [n for ev in ranks for n in ev.c_name]
    g.args = [a for ev in ranks for a in ev.g_args] + [a for ev in ranks for a in ev.c_args]
    g.event = np.concatenate([_cat([ev.g_event for ev in ranks], np.int64),
                              _cat([ev.c_event for ev in ranks], np.int64)])
    g.corr = np.concatenate([_cat([ev.g_corr for ev in ranks], np.int64),
                             _cat([ev.c_corr for ev in ranks], np.int64)])
    g.gpu_cat = _cat([ev.g_cat for ev in ranks], np.int64)
    g.dev = _cat([ev.g_dev for ev in ranks], np.int64)
    g.stream = _cat([ev.g_stream for ev in ranks], np.int64)
    g.pid = _cat([ev.c_pid for ev in ranks], np.int64)
    g.tid = _cat([ev.c_tid for ev in ranks], np.int64)
    # flow fallback: a GPU op without args.correlation takes the id of the ac2g flow bound to it
    for k in np.flatnonzero(g.corr[:g.n_gpu] < 0):
        ev = ranks[g.op_proc[k]]
        flow_f = ev.flows()[1]
        fid = flow_f.get((int(g.dev[k]), int(g.stream[k]), int(ts[k])))
        if fid is not None:
            g.corr[k] = fid
    for k in np.flatnonzero(g.corr[g.n_gpu:] < 0) + g.n_gpu:
        ev = ranks[g.op_proc[k]]
        fid = ev.flows()[0].get((int(g.pid[k - g.n_gpu]), int(g.tid[k - g.n_gpu]),
                                 int(ts[k])))
        if fid is not None:
            g.corr[k] = fid


def _threads(g: Graph):
    """One resource per (rank, device, stream) and per (rank, pid, tid); thread names."""
    n_gpu = g.n_gpu
    keys = {}
    names, procs = [], []
    gkeys = list(zip(g.op_proc[:n_gpu].tolist(), g.dev.tolist(), g.stream.tolist(),
                     strict=True))
    ckeys = list(zip(g.op_proc[n_gpu:].tolist(), g.pid.tolist(), g.tid.tolist(), strict=True))
    devs_of = defaultdict(set)
    for p, d, _ in gkeys:
        devs_of[p].add(d)
    for p in range(len(g.ranks)):
        for key in sorted({k for k in gkeys if k[0] == p}):
            keys[("g",) + key] = len(names)
            dev = f"GPU {key[1]} " if len(devs_of[p]) > 1 else ""
            names.append(f"{dev}stream {key[2]}")
            procs.append(p)
        for key in sorted({k for k in ckeys if k[0] == p}):
            keys[("c",) + key] = len(names)
            names.append(f"CPU thread {key[2]}")
            procs.append(p)
    g.thread_names = tuple(names)
    g.thread_proc = tuple(procs)
    g.gpu_threads = [v for k, v in keys.items() if k[0] == "g"]
    g.cpu_threads = [v for k, v in keys.items() if k[0] == "c"]
    g.op_thread = np.asarray([keys[("g",) + k] for k in gkeys] + [keys[("c",) + k]
                                                                  for k in ckeys],
                             dtype=np.int64)
    g.stream_key = {k[1:]: v for k, v in keys.items() if k[0] == "g"}  # (proc, dev, stream)
    # ops of each thread in run order: recorded start, then finish, then file order
    order = np.lexsort((g.event, g.rec_finish, g.rec_start, g.op_thread))
    g.thread_order = order
    bounds = np.searchsorted(g.op_thread[order], np.arange(len(names) + 1))
    g.thread_ptr = bounds


def _lanes(g: Graph):
    """Engine resources of the GPU ops: the ops of one stream run one after another, except
    where the trace shows them overlapping (the kernels of a CUDA graph, for one); such an op
    goes on a parallel lane of its stream, the lane whose last op ended latest before it
    started (so the op it followed stays its predecessor)."""
    lane = np.empty(g.n_gpu, dtype=np.int64)
    n_lanes, extra = 0, 0
    for t in g.gpu_threads:
        ops = g.thread_order[g.thread_ptr[t]:g.thread_ptr[t + 1]]
        ends = []  # last finish on each lane of this stream
        for i, s, f in zip(ops.tolist(), g.rec_start[ops].tolist(), g.rec_finish[ops].tolist(),
                           strict=True):
            best = -1
            for k, e in enumerate(ends):
                if e <= s and (best < 0 or e > ends[best]):
                    best = k
            if best < 0:
                best = len(ends)
                ends.append(f)
                extra += best > 0
            ends[best] = f
            lane[i] = n_lanes + best
        n_lanes += len(ends)
    g.lane, g.n_lanes, g.overlapping = lane, n_lanes, extra


def _launches(g: Graph, ranks: list):
    """``launch[i]``: the CPU call that launched GPU op i (same correlation), or -1."""
    n_gpu = g.n_gpu
    g.launch = np.full(n_gpu, -1, dtype=np.int64)
    by_corr = {}
    for k in range(n_gpu, n_gpu + g.n_cpu):
        c = int(g.corr[k])
        if c >= 0:
            key = (int(g.op_proc[k]), c)
            if key not in by_corr or g.rec_start[k] < g.rec_start[by_corr[key]]:
                by_corr[key] = k
    g.call_by_corr = by_corr
    for i in range(n_gpu):
        c = int(g.corr[i])
        if c >= 0:
            g.launch[i] = by_corr.get((int(g.op_proc[i]), c), -1)
    has = g.launch >= 0
    # the launch time orders the ops of a stream as the CPU issued them; GPU start stands in
    # for an op whose launch is not in the trace (it is never earlier than its launch)
    g.issue = np.where(has, g.rec_start[np.maximum(g.launch, 0)], g.rec_start[:n_gpu])
    g.launched = np.zeros(g.n_cpu, dtype=bool)
    g.launched[g.launch[has] - n_gpu] = True


def _kinds(g: Graph):
    kinds = np.empty(g.n_gpu + g.n_cpu, dtype=np.int64)
    g.is_comm = np.zeros(g.n_gpu, dtype=bool)
    seen = {}  # kernel names repeat: classify each once
    for i in range(g.n_gpu):
        name, args, cat = g.names[i], g.args[i], g.gpu_cat[i]
        if cat == 1:
            kinds[i] = KIND_CODE["memcpy"]
        elif cat == 2:
            kinds[i] = KIND_CODE["memset"]
        elif is_nccl(name, args):
            kinds[i] = KIND_CODE[comm_kind(name, args)]
            g.is_comm[i] = True
        else:
            code = seen.get(name)
            if code is None:
                code = seen[name] = KIND_CODE[compute_kind(name)]
            kinds[i] = code
    kinds[g.n_gpu:] = KIND_CODE["cpu"]
    g.kind = kinds


# --------------------------------------------------------------------------- collectives


def _collectives(g: Graph, ranks: list, unmatched: str):
    """Group NCCL kernels into collectives: by process group and ``Seq`` where PyTorch
    recorded it, else by their order within the group; point-to-point ops stay alone."""
    comm = np.flatnonzero(g.is_comm)
    # issue order within a rank: launch time, else GPU start
    comm = comm[np.lexsort((g.event[comm], g.issue[comm], g.op_proc[comm]))]
    loaded = set(range(len(g.ranks)))
    rank_pos = {r: p for p, r in enumerate(g.ranks)}
    groups, expect, count = defaultdict(list), {}, defaultdict(int)
    g.coll_label = {}
    for i in comm.tolist():
        p = int(g.op_proc[i])
        name, args = g.names[i], g.args[i]
        if is_p2p(name, args):
            groups[("p2p", i)].append(i)
            expect[("p2p", i)] = {p}
            continue
        pg = args.get("Process Group Name")
        members = _ranks(args.get("Process Group Ranks"))
        if pg is None:
            pg = "" if members is None else str(list(members))
        pg = str(pg)
        if members is None:
            members = ranks[p].pg_ranks.get(pg)
        seq = args.get("Seq", args.get("seq"))
        if isinstance(seq, (int, np.integer)) and not isinstance(seq, bool):
            base = (pg, "Seq", int(seq))
        else:
            base = (pg, "order", count[(p, pg)])
            count[(p, pg)] += 1
        n = count[(p, base)]
        count[(p, base)] += 1
        key = base + (n,)
        groups[key].append(i)
        if members is None:
            want = set(loaded)
        else:
            want = {rank_pos[r] for r in members if r in rank_pos}
        want.add(p)
        expect[key] = expect.get(key, set()) | want
    colls = []
    for key, ops in groups.items():
        present = [int(g.op_proc[i]) for i in ops]
        if len(set(present)) == len(present) and set(present) == expect[key]:
            colls.append(ops)
            continue
        if unmatched == "error":
            _unmatched(g, key, ops, present, expect[key])
        colls.extend([i] for i in ops)  # unmatched="ignore": each kernel on its own
    colls.sort(key=lambda ops: min(g.rec_start[ops]))
    g.coll_ptr = np.zeros(len(colls) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in colls], out=g.coll_ptr[1:])
    g.coll_ops = np.asarray([i for c in colls for i in c], dtype=np.int64)
    g.op_coll = np.full(g.n_gpu, -1, dtype=np.int64)
    g.op_coll[g.coll_ops] = np.repeat(np.arange(len(colls)), [len(c) for c in colls])


def _unmatched(g, key, ops, present, want):
    i = ops[0]
    p = int(g.op_proc[i])
    what = (f"collective '{g.args[i].get('Collective name', g.names[i][:40])}' (process group "
            f"{key[0]!r}, {key[1]} {key[2]})")
    dup = [q for q in set(present) if present.count(q) > 1]
    if dup:
        fail(f"{where(g.sources[p], int(g.event[i]), {'name': g.names[i]})}: {what} appears "
             f"twice on rank {g.ranks[dup[0]]}")
    missing = sorted(want - set(present))
    if missing:
        q = missing[0]
        fail(f"{where(g.sources[p], int(g.event[i]), {'name': g.names[i]})}: {what} of rank "
             f"{g.ranks[p]} has no matching kernel on rank {g.ranks[q]} ({g.sources[q]}); "
             "was it cut off by the profiling window? Pass unmatched='ignore' to replay such "
             "kernels unjoined")
    extra = sorted(set(present) - want)
    q = extra[0]
    fail(f"{where(g.sources[p], int(g.event[i]), {'name': g.names[i]})}: {what} also runs on "
         f"rank {g.ranks[q]}, which its process group does not list")


# --------------------------------------------------------------------------- engine nodes


def _nodes(g: Graph):
    n_gpu, n_cpu = g.n_gpu, g.n_cpu
    gpu_order = g.thread_order[np.isin(g.thread_order, np.arange(n_gpu))]
    gpu_order = gpu_order[np.argsort(g.lane[gpu_order], kind="stable")]  # lane by lane
    per = 1 + g.is_comm[gpu_order].astype(np.int64)
    first = np.zeros(gpu_order.size, dtype=np.int64)
    np.cumsum(per[:-1], out=first[1:])
    n_gnodes = int(per.sum())
    g.begin = np.empty(n_gpu + n_cpu, dtype=np.int64)
    g.end = np.empty(n_gpu + n_cpu, dtype=np.int64)
    g.begin[gpu_order] = first
    g.end[gpu_order] = first + per - 1
    role = np.full(n_gnodes, PLAIN, dtype=np.int64)
    comm_first = first[g.is_comm[gpu_order]]
    role[comm_first] = ARRIVE
    role[comm_first + 1] = TRANSFER
    node_op = np.repeat(gpu_order, per)
    node_res = g.lane[node_op]
    # CPU points: one per call at its start, one more where a blocking call returns
    blocking = defaultdict(list)
    for call, op in g.awaits:
        blocking[int(call)].append(int(op))
    g.blocking = blocking
    cpu = np.arange(n_gpu, n_gpu + n_cpu)
    ret = np.asarray(sorted(blocking), dtype=np.int64)
    pt_op = np.concatenate([cpu, ret])
    pt_role = np.concatenate([np.full(cpu.size, POINT), np.full(ret.size, RETURN)])
    pt_time = np.concatenate([g.rec_start[cpu], np.zeros(ret.size, dtype=np.int64)])
    # a call returns when the GPU work it waits for is done (never before it was called, and
    # at the latest when the trace says it returned)
    g.ret_at = {}
    rec_model_finish = _model_finishes(g)
    for j, call in enumerate(ret.tolist()):
        done = max(rec_model_finish[op] for op in blocking[call])
        at = min(int(g.rec_finish[call]), max(int(g.rec_start[call]), int(done)))
        g.ret_at[call] = at
        pt_time[cpu.size + j] = at
    order = np.lexsort((pt_role, pt_time, g.op_thread[pt_op]))
    pt_op, pt_role, pt_time = pt_op[order], pt_role[order], pt_time[order]
    base = n_gnodes
    ids = base + np.arange(pt_op.size)
    is_pt = pt_role == POINT
    g.begin[pt_op[is_pt]] = ids[is_pt]
    g.end[pt_op[is_pt]] = ids[is_pt]
    g.end[pt_op[~is_pt]] = ids[~is_pt]
    n_colls = g.coll_ptr.size - 1
    g.n_nodes = base + pt_op.size + n_colls
    g.join = base + pt_op.size + np.arange(n_colls)
    g.node_op = np.concatenate([node_op, pt_op, np.full(n_colls, -1)])
    g.node_role = np.concatenate([role, pt_role, np.full(n_colls, JOIN)])
    n_threads = len(g.thread_names)
    lanes = g.n_lanes
    g.node_res = np.concatenate([node_res, lanes + g.op_thread[pt_op],
                                 lanes + n_threads + np.arange(n_colls)])
    g.pt_time = pt_time
    g.pt_base = base
    g.rec_model_finish = rec_model_finish


def _model_finishes(g: Graph) -> np.ndarray:
    """Per GPU op, the finish the model gives it when every op starts as recorded: a
    collective's transfer starts when its last participant arrives."""
    finish = g.rec_finish[:g.n_gpu].copy()
    g.join_at = np.zeros(g.coll_ptr.size - 1, dtype=np.int64)
    g.transfer = np.zeros(g.n_gpu, dtype=np.int64)
    for c in range(g.coll_ptr.size - 1):
        ops = g.coll_ops[g.coll_ptr[c]:g.coll_ptr[c + 1]]
        at = int(g.rec_start[ops].max())
        g.join_at[c] = at
        g.transfer[ops] = np.maximum(g.rec_finish[ops] - at, 0)
        finish[ops] = at + g.transfer[ops]
    return finish


def _edges_and_calibration(g: Graph):
    """Edges, launch latencies and earliest starts chosen so that the unmodified replay puts
    every op where the trace did, whenever the trace agrees with the modelled dependencies."""
    n_gpu = g.n_gpu
    src, dst, dly, kind = [], [], [], []
    model_finish = g.rec_model_finish
    # what binds each GPU op other than its launch: its stream predecessor and its waits
    ready = np.full(n_gpu, -(2**62), dtype=np.int64)
    prev = np.full(n_gpu, -1, dtype=np.int64)
    gpu_nodes = g.node_op[:g.pt_base]
    first = g.node_role[:g.pt_base] != TRANSFER
    ops = gpu_nodes[first]  # each GPU op once, lane by lane in run order
    same = g.lane[ops[1:]] == g.lane[ops[:-1]]
    prev[ops[1:][same]] = ops[:-1][same]
    has_prev = prev >= 0
    ready[has_prev] = model_finish[prev[has_prev]]
    if g.wait_src.size:
        np.maximum.at(ready, g.wait_dst, model_finish[g.wait_src])
        src.append(g.end[g.wait_src])
        dst.append(g.begin[g.wait_dst])
        dly.append(np.zeros(g.wait_src.size, dtype=np.int64))
        kind.append(np.full(g.wait_src.size, WAIT))
    start = g.rec_start[:n_gpu]
    unexplained = start > ready
    has_launch = g.launch >= 0
    slack = np.where(has_launch, start - g.rec_start[np.maximum(g.launch, 0)], 0)
    bound = unexplained & has_launch & (slack >= 0)
    typical = np.zeros(len(g.ranks), dtype=np.int64)
    for p in range(len(g.ranks)):
        s = slack[bound & (g.op_proc[:n_gpu] == p)]
        typical[p] = int(np.median(s)) if s.size else 0
    latency = np.where(bound, slack, np.clip(np.minimum(typical[g.op_proc[:n_gpu]], slack), 0,
                                             None))
    g.launch_latency = latency
    g.typical_latency = typical
    release = np.zeros(g.n_nodes, dtype=np.int64)
    pinned = unexplained & ~bound
    release[g.begin[:n_gpu][pinned]] = start[pinned]
    g.pinned = pinned
    lg = np.flatnonzero(has_launch)
    src.append(g.begin[g.launch[lg]])
    dst.append(g.begin[lg])
    dly.append(latency[lg])
    kind.append(np.full(lg.size, LAUNCH))
    # collectives: arrivals -> join -> transfers
    if g.coll_ops.size:
        c_of = g.op_coll[g.coll_ops]
        src.append(g.begin[g.coll_ops])
        dst.append(g.join[c_of])
        dly.append(np.zeros(g.coll_ops.size, dtype=np.int64))
        kind.append(np.full(g.coll_ops.size, GATHER))
        src.append(g.join[c_of])
        dst.append(g.end[g.coll_ops])
        dly.append(np.zeros(g.coll_ops.size, dtype=np.int64))
        kind.append(np.full(g.coll_ops.size, SCATTER))
    # CPU threads: consecutive points keep their recorded start-to-start gaps; a return point
    # waits for its GPU work (and for its call)
    pts = np.arange(g.pt_base, g.pt_base + g.pt_time.size)
    same = g.node_res[pts[1:]] == g.node_res[pts[:-1]]
    u, v = pts[:-1][same], pts[1:][same]
    gap = g.pt_time[v - g.pt_base] - g.pt_time[u - g.pt_base]
    gap = np.where(g.node_role[v] == RETURN, 0, np.maximum(gap, 0))
    src.append(u)
    dst.append(v)
    dly.append(gap)
    kind.append(np.full(u.size, CHAIN))
    firsts = pts[np.concatenate([[True], ~same])] if pts.size else pts
    release[firsts] = g.pt_time[firsts - g.pt_base]
    if g.awaits:
        calls = np.asarray([c for c, _ in g.awaits], dtype=np.int64)
        ops = np.asarray([o for _, o in g.awaits], dtype=np.int64)
        src.append(g.end[ops])
        dst.append(g.end[calls])
        dly.append(np.zeros(ops.size, dtype=np.int64))
        kind.append(np.full(ops.size, SYNC))
    src = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    dly = np.concatenate(dly) if dly else np.zeros(0, np.int64)
    kind = np.concatenate(kind) if kind else np.zeros(0, np.int64)
    order = np.argsort(dst, kind="stable")
    g.dep_ptr = np.zeros(g.n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=g.n_nodes), out=g.dep_ptr[1:])
    g.dep_src = src[order]
    g.dep_dst = dst[order]
    g.dep_delay = dly[order].astype(np.float64)
    g.dep_kind = kind[order]
    g.scatter_pos = np.flatnonzero(g.dep_kind == SCATTER)
    g.scatter_coll = g.op_coll[g.node_op[g.dep_dst[g.scatter_pos]]]
    g.release = release.astype(np.float64)
    # durations that what-ifs scale: a plain GPU op's recorded length, a transfer's part
    dur = np.zeros(g.n_nodes, dtype=np.int64)
    plain = g.node_role == PLAIN
    dur[plain] = g.rec_dur[g.node_op[plain]]
    tr = g.node_role == TRANSFER
    dur[tr] = g.transfer[g.node_op[tr]]
    g.base_dur = dur.astype(np.float64)
    g.scaled = plain | tr
    g.tail = np.zeros(g.n_gpu + g.n_cpu, dtype=np.int64)
    for call, at in g.ret_at.items():
        g.tail[call] = max(int(g.rec_finish[call]) - at, 0)
