"""Notebook 06 (UBEP): EP dispatch inside a superpod, where a dispatch is mostly waiting.

The explorer (:func:`ubep_explorer`) and the notebook's figure recipes (:func:`hop_cost_figure`,
:func:`gantt_figure`, :func:`ablation_figure`, :func:`ep_sweep_figure`, :func:`tpot_figure`),
which draw values the notebook computed with :mod:`uneven.ep.superpod`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .. import plots
from .._fields import (
    Checked,
    arguments,
    array,
    check_fields,
    choice,
    instance,
    integer,
    items,
    per_key,
    real,
    strings,
)
from .._validate import (
    _show,
    as_int_array,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..i18n import gettext as _
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider
from ._common import N_, check_dict, curve, handed_on, instances, is_int, is_real, pad

__all__ = ["GANTT_KINDS", "GANTT_COLORS", "SCHEME_COLORS", "UbepState", "ubep_state",
           "draw_ubep", "ubep_explorer", "hop_cost_figure", "gantt_figure", "ablation_figure",
           "ep_sweep_figure", "tpot_figure",
           # the notebook's runs, one per section
           "ABLATION_STEPS", "PAPER_DISPATCH", "CHAPTER_CUT", "write_costs", "split_plans",
           "die_timelines", "timeline_report", "ablation_rows", "core_split", "block_table",
           "ep_sweep", "tpot_runs", "barrier_needed", "phase_table",
           # second edition: calibration, pinned latencies, tails
           "fitted_q", "calibration", "latency_pins", "TAIL_MODELS", "tail_runs",
           "tail_figure", "CHAPTER_P99_CUT"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("barrier_us", (0.0, 10.0, 20.0, 30.0, 40.0))

#: Bar kinds of the core Gantt: the op kinds of :data:`uneven.ep.superpod.CORE_OP_KINDS`
#: plus the idle gaps (a core waiting for a barrier or for data).
GANTT_KINDS = ("count", "barrier", "send", "flag", "poll", "wait")
GANTT_COLORS = {
    "count": plots.color("purple"),
    "barrier": plots.color("barrier"),
    "send": plots.color("blue"),
    "flag": plots.color("orange"),
    "poll": plots.color("green"),
    "wait": plots.color("pale"),
}
#: The two schemes and the two assignments, from the house palette.
SCHEME_COLORS = {name: plots.color(name)
                 for name in ("serialised baseline", "UBEP", "contiguous", "hop mix")}
EP_SIZES = (8, 16, 32, 64, 128, 256, 320)
# Scheme and assignment names (keys in code) as the figures show them.
_SHOWN = (N_("serialised baseline"), N_("contiguous"), N_("hop mix"),
          N_("baseline + hop mix"))


def _kind_labels() -> list:
    """The legend names of :data:`GANTT_KINDS` in the language in force."""
    return [_("count", context="core op"), "barrier", _("send", context="core op"),
            _("flag", context="core op"), _("poll", context="core op"),
            _("wait", context="core op")]
_SAMPLES = 300


# --------------------------------------------------------------------------- Gantt helpers


def _cut(new, old) -> float:
    """How much lower ``new`` is than ``old`` (%); 0 when ``old`` is 0."""
    return 100.0 * (1.0 - float(new) / float(old)) if old > 0 else 0.0


def _is_label(x) -> bool:
    return isinstance(x, str) and len(x) <= 200


def _series(name, value, n) -> dict:
    """``{scheme label: n latencies (s)}``, the first scheme's > 0 (the cut divides by it)."""
    check_dict(name, value, key=lambda k: k in SCHEME_COLORS, hi=4)
    out = {k: curve(f"{name}[{k!r}]", v, n=n, lo=0.0) for k, v in value.items()}
    first = next(iter(out.values()))
    if first.min() <= 0 or any(v.max() > 1e30 for v in out.values()):
        raise ValueError(f"{name} must hold latencies in [0, 1e30] s, the first scheme's > 0; "
                         f"got {_show(value)}")
    return out


def _live_gantt(ax, legend=True):
    """A :class:`uneven.plots.LiveGantt` of core ops with this notebook's kind colours."""
    live = plots.LiveGantt(ax, GANTT_KINDS, time_unit="us", legend=False)
    for name, coll in zip(GANTT_KINDS, live.collections, strict=True):
        coll.set_facecolor(GANTT_COLORS[name])
        coll.set_edgecolor("none")
    if legend:
        plots.legend(ax, "right", handles=live.collections, labels=_kind_labels())
    return live


def _gantt_arrays(tl, rank):
    """Core, start, finish and kind code (into :data:`GANTT_KINDS`) of one rank's ops and
    idle gaps."""
    ops = tl.of_rank(rank)
    w = tl.waits(rank)
    core = np.concatenate([ops["core"], w["core"]])
    start = np.concatenate([ops["start"], w["start"]])
    finish = np.concatenate([ops["finish"], w["finish"]])
    kind = np.concatenate([ops["kind"], np.full(w["core"].size, len(GANTT_KINDS) - 1)])
    return core, start, finish, kind


def _row_names(cores):
    step = 8 if cores > 16 else (4 if cores > 8 else 1)
    core = _("core {c}")
    return [core.format(c=c) if c % step == 0 else "" for c in range(cores)]


def _sticky_limit(value, old):
    """An axis limit for ``value`` that stays at ``old`` while ``value`` fits in [0.25, 1] of it,
    so small moves keep the explorer's cached background."""
    if old is not None and 0.25 * old <= value <= old:
        return old
    return plots.nice_ceiling(value)


def _update_gantt(live, tl, rank, xmax=None):
    """Replace the bars of ``live`` with rank ``rank``'s ops; label every few cores only (a tick
    per core would cost more to draw than all the bars). Returns the layout key."""
    before = getattr(live, "_layout", None)
    names = _row_names(tl.cores)
    layout = live.update(*_gantt_arrays(tl, rank), row_names=names,
                         xmax=xmax if xmax is not None else plots.nice_ceiling(tl.latency))
    if layout != before:
        rows = [i for i, name in enumerate(names) if name]
        live.ax.set_yticks(rows, [names[i] for i in rows])
    return layout


# --------------------------------------------------------------------------- explorer


@dataclass(frozen=True)
class UbepState(Checked):
    """One EP dispatch under the serialised baseline and under UBEP (model; times in s).

    ``base``, ``ubep``: :class:`uneven.ep.superpod.CoreTimeline` of one jittered run.
    ``base_samples``, ``ubep_samples``: latency of 300 jittered runs (same draws for both).
    ``notes``: settings that were adjusted. Built directly, every field is checked (``ep`` one
    of the explorer's EP sizes, ``cores`` 2..128 with ``1 <= count_cores < cores``, timelines of
    ``ep`` ranks, samples 1-d, finite and >= 0).

    >>> s = ubep_state(ep=16, cores=8, batch=16, jitter_us=0.0)
    >>> bool(s.ubep.latency < s.base.latency), s.base_samples.size
    (True, 300)
    """

    ep: int = choice(EP_SIZES)
    cores: int = integer(lo=2, hi=128)
    count_cores: int = integer(lo=1, hi=lambda s: s.cores - 1)
    base: object = instance("uneven.ep.superpod:CoreTimeline", "from core_timeline()")
    ubep: object = instance("uneven.ep.superpod:CoreTimeline", "from core_timeline()")
    base_samples: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=1e30)
    ubep_samples: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=1e30)
    notes: tuple = strings(default=())

    def __post_init__(self):
        check_fields(self)
        for name in ("base", "ubep"):
            tl = getattr(self, name)
            if tl.plan.n_ranks != self.ep or tl.cores != self.cores:
                raise ValueError(f"{name} must be a timeline of ep = {self.ep} ranks of cores = "
                                 f"{self.cores} cores; got {tl.plan.n_ranks} ranks of {tl.cores}")


@lru_cache(maxsize=16)
def _traffic(ep, batch):
    from ..ep.superpod import superpod_traffic

    return superpod_traffic(ep, tokens_per_rank=batch, seed=0)


@lru_cache(maxsize=32)
def _plans(ep, batch, cores, one, ratio, barrier, count_cores, block, q=7):
    # The per-core work does not depend on the jitter: moving that slider reuses it.
    from ..ep.superpod import CoreCosts, phase_plan, scheme

    costs = CoreCosts(cores=cores, one_hop_factor=one, two_hop_factor=ratio,
                      barrier_cost=barrier, writes_in_flight=q)
    t = _traffic(ep, batch)
    return (phase_plan(t, costs, scheme("baseline", block_bytes=block)),
            phase_plan(t, costs, scheme("ubep", block_bytes=block, count_cores=count_cores)))


