"""Notebook 02 (ByteScale): one global batch of skewed sequences on a static DP x CP mesh, naive
HDP and balanced HDP.

The explorer (:func:`bytescale_explorer`) and the notebook's figure recipes, which draw values the
notebook computed with :mod:`uneven.schedulers.sequences` and :mod:`uneven.ring_attention`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .. import plots
from .._fields import (
    Checked,
    any_value,
    arguments,
    array,
    check_fields,
    flag,
    instance,
    integer,
    items,
    namespace,
    per_key,
    real,
)
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..i18n import gettext as _
from ..units import gbit_per_s
from ..widgets import Explorer, dropdown, explore, reuse, slider, toggle
from ._common import N_, check_dict, curve, handed_on, instances, is_real, pad

__all__ = ["SCHEME_NAMES", "CONTEXTS", "ByteScaleState", "bytescale_state", "draw_bytescale",
           "bytescale_explorer", "length_figure", "cost_figure", "ring_figure",
           "timeline_figure", "context_figure", "ablation_figure", "length_facts",
           "length_histogram", "cost_fit", "full_packs", "ring_hiding", "static_report",
           "schemes_report", "loss_gradients", "offload_ladder", "context_sweep",
           "pipeline_balance", "scale_out", "paper_vs_model", "case_study_setup", "calibration",
           "comm_bound_packs", "ALG2_EXAMPLE", "alg2_example", "alg2_figure", "RANKS"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("nic_gbps", (50.0, 85.0, 170.0, 300.0, 400.0))

#: How fast a rank runs: ``"fig18"``, the case study's own rank (:func:`case_study_setup`, the
#: default), or ``"fig6a"``, the cost model fitted to Fig. 6a alone.
RANKS = ("fig18", "fig6a")

#: The three ways to run a step, in the order every figure shows them (palette names).
SCHEME_NAMES = (N_("static mesh"), N_("naive HDP"), N_("balanced HDP"))
#: Context lengths offered by the explorer (tokens).
CONTEXTS = {"256K": 2**18, "512K": 2**19, "1M": 2**20, "2M": 2**21}
_GLOBAL_BATCH = 32 * 2**20  # tokens, as in ByteScale's runs [paper]
# Names drawn or printed in the language in force but kept in English in code: the schemes'
# short names (:func:`schemes_report`) and the labels notebook 02's own cells pass to the recipes.
_SHOWN = (N_("static", "scheme"), N_("naive", "scheme"), N_("balanced", "scheme"),
          N_("contiguous"), N_("zigzag"), N_("+ dynamic\ncommunication"),
          N_("+ selective\noffload"), N_("+ balance"), N_("+ remote\ndataloader"),
          N_("model, calibrated (our offload rule)"))
_N_GPUS = 1024


@dataclass(frozen=True)
class ByteScaleState(Checked):
    """The three schemes on one setting (times in s).

    ``steps``: step time per scheme; ``busy``: per scheme, every rank's busy time sorted from the
    busiest down; ``comm_share``: exposed ring transfer over busy time per scheme;
    ``microbatches``: (fewest, most) micro-batches per rank under balanced HDP; ``d_cp``,
    ``d_hdp``, ``capacity`` (tokens per rank or pipeline); ``fallback``: balanced kept the
    naive plan; ``offloaded``: sequences given fewer than ``ceil(s / C)`` ranks; ``widened``:
    sequences balanced HDP gave more than ``ceil(s / C)`` ranks.

    Checked when made (:func:`bytescale_state` builds it without re-checking): the three
    :data:`SCHEME_NAMES` in ``steps`` (finite, > 0), ``busy`` (non-empty, finite, >= 0, read-only)
    and ``comm_share`` (in [0, 1]); ``microbatches`` a (fewest, most) pair; counts >= 0.
    """

    steps: dict = per_key(lambda: SCHEME_NAMES, real(lo=1e-12, hi=1e40, unit="s"))
    busy: dict = per_key(lambda: SCHEME_NAMES, array(ndim=1, nonempty=True, lo=0.0, hi=1e40))
    comm_share: dict = per_key(lambda: SCHEME_NAMES, real(lo=0.0, hi=1.0))
    microbatches: tuple = any_value()
    d_cp: int = integer(lo=1, hi=1 << 40)
    d_hdp: int = integer(lo=1, hi=1 << 40)
    capacity: int = integer(lo=1, hi=1 << 40)
    pp: int = integer(lo=1, hi=1 << 40)
    fallback: bool = flag()
    offloaded: int = integer(lo=0)
    widened: int = integer(lo=0, default=0)

    def __post_init__(self):
        check_fields(self)
        mb = self.microbatches
        if not isinstance(mb, (tuple, list)) or len(mb) != 2:
            raise ValueError(f"microbatches must be a (fewest, most) pair; got {_show(mb)}")
        lo = check_int("microbatches", mb[0], lo=0)
        object.__setattr__(self, "microbatches", (lo, check_int("microbatches", mb[1], lo=lo)))

    @property
    def speedups(self) -> dict:
        """Each scheme's throughput over the static mesh's."""
        base = self.steps["static mesh"]
        return {k: base / v for k, v in self.steps.items()}


@lru_cache(maxsize=8)
def _batch(mix: str, context: int, tail_weight: float) -> np.ndarray:
    from ..schedulers.sequences import global_batch

    return global_batch(_GLOBAL_BATCH, mix=mix, context=context, tail_weight=tail_weight, seed=0)


def bytescale_state(context: str = "2M", capacity_k: int = 8, mix: str = "byted",
                    tail_weight: float = 1.0, d_pp: int = 1, balance: str = "dp",
                    delta: float = 0.0, nic_gbps: float = 85.0, offload: bool = False,
                    kv_heads: int = 8, rank: str = "fig18") -> ByteScaleState:
    """One 32M-token global batch on 1,024 H800-like GPUs (TP = 2) under the three schemes.

    ``context``: a key of :data:`CONTEXTS`; ``capacity_k``: C in K tokens per rank and stage
    (a pipeline of ``d_pp`` stages holds ``d_pp`` times as many); ``mix``: ``"byted"`` or
    ``"github"``; ``tail_weight``: scales the mix's heavy tail; ``balance``: ``"dp"`` or ``"pp"``;
    ``delta``: the balance tolerance; ``nic_gbps``: each GPU's NIC rate (Gb/s; the Fig. 18
    calibration's effective rate is about 85); ``offload``: selective offload; ``kv_heads``: 8
    (GQA, ByteScale's Table 1) or 32 (a counterfactual); ``rank``: a key of :data:`RANKS`.
    """
    from ..schedulers.sequences import schedule_step

    ctx = CONTEXTS[check_choice("context", context, CONTEXTS)]
    cap = check_choice("capacity_k", capacity_k, (4, 8, 16, 32)) * 1024
    mix = check_choice("mix", mix, ("byted", "github"))
    weight = check_real("tail_weight", tail_weight, lo=0.0, hi=4.0)
    pp = check_choice("d_pp", d_pp, (1, 2, 4))
    balance = check_choice("balance", balance, ("dp", "pp", "longest-first"))
    delta = check_real("delta", delta, lo=0.0, hi=0.9)
    nic = gbit_per_s(check_real("nic_gbps", nic_gbps, lo=10.0, hi=3200.0, unit="Gb/s"))
    offload = check_bool("offload", offload)
    kv = check_choice("kv_heads", check_int("kv_heads", kv_heads, lo=1), (8, 32))
    rank = check_choice("rank", rank, RANKS)
    setup = _setup(pp, cap * pp, ctx, nic, kv, rank)
    static = _static(mix, ctx, weight, setup)
    items, naive = _naive(mix, ctx, weight, setup, offload)
    bal = schedule_step(_batch(mix, ctx, weight), setup, "balanced", balance=balance,
                        delta=delta, offload=offload, items=items, _naive=naive)
    steps = {"static mesh": static, "naive HDP": naive, "balanced HDP": bal}
    n_max = np.ceil(bal.items.tokens / setup.capacity)
    busy = {}
    for k, v in steps.items():
        busy[k] = np.sort(v.busy)[::-1]
        busy[k].flags.writeable = False
    return trusted(
        ByteScaleState,
        steps={k: v.step_time for k, v in steps.items()},
        busy=busy,
        comm_share={k: v.comm_share for k, v in steps.items()},
        microbatches=(int(bal.microbatches.min()), int(bal.microbatches.max())),
        d_cp=setup.d_cp, d_hdp=setup.d_hdp, capacity=setup.capacity, pp=pp,
        fallback=bool(bal.fallback),
        offloaded=int(((bal.items.width < n_max) & (n_max > 1)).sum()),
        widened=bal.widened,
    )


@lru_cache(maxsize=16)
def _setup(pp, capacity, context, nic, kv, rank):
    from ..schedulers.sequences import LLAMA_7B_GQA

    model = LLAMA_7B_GQA if kv == 8 else replace(LLAMA_7B_GQA, name="LLaMA-7B", kv_heads=kv)
    return case_study_setup(calibrated=rank == "fig18", n_gpus=_N_GPUS, tp=2, pp=pp,
                            capacity=capacity, context=context, model=model, nic_bw=nic)


# The controls that do not change a scheme's plan leave it in these caches, so moving δ or the
# balance recomputes only the balanced plan.
@lru_cache(maxsize=8)
def _static(mix, context, weight, setup):
    from ..schedulers.sequences import schedule_step

    return schedule_step(_batch(mix, context, weight), setup, "static")


@lru_cache(maxsize=8)
def _naive(mix, context, weight, setup, offload):
    from ..schedulers.sequences import plan_items, schedule_step

    lengths = _batch(mix, context, weight)
    items = plan_items(lengths, setup, "naive", offload=offload)
    return items, schedule_step(lengths, setup, "naive", offload=offload, items=items)


def _k(tokens: int) -> str:
    return f"{tokens // 2**20}M" if tokens >= 2**20 else f"{tokens // 1024}K"


_Y_SHARE = 1.6  # fixed ranges: the background never changes, so updates blit
_Y_SPEEDUP = (0.25, 32.0)


@plots.recipe
def draw_bytescale(fig, state: ByteScaleState, **_values):
    """Left: every rank's busy time, busiest first, and each scheme's step time (dashed), as a
    share of the static mesh's step. Right: each scheme's throughput over the static mesh's (log).
    Returns the layout key (constant: the axes never change, only the data drawn on them)."""
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure)
    check_instance("state", state, ByteScaleState, "from bytescale_state(...)")
    names = SCHEME_NAMES

    def build(fig):
        ax_b, ax_s = fig.subplots(1, 2, width_ratios=(1.6, 1.0))
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.7, wspace=0.24)
        lines, steps = [], []
        for name in names:
            col = plots.color(name)
            (ln,) = ax_b.plot([], [], color=col, lw=1.6, drawstyle="steps-post", label=_(name))
            (st,) = ax_b.plot([0, 1], [1, 1], color=col, lw=0.9, ls="--")
            lines.append(ln)
            steps.append(st)
        ax_b.set_xlim(0, 1)
        ax_b.set_ylim(0, _Y_SHARE)
        ax_b.set_xlabel(_("ranks, busiest first (fraction of the pool)"))
        ax_b.set_ylabel(_("time / static mesh's step"))
        ax_b.set_title(_("busy time per rank (solid), step (dashed)"))
        bars = ax_s.bar(range(3), [1, 1, 1], bottom=_Y_SPEEDUP[0],
                        color=[plots.color(n) for n in names], width=0.6)
        ax_s.set_yscale("log")
        ax_s.set_ylim(*_Y_SPEEDUP)
        ticks = [0.25, 0.5, 1, 2, 4, 8, 16, 32]
        ax_s.set_yticks(ticks, [f"{t:g}×" for t in ticks])
        ax_s.minorticks_off()
        ax_s.axhline(1.0, color=plots.color("ink"), lw=0.7)
        ax_s.set_xticks(range(3), [_("static\nmesh"), _("naive\nHDP"), _("balanced\nHDP")])
        ax_s.set_ylabel(_("throughput / static mesh"))
        ax_s.set_title(_("speed-up (model)"))
        ax_s.grid(axis="x", visible=False)
        labels = [ax_s.text(k, 1, "", ha="center", va="bottom", fontsize=plots.NOTE)
                  for k in range(3)]
        fig.legend(handles=lines, loc="upper left", bbox_to_anchor=(0.07, 0.855), ncol=3,
                   fontsize=plots.LEGEND, frameon=False)
        title = fig.suptitle("", fontsize=plots.PANEL, x=0.02, ha="left", y=0.995, va="top")
        return {"lines": lines, "steps": steps, "bars": bars, "labels": labels, "title": title,
                "dynamic": [*lines, *steps, *bars, *labels, title]}

    art = reuse(fig, "hdp", build)
    base = state.steps["static mesh"]
    for k, name in enumerate(names):
        busy = np.minimum(state.busy[name] / base, _Y_SHARE)
        x = np.arange(busy.size + 1) / busy.size
        art["lines"][k].set_data(x, np.append(busy, busy[-1]))
        art["steps"][k].set_ydata([min(state.steps[name] / base, _Y_SHARE)] * 2)
        sp = state.speedups[name]
        shown = min(max(sp, _Y_SPEEDUP[0]), _Y_SPEEDUP[1])
        art["bars"][k].set_height(shown - _Y_SPEEDUP[0])
        art["labels"][k].set_position((k, shown))
        art["labels"][k].set_text(f"{sp:.2f}×")
    mb = state.microbatches
    note = _(", naive plan kept") if state.fallback else ""
    off = _(", {n} offloaded").format(n=state.offloaded) if state.offloaded else ""
    if state.widened:
        off += (_(", {n} rings widened") if state.widened > 1
                else _(", {n} ring widened")).format(n=state.widened)
    unit = _("pipelines", "count") if state.pp > 1 else _("ranks", "count")
    t = state.steps
    art["title"].set_text(_(
        "step: static {static:.1f} s, naive {naive:.1f} s, balanced {balanced:.1f} s (model)\n"
        "{n} {unit} × {capacity}, d_cp = {d_cp}; balanced runs {lo}–{hi} micro-batches"
    ).format(static=t["static mesh"], naive=t["naive HDP"], balanced=t["balanced HDP"],
             n=state.d_hdp, unit=unit, capacity=_k(state.capacity), d_cp=state.d_cp, lo=mb[0],
             hi=mb[1]) + note + off)
    return "fixed"


def bytescale_explorer(show: bool = True) -> Explorer:
    """Notebook 02's widget: context, C, data mix and tail, d_pp, balance, δ, NIC, KV heads,
    rank speed, offload."""
    controls = {
        "context": dropdown(list(CONTEXTS), "2M", _("context")),
        "capacity_k": dropdown([("4K", 4), ("8K", 8), ("16K", 16), ("32K", 32)], 8,
                               _("C per rank and stage")),
        "mix": dropdown([(_("Byted-like"), "byted"), (_("GitHub-like"), "github")], "byted",
                        _("data")),
        "tail_weight": slider(0.25, 2.0, 0.25, 1.0, _("tail weight ×")),
        "d_pp": dropdown([1, 2, 4], 1, _("pipeline stages d_pp")),
        "balance": dropdown([("DP-Balance", "dp"), ("PP-Balance", "pp"),
                             (_("longest-first (model)"), "longest-first")], "dp",
                            _("balance")),
        "delta": slider(0.0, 0.5, 0.05, 0.0, _("tolerance δ")),
        "nic_gbps": slider(25.0, 800.0, 5.0, 85.0, _("NIC (Gb/s)")),
        "kv_heads": dropdown([(_("8 (Table 1)"), 8), (_("32 (counterfactual)"), 32)], 8,
                             _("KV heads")),
        "rank": dropdown([(_("Fig. 18 (case study)"), "fig18"), (_("Fig. 6a"), "fig6a")],
                         "fig18", _("rank speed")),
        "offload": toggle(False, _("selective offload")),
    }
    presets = {
        _("case study: Byted-like, 2M"): {"context": "2M", "capacity_k": 8, "mix": "byted",
                                          "tail_weight": 1.0, "d_pp": 1, "balance": "dp",
                                          "delta": 0.0, "nic_gbps": 85.0, "kv_heads": 8,
                                          "rank": "fig18", "offload": False},
        _("GitHub-like, 2M"): {"mix": "github", "context": "2M", "d_pp": 1},
        _("Fig. 6a ranks, 400 Gb/s"): {"rank": "fig6a", "nic_gbps": 400.0},
        _("pipelines: d_pp = 2, PP-Balance"): {"d_pp": 2, "balance": "pp"},
        _("32 KV heads + offload (counterfactual)"): {"kv_heads": 32, "offload": True},
    }
    return explore(bytescale_state, draw_bytescale, controls, presets=presets, show=show,
                   figsize=(8.8, 3.4), columns=3)


# --------------------------------------------------------------------------- figure recipes

_MAX_TOKENS = 2.0**40  # lengths and token counts a figure accepts
_MAX_SECONDS = 1e12  # times a figure accepts (s)


def _strings(name, value, *, lo=1, hi=64) -> list:
    """``value`` as a list of ``lo``..``hi`` short strings."""
    if not isinstance(value, (list, tuple)) or not lo <= len(value) <= hi or not all(
        isinstance(v, str) and len(v) <= 200 for v in value
    ):
        raise ValueError(f"{name} must be a list of {lo} to {hi} strings; got {_show(value)}")
    return list(value)


def _keys(name, value, *, hi=8, lo=1, palette=False) -> dict:
    """A dict of ``lo``..``hi`` entries keyed by strings (names of :data:`plots.PALETTE` when
    ``palette``: the figure colours each by its name)."""
    if palette:
        return check_dict(name, value, key=lambda k: isinstance(k, str) and k in plots.PALETTE,
                          lo=lo, hi=hi)
    return check_dict(name, value, key=lambda k: isinstance(k, str) and len(k) <= 200, lo=lo,
                      hi=hi)


def _field(name, value, key):
    if not isinstance(value, dict) or key not in value:
        raise ValueError(f"{name} must be a dict with the key {key!r}; got {_show(value)}")
    return value[key]


@plots.recipe
def length_figure(labels, sample_share, token_share, cdf: dict, facts: dict):
    """Left: share of samples and of tokens per length bucket (``labels``). Right: cumulative
    share of samples and of tokens in sequences up to a length (``cdf``: ``{"length": x,
    "samples": ..., "tokens": ...}``), with the paper's facts (``facts``: ``{label: (x, y)}``).

    Shares in [0, 1]; lengths in (0, 2**40] tokens; at most 64 buckets and 16 facts."""
    labels = _strings("labels", labels)
    sample_share = curve("sample_share", sample_share, n=len(labels), lo=0.0)
    token_share = curve("token_share", token_share, n=len(labels), lo=0.0)
    length = as_float_array("cdf['length']", _field("cdf", cdf, "length"), ndim=1, lo=0.0,
                            lo_open=True, hi=_MAX_TOKENS)
    if length.size == 0:
        raise ValueError("cdf['length'] must hold at least one length")
    cdf = {"length": length, **{k: as_float_array(f"cdf[{k!r}]", _field("cdf", cdf, k),
                                                  shape=length.shape, lo=0.0, hi=1.0)
                                for k in ("samples", "tokens")}}
    _keys("facts", facts, hi=16, lo=0)
    for k, v in facts.items():
        if not (isinstance(v, (tuple, list)) and len(v) == 2 and is_real(v[0], lo=1e-300)
                and v[0] <= _MAX_TOKENS and is_real(v[1], lo=0.0) and v[1] <= 1.0):
            raise ValueError(f"facts[{k!r}] must be a (length > 0, share in [0, 1]) pair; got "
                             f"{_show(v)}")
    for name, arr in (("sample_share", sample_share), ("token_share", token_share)):
        if arr.max() > 1.0:
            raise ValueError(f"{name} must hold shares in [0, 1]; largest entry {arr.max()}")
    fig, (ax, ax2) = plots.figure(11.5, 3.9, ncols=2, width_ratios=(1.35, 1.0))
    x = np.arange(len(labels))
    with plots.style():
        ax.bar(x - 0.2, 100 * np.asarray(sample_share), 0.4, color=plots.color("sky"),
               label=_("share of samples"))
        ax.bar(x + 0.2, 100 * np.asarray(token_share), 0.4, color=plots.color("blue"),
               label=_("share of tokens"))
        ax.set_yscale("log")
        ax.set_ylim(0.005, 100)
        ax.set_xticks(x, labels, rotation=45, ha="right")
        ax.set_xlabel(_("sequence length bucket (tokens, lower edge)"))
        ax.set_ylabel(_("share (%, log scale)"))
        ax.set_title(_("one 32M-token Byted-like batch (model)"))
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "inside", loc="upper center", ncol=2)
        ax2.plot(cdf["length"], 100 * cdf["samples"], color=plots.color("sky"),
                 drawstyle="steps-post", label=_("samples ≤ length (model)"))
        ax2.plot(cdf["length"], 100 * cdf["tokens"], color=plots.color("blue"),
                 drawstyle="steps-post", label=_("tokens in samples ≤ length (model)"))
        for k, (label, (fx, fy)) in enumerate(facts.items()):
            ax2.plot([fx], [100 * fy], "s", color=plots.color("paper"), ms=5,
                     label=_("Byted facts [paper, Fig. 4]") if k == 0 else None)
            ax2.annotate(_(label), (fx, 100 * fy), xytext=(6, -12 if k else 4),
                         textcoords="offset points", fontsize=plots.SMALL)
        ax2.set_xscale("log", base=2)
        ticks = [256, 1024, 4096, 16384, 65536, 262144, 2**21]
        ax2.set_xticks(ticks, ["256", "1K", "4K", "16K", "64K", "256K", "2M"])
        ax2.minorticks_off()
        ax2.set_ylim(0, 101)
        ax2.set_xlabel(_("sequence length (tokens)"))
        ax2.set_ylabel(_("cumulative share (%)"))
        ax2.set_title(_("few long samples, many of the tokens"))
        plots.legend(ax2, "below", ncol=2)
    return fig


@plots.recipe
def cost_figure(cost, mlp_only, fig6a: dict, pack_times, *, pack_tokens: int):
    """Left: per-layer attention and MLP time against length: ``cost`` (MLP + projections) and
    ``mlp_only`` (the MLP alone) as lines, ByteScale's Fig. 6a readings (``fig6a``) as markers.
    Right: per-layer time of every ``pack_tokens`` micro-batch of a batch, sorted
    (``pack_times`` in s).

    ``cost`` must have ``alpha > 0`` and cross ``mlp_only``'s MLP line between 1 and 2**40
    tokens; Fig. 6a tokens in (0, 2**40] and times in (0, 1e12] ms; ``pack_times`` in
    (0, 1e12] s; ``pack_tokens`` in [1, 2**40]."""
    from ..schedulers.sequences import CostModel

    check_instance("cost", cost, CostModel, "e.g. default_cost_model()")
    check_instance("mlp_only", mlp_only, CostModel, "e.g. default_cost_model(projections=False)")
    cross = cost.crossover(mlp_only.beta_linear)
    if cost.alpha <= 0 or not 1.0 <= cross <= _MAX_TOKENS:
        raise ValueError(f"cost (alpha={cost.alpha:g}) and mlp_only (beta_linear="
                         f"{mlp_only.beta_linear:g}) must cross between 1 and 2**40 tokens; "
                         f"they cross at {cross:g}")
    pts = as_float_array("fig6a['tokens']", _field("fig6a", fig6a, "tokens"), ndim=1, lo=0.0,
                         lo_open=True, hi=_MAX_TOKENS)
    if pts.size == 0:
        raise ValueError("fig6a['tokens'] must hold at least one length")
    fig6a = {"tokens": pts, **{k: as_float_array(f"fig6a[{k!r}]", _field("fig6a", fig6a, k),
                                                 shape=pts.shape, lo=0.0, lo_open=True,
                                                 hi=_MAX_SECONDS)
                               for k in ("attention_ms", "mlp_ms")}}
    pack_times = curve("pack_times", pack_times, lo=1e-300)
    if pack_times.max() > _MAX_SECONDS:
        raise ValueError(f"pack_times must be at most {_MAX_SECONDS:g} s; largest entry "
                         f"{pack_times.max()}")
    pack_tokens = check_int("pack_tokens", pack_tokens, lo=1, hi=int(_MAX_TOKENS))
    fig, (ax, ax2) = plots.figure(11.5, 3.7, ncols=2)
    s = np.geomspace(2048, 2**18, 120)
    with plots.style():
        ax.plot(s, cost.attention(s) * 1e3, color=plots.color("red"),
                label=_("attention, fit α s² + β s (model)"))
        mlp_rate = mlp_only.beta_linear
        ax.plot(s, mlp_rate * s * 1e3, color=plots.color("green"), label=_("MLP, fit (model)"))
        ax.plot(s, cost.linear(s) * 1e3, color=plots.color("green"), ls="--",
                label=_("MLP + projections (model)"))
        ax.plot(pts, fig6a["attention_ms"], "o", color=plots.color("red"), mfc="white",
                label=_("attention [fig-OCR, Fig. 6a]"))
        ax.plot(pts, fig6a["mlp_ms"], "s", color=plots.color("green"), mfc="white",
                label="MLP [fig-OCR, Fig. 6a]")
        ax.axvline(cross, color=plots.color("grey"), lw=0.8, ls=":")
        ax.annotate(_("equal at {k:.1f}K").format(k=cross / 1024), (cross, 0.4), xytext=(4, 0),
                    textcoords="offset points", fontsize=plots.SMALL, color=plots.color("grey"))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = [2**k for k in range(11, 19)]
        ax.set_xticks(ticks, [f"{t // 1024}K" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(_("sequence length (tokens)"))
        ax.set_ylabel(_("one layer, forward (ms)"))
        ax.set_title(_("attention grows as s², the rest as s"))
        plots.legend(ax, "inside")
        t = np.sort(np.asarray(pack_times))[::-1] * 1e3
        ax2.bar(np.arange(t.size), t, width=1.0, color=plots.color("blue"), lw=0)
        ax2.axhline(np.median(t), color=plots.color("ink"), lw=0.8, ls="--")
        ax2.annotate(_("median {t:.1f} ms").format(t=np.median(t)), (t.size * 0.6, np.median(t)),
                     xytext=(0, 4), textcoords="offset points", fontsize=plots.SMALL)
        ax2.set_xlim(-0.5, t.size - 0.5)
        ax2.set_ylim(t.min() * 0.9, t.max() * 1.06)  # not from 0: the spread is the point
        ax2.set_xlabel(_("{k}-token micro-batches, most expensive first").format(
            k=_k(pack_tokens)))
        ax2.set_ylabel(_("one layer, forward (ms)"))
        ax2.set_title(_("equal tokens, up to {x:.1f}× apart in time (model)").format(
            x=t.max() / t.min()))
        ax2.grid(axis="x", visible=False)
    return fig


@plots.recipe
def ring_figure(pairs: dict, chunk_tokens, step_compute, step_comm: dict, thresholds: dict):
    """Left: causal query-key pairs per rank, contiguous vs zig-zag chunks (``pairs``: ``{scheme:
    array}``). Right: one ring step's compute and KV transfer (s) against the tokens each rank
    holds (``step_comm``: ``{label: array}``), with the hiding thresholds (``thresholds``:
    ``{label: tokens}``).

    At most 4 schemes of 1 to 1,024 ranks (pairs >= 0, not all 0), 3 transfer curves and 3
    thresholds; tokens in (0, 2**40], times in [0, 1e12] s."""
    _keys("pairs", pairs, hi=4)
    pairs = {k: curve(f"pairs[{k!r}]", v, lo=0.0) for k, v in pairs.items()}
    n = len(next(iter(pairs.values())))
    for k, v in pairs.items():
        if v.size != n or n > 1024 or not 0 < v.mean() < 1e300:
            raise ValueError(f"pairs[{k!r}] must hold 1 to 1,024 counts (not all 0), as many "
                             f"as every other scheme ({n}); got {_show(v)}")
    c = curve("chunk_tokens", chunk_tokens, lo=1e-300)
    if c.max() > _MAX_TOKENS:
        raise ValueError(f"chunk_tokens must be at most 2**40; largest entry {c.max()}")

    def times(name, value):
        arr = curve(name, value, n=c.size, lo=0.0)
        if arr.max() > _MAX_SECONDS:
            raise ValueError(f"{name} must be at most {_MAX_SECONDS:g} s; largest entry "
                             f"{arr.max()}")
        return arr

    step_compute = times("step_compute", step_compute)
    _keys("step_comm", step_comm, hi=3)
    step_comm = {k: times(f"step_comm[{k!r}]", v) for k, v in step_comm.items()}
    _keys("thresholds", thresholds, hi=3, lo=0)
    check_dict("thresholds", thresholds, item=lambda t: is_real(t, lo=1e-300)
               and t <= _MAX_TOKENS, lo=0, hi=3)
    fig, (ax, ax2) = plots.figure(11.5, 3.6, ncols=2, width_ratios=(1.0, 1.3))
    x = np.arange(n)
    shades = {"contiguous": plots.color("grey"), "zigzag": plots.color("green")}
    with plots.style():
        for k, (name, v) in enumerate(pairs.items()):
            ax.bar(x + (k - 0.5) * 0.38, v / v.mean(), 0.38, color=shades.get(name),
                   label=_("{name} chunks").format(name=_(name)))
        ax.axhline(1.0, color=plots.color("ink"), lw=0.7, ls=":")
        ax.set_xticks(x)
        ax.set_xlabel(_("rank in the ring"))
        ax.set_ylabel(_("causal work / mean"))
        ax.set_title(_("causal attention work, ring of {n}").format(n=n))
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "inside")
        ax2.plot(c, step_compute * 1e3, color=plots.color("compute"), lw=1.8,
                 label=_("attention compute of one step"))
        styles = ("-", "--", ":")
        for (label, v), ls in zip(step_comm.items(), styles, strict=False):
            ax2.plot(c, v * 1e3, color=plots.color("purple"), ls=ls,
                     label=_("KV transfer, {label}").format(label=_(label)))
        for k, th in enumerate(thresholds.values()):
            ax2.axvline(th, color=plots.color("grey"), lw=0.8, ls=styles[k % 3])
            ax2.annotate(f"{th / 1024:.1f}K", (th, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(3, -12 - 11 * k), textcoords="offset points", fontsize=plots.SMALL,
                         color=plots.color("grey"))
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ticks = [2**k for k in range(10, 18)]
        ax2.set_xticks(ticks, [f"{t // 1024}K" for t in ticks])
        ax2.minorticks_off()
        ax2.set_xlabel(_("tokens each rank holds (c)"))
        ax2.set_ylabel(_("one ring step, one layer (ms)"))
        ax2.set_title(_("a step hides its transfer right of the line (model)"))
        plots.legend(ax2, "right")
    return fig


@plots.recipe
def timeline_figure(steps: dict):
    """One row per scheme: every rank's timeline and, right, every rank's busy time sorted.

    A ring piece is drawn as its compute (purple) followed by the share of its time that is ring
    transfer not hidden by compute (orange); a pack on one rank is blue; idle is white. ``steps``:
    ``{name: SequenceStep}`` with ``pp = 1``, 1 to 6 of them named as in :data:`plots.PALETTE`
    (e.g. :data:`SCHEME_NAMES`), each of at most 200,000 ops and 16,384 ranks."""
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..schedulers.sequences import SequenceStep

    _keys("steps", steps, hi=6, palette=True)
    instances("steps", steps, SequenceStep)
    for k, st in steps.items():
        if st.setup.pp != 1 or st.resource.size > 200_000 or st.busy.size > 16_384:
            raise ValueError(f"steps[{k!r}] must be a step with pp = 1 of at most 200,000 ops "
                             f"and 16,384 ranks; got pp = {st.setup.pp}, {st.resource.size:,} "
                             f"ops, {st.busy.size:,} ranks")
    names = list(steps)
    fig = plots.NotebookFigure(figsize=(11.5, 2.3 * len(names) + 0.6), layout="constrained")
    cols = {"ring": plots.color("purple"), "exposed": plots.color("orange"),
            "pack": plots.color("blue")}
    tmax = max(max(s.step_time for s in steps.values()), 1e-12)

    def boxes(y, x0, x1):
        verts = np.empty((y.size, 4, 2))
        verts[:, 0, 0] = verts[:, 3, 0] = x0
        verts[:, 1, 0] = verts[:, 2, 0] = x1
        verts[:, 0, 1] = verts[:, 1, 1] = y - 0.5
        verts[:, 2, 1] = verts[:, 3, 1] = y + 0.5
        return verts

    with plots.style():
        grid = fig.add_gridspec(len(names), 2, width_ratios=(2.6, 1.0))
        first = None
        for row, name in enumerate(names):
            st = steps[name]
            items = st.items
            ax = fig.add_subplot(grid[row, 0], sharex=first)
            first = first or ax
            R = st.busy.size
            y = st.resource.astype(float)
            intra = st.intra[st.item]
            fwd = np.where(intra, items.fwd_intra[st.item], items.fwd_inter[st.item])
            exp = np.where(intra, items.exposed_intra[st.item], items.exposed_inter[st.item])
            frac = np.where(fwd > 0, exp / np.where(fwd > 0, fwd, 1.0), 0.0)
            mid = st.start + (1.0 - frac) * (st.finish - st.start)
            ring = items.width[st.item] > 1
            ax.add_collection(PolyCollection(boxes(y[ring], st.start[ring], mid[ring]),
                                             facecolors=cols["ring"], edgecolors="none"))
            ax.add_collection(PolyCollection(boxes(y[ring], mid[ring], st.finish[ring]),
                                             facecolors=cols["exposed"], edgecolors="none"))
            ax.add_collection(PolyCollection(boxes(y[~ring], st.start[~ring], st.finish[~ring]),
                                             facecolors=cols["pack"], edgecolors="none"))
            ax.axvline(st.compute_time, color=plots.color("ink"), lw=1.0, ls="--")
            ax.set_ylim(R - 0.5, -0.5)
            ax.set_xlim(0, tmax * 1.02)
            ax.set_ylabel("rank")
            ax.grid(False)
            ax.set_title(_("{name}: step {t:.1f} s (model)").format(name=_(name), t=st.step_time))
            if row == len(names) - 1:
                ax.set_xlabel(_("time in the step (s)"))
            axb = fig.add_subplot(grid[row, 1])
            busy = np.sort(st.busy)[::-1]
            axb.fill_between(np.arange(busy.size), busy, step="post",
                             color=plots.color(name), lw=0)
            axb.axhline(st.compute_time, color=plots.color("ink"), lw=1.0, ls="--")
            axb.set_xlim(0, busy.size)
            axb.set_ylim(0, tmax * 1.02)
            axb.set_ylabel(_("busy (s)"))
            ratio = f"{busy.max() / busy.min():.1f}×" if busy.min() > 0 else _("idle ranks")
            axb.set_title(_("busy {lo:.1f}–{hi:.1f} s ({ratio})").format(
                lo=busy.min(), hi=busy.max(), ratio=ratio))
            if row == len(names) - 1:
                axb.set_xlabel(_("ranks, busiest first"))
        fig.legend(handles=[Patch(color=cols["ring"], label=_("ring piece: compute")),
                            Patch(color=cols["exposed"],
                                  label=_("ring piece: transfer not hidden")),
                            Patch(color=cols["pack"], label=_("pack on one rank (no ring)")),
                            Patch(facecolor="white", edgecolor=plots.color("grey"),
                                  label=_("idle")),
                            Line2D([], [], color=plots.color("ink"), ls="--",
                                   label=_("last rank done"))],
                   loc="outside lower center", ncol=5, fontsize=plots.LEGEND)
    return fig


@plots.recipe
def context_figure(contexts, throughput: dict, *, dashed: dict | None = None,
                   paper: dict | None = None):
    """Throughput (tokens/s) against the context length for each scheme (``throughput``:
    ``{name: array}``, solid) and optionally a second data mix (``dashed``, same keys).
    ``paper``: ``{name: factor}``, the paper's average throughput lost per doubling of context,
    drawn as dotted lines from the first point of ``dashed`` (or of ``throughput``).

    1 to 32 contexts in [1, 2**40] tokens; up to 8 schemes named as in :data:`plots.PALETTE`
    (e.g. :data:`SCHEME_NAMES`); throughputs in (0, 1e30] tokens/s; factors in [1, 100]."""
    from matplotlib.ticker import NullLocator

    x = as_int_array("contexts", contexts, ndim=1, lo=1, hi=2**40)
    if not 1 <= x.size <= 32:
        raise ValueError(f"contexts must hold 1 to 32 context lengths; got {x.size}")

    def rates(name, value):
        _keys(name, value, palette=True)
        out = {}
        for k, v in value.items():
            arr = curve(f"{name}[{k!r}]", v, n=x.size, lo=1e-300)
            if arr.max() > 1e30:
                raise ValueError(f"{name}[{k!r}] must be at most 1e30 tokens/s; largest entry "
                                 f"{arr.max()}")
            out[k] = arr
        return out

    throughput = rates("throughput", throughput)
    dashed = {} if dashed is None else rates("dashed", dashed)
    paper = {} if paper is None else _keys("paper", paper, palette=True)
    for k, f in paper.items():
        if not (is_real(f, lo=1.0) and f <= 100.0):
            raise ValueError(f"paper[{k!r}] must be a factor in [1, 100]; got {_show(f)}")
    fig, ax = plots.figure(8.0, 3.6)
    with plots.style():
        for name, v in throughput.items():
            ax.plot(x, np.asarray(v) / 1e6, marker="o", color=plots.color(name),
                    label=_("{name}, Byted-like").format(name=_(name)))
        for name, v in dashed.items():
            ax.plot(x, np.asarray(v) / 1e6, marker="s", ms=4, ls="--", color=plots.color(name),
                    label=_("{name}, GitHub-like").format(name=_(name)))
        anchor = dashed or throughput
        for name, f in paper.items():
            if name in anchor:
                y0 = float(anchor[name][0]) / 1e6
                ax.plot(x, y0 / float(f) ** np.log2(x / x[0]), ls=":", lw=2.0,
                        color=plots.color(name),
                        label=_("{name}: {f:g}× per doubling [paper]").format(name=_(name), f=f))
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [_k(int(c)) for c in x])
        ax.minorticks_off()
        ax.set_yscale("log")
        ys = np.concatenate([np.asarray(v) for v in (*throughput.values(), *dashed.values())])
        lo, hi = np.floor(np.log2(ys.min() / 1e6)), np.ceil(np.log2(ys.max() / 1e6))
        ticks = [2.0**k for k in range(int(lo), int(hi) + 1)]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_ylim(ticks[0], ticks[-1])
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(_("context length (tokens; static mesh d_cp = context / 8K)"))
        ax.set_ylabel(_("throughput (M tokens/s, log)"))
        ax.set_title(_("32M tokens per step on 1,024 GPUs (model; dotted: the paper's average "
                       "slopes)"))
        plots.legend(ax, "right")
    return fig


@plots.recipe
def ablation_figure(rungs, paper, models: dict):
    """The ablation ladder: cumulative speed-up over the static mesh after each step (``rungs``:
    labels), the paper's (``paper``, ``None`` where it has none) beside the model's (``models``:
    ``{label: list}``, ``nan`` where a rung is not modelled).

    1 to 12 rungs; speed-ups in [0, 1e6]; at most 6 models."""
    rungs = _strings("rungs", rungs, hi=12)
    if not isinstance(paper, (list, tuple)) or len(paper) != len(rungs) or not all(
        v is None or (is_real(v, lo=0.0) and v <= 1e6) for v in paper
    ):
        raise ValueError(f"paper must be a list of {len(rungs)} speed-ups in [0, 1e6] or None; "
                         f"got {_show(paper)}")
    _keys("models", models, hi=6, lo=0)
    models = {k: as_float_array(f"models[{k!r}]", v, shape=(len(rungs),), lo=0.0, hi=1e6,
                                allow_nan=True) for k, v in models.items()}
    fig, ax = plots.figure(9.0, 3.6)
    x = np.arange(len(rungs))
    k = 1 + len(models)
    wd = 0.8 / k
    shades = [plots.color("model"), plots.color("sky"), plots.color("grey")]
    with plots.style():
        vals = [np.nan if v is None else v for v in paper]
        bars = ax.bar(x - 0.4 + wd / 2, vals, wd, color=plots.color("paper"),
                      label=_("ByteScale [paper, production cluster]"))
        series = [(bars, vals)]
        for j, (label, v) in enumerate(models.items()):
            b = ax.bar(x - 0.4 + wd * (j + 1.5), v, wd, color=shades[j % 3], label=_(label))
            series.append((b, v))
        for b, v in series:
            for rect, val in zip(b, v, strict=True):
                x_mid = rect.get_x() + rect.get_width() / 2
                if val is not None and np.isfinite(val):
                    ax.text(x_mid, val, f"{val:.2f}", ha="center", va="bottom",
                            fontsize=plots.SMALL)
                else:
                    ax.text(x_mid, 0.1, _("not modelled"), ha="center", va="bottom",
                            fontsize=plots.TINY,
                            rotation=90, color=plots.color("grey"))
        ax.axhline(1.0, color=plots.color("ink"), lw=0.7)
        ax.set_xticks(x, [_(r) for r in rungs])
        ax.set_ylabel(_("speed-up over the static mesh (×)"))
        ax.set_title(_("the ablation ladder, cumulative"))
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "right")
    return fig


@plots.recipe
def alg2_figure(plans: dict):
    """Alg. 2's rounds on a small example (``plans``: ``{"dp": BalancePlan, "pp": ...}`` from
    :func:`alg2_example`): one panel per rule, one row per rank, each item a bar from its start
    to its finish (s), coloured by its bucket. At most 8 buckets and 64 ranks."""
    from ..schedulers.sequences import BalancePlan

    _keys("plans", plans, hi=3)
    for k, v in plans.items():
        check_instance(f"plans[{k!r}]", v, BalancePlan, "from balance_rounds(...)")
        if v.bucket.max() >= 8 or v.load.size > 64:
            raise ValueError(f"plans[{k!r}] must have at most 8 buckets and 64 ranks")
    names = {"dp": _("DP-Balance: a round takes the first bucket"),
             "pp": _("PP-Balance: each rank keeps to its own bucket"),
             "longest-first": _("longest-first (model variant)")}
    shades = [plots.color(c) for c in ("red", "orange", "blue", "green", "grey", "sky",
                                       "purple", "ink")]
    fig, axes = plots.figure(11.0, 3.4, ncols=len(plans))
    axes = np.atleast_1d(axes)
    with plots.style():
        for ax, (key, plan) in zip(axes, plans.items(), strict=True):
            for i, rr in enumerate(plan.ranks):
                for r in rr:
                    ax.barh(r, plan.finish[i] - plan.start[i], left=plan.start[i], height=0.8,
                            color=shades[int(plan.bucket[i])], edgecolor="white", lw=0.8)
            ax.set_yticks(range(plan.load.size),
                          [_("rank {r}").format(r=r) for r in range(plan.load.size)])
            ax.invert_yaxis()
            ax.set_xlabel(_("time (s)"))
            ax.set_title(names.get(key, key) + "\n"
                         + _("makespan {t:g} s").format(t=plan.makespan),
                         fontsize=plots.SMALL)
            ax.grid(axis="y", visible=False)
        from matplotlib.patches import Patch

        n_b = int(max(p.bucket.max() for p in plans.values())) + 1
        handles = [Patch(color=shades[b], label=(_("bucket {b} (longest)") if b == 0
                                                  else _("bucket {b}")).format(b=b))
                   for b in range(n_b)]
        axes[-1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5),
                        fontsize=plots.LEGEND, frameon=False)
    return fig


# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.
# The numbers are the library's (schedulers.sequences, ring_attention); these only gather them.

_K, _M = 1024, 2**20
_SEQ = "uneven.schedulers.sequences:"
_CONTEXT = integer(lo=128, hi=2**30)  # the longest sequence a batch may hold (tokens)


def _lengths(hi="context", max_size=2**22):
    """The spec of a batch's sequence lengths (tokens), at most ``hi`` each."""
    return array("int", ndim=1, lo=1, hi=hi, nonempty=True, max_size=max_size)


