"""Counterfactuals: change one thing, keep the rest, and see whether the slow piece moves.

The chapter's third point of agreement is that network-layer fixes alone are not enough, and two
papers keep communication off the GPU's compute units. Each function here runs one of the
library's models twice or more, changing a single thing:

* :func:`network_fix_sweep` (pipeline, :mod:`uneven.schedulers.pipeline`): a fix in the network
  (perfect ECMP, packet spraying) can at best shorten the delay a slow link adds; it cannot give
  the link more slack, and it cannot stop a stuck send from blocking the GPU stream. The sweep
  credits the network with removing a share of the delay and compares the fixed schedule with
  PipeMorph's re-plan, which keeps the whole delay;
* :func:`transport_before_after` (decode, :mod:`uneven.ep_decode`): the same better transport
  on a skewed layer and on a balanced one (notebook 05's 2 × 2);
* :func:`bandwidth_sweep` (superpod, :mod:`uneven.schedulers.cores`): more fabric bandwidth per
  core against a dispatch bound by barriers and hop latency;
* :func:`compute_unit_tax`: what communication costs when it runs on the compute units, in the
  three models that have such a knob — sends on the GPU stream (pipeline), an SM tax of the EP
  transport (decode), SMs that fused communication takes from the GEMMs (training layer).

Times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_int, check_real

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

    ``delay`` (s, one way) sits on ``link`` of a ``p``-stage ZB-H2 pipeline with ``m``
    micro-batches and every op ``t_op`` (s); ``shares`` (0 … 1) are the parts of it the network
    removes. Returns arrays over ``shares``: ``"zb_cpu"`` (ZB-H2 planned healthy and replayed,
    sends on CPU processes), ``"zb_hol"`` (the same with sends on the GPU stream, a stuck send
    blocking compute), and scalars ``"pipemorph"`` (PipeMorph's re-plan with CPU sends under the
    *whole* delay: no network fix), ``"healthy"`` (no delay) and ``"knee"`` (the delay ZB-H2's
    link absorbs with its memory budget, c* = ((Δ - 1)(t_F + t_B) + Δ t_W)/2 with Δ = 2).

    >>> r = network_fix_sweep(0.03, [0.0, 1.0], p=4, m=12)
    >>> [round(x * 1e3) for x in r["zb_cpu"]], round(r["pipemorph"] * 1e3)
    ([480, 390], 420)
    """
    from .schedulers.pipeline import absorption_bound, pipeline_schedule, simulate_pipeline

    c = check_real("delay", delay, lo=0.0, unit="s")
    sh = as_float_array("shares", shares, ndim=1, lo=0.0)
    if sh.size and sh.max() > 1.0:
        raise ValueError(f"shares must be in [0, 1]; largest is {sh.max()}")
    p = check_int("p", p, lo=2, hi=64)
    m = check_int("m", m, lo=1, hi=1024)
    link = check_int("link", link, lo=0, hi=p - 2)
    t = check_real("t_op", t_op, lo=0.0, lo_open=True, unit="s")
    zb = pipeline_schedule("zb-h2", p, m)

    def delays(x):
        d = np.zeros(p - 1)
        d[link] = x
        return d

    cpu = np.array([simulate_pipeline(zb, t, t, t, delays=delays(c * (1 - f))).iteration_time
                    for f in sh])
    hol = np.array([simulate_pipeline(zb, t, t, t, delays=delays(c * (1 - f)),
                                      hol=True).iteration_time for f in sh])
    pm = simulate_pipeline(zb, t, t, t, delays=delays(c), mode="replan").iteration_time
    healthy = simulate_pipeline(zb, t, t, t).iteration_time
    return {"shares": sh, "zb_cpu": cpu, "zb_hol": hol, "pipemorph": pm, "healthy": healthy,
            "knee": absorption_bound(2, t, t, t_w=t)}


def transport_before_after(*, tokens_per_gpu: int = 64, n_steps: int = 20, seed: int = 2
                           ) -> dict:
    """Median exposed communication (s) of one decode layer (EP32 on H20), per-expert overlap
    on, for ``{(state, transport): seconds}`` with state ``"skewed"`` (contiguous placement, one
    copy per expert: DeepEP's default) or ``"balanced"`` (NIC-aware placement, swaps, relay) and
    transport ``"DeepEP-LL-like"`` or ``"SM-free"`` (:mod:`uneven.ep_transport`)."""
    from .ep_decode import DecodeSetup, simulate_decode
    from .ep_transport import DEEPEP_LL, SM_FREE

    setup = DecodeSetup(tokens_per_gpu=check_int("tokens_per_gpu", tokens_per_gpu, lo=1,
                                                 hi=4096))
    n_steps = check_int("n_steps", n_steps, lo=1, hi=10_000)
    out = {}
    for state, kw in (("skewed", {"placement": "contiguous"}),
                      ("balanced", {"placement": "NIC-aware", "swaps": True, "mode": "relay"})):
        for tr in (DEEPEP_LL, SM_FREE):
            run = simulate_decode(setup, n_steps=n_steps, seed=seed, overlap=True,
                                  transport=tr, **kw)
            out[state, tr.name] = run.median("exposed_comm")
    return out


