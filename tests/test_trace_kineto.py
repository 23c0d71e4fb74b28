"""uneven.trace.kineto: PyTorch profiler (Kineto) traces read, replayed and changed.

The traces here are written by the tests themselves in Kineto's format (``cuda_runtime`` calls,
``ac2g`` flows, ``cuda_sync`` events, NCCL kernels with PyTorch's collective args,
``distributedInfo``), small enough that every replay has a closed form (times in µs in the
comments). No third-party trace is stored in the repository.
"""

import gzip
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uneven.trace._table import COMMUNICATION, COMPUTE, CPU, TraceTable
from uneven.trace.kineto import KINETO_GROUPS as GROUPS
from uneven.trace.kineto import KINETO_KINDS as KINDS
from uneven.trace.kineto import KinetoReplay, KinetoTrace, read_kineto, sample_kineto_traces

US = 1e-6


class Rank:
    """One rank's Kineto trace, event by event (times in µs)."""

    def __init__(self, rank=None, world=None, pid=100, device=0, sync_events=True, seq=True):
        self.rank, self.world, self.pid, self.dev = rank, world, pid, device
        self.sync_events, self.seq = sync_events, seq
        self.events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                        "args": {"name": "python"}}]
        self.corr = 0
        self.n_coll = 0

    def call(self, name, ts, dur):
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid,
                            "tid": self.pid, "ts": ts, "dur": dur,
                            "args": {"correlation": self.corr, "cbid": 1}})
        return self.corr

    def launch(self, name, stream, ts, start, dur, *, call_dur=4, cat="kernel", args=None,
               flows_only=False):
        corr = self.call("cudaLaunchKernel" if cat == "kernel" else "cudaMemcpyAsync", ts,
                         call_dur)
        a = {"device": self.dev, "stream": stream, "correlation": corr, **(args or {})}
        if flows_only:  # no correlation args: only the ac2g flows tie launch and kernel
            del a["correlation"]
            del self.events[-1]["args"]["correlation"]
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.dev,
                            "tid": stream, "ts": start, "dur": dur, "args": a})
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.pid, "ts": ts,
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": self.dev, "tid": stream,
                            "ts": start, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        return corr

    def record(self, ts):
        return self.call("cudaEventRecord", ts, 2)

    def wait(self, ts, stream, on_stream, record_corr):
        corr = self.call("cudaStreamWaitEvent", ts, 2)
        if self.sync_events:
            self.events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event",
                                "pid": self.dev, "tid": stream, "ts": ts, "dur": 2, "args": {
                                    "cuda_sync_kind": "Stream Wait Event",
                                    "wait_on_stream": on_stream,
                                    "wait_on_cuda_event_record_corr_id": record_corr,
                                    "wait_on_cuda_event_id": 1, "stream": stream,
                                    "correlation": corr, "device": self.dev}})
        return corr

    def stream_sync(self, ts, dur, stream):
        corr = self.call("cudaStreamSynchronize", ts, dur)
        if self.sync_events:
            self.events.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync",
                                "pid": self.dev, "tid": stream, "ts": ts, "dur": dur, "args": {
                                    "cuda_sync_kind": "Stream Sync", "stream": stream,
                                    "correlation": corr, "device": self.dev}})
        return corr

    def all_reduce(self, ts, start, dur, stream=13, ranks=(0, 1), name="allreduce"):
        self.n_coll += 1
        args = {"Collective name": name, "In msg nelems": 1024, "Out msg nelems": 1024,
                "Group size": len(ranks), "dtype": "Float", "Process Group Name": "0",
                "Process Group Description": "default_pg",
                "Process Group Ranks": str(list(ranks))}
        if self.seq:
            args["Seq"] = self.n_coll
        kname = ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                 if name == "allreduce" else
                 "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)")
        return self.launch(kname, stream, ts, start, dur, args=args)

    def doc(self):
        d = {"schemaVersion": 1, "traceEvents": self.events}
        if self.rank is not None:
            d["distributedInfo"] = {"backend": "nccl", "rank": self.rank,
                                    "world_size": self.world or 2}
        return d


