"""Speed of the Perfetto export (:func:`uneven.trace.to_chrome`), streamed to disk.

* a pipeline iteration over 16,384 GPUs (1F1B, p = 16,384 stages, m = 32 micro-batches, a
  transfer time on every link, so every tensor is a send op on a CPU sender: some 2 million ops
  and their send -> receive arrows);
* one MoE layer on 1,440 GPUs (180 H800 nodes, :func:`cluster_layer_timeline`, tiles of the
  fused GEMM/all-to-all pairs and the collective coupling inside each node);
* both plain JSON and gzip.

Each row gives the export's wall time, ops per second and the file size; the peak memory the
export adds (over the result it reads) is measured in a child process with ``ru_maxrss``.

Run alone: ``python benchmarks/bench_trace.py``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import resource, sys, time
from uneven.trace import to_chrome
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline
from uneven.schedulers.moe_layer import cluster_layer_timeline
kind, path = sys.argv[1], sys.argv[2]
if kind == "pipeline":
    r = simulate_pipeline(pipeline_schedule("1f1b", 16384, 32), 1e-3, 2e-3, delays=1e-4,
                          transfer=1e-5)
    n = r.start.size
else:
    r = cluster_layer_timeline(180)
    n = r.n_ops
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
to_chrome(r, path)
secs = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(n, secs, (after - before) / 1024)
"""


def _export(kind: str, suffix: str):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"trace{suffix}"
        out = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], check=True,
                             capture_output=True, text=True).stdout.split()
        n, secs, extra_mb = int(out[0]), float(out[1]), float(out[2])
        return n, secs, extra_mb, path.stat().st_size if path.exists() else 0


def run():
    rows = []
    for kind, size in (("pipeline", "1F1B p=16,384, m=32"), ("moe", "1,440 GPUs (180 nodes)")):
        for suffix in (".json", ".json.gz"):
            n, secs, extra_mb, nbytes = _export(kind, suffix)
            rows.append({
                "benchmark": f"Perfetto export, {'pipeline' if kind == 'pipeline' else 'MoE layer'}"
                             f" ({suffix})",
                "size": f"{size}: {n:,} ops",
                "seconds": secs,
                "metric": f"{n / secs:.3g} ops/s, {nbytes / 1e6:.0f} MB, "
                          f"+{extra_mb:.0f} MB peak",
                "target": "report",
                "met": None,
            })
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
