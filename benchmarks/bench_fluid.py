"""Fluid engine speed: numba event loop vs the pure-Python full-recompute reference.

Workload: a synthetic two-tier leaf/spine fabric (256 hosts, 16 per leaf, 4 spines; 100 Gb/s host
links, 200 Gb/s leaf-spine links, 2:1 oversubscribed). Flows go between random distinct hosts:
2 links inside a leaf (host up, host down), 4 across (host up, leaf up, spine down, host down;
spine picked at random like ECMP). Sizes are log-uniform in 64 KB - 64 MB; arrivals are Poisson at
about 60% of the hosts' aggregate bandwidth, so flows overlap and contend.

Rows: exact mode at 10^3 and 10^4 flows (engine vs reference in the same run, on the same first
events), and batched mode at 10^4 flows (relative quantum 1e-3 and 1e-2, and an absolute 10 us
window) with its error against exact.

Against SimGrid (a validated flow-level simulator whose max-min model the engine matches): an
8-node H800 all-to-all (64 GPUs, ``h800_cluster(8)`` routes: NVLink, then PXN to the rail NIC),
random pairs, log-uniform sizes 64 KB - 16 MB (whole bytes), Poisson arrivals at 90% of the NICs'
aggregate bandwidth (about 350 flows active at once, one connected component). SimGrid 3.32
(Debian's ``python3-simgrid``, for the system Python) runs in a subprocess
(``simgrid_fluid.py``; ``UNEVEN_SIMGRID_PYTHON`` names another interpreter); its time is
``Engine.run()`` alone, which includes its Python actor starting each flow (one call per flow).
Batched rows against SimGrid: a plain 10 us window, and backdated windows of 3, 5 and 10 us
(``backdate=True``: each batch's new rates count from the mean time of its events, so freed
bandwidth is not idled and the makespan error stays that of a batch, a few us, instead of
growing with the run), each with its makespan error against the exact run.
The rows are skipped, with the reason, when SimGrid is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import best_of

from uneven.engines.fluid import (
    _compare,
    _prepare,
    _reference_simulate_fluid,
    _run,
    simulate_fluid,
)
from uneven.topology import h800_cluster

HOSTS, PER_LEAF, SPINES = 256, 16, 4
HOST_BW, UPLINK_BW = 12.5e9, 25e9  # bytes/s (100 and 200 Gb/s)
LOAD = 0.3  # offered load on host links; about 0.56 on the 2:1 oversubscribed leaf uplinks
# The pure-Python reference takes ~25 s for all 2,000 events of the 10^3-flow run and minutes at
# 10^4, so both engine and reference are timed on the same first events of each instance.
REF_EVENTS = {1_000: 400, 10_000: 1_000}


def leaf_spine_flows(n_flows: int, seed: int = 0):
    """CSR paths, capacities, sizes and arrivals for ``n_flows`` random flows on the fabric."""
    rng = np.random.default_rng(seed)
    leaves = HOSTS // PER_LEAF
    up0, down0 = 0, HOSTS
    lup0 = 2 * HOSTS  # leaf a -> spine s: lup0 + a * SPINES + s
    sdown0 = lup0 + leaves * SPINES  # spine s -> leaf b: sdown0 + s * leaves + b
    n_links = sdown0 + SPINES * leaves
    capacity = np.full(n_links, HOST_BW)
    capacity[lup0:] = UPLINK_BW

    src = rng.integers(0, HOSTS, n_flows)
    dst = (src + rng.integers(1, HOSTS, n_flows)) % HOSTS  # never equal to src
    spine = rng.integers(0, SPINES, n_flows)
    la, lb = src // PER_LEAF, dst // PER_LEAF
    cross = la != lb
    lengths = np.where(cross, 4, 2)
    path_ptr = np.zeros(n_flows + 1, dtype=np.int64)
    np.cumsum(lengths, out=path_ptr[1:])
    path_links = np.empty(path_ptr[-1], dtype=np.int64)
    start = path_ptr[:-1]
    path_links[start] = up0 + src
    path_links[start + lengths - 1] = down0 + dst
    path_links[start[cross] + 1] = lup0 + la[cross] * SPINES + spine[cross]
    path_links[start[cross] + 2] = sdown0 + spine[cross] * leaves + lb[cross]

    size = np.exp(rng.uniform(np.log(64e3), np.log(64e6), n_flows))
    mean_size = (64e6 - 64e3) / np.log(1000.0)
    rate = LOAD * HOSTS * HOST_BW / mean_size  # flows per second
    arrival = np.cumsum(rng.exponential(1.0 / rate, n_flows))
    arrival -= arrival[0]
    return path_ptr, path_links, capacity, size, arrival


def _capped(inst, max_events):
    args = _prepare(*inst, None, None, 0.0, 0.0)
    return _run(*args, max_events)


def _exact_row(n_flows: int):
    inst = leaf_spine_flows(n_flows, seed=1)
    eng_s, res = best_of(lambda: simulate_fluid(*inst), 2)
    k = REF_EVENTS[n_flows]
    # Same instance, same first k events, engine vs reference: a like-for-like ratio.
    eng_k, part = best_of(lambda: _capped(inst, k), 3)
    t0 = time.perf_counter()
    ref = _reference_simulate_fluid(*inst, max_events=k)
    ref_k = time.perf_counter() - t0
    both = ~np.isnan(part.finish)
    if not (np.array_equal(both, ~np.isnan(ref.finish))
            and np.allclose(part.finish[both], ref.finish[both], rtol=1e-9)):
        raise RuntimeError("fluid engine and reference disagree on the benchmark instance")
    row = {
        "benchmark": "fluid exact (max-min, arrivals+completions)",
        "size": (
            f"{n_flows} flows on a 256-host leaf/spine, {res.n_events} events; ratio measured "
            f"on the first {k} events (reference {ref_k:.1f} s; too slow for the full run)"
        ),
        "seconds": eng_s,
        "reference_seconds": ref_k,
        "ratio": ref_k / eng_k,
        "metric": (
            f"{res.n_events / eng_s:.3g} events/s; {_updates_text(res)}"
        ),
        "target": ">= 50x vs pure-Python reference at >= 1e4 flows",
        "met": bool(ref_k / eng_k >= 50) if n_flows >= 10_000 else None,
    }
    return row, inst, res


def _all_active_updates(res) -> float:
    """Rate updates a full recompute per event would do: active flows after each event instant.

    Exact runs without latency only (completion time = finish)."""
    times = np.unique(np.concatenate([res.start, res.finish]))
    arrived = np.searchsorted(np.sort(res.start), times, side="right")
    done = np.searchsorted(np.sort(res.finish), times, side="right")
    return float((arrived - done).sum())


def _updates_text(res) -> str:
    return (
        f"{res.n_rate_updates / res.n_events:.0f} rate updates/event (component recompute) vs "
        f"{_all_active_updates(res) / res.n_events:.0f} (all active)"
    )


def _rails_row(n_flows: int, rails: int):
    """Traffic split over disjoint rails (copies of the fabric): components stay per rail."""
    parts = [leaf_spine_flows(n_flows // rails, seed=10 + r) for r in range(rails)]
    n_links = parts[0][2].size
    ptrs, links = [np.zeros(1, dtype=np.int64)], []
    for r, (ptr, pl, _, _, _) in enumerate(parts):
        ptrs.append(ptr[1:] + sum(p[0][-1] for p in parts[:r]))
        links.append(pl + r * n_links)
    inst = (
        np.concatenate(ptrs),
        np.concatenate(links),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
        np.concatenate([p[4] for p in parts]),  # rails run side by side, each at LOAD
    )
    eng_s, res = best_of(lambda: simulate_fluid(*inst), 1)
    return {
        "benchmark": f"fluid exact, {rails} disjoint rails",
        "size": f"{n_flows} flows, {rails} x 256-host leaf/spine, {res.n_events} events",
        "seconds": eng_s,
        "metric": f"{res.n_events / eng_s:.3g} events/s; {_updates_text(res)}",
        "target": "component-local recompute: rate updates/event <= 1/4 of all active",
        "met": bool(4 * res.n_rate_updates <= _all_active_updates(res)),
    }


def _batched_row(inst, exact, quantum: float = 0.0, window: float = 0.0):
    eng_s, res = best_of(lambda: simulate_fluid(*inst, quantum=quantum, window=window), 1)
    err = _compare(exact, res)
    what = f"quantum={quantum:g}" if window == 0.0 else f"window={window:g} s (absolute)"
    return {
        "benchmark": f"fluid batched {what}",
        "size": f"{exact.finish.size} flows, {res.n_events} events (exact: {exact.n_events})",
        "seconds": eng_s,
        "metric": (
            f"max FCT rel err {err.max_fct_rel_error:.2e}, max finish rel err "
            f"{err.max_finish_rel_error:.2e}, makespan rel err {err.makespan_rel_error:.2e}"
        ),
        "target": "report the error vs exact",
        "met": None,
    }


# --------------------------------------------------------------------------- against SimGrid

SIMGRID_PYTHON = os.environ.get("UNEVEN_SIMGRID_PYTHON", "/usr/bin/python3")
SIMGRID_SCRIPT = Path(__file__).resolve().parent / "simgrid_fluid.py"
A2A_LOAD = 0.9  # offered load on the NICs
# (quantum, window s, backdate): absolute windows batch arrivals too; backdated windows count
# each batch's new rates from the mean time of its events (the error stays per batch)
BATCHED = ((0.0, 1e-5, False), (0.0, 3e-6, True), (0.0, 5e-6, True), (0.0, 1e-5, True))


def h800_alltoall(n_flows: int, seed: int = 0):
    """(topology, src, dst, engine inputs): ``n_flows`` random all-to-all flows, 8 H800 nodes."""
    topo = h800_cluster(8)
    rng = np.random.default_rng(seed)
    g = topo.n_gpus
    src = rng.integers(0, g, n_flows)
    dst = (src + rng.integers(1, g, n_flows)) % g  # never equal to src
    lo, hi = 64e3, 16e6
    size = np.round(np.exp(rng.uniform(np.log(lo), np.log(hi), n_flows)))
    mean_size = (hi - lo) / np.log(hi / lo)
    rate = A2A_LOAD * g * 50e9 / mean_size  # flows per second; one 50 GB/s NIC per GPU
    arrival = np.cumsum(rng.exponential(1.0 / rate, n_flows))
    arrival -= arrival[0]
    ptr, links = topo.paths(src, dst)
    return topo, src, dst, (ptr, links, np.asarray(topo.capacity, dtype=float), size, arrival)


def simgrid_missing() -> str | None:
    """Why SimGrid cannot run here, or None."""
    try:
        out = subprocess.run([SIMGRID_PYTHON, "-c", "import simgrid"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{SIMGRID_PYTHON} cannot run: {err}"
    if out.returncode != 0:
        return (f"SimGrid is not installed for {SIMGRID_PYTHON} (apt-get install python3-simgrid); "
                f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ''}")
    return None


def run_simgrid(topo, src, dst, size, arrival):
    """SimGrid's finish times (s, per flow) and the wall time (s) of its ``Engine.run()``."""
    pairs = sorted(set(zip(src.tolist(), dst.tolist(), strict=True)))
    routes = [topo.paths([a], [b])[1].tolist() for a, b in pairs]
    spec = {
        "n_hosts": int(topo.n_gpus),
        "capacity": np.asarray(topo.capacity, dtype=float).tolist(),
        "pairs": pairs,
        "routes": routes,
        "flows": [[int(a), int(b), float(c), float(d)]
                  for a, b, c, d in zip(src, dst, size, arrival, strict=True)],
    }
    with tempfile.TemporaryDirectory() as tmp:
        src_path, out_path = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src_path.write_text(json.dumps(spec))
        subprocess.run([SIMGRID_PYTHON, str(SIMGRID_SCRIPT), str(src_path), str(out_path)],
                       check=True, capture_output=True, timeout=3600)
        out = json.loads(out_path.read_text())
    return np.array(out["finish"], dtype=float), float(out["seconds"])