def _start(trace, replay, name):
    ids = [i for i, n in enumerate(trace.label(np.arange(trace.n_ops))) if n == name]
    assert len(ids) == 1, name
    return round(replay.start[ids[0]] / US, 6), round(replay.finish[ids[0]] / US, 6)


def _by_rank(trace, replay, name, rank):
    ids = [i for i, n in enumerate(trace.label(np.arange(trace.n_ops)))
           if n == name and trace.rank[i] == rank]
    assert len(ids) == 1
    return round(replay.start[ids[0]] / US, 6), round(replay.finish[ids[0]] / US, 6)


# --------------------------------------------------------------------------- one rank


def two_streams(sync_events=True):
    """sgemm_a on stream 7 [10, 110]; the NCCL-side stream 13 waits for it (event record at
    12, wait at 20), so elementwise_b runs [110, 160]; gemm_c queues behind A on stream 7,
    [110, 140]. Launch latency: 10 (A, launch-bound)."""
    r = Rank(sync_events=sync_events)
    r.launch("sgemm_a", 7, 0, 10, 100)
    rec = r.record(12)
    r.wait(20, 13, 7, rec)
    r.launch("elementwise_b", 13, 30, 110, 50)
    r.launch("gemm_c", 7, 40, 110, 30)
    return r.doc()


@pytest.mark.parametrize("sync_events", [True, False])
def test_two_streams_replay_reproduces_the_trace_and_what_ifs_have_closed_forms(sync_events):
    t = read_kineto(two_streams(sync_events))
    assert t.wait_modes == (("recorded",) if sync_events else ("inferred",))
    base = t.replay()
    assert t.replay_error == 0.0 and base.change == 0.0
    np.testing.assert_allclose(base.start, t.recorded_start, rtol=0, atol=1e-12)
    assert round(base.step_time / US, 6) == 160.0 == round(t.recorded_step_time / US, 6)
    # A twice as long: B waits for it (wait edge), C queues behind it on stream 7
    r = t.scale(2.0, pattern="^sgemm_a$")
    assert _start(t, r, "sgemm_a") == (10.0, 210.0)
    assert _start(t, r, "elementwise_b") == (210.0, 260.0)
    assert _start(t, r, "gemm_c") == (210.0, 240.0)
    assert round(r.step_time / US, 6) == 260.0 and round(r.change / US, 6) == 100.0
    # GEMMs (A and C) at half length: B and C now start when A ends, not before their launch
    # (30, 40) plus the rank's launch latency (10)
    r = t.scale(0.5, category="gemm")
    assert _start(t, r, "sgemm_a") == (10.0, 60.0)
    assert _start(t, r, "elementwise_b") == (60.0, 110.0)
    assert _start(t, r, "gemm_c") == (60.0, 75.0)
    # faster still: the launches bind (30 + 10 = 40 for B, 40 + 10 = 50 for C)
    r = t.scale(0.1, category="gemm")
    assert _start(t, r, "elementwise_b") == (40.0, 90.0)
    assert _start(t, r, "gemm_c") == (50.0, 53.0)


def test_the_critical_path_walks_back_through_waits_and_launches():
    t = read_kineto(two_streams())
    base = t.replay()
    names = t.label(base.critical_path)
    assert names == ["cudaLaunchKernel", "sgemm_a", "elementwise_b"]
    assert base.critical_ranks == (0,)
    share = base.critical_time
    assert round(share["gemm"] / US, 6) == 100.0 and round(share["other-compute"] / US) == 50
    assert round(share["launch latency"] / US, 6) == 10.0
    assert round(sum(share.values()) / US, 6) == 160.0  # the path accounts for the whole step
    # with A short the step ends with B, bound by its launch: the CPU calls are on the path
    r = t.scale(0.1, category="gemm")
    assert t.label(r.critical_path)[-2:] == ["cudaLaunchKernel", "elementwise_b"]
    assert "cpu" in r.critical_time


def test_without_waits_an_unexplained_start_is_kept_as_the_earliest():
    """With waits="none", nothing explains why B started at 110 rather than after its launch
    (30 + latency): its launch latency becomes 80, so B never starts before 110."""
    t = read_kineto(two_streams(), waits="none")
    assert t.replay_error == 0.0
    r = t.scale(0.5, category="gemm")
    assert _start(t, r, "elementwise_b") == (110.0, 160.0)
    r = t.scale(2.0, category="gemm")
    assert _start(t, r, "elementwise_b") == (110.0, 160.0)  # no longer waits for A