@arguments(context=_CONTEXT, x=_lengths(), gh=_lengths())
def length_facts(x, gh, context: int) -> SimpleNamespace:
    """Section 1: the Byted-like batch ``x`` and the GitHub-like ``gh`` against the paper's
    shares. ``shares``: name -> (model share, paper share); ``short_tokens``: the share of tokens
    in samples of at most 4K; ``report``: the printed summary."""
    from ..workloads import token_share_above

    K = _K
    shares = {
        N_("samples with at most 4K tokens"): (np.mean(x <= 4 * K), 0.80),
        N_("tokens in samples of 128K or more"): (token_share_above(x, 128 * K), 0.443),
        N_("tokens in samples longer than 256K"): (token_share_above(x, 256 * K + 1), 0.37),
        N_("tokens in samples of 2M"): (token_share_above(x, context), 0.121),
    }
    short_tokens = x[x <= 4 * K].sum() / x.sum()
    lines = [_("Byted-like batch: {n:,} sequences, {tokens:,} tokens, the longest {longest:,}")
             .format(n=x.size, tokens=x.sum(), longest=x.max())]
    lines += [f"  {pad(_(name), 36)} {100 * model:5.1f}% (model)  {100 * paper:5.1f}% [paper]"
              for name, (model, paper) in shares.items()]
    lines.append("  " + _("the {n:,} samples of at most 4K hold {share:.0f}% of the tokens; the "
                          "{n2m} samples of 2M hold {share2m:.1f}%").format(
        n=np.sum(x <= 4 * K), share=100 * short_tokens, n2m=np.sum(x == context),
        share2m=100 * shares["tokens in samples of 2M"][0]))
    lines.append(_("GitHub-like batch: {n:,} sequences; tokens above 128K {a:.1f}% (16.2% "
                   "[paper]), above 256K {b:.1f}% (9.8% [paper]); the longest {longest:,}").format(
        n=gh.size, a=100 * token_share_above(gh, 128 * K + 1),
        b=100 * token_share_above(gh, 256 * K + 1), longest=gh.max()))
    return SimpleNamespace(shares=shares, short_tokens=short_tokens, report="\n".join(lines))


