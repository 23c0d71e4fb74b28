"""The library's layout keeps its promises: one home per concept, one name per concept.

* every module path that moved still works for one release, with a ``DeprecationWarning``
  naming the new home, and forwards to the very same objects;
* a ``_private`` name is imported only from a module whose own file name starts with ``_``;
* no two classes under ``lib/uneven`` share a name;
* everything keyed by paper (the unevenness knob, the palette colour of its system, the
  explorer and its benchmark control, the exercises, the notebook) exists for every paper of
  :data:`uneven.papers.PAPERS`, so adding a paper fails here until all of it is there;
* the hand-written ``__post_init__`` bodies of the result types stay small (their checks come
  from field specs, :mod:`uneven._fields`);
* a notebook's teaching cells are prose plus a short call: no ``assert`` in them, median at most
  6 code lines and none over 20; each section's regression pins sit in one collapsed cell tagged
  ``check`` at the section's end.
"""

import ast
import importlib
import re
import statistics
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from uneven import explorers, plots
from uneven.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "uneven"

#: Old path -> (new path, names renamed on the way).
MOVED = {
    "uneven.ep_traffic": ("uneven.ep.traffic", {}),
    "uneven.ep_model": ("uneven.ep.model", {}),
    "uneven.ep_transport": ("uneven.ep.transport", {}),
    "uneven.ep_decode": ("uneven.ep.decode", {}),
    "uneven.ep_fabrics": ("uneven.ep.fabrics", {}),
    "uneven.expert_roofline": ("uneven.ep.roofline", {}),
    "uneven.schedulers.experts": ("uneven.ep.routing", {}),
    "uneven.schedulers.placement": ("uneven.ep.placement", {}),
    "uneven.schedulers.cores": ("uneven.ep.superpod",
                                {"EpTraffic": "SuperpodTraffic", "ep_traffic": "superpod_traffic"}),
    "uneven.links": ("uneven.online", {}),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_path_forwards_with_a_warning(old):
    new, renamed = MOVED[old]
    target = importlib.import_module(new)
    module = importlib.import_module(old)
    names = list(target.__all__)[:3] + list(renamed)
    for name in names:
        with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
            got = getattr(module, name)
        assert got is getattr(target, renamed.get(name, name))
    assert not hasattr(module, "no_such_name")


def test_old_explorer_names_forward_with_a_warning():
    for old, new in (("deepseek_explorer", "deepseek_explorer"), ("ep_explore_state",
                                                                    "deepseek_state"),
                     ("start_page_explorer", "start_explorer"), ("UnevenState",
                                                                 "UnevennessState")):
        if old == new:
            assert getattr(explorers, new)
            continue
        with pytest.warns(DeprecationWarning, match=new):
            assert getattr(explorers, old) is getattr(explorers, new)


def test_old_mode_word_is_still_relay():
    from uneven.ep import ep_round, route_ep_group
    from uneven.topology import h800_cluster

    with pytest.warns(DeprecationWarning, match="relay"):
        r = ep_round(h800_cluster(2), route_ep_group(2, 4), mode="dedup")
    assert r.dispatch_traffic.mode == "relay"


def _lib_files():
    return sorted(p for p in LIB.rglob("*.py"))


def _module(path: Path) -> list:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _private_imports():
    """(file, line, 'module.name') for every ``_name`` imported from a module whose file name
    does not start with ``_``."""
    out = []
    for path in _lib_files():
        mod = _module(path)
        package = mod if path.name == "__init__.py" else mod[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = node.module.split(".") if node.module else []
            if not target or target[0] != "uneven" or target[-1].startswith("_"):
                continue
            for alias in node.names:
                if alias.name.startswith("_"):
                    out.append(f"{path.relative_to(LIB)}:{node.lineno} "
                               f"{'.'.join(target)}.{alias.name}")
    return out


def test_no_private_name_crosses_a_module_boundary():
    assert _private_imports() == []


def test_one_class_per_name():
    seen = {}
    for path in _lib_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(str(path.relative_to(LIB)))
    twice = {name: files for name, files in seen.items() if len(files) > 1}
    assert twice == {}


def test_the_ep_package_is_the_one_home_of_expert_parallelism():
    import uneven.ep as ep

    for name in ep.__all__:
        assert getattr(ep, name) is not None
    modules = {p.stem for p in (LIB / "ep").glob("*.py")}
    assert modules >= {"routing", "placement", "traffic", "model", "transport", "decode",
                       "superpod", "fabrics", "roofline", "_kernels"}
    top = {p.stem for p in LIB.glob("*.py")}
    old = {"ep_traffic", "ep_model", "ep_transport", "ep_decode", "ep_fabrics",
           "expert_roofline"}
    for stem in top & old:  # only forwarding shims remain at the old paths
        assert "__getattr__ = forward(" in (LIB / f"{stem}.py").read_text()


@pytest.mark.parametrize("p", PAPERS, ids=lambda p: p.key)
def test_every_paper_has_all_its_pieces(p):
    from uneven.unevenness import KNOBS, PIECE_STEPS

    nb = p.notebook[:2]
    assert (ROOT / "notebooks" / f"{p.notebook}.ipynb").exists()
    assert p.key in KNOBS and p.key in PIECE_STEPS, "a knob for notebook 07's explorer"
    assert p.system in plots.PALETTE, "a palette colour for its system"
    mod = importlib.import_module(f"uneven.explorers.nb{nb}")
    for name in (f"{p.key}_state", f"draw_{p.key}", f"{p.key}_explorer"):
        assert callable(getattr(mod, name, None)), f"explorers/nb{nb}.py has no {name}"
        assert getattr(explorers, name) is getattr(mod, name)
    control, values = mod.BENCH_CONTROL  # benchmarks/bench_widgets.py moves it
    assert isinstance(control, str) and len(values) >= 2
    ex = importlib.import_module(f"uneven.exercises.nb{nb}")
    assert len(ex.SOLUTIONS) >= 3


def test_paper_keyed_tables_are_derived_from_papers():
    from uneven.explorers.nb07 import SYSTEM_COLORS
    from uneven.unevenness import KNOBS, PAPER_KEYS

    keys = tuple(p.key for p in PAPERS)
    assert PAPER_KEYS == keys and tuple(SYSTEM_COLORS) == keys and set(KNOBS) == set(keys)
    bench = importlib.util.spec_from_file_location("bench_widgets",
                                                   ROOT / "benchmarks" / "bench_widgets.py")
    mod = importlib.util.module_from_spec(bench)
    bench.loader.exec_module(mod)
    names = [c[0] for c in mod.cases()]
    assert len(names) == len(PAPERS) + 2 and all(any(p.title in n for n in names)
                                                 for p in PAPERS)


def test_result_types_check_fields_from_specs():
    total = 0
    for path in _lib_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "__post_init__":
                total += node.end_lineno - node.lineno + 1
    assert total <= 300, f"__post_init__ bodies total {total} lines"


def test_no_module_imports_an_old_path():
    """Code, notebooks, tests, benchmarks and docs use the new homes (the shims are for users)."""
    olds = [m for m in MOVED] + ["uneven.schedulers import cores"]
    hits = []
    for folder in ("lib", "notebooks", "tests", "benchmarks", "tools", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".ipynb", ".md") or path.name == "test_layout.py":
                continue
            text = path.read_text()
            for old in olds:
                if f"{old} import" in text or f"from {old}" in text or f"import {old}" in text:
                    hits.append(f"{path.relative_to(ROOT)}: {old}")
    assert hits == []


def test_the_package_imports_without_a_warning():
    code = "import uneven, uneven.ep, uneven.explorers, uneven.exercises, uneven.warmup"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


# ---- notebooks ---------------------------------------------------------------------------------

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _tags(cell) -> set:
    return set(cell.get("metadata", {}).get("tags", []))


def _code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines()
               if line.strip() and not line.strip().startswith("#"))


def _asserts(source: str) -> int:
    source = "\n".join(line for line in source.splitlines()
                       if not line.lstrip().startswith(("%", "!")))  # IPython magics
    return sum(isinstance(node, ast.Assert) for node in ast.walk(ast.parse(source)))


def _opens_section(cell) -> bool:
    return cell.cell_type == "markdown" and any(re.match(r"^#{1,2} ", line)
                                                for line in cell.source.splitlines())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_teaching_cells_are_prose_plus_a_short_call(path):
    cells = nbformat.read(path, as_version=4).cells
    teaching = [c for c in cells if c.cell_type == "code" and not _tags(c) & {"stamp", "check"}]
    sizes = [_code_lines(c.source) for c in teaching]
    assert statistics.median(sizes) <= 6 and max(sizes) <= 20, (statistics.median(sizes),
                                                                max(sizes))
    assert not [c.id for c in teaching if _asserts(c.source)], "an assert in a teaching cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_section_pins_its_numbers_in_one_collapsed_check_cell(path):
    cells = nbformat.read(path, as_version=4).cells
    sections, current = [], []
    for cell in cells:
        if _opens_section(cell):
            sections.append(current)
            current = []
        current.append(cell)
    sections.append(current)
    n_checks = 0
    for section in sections:
        checks = [i for i, c in enumerate(section) if "check" in _tags(c)]
        assert len(checks) <= 1, f"{path.name}: two check cells in one section"
        for i in checks:
            cell = section[i]
            assert cell.cell_type == "code" and _asserts(cell.source) > 0
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True
            later = [c for c in section[i + 1:]
                     if c.cell_type == "code" and "stamp" not in _tags(c)]
            assert not later, f"{path.name}: {cell.id} is not the last code cell of its section"
        n_checks += len(checks)
    assert n_checks > 0


# Notebooks in their second edition: the core path (markdown before the Appendix, if any;
# solutions and stamps aside) is at most ~3,000 words; detours and the model's explorations go to
# an Appendix after the takeaways.
SECOND_EDITIONS = {"01_attack_of_the_bubbles.ipynb": True, "02_bytescale.ipynb": True,
                   "03_deepseek_v3.ipynb": False, "04_megascale_moe.ipynb": True,
                   "05_balancing_and_beyond.ipynb": True, "06_ubep.ipynb": True,
                   "07_what_they_agree_on.ipynb": True, "08_research_quickstart.ipynb": False}


_APPENDIX = re.compile(r"^#+\s*(appendix|going further|optional|附錄)", re.I | re.M)


@pytest.mark.parametrize("name", SECOND_EDITIONS)
def test_core_path_is_at_most_3000_words_with_an_appendix_after_it(name):
    """Words as the project's before-stop hook counts them: runs of letters, digits and
    apostrophes in markdown before the first Appendix heading, collapsed solutions left out."""
    cells = nbformat.read(ROOT / "notebooks" / name, as_version=4).cells
    words, appendix = 0, False
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        if _APPENDIX.search(cell.source):
            appendix = True
            break
        prose = re.sub(r"<details.*?</details>", " ", cell.source, flags=re.S)
        words += len(re.findall(r"[A-Za-z0-9']+", prose))
    assert appendix or not SECOND_EDITIONS[name], f"{name} has no '## Appendix' section"
    assert words <= 3000, f"{name}: the core path has {words:,} words of prose"


def _readme_library_block() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## The library")
    return text[start:text.index("```", text.index("```", start) + 3)]


def test_the_readme_lists_every_public_module():
    """Every public module and package (not a forwarding shim at an old path) is named in the
    README's library map: ``name.py`` for a module, ``name/`` for a package."""
    block = _readme_library_block()
    missing = []
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB)
        if any(part.startswith("_") for part in rel.parts) or "__pycache__" in rel.parts:
            continue
        if "__getattr__ = forward(" in path.read_text():  # an old path kept for one release
            continue
        if rel.parts[0] in ("exercises", "explorers"):  # one module per notebook, named as such
            continue
        if not re.search(rf"(?<![\w/]){re.escape(path.name)}\b", block):
            missing.append(str(rel))
    for pkg in sorted(p for p in LIB.iterdir() if (p / "__init__.py").exists()):
        if not pkg.name.startswith("_") and f"{pkg.name}/" not in block:
            missing.append(f"{pkg.name}/")
    assert not missing, f"the README's library map leaves out {missing}"