def test_a_kernel_whose_launch_is_not_in_the_trace_keeps_its_recorded_start():
    r = Rank()
    r.launch("sgemm_a", 7, 0, 10, 100)
    r.events.append({"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7,
                     "ts": 150, "dur": 20, "args": {"stream": 7, "correlation": 999}})
    t = read_kineto(r.doc())
    assert t.replay_error == 0.0
    assert _start(t, t.scale(0.5, pattern="sgemm"), "orphan") == (150.0, 170.0)
    assert _start(t, t.scale(2.0, pattern="sgemm"), "orphan") == (210.0, 230.0)


def test_a_blocking_call_holds_back_every_later_launch():
    """K1 [10, 110]; cudaStreamSynchronize [20, 115] returns 5 after K1; the next launch 10
    later (125) starts K2 at 135 (latency 10). K1 twice as long: the sync returns at 210, the
    launch follows 15 later (225), K2 runs [235, 285]."""
    for sync_events in (True, False):
        r = Rank(sync_events=sync_events)
        r.launch("k1", 7, 0, 10, 100)
        r.stream_sync(20, 95, 7)
        r.launch("k2", 7, 125, 135, 50)
        t = read_kineto(r.doc())
        assert t.replay_error == 0.0
        s = t.scale(2.0, pattern="k1")
        assert _start(t, s, "k2") == (235.0, 285.0)
        assert _start(t, s, "cudaStreamSynchronize") == (20.0, 215.0)
        assert round(s.step_time / US, 6) == 285.0
        s = t.scale(0.5, pattern="k1")  # the sync returns at 60: K2 at 60 + 15 + 10
        assert _start(t, s, "k2") == (85.0, 135.0)


def test_an_event_query_does_not_block():
    """Kineto reports cudaEventQuery as an "Event Sync" too; only *Synchronize calls wait."""
    r = Rank()
    r.launch("k1", 7, 0, 10, 100)
    rec = r.record(6)
    q = r.call("cudaEventQuery", 20, 3)
    r.events.append({"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": -1,
                     "ts": 20, "dur": 3, "args": {"cuda_sync_kind": "Event Sync",
                                                   "wait_on_stream": 7,
                                                   "wait_on_cuda_event_record_corr_id": rec,
                                                   "stream": -1, "correlation": q}})
    r.launch("k2", 13, 30, 40, 10)
    t = read_kineto(r.doc())
    assert _start(t, t.scale(3.0, pattern="k1"), "k2") == (40.0, 50.0)


def test_flows_alone_tie_a_launch_to_its_kernel():
    r = Rank()
    r.launch("k1", 7, 0, 10, 100, flows_only=True)
    r.launch("k2", 7, 200, 210, 10, flows_only=True)  # launch-bound: 10 after its call
    t = read_kineto(r.doc())
    assert t.label(t.replay().critical_path)[-2:] == ["cudaLaunchKernel", "k2"]
    assert _start(t, t.scale(5.0, pattern="k1"), "k2") == (510.0, 520.0)


# --------------------------------------------------------------------------- two ranks


def two_ranks(seq=True, sync_events=True, rank1_all_reduce=True):
    """Each rank: gemm on stream 7 from 10, then its all-reduce on stream 13 after a wait.
    Rank 0's gemm takes 100, rank 1's 150: rank 0 arrives at 110, rank 1 at 160, and after a
    transfer of 50 both end at 210."""
    out = []
    for rank, gemm in ((0, 100), (1, 150)):
        r = Rank(rank=rank, pid=100 + rank, seq=seq, sync_events=sync_events)
        r.launch("gemm", 7, 0, 10, gemm)
        rec = r.record(6)
        r.wait(8, 13, 7, rec)
        if rank == 0 or rank1_all_reduce:
            r.all_reduce(12, 10 + gemm, 210 - (10 + gemm))
        out.append(r.doc())
    return out


