"""Notebook 02 (ByteScale): one global batch of skewed sequences on a static DP x CP mesh, naive
HDP and balanced HDP.

The explorer (:func:`bytescale_explorer`) and the notebook's figure recipes, which draw values the
notebook computed with :mod:`uneven.schedulers.sequences` and :mod:`uneven.ring_attention`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from .. import plots
from .._validate import check_bool, check_choice, check_int, check_real
from ..units import gbit_per_s
from ..widgets import Explorer, dropdown, explore, reuse, slider, toggle

__all__ = ["SCHEME_NAMES", "CONTEXTS", "HdpExploreState", "hdp_explore_state", "draw_hdp",
           "bytescale_explorer", "length_figure", "cost_figure", "ring_figure",
           "timeline_figure", "context_figure", "ablation_figure"]

#: The three ways to run a step, in the order every figure shows them (palette names).
SCHEME_NAMES = ("static mesh", "naive HDP", "balanced HDP")
#: Context lengths offered by the explorer (tokens).
CONTEXTS = {"256K": 2**18, "512K": 2**19, "1M": 2**20, "2M": 2**21}
_GLOBAL_BATCH = 32 * 2**20  # tokens, as in ByteScale's runs [paper]
_N_GPUS = 1024


@dataclass(frozen=True)
class HdpExploreState:
    """The three schemes on one setting (times in s).

    ``steps``: step time per scheme; ``busy``: per scheme, every rank's busy time sorted from the
    busiest down; ``comm_share``: exposed ring transfer over busy time per scheme;
    ``microbatches``: (fewest, most) micro-batches per rank under balanced HDP; ``d_cp``,
    ``d_hdp``, ``capacity`` (tokens per rank or pipeline); ``fallback``: balanced kept the
    naive plan; ``offloaded``: sequences given fewer than ``ceil(s / C)`` ranks; ``widened``:
    sequences balanced HDP gave more than ``ceil(s / C)`` ranks.
    """

    steps: dict
    busy: dict
    comm_share: dict
    microbatches: tuple
    d_cp: int
    d_hdp: int
    capacity: int
    pp: int
    fallback: bool
    offloaded: int
    widened: int = 0

    @property
    def speedups(self) -> dict:
        """Each scheme's throughput over the static mesh's."""
        base = self.steps["static mesh"]
        return {k: base / v for k, v in self.steps.items()}


@lru_cache(maxsize=8)
def _batch(mix: str, context: int, tail_weight: float) -> np.ndarray:
    from ..schedulers.sequences import global_batch

    return global_batch(_GLOBAL_BATCH, mix=mix, context=context, tail_weight=tail_weight, seed=0)


def hdp_explore_state(context: str = "2M", capacity_k: int = 8, mix: str = "byted",
                      tail_weight: float = 1.0, d_pp: int = 1, balance: str = "dp",
                      delta: float = 0.0, nic_gbps: float = 400.0, offload: bool = False,
                      kv_heads: int = 8) -> HdpExploreState:
    """One 32M-token global batch on 1,024 H800-like GPUs (TP = 2) under the three schemes.

    ``context``: a key of :data:`CONTEXTS`; ``capacity_k``: C in K tokens per rank and stage
    (a pipeline of ``d_pp`` stages holds ``d_pp`` times as many); ``mix``: ``"byted"`` or
    ``"github"``; ``tail_weight``: scales the mix's heavy tail; ``balance``: ``"dp"`` or ``"pp"``;
    ``delta``: the balance tolerance; ``nic_gbps``: NIC rate (Gb/s); ``offload``: selective
    offload; ``kv_heads``: 8 (GQA) or 32 (LLaMA-7B's own).
    """
    from ..schedulers.sequences import schedule_step

    ctx = CONTEXTS[check_choice("context", context, CONTEXTS)]
    cap = check_choice("capacity_k", capacity_k, (4, 8, 16, 32)) * 1024
    mix = check_choice("mix", mix, ("byted", "github"))
    weight = check_real("tail_weight", tail_weight, lo=0.0, hi=4.0)
    pp = check_choice("d_pp", d_pp, (1, 2, 4))
    balance = check_choice("balance", balance, ("dp", "pp"))
    delta = check_real("delta", delta, lo=0.0, hi=0.9)
    nic = gbit_per_s(check_real("nic_gbps", nic_gbps, lo=10.0, hi=3200.0, unit="Gb/s"))
    offload = check_bool("offload", offload)
    kv = check_choice("kv_heads", check_int("kv_heads", kv_heads, lo=1), (8, 32))
    setup = _setup(pp, cap * pp, ctx, nic, kv)
    static = _static(mix, ctx, weight, setup)
    items, naive = _naive(mix, ctx, weight, setup, offload)
    bal = schedule_step(_batch(mix, ctx, weight), setup, "balanced", balance=balance,
                        delta=delta, offload=offload, items=items, _naive=naive)
    steps = {"static mesh": static, "naive HDP": naive, "balanced HDP": bal}
    n_max = np.ceil(bal.items.tokens / setup.capacity)
    return HdpExploreState(
        steps={k: v.step_time for k, v in steps.items()},
        busy={k: np.sort(v.busy)[::-1] for k, v in steps.items()},
        comm_share={k: v.comm_share for k, v in steps.items()},
        microbatches=(int(bal.microbatches.min()), int(bal.microbatches.max())),
        d_cp=setup.d_cp, d_hdp=setup.d_hdp, capacity=setup.capacity, pp=pp,
        fallback=bal.fallback, offloaded=int(((bal.items.width < n_max) & (n_max > 1)).sum()),
        widened=bal.widened,
    )


@lru_cache(maxsize=16)
def _setup(pp, capacity, context, nic, kv):
    from ..schedulers.sequences import LLAMA_7B_GQA, HdpSetup

    model = LLAMA_7B_GQA if kv == 8 else replace(LLAMA_7B_GQA, name="LLaMA-7B", kv_heads=kv)
    return HdpSetup(n_gpus=_N_GPUS, tp=2, pp=pp, capacity=capacity, context=context,
                    model=model, nic_bw=nic)


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


def draw_hdp(fig, state: HdpExploreState, **_):
    """Left: every rank's busy time, busiest first, and each scheme's step time (dashed), as a
    share of the static mesh's step. Right: each scheme's throughput over the static mesh's (log).
    Returns the layout key (constant: the axes never change, only the data drawn on them)."""
    names = SCHEME_NAMES

    def build(fig):
        ax_b, ax_s = fig.subplots(1, 2, width_ratios=(1.6, 1.0))
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.7, wspace=0.24)
        lines, steps = [], []
        for name in names:
            col = plots.color(name)
            (ln,) = ax_b.plot([], [], color=col, lw=1.6, drawstyle="steps-post", label=name)
            (st,) = ax_b.plot([0, 1], [1, 1], color=col, lw=0.9, ls="--")
            lines.append(ln)
            steps.append(st)
        ax_b.set_xlim(0, 1)
        ax_b.set_ylim(0, _Y_SHARE)
        ax_b.set_xlabel("ranks, busiest first (fraction of the pool)")
        ax_b.set_ylabel("time / static mesh's step")
        ax_b.set_title("busy time per rank (solid), step (dashed)", loc="left")
        bars = ax_s.bar(range(3), [1, 1, 1], bottom=_Y_SPEEDUP[0],
                        color=[plots.color(n) for n in names], width=0.6)
        ax_s.set_yscale("log")
        ax_s.set_ylim(*_Y_SPEEDUP)
        ticks = [0.25, 0.5, 1, 2, 4, 8, 16, 32]
        ax_s.set_yticks(ticks, [f"{t:g}×" for t in ticks])
        ax_s.minorticks_off()
        ax_s.axhline(1.0, color=plots.COLORS["ink"], lw=0.7)
        ax_s.set_xticks(range(3), ["static\nmesh", "naive\nHDP", "balanced\nHDP"])
        ax_s.set_ylabel("throughput / static mesh")
        ax_s.set_title("speed-up (model)", loc="left")
        ax_s.grid(axis="x", visible=False)
        labels = [ax_s.text(k, 1, "", ha="center", va="bottom", fontsize=8) for k in range(3)]
        fig.legend(handles=lines, loc="upper left", bbox_to_anchor=(0.07, 0.855), ncol=3,
                   fontsize=8.5, frameon=False)
        title = fig.suptitle("", fontsize=9, x=0.02, ha="left", y=0.995, va="top")
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
    note = ", naive plan kept" if state.fallback else ""
    off = f", {state.offloaded} offloaded" if state.offloaded else ""
    if state.widened:
        off += f", {state.widened} ring{'s' if state.widened > 1 else ''} widened"
    unit = "pipelines" if state.pp > 1 else "ranks"
    t = state.steps
    art["title"].set_text(
        f"step: static {t['static mesh']:.1f} s, naive {t['naive HDP']:.1f} s, balanced "
        f"{t['balanced HDP']:.1f} s (model)\n{state.d_hdp} {unit} × {_k(state.capacity)}, "
        f"d_cp = {state.d_cp}; balanced runs {mb[0]}–{mb[1]} micro-batches{note}{off}")
    return "fixed"


def bytescale_explorer(show: bool = True) -> Explorer:
    """Notebook 02's widget: context, C, data mix and tail, d_pp, balance, δ, NIC, offload, KV."""
    controls = {
        "context": dropdown(list(CONTEXTS), "2M", "context"),
        "capacity_k": dropdown([("4K", 4), ("8K", 8), ("16K", 16), ("32K", 32)], 8,
                               "C per rank and stage"),
        "mix": dropdown([("Byted-like", "byted"), ("GitHub-like", "github")], "byted", "data"),
        "tail_weight": slider(0.25, 2.0, 0.25, 1.0, "tail weight ×"),
        "d_pp": dropdown([1, 2, 4], 1, "pipeline stages d_pp"),
        "balance": dropdown([("DP-Balance", "dp"), ("PP-Balance", "pp")], "dp", "balance"),
        "delta": slider(0.0, 0.5, 0.05, 0.0, "tolerance δ"),
        "nic_gbps": slider(100.0, 800.0, 50.0, 400.0, "NIC (Gb/s)"),
        "kv_heads": dropdown([("8 (GQA)", 8), ("32 (no GQA)", 32)], 8, "KV heads"),
        "offload": toggle(False, "selective offload"),
    }
    presets = {
        "case study: Byted-like, 2M, GQA": {"context": "2M", "capacity_k": 8, "mix": "byted",
                                            "tail_weight": 1.0, "d_pp": 1, "balance": "dp",
                                            "delta": 0.0, "nic_gbps": 400.0, "kv_heads": 8,
                                            "offload": False},
        "GitHub-like, 2M": {"mix": "github", "context": "2M", "d_pp": 1},
        "no GQA + offload": {"kv_heads": 32, "offload": True},
        "pipelines: d_pp = 2, PP-Balance": {"d_pp": 2, "balance": "pp"},
        "slow network (100 Gb/s)": {"nic_gbps": 100.0},
    }
    return explore(hdp_explore_state, draw_hdp, controls, presets=presets, show=show,
                   figsize=(8.8, 3.4), columns=3)


# --------------------------------------------------------------------------- figure recipes


def length_figure(labels, sample_share, token_share, cdf: dict, facts: dict):
    """Left: share of samples and of tokens per length bucket (``labels``). Right: cumulative
    share of samples and of tokens in sequences up to a length (``cdf``: ``{"length": x,
    "samples": ..., "tokens": ...}``), with the paper's facts (``facts``: ``{label: (x, y)}``)."""
    fig, (ax, ax2) = plots.figure(11.5, 3.9, ncols=2, width_ratios=(1.35, 1.0))
    x = np.arange(len(labels))
    with plots.style():
        ax.bar(x - 0.2, 100 * np.asarray(sample_share), 0.4, color=plots.COLORS["sky"],
               label="share of samples")
        ax.bar(x + 0.2, 100 * np.asarray(token_share), 0.4, color=plots.COLORS["blue"],
               label="share of tokens")
        ax.set_yscale("log")
        ax.set_ylim(0.005, 100)
        ax.set_xticks(x, labels, rotation=45, ha="right")
        ax.set_xlabel("sequence length bucket (tokens, lower edge)")
        ax.set_ylabel("share (%, log scale)")
        ax.set_title("one 32M-token Byted-like batch (model)", loc="left")
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "inside", loc="upper center", ncol=2)
        ax2.plot(cdf["length"], 100 * cdf["samples"], color=plots.COLORS["sky"],
                 drawstyle="steps-post", label="samples ≤ length (model)")
        ax2.plot(cdf["length"], 100 * cdf["tokens"], color=plots.COLORS["blue"],
                 drawstyle="steps-post", label="tokens in samples ≤ length (model)")
        for k, (label, (fx, fy)) in enumerate(facts.items()):
            ax2.plot([fx], [100 * fy], "s", color=plots.color("paper"), ms=5,
                     label="Byted facts [paper, Fig. 4]" if k == 0 else None)
            ax2.annotate(label, (fx, 100 * fy), xytext=(6, -12 if k else 4),
                         textcoords="offset points", fontsize=7.5)
        ax2.set_xscale("log", base=2)
        ticks = [256, 1024, 4096, 16384, 65536, 262144, 2**21]
        ax2.set_xticks(ticks, ["256", "1K", "4K", "16K", "64K", "256K", "2M"])
        ax2.minorticks_off()
        ax2.set_ylim(0, 101)
        ax2.set_xlabel("sequence length (tokens)")
        ax2.set_ylabel("cumulative share (%)")
        ax2.set_title("few long samples, many of the tokens", loc="left")
        plots.legend(ax2, "below", ncol=2)
    return fig


