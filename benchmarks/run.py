"""Run every ``benchmarks/bench_*.py`` and print one table (``make bench``).

Benchmarks are measurements, not tests: nothing here fails a build. Ratios compare an engine with
its pure-Python reference in the same run on the same machine.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the benchmarks share benchmarks/_timing.py


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fmt_seconds(s):
    if s is None:
        return ""
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def main(argv):
    only = set(argv)
    rows = []
    for path in sorted(HERE.glob("bench_*.py")):
        if only and path.stem not in only and path.stem.removeprefix("bench_") not in only:
            continue
        t0 = time.perf_counter()
        try:
            rows += load(path).run()
        except Exception as err:  # report and go on: one broken bench must not hide the others
            rows.append({"benchmark": path.stem, "size": "", "seconds": None,
                         "metric": f"FAILED: {type(err).__name__}: {err}", "target": "",
                         "met": False})
        print(f"# {path.name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print(f"machine: {platform.machine()}, {platform.python_version()}, "
          f"{__import__('os').cpu_count()} cores")
    head = ("benchmark", "size", "engine", "reference", "ratio", "metric", "target", "met")
    table = [head]
    for r in rows:
        ratio = r.get("ratio")
        met = r.get("met")
        table.append((
            r["benchmark"], r.get("size", ""), fmt_seconds(r.get("seconds")),
            fmt_seconds(r.get("reference_seconds")), f"{ratio:,.0f}×" if ratio else "",
            r.get("metric", ""), r.get("target", ""),
            "" if met is None else ("yes" if met else "NO"),
        ))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            print("-+-".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
