"""Widget latency: median of 20 updates of each notebook's explorer (compute + draw + PNG), at the
resolution the notebooks show (1.5x for HiDPI screens)."""

from __future__ import annotations

import statistics

from uneven import explorers
from uneven.papers import PAPERS


def cases():
    """``(name, build, control, values)`` per explorer: the start page, one per paper of
    :data:`uneven.papers.PAPERS` (a new paper is benchmarked without editing this file), and
    notebook 07's synthesis. Each explorer module names the control to move (``BENCH_CONTROL``).
    """
    rows = [("start page (00)", explorers.nb00, explorers.start_explorer)]
    for p in PAPERS:
        nb = p.notebook[:2]
        rows.append((f"{p.title} ({nb})", getattr(explorers, f"nb{nb}"),
                     getattr(explorers, f"{p.key}_explorer")))
    rows.append(("what they agree on (07)", explorers.nb07, explorers.unevenness_explorer))
    return [(name, build, *mod.BENCH_CONTROL) for name, mod, build in rows]


def run():
    rows = []
    for name, build, control, values in cases():
        ex = build(show=False)
        for v in values:  # warm: compile, caches, first draw
            ex.controls[control].value = v
        ex.timings.clear()
        for v in list(values) * 4:
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
