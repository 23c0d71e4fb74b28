"""Notebook 03 (Insights into DeepSeek-V3): EP dispatch and combine on an H800-like group.

The explorer (:func:`deepseek_explorer`) and the notebook's figure recipes, which draw values the
notebook computed with :mod:`uneven.ep.model` and :mod:`uneven.fabric`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .. import plots
from .._fields import Checked, arguments, array, integer, items, mapping, real
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_choice,
    check_instance,
    check_int,
    check_real,
)
from ..i18n import gettext as _
from ..topology import h800_cluster
from ..units import gbit_per_s, to_us
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider
from ._common import N_, check_dict, is_int, is_real, pad, show_grid
from ._common import curve as _curve

__all__ = ["DeepSeekState", "deepseek_state", "draw_deepseek", "deepseek_explorer", "DEEPEP",
           "DEEPEP_LABEL", "FABRIC_CASES", "deepep_table", "fabric_times", "decode_bound_curves",
           "bytes_per_token_figure", "deepep_figure", "planes_figure", "tpot_figure",
           "COPY_SETTINGS", "copy_table"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("ib_gbps", (200.0, 300.0, 400.0, 500.0, 600.0))
# Names drawn or printed in the language in force but kept in English in code: the resources a
# phase can be bound by (``deepep_benchmark``'s ``*_bound``) and the phases.
_SHOWN = (N_("forwarding", "bound"), N_("spine", "bound"))



@dataclass(frozen=True)
class DeepSeekState(Checked):
    """One EP dispatch + combine on an H800-like group, for the notebook 03 explorer.

    Times in s: busiest network-side and NVLink-side link of each phase, and each phase. Per-GPU
    bandwidths in bytes/s (DeepEP's definition and through the NIC). Copies per token. ``recv``:
    per GPU (nodes x 8), how long its busier incoming port (NIC or NVLink) is busy in dispatch, as
    a share of the phase. ``max_nodes``: the node cap actually used (at most the node count).
    """

    dispatch_nic: float = real(lo=0.0, unit="s")
    dispatch_nvl: float = real(lo=0.0, unit="s")
    combine_nic: float = real(lo=0.0, unit="s")
    combine_nvl: float = real(lo=0.0, unit="s")
    dispatch_time: float = real(lo=0.0, lo_open=True, unit="s")
    combine_time: float = real(lo=0.0, lo_open=True, unit="s")
    logical_bw: float = real(lo=0.0, unit="bytes/s")
    true_bw: float = real(lo=0.0, unit="bytes/s")
    ib_copies: float = real(lo=0.0)
    nvl_copies: float = real(lo=0.0)
    recv: np.ndarray = array(ndim=2, nonempty=True, lo=0.0)
    ratio: float = real(lo=0.0, lo_open=True)
    max_nodes: int = integer(lo=1)


@lru_cache(maxsize=4)
def _cached_routing(n_nodes, tokens_per_gpu, k, max_nodes, skew):
    from ..ep.model import route_ep_group

    return route_ep_group(n_nodes, tokens_per_gpu, k=k, max_nodes=max_nodes, skew=skew, seed=0)


def deepseek_state(ib_gbps: float = 400.0, nvl_ratio: float = 3.2, max_nodes: int = 4,
                   k: int = 8, skew: float = 0.0, dispatch_dtype: str = "fp8",
                   tokens_per_gpu: int = 512, n_nodes: int = 8) -> DeepSeekState:
    """Route ``tokens_per_gpu`` tokens per GPU on ``n_nodes`` H800-like nodes (256 experts,
    node-limited top-``k`` with at most ``max_nodes`` nodes per token, capped at the node count)
    and time dispatch and combine. ``ib_gbps``: NIC rate (Gb/s); ``nvl_ratio``: NVLink bandwidth
    per direction as a multiple of one NIC's; ``skew``: expert popularity spread (0 = uniform).
    Ranges: ``ib_gbps`` 1..1e9, ``nvl_ratio`` 0.1..1e6, ``skew`` 0..1000, ``tokens_per_gpu``
    up to 8192, ``n_nodes`` one of 2, 4, 8, 16."""
    from ..ep.model import ep_round

    ib = gbit_per_s(check_real("ib_gbps", ib_gbps, lo=1.0, hi=1e9, unit="Gb/s"))
    ratio = check_real("nvl_ratio", nvl_ratio, lo=0.1, hi=1e6)
    n_nodes = check_choice("n_nodes", n_nodes, (2, 4, 8, 16))
    max_nodes = min(check_int("max_nodes", max_nodes, lo=1), n_nodes)
    k = check_int("k", k, lo=1, hi=max_nodes * 256 // n_nodes)
    skew = check_real("skew", skew, lo=0.0, hi=1e3)
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1, hi=8192)
    dispatch_dtype = check_choice("dispatch_dtype", dispatch_dtype, ("fp8", "bf16"))
    topo = h800_cluster(n_nodes, nic_bw=ib, nvlink_bw=ratio * ib)
    routing = _cached_routing(n_nodes, tokens_per_gpu, k, max_nodes, skew)
    r = ep_round(topo, routing, dispatch_dtype=dispatch_dtype)
    T = routing.expert_ids.shape[0]
    bd = r.dispatch_traffic.bytes_per_copy
    loads = r.dispatch.loads
    recv = np.maximum(loads.grid("nic_down") / ib, loads.grid("nvl_in") / (ratio * ib))
    return DeepSeekState(
        r.dispatch.nic_time, r.dispatch.nvlink_time, r.combine.nic_time, r.combine.nvlink_time,
        r.dispatch.time, r.combine.time, r.logical_bw, r.true_bw,
        r.dispatch_traffic.network_bytes / T / bd, r.dispatch_traffic.nvlink_bytes / T / bd,
        recv / r.dispatch.time, ratio, max_nodes,
    )


@plots.recipe
def draw_deepseek(fig, state: DeepSeekState, **_values):
    """Bars: how long the busiest network-side and NVLink-side links are busy in dispatch and
    combine, as a share of each phase (the taller bar binds). Heatmap: how long each GPU's busier
    incoming port is busy in dispatch, as a share of the phase. Absolute times are in the title.
    Returns the layout key for :class:`uneven.widgets.Explorer`."""
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure)
    check_instance("state", state, DeepSeekState, "from deepseek_state(...)")
    nic_vals = [state.dispatch_nic / state.dispatch_time, state.combine_nic / state.combine_time]
    nvl_vals = [state.dispatch_nvl / state.dispatch_time, state.combine_nvl / state.combine_time]
    ytop = 1.4  # room for the legend above bars that reach 1

    def build(fig):
        ax_bar, ax_map = fig.subplots(1, 2, width_ratios=(1.0, 1.2))
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.08, right=0.97, bottom=0.16, top=0.74, wspace=0.3)
        x = np.arange(2)
        nic = ax_bar.bar(x - 0.18, [0, 0], 0.36, color=plots.color("blue"),
                         label=_("network side"))
        nvl = ax_bar.bar(x + 0.18, [0, 0], 0.36, color=plots.color("orange"), label="NVLink")
        ax_bar.set_xticks(x, [_("dispatch"), _("combine")])
        ax_bar.set_ylabel(_("busiest link busy / phase time"))
        ax_bar.legend(loc="upper center", ncol=2)
        ax_bar.set_title(_("which resource binds"))
        plots.link_heatmap(ax_map, state.recv, col_label="GPU", unit="B", vmax=1.0,
                           title=_("receive-side busy share per GPU"), colorbar=True)
        ax_map.figure.axes[-1].set_ylabel(_("share of the phase"))
        title = fig.suptitle("", fontsize=plots.PANEL, x=0.02, ha="left")
        image = ax_map.images[0]
        return {"nic": nic, "nvl": nvl, "ax_bar": ax_bar, "ax_map": ax_map, "image": image,
                "title": title, "dynamic": [*nic, *nvl, image, title]}

    art = reuse(fig, "ep", build)
    for bar, v in zip(art["nic"], nic_vals, strict=True):
        bar.set_height(v)
    for bar, v in zip(art["nvl"], nvl_vals, strict=True):
        bar.set_height(v)
    show_grid(art["image"], art["ax_map"], state.recv)
    art["ax_bar"].set_ylim(0, ytop)
    art["title"].set_text(_(
        "dispatch {dispatch:,.0f} µs, combine {combine:,.0f} µs (model) · per GPU {logical:.0f} "
        "GB/s DeepEP-style, {true:.0f} GB/s through the NIC\nnode cap M = {m}; per token "
        "{ib:.2f} IB and {nvl:.2f} NVLink copies; NVLink/NIC bandwidth {ratio:g}"
    ).format(dispatch=to_us(state.dispatch_time), combine=to_us(state.combine_time),
             logical=state.logical_bw / 1e9, true=state.true_bw / 1e9, m=state.max_nodes,
             ib=state.ib_copies, nvl=state.nvl_copies, ratio=state.ratio))
    return state.recv.shape  # the layout key: the background changes only with the grid


def deepseek_explorer(show: bool = True) -> Explorer:
    """Notebook 03's widget: bandwidths, node cap, experts per token, skew, dtype, size."""
    controls = {
        "ib_gbps": slider(100.0, 800.0, 50.0, 400.0, _("NIC (Gb/s)")),
        "nvl_ratio": slider(1.0, 10.0, 0.2, 3.2, "NVLink / NIC"),
        "max_nodes": int_slider(1, 8, 1, 4, _("node cap M")),
        "k": int_slider(4, 16, 1, 8, _("experts per token")),
        "skew": slider(0.0, 2.0, 0.25, 0.0, _("expert skew")),
        "dispatch_dtype": dropdown([(_("FP8 + scales"), "fp8"), ("BF16", "bf16")], "fp8",
                                   _("dispatch", "control")),
        "tokens_per_gpu": int_slider(128, 2048, 128, 512, _("tokens per GPU")),
        "n_nodes": dropdown([2, 4, 8, 16], 8, _("nodes")),
    }
    presets = {
        _("DeepSeek-V3 training (EP64)"): {"ib_gbps": 400.0, "nvl_ratio": 3.2, "max_nodes": 4,
                                           "k": 8, "skew": 0.0, "dispatch_dtype": "fp8",
                                           "n_nodes": 8},
        _("no node cap (M = 8)"): {"max_nodes": 8},
        _("13 experts, M = 4"): {"k": 13, "max_nodes": 4},
        _("NVLink 9× the NIC"): {"nvl_ratio": 9.0},
        _("a hot expert group (skew 2)"): {"skew": 2.0},
    }
    return explore(deepseek_state, draw_deepseek, controls, presets=presets, show=show,
                   figsize=(8.5, 3.4))




# --------------------------------------------------------------------------- figure recipes


@plots.recipe
def bytes_per_token_figure(caps, sweep: dict, limit: float):
    """IB and NVLink copies per token against the node cap M (left), and the NVLink fan-out per
    IB copy against the paper's experts per node (right), for several experts per token.

    ``sweep``: ``{k: [fanout_per_token(M, k) for M in caps]}``; ``limit``: the NVLink/IB ratio."""
    import matplotlib

    caps = _curve("caps", caps, lo=1.0)
    keys = ("ib_copies", "nvlink_copies", "experts_per_node")

    def row_ok(row):
        return isinstance(row, dict) and all(is_real(row.get(k), lo=0.0) for k in keys) and (
            row["ib_copies"] > 0)

    check_dict("sweep", sweep, key=is_int, item=lambda rows: isinstance(rows, (list, tuple))
               and len(rows) == caps.size and all(row_ok(r) for r in rows), hi=12)
    limit = check_real("limit", limit, lo=0.0, lo_open=True)
    fig, (ax_ib, ax_fan) = plots.figure(11, 3.9, ncols=2)
    cmap = matplotlib.colormaps[plots.RAMP]  # k is a number, not a named thing: one hue ramp
    shades = [cmap(0.15 + 0.65 * i / max(len(sweep) - 1, 1)) for i in range(len(sweep))]
    with plots.style():
        for (k, rows), col in zip(sweep.items(), shades, strict=True):
            ax_ib.plot(caps, [s["ib_copies"] for s in rows], color=col, marker="o",
                       label=f"IB, k = {k}")
            ax_ib.plot(caps, [s["nvlink_copies"] for s in rows], color=col, ls="--",
                       marker=".", label=f"NVLink, k = {k}")
            ax_fan.plot(caps, [s["nvlink_copies"] / s["ib_copies"] for s in rows], color=col,
                        marker="o", label=_("NVLink copies per IB copy, k = {k}").format(k=k))
            ax_fan.plot(caps, [s["experts_per_node"] for s in rows], color=col, ls=":",
                        label=_("experts per node reached, k = {k}").format(k=k))
        ax_ib.set_xlabel(_("node cap M"))
        ax_ib.set_ylabel(_("copies per token (× 7,392 B in FP8)"))
        ax_ib.set_title(_("copies per token (model)"))
        plots.legend(ax_ib, "below", ncol=3)
        ax_fan.axhline(limit, color=plots.color("red"), lw=1.2, zorder=1)
        ax_fan.annotate(_("NVLink / IB = {limit:g}: above it NVLink binds").format(limit=limit),
                        xy=(1.0, limit), xycoords=("axes fraction", "data"), xytext=(-4, 6),
                        textcoords="offset points", ha="right", va="bottom",
                        color=plots.color("red"), fontsize=plots.NOTE,
                        bbox=dict(fc="white", ec="none", alpha=0.85, pad=1))
        ax_fan.set_xlabel(_("node cap M"))
        ax_fan.set_ylabel(_("copies or experts"))
        ax_fan.set_title(_("fan-out per node (model)"))
        plots.legend(ax_fan, "below", ncol=2)
    return fig


@plots.recipe
def deepep_figure(rows: list, measured: dict, labels: dict, rows_fwd: list | None = None):
    """Per-GPU bandwidth against EP size, dispatch and combine: the model's DeepEP-style figure,
    the bytes through the NIC, DeepEP's measurements (``measured``: ``{ep: (dispatch,
    combine)}`` GB/s, labelled by ``labels``), and optionally the model with the forwarders'
    local writes counted (``rows_fwd``)."""
    need = [f"{ph}_{what}" for ph in ("dispatch", "combine") for what in ("logical_GBps",
                                                                          "true_GBps")]

    def rows_ok(name, value, bounds=True):
        if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 32 or not all(
            isinstance(r, dict) and is_int(r.get("ep")) and r["ep"] >= 1
            and all(is_real(r.get(k), lo=0.0) for k in need)
            and (not bounds or all(isinstance(r.get(f"{ph}_bound"), str)
                                   for ph in ("dispatch", "combine")))
            for r in value
        ):
            raise ValueError(f"{name} must be a list of deepep_benchmark rows; got {_show(value)}")

    rows_ok("rows", rows)
    eps = [r["ep"] for r in rows]
    check_dict("measured", measured, key=is_int, item=lambda v: isinstance(v, (tuple, list))
               and len(v) == 2 and all(is_real(x, lo=0.0) for x in v), hi=32)
    if not set(eps) <= set(measured):
        raise ValueError(f"measured must give (dispatch, combine) for every EP size {eps}; "
                         f"got {_show(sorted(measured))}")
    check_dict("labels", labels, item=lambda t: isinstance(t, str), lo=0, hi=32)
    if rows_fwd is not None:
        rows_ok("rows_fwd", rows_fwd, bounds=False)
        if len(rows_fwd) != len(rows):
            raise ValueError(f"rows_fwd must have one row per row of rows ({len(rows)}); got "
                             f"{len(rows_fwd)}")
    fig, axes = plots.figure(11, 4.2, ncols=2, sharey=True)
    with plots.style():
        for ax, phase, col in zip(axes, ("dispatch", "combine"), (0, 1), strict=True):
            ax.axhline(50, color=plots.color("grey"), lw=0.8, zorder=1,
                       label=_("NIC line rate, 50 GB/s"))
            ax.plot(eps, [r[f"{phase}_logical_GBps"] for r in rows], marker="o",
                    color=plots.color("model"), label=_("DeepEP's definition (model)"))
            if rows_fwd is not None:
                ax.plot(eps, [r[f"{phase}_logical_GBps"] for r in rows_fwd], marker="D",
                        ms=4, ls=":", color=plots.color("purple"),
                        label=_("… with forwarders' local writes (model)"))
            ax.plot(eps, [r[f"{phase}_true_GBps"] for r in rows], marker="o", ls="--",
                    color=plots.color("sky"), label=_("bytes through the NIC (model)"))
            tags = "; ".join(f"EP{e} {t}" for e, t in labels.items() if t != "repo")
            ax.plot(eps, [measured[e][col] for e in eps], marker="s", ls="-",
                    color=plots.color("paper"),
                    label=f"DeepEP, H800 + CX7 [repo{'; ' + tags if tags else ''}]")
            for r in rows:
                ax.annotate(_(r[f"{phase}_bound"], "bound"), (r["ep"], r[f"{phase}_logical_GBps"]),
                            textcoords="offset points", xytext=(0, 8), ha="center",
                            fontsize=plots.SMALL)
            ax.set_xscale("log", base=2)
            ax.set_xlim(12, 160)
            ax.set_xticks(eps, [str(e) for e in eps])
            ax.minorticks_off()
            ax.set_xlabel(_("EP size (GPUs)"))
            ax.set_ylim(0, 85)
            ax.set_title(_("{phase}, 4,096 tokens per GPU").format(phase=_(phase)))
        axes[0].set_ylabel(_("bandwidth per GPU (GB/s)"))
        plots.legend(axes[1], "right")
    return fig


@plots.recipe
def planes_figure(times: dict, sizes, curve: dict, *, deployed: int = 2048):
    """Left: all-to-all time on each fabric (``times``: ``{label: seconds}``, labels starting
    with 'MPFT' or 'MRFT'). Right: network cost per endpoint of what is built at each size
    (``curve`` from :func:`uneven.fabric.cost_per_endpoint_curve`)."""
    check_dict("times", times, key=lambda k: isinstance(k, str) and k.startswith(("MPFT",
                                                                                 "MRFT")),
               item=lambda t: is_real(t, lo=0.0), hi=16)
    sizes = as_int_array("sizes", sizes, ndim=1, lo=1024)
    if sizes.size == 0:
        raise ValueError("sizes must have at least one cluster size")
    if not isinstance(curve, dict):
        raise ValueError(f"curve must be a dict from cost_per_endpoint_curve; got "
                         f"{_show(curve)}")
    for key in ("single plane", "MPFT"):
        arr = as_float_array(f"curve[{key!r}]", curve.get(key), shape=sizes.shape,
                             allow_nan=True)
        if np.isnan(arr).all() and key == "MPFT":
            raise ValueError("curve['MPFT'] must reach at least one of the sizes (all NaN)")
    deployed = check_int("deployed", deployed, lo=1)
    fig, (ax_t, ax_c) = plots.figure(11.5, 3.8, ncols=2, width_ratios=(1.0, 1.2))
    with plots.style():
        labels = list(times)
        keys = ["MRFT, no PXN" if "no PXN" in lab else lab.split(" ")[0] for lab in labels]
        ax_t.barh(range(len(labels)), [times[lab] * 1e3 for lab in labels],
                  color=[plots.color(k) for k in keys])
        for y, lab in enumerate(labels):
            ax_t.text(times[lab] * 1e3, y, f" {times[lab] * 1e3:.2f}", va="center",
                      fontsize=plots.NOTE)
        ax_t.set_yticks(range(len(labels)), [_(lab) for lab in labels])
        ax_t.invert_yaxis()
        ax_t.set_xlim(0, max(times.values()) * 1e3 * 1.25)
        ax_t.set_xlabel(_("all-to-all, 256 GPUs, 1 MB per pair (ms, model)"))
        ax_t.set_title(_("speed: parity with PXN (spines 2:1)"))
        ax_t.grid(axis="y", visible=False)
        sizes = np.asarray(sizes)
        ax_c.plot(sizes, curve["single plane"] / 1e3, "o-", color=plots.color("FT3"),
                  label=_("single plane: FT2 while it fits, then FT3"))
        ax_c.plot(sizes, curve["MPFT"] / 1e3, "s--", color=plots.color("MPFT"),
                  label=_("MPFT, 8 planes of FT2"))
        top = np.nanmax(curve["MPFT"])
        last = sizes[~np.isnan(curve["MPFT"])].max()
        ax_c.annotate(_("MPFT's two layers reach {last:,} GPUs\n(theoretical [paper]; about "
                        "{deployed:,} deployed)").format(last=last, deployed=deployed),
                      (last, top / 1e3), xytext=(0, -34),
                      textcoords="offset points", ha="center", fontsize=plots.SMALL,
                      arrowprops=dict(arrowstyle="->", lw=0.6))
        ax_c.set_ylim(3.0, 8.5)
        ax_c.set_xscale("log", base=2)
        ax_c.set_xticks(sizes, [f"{s // 1024}K" for s in sizes])
        ax_c.minorticks_off()
        ax_c.set_xlabel(_("GPUs (endpoints)"))
        ax_c.set_ylabel(_("network cost per endpoint (k$)"))
        ax_c.set_title(_("cost of what is built, radix-64 switches [derived]"))
        plots.legend(ax_c, "inside")
    return fig


@plots.recipe
def tpot_figure(bws, tpot, tpot_lat, points: dict, *, latency_us: float):
    """Decode TPOT lower bound (s) against the EP bandwidth per GPU (GB/s), bandwidth only and
    with a latency per exchange; ``points``: ``{GB/s: ms}`` the paper's own numbers."""
    bws = _curve("bws", bws, lo=0.0)
    tpot = _curve("tpot", tpot, n=bws.size, lo=1e-300)
    tpot_lat = _curve("tpot_lat", tpot_lat, n=bws.size, lo=1e-300)
    check_dict("points", points, key=lambda b: is_real(b, lo=0.0),
               item=lambda t: is_real(t, lo=1e-300), hi=16)
    latency_us = check_real("latency_us", latency_us, lo=0.0, unit="µs")
    fig, ax = plots.figure(7.5, 3.4)
    with plots.style():
        ax.plot(bws, np.asarray(tpot) * 1e3, label=_("bandwidth only (the paper's bound)"))
        ax.plot(bws, np.asarray(tpot_lat) * 1e3, ls="--",
                label=_("+ {latency:g} µs per exchange (IB cross-leaf latency)").format(
                    latency=latency_us))
        ax.plot(list(points), list(points.values()), "s", color=plots.color("paper"),
                label=_("the paper's two points [paper]"))
        ax.set_xlabel(_("bandwidth per GPU for EP traffic (GB/s; 900 = a scale-up fabric)"))
        ax.set_ylabel(_("time per output token (ms)"))
        ax.set_yscale("log")
        ax.set_title(_("decode: EP communication's lower bound on TPOT"))
        plots.legend(ax, "inside", loc="upper right")
    return fig


# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.

#: DeepEP's normal-kernel bandwidths (GB/s per GPU, dispatch and combine; H800 + CX7) per EP
#: size: the README table (docs/legacy.md since PR #130) [repo]; EP128 is a third party's reading
#: of the ISCA paper's Fig. 7 [3rd] (:data:`DEEPEP_LABEL`).
DEEPEP = {16: (43, 43), 32: (58, 57), 64: (51, 50), 128: (45.3, 41.6)}
#: Where each row of :data:`DEEPEP` comes from.
DEEPEP_LABEL = {16: "repo", 32: "repo", 64: "repo", 128: "3rd"}


@arguments(rows=items(mapping(), hi=len(DEEPEP)), rows_fwd=items(mapping(), hi=len(DEEPEP)))
def deepep_table(rows: list, rows_fwd: list) -> SimpleNamespace:
    """Section 3: DeepEP's dispatch bandwidth beside the model's, links only (``rows``) and with
    the forwarders' local writes (``rows_fwd``, both from :func:`uneven.ep.deepep_benchmark`).
    ``ratio[ep] = (measured / links only, measured / with local writes)``; ``report``."""
    for name, rs in (("rows", rows), ("rows_fwd", rows_fwd)):
        for r in rs:
            if (r.get("ep") not in DEEPEP or not is_real(r.get("dispatch_logical_GBps"), lo=1e-9)
                    or not isinstance(r.get("dispatch_bound"), str)):
                raise ValueError(f"{name} must be rows of uneven.ep.deepep_benchmark at the EP "
                                 f"sizes of DEEPEP ({list(DEEPEP)}); got a row {_show(r)}")
    if [r["ep"] for r in rows] != [f["ep"] for f in rows_fwd]:
        raise ValueError("rows and rows_fwd must hold the same EP sizes in the same order; got "
                         f"{[r['ep'] for r in rows]} and {[f['ep'] for f in rows_fwd]}")
    lines = [f"{'EP':>5} | {pad(_('DeepEP disp / comb'), 19, '>')} | "
             f"{pad(_('model: links only'), 17, '>')} | {pad(_('+ local writes'), 14, '>')} | "
             f"{pad(_('measured / model'), 16, '>')}"]
    ratio = {}
    for r, f in zip(rows, rows_fwd, strict=True):
        d = DEEPEP[r["ep"]]
        ratio[r["ep"]] = (d[0] / r["dispatch_logical_GBps"], d[0] / f["dispatch_logical_GBps"])
        lines.append(f"EP{r['ep']:<3} | {d[0]:>7} / {d[1]:<5} [{DEEPEP_LABEL[r['ep']]}] | "
                     f"{r['dispatch_logical_GBps']:8.1f} "
                     f"{pad(_(r['dispatch_bound'], 'bound'), 8, '>')} | "
                     f"{f['dispatch_logical_GBps']:6.1f} "
                     f"{pad(_(f['dispatch_bound'], 'bound'), 7, '>')} | "
                     f"{ratio[r['ep']][0]:.2f} → {ratio[r['ep']][1]:.2f}")
    # calibrate: one efficiency for the NIC-bound rows DeepEP itself measured (EP32, EP64)
    fit_eps = [e for e in (32, 64) if e in ratio and DEEPEP_LABEL.get(e) == "repo"]
    eta = float(np.mean([ratio[e][0] for e in fit_eps])) if fit_eps else 1.0
    residual = {e: ratio[e][0] / eta - 1.0 for e in ratio}
    lines.append(_("one efficiency fitted to {eps} (NIC-bound, [repo]): η = {eta:.2f} of the "
                   "model's rate (model); measured / (η × model) − 1: {residuals}").format(
        eps=_(" and ").join(f"EP{e}" for e in fit_eps), eta=eta,
        residuals=_(", ").join(f"EP{e} {100 * v:+.0f}%" for e, v in residual.items())))
    return SimpleNamespace(ratio=ratio, eta=eta, residual=residual, report="\n".join(lines))


#: Section 2's settings for :func:`copy_table`: label -> (node cap M, experts per token k, nodes).
COPY_SETTINGS = {N_("DeepSeek-V3: M = 4, k = 8, 8 nodes"): (4, 8, 8),
                 N_("free routing: M = 8, k = 8"): (8, 8, 8),
                 N_("13 experts: M = 4, k = 13"): (4, 13, 8),
                 N_("32 experts on one node: M = 1, k = 32"): (1, 32, 8),
                 N_("the same on 4 nodes"): (1, 32, 4)}


def copy_table(settings: dict | None = None, n_tokens: int = 8192) -> SimpleNamespace:
    """Sections 1-2: per token, averaged over ``n_tokens`` tokens with i.i.d. scores, the copies
    one GPU makes under one copy per node: IB copies, NVLink copies (forwards on the other nodes
    plus the sends to its own node, which use no NIC), NVLink-buffer writes (DeepEP's count, the
    forwarders' writes to themselves included) and NVLink copies per IB copy, with the bound
    ``7 N / (N - 1)`` of an N-node cluster of 8-GPU nodes. ``settings``: label -> (M, k, nodes),
    default :data:`COPY_SETTINGS` (each an int triple, 2 to 256 nodes, 1 <= M <= nodes);
    ``n_tokens`` in [1, 2**20]. ``rows[label]`` is :func:`uneven.ep.fanout_per_token`'s dict."""
    from ..ep import fanout_per_token

    settings = COPY_SETTINGS if settings is None else settings
    check_dict("settings", settings, key=lambda k: isinstance(k, str), hi=12,
               item=lambda v: (isinstance(v, tuple) and len(v) == 3
                               and all(is_int(x) and 1 <= x <= 256 for x in v)
                               and v[2] >= 2 and v[0] <= v[2]))
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hi=1 << 20)
    rows = {label: fanout_per_token(m, k, n_nodes=n, n_tokens=n_tokens)
            for label, (m, k, n) in settings.items()}
    lines = [f"{pad(_('per token (model)'), 38)} {'IB':>5s} {'NVLink':>7s} "
             f"{pad(_('of which'), 9, '>')} {'NVL':>6s} {'NVLink / IB':>11s} "
             f"{pad(_('bound', 'column'), 6, '>')}",
             f"{'':38s} {pad(_('copies'), 5, '>')} {pad(_('copies'), 7, '>')} "
             f"{pad(_('own node'), 9, '>')} {pad(_('writes'), 6, '>')}"]
    for label, r in rows.items():
        n = settings[label][2]
        lines.append(f"{pad(_(label), 38)} {r['ib_copies']:5.2f} {r['nvlink_copies']:7.2f} "
                     f"{r['own_node_sends']:9.2f} {r['nvl_writes']:6.2f} "
                     f"{r['nvlink_copies'] / r['ib_copies']:11.2f} {7 * n / (n - 1):6.2f}")
    lines.append(_("(the bound holds on average over tokens; a sample's ratio scatters around "
                   "it)"))
    return SimpleNamespace(rows=rows, report="\n".join(lines))