@arguments(context=integer(lo=2 * _M, hi=2**30), x=_lengths())
def length_histogram(x, context: int) -> dict:
    """The inputs of :func:`length_figure` for batch ``x``: bucket labels, sample and token
    shares per bucket, the two CDFs and the paper's points on them."""
    from ..schedulers.sequences import length_shares

    K = _K
    edges = [0] + [2**k for k in range(11, 22)] + [context + 1]
    labels = ["<2K"] + [f"{2**k // K}K" if k < 20 else f"{2**(k - 20)}M" for k in range(11, 22)]
    sample_share, token_share = length_shares(x, edges)
    srt = np.sort(x)
    cdf = {"length": srt, "samples": np.arange(1, srt.size + 1) / srt.size,
           "tokens": np.cumsum(srt) / srt.sum()}
    paper_points = {N_("80% of samples ≤ 4K"): (4 * K, 0.80),
                    N_("tokens below 128K: 55.7%"): (128 * K, 1 - 0.443),
                    N_("below 256K: 63%"): (256 * K, 1 - 0.37),
                    N_("below 2M: 87.9%"): (context, 1 - 0.121)}
    return dict(labels=labels, sample_share=sample_share, token_share=token_share, cdf=cdf,
                facts=paper_points)


def cost_fit(cost, mlp_only) -> SimpleNamespace:
    """Section 2: the cost model against Fig. 6a's per-layer times (``misfit_att``,
    ``misfit_mlp``: relative errors per point) and its summary (``report``)."""
    from ..schedulers.sequences import FIG6A, LLAMA_7B_GQA, CostModel

    check_instance("cost", cost, CostModel)
    check_instance("mlp_only", mlp_only, CostModel)
    s6 = np.array(FIG6A["tokens"], dtype=float)
    misfit_att = cost.attention(s6) / (np.array(FIG6A["attention_ms"]) * 1e-3) - 1
    misfit_mlp = mlp_only.linear(s6) / (np.array(FIG6A["mlp_ms"]) * 1e-3) - 1
    report = "\n".join([
        _("alpha = {alpha:.3e} s/token², beta_attn = {beta:.3e} s/token, MLP {mlp:.3e} s/token, "
          "projections +{proj:.0f}%").format(
            alpha=cost.alpha, beta=cost.beta_attn, mlp=mlp_only.beta_linear,
            proj=100 * LLAMA_7B_GQA.projection_over_mlp),
        _("largest misfit: attention {att:.1f}%, MLP {mlp:.1f}%").format(
            att=100 * np.abs(misfit_att).max(), mlp=100 * np.abs(misfit_mlp).max()),
        _("attention = MLP at {k:.1f}K tokens (model; the paper: about 8K)").format(
            k=mlp_only.crossover() / _K)])
    return SimpleNamespace(misfit_att=misfit_att, misfit_mlp=misfit_mlp, report=report)


