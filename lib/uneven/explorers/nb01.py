"""Notebook 01 (Attack of the Bubbles): a pipeline iteration under a slow link."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import plots
from .._validate import check_choice, check_int, check_real
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider, toggle

__all__ = ["OP_RATIOS", "PIPELINE_CHOICES", "PipelineState", "pipeline_state", "draw_pipeline",
           "pipeline_explorer"]


#: Op-time shapes t_F : t_B : t_W offered by the notebook 01 explorer (B = input gradient).
OP_RATIOS = {
    "equal (F = B = W)": (1.0, 1.0, 1.0),
    "F : B : W = 1 : 1 : 0.5": (1.0, 1.0, 0.5),
    "backward-heavy 1 : 2 : 1": (1.0, 2.0, 1.0),
    "forward-heavy 2 : 1 : 1": (2.0, 1.0, 1.0),
}
PIPELINE_CHOICES = ("1f1b", "zb-h1", "zb-h2", "pipemorph", "manual")


@dataclass(frozen=True)
class PipelineState:
    """One iteration under a delay, next to the same schedule on a healthy network (times in s)."""

    result: object
    healthy_time: float
    delay: float
    link: int
    warmups: tuple
    notes: tuple = ()


def pipeline_state(delay_ms: float = 10.0, link: int = 0, schedule: str = "zb-h2",
                   delta: int = 3, ratio: str = "equal (F = B = W)", t_ms: float = 10.0,
                   p: int = 4, m: int = 12, hol: bool = False, cap: int = 0) -> PipelineState:
    """Simulate one iteration with ``delay_ms`` ms of one-way delay on link ``link``.

    ``schedule``: '1f1b', 'zb-h1', 'zb-h2' (replayed healthy plans), 'pipemorph' (re-planned
    warm-ups, dispatched live), or 'manual' (zero-bubble order with slackness ``delta`` on every
    link, replayed). ``ratio`` names an entry of :data:`OP_RATIOS`; ``t_ms`` scales it (ms).
    ``hol``: sends block the GPU stream. ``cap``: memory cap on stage 0's in-flight micro-batches
    for 'pipemorph' (0 = none).
    """
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    schedule = check_choice("schedule", schedule, PIPELINE_CHOICES)
    ratio = check_choice("ratio", ratio, OP_RATIOS)
    p = check_int("p", p, lo=2, hi=16)
    m = check_int("m", m, lo=1, hi=256)
    notes = []
    link = check_int("link", link, lo=0)
    if link > p - 2:  # the slider allows 8 stages; a smaller pipeline has fewer links
        notes.append(f"link {link}↔{link + 1} does not exist with p = {p}: using {p - 2}↔{p - 1}")
        link = p - 2
    delay = check_real("delay_ms", delay_ms, lo=0.0, unit="ms") * 1e-3
    t = check_real("t_ms", t_ms, lo=0.0, lo_open=True, unit="ms") * 1e-3
    tf, tb, tw = (t * x for x in OP_RATIOS[ratio])
    delays = np.zeros(p - 1)
    delays[link] = delay
    kw = {"hol": bool(hol)}
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
    return PipelineState(res, healthy, delay, link, res.warmups, tuple(notes))


@lru_cache(maxsize=64)
def _healthy_time(sched, tf, tb, tw, mode, **kw) -> float:
    # The healthy iteration does not depend on the delay slider: compute it once per setting.
    from ..schedulers.pipeline import simulate_pipeline

    return simulate_pipeline(sched, tf, tb, tw, delays=0.0, mode=mode, **kw).iteration_time


def draw_pipeline(fig, state: PipelineState, **_):
    """Gantt of the stages' GPU streams, with the iteration time against the healthy one."""
    from ..schedulers.pipeline import OP_KINDS

    def build(fig):
        ax = fig.subplots()
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.1, right=0.86, bottom=0.17, top=0.74)
        live = plots.LiveGantt(ax, OP_KINDS, time_unit="ms")
        title = fig.suptitle("", fontsize=9, x=0.02, ha="left")
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
        f"warm-ups {list(state.warmups)} · peak in-flight {r.peak_memory.tolist()} · "
        f"mean bubble {100 * float(np.mean(r.bubble_fraction)):.0f}%"
        + (f"\nnote: {'; '.join(state.notes)}" if state.notes else "")
    )
    return layout


def pipeline_explorer(show: bool = True) -> Explorer:
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
        "cap": int_slider(0, 32, 1, 0, "memory cap on stage 0 (0 = none)"),
    }
    presets = {
        "paper's Fig. 5 setting: ZB, 10 ms": {"delay_ms": 10.0, "link": 0, "schedule": "zb-h2",
                                         "p": 4, "m": 12, "hol": False},
        "cascade: ZB, 20 ms": {"delay_ms": 20.0, "link": 0, "schedule": "zb-h2", "p": 4,
                               "m": 12},
        "PipeMorph, 30 ms": {"delay_ms": 30.0, "link": 0, "schedule": "pipemorph", "p": 4,
                             "m": 12},
        "HOL blocking, 30 ms": {"delay_ms": 30.0, "schedule": "zb-h2", "hol": True},
    }
    return explore(pipeline_state, draw_pipeline, controls, presets=presets, show=show,
                   figsize=(9.0, 3.2), columns=3)
