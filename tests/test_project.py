"""Project hygiene: notebooks committed clean, environments agree, caching degrades gracefully,
and `make lab` serves on localhost with token auth."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

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
    deps = data["project"]["dependencies"] + data["project"]["optional-dependencies"]["test"]
    for d in deps:
        assert ">=" in d and "<" in d, f"{d} needs a lower bound and a ceiling"
    for line in (ROOT / "binder" / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+)(.*)$", line.split("#")[0])
        if m and m.group(1) not in ("python", "pip", "conda-forge"):
            assert "==" in m.group(2), f"binder pin must be exact: {line.strip()}"


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
    port = _free_port()
    token = "unit-test-token-1234"
    env = dict(os.environ, JUPYTER_TOKEN=token, BROWSER="true", JUPYTER_RUNTIME_DIR=str(tmp_path))
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_PORT={port}", "LAB_ARGS=--no-browser"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        status = None
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    status = r.status
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        assert status == 200, "the server did not answer with the token"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}/api/contents", timeout=5)
        assert err.value.code in (401, 403)
        # Bound to the loopback address only (127.0.0.1 is 0100007F in /proc/net/tcp).
        assert _listening_addresses(port) == {"0100007F"}
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


# Kernels that only ever run inlined inside other kernels: they have no entry of their own to warm.
INNER_KERNELS = {
    "uneven.engines.fluid." + n for n in (
        "_sift_up", "_sift_down", "_heap_push", "_heap_pop", "_heap_remove", "_heapify",
        "_heap_fix", "_fill", "_set_active", "_advance")
} | {
    "uneven.engines.linkload._kind_max", "uneven.schedulers.experts._rank_order",
    "uneven.schedulers.experts._finish", "uneven.schedulers.pipeline._interleaved_put",
    "uneven.schedulers.pipeline._send", "uneven.topology._net_path",
}


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
    never = sorted(cold - INNER_KERNELS)
    assert not never, f"kernels the warm-up never compiles: {never}"
    assert list((tmp_path / "cache").rglob("*.nbi")), "the warm-up wrote no cache"
