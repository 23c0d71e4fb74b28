"""Notebook 08 (a research quickstart): reports and figures of a reader's own what-ifs.

The notebook computes everything with the public API (:func:`uneven.ep.ep_step`,
:func:`uneven.grid_sweep`, :func:`uneven.simulate_pipeline`); these recipes only draw and print
what it computed, so a reader can call them on their own tables. Sweep tables are what
:func:`uneven.grid_sweep` returns (a pandas DataFrame or a numpy structured array).

>>> from uneven.ep import ep_step
>>> steps = {"a": ep_step(16, 16, ep=16)}
>>> binding_report(steps).splitlines()[0].startswith("a: dispatch")
True
>>> fig = binding_figure(steps)
>>> t = np.array([("1f1b", 0.0, 10.0), ("1f1b", 2.0, 12.0)],
...              dtype=[("kind", "U12"), ("delay_ms", float), ("iteration_ms", float)])
>>> fig = sweep_figure(t)
>>> m = np.array([("replay", 0.0, 10.0), ("online", 0.0, 10.0), ("replay", 1.0, 11.0),
...               ("online", 1.0, 10.5)],
...              dtype=[("mode", "U8"), ("delay_ms", float), ("iteration_ms", float)])
>>> fig = anomaly_figure(m, replayed=(1.0, 10.2, 2.0))
"""

from __future__ import annotations

import numpy as np

from .. import plots
from .._validate import _show
from ..engines.linkload import LinkLoads
from ..i18n import gettext as _
from ..topology import LINK_KINDS
from ._common import N_

__all__ = ["binding_report", "binding_figure", "sweep_figure", "anomaly_figure"]

#: Display names of the schedule kinds in the figures (the palette's names where it has one).
KIND_LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved", "zb-h1": "ZB-H1",
               "zb-h2": "ZB-H2", "zb-v": "ZB-V", "dualpipe": "DualPipe",
               "dualpipe-v": "DualPipeV", "interleaved-zb": "interleaved ZB",
               "looped-bfs": "looped BFS", "zb": "ZB", "greedy": "greedy"}
# The kind labels with words in them, shown translated.
_SHOWN = (N_("interleaved"), N_("interleaved ZB"), N_("looped BFS"), N_("greedy"))


def _steps(steps) -> dict:
    if not isinstance(steps, dict) or not steps or len(steps) > 12:
        raise ValueError(f"steps must be a dict of 1 to 12 named EP results (ep_step or ep_phase "
                         f"results); got {_show(steps)}")
    for name, s in steps.items():
        if not isinstance(name, str) or not isinstance(getattr(s, "loads", None), LinkLoads) \
                or not hasattr(s, "drain_by_kind"):
            raise ValueError(f"steps[{name!r}] must be an ep_step or ep_phase result; got "
                             f"{type(s).__name__}")
    return steps


def _columns(table, needed) -> dict:
    """The columns ``needed`` of a sweep table (DataFrame or structured array) as numpy arrays."""
    if hasattr(table, "columns"):  # a DataFrame
        names = list(table.columns)
    else:  # a structured array
        names = list(getattr(getattr(table, "dtype", None), "names", None) or ())
    missing = [c for c in needed if c not in names]
    if missing:
        raise ValueError(f"table must be a grid_sweep table with columns {list(needed)}; "
                         f"missing {missing} (it has {names})")
    out = {c: np.asarray(table[c]) for c in needed}
    n = len(out[needed[0]])
    if n == 0 or n > 100_000:
        raise ValueError(f"table must have 1 to 100,000 rows; got {n}")
    return out


def binding_report(steps) -> str:
    """One line per EP result: its time, what binds (``bound`` and ``bound_kind``) and the
    busiest drain of every link kind (ms, model)."""
    lines = []
    for name, s in _steps(steps).items():
        drains = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in s.drain_by_kind.items())
        lines.append(_("{name}: dispatch {ms:.3f} ms (model), bound by {bound} ({kind}); "
                       "busiest link of each kind, ms: {drains}").format(
                           name=name, ms=s.time * 1e3, bound=s.bound, kind=s.bound_kind,
                           drains=drains))
    return "\n".join(lines)


