"""Notebook 01 (Attack of the Bubbles): a pipeline iteration under a slow link.

The explorer (:func:`pipemorph_explorer`) and the notebook's figure recipes (:func:`gantt_panels`,
:func:`knee_figure`, :func:`sweep_figure`, :func:`trace_figure`), which draw values the notebook
computed with :mod:`uneven.schedulers.pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import plots
from .._fields import Checked, any_value, check_fields, instance, integer, real, strings
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    check_str,
)
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider, toggle
from ._common import check_dict, curve, instances, is_int, is_real

__all__ = ["OP_RATIOS", "PIPELINE_CHOICES", "PipeMorphState", "pipemorph_state", "draw_pipemorph",
           "pipemorph_explorer", "gantt_panels", "knee_figure", "sweep_figure", "trace_figure"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("delay_ms", (0.0, 5.0, 10.0, 20.0, 30.0))


#: Op-time shapes t_F : t_B : t_W offered by the notebook 01 explorer (B = input gradient).
OP_RATIOS = {
    "equal (F = B = W)": (1.0, 1.0, 1.0),
    "F : B : W = 1 : 1 : 0.5": (1.0, 1.0, 0.5),
    "backward-heavy 1 : 2 : 1": (1.0, 2.0, 1.0),
    "forward-heavy 2 : 1 : 1": (2.0, 1.0, 1.0),
}
PIPELINE_CHOICES = ("1f1b", "zb-h1", "zb-h2", "pipemorph", "manual")


@dataclass(frozen=True)
class PipeMorphState(Checked):
    """One iteration under a delay, next to the same schedule on a healthy network (times in s)."""

    result: object = instance("uneven.schedulers.pipeline:PipelineResult", "from simulate_pipeline")
    healthy_time: float = real(lo=0.0, unit="s")
    delay: float = real(lo=0.0, unit="s")
    link: int = integer(lo=0, hi=lambda s: max(s.result.schedule.p - 2, 0))
    warmups: tuple = any_value()
    notes: tuple = strings(default=())

    def __post_init__(self):
        check_fields(self)
        if not isinstance(self.warmups, tuple) or not all(is_int(x) for x in self.warmups):
            raise ValueError(f"warmups must be a tuple of integers; got {_show(self.warmups)}")


def pipemorph_state(delay_ms: float = 10.0, link: int = 0, schedule: str = "zb-h2",
                   delta: int = 3, ratio: str = "equal (F = B = W)", t_ms: float = 10.0,
                   p: int = 4, m: int = 12, hol: bool = False, cap: int = 0) -> PipeMorphState:
    """Simulate one iteration with ``delay_ms`` ms of one-way delay on link ``link``.

    ``schedule``: '1f1b', 'zb-h1', 'zb-h2' (replayed healthy plans), 'pipemorph' (re-planned
    warm-ups, dispatched live), or 'manual' (zero-bubble order with slackness ``delta`` on every
    link, replayed). ``ratio`` names an entry of :data:`OP_RATIOS`; ``t_ms`` scales it (ms).
    ``hol``: sends block the GPU stream. ``cap``: memory cap on stage 0's in-flight micro-batches
    for 'pipemorph' (0 = none). Ranges: ``delay_ms`` 0..1e9, ``t_ms`` 1e-6..1e9, ``p`` 2..16,
    ``m`` 1..256.
    """
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    schedule = check_choice("schedule", schedule, PIPELINE_CHOICES)
    ratio = check_choice("ratio", ratio, OP_RATIOS)
    p = check_int("p", p, lo=2, hi=16)
    m = check_int("m", m, lo=1, hi=256)
    hol = check_bool("hol", hol)
    cap = check_int("cap", cap, lo=0)
    notes = []
    link = check_int("link", link, lo=0)
    if link > p - 2:  # the slider allows 8 stages; a smaller pipeline has fewer links
        notes.append(f"link {link}↔{link + 1} does not exist with p = {p}: using {p - 2}↔{p - 1}")
        link = p - 2
    delay = check_real("delay_ms", delay_ms, lo=0.0, hi=1e9, unit="ms") * 1e-3
    t = check_real("t_ms", t_ms, lo=1e-6, hi=1e9, unit="ms") * 1e-3
    tf, tb, tw = (t * x for x in OP_RATIOS[ratio])
    delays = np.zeros(p - 1)
    delays[link] = delay
    kw = {"hol": hol}
    if schedule == "1f1b":
        sched, mode = pipeline_schedule("1f1b", p, m), "replay"
    elif schedule in ("zb-h1", "zb-h2"):
        sched, mode = pipeline_schedule(schedule, p, m), "replay"
    elif schedule == "manual":
        delta = check_int("delta", delta, lo=1, hi=16)
        warm = [1 + delta * (p - 1 - i) for i in range(p)]
        if max(warm) > m:
            notes.append(f"warm-ups above m = {m} are clipped to m")
        sched, mode = pipeline_schedule("zb", p, m, warmups=warm), "replay"
    else:
        sched, mode = pipeline_schedule("zb-h2", p, m), "replan"
        if cap:
            kw["cap"] = check_int("cap", cap, lo=1)
    if cap and schedule != "pipemorph":
        notes.append("the memory cap applies to PipeMorph's re-plan only")
    res = simulate_pipeline(sched, tf, tb, tw, delays=delays, mode=mode, **kw)
    healthy = _healthy_time(sched, tf, tb, tw, mode, **kw)
    return PipeMorphState(res, healthy, delay, link, res.warmups, tuple(notes))


@lru_cache(maxsize=64)
def _healthy_time(sched, tf, tb, tw, mode, **kw) -> float:
    # The healthy iteration does not depend on the delay slider: compute it once per setting.
    from ..schedulers.pipeline import simulate_pipeline

    return simulate_pipeline(sched, tf, tb, tw, delays=0.0, mode=mode, **kw).iteration_time


@plots.recipe
def draw_pipemorph(fig, state: PipeMorphState, **_):
    """Gantt of the stages' GPU streams, with the iteration time against the healthy one."""
    from matplotlib.figure import Figure

    from ..schedulers.pipeline import OP_KINDS

    check_instance("fig", fig, Figure)
    check_instance("state", state, PipeMorphState, "from pipemorph_state(...)")

    def build(fig):
        ax = fig.subplots()
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.1, right=0.86, bottom=0.17, top=0.74)
        live = plots.LiveGantt(ax, OP_KINDS, time_unit="ms")
        title = fig.suptitle("", fontsize=plots.PANEL, x=0.02, ha="left")
        return {"ax": ax, "live": live, "title": title,
                "dynamic": [*live.collections, title]}

    art = reuse(fig, "pipeline", build)
    r = state.result
    p = r.schedule.p
    on_gpu = r.resource < p  # the stages' GPU streams (CPU senders are left out of the picture)
    layout = art["live"].update(r.resource[on_gpu], r.start[on_gpu], r.finish[on_gpu],
                                r.kind[on_gpu], xmax=plots.nice_ceiling(r.iteration_time))
    extra = r.iteration_time - state.healthy_time
    art["title"].set_text(
        f"iteration {r.iteration_time * 1e3:,.0f} ms vs {state.healthy_time * 1e3:,.0f} ms healthy "
        f"(+{extra * 1e3:,.0f} ms for {state.delay * 1e3:g} ms on link "
        f"{state.link}↔{state.link + 1}) · model\n"
        f"warm-ups {list(state.warmups)} · micro-batches held at the peak "
        f"{[int(x) if float(x).is_integer() else round(float(x), 1) for x in r.peak_memory]} · "
        f"mean bubble {100 * float(np.mean(r.bubble_fraction)):.0f}%"
        + (f"\nnote: {'; '.join(state.notes)}" if state.notes else "")
    )
    return layout


