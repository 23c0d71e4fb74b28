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


class CellFailed(RuntimeError):
    """A notebook cell raised or timed out; the message names the notebook and the cell."""

    def __init__(self, notebook: str, cell_index: int | None, error: Exception | str):
        self.notebook, self.cell_index, self.error = notebook, cell_index, error
        what = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        super().__init__(f"{notebook} cell {cell_index}: {what}")

    def __reduce__(self):
        # a process pool sends it back pickled; the kernel's error may not pickle, its text does
        what = self.error if isinstance(self.error, str) else (
            f"{type(self.error).__name__}: {self.error}")
        return (type(self), (self.notebook, self.cell_index, what))


def run(path: Path, timeout: int = 300,
        cache_dir: str | None = None) -> tuple[nbformat.NotebookNode, float]:
    """Run ``path`` top to bottom in its own folder; return the executed notebook (outputs
    included, nothing written back) and the seconds it took. Raises on any cell error;
    ``timeout`` is per cell."""
    nb = nbformat.read(path, as_version=4)
    env_cache = cache_dir or os.environ.get("NUMBA_CACHE_DIR")
    if env_cache:
        os.environ["NUMBA_CACHE_DIR"] = env_cache
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    current = {"index": None}

    def started(cell, cell_index):  # nbclient hook: which cell is running
        current["index"] = cell_index

    client.on_cell_start = started
    t0 = time.perf_counter()
    try:
        client.execute()
    except Exception as err:  # name the notebook and the cell in the message
        raise CellFailed(path.name, current["index"], err) from err
    return nb, time.perf_counter() - t0


def execute(path: Path, timeout: int = 300, cache_dir: str | None = None) -> float:
    """Run ``path`` top to bottom in its own folder; return seconds. Raises on any cell error."""
    return run(path, timeout=timeout, cache_dir=cache_dir)[1]


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted(Path("notebooks").glob("*.ipynb"))
    cache = os.environ.get("NUMBA_CACHE_DIR") or tempfile.mkdtemp(prefix="uneven-numba-")
    for p in paths:
        secs = execute(p, cache_dir=cache)
        print(f"{p}: {secs:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