@arguments(pack_tokens=integer(lo=1, hi=2**24), short=_lengths(hi="pack_tokens"),
           cost=instance(_SEQ + "CostModel"))
def full_packs(short, cost, pack_tokens: int) -> SimpleNamespace:
    """Section 2: batch ``short`` best-fit packed into micro-batches of ``pack_tokens``; the
    per-layer forward time of each full one (``pack_times``, s), their ``spread`` (max / min)
    and the printed summary."""
    from ..schedulers.sequences import best_fit_pack

    bins = best_fit_pack(short, pack_tokens)
    packs = [short[bins == b] for b in range(bins.max() + 1)]
    full = [p for p in packs if p.sum() >= 0.95 * pack_tokens]
    if not full:
        raise ValueError(f"short must fill at least one micro-batch of pack_tokens = "
                         f"{pack_tokens} to 95%; it holds {int(short.sum())} tokens")
    pack_times = np.array([cost.layer_time(p) for p in full])
    spread = pack_times.max() / pack_times.min()
    report = "\n".join([
        _("{n:,} full micro-batches of 32K tokens: {lo:.1f} to {hi:.1f} ms per layer, forward; "
          "{spread:.2f}x apart (model)").format(n=len(full), lo=1e3 * pack_times.min(),
                                                hi=1e3 * pack_times.max(), spread=spread),
        _("one 32K sequence: {one:.1f} ms; sixteen of 2K: {many:.1f} ms (model)").format(
            one=1e3 * cost.layer_time([32 * _K]), many=1e3 * cost.layer_time([2 * _K] * 16))])
    return SimpleNamespace(pack_times=pack_times, spread=spread, report=report)