def pipemorph_explorer(show: bool = True) -> Explorer:
    """Notebook 01's widget: delay, link, schedule, op-time shape, p, m, HOL, memory cap."""
    controls = {
        "delay_ms": slider(0.0, 60.0, 1.0, 10.0, "delay (ms)"),
        "link": int_slider(0, 6, 1, 0, "slow link i↔i+1"),
        "schedule": dropdown([("1F1B (replayed)", "1f1b"), ("ZB-H1 (replayed)", "zb-h1"),
                              ("ZB-H2 (replayed)", "zb-h2"), ("PipeMorph re-plan", "pipemorph"),
                              ("manual slackness Δ", "manual")], "zb-h2", "schedule"),
        "delta": int_slider(1, 8, 1, 3, "manual Δ"),
        "ratio": dropdown(list(OP_RATIOS), "equal (F = B = W)", "t_F : t_B : t_W"),
        "p": int_slider(2, 8, 1, 4, "stages p"),
        "m": int_slider(4, 32, 1, 12, "micro-batches m"),
        "hol": toggle(False, "sends block the GPU stream (HOL)"),
        "cap": int_slider(0, 32, 1, 0, "re-plan cap w₀ (0: none)"),
    }
    presets = {
        "absorbed: ZB-H2, 10 ms": {"delay_ms": 10.0, "link": 0, "schedule": "zb-h2", "p": 4,
                                   "m": 12, "hol": False},
        "cascade: ZB-H2, 30 ms": {"delay_ms": 30.0, "link": 0, "schedule": "zb-h2", "p": 4,
                                  "m": 12, "hol": False},
        "PipeMorph, 30 ms": {"delay_ms": 30.0, "link": 0, "schedule": "pipemorph", "p": 4,
                             "m": 12},
        "HOL blocking, 30 ms": {"delay_ms": 30.0, "schedule": "zb-h2", "hol": True},
    }
    return explore(pipemorph_state, draw_pipemorph, controls, presets=presets, show=show,
                   figsize=(9.0, 3.2), columns=3)