def ubep_state(ep: int = 64, hop_ratio: float = 11.5, barrier_us: float = 20.0,
               cores: int = 48, count_cores: int = 1, batch: int = 128, block: int = 512,
               jitter_us: float = 2.0, writes_in_flight: int = 7) -> UbepState:
    """Dispatch on ``ep`` ranks (one per die, 16 per node) with ``batch`` tokens per rank and
    top-8: the serialised baseline against UBEP with ``count_cores`` of ``cores`` counting.

    ``hop_ratio``: two-hop over local latency (one hop stays at 5×, or ``hop_ratio`` if that is
    smaller); ``barrier_us``: a barrier's cost after the last rank (µs); ``block``: atomic block
    bytes (128, 256, 512 or 1024); ``jitter_us``: mean extra delay per rank and op (µs);
    ``writes_in_flight``: writes a core keeps outstanding, 1..64 (7, the library's default and
    :func:`fitted_q`).
    Ranges: ``ep`` one of 8, 16, 32, 64, 128, 256, 320; ``hop_ratio`` 1..100; ``barrier_us``
    and ``jitter_us`` 0..10,000 µs; ``cores`` 2..128; ``count_cores`` 1 or more (capped at
    ``cores - 1``); ``batch`` 1..1,024.
    """
    from ..ep.superpod import core_timeline, latency_samples

    ep = check_choice("ep", ep, EP_SIZES)
    ratio = check_real("hop_ratio", hop_ratio, lo=1.0, hi=100.0)
    barrier = check_real("barrier_us", barrier_us, lo=0.0, hi=1e4, unit="µs") * 1e-6
    cores = check_int("cores", cores, lo=2, hi=128)
    count_cores = check_int("count_cores", count_cores, lo=1)
    batch = check_int("batch", batch, lo=1, hi=1024)
    block = check_choice("block", block, (128, 256, 512, 1024))
    jitter = check_real("jitter_us", jitter_us, lo=0.0, hi=1e4, unit="µs") * 1e-6
    q = check_int("writes_in_flight", writes_in_flight, lo=1, hi=64)
    notes = []
    if count_cores >= cores:
        count_cores = cores - 1
        notes.append(_("counting cores capped at {n} (one core must send)").format(
            n=count_cores))
    one = min(5.0, ratio)
    if one < 5.0:
        notes.append(_("one-hop factor lowered to {one:g} (it cannot exceed two hops)").format(
            one=one))
    pb, pu = _plans(ep, batch, cores, one, ratio, barrier, count_cores, block, q)
    tb = core_timeline(pb, jitter=jitter, seed=0)
    tu = core_timeline(pu, jitter=jitter, seed=0)
    sb = latency_samples(pb, _SAMPLES, jitter, seed=1)
    su = latency_samples(pu, _SAMPLES, jitter, seed=1)
    sb.flags.writeable = False
    su.flags.writeable = False
    return trusted(UbepState, ep=ep, cores=cores, count_cores=count_cores, base=tb, ubep=tu,
                   base_samples=sb, ubep_samples=su, notes=tuple(notes))


@plots.recipe
def draw_ubep(fig, state: UbepState, **_values):
    """Rank 0's cores under both schemes (Gantt, one row per core) and the latency CDF of 300
    jittered runs. Returns the layout key for :class:`uneven.widgets.Explorer`."""
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure)
    check_instance("state", state, UbepState, "from ubep_state(...)")

    def build(fig):
        grid = fig.add_gridspec(2, 2, width_ratios=(2.25, 1.0), hspace=0.55, wspace=0.42,
                                left=0.075, right=0.975, bottom=0.12, top=0.8)
        ax_b = fig.add_subplot(grid[0, 0])
        ax_u = fig.add_subplot(grid[1, 0], sharex=ax_b)
        ax_c = fig.add_subplot(grid[:, 1])
        live_b = _live_gantt(ax_b, legend=False)
        live_u = _live_gantt(ax_u, legend=False)
        ax_b.set_xlabel("")
        ax_b.legend(handles=live_b.collections, labels=_kind_labels(), ncol=6,
                    loc="lower left", bbox_to_anchor=(0.0, 1.18), fontsize=plots.SMALL,
                    handlelength=1.2, columnspacing=0.9)
        ax_b.set_title(_("serialised baseline"), fontsize=plots.PANEL)
        ax_u.set_title(_("UBEP: flag in block, hop mix"), fontsize=plots.PANEL)
        t_b = ax_b.set_title("", loc="right", fontsize=plots.PANEL)
        t_u = ax_u.set_title("", loc="right", fontsize=plots.PANEL)
        lines = {}
        for key, label in (("base", "serialised baseline"), ("ubep", "UBEP")):
            (lines[key],) = ax_c.plot([], [], drawstyle="steps-post",
                                      color=SCHEME_COLORS[label], lw=1.6, label=_(label))
            (lines[key + "99"],) = ax_c.plot([], [], "o", ms=4.5, color=SCHEME_COLORS[label])
        ax_c.set_ylim(0, 1.02)
        ax_c.set_xlabel(_("dispatch latency (µs, model)"))
        ax_c.set_ylabel(_("fraction of runs ≤ x"))
        ax_c.set_title(_("{n} jittered runs; dots: P99").format(n=_SAMPLES), fontsize=plots.PANEL)
        ax_c.legend(loc="lower left", bbox_to_anchor=(-0.02, 1.1), ncol=2, fontsize=plots.SMALL,
                    handlelength=1.2, columnspacing=0.9)
        title = fig.suptitle("", fontsize=plots.PANEL, x=0.01, ha="left")
        dynamic = [*live_b.collections, *live_u.collections, t_b, t_u, title,
                   *lines.values()]
        return {"ax_b": ax_b, "ax_u": ax_u, "ax_c": ax_c, "live_b": live_b, "live_u": live_u,
                "t_b": t_b, "t_u": t_u, "lines": lines, "title": title, "dynamic": dynamic}

    art = reuse(fig, "ubep", build)
    longest = max(state.base.latency, state.ubep.latency) * 1e6
    art["xmax"] = xmax = _sticky_limit(longest, art.get("xmax"))
    lay_b = _update_gantt(art["live_b"], state.base, 0, xmax * 1e-6)
    lay_u = _update_gantt(art["live_u"], state.ubep, 0, xmax * 1e-6)
    art["t_b"].set_text(_("all {cores} cores count, then send: {latency:,.0f} µs").format(
        cores=state.cores, latency=state.base.latency * 1e6))
    art["t_u"].set_text(_("{count} count ∥ {send} send: {latency:,.0f} µs").format(
        count=state.count_cores, send=state.cores - state.count_cores,
        latency=state.ubep.latency * 1e6))
    hi = 0.0
    stats = {}
    for key, s in (("base", state.base_samples), ("ubep", state.ubep_samples)):
        x = np.sort(s) * 1e6
        y = np.arange(1, x.size + 1) / x.size
        art["lines"][key].set_data(x, y)
        p50, p99 = np.percentile(x, [50, 99])
        art["lines"][key + "99"].set_data([p99], [0.99])
        stats[key] = (p50, p99)
        hi = max(hi, x[-1])
    art["cdf_max"] = top = _sticky_limit(hi, art.get("cdf_max"))
    xlim = (0.0, top)
    art["ax_c"].set_xlim(*xlim)
    (b50, b99), (u50, u99) = stats["base"], stats["ubep"]
    note = _(" · note: {notes}").format(notes="; ".join(state.notes)) if state.notes else ""
    art["title"].set_text(
        _("EP{ep} dispatch (model, q = {q}) · P50 {b50:,.0f} → {u50:,.0f} µs (−{cut50:.0f}%) · "
          "P99 {b99:,.0f} → {u99:,.0f} µs (−{cut99:.0f}%)").format(
            ep=state.ep, q=state.base.plan.costs.writes_in_flight, b50=b50, u50=u50,
            cut50=_cut(u50, b50), b99=b99, u99=u99, cut99=_cut(u99, b99)) + note)
    return (lay_b, lay_u, xlim)


def ubep_explorer(show: bool = True) -> Explorer:
    """Notebook 06's widget: writes in flight per core (opening at :func:`fitted_q`, the value
    CloudMatrix384's measured dispatch fits), EP size, hop cost ratio, barrier cost, cores and
    their split, batch, block size, jitter."""
    q = fitted_q()
    controls = {
        "writes_in_flight": int_slider(1, 32, 1, q, _("writes in flight per core (q)")),
        "ep": dropdown(list(EP_SIZES), 64, _("EP size (dies)")),
        "hop_ratio": slider(1.0, 20.0, 0.5, 11.5, _("two-hop / local latency")),
        "barrier_us": slider(0.0, 60.0, 2.0, 20.0, _("barrier cost (µs)")),
        "cores": int_slider(4, 64, 4, 48, _("cores per die")),
        "count_cores": int_slider(1, 24, 1, 1, _("UBEP counting cores")),
        "batch": int_slider(16, 512, 16, 128, _("tokens per rank")),
        "block": dropdown([("512 B", 512), ("128 B", 128)], 512, _("atomic block")),
        "jitter_us": slider(0.0, 20.0, 0.5, 2.0, _("jitter per op (µs)")),
    }
    presets = {
        _("CloudMatrix-like, EP64"): {"writes_in_flight": q, "ep": 64, "hop_ratio": 11.5,
                                      "barrier_us": 20.0,
                                      "cores": 48, "count_cores": 1, "batch": 128, "block": 512,
                                      "jitter_us": 2.0},
        _("flat fabric (every hop = local)"): {"hop_ratio": 1.0},
        _("unfitted guess q = 4"): {"writes_in_flight": 4},
        _("many writes in flight (q = 32): bytes bind"): {"writes_in_flight": 32},
        _("free barriers, no jitter"): {"barrier_us": 0.0, "jitter_us": 0.0},
        _("noisy ranks (jitter 10 µs)"): {"jitter_us": 10.0},
        _("128-B blocks"): {"block": 128},
        _("half the cores count"): {"count_cores": 24},
        _("8 cores per die"): {"cores": 8, "count_cores": 1},
        _("EP320 decode"): {"ep": 320},
    }
    return explore(ubep_state, draw_ubep, controls, presets=presets, show=show,
                   figsize=(9.0, 4.1), columns=3)