@arguments(setup=instance(_SEQ + "HdpSetup"), cost=instance(_SEQ + "CostModel"))
def ring_hiding(setup, cost) -> SimpleNamespace:
    """Section 3: from how many tokens per rank a ring step hides its transfer (GQA and 32 KV
    heads, ``th_gqa``/``th_mha`` in tokens), one step timed by the link-load engine against the
    closed form (``t_engine``/``t_closed``, s), the curves of :func:`ring_figure` (``curves``)
    and the summary."""
    from ..ring_attention import hide_threshold, kv_bytes_per_token, ring_step_time

    hops = setup.hops()
    kvb = setup.model.kv_bytes_per_token
    kv_mha = kv_bytes_per_token(32, 128)
    th_gqa = hide_threshold(cost.alpha, kvb, hops["inter_bw"])
    th_mha = hide_threshold(cost.alpha, kv_mha, hops["inter_bw"])
    ring = np.array([[0, 1], [8, 9], [16, 17], [24, 25]])  # four ranks of 2 GPUs on four nodes
    t_engine = ring_step_time(setup.topology(), ring, 8 * _K * kvb)
    t_closed = 8 * _K * kvb / hops["inter_bw"] + hops["inter_lat"]
    c = np.geomspace(1 * _K, 128 * _K, 60)
    curves = dict(chunk=c, compute=cost.alpha * c**2,
                  comm={N_("8 KV groups (Table 1), 2 × 50 GB/s"): c * kvb / hops["inter_bw"],
                        N_("32 KV heads (counterfactual)"): c * kv_mha / hops["inter_bw"]},
                  thresholds={N_("8 KV groups"): th_gqa, N_("32 KV heads"): th_mha})
    report = "\n".join([
        _("a ring step hides its transfer from {gqa:.1f}K tokens per rank (8 KV groups) or, in a "
          "counterfactual with 32 KV heads, {mha:.1f}K (model)").format(gqa=th_gqa / _K,
                                                                       mha=th_mha / _K),
        _("one step, 8K tokens per rank: link-load engine {engine:.0f} µs, closed form "
          "{closed:.0f} µs").format(engine=t_engine * 1e6, closed=t_closed * 1e6)])
    return SimpleNamespace(th_gqa=th_gqa, th_mha=th_mha, t_engine=t_engine, t_closed=t_closed,
                           curves=curves, report=report)


