"""What `make lab` and the self-study site show a reader around the notebooks:

* JupyterLab does not ask "Would you like to get notified about official Jupyter news?": the
  project's settings overrides (``tools/lab_overrides.json``) are where the venv's JupyterLab
  reads them (``make install``) and where Binder's does (``binder/postBuild``), and the server
  serves them;
* ``make lab`` starts with no warning in its log and still saves notebooks without outputs;
* ``plots.save`` writes the same bytes however often the figure was drawn before, so ``make
  figures`` leaves ``git status`` clean;
* the site's formulas are MathML (no MathJax, nothing from the web: they render offline) and its
  search finds the glossary's Chinese terms as well as English words.

The site checks share one small build (the start page with the glossary, and notebook 01 with
formulas; the notebooks as committed, not executed). tests/test_browser.py checks in the real
browser that no news pop-up shows; here headless Chromium searches the small site and draws its
formulas with the web cut off.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from _checkout import stop_process_group

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import discover, website  # noqa: E402

OVERRIDES = ROOT / "tools" / "lab_overrides.json"
NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def _app_dir() -> Path:
    from jupyterlab.commands import get_app_dir

    return Path(get_app_dir())


# ---- JupyterLab: no news pop-up, no update check -------------------------------------------------

def test_lab_overrides_turn_off_the_news_question_where_jupyterlab_reads_them():
    overrides = json.loads(OVERRIDES.read_text())
    assert overrides[NOTIFICATION] == {"fetchNews": "false", "checkForUpdates": False}
    # the values are ones the setting accepts ("false" is Never; "none", the default, asks)
    schema = json.loads((_app_dir() / "schemas" / "@jupyterlab" / "apputils-extension"
                         / "notification.json").read_text())["properties"]
    assert "false" in [o["const"] for o in schema["fetchNews"]["oneOf"]]
    assert schema["checkForUpdates"]["type"] == "boolean"
    installed = _app_dir() / "settings" / "overrides.json"
    assert installed.is_file() and json.loads(installed.read_text()) == overrides, (
        f"{installed} is not tools/lab_overrides.json: run make install")
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert "cp tools/lab_overrides.json \"$settings/overrides.json\"" in post_build
    assert "get_app_dir" in post_build  # Binder's JupyterLab application directory


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, token: str, path: str, method: str = "GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                 headers={"Authorization": f"token {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


WARNING = re.compile(r"^\[[WE] |warn", re.I | re.M)


@pytest.mark.server
def test_make_lab_starts_without_a_warning_and_saves_notebooks_without_outputs(tmp_path):
    """`make lab` (its own command, on a scratch folder): the server log has no warning line from
    start to stop; a notebook saved under notebooks/ loses its outputs (the save hook); the
    server hands JupyterLab the overrides that turn the news question off."""
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_"))}
    env.update(BROWSER="true", JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    port, token = _free_port(), secrets.token_hex(24)
    log = tmp_path / "server.log"
    # -o: the venv counts as installed (make test installed it), so the log is the server's
    cmd = ["make", "-s", "-o", ".venv/.uneven-installed", "lab", f"LAB_PORT={port}",
           f"LAB_ROOT={root}",
           f"LAB_ARGS=--no-browser --ServerApp.port_retries=0 --IdentityProvider.token={token}"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                _api(base, token, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("make lab did not start:\n" + log.read_text())
                time.sleep(0.3)
        cell = {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 3,
                "source": "1 + 1", "outputs": [{"output_type": "execute_result",
                                                "execution_count": 3, "metadata": {},
                                                "data": {"text/plain": "2"}}]}
        nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
        _api(base, token, "/api/contents/notebooks/scratch.ipynb", "PUT",
             {"type": "notebook", "format": "json", "content": nb})
        saved = json.loads((root / "notebooks" / "scratch.ipynb").read_text())["cells"][0]
        assert saved["outputs"] == [] and saved["execution_count"] is None
        assert "".join(saved["source"]) == "1 + 1"  # the cell itself is kept
        schema = _api(base, token, f"/lab/api/settings/{NOTIFICATION}")["schema"]["properties"]
        assert schema["fetchNews"]["default"] == "false"
        assert schema["checkForUpdates"]["default"] is False
        time.sleep(2)  # what the server logs once it is up (the language servers' scan) counts too
    finally:
        stop_process_group(proc)
    text = log.read_text(errors="replace")
    assert "lab_extension | extension was successfully loaded" in text, text
    assert not WARNING.search(text), "the server log warns:\n" + "\n".join(
        line for line in text.splitlines() if WARNING.search(line))


# ---- figures: the same bytes whatever was drawn before ------------------------------------------

def test_saved_figure_does_not_depend_on_earlier_drawings(tmp_path, monkeypatch):
    """The start page's heatmap (constrained layout, a colorbar, a figure title): saved fresh, and
    saved after being shown at two sizes and saved once already, the PNG is the same."""
    from uneven import plots
    from uneven.explorers.nb00 import draw_start, start_state

    monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path))
    state = start_state(n_nodes=4, mb_per_pair=1.0, hot_factor=4.0)

    def heatmap():
        fig = plots.blank_figure(8.5, 3.4, layout="constrained")
        draw_start(fig, state)
        return fig

    fresh = plots.save(heatmap(), "fresh").read_bytes()
    fig = heatmap()
    fig.to_png()
    fig.to_png(scale=1.3)
    once = plots.save(fig, "once").read_bytes()
    twice = plots.save(fig, "twice").read_bytes()
    assert once == fresh and twice == fresh


# ---- the site: formulas and search -------------------------------------------------------------

@pytest.fixture(scope="module")
def small_site(tmp_path_factory) -> Path:
    """The site tool's HTML for the start page (it holds the glossary) and notebook 01 (it holds
    formulas), from the notebooks as committed: nothing is executed."""
    paths = [p for p in discover.notebook_paths() if p.name.startswith(("00_", "01_"))]
    assert len(paths) == 2
    out = tmp_path_factory.mktemp("small-site")
    return website.build(out, linkcheck=False, paths=paths, execute=False)["html"]


def _markdown(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells
            if c.cell_type == "markdown"]


def _index(html: Path) -> dict:
    text = (html / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def _pages(index: dict, term: str) -> set[str]:
    found = set()
    for table in ("terms", "titleterms"):
        hits = index[table].get(term, [])
        found |= {index["docnames"][i] for i in ([hits] if isinstance(hits, int) else hits)}
    return found


@pytest.mark.editions
@pytest.mark.xdist_group("small-site")
def test_site_formulas_are_mathml_and_no_script_comes_from_the_web(small_site):
    page = (small_site / "01_attack_of_the_bubbles.html").read_text(encoding="utf-8")
    formulas = [c for c in _markdown(ROOT / "notebooks" / "01_attack_of_the_bubbles.ipynb")
                if "$$" in c]
    assert formulas and page.count('<math xmlns="http://www.w3.org/1998/Math/MathML"') >= len(
        formulas)
    assert "\\frac" not in page and "$$" not in page  # no formula left for a script to typeset
    for path in small_site.glob("*.html"):
        text = path.read_text(encoding="utf-8")
        scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', text)
        assert scripts and not [s for s in scripts if re.match(r"(https?:)?//", s)], (
            f"{path.name} loads a script from the web: {scripts}")
        assert not re.search(r'(src|href)="[^"]*mathjax', text, re.I), path.name


@pytest.mark.editions
@pytest.mark.xdist_group("small-site")
def test_site_search_finds_chinese_glossary_terms_and_english_words(small_site):
    import snowballstemmer

    index = _index(small_site)
    glossary = (small_site / "glossary.html").read_text(encoding="utf-8")
    # a term, its parts, and the page's own title (jieba alone cuts 詞彙表 into single characters)
    for term in ("管線", "管線平行", "零氣泡", "合併", "詞彙表"):
        assert term in glossary and "glossary" in _pages(index, term), term
    stem = snowballstemmer.stemmer("english").stemWord
    # English words are stemmed as before: "pipelines" and "bubble" find what "pipeline" and
    # "bubbles" find
    for a, b in (("pipeline", "pipelines"), ("bubbles", "bubble")):
        assert stem(a) == stem(b) and "glossary" in _pages(index, stem(a)), a
    assert _pages(index, "nvlink") >= {"glossary", "index"}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request in the test output
        pass


def _chromium_or_skip():
    exe = os.environ.get("UNEVEN_CHROMIUM") or "/usr/bin/chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "Playwright for Python is not importable"
    else:
        usable = os.path.isfile(exe) and os.access(exe, os.X_OK)
        reason = None if usable else f"no Chromium at {exe}"
    if reason:
        if os.environ.get("UNEVEN_REQUIRE_BROWSER") == "1":
            pytest.fail(f"UNEVEN_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return exe


@pytest.mark.editions
@pytest.mark.browser
@pytest.mark.xdist_group("small-site")
def test_site_searches_and_draws_formulas_offline_in_a_browser(small_site):
    """The site served from this machine, every other request refused: a search for 管線 lists
    the glossary, one for "pipeline" lists it too, and notebook 01's formulas are laid out as
    mathematics (MathML: a fraction's numerator above its denominator)."""
    exe = _chromium_or_skip()
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    handler = functools.partial(_QuietHandler, directory=str(small_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    web = []

    def offline(route):
        if route.request.url.startswith(base + "/"):
            route.continue_()
        else:
            web.append((route.request.resource_type, route.request.url))
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=args, headless=True)
        try:
            context = browser.new_context()
            context.route("**/*", offline)
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            for query, want in (("管線", {"glossary.html"}),
                                ("pipeline", {"glossary.html", "index.html"})):
                page.goto(f"{base}/search.html?q={query}")
                page.wait_for_function(
                    "() => /found|did not match/i.test("
                    "(document.querySelector('#search-results p.search-summary') || {})"
                    ".textContent || '')", timeout=30_000)
                hits = page.eval_on_selector_all(
                    "#search-results ul.search li a",
                    "links => links.map(a => a.getAttribute('href').split('?')[0])")
                assert want <= set(hits), (query, hits, errors)
            page.goto(f"{base}/01_attack_of_the_bubbles.html")
            shown = page.evaluate("""() => Array.from(document.querySelectorAll('math')).map(m => {
              const f = m.querySelector('mfrac');
              const [num, den] = f ? Array.from(f.children) : [null, null];
              return {display: getComputedStyle(m).display,
                      stacked: num && den ? num.getBoundingClientRect().bottom
                                            <= den.getBoundingClientRect().top + 1 : null};
            })""")
        finally:
            browser.close()
            server.shutdown()
    assert shown and all(s["display"] == "block math" for s in shown), shown
    assert any(s["stacked"] for s in shown), shown  # a fraction drawn as one
    assert not errors, errors
    assert not [u for kind, u in web if kind == "script" or "mathjax" in u.lower()], web