@plots.recipe
def binding_figure(steps):
    """The busiest link of each kind, per EP result (ms, model): the longest bar binds."""
    steps = _steps(steps)
    kinds = [k for k in LINK_KINDS if any(k in s.drain_by_kind for s in steps.values())]
    fig, ax = plots.figure(8.0, 1.2 + 0.55 * len(kinds) * len(steps) ** 0.5)
    h = 0.8 / len(steps)
    y = np.arange(len(kinds))
    for i, (name, s) in enumerate(steps.items()):
        vals = [s.drain_by_kind.get(k, 0.0) * 1e3 for k in kinds]
        ax.barh(y + (i - (len(steps) - 1) / 2) * h, vals, height=h * 0.9,
                color=plots.ramp(max(len(steps), 2))[i],
                label=_("{name}: {kind} binds").format(name=name, kind=s.bound_kind))
    ax.set_yticks(y, kinds)
    ax.invert_yaxis()
    ax.set_xlabel(_("busiest link of the kind: time to drain its bytes (ms, model)"))
    ax.set_title(_("What binds an EP dispatch: the longest bar"))
    ax.legend(loc="lower right")
    return fig


@plots.recipe
def sweep_figure(table, value: str = "iteration_ms"):
    """``value`` (ms) against ``delay_ms`` for each ``kind`` of a sweep table (model)."""
    cols = _columns(table, ("kind", "delay_ms", value))
    fig, ax = plots.figure(7.5, 3.6)
    for kind in dict.fromkeys(cols["kind"].tolist()):
        rows = cols["kind"] == kind
        order = np.argsort(cols["delay_ms"][rows], kind="stable")
        label = KIND_LABELS.get(kind, str(kind))
        colour = plots.color(label) if label in plots.PALETTE else None
        ax.plot(cols["delay_ms"][rows][order], cols[value][rows][order], marker="o",
                markersize=3, label=_(label), color=colour)
    ax.set_xlabel(_("extra one-way delay on one link (ms)"))
    ax.set_ylabel(_("iteration time (ms, model)"))
    ax.set_title(_("One slow link, every schedule replaying its healthy plan"))
    ax.legend(ncols=2)
    return fig


@plots.recipe
def anomaly_figure(table, replayed=None, zoom_ms: float = 3.0):
    """Extra iteration time (ms) against the delay, replayed plan vs live dispatcher (model):
    the whole range, and a zoom on the delays up to ``zoom_ms``. ``replayed``: ``(delay_ms,
    extra_ms, order_from_ms)``, a longer delay's online order replayed at a shorter delay,
    marked in both panels."""
    cols = _columns(table, ("mode", "delay_ms", "iteration_ms"))
    if replayed is not None and not (isinstance(replayed, tuple) and len(replayed) == 3 and all(
            isinstance(v, (int, float)) and np.isfinite(v) for v in replayed)):
        raise ValueError(f"replayed must be (delay_ms, extra_ms, order_from_ms); got "
                         f"{_show(replayed)}")
    if not (isinstance(zoom_ms, (int, float)) and 0 < zoom_ms < 1e6):
        raise ValueError(f"zoom_ms must be a number of ms in (0, 1e6); got {_show(zoom_ms)}")
    fig, axes = plots.figure(9.0, 3.4, ncols=2, width_ratios=(3, 2))
    for ax, zoom in zip(axes, (False, True), strict=True):
        top = 0.0
        for mode, colour in (("replay", "blue"), ("online", "orange")):
            rows = cols["mode"] == mode
            if not rows.any():
                continue
            x, t = cols["delay_ms"][rows], cols["iteration_ms"][rows]
            order = np.argsort(x, kind="stable")
            x, extra = x[order], t[order] - t[order][0]
            keep = x <= zoom_ms if zoom else np.ones(x.size, dtype=bool)
            top = max(top, float(extra[keep].max(initial=0.0)))
            ax.plot(x[keep], extra[keep], marker="o", markersize=3, color=plots.color(colour),
                    label={"replay": _("replayed healthy plan"),
                           "online": _("live dispatcher (online)")}[mode])
        if replayed is not None:
            d, e, src = (float(v) for v in replayed)
            ax.plot([d], [e], marker="*", markersize=11, linestyle="none",
                    color=plots.color("green"),
                    label=_("the {src:g} ms online order, replayed at {d:g} ms").format(
                        src=src, d=d))
        ax.set_xlabel(_("extra one-way delay on one link (ms)"))
        if zoom:
            ax.set_ylim(-0.05 * max(top, 1.0), 1.15 * max(top, 1.0))
            ax.set_title(_("zoom: delays up to {zoom:g} ms").format(zoom=zoom_ms))
        else:
            ax.set_ylabel(_("extra iteration time (ms, model)"))
            ax.set_title(_("ZB-H1: replayed plan vs live dispatcher"))
            ax.legend()
    return fig