@arguments(setup=instance(_SEQ + "HdpSetup"), static=instance(_SEQ + "SequenceStep"))
def static_report(setup, static) -> str:
    """Section 4: the static mesh of ``setup`` running one step (``static``, a SequenceStep)."""
    # one pack, all layers, forward + backward
    pack_s = (1 + setup.backward_factor) * setup.model.layers * static.items.fwd_inter
    return "\n".join([
        _("{n} ranks, d_cp = {d_cp}, d_dp = {d_dp}; {packs} packs; micro-batches per DP group: "
          "{mb}").format(n=setup.d_hdp, d_cp=setup.d_cp, d_dp=setup.d_dp, packs=static.items.n,
                         mb=sorted(set(static.microbatches.tolist()))),
        _("a pack without a 2M sequence: {short:.1f} s; with one: {long:.1f} s (model)").format(
            short=np.median(pack_s), long=pack_s.max()),
        _("step {t:.1f} s; ring transfer not hidden by compute: {share:.0f}% of the busy time "
          "(model)").format(t=static.step_time, share=100 * static.comm_share)])


@arguments(steps=per_key(SCHEME_NAMES, instance(_SEQ + "SequenceStep")))
def schemes_report(steps: dict) -> str:
    """Section 5: the three schemes' steps, busy times and micro-batch counts side by side."""
    static, naive, balanced = steps.values()
    lines = []
    for st in steps.values():
        mb = st.microbatches
        lines.append(f"{pad(_(st.scheme, 'scheme'), 9)} " + _(
            "step {t:5.1f} s   busy per rank {lo:5.1f} to {hi:5.1f} s   micro-batches per rank "
            "{mb_lo} to {mb_hi}   (model)").format(t=st.step_time, lo=st.busy.min(),
                                                   hi=st.busy.max(), mb_lo=mb.min(),
                                                   mb_hi=mb.max()))
    lines += [
        _("speed-up over the static mesh: naive HDP {naive:.2f}x, balanced HDP {balanced:.2f}x "
          "(model)").format(naive=static.step_time / naive.step_time,
                            balanced=static.step_time / balanced.step_time),
        _("balanced step / lower bound (longest item, or all work spread evenly): "
          "{ratio:.3f}").format(ratio=balanced.step_time / balanced.lower_bound),
        _("naive HDP: step {t:.1f} s, busiest rank {busy:.1f} s of work (model)").format(
            t=naive.step_time, busy=naive.busy.max())]
    return "\n".join(lines)


@arguments(lengths=_lengths(hi=2**24, max_size=4096))
def loss_gradients(lengths, together, spread_out) -> SimpleNamespace:
    """Section 6: the gradient of a toy model under three loss normalisations, with the
    sequences all in one micro-batch (``together``) or spread over ranks and micro-batches;
    ``grad[(loss, "together" | "spread")]`` and the printed comparison."""
    from ..schedulers.sequences import assignment_gradient

    losses = ("token", "microbatch", "sequence")
    g = {}
    for name, param, a in (("together", "together", together),
                           ("spread", "spread_out", spread_out)):
        with handed_on(param):
            for loss in losses:
                g[loss, name] = assignment_gradient(lengths, a, loss=loss)
    g = {(loss, name): g[loss, name] for loss in losses for name in ("together", "spread")}
    report = "\n".join(f"{loss:10s} " + _("together {together}   spread {spread}").format(
        together=np.round(g[loss, "together"], 4), spread=np.round(g[loss, "spread"], 4))
        for loss in losses)
    return SimpleNamespace(grad=g, report=report)


@lru_cache(maxsize=1)
def _fig18():
    from ..schedulers.calibration import fit_fig18

    return fit_fig18()


def case_study_setup(*, calibrated: bool = True, **changes):
    """The case study's job (1,024 GPUs, TP = 2, C = 8K, 2M context, GQA with 8 KV groups as
    in ByteScale's Table 1): with ``calibrated``, its ranks run at Fig. 18's speed
    (:func:`uneven.schedulers.calibration.fit_fig18`), else at Fig. 6a's. ``changes``: fields of
    :class:`~uneven.schedulers.sequences.HdpSetup` to replace (the cost model follows a new
    ``model``)."""
    from ..schedulers.sequences import HdpSetup, default_cost_model

    calibrated = check_bool("calibrated", calibrated)
    base = _fig18().setup if calibrated else HdpSetup()
    setup = replace(base, **changes)
    if calibrated and "model" in changes and "cost" not in changes:
        fit = _fig18()
        setup = replace(setup, cost=default_cost_model(setup.model).scaled(fit.attention_scale,
                                                                           fit.linear_scale))
    return setup