# --------------------------------------------------------------------------- figure recipes


@plots.recipe
def hop_cost_figure(costs, plans: dict, *, block_bytes: int = 512, ep: int = 32):
    """Left: what one ``block_bytes`` write costs a core by hop class (latency share and bytes
    share) with the access latency of each class. Right: histogram of every sending core's send
    time over all ranks (``plans``: ``{"contiguous": PhasePlan, "hop mix": PhasePlan}``), the
    slowest core of each marked. At most 4 plans; ``block_bytes`` 16..2**20; ``ep`` 1..1,024."""
    from ..ep.superpod import MAX_RANKS, CoreCosts, PhasePlan

    costs = check_instance("costs", costs, CoreCosts)
    check_dict("plans", plans, key=lambda k: k in SCHEME_COLORS, hi=4)
    instances("plans", plans, PhasePlan)
    block_bytes = check_int("block_bytes", block_bytes, lo=16, hi=1 << 20)
    ep = check_int("ep", ep, lo=1, hi=MAX_RANKS)
    fig, (ax_w, ax_h) = plots.figure(11, 3.9, ncols=2, width_ratios=(1.0, 1.35))
    names = (_("local (own die)"), _("one hop (same node)"), _("two hops (another node)"))
    f1, f2 = costs.one_hop_factor, costs.two_hop_factor
    labels = ("(model)", _("(model: {f1:g}× local)").format(f1=f1),
              _("(model; {f2:g}× local{tag})").format(f2=f2,
                                                      tag=" [chapter]" if f2 == 11.5 else ""))
    lat = np.array(costs.hop_latency)
    per_lat = lat / costs.writes_in_flight * 1e9
    per_byte = block_bytes / costs.core_bandwidth * 1e9
    with plots.style():
        y = np.arange(3)
        ax_w.barh(y, per_lat, color=plots.color("orange"),
                  label=_("latency ℓ / {q} writes in flight").format(q=costs.writes_in_flight))
        ax_w.barh(y, np.full(3, per_byte), left=per_lat, color=plots.color("sky"),
                  label=_("{bytes} B at {bw:.2f} GB/s per core").format(
                      bytes=block_bytes, bw=costs.core_bandwidth / 1e9))
        for yy, lv, pl, lab in zip(y, lat, per_lat, labels, strict=True):
            ax_w.text(pl + per_byte + 8, yy, f"ℓ = {lv * 1e6:.2f} µs {lab}", va="center",
                      fontsize=plots.SMALL)
        ax_w.set_yticks(y, names)
        ax_w.invert_yaxis()
        ax_w.set_xlim(0, (per_lat[-1] + per_byte) * 1.9)
        ax_w.set_xlabel(_("core time per {bytes}-B write (ns)").format(bytes=block_bytes))
        gap = f2 - f1
        ax_w.set_title(_("one write, by distance (q = {q})").format(q=costs.writes_in_flight)
                       + (_("\nℓ0 < {bound:.3f} µs if ℓ2 − ℓ1 = {gap:g} ℓ0 < 1 µs\n"
                            "[derived; ℓ1 = {f1:g} ℓ0 assumed]").format(bound=1 / gap, gap=gap,
                                                                        f1=f1)
                          if gap > 0 else ""),
                       fontsize=plots.PANEL)
        ax_w.grid(axis="y", visible=False)
        plots.legend(ax_w, "below", ncol=1)
        hi = max(p.send_time.max() for p in plans.values()) * 1e6
        bins = np.linspace(0, plots.nice_ceiling(hi), 60)
        for label, p in plans.items():
            x = p.send_time.ravel() * 1e6
            col = SCHEME_COLORS[label]
            ax_h.hist(x, bins=bins, histtype="stepfilled", alpha=0.35, color=col)
            ax_h.hist(x, bins=bins, histtype="step", lw=1.4, color=col,
                      label=_("{label}: slowest core {t:.0f} µs").format(label=_(label),
                                                                         t=x.max()))
            ax_h.axvline(x.max(), color=col, ls="--", lw=1.0)
        ax_h.set_xlabel(_("send time of one core (µs, model)"))
        ax_h.set_ylabel(_("cores (all ranks)"))
        n = next(iter(plans.values()))
        ax_h.set_title(_("EP{ep}: {n} sending cores on each of {dies} dies").format(
            ep=ep, n=n.n_send, dies=n.n_ranks))
        plots.legend(ax_h, "below", ncol=2)
    return fig


@plots.recipe
def gantt_figure(timelines: dict, *, rank: int = 0):
    """One panel per scheme (``timelines``: ``{label: CoreTimeline}``): rank ``rank``'s cores as
    rows, ops and idle gaps as bars (µs); the panel title gives when rank ``rank`` is done and
    when the last rank is (the phase's latency) (model). At most 4 timelines."""
    from ..ep.superpod import CoreTimeline

    check_dict("timelines", timelines, key=_is_label, hi=4)
    instances("timelines", timelines, CoreTimeline)
    rank = check_int("rank", rank, lo=0, hi=min(t.plan.n_ranks for t in timelines.values()) - 1)
    n = len(timelines)
    tls = list(timelines.values())
    cores = max(t.cores for t in tls)
    fig, axes = plots.figure(10.5, 0.062 * cores * n + 1.0 + 0.5 * n, nrows=n, sharex=True)
    axes = np.atleast_1d(axes)
    xmax = plots.nice_ceiling(max(t.latency for t in tls))
    with plots.style():
        for k, (ax, (label, tl)) in enumerate(zip(axes, timelines.items(), strict=True)):
            live = _live_gantt(ax, legend=(k == 0))
            _update_gantt(live, tl, rank)
            ax.set_xlim(0, xmax * 1e6)
            ax.set_title(_("{label}: die {rank}'s cores, done at {done:,.0f} µs; the last die "
                           "at {last:,.0f} µs (model)").format(label=_(label), rank=rank,
                                                              done=tl.end[rank] * 1e6,
                                                              last=tl.latency * 1e6))
            if k < n - 1:
                ax.set_xlabel("")
    return fig


