"""Session-wide reporting: the fuzz suite's outcome table (tests/test_fuzz.py)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


# Read once, at start-up: the fuzz harness points ``tempfile`` at sandboxes later on.
_TMP = Path(tempfile.gettempdir())


def _shared_dir(config) -> Path:
    """Where pytest-xdist workers leave their fuzz counts for the controller to add up: a
    folder named after the controller's process (the workers' parent)."""
    controller = os.getppid() if hasattr(config, "workerinput") else os.getpid()
    return _TMP / f"uneven-fuzz-{controller}"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist tells the controller this worker is done
def pytest_sessionfinish(session):
    worker = getattr(session.config, "workerinput", None)
    if worker is None:
        return
    try:
        import _fuzz_worker as fw
    except ImportError:  # pragma: no cover
        return
    if fw.STATS:
        folder = _shared_dir(session.config)
        folder.mkdir(exist_ok=True)
        (folder / f"{worker['workerid']}.json").write_text(
            json.dumps({"stats": fw.STATS, "failures": fw.FAILURES}))


def pytest_terminal_summary(terminalreporter):
    if hasattr(terminalreporter.config, "workerinput"):
        return  # a pytest-xdist worker: the controller prints the table
    try:
        import _fuzz_worker as fw
    except ImportError:  # pragma: no cover
        return
    folder = _shared_dir(terminalreporter.config)
    if folder.is_dir():  # counts from pytest-xdist workers
        for part in sorted(folder.glob("*.json")):
            data = json.loads(part.read_text())
            part.unlink()
            for target, counts in data["stats"].items():  # a target's tests may split
                mine = fw.STATS.setdefault(target, {})
                for cat, n in counts.items():
                    mine[cat] = mine.get(cat, 0) + n
            if isinstance(fw.FAILURES, dict):
                fw.FAILURES.update(data["failures"])
            else:
                fw.FAILURES.extend(data["failures"])
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