# --------------------------------------------------------------------------- figure recipes

_DELTA_CMAP = plots.RAMP


def gantt_panels(runs: dict, *, link: int = 0, title: str | None = None):
    """One Gantt row per run (``{delay_s: PipelineResult}``): the stages' GPU streams under a
    delay on ``link``, iteration time in each panel's title (model). At most 12 runs."""
    from ..schedulers.pipeline import OP_KINDS, PipelineResult

    check_dict("runs", runs, key=lambda c: is_real(c, lo=0.0), hi=12)
    instances("runs", runs, PipelineResult)
    link = check_int("link", link, lo=0)
    title = None if title is None else check_str("title", title, max_len=500)
    n = len(runs)
    fig, axes = plots.figure(9.5, 2.35 * n + 0.4, nrows=n, sharex=True)
    axes = np.atleast_1d(axes)
    for k, (ax, (c, r)) in enumerate(zip(axes, runs.items(), strict=True)):
        gpu = r.resource < r.schedule.p
        plots.gantt(ax, r.resource[gpu], r.start[gpu], r.finish[gpu], r.kind[gpu],
                    kind_names=OP_KINDS, labels=r.microbatch[gpu], legend=(k == 0),
                    title=f"delay {c * 1e3:g} ms on link {link}↔{link + 1}: iteration "
                          f"{r.iteration_time * 1e3:.0f} ms (model)")
        if k < n - 1:
            ax.set_xlabel("")
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=plots.TITLE, fontweight="bold")
    return fig


