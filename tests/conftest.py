"""Session-wide reporting: the fuzz suite's outcome table (tests/test_fuzz.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_terminal_summary(terminalreporter):
    try:
        import _fuzz_worker as fw
    except ImportError:  # pragma: no cover
        return
    if not fw.STATS:
        return
    cats = ("ok", "clean", "unnamed", "other", "nonfinite", "crash", "hang", "skip")
    totals = {c: sum(s.get(c, 0) for s in fw.STATS.values()) for c in cats}
    calls = sum(totals.values())
    tr = terminalreporter
    tr.section("fuzz outcomes")
    tr.write_line(f"{len(fw.STATS)} targets, {calls} calls")
    tr.write_line("  ".join(f"{c}={totals[c]}" for c in cats))
    bad = {t: s for t, s in fw.STATS.items() if any(s.get(c) for c in fw.FAILING)}
    for t, s in sorted(bad.items()):
        tr.write_line(f"  {t}: " + ", ".join(f"{c}={s[c]}" for c in fw.FAILING if s.get(c)))
    path = os.environ.get("UNEVEN_FUZZ_REPORT")
    if path:
        Path(path).write_text(json.dumps({"calls": calls, "totals": totals,
                                          "per_target": fw.STATS, "failures": fw.FAILURES},
                                         indent=1))
