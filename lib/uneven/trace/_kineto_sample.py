"""A synthetic training step written in Kineto's trace format (private; the model's own data).

Used by :func:`uneven.trace.kineto.sample_kineto_traces`. Each rank runs the same program: per
layer a forward (QKV GEMM, attention, output GEMM, an MoE all-to-all on the NCCL stream, an
expert GEMM, an elementwise kernel) and a backward (the same in reverse, a second all-to-all,
and every ``bucket`` layers a gradient all-reduce that the compute stream does not wait for),
then a wait for the NCCL stream, an optimizer kernel, a device-to-host copy of the loss and a
``cudaStreamSynchronize``. The CPU thread launches everything ahead of the GPU with a few
microseconds between calls. Kernel times are the nominal ones below times a per-rank speed and a
per-kernel jitter (both log-normal, seeded). Times are computed by the library's own timeline
engine (stream order, launch latency, event waits, collectives that end when their last
participant has arrived), then written as Kineto would: ``cuda_runtime`` calls with ``ac2g``
flows to their kernels, ``cuda_sync`` events (optional), NCCL kernels with the collective args
of PyTorch's ``record_param_comms``, ``distributedInfo``.
"""

from __future__ import annotations

import numpy as np

from ..engines.timeline import edges_to_csr, run_timeline

US = 1000  # ns

#: Nominal kernel lengths (µs) of the sample step (model, not measured).
NOMINAL_US = {"qkv": 180.0, "attn": 150.0, "proj": 90.0, "a2a": 220.0, "expert": 260.0,
              "act": 25.0, "act_bwd": 30.0, "expert_bwd": 480.0, "attn_bwd": 300.0,
              "gemm_bwd": 380.0, "allreduce": 900.0, "optimizer": 400.0, "d2h": 4.0}
KERNEL_NAMES = {
    "qkv": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas",
    "attn": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, "
            "cutlass::bfloat16_t> >(Flash_fwd_params)",
    "proj": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_cublas",
    "a2a": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "expert": "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
    "act": "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
    "act_bwd": "void at::native::vectorized_elementwise_kernel<4, "
               "at::native::GeluBackwardCUDAKernelImpl>",
    "expert_bwd": "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_NNT",
    "attn_bwd": "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<"
                "Flash_bwd_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
                "(Flash_bwd_params)",
    "gemm_bwd": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_cublas",
    "allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "optimizer": "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
                 "FusedAdamMathFunctor<c10::BFloat16> >",
    "d2h": "Memcpy DtoH (Device -> Pinned)",
}
_CPU_OPS = {"qkv": "aten::mm", "attn": "aten::_flash_attention_forward", "proj": "aten::mm",
            "a2a": "record_param_comms", "expert": "aten::mm", "act": "aten::gelu",
            "act_bwd": "aten::gelu_backward", "expert_bwd": "aten::mm",
            "attn_bwd": "aten::_flash_attention_backward", "gemm_bwd": "aten::mm",
            "allreduce": "record_param_comms", "optimizer": "aten::_fused_adam_",
            "d2h": "aten::_local_scalar_dense"}
_COLLECTIVE_ARGS = {"a2a": ("all_to_allv", 4_194_304), "allreduce": ("allreduce", 16_777_216)}
COMPUTE_STREAM, NCCL_STREAM = 7, 13
_BASE_TS_US = 5_000_000.0  # where the sample's clock starts (µs), like Kineto's relative ts


def _program(n_layers: int, bucket: int) -> list:
    """One rank's CPU program: ("kernel", key, stream) launches, ("record", stream),
    ("wait", waiting stream, recorded stream), ("copy",), ("sync",)."""
    prog = []

    def collective(key, wait_back):
        prog.append(("record", COMPUTE_STREAM))
        prog.append(("wait", NCCL_STREAM, COMPUTE_STREAM))
        prog.append(("kernel", key, NCCL_STREAM))
        if wait_back:
            prog.append(("record", NCCL_STREAM))
            prog.append(("wait", COMPUTE_STREAM, NCCL_STREAM))

    for _ in range(n_layers):
        prog += [("kernel", k, COMPUTE_STREAM) for k in ("qkv", "attn", "proj")]
        collective("a2a", True)
        prog += [("kernel", k, COMPUTE_STREAM) for k in ("expert", "act")]
    for layer in reversed(range(n_layers)):
        prog += [("kernel", k, COMPUTE_STREAM) for k in ("act_bwd", "expert_bwd")]
        collective("a2a", True)
        prog += [("kernel", k, COMPUTE_STREAM) for k in ("attn_bwd", "gemm_bwd")]
        if layer % bucket == 0:
            collective("allreduce", False)
    prog += [("record", NCCL_STREAM), ("wait", COMPUTE_STREAM, NCCL_STREAM),
             ("kernel", "optimizer", COMPUTE_STREAM), ("copy",), ("sync",)]
    return prog