@arguments(x=_lengths(hi=2**21))
def calibration(x) -> SimpleNamespace:
    """Section 4: the Fig. 18 fit, and the case study's batch ``x`` run at Fig. 6a's speed and at
    the calibrated one. ``fit``; ``before``/``after``: the three schemes (SequenceStep each);
    ``paper``: the case study's step times (s) [paper]; ``closing``: the fit with the NIC rate
    at which the static mesh takes the paper's 520 s (an inverse problem), ``closed`` its three
    schemes; ``report``."""
    from ..schedulers.sequences import compare_schemes, schedule_step

    fit = _fig18()
    before = compare_schemes(x, case_study_setup(calibrated=False))
    after = compare_schemes(x, fit.setup)
    paper = {"static mesh": 520.0, "naive HDP": 272.0, "balanced HDP": 157.0}
    # the inverse problem: the NIC rate at which the static mesh takes the paper's 520 s
    lo, hi = fit.nic_bw / 16, fit.nic_bw
    if schedule_step(x, replace(fit.setup, nic_bw=lo), "static").step_time > paper["static mesh"]:
        for _step in range(40):
            mid = (lo * hi) ** 0.5
            slow = schedule_step(x, replace(fit.setup, nic_bw=mid), "static").step_time
            lo, hi = (mid, hi) if slow > paper["static mesh"] else (lo, mid)
    closing = replace(fit, setup=replace(fit.setup, nic_bw=hi), nic_bw=hi)
    closed = compare_schemes(x, closing.setup)
    lines = [fit.report, "", f"{pad(_('case study, Byted, 2M'), 22)} "
             f"{pad(_('paper', 'column'), 8, '>')} {pad(_('Fig. 6a'), 9, '>')} "
             f"{pad(_('calibrated'), 11, '>')} {pad(_('model / paper'), 14, '>')}"]
    for name in SCHEME_NAMES:
        t0, t1 = before[name].step_time, after[name].step_time
        lines.append(f"{pad(_(name), 22)} {paper[name]:6.0f} s {t0:7.1f} s {t1:9.1f} s "
                     f"{t1 / paper[name]:13.2f}")
    lines.append(_("(paper: production cluster [paper]; the rest: model)"))
    att256 = closing.rows[1][3]
    lines.append(_("the static mesh takes 520 s at {gbps:.0f} Gb/s (balanced HDP then {bal:.0f} "
                   "s), but attention over 256 ranks then takes {att:.0f} ms, not Fig. 18a's "
                   "405 ms (model)").format(gbps=hi * 8 / 1e9,
                                            bal=closed["balanced HDP"].step_time,
                                            att=att256 * 1e3))
    return SimpleNamespace(fit=fit, before=before, after=after, paper=paper, closing=closing,
                           closed=closed, report="\n".join(lines))


@arguments(static=instance(_SEQ + "SequenceStep"))
def comm_bound_packs(static) -> SimpleNamespace:
    """Section 4: per static-mesh micro-batch (pack), the share of its forward that is ring
    transfer compute does not hide (``share``); the packs where that share is over half
    (``bound``), and the model's step-wide share (``step_share``)."""
    fwd, exposed = static.items.fwd_inter, static.items.exposed_inter
    # a pack with no forward time (none in a real step) has no share: 0
    share = np.divide(exposed, fwd, out=np.zeros(fwd.shape), where=fwd > 0)
    bound = share > 0.5
    spread = (_("in those, ring transfer is {lo:.1f}-{hi:.1f}% of a layer's time (median "
                "{median:.1f}%)").format(lo=100 * share[bound].min(), hi=100 * share[bound].max(),
                                         median=100 * np.median(share[bound]))
              if bound.any() else _("none to compare"))
    report = _("{n} of {total} micro-batches are communication-bound (model); {spread} — the "
               "paper: 97.6% of one such micro-batch [paper, Fig. 18a]; over the whole step the "
               "model's share is {share:.0f}%").format(n=int(bound.sum()), total=share.size,
                                                       spread=spread,
                                                       share=100 * static.comm_share)
    return SimpleNamespace(share=share, bound=bound, step_share=static.comm_share,
                           report=report)