@plots.recipe
def ablation_figure(rows: list, *, ep: int = 64):
    """Dispatch latency (µs) as UBEP's pieces are added one at a time (``rows``:
    ``[(label, seconds), ...]``, the first is the baseline, > 0), with the cut against it.
    At most 16 rows."""
    if not isinstance(rows, (list, tuple)) or not 1 <= len(rows) <= 16 or not all(
        isinstance(r, (list, tuple)) and len(r) == 2 and _is_label(r[0])
        and is_real(r[1], lo=0.0) and r[1] <= 1e30 for r in rows
    ):
        raise ValueError(f"rows must be a list of 1 to 16 (label, seconds) pairs, seconds "
                         f"in [0, 1e30]; got {_show(rows)}")
    rows = [(label, float(v)) for label, v in rows]
    if not rows[0][1] > 0:
        raise ValueError(f"rows must start with the baseline's latency > 0; got {rows[0][1]}")
    ep = check_int("ep", ep, lo=1)
    fig, ax = plots.figure(8.5, 0.42 * len(rows) + 1.0)
    base = rows[0][1]
    with plots.style():
        y = np.arange(len(rows))
        vals = np.array([v for _, v in rows]) * 1e6
        cols = [SCHEME_COLORS["serialised baseline"]] + [plots.color("sky")] * (len(rows) - 2)
        cols += [SCHEME_COLORS["UBEP"]]
        ax.barh(y, vals, color=cols[:len(rows)])
        for yy, (_lab, v) in zip(y, rows, strict=True):
            cut = "" if v == base else f"  (−{_cut(v, base):.0f}%)"
            ax.text(v * 1e6, yy, f" {v * 1e6:,.0f} µs{cut}", va="center", fontsize=plots.NOTE)
        ax.set_yticks(y, [_(lab) for lab, _v in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, vals.max() * 1.35)
        ax.set_xlabel(_("EP{ep} dispatch latency, no jitter (µs, model)").format(ep=ep))
        ax.set_title(_("adding UBEP's pieces one at a time (% below the baseline)"))
        ax.grid(axis="y", visible=False)
    return fig


@plots.recipe
def ep_sweep_figure(eps, median: dict, p99: dict, *, paper: dict, chapter: dict,
                    calm: dict | None = None):
    """Left: dispatch latency (µs) against EP size in dies, median and P99 of jittered runs per
    scheme (``median``, ``p99``: ``{label: seconds per EP size}``), with published points
    (``paper``: ``{label: {ep: µs}}``, labels carrying their own tags). Right: how much lower
    UBEP's latency is (%), with the chapter's figure placed at every EP size it may mean
    (``chapter``: ``{label: (ep, %)}``; the first filled, the others open, joined by a dotted
    line). ``calm`` (optional, ``{label: seconds per EP size}``, labels of ``median``): the
    jitter-free latencies, drawn dashed, e.g. the curve a fit compared with the published
    points. At most 32 EP sizes (increasing, 1..1,024), 4 schemes, 4 published series of 32
    points and 8 chapter points."""
    eps = as_int_array("eps", eps, ndim=1, lo=1, hi=1024)
    if not 1 <= eps.size <= 32 or (np.diff(eps) <= 0).any():
        raise ValueError(f"eps must be 1 to 32 increasing EP sizes; got {_show(eps)}")
    median = _series("median", median, eps.size)
    p99 = _series("p99", p99, eps.size)
    if list(p99) != list(median):
        raise ValueError(f"p99 must have the labels of median ({list(median)}); got "
                         f"{_show(list(p99))}")
    calm = {} if calm is None else _series("calm", calm, eps.size)
    if not set(calm) <= set(median):
        raise ValueError(f"calm must use labels of median ({list(median)}); got "
                         f"{_show(list(calm))}")
    check_dict("paper", paper, key=_is_label, hi=4, item=lambda pts: isinstance(pts, dict)
               and 1 <= len(pts) <= 32 and all(is_int(e) and 1 <= e <= 1024 and is_real(v)
                                               and abs(v) <= 1e30 for e, v in pts.items()))
    check_dict("chapter", chapter, key=_is_label, lo=0, hi=8, item=lambda pt: isinstance(
        pt, (tuple, list)) and len(pt) == 2 and is_int(pt[0]) and 1 <= pt[0] <= 1024
        and is_real(pt[1]) and abs(pt[1]) <= 1e6)
    fig, (ax, ax_r) = plots.figure(11.5, 4.0, ncols=2, width_ratios=(1.5, 1.0))
    markers = ("s", "D", "^", "v")
    with plots.style():
        for label in median:
            col = SCHEME_COLORS[label]
            ax.plot(eps, np.asarray(median[label]) * 1e6, "o-", color=col, lw=1.8,
                    label=_("{label}, median (model)").format(label=_(label)))
            ax.plot(eps, np.asarray(p99[label]) * 1e6, ":", color=col, lw=1.3,
                    label=_("{label}, P99 (model)").format(label=_(label)))
            if label in calm:
                ax.plot(eps, np.asarray(calm[label]) * 1e6, "--", color=col, lw=1.3,
                        label=_("{label}, no jitter (model; q fitted to this)").format(
                            label=_(label)))
        for m, (label, pts) in zip(markers, paper.items(), strict=False):
            ax.plot(list(pts), list(pts.values()), m, ms=6, mfc="white", mew=1.4,
                    color=plots.color("paper"), label=_(label))
        for a, crowded in ((ax, False), (ax_r, True)):
            a.set_xscale("log", base=2)
            # neighbours closer than 1.5x share a label slot: the narrow panel labels the later
            # one, the wide one the earlier (256, where CloudMatrix measured)
            e_list = eps.tolist()
            names = [("" if (crowded and i + 1 < len(e_list) and e_list[i + 1] < 1.5 * e)
                      or (not crowded and i and e < 1.5 * e_list[i - 1]) else str(e))
                     for i, e in enumerate(e_list)]
            a.set_xticks(eps, names)
            a.minorticks_off()
            a.set_xlabel(_("EP size in dies (ranks; 2 dies per NPU, 16 per node)"))
        ax.set_ylim(0, None)
        ax.set_ylabel(_("dispatch latency (µs)"))
        ax.set_title(_("128 tokens per rank, top-8, INT8 (model)"))
        plots.legend(ax, "below", ncol=2)
        labels = list(median)
        b, u = labels[0], labels[-1]
        cut50 = 100 * (1 - np.asarray(median[u]) / np.asarray(median[b]))
        cut99 = 100 * (1 - np.asarray(p99[u]) / np.asarray(p99[b]))
        ax_r.plot(eps, cut50, "o-", color=SCHEME_COLORS[u], label=_("median (model)"))
        ax_r.plot(eps, cut99, "o:", color=SCHEME_COLORS[u], label="P99 (model)")
        pts = list(chapter.values())
        if len(pts) > 1:
            ax_r.plot([e for e, _ in pts], [c for _, c in pts], ":", lw=1.0,
                      color=plots.color("paper"))
        for k, (label, (e, c)) in enumerate(chapter.items()):
            ax_r.plot([e], [c], "*", ms=13, mew=1.2, color=plots.color("paper"),
                      mfc=plots.color("paper") if k == 0 else "white", label=_(label))
        ax_r.set_ylim(0, 60)
        ax_r.set_ylabel(_("{u} below {b} (%)").format(u=_(u), b=_(b)))
        ax_r.set_title(_("how much lower"))
        plots.legend(ax_r, "below", ncol=1)
    return fig


@plots.recipe
def tpot_figure(steps: dict, sigmas, extra: dict, *, ep: int = 64):
    """Left: CDF of the time per output token (ms) over many decode steps per scheme
    (``steps``: ``{label: DecodeSteps}``), P50 and P99 marked. Right: how much jitter adds to
    the median dispatch latency (µs) against the mean jitter per op (``sigmas`` in µs;
    ``extra``: ``{label: µs per sigma}``). At most 4 schemes and 64 sigmas."""
    from ..ep.superpod import DecodeSteps

    check_dict("steps", steps, key=lambda k: k in SCHEME_COLORS, hi=4)
    instances("steps", steps, DecodeSteps)
    sigmas = curve("sigmas", sigmas, lo=0.0)
    if sigmas.size > 64 or sigmas.max() > 1e9:
        raise ValueError(f"sigmas must be at most 64 values in [0, 1e9] µs; got {_show(sigmas)}")
    check_dict("extra", extra, key=lambda k: k in SCHEME_COLORS, hi=4)
    extra = {k: curve(f"extra[{k!r}]", v, n=sigmas.size) for k, v in extra.items()}
    if any(np.abs(v).max() > 1e30 for v in extra.values()):
        raise ValueError("extra must hold values of at most 1e30 µs")
    ep = check_int("ep", ep, lo=1)
    fig, (ax, ax_j) = plots.figure(11.5, 3.8, ncols=2, width_ratios=(1.3, 1.0))
    with plots.style():
        for label, r in steps.items():
            col = SCHEME_COLORS[label]
            x = np.sort(r.tpot) * 1e3
            y = np.arange(1, x.size + 1) / x.size
            ax.step(x, y, where="post", color=col, lw=1.6, label=_(label))
            ax.plot([r.p50 * 1e3, r.p99 * 1e3], [0.5, 0.99], "o", color=col, ms=5)
            ax.annotate(f"P50 {r.p50 * 1e3:.1f}", (r.p50 * 1e3, 0.5), xytext=(6, -10),
                        textcoords="offset points", fontsize=plots.SMALL, color=col)
            ax.annotate(f"P99 {r.p99 * 1e3:.1f}", (r.p99 * 1e3, 0.99), xytext=(6, -10),
                        textcoords="offset points", fontsize=plots.SMALL, color=col)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(_("time per output token (ms, model)"))
        ax.set_ylabel(_("fraction of steps ≤ x"))
        n = next(iter(steps.values()))
        ax.set_title(_("EP{ep}, {layers} MoE layers, {steps:,} steps, jitter {jitter:g} µs per "
                       "op").format(ep=ep, layers=n.n_layers, steps=n.tpot.size,
                                    jitter=n.jitter * 1e6))
        plots.legend(ax, "below", ncol=2)
        for label, v in extra.items():
            ax_j.plot(sigmas, v, "o-", color=SCHEME_COLORS[label], label=_(label))
        ax_j.set_xlabel(_("mean jitter per rank and op (µs)"))
        ax_j.set_ylabel(_("added median dispatch latency (µs)"))
        ax_j.set_title(_("EP{ep}: what waiting for the slowest rank costs").format(ep=ep))
        ax_j.set_ylim(0, None)
        plots.legend(ax_j, "below", ncol=2)
    return fig


# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.
# The numbers are the library's (uneven.ep.superpod); times in seconds unless a name says µs.

_US = 1e-6
_SP = "uneven.ep.superpod:"
_TRAFFIC, _COSTS = instance(_SP + "SuperpodTraffic"), instance(_SP + "CoreCosts")
_JITTER = real(lo=0.0, hi=1e-3, unit="s")  # the mean jitter per rank and op
_PARTS = ("count", "barrier", "send", "poll", "wait")
#: Section 2's ablation: label -> the keywords of :func:`uneven.ep.superpod.scheme`.
ABLATION_STEPS = (
    ("serialised baseline", dict(kind="baseline")),
    (N_("+ equal hop mix"), dict(kind="baseline", assignment="hop_mix")),
    (N_("+ concurrent core groups"), dict(kind="baseline", assignment="hop_mix", concurrent=True,
                                          count_cores=1)),
    (N_("+ no 2nd barrier: fence, then flags"), dict(kind="baseline", assignment="hop_mix",
                                                     concurrent=True, count_cores=1,
                                                     sync="flag")),
    (N_("UBEP: the flag inside each block"), dict(kind="ubep")),
)
#: Dispatch latency (µs) at 128 tokens per rank, hidden 7,168, top-8, by EP size: CloudMatrix-
#: Infer on CloudMatrix384 [paper] and DeepEP's low-latency kernels on H800 + 400 Gb/s IB [repo].
PAPER_DISPATCH = {
    N_("CloudMatrix-Infer dispatch, CloudMatrix384 [paper]"): {8: 116, 256: 152},
    N_("DeepEP low-latency dispatch, H800 + 400 Gb/s IB [repo]"): {
        8: 163, 16: 173, 32: 182, 64: 186, 128: 192, 256: 194},
}
#: Dispatch latency up to 52.4% below CANN EP at 64 NPUs [chapter], at both readings of "64
#: NPUs": label -> (EP, %).
CHAPTER_CUT = {
    N_("52.4% at 64 NPUs [chapter], read as 64 dies"): (64, 52.4),
    N_("52.4% at 64 NPUs [chapter], read as 64 two-die NPUs"): (128, 52.4),
}


def _scheme(kw: dict):
    from ..ep.superpod import scheme

    kw = dict(kw)
    return scheme(kw.pop("kind"), **kw)


@arguments(costs=_COSTS)
def write_costs(costs) -> SimpleNamespace:
    """Section 1: what one 512-B write costs a core at each hop class (``per_write``, s), how much
    of it is pushing bytes (``push``), and the access latencies (``lat``)."""
    lat = np.array(costs.hop_latency)
    per_write = np.array([costs.write_time(h, 512) for h in range(3)])
    push = 512 / costs.core_bandwidth
    # the name is padded to 12 columns: the numbers after it line up (a table of 3 rows)
    report = "\n".join(
        _("hop class {h} ({name}): access {lat:.2f} µs; one 512-B write costs a core "
          "{write:3.0f} ns, {push:.0f} ns of it pushing bytes (model)").format(
            h=h, name=pad(name, 12), lat=lat[h] / _US, write=per_write[h] / _US * 1e3,
            push=push / _US * 1e3)
        for h, name in enumerate((_("own die"), _("same node"), _("another node"))))
    return SimpleNamespace(lat=lat, per_write=per_write, push=push, report=report)


@arguments(traffic=_TRAFFIC, costs=_COSTS)
def split_plans(traffic, costs) -> SimpleNamespace:
    """Section 1: the baseline's send phase with the contiguous and the hop-mix split of a die's
    copies over its cores (``plans``); each split's mean and slowest core (``mean``,
    ``slowest``) and the slowest cores' ratio (``ratio``)."""
    from ..ep.superpod import phase_plan, scheme

    plans = {"contiguous": phase_plan(traffic, costs, scheme("baseline")),
             "hop mix": phase_plan(traffic, costs, scheme("baseline", assignment="hop_mix"))}
    slowest = {k: p.send_time.max() for k, p in plans.items()}
    mean = {k: p.send_time.mean() for k, p in plans.items()}
    ratio = slowest["contiguous"] / slowest["hop mix"]
    lines = [pad(_(k), 10) + _(": mean core {mean:5.1f} µs, slowest core {slowest:5.1f} µs "
                                "(model)").format(mean=mean[k] / _US, slowest=slowest[k] / _US)
             for k in plans]
    lines.append(_("slowest core, contiguous / hop mix: {ratio:.2f}").format(ratio=ratio))
    return SimpleNamespace(plans=plans, slowest=slowest, mean=mean, ratio=ratio,
                           report="\n".join(lines))


@arguments(traffic=_TRAFFIC, costs=_COSTS, jitter=_JITTER, seed=integer(lo=0, hi=2**32))
def die_timelines(traffic, costs, jitter: float, seed: int = 0) -> dict:
    """Section 2: the per-core timelines of the serialised baseline and of UBEP with ``jitter``
    (s) per op: ``{"serialised baseline": CoreTimeline, "UBEP": CoreTimeline}``."""
    from ..ep.superpod import core_timeline, phase_plan, scheme

    return {label: core_timeline(phase_plan(traffic, costs, scheme(kind)), jitter=jitter,
                                 seed=seed)
            for label, kind in (("serialised baseline", "baseline"), ("UBEP", "ubep"))}


@arguments(timelines=per_key(("serialised baseline", "UBEP"),
                             instance(_SP + "CoreTimeline")))
def timeline_report(timelines: dict) -> SimpleNamespace:
    """Section 2: die 0's mean time per core in each part (``parts[label][part]``, s), both
    dispatch latencies (``lat_b``, ``lat_u``), when die 0 alone is done (``end0``), the
    baseline's wait per core of die 0 (``per_core``) and UBEP's send ends on die 0 (``ends``)."""
    shown = {k: k if k == "barrier" else _(k, context="core op") for k in _PARTS}
    lines = [pad(_("die 0, mean µs per core"), 24)
             + "".join(pad(shown[k], 9, ">") for k in _PARTS)]
    parts = {}
    for name, tl in timelines.items():
        parts[name] = tl.breakdown(0)
        lines.append(pad(_(name), 24)
                     + "".join(f"{parts[name][k] / _US:9.1f}" for k in _PARTS))
    lat_b, lat_u = (tl.latency for tl in timelines.values())
    lines.append(_("dispatch: {base:.0f} µs → {ubep:.0f} µs (model; the phase ends when the last "
                   "die's last core ends)").format(base=lat_b / _US, ubep=lat_u / _US))
    end0 = {name: tl.end[0] for name, tl in timelines.items()}
    lines.append(_("die 0 alone is done at {ends}").format(ends=_(", ").join(
        _("{t:.0f} µs ({label})").format(t=v / _US, label=_(k)) for k, v in end0.items())))
    base, ubep = timelines["serialised baseline"], timelines["UBEP"]
    waits = base.waits(0)
    per_core = np.bincount(waits["core"], weights=waits["finish"] - waits["start"],
                           minlength=base.cores)
    ops = ubep.of_rank(0)
    return SimpleNamespace(parts=parts, lat_b=lat_b, lat_u=lat_u, end0=end0, per_core=per_core,
                           ends=ops["finish"][ops["kind"] == 2], report="\n".join(lines))


@arguments(traffic=_TRAFFIC, costs=_COSTS)
def ablation_rows(traffic, costs) -> SimpleNamespace:
    """Section 2: the dispatch latency (s, no jitter) after each step of :data:`ABLATION_STEPS`
    (``rows``: (label, s) pairs) and what each step saves over the one before (``saved``)."""
    from ..ep.superpod import phase_latency, phase_plan

    rows = [(label, phase_latency(phase_plan(traffic, costs, _scheme(kw))))
            for label, kw in ABLATION_STEPS]
    saved = [a[1] - b[1] for a, b in zip(rows, rows[1:], strict=False)]
    return SimpleNamespace(rows=rows, latency=dict(rows), saved=saved)


@arguments(traffic=_TRAFFIC, costs=_COSTS, batches=items(integer(lo=1, hi=512), hi=8))
def core_split(traffic, costs, batches=(16, 128, 512)) -> SimpleNamespace:
    """Section 2: how long counting takes on all cores (``count_all``); with 48 and with 8 cores,
    UBEP's best split of counting and sending cores beside counting first on all of them
    (``by_cores[cores] = (k, best, serial)``); the best split per batch (``split``)."""
    from ..ep.superpod import best_split, phase_latency, phase_plan, scheme, superpod_traffic

    count_all = phase_plan(traffic, costs, scheme("baseline")).count_time.max()
    lines = [_("counting on all 48 cores takes {t:.1f} µs (model)").format(t=count_all / _US)]
    by_cores = {}
    for cores in (48, 8):
        c = costs.with_(cores=cores)
        k, best = best_split(traffic, c, scheme("ubep"))
        serial = phase_latency(phase_plan(traffic, c, scheme("baseline", assignment="hop_mix",
                                                             sync="block")))
        by_cores[cores] = (k, best, serial)
        lines.append(_("{cores:2d} cores: best split {count} counting + {send} sending, "
                       "{best:.0f} µs; all cores count then send (hop mix, flag in block): "
                       "{serial:.0f} µs (model)").format(cores=cores, count=k, send=cores - k,
                                                         best=best / _US, serial=serial / _US))
    with handed_on("batches"):
        split = {b: best_split(superpod_traffic(traffic.n_ranks, tokens_per_rank=b, seed=0),
                               costs, scheme("ubep"))[0] for b in batches}
    lines.append(_("best number of counting cores by tokens per die: {split}").format(
        split=split))
    return SimpleNamespace(count_all=count_all, by_cores=by_cores, split=split,
                           report="\n".join(lines))


@arguments(traffic=_TRAFFIC, costs=_COSTS)
def block_table(traffic, costs) -> SimpleNamespace:
    """Section 3: blocks per token copy with the flag inside and with payload only, at 512- and
    128-B blocks; the dispatch with 128-B blocks (``b128[kind]``, s)."""
    from ..ep.superpod import blocks_per_copy, phase_latency, phase_plan, scheme

    lines = [pad(_("copy", context="column"), 28) + pad(_("block", context="column"), 7, ">")
             + pad(_("flag inside"), 13, ">") + pad(_("payload only"), 14, ">")]
    for name, nbytes in ((_("dispatch, INT8 7,172 B"), 7172), (_("combine, BF16 14,336 B"), 14336)):
        for block in (512, 128):
            lines.append(f"{pad(name, 28)}{block:7d}{blocks_per_copy(nbytes, block, 8, True):13d}"
                         f"{blocks_per_copy(nbytes, block, 8, False):14d}")
    b128 = {s: phase_latency(phase_plan(traffic, costs, scheme(s, block_bytes=128)))
            for s in ("baseline", "ubep")}
    lines.append(_("EP{ep} dispatch with 128-B blocks: baseline {base:.0f} µs, UBEP {ubep:.0f} µs "
                   "(model)").format(ep=traffic.n_ranks, base=b128["baseline"] / _US,
                                     ubep=b128["ubep"] / _US))
    return SimpleNamespace(b128=b128, report="\n".join(lines))


@arguments(costs=_COSTS, ep_sizes=items(integer(lo=1, hi=320), hi=16), jitter=_JITTER,
           runs=integer(lo=10, hi=10_000))
def ep_sweep(costs, ep_sizes, jitter: float, runs: int = 500) -> SimpleNamespace:
    """Section 4: the median and P99 dispatch latency (s) of ``runs`` jittered runs per EP size,
    baseline and UBEP (``median[label]``, ``p99[label]``), their jitter-free latency
    (``calm[label]``, s); how much lower UBEP's median is per EP
    size (``cut[ep]``, share) and what the equal hop mix alone saves at EP64 and EP128 without
    jitter (``mix[ep]``, s)."""
    from ..ep.superpod import (
        latency_samples,
        phase_latency,
        phase_plan,
        scheme,
        superpod_traffic,
    )

    median = {"serialised baseline": [], "UBEP": []}
    p99 = {"serialised baseline": [], "UBEP": []}
    calm = {"serialised baseline": [], "UBEP": []}
    for ep in ep_sizes:
        t = superpod_traffic(ep, seed=0)
        for label, kind in (("serialised baseline", "baseline"), ("UBEP", "ubep")):
            plan = phase_plan(t, costs, scheme(kind))
            calm[label].append(phase_latency(plan))
            samples = latency_samples(plan, runs, jitter, seed=1)
            median[label].append(np.median(samples))
            p99[label].append(np.percentile(samples, 99))
    base, ubep = median["serialised baseline"], median["UBEP"]
    cut = {ep: 1 - u / b for ep, b, u in zip(ep_sizes, base, ubep, strict=True)}
    lines = [f"EP{pad(_('baseline'), 13, '>')}   UBEP{pad(_('lower by'), 12, '>')}  "
             + _("(median of {runs} jittered runs, µs, model)").format(runs=runs)]
    lines += [f"{ep:<5d}{base[i] / _US:9.0f}{ubep[i] / _US:7.0f}{100 * cut[ep]:9.0f}%"
              for i, ep in enumerate(ep_sizes)]
    mix = {}  # what the equal hop mix alone saves, no jitter
    for ep in (64, 128):
        t = superpod_traffic(ep, seed=0)
        contiguous = phase_latency(phase_plan(t, costs, scheme("baseline")))
        hop_mix = phase_latency(phase_plan(t, costs, scheme("baseline", assignment="hop_mix")))
        mix[ep] = contiguous - hop_mix
    lines.append(_("the hop mix alone saves {ep64:.0f} µs at EP64, {ep128:.0f} µs at EP128").format(
        ep64=mix[64] / _US, ep128=mix[128] / _US))
    return SimpleNamespace(ep_sizes=tuple(ep_sizes), median=median, p99=p99, calm=calm, cut=cut,
                           mix=mix, report="\n".join(lines))


@arguments(traffic=_TRAFFIC, costs=_COSTS, jitter=_JITTER,
           sigmas=items(real(lo=0.0, hi=1000.0), hi=16), n_steps=integer(lo=1, hi=100_000))
def tpot_runs(traffic, costs, jitter: float, sigmas, n_steps: int = 1000) -> SimpleNamespace:
    """Section 5: ``n_steps`` decode steps of baseline and UBEP with ``jitter`` (``tpot[label]``:
    DecodeSteps) and the median dispatch latency each jitter of ``sigmas`` (µs) adds
    (``extra[label]``, µs)."""
    from ..ep.superpod import decode_steps, latency_samples, phase_latency, phase_plan, scheme

    kinds = (("serialised baseline", "baseline"), ("UBEP", "ubep"))
    tpot = {label: decode_steps(traffic, costs, scheme(kind), n_steps=n_steps, jitter=jitter,
                                seed=7) for label, kind in kinds}
    extra = {}
    for label, kind in kinds:
        plan = phase_plan(traffic, costs, scheme(kind))
        calm = phase_latency(plan)
        extra[label] = [(np.median(latency_samples(plan, 500, s * _US, seed=3)) - calm) / _US
                        for s in sigmas]
    b, u = tpot["serialised baseline"], tpot["UBEP"]
    gain50, gain99 = 1 - u.p50 / b.p50, 1 - u.p99 / b.p99
    report = "\n".join([
        _("time per output token: P50 {b50:.2f} → {u50:.2f} ms ({cut50:.1f}% lower), P99 "
          "{b99:.2f} → {u99:.2f} ms ({cut99:.1f}% lower) (model)").format(
            b50=b.p50 * 1e3, u50=u.p50 * 1e3, cut50=100 * gain50, b99=b.p99 * 1e3,
            u99=u.p99 * 1e3, cut99=100 * gain99),
        _("added median dispatch latency at σ = {sigma:g} µs: baseline {base:.0f} µs, UBEP "
          "{ubep:.0f} µs (model)").format(sigma=sigmas[-1], base=extra["serialised baseline"][-1],
                                         ubep=extra["UBEP"][-1])])
    return SimpleNamespace(tpot=tpot, extra=extra, gain50=gain50, gain99=gain99, report=report)


@arguments(costs=_COSTS, jitter=_JITTER, barrier_us=items(integer(lo=0, hi=10_000), lo=2, hi=32),
           target=real(lo=0.0, hi=1.0, lo_open=True, hi_open=True))
def barrier_needed(costs, jitter: float, barrier_us=tuple(range(20, 141, 20)),
                   target: float = 0.524) -> SimpleNamespace:
    """Section 7: at EP64 and EP128, how much lower UBEP's median is for each barrier cost of
    ``barrier_us`` (µs) (``cuts[ep]``) and the barrier cost that reaches ``target``
    (``needed[ep]``, µs, interpolated); ``floor8[ep]``: the baseline's jitter-free EP8 dispatch
    (s) with that barrier and a q so large (4,096) that writes cost only their bytes, a lower
    bound for any q."""
    from ..ep.superpod import latency_samples, phase_latency, phase_plan, scheme, superpod_traffic

    needed, cuts, floor8, lines = {}, {}, {}, []
    for ep in (64, 128):
        t = superpod_traffic(ep, seed=0)
        ubep = np.median(latency_samples(phase_plan(t, costs, scheme("ubep")), 500, jitter,
                                         seed=1))
        cuts[ep] = [1 - ubep / np.median(latency_samples(
            phase_plan(t, costs.with_(barrier_cost=tb * _US), scheme("baseline")), 500, jitter,
            seed=1)) for tb in barrier_us]
        needed[ep] = float(np.interp(target, cuts[ep], barrier_us))
        floor8[ep] = phase_latency(phase_plan(superpod_traffic(8, seed=0), costs.with_(
            barrier_cost=needed[ep] * _US, writes_in_flight=4096), scheme("baseline")))
        lines.append(_("EP{ep} cut at barrier costs {costs} µs: {cuts}").format(
            ep=ep, costs=list(barrier_us), cuts=_(", ").join(f"{100 * c:.0f}%" for c in cuts[ep])))
        lines.append("  " + _("{target:.1f}% needs about {needed:.0f} µs per barrier (model); with "
                              "it the baseline's EP8 dispatch is at least {floor:.0f} µs at any q "
                              "(CloudMatrix-Infer measured 116 µs [paper])").format(
            target=100 * target, needed=needed[ep], floor=floor8[ep] / _US))
    return SimpleNamespace(cuts=cuts, needed=needed, floor8=floor8, report="\n".join(lines))


@arguments(costs=_COSTS, eps=items(integer(lo=1, hi=320), hi=8))
def phase_table(costs, eps=(8, 256)) -> SimpleNamespace:
    """Section 7: dispatch and combine latency (µs, no jitter) of baseline and UBEP at each EP
    size of ``eps``: ``table[ep][(kind, phase)]``."""
    from ..ep.superpod import phase_latency, phase_plan, scheme, superpod_traffic

    table, lines = {}, []
    shown = {"baseline": _("baseline"), "ubep": _("ubep", context="scheme"),
             "dispatch": _("dispatch"), "combine": _("combine")}
    for ep in eps:
        t = superpod_traffic(ep, seed=0)
        table[ep] = {(kind, phase): phase_latency(phase_plan(t, costs, scheme(kind), phase)) / _US
                     for kind in ("baseline", "ubep") for phase in ("dispatch", "combine")}
        lines.append(_("EP{ep}: {items}").format(ep=ep, items=_(", ").join(
            f"{shown[k]} {shown[ph]} {v:.0f}" for (k, ph), v in table[ep].items())))
    return SimpleNamespace(table=table, report="\n".join(lines))


# --------------------------------------------------------------------------- second edition
# Calibration of the writes in flight, what pins the local latency, and stragglers with tails.

#: "P99 time per output token up to 11.1% lower" [chapter], as a share.
CHAPTER_P99_CUT = 0.111

#: Section 5's straggler models: label -> keywords of :func:`uneven.ep.superpod.decode_steps`.
#: The Pareto model has the exponential's mean per op (scale / (alpha - 1) = 2 µs).
TAIL_MODELS = {
    N_("light: exponential, mean 2 µs"): dict(jitter=2e-6),
    N_("slow die: 0.1% of die-steps at 1.5×"): dict(jitter=2e-6, slow_prob=1e-3, slowdown=1.5),
    N_("heavy: Pareto α = 1.5, mean 2 µs"): dict(jitter=0.0, pareto_alpha=1.5,
                                                 pareto_scale=1e-6),
    N_("slow UB port: comm only at 1.5×"): dict(jitter=2e-6, slow_prob=1e-3, slowdown=1.5,
                                                      slow_ops="comm"),
}


@lru_cache(maxsize=1)
def fitted_q() -> int:
    """The writes in flight per core that fit CloudMatrix384's measured dispatch (116 µs at EP8,
    152 µs at EP256 [paper]) with the serialised baseline and the other costs at their
    defaults (:func:`uneven.ep.superpod.fit_writes_in_flight`). The library's default is this
    value (tests/test_superpod_tails.py checks it)."""
    from ..ep.superpod import fit_writes_in_flight

    return fit_writes_in_flight(kind="baseline").q


#: The mean per-op jitter (s) of the second reading of the fit (Section 1): the measured
#: operator's medians include the model's 2-µs exponential delays.
FIT_JITTER = 2e-6


def _far_share(costs) -> float:
    lat2 = costs.hop_latency[2] / costs.writes_in_flight
    return lat2 / (lat2 + 512 / costs.core_bandwidth)


def calibration() -> SimpleNamespace:
    """Section 1: ``q`` fitted to CloudMatrix384's dispatch with the serialised baseline
    (``fits["baseline"]``, jitter-free: the notebook's reading), with the baseline's median
    under :data:`FIT_JITTER` (``fits["baseline, jittered"]``) and with UBEP (``fits["ubep"]``);
    ``costs``: the jitter-free baseline fit's :class:`~uneven.ep.superpod.CoreCosts`;
    ``far_latency_share``: how much of a two-hop 512-B write is latency at its ``q``
    (``far_share[fit]`` for each fit); ``q_latency_bound``: the largest ``q`` at which a two-hop
    write is still mostly latency."""
    from ..ep.superpod import fit_writes_in_flight

    fits = {"baseline": fit_writes_in_flight(kind="baseline"),
            "baseline, jittered": fit_writes_in_flight(kind="baseline", jitter=FIT_JITTER),
            "ubep": fit_writes_in_flight(kind="ubep")}
    costs = fits["baseline"].costs
    bound = costs.hop_latency[2] * costs.core_bandwidth / 512  # ℓ2 / q = push at this q
    lines = [pad(_("fitted to"), 22) + f"{'q':>4s}  " + "  ".join(
        f"EP{ep}: " + pad(_("model/measured"), 14) for ep in fits["baseline"].eps) + "   rms"]
    names = {"baseline": _("baseline, no jitter"),
             "baseline, jittered": _("baseline, 2-µs jitter"), "ubep": _("UBEP, no jitter")}
    for k, f in fits.items():
        name = names[k]
        lines.append(f"{pad(name, 22)}{f.q:4d}  " + "  ".join(
            f"{m / _US:5.0f} / {t / _US:3.0f} µs ({100 * r:+4.1f}%)"
            for m, t, r in zip(f.model, f.target, f.residual, strict=True))
            + f"   {100 * f.rms:.1f}%")
    fb = fits["baseline"]
    lines.append(_("bandwidth per rank, baseline fit, block bytes over latency: {items}").format(
        items=_(", ").join(
            _("EP{ep} {model:.0f} GB/s (measured {measured:.0f} GB/s)").format(
                ep=ep, model=mb / 1e9, measured=fb.target_bandwidth[ep] / 1e9)
            for ep, mb in zip(fb.eps, fb.model_bandwidth, strict=True)
            if ep in fb.target_bandwidth)))
    lines.append(_("measured GB/s × measured µs / 1,024 copies = {sizes} B per copy [derived]; "
                   "the model's copy: {payload:,} B of payload in {wire:,} B of blocks").format(
        sizes=_(", ").join(f"{b:,.0f}" for b in fb.target_copy_bytes.values()),
        payload=fb.copy_bytes, wire=fb.wire_bytes))
    far_share = {k: _far_share(f.costs) for k, f in fits.items()}
    fj, sj = fits["baseline, jittered"], far_share["baseline, jittered"]
    lines.append(_("a two-hop 512-B write is {share:.0f}% latency at q = {q} (no jitter), "
                   "{share_j:.0f}% at q = {q_j} (jittered); latency outweighs bytes on far writes "
                   "up to q = {bound:.0f}").format(share=100 * far_share["baseline"],
                                                   q=costs.writes_in_flight, share_j=100 * sj,
                                                   q_j=fj.q, bound=bound))
    return SimpleNamespace(fits=fits, costs=costs, far_latency_share=far_share["baseline"],
                           far_share=far_share, q_latency_bound=bound, report="\n".join(lines))


def fit_sensitivity(barrier_us=(10, 20, 30), jitter=(0.0, FIT_JITTER)) -> SimpleNamespace:
    """Appendix C: the fitted ``q`` (scan 1..32) for each assumed barrier cost of ``barrier_us``
    (µs) and per-op jitter of ``jitter`` (s): ``q[(barrier_us, jitter)]``, ``rms[...]``."""
    from ..ep.superpod import CoreCosts, fit_writes_in_flight

    barrier_us = [check_real("barrier_us", b, lo=0.0, hi=1000.0) for b in barrier_us]
    jitter = [check_real("jitter", j, lo=0.0, hi=1e-3, unit="s") for j in jitter]
    if not 1 <= len(barrier_us) <= 6 or not 1 <= len(jitter) <= 3:
        raise ValueError(f"barrier_us must hold 1 to 6 costs and jitter 1 to 3; got "
                         f"{len(barrier_us)} and {len(jitter)}")
    q, rms = {}, {}
    lines = [_("fitted q (rms) by assumed barrier cost and per-op jitter (model; scan 1..32):")]
    for b in barrier_us:
        row = []
        for j in jitter:
            f = fit_writes_in_flight(kind="baseline", jitter=j,
                                     costs=CoreCosts(barrier_cost=b * _US))
            q[b, j], rms[b, j] = f.q, f.rms
            edge = _(" (scan edge)") if f.q == f.q_values[-1] else ""
            row.append(_("jitter {jitter:g} µs: q = {q}{edge} ({rms:.1f}%)").format(
                jitter=j / _US, q=f.q, edge=edge, rms=100 * f.rms))
        lines.append("  " + _("barrier {b:g} µs: {row}").format(b=b, row=_("; ").join(row)))
    return SimpleNamespace(q=q, rms=rms, report="\n".join(lines))


#: Appendix C's communication-only stragglers: label -> keywords of
#: :func:`uneven.ep.superpod.decode_steps` (only the slow die's communication, or its counting).
COMM_STRAGGLERS = {
    N_("slow UB port: comm at 1.5×"): dict(jitter=2e-6, slow_prob=1e-3, slowdown=1.5,
                                           slow_ops="comm"),
    N_("slow counting: count at 10×"): dict(jitter=2e-6, slow_prob=1e-3, slowdown=10.0,
                                            slow_ops="count"),
}
#: The three schemes of Appendix C: the baseline, the baseline with UBEP's hop mix (its barriers
#: kept), UBEP.
_TAIL_SCHEMES = (("serialised baseline", dict(kind="baseline")),
                 ("baseline + hop mix", dict(kind="baseline", assignment="hop_mix")),
                 ("UBEP", dict(kind="ubep")))


@arguments(traffic=_TRAFFIC, costs=_COSTS, n_steps=integer(lo=10, hi=100_000),
           seed=integer(lo=0, hi=2**32))
def barrier_tail(traffic, costs, n_steps: int = 1000, seed: int = 7) -> SimpleNamespace:
    """Appendix C: do the barriers amplify a straggler that slows only communication? For each
    model of :data:`COMM_STRAGGLERS` and each of the baseline, the baseline with the hop mix
    (barriers kept) and UBEP: P50 and P99 time per output token (``tpot[model][scheme]``,
    DecodeSteps) and the tail ``tail[model][scheme]`` = P99 − P50 (s). UBEP's cut against the
    hop-mix baseline (``cut50``, ``cut99``) is what removing the barriers alone does."""
    from ..ep.superpod import decode_steps

    tpot, tail, cut50, cut99 = {}, {}, {}, {}
    lines = [pad(_("straggler (model)"), 30)
             + "".join(pad(_(k), 24, ">") for k, _kw in _TAIL_SCHEMES)
             + _("   barriers alone: cut P50/P99")]
    for name, kw in COMM_STRAGGLERS.items():
        tpot[name] = {k: decode_steps(traffic, costs, _scheme(sk), n_steps=n_steps, seed=seed,
                                      **kw) for k, sk in _TAIL_SCHEMES}
        tail[name] = {k: r.p99 - r.p50 for k, r in tpot[name].items()}
        m, u = tpot[name]["baseline + hop mix"], tpot[name]["UBEP"]
        cut50[name], cut99[name] = 1 - u.p50 / m.p50, 1 - u.p99 / m.p99
        lines.append(pad(_(name), 30) + "".join(
            f"{r.p50 * 1e3:11.2f}/{r.p99 * 1e3:6.2f} ms" for r in tpot[name].values())
            + f"{100 * cut50[name]:10.1f}%/{100 * cut99[name]:.1f}%")
    lines.append(_("P50/P99 time per output token, EP{ep}, {steps:,} steps each").format(
        ep=traffic.n_ranks, steps=n_steps))
    return SimpleNamespace(tpot=tpot, tail=tail, cut50=cut50, cut99=cut99,
                           report="\n".join(lines))


@arguments(costs=_COSTS, extra=real(lo=0.0, hi=1e-3, lo_open=True, unit="s"))
def latency_pins(costs, extra: float = 1e-6) -> SimpleNamespace:
    """Section 1: what bounds the local latency ℓ0. With ℓ1 = f1 ℓ0 and ℓ2 = f2 ℓ0 (f2 = 11.5,
    the chapter's ratio), an inter-node penalty below ``extra`` (1 µs, CloudMatrix384 [paper])
    means (f2 - f1) ℓ0 < ``extra``. ``bound``: the largest ℓ0 (s) at the costs' f1;
    ``by_f1``: the bound for f1 = 1, 3, 5, 8."""
    f1, f2 = costs.one_hop_factor, costs.two_hop_factor
    if not f2 > f1:
        raise ValueError(f"costs must have two_hop_factor > one_hop_factor for a bound; got "
                         f"{f2:g} and {f1:g}")
    bound = extra / (f2 - f1)
    by_f1 = {f: extra / (f2 - f) for f in (1.0, 3.0, 5.0, 8.0) if f < f2}
    gap = costs.hop_latency[2] - costs.hop_latency[1]
    lines = [_("ℓ2 − ℓ1 = ({f2:g} − {f1:g}) ℓ0 < {extra:g} µs  ⇒  ℓ0 < {bound:.3f} µs; the "
               "model's ℓ0 = {l0:.2f} µs gives ℓ2 − ℓ1 = {gap:.2f} µs").format(
                 f2=f2, f1=f1, extra=extra / _US, bound=bound / _US,
                 l0=costs.local_latency / _US, gap=gap / _US),
             _("the bound if one hop cost f1 local accesses: {bounds}").format(bounds=_(", ").join(
                 f"f1 = {f:g}: ℓ0 < {b / _US:.3f} µs" for f, b in by_f1.items()))]
    return SimpleNamespace(bound=bound, by_f1=by_f1, gap=gap, report="\n".join(lines))


@arguments(traffic=_TRAFFIC, costs=_COSTS, n_steps=integer(lo=10, hi=100_000),
           seed=integer(lo=0, hi=2**32))
def tail_runs(traffic, costs, models: dict | None = None, n_steps: int = 1000,
              seed: int = 7) -> SimpleNamespace:
    """Section 5: ``n_steps`` decode steps (58 layers) of the serialised baseline (two barriers
    per dispatch, one per combine) and UBEP (none) under each straggler model of ``models``
    (default :data:`TAIL_MODELS`; label -> keywords of
    :func:`uneven.ep.superpod.decode_steps`, at most 6): ``tpot[model][scheme]``
    (DecodeSteps), ``gain50[model]`` and ``gain99[model]`` (how much lower UBEP is, share),
    ``slowest[model]``: the expected slowest of the EP group's per-op delays (s, from
    :func:`uneven.order_stats.expected_max`; None for the slow-die model)."""
    from ..ep.superpod import decode_steps, scheme
    from ..order_stats import expected_max

    models = TAIL_MODELS if models is None else models
    check_dict("models", models, key=_is_label, hi=6, item=lambda kw: isinstance(kw, dict))
    n = traffic.n_ranks
    kinds = (("serialised baseline", "baseline"), ("UBEP", "ubep"))
    tpot, gain50, gain99, slowest = {}, {}, {}, {}
    lines = [pad(_("straggler model (model)"), 38) + pad(_("baseline P50/P99"), 19, ">")
             + f"{'UBEP P50/P99':>16s}" + pad(_("lower at P50"), 14, ">")
             + pad(_("at P99", context="column"), 8, ">")]
    for name, kw in models.items():
        with handed_on(f"models[{name!r}]"):
            tpot[name] = {label: decode_steps(traffic, costs, scheme(kind), n_steps=n_steps,
                                              seed=seed, **kw) for label, kind in kinds}
        b, u = tpot[name]["serialised baseline"], tpot[name]["UBEP"]
        gain50[name], gain99[name] = 1 - u.p50 / b.p50, 1 - u.p99 / b.p99
        if kw.get("pareto_scale", 0.0) > 0:
            s = kw["pareto_scale"]
            slowest[name] = expected_max("pareto", n, scale=s,
                                         alpha=kw.get("pareto_alpha", 2.0)) - s
        elif kw.get("slow_prob", 0.0) > 0:
            slowest[name] = None
        else:
            slowest[name] = expected_max("exponential", n, scale=kw.get("jitter", 0.0))
        lines.append(f"{pad(_(name), 38)}{b.p50 * 1e3:9.2f}/{b.p99 * 1e3:6.2f} ms"
                     f"{u.p50 * 1e3:8.2f}/{u.p99 * 1e3:6.2f} ms"
                     f"{100 * gain50[name]:12.1f}%{100 * gain99[name]:7.1f}%")
    lines.append(_("the chapter: P99 up to {cut:.1f}% lower [chapter]").format(
        cut=100 * CHAPTER_P99_CUT))
    return SimpleNamespace(tpot=tpot, gain50=gain50, gain99=gain99, slowest=slowest,
                           report="\n".join(lines))


@plots.recipe
def tail_figure(tpot: dict, *, chapter: float = CHAPTER_P99_CUT, ep: int = 64):
    """Left: P50 and P99 time per output token (ms) of each scheme under each straggler model
    (``tpot``: ``{model: {scheme label: DecodeSteps}}``, at most 6 models of at most 4
    schemes, the first scheme the one the cut is measured against). Right: how much lower the
    last scheme is at P50 and at P99 (%), with the chapter's P99 figure (``chapter``, a share
    in (0, 1)) as a line."""
    from ..ep.superpod import DecodeSteps

    check_dict("tpot", tpot, key=_is_label, hi=6, item=lambda d: isinstance(d, dict)
               and 2 <= len(d) <= 4 and all(k in SCHEME_COLORS and isinstance(v, DecodeSteps)
                                            for k, v in d.items()))
    chapter = check_real("chapter", chapter, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    ep = check_int("ep", ep, lo=1)
    names = list(tpot)
    fig, (ax, ax_g) = plots.figure(11.5, 4.3, ncols=2, width_ratios=(1.45, 1.0))
    with plots.style():
        x = np.arange(len(names))
        labels = list(tpot[names[0]])
        w = 0.8 / (2 * len(labels))
        for j, label in enumerate(labels):
            col = SCHEME_COLORS[label]
            for k, (pct, hatch) in enumerate(((50, None), (99, "//"))):
                vals = [getattr(tpot[m][label], f"p{pct}") * 1e3 for m in names]
                pos = x + (2 * j + k - len(labels) + 0.5) * w
                ax.bar(pos, vals, w * 0.92, color=col, alpha=0.55 if k == 0 else 0.95,
                       hatch=hatch, edgecolor="white", label=f"{_(label)}, P{pct}")
                for p_, v in zip(pos, vals, strict=True):
                    ax.text(p_, v, f"{v:.0f}", ha="center", va="bottom", fontsize=plots.SMALL)
        ax.set_xticks(x, [_(m).replace(": ", ":\n").replace(", ", ",\n")
                          .replace("：", "：\n").replace("，", "，\n") for m in names],
                      fontsize=plots.SMALL)
        ax.set_ylabel(_("time per output token (ms, model)"))
        n = tpot[names[0]][labels[0]]
        ax.set_title(_("EP{ep}, {layers} MoE layers, {steps:,} decode steps per bar").format(
            ep=ep, layers=n.n_layers, steps=n.tpot.size))
        ax.grid(axis="x", visible=False)
        plots.legend(ax, "below", ncol=4)
        b, u = labels[0], labels[-1]
        g50 = [100 * (1 - tpot[m][u].p50 / tpot[m][b].p50) for m in names]
        g99 = [100 * (1 - tpot[m][u].p99 / tpot[m][b].p99) for m in names]
        ax_g.bar(x - 0.18, g50, 0.34, color=SCHEME_COLORS[u], alpha=0.55,
                 label=_("at P50 (model)"))
        ax_g.bar(x + 0.18, g99, 0.34, color=SCHEME_COLORS[u], hatch="//", edgecolor="white",
                 label=_("at P99 (model)"))
        for xx, a, c in zip(x, g50, g99, strict=True):
            ax_g.text(xx - 0.18, a, f"{a:.1f}", ha="center", va="bottom", fontsize=plots.SMALL)
            ax_g.text(xx + 0.18, c, f"{c:.1f}", ha="center", va="bottom", fontsize=plots.SMALL)
        ax_g.axhline(100 * chapter, color=plots.color("paper"), ls="--", lw=1.2,
                     label=_("P99 up to {cut:.1f}% lower [chapter]").format(cut=100 * chapter))
        ax_g.set_xticks(x, [_(m).split(":")[0].split("：")[0] for m in names])
        ax_g.set_ylim(0, max(100 * chapter, *g50, *g99) * 1.3)
        ax_g.set_ylabel(_("{u} below {b} (%)").format(u=_(u), b=_(b)))
        ax_g.set_title(_("does removing the barriers cut the tail more?"))
        ax_g.grid(axis="x", visible=False)
        plots.legend(ax_g, "below", ncol=2)
    return fig
