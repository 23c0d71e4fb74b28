"""Perfetto export (uneven.trace): the event schema, times and dependencies as the simulator has
them, and a consumer no one here wrote — Holistic Trace Analysis — reading the exports and
finding the simulator's own busy and idle figures."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines.fluid import simulate_fluid
from uneven.ep.superpod import CoreCosts, core_timeline, phase_plan, scheme, superpod_traffic
from uneven.schedulers.moe_layer import cluster_layer_timeline, layer_timeline
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline
from uneven.trace import TraceTable, as_table, to_chrome, waited_for


def _decode_layer():
    from uneven.ep.decode import contiguous_slots, decode_layer, route_to_slots
    from uneven.ep.transport import decode_traffic

    p = contiguous_slots(16, 16)
    src = np.arange(16)
    ids = (src[:, None] + np.array([1, 8, 9])) % 16
    return decode_layer(p, decode_traffic(p, route_to_slots(p, ids, src), src, "relay"))


def _core():
    t = superpod_traffic(8, tokens_per_rank=16, seed=1)
    return core_timeline(phase_plan(t, CoreCosts(cores=4), scheme("baseline")), 1e-6, seed=2)


def _fluid():
    ptr = np.array([0, 1, 2, 4])
    links = np.array([0, 1, 0, 1])
    return simulate_fluid(ptr, links, np.array([1e9, 1e9]), np.array([1e6, 2e6, 1e6]),
                          arrival=np.array([0.0, 0.0, 1e-4]))


TIMELINES = {
    "pipeline": lambda: simulate_pipeline(pipeline_schedule("1f1b", p=3, m=4), 1e-3, 2e-3,
                                          delays=[4e-4, 0.0], transfer=1e-4),
    "pipeline-hol": lambda: simulate_pipeline(pipeline_schedule("zb-h1", p=3, m=4), 1e-3, 1e-3,
                                              1e-3, transfer=2e-4, hol=True),
    "dualpipe": lambda: simulate_pipeline(pipeline_schedule("dualpipe", p=4, m=8), 1e-3, 1e-3,
                                          1e-3, delays=[0.0, 2e-3, 0.0], transfer=1e-4),
    "zb-v": lambda: simulate_pipeline(pipeline_schedule("zb-v", p=4, m=8), 1e-3, 1e-3, 1e-3,
                                      delays=[1e-3, 0.0, 0.0]),
    "moe-layer": lambda: layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True),
    "cluster-layer": lambda: cluster_layer_timeline(2, loads=[1.0] * 15 + [1.3]),
    "decode-layer": _decode_layer,
    "core-timeline": _core,
    "fluid": _fluid,
}


def _load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("kind", sorted(TIMELINES))
def test_every_timeline_exports_a_valid_trace(kind, tmp_path):
    result = TIMELINES[kind]()
    table = as_table(result)
    path = to_chrome(result, tmp_path / "t.json.gz")
    doc = _load(path)
    assert doc["displayTimeUnit"] == "ns" and isinstance(doc["traceEvents"], list)
    events = doc["traceEvents"]
    x = [e for e in events if e["ph"] == "X"]
    assert len(x) == table.n_ops
    named = {(e["pid"], e["args"]["name"]) for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {p for p, _ in named} == set(range(len(table.process_names)))
    for e in x:
        assert set(e) == {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"}
        assert isinstance(e["name"], str) and e["name"]
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert (e["pid"], e["tid"]) in threads
        assert e["args"]["op_id"] in range(table.n_ops)
    # times as the simulator has them, to the ns the format keeps
    ids = np.array([e["args"]["op_id"] for e in x])
    ts = np.array([e["ts"] for e in x]) * 1e-6
    dur = np.array([e["dur"] for e in x]) * 1e-6
    assert np.allclose(ts, table.start[ids], atol=1e-9, rtol=0)
    assert np.allclose(ts + dur, table.finish[ids], atol=2e-9, rtol=0)
    # events of one thread nest or follow each other (what a trace viewer requires)
    for (_p, _t), grp in _by_thread(x).items():
        grp.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = -1.0
        for e in grp:
            if e["dur"] > 0:
                assert e["ts"] >= end - 1e-3, (kind, e)
                end = max(end, e["ts"] + e["dur"])


def _by_thread(events):
    out = {}
    for e in events:
        out.setdefault((e["pid"], e["tid"]), []).append(e)
    return out


@pytest.mark.parametrize("kind", ["pipeline", "pipeline-hol", "dualpipe", "zb-v", "moe-layer",
                                  "cluster-layer", "decode-layer", "core-timeline"])
def test_flows_draw_every_dependency_between_two_threads(kind, tmp_path):
    result = TIMELINES[kind]()
    table = as_table(result)
    doc = _load(to_chrome(result, tmp_path / "t.json"))
    events = doc["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    assert all(e["bp"] == "e" for e in ends.values())
    dst = np.repeat(np.arange(table.n_ops), np.diff(table.dep_ptr))
    cross = table.thread[dst] != table.thread[table.dep_src]
    assert len(starts) == int(cross.sum()) > 0
    # each arrow starts inside its sender's slice and ends where the receiver starts
    for k, s in starts.items():
        a, b = table.dep_src[k], dst[k]
        assert s["tid"] == table.thread[a] and ends[k]["tid"] == table.thread[b]
        assert abs(s["ts"] - table.start[a] * 1e6) < 1e-3
        assert abs(ends[k]["ts"] - table.start[b] * 1e6) < 1e-3


def test_waited_for_names_the_last_finishing_predecessor(tmp_path):
    r = TIMELINES["moe-layer"]()
    doc = _load(to_chrome(r, tmp_path / "t.json"))
    table = as_table(r)
    w = waited_for(table)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            i = e["args"]["op_id"]
            assert e["args"].get("waited_for_op", -1) == w[i]
    # an op that waited (started later than its resource freed) names an op that ended then
    late = np.flatnonzero(w >= 0)
    assert np.all(table.finish[w[late]] <= table.start[late] + 1e-12)


def _reference_waited_for(table):
    out = []
    for i in range(table.n_ops):
        cands = [int(j) for j in table.dep_src[table.dep_ptr[i]:table.dep_ptr[i + 1]]]
        same = [j for j in range(table.n_ops) if table.thread[j] == table.thread[i]
                and (table.start[j], j) < (table.start[i], i)]
        prev = max(same, key=lambda j: (table.start[j], j)) if same else None
        best, best_t, best_dep = -1, -np.inf, False
        if prev is not None:
            best, best_t = prev, table.finish[prev]
        for j in cands:
            if table.finish[j] > best_t or (table.finish[j] == best_t and not best_dep) or (
                    table.finish[j] == best_t and best_dep and j > best):
                best, best_t, best_dep = j, table.finish[j], True
        out.append(best)
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_waited_for_matches_a_plain_reference(data):
    n = data.draw(st.integers(1, 12))
    start = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), float)
    dur = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), float)
    thread = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    src, dst = [], []
    for i in range(n):
        for j in data.draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True)):
            if j != i:
                src.append(j)
                dst.append(i)
    order = np.argsort(dst, kind="stable")
    ptr = np.r_[0, np.cumsum(np.bincount(np.array(dst, dtype=int), minlength=n))]
    table = TraceTable(start=start, finish=start + dur, thread=thread, thread_process=(0, 0, 0),
                       thread_names=("a", "b", "c"), process_names=("p",),
                       category=np.zeros(n, int), label=lambda ids: [str(i) for i in ids],
                       dep_ptr=ptr, dep_src=np.array(src, dtype=int)[order])
    got = waited_for(table)
    ref = _reference_waited_for(table)
    # ties between two dependencies may go either way; the finish time must agree
    assert np.array_equal(got >= 0, ref >= 0)
    both = got >= 0
    assert np.array_equal(table.finish[got[both]], table.finish[ref[both]])


def test_per_rank_files_carry_distributed_info(tmp_path):
    r = TIMELINES["cluster-layer"]()
    paths = to_chrome(r, tmp_path / "ranks", per_rank=True)
    assert [p.name for p in paths] == [f"rank{g}.json" for g in range(16)]
    total = 0
    for g, p in enumerate(paths):
        doc = _load(p)
        assert doc["distributedInfo"]["rank"] == g and doc["distributedInfo"]["world_size"] == 16
        x = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert {e["pid"] for e in x} == {g}
        total += len(x)
    assert total == r.n_ops
    gz = to_chrome(r, tmp_path / "z.gz", per_rank=True)
    assert gz[0].name == "rank0.json.gz" and _load(gz[0])["distributedInfo"]["rank"] == 0


def test_bad_arguments_name_the_parameter(tmp_path):
    r = TIMELINES["moe-layer"]()
    with pytest.raises(ValueError, match="result must be a timeline result"):
        to_chrome(object(), tmp_path / "x.json")
    with pytest.raises(ValueError, match="path"):
        to_chrome(r, 3)
    with pytest.raises(ValueError, match="per_rank"):
        to_chrome(r, tmp_path / "x.json", per_rank="yes")
    with pytest.raises(ValueError, match="options"):
        to_chrome(r, tmp_path / "x.json", sources=[1])
    with pytest.raises(ValueError, match="sources"):
        to_chrome(_fluid(), tmp_path / "x.json", sources=[0, 1])
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="directory"):
        to_chrome(r, tmp_path / "file", per_rank=True)
    with pytest.raises(ValueError, match="cannot be written"):
        to_chrome(r, tmp_path / "missing" / "x.json")


def test_trace_table_checks_its_columns():
    kw = dict(thread_process=(0,), thread_names=("a",), process_names=("p",),
              label=lambda ids: ["x"] * len(ids))
    with pytest.raises(ValueError, match="finish must be >= start"):
        TraceTable(start=[1.0], finish=[0.5], thread=[0], category=[0], **kw)
    with pytest.raises(ValueError, match="thread"):
        TraceTable(start=[0.0], finish=[1.0], thread=[1], category=[0], **kw)
    with pytest.raises(ValueError, match="category"):
        TraceTable(start=[0.0], finish=[1.0], thread=[0], category=[9], **kw)
    with pytest.raises(ValueError, match="dep_ptr and dep_src"):
        TraceTable(start=[0.0], finish=[1.0], thread=[0], category=[0], dep_ptr=[0, 0], **kw)


def test_fluid_flows_group_by_source_on_lanes_that_never_overlap(tmp_path):
    r = _fluid()
    t = as_table(r, sources=[0, 0, 3])
    assert t.process_names == ("GPU 0 (model)", "GPU 3 (model)")
    for th in range(len(t.thread_names)):
        sel = np.flatnonzero(t.thread == th)
        s, f = t.start[sel], t.finish[sel]
        o = np.argsort(s)
        assert np.all(s[o][1:] >= f[o][:-1])
    # flows 0 and 1 overlap from the same source: two lanes
    assert t.thread[0] != t.thread[1]


# ------------------------------------------------------------------ Holistic Trace Analysis


def _hta_breakdown(folder, monkeypatch, exact=True):
    pytest.importorskip("hta")
    if exact:  # keep the ns the export writes (HTA rounds to whole µs by default)
        monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    from hta.trace_analysis import TraceAnalysis

    df = TraceAnalysis(trace_dir=str(folder)).get_temporal_breakdown(visualize=False)
    return df.set_index("rank").sort_index()


def _union(s, f):
    o = np.argsort(s)
    s, f = s[o], f[o]
    total, cur_s, cur_f = 0.0, None, None
    for a, b in zip(s, f, strict=True):
        if cur_f is None or a > cur_f:
            if cur_f is not None:
                total += cur_f - cur_s
            cur_s, cur_f = a, b
        else:
            cur_f = max(cur_f, b)
    return total + (cur_f - cur_s if cur_f is not None else 0.0)


def _gpu_figures(table, proc):
    """Kernel span, union of GPU ops and union of compute ops of one process (s), from the
    simulator's own start/finish arrays."""
    from uneven.trace._table import CPU

    sel = (table.process == proc) & (table.category != CPU)
    s, f, c = table.start[sel], table.finish[sel], table.category[sel]
    span = f.max() - s.min()
    return span, _union(s, f), _union(s[c == 0], f[c == 0])