@plots.recipe
def knee_figure(curves: dict, knees: dict, orders: dict, *, artifact: dict | None = None,
                t: float = 0.01):
    """Left: extra iteration time against the delay for several slackness values (``curves``:
    ``{Δ: DelaySweep}``; ``knees``: ``{Δ: c* (s)}``, dotted), with the PipeMorph artifact's own
    values as markers (``artifact``: ``{Δ: extra ms at delays 0, 5, ...}``). Right: one
    slackness, three orders of the same warm-ups (``orders``: ``{label: DelaySweep}``)."""
    import matplotlib

    from ..schedulers.pipeline import DelaySweep

    check_dict("curves", curves, key=is_int, hi=16)
    instances("curves", curves, DelaySweep)
    check_dict("knees", knees, key=lambda d: d in curves, item=lambda c: is_real(c, lo=0.0),
               hi=16)
    if set(knees) != set(curves):
        raise ValueError(f"knees must give a knee for every curve ({sorted(curves)}); got "
                         f"{_show(sorted(knees))}")
    check_dict("orders", orders, key=lambda k: isinstance(k, str), hi=3)
    instances("orders", orders, DelaySweep)
    for name, group in (("curves", curves), ("orders", orders)):
        if any(sw.delays.size == 0 for sw in group.values()):
            raise ValueError(f"{name} must hold sweeps of at least one delay")
    if artifact is not None:
        check_dict("artifact", artifact, key=is_int, hi=16)
        artifact = {d: curve(f"artifact[{d}]", v) for d, v in artifact.items()}
    t = check_real("t", t, lo=0.0, lo_open=True, unit="s")
    fig, (ax, ax2) = plots.figure(11, 4.0, ncols=2, width_ratios=(1.25, 1.0))
    cmap = matplotlib.colormaps[_DELTA_CMAP]
    deltas = sorted(curves)
    with plots.style():
        for i, d in enumerate(deltas):
            sw = curves[d]
            col = cmap(0.1 + 0.8 * i / max(len(deltas) - 1, 1))
            ax.plot(sw.delays * 1e3, sw.extra * 1e3, color=col, lw=1.6, label=f"Δ = {d}")
            ax.axvline(knees[d] * 1e3, color=col, lw=0.8, ls=":")
            if artifact and d in artifact:
                xs = np.arange(len(artifact[d])) * 5.0
                ax.plot(xs, artifact[d], "o", mfc="none", mec=plots.color("ink"), ms=4.5,
                        mew=0.8, label="artifact's simulator [repo]" if i == 0 else None)
        cmax = float(max(sw.delays.max() for sw in curves.values())) * 1e3
        ax.plot([0, cmax], [0, cmax], color=plots.color("healthy"), lw=0.8, ls="--",
                label="+c")
        ax.set_xlabel("one-way delay c on the link (ms)")
        ax.set_ylabel("extra iteration time (ms)")
        ax.set_ylim(0, 400)
        ax.set_xlim(0, cmax)
        ax.set_title(f"knees at (Δ − 1)·t (dotted), 2 stages, m = 30, t = {t * 1e3:g} ms "
                     "(model)")
        plots.legend(ax, "below", ncol=4)
        styles = ("-", "--", "-.")
        keys = ("order: artifact's plan", "order: W's at the tail", "order: memory budget")
        for (label, sw), ls, key in zip(orders.items(), styles, keys, strict=False):
            ax2.plot(sw.delays * 1e3, sw.extra * 1e3, ls=ls, lw=1.6, label=label,
                     color=plots.color(key))
        cmax2 = float(max(sw.delays.max() for sw in orders.values())) * 1e3
        ax2.plot([0, cmax2], [0, cmax2], color=plots.color("healthy"), lw=0.8, ls=":",
                 label="+c")
        ax2.plot([0, cmax2], [0, 2 * cmax2], color=plots.color("grey"), lw=0.8, ls=":",
                 label="+2c")
        ax2.set_xlim(0, cmax2)
        ax2.set_ylim(0, 3 * cmax2)
        ax2.set_xlabel("one-way delay c on the link (ms)")
        ax2.set_ylabel("extra iteration time (ms)")
        ax2.set_title("Δ = 3: where the W's sit changes the cost (model)")
        plots.legend(ax2, "below", ncol=2)
    return fig


_APPROACH = {"1F1B": "1F1B", "ZB-H2": "ZB-H2", "PipeMorph": "PipeMorph"}


