"""Every notebook runs top to bottom headless without an error (outputs are not kept)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from run_notebooks import execute  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="session")
def numba_cache(tmp_path_factory):
    # A fresh cache per test session: the run proves the notebooks compile from nothing.
    return str(tmp_path_factory.mktemp("numba-cache"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, numba_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path))  # don't touch the committed figures/
    seconds = execute(path, timeout=300, cache_dir=numba_cache)
    print(f"{path.name}: {seconds:.1f} s")
    assert list(tmp_path.glob("*.png")), f"{path.name} saved no figure"