class _Step:
    """The sample step of every rank as engine ops, then as Kineto events."""

    def __init__(self, n_ranks, n_layers, bucket, rng, rank_speed, sync_events):
        self.n, self.sync_events = n_ranks, sync_events
        self.prog = _program(n_layers, bucket)
        self.dur, self.res, self.rel, self.src, self.dst = [], [], [], [], []
        self.calls = [[] for _ in range(n_ranks)]  # per rank: (name, ts, dur, corr, item)
        self.gpu = [[] for _ in range(n_ranks)]  # per rank: (key, stream, node_a, node_b, corr)
        self.colls = {}
        self._lay_out(rng, rank_speed)

    def _node(self, dur, res, rel=0):
        self.dur.append(dur)
        self.res.append(res)
        self.rel.append(rel)
        return len(self.dur) - 1

    def _lay_out(self, rng, rank_speed):
        n = self.n
        coll_seq = [0] * n
        for r in range(n):
            t = int(rng.uniform(0, 30)) * US + r * 3 * US  # the ranks start a little apart
            last_on = {}  # stream -> last GPU node issued on it (for records)
            record_of = {}
            pending = []  # waits for the next launch on a stream: (waiting stream, src node)
            corr = 100 * (r + 1)
            for item in self.prog:
                call_dur = int(rng.uniform(3.0, 7.0) * US)
                corr += 1
                kind = item[0]
                name = {"kernel": "cudaLaunchKernel", "record": "cudaEventRecord",
                        "wait": "cudaStreamWaitEvent", "copy": "cudaMemcpyAsync",
                        "sync": "cudaStreamSynchronize"}[kind]
                if kind in ("kernel", "copy"):
                    key = item[1] if kind == "kernel" else "d2h"
                    stream = item[2] if kind == "kernel" else COMPUTE_STREAM
                    nominal = NOMINAL_US[key] * (1.0 if key in _COLLECTIVE_ARGS else
                                                 rank_speed[r])
                    length = int(nominal * float(rng.lognormal(0.0, 0.02)) * US)
                    launch_at = t + int(rng.uniform(3.0, 6.0) * US)
                    res = r * 2 + (stream == NCCL_STREAM)
                    a = self._node(0 if key in _COLLECTIVE_ARGS else length, res, launch_at)
                    b = a
                    if key in _COLLECTIVE_ARGS:
                        b = self._node(length, res)
                        seq = coll_seq[r] = coll_seq[r] + 1
                        self.colls.setdefault(seq, []).append((a, b))
                    for waiting, src_node in pending:
                        if waiting == stream:
                            self.src.append(src_node)
                            self.dst.append(a)
                    pending = [(w, s) for w, s in pending if w != stream]
                    last_on[stream] = b
                    self.gpu[r].append((key, stream, a, b, corr, coll_seq[r]))
                elif kind == "record":
                    record_of[item[1]] = (last_on.get(item[1]), corr)
                elif kind == "wait":
                    node, rec_corr = record_of[item[2]]
                    if node is not None:
                        pending.append((item[1], node))
                    item = item + (rec_corr,)
                self.calls[r].append((name, t, call_dur, corr, item))
                t += call_dur + int(rng.uniform(4.0, 12.0) * US)
        for c, members in enumerate(self.colls.values()):
            join = self._node(0, 2 * n + c)  # each join on a resource of its own
            for a, _ in members:
                self.src.append(a)
                self.dst.append(join)
            for _, b in members:
                self.src.append(join)
                self.dst.append(b)

    def run(self):
        ptr, src, dly = edges_to_csr(len(self.dur), self.src, self.dst)
        tl = run_timeline(np.asarray(self.dur, float), self.res, ptr, src, dly,
                          release=np.asarray(self.rel, float))
        self.start = np.rint(tl.start).astype(np.int64)
        self.finish = np.rint(tl.finish).astype(np.int64)


def _us(ns) -> float:
    return round(_BASE_TS_US + int(ns) / 1000.0, 3)