@plots.recipe
def sweep_figure(sweeps: dict, healthy: float):
    """Iteration time (top) and stage 0's peak memory (bottom) against the delay on two links.

    ``sweeps``: ``{(link, name): DelaySweep}`` with ``name`` one of '1F1B', 'ZB-H2',
    'PipeMorph'; ``healthy``: the healthy iteration of ZB-H2 (s), drawn as healthy + c."""
    from ..schedulers.pipeline import DelaySweep

    check_dict("sweeps", sweeps, key=lambda k: isinstance(k, tuple) and len(k) == 2
               and is_int(k[0]) and k[0] >= 0 and k[1] in _APPROACH, hi=24)
    instances("sweeps", sweeps, DelaySweep)
    if any(sw.delays.size == 0 for sw in sweeps.values()):
        raise ValueError("sweeps must hold sweeps of at least one delay")
    healthy = check_real("healthy", healthy, lo=0.0, unit="s")
    links = sorted({k for k, _ in sweeps})
    if len(links) > 6:
        raise ValueError(f"sweeps must cover at most 6 links; got {len(links)}")
    fig, axes = plots.figure(10.5, 6.0, ncols=len(links), nrows=2, sharex="col",
                             height_ratios=(1.6, 1.0))
    axes = np.asarray(axes).reshape(2, len(links))
    with plots.style():
        for col, link in enumerate(links):
            ax, axm = axes[0, col], axes[1, col]
            for (lk, name), sw in sweeps.items():
                if lk != link:
                    continue
                c = plots.color(_APPROACH[name])
                ax.plot(sw.delays * 1e3, sw.iteration_times * 1e3, color=c, lw=2.2, label=name)
                axm.plot(sw.delays * 1e3, sw.peak_memory[:, 0], color=c, lw=1.6, label=name,
                         drawstyle="steps-post")
            cs = next(sw.delays for (lk, _), sw in sweeps.items() if lk == link)
            # drawn on top: PipeMorph runs along this line
            ax.plot(cs * 1e3, (healthy + cs) * 1e3, color=plots.color("healthy"), ls=(0, (3, 3)),
                    lw=0.9, label="ZB-H2 healthy + c", zorder=4)
            axm.set_ylim(0, None)
            ax.set_title(f"slow link {link}↔{link + 1}, p = 4, m = 30 (model)")
            axm.set_xlabel(f"one-way delay on link {link}↔{link + 1} (ms)")
            axm.yaxis.get_major_locator().set_params(integer=True)
        axes[0, 0].set_ylabel("iteration time (ms)")
        axes[1, 0].set_ylabel("stage 0 holds\n(micro-batches)")
        plots.legend(axes[0, -1], "right")
    return fig


