"""Every notebook runs top to bottom headless without an error (outputs are not kept), and its
outputs keep the figure contract that the cell tags state:

* a code cell tagged ``figure`` shows at least one ``image/png``;
* a cell tagged ``explorer`` shows an ``image/png`` (the static first figure) and a widget view;
* an untagged cell shows no ``image/png``;
* no text output (``text/plain`` or a stream) contains ``<Figure size`` (a figure's repr leaking
  out instead of its picture);
* every figure recipe the notebook calls draws in the house style (``UNEVEN_CHECK_STYLE=1``:
  :func:`uneven.plots.style_problems` finds nothing, although no cell is inside ``style()``).

Each notebook is executed once; the executed copy is kept under pytest's base temp folder
(``executed/<name>``) so that later tests in the same session can reuse it.
"""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from run_notebooks import run  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PNG = "image/png"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="session")
def numba_cache(tmp_path_factory):
    # A fresh cache per test session: the run proves the notebooks compile from nothing.
    return str(tmp_path_factory.mktemp("numba-cache"))


def _texts(output):
    if output.get("output_type") == "stream":
        yield output.get("text", "")
    text = output.get("data", {}).get("text/plain")
    if text:
        yield text if isinstance(text, str) else "".join(text)


def figure_contract_problems(nb, name):
    """Every way the executed notebook ``nb`` breaks the figure contract, one line each."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        kinds = [set(o.get("data", {})) for o in cell.get("outputs", [])]
        pngs = sum(PNG in k for k in kinds)
        widgets = sum(WIDGET in k for k in kinds)
        where = f"{name} cell {i} (tags {sorted(tags) or 'none'})"
        if "figure" in tags and not pngs:
            problems.append(f"{where}: tagged 'figure' but shows no image/png")
        if "explorer" in tags and not (pngs and widgets):
            problems.append(f"{where}: tagged 'explorer' needs an image/png and a widget view; "
                            f"has {pngs} image(s) and {widgets} widget view(s)")
        if not tags & {"figure", "explorer"} and pngs:
            problems.append(f"{where}: shows {pngs} image/png output(s) but is not tagged "
                            "'figure' or 'explorer'")
        for out in cell.get("outputs", []):
            if any("<Figure size" in t for t in _texts(out)):
                problems.append(f"{where}: a text output contains '<Figure size' (a figure's "
                                "repr printed instead of the picture)")
                break
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            if "UnitWarning" in "".join(text):  # a notebook's own numbers are never a slip
                problems.append(f"{where}: warns of a unit slip: {''.join(text)[:200]}")
                break
    return problems


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_keeps_the_figure_contract(path, numba_cache, tmp_path, monkeypatch,
                                                     tmp_path_factory):
    monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path))  # don't touch the committed figures/
    monkeypatch.setenv("UNEVEN_CHECK_STYLE", "1")  # every recipe the notebook calls: house style
    nb, seconds = run(path, timeout=300, cache_dir=numba_cache)
    print(f"{path.name}: {seconds:.1f} s")
    executed = tmp_path_factory.getbasetemp() / "executed"
    executed.mkdir(exist_ok=True)
    nbformat.write(nb, executed / path.name)
    assert list(tmp_path.glob("*.png")), f"{path.name} saved no figure"
    problems = figure_contract_problems(nb, path.name)
    assert not problems, "figure contract broken:\n" + "\n".join(problems)


def test_the_figure_contract_check_names_notebook_and_cell():
    v4 = nbformat.v4
    png = {"output_type": "display_data", "metadata": {}, "data": {PNG: "iVBOR", "text/plain": ""}}
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("# t"),
        v4.new_code_cell("f", metadata={"tags": ["figure"]}),
        v4.new_code_cell("x", outputs=[v4.new_output(**png)]),
        v4.new_code_cell("e", metadata={"tags": ["explorer"]}, outputs=[v4.new_output(**png)]),
        v4.new_code_cell("p", outputs=[v4.new_output("stream", name="stdout",
                                                     text="<Figure size 640x480 with 1 Axes>")]),
        v4.new_code_cell("ok", metadata={"tags": ["figure"]}, outputs=[v4.new_output(**png)]),
    ])
    problems = figure_contract_problems(nb, "demo.ipynb")
    assert [p.split(":")[0] for p in problems] == [
        "demo.ipynb cell 1 (tags ['figure'])", "demo.ipynb cell 2 (tags none)",
        "demo.ipynb cell 3 (tags ['explorer'])", "demo.ipynb cell 4 (tags none)"]


@pytest.mark.notebook
def test_moving_a_control_replaces_the_static_figure_in_place(numba_cache, tmp_path):
    """In a real kernel, the explorer's first output is a plain PNG (what GitHub and nbviewer show);
    a control change updates that same output through its display id."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from uneven.explorers import start_explorer\n"
                                  "ex = start_explorer()"),
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