@pytest.mark.parametrize("seq", [True, False])
def test_a_collective_ends_when_its_last_member_has_arrived(seq):
    t = read_kineto(two_ranks(seq=seq))
    ar = t.label([i for i in range(t.n_ops) if t.kind[i] == KINDS.index("all-reduce")])
    assert t.n_collectives == 1 and len(ar) == 2
    assert t.replay_error == 0.0
    name = ar[0]
    # rank 0's communication 20 late: the all-reduce ends 20 later on both ranks
    r = t.delay_comm(20 * US, rank=0)
    assert _by_rank(t, r, name, 0) == (110.0, 230.0) and _by_rank(t, r, name, 1)[1] == 230.0
    assert round(r.change / US, 6) == 20.0
    # rank 0 twice as slow: its gemm ends at 210, both arrive by 210; its own transfer doubles
    r = t.slow_rank(0, 2.0)
    assert _by_rank(t, r, name, 0) == (210.0, 310.0)
    assert _by_rank(t, r, name, 1) == (160.0, 260.0)
    # the transfers three times as long: 160 + 150
    r = t.scale(3.0, category="all-reduce")
    assert _by_rank(t, r, name, 0)[1] == 310.0 == _by_rank(t, r, name, 1)[1]
    # rank 1's gemm at half length (ends at 85): rank 0 (110) arrives last, all end at 160
    r = t.scale(0.5, pattern="gemm", rank=1)
    assert _by_rank(t, r, name, 0) == (110.0, 160.0) and _by_rank(t, r, name, 1) == (
        85.0, 160.0)


def test_the_critical_path_crosses_to_the_rank_that_arrived_last():
    t = read_kineto(two_ranks())
    base = t.replay()
    assert base.critical_ranks == (1, 0)  # rank 1's gemm, then the collective's end on rank 0
    assert t.label(base.critical_path)[1] == "gemm" and t.rank[base.critical_path[1]] == 1
    slow = t.slow_rank(0, 2.0)  # now rank 0 arrives last and stays on the path
    assert set(slow.critical_ranks) == {0}
    delayed = t.delay_comm(20 * US, rank=0)
    assert round(delayed.critical_time["communication delay"] / US, 6) == 20.0


def test_an_unmatched_collective_names_its_file_and_event():
    traces = two_ranks(rank1_all_reduce=False)
    with pytest.raises(ValueError, match=r"trace #0, event #\d+ 'ncclDevKernel.*no matching "
                                         r"kernel on rank 1 \(trace #1\)"):
        read_kineto(traces)
    t = read_kineto(traces, unmatched="ignore")
    assert t.n_collectives == 0 and t.replay_error == 0.0


def test_ranks_come_from_distributed_info_whatever_the_order_of_the_files(tmp_path):
    a, b = two_ranks()
    for i, doc in enumerate((b, a)):
        (tmp_path / f"t{i}.json").write_text(json.dumps(doc))
    t = read_kineto([tmp_path / "t0.json", tmp_path / "t1.json"])
    assert t.ranks == (0, 1) and t.sources == (str(tmp_path / "t1.json"),
                                               str(tmp_path / "t0.json"))
    with pytest.raises(ValueError, match="are both rank 0"):
        read_kineto([a, a])


def test_gzip_files_and_folders_read_like_the_parsed_traces(tmp_path):
    docs = sample_kineto_traces(n_ranks=2, n_layers=2, seed=3)
    for r, doc in enumerate(docs):
        with gzip.open(tmp_path / f"rank{r}.pt.trace.json.gz", "wt") as f:
            json.dump(doc, f)
    from_dicts = read_kineto(docs)
    from_folder = read_kineto(tmp_path)
    assert from_folder.sources[0].endswith("rank0.pt.trace.json.gz")
    np.testing.assert_array_equal(from_folder.recorded_start, from_dicts.recorded_start)
    a = from_dicts.delay_comm(50 * US, rank=1)
    b = from_folder.delay_comm(50 * US, rank=1)
    np.testing.assert_array_equal(a.start, b.start)


# --------------------------------------------------------------------------- the sample