@plots.recipe
def trace_figure(trace, results: dict, m: int, *, lines=("1F1B, HOL", "ZB-H2, HOL",
                                                          "PipeMorph")):
    """A delay trace replayed iteration by iteration (model): throughput of a few approaches
    over time, stage 0's peak memory, and every approach's mean throughput as bars.

    ``trace``: delays (s, ``[iterations, links]``); ``results``: ``{name: TraceResult}``;
    ``m``: micro-batches per iteration. Shaded spans are the trace's delay episodes."""
    from matplotlib.patches import Patch

    from ..schedulers.pipeline import TraceResult

    trace = as_float_array("trace", trace, ndim=2, lo=0.0, unit="s")
    if trace.shape[0] < 1 or trace.shape[0] > 100_000:
        raise ValueError(f"trace must have 1 to 100,000 iterations; got {trace.shape[0]}")
    check_dict("results", results, key=lambda k: isinstance(k, str), hi=16)
    instances("results", results, TraceResult)
    for n, r in results.items():
        if r.iteration_times.shape != (trace.shape[0],) or not r.total_time > 0:
            raise ValueError(f"results[{n!r}] must have one iteration time > 0 per trace row")
    m = check_int("m", m, lo=1)
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)) or not all(
        isinstance(n, str) and n in results for n in lines
    ):
        raise ValueError(f"lines must be a list of names in results; got {_show(lines)}")
    names = list(results)
    colors = {n: plots.color(_trace_key(n)) for n in names}
    dashes = {n: ((0, (4, 2)) if "cap" in n else "-") for n in names}
    fig = plots.NotebookFigure(figsize=(11.5, 5.6), layout="constrained")
    with plots.style():
        grid = fig.add_gridspec(2, 2, width_ratios=(2.3, 1.0), height_ratios=(1.4, 1.0))
        ax_thr = fig.add_subplot(grid[0, 0])
        ax_mem = fig.add_subplot(grid[1, 0], sharex=ax_thr)
        ax_bar = fig.add_subplot(grid[:, 1])
        it = np.arange(trace.shape[0])
        episode = trace.max(axis=1) > 0
        for ax in (ax_thr, ax_mem):
            ax.fill_between(it, 0, 1, where=episode, transform=ax.get_xaxis_transform(),
                            color=plots.color("red"), alpha=0.08, lw=0)
        for n in lines:
            ax_thr.plot(it, m / results[n].iteration_times, color=colors[n], ls=dashes[n],
                        lw=1.1, label=n)
        shown = [n for n in names if not ("1F1B" in n or "CPU" in n or n.startswith("re-plan"))]
        for n in shown:  # the fixed schedules last and on top: PipeMorph sits on them when healthy
            fixed = not n.startswith("PipeMorph")
            ax_mem.plot(it, results[n].peak_memory[:, 0], color=colors[n], ls=dashes[n],
                        lw=2.4 if fixed else 1.2, label=n, zorder=4 if fixed else 2,
                        drawstyle="steps-post")
        ax_mem.set_ylim(0, None)
        ax_thr.set_ylabel("micro-batches / s")
        ax_thr.set_title("throughput over the trace (model)")
        handles, labels = ax_thr.get_legend_handles_labels()
        handles.append(Patch(color=plots.color("red"), alpha=0.15))
        labels.append("delay episode")
        ax_thr.set_ylim(0, None)
        ax_thr.legend(handles, labels, loc="lower left", ncol=4, fontsize=plots.NOTE,
                      framealpha=0.9,
                      frameon=True)
        ax_mem.set_ylabel("stage 0 holds\n(micro-batches)")
        ax_mem.set_xlabel("iteration")
        ax_mem.set_title("activation memory of stage 0 (model)")
        ax_mem.legend(loc="lower left", ncol=3, fontsize=plots.NOTE, framealpha=0.9, frameon=True)
        mean = [m * trace.shape[0] / results[n].total_time for n in names]
        y = np.arange(len(names))
        ax_bar.barh(y, mean, color=[colors[n] for n in names],
                    hatch=[("//" if "cap" in n else "") for n in names], edgecolor="white")
        for yy, v in zip(y, mean, strict=True):
            ax_bar.text(v, yy, f" {v:.1f}", va="center", fontsize=plots.NOTE)
        ax_bar.set_yticks(y, names)
        ax_bar.invert_yaxis()
        ax_bar.set_xlim(0, max(mean) * 1.25)
        ax_bar.set_xlabel("mean throughput (micro-batches / s)")
        ax_bar.set_title("whole trace (model)")
        ax_bar.grid(axis="y", visible=False)
    return fig


def _trace_key(name: str) -> str:
    """The palette entry of a trace approach's name."""
    if name.startswith("1F1B"):
        return "1F1B"
    if "CPU sends" in name:
        return "offload only"
    if name.startswith("re-plan"):
        return "re-plan only"
    if name.startswith("PipeMorph"):
        return "PipeMorph"
    return "ZB-H2"


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "PipelineState": "PipeMorphState",
    "pipeline_state": "pipemorph_state",
    "draw_pipeline": "draw_pipemorph",
    "pipeline_explorer": "pipemorph_explorer",
})
