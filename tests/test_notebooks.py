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


@pytest.mark.notebook
def test_moving_a_control_replaces_the_static_figure_in_place(numba_cache, tmp_path):
    """In a real kernel, the explorer's first output is a plain PNG (what GitHub and nbviewer show);
    a control change updates that same output through its display id."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from uneven.explorers import start_page_explorer\n"
                                  "ex = start_page_explorer()"),
        nbformat.v4.new_code_cell("ex.controls['hot_factor'].value = 6.0\nprint(ex.error)"),
    ]
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    first_png = {}

    def remember(cell, cell_index, execute_reply):  # nbclient hook, after each cell
        if cell_index == 0:
            first_png["before"] = next(o["data"]["image/png"] for o in cell.outputs
                                       if "image/png" in o.get("data", {}))

    client.on_cell_executed = remember
    client.execute()
    outputs = nb.cells[0].outputs
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1, "the static figure is one PNG output"
    assert pngs[0]["data"]["image/png"] != first_png["before"], "the update replaced it in place"
    assert nb.cells[1].outputs[0]["text"].strip() == "None"