def cost_figure(cost, mlp_only, fig6a: dict, pack_times, *, pack_tokens: int):
    """Left: per-layer attention and MLP time against length: ``cost`` (MLP + projections) and
    ``mlp_only`` (the MLP alone) as lines, ByteScale's Fig. 6a readings (``fig6a``) as markers.
    Right: per-layer time of every ``pack_tokens`` micro-batch of a batch, sorted
    (``pack_times`` in s)."""
    fig, (ax, ax2) = plots.figure(11.5, 3.7, ncols=2)
    s = np.geomspace(2048, 2**18, 120)
    pts = np.asarray(fig6a["tokens"], dtype=float)
    with plots.style():
        ax.plot(s, cost.attention(s) * 1e3, color=plots.COLORS["red"],
                label="attention, fit α s² + β s (model)")
        mlp_rate = mlp_only.beta_linear
        ax.plot(s, mlp_rate * s * 1e3, color=plots.COLORS["green"], label="MLP, fit (model)")
        ax.plot(s, cost.linear(s) * 1e3, color=plots.COLORS["green"], ls="--",
                label="MLP + projections (model)")
        ax.plot(pts, fig6a["attention_ms"], "o", color=plots.COLORS["red"], mfc="white",
                label="attention [fig-OCR, Fig. 6a]")
        ax.plot(pts, fig6a["mlp_ms"], "s", color=plots.COLORS["green"], mfc="white",
                label="MLP [fig-OCR, Fig. 6a]")
        cross = cost.crossover(mlp_rate)
        ax.axvline(cross, color=plots.COLORS["grey"], lw=0.8, ls=":")
        ax.annotate(f"equal at {cross / 1024:.1f}K", (cross, 0.4), xytext=(4, 0),
                    textcoords="offset points", fontsize=7.5, color=plots.COLORS["grey"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = [2**k for k in range(11, 19)]
        ax.set_xticks(ticks, [f"{t // 1024}K" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel("one layer, forward (ms)")
        ax.set_title("attention grows as s², the rest as s", loc="left")
        plots.legend(ax, "inside")
        t = np.sort(np.asarray(pack_times))[::-1] * 1e3
        ax2.bar(np.arange(t.size), t, width=1.0, color=plots.COLORS["blue"], lw=0)
        ax2.axhline(np.median(t), color=plots.COLORS["ink"], lw=0.8, ls="--")
        ax2.annotate(f"median {np.median(t):.1f} ms", (t.size * 0.6, np.median(t)),
                     xytext=(0, 4), textcoords="offset points", fontsize=7.5)
        ax2.set_xlim(-0.5, t.size - 0.5)
        ax2.set_ylim(0, t.max() * 1.12)
        ax2.set_xlabel(f"{_k(pack_tokens)}-token micro-batches, most expensive first")
        ax2.set_ylabel("one layer, forward (ms)")
        ax2.set_title(f"equal tokens, up to {t.max() / t.min():.1f}× apart in time (model)",
                      loc="left")
        ax2.grid(axis="x", visible=False)
    return fig


def ring_figure(pairs: dict, chunk_tokens, step_compute, step_comm: dict, thresholds: dict):
    """Left: causal query-key pairs per rank, contiguous vs zig-zag chunks (``pairs``: ``{scheme:
    array}``). Right: one ring step's compute and KV transfer (s) against the tokens each rank
    holds (``step_comm``: ``{label: array}``), with the hiding thresholds (``thresholds``:
    ``{label: tokens}``)."""
    fig, (ax, ax2) = plots.figure(11.5, 3.6, ncols=2, width_ratios=(1.0, 1.3))
    n = len(next(iter(pairs.values())))
    x = np.arange(n)
    shades = {"contiguous": plots.COLORS["grey"], "zigzag": plots.COLORS["green"]}
    with plots.style():
        for k, (name, v) in enumerate(pairs.items()):
            v = np.asarray(v, dtype=float)
            ax.bar(x + (k - 0.5) * 0.38, v / v.mean(), 0.38, color=shades.get(name),
                   label=f"{name} chunks")
        ax.axhline(1.0, color=plots.COLORS["ink"], lw=0.7, ls=":")
        ax.set_xticks(x)
        ax.set_xlabel("rank in the ring")
        ax.set_ylabel("causal work / mean")
        ax.set_title(f"causal attention work, ring of {n}", loc="left")
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "inside")
        c = np.asarray(chunk_tokens, dtype=float)
        ax2.plot(c, np.asarray(step_compute) * 1e3, color=plots.color("compute"), lw=1.8,
                 label="attention compute of one step")
        styles = ("-", "--", ":")
        for (label, v), ls in zip(step_comm.items(), styles, strict=False):
            ax2.plot(c, np.asarray(v) * 1e3, color=plots.COLORS["purple"], ls=ls,
                     label=f"KV transfer, {label}")
        for k, th in enumerate(thresholds.values()):
            ax2.axvline(th, color=plots.COLORS["grey"], lw=0.8, ls=styles[k % 3])
            ax2.annotate(f"{th / 1024:.1f}K", (th, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(3, -12 - 11 * k), textcoords="offset points", fontsize=7.5,
                         color=plots.COLORS["grey"])
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ticks = [2**k for k in range(10, 18)]
        ax2.set_xticks(ticks, [f"{t // 1024}K" for t in ticks])
        ax2.minorticks_off()
        ax2.set_xlabel("tokens each rank holds (c)")
        ax2.set_ylabel("one ring step, one layer (ms)")
        ax2.set_title("a step hides its transfer right of the line (model)", loc="left")
        plots.legend(ax2, "right")
    return fig


def timeline_figure(steps: dict):
    """One row per scheme: every rank's timeline and, right, every rank's busy time sorted.

    A ring piece is drawn as its compute (purple) followed by the share of its time that is ring
    transfer not hidden by compute (orange); a pack on one rank is blue; idle is white. ``steps``:
    ``{name: SequenceStep}`` with ``pp = 1``."""
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = list(steps)
    fig = plots.NotebookFigure(figsize=(11.5, 2.3 * len(names) + 0.6), layout="constrained")
    cols = {"ring": plots.COLORS["purple"], "exposed": plots.COLORS["orange"],
            "pack": plots.COLORS["blue"]}
    tmax = max(s.step_time for s in steps.values())

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
            ax.axvline(st.compute_time, color=plots.COLORS["ink"], lw=1.0, ls="--")
            ax.set_ylim(R - 0.5, -0.5)
            ax.set_xlim(0, tmax * 1.02)
            ax.set_ylabel("rank")
            ax.grid(False)
            ax.set_title(f"{name}: step {st.step_time:.1f} s (model)", loc="left")
            if row == len(names) - 1:
                ax.set_xlabel("time in the step (s)")
            axb = fig.add_subplot(grid[row, 1])
            busy = np.sort(st.busy)[::-1]
            axb.fill_between(np.arange(busy.size), busy, step="post",
                             color=plots.color(name), lw=0)
            axb.axhline(st.compute_time, color=plots.COLORS["ink"], lw=1.0, ls="--")
            axb.set_xlim(0, busy.size)
            axb.set_ylim(0, tmax * 1.02)
            axb.set_ylabel("busy (s)")
            axb.set_title(f"busy {busy.min():.1f}–{busy.max():.1f} s "
                          f"({busy.max() / busy.min():.1f}×)", loc="left")
            if row == len(names) - 1:
                axb.set_xlabel("ranks, busiest first")
        fig.legend(handles=[Patch(color=cols["ring"], label="ring piece: compute"),
                            Patch(color=cols["exposed"], label="ring piece: transfer not hidden"),
                            Patch(color=cols["pack"], label="pack on one rank (no ring)"),
                            Patch(facecolor="white", edgecolor=plots.COLORS["grey"],
                                  label="idle"),
                            Line2D([], [], color=plots.COLORS["ink"], ls="--",
                                   label="last rank done")],
                   loc="outside lower center", ncol=5, fontsize=8.5)
    return fig


def context_figure(contexts, throughput: dict, *, dashed: dict | None = None):
    """Throughput (tokens/s) against the context length for each scheme (``throughput``:
    ``{name: array}``, solid) and optionally a second data mix (``dashed``, same keys)."""
    from matplotlib.ticker import NullLocator

    fig, ax = plots.figure(8.0, 3.6)
    x = np.asarray(contexts)
    with plots.style():
        for name, v in throughput.items():
            ax.plot(x, np.asarray(v) / 1e6, marker="o", color=plots.color(name),
                    label=f"{name}, Byted-like")
        for name, v in (dashed or {}).items():
            ax.plot(x, np.asarray(v) / 1e6, marker="s", ms=4, ls="--", color=plots.color(name),
                    label=f"{name}, GitHub-like")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [_k(int(c)) for c in x])
        ax.minorticks_off()
        ax.set_yscale("log")
        ticks = [0.25, 0.5, 1, 2, 4, 8]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("context length (tokens; static mesh d_cp = context / 8K)")
        ax.set_ylabel("throughput (M tokens/s, log)")
        ax.set_title("32M tokens per step on 1,024 GPUs (model)", loc="left")
        plots.legend(ax, "right")
    return fig


def ablation_figure(rungs, paper, models: dict):
    """The ablation ladder: cumulative speed-up over the static mesh after each step (``rungs``:
    labels), the paper's (``paper``, ``None`` where it has none) beside the model's (``models``:
    ``{label: list}``)."""
    fig, ax = plots.figure(9.0, 3.6)
    x = np.arange(len(rungs))
    k = 1 + len(models)
    wd = 0.8 / k
    shades = [plots.color("model"), plots.COLORS["sky"], plots.COLORS["grey"]]
    with plots.style():
        vals = [np.nan if v is None else v for v in paper]
        bars = ax.bar(x - 0.4 + wd / 2, vals, wd, color=plots.color("paper"),
                      label="ByteScale [paper, production cluster]")
        series = [(bars, vals)]
        for j, (label, v) in enumerate(models.items()):
            b = ax.bar(x - 0.4 + wd * (j + 1.5), v, wd, color=shades[j % 3], label=label)
            series.append((b, v))
        for b, v in series:
            for rect, val in zip(b, v, strict=True):
                x_mid = rect.get_x() + rect.get_width() / 2
                if val is not None and np.isfinite(val):
                    ax.text(x_mid, val, f"{val:.2f}", ha="center", va="bottom", fontsize=7)
                else:
                    ax.text(x_mid, 0.1, "not modelled", ha="center", va="bottom", fontsize=6.5,
                            rotation=90, color=plots.COLORS["grey"])
        ax.axhline(1.0, color=plots.COLORS["ink"], lw=0.7)
        ax.set_xticks(x, rungs)
        ax.set_ylabel("speed-up over the static mesh (×)")
        ax.set_title("the ablation ladder, cumulative", loc="left")
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "right")
    return fig