def _events(step: _Step, r: int) -> list:
    """Rank ``r``'s Kineto events (complete events, flows, cuda_sync, metadata)."""
    pid, dev = 4000 + r, r % 8
    ev = [{"name": "process_name", "ph": "M", "ts": _us(0), "pid": pid, "tid": 0,
           "args": {"name": "python3"}},
          {"name": "process_name", "ph": "M", "ts": _us(0), "pid": dev, "tid": 0,
           "args": {"name": "python3"}},
          {"name": "process_labels", "ph": "M", "ts": _us(0), "pid": dev, "tid": 0,
           "args": {"labels": f"GPU {dev}"}},
          {"name": "thread_name", "ph": "M", "ts": _us(0), "pid": pid, "tid": pid,
           "args": {"name": f"thread {pid} (python3)"}}]
    for s in (COMPUTE_STREAM, NCCL_STREAM):
        ev.append({"name": "thread_name", "ph": "M", "ts": _us(0), "pid": dev, "tid": s,
                   "args": {"name": f"stream {s} "}})
    gpu = {g[4]: g for g in step.gpu[r]}
    group = str(list(range(step.n)))
    calls = step.calls[r]
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": pid,
               "tid": pid, "ts": _us(calls[0][1] - 2 * US),
               "dur": (calls[-1][1] - calls[0][1] + 4 * US) / 1000.0, "args": {}})
    last_gpu_end = 0
    for ext, (name, t, d, corr, item) in enumerate(calls, start=1):
        if name == "cudaStreamSynchronize":
            d = max(d, last_gpu_end - t + 2 * US)
        runtime = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": pid, "tid": pid,
                   "ts": _us(t), "dur": d / 1000.0,
                   "args": {"External id": ext, "correlation": corr}}
        if item[0] in ("kernel", "copy"):
            key, stream, a, b, _, seq = gpu[corr]
            cpu_name = _CPU_OPS[key]
            ev.append({"ph": "X", "cat": "cpu_op", "name": cpu_name, "pid": pid, "tid": pid,
                       "ts": _us(t - US), "dur": (d + 2 * US) / 1000.0,
                       "args": {"External id": ext}})
            ev.append(runtime)
            ev.append({"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": _us(t),
                       "cat": "ac2g", "name": "ac2g"})
            g_start, g_end = int(step.start[a]), int(step.finish[b])
            last_gpu_end = max(last_gpu_end, g_end)
            args = {"External id": ext, "device": dev, "context": 1, "stream": stream,
                    "correlation": corr}
            if key == "d2h":
                args["bytes"] = 4
                ev.append({"ph": "X", "cat": "gpu_memcpy", "name": KERNEL_NAMES[key],
                           "pid": dev, "tid": stream, "ts": _us(g_start),
                           "dur": (g_end - g_start) / 1000.0, "args": args})
            else:
                args.update({"queued": 0, "registers per thread": 128,
                             "shared memory": 49152, "grid": [132, 1, 1],
                             "block": [256, 1, 1]})
                if key in _COLLECTIVE_ARGS:
                    coll, nelems = _COLLECTIVE_ARGS[key]
                    args.update({"Collective name": coll, "In msg nelems": nelems,
                                 "Out msg nelems": nelems, "Group size": step.n,
                                 "dtype": "BFloat16", "In split size": "[]",
                                 "Out split size": "[]", "Process Group Name": "0",
                                 "Process Group Description": "default_pg",
                                 "Process Group Ranks": group, "Seq": seq})
                ev.append({"ph": "X", "cat": "kernel", "name": KERNEL_NAMES[key],
                           "pid": dev, "tid": stream, "ts": _us(g_start),
                           "dur": (g_end - g_start) / 1000.0, "args": args})
            ev.append({"ph": "f", "id": corr, "pid": dev, "tid": stream, "ts": _us(g_start),
                       "cat": "ac2g", "name": "ac2g", "bp": "e"})
            continue
        ev.append(runtime)
        if not step.sync_events:
            continue
        if item[0] == "wait":
            ev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": dev,
                       "tid": item[1], "ts": _us(t), "dur": d / 1000.0,
                       "args": {"External id": ext, "cuda_sync_kind": "Stream Wait Event",
                                "wait_on_stream": item[2],
                                "wait_on_cuda_event_record_corr_id": item[3],
                                "wait_on_cuda_event_id": 1, "stream": item[1],
                                "correlation": corr, "device": dev, "context": 1}})
        elif item[0] == "sync":
            ev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": dev,
                       "tid": COMPUTE_STREAM, "ts": _us(t), "dur": d / 1000.0,
                       "args": {"External id": ext, "cuda_sync_kind": "Stream Sync",
                                "stream": COMPUTE_STREAM, "correlation": corr, "device": dev,
                                "context": 1}})
    return ev


def sample_traces(n_ranks: int, n_layers: int, seed: int, bucket: int, rank_speed,
                  sync_events: bool) -> list:
    """One Kineto trace (a dict, as ``json.load`` returns it) per rank."""
    rng = np.random.default_rng(seed)
    step = _Step(n_ranks, n_layers, bucket, rng, rank_speed, sync_events)
    step.run()
    out = []
    for r in range(n_ranks):
        out.append({
            "schemaVersion": 1,
            "deviceProperties": [{"id": r % 8, "name": "synthetic GPU (model)",
                                  "numSms": 132}],
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": n_ranks,
                                "pg_count": 1,
                                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                               "backend_config": "cuda:nccl",
                                               "pg_size": n_ranks,
                                               "ranks": list(range(n_ranks))}],
                                "nccl_version": "2.21.5"},
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1_700_000_000_000_000_000,
            "traceEvents": _events(step, r),
            "traceName": f"synthetic_rank{r}.pt.trace.json (uneven.trace sample, model)",
        })
    return out
