"""Project hygiene: notebooks committed clean (and kept clean by the nbstripout git filter),
environments agree, caching degrades gracefully, and `make lab` serves on localhost with token
auth and lands on the start page."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import numba
import pytest
import tomllib

import uneven._jit as jit

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_exist_and_start_page_is_first():
    names = [p.name for p in NOTEBOOKS]
    assert names and names[0] == "00_start_here.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{path.name} cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{path.name} cell {i} has a count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_names_its_kernel(path):
    # Without a kernelspec JupyterLab (and Binder) asks every reader to pick a kernel.
    meta = json.loads(path.read_text())["metadata"]
    assert meta.get("kernelspec", {}).get("name") == "python3"
    assert meta.get("language_info", {}).get("name") == "python"


def _names(lines):
    out = set()
    for line in lines:
        m = re.match(r"\s*-?\s*([A-Za-z0-9_.\-]+)", line)
        if m:
            out.add(m.group(1).lower().replace("-", "_"))
    return out


def _project_packages():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"] + data["project"]["optional-dependencies"]["test"]
    return {re.split(r"[<>=!\[ ;]", d, maxsplit=1)[0].lower().replace("-", "_") for d in deps}


def _yaml_packages(path):
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].rstrip()
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+)\s*([<>=!].*)?$", line)
        if m and m.group(1) not in ("python", "pip", "conda-forge"):
            names.add(m.group(1).lower().replace("-", "_"))
    return names


def test_environments_name_the_same_packages_as_pyproject():
    want = _project_packages()
    assert _yaml_packages(ROOT / "environment.yml") == want
    assert _yaml_packages(ROOT / "binder" / "environment.yml") == want


def test_dependency_ranges_have_ceilings_and_binder_pins_exact():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"] + sum(data["project"]["optional-dependencies"].values(),
                                                 [])
    for d in deps:
        assert ">=" in d and "<" in d, f"{d} needs a lower bound and a ceiling"
    for line in (ROOT / "binder" / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+)(.*)$", line.split("#")[0])
        if m and m.group(1) not in ("python", "pip", "conda-forge"):
            assert "==" in m.group(2), f"binder pin must be exact: {line.strip()}"


def test_xdist_groups_keep_a_group_on_one_worker(tmp_path):
    """`make test` runs --dist loadgroup so that one worker builds the site and starts one
    JupyterLab. pytest 9.2 with pytest-xdist 3.8 drops the groups without a word
    (pytest-dev/pytest-xdist#1386): each group's module fixture was then built on both workers."""
    (tmp_path / "test_g.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('one')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_grouped(i):\n"
        "    with open(f'ran-{i}.txt', 'w') as f:\n"
        "        f.write(os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_free(i):\n"
        "    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2",
                           "--dist", "loadgroup", "-p", "no:cacheprovider", "test_g.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTEST_ADDOPTS=""))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = [(tmp_path / f"ran-{i}.txt").read_text() for i in range(6)]
    assert len(workers) == 6 and len(set(workers)) == 1, (
        f"one xdist_group ran on {sorted(set(workers))}: --dist loadgroup is not grouping "
        "(see the pytest ceiling in pyproject.toml)")


def test_binder_postbuild_is_strict_and_warms_numba():
    text = (ROOT / "binder" / "postBuild").read_text()
    assert "set -e" in text
    assert "--no-deps" in text
    assert "uneven.warmup" in text
    assert (ROOT / "binder" / "start").read_text().rstrip().endswith('exec "$@"')


def test_jit_falls_back_when_no_cache_location(monkeypatch):
    real = numba.njit

    def picky(*args, **kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'x'")
        return real(*args, **kwargs)

    monkeypatch.setattr(jit.numba, "njit", picky)

    @jit.njit
    def f(x):
        return x + 1.0

    assert f(1.0) == 2.0


def test_package_imports_and_runs_with_an_unusable_cache_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(blocker / "cache"))
    code = ("from uneven.collectives import all_to_all; from uneven.topology import h800_cluster;"
            "print(all_to_all(h800_cluster(2), 1e6).time > 0)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_kernels_are_correct_without_jit():
    code = ("import numpy as np; from uneven.collectives import all_to_all;"
            "from uneven.topology import h800_cluster;"
            "print(round(all_to_all(h800_cluster(4), 1e6).time * 1e6, 3))")
    runs = []
    for disable in ("0", "1"):
        env = dict(os.environ, NUMBA_DISABLE_JIT=disable)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.strip())
    assert runs[0] == runs[1]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening_addresses(port):
    addrs = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            ip_hex, port_hex = local.split(":")
            if int(port_hex, 16) == port and state == "0A":  # LISTEN
                addrs.add(ip_hex)
    return addrs


@pytest.mark.server
def test_make_lab_serves_localhost_and_requires_the_token(tmp_path):
    """`make lab` prints a URL that carries a token and lands on the start page; the server
    answers with that token, refuses without it, and listens on 127.0.0.1 only."""
    port = _free_port()
    env = dict(os.environ, BROWSER="true", JUPYTER_RUNTIME_DIR=str(tmp_path))
    env.pop("JUPYTER_TOKEN", None)  # let the server make one and print it, as for a reader
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_PORT={port}", "LAB_ARGS=--no-browser"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        base = f"http://127.0.0.1:{port}"
        pattern = re.compile(re.escape(base) + r"(/\S*)\?token=([0-9a-f]{16,})")
        deadline = time.time() + 120
        found = None
        while time.time() < deadline and found is None and proc.poll() is None:
            found = next(filter(None, map(pattern.search, list(lines))), None)
            time.sleep(0.2)
        assert found, "make lab printed no URL with a token:\n" + "".join(lines[-30:])
        path, token = found.groups()
        assert path == "/lab/tree/notebooks/00_start_here.ipynb", found.group(0)
        with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
            assert r.status == 200, "the server did not answer with the printed token"
        with urllib.request.urlopen(
                f"{base}/api/contents/notebooks/00_start_here.ipynb?content=0&token={token}",
                timeout=5) as r:
            assert r.status == 200, "the printed URL's notebook is not served"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/api/contents", timeout=5)
        assert err.value.code in (401, 403)
        # Bound to the loopback address only (127.0.0.1 is 0100007F in /proc/net/tcp).
        assert _listening_addresses(port) == {"0100007F"}
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


# ---- notebooks in git: the nbstripout filter (tools/nbstrip.py) -------------------------------

sys.path.insert(0, str(ROOT / "tools"))
import nbstrip  # noqa: E402


def _git_out(*args) -> str | None:
    """stdout of a git command in the repository, or None (no git, not a checkout, failed)."""
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    except FileNotFoundError:
        return None
    return out.stdout if out.returncode == 0 else None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_what_the_git_filter_stores(path):
    """Otherwise a fresh clone with the filter installed shows the notebook as modified.

    Checked: the committed blob (HEAD), and also the file itself unless this checkout routes
    notebooks through the filter (then git stores what the filter writes, whatever the file's key
    order; in a fresh clone the file is the blob)."""
    rel = path.relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    stripped = nbstrip.strip(text)
    tags = [c.get("metadata", {}).get("tags") for c in json.loads(text)["cells"]]
    assert [c.get("metadata", {}).get("tags") for c in json.loads(stripped)["cells"]] == tags, (
        f"{path.name}: the filter drops cell tags")
    versions = {}
    committed = _git_out("show", f"HEAD:{rel}")
    if committed is not None:
        versions["committed (HEAD)"] = committed
    clean = _git_out("config", "--get", "filter.nbstripout.clean") or ""
    routed = "filter: nbstripout" in (_git_out("check-attr", "filter", "--", rel) or "")
    if not (routed and "nbstripout" in clean):
        versions["in the work tree"] = text
    for where, version in versions.items():
        assert nbstrip.strip(version) == version, (
            f"{path.name} {where} is not what git's notebook filter (nbstripout "
            f"{' '.join(nbstrip.OPTIONS)}) stores; run: "
            ".venv/bin/python tools/nbstrip.py normalize notebooks/*.ipynb")


def test_gitattributes_route_notebooks_through_the_filter():
    lines = (ROOT / ".gitattributes").read_text().splitlines()
    for line in nbstrip.ATTRIBUTES:
        assert line in lines


def _git(*args, cwd):
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"git {' '.join(args)}: {out.stderr}"
    return out.stdout


@pytest.mark.notebook
def test_an_executed_notebook_leaves_a_fresh_clone_clean(tmp_path, tmp_path_factory, monkeypatch):
    """Clone, install the filter as `make install` does, overwrite a notebook with an executed
    copy (outputs, counts, kernel metadata): git sees no change and there is nothing to commit.

    (Until the index is refreshed, `git status` still lists the file, because git takes a size
    change recorded in the index as a change without running the filter; `git diff` is empty and
    `git add` stages nothing. The test refreshes with `git add` and then wants an empty status.)"""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository")
    clone = tmp_path / "clone"
    _git("clone", "-q", str(ROOT), str(clone), cwd=tmp_path)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "nbstrip.py"), "install"],
                          cwd=clone, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nbstripout" in _git("config", "--local", "filter.nbstripout.clean", cwd=clone)
    status = _git("status", "--porcelain", cwd=clone)
    assert status == "", ("with the filter installed, a fresh clone already shows changes (are the "
                          f"committed notebooks what the filter stores?):\n{status}")
    name = "00_start_here.ipynb"
    target = clone / "notebooks" / name
    # Reuse the copy that tests/test_notebooks.py executed in this session when it is of the same
    # notebook; otherwise execute the clone's own.
    executed = tmp_path_factory.getbasetemp() / "executed" / name
    if not (executed.exists() and (ROOT / "notebooks" / name).read_bytes() == target.read_bytes()):
        from run_notebooks import run  # tools/ is on sys.path (above)

        # The kernel imports this checkout's library, not the clone's: its figures go elsewhere.
        monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path / "figures"))
        nb, _ = run(target, timeout=300, cache_dir=str(tmp_path / "numba-cache"))
        executed = tmp_path / name
        nbformat.write(nb, executed)
    shutil.copyfile(executed, target)
    cells = json.loads(target.read_text())["cells"]
    assert any(c.get("outputs") for c in cells), "the copy is not an executed notebook"
    diff = _git("diff", "--", f"notebooks/{name}", cwd=clone)
    assert diff == "", f"an executed {name} differs from the committed one:\n{diff[:3000]}"
    _git("add", "--", f"notebooks/{name}", cwd=clone)
    status = _git("status", "--porcelain", cwd=clone)
    assert status == "", f"an executed {name} leaves something to commit:\n{status}"


