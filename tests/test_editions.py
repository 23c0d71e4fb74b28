"""The editions built from the notebooks (tools/editions): the Binder/Colab stamp, the classroom
assignments (otter-grader) and the self-study site (Sphinx + MyST-NB).

Fast tests check the stamp, the discovery of notebooks and exercises, the instructors' guide and
the assignment files. Two groups are marked ``slow`` (deselect with ``-m "not slow"``):
``otter run`` grades every notebook's solutions and blank student version (two runs per notebook,
side by side), and the site is built from a clean copy of the checkout (every notebook executed,
two at a time). Both share one numba cache, so kernels compile once per session.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from uneven import online
from uneven.exercises import check, exercise

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from _checkout import clean_copy  # noqa: E402
from editions import assignments, discover, guide, stamp  # noqa: E402

NOTEBOOKS = discover.notebook_paths()
WITH_EXERCISES = [p for p in NOTEBOOKS if discover.questions(discover.load(p))]
ids = [p.name for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def numba_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("editions-numba"))


# ---- the one setting and the stamp ---------------------------------------------------------------

def test_links_come_from_one_setting(monkeypatch, tmp_path):
    name = "03_deepseek_v3.ipynb"
    assert online.REPOSITORY == online._configured()  # read from pyproject.toml
    monkeypatch.setattr(online, "REPOSITORY", "someone/uneven")
    assert online.published()
    for url in (online.binder_url(name), online.colab_url(name), online.pip_requirement()):
        assert "someone/uneven" in url
    with pytest.raises(ValueError, match="notebook"):
        online.binder_url("../README.md")
    with pytest.raises(ValueError, match="repository"):
        online.colab_url(name, repository="not a repo")
    monkeypatch.setattr(online, "REPOSITORY", None)
    assert not online.published()
    for make in (online.binder_url, online.colab_url):
        with pytest.raises(ValueError, match="repository: the collection is not published"):
            make(name)
    # the one place: [project.urls] Repository
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[project]\nname = "uneven"\n[project.urls]\n'
                    'Repository = "https://github.com/someone/uneven"\n')
    assert online._configured(toml) == "someone/uneven"
    toml.write_text('[project]\nname = "uneven"\n[project.urls]\n')
    assert online._configured(toml) is None
    toml.write_text('[project.urls]\nRepository = "https://example.org/x"\n')
    with pytest.raises(ValueError, match="url"):
        online._configured(toml)


def test_no_placeholder_address_anywhere_a_reader_can_click():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    for rel in listed:
        if rel.endswith((".md", ".ipynb", ".py", ".toml", ".yml", ".txt", ".html")) and \
                not rel.startswith("tests/"):
            text = (ROOT / rel).read_text(encoding="utf-8", errors="replace")
            assert "OWNER/" not in text and "github.com/OWNER" not in text, rel
    if not online.published():
        assert stamp.NOT_PUBLISHED in stamp.badges_source("01_attack_of_the_bubbles.ipynb")
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        assert "mybinder.org/v2" not in readme and "Not published yet" in readme
    assert stamp.main(["--check"]) == 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_notebook_carries_the_current_stamp(path):
    text = path.read_text(encoding="utf-8")
    assert stamp.stamped_text(path) == text, (
        f"{path.name} lacks the current Binder/Colab stamp; run: python tools/editions stamp")
    cells = json.loads(text)["cells"]
    assert cells[0]["id"] == stamp.BADGES_ID
    badges = "".join(cells[0]["source"])
    if online.published():
        assert online.binder_url(path.name) in badges and online.colab_url(path.name) in badges
    else:
        assert badges == stamp.NOT_PUBLISHED and "http" not in badges
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert first_code["id"] == stamp.INSTALL_ID


def test_stamping_is_idempotent_and_follows_the_setting(tmp_path, monkeypatch):
    source = nbformat.read(NOTEBOOKS[-1], as_version=4)
    source.cells = [c for c in source.cells if not discover.is_stamp(c)]  # an unstamped notebook
    path = tmp_path / NOTEBOOKS[-1].name
    nbformat.write(source, path)
    assert stamp.main([str(path)]) == 0
    once = path.read_text()
    assert stamp.main([str(path)]) == 0 and path.read_text() == once
    assert stamp.main(["--check", str(path)]) == 0
    kept = [c for c in nbformat.reads(once, as_version=4).cells if not discover.is_stamp(c)]
    assert [c.id for c in kept] == [c.id for c in source.cells], "cells or their ids changed"
    assert [c.get("metadata", {}).get("tags") for c in kept] == [
        c.get("metadata", {}).get("tags") for c in source.cells]
    monkeypatch.setattr(online, "REPOSITORY", "someone/uneven")
    assert stamp.main(["--check", str(path)]) == 1
    stamp.main([str(path)])
    assert "someone/uneven" in path.read_text() and "OWNER/uneven" not in path.read_text()


def _run_install_cell(importable: bool) -> list:
    """The install cell as IPython runs it, with ``import uneven`` failing or not."""
    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(stamp.install_source())
    calls = []

    class Shell:
        def run_line_magic(self, name, line):
            calls.append((name, line))

    saved = sys.modules.get("uneven")
    sys.modules["uneven"] = saved if importable else None  # None: the import raises
    try:
        exec(code, {"get_ipython": Shell})  # noqa: S102
    finally:
        sys.modules["uneven"] = saved
    return calls


def test_colab_install_cell_installs_the_package_only_when_it_is_missing(monkeypatch):
    assert _run_install_cell(importable=True) == []
    monkeypatch.setattr(online, "REPOSITORY", None)
    with pytest.raises(ImportError, match="not published yet.*make lab"):
        _run_install_cell(importable=False)
    monkeypatch.setattr(online, "REPOSITORY", "someone/uneven")
    assert _run_install_cell(importable=True) == []
    ((magic, line),) = _run_install_cell(importable=False)
    assert magic == "pip" and line.startswith("install") and online.pip_requirement() in line


# ---- what the editions are built from ----------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_front_matter_and_exercises_are_found(path):
    nb = discover.load(path)
    fm = discover.front_matter(nb)
    assert fm.title and fm.time and fm.prerequisites
    assert 3 <= len(fm.objectives) <= 5, fm.objectives
    qs = discover.questions(nb)
    discover.check_registry(nb, qs)
    for q in qs:
        assert q.solutions, f"{path.name}: {q.number} has no solution cell"
        assert q.prompt is not None


def test_discovery_rejects_a_notebook_that_breaks_the_conventions():
    v4 = nbformat.v4
    nb = discover.Notebook(Path("01_demo.ipynb"), v4.new_notebook(cells=[
        v4.new_markdown_cell("**Exercise 01.9 — why.**"),
        v4.new_code_cell('answer_01_9 = ...  # ms\ncheck("01.9", answer_01_9)'),
        v4.new_markdown_cell("<details>", metadata={"tags": ["solution"]}),
    ]))
    (q,) = discover.questions(nb)
    assert q.keys == ("01.9",) and q.solutions == (2,)
    with pytest.raises(discover.EditionError, match="does not register"):
        discover.check_registry(nb, [q])
    nb.nb.cells.insert(0, v4.new_markdown_cell("x", metadata={"tags": ["solution"]}))
    with pytest.raises(discover.EditionError, match="does not follow an answer cell"):
        discover.questions(nb)


def test_instructors_guide_is_in_step_with_the_notebooks():
    text = guide.GUIDE.read_text(encoding="utf-8")
    assert guide.render(text) == text, (
        "docs/instructors.md is out of step with the notebooks; run: python tools/editions guide")


# ---- the classroom edition -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    t0 = time.perf_counter()
    assignments.build(WITH_EXERCISES, out)
    print(f"assignments built in {time.perf_counter() - t0:.1f} s")
    return out


def _strings(obj):
    """Every string in a JSON value (a notebook's cells and metadata alike)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _solution_texts(path: Path) -> list[str]:
    nb = discover.load(path)
    return [nb.nb.cells[j].source for q in discover.questions(nb) for j in q.solutions]


@pytest.mark.editions
@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_notebook_has_no_solution_and_no_hidden_test(built, path):
    student = json.loads((built / "student" / path.name).read_text())
    dump = " ".join(" ".join(_strings(student)).split())  # cells and metadata, every string
    for text in _solution_texts(path):
        body = " ".join(text.split())
        for piece in re.split(r"</?details>|<summary>.*?</summary>", body):
            piece = piece.strip()
            if len(piece) > 20:
                assert piece[:60] not in dump, f"solution text leaked: {piece!r}"
    assert "<details>" not in dump and "Solution " + path.name[:2] not in dump
    assert "hidden=True" not in dump and "feedback.ok" not in dump and "_value(" not in dump
    for cell in student["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        assert not tags & {"solution", "otter_assign_solution_cell"}, tags
        assert not discover.CHECK_CALL.search("".join(cell["source"])), "a self-check call remains"
    tests = student["metadata"]["otter"]["tests"]
    nb = discover.load(path)
    qs = discover.questions(nb)
    assert sorted(tests) == sorted(q.name for q in qs)
    # Every placeholder is the notebook's own, unit comment included; no worked answer is there.
    source_lines = {line.strip() for q in qs for line in nb.nb.cells[q.cell].source.splitlines()
                    if discover.ANSWER_LINE.match(line.strip())}
    student_lines = {line.strip() for c in student["cells"] if c["cell_type"] == "code"
                     for line in "".join(c["source"]).splitlines() if line.startswith("answer_")}
    assert student_lines == source_lines
    for q in qs:
        for key, var in zip(q.keys, q.variables, strict=True):
            assert f"{var} = {assignments.answer_literal(key)}" not in dump
            assert f"return {assignments.answer_literal(key)}" not in dump
    # the student does not get the self-check: no import of it in any cell
    assert not any(assignments.SELF_CHECK_IMPORT.match(line.strip())
                   for c in student["cells"] if c["cell_type"] == "code"
                   for line in "".join(c["source"]).splitlines())
    assert not list((built / "student").glob("*.whl"))


@pytest.mark.editions
@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_solutions_and_autograder_carry_every_test_and_answer(built, path):
    nb = discover.load(path)
    qs = discover.questions(nb)
    solutions = nbformat.read(built / "solutions" / path.name, as_version=4)
    code = "\n".join(c.source for c in solutions.cells if c.cell_type == "code")
    for q in qs:
        for key, var in zip(q.keys, q.variables, strict=True):
            if exercise(key).kind == "function":
                m = re.search(rf"^def {var}\(.*?\):\n    return .+$", code, re.M)
                assert m, f"{var} has no worked formula"
                scope: dict = {}
                exec(m.group(0), scope)  # noqa: S102 - the build's own source
                assert check(key, scope[var]).ok
                continue
            m = re.search(rf"^{var} = (.+?)(  #.*)?$", code, re.M)
            assert m, f"{var} has no worked answer"
            assert check(key, eval(m.group(1))).ok  # noqa: S307 - the build's own literal
    assert any("<details>" in c.source for c in solutions.cells if c.cell_type == "markdown")
    with zipfile.ZipFile(built / "autograder" / f"{path.stem}-autograder.zip") as z:
        names = set(z.namelist())
        for q in qs:
            test = z.read(f"tests/{q.name}.py").decode()
            assert test.count("hidden=True") == len(q.keys)
            assert test.count("hidden=False") == len(q.keys)
            for key in q.keys:
                assert f"check({key!r}" in test
        # the bundle installs the package from the wheel it carries, not from a repository
        (wheel,) = [n for n in names if n.startswith("files/uneven-") and n.endswith(".whl")]
        env = z.read("environment.yml").decode()
        assert assignments.requirement(Path(wheel)) in env
        assert f"{assignments.GRADER_FILES}/{Path(wheel).name}" in env
        assert "git+" not in env and "OWNER" not in env


@pytest.mark.editions
def test_public_tests_check_format_and_never_narrow_the_value():
    for path in WITH_EXERCISES:
        for q in discover.questions(discover.load(path)):
            for key, var in zip(q.keys, q.variables, strict=True):
                public = assignments.public_test(key, var)
                if exercise(key).kind == "function":
                    assert exercise(key).solution not in public
                    assert "hidden: false" in public and "points: 0" in public
                    continue
                expected = exercise(key).expected()
                if isinstance(expected, float):
                    for text in (f"{expected:g}", f"{expected:.0f}", f"{expected:.1f}"):
                        if len(text) > 1:
                            assert text not in public.split("CONFIG")[-1], (key, text)
                assert "hidden: false" in public and "points: 0" in public


def _otter_run(zip_path: Path, notebook: Path, out: Path, env: dict) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    otter = Path(sys.executable).with_name("otter")
    return subprocess.Popen([str(otter), "run", "--no-logo", "--debug", "-a", str(zip_path),
                             "-o", str(out), str(notebook)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


# Notebook 05 is graded end to end by tests/test_instructors_guide.py (a filled notebook, a
# zip), which also runs its student version top to bottom.
@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.parametrize("path", [p for p in WITH_EXERCISES if not p.name.startswith("05_")],
                         ids=lambda p: p.name)
def test_autograder_gives_the_solutions_full_marks_and_the_blank_notebook_zero(
        built, path, tmp_path, numba_cache):
    """``otter run --debug`` (errors stop the run) on the solutions and on the blank student
    notebook, side by side; the blank run also shows the student version runs top to bottom."""
    env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache, UNEVEN_FIGURES=str(tmp_path / "figs"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")]))
    zip_path = built / "autograder" / f"{path.stem}-autograder.zip"
    t0 = time.perf_counter()
    runs = {kind: _otter_run(zip_path, built / kind / path.name, tmp_path / kind, env)
            for kind in ("solutions", "student")}
    logs = {kind: proc.communicate(timeout=900)[0] for kind, proc in runs.items()}
    print(f"{path.name}: two otter runs in {time.perf_counter() - t0:.1f} s")
    qs = discover.questions(discover.load(path))
    points = {q.name: len(q.keys) for q in qs}
    for kind, proc in runs.items():
        assert proc.returncode == 0, f"otter run on the {kind} failed:\n{logs[kind][-4000:]}"
        results = json.loads((tmp_path / kind / "results.json").read_text())
        scores = {t["name"]: (t["score"], t["max_score"]) for t in results["tests"]
                  if t["name"] in points}
        assert set(scores) == set(points)
        for name, (score, best) in scores.items():
            assert best == points[name]
            want = best if kind == "solutions" else 0
            assert score == want, f"{kind}: {name} scored {score} of {best}"


# ---- the self-study site -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory, numba_cache):
    copy = clean_copy(tmp_path_factory.mktemp("site-checkout") / "uneven")
    dead = "http://127.0.0.1:9"  # any web request during the build fails at once
    env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache, PYTHONPATH=str(copy / "lib"),
               http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead,
               ALL_PROXY=dead, NO_PROXY="", no_proxy="")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "tools/editions", "site"], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=1500)
    seconds = time.perf_counter() - t0
    print(f"site built from a clean copy in {seconds:.1f} s")
    return {"copy": copy, "done": done, "html": copy / "_build" / "html", "seconds": seconds}


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")  # one site build, on one worker
def test_site_builds_from_a_clean_checkout_without_the_web(site):
    done = site["done"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "none broken" in done.stdout  # the tool's link check ran and passed
    out = site["html"]
    assert (out / "index.html").exists() and (out / "glossary.html").exists()
    accuracy = (out / "accuracy.html").read_text(encoding="utf-8")  # the paper-vs-model table
    assert accuracy.count("(model)") >= 10 and "520" in accuracy
    assert (out / "search.html").exists() and (out / "searchindex.js").exists()
    index = (out / "searchindex.js").read_text(encoding="utf-8")
    assert '"nvlink"' in index and '"pipelin' in index  # the search covers the notebooks' text
    # The notebooks in order in the navigation, one page each (the start page is index).
    nav = (out / "index.html").read_text(encoding="utf-8")
    pages = [p.stem for p in NOTEBOOKS[1:]] + ["glossary", "accuracy"]
    where = [nav.find(f'href="{p}.html"') for p in pages]
    order = dict(zip(pages, where, strict=True))
    assert all(w > 0 for w in where) and where == sorted(where), order
    # The notebooks stay without outputs and figures/ is untouched: the build writes to _build/.
    copy = site["copy"]
    for path in NOTEBOOKS:
        assert (copy / "notebooks" / path.name).read_bytes() == path.read_bytes()
    for fig in (ROOT / "figures").glob("*.png"):
        assert (copy / "figures" / fig.name).read_bytes() == fig.read_bytes()


def _page(path: Path) -> Path:
    return Path("index" if path == NOTEBOOKS[0] else path.stem)


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_notebook_page_shows_its_figures_as_images(site, path):
    if site["done"].returncode != 0:
        pytest.fail("the site did not build")
    out = site["html"]
    page = (out / f"{_page(path)}.html").read_text(encoding="utf-8")
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    wanted = {t: sum(t in discover.tags(c) for c in cells) for t in ("figure", "explorer")}
    chunks = page.split('<div class="cell ')[1:]
    for tag, n in wanted.items():
        shown = [c for c in chunks if c.startswith(f"tag_{tag}")]
        assert len(shown) == n, f"{path.name}: {len(shown)} '{tag}' cells on the page, want {n}"
        for chunk in shown:
            srcs = re.findall(r'<img[^>]*src="(_images/[^"]+\.png)"', chunk)
            assert srcs, f"{path.name}: a '{tag}' cell shows no image"
            assert all((out / s).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for s in srcs)
    assert page.count("explorer’s static figure") == wanted["explorer"]
    # a section's regression pins run in the tests; the reader's page leaves them out
    assert any(discover.is_check(c) for c in cells) and "tag_check" not in page
    if online.published():
        assert html.escape(online.binder_url(path.name)) in page
        assert html.escape(online.colab_url(path.name)) in page
    else:  # the stamp's plain note, and no link to a repository that does not exist
        assert "Not published yet" in page
        assert "mybinder.org/v2" not in page and "colab.research.google.com/github" not in page
    assert "widget-view" not in page and "<Figure size" not in page


def _local_targets(page: Path, text: str):
    for _attr, url in re.findall(r'\b(href|src)="([^"]*)"', text):
        url = html.unescape(url)
        if not url or url.startswith(("http:", "https:", "mailto:", "data:", "javascript:")):
            continue
        parts = urlsplit(url)
        target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
        yield url, target, parts.fragment


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
def test_no_broken_internal_link_in_the_built_site(site):
    """Beside Sphinx's own check (warnings are errors; its link check found nothing broken):
    every local href/src of every page points at a file of the site, and an anchor into a page
    names an id that the page has."""
    if site["done"].returncode != 0:
        pytest.fail("the site did not build")
    out = site["html"].resolve()
    broken, seen = [], 0
    for page in out.rglob("*.html"):
        if "_static" in page.relative_to(out).parts:
            continue  # the theme's template files, not pages
        text = page.read_text(encoding="utf-8")
        for url, target, fragment in _local_targets(page, text):
            seen += 1
            if not target.exists():
                broken.append(f"{page.relative_to(out)}: {url}")
            elif fragment and target.suffix == ".html":
                ids_ = re.findall(r'\bid="([^"]+)"', target.read_text(encoding="utf-8"))
                if unquote(fragment) not in ids_:
                    broken.append(f"{page.relative_to(out)}: {url} (no such anchor)")
    assert seen > 50 and not broken, broken[:20]
    pending = [line for line in site["done"].stdout.splitlines() if line.startswith("note: ")]
    present = {p.name[:2] for p in NOTEBOOKS}
    for line in pending:  # only links to notebooks this checkout does not have become text
        number = re.search(r": (\d{2})_\w+\.ipynb is not in this checkout", line)
        assert number and number.group(1) not in present, line