#: The 8-rank worked example of Alg. 2 (Section 5): per-rank times (s) of the items of one step,
#: a few long ones and many short ones, and the buckets they are cut into.
ALG2_EXAMPLE = {"durations": (8.0, 6.0, 5.0, 4.0, 4.0, 3.0, 3.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0,
                              2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
                "n_ranks": 8, "n_buckets": 3}


def alg2_example(stages: int = 1) -> SimpleNamespace:
    """Section 5: :data:`ALG2_EXAMPLE` under DP-Balance and PP-Balance (``plans``), with
    ``stages`` in [1, 8] for the PP rule's 1F1B key; and the per-rank bucket sequences."""
    from ..schedulers.sequences import balance_rounds

    p = check_int("stages", stages, lo=1, hi=8)
    d = ALG2_EXAMPLE["durations"]
    R, B = ALG2_EXAMPLE["n_ranks"], ALG2_EXAMPLE["n_buckets"]
    plans = {b: balance_rounds(d, [1] * len(d), R, balance=b, n_buckets=B, stages=p)
             for b in ("dp", "pp")}
    levels = {}
    for b, plan in plans.items():
        levels[b] = ["".join(str(int(plan.bucket[i])) for i in np.argsort(plan.start, kind="stable")
                             if plan.ranks[i] == (r,)) for r in range(R)]
    lines = [_("{n} items, {work:.0f} s of work on {R} ranks: {B} buckets of {each:.0f} s; "
               "bucket per item: ").format(n=len(d), work=sum(d), R=R, B=B, each=sum(d) / B)
             + " ".join(str(int(v)) for v in plans["dp"].bucket)]
    for b, plan in plans.items():
        name = {"dp": "DP-Balance", "pp": "PP-Balance"}[b]
        lines.append(_("{name}: makespan {t:.0f} s; buckets each rank runs, in order: ").format(
            name=name, t=plan.makespan) + "  ".join(levels[b]))
    return SimpleNamespace(plans=plans, levels=levels, report="\n".join(lines))


@arguments(setup=instance(_SEQ + "HdpSetup"), x=_lengths(hi=lambda a: a.setup.context),
           probe=_lengths(hi=lambda a: a.setup.context, max_size=64))
def offload_ladder(x, setup, probe) -> SimpleNamespace:
    """Section 6: the paper's D(s) and offload ratio for each length of ``probe``, the ranks the
    model's selective rule gives them, and the ablation ladder of batch ``x`` on ``setup``:
    naive HDP, + offload, + balance, each over the static mesh (``lad``), with ``base`` (static
    step, s), ``plain`` and ``off`` (the three schemes without and with offload); ``minimal``:
    naive and balanced HDP with Alg. 1's D(s) read literally (:func:`minimal_offload`), and
    ``lad_minimal`` their speed-ups."""
    from ..schedulers.sequences import (
        compare_schemes,
        minimal_offload,
        offload_ranks,
        plan_items,
        schedule_step,
        select_ranks,
    )

    D, r = offload_ranks(probe, setup)
    n, ratio = select_ranks(probe, setup, offload=True)
    cap = np.ceil(probe / setup.capacity).astype(int)
    plain = compare_schemes(x, setup)
    off = compare_schemes(x, setup, offload=True)
    base = plain["static mesh"].step_time
    lad = [base / plain["naive HDP"].step_time, base / off["naive HDP"].step_time,
           base / off["balanced HDP"].step_time]
    low = minimal_offload(plan_items(x, setup, "naive"), setup)
    nv_min = schedule_step(x, setup, "naive", items=low)
    minimal = {"naive HDP": nv_min,
               "balanced HDP": schedule_step(x, setup, "balanced", items=low, _naive=nv_min)}
    lad_minimal = [base / v.step_time for v in minimal.values()]
    names = " / ".join(_k(int(s)) for s in probe)
    lines = [_("{names}: ceil(s/C) = {cap} ranks; the paper's D(s) = {D} with r = {r}; the "
               "model's rule gives {n} ranks, offloading r = {ratio}").format(
                 names=names, cap=cap.tolist(), D=D.tolist(), r=np.round(r, 2).tolist(),
                 n=n.tolist(), ratio=np.round(ratio, 2).tolist()),
             _("ablation: naive HDP {a:.2f}x, + offload {b:.2f}x, + balance {c:.2f}x the static "
               "mesh (model)").format(a=lad[0], b=lad[1], c=lad[2]),
             _("D(s) read literally (every long sequence on its fewest ranks): naive HDP "
               "{naive:.2f}x, balanced {balanced:.2f}x; its 2M ring alone lasts {t:.0f} s "
               "(model)").format(naive=lad_minimal[0], balanced=lad_minimal[1],
                                 t=_longest(nv_min))]
    return SimpleNamespace(D=D, r=r, ranks=n, ratio=ratio, base=base, plain=plain, off=off,
                           lad=lad, minimal=minimal, lad_minimal=lad_minimal,
                           report="\n".join(lines))


def _longest(step):
    """The longest item's own time (s): its forward and backward through every layer."""
    st = step.setup
    fwd = np.where(step.intra, step.items.fwd_intra, step.items.fwd_inter)
    return float(fwd.max()) * (1 + st.backward_factor) * st.model.layers


@arguments(contexts=items(integer(lo=8 * _K, hi=2 * _M), lo=2, hi=8),
           setup=instance(_SEQ + "HdpSetup"))
def context_sweep(contexts, setup) -> SimpleNamespace:
    """Section 7: throughput (tokens/s) of the three schemes at each context length on
    ``setup`` (its context replaced), for the Byted-like and GitHub-like mixes
    (``thr[mix][scheme]``), the throughput lost per doubling of context, balanced and naive HDP's
    gains at the longest context (``at_2m``, ``naive_at_2m``), and the static mesh against naive
    HDP below 1M tokens (``naive_vs_static[context] = (static, naive)``)."""
    from ..schedulers.sequences import compare_schemes, global_batch

    if any(b <= a for a, b in zip(contexts, contexts[1:], strict=False)):
        raise ValueError(f"contexts must increase; got {list(contexts)}")
    thr = {mix: {name: [] for name in SCHEME_NAMES} for mix in ("byted", "github")}
    naive_vs_static = {}
    for mix in thr:
        for ctx in contexts:
            run = compare_schemes(global_batch(32 * _M, mix=mix, context=ctx, seed=0),
                                  replace(setup, context=ctx))
            for name, st in run.items():
                thr[mix][name].append(st.tokens_per_s)
            if mix == "byted" and ctx < _M:
                naive_vs_static[ctx] = (run["static mesh"], run["naive HDP"])
    per_doubling = {mix: {name: float(np.exp(np.mean(np.log(np.array(v[:-1])
                                                            / np.array(v[1:])))))
                          for name, v in d.items()} for mix, d in thr.items()}
    at_2m = {mix: thr[mix]["balanced HDP"][-1] / thr[mix]["static mesh"][-1] for mix in thr}
    naive_at_2m = {mix: thr[mix]["naive HDP"][-1] / thr[mix]["static mesh"][-1] for mix in thr}
    lines = [f"{mix:7s} " + _("throughput lost per doubling of context: {slopes} (model)").format(
        slopes=_(", ").join(f"{_(name)} {v:.2f}x" for name, v in d.items()))
        for mix, d in per_doubling.items()]
    lines.append(_("the paper, averaged over its models and data: static mesh about 2x, naive HDP "
                   "1.23x, balanced HDP 1.08x [paper]"))
    lines.append(_("balanced HDP over the static mesh at 2M: Byted-like {byted:.2f}x, GitHub-like "
                   "{github:.2f}x (model)").format(byted=at_2m["byted"], github=at_2m["github"]))
    lines += [_("Byted-like, {k}K: naive HDP / static mesh = {x:.2f}x (model)").format(
        k=ctx // _K, x=st.step_time / nv.step_time) for ctx, (st, nv) in naive_vs_static.items()]
    return SimpleNamespace(thr=thr, per_doubling=per_doubling, at_2m=at_2m,
                           naive_at_2m=naive_at_2m, naive_vs_static=naive_vs_static,
                           report="\n".join(lines))


@arguments(context=_CONTEXT, setup=instance(_SEQ + "HdpSetup"), gh=_lengths())
def pipeline_balance(gh, context: int, setup) -> SimpleNamespace:
    """Appendix A: the GitHub-like batch ``gh`` with pipelines of 1, 2 and 4 stages on
    ``setup``'s GPUs, the three balance rules. ``rows[pp] = (static, naive, DP-Balance,
    PP-Balance, longest-first step (s))``; ``speedups[pp]``: each rule over the static mesh."""
    from ..schedulers.sequences import BALANCES, compare_schemes

    rows, lines = {}, []
    for pp in (1, 2, 4):
        s_pp = replace(setup, pp=pp, capacity=setup.capacity * pp, context=context)
        runs = {b: compare_schemes(gh, s_pp, balance=b) for b in BALANCES}
        base = runs["dp"]["static mesh"].step_time
        rows[pp] = (base, runs["dp"]["naive HDP"].step_time,
                    *(runs[b]["balanced HDP"].step_time for b in BALANCES))
        lines.append(_("d_pp = {pp}: {n} pipelines, static {base:5.1f} s; speed-up: naive "
                       "{naive:.2f}x, DP-Balance {dp:.2f}x, PP-Balance {ppb:.2f}x, longest-first "
                       "(variant) {lf:.2f}x (model)").format(
            pp=pp, n=s_pp.d_hdp, base=base, naive=base / rows[pp][1], dp=base / rows[pp][2],
            ppb=base / rows[pp][3], lf=base / rows[pp][4]))
    speedups = {pp: tuple(r[0] / v for v in r[1:]) for pp, r in rows.items()}
    return SimpleNamespace(rows=rows, speedups=speedups, report="\n".join(lines))


def scale_out(batches: dict, context: int) -> SimpleNamespace:
    """Appendix B: each batch of ``batches`` (name -> lengths) on 16,384 GPUs (TP = 8, 16K
    tokens per rank, Fig. 6a's per-layer times), balanced HDP as the paper writes it and with
    the model's widening variant. ``runs[name] = (static, naive, balanced, widened)``;
    ``widest[name] = (longest sequence, ceil(s / C), ranks the widened plan gives it)``;
    ``threshold``: tokens per rank from which a ring of these ranks hides its transfer;
    ``speedups[name] = (balanced, widened)`` over the static mesh."""
    from ..ring_attention import hide_threshold
    from ..schedulers.sequences import HdpSetup, compare_schemes, schedule_step

    big = HdpSetup(n_gpus=16384, tp=8, capacity=16 * _K, context=context)
    threshold = hide_threshold(big.cost_model.alpha, big.model.kv_bytes_per_token,
                               big.hops()["inter_bw"])
    runs, widest, speedups, lines = {}, {}, {}, []
    for mix, batch in batches.items():
        st, nv, bal = compare_schemes(batch, big).values()
        wide = schedule_step(batch, big, "balanced", widen=True, items=bal.items, _naive=nv)
        runs[mix] = (st, nv, bal, wide)
        i = int(np.argmax(wide.items.tokens))
        s_max = int(wide.items.tokens[i])
        widest[mix] = (s_max, -(-s_max // big.capacity), int(wide.items.width[i]))
        speedups[mix] = (st.step_time / bal.step_time, st.step_time / wide.step_time)
        lines.append(_("{mix}: static {st:.1f} s; naive {nv:.1f} s ({nv_x:.2f}x); balanced "
                       "(Alg. 2) {bal:.1f} s ({bal_x:.2f}x); with the widening variant {wide:.1f} "
                       "s ({wide_x:.2f}x) (model)").format(
            mix=_(mix), st=st.step_time, nv=nv.step_time, nv_x=st.step_time / nv.step_time,
            bal=bal.step_time, bal_x=speedups[mix][0], wide=wide.step_time,
            wide_x=speedups[mix][1]))
        lines.append("  " + _("longest sequence {s:,} tokens: {d_cp} ranks on the static mesh, "
                              "{alg} under Alg. 1 and 2, {wide} widened (model)").format(
            s=s_max, d_cp=big.d_cp, alg=widest[mix][1], wide=widest[mix][2]))
    lines.append(_("a ring of these 8-GPU ranks hides its transfer from {k:.2f}K tokens per rank "
                   "(model)").format(k=threshold / _K))
    return SimpleNamespace(setup=big, threshold=threshold, runs=runs, widest=widest,
                           speedups=speedups, report="\n".join(lines))


@arguments(case=namespace("after", "paper", made_by="calibration"),
           packs=namespace("share", "bound", made_by="comm_bound_packs"),
           ladder=namespace("lad", made_by="offload_ladder"),
           sweep=namespace("at_2m", "naive_at_2m", "per_doubling", "naive_vs_static",
                           made_by="context_sweep"))
def paper_vs_model(case, packs, ladder, sweep) -> SimpleNamespace:
    """Section 9: each number the paper reports beside the calibrated model's, with their ratio.
    ``rows``: (claim, paper, model, model / paper); ``report``: the printed table."""
    after, paper = case.after, case.paper
    static, naive, bal = after.values()
    nvs = min(st.step_time / nv.step_time for st, nv in sweep.naive_vs_static.values())
    rows = [
        (N_("1 static mesh step, case study (s)"), paper["static mesh"], static.step_time),
        (N_("2 naive HDP step (s)"), paper["naive HDP"], naive.step_time),
        (N_("3 balanced HDP step (s)"), paper["balanced HDP"], bal.step_time),
        (N_("4 balanced over static, case study (x) [derived]"), 520 / 157,
         static.step_time / bal.step_time),
        (N_("5 naive HDP busiest / least busy rank (x)"), 279 / 60, naive.busy_spread),
        (N_("6 P2P share, comm.-bound micro-batch (%) [Fig. 18a]"), 97.6,
         100 * float(np.median(packs.share[packs.bound]))),
        (N_("7 ablation: dynamic communication (x)"), 1.59, ladder.lad[0]),
        (N_("8 ablation: + selective offload (x)"), 2.01, ladder.lad[1]),
        (N_("9 ablation: + balance (x)"), 3.69, ladder.lad[2]),
        (N_("10 naive HDP over static, worst context (x)"), None, nvs),
        (N_("11 GitHub, 2M: balanced over static (x) [up to]"), 7.89, sweep.at_2m["github"]),
        (N_("12 Byted: balanced over static (x) [up to]"), 4.26, sweep.at_2m["byted"]),
        (N_("13 throughput lost per doubling, static (x)"), 2.0,
         sweep.per_doubling["github"]["static mesh"]),
        (N_("14 ... naive HDP (x)"), 1.23, sweep.per_doubling["github"]["naive HDP"]),
        (N_("15 ... balanced HDP (x)"), 1.08, sweep.per_doubling["github"]["balanced HDP"]),
    ]
    lines = [f"{pad(_('claim'), 52)} {pad(_('paper', 'column'), 8, '>')} "
             f"{pad(_('model', 'column'), 8, '>')} {pad(_('ratio'), 6, '>')}"]
    for claim, p, m in rows:
        if p is None:
            lines.append(f"{pad(_(claim), 52)} {'> 1':>8s} {m:8.2f} {'':>6s}")
        else:
            lines.append(f"{pad(_(claim), 52)} {p:8.2f} {m:8.2f} {m / p:6.2f}")
    lines.append(_("paper: production cluster, 1,024 GPUs for the case study [paper]; model: the "
                   "Fig. 18 calibration, Byted-like or GitHub-like batches (rows 13-15 "
                   "GitHub-like)"))
    return SimpleNamespace(rows=rows, report="\n".join(lines))


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "HdpExploreState": "ByteScaleState",
    "hdp_explore_state": "bytescale_state",
    "draw_hdp": "draw_bytescale",
})
