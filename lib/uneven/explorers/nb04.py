"""Notebook 04 (MegaScale-MoE): keep EP and SP inside the node, and hide the all-to-all in the GEMM.

The explorer (:func:`megascale_explorer`) and the notebook's figure recipes, which draw values the
notebook computed with :mod:`uneven.parallel_volumes`, :mod:`uneven.overlap` and
:mod:`uneven.schedulers.moe_layer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .. import plots
from .._fields import (
    Checked,
    any_value,
    arguments,
    check_fields,
    choice,
    instance,
    integer,
    items,
    mapping,
    real,
)
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
from ..i18n import gettext as _
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider, toggle
from ._common import N_, check_dict, curve, instances, is_real, pad

__all__ = ["MegaScaleState", "megascale_state", "draw_megascale", "megascale_explorer",
           "STRATEGY_LABELS", "volume_figure", "tile_figure", "layer_figure", "ablation_figure",
           "hiding_figure", "PAPER_ABLATION", "PAPER_TABLE3", "PAPER_SPEEDUP", "PAPER_MFU",
           "tp_layer", "layout_volumes", "volume_sweeps", "leave_node", "hiding_curves",
           "deepseek_hiding", "span", "tile_runs", "overlap_report", "ablation_report",
           "skewed_cluster", "memory_report", "scaling_table", "mfu_table", "eq2_latency",
           "calibrated_layers"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("h_ffn", (2048, 4096, 8192, 12288, 14336))

#: Display names of the layer strategies.
STRATEGY_LABELS = {"tp_tp": "TP+TP", "sp_ep": "SP+EP", "sp_agrs": "SP + EP by AG/RS"}


def _strategy(key: str) -> str:
    """The display name of strategy ``key`` in the language in force."""
    return _("SP + EP by AG/RS") if key == "sp_agrs" else STRATEGY_LABELS[key]

# Each strategy's colour: the palette's colour of its display name.
_STRATEGY_COLORS = {key: plots.color(label) for key, label in STRATEGY_LABELS.items()}
_ROWS = ("SMs", "NVLink", "NIC")
#: Largest time (s) a figure recipe draws: far beyond any layer, and far inside what the
#: plotting transforms handle without overflow.
_MAX_SECONDS = 1e6


def _label(x) -> bool:
    return isinstance(x, str) and len(x) <= 200


def _notes(name, value) -> tuple:
    if not isinstance(value, tuple) or len(value) > 16 or not all(_label(x) for x in value):
        raise ValueError(f"{name} must be a tuple of at most 16 short strings; got "
                         f"{_show(value)}")
    return value


@dataclass(frozen=True)
class MegaScaleState(Checked):
    """One layer (forward + backward, one micro-batch) for the notebook 04 explorer.

    ``timeline``: the chosen setting (:class:`uneven.schedulers.moe_layer.LayerTimeline`);
    ``baseline``: layer time (s) of TP+TP without overlap on the same shapes and hardware;
    ``r_nvlink`` / ``r_nic``: hiding ratio of the expert GEMM against an all-to-all over NVLink /
    the NIC (BF16, forward); ``volume``: bytes one GPU sends per layer (forward);
    ``strategy``, ``n``, ``notes``. Every field is checked when made directly.
    """

    timeline: object = instance("uneven.schedulers.moe_layer:LayerTimeline",
                                "from layer_timeline(...)")
    baseline: float = real(lo=0.0, lo_open=True, hi=_MAX_SECONDS, unit="s")
    r_nvlink: float = real(lo=0.0, hi=1e12)
    r_nic: float = real(lo=0.0, hi=1e12)
    volume: float = real(lo=0.0, hi=1e30, unit="bytes")
    strategy: str = choice(tuple(STRATEGY_LABELS))
    n: int = integer(lo=1, hi=8)
    notes: tuple = any_value(default=())

    def __post_init__(self):
        check_fields(self)
        if not self.timeline.layer_time <= 1000.0 * self.baseline:
            raise ValueError(f"baseline must be at least 1/1000 of the timeline's layer time "
                             f"{self.timeline.layer_time} s; got {self.baseline}")
        _notes("notes", self.notes)


def megascale_state(strategy: str = "sp_ep", inter_op: bool = True, intra_op: bool = True,
                    n: int = 8, m: int = 4, k: int = 3, h_ffn: int = 14336,
                    nvlink_gbps: float = 160.0, nic_gbps: float = 50.0,
                    peak_tflops: float = 989.0, n_tiles: int = 16, order: str = "sorted",
                    comm_sms: int = 8) -> MegaScaleState:
    """The Internal-352B layer (h = 4,096, 32 query heads, sequence 8,192, 32 experts) with
    ``m`` query heads per KV head, top-``k`` routing and expert size ``h_ffn`` on ``n`` GPUs of
    an H800-like node: NVLink and NIC bandwidths in GB/s per direction, ``peak_tflops`` dense,
    ``n_tiles`` per fused GEMM, token ``order`` ("sorted"/"random"), ``comm_sms`` SMs taken by
    communication beside compute. Ranges: ``n`` 2, 4 or 8; ``m`` 1, 2, 4 or 8; ``k`` 1..16;
    ``h_ffn`` 256..65,536; bandwidths 1..10,000 GB/s; ``peak_tflops`` 10..100,000;
    ``n_tiles`` 1..512; ``comm_sms`` 0..64.

    >>> s = megascale_state()
    >>> round(s.baseline / s.timeline.layer_time, 2), round(s.r_nvlink, 2)
    (1.53, 3.48)
    """
    from ..overlap import hiding_ratio
    from ..parallel_volumes import INTERNAL_352B, layer_volume
    from ..schedulers.moe_layer import H800_NODE, layer_timeline

    strategy = check_choice("strategy", strategy, tuple(STRATEGY_LABELS))
    inter_op = check_bool("inter_op", inter_op)
    intra_op = check_bool("intra_op", intra_op)
    n = check_choice("n", n, (2, 4, 8))
    m = check_choice("m", m, (1, 2, 4, 8))
    k = check_int("k", k, lo=1, hi=16)
    h_ffn = check_int("h_ffn", h_ffn, lo=256, hi=65536)
    nvl = check_real("nvlink_gbps", nvlink_gbps, lo=1.0, hi=10_000.0, unit="GB/s") * 1e9
    nic = check_real("nic_gbps", nic_gbps, lo=1.0, hi=10_000.0, unit="GB/s") * 1e9
    peak = check_real("peak_tflops", peak_tflops, lo=10.0, hi=100_000.0, unit="TFLOPS") * 1e12
    shape = INTERNAL_352B.with_(kv_heads=32 // m, top_k=k, ffn_hidden=h_ffn)
    hw = H800_NODE.with_(nvlink_bw=nvl, nic_bw=nic, peak_flops=peak,
                         comm_sms=check_int("comm_sms", comm_sms, lo=0, hi=64))
    notes = []
    if strategy == "sp_ep" and k > n:
        notes.append(_("k = {k} > n = {n}: the all-to-all sends more than AG/RS would")
                     .format(k=k, n=n))
    t = layer_timeline(shape, strategy, n=n, inter_op=inter_op, intra_op=intra_op,
                       n_tiles=n_tiles, order=order, hw=hw)
    base = layer_timeline(shape, "tp_tp", n=n, hw=hw).layer_time
    ffn = "ep" if strategy == "sp_ep" else ("tp" if strategy == "tp_tp" else "ep_agrs")
    att = "tp" if strategy == "tp_tp" else "sp"
    vol = layer_volume(shape, n, attention=att, ffn=ffn).total
    return trusted(MegaScaleState, timeline=t, baseline=base,
                   r_nvlink=hiding_ratio(h_ffn, nvl, peak), r_nic=hiding_ratio(h_ffn, nic, peak),
                   volume=vol, strategy=strategy, n=n, notes=tuple(notes))


@plots.recipe
def draw_megascale(fig, state: MegaScaleState, **_values):
    """Gantt of the layer on one GPU (SMs, NVLink port, NIC) and bars of the layer time against
    the TP+TP baseline and the compute alone. Returns the layout key.

    >>> fig = plots.blank_figure(8.8, 3.4)
    >>> key = draw_megascale(fig, megascale_state(strategy="tp_tp", n_tiles=4))
    >>> len(fig.axes)
    2
    """
    from matplotlib.figure import Figure

    from ..schedulers.moe_layer import LAYER_KINDS

    check_instance("fig", fig, Figure)
    check_instance("state", state, MegaScaleState, "from megascale_state(...)")
    t = state.timeline

    def build(fig):
        grid = fig.add_gridspec(1, 2, width_ratios=(3.2, 1.0), left=0.075, right=0.985,
                                bottom=0.15, top=0.76, wspace=0.42)
        ax = fig.add_subplot(grid[0])
        ax_bar = fig.add_subplot(grid[1])
        live = plots.LiveGantt(ax, LAYER_KINDS, time_unit="s", legend=False)
        names = (_("forward"), _("backward"), _("weight grad."), _("NVLink transfer"),
                 _("NIC send"))
        for coll, name in zip(live.collections, names, strict=True):
            coll.set_linewidth(0.0)  # hundreds of thin tiles: white edges would hide them
            coll.set_label(name)
        ax.set_xlabel(_("time, as a share of the TP+TP layer (model)"))
        ax.legend(handles=live.collections, loc="lower left", bbox_to_anchor=(0.0, 1.0),
                  ncol=5, fontsize=plots.SMALL, borderaxespad=0.2)
        bars = ax_bar.bar([0, 1, 2], [0, 0, 0], 0.65,
                          color=[_STRATEGY_COLORS["tp_tp"], plots.color("blue"),
                                 plots.color("compute")])
        ax_bar.set_xticks([0, 1, 2], [_("TP+TP\nno overlap"), _("this\nsetting"),
                                      _("compute\nonly")], fontsize=plots.SMALL)
        ax_bar.set_ylabel(_("layer time / TP+TP layer"))
        labels = [ax_bar.text(i, 0, "", ha="center", va="bottom", fontsize=plots.SMALL)
                  for i in range(3)]
        # The setting changes rarely: it is drawn into the background (and is part of the layout
        # key); only the numbers below it are redrawn on every update.
        setting = fig.text(0.01, 0.99, "", fontsize=plots.LEGEND, ha="left", va="top",
                           weight="bold")
        title = fig.text(0.01, 0.925, "", fontsize=plots.LEGEND, ha="left", va="top")
        return {"ax": ax, "live": live, "ax_bar": ax_bar, "bars": bars, "labels": labels,
                "setting": setting, "title": title,
                "dynamic": [*live.collections, *bars, *labels, title]}

    art = reuse(fig, "megascale", build)
    # Times are shown relative to the TP+TP layer, so the axes stay put while a slider moves
    # (a limit change re-renders the background, which costs most of an update); they grow only
    # when a setting is slower than the baseline.
    base = state.baseline
    vals = [1.0, t.layer_time / base, t.compute_time / base]
    top = max(vals) * 1.04
    need = 1.25 if top <= 1.25 else plots.nice_ceiling(top)
    if need != art.get("xmax"):
        art["xmax"] = need
        art["ax_bar"].set_ylim(0, need)
    layout = art["live"].update(t.resource, t.start / base, t.finish / base, t.kind,
                                row_names=_ROWS, xmax=art["xmax"])
    for bar, lab, v, i in zip(art["bars"], art["labels"], vals, range(3), strict=True):
        bar.set_height(v)
        lab.set_position((i, v))
        lab.set_text(f"{v * base * 1e3:.2f} ms")
    art["bars"][1].set_color(_STRATEGY_COLORS[state.strategy])
    note = f" · {'; '.join(state.notes)}" if state.notes else ""
    over = "+".join(name for name, on in ((_("inter"), t.inter_op), (_("intra"), t.intra_op))
                    if on)
    setting = _("{strategy} on {n} GPUs, overlap: {overlap} (model)").format(
        strategy=_strategy(state.strategy), n=state.n,
        overlap=over or _("none", context="overlap"))
    art["setting"].set_text(setting)
    art["title"].set_text(
        _("layer {layer:.2f} ms = {speedup:.2f}× TP+TP · SMs idle {idle:.2f} ms · {mb:.0f} "
          "MB/GPU/layer · R: NVLink {r_nvlink:.2f}, NIC {r_nic:.2f}").format(
            layer=t.layer_time * 1e3, speedup=state.baseline / t.layer_time,
            idle=t.exposed_comm * 1e3, mb=state.volume / 1e6, r_nvlink=state.r_nvlink,
            r_nic=state.r_nic) + note)
    return (layout, art["xmax"], setting)


def megascale_explorer(show: bool = True) -> Explorer:
    """Notebook 04's widget: layout, overlaps, n, m, k, h_ffn, bandwidths, peak, tiles, order,
    SMs for communication."""
    show = check_bool("show", show)
    controls = {
        "strategy": dropdown([(_strategy(k), k) for k in STRATEGY_LABELS], "sp_ep",
                             _("layout")),
        "inter_op": toggle(True, _("inter-operator overlap")),
        "intra_op": toggle(True, _("intra-operator (tile) overlap")),
        "n": dropdown([2, 4, 8], 8, _("GPUs n")),
        "m": dropdown([1, 2, 4, 8], 4, _("query heads per KV head m")),
        "k": int_slider(1, 16, 1, 3, _("experts per token k")),
        "h_ffn": int_slider(1024, 16384, 512, 14336, _("expert size h_ffn")),
        "nvlink_gbps": slider(40.0, 900.0, 20.0, 160.0, "NVLink (GB/s)"),
        "nic_gbps": slider(10.0, 200.0, 5.0, 50.0, "NIC (GB/s)"),
        "peak_tflops": slider(200.0, 4000.0, 50.0, 989.0, _("peak (TFLOPS)")),
        "n_tiles": int_slider(1, 64, 1, 16, _("tiles per GEMM")),
        "order": dropdown([(_("sorted by source"), "sorted"), (_("random", context="order"),
                                                               "random")], "sorted",
                          _("token order")),
        "comm_sms": int_slider(0, 32, 1, 8, _("SMs for communication")),
    }
    presets = {
        _("MegaScale-MoE (SP+EP, both overlaps)"): {
            "strategy": "sp_ep", "inter_op": True, "intra_op": True, "n": 8, "m": 4, "k": 3,
            "h_ffn": 14336, "n_tiles": 16, "order": "sorted"},
        _("baseline (TP+TP, no overlap)"): {"strategy": "tp_tp", "inter_op": False,
                                            "intra_op": False},
        _("random token order"): {"order": "random"},
        _("one tile per GEMM"): {"n_tiles": 1},
        _("DeepSeek-V3-like experts (h_ffn 2,048, k 8)"): {"h_ffn": 2048, "k": 8},
        _("FP8 peak (1,979 TFLOPS)"): {"peak_tflops": 1979.0},
    }
    return explore(megascale_state, draw_megascale, controls, presets=presets, show=show,
                   figsize=(8.8, 3.4), columns=3)


# --------------------------------------------------------------------------- figure recipes


def _curve_ok(ys, size, lo=None) -> bool:
    """A 1-d sequence of ``size`` finite numbers (at least ``lo``), each at most 1e12."""
    try:
        arr = as_float_array("ys", ys, ndim=1, shape=(size,), lo=lo, hi=1e12)
    except ValueError:
        return False
    return arr.size == size


@plots.recipe
def volume_figure(k_values, ffn_mb: dict, ffn_ms: dict, m_values, attn_mb: dict, *, n: int,
                  crossover: float):
    """Left: FFN bytes per GPU per layer against k (``ffn_mb``: ``{label: MB per k}``). Middle:
    the same as α–β time (``ffn_ms``: ``{label: ms per k}``) with the crossover ``k*``. Right:
    attention bytes against m (``attn_mb``: ``{label: MB per m}``). Labels starting with 'TP',
    'EP all-to-all', 'EP by AG/RS', 'SP' pick the colours. At most 64 values of k and of m
    (m > 0: a log axis), at most 8 curves a panel, each with one finite value per k (or m).

    >>> fig = volume_figure([1, 2], {"TP": [4.0, 4.0], "EP all-to-all": [1.0, 2.0]},
    ...                     {"EP all-to-all": [0.1, 0.2], "EP by AG/RS": [0.15, 0.15]},
    ...                     [1, 2], {"TP": [3.0, 3.0], "SP (from the shapes)": [1.0, 0.8]},
    ...                     n=2, crossover=1.5)
    >>> len(fig.axes)
    3
    """
    k_values = curve("k_values", k_values)
    m_values = curve("m_values", m_values, lo=0.0)
    for name, xs in (("k_values", k_values), ("m_values", m_values)):
        if xs.size > 64:
            raise ValueError(f"{name} must have at most 64 entries; got {xs.size}")
    if not m_values.min() > 0:
        raise ValueError(f"m_values must all be > 0 (a log axis); got {m_values.min()}")
    for name, data, xs in (("ffn_mb", ffn_mb, k_values), ("ffn_ms", ffn_ms, k_values),
                           ("attn_mb", attn_mb, m_values)):
        check_dict(name, data, key=_label, hi=8,
                   item=lambda ys, xs=xs: _curve_ok(ys, xs.size))
    n = check_int("n", n, lo=1, hi=10**6)
    crossover = check_real("crossover", crossover, lo=-1e6, hi=1e6)
    fig, axes = plots.figure(12.5, 3.9, ncols=3, width_ratios=(1.0, 1.0, 1.0))
    ax_v, ax_t, ax_a = axes

    def style_of(label):
        if label.startswith("TP"):
            return _STRATEGY_COLORS["tp_tp"], "-"
        if label.startswith("EP by AG/RS"):
            return _STRATEGY_COLORS["sp_agrs"], "--"
        if "paper" in label:
            return plots.color("paper"), ":"
        return _STRATEGY_COLORS["sp_ep"], "-"

    with plots.style():
        for ax, data in ((ax_v, ffn_mb), (ax_t, ffn_ms)):
            for label, ys in data.items():
                col, ls = style_of(label)
                ax.plot(k_values, ys, color=col, ls=ls, marker="o", ms=3.5, label=_(label))
            ax.axvline(n, color=plots.color("grey"), lw=0.8, ls=":")
            ax.set_xlabel(_("experts per token k (n = {n} GPUs)").format(n=n))
            ax.set_xticks(k_values)
        ax_v.set_ylabel(_("FFN bytes sent per GPU per layer (MB)"))
        ax_v.set_title(_("FFN volume: EP grows with k/n"))
        ax_v.annotate("k = n", (n, 0), xytext=(3, 4), textcoords="offset points",
                      fontsize=plots.NOTE,
                      xycoords=("data", "axes fraction"), color=plots.color("grey"))
        ax_t.axvline(crossover, color=plots.color("red"), lw=1.0)
        ax_t.annotate(_("crossover k = {k:g}").format(k=crossover), (crossover, 1.0),
                      xycoords=("data", "axes fraction"), xytext=(-4, -12),
                      textcoords="offset points", ha="right", fontsize=plots.NOTE,
                      color=plots.color("red"))
        ax_t.set_ylabel(_("FFN communication time (ms, model)"))
        ax_t.set_title(_("time: rings are faster per byte"))
        for label, ys in attn_mb.items():
            col, ls = style_of(label)
            ax_a.plot(m_values, ys, color=col, ls=ls, marker="s", ms=3.5, label=_(label))
        ax_a.set_xscale("log", base=2)
        ax_a.set_xticks(m_values, [f"{v:g}" for v in m_values])
        ax_a.minorticks_off()
        ax_a.set_xlabel(_("query heads per KV head m (n = {n})").format(n=n))
        ax_a.set_ylabel(_("attention bytes sent per GPU per layer (MB)"))
        ax_a.set_title(_("attention: SP ≈ (1 + 1/m)/n of TP"))
        ax_a.set_ylim(0, None)
        ax_v.set_ylim(0, None)
        ax_t.set_ylim(0, None)
        plots.legend(ax_v, "below", ncol=1)
        plots.legend(ax_t, "below", ncol=1)
        plots.legend(ax_a, "below", ncol=1)
    return fig


@plots.recipe
def tile_figure(runs: dict, *, unit: str = "us"):
    """Gantt of fused GEMM + all-to-all runs (``runs``: ``{label: TileOverlap or (G, C,
    direction)}``): two rows per run (SMs, link); a ``(G, C, direction)`` tuple draws the
    unfused pair, GEMM then transfer for "gemm_a2a", transfer then GEMM for "a2a_gemm" (s).
    At most 12 runs, each at most 10**6 s; ``unit`` "us" or "ms".

    >>> from uneven.overlap import tile_overlap
    >>> fig = tile_figure({"unfused": (1e-3, 5e-4, "gemm_a2a"),
    ...                    "fused": tile_overlap(1e-3, 5e-4, n_tiles=4)})
    >>> len(fig.axes)
    1
    """
    from matplotlib.patches import Patch

    from ..overlap import DIRECTIONS, TileOverlap

    def run_ok(r):
        if isinstance(r, TileOverlap):
            return r.sequential_time <= _MAX_SECONDS and r.fused_time <= _MAX_SECONDS
        return (isinstance(r, tuple) and len(r) == 3
                and all(is_real(x, lo=0.0) and x <= _MAX_SECONDS for x in r[:2])
                and isinstance(r[2], str) and r[2] in DIRECTIONS)

    check_dict("runs", runs, key=_label, hi=12, item=run_ok)
    unit = check_choice("unit", unit, ("us", "ms"))

    fig, ax = plots.figure(10.5, 0.62 * 2 * len(runs) + 1.3)
    scale = 1e6 if unit == "us" else 1e3
    sym = "µs" if unit == "us" else "ms"
    gemm_c, comm_c = plots.color("compute"), plots.KIND_COLORS["comm"]
    tick_pos, tick_lab = [], []
    with plots.style():
        y = 0.0
        for label, r in runs.items():
            if isinstance(r, tuple):
                G, C, direction = r
                g0, c0 = (0.0, G) if direction == "gemm_a2a" else (C, 0.0)
                ax.barh(y, G * scale, left=g0 * scale, height=0.8, color=gemm_c)
                ax.barh(y + 1, C * scale, left=c0 * scale, height=0.8, color=comm_c)
                end = G + C
            else:
                for res, colr in ((0, gemm_c), (1, comm_c)):
                    sel = r.resource == res
                    ax.barh(np.full(sel.sum(), y + res), (r.finish[sel] - r.start[sel]) * scale,
                            left=r.start[sel] * scale, height=0.8, color=colr,
                            edgecolor="white", lw=0.3)
                end = r.fused_time
            ax.text(end * scale, y + 0.5, f"  {end * scale:,.0f} {sym}", va="center",
                    fontsize=plots.NOTE)
            tick_pos += [y, y + 1]
            tick_lab += [_("{label} · SMs").format(label=_(label)), _("link", context="row")]
            y += 2.6
        ax.set_yticks(tick_pos, tick_lab, fontsize=plots.NOTE)
        ax.set_ylim(y - 0.5, -0.6)
        ax.set_xlabel(_("time ({unit}, model)").format(unit=sym))
        ax.grid(axis="y", visible=False)
        ax.legend(handles=[Patch(color=gemm_c, label=_("GEMM tile")),
                           Patch(color=comm_c, label=_("transfer piece"))],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0))
        longest = max(max((r[0] + r[1]) if isinstance(r, tuple) else
                          max(r.sequential_time, r.fused_time) for r in runs.values()), 1e-12)
        ax.set_xlim(0, longest * scale * 1.15)
        ax.set_title(_("one GEMM and its all-to-all, unfused and fused at tile level (model)"))
    return fig


@plots.recipe
def layer_figure(timelines: dict):
    """One Gantt panel per layer timeline (``{label: LayerTimeline}``): SMs, NVLink, NIC rows,
    op kinds coloured (forward, input gradient, weight gradient, NVLink transfer, NIC send).
    At most 8 timelines, each ending within 10**6 s.

    >>> from uneven.schedulers.moe_layer import layer_timeline
    >>> len(layer_figure({"SP+EP": layer_timeline(n_tiles=4)}).axes)
    1
    """
    from ..schedulers.moe_layer import LAYER_KINDS, LayerTimeline

    check_dict("timelines", timelines, key=_label, hi=8)
    instances("timelines", timelines, LayerTimeline)
    for label, t in timelines.items():
        end = max(t.layer_time, float(t.finish.max()) if t.finish.size else 0.0)
        if end > _MAX_SECONDS:
            raise ValueError(f"timelines[{label!r}] must end within {_MAX_SECONDS:g} s; got "
                             f"{end} s")

    n = len(timelines)
    fig, axes = plots.figure(10.5, 1.55 * n + 0.9, nrows=n, sharex=True)
    axes = np.atleast_1d(axes)
    names = {"F": _("forward"), "B": _("backward (input grad.)"), "W": _("weight grad."),
             "comm": _("NVLink transfer"), "send": _("NIC send (PP)")}
    for i, (ax, (label, t)) in enumerate(zip(axes, timelines.items(), strict=True)):
        plots.gantt(ax, t.resource, t.start, t.finish, t.kind,
                    kind_names=list(LAYER_KINDS), resource_names=list(_ROWS),
                    legend=False, time_unit="ms",
                    title=_("{label}: {layer:.2f} ms, SMs idle {idle:.2f} ms (model)").format(
                        label=_(label), layer=t.layer_time * 1e3, idle=t.exposed_comm * 1e3))
        for patch in ax.patches:  # hundreds of thin tiles: white edges would hide them
            patch.set_linewidth(0.15 if t.intra_op else 0.4)
        with plots.style():
            ax.axvline(t.forward_time * 1e3, color=plots.color("ink"), lw=0.8, ls=":")
            if i < n - 1:
                ax.set_xlabel("")
    with plots.style():
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        handles = [Patch(color=plots.KIND_COLORS[k], label=names[k]) for k in LAYER_KINDS]
        handles.append(Line2D([], [], color=plots.color("ink"), lw=0.8, ls=":",
                              label=_("end of the forward pass")))
        axes[0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                       fontsize=plots.NOTE)
    return fig


@plots.recipe
def ablation_figure(rows: list, paper: dict, *, one_node: tuple | None = None):
    """Left: the ablation as a waterfall of layer times (``rows`` from
    :func:`uneven.schedulers.moe_layer.ablation`). Right: speedup per step, model (per layer)
    against the paper's end-to-end values (``paper``: ``{label: speedup}``); ``one_node``:
    the paper's (low, high) single-node SP+EP gain, drawn as a band at the SP+EP step.
    ``rows``: 1 to 4 dicts with a ``label`` (a key of ``paper``), ``layer_time`` (s, up to
    10**6) and ``speedup``; speedups (model, paper, band) are finite numbers in [0, 10**6].

    >>> from uneven.schedulers.moe_layer import ablation
    >>> rows = ablation(n_tiles=4)
    >>> paper = {r["label"]: v for r, v in zip(rows, (1.0, 1.13, 1.22, 1.28))}
    >>> len(ablation_figure(rows, paper, one_node=(1.15, 1.33)).axes)
    2
    """
    def row_ok(r):
        return (isinstance(r, dict) and _label(r.get("label"))
                and is_real(r.get("layer_time"), lo=0.0)
                and 0 < r["layer_time"] <= _MAX_SECONDS
                and is_real(r.get("speedup"), lo=0.0) and r["speedup"] <= 1e6)

    if not isinstance(rows, (list, tuple)) or not 1 <= len(rows) <= 4 or not all(
            row_ok(r) for r in rows):
        raise ValueError(f"rows must be a list of 1 to 4 rows of ablation(...) (label, "
                         f"layer_time, speedup); got {_show(rows)}")
    check_dict("paper", paper, key=_label, hi=16,
               item=lambda v: is_real(v, lo=0.0) and v <= 1e6)
    missing = [r["label"] for r in rows if r["label"] not in paper]
    if missing:
        raise ValueError(f"paper must give a speedup for every row's label; missing "
                         f"{_show(missing)}")
    if one_node is not None:
        if not isinstance(one_node, (tuple, list)) or len(one_node) != 2 or not all(
                is_real(v, lo=0.0) and v <= 1e6 for v in one_node):
            raise ValueError(f"one_node must be None or a pair (low, high) of speedups; got "
                             f"{_show(one_node)}")
    fig, (ax_w, ax_s) = plots.figure(11.5, 4.0, ncols=2, width_ratios=(1.25, 1.0))
    labels = [_(r["label"]).replace(": ", ":\n").replace("+ ", "+\u00a0") for r in rows]
    x = np.arange(len(rows))
    times = np.array([r["layer_time"] for r in rows]) * 1e3
    with plots.style():
        prev = times[0]
        for i, t in enumerate(times):
            if i == 0:
                ax_w.bar(i, t, 0.6, color=_STRATEGY_COLORS["tp_tp"])
            else:
                ax_w.bar(i, t, 0.6, color=_STRATEGY_COLORS["sp_ep"], alpha=0.35)
                ax_w.bar(i, prev - t, 0.6, bottom=t, color=plots.color("green"),
                         hatch="//", edgecolor="white")
                ax_w.text(i, prev + 0.05, f"−{prev - t:.2f}", ha="center", va="bottom",
                          fontsize=plots.NOTE)
            ax_w.text(i, t / 2, f"{t:.2f} ms", ha="center", va="center", fontsize=plots.NOTE,
                      color="white" if i == 0 else plots.color("ink"))
            prev = t
        ax_w.set_xticks(x, labels, fontsize=plots.SMALL)
        ax_w.set_ylabel(_("one layer, forward + backward (ms, model)"))
        ax_w.set_title(_("where the time goes: the ablation as a waterfall (model)"))
        ax_w.set_ylim(0, times[0] * 1.15)
        from matplotlib.patches import Patch
        ax_w.legend(handles=[Patch(facecolor=plots.color("green"), hatch="//",
                                   edgecolor="white", label=_("time the step saves"))],
                    loc="upper right")
        ax_w.grid(axis="x", visible=False)
        model = [r["speedup"] for r in rows]
        ax_s.plot(x, model, "o-", color=plots.color("model"), label=_("this model, per layer"))
        ax_s.plot(x, [paper[r["label"]] for r in rows], "s--", color=plots.color("paper"),
                  label=_("paper, end to end, 240 H800 [paper]"))
        if one_node is not None:
            ax_s.fill_between([0.8, 1.2], one_node[0], one_node[1], color=plots.color("sky"),
                              alpha=0.3, lw=0,
                              label=_("paper: SP+EP MFU gain on one node [paper]"))
        for xi, (a, b) in enumerate(zip(model, [paper[r["label"]] for r in rows],
                                        strict=True)):
            ax_s.annotate(f"{a:.2f}", (xi, a), xytext=(0, 6), textcoords="offset points",
                          ha="center", fontsize=plots.SMALL, color=plots.color("model"))
            ax_s.annotate(f"{b:.2f}", (xi, b), xytext=(0, -12), textcoords="offset points",
                          ha="center", fontsize=plots.SMALL)
        short = [_("baseline"), "+ SP+EP", _("+ inter-op"), _("+ intra-op")][: len(rows)]
        ax_s.set_xticks(x, short, fontsize=plots.NOTE)
        ax_s.set_ylabel(_("speedup over the baseline"))
        ax_s.set_ylim(0.9, max(model) * 1.12)
        ax_s.set_title(_("speedup per step"))
        plots.legend(ax_s, "below", ncol=1)
    return fig


@plots.recipe
def hiding_figure(h_ffn, curves: dict, marks: dict, points: dict | None = None):
    """R against h_ffn (log-log): ``curves`` ``{(link, precision): R array}`` with link 'NVLink'
    or 'NIC' (colour) and precision 'BF16' or 'FP8' (line style); ``marks`` ``{model: h_ffn}``
    drawn as vertical lines; ``points`` ``{label: (h_ffn, R)}`` extra markers, or
    ``{label: (h_ffn, R, R_from, note)}``: a marker lifted from ``R_from`` (a point of one of the
    curves), drawn with an arrow from there and the text ``note`` beside it — so that a marker
    which happens to sit on another curve is not read as a point of that curve.

    Both axes are logarithmic: every h_ffn (at most 1,000 of them, in [1, 10**9]) and every R
    (in [1e-12, 1e12]) must be > 0; at most 8 curves, 8 marks and 8 points.

    >>> h = [1024.0, 4096.0, 16384.0]
    >>> fig = hiding_figure(h, {("NVLink", "BF16"): [0.25, 1.0, 4.0]}, {"DeepSeek-V3": 2048},
    ...                     {"a point": (2048, 0.5, 0.16, "lifted")})
    >>> len(fig.axes)
    1
    """
    h_ffn = curve("h_ffn", h_ffn, lo=1.0)
    if h_ffn.size > 1000 or h_ffn.max() > 1e9:
        raise ValueError(f"h_ffn must have at most 1,000 entries, each at most 10**9; got "
                         f"{h_ffn.size} entries up to {h_ffn.max()}")

    def key_ok(key):
        return (isinstance(key, tuple) and len(key) == 2 and key[0] in ("NVLink", "NIC")
                and key[1] in ("BF16", "FP8"))

    def r_ok(r):
        return is_real(r, lo=1e-12) and r <= 1e12

    check_dict("curves", curves, key=key_ok, hi=8,
               item=lambda ys: _curve_ok(ys, h_ffn.size, lo=1e-12))
    check_dict("marks", marks, key=_label, lo=0, hi=8,
               item=lambda hf: is_real(hf, lo=1.0) and hf <= 1e9)

    def point_ok(spec):
        if not isinstance(spec, tuple) or len(spec) not in (2, 4):
            return False
        ok = is_real(spec[0], lo=1.0) and spec[0] <= 1e9 and r_ok(spec[1])
        return ok and (len(spec) == 2 or (r_ok(spec[2]) and _label(spec[3])))

    if points is not None:
        check_dict("points", points, key=_label, lo=0, hi=8, item=point_ok)
    fig, ax = plots.figure(8.0, 4.6)
    styles = {"BF16": "-", "FP8": "--"}
    with plots.style():
        for (link, prec), r in curves.items():
            ax.plot(h_ffn, r, color=plots.color(link), ls=styles[prec],
                    label=_("{link}, {precision} GEMMs").format(link=link, precision=prec))
        ax.axhline(1.0, color=plots.color("red"), lw=1.0)
        ax.annotate(_("R = 1: below it the all-to-all\noutlasts the expert GEMM"),
                    (h_ffn[-1], 1.0),
                    xytext=(-2, -4), textcoords="offset points", ha="right", va="top",
                    fontsize=plots.NOTE, color=plots.color("red"))
        for name, hf in marks.items():
            ax.axvline(hf, color=plots.color("grey"), lw=0.8, ls=":")
            ax.annotate(f"{name}\nh_ffn = {hf:,}", (hf, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(-3, -4), textcoords="offset points", ha="right", va="top",
                        fontsize=plots.SMALL)
        for label, spec in (points or {}).items():
            hf, r = spec[0], spec[1]
            ax.plot([hf], [r], marker="D", color=plots.color("purple"), ls="none", ms=6,
                    label=_(label), zorder=4)
            if len(spec) < 4:
                continue
            r_from, note = spec[2], spec[3]
            ax.annotate("", (hf, r * 0.92), xytext=(hf, r_from * 1.04),
                        arrowprops={"arrowstyle": "-|>", "color": plots.color("purple"),
                                    "lw": 1.2, "shrinkA": 0, "shrinkB": 0})
            ax.annotate(_(note), (hf, r), xytext=(-10, 52), textcoords="offset points",
                        ha="right", va="bottom", fontsize=plots.SMALL, color=plots.color("purple"),
                        arrowprops={"arrowstyle": "-", "color": plots.color("purple"),
                                    "lw": 0.8, "shrinkA": 1, "shrinkB": 4})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = [1024, 2048, 4096, 8192, 16384, 32768]
        ax.set_xticks([t for t in ticks if h_ffn[0] <= t <= h_ffn[-1]],
                      [f"{t:,}" for t in ticks if h_ffn[0] <= t <= h_ffn[-1]])
        ax.minorticks_off()
        ax.set_xlabel(_("expert intermediate size h_ffn"))
        ax.set_ylabel(_("R = expert compute / all-to-all time"))
        ax.set_title(_("the hiding ratio R, forward pass, H800 (989 / 1,979 TFLOPS) (model)"))
        ax.legend(loc="lower right", fontsize=plots.NOTE)  # the lower right corner holds no data
    return fig


# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.
# The numbers are the library's (parallel_volumes, overlap, schedulers.moe_layer).

_MB = 1e6
_PV, _MOE = "uneven.parallel_volumes:", "uneven.schedulers.moe_layer:"

#: The paper's ablation: throughput over the baseline, 240 H800, global batch 720 [paper].
PAPER_ABLATION = {
    N_("baseline: TP+TP, no overlap"): 1.00,
    "+ SP+EP": 1.13,
    N_("+ inter-operator overlap"): 1.22,
    N_("+ intra-operator overlap"): 1.28,
}
#: Table 3: GPUs -> (Megatron-LM, MegaScale-MoE) tokens/s, 352B model, H800 [paper].
PAPER_TABLE3 = {
    240: (151.1e3, 272.9e3), 480: (301.1e3, 498.6e3), 720: (430.5e3, 740.1e3),
    960: (550.2e3, 963.8e3), 1440: (746.6e3, 1407.7e3),
}
#: The speed-ups Table 3 states beside its tokens/s [paper].
PAPER_SPEEDUP = {240: 1.81, 480: 1.65, 720: 1.72, 960: 1.77, 1440: 1.88}
#: MegaScale-MoE's MFU, 352B model, H800 [paper].
PAPER_MFU = {240: 0.3248, 1440: 0.2789}


@arguments(shape=instance(_PV + "MoeShape"))
def tp_layer(shape) -> SimpleNamespace:
    """Section 1: one TP+TP layer of ``shape`` (``layer``), the share of it that is
    communication (``share``; ``share_fwd`` of the forward pass) and the printed summary."""
    from ..schedulers.moe_layer import layer_timeline
    from ..units import to_ms

    tp = layer_timeline(shape, "tp_tp")
    share = tp.comm_time / tp.layer_time
    share_fwd = (tp.comm_time / 2) / tp.forward_time  # each forward collective has a backward twin
    report = "\n".join([
        _("{name}: {params:.0f}B parameters counted from Table 2's shapes").format(
            name=shape.name, params=shape.total_params() / 1e9),
        _("TP+TP layer, forward + backward: {layer:.2f} ms, of which {comm:.2f} ms "
          "communication (model)").format(layer=to_ms(tp.layer_time), comm=to_ms(tp.comm_time)),
        _("communication: {share:.0%} of the layer, {share_fwd:.0%} of the forward pass "
          "(model)").format(share=share, share_fwd=share_fwd)])
    return SimpleNamespace(layer=tp, share=share, share_fwd=share_fwd, report=report)


@arguments(shape=instance(_PV + "MoeShape"), n=integer(lo=1, hi=4096))
def layout_volumes(shape, n: int) -> SimpleNamespace:
    """Section 1: MB one GPU sends per layer, forward, for each layout of attention and experts
    on ``n`` GPUs (``vol``), the SP volume by the paper's printed Eq. 2 (``printed``), and the
    per-layer totals."""
    from ..parallel_volumes import comm_volume

    vol = {label: comm_volume(shape, n, module, strategy) * 2 / _MB  # BF16: 2 bytes per value
           for label, module, strategy in ((N_("attention, TP"), "attention", "tp"),
                                           (N_("attention, SP"), "attention", "sp"),
                                           (N_("experts, TP"), "ffn", "tp"),
                                           (N_("experts, EP"), "ffn", "ep"))}
    printed = comm_volume(shape, n, "attention", "sp", formula="paper") * 2 / _MB
    sp_ep = vol["attention, SP"] + vol["experts, EP"]
    sp_ep_printed = printed + vol["experts, EP"]
    tp_tp = vol["attention, TP"] + vol["experts, TP"]
    lines = [pad(_(label), 14) + " " + _("{mb:6.1f} MB per GPU per layer, forward").format(mb=mb)
             for label, mb in vol.items()]
    lines += [_("SP with the paper's printed Eq. 2: {printed:.1f} MB").format(printed=printed),
              _("per layer: SP+EP {sp_ep:.0f} MB ({sp_ep_printed:.0f} MB with the printed Eq. 2), "
                "TP+TP {tp_tp:.0f} MB per GPU").format(sp_ep=sp_ep, sp_ep_printed=sp_ep_printed,
                                                       tp_tp=tp_tp)]
    return SimpleNamespace(vol=vol, printed=printed, sp_ep=sp_ep, sp_ep_printed=sp_ep_printed,
                           tp_tp=tp_tp, report="\n".join(lines))


@arguments(shape=instance(_PV + "MoeShape"), n=integer(lo=1, hi=4096))
def volume_sweeps(shape, n: int) -> SimpleNamespace:
    """Section 1: the inputs of :func:`volume_figure`: expert bytes and times against top-k (a
    Mixtral-8x7B-like layer, ``ks``), attention bytes against the GQA group size (``ms``), the
    top-k from which EP by all-to-all sends more than by AG/RS (``k_star``), and the ks at which
    the all-to-all is faster (``faster``)."""
    from ..overlap import H800
    from ..parallel_volumes import MIXTRAL_8X7B, collective_time, comm_volume, ep_crossover_k
    from ..units import to_ms

    ks = np.arange(1, 9)
    mix = {k: MIXTRAL_8X7B.with_(top_k=int(k)) for k in ks}
    ring_mb = [comm_volume(mix[k], n, "ffn", "ep_agrs") * 2 / _MB for k in ks]
    ffn_mb = {N_("TP, or EP by AG/RS (the same bytes)"): [comm_volume(mix[k], n, "ffn", "tp")
                                                          * 2 / _MB for k in ks],
              N_("EP all-to-all"): [comm_volume(mix[k], n, "ffn", "ep") * 2 / _MB for k in ks]}
    nvl = H800["nvlink_bw"]
    ffn_ms = {"EP all-to-all": [to_ms(collective_time(v * _MB, n, "all_to_all", bandwidth=nvl))
                                for v in ffn_mb["EP all-to-all"]],
              N_("EP by AG/RS"): [to_ms(collective_time(v * _MB, n, "ring", bandwidth=nvl))
                                  for v in ring_mb]}
    ms = [1, 2, 4, 8]
    attn_mb = {"TP": [comm_volume(shape, n, "attention", "tp") * 2 / _MB for _ in ms],
               N_("SP (from the shapes)"): [comm_volume(shape.with_(kv_heads=32 // m), n,
                                                        "attention", "sp") * 2 / _MB for m in ms],
               N_("SP (paper's printed Eq. 2)"): [comm_volume(shape.with_(kv_heads=32 // m), n,
                                                          "attention", "sp", formula="paper")
                                              * 2 / _MB for m in ms]}
    faster = [k for k, a, r in zip(ks, ffn_ms["EP all-to-all"], ffn_ms["EP by AG/RS"],
                                   strict=True) if a < r]
    return SimpleNamespace(ks=ks, ring_mb=ring_mb, ffn_mb=ffn_mb, ffn_ms=ffn_ms, ms=ms,
                           attn_mb=attn_mb, k_star=ep_crossover_k(n), faster=faster)


@arguments(shape=instance(_PV + "MoeShape"))
def leave_node(shape) -> SimpleNamespace:
    """Section 1: each layout's communication time, forward, per layer, on one node of 8 GPUs and
    on two nodes of 16 (``leave[layout]``: how much longer on two) and the printed table."""
    from ..parallel_volumes import comm_volume, group_comm_times
    from ..units import to_ms

    # The English header right-aligns each cell in its column; a cell is written left-aligned
    # after the same leading spaces, so that its numbers keep their columns in any language.
    lines = [pad(_("layout"), 8) + "   " + pad(_("8 GPUs, 1 node"), 14) + "   "
             + pad(_("16 GPUs, 2 nodes"), 16) + "   " + _("busiest link on 2 nodes")]
    leave, grow = {}, {}
    for att, ffn in (("tp", "tp"), ("sp", "ep")):
        one = group_comm_times(shape, 8, attention=att, ffn=ffn)  # one sequence on 8 GPUs
        two = group_comm_times(shape.with_(micro_batch=2), 16, attention=att, ffn=ffn)  # two on 16
        leave[att] = two["total"] / one["total"]
        bytes_ = [sum(comm_volume(sh, g, mod, st) for mod, st in (("attention", att),
                                                                   ("ffn", ffn)))
                  for sh, g in ((shape, 8), (shape.with_(micro_batch=2), 16))]
        grow[att] = bytes_[1] / bytes_[0]
        lines.append(f"{att.upper()}+{ffn.upper():5s} {to_ms(one['total']):13.2f} ms "
                     f"{to_ms(two['total']):15.2f} ms   "
                     + _("{bound} (model, forward, per layer)").format(bound=two["bound"]["ffn"]))
    lines.append(_("bytes per GPU on 2 nodes over 1: {ratios} (model)").format(ratios=_(", ").join(
        f"{a.upper()}+{b.upper()} {grow[a]:.2f}x" for a, b in (("tp", "tp"), ("sp", "ep")))))
    return SimpleNamespace(leave=leave, grow=grow, report="\n".join(lines))


@arguments(shape=instance(_PV + "MoeShape"), n=integer(lo=2, hi=4096))
def eq2_latency(shape, n: int = 8) -> SimpleNamespace:
    """Section 1: attention's forward communication time under Ulysses SP over TP's, with SP's
    volume from the tensor shapes and from the printed Eq. 2, on the model's NVLink (rings at the
    full rate, all-to-alls at the fitted efficiency; ``ratio[reading]``). ``n`` GPUs, 2..4096
    (one GPU sends nothing, so there is no ratio)."""
    from ..parallel_volumes import collective_time, comm_volume
    from ..schedulers.moe_layer import H800_NODE as hw

    def t(values, pattern):
        return collective_time(2.0 * values, n, pattern, bandwidth=hw.nvlink_bw,
                               a2a_efficiency=hw.a2a_efficiency, alpha=hw.alpha)

    tp = t(comm_volume(shape, n, "attention", "tp"), "ring")
    ratio = {reading: t(comm_volume(shape, n, "attention", "sp", formula=formula),
                        "all_to_all") / tp
             for reading, formula in (("derived", "derived"), ("printed", "paper"))}
    report = _("attention's communication time, SP over TP (model, n = {n}): {derived:.2f} "
               "with the shapes' volume, {printed:.2f} with the printed Eq. 2; the paper: "
               "'about one-fourth' of TP's latency").format(n=n, derived=ratio["derived"],
                                                            printed=ratio["printed"])
    return SimpleNamespace(ratio=ratio, report=report)


def calibrated_layers(shape, share: float = 1.0 / 3.0) -> SimpleNamespace:
    """Section 5: the memory-bound operators fitted so that attention and the GEMMs take
    ``share`` of MegaScale-MoE's layer (the paper's "about one third", §7); ``factor``, ``hw``,
    the TP+TP and best layers (``tp``, ``best``), the ablation (``rows``) and the printed
    summary."""
    from ..schedulers.moe_layer import H800_NODE, ablation, fit_memory_bound, layer_timeline

    factor = fit_memory_bound(shape, share=share)
    hw = H800_NODE.with_(memory_bound=factor)
    tp = layer_timeline(shape, "tp_tp", hw=hw)
    best = layer_timeline(shape, "sp_ep", inter_op=True, intra_op=True, hw=hw)
    rows = ablation(shape, hw=hw)
    plain = layer_timeline(shape, "sp_ep", inter_op=True, intra_op=True)
    report = "\n".join([
        _("memory-bound operators fitted at {factor:.2f}x each module's GEMM and attention "
          "time, so that attention and the GEMMs take {share:.0%} of the layer: {before:.2f} -> "
          "{after:.2f} ms (model)").format(factor=factor, share=share,
                                          before=plain.layer_time * 1e3,
                                          after=best.layer_time * 1e3),
        _("ablation, calibrated: {steps}  [paper, Table 5: 1.00 -> 1.13 -> 1.22 -> 1.28]").format(
            steps=" -> ".join(f"{r['speedup']:.2f}" for r in rows))])
    return SimpleNamespace(factor=factor, hw=hw, tp=tp, best=best, rows=rows, report=report)


def hiding_curves() -> SimpleNamespace:
    """Section 2: the hiding ratio R against the expert width (``h_ffn``) over NVLink and the
    NIC, BF16 and FP8 (``curves``), and R of the 352B model and DeepSeek-V3 (``R[name] = (over
    NVLink, over the NIC)``, BF16, forward)."""
    from ..overlap import H800, hiding_ratio
    from ..parallel_volumes import DEEPSEEK_V3, INTERNAL_352B

    h_ffn = np.geomspace(1024, 32768, 41)
    curves = {(link, prec): np.array([hiding_ratio(h, H800[bw], H800[f"{prec.lower()}_flops"])
                                      for h in h_ffn])
              for link, bw in (("NVLink", "nvlink_bw"), ("NIC", "nic_bw"))
              for prec in ("BF16", "FP8")}
    R = {name: (hiding_ratio(s.ffn_hidden, H800["nvlink_bw"]),
                hiding_ratio(s.ffn_hidden, H800["nic_bw"]))
         for name, s in (("Internal-352B", INTERNAL_352B), ("DeepSeek-V3", DEEPSEEK_V3))}
    report = "\n".join(_("{name:14s} R over NVLink {r_nvlink:.2f}, over the NIC {r_nic:.2f} "
                         "(BF16, forward)").format(name=name, r_nvlink=r_nvl, r_nic=r_nic)
                       for name, (r_nvl, r_nic) in R.items())
    return SimpleNamespace(h_ffn=h_ffn, curves=curves, R=R, report=report)


def deepseek_hiding() -> SimpleNamespace:
    """Section 2: DeepSeek-V3's R over the NIC, naive (``naive``: every routed copy crosses it,
    BF16), with node-limited routing (one copy per node, at most 4 of 8 nodes, ``capped``:
    notebook 03's copy counts) and FP8 dispatch (``r_ds``; ``r_ds_fp8`` with FP8 GEMMs too),
    and the figure's annotation (``note``)."""
    from ..ep.model import fanout_per_token
    from ..overlap import H800, hiding_ratio
    from ..parallel_volumes import DEEPSEEK_V3

    naive = hiding_ratio(DEEPSEEK_V3.ffn_hidden, H800["nic_bw"])  # hiding_curves' R over the NIC

    capped = fanout_per_token(4, 8, n_tokens=8192)  # at most 4 nodes, one copy per node
    r_ds = hiding_ratio(2048, H800["nic_bw"], remote_fraction=capped["ib_copies"] / 8,
                        dispatch_bytes=1 + 4 / 128)
    r_ds_fp8 = hiding_ratio(2048, H800["nic_bw"], H800["fp8_flops"],
                            remote_fraction=capped["ib_copies"] / 8, dispatch_bytes=1 + 4 / 128)
    note = _("over the NIC, not NVLink:\nR {naive:.2f} → {capped:.2f} with capped\n"
             "routing and FP8 dispatch").format(naive=naive, capped=r_ds)
    report = _("DeepSeek-V3 over the NIC: R = {naive:.2f} naive -> {capped:.2f} with "
               "node-limited routing, one copy per node and FP8 dispatch ({fp8:.2f} with its "
               "FP8 GEMMs)").format(naive=naive, capped=r_ds, fp8=r_ds_fp8)
    return SimpleNamespace(naive=naive, capped=capped, r_ds=r_ds, r_ds_fp8=r_ds_fp8, note=note,
                           report=report)


@arguments(timeline=instance(_MOE + "LayerTimeline"))
def span(timeline, name: str) -> float:
    """How long operator ``name`` of a layer timeline takes, from its first op's start to its
    last op's finish (s)."""
    start, finish = timeline.item_time(name)
    return finish - start


@arguments(shape=instance(_PV + "MoeShape"))
def tile_runs(shape) -> SimpleNamespace:
    """Section 3: the SP+EP layer's dispatch and fc1/fc3 (``C``, ``G``), fc2 and combine
    (``G2``, ``C2``, s), unfused and fused tile by tile (``runs``, for :func:`tile_figure`)."""
    from ..overlap import tile_overlap
    from ..schedulers.moe_layer import layer_timeline
    from ..units import to_us

    sp = layer_timeline(shape, "sp_ep")
    G, C = span(sp, "fc13"), span(sp, "dispatch")
    G2, C2 = span(sp, "fc2"), span(sp, "combine")
    runs = {
        N_("dispatch → fc1/fc3, unfused"): (G, C, "a2a_gemm"),
        N_("fused, tokens sorted by source"): tile_overlap(G, C, n_tiles=16,
                                                          direction="a2a_gemm"),
        N_("fused, tokens in random order"): tile_overlap(G, C, n_tiles=16, direction="a2a_gemm",
                                                         order="random"),
        N_("fc2 → combine, fused (8 SMs send)"): tile_overlap(G2, C2, n_tiles=16, comm_sms=8),
    }
    report = _("dispatch {dispatch:.0f} µs, fc1/fc3 {fc13:.0f} µs; fc2 {fc2:.0f} µs, "
               "combine {combine:.0f} µs (model)").format(dispatch=to_us(C), fc13=to_us(G),
                                                         fc2=to_us(G2), combine=to_us(C2))
    return SimpleNamespace(G=G, C=C, G2=G2, C2=C2, runs=runs, report=report)


@arguments(tp=instance(_MOE + "LayerTimeline"), plain=instance(_MOE + "LayerTimeline"),
           best=instance(_MOE + "LayerTimeline"))
def overlap_report(tp, plain, best) -> SimpleNamespace:
    """Section 4: SM idle time of TP+TP, SP+EP and SP+EP with both overlaps, and ``short``: by how
    much the attention all-to-alls outlast their GEMMs, forward and backward (s)."""
    from ..units import to_ms

    short = 2 * sum(span(plain, a2a) - span(plain, gemm)
                    for gemm, a2a in (("qkv", "a2a_qkv"), ("proj", "a2a_out")))
    report = "\n".join([
        _("SMs idle: TP+TP {tp:.2f} ms, SP+EP {sp_ep:.2f} ms, with both overlaps {best:.2f} ms "
          "(model)").format(tp=to_ms(tp.exposed_comm), sp_ep=to_ms(plain.exposed_comm),
                            best=to_ms(best.exposed_comm)),
        _("attention all-to-alls longer than their GEMMs by {short:.2f} ms per layer").format(
            short=to_ms(short))])
    return SimpleNamespace(short=short, report=report)


@arguments(rows=items(mapping(), hi=len(PAPER_ABLATION)))
def ablation_report(rows: list) -> str:
    """Section 4: each rung of :func:`uneven.schedulers.moe_layer.ablation` beside the paper's."""
    from ..units import to_ms

    for r in rows:
        if (r.get("label") not in PAPER_ABLATION or not is_real(r.get("layer_time"), lo=0.0)
                or not is_real(r.get("speedup"), lo=0.0)):
            raise ValueError("rows must be the rungs of uneven.schedulers.moe_layer.ablation "
                             f"(labels {list(PAPER_ABLATION)}); got a row {_show(r)}")

    return "\n".join(pad(_(r["label"]), 30) + f" {to_ms(r['layer_time']):5.2f} ms  "
                     f"{r['speedup']:.2f}× (model)  {PAPER_ABLATION[r['label']]:.2f}× [paper]"
                     for r in rows)


@arguments(shape=instance(_PV + "MoeShape"), n_nodes=integer(lo=1, hi=512),
           cap=real(lo=1.0, hi=100.0))
def skewed_cluster(shape, n_nodes: int = 180, cap: float = 1.1) -> SimpleNamespace:
    """Section 4: ``n_nodes`` nodes whose GPUs' expert loads are skewed (``loads``, over the
    mean), timed balanced, skewed, and with token copies above ``cap`` times the mean dropped;
    ``dropped``: the share of copies dropped; ``over``: which GPUs are above the cap."""
    from ..schedulers.moe_layer import cluster_layer_timeline
    from ..units import to_ms
    from ..workloads import expert_loads

    loads = []
    for node in range(n_nodes):
        per_expert = expert_loads(32, shape.tokens * shape.top_k, 1.5, seed=node)
        per_gpu = per_expert.reshape(8, 4).sum(axis=1)  # four experts per GPU
        loads.append(per_gpu / per_gpu.mean())
    loads = np.concatenate(loads)
    balanced = cluster_layer_timeline(n_nodes)
    skewed = cluster_layer_timeline(n_nodes, loads=loads)
    capped = cluster_layer_timeline(n_nodes, loads=np.minimum(loads, cap))
    over = loads > cap
    dropped = np.maximum(loads - cap, 0.0).sum() / loads.sum()  # token copies above the cap
    report = "\n".join([
        _("{ops:,} ops on {gpus:,} GPUs in one run of the timeline engine").format(
            ops=skewed.n_ops, gpus=loads.size),
        _("balanced {balanced:.2f} ms; skewed: median node {median:.2f} ms, slowest node "
          "{slowest:.2f} ms; capacity 1.1x: slowest {capped:.2f} ms (model)").format(
            balanced=to_ms(balanced.makespan), median=to_ms(np.median(skewed.node_time)),
            slowest=to_ms(skewed.makespan), capped=to_ms(capped.makespan)),
        _("the cap drops {dropped:.2%} of the token copies, on the {over:.1%} of GPUs above it "
          "(model)").format(dropped=dropped, over=over.mean())])
    return SimpleNamespace(loads=loads, balanced=balanced, skewed=skewed, capped=capped,
                           over=over, dropped=dropped, report=report)


#: The kinds of memory :func:`uneven.schedulers.moe_layer.memory_per_gpu` counts, printed in the
#: language in force by :func:`memory_report`.
_MEMORY_KINDS = (N_("weights", "memory"), N_("grads", "memory"), N_("optimizer", "memory"),
                 N_("activations", "memory"), N_("total", "memory"))


@arguments(shape=instance(_PV + "MoeShape"), pp=integer(lo=1, hi=256),
           dp=integer(lo=1, hi=4096))
def memory_report(shape, pp: int = 15, dp: int = 2) -> SimpleNamespace:
    """Section 4: memory per GPU of TP+TP and SP+EP (``mem[layout]``, bytes by kind) and how much
    more SP+EP needs (``extra``)."""
    from ..schedulers.moe_layer import memory_per_gpu

    mem = {s: memory_per_gpu(shape, s, pp=pp, dp=dp) for s in ("tp_tp", "sp_ep")}
    lines = [_("{layout}: {parts} (model)").format(layout=s, parts=_(", ").join(
        f"{_(k, context='memory')} {v / 1e9:.1f} GB" for k, v in m.items()))
             for s, m in mem.items()]
    extra = mem["sp_ep"]["total"] / mem["tp_tp"]["total"] - 1
    lines.append(_("SP+EP needs {extra:.1%} more (model); the paper measured +1.2% to +5.4% "
                   "[paper]").format(extra=extra))
    return SimpleNamespace(mem=mem, extra=extra, report="\n".join(lines))


@arguments(shape=instance(_PV + "MoeShape"), tp=instance(_MOE + "LayerTimeline"),
           best=instance(_MOE + "LayerTimeline"))
def scaling_table(shape, tp, best) -> SimpleNamespace:
    """Section 6: Table 3 beside the model (``model[gpus][name]``: the iteration model of TP+TP
    and of MegaScale's layer), the speed-ups stated against those Table 3's own tokens/s give
    (``derived``, ``gap``), the scaling efficiency from 240 to 1,440 GPUs (``eff_paper``
    [derived], ``eff_model``), and paper over model per row (``ratio``) and the model's gain
    (``gain``)."""
    from ..overlap import H800
    from ..schedulers.moe_layer import iteration_model

    send = shape.tokens / 8 * shape.hidden * 2 / H800["nic_bw"]  # one PP send per stage boundary
    model = {g: {name: iteration_model(t.forward_time, t.backward_time, n_gpus=g, pp_send=send)
                 for name, t in (("TP+TP", tp), ("MegaScale", best))} for g in PAPER_TABLE3}
    lines = [f"{'GPUs':>5s} | " + pad(_("paper tokens/s"), 19, ">") + " | "
             + pad(_("model tokens/s"), 19, ">") + " | "
             + pad(_("speed-up over the baseline"), 38, ">") + " | " + _("paper / model"),
             f"{'':5s} | {'Megatron MegaScale':>19s} | {'TP+TP MegaScale':>19s} | "
             + pad(_("stated [paper]"), 16, ">") + " " + pad(_("ratio [derived]"), 15, ">") + " "
             + pad(_("model"), 5, ">") + " |"]
    derived = {}
    for g, (meg, msc) in PAPER_TABLE3.items():
        a, b = model[g]["TP+TP"]["tokens_per_s"], model[g]["MegaScale"]["tokens_per_s"]
        derived[g] = msc / meg  # the ratio of Table 3's own tokens/s
        lines.append(f"{g:5d} | {meg / 1e3:8.1f}k {msc / 1e3:8.1f}k | {a / 1e3:8.1f}k "
                     f"{b / 1e3:8.1f}k | {PAPER_SPEEDUP[g]:13.2f}× {derived[g]:14.2f}× "
                     f"{b / a:6.2f}× | {msc / b:.2f}")
    eff_paper = PAPER_TABLE3[1440][1] / PAPER_TABLE3[240][1] / 6  # [derived] from Table 3
    tps = {g: model[g]["MegaScale"]["tokens_per_s"] for g in PAPER_TABLE3}
    eff_model = tps[1440] / tps[240] / 6
    it = model[1440]["MegaScale"]["iteration_s"]
    lines.append(_("scaling efficiency 240 -> 1,440 GPUs: paper {paper:.1%} [derived], model "
                   "{model:.1%}; iteration at 1,440: paper 4.19 s, model {it:.2f} s").format(
                       paper=eff_paper, model=eff_model, it=it))
    return SimpleNamespace(
        model=model, derived=derived,
        gap={g: abs(PAPER_SPEEDUP[g] - derived[g]) for g in PAPER_TABLE3}, eff_paper=eff_paper,
        eff_model=eff_model, it=it, ratio=[PAPER_TABLE3[g][1] / tps[g] for g in PAPER_TABLE3],
        gain=[tps[g] / model[g]["TP+TP"]["tokens_per_s"] for g in PAPER_TABLE3],
        report="\n".join(lines))


@arguments(shape=instance(_PV + "MoeShape"), best=instance(_MOE + "LayerTimeline"), model=mapping())
def mfu_table(shape, best, model: dict) -> SimpleNamespace:
    """Section 6: the paper's MFU beside the model's, at the paper's FLOPs per token
    (``paper_flops``, [derived] from its MFU and tokens/s; ``implied``) and at the layer model's
    own (``own_flops``, ``own``), and the model's MFU as kernels x (1 - exposed communication) x
    (1 - the 1F1B bubble) (``kernels``, ``exposed``, ``bubble``; ``m_mb``: micro-batches per
    pipeline)."""
    from ..overlap import H800
    from ..schedulers.moe_layer import mfu, training_flops_per_token

    for g in PAPER_MFU:
        run = model.get(g, {}).get("MegaScale") if isinstance(model.get(g), dict) else None
        if not isinstance(run, dict) or not all(k in run
                                                for k in ("tokens_per_s", "bubble", "m")):
            raise ValueError(f"model must be what scaling_table returns as .model (a dict per GPU "
                             f"count of {list(PAPER_MFU)}, each with a MegaScale iteration); got "
                             f"{_show(model)}")
    peak = H800["bf16_flops"]
    per_end = {g: PAPER_MFU[g] * g * peak / PAPER_TABLE3[g][1] for g in PAPER_MFU}  # [derived]
    paper_flops = float(np.mean(list(per_end.values())))  # FLOPs per token the paper counts
    own_flops = training_flops_per_token(shape)  # what the layer model computes (model)
    tps = {g: model[g]["MegaScale"]["tokens_per_s"] for g in PAPER_MFU}
    implied = {g: mfu(tps[g], paper_flops, g) for g in PAPER_MFU}
    own = {g: mfu(tps[g], own_flops, g) for g in PAPER_MFU}
    lines = [_("{gpus:5,d} GPUs: MFU {mfu:.2%} [paper]; the model's tokens/s give {implied:.0%} "
               "at the paper's {paper_gflop:.0f} GFLOP per token [derived], {own:.0%} at its own "
               "{own_gflop:.0f} (model)").format(gpus=g, mfu=PAPER_MFU[g], implied=implied[g],
                                                 paper_gflop=paper_flops / 1e9, own=own[g],
                                                 own_gflop=own_flops / 1e9)
             for g in PAPER_MFU]
    kernels = own_flops / shape.layers * shape.tokens / 8 / (best.compute_time * peak)
    exposed = best.exposed_comm / best.layer_time
    bubble = {g: model[g]["MegaScale"]["bubble"] for g in PAPER_MFU}
    lines.append(_("the model's own MFU = kernels at {kernels:.0%} of peak x (1 - {exposed:.1%} "
                   "exposed communication) x (1 - the 1F1B bubble: {b240:.0%} at 240 GPUs, "
                   "{b1440:.0%} at 1,440) (model)").format(kernels=kernels, exposed=exposed,
                                                          b240=bubble[240], b1440=bubble[1440]))
    return SimpleNamespace(per_end=per_end, paper_flops=paper_flops, own_flops=own_flops,
                           implied=implied, own=own, kernels=kernels, exposed=exposed,
                           bubble=bubble, m_mb={g: model[g]["MegaScale"]["m"] for g in PAPER_MFU},
                           report="\n".join(lines))
