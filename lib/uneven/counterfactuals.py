"""Counterfactuals: change one thing, keep the rest, and see whether the slow piece moves.

The chapter's third point of agreement is that network-layer fixes alone are not enough; two
papers also take communication away from the GPU's SMs. Each function here runs one of the
library's models twice or more, changing a single thing:

* :func:`network_fix_sweep` (pipeline, :mod:`uneven.schedulers.pipeline`): a fix in the network
  (perfect ECMP, packet spraying) can at best shorten the delay a slow link adds; it cannot give
  the link more slack, and it cannot stop a stuck send from blocking the GPU stream. The sweep
  credits the network with removing a share of the delay and compares the fixed schedule with
  PipeMorph's re-plan, which keeps the whole delay;
* :func:`transport_before_after` (decode, :mod:`uneven.ep.decode`): the same better transport
  on a skewed layer and on a balanced one (notebook 05's 2 × 2);
* :func:`bandwidth_sweep` (superpod, :mod:`uneven.ep.superpod`): more fabric bandwidth per
  core against a dispatch bound by barriers and hop latency;
* :func:`compute_unit_tax`: what communication costs when it runs on the compute units, in the
  three models that have such a knob — sends on the GPU stream (pipeline), an SM tax of the EP
  transport (decode), SMs that fused communication takes from the GEMMs (training layer).

Times in seconds.

>>> r = bandwidth_sweep([1, 4, np.inf], ep=16, tokens_per_die=8)
>>> [round(float(x) * 1e6, 1) for x in r["baseline"]], round(r["barriers"] * 1e6)
([47.5, 44.6, 43.7], 40)
>>> rows = compute_unit_tax(n_steps=1, decode_tokens=1, comm_sms=(20,))
>>> [round(row.share, 2) for row in rows]
[0.02, 0.56, 0.12, 0.03]
>>> r = transport_before_after(tokens_per_gpu=1, n_steps=1)
>>> round(r["balanced", "SM-free"] * 1e6, 1)
28.7
>>> r = bandwidth_sweep([1, 2], ep=16, tokens_per_die=512, writes_in_flight=64)
>>> round(float(r["baseline"][0] / r["baseline"][1]), 2)  # bytes bind: twice the bandwidth pays
1.6
>>> TaxRow("a model", "a setting", 2.0, 1.5).share
0.25
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._fields import Checked, real, text
from ._validate import _raw_array, _show, as_float_array, check_int, check_real, trusted
from .limits import PY_STEP, check_steps

__all__ = [
    "network_fix_sweep",
    "transport_before_after",
    "bandwidth_sweep",
    "TaxRow",
    "compute_unit_tax",
]


def network_fix_sweep(delay: float, shares, *, link: int = 0, p: int = 8, m: int = 24,
                      t_op: float = 0.01) -> dict:
    """Iteration times (s) when a network-layer fix removes a share of a slow link's delay.

    ``delay`` (s, one way, at most 1e6) sits on ``link`` of a ``p``-stage ZB-H2 pipeline with
    ``m`` micro-batches (``p <= 64``, ``m <= 1024``) and every op ``t_op`` (s, at most 1e6 and
    at least ``delay / 1e9``);
    ``shares`` (a 1-d list of numbers in [0, 1]) are the parts of it the network removes; their
    two simulations each count against the work budget of :mod:`uneven.limits`. Returns arrays
    over ``shares``: ``"zb_cpu"`` (ZB-H2 planned healthy and replayed, sends on CPU processes),
    ``"zb_hol"`` (the same with sends on the GPU stream, a stuck send blocking compute), and
    scalars ``"pipemorph"`` (PipeMorph's re-plan with CPU sends under the *whole* delay: no
    network fix), ``"healthy"`` (no delay) and ``"knee"`` (the delay ZB-H2's link absorbs with
    its memory budget, c* = ((Δ - 1)(t_F + t_B) + Δ t_W)/2 with Δ = 2).

    >>> r = network_fix_sweep(0.03, [0.0, 1.0], p=4, m=12)
    >>> [round(x * 1e3) for x in r["zb_cpu"]], round(r["pipemorph"] * 1e3)
    ([480, 390], 420)
    """
    from .schedulers.pipeline import absorption_bound, pipeline_schedule, simulate_pipeline

    c = check_real("delay", delay, lo=0.0, hi=_MAX_S, unit="s")
    sh = as_float_array("shares", shares, ndim=1, lo=0.0, hi=1.0)
    sh.flags.writeable = False
    p = check_int("p", p, lo=2, hi=64)
    m = check_int("m", m, lo=1, hi=1024)
    link = check_int("link", link, lo=0, hi=p - 2)
    t = check_real("t_op", t_op, lo=0.0, lo_open=True, hi=_MAX_S, unit="s")
    if c > _MAX_DELAY_OPS * t:
        raise ValueError(f"delay / t_op must be at most {_MAX_DELAY_OPS:g} ops (no plan holds "
                         f"more micro-batches); got {c:g} s / {t:g} s")
    check_steps("shares", f"{sh.size} shares", (2 * sh.size + 2) * (6 * p * p * m + PY_STEP),
                "two pipeline iterations per share")
    zb = pipeline_schedule("zb-h2", p, m)

    def delays(x):
        d = np.zeros(p - 1)
        d[link] = x
        return d

    cpu = np.array([simulate_pipeline(zb, t, t, t, delays=delays(c * (1 - f))).iteration_time
                    for f in sh], dtype=np.float64)
    hol = np.array([simulate_pipeline(zb, t, t, t, delays=delays(c * (1 - f)),
                                      hol=True).iteration_time for f in sh], dtype=np.float64)
    cpu.flags.writeable = hol.flags.writeable = False
    pm = simulate_pipeline(zb, t, t, t, delays=delays(c), mode="replan").iteration_time
    healthy = simulate_pipeline(zb, t, t, t).iteration_time
    return {"shares": sh, "zb_cpu": cpu, "zb_hol": hol, "pipemorph": pm, "healthy": healthy,
            "knee": absorption_bound(2, t, t, t_w=t)}


def _decode_steps(setup, n_steps, runs) -> float:
    """Loop steps of ``runs`` decode simulations of ``n_steps`` steps (about 2 ms plus 150 ns per
    token copy each step)."""
    return runs * n_steps * (2000 * PY_STEP + 150.0 * setup.n_gpus * setup.tokens_per_gpu
                             * setup.k)


def transport_before_after(*, tokens_per_gpu: int = 64, n_steps: int = 20, seed: int = 2
                           ) -> dict:
    """Median exposed communication (s) of one decode layer (EP32 on H20), per-expert overlap
    on, for ``{(state, transport): seconds}`` with state ``"skewed"`` (contiguous placement, one
    copy per expert: DeepEP's default) or ``"balanced"`` (NIC-aware placement, swaps, relay) and
    transport ``"SM-resident"`` or ``"SM-free"`` (:mod:`uneven.ep.transport`).
    ``tokens_per_gpu`` in [1, 4096], ``n_steps`` in [1, 10,000]; the four runs count against the
    work budget of :mod:`uneven.limits`."""
    from .ep.decode import DecodeSetup, simulate_decode
    from .ep.transport import SM_FREE, SM_RESIDENT

    setup = DecodeSetup(tokens_per_gpu=check_int("tokens_per_gpu", tokens_per_gpu, lo=1,
                                                 hi=4096))
    n_steps = check_int("n_steps", n_steps, lo=1, hi=10_000)
    seed = check_int("seed", seed, lo=0)
    check_steps("n_steps", n_steps, _decode_steps(setup, n_steps, 4), "four decode runs")
    out = {}
    for state, kw in (("skewed", {"placement": "contiguous"}),
                      ("balanced", {"placement": "NIC-aware", "swaps": True, "mode": "relay"})):
        for tr in (SM_RESIDENT, SM_FREE):
            run = simulate_decode(setup, n_steps=n_steps, seed=seed, overlap=True,
                                  transport=tr, **kw)
            out[state, tr.name] = run.median("exposed_comm")
    return out


def bandwidth_sweep(factors, *, ep: int = 64, tokens_per_die: int = 128, seed: int = 0,
                    writes_in_flight: int | None = None) -> dict:
    """Jitter-free dispatch latency (s) inside a superpod against the bandwidth a core can push.

    ``factors`` multiply :attr:`uneven.ep.superpod.CoreCosts.core_bandwidth` (1 = the
    CloudMatrix-like default): a number or a 1-d list of at most 1,024 numbers in
    [1e-6, 1e12], or ``np.inf`` (bytes cost nothing). A factor that would take a core past
    1e15 bytes/s (the most :class:`~uneven.ep.superpod.CoreCosts` accepts; ``np.inf``
    included) runs at that bandwidth: a 512-byte block then costs 0.5 fs,
    nothing next to the hop latencies (0.1 µs and up), so it stands for unlimited bandwidth.
    ``ep`` in [2, 1024], ``tokens_per_die`` in [1, 8192] with ``ep * tokens_per_die <= 2**20``;
    routing and planning count against the work budget of :mod:`uneven.limits`.
    ``writes_in_flight`` (1..4096; None: the :class:`~uneven.ep.superpod.CoreCosts` default of
    7) sets how much of each write's hop latency a core hides: with many in flight and a large
    batch the dispatch becomes bound by bytes, and bandwidth starts to pay. Returns arrays
    over ``factors`` (``np.inf`` kept, as given) for ``"baseline"`` (serialised, two barriers)
    and ``"ubep"``, and ``"barriers"``: the time the baseline spends in its two barriers (s, the
    same at every bandwidth).
    """
    from .ep.superpod import (
        MAX_RANKS,
        CoreCosts,
        phase_latency,
        phase_plan,
        scheme,
        superpod_traffic,
    )

    raw = _raw_array("factors", factors, "numbers > 0 (inf allowed)")
    f = np.array(raw, dtype=np.float64, ndmin=1)  # a real dtype: no warning converting it
    if f.ndim != 1 or not 1 <= f.size <= 1024 or np.isnan(f).any() or not (
            (f >= 1e-6) & ((f <= 1e12) | (f == np.inf))).all():
        raise ValueError(f"factors must be a 1-d list of 1 to 1,024 numbers in [1e-6, 1e12] or "
                         f"inf; got {_show(factors)}")
    f.flags.writeable = False
    ep = check_int("ep", ep, lo=2, hi=MAX_RANKS)
    tokens_per_die = check_int("tokens_per_die", tokens_per_die, lo=1, hi=8192)
    if ep * tokens_per_die > 1 << 20:
        raise ValueError(f"ep * tokens_per_die must be <= {1 << 20}; got {ep} * {tokens_per_die}")
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    check_steps("factors", f"{f.size} factors", 10.0 * ep * tokens_per_die * max(256, ep)
                + 2 * f.size * (80.0 * ep * ep + 200 * PY_STEP),
                "routing once and planning two schemes per factor")
    base = CoreCosts()
    if writes_in_flight is not None:
        base = base.with_(writes_in_flight=check_int("writes_in_flight", writes_in_flight, lo=1,
                                                     hi=4096))
    traffic = superpod_traffic(ep, tokens_per_rank=tokens_per_die, seed=seed)
    out = {"factors": f, "baseline": [], "ubep": []}
    for x in f:
        costs = base.with_(core_bandwidth=min(base.core_bandwidth * x, _MAX_CORE_BANDWIDTH))
        for kind in ("baseline", "ubep"):
            out[kind].append(phase_latency(phase_plan(traffic, costs, scheme(kind))))
    for kind in ("baseline", "ubep"):
        out[kind] = np.array(out[kind], dtype=np.float64)
        out[kind].flags.writeable = False
    out["barriers"] = 2 * base.barrier_cost
    return out


_MAX_S = 1e6  # s: the longest delay, op or transfer the counterfactuals accept
_MAX_DELAY_OPS = 1e9  # a delay of at most this many ops (the pipeline planner's limit is 2**31)
# The bandwidth (bytes/s) bandwidth_sweep gives a core for an unlimited factor: the
# largest CoreCosts accepts.
_MAX_CORE_BANDWIDTH = 1e15


@dataclass(frozen=True)
class TaxRow(Checked):
    """One model with communication on, and off, the compute units (times in s).

    ``on``: step (or layer) time with communication taking compute resources; ``off``: the
    same with that cost removed and everything else equal. ``share``: ``(on - off) / on``, the
    part of the step that communication on the compute units costs. ``system`` and ``setting``
    are strings, ``on`` is in [1e-15, 1e15] s and ``off`` in [0, 1e15] s (checked on
    construction).
    """

    system: str = text()
    setting: str = text()
    on: float = real(lo=1e-15, hi=1e15, unit="s")
    off: float = real(lo=0.0, hi=1e15, unit="s")

    @property
    def share(self) -> float:
        """``(on - off) / on``."""
        return (self.on - self.off) / self.on


def _row(system, setting, on, off) -> TaxRow:
    """A row the library computed: no second check."""
    return trusted(TaxRow, system=system, setting=setting, on=float(on), off=float(off))


def compute_unit_tax(*, transfer: float = 0.5e-3, delay: float = 0.03, comm_sms=(20, 24),
                     decode_tokens: int = 64, n_steps: int = 10, seed: int = 3) -> list:
    """What communication costs when it runs on the compute units, in three models.

    * Pipeline (notebook 01): PipeMorph's re-plan on 8 stages, 24 micro-batches, 10-ms ops, each
      send occupying its sender for ``transfer`` (s), healthy and with ``delay`` (s) on link
      0↔1: sends on the GPU stream (a stuck send blocks the next kernel) vs on CPU processes.
    * Decode (notebook 05): one MoE layer, EP32 on H20, ``decode_tokens`` tokens per GPU,
      NIC-aware placement, swaps, relay and per-expert overlap: the SM-resident transport (a
      receive kernel resident beside the GEMMs, a 20% SM tax [model]) vs the same transport
      with no SM tax.
    * Training layer (notebooks 03 and 04): one DeepSeek-V3-shaped MoE layer (narrow experts,
      h_ffn = 2,048) with SP + EP and both overlaps, fused communication taking each of
      ``comm_sms`` SMs of 132 from the GEMMs beside it, vs none.

    ``transfer`` and ``delay`` at most 1e6 s; ``comm_sms``: 1 to 131 SM counts, each in
    [1, 131]; ``decode_tokens`` in [1, 4096] and ``n_steps`` in [1, 10,000] (the two decode
    runs count against the work budget of :mod:`uneven.limits`). Returns a list of
    :class:`TaxRow`.
    """
    from .ep.decode import DecodeSetup, simulate_decode
    from .ep.transport import SM_RESIDENT, Transport
    from .parallel_volumes import DEEPSEEK_V3
    from .schedulers.moe_layer import H800_NODE, layer_timeline
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    transfer = check_real("transfer", transfer, lo=0.0, hi=_MAX_S, unit="s")
    delay = check_real("delay", delay, lo=0.0, hi=_MAX_S, unit="s")
    if isinstance(comm_sms, np.ndarray) and comm_sms.ndim == 1 and comm_sms.size <= 131:
        comm_sms = comm_sms.tolist()
    if not isinstance(comm_sms, (list, tuple, range)) or not 1 <= len(comm_sms) <= 131:
        raise ValueError(f"comm_sms must be a list of 1 to 131 SM counts; got {_show(comm_sms)}")
    comm_sms = [check_int("comm_sms", x, lo=1, hi=131) for x in comm_sms]
    setup = DecodeSetup(tokens_per_gpu=check_int("decode_tokens", decode_tokens, lo=1,
                                                 hi=4096))
    n_steps = check_int("n_steps", n_steps, lo=1, hi=10_000)
    seed = check_int("seed", seed, lo=0)
    check_steps("n_steps", n_steps, _decode_steps(setup, n_steps, 2), "two decode runs")
    rows = []
    zb = pipeline_schedule("zb-h2", 8, 24)
    for label, c in (("healthy links", 0.0), (f"{delay * 1e3:g} ms on link 0↔1", delay)):
        d = np.zeros(7)
        d[0] = c
        on, off = (simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=d, transfer=transfer,
                                     mode="replan", hol=h).iteration_time for h in (True, False))
        rows.append(_row("pipeline: sends on the GPU stream", label, on, off))
    no_tax = Transport(f"{SM_RESIDENT.name}, no SM tax", SM_RESIDENT.fixed, SM_RESIDENT.per_message,
                       0.0)
    on, off = (simulate_decode(setup, placement="NIC-aware", swaps=True, mode="relay",
                               overlap=True, transport=tr, n_steps=n_steps, seed=seed).median()
               for tr in (SM_RESIDENT, no_tax))
    rows.append(_row(f"decode: {SM_RESIDENT.sm_tax:.0%} SM tax",
                     f"{setup.tokens_per_gpu} tokens/GPU", on, off))
    off = layer_timeline(DEEPSEEK_V3, "sp_ep", inter_op=True, intra_op=True,
                         hw=H800_NODE.with_(comm_sms=0)).layer_time
    for sms in comm_sms:
        on = layer_timeline(DEEPSEEK_V3, "sp_ep", inter_op=True, intra_op=True,
                            hw=H800_NODE.with_(comm_sms=sms)).layer_time
        rows.append(_row(f"training layer: {sms} of 132 SMs", "DeepSeek-V3-shaped, overlapped",
                         on, off))
    return rows
