"""Speed of the sequence scheduler (notebook 02, ByteScale) at production scale, and its widget.

* One balanced step of a 32M-token Byted-like global batch on 16,384 GPUs: plan the HDP items
  (best-fit packing, ranks per sequence), run the balance rounds, build the step's DAG and time it
  with the timeline engine, and compute the naive plan the scheduler falls back on. Drawing the
  batch is input preparation and is timed separately. Two shapes: TP = 8 with C = 16K (2,048
  ranks), and TP = 4 × PP = 8 with C = 32K per pipeline (512 pipelines of 1F1B, rings synchronised
  stage by stage).
* The packing and balance kernels against their pure-Python references.
* Notebook 02's explorer: median update (compute + draw + PNG) at the notebook's 1.5x scale.

Run alone: ``python benchmarks/bench_sequences.py``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from _timing import best_of

from uneven.schedulers import sequences as S
from uneven.schedulers.sequences import HdpSetup, best_fit_pack, global_batch, schedule_step

TOKENS = 32 * 2**20
SHAPES = (
    ("TP 8, C 16K: 2,048 ranks", dict(n_gpus=16384, tp=8, pp=1, capacity=16384)),
    ("TP 4 x PP 8, C 32K: 512 pipelines", dict(n_gpus=16384, tp=4, pp=8, capacity=32768)),
)


def _balanced_step_rows():
    t0 = time.perf_counter()
    lengths = global_batch(TOKENS, seed=0)
    t_batch = time.perf_counter() - t0
    rows = []
    for label, kw in SHAPES:
        setup = HdpSetup(**kw)
        schedule_step(lengths, setup, "balanced")  # compile and warm the caches
        seconds, step = best_of(lambda s=setup: schedule_step(lengths, s, "balanced"), 3)
        rows.append({
            "benchmark": "one balanced HDP step, 16,384 GPUs",
            "size": f"32M tokens, {lengths.size:,} sequences, {step.items.n:,} items, "
                    f"{step.start.size:,} timeline ops; {label}",
            "seconds": seconds,
            "metric": f"plan + balance + DAG + timeline + naive fallback (batch drawn in "
                      f"{t_batch * 1e3:.1f} ms)",
            "target": "< 1 s", "met": seconds < 1.0,
        })
    return rows


def _kernel_rows():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 8192, size=3000)
    best_fit_pack(lengths, 8192)
    engine = best_of(lambda: best_fit_pack(lengths, 8192), 5)[0]
    t0 = time.perf_counter()
    S._reference_best_fit(lengths.tolist(), 8192)
    reference = time.perf_counter() - t0
    rows = [{"benchmark": "sequences.best_fit_pack vs pure-Python reference",
             "size": "3,000 sequences into 8K-token packs", "seconds": engine,
             "reference_seconds": reference, "ratio": reference / engine, "metric": "",
             "target": None, "met": None}]
    n_items, R = 2000, 512
    d = rng.uniform(0.1, 10.0, n_items)
    w = np.where(rng.random(n_items) < 0.1, rng.integers(2, 64, n_items), 1).astype(np.int64)
    order, bucket_ptr = S.flop_buckets(d * w, 8)
    ptr = np.concatenate([[0], np.cumsum(w)]).astype(np.int64)
    ranks = np.empty(ptr[-1], dtype=np.int64)
    slots = np.empty(ptr[-1], dtype=np.int64)
    load = np.empty(R)
    start = np.empty(n_items)

    def run():  # PP-Balance: every rank draws from its own bucket
        S._balance_kernel(order, bucket_ptr, w, d, d, R, 0.0, 1, 1, False, 4, ptr, ranks, slots,
                          load, start)

    run()
    engine = best_of(run, 5)[0]
    t0 = time.perf_counter()
    S._reference_balance(order.tolist(), bucket_ptr.tolist(), w.tolist(), d, d, R, 0.0, 1, 1,
                         False, 4)
    reference = time.perf_counter() - t0
    rows.append({"benchmark": "sequences balance rounds (PP-Balance) vs pure-Python reference",
                 "size": f"{n_items:,} items (10% rings of 2-63 ranks), 8 buckets, {R} ranks",
                 "seconds": engine, "reference_seconds": reference,
                 "ratio": reference / engine, "metric": "", "target": None, "met": None})
    return rows


def _widget_rows():
    from uneven.explorers.nb02 import bytescale_explorer

    rows = []
    ex = bytescale_explorer(show=False)
    for control, values in (("nic_gbps", [200.0, 300.0, 400.0, 500.0, 600.0]),
                            ("delta", [0.0, 0.1, 0.2, 0.3, 0.4])):
        for v in values:  # warm: caches, first draw
            ex.controls[control].value = v
        ex.timings.clear()
        for v in values * 4:
            ex.controls[control].value = v
        med = statistics.median(ex.timings)
        rows.append({"benchmark": "widget update, ByteScale (02)",
                     "size": f"median of {len(ex.timings)}, moving '{control}'",
                     "seconds": med, "metric": "compute + draw + PNG encode",
                     "target": "< 50 ms", "met": med < 0.05})
    return rows


def run():
    return _balanced_step_rows() + _kernel_rows() + _widget_rows()


if __name__ == "__main__":
    for r in run():
        print(r)
