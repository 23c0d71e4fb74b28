"""Notebook 05 (Balancing and Beyond): hot experts, the NICs behind them, one copy per host.

The explorer (:func:`balancing_explorer`) and the notebook's figure recipes, which draw values the
notebook computed with :mod:`uneven.ep.placement`, :mod:`uneven.ep.transport` and
:mod:`uneven.ep.decode`.

>>> from uneven import plots
>>> state = balancing_state(placement="NIC-aware", mode="relay", n_hosts=2, tokens_per_gpu=16)
>>> state.nic_in.size, state.gpu_done.size
(8, 16)
>>> fig, _ = plots.figure(8, 3)
>>> draw_balancing(fig, state)
(8, 16, 600.0, 50.0)

The figure recipes on small inputs:

>>> from uneven.ep.decode import DecodeSetup, simulate_decode
>>> from uneven.ep.placement import contiguous_slots, nic_aware_placement
>>> load = [8.0, 7.0, 1.0, 1.0, 2.0, 3.0, 1.0, 1.0]
>>> plans = {"contiguous": contiguous_slots(8, 4, gpus_per_node=4, gpus_per_nic=2),
...          "NIC-aware": nic_aware_placement(load, 8, 4, gpus_per_node=4, gpus_per_nic=2)}
>>> swap_to_steady(plans["contiguous"], load, 0.02)[1]
1
>>> fig = load_figure([3, 5, 1, 2, 8, 1, 1, 2], plans, load)
>>> run = simulate_decode(DecodeSetup(n_hosts=1, n_experts=8, n_slots=8, k=2, tokens_per_gpu=4),
...                       n_steps=3)
>>> fig = swaps_figure({"NIC-aware": run}, drift=0.005)
>>> fig = waterfall_figure(["a", "b"], [10.0, 6.0], [12.0, 8.0], layer_us=[30.0, 25.0],
...                        paper=(190.21, 134.0))
>>> fig = transport_figure({("skewed", "A"): 2e-4, ("skewed", "B"): 1.5e-4,
...                         ("balanced", "A"): 1e-4, ("balanced", "B"): 0.6e-4})
>>> fig = batch_figure([16, 32], {"one copy per expert": [2e-4, 3e-4], "relay": [1.5e-4, 2e-4]},
...                    ["relay", "relay"])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import plots
from .._fields import (
    Checked,
    arguments,
    array,
    check_fields,
    instance,
    integer,
    items,
    namespace,
    real,
    text,
)
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..ep._checks import check_loads, check_swap_budget
from ..ep.decode import (
    H20_DECODE,
    PLACEMENTS,
    DecodeRun,
    DecodeSetup,
    decode_layer,
    drifting_popularity,
    isolated_phases,
    make_placement,
    matching_batch,
    relay_cost_for,
    sample_routing,
    simulate_decode,
)
from ..ep.placement import (
    MAX_EXPERTS,
    Placement,
    busiest_gpu_floor,
    gpu_loads,
    host_loads,
    nic_loads,
    nvlink_swaps,
    placement_from_phy2log,
    rebalance_experts,
    route_to_slots,
)
from ..ep.routing import load_ratio
from ..ep.transport import (
    SM_FREE,
    SM_RESIDENT,
    DecodeTraffic,
    decode_traffic,
    expected_remote_hosts,
)
from ..i18n import gettext as _
from ..units import gbit_per_s, gbyte_per_s, to_us
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider, toggle
from ._common import N_, check_dict, display_width, handed_on, is_real, pad
from ._common import curve as _curve

__all__ = ["BalancingState", "balancing_state", "draw_balancing", "balancing_explorer",
           "TRANSPORTS", "STALE_STEP", "swap_to_steady", "load_figure", "swaps_figure",
           "waterfall_figure", "transport_figure", "batch_figure",
           # the notebook's runs, one per section
           "ABLATION", "BATCH_OPTIONS", "DEEPEP_LL_TABLE", "step_skew", "placement_loads",
           "replica_rows", "swap_runs", "relay_step", "shuffled_host", "layer_report",
           "ablation_runs", "stale_report", "transport_table", "PAPER_COMM", "matched_ablation",
           "WITHOUT", "leave_one_out",
           "batch_sweep", "deepep_ll_check"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("skew", (2.0, 4.0, 6.0, 8.0, 12.0))

TRANSPORTS = {"SM-resident": SM_RESIDENT, "SM-free": SM_FREE}
#: The explorer shows the step this many steps after the placement was planned (it has drifted).
STALE_STEP = 200
_MAX_BARS = 4096  # NICs or GPUs one explorer figure draws
_MAX_SECONDS = 1e6  # times a figure draws (s)
# Names that are keys in code and shown translated: placements, copy modes, transports, the runs'
# palette names, the notebook's panel titles.
_SHOWN = (N_("contiguous"), N_("NIC-aware"), N_("NIC-aware + swaps"), N_("direct"),
          N_("relay"), N_("SM-resident"), N_("SM-free"),
          N_("19 tokens per GPU (the matched batch)"), N_("64 tokens per GPU"))


@dataclass(frozen=True)
class BalancingState(Checked):
    """One decode step of one MoE layer for the notebook 05 explorer.

    Times in s. ``nic_in`` ``[n_nics]``: how long each NIC's dispatch receive stream is busy;
    ``gpu_ready`` / ``gpu_compute_end`` / ``gpu_done`` ``[n_gpus]``: when each GPU's inputs have
    all arrived, when its experts end, when it has its results back. ``layer_time``,
    ``exposed_comm`` (layer minus the busiest GPU's compute), ``nic_ratio`` (busiest / mean NIC
    receive copies), ``gpus_per_nic``, ``swaps`` made to reach a steady state, ``label``.
    At most 4096 NICs and GPUs; times up to 1e6 s; arrays are read-only.
    """

    nic_in: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=_MAX_SECONDS)
    gpu_ready: np.ndarray = array(shape=("gpus",), nonempty=True, lo=0.0, hi=_MAX_SECONDS)
    gpu_compute_end: np.ndarray = array(shape=("gpus",), lo=0.0, hi=_MAX_SECONDS)
    gpu_done: np.ndarray = array(shape=("gpus",), lo=0.0, hi=_MAX_SECONDS)
    layer_time: float = real(lo=0.0, hi=_MAX_SECONDS, unit="s")
    exposed_comm: float = real(lo=-_MAX_SECONDS, hi=_MAX_SECONDS, unit="s")
    nic_ratio: float = real(lo=0.0, hi=1e6)
    gpus_per_nic: int = integer(lo=1, hi=1024)
    swaps: int = integer(lo=0)
    label: str = text(max_len=500)

    def __post_init__(self):
        check_fields(self)
        for name in ("nic_in", "gpu_ready"):
            if getattr(self, name).size > _MAX_BARS:
                raise ValueError(f"{name} must have 1 .. {_MAX_BARS} entries; got "
                                 f"{getattr(self, name).size}")


@lru_cache(maxsize=8)
def _popularity(n_experts, ratio):
    p = drifting_popularity(n_experts, STALE_STEP + 1, ratio, drift=DecodeSetup().drift, seed=0)
    return p[0], p[STALE_STEP]


@lru_cache(maxsize=8)
def _routing(n_experts, ratio, n_tokens, k):
    return sample_routing(_popularity(n_experts, ratio)[1], n_tokens, k, seed=1)


def swap_to_steady(placement, load, threshold, *, max_rounds=32, expert_bytes=44.04e6):
    """Apply :func:`uneven.ep.placement.nvlink_swaps` rounds on ``load`` until no swap
    passes ``threshold`` (at most ``max_rounds``): where per-step swaps that track the load
    settle. Returns ``(placement, swaps)``. ``max_rounds`` at most 10,000 (and the rounds
    within the work budget of :mod:`uneven.limits`)."""
    check_instance("placement", placement, Placement)
    load = check_loads("load", load, shape=(placement.n_experts,))
    rounds = check_int("max_rounds", max_rounds, lo=0, hi=10_000)
    threshold = check_real("threshold", threshold, lo=0.0, hi=1e3)
    expert_bytes = check_real("expert_bytes", expert_bytes, lo=0.0, hi=1e15, unit="bytes")
    check_swap_budget("max_rounds", placement, rounds)
    n = 0
    for _round in range(rounds):
        r = nvlink_swaps(placement, load, threshold=threshold, expert_bytes=expert_bytes)
        if r.pairs.size == 0:
            break
        placement, n = r.placement, n + r.pairs.shape[0]
    return placement, n


def balancing_state(placement: str = "contiguous", mode: str = "direct", overlap: bool = False,
                    transport: str = "SM-resident", swaps: bool = False,
                    swap_threshold: float = 0.02, skew: float = 8.0, tokens_per_gpu: int = 64,
                    n_hosts: int = 4, gpus_per_nic: int = 2, nic_gbps: float = 400.0,
                    nvlink_gbps: float = 450.0) -> BalancingState:
    """One step, ``STALE_STEP`` steps after the placement was planned, of an EP group of
    ``n_hosts`` H20-like hosts (256 experts, no spare slots, top-8). ``skew``: busiest/median
    expert popularity; ``swaps``: NVLink swaps that track this step's expected load, run to a
    steady state with ``swap_threshold``; ``nic_gbps`` (Gb/s per NIC, 10 .. 1e6),
    ``nvlink_gbps`` (GB/s per GPU per direction, 10 .. 1e6)."""
    placement = check_choice("placement", placement, PLACEMENTS)
    mode = check_choice("mode", mode, ("direct", "relay"))
    overlap = check_bool("overlap", overlap)
    tr = TRANSPORTS[check_choice("transport", transport, TRANSPORTS)]
    swaps = check_bool("swaps", swaps)
    thr = check_real("swap_threshold", swap_threshold, lo=0.0, hi=1.0)
    skew = check_real("skew", skew, lo=1.0, hi=64.0)
    b = check_int("tokens_per_gpu", tokens_per_gpu, lo=1, hi=512)
    n_hosts = check_choice("n_hosts", n_hosts, (2, 4, 8))
    gpnic = check_choice("gpus_per_nic", gpus_per_nic, (1, 2))
    hw = replace(H20_DECODE, gpus_per_nic=gpnic,
                 nic_bw=gbit_per_s(check_real("nic_gbps", nic_gbps, lo=10.0, hi=1e6,
                                              unit="Gb/s")),
                 nvlink_bw=gbyte_per_s(check_real("nvlink_gbps", nvlink_gbps, lo=10.0, hi=1e6,
                                                  unit="GB/s")))
    setup = DecodeSetup(n_hosts=n_hosts, tokens_per_gpu=b, busiest_over_median=skew, hw=hw)
    n_tok = setup.n_gpus * b
    planned, now = _popularity(setup.n_experts, skew)
    plc = make_placement(placement, setup, planned * n_tok * setup.k)
    n_swaps = 0
    if swaps:
        plc, n_swaps = swap_to_steady(plc, now * n_tok * setup.k, thr,
                                      expert_bytes=hw.expert_bytes)
    ids = _routing(setup.n_experts, skew, n_tok, setup.k)
    src = np.repeat(np.arange(setup.n_gpus, dtype=np.int64), b)
    traffic = decode_traffic(plc, route_to_slots(plc, ids, src), src, mode)
    lr = decode_layer(plc, traffic, tr, hw, overlap=overlap)
    spg = plc.slots_per_gpu
    ready = lr.arrival.reshape(setup.n_gpus, spg).max(axis=1)
    cend = lr.compute_end.reshape(setup.n_gpus, spg).max(axis=1)
    nin = traffic.nic_in()
    sep = _(", ", context="list")
    label = (f"{_(placement)}{_(' + swaps') if swaps else ''}{sep}{_(mode)}"
             f"{_(', per-expert overlap') if overlap else ''}{sep}{_(tr.name)}")
    ready.flags.writeable = False
    cend.flags.writeable = False
    return trusted(BalancingState, nic_in=lr.nic_in, gpu_ready=ready, gpu_compute_end=cend,
                   gpu_done=lr.completion, layer_time=lr.layer_time,
                   exposed_comm=lr.exposed_comm,
                   nic_ratio=float(nin.max() / nin.mean()) if nin.mean() > 0 else 1.0,
                   gpus_per_nic=gpnic, swaps=n_swaps, label=label)


@plots.recipe
def draw_balancing(fig, state: BalancingState, **_values):
    """Left: each NIC's dispatch receive stream, busy time (µs). Right: each GPU's step — waiting
    for its inputs, running its experts, waiting for its results. Returns the layout key."""
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure)
    check_instance("state", state, BalancingState, "from balancing_state(...)")
    n_nics, n_gpus = state.nic_in.size, state.gpu_done.size
    # axis limits from a coarse ladder: most slider moves keep the cached background
    tmax = _ladder(to_us(state.gpu_done.max()), 150.0)
    nmax = _ladder(to_us(state.nic_in.max()), 50.0)
    key = (n_nics, n_gpus, tmax, nmax)

    def build(fig):
        from matplotlib.collections import PolyCollection

        ax_n, ax_g = fig.subplots(1, 2, width_ratios=(1.0, 1.3))
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.74, wspace=0.28)

        def coll(ax, color, label):
            c = PolyCollection([], facecolors=color, edgecolors="none", label=label)
            ax.add_collection(c)
            return c

        nic = coll(ax_n, plots.color("NIC"), "NIC")
        mean = ax_n.axhline(0.0, color=plots.color("ink"), lw=1, ls="--", label=_("mean"))
        ax_n.set_xlabel("NIC")
        ax_n.set_ylabel(_("dispatch receive busy (µs)"))
        ax_n.set_xlim(-0.6, n_nics - 0.4)
        ax_n.xaxis.set_major_locator(MaxNLocator(6, integer=True))
        ax_n.yaxis.set_major_locator(MaxNLocator(5))
        ax_n.set_title(_("each NIC's receive stream"))
        wait = coll(ax_g, plots.color("grey"), _("waiting for inputs"))
        comp = coll(ax_g, plots.color("compute"), _("experts"))
        comb = coll(ax_g, plots.color("purple"), _("combine"))
        ax_g.set_ylim(n_gpus - 0.5, -0.5)
        ax_g.set_yticks(np.arange(0, n_gpus, 8))
        ax_g.xaxis.set_major_locator(MaxNLocator(5))
        ax_g.set_xlabel(_("time in the layer (µs, model)"))
        ax_g.set_ylabel("GPU")
        ax_g.legend(handles=[wait, comp, comb], loc="lower center", bbox_to_anchor=(0.5, 1.0),
                    ncol=3, fontsize=plots.SMALL)
        title = fig.suptitle("", fontsize=plots.LEGEND, x=0.01, ha="left")
        return {"nic": nic, "mean": mean, "wait": wait, "comp": comp, "comb": comb,
                "title": title, "ax_n": ax_n, "ax_g": ax_g,
                "dynamic": [nic, mean, wait, comp, comb, title]}

    def boxes(y, x0, x1, half=0.4):
        v = np.empty((y.size, 4, 2))
        v[:, 0, 0] = v[:, 3, 0] = x0
        v[:, 1, 0] = v[:, 2, 0] = x1
        v[:, 0, 1] = v[:, 1, 1] = y - half
        v[:, 2, 1] = v[:, 3, 1] = y + half
        return v

    art = reuse(fig, f"balance-{n_nics}-{n_gpus}", build)
    art["ax_n"].set_ylim(0, nmax)
    art["ax_g"].set_xlim(0, tmax)
    heights = to_us(state.nic_in)
    xs = np.arange(n_nics, dtype=float)
    bars = boxes(np.zeros(n_nics), xs - 0.4, xs + 0.4)
    bars[:, 0, 1] = bars[:, 1, 1] = 0.0
    bars[:, 2, 1] = bars[:, 3, 1] = heights
    art["nic"].set_verts(bars)
    art["mean"].set_ydata([to_us(state.nic_in.mean())] * 2)
    ready, cend, done = (to_us(a) for a in (state.gpu_ready, state.gpu_compute_end,
                                            state.gpu_done))
    y = np.arange(n_gpus, dtype=float)
    art["wait"].set_verts(boxes(y, np.zeros(n_gpus), ready))
    art["comp"].set_verts(boxes(y, ready, np.maximum(cend, ready)))
    art["comb"].set_verts(boxes(y, np.maximum(cend, ready), np.maximum(done, cend)))
    art["title"].set_text(
        _("{label}\nlayer {layer:,.0f} µs, exposed communication {exposed:,.0f} µs (model) · "
          "busiest / mean NIC {ratio:.2f} · {gpus_per_nic} GPU(s) per NIC · swaps {swaps}").format(
            label=state.label, layer=to_us(state.layer_time), exposed=to_us(state.exposed_comm),
            ratio=state.nic_ratio, gpus_per_nic=state.gpus_per_nic, swaps=state.swaps))
    return key


def _ladder(x: float, base: float) -> float:
    """The smallest of ``base × 4^i`` (i >= 0) that holds ``x``: coarse steps, so that an axis
    limit (and the explorer's cached background) changes rarely."""
    top = base
    while top < x:
        top *= 4.0
    return top


def balancing_explorer(show: bool = True) -> Explorer:
    """Notebook 05's widget: placement, transport, overlap, swaps, skew, batch, EP size, GPUs per
    NIC, NIC and NVLink bandwidth."""
    controls = {
        "placement": dropdown([(_(p), p) for p in PLACEMENTS], "contiguous",
                              _("placement", context="control")),
        "mode": dropdown([(_("one copy per expert (direct)"), "direct"),
                          (_("one copy per host (relay)"), "relay")], "direct", _("copies")),
        "overlap": toggle(False, _("per-expert overlap")),
        "transport": dropdown([(_(t), t) for t in TRANSPORTS], "SM-resident", _("transport")),
        "swaps": toggle(False, _("NVLink swaps")),
        "swap_threshold": slider(0.0, 0.2, 0.01, 0.02, _("swap threshold")),
        "skew": slider(1.0, 16.0, 1.0, 8.0, _("busiest / median")),
        "tokens_per_gpu": int_slider(16, 256, 16, 64, _("tokens per GPU")),
        "n_hosts": dropdown([2, 4, 8], 4, _("hosts (× 8 GPUs)")),
        "gpus_per_nic": dropdown([1, 2], 2, _("GPUs per NIC")),
        "nic_gbps": slider(100.0, 800.0, 50.0, 400.0, "NIC (Gb/s)"),
        "nvlink_gbps": slider(100.0, 900.0, 50.0, 450.0, "NVLink (GB/s)"),
    }
    presets = {
        _("DeepEP default (contiguous, direct)"): {
            "placement": "contiguous", "mode": "direct", "overlap": False,
            "transport": "SM-resident", "swaps": False},
        _("+ NIC-aware placement and swaps"): {"placement": "NIC-aware", "swaps": True},
        _("+ relay"): {"placement": "NIC-aware", "swaps": True, "mode": "relay"},
        _("everything (+ overlap, SM-free)"): {
            "placement": "NIC-aware", "swaps": True, "mode": "relay", "overlap": True,
            "transport": "SM-free"},
        _("H800-like: one GPU per NIC"): {"gpus_per_nic": 1, "nvlink_gbps": 160.0},
        _("uniform experts"): {"skew": 1.0},
    }
    return explore(balancing_state, draw_balancing, controls, presets=presets, show=show,
                   figsize=(8.5, 3.8), columns=3)


# --------------------------------------------------------------------------- figure recipes


@plots.recipe
def load_figure(counts, per_placement: dict, load):
    """Left: CDF of one step's tokens per expert, relative to the median. Middle and right: load
    per GPU and per NIC (``per_placement``: ``{name: Placement}``, names from the palette, one
    host layout), relative to the mean, for the expected ``load`` (float ``[n_experts]``, not all
    zero). ``counts``: at most 65,536 experts, a median > 0 and at most 1e12 times below the
    busiest."""
    counts = _curve("counts", counts, lo=0.0)
    if counts.size > MAX_EXPERTS:
        raise ValueError(f"counts must have at most {MAX_EXPERTS:,} entries; got {counts.size:,}")
    counts = counts / counts.max() if counts.max() > 0 else counts
    if not np.median(counts) >= 1e-12:
        raise ValueError("counts must have a median > 0 (at least 1e-12 of the busiest)")
    check_dict("per_placement", per_placement, key=lambda k: isinstance(k, str)
               and k in plots.PALETTE, item=lambda v: isinstance(v, Placement), hi=8)
    first = next(iter(per_placement.values()))
    layout = (first.n_gpus, first.gpus_per_node, first.gpus_per_nic, first.n_experts)
    if any((p.n_gpus, p.gpus_per_node, p.gpus_per_nic, p.n_experts) != layout
           for p in per_placement.values()):
        raise ValueError("per_placement must hold placements of the same experts on the same "
                         "hosts (GPUs, GPUs per node, GPUs per NIC)")
    if first.n_gpus > _MAX_BARS:
        raise ValueError(f"per_placement must place the experts on at most {_MAX_BARS} GPUs; "
                         f"got {first.n_gpus}")
    load = _curve("load", load, n=first.n_experts, lo=0.0)
    if not load.max() > 0:
        raise ValueError("load must have at least one expert with a positive load")
    load = load / load.max()  # the same shares, far from the float limits
    fig, (ax_c, ax_g, ax_n) = plots.figure(12, 3.9, ncols=3, width_ratios=(0.8, 1.2, 1.0))
    with plots.style():
        rel = np.sort(counts / np.median(counts))
        ax_c.step(rel, np.arange(1, rel.size + 1) / rel.size, where="post",
                  color=plots.color("model"))
        ax_c.axvline(1.0, color=plots.color("grey"), lw=0.8, ls=":")
        ax_c.annotate(_("busiest = {ratio:.1f}× median").format(ratio=rel[-1]), (rel[-1], 1.0),
                      xytext=(-4, -28),
                      textcoords="offset points", ha="right", fontsize=plots.NOTE,
                      arrowprops=dict(arrowstyle="->", lw=0.6))
        ax_c.set_xlabel(_("tokens per expert / median (one step)"))
        ax_c.set_ylabel(_("fraction of experts ≤ x"))
        ax_c.set_title(_("expert load (model)"))
        n = len(per_placement)
        width = 0.8 / n
        for i, (name, plc) in enumerate(per_placement.items()):
            g = gpu_loads(plc, load)
            c = nic_loads(plc, load)
            off = (i - (n - 1) / 2) * width
            ax_g.bar(np.arange(g.size) + off, g / g.mean(), width, color=plots.color(name),
                     label=_("{name}: max {ratio:.2f}").format(name=_(name),
                                                              ratio=g.max() / g.mean()))
            ax_n.bar(np.arange(c.size) + off, c / c.mean(), width, color=plots.color(name),
                     label=_("{name}: max {ratio:.2f}").format(name=_(name),
                                                              ratio=c.max() / c.mean()))
        for ax, what, per in ((ax_g, "GPU", plc.gpus_per_node),
                              (ax_n, "NIC", plc.gpus_per_node // plc.gpus_per_nic)):
            ax.axhline(1.0, color=plots.color("ink"), lw=0.8, ls="--")
            n_items = plc.n_gpus if what == "GPU" else plc.n_nics
            for x in np.arange(per, n_items, per):
                ax.axvline(x - 0.5, color=plots.color("grey"), lw=0.6)
            ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
            ax.set_xlabel(_("{what} (thin lines: host boundaries)").format(what=what))
            ax.set_ylabel(_("load per {what} / mean").format(what=what))
            ax.set_ylim(0, 2.1)
            ax.set_title(_("per {what} ({n} GPUs per NIC)").format(what=what,
                                                                   n=plc.gpus_per_nic))
            plots.legend(ax, "below", ncol=1)
    return fig


@plots.recipe
def swaps_figure(runs: dict, *, drift: float):
    """Busiest / mean NIC receive copies per step (``runs``: ``{name: DecodeRun}``, names from the
    palette, at most 8 runs of at most 100,000 steps); ``drift``: the popularity drift per step
    (0 .. 1)."""
    check_dict("runs", runs, key=lambda k: isinstance(k, str) and k in plots.PALETTE,
               item=lambda v: isinstance(v, DecodeRun) and v.nic_ratio.size <= 100_000, hi=8)
    drift = check_real("drift", drift, lo=0.0, hi=1.0)
    fig, ax = plots.figure(8, 3.3)
    with plots.style():
        for name, r in runs.items():
            ax.plot(np.arange(r.nic_ratio.size), r.nic_ratio, color=plots.color(name), lw=1.2,
                    label=_("{name} (mean {mean:.2f})").format(name=_(name),
                                                               mean=r.nic_ratio.mean()))
        ax.axhline(1.0, color=plots.color("ink"), lw=0.8, ls="--")
        ax.set_xlabel(_("decode step after planning (popularity drift {drift:g} per step)")
                      .format(drift=drift))
        ax.set_ylabel(_("busiest / mean NIC receive"))
        ax.set_title(_("a plan goes stale; swaps keep up inside each host (model)"))
        plots.legend(ax, "right")
    return fig


@plots.recipe
def waterfall_figure(names, median_us, p99_us, *, layer_us=None, paper: tuple | None = None,
                     fitted_us=None):
    """The ablation as a waterfall: each bar spans the change in median exposed communication
    (µs) from one step to the next (green: removed; red: added); diamonds mark the P99 over
    steps; ``layer_us`` (optional, median layer time in µs per step) is drawn as a black dash
    above each bar, because the exposed metric moves with the busiest GPU's expert time.
    ``names``: one label per step (1 .. 16 steps); times from 0 to 1e12 µs; ``paper``: the
    paper's (before, after) communication time in µs, or None; when given, a side panel puts
    it beside the model's rungs, both divided by the first rung (DeepEP's default = 1);
    ``fitted_us`` (optional, µs per step, needs ``paper``): the rungs with the solved relay cost,
    drawn in that panel as open circles."""
    med = _curve("median_us", median_us, lo=0.0)
    if med.size > 16 or med.max() > 1e12:
        raise ValueError(f"median_us must have 1 .. 16 steps of at most 1e12 µs; got "
                         f"{_show(median_us)}")
    if not isinstance(names, (list, tuple)) or len(names) != med.size or not all(
        isinstance(n, str) and len(n) <= 200 for n in names
    ):
        raise ValueError(f"names must be a list of {med.size} step labels (strings); got "
                         f"{_show(names)}")
    p99 = _curve("p99_us", p99_us, n=med.size, lo=0.0)
    if p99.max() > 1e12:
        raise ValueError(f"p99_us must hold times of at most 1e12 µs; got {p99.max()}")
    layer = None
    if layer_us is not None:
        layer = _curve("layer_us", layer_us, n=med.size, lo=0.0)
        if layer.max() > 1e12:
            raise ValueError(f"layer_us must hold times of at most 1e12 µs; got {layer.max()}")
    if paper is not None and not (isinstance(paper, (tuple, list)) and len(paper) == 2
                                  and all(is_real(x, lo=0.0) and x < 1e12 for x in paper)):
        raise ValueError(f"paper must be None or a pair (before, after) of times in µs; got "
                         f"{_show(paper)}")
    fitted = None
    if fitted_us is not None:
        fitted = _curve("fitted_us", fitted_us, n=med.size, lo=0.0)
        if fitted.max() > 1e12 or paper is None:
            raise ValueError(f"fitted_us must hold times of at most 1e12 µs, with paper given; "
                             f"got {_show(fitted_us)} with paper={_show(paper)}")
    if paper is None:
        fig, ax = plots.figure(10, 4.0)
    else:  # the paper beside the bars: both normalised to DeepEP's default
        fig, (ax, ax_p) = plots.figure(12, 4.8, ncols=2, width_ratios=(3.2, 1.0))
    with plots.style():
        x = np.arange(med.size)
        ax.bar(x[:1], med[:1], 0.6, color=plots.color("grey"))
        for i in range(1, med.size):
            lo, hi = sorted((med[i], med[i - 1]))
            col = plots.color("green") if med[i] <= med[i - 1] else plots.color("red")
            ax.bar(i, hi - lo, 0.6, bottom=lo, color=col)
            ax.plot([i - 1.3, i + 0.3], [med[i - 1]] * 2, color=plots.color("grey"), lw=0.6)
        ax.bar(x[-1:], med[-1:], 0.6, color=plots.color("sky"), alpha=0.5)
        ax.plot(x + 0.22, p99, "D", color=plots.color("red"), ms=5,
                label=_("exposed, P99 over steps (model)"))
        top = max(p99.max(), med.max())
        if layer is not None:
            ax.plot(x, layer, "_", color=plots.color("ink"), ms=26, mew=2.2)
            ax.plot([], [], "_", color=plots.color("ink"), ms=12, mew=2.2,
                    label=_("layer time, median (model)"))  # a shorter dash for the legend
            for i, v in enumerate(layer):
                ax.text(i, v + top * 0.015, f"{v:.0f}", ha="center", va="bottom",
                        fontsize=plots.SMALL,
                        color=plots.color("ink"))
            top = max(top, layer.max())
        for i, v in enumerate(med):  # the first above its bar, the others under theirs
            above = i == 0
            ax.text(i, v + (1 if above else -1) * top * 0.015, f"{v:.0f}", ha="center",
                    va="bottom" if above else "top", fontsize=plots.NOTE)
        ax.set_xticks(x, [_(n) for n in names], rotation=12, ha="right", fontsize=plots.NOTE)
        ax.set_ylabel(_("time per layer (µs)"))
        ax.set_ylim(0, top * 1.2 if top > 0 else 1.0)
        ax.grid(axis="x", visible=False)
        title = _("exposed communication, median over steps (model); green = what each step "
                  "removes")
        ax.set_title(title, fontsize=plots.LABEL)
        plots.legend(ax, "inside", loc="upper right")
        if paper is not None:
            _paper_panel(ax_p, med, paper, fitted)
    return fig


def _paper_panel(ax, med, paper, fitted=None):
    """The waterfall's side panel: each rung's median over the first rung's (model, bars) and
    the paper's two published ends (dots only: nothing is known in between), both with DeepEP's
    default = 1; ``fitted`` (µs per rung, or None): the rungs with the solved relay cost."""
    n = med.size
    rel = med / med[0] if med[0] > 0 else np.ones(n)
    shades = [plots.color("grey")] + [plots.color("green")] * (n - 2) + [plots.color("sky")]
    ax.bar(np.arange(n), rel, 0.6, color=shades[:n], alpha=0.55, label=_("model, each rung"))
    end = paper[1] / paper[0] if paper[0] > 0 else 1.0
    top = max(1.0, end, rel.max())
    if fitted is not None:
        fit = fitted / med[0] if med[0] > 0 else np.ones(n)
        ax.plot(np.arange(n), fit, "o", mfc="none", mec=plots.color("ink"), ms=6, mew=1.1,
                label=_("model, relay sync solved\nfor the paper's end"))
        top = max(top, fit.max())
    ax.plot([0, n - 1], [1.0, end], "o", color=plots.color("red"), ms=6,
            label=_("paper [chapter], ends only:\n{before:.2f} → {after:.2f} µs").format(
                before=paper[0], after=paper[1]))
    ax.annotate(_("paper {end:.2f}").format(end=end), (n - 1, end), xytext=(-6, 8),
                textcoords="offset points", ha="right", fontsize=plots.NOTE,
                color=plots.color("red"))
    ax.annotate(_("model\n{rel:.2f}").format(rel=rel[-1]), (n - 1, rel[-1]), xytext=(0, 3),
                textcoords="offset points", ha="center", va="bottom", fontsize=plots.NOTE)
    default = _("DeepEP\ndefault")
    ax.set_xticks([0, n - 1], [default, _("all", context="rungs")] if n > 1 else [default] * 2,
                  fontsize=plots.NOTE)
    ax.set_ylim(0, 1.1 * top)
    ax.set_ylabel(_("exposed communication / DeepEP default"))
    ax.set_title(_("normalised: model vs paper"), fontsize=plots.LABEL)
    ax.grid(axis="x", visible=False)
    plots.legend(ax, "below", ncol=1, fontsize=plots.SMALL, bbox_to_anchor=(0.5, -0.12))


@plots.recipe
def transport_figure(*tables: dict, titles=None):
    """The 2×2, one panel per table: ``table[(balance, transport)] = exposed communication (s)``
    for balance in ('skewed', 'balanced') and two transports; the better one's gain in µs and %
    above the bars. 1 .. 4 tables; ``titles``: one per table (say, its batch) or None. Times from
    1e-12 to 1e6 s."""
    bal = ["skewed", "balanced"]
    if not 1 <= len(tables) <= 4:
        raise ValueError(f"tables must be 1 .. 4 tables; got {len(tables)}")
    if titles is not None and not (isinstance(titles, (list, tuple)) and len(titles) == len(tables)
                                   and all(isinstance(t, str) and len(t) <= 200 for t in titles)):
        raise ValueError(f"titles must be None or one string per table ({len(tables)}); got "
                         f"{_show(titles)}")
    trs = None
    for table in tables:
        check_dict("table", table, key=lambda k: isinstance(k, tuple) and len(k) == 2
                   and k[0] in bal and isinstance(k[1], str) and len(k[1]) <= 100,
                   item=lambda v: is_real(v, lo=1e-12) and v <= _MAX_SECONDS, lo=4, hi=4)
        names = list(dict.fromkeys(t for _, t in table))
        if len(names) != 2 or any((b, t) not in table for b in bal for t in names) or (
                trs is not None and names != trs):
            raise ValueError(f"table must time both balances with the same two transports; got "
                             f"{_show(sorted(table))}")
        trs = names
    n = len(tables)
    fig, axes = plots.figure(7.5 if n == 1 else 5.2 * n, 3.6, ncols=n)
    axes = np.atleast_1d(axes)
    with plots.style():
        width = 0.36
        shades = [plots.color("grey"), plots.color("green")]
        for k, (ax, table) in enumerate(zip(axes, tables, strict=True)):
            for j, t in enumerate(trs):
                vals = [to_us(table[b, t]) for b in bal]
                ax.bar(np.arange(2) + (j - 0.5) * width, vals, width, color=shades[j],
                       label=_(t))
            for i, b in enumerate(bal):
                a, c = to_us(table[b, trs[0]]), to_us(table[b, trs[1]])
                ax.annotate(f"−{a - c:.0f} µs ({(a - c) / a:.0%})", (i, a), xytext=(0, 6),
                            textcoords="offset points", ha="center", fontsize=plots.LEGEND)
            ax.set_xticks([0, 1], [_("skewed:\ncontiguous, direct"),
                                   _("balanced:\nNIC-aware + swaps, relay")])
            if k == 0:
                ax.set_ylabel(_("exposed communication (µs)"))
            top = max(to_us(v) for v in table.values())
            ax.set_ylim(0, top * 1.25)
            ax.set_title(_(titles[k]) if titles else _("the same better transport, before and "
                                                       "after balancing (model)"),
                         fontsize=plots.LABEL)
            ax.grid(axis="x", visible=False)
        plots.legend(axes[-1], "right")
        if n > 1:
            fig.suptitle(_("the same better transport, before and after balancing (model)"),
                         fontsize=plots.LABEL)
    return fig


@plots.recipe
def batch_figure(batches, times: dict, best: list):
    """Layer time (µs) against tokens per GPU for each transport/overlap option (``times``:
    ``{label: [s per batch]}``, times > 0 and at most 1e6 s); ``best``: the best label per batch,
    marked with a ring. ``batches``: 1 .. 64 distinct batch sizes (integers, 1 .. 1e6)."""
    b = _curve("batches", batches, lo=1.0)
    if b.size > 64 or b.max() > 1e6 or not np.all(b == np.round(b)) or np.unique(b).size < b.size:
        raise ValueError(f"batches must be 1 .. 64 distinct integers from 1 to 1e6; got "
                         f"{_show(batches)}")
    b = b.astype(np.int64)
    check_dict("times", times, key=lambda k: isinstance(k, str) and len(k) <= 200,
               item=lambda v: _positive_times(v, b.size), hi=16)
    if not isinstance(best, (list, tuple)) or len(best) != b.size or not all(
        isinstance(x, str) and x in times for x in best
    ):
        raise ValueError(f"best must name one label of times per batch ({b.size}); got "
                         f"{_show(best)}")
    fig, (ax, ax_r) = plots.figure(11, 3.8, ncols=2)
    styles = {"direct": "-", "relay": "--"}
    with plots.style():
        base = np.asarray(times[next(iter(times))], dtype=float)
        for label, vals in times.items():
            v = np.asarray(vals, dtype=float)
            kind = "relay" if "relay" in label else "direct"
            col = plots.color(kind)
            mk = "o" if "overlap" in label else "s"
            ax.plot(b, to_us(v), styles[kind], marker=mk, color=col, label=_(label))
            ax_r.plot(b, v / base, styles[kind], marker=mk, color=col, label=_(label))
        for x, label in zip(b, best, strict=True):
            y = to_us(times[label][list(b).index(x)])
            ax.plot([x], [y], "o", ms=11, mfc="none", mec=plots.color("red"), mew=1.2)
        # the rings are drawn on the left panel; their legend entry sits with the others
        ax_r.plot([], [], "o", ms=9, mfc="none", mec=plots.color("red"), mew=1.2,
                  label=_("best at this batch (left panel)"))
        for a in (ax, ax_r):
            a.set_xscale("log", base=2)
            a.set_xticks(b, [str(x) for x in b])
            a.minorticks_off()
            a.set_xlabel(_("tokens per GPU per step"))
        ax.set_ylabel(_("MoE layer time, median over steps (µs)"))
        ax.set_title(_("time per layer (model)"))
        ax_r.set_ylabel(_("relative to '{first}'").format(first=_(next(iter(times)))))
        ax_r.set_ylim(0, 1.1)
        ax_r.set_title(_("relative to one copy per expert, no overlap"))
        plots.legend(ax_r, "right")
    return fig


def _positive_times(value, n) -> bool:
    try:
        arr = as_float_array("times", value, shape=(n,), lo=1e-300)
    except ValueError:
        return False
    return bool(arr.max() <= _MAX_SECONDS)


# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.
# The numbers are the library's (uneven.ep: placement, transport, decode).

#: Section 6's ablation, in order: label -> the keywords of :func:`uneven.ep.simulate_decode`.
ABLATION = (
    (N_("DeepEP default:\ncontiguous, direct"), dict(placement="contiguous")),
    (N_("+ NIC-aware\nplacement"), dict(placement="NIC-aware")),
    (N_("+ NVLink swaps"), dict(placement="NIC-aware", swaps=True)),
    (N_("+ relay"), dict(placement="NIC-aware", swaps=True, mode="relay")),
    (N_("+ per-expert\noverlap"), dict(placement="NIC-aware", swaps=True, mode="relay",
                                       overlap=True)),
    (N_("+ SM-free\ntransport"), dict(placement="NIC-aware", swaps=True, mode="relay",
                                      overlap=True, transport="SM-free")),
)
#: DeepEP's low-latency times, µs, H800 + CX7, per EP size: (dispatch, combine) now
#: (docs/legacy.md), then (dispatch, combine) in February 2025 (README at ebfe47e) [repo].
DEEPEP_LL_TABLE = {8: (77, 114, 163, 318), 32: (155, 273, 182, 350), 256: (194, 360, 194, 360)}


def _decode_kw(kw: dict) -> dict:
    """``kw`` with a transport named by its key in :data:`TRANSPORTS` replaced by the object."""
    return {**kw, "transport": TRANSPORTS[kw["transport"]]} if "transport" in kw else dict(kw)


_SETUP = instance(DecodeSetup)
_SEED = integer(lo=0, hi=2**32)

# ---- the printed reports in the language in force (a CJK character is two columns wide)
_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*")


def _wide(c: str) -> bool:
    return display_width(c) == 2


def _align(row: str, english: str) -> str:
    """A translated table row, ``row``, with spaces put in so that each number after the first
    gap (two spaces) of ``english``, the same row in English, ends in the same display column as
    there: the spaces widen a gap of the row, or stand before the number's word (``[30``,
    ``(P99``); where the row is wider, its gaps give up their extra spaces. English comes back
    as it is.

    >>> _align("連續  最忙 GPU 1.59x，NIC 1.38x", "contiguous  busiest GPU 1.59x, busy NIC 1.38x")
    '連續           最忙 GPU 1.59x，NIC      1.38x'
    """
    gap = re.search(r"\S {2,}", english)
    if row == english or gap is None:
        return row
    targets = [display_width(english[:m.end()]) for m in _NUMBER.finditer(english, gap.end())]
    found = list(_NUMBER.finditer(row))[-len(targets):] if targets else []
    if len(found) != len(targets):
        return row
    out, pos = "", 0
    for m, target in zip(found, targets, strict=True):
        start = m.start()
        while start > pos and not row[start - 1].isspace() and not _wide(row[start - 1]):
            start -= 1  # the number's word: [30, (P99
        segment, word = row[pos:start], row[start:m.end()]
        runs = [r.end() for r in re.finditer(r" {2,}", segment)]
        at = runs[-1] if runs else len(segment)
        more = target - display_width(out + segment + word)
        if more > 0:
            segment = segment[:at] + " " * more + segment[at:]
        for r in reversed(list(re.finditer(r" {2,}", segment)) if more < 0 else []):
            cut = min(-more, len(r.group()) - 1)
            segment, more = segment[:r.start()] + segment[r.start() + cut:], more + cut
        out, pos = out + segment + word, m.end()
    return out + row[pos:]


def _one_line(label: str) -> str:
    """A label of :data:`ABLATION` (two lines) on one line in the language in force: each line
    break a space, or nothing between two CJK characters.

    >>> _one_line("+ NIC-aware\\nplacement")
    '+ NIC-aware placement'
    """
    lines = _(label).split("\n")
    out = lines[0]
    for line in lines[1:]:
        out += ("" if out and line and _wide(out[-1]) and _wide(line[0]) else " ") + line
    return out


@arguments(setup=_SETUP, seed=_SEED)
def step_skew(setup, seed: int = 0) -> SimpleNamespace:
    """Section 1: one decode step of ``setup`` with a skewed popularity (busiest / median = 8):
    ``pop``, the routed ``ids``, each expert's token ``counts`` and the expected ``load``."""
    n_tok = setup.n_gpus * setup.tokens_per_gpu
    pop = drifting_popularity(setup.n_experts, 1, 8.0, seed=seed)[0]
    ids = sample_routing(pop, n_tok, setup.k, seed=seed + 1)
    counts = np.bincount(ids.ravel(), minlength=setup.n_experts)
    load = pop * n_tok * setup.k  # expected tokens per expert: what a moving average would predict
    report = "\n".join([
        _("popularity: busiest / median = {pop:.1f}; this step's token counts: {counts:.1f} "
          "(model)").format(pop=load_ratio(pop), counts=load_ratio(counts)),
        _("the busiest expert alone: {share:.2f} of one GPU's fair share of the tokens (model)")
        .format(share=load.max() / (load.sum() / setup.n_gpus))])
    return SimpleNamespace(pop=pop, ids=ids, counts=counts, load=load, report=report)


def _ratios(p, load) -> tuple:
    """Busiest GPU, NIC and host of placement ``p`` under ``load``, each over the mean."""
    g, c, h = gpu_loads(p, load), nic_loads(p, load), host_loads(p, load)
    return g.max() / g.mean(), c.max() / c.mean(), h.max() / h.mean()


@arguments(setup=_SETUP)
def placement_loads(setup, load) -> SimpleNamespace:
    """Section 1: contiguous, EPLB and NIC-aware placements of ``setup`` planned for ``load``
    (tokens per expert); each one's busiest GPU and NIC over the mean (``gpu_max``,
    ``nic_max``); ``floor``: the least busiest-GPU ratio any placement without replicas can reach
    (:func:`uneven.ep.placement.busiest_gpu_floor`, over the mean)."""
    placements = {kind: make_placement(kind, setup, load) for kind in PLACEMENTS}
    floor = busiest_gpu_floor(load, setup.n_gpus) / (float(np.sum(load)) / setup.n_gpus)
    gpu_max, nic_max, lines = {}, {}, []
    row = N_("{name} busiest GPU {gpu:.2f}x mean, busiest NIC {nic:.2f}x mean, two heaviest "
             "GPUs: {heaviest} (model)")
    for name, p in placements.items():
        gpu_max[name], nic_max[name], _host = _ratios(p, load)
        cells = dict(gpu=gpu_max[name], nic=nic_max[name],
                     heaviest=np.argsort(-gpu_loads(p, load))[:2].tolist())
        lines.append(_align(_(row).format(name=pad(_(name), 11), **cells),
                            row.format(name=f"{name:11s}", **cells)))
    m = setup.n_slots // setup.n_gpus
    lines.append(_("no placement without spare slots beats {floor:.2f}x: the busiest expert plus "
                   "the {n} lightest (model)").format(floor=floor, n=m - 1))
    return SimpleNamespace(placements=placements, gpu_max=gpu_max, nic_max=nic_max, floor=floor,
                           report="\n".join(lines))


@arguments(setup=_SETUP)
def replica_rows(setup, load) -> SimpleNamespace:
    """Section 2: EPLB's hierarchical and global policies with ``setup``'s slots, and EPLB and
    NIC-aware placement with one spare slot per GPU (``ratios[name] = (busiest GPU, NIC, host
    over the mean)``), and the price of the spare slot in weights read per layer."""
    hw = setup.hw
    spare = replace(setup, n_slots=setup.n_slots + setup.n_gpus)
    with handed_on("setup"):  # DeepSeek-V3's 8 expert groups, packed onto the hosts
        phy2log = rebalance_experts(check_loads("load", load, shape=(setup.n_experts,))[None],
                                    setup.n_slots, 8, setup.n_hosts, setup.n_gpus)[0][0]
    hier, glob, nic = (N_("EPLB hierarchical, {slots} slots"), N_("EPLB global, {slots} slots"),
                       N_("NIC-aware, {slots} slots"))
    rows = {(hier, setup.n_slots): placement_from_phy2log(
                phy2log, setup.n_experts, setup.n_gpus, gpus_per_node=hw.gpus_per_node,
                gpus_per_nic=hw.gpus_per_nic),
            (glob, setup.n_slots): make_placement("EPLB", setup, load),
            (glob, spare.n_slots): make_placement("EPLB", spare, load),
            (nic, spare.n_slots): make_placement("NIC-aware", spare, load)}
    ratios = {name.format(slots=n): _ratios(p, load) for (name, n), p in rows.items()}
    per_gpu = spare.n_slots // setup.n_gpus
    weights_per_layer = per_gpu * hw.expert_bytes / hw.hbm_bw
    row = N_("{name} busiest GPU {gpu:.3f}, NIC {nic:.3f}, host {host:.3f} (x mean, model)")
    lines = []
    for (name, n), r in zip(rows, ratios.values(), strict=True):
        cells = dict(gpu=r[0], nic=r[1], host=r[2])
        lines.append(_align(_(row).format(name=pad(_(name).format(slots=n), 29), **cells),
                            row.format(name=f"{name.format(slots=n):29s}", **cells)))
    lines.append(_("price: {n} instead of {fewer} experts' weights read per GPU and layer, "
                   "{time:.0f} instead of {less:.0f} µs at {hbm:.1f} TB/s").format(
        n=per_gpu, fewer=per_gpu - 1, time=to_us(weights_per_layer),
        less=to_us(weights_per_layer) * (per_gpu - 1) / per_gpu, hbm=hw.hbm_bw / 1e12))
    return SimpleNamespace(ratios=ratios, report="\n".join(lines))


@arguments(setup=_SETUP, n_steps=integer(lo=50, hi=2000))
def swap_runs(setup, n_steps: int = 120) -> SimpleNamespace:
    """Section 3: EPLB, NIC-aware, and NIC-aware with per-step swaps over ``n_steps`` drifting
    steps (``runs``); the busiest / mean NIC over the first 20 and last 50 steps (``early``,
    ``late``), how much the swaps gain per step (``gap``), what one swap costs over NVLink
    (``per_swap``, s) against a decode step of 58 MoE layers (``step_time``, s)."""
    runs = {name: simulate_decode(setup, placement=kind, swaps=sw, n_steps=n_steps, seed=0)
            for name, kind, sw in (("EPLB", "EPLB", False), ("NIC-aware", "NIC-aware", False),
                                   ("NIC-aware + swaps", "NIC-aware", True))}
    early = {name: r.nic_ratio[:20].mean() for name, r in runs.items()}
    late = {name: r.nic_ratio[-50:].mean() for name, r in runs.items()}
    hw, sw = setup.hw, runs["NIC-aware + swaps"]
    per_swap = hw.expert_bytes / hw.nvlink_bw
    step_time = 58 * sw.median()
    def shown(ratios):  # the runs' names as the notebook shows them, the keys stay English
        return str({_(k): round(float(v), 2) for k, v in ratios.items()})

    report = "\n".join([
        _("swaps: {n} in {steps} steps ({rate:.2f} per step, for {hosts} hosts); each copies two "
          "{mb:.0f} MB experts in opposite directions over NVLink: {time:.0f} µs").format(
            n=sw.swaps.sum(), steps=n_steps, rate=sw.swaps.sum() / n_steps, hosts=setup.n_hosts,
            mb=hw.expert_bytes / 1e6, time=to_us(per_swap)),
        _("one decode step runs 58 MoE layers: about {ms:.1f} ms (model), so a copy hides behind "
          "the other layers, hundreds of times over").format(ms=to_us(step_time) / 1e3),
        _("busiest / mean NIC, first 20 steps: {early} \nlast 50 steps: {late} (model)").format(
            early=shown(early), late=shown(late))])
    return SimpleNamespace(
        runs=runs, early=early, late=late,
        gap=runs["NIC-aware"].nic_ratio - runs["NIC-aware + swaps"].nic_ratio,
        per_swap=per_swap, step_time=step_time, report=report)


@arguments(setup=_SETUP, placement=instance(Placement))
def relay_step(setup, placement, expert_ids) -> SimpleNamespace:
    """Section 4: one routed step of ``setup`` (``expert_ids``, ``[tokens, k]``, tokens in GPU
    order) on ``placement``, one copy per expert (``direct``) and through the same-index relay
    (``relay``); ``src``: each token's GPU."""
    src = np.repeat(np.arange(setup.n_gpus), setup.tokens_per_gpu)
    slots = route_to_slots(placement, expert_ids, src)
    direct = decode_traffic(placement, slots, src, "direct")
    relay = decode_traffic(placement, slots, src, "relay")
    n_hosts = setup.n_hosts
    report = "\n".join([
        _("closed form: {hosts:.2f} remote hosts against {experts:.1f} remote experts per token")
        .format(hosts=expected_remote_hosts(setup.k, n_hosts),
                experts=setup.k * (n_hosts - 1) / n_hosts),
        _("this step (skewed routing): {relay:.2f} RDMA copies per token with the relay, "
          "{direct:.2f} with one copy per expert: {ratio:.2f}x fewer (model)").format(
            relay=relay.remote_hosts.mean(), direct=direct.remote_slots.mean(),
            ratio=direct.rdma_copies / relay.rdma_copies)])
    return SimpleNamespace(src=src, direct=direct, relay=relay, report=report)


@arguments(placement=instance(Placement), seed=_SEED)
def shuffled_host(placement, expert_ids, src_gpu, seed: int = 0) -> SimpleNamespace:
    """Section 4: ``placement`` with host 0's experts moved between its GPUs, and the same step
    (``expert_ids`` routed from ``src_gpu``) on it through the relay and directly (``relay``,
    ``direct``)."""
    rng = np.random.default_rng(seed)
    host0 = placement.gpus_per_node * (placement.phy2log.size // placement.n_gpus)
    shuffled = placement.phy2log.copy()
    shuffled[:host0] = rng.permutation(shuffled[:host0])  # move experts between host 0's GPUs
    moved = placement_from_phy2log(shuffled, placement.logcnt.size, placement.n_gpus,
                                   gpus_per_node=placement.gpus_per_node,
                                   gpus_per_nic=placement.gpus_per_nic)
    slots = route_to_slots(moved, expert_ids, src_gpu)
    return SimpleNamespace(relay=decode_traffic(moved, slots, src_gpu, "relay"),
                           direct=decode_traffic(moved, slots, src_gpu, "direct"))


@arguments(placement=instance(Placement), direct=instance(DecodeTraffic),
           relay=instance(DecodeTraffic))
def layer_report(placement, direct, relay) -> str:
    """Section 5: one decode layer, ``direct`` and ``relay`` traffic of one step on
    ``placement``, with and without per-expert overlap."""
    if direct.mode != "direct" or relay.mode != "relay":
        raise ValueError(f"direct and relay must be traffic of mode 'direct' and 'relay'; got "
                         f"{direct.mode!r} and {relay.mode!r}")
    lines = []
    row = N_("{name} overlap={overlap:5s}: inputs all in at {inputs:4.0f} µs, busiest GPU's "
             "experts {experts:3.0f} µs, layer {layer:4.0f} µs, exposed communication "
             "{exposed:4.0f} µs (model)")
    for name, t in (("direct", direct), ("relay", relay)):
        for overlap in (False, True):
            with handed_on(name):
                lr = decode_layer(placement, t, overlap=overlap)
            cells = dict(overlap=str(overlap), inputs=to_us(lr.dispatch_end),
                         experts=to_us(lr.compute_time.max()), layer=to_us(lr.layer_time),
                         exposed=to_us(lr.exposed_comm))
            lines.append(_align(_(row).format(name=pad(_(name), 6), **cells),
                                row.format(name=f"{name:6s}", **cells)))
    return "\n".join(lines)


@arguments(setup=_SETUP, rungs=integer(lo=1, hi=len(ABLATION)), n_steps=integer(lo=1, hi=2000),
           seed=_SEED, start=integer(lo=0, hi=100_000), relay_sync=real(lo=0.0, hi=1.0, unit="s"),
           relay_copy=real(lo=0.0, hi=1.0, unit="s"))
def ablation_runs(setup, rungs: int = len(ABLATION), *, n_steps: int = 60, seed: int = 1,
                  start: int = 0, relay_sync: float = 0.0, relay_copy: float = 0.0
                  ) -> SimpleNamespace:
    """Sections 6-7: the first ``rungs`` rungs of :data:`ABLATION` run for ``n_steps`` from step
    ``start`` (``runs``), and per rung, µs: median and P99 exposed communication (``med``,
    ``p99``), median layer (``layer``), the busiest GPU's experts (``busiest``), and the busiest
    / mean NIC (``nic``); the cut of exposed communication and of the layer from the first rung
    to the last (``cut``, ``cut_layer``) and the table beside the chapter's (``report``).
    ``relay_sync``, ``relay_copy`` (s): the relay's own work in the rungs that use it (see
    :func:`uneven.ep.decode.decode_layer`; 0 by default)."""
    runs = {name: simulate_decode(setup, n_steps=n_steps, seed=seed, start=start,
                                  relay_sync=relay_sync, relay_copy=relay_copy,
                                  **_decode_kw(kw)) for name, kw in ABLATION[:rungs]}
    abl = SimpleNamespace(
        runs=runs, nic=[r.nic_ratio.mean() for r in runs.values()],
        med=[to_us(r.median("exposed_comm")) for r in runs.values()],
        p99=[to_us(r.p99("exposed_comm")) for r in runs.values()],
        layer=[to_us(r.median()) for r in runs.values()],
        busiest=[to_us(np.median(r.layer_time - r.exposed_comm)) for r in runs.values()])
    row = N_("{name} exposed {med:4.0f} µs (P99 {p99:4.0f}), layer {layer:4.0f} µs, busiest "
             "GPU's experts {busiest:4.0f} µs, busiest / mean NIC {nic:.2f} (model)")
    lines = []
    for name, m, q, lt, b, n in zip(runs, abl.med, abl.p99, abl.layer, abl.busiest, abl.nic,
                                    strict=True):
        cells = dict(med=m, p99=q, layer=lt, busiest=b, nic=n)
        lines.append(_align(_(row).format(name=pad(_one_line(name), 36), **cells),
                            row.format(name=f"{name.replace(chr(10), ' '):36s}", **cells)))
    abl.cut, abl.cut_layer = 1 - abl.med[-1] / abl.med[0], 1 - abl.layer[-1] / abl.layer[0]
    lines.append(_("total cut (model): exposed communication {cut:.0%}, layer {cut_layer:.0%}; "
                   "the paper: 190.21 → 134.00 µs [chapter], a cut of {paper:.1%} [derived from "
                   "chapter]").format(cut=abl.cut, cut_layer=abl.cut_layer,
                                      paper=1 - 134.00 / 190.21))
    abl.report = "\n".join(lines)
    return abl


@arguments(stale=namespace("runs", "nic", "layer", "med", made_by="ablation_runs"))
def stale_report(stale) -> str:
    """Section 6: the rungs of ``stale`` (from :func:`ablation_runs` with ``start`` after the
    plan) as they run on the drifted popularity."""
    row = N_("100 steps after planning: {name} busiest / mean NIC {nic:.2f}, layer {layer:4.0f} "
             "µs (P99 {p99:4.0f}), exposed {med:4.0f} µs (model)")
    lines = []
    for name, n, lt, m, r in zip(stale.runs, stale.nic, stale.layer, stale.med,
                                 stale.runs.values(), strict=True):
        cells = dict(nic=n, layer=lt, p99=to_us(r.p99()), med=m)
        lines.append(_align(_(row).format(name=pad(_one_line(name), 35), **cells),
                            row.format(name=f"{name.replace(chr(10), ' '):35s}", **cells)))
    return "\n".join(lines)


#: The paper's communication time against DeepEP's default, EP32 on H20: (DeepEP's default,
#: all mechanisms), µs [chapter].
PAPER_COMM = (190.21, 134.00)


@arguments(n_steps=integer(lo=1, hi=2000), seed=_SEED)
def matched_ablation(*, n_steps: int = 60, seed: int = 1) -> SimpleNamespace:
    """Section 6: calibrate, then compare. The tokens per GPU at which the model's DeepEP default
    (contiguous, one copy per expert) has the paper's exposed communication, 190.21 µs
    (``batch``; ``base``: the model's value there, µs; :func:`uneven.ep.decode.matching_batch`);
    the ablation at that batch (``abl``, from :func:`ablation_runs`); the relay sync per crossing
    that makes the last rung equal the paper's 134.00 µs (``sync``, s;
    :func:`uneven.ep.decode.relay_cost_for`), the relay rungs' medians with it (``fitted``, µs,
    one per rung of :data:`ABLATION`), and the sync at which the relay stops paying, its rung no
    faster than the one before (``break_even``, s); ``rows``: (quantity, paper, model,
    model / paper) and ``report``."""
    before, after = PAPER_COMM
    batch, base = matching_batch(before * 1e-6, lo=1, hi=64, n_steps=n_steps, seed=seed,
                                 placement="contiguous")
    setup = DecodeSetup(tokens_per_gpu=batch)
    abl = ablation_runs(setup, n_steps=n_steps, seed=seed)
    kw = [_decode_kw(k) for _, k in ABLATION]
    relay = next(i for i, k in enumerate(kw) if k.get("mode") == "relay")
    common = dict(n_steps=n_steps, seed=seed)
    sync = relay_cost_for(after * 1e-6, setup, cost="relay_sync", **common, **kw[-1])
    fitted = list(abl.med[:relay]) + [
        to_us(simulate_decode(setup, relay_sync=sync, **common, **k).median("exposed_comm"))
        for k in kw[relay:]]
    break_even = relay_cost_for(abl.med[relay - 1] * 1e-6, setup, cost="relay_sync", **common,
                                **kw[relay])
    # the last rung against itself with one copy per expert: what the relay is worth there
    direct_final = simulate_decode(setup, **common, **{**kw[-1], "mode": "direct"}
                                   ).median("exposed_comm")
    break_even_final = {c: relay_cost_for(direct_final, setup, cost=c, **common, **kw[-1])
                        for c in ("relay_sync", "relay_copy")}
    quantities = (N_("DeepEP default, exposed communication (µs)"),
                  N_("all mechanisms, relay free (µs)"), N_("cut from DeepEP's default (%)"),
                  N_("all mechanisms, relay sync {sync:.0f} µs (µs)"))
    values = ((before, abl.med[0]), (after, abl.med[-1]),
              (100 * (1 - after / before), 100 * abl.cut), (after, fitted[-1]))
    rows = [(q.format(sync=to_us(sync)), p, m, m / p)
            for q, (p, m) in zip(quantities, values, strict=True)]
    lines = [_("matched batch: {batch} tokens per GPU, where the model's DeepEP default exposes "
               "{base:.1f} µs against the paper's {paper:.2f} [chapter] (model)").format(
                 batch=batch, base=to_us(base), paper=before),
             f"{pad(_('quantity'), 46)} {pad(_('paper [chapter]'), 15, '>')} "
             f"{pad(_('model', 'column'), 7, '>')} {pad(_('model / paper'), 13, '>')}"]
    lines += [f"{pad(_(q).format(sync=to_us(sync)), 46)} {p:15.1f} {m:7.1f} {r:13.2f}"
              for q, (_q, p, m, r) in zip(quantities, rows, strict=True)]
    lines.append(_("solved (model): {sync:.1f} µs of relay sync per crossing gives {paper:.2f} "
                   "µs, (134.00 − {free:.1f}) / 2 = {half:.1f}: the sync sits on the critical "
                   "path twice").format(sync=to_us(sync), paper=after, free=abl.med[-1],
                                        half=(after - abl.med[-1]) / 2))
    lines.append(_("break-even (model), relay rung without overlap: {before:.0f} µs before it, "
                   "{solved:.0f} µs with the solved sync; the relay pays only below {sync:.1f} "
                   "µs of sync").format(before=abl.med[relay - 1], solved=fitted[relay],
                                        sync=to_us(break_even)))
    lines.append(_("break-even (model), all mechanisms: one copy per expert exposes {direct:.1f} "
                   "µs, the free relay {free:.1f}; the relay pays only below {sync:.2f} µs of "
                   "sync per crossing or {copy:.3f} µs per forwarded copy").format(
        direct=to_us(direct_final), free=abl.med[-1],
        sync=to_us(break_even_final["relay_sync"]), copy=to_us(break_even_final["relay_copy"])))
    return SimpleNamespace(batch=batch, base=to_us(base), setup=setup, abl=abl, sync=sync,
                           fitted=fitted, break_even=break_even, relay_rung=relay,
                           direct_final=to_us(direct_final), break_even_final=break_even_final,
                           rows=rows, report="\n".join(lines))


#: Section 6's leave-one-out: each mechanism of the last rung of :data:`ABLATION`, and the
#: keywords that take it away.
WITHOUT = {N_("NIC-aware placement"): dict(placement="contiguous"),
           N_("NVLink swaps"): dict(swaps=False), N_("relay"): dict(mode="direct"),
           N_("per-expert overlap"): dict(overlap=False),
           N_("SM-free transport"): dict(transport="SM-resident")}


@arguments(setup=_SETUP, n_steps=integer(lo=1, hi=2000), seed=_SEED)
def leave_one_out(setup, *, n_steps: int = 60, seed: int = 1) -> SimpleNamespace:
    """Section 6: the last rung of :data:`ABLATION` (``all``, median exposed communication, µs)
    and the same with one mechanism of :data:`WITHOUT` taken away (``without[name]``, µs);
    ``change[name]``: what taking it away adds (µs, ``without - all``), which does not depend on
    the order of the rungs; ``report``.

    >>> t = leave_one_out(DecodeSetup(n_hosts=2, tokens_per_gpu=4), n_steps=2)
    >>> list(t.without) == list(WITHOUT)
    True
    """
    full = _decode_kw(ABLATION[-1][1])
    everything = to_us(simulate_decode(setup, n_steps=n_steps, seed=seed, **full)
                       .median("exposed_comm"))
    without = {name: to_us(simulate_decode(setup, n_steps=n_steps, seed=seed,
                                           **_decode_kw({**ABLATION[-1][1], **drop}))
                           .median("exposed_comm"))
               for name, drop in WITHOUT.items()}
    change = {name: v - everything for name, v in without.items()}
    lines = [_("{tokens} tokens per GPU, all mechanisms: exposed communication {exposed:.1f} µs "
               "(model)").format(tokens=setup.tokens_per_gpu, exposed=everything),
             f"{pad(_('taken away'), 22)} {pad(_('exposed (µs)'), 12, '>')} "
             f"{pad(_('change (µs)'), 12, '>')}"]
    lines += [f"{pad(_(name), 22)} {without[name]:12.1f} {change[name]:+12.1f}"
              for name in WITHOUT]
    return SimpleNamespace(all=everything, without=without, change=change,
                           report="\n".join(lines) + "\n(model)")


@arguments(setup=_SETUP)
def transport_table(setup) -> SimpleNamespace:
    """Section 7: the median exposed communication (s) of SM-resident and SM-free transports,
    skewed (contiguous, direct) and balanced (NIC-aware, swaps, relay), all with overlap:
    ``table[(balance, transport)]``; ``gain`` (s) and ``rel`` (share) of the better transport."""
    table = {}
    for bal, kw in ((N_("skewed", "balance"), dict(placement="contiguous")),
                    (N_("balanced", "balance"), dict(placement="NIC-aware", swaps=True,
                                                     mode="relay"))):
        for name, tr in TRANSPORTS.items():
            table[bal, name] = simulate_decode(setup, n_steps=40, seed=2, overlap=True, **kw,
                                               transport=tr).median("exposed_comm")
    gain = {b: table[b, "SM-resident"] - table[b, "SM-free"] for b in ("skewed", "balanced")}
    rel = {b: gain[b] / table[b, "SM-resident"] for b in gain}
    shown = {_(b, "balance"): f"-{to_us(gain[b]):.0f} µs ({rel[b]:.0%})" for b in gain}
    report = _("{tokens} tokens per GPU: {gains} (model)").format(
        tokens=setup.tokens_per_gpu, gains=str(shown))
    return SimpleNamespace(table=table, gain=gain, rel=rel, report=report)


#: Section 8's transport and overlap options.
BATCH_OPTIONS = {N_("one copy per expert"): dict(mode="direct"),
                 N_("one copy per expert, overlap"): dict(mode="direct", overlap=True),
                 "relay": dict(mode="relay"),
                 N_("relay, overlap"): dict(mode="relay", overlap=True)}


@arguments(batches=items(integer(lo=1, hi=1024), hi=8))
def batch_sweep(batches) -> SimpleNamespace:
    """Section 8: the median layer time (s) of each option of :data:`BATCH_OPTIONS` at each batch
    (tokens per GPU, ``times[option]``), the best per batch, and what overlap saves the relay and
    the relay saves one copy per expert (``gain_overlap``, ``gain_relay``)."""
    times = {label: [] for label in BATCH_OPTIONS}
    for b in batches:
        s = DecodeSetup(tokens_per_gpu=b)
        for label, kw in BATCH_OPTIONS.items():
            r = simulate_decode(s, placement="NIC-aware", swaps=True, n_steps=20, seed=3, **kw)
            times[label].append(r.median())
    n = len(batches)
    best = [min(BATCH_OPTIONS, key=lambda lab: times[lab][i]) for i in range(n)]
    lines = [f"{pad(_('tokens/GPU'), 10, '>')} | "
             + " | ".join(pad(_(lab), 28, ">") for lab in BATCH_OPTIONS)
             + f" | {_('best', 'column')}"]
    lines += [f"{b:10d} | "
              + " | ".join(f"{to_us(times[lab][i]):25.0f} µs" for lab in BATCH_OPTIONS)
              + f" | {_(best[i])}" for i, b in enumerate(batches)]
    gain_overlap = [1 - times["relay, overlap"][i] / times["relay"][i] for i in range(n)]
    gain_relay = [1 - times["relay"][i] / times["one copy per expert"][i] for i in range(n)]
    lines.append(_("overlap saves {overlap} of the relay's layer time; the relay saves {relay} of "
                   "one copy per expert's (model)").format(
        overlap=str([f"{g:.0%}" for g in gain_overlap]),
        relay=str([f"{g:.0%}" for g in gain_relay])))
    return SimpleNamespace(times=times, best=best, gain_overlap=gain_overlap,
                           gain_relay=gain_relay, report="\n".join(lines))


def deepep_ll_check() -> SimpleNamespace:
    """Section 10: DeepEP's low-latency table (:data:`DEEPEP_LL_TABLE`) beside the model's
    isolated dispatch and combine; ``errs``: the relative errors against today's table."""
    # "Feb 2025" stays as it is: Chinese writes the month after the year (2025 年 2 月), and
    # the year ends the column in both editions
    lines = [f"{'EP':>4s} | {pad(_('DeepEP now'), 13, '>')} | {'Feb 2025':>11s} | "
             f"{pad(_('model', 'column'), 11, '>')} [repo vs model]"]
    errs = []
    for ep, (d, c, d0, c0) in DEEPEP_LL_TABLE.items():
        md_, mc = (to_us(x) for x in isolated_phases(ep // 8))
        errs += [md_ / d - 1, mc / c - 1]
        lines.append(f"{ep:4d} | {d:5d} / {c:5d} | {d0:4d} / {c0:4d} | {md_:4.0f} / {mc:4.0f}")
    return SimpleNamespace(errs=errs, report="\n".join(lines))


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "BalanceState": "BalancingState",
    "balance_state": "balancing_state",
    "draw_balance": "draw_balancing",
})