# Kernels that only ever run inlined inside other kernels: they have no entry of their own to warm.
INNER_KERNELS = {
    "uneven.engines.fluid." + n for n in (
        "_sift_up", "_sift_down", "_heap_push", "_heap_pop", "_heap_remove", "_heapify",
        "_heap_fix", "_fill", "_set_active", "_advance")
} | {
    "uneven.engines.linkload._kind_max", "uneven.ep._kernels._rank_order",
    "uneven.ep.routing._finish", "uneven.schedulers.pipeline._interleaved_put",
    "uneven.schedulers.pipeline._send", "uneven._routes._net_path",
} | {
    "uneven.ep._kernels." + n for n in (
        "_mix64", "_pair_uniforms", "_skewed", "_one_score", "_top2", "_gen_top2", "_buf_pos",
        "_route_generated", "_route_8x32", "_copy_path", "_mark_token", "_add_copies")
} | {"uneven.ep.model._step_gpus", "uneven.schedulers._replay._link",
     "uneven.schedulers._replay._has_send", "uneven.schedulers._replay._moves"}
# Kernels of reference routes that tests compare the fast ones against (and a guard that never
# fires): nothing a reader runs compiles them.
REFERENCE_KERNELS = {"uneven.schedulers.pipeline._build_dag"}


def test_warmup_compiles_every_entry_kernel(tmp_path):
    """What binder/postBuild runs: from an empty cache, every kernel a wrapper calls compiles."""
    code = """
import importlib, pkgutil
from numba.core.registry import CPUDispatcher
import uneven
from uneven import warmup
warmup.main()
for mod in pkgutil.walk_packages(uneven.__path__, "uneven."):
    m = importlib.import_module(mod.name)
    for name, obj in vars(m).items():
        if isinstance(obj, CPUDispatcher) and obj.__module__ == m.__name__ and not obj.signatures:
            print("COLD", f"{m.__name__}.{name}")
"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    cold = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("COLD")}
    never = sorted(cold - INNER_KERNELS - REFERENCE_KERNELS)
    assert not never, f"kernels the warm-up never compiles: {never}"
    assert list((tmp_path / "cache").rglob("*.nbi")), "the warm-up wrote no cache"
