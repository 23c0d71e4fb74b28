"""Speed of reading and replaying PyTorch profiler (Kineto) traces (:mod:`uneven.trace.kineto`).

The traces are the library's synthetic sample (:func:`sample_kineto_traces`, model) at the size
of a real profile: 8 ranks of about 20,000 GPU ops each (1,740 layers: GEMMs, attention,
elementwise kernels, an all-to-all per layer and direction, all-reduce buckets), each with its
launch call, ``ac2g`` flows, ``cpu_op`` and ``cuda_sync`` events, written as one JSON file per
rank. Rows:

* ``read_kineto`` of the 8 files: JSON parsing alone, and all of it (parsing, matching launches,
  waits and collectives, calibration, the unmodified replay and its critical path);
* one what-if replay (one rank's communication delayed; GEMMs of every rank scaled), each a
  run of the timeline engine plus the critical path;
* the same read from ``.json.gz`` files.

Run alone: ``python benchmarks/bench_kineto.py``.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from _timing import best_of

from uneven.trace.kineto import read_kineto, sample_kineto_traces

N_RANKS, N_LAYERS = 8, 1740


def _write(folder: Path, docs, gz: bool):
    for r, doc in enumerate(docs):
        path = folder / f"rank{r}.pt.trace.json{'.gz' if gz else ''}"
        with (gzip.open(path, "wt", compresslevel=1) if gz else open(path, "w")) as f:
            json.dump(doc, f)


def _parse(folder: Path):
    for path in sorted(folder.iterdir()):
        raw = path.read_bytes()
        json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def run() -> list[dict]:
    """Read and replay rows (the sample is generated once, outside the timings)."""
    read_kineto(sample_kineto_traces(n_ranks=2, n_layers=2))  # warm the JIT
    docs = sample_kineto_traces(n_ranks=N_RANKS, n_layers=N_LAYERS, seed=0,
                                rank_speed=[1.0 + 0.02 * r for r in range(N_RANKS)])
    n_events = sum(len(d["traceEvents"]) for d in docs)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for gz in (False, True):
            folder = Path(tmp) / ("gz" if gz else "json")
            folder.mkdir()
            _write(folder, docs, gz)
            mb = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
            parse = best_of(lambda folder=folder: _parse(folder), 1)[0]
            secs, trace = best_of(lambda folder=folder: read_kineto(folder), 2)
            size = (f"{N_RANKS} ranks × {trace.n_gpu_ops // N_RANKS:,} GPU ops "
                    f"({trace.n_ops:,} ops, {n_events:,} events, {mb:.0f} MB"
                    f"{' gzip' if gz else ''})")
            rows.append({"benchmark": "read_kineto: JSON parsing alone", "size": size,
                         "seconds": parse, "metric": f"{n_events / parse:.3g} events/s",
                         "target": "report", "met": None})
            rows.append({"benchmark": "read_kineto: parse, build, calibrate, replay",
                         "size": size, "seconds": secs,
                         "metric": f"{trace.n_gpu_ops / secs:.3g} GPU ops/s; replay error "
                                   f"{trace.replay_error * 1e9:.0f} ns",
                         "target": "< 60 s", "met": secs < 60})
        del docs
        nodes = trace._g.n_nodes  # the engine's ops (arrive/transfer/join, CPU points)
        for label, what in (
                ("what-if replay: one rank's communication +100 µs",
                 lambda: trace.delay_comm(100e-6, rank=3)),
                ("what-if replay: every GEMM 1.5×", lambda: trace.scale(1.5, category="gemm"))):
            secs, r = best_of(what, 3)
            rows.append({"benchmark": label, "size": f"{trace.n_ops:,} ops, {nodes:,} engine "
                                                     "ops", "seconds": secs,
                         "metric": f"{nodes / secs:.3g} engine ops/s; step "
                                   f"{r.ratio - 1:+.1%} (model)",
                         "target": "< 5 s", "met": secs < 5})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
