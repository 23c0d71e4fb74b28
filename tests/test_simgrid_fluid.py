"""The SimGrid side of ``benchmarks/bench_fluid.py`` computes what the fluid engine computes.

``benchmarks/simgrid_fluid.py`` runs SimGrid 3.32 (Debian's ``python3-simgrid``, for the system
Python) with settings that reduce its network model to plain max-min sharing. On a small
all-to-all of an 8-node H800 cluster, its completion times must equal the engine's within 1e-9
of each flow's completion time; otherwise the benchmark would compare two different models.
Skipped when SimGrid is missing (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from uneven.engines.fluid import simulate_fluid
from uneven.topology import h800_cluster

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "simgrid_fluid.py"
PYTHON = os.environ.get("UNEVEN_SIMGRID_PYTHON", "/usr/bin/python3")


def _simgrid_missing() -> str | None:
    try:
        out = subprocess.run([PYTHON, "-c", "import simgrid"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{PYTHON} cannot run: {err}"
    return None if out.returncode == 0 else f"SimGrid (python3-simgrid) missing for {PYTHON}"


def test_simgrid_matches_the_engine_on_a_small_all_to_all(tmp_path):
    why = _simgrid_missing()
    if why:
        pytest.skip(why)
    topo = h800_cluster(8)
    rng = np.random.default_rng(3)
    n = 200
    src = rng.integers(0, topo.n_gpus, n)
    dst = (src + rng.integers(1, topo.n_gpus, n)) % topo.n_gpus
    size = np.round(np.exp(rng.uniform(np.log(64e3), np.log(16e6), n)))  # whole bytes
    arrival = np.cumsum(rng.exponential(1.5e-6, n))
    pairs = sorted(set(zip(src.tolist(), dst.tolist(), strict=True)))
    spec = {
        "n_hosts": topo.n_gpus,
        "capacity": np.asarray(topo.capacity, dtype=float).tolist(),
        "pairs": pairs,
        "routes": [topo.paths([a], [b])[1].tolist() for a, b in pairs],
        "flows": [[int(a), int(b), float(c), float(d)]
                  for a, b, c, d in zip(src, dst, size, arrival, strict=True)],
    }
    (tmp_path / "in.json").write_text(json.dumps(spec))
    subprocess.run([PYTHON, str(SCRIPT), str(tmp_path / "in.json"), str(tmp_path / "out.json")],
                   check=True, capture_output=True, timeout=600)
    out = json.loads((tmp_path / "out.json").read_text())
    sg = np.array(out["finish"], dtype=float)
    ptr, links = topo.paths(src, dst)
    res = simulate_fluid(ptr, links, topo.capacity, size, arrival=arrival)
    fct = res.finish - arrival
    assert np.all(np.abs(sg - res.finish) <= 1e-9 * fct)
    assert out["seconds"] >= 0.0
