"""Execute notebooks headless (no outputs written back) and report each one's run time.

Used by ``make figures`` (the notebooks write ``figures/`` themselves) and by the test suite.
Usage: ``python tools/run_notebooks.py notebooks/*.ipynb``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 300, cache_dir: str | None = None) -> float:
    """Run ``path`` top to bottom in its own folder; return seconds. Raises on any cell error."""
    nb = nbformat.read(path, as_version=4)
    env_cache = cache_dir or os.environ.get("NUMBA_CACHE_DIR")
    if env_cache:
        os.environ["NUMBA_CACHE_DIR"] = env_cache
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted(Path("notebooks").glob("*.ipynb"))
    cache = os.environ.get("NUMBA_CACHE_DIR") or tempfile.mkdtemp(prefix="uneven-numba-")
    for p in paths:
        secs = execute(p, cache_dir=cache)
        print(f"{p}: {secs:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