def bandwidth_sweep(factors, *, ep: int = 64, tokens_per_die: int = 128, seed: int = 0) -> dict:
    """Jitter-free dispatch latency (s) inside a superpod against the bandwidth a core can push.

    ``factors`` multiply :attr:`uneven.schedulers.cores.CoreCosts.core_bandwidth` (1 = the
    CloudMatrix-like default; ``np.inf`` is allowed: bytes cost nothing). Returns arrays over
    ``factors`` for ``"baseline"`` (serialised, two barriers) and ``"ubep"``, and ``"barriers"``:
    the time the baseline spends in its two barriers (s, the same at every bandwidth).
    """
    from .schedulers.cores import CoreCosts, ep_traffic, phase_latency, phase_plan, scheme

    try:
        f = np.atleast_1d(np.asarray(factors, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"factors must be numbers > 0 (inf allowed); got {factors!r}") from None
    if f.ndim != 1 or f.size == 0 or np.any(np.isnan(f)) or f.min() <= 0:
        raise ValueError(f"factors must be numbers > 0 (inf allowed); got {factors!r}")
    traffic = ep_traffic(check_int("ep", ep, lo=2, hi=1024),
                         tokens_per_rank=check_int("tokens_per_die", tokens_per_die, lo=1,
                                                   hi=8192), seed=seed)
    base = CoreCosts()
    out = {"factors": f, "baseline": [], "ubep": []}
    for x in f:
        costs = base.with_(core_bandwidth=base.core_bandwidth * x if np.isfinite(x) else 1e30)
        for kind in ("baseline", "ubep"):
            out[kind].append(phase_latency(phase_plan(traffic, costs, scheme(kind))))
    out["baseline"] = np.array(out["baseline"])
    out["ubep"] = np.array(out["ubep"])
    out["barriers"] = 2 * base.barrier_cost
    return out


@dataclass(frozen=True)
class TaxRow:
    """One model with communication on, and off, the compute units (times in s).

    ``on``: step (or layer) time with communication taking compute resources; ``off``: the
    same with that cost removed and everything else equal. ``share``: ``(on - off) / on``, the
    part of the step that communication on the compute units costs.
    """

    system: str
    setting: str
    on: float
    off: float

    @property
    def share(self) -> float:
        """``(on - off) / on``."""
        return (self.on - self.off) / self.on


def compute_unit_tax(*, transfer: float = 0.5e-3, delay: float = 0.03, comm_sms=(20, 24),
                     decode_tokens: int = 64, n_steps: int = 10, seed: int = 3) -> list:
    """What communication costs when it runs on the compute units, in three models.

    * Pipeline (notebook 01): PipeMorph's re-plan on 8 stages, 24 micro-batches, 10-ms ops, each
      send occupying its sender for ``transfer`` (s), healthy and with ``delay`` (s) on link
      0↔1: sends on the GPU stream (a stuck send blocks the next kernel) vs on CPU processes.
    * Decode (notebook 05): one MoE layer, EP32 on H20, ``decode_tokens`` tokens per GPU,
      NIC-aware placement, swaps, relay and per-expert overlap: the DeepEP-like transport (20%
      SM tax) vs the same transport with no SM tax.
    * Training layer (notebooks 03 and 04): one DeepSeek-V3-shaped MoE layer (narrow experts,
      h_ffn = 2,048) with SP + EP and both overlaps, fused communication taking each of
      ``comm_sms`` SMs of 132 from the GEMMs beside it, vs none.

    Returns a list of :class:`TaxRow`.
    """
    from .ep_decode import DecodeSetup, simulate_decode
    from .ep_transport import DEEPEP_LL, Transport
    from .parallel_volumes import DEEPSEEK_V3
    from .schedulers.moe_layer import H800_NODE, layer_timeline
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    transfer = check_real("transfer", transfer, lo=0.0, unit="s")
    delay = check_real("delay", delay, lo=0.0, unit="s")
    rows = []
    zb = pipeline_schedule("zb-h2", 8, 24)
    for label, c in (("healthy links", 0.0), (f"{delay * 1e3:g} ms on link 0↔1", delay)):
        d = np.zeros(7)
        d[0] = c
        on, off = (simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=d, transfer=transfer,
                                     mode="replan", hol=h).iteration_time for h in (True, False))
        rows.append(TaxRow("pipeline: sends on the GPU stream", label, on, off))
    no_tax = Transport(f"{DEEPEP_LL.name}, no SM tax", DEEPEP_LL.fixed, DEEPEP_LL.per_message,
                       0.0)
    setup = DecodeSetup(tokens_per_gpu=check_int("decode_tokens", decode_tokens, lo=1,
                                                 hi=4096))
    on, off = (simulate_decode(setup, placement="NIC-aware", swaps=True, mode="relay",
                               overlap=True, transport=tr, n_steps=n_steps, seed=seed).median()
               for tr in (DEEPEP_LL, no_tax))
    rows.append(TaxRow(f"decode: {DEEPEP_LL.sm_tax:.0%} SM tax", f"{decode_tokens} tokens/GPU",
                       on, off))
    off = layer_timeline(DEEPSEEK_V3, "sp_ep", inter_op=True, intra_op=True,
                         hw=H800_NODE.with_(comm_sms=0)).layer_time
    for sms in comm_sms:
        sms = check_int("comm_sms", sms, lo=1, hi=131)
        on = layer_timeline(DEEPSEEK_V3, "sp_ep", inter_op=True, intra_op=True,
                            hw=H800_NODE.with_(comm_sms=sms)).layer_time
        rows.append(TaxRow(f"training layer: {sms} of 132 SMs", "DeepSeek-V3-shaped, overlapped",
                           on, off))
    return rows