def _simgrid_rows(sizes=(1_000, 10_000, 100_000), batched=()):
    why = simgrid_missing()
    if why:
        return [{"benchmark": "fluid vs SimGrid", "size": "skipped", "seconds": None,
                 "metric": f"SKIPPED: {why}", "target": "", "met": None}]
    rows = []
    for n in sizes:
        topo, src, dst, inst = h800_alltoall(n)
        reps = 3 if n <= 10_000 else 1
        eng_s, res = best_of(lambda inst=inst: simulate_fluid(*inst), reps)
        sg_s, sg_finish = float("inf"), None
        for _ in range(2 if n <= 10_000 else 1):
            fin, sec = run_simgrid(topo, src, dst, inst[3], inst[4])
            sg_s, sg_finish = min(sg_s, sec), fin
        fct = res.finish - res.start
        diff = float(np.max(np.abs(sg_finish - res.finish) / fct))
        active = _all_active_updates(res) / res.n_events
        ratio = sg_s / eng_s
        rows.append({
            "benchmark": "fluid exact vs SimGrid 3.32 (max-min, arrivals+completions)",
            "size": (f"{n} flows, 8-node H800 all-to-all, {res.n_events} events, "
                     f"{active:.0f} active on average"),
            "seconds": eng_s,
            "reference_seconds": sg_s,
            "ratio": ratio,
            "metric": (f"max |finish - SimGrid| / FCT = {diff:.1e}; {res.n_events / eng_s:.3g} "
                       f"events/s; {res.n_rate_updates / res.n_events:.0f} rate updates/event"),
            "target": ">= 3x SimGrid at 1e4 and 1e5 flows, finishes within 1e-9",
            "met": bool(ratio >= 3 and diff <= 1e-9) if n >= 10_000 else None,
        })
        for quantum, window, backdate in batched:
            b_s, b = best_of(lambda inst=inst, q=quantum, w=window, bd=backdate: simulate_fluid(
                *inst, quantum=q, window=w, backdate=bd), reps)
            err = _compare(res, b)
            ratio = sg_s / b_s
            what = (f"quantum={quantum:g}" if window == 0.0 else
                    f"window={window:g} s" if quantum == 0.0 else
                    f"quantum={quantum:g}, window={window:g} s")
            what += ", backdated" if backdate else ""
            rows.append({
                "benchmark": f"fluid batched {what} vs SimGrid 3.32",
                "size": f"{n} flows, {b.n_events} events (exact: {res.n_events})",
                "seconds": b_s,
                "reference_seconds": sg_s,
                "ratio": ratio,
                "metric": (f"makespan rel err {err.makespan_rel_error:.1e} vs exact, max FCT rel "
                           f"err {err.max_fct_rel_error:.1e}"),
                "target": ">= 20x SimGrid, makespan error <= 1e-4",
                "met": bool(ratio >= 20 and err.makespan_rel_error <= 1e-4),
            })
    return rows


def run() -> list[dict]:
    # Warm the JIT (compile time is not run time).
    small = leaf_spine_flows(50, seed=2)
    simulate_fluid(*small)
    _capped(small, 5)

    rows = []
    row, _, _ = _exact_row(1_000)
    rows.append(row)
    row, inst, exact = _exact_row(10_000)
    rows.append(row)
    for q in (1e-3, 1e-2):
        rows.append(_batched_row(inst, exact, quantum=q))
    rows.append(_batched_row(inst, exact, window=10e-6))
    rows.append(_rails_row(10_000, rails=8))
    rows += _simgrid_rows(batched=BATCHED)
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