@pytest.mark.xdist_group("hta")
def test_hta_reads_pipeline_ranks_and_finds_the_simulators_busy_time(tmp_path, monkeypatch):
    r = simulate_pipeline(pipeline_schedule("1f1b", p=4, m=8), 1.3e-3, 2.1e-3,
                          delays=[0.0, 2.7e-3, 0.0], transfer=3e-4, hol=True)
    to_chrome(r, tmp_path, per_rank=True)
    df = _hta_breakdown(tmp_path, monkeypatch)
    table = as_table(r)
    assert list(df.index) == [0, 1, 2, 3]
    for s in range(4):
        span, union, _ = _gpu_figures(table, s)
        row = df.loc[s]
        # compute = the stage's F/B time, the simulator's busy figure
        assert row["compute_time(us)"] == pytest.approx(r.busy[s] * 1e6, abs=0.01)
        assert row["kernel_time(us)"] == pytest.approx(span * 1e6, abs=0.01)
        assert row["idle_time(us)"] == pytest.approx((span - union) * 1e6, abs=0.01)
        # the sends on the stream (hol: transfer + the link's delay) are HTA's non-compute time
        sends = (r.resource == s) & (r.kind > 2)
        busy_sending = (r.finish[sends] - r.start[sends]).sum()
        assert busy_sending > 0
        assert row["non_compute_time(us)"] == pytest.approx(busy_sending * 1e6, abs=0.02)