#: Section 4's fabrics: label -> (fabric, cross-rail path) of :func:`uneven.topology.h800_cluster`.
FABRIC_CASES = {N_("MPFT (8 planes), PXN"): ("multi_plane", "pxn"),
                N_("MRFT (shared spines), PXN"): ("multi_rail", "pxn"),
                N_("MRFT (shared spines), no PXN"): ("multi_rail", "spine")}


@arguments(n_nodes=integer(lo=8, hi=256), nbytes=real(lo=0.0, hi=1e12, unit="bytes"),
           overs=items(real(lo=1.0, hi=64.0), hi=8))
def fabric_times(n_nodes: int = 32, nbytes: float = 1e6, overs=(1.0, 2.0)) -> SimpleNamespace:
    """Section 4: a uniform all-to-all of ``nbytes`` per pair on ``n_nodes`` H800 nodes (8 per
    leaf) on each fabric of :data:`FABRIC_CASES`, at each spine oversubscription of ``overs``:
    ``times[(label, over)]`` (s) and the printed list."""
    from ..collectives import all_to_all
    from ..topology import h800_cluster
    from ..units import to_ms

    times, lines = {}, []
    for over in overs:
        lines.append(_("spine oversubscription {over:g}:1").format(over=over))
        for label, (fabric, cr) in FABRIC_CASES.items():
            t = h800_cluster(n_nodes, fabric=fabric, cross_rail=cr, nodes_per_leaf=8,
                             oversubscription=over)
            times[label, over] = all_to_all(t, nbytes).time
            lines.append(f"  {pad(_(label), 30)} {to_ms(times[label, over]):7.2f} ms (model)")
    return SimpleNamespace(times=times, report="\n".join(lines))


@arguments(bws_gbyte=array(ndim=1, lo=1e-3, hi=1e6, nonempty=True, max_size=4096),
           latency=real(lo=0.0, hi=1.0, unit="s"))
def decode_bound_curves(bws_gbyte, latency: float = 3.7e-6) -> SimpleNamespace:
    """Section 5: the paper's decode bound (time per output token, s) at each bandwidth of
    ``bws_gbyte`` (GB/s), bytes only (``tpot``) and with ``latency`` (s) per exchange
    (``tpot_lat``)."""
    from ..ep.model import decode_tpot_bound
    from ..units import gbyte_per_s

    tpot = [decode_tpot_bound(gbyte_per_s(b)) for b in bws_gbyte]
    tpot_lat = [decode_tpot_bound(gbyte_per_s(b), latency_per_exchange=latency)
                for b in bws_gbyte]
    return SimpleNamespace(tpot=tpot, tpot_lat=tpot_lat)


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "EpExploreState": "DeepSeekState",
    "ep_explore_state": "deepseek_state",
    "draw_ep": "draw_deepseek",
})
