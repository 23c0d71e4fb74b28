"""Widget latency: median of 20 updates of each notebook's explorer (compute + draw + PNG), at the
resolution the notebooks show (1.5x for HiDPI screens)."""

from __future__ import annotations

import statistics

from uneven.explorers import (
    balancing_explorer,
    bytescale_explorer,
    deepseek_explorer,
    megascale_explorer,
    pipeline_explorer,
    start_page_explorer,
    ubep_explorer,
    unevenness_explorer,
)

CASES = (
    ("start page (00)", start_page_explorer, "mb_per_pair", [0.5, 1.0, 2.0, 4.0, 8.0]),
    ("pipeline (01)", pipeline_explorer, "delay_ms", [0.0, 5.0, 10.0, 20.0, 30.0]),
    ("ByteScale (02)", bytescale_explorer, "nic_gbps", [200.0, 300.0, 400.0, 500.0, 600.0]),
    ("DeepSeek-V3 EP (03)", deepseek_explorer, "ib_gbps", [200.0, 300.0, 400.0, 500.0, 600.0]),
    ("MegaScale-MoE layer (04)", megascale_explorer, "h_ffn", [2048, 4096, 8192, 12288, 14336]),
    ("balancing (05)", balancing_explorer, "skew", [2.0, 4.0, 6.0, 8.0, 12.0]),
    ("UBEP (06)", ubep_explorer, "barrier_us", [0.0, 10.0, 20.0, 30.0, 40.0]),
    ("what they agree on (07)", unevenness_explorer, "deepseek", [0.1, 0.3, 0.5, 0.7, 0.9]),
)


def run():
    rows = []
    for name, build, control, values in CASES:
        ex = build(show=False)
        for v in values:  # warm: compile, caches, first draw
            ex.controls[control].value = v
        ex.timings.clear()
        for v in values * 4:
            ex.controls[control].value = v
        med = statistics.median(ex.timings)
        rows.append({"benchmark": f"widget update, {name}", "size": f"median of "
                     f"{len(ex.timings)}, moving '{control}'", "seconds": med,
                     "metric": "compute + draw + PNG encode", "target": "< 50 ms",
                     "met": med < 0.05})
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