@pytest.mark.xdist_group("hta")
@pytest.mark.xdist_group("hta")
@pytest.mark.parametrize("kind", ["dualpipe", "zb-v"])
def test_hta_finds_the_busy_time_of_the_new_schedules(kind, tmp_path, monkeypatch):
    r = TIMELINES[kind]()
    to_chrome(r, tmp_path, per_rank=True)
    df = _hta_breakdown(tmp_path, monkeypatch)
    for s in range(r.schedule.p):
        # F, B, W, F&B and BW are compute: HTA's compute time is the stage's busy time
        assert df.loc[s, "compute_time(us)"] == pytest.approx(r.busy[s] * 1e6, abs=0.01)


@pytest.mark.xdist_group("hta")
def test_hta_rounding_to_whole_microseconds_is_exact_on_whole_microsecond_times(tmp_path,
                                                                               monkeypatch):
    monkeypatch.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)
    r = simulate_pipeline(pipeline_schedule("gpipe", p=3, m=5), 2e-3, 3e-3, delays=1e-3)
    to_chrome(r, tmp_path, per_rank=True)
    df = _hta_breakdown(tmp_path, monkeypatch, exact=False)
    for s in range(3):
        assert df.loc[s, "compute_time(us)"] == round(r.busy[s] * 1e6)
        assert df.loc[s, "non_compute_time(us)"] == 0