@pytest.mark.parametrize("n_ranks, n_layers, seed", [(1, 1, 0), (2, 3, 1), (4, 2, 7)])
def test_the_sample_replays_to_its_recorded_starts_with_or_without_sync_events(n_ranks,
                                                                               n_layers, seed):
    speed = 1.0 + 0.1 * np.arange(n_ranks)
    kw = dict(n_ranks=n_ranks, n_layers=n_layers, seed=seed, rank_speed=speed)
    rec = read_kineto(sample_kineto_traces(**kw))
    inf = read_kineto(sample_kineto_traces(**kw, sync_events=False))
    assert rec.replay_error == 0.0 == inf.replay_error  # every op to the ns
    assert rec.wait_modes == ("recorded",) * n_ranks and inf.wait_modes == ("inferred",) * n_ranks
    # an all-to-all per layer each way, an all-reduce every second layer (bucket=2)
    assert rec.n_collectives == (2 * n_layers + (n_layers + 1) // 2 if n_ranks > 1 else 0)
    for what in (lambda t: t.slow_rank(0, 1.3), lambda t: t.scale(2.0, category="gemm"),
                 lambda t: t.delay_comm(100 * US, rank=n_ranks - 1)):
        np.testing.assert_allclose(what(rec).start, what(inf).start, rtol=0, atol=1e-12)


def test_the_sample_delay_adds_once_per_collective_on_the_critical_path():
    t = read_kineto(sample_kineto_traces(n_ranks=2, n_layers=3))
    n_coll = t.n_collectives  # 3 all-to-alls each way and 2 all-reduces, all in a chain
    assert n_coll == 8
    r = t.delay_comm(100 * US, rank=1)
    assert r.change == pytest.approx(n_coll * 100 * US, abs=1e-9)
    assert r.report().startswith("communication of rank 1 delayed by 100 µs: step")


def test_the_sample_is_seeded_and_checks_its_arguments():
    a = sample_kineto_traces(n_layers=2, seed=5)
    assert a == sample_kineto_traces(n_layers=2, seed=5) != sample_kineto_traces(n_layers=2,
                                                                                 seed=6)
    assert "model" in a[0]["traceName"]
    for kw, name in (({"n_ranks": 0}, "n_ranks"), ({"n_layers": 10**6}, "n_layers"),
                     ({"rank_speed": [1.0]}, "rank_speed"), ({"sync_events": 1}, "sync_events"),
                     ({"bucket": 0}, "bucket")):
        with pytest.raises(ValueError, match=name):
            sample_kineto_traces(**kw)


# --------------------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), n_ranks=st.integers(1, 3), sync=st.booleans(),
       data=st.data())
def test_longer_ops_or_later_communication_never_shorten_the_step(seed, n_ranks, sync, data):
    """Max-plus monotonicity: factors >= 1 and delays >= 0 never make any op finish earlier."""
    rng = np.random.default_rng(seed)
    t = read_kineto(sample_kineto_traces(n_ranks=n_ranks, n_layers=2, seed=seed,
                                         rank_speed=rng.uniform(0.8, 1.3, n_ranks),
                                         sync_events=sync))
    factor = 1.0 + rng.exponential(0.3, t.n_ops) * (rng.random(t.n_ops) < 0.5)
    delay = rng.exponential(50 * US, t.n_ops) * data.draw(st.booleans())
    base = t.replay()
    r = t.what_if(factor, delay)
    assert r.step_time >= base.step_time - 1e-12
    assert np.all(r.finish >= base.finish - 1e-12)
    bigger = t.what_if(factor * 1.5, delay * 2)
    assert np.all(bigger.finish >= r.finish - 1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 100))
def test_the_critical_path_accounts_for_the_whole_step(seed):
    t = read_kineto(sample_kineto_traces(n_ranks=2, n_layers=2, seed=seed,
                                         rank_speed=[1.0, 1.1]))
    for r in (t.replay(), t.slow_rank(0, 1.5), t.delay_comm(0.2e-3, rank=0)):
        assert sum(r.critical_time.values()) == pytest.approx(r.step_time, rel=1e-9)
        assert r.finish[r.critical_path[-1]] == r.step_time  # it ends the step
        assert len(set(r.critical_path.tolist())) == r.critical_path.size  # each op once


# --------------------------------------------------------------------------- export


