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
import shutil
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


@pytest.fixture(scope="session")
def numba_cache(tmp_path_factory):
    """One numba cache for the grading runs and the site build of this session, shared by the
    pytest-xdist workers (their temporary folders sit in the session's own): a kernel compiled
    by one run is loaded by the next (numba writes its cache files atomically)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / "editions-numba"
    folder.mkdir(exist_ok=True)
    return str(folder)


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
    notebook; the blank run also shows the student version runs top to bottom."""
    env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache, UNEVEN_FIGURES=str(tmp_path / "figs"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")]))
    zip_path = built / "autograder" / f"{path.stem}-autograder.zip"
    t0 = time.perf_counter()
    runs, logs = {}, {}
    for kind in ("solutions", "student"):  # one after the other: the second loads the kernels
        runs[kind] = _otter_run(zip_path, built / kind / path.name, tmp_path / kind, env)
        logs[kind] = runs[kind].communicate(timeout=900)[0]
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


# ---- make lab EDITION=zh_TW ---------------------------------------------------------------------

def _make_shows(*args: str) -> str:
    """What the Makefile makes of ``args``: the edition, the start page, and the LANG its
    recipes get (an extra rule given with --eval; nothing is built)."""
    rule = 'uneven-show: ; @echo "$(EDITION) $(LAB_START) [$$LANG]"'
    done = subprocess.run(["make", "-s", "--no-print-directory", "--eval", rule, "uneven-show",
                           *args], cwd=ROOT, env=dict(os.environ, LANG="C.UTF-8"),
                          capture_output=True, text=True, timeout=60)
    return (done.stdout + done.stderr).strip()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_lab_opens_the_edition_asked_for_and_never_passes_lang_zh_tw_as_a_locale():
    zh = "zh_TW notebooks/zh_TW/00_start_here.ipynb"
    assert _make_shows() == "en notebooks/00_start_here.ipynb [C.UTF-8]"
    assert _make_shows("EDITION=zh_TW") == f"{zh} [C.UTF-8]"
    # LANG=zh_TW on the command line is read as the edition and not handed on as a locale
    assert _make_shows("LANG=zh_TW") == f"{zh} []"
    assert _make_shows("LANG=zh-TW") == f"{zh} []"
    # a LANG that names no edition is the locale, left alone
    assert _make_shows("LANG=C.UTF-8") == "en notebooks/00_start_here.ipynb [C.UTF-8]"
    assert 'EDITION must be one of: en zh_TW (got "fr")' in _make_shows("EDITION=fr")
    dry = subprocess.run(["make", "-n", "lab", "EDITION=zh_TW"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60).stdout
    build = dry.find("tools/editions i18n build --lang zh_TW")
    assert 0 <= build < dry.find("jupyter lab"), dry[-2000:]  # the notebooks first, then the lab
    assert "default_url=/lab/tree/notebooks/zh_TW/00_start_here.ipynb" in dry
    figures = subprocess.run(["make", "-n", "figures"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60).stdout
    assert "run_notebooks.py notebooks/*.ipynb" in figures
    assert 0 <= figures.find("i18n build") < figures.find("notebooks/zh_TW/*.ipynb")
    post = (ROOT / "binder" / "postBuild").read_text()
    assert "python tools/editions i18n build --lang zh_TW" in post
    assert 0 <= post.find("i18n build") < post.find("uneven.warmup")


# ---- the self-study site -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory, numba_cache):
    copy = clean_copy(tmp_path_factory.mktemp("site-checkout") / "uneven")
    dead = "http://127.0.0.1:9"  # any web request during the build fails at once
    # the copy's library first (what is installed, polib say, stays importable after it)
    path = os.pathsep.join(filter(None, [str(copy / "lib"), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache, PYTHONPATH=path,
               http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead,
               ALL_PROXY=dead, NO_PROXY="", no_proxy="")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "tools/editions", "site"], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=1500)
    seconds = time.perf_counter() - t0
    print(f"site (both languages) built from a clean copy in {seconds:.1f} s")
    for line in done.stdout.splitlines():
        if line.startswith(("site written to", "untranslated:")):
            print(line)
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


def _figures_shown(page: str, root: Path, path: Path):
    """Assert that the page of notebook ``path`` (HTML under ``root``) shows every cell tagged
    figure or explorer, each as a PNG image; return the notebook's code cells and the count of
    each tag."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    wanted = {t: sum(t in discover.tags(c) for c in cells) for t in ("figure", "explorer")}
    chunks = page.split('<div class="cell ')[1:]
    for tag, n in wanted.items():
        shown = [c for c in chunks if c.startswith(f"tag_{tag}")]
        assert len(shown) == n, f"{path.name}: {len(shown)} '{tag}' cells on the page, want {n}"
        for chunk in shown:
            srcs = re.findall(r'<img[^>]*src="(_images/[^"]+\.png)"', chunk)
            assert srcs, f"{path.name}: a '{tag}' cell shows no image"
            assert all((root / s).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for s in srcs)
    return cells, wanted


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_notebook_page_shows_its_figures_as_images(site, path):
    if site["done"].returncode != 0:
        pytest.fail("the site did not build")
    out = site["html"]
    page = (out / f"{_page(path)}.html").read_text(encoding="utf-8")
    cells, wanted = _figures_shown(page, out, path)
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


# ---- the site in Traditional Chinese (zh-TW) ---------------------------------------------------

ZH = "zh_TW"
SWITCH = re.compile(r'<a class="[^"]*\buneven-language-switch\b[^"]*" href="([^"]*)"')
HTML_LANG = re.compile(r"<html\b[^>]*\blang=\"([^\"]+)\"")
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _built_or_fail(site) -> None:
    if site["done"].returncode != 0:
        pytest.fail("the site did not build:\n" + site["done"].stdout[-2000:]
                    + site["done"].stderr[-3000:])


def _site_pages(root: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    """The HTML pages of one language's tree (not the theme's templates, not the other tree)."""
    return sorted(p for p in root.rglob("*.html")
                  if not {"_static", "_sources", *skip} & set(p.relative_to(root).parts))


def _search_terms(tree: Path) -> dict:
    text = (tree / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])["terms"]


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
def test_zh_tw_site_builds_from_a_clean_checkout_without_the_web(site):
    """The same build (no web, a clean copy: the zh-TW notebooks are generated from the catalogs,
    nothing git-ignored is needed) also writes the zh-TW site under html/zh_TW/, with the same
    pages in the same order, its own Chinese search and the start page offering both editions."""
    _built_or_fail(site)
    out, zh = site["html"], site["html"] / ZH
    for name in ("index", "glossary", "accuracy", "search", "genindex"):
        assert (zh / f"{name}.html").exists(), name
    nav = (zh / "index.html").read_text(encoding="utf-8")
    pages = [p.stem for p in NOTEBOOKS[1:]] + ["glossary", "accuracy"]
    where = [nav.find(f'href="{p}.html"') for p in pages]
    assert all(w > 0 for w in where) and where == sorted(where), where
    # the start pages offer both editions, each linking the other's start page
    assert 'class="uneven-edition-link" href="../index.html"' in nav and "繁體中文" in nav
    english = (out / "index.html").read_text(encoding="utf-8")
    assert 'class="uneven-edition-link" href="zh_TW/index.html"' in english
    assert "make lab EDITION=zh_TW" in nav and "make lab EDITION=zh_TW" in english
    # the zh-TW glossary page and the search: the terms and the notebooks' Chinese text
    glossary = (zh / "glossary.html").read_text(encoding="utf-8")
    assert "管線平行" in glossary and "專家平行" in glossary
    terms = _search_terms(zh)
    for term in ("管線", "管線平行", "氣泡", "nvlink"):
        assert term in terms, term
    accuracy = (zh / "accuracy.html").read_text(encoding="utf-8")
    assert "準確度表" in accuracy and accuracy.count("(model)") >= 10
    # printed tables on a Chinese page: a monospace font whose CJK is two columns wide
    assert 'lang="zh-Hant-TW"' in nav
    css = (zh / "_static" / "uneven-site.css").read_text(encoding="utf-8")
    assert 'html[lang|="zh"] .cell_output pre' in css and "Noto Sans Mono CJK TC" in css
    # the build writes only to _build/: no zh-TW notebook or figure in the checkout's folders
    copy = site["copy"]
    assert not (copy / "notebooks" / ZH).exists() and not (copy / "figures" / ZH).exists()
    assert sorted(p.name for p in (copy / "_build" / "notebooks" / ZH).glob("*.ipynb")) == ids
    assert list((copy / "_build" / "figures" / ZH).glob("*.png"))  # its figures, apart


def _plain_headings(nb) -> list[str]:
    """The headings of the notebook's markdown that are plain text (no markup that the page
    would render differently)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or discover.is_stamp(cell):
            continue
        for line in cell.source.splitlines():
            m = re.match(r"#{1,3}\s+(.+?)\s*$", line)
            if m and not re.search(r"[*_`\[\]$<>&'\"\\]|--", m.group(1)):
                out.append(" ".join(m.group(1).split()))
    return out


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_zh_tw_site_page_shows_its_figures_as_images_and_chinese_text(site, path):
    _built_or_fail(site)
    zh = site["html"] / ZH
    page_path = zh / f"{_page(path)}.html"
    assert page_path.exists(), f"no zh-TW page for {path.name}"
    page = page_path.read_text(encoding="utf-8")
    assert HTML_LANG.search(page).group(1) == "zh-Hant-TW"
    cells, wanted = _figures_shown(page, zh, path)
    assert page.count("explorer 在預設設定下畫出的靜態圖") == wanted["explorer"]
    assert "widget-view" not in page and "<Figure size" not in page and "tag_i18n" not in page
    assert "tag_check" not in page
    # Chinese text: the title, and every plain heading of the zh-TW notebook, on the page
    title = re.search(r"<h1>(.*?)<", page).group(1)
    assert CJK.search(title), f"{path.name}: the zh-TW page's title {title!r} has no Chinese"
    generated = nbformat.read(site["copy"] / "_build" / "notebooks" / ZH / path.name,
                              as_version=4)
    shown_headings = {" ".join(html.unescape(re.sub(r"<[^>]+>", "", h)).replace("#", "").split())
                      for h in re.findall(r"<h[123][^>]*>(.*?)</h[123]>", page, re.S)}
    headings = _plain_headings(generated)
    assert sum(bool(CJK.search(h)) for h in headings) >= 3, headings
    missing = [h for h in headings if h not in shown_headings]
    assert not missing, f"{path.name}: headings not on the zh-TW page: {missing[:5]}"
    article = re.sub(r"<[^>]+>", " ", page.split('<article class="bd-article">', 1)[1])
    assert len(CJK.findall(article)) > 300, f"{path.name}: little Chinese on the page"


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
def test_every_site_page_in_both_languages_has_the_switch_to_the_same_page(site):
    """Every page of either tree has one switch in its header, pointing at an existing page of
    the other language whose own switch points back; and says its language."""
    _built_or_fail(site)
    out = site["html"].resolve()
    trees = {"en": (out, _site_pages(out, skip=(ZH, "jupyter_execute"))),
             ZH: (out / ZH, _site_pages(out / ZH))}
    names = {lang: {p.relative_to(root).as_posix() for p in pages}
             for lang, (root, pages) in trees.items()}
    assert names["en"] == names[ZH], f"pages in one language only: {names['en'] ^ names[ZH]}"
    assert len(names[ZH]) >= len(NOTEBOOKS) + 4  # + glossary, accuracy, search, genindex
    wrong = []
    for lang, (root, pages) in trees.items():
        for page in pages:
            text = page.read_text(encoding="utf-8")
            where = page.relative_to(out)
            want = "en" if lang == "en" else "zh-Hant-TW"
            if HTML_LANG.search(text).group(1) != want:
                wrong.append(f"{where}: lang={HTML_LANG.search(text).group(1)}")
            links = SWITCH.findall(text)
            if len(links) != 1:
                wrong.append(f"{where}: {len(links)} language switches")
                continue
            target = (page.parent / unquote(links[0])).resolve()
            other = out if lang == ZH else out / ZH
            if not target.exists() or target.parent != (other / page.relative_to(root)).parent:
                wrong.append(f"{where}: switch to {links[0]} (no such page in the other tree)")
                continue
            if target.name != page.name:
                wrong.append(f"{where}: switch to another page, {links[0]}")
            back = SWITCH.findall(target.read_text(encoding="utf-8"))
            if not back or (target.parent / unquote(back[0])).resolve() != page.resolve():
                wrong.append(f"{where}: the other page's switch does not come back")
            alternate = re.search(r'<link rel="alternate" hreflang="[^"]+" href="([^"]+)"', text)
            if not alternate or alternate.group(1) != links[0]:
                wrong.append(f"{where}: no rel=alternate link to {links[0]}")
    assert not wrong, wrong[:20]


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.xdist_group("site")
def test_links_inside_the_zh_tw_site_stay_inside_it(site):
    """A zh-TW page links zh-TW pages, its own images and static files; only the language switch,
    its rel=alternate twin and the start page's offer of the English edition leave the tree."""
    _built_or_fail(site)
    zh = (site["html"] / ZH).resolve()
    leaving, seen = [], 0
    allowed = re.compile(r'<a class="[^"]*\b(uneven-language-switch|uneven-edition-link)\b[^"]*"'
                         r' href="[^"]*"|<link rel="alternate" hreflang="en" href="[^"]*"')
    for page in _site_pages(zh):
        text = page.read_text(encoding="utf-8")
        kept = allowed.sub("", text)
        for url, target, _fragment in _local_targets(page, kept):
            seen += 1
            if not target.exists() or not target.is_relative_to(zh):
                leaving.append(f"{page.relative_to(zh)}: {url}")
    assert seen > 200 and not leaving, leaving[:20]
    # and notebook pages link each other inside the tree (the toctree, the "next" links)
    start = (zh / "index.html").read_text(encoding="utf-8")
    assert 'href="01_attack_of_the_bubbles.html"' in start


@pytest.mark.slow
@pytest.mark.editions
@pytest.mark.browser
@pytest.mark.xdist_group("site")
def test_site_search_and_switch_work_offline_in_a_browser_in_both_languages(site):
    """In headless Chromium, the pages opened from disk with every web request refused: the
    zh-TW search finds 管線 on zh-TW pages, the English one finds "pipeline" on English pages,
    and the switch of a zh-TW notebook page opens the same page in English and back."""
    _built_or_fail(site)
    exe = os.environ.get("UNEVEN_CHROMIUM") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "Playwright for Python is not importable"
    else:
        reason = None if os.access(exe, os.X_OK) else f"no Chromium at {exe}"
    if reason:
        if os.environ.get("UNEVEN_REQUIRE_BROWSER") == "1":
            pytest.fail(f"UNEVEN_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    out = site["html"].resolve()
    web = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            page = browser.new_page()

            def refuse(route):
                if route.request.url.startswith(("http:", "https:")):
                    web.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", refuse)
            for tree, query, lang in ((out / ZH, "管線", "zh-Hant-TW"),
                                      (out, "pipeline", "en")):
                page.goto((tree / "search.html").as_uri() + "?q=" + query)
                page.wait_for_selector("#search-results li a", timeout=60_000)
                hrefs = page.eval_on_selector_all("#search-results li a",
                                                  "links => links.map(a => a.href)")
                assert page.evaluate("document.documentElement.lang") == lang
                assert hrefs and all(h.startswith(tree.as_uri() + "/") for h in hrefs), hrefs[:5]
                if tree == out:
                    assert not any("/zh_TW/" in h for h in hrefs), hrefs[:5]
            name = "01_attack_of_the_bubbles.html"
            page.goto((out / ZH / name).as_uri())
            page.click("a.uneven-language-switch")
            page.wait_for_load_state()
            assert page.url == (out / name).as_uri()
            assert page.evaluate("document.documentElement.lang") == "en"
            page.click("a.uneven-language-switch")
            page.wait_for_load_state()
            assert page.url == (out / ZH / name).as_uri()
        finally:
            browser.close()
    assert not web, web[:5]