@pytest.mark.xdist_group("hta")
def test_hta_reads_an_moe_layer_and_finds_its_exposed_communication(tmp_path, monkeypatch):
    t = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=False, pp_sends=False)
    to_chrome(t, tmp_path, per_rank=True)
    row = _hta_breakdown(tmp_path, monkeypatch).loc[0]
    assert row["kernel_time(us)"] == pytest.approx(t.layer_time * 1e6, abs=0.01)
    assert row["compute_time(us)"] == pytest.approx(t.compute_time * 1e6, abs=0.01)
    # the time the SMs wait: idle plus communication that nothing hides
    exposed = row["idle_time(us)"] + row["non_compute_time(us)"]
    assert exposed == pytest.approx(t.exposed_comm * 1e6, abs=0.02)


@pytest.mark.xdist_group("hta")
def test_hta_reads_every_gpu_of_a_cluster_layer(tmp_path, monkeypatch):
    c = cluster_layer_timeline(2, loads=[1.0] * 15 + [1.3])
    to_chrome(c, tmp_path, per_rank=True)
    df = _hta_breakdown(tmp_path, monkeypatch)
    table = as_table(c)
    assert len(df) == 16
    for g in range(16):
        span, union, comp = _gpu_figures(table, g)
        assert df.loc[g, "kernel_time(us)"] == pytest.approx(c.gpu_time[g] * 1e6, abs=0.01)
        assert df.loc[g, "compute_time(us)"] == pytest.approx(comp * 1e6, abs=0.01)
        assert df.loc[g, "idle_time(us)"] == pytest.approx((span - union) * 1e6, abs=0.01)
    # the hot GPU computes longest: the breakdown sees the imbalance the loads put in
    assert df["compute_time(us)"].idxmax() == 15


@pytest.mark.xdist_group("hta")
def test_hta_reads_a_decode_layer_per_gpu(tmp_path, monkeypatch):
    r = _decode_layer()
    to_chrome(r, tmp_path, per_rank=True)
    df = _hta_breakdown(tmp_path, monkeypatch)
    for g in range(r.completion.size):
        assert df.loc[g, "compute_time(us)"] == pytest.approx(r.compute_time[g] * 1e6, abs=0.01)


def test_gzip_and_plain_exports_hold_the_same_events(tmp_path):
    r = TIMELINES["core-timeline"]()
    a = _load(to_chrome(r, tmp_path / "a.json"))
    b = _load(to_chrome(r, tmp_path / "b.json.gz"))
    assert a == b
    assert os.path.getsize(tmp_path / "b.json.gz") < os.path.getsize(tmp_path / "a.json")


def test_small_chunks_write_the_same_file(tmp_path):
    r = TIMELINES["cluster-layer"]()
    to_chrome(r, tmp_path / "a.json")
    to_chrome(r, tmp_path / "b.json", chunk_size=7)
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