def test_a_replay_exports_as_a_trace_table():
    t = read_kineto(two_ranks())
    r = t.delay_comm(20 * US, rank=1)
    table = r.trace_table()
    assert isinstance(table, TraceTable) and table.n_ops == t.n_ops
    assert table.process_names == ("rank 0", "rank 1") and table.ranks == (0, 1)
    names = table.label(np.arange(table.n_ops))
    cats = dict(zip(names, table.category.tolist(), strict=False))
    assert cats["gemm"] == COMPUTE and cats["cudaLaunchKernel"] == CPU
    assert cats[[n for n in names if n.startswith("nccl")][0]] == COMMUNICATION
    details = table.details(np.arange(table.n_ops))
    json.dumps(details)  # JSON-able args
    assert any(d["critical path"] for d in details)
    assert {d.get("Seq") for d in details if d["kind"] == "all-reduce"} == {1}
    np.testing.assert_array_equal(table.start, r.start)
    # predecessors: each kernel its launch; rank 0's all-reduce the last arrival (rank 1's)
    ar0 = [i for i, n in enumerate(names) if n.startswith("nccl") and t.rank[i] == 0][0]
    preds = table.dep_src[table.dep_ptr[ar0]:table.dep_ptr[ar0 + 1]].tolist()
    assert any(t.rank[p] == 1 and names[p].startswith("nccl") for p in preds)
    assert any(names[p] == "cudaLaunchKernel" for p in preds)
    assert table.metadata["what_if"] == r.what and "model" in table.metadata["source"]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["traceEvents"].__setitem__(1, "x"), r"trace #0, event #1 must be an object"),
    (lambda d: d["traceEvents"][2].pop("ts"), r"trace #0, event #2 'sgemm_a' has no 'ts'"),
    (lambda d: d["traceEvents"][2].pop("dur"), r"event #2 'sgemm_a' ts 10 has no 'dur'"),
    (lambda d: d["traceEvents"][2].update(dur=-3), r"event #2 'sgemm_a'.*'dur' must be >= 0"),
    (lambda d: d["traceEvents"][2].update(ts="soon"), r"event #2 'sgemm_a'.*'ts' must be a"),
    (lambda d: (d["traceEvents"][2]["args"].pop("stream"), d["traceEvents"][2].update(
        tid="stream 7")), r"event #2 'sgemm_a'.*needs its stream"),
    (lambda d: d["traceEvents"][2].update(name=""), r"event #2.*'name' must be a non-empty"),
    (lambda d: d["traceEvents"][2].update(args=[1]), r"event #2 'sgemm_a'.*'args' must be"),
    (lambda d: d.pop("traceEvents"), r"trace #0 has no 'traceEvents' list"),
    (lambda d: d.update(traceEvents=[e for e in d["traceEvents"] if e.get("cat") != "kernel"]),
     r"trace #0 holds no GPU ops"),
    (lambda d: d.update(distributedInfo={"rank": -1}), r"distributedInfo.rank must be"),
])
def test_read_errors_name_the_trace_and_the_event(mutate, message):
    doc = two_streams()
    mutate(doc)
    with pytest.raises(ValueError, match=message):
        read_kineto(doc)


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "rank0.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(ValueError, match=r"rank0.json is not valid JSON: .* line 1, column"):
        read_kineto(bad)
    gz = tmp_path / "rank1.json.gz"
    gz.write_bytes(b"\x1f\x8b" + b"garbage")
    with pytest.raises(ValueError, match=r"rank1.json.gz is not a readable gzip file"):
        read_kineto(gz)
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(ValueError, match=r"empty.json is empty"):
        read_kineto(tmp_path / "empty.json")
    with pytest.raises(ValueError, match=r"path_or_paths: cannot read .*missing.json"):
        read_kineto(tmp_path / "missing.json")
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match=r"holds no .json or .json.gz trace files"):
        read_kineto(tmp_path / "sub")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(two_streams()["traceEvents"]))  # a bare event array is fine
    assert read_kineto(ok).n_gpu_ops == 3


@pytest.mark.parametrize("value", [None, 3, [], [1], np.zeros(3), b"x"])
def test_read_kineto_refuses_what_is_not_a_trace(value):
    with pytest.raises(ValueError, match="path_or_paths"):
        read_kineto(value)


def test_what_ifs_check_their_arguments():
    t = read_kineto(two_ranks())
    cases = [
        (lambda: t.scale(2.0, category="gemmm"), "category"),
        (lambda: t.scale(2.0, pattern="(unclosed"), "pattern"),
        (lambda: t.scale(2.0, pattern="no-such-kernel"), "pattern"),
        (lambda: t.scale(-1.0), "factor"),
        (lambda: t.scale(np.nan), "factor"),
        (lambda: t.delay_comm(-1.0), "seconds"),
        (lambda: t.delay_comm(1e-6, rank=5), "rank"),
        (lambda: t.delay_comm(1e-6, rank=0, stream=7), "rank"),
        (lambda: t.slow_rank(2, 1.5), "rank"),
        (lambda: t.what_if(factor=np.ones(3)), "factor"),
        (lambda: t.what_if(delay=-np.ones(t.n_ops)), "delay"),
        (lambda: t.what_if(what=3), "what"),
        (lambda: t.label([t.n_ops]), "ids"),
        (lambda: read_kineto(two_ranks(), waits="maybe"), "waits"),
        (lambda: read_kineto(two_ranks(), unmatched="drop"), "unmatched"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()


def test_kinds_and_groups():
    assert set(GROUPS["communication"]) <= set(KINDS) and "cpu" not in GROUPS["gpu"]
    t = read_kineto(sample_kineto_traces(n_layers=1))
    kinds = {KINDS[k] for k in t.kind}
    assert kinds == {"gemm", "attention", "other-compute", "all-to-all", "all-reduce", "memcpy",
                     "cpu"}
    assert t.streams(0) == (7, 13)
    assert isinstance(t.replay(), KinetoReplay) and isinstance(t, KinetoTrace)
    assert "collectives" in repr(t)


def test_a_replay_goes_to_perfetto_through_to_chrome(tmp_path):
    from uneven.trace import to_chrome

    t = read_kineto(two_ranks())
    path = to_chrome(t.slow_rank(1, 1.5), tmp_path / "replay.json")
    events = json.loads(path.read_text())["traceEvents"]
    names = {e.get("name") for e in events if e.get("ph") == "X"}
    assert "gemm" in names and "cudaLaunchKernel" in names


def test_ops_that_overlap_on_one_stream_run_on_parallel_lanes():
    """A CUDA graph's kernels share one launch and one stream but run side by side: g1 [10, 30]
    and g2 [15, 25]; k3 follows g1 [30, 40]. g1 twice as long pushes k3, not g2."""
    r = Rank()
    corr = r.call("cudaGraphLaunch", 0, 5)
    for name, start, dur in (("g1", 10, 20), ("g2", 15, 10)):
        r.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                         "ts": start, "dur": dur, "args": {"stream": 7, "correlation": corr}})
    r.launch("k3", 7, 6, 30, 10)
    t = read_kineto(r.doc())
    assert t.replay_error == 0.0 and t.diagnostics["overlapping_ops"] == 1
    s = t.scale(2.0, pattern="g1")
    assert _start(t, s, "g2") == (15.0, 25.0) and _start(t, s, "k3") == (50.0, 60.0)
    assert t.diagnostics == {"overlapping_ops": 1, "without_launch": 0,
                             "unexplained_starts": 0, "unresolved_waits": 0,
                             "contradicted_guesses": 0}


def test_an_inferred_wait_the_trace_contradicts_is_dropped():
    """Without cuda_sync events the reader guesses that the stream of the next launch after a
    cudaStreamWaitEvent waits for the latest record; B started at 50, before A ended (110), so
    that guess is wrong here and B stays free of A."""
    r = Rank(sync_events=False)
    r.launch("sgemm_a", 7, 0, 10, 100)
    rec = r.record(12)
    r.wait(20, 13, 7, rec)
    r.launch("elementwise_b", 13, 30, 50, 50)
    t = read_kineto(r.doc())
    assert t.diagnostics["contradicted_guesses"] == 1 and t.replay_error == 0.0
    assert _start(t, t.scale(2.0, pattern="sgemm"), "elementwise_b") == (50.0, 100.0)
