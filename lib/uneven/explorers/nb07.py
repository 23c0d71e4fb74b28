"""Notebook 07 (what the six papers agree on, and where they differ): explorer and figures.

The explorer (:func:`unevenness_explorer`) sets one unevenness knob per paper on the shared scale
of :mod:`uneven.unevenness` and shows each system's step time over its own balanced ideal. The
figure recipes draw values the notebook computed with :mod:`uneven.policies`,
:mod:`uneven.order_stats`, :mod:`uneven.counterfactuals`, :mod:`uneven.ep.fabrics`,
:mod:`uneven.ep.roofline` and :mod:`uneven.papers`. Every recipe checks what it is given
(types, shapes, finiteness, sizes) before it draws.

>>> from uneven.counterfactuals import TaxRow, bandwidth_sweep, network_fix_sweep
>>> from uneven.ep.fabrics import dispatch_on_fabrics
>>> from uneven.ep.roofline import EXPERT_COSTS
>>> from uneven.papers import evidence_rows
>>> from uneven.policies import policy_table
>>> state = unevenness_state(deepseek=1.0)
>>> round(state.pieces["deepseek"].baseline_ratio, 1)
5.4
>>> draw_unevenness(plots.blank_figure(9.6, 4.9), state)
'uneven'
>>> fig = unevenness_figure(state)
>>> fig = slow_pieces_figure(state.pieces)
>>> t = policy_table([[1.0, 2.0], [1.5, 1.0]], ["a", "b"], ["x", "y"])
>>> fig = policy_figure({"demo": t}, defaults={"demo": "a"})
>>> ns = np.array([1, 2, 8])
>>> fig = order_stats_figure(ns, {"g": ns * 0.1}, {"g": ([2], [0.1], [0.01])},
...                          asymptote=(ns, ns * 0.1))
>>> sweep = network_fix_sweep(0.03, [0.0, 0.5, 1.0], p=4, m=12)
>>> before_after = {("skewed", "A"): 2e-4, ("skewed", "B"): 1.8e-4,
...                 ("balanced", "A"): 1.5e-4, ("balanced", "B"): 1e-4}
>>> fig = network_fixes_figure(sweep, before_after,
...                            bandwidth_sweep([1, 4, np.inf], ep=16, tokens_per_die=8))
>>> fig = compute_tax_figure([TaxRow("a", "b", 2.0, 1.0)], bound=("c", 0.2))
>>> fig = fabrics_figure(dispatch_on_fabrics(tokens_per_gpu=4))
>>> fig = regimes_figure(EXPERT_COSTS, np.geomspace(1, 1e4, 20), decode_tokens=(1, 256),
...                      training_tokens=(2000, 20000), decode_gain=([1, 4, 16], [-0.1, 0, 0.1]),
...                      training_gain=0.15)
>>> rows = evidence_rows()
>>> fig = evidence_figure(rows)
>>> len(evidence_markdown(rows).splitlines()) == len(rows) + 2
True
>>> from uneven.trace.kineto import read_kineto, sample_kineto_traces
>>> kt = read_kineto(sample_kineto_traces(n_layers=1))
>>> slow, late = kt.scale(1.5, category="communication", rank=0), kt.delay_comm(1e-4, rank=0)
>>> kineto_report(kt.replay(), slow, late).splitlines()[1].startswith("unmodified replay")
True
>>> fig = kineto_replay_figure(kt.replay(), slow)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .. import plots
from .._fields import (
    Checked,
    arguments,
    array,
    check_fields,
    instance,
    integer,
    items,
    mapping,
    per_key,
    real,
)
from .._moved import renamed_names
from .._validate import (
    _raw_array,
    _show,
    as_float_array,
    as_int_array,
    check_instance,
    check_mapping,
    check_pair,
    check_real,
    check_str,
    trusted,
)
from ..i18n import gettext as _
from ..papers import PAPERS
from ..unevenness import PAPER_KEYS, SlowPiece
from ..widgets import Explorer, explore, reuse, slider
from ._common import N_, check_dict, instances, pad

__all__ = [
    "SYSTEM_COLORS",
    "UnevennessState",
    "unevenness_state",
    "draw_unevenness",
    "unevenness_explorer",
    "unevenness_figure",
    "policy_figure",
    "order_stats_figure",
    "slow_pieces_figure",
    "network_fixes_figure",
    "compute_tax_figure",
    "fabrics_figure",
    "regimes_figure",
    "evidence_figure",
    "evidence_markdown",
    "kineto_replay_figure",
    "KIND_COLORS",
    # the notebook's runs, one per section
    "DEFAULT_POLICIES",
    "DEFAULT_LABELS",
    "boundary_cases",
    "DISTRIBUTIONS",
    "TRANSPORT_BATCHES",
    "SM_BOUND",
    "delay_profiles",
    "policy_tables",
    "max_gaps",
    "knob_report",
    "slow_pieces_report",
    "network_fixes",
    "tax_report",
    "fabrics_report",
    "overlap_gains",
    "evidence_counts",
    "kineto_report",
]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("deepseek", (0.1, 0.3, 0.5, 0.7, 0.9))

#: The palette name of each paper's system (its baseline is drawn grey and dashed).
SYSTEM_COLORS = {p.key: p.system for p in PAPERS}
#: Colours of the kinds of evidence (not named things of the palette; see the notebook's report).
KIND_COLORS = {"testbed": plots.color("blue"), "production": plots.color("green"),
               "simulation": plots.color("purple"), "analysis": plots.color("grey"),
               "chapter-only": plots.color("red")}
_KIND_MARKERS = {"testbed": "o", "production": "s", "simulation": "^", "analysis": "D",
                 "chapter-only": "X"}
_BASE_COLOR = plots.color("grey")
#: Colour of a UB (load/store fabric) port, until the palette has a name for it.
_UB_COLOR = plots.color("purple")
_MAX_PLOT = 1e15  # largest magnitude a recipe plots (times in s, ratios, shares ...)
_MAX_T = 1e9  # s: the longest time the section 3 and 5 recipes draw (in ms or µs)
# Names that are keys in code and shown translated: evidence kinds, schemes, transports, states.
_SHOWN = (N_("testbed"), N_("production"), N_("simulation"), N_("analysis"), N_("chapter-only"),
          N_("serialised baseline"), N_("SM-resident"), N_("SM-free"))


def _values(name, value, *, n=None, lo=-_MAX_PLOT, lo_open=False, hi=_MAX_PLOT, max_n=10_000):
    """A 1-d array of 1 to ``max_n`` finite numbers in [lo, hi] (``n`` of them if given)."""
    if _length(value) > max_n:
        raise ValueError(f"{name} must have at most {max_n:,} entries; got {_length(value):,}")
    arr = as_float_array(name, value, ndim=1, lo=lo, lo_open=lo_open, hi=hi)
    if (n is not None and arr.size != n) or not 1 <= arr.size <= max_n:
        raise ValueError(f"{name} must have {n or f'1 to {max_n:,}'} entries; got {arr.size}")
    return arr


def _length(value) -> int:
    """Entries along the first axis of a list, tuple or array (0 for anything else)."""
    if isinstance(value, (list, tuple)):
        return len(value)
    if isinstance(value, np.ndarray) and value.ndim:
        return value.shape[0]
    return 0


def _number(name, value, lo=-_MAX_PLOT, hi=_MAX_PLOT, lo_open=False) -> float:
    return check_real(name, value, lo=lo, hi=hi, lo_open=lo_open)


def _label(name, value, max_len=300) -> str:
    return check_str(name, value, max_len=max_len)


# --------------------------------------------------------------------------- explorer


@dataclass(frozen=True)
class UnevennessState(Checked):
    """The six slow pieces at the explorer's settings (``pieces``: key →
    :class:`uneven.unevenness.SlowPiece`, keys among the paper keys) and the curves over the
    shared scale (``curves``, as :func:`uneven.unevenness.unevenness_curves`, one per paper:
    ``"s"`` in [0, 1] and the ``"baseline"`` and ``"system"`` ratios in [0, 1e30], read-only
    arrays of equal length). Checked on construction."""

    pieces: dict = mapping()
    curves: dict = per_key(lambda: PAPER_KEYS, per_key(("s", "baseline", "system"), array(
        shape=("n",), nonempty=True, lo=0.0, hi=1e30)))

    def __post_init__(self):
        check_fields(self)
        for k, v in self.pieces.items():
            if k not in PAPER_KEYS or not isinstance(v, SlowPiece) or v.key != k:
                raise ValueError(f"pieces must map paper keys ({', '.join(PAPER_KEYS)}) to their "
                                 f"SlowPiece; got {_show(k)}: {_show(v)}")
        for key, c in self.curves.items():
            if c["s"].size > 1001 or c["s"].max() > 1.0:
                raise ValueError(f"curves[{key!r}]['s'] must hold 1 to 1,001 values in [0, 1]; "
                                 f"got {_show(c['s'])}")


def unevenness_state(pipemorph: float = 0.5, bytescale: float = 0.5, deepseek: float = 0.5,
                     megascale: float = 0.5, balancing: float = 0.5, ubep: float = 0.5
                 ) -> UnevennessState:
    """Each paper's slow piece at its own shared-scale value (0 balanced … 1 twice the paper's
    setting); results are cached per value, the curves once."""
    from ..unevenness import PAPER_KEYS, slow_piece, unevenness_curves

    values = {k: check_real(k, v, lo=0.0, hi=1.0) for k, v in zip(
        PAPER_KEYS, (pipemorph, bytescale, deepseek, megascale, balancing, ubep), strict=True)}
    pieces = {k: slow_piece(k, v) for k, v in values.items()}
    return trusted(UnevennessState, pieces=pieces, curves=unevenness_curves())


def _panel_text(piece) -> str:
    k = piece.knob
    unit = "" if not k.unit else (k.unit if k.unit == "×" else f" {k.unit}")
    return f"{piece.value:.3g}{unit}: {piece.baseline_ratio:.2f}× · {piece.system_ratio:.2f}×"


@plots.recipe
def draw_unevenness(fig, state: UnevennessState, **_values):
    """Six panels, one per paper: step time over the balanced ideal against the shared scale,
    the baseline (grey, dashed) and the paper's system, with the current settings marked and
    written as "knob value: baseline × · system ×". Returns the layout key for
    :class:`uneven.widgets.Explorer`."""
    from matplotlib.figure import Figure

    from ..papers import paper
    from ..unevenness import KNOBS, PAPER_KEYS

    check_instance("fig", fig, Figure)
    check_instance("state", state, UnevennessState, "from unevenness_state(...)")

    def build(fig):
        axes = fig.subplots(2, 3)
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.06, right=0.99, bottom=0.1, top=0.88, wspace=0.24,
                                hspace=0.5)
        dyn, marks, texts, lines = [], {}, {}, {}
        for ax, key in zip(axes.ravel(), PAPER_KEYS, strict=True):
            c = state.curves[key]
            k = KNOBS[key]
            col = plots.color(SYSTEM_COLORS[key])
            (lb,) = ax.plot(c["s"], c["baseline"], ls="--", color=_BASE_COLOR, lw=1.4,
                            label=_(k.baseline))
            (ls,) = ax.plot(c["s"], c["system"], color=col, lw=1.8, label=_(k.system))
            ax.axhline(1.0, color=plots.color("healthy"), lw=0.7, ls=":")
            ax.set_xlim(-0.03, 1.03)
            (mb,) = ax.plot([], [], "o", ms=6, mfc="white", mec=_BASE_COLOR, mew=1.6)
            (ms,) = ax.plot([], [], "o", ms=6, color=col)
            txt = ax.text(0.03, 0.66, "", transform=ax.transAxes, va="top", ha="left",
                          fontsize=plots.NOTE)
            ax.set_title(f"{paper(key).notebook[:2]} · {_(k.piece)}", fontsize=plots.PANEL)
            ax.legend(loc="upper left", fontsize=plots.TINY, handlelength=1.8, borderaxespad=0.3)
            ax.tick_params(labelsize=7.5)
            marks[key] = (mb, ms)
            texts[key] = txt
            lines[key] = (ax, lb, ls)
            dyn += [mb, ms, txt, lb, ls]
        for ax in axes[1]:
            ax.set_xlabel(_("shared unevenness s"), fontsize=plots.NOTE)
        for ax in axes[:, 0]:
            ax.set_ylabel(_("step / balanced ideal"), fontsize=plots.NOTE)
        fig.suptitle(_("each system against its own balanced ideal (model) · s = 0.5: the "
                       "setting each notebook studies · curves drawn up to each knob's setting · "
                       "corner: knob, baseline ×, system ×"), x=0.01, ha="left",
                     fontsize=plots.PANEL)
        return {"marks": marks, "texts": texts, "lines": lines, "dynamic": dyn}

    art = reuse(fig, "uneven", build)
    for key, piece in state.pieces.items():
        mb, ms = art["marks"][key]
        mb.set_data([piece.s], [piece.baseline_ratio])
        ms.set_data([piece.s], [piece.system_ratio])
        art["texts"][key].set_text(_panel_text(piece))
        # the curves only up to the knob's setting: what lies beyond is for the reader to
        # predict, then reveal by moving the knob (exercise 07.2)
        c = state.curves[key]
        seen = c["s"] <= piece.s + 1e-9
        ax, lb, ls = art["lines"][key]
        lb.set_data(c["s"][seen], c["baseline"][seen])
        ls.set_data(c["s"][seen], c["system"][seen])
        top = max([1.0, piece.baseline_ratio, piece.system_ratio]
                  + [float(c[k][seen].max()) for k in ("baseline", "system") if seen.any()])
        ax.set_ylim(0.95, 1.0 + (top - 1.0) * 1.9 + 0.08)
    return "uneven"


def unevenness_explorer(show: bool = True) -> Explorer:
    """Notebook 07's widget: one unevenness knob per paper on one shared scale."""
    from ..unevenness import GRID

    names = {p.key: f"{p.notebook[:2]} {_(p.short)}" for p in PAPERS}
    step = round(GRID[1] - GRID[0], 6)
    controls = {k: slider(0.0, 1.0, step, 0.5, v) for k, v in names.items()}
    presets = {
        _("each paper's setting (s = 0.5)"): dict.fromkeys(names, 0.5),
        _("all balanced (s = 0)"): dict.fromkeys(names, 0.0),
        _("twice each setting (s = 1)"): dict.fromkeys(names, 1.0),
        _("only the NIC uneven"): {**dict.fromkeys(names, 0.0), "deepseek": 1.0},
    }
    return explore(unevenness_state, draw_unevenness, controls, presets=presets, show=show,
                   figsize=(9.6, 4.9), columns=3)


@plots.recipe
def unevenness_figure(state: UnevennessState):
    """The explorer's picture as a standalone figure (for ``figures/``)."""
    check_instance("state", state, UnevennessState, "from unevenness_state(...)")
    fig = plots.blank_figure(9.6, 4.9)
    with plots.style():
        draw_unevenness(fig, state)
    return fig


# --------------------------------------------------------------------------- section 1


@plots.recipe
def policy_figure(tables: dict, *, defaults: dict | None = None,
                  default_labels: dict | None = None):
    """One heatmap per :class:`uneven.policies.PolicyTable` (``tables``: ``{title: table}``):
    each policy's time over each workload's best (1 = the best for that workload, boxed), the
    best fixed policy marked, and optionally a ``defaults`` policy per title (one fixed in
    advance) marked too, named by ``default_labels[title]`` (a string of at most 60
    characters; "fixed in advance" if not given)."""
    import matplotlib

    from ..policies import PolicyTable

    check_dict("tables", tables, key=lambda k: isinstance(k, str) and len(k) <= 300, hi=6)
    instances("tables", tables, PolicyTable)
    for title, t in tables.items():
        if len(t.policies) > 40 or len(t.workloads) > 40:
            raise ValueError(f"tables[{title!r}] must have at most 40 policies and 40 workloads "
                             f"to draw; got {len(t.policies)} x {len(t.workloads)}")
    if sum(len(t.policies) for t in tables.values()) > 160:
        raise ValueError("tables must have at most 160 policies in all (the figure's height)")
    defaults = {} if defaults is None else check_mapping("defaults", defaults)
    for title, d in defaults.items():
        if title not in tables or not isinstance(d, str) or d not in tables[title].policies:
            raise ValueError(f"defaults must map titles of tables to one of that table's "
                             f"policies; got {_show(title)}: {_show(d)}")
    default_labels = {} if default_labels is None else check_mapping("default_labels",
                                                                     default_labels)
    for title, lab in default_labels.items():
        if title not in defaults:
            raise ValueError(f"default_labels must name titles of defaults; got {_show(title)}")
        _label(f"default_labels[{title!r}]", lab, max_len=60)
    heights = [len(t.policies) for t in tables.values()]
    fig, axes = plots.figure(11.5, 0.33 * sum(heights) + 1.15 * len(tables) + 0.6,
                             nrows=len(tables), height_ratios=heights)
    axes = np.atleast_1d(axes)
    cmap = matplotlib.colormaps[plots.HEAT]
    with plots.style():
        for ax, (title, t) in zip(axes, tables.items(), strict=True):
            r = t.ratio
            im = ax.imshow(np.minimum(r, 2.0), cmap=cmap, vmin=1.0, vmax=2.0, aspect="auto",
                           interpolation="nearest")
            for i in range(r.shape[0]):
                for j in range(r.shape[1]):
                    v = r[i, j]
                    cell = _("best", context="cell") if v < 1 + 1e-9 else f"{v:.2f}"
                    ax.text(j, i, cell, ha="center", va="center", fontsize=plots.TINY,
                            color="white" if v > 1.6 else plots.color("ink"))
            for j, i in enumerate(t.best):
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                                          ec=plots.color("ink"), lw=1.4))
            labels = list(t.policies)
            labels[t.fixed] = labels[t.fixed] + _("  ◀ best fixed")
            if title in defaults:
                d = t.policies.index(defaults[title])
                name = _(default_labels.get(title, N_("fixed in advance")))
                labels[d] = labels[d] + ("" if d == t.fixed else f"  ◀ {name}")
            ax.set_yticks(range(len(labels)), labels, fontsize=plots.SMALL)
            ax.get_yticklabels()[t.fixed].set_fontweight("bold")
            ax.set_xticks(range(len(t.workloads)), t.workloads, fontsize=plots.SMALL, rotation=18,
                          ha="right")
            ax.grid(False)
            text = _("{title}: best fixed in hindsight loses up to {loss:.0%}").format(
                title=_(title), loss=t.loss.max())
            if title in defaults and defaults[title] != t.policies[t.fixed]:
                name = _(default_labels.get(title, N_("fixed in advance")))
                text += _(", {name} up to {loss:.0%}").format(
                    name=name, loss=t.loss_of(defaults[title]).max())
            ax.set_title(text + " (model)", fontsize=plots.LABEL)
            fig.colorbar(im, ax=ax, label=_("time ÷ this workload's best"), shrink=0.9,
                         ticks=[1.0, 1.25, 1.5, 1.75, 2.0], pad=0.01)
    return fig


# --------------------------------------------------------------------------- section 2


@plots.recipe
def order_stats_figure(ns, closed: dict, simulated: dict, *, asymptote=None):
    """Expected wait of the slowest of N ranks beyond the mean rank, in standard deviations of
    one rank's time, against N. ``closed``: ``{label: values over ns}``; ``simulated``:
    ``{label: (ns, means, standard errors)}`` drawn as points with error bars; ``asymptote``:
    optional ``(ns, values)`` for the Gaussian's large-N form. ``ns`` >= 1 (at most 10,000 of
    them); at most four curves; every value finite, of magnitude at most 1e15."""
    ns = _values("ns", ns, lo=1.0)
    check_dict("closed", closed, key=lambda k: isinstance(k, str) and len(k) <= 200, hi=4)
    closed = {k: _values(f"closed[{k!r}]", v, n=ns.size) for k, v in closed.items()}
    check_dict("simulated", simulated, key=lambda k: isinstance(k, str) and k in closed, lo=0,
               hi=4)
    sims = {}
    for k, v in simulated.items():
        if not isinstance(v, (tuple, list)) or len(v) != 3:
            raise ValueError(f"simulated[{k!r}] must be (ns, means, standard errors); got "
                             f"{_show(v)}")
        xs = _values(f"simulated[{k!r}] ns", v[0], lo=1.0, max_n=1000)
        sims[k] = (xs, _values(f"simulated[{k!r}] means", v[1], n=xs.size),
                   _values(f"simulated[{k!r}] standard errors", v[2], n=xs.size, lo=0.0))
    if asymptote is not None:
        xa, ya = check_pair("asymptote", asymptote)
        xa = _values("asymptote", xa, lo=1.0)
        asymptote = (xa, _values("asymptote", ya, n=xa.size))
    simulated = sims
    fig, ax = plots.figure(6.4, 3.9)
    cols = [plots.color(c) for c in ("blue", "orange", "red", "purple")]
    with plots.style():
        for (label, vals), col in zip(closed.items(), cols, strict=False):
            ax.plot(ns, vals, color=col, lw=1.8,
                    label=_("{label}: closed form").format(label=_(label)))
            if label in simulated:
                xs, m, se = simulated[label]
                ax.errorbar(xs, m, yerr=2 * np.asarray(se), fmt="o", ms=4, color=col, mfc="white",
                            capsize=2, lw=0.9)
        if asymptote is not None:
            ax.plot(*asymptote, color=cols[0], lw=0.9, ls=":",
                    label=_("Gaussian: √(2 ln N) − … (large N)"))
        ax.plot([], [], "o", color=plots.color("ink"), mfc="white", ms=4,
                label=_("simulated, ± 2 standard errors"))
        ax.set_xscale("log")
        ax.set_xlabel(_("ranks N in the synchronous step"))
        ax.set_ylabel(_("(E[max] − mean) / standard deviation"))
        ax.set_title(_("the slowest of N ranks, by tail of the per-rank time"))
        plots.legend(ax, "below", ncol=2)
    return fig


@plots.recipe
def slow_pieces_figure(pieces: dict):
    """Six slow pieces in one panel: each rank's uneven quantity over its mean (dots; the
    maximum marked), and what the baseline's step then takes over its balanced ideal (text).
    ``pieces``: ``{paper key: its SlowPiece}``, 1 to 6 of them, at most 10,000 ranks each."""
    from ..papers import paper
    from ..unevenness import PAPER_KEYS, SlowPiece

    check_dict("pieces", pieces, key=lambda k: isinstance(k, str) and k in PAPER_KEYS, hi=6)
    instances("pieces", pieces, SlowPiece)
    for k, pc in pieces.items():
        if pc.key != k or pc.per_rank.size > 10_000:
            raise ValueError(f"pieces[{k!r}] must be paper {k!r}'s SlowPiece with at most 10,000 "
                             f"ranks; got {_show(pc)}")
    fig, ax = plots.figure(11.0, 4.0)
    rng = np.random.default_rng(0)
    with plots.style():
        ax.axhline(1.0, color=plots.color("healthy"), lw=0.8, ls=":", zorder=1)
        top = 0.0
        for i, pc in enumerate(pieces.values()):
            v = np.asarray(pc.per_rank, dtype=float)
            rel = v / v.mean() if v.mean() > 0 else np.ones_like(v)
            x = i + rng.uniform(-0.28, 0.28, rel.size)
            ax.scatter(x, rel, s=40 if rel.size < 10 else 10, color=plots.color("blue"),
                       alpha=0.6, lw=0, zorder=3)
            ax.plot([i - 0.34, i + 0.34], [rel.max()] * 2, color=plots.color("ink"), lw=1.6)
            ax.text(i, rel.max() + 0.1, _("max {max:.2f}× mean\nstep {step:.2f}× ideal").format(
                max=rel.max(), step=pc.baseline_ratio), ha="center", va="bottom",
                    fontsize=plots.SMALL)
            top = max(top, rel.max())
        ticks = [f"{paper(k).notebook[:2]} · {_(pc.knob.piece)}\n"
                 + _("({quantity} of {n} {rank}s)").format(quantity=_(pc.knob.quantity),
                                                          n=len(pc.per_rank),
                                                          rank=_(pc.knob.rank, context="rank"))
                 for k, pc in pieces.items()]
        ax.set_xticks(range(len(pieces)), ticks, fontsize=plots.SMALL)
        ax.set_ylim(0, top + 0.8)
        ax.set_ylabel(_("per-rank quantity ÷ its mean"))
        ax.grid(axis="x", visible=False)
        ax.set_title(_("each paper's slow piece at its notebook's setting: the step follows the "
                       "maximum (baselines, model)"))
    return fig


# --------------------------------------------------------------------------- section 3


def _check_sweep(sweep) -> dict:
    check_mapping("sweep", sweep)
    missing = {"shares", "zb_cpu", "zb_hol", "pipemorph", "healthy"} - set(sweep)
    if missing:
        raise ValueError(f"sweep must come from network_fix_sweep (missing {sorted(missing)}); "
                         f"got {_show(sweep)}")
    shares = _values("sweep['shares']", sweep["shares"], lo=0.0, hi=1.0)
    out = {"shares": shares}
    for k in ("zb_cpu", "zb_hol"):
        out[k] = _values(f"sweep[{k!r}]", sweep[k], n=shares.size, lo=0.0, lo_open=True,
                         hi=_MAX_T)
    for k in ("pipemorph", "healthy"):
        out[k] = _number(f"sweep[{k!r}]", sweep[k], lo=0.0, lo_open=True, hi=_MAX_T)
    return out


def _check_before_after(before_after) -> dict:
    check_dict("before_after", before_after, lo=4, hi=4,
               key=lambda k: isinstance(k, tuple) and len(k) == 2
               and k[0] in ("skewed", "balanced") and isinstance(k[1], str) and len(k[1]) <= 100)
    trs = list(dict.fromkeys(t for _, t in before_after))
    if len(trs) != 2 or any((s_, t) not in before_after for s_ in ("skewed", "balanced")
                            for t in trs):
        raise ValueError(f"before_after must give both states for two transports; got keys "
                         f"{_show(list(before_after))}")
    return {k: _number(f"before_after[{k!r}]", v, lo=0.0, lo_open=True, hi=_MAX_T)
            for k, v in before_after.items()}


def _check_bandwidth(bandwidth) -> dict:
    check_mapping("bandwidth", bandwidth)
    if not {"factors", "baseline", "ubep"} <= set(bandwidth):
        raise ValueError(f"bandwidth must come from bandwidth_sweep; got {_show(bandwidth)}")
    raw = bandwidth["factors"]
    if _length(raw) > 64:
        raise ValueError(f"bandwidth['factors'] must hold at most 64 factors; got {_length(raw)}")
    f = np.array(_raw_array("bandwidth['factors']", raw, "numbers > 0 (inf allowed)"),
                 dtype=np.float64, ndmin=1)
    finite = np.isfinite(f)
    if f.ndim != 1 or f.size == 0 or np.isnan(f).any() or not finite.any() or not (
            (f > 0) & ((f <= 1e12) | ~finite)).all():
        raise ValueError(f"bandwidth['factors'] must hold 1 to 64 factors in (0, 1e12] or inf, "
                         f"at least one finite; got {_show(raw)}")
    out = {"factors": f}
    for k in ("baseline", "ubep"):
        out[k] = _values(f"bandwidth[{k!r}]", bandwidth[k], n=f.size, lo=0.0, lo_open=True,
                         hi=_MAX_T)
    return out


@plots.recipe
def network_fixes_figure(sweep: dict, before_after: dict, bandwidth: dict):
    """Three counterfactuals (model): a network fix removing part of a pipeline link's delay
    (``sweep`` from :func:`uneven.counterfactuals.network_fix_sweep`), a better transport before
    and after balancing (``before_after``: ``{(state, transport): s}`` for the states
    ``"skewed"`` and ``"balanced"`` and two transports, the first the baseline), more fabric
    bandwidth against a barrier-bound dispatch (``bandwidth`` from
    :func:`uneven.counterfactuals.bandwidth_sweep`). Times in (0, 1e9] s."""
    sweep = _check_sweep(sweep)
    before_after = _check_before_after(before_after)
    bandwidth = _check_bandwidth(bandwidth)
    fig, (ax_p, ax_t, ax_b) = plots.figure(13.0, 4.0, ncols=3, width_ratios=(1.15, 1.0, 1.0))
    with plots.style():
        x = sweep["shares"] * 100
        ax_p.plot(x, sweep["zb_cpu"] * 1e3, color=plots.color("ZB-H2"), lw=1.8,
                  label=_("ZB-H2 replayed, CPU sends"))
        ax_p.plot(x, sweep["zb_hol"] * 1e3, color=plots.color("ZB-H2"), lw=1.8, ls="--",
                  label=_("ZB-H2 replayed, sends on the GPU stream"))
        ax_p.axhline(sweep["pipemorph"] * 1e3, color=plots.color("PipeMorph"), lw=1.8,
                     label=_("PipeMorph, whole delay (no network fix)"))
        ax_p.axhline(sweep["healthy"] * 1e3, color=plots.color("healthy"), lw=0.8, ls=":",
                     label=_("healthy network"))
        ax_p.set_xlabel(_("share of the link's delay a network fix removes (%)"))
        ax_p.set_ylabel(_("iteration time (ms, log scale)"))
        ax_p.set_yscale("log")
        lo = sweep["healthy"] * 1e3 * 0.9
        ax_p.set_ylim(lo, max(sweep["zb_hol"].max(), sweep["zb_cpu"].max()) * 1e3 * 1.15)
        ticks = [t for t in (800, 1000, 1500, 2000, 3000, 5000) if t <= ax_p.get_ylim()[1]]
        ax_p.set_yticks(ticks, [f"{t:,}" for t in ticks])
        ax_p.minorticks_off()
        ax_p.set_title(_("pipeline: the stall is in the schedule"), fontsize=plots.LABEL)
        plots.legend(ax_p, "below", ncol=1)
        states = ["skewed", "balanced"]
        trs = list(dict.fromkeys(t for _, t in before_after))
        w = 0.36
        for j, (tr, col) in enumerate(zip(trs, (_BASE_COLOR, plots.color("green")),
                                          strict=False)):
            vals = [before_after[s, tr] * 1e6 for s in states]
            ax_t.bar(np.arange(2) + (j - 0.5) * w, vals, w, color=col, label=_(tr))
        for i, s in enumerate(states):
            a, c = (before_after[s, t] * 1e6 for t in trs[:2])
            ax_t.annotate(f"−{a - c:.0f} µs ({(a - c) / a:.0%})", (i, a), xytext=(0, 5),
                          textcoords="offset points", ha="center", fontsize=plots.NOTE)
        ax_t.set_xticks([0, 1], [_("skewed\n(contiguous, direct)"),
                                 _("balanced\n(NIC-aware, relay)")])
        ax_t.set_ylabel(_("exposed communication (µs)"))
        ax_t.set_ylim(0, max(before_after.values()) * 1e6 * 1.3)
        ax_t.grid(axis="x", visible=False)
        ax_t.set_title(_("decode: transport pays after balancing"), fontsize=plots.LABEL)
        plots.legend(ax_t, "below", ncol=2)
        f = np.asarray(bandwidth["factors"], dtype=float)
        finite = np.isfinite(f)
        for kind, label in (("baseline", "serialised baseline"), ("ubep", "UBEP")):
            y = np.asarray(bandwidth[kind]) * 1e6
            ax_b.plot(f[finite], y[finite], "o-", color=plots.color(label), label=_(label))
            if not finite.all():
                ax_b.axhline(y[~finite][0], color=plots.color(label), lw=0.9, ls=":")
        if not finite.all():
            ax_b.plot([], [], color=plots.color("ink"), lw=0.9, ls=":",
                      label=_("same, bytes free (∞ bandwidth)"))
        ax_b.set_xscale("log", base=2)
        ax_b.set_xticks(f[finite], [f"{v:g}×" for v in f[finite]])
        ax_b.minorticks_off()
        ax_b.set_xlabel(_("UB bandwidth per core (× the CloudMatrix-like default)"))
        ax_b.set_ylabel(_("EP64 dispatch latency (µs)"))
        ax_b.set_ylim(0, None)
        ax_b.set_title(_("superpod: barriers are not bytes"), fontsize=plots.LABEL)
        plots.legend(ax_b, "below", ncol=1)
    return fig


# --------------------------------------------------------------------------- section 4


@plots.recipe
def compute_tax_figure(rows: list, *, bound: tuple | None = None):
    """Share of the step that communication costs when it runs on the compute units, one bar
    per :class:`uneven.counterfactuals.TaxRow` (model); ``bound``: ``(label, share)`` drawn as an
    extra hatched bar (e.g. 20 of 132 SMs held for the whole step [derived]). At most 32 rows;
    the bound's share in [0, 1]."""
    from ..counterfactuals import TaxRow

    rows = _objects("rows", rows, TaxRow, hi=32)
    if bound is not None:
        label, share = check_pair("bound", bound)
        bound = (_label("bound", label), _number("bound", share, lo=0.0, hi=1.0))
    labels = [f"{r.system}\n{r.setting}" for r in rows]
    shares = [100 * r.share for r in rows]
    hatches = [""] * len(rows)
    cols = [plots.color("compute")] * len(rows)
    if bound is not None:
        labels.append(_(bound[0]))
        shares.append(100 * bound[1])
        hatches.append("//")
        cols.append("white")
    fig, ax = plots.figure(9.0, 0.55 * len(labels) + 1.0)
    with plots.style():
        y = np.arange(len(labels))
        ax.barh(y, shares, color=cols, hatch=hatches, edgecolor=plots.color("compute"))
        for yy, v in zip(y, shares, strict=True):
            ax.text(v, yy, f" {v:.1f}%", va="center", fontsize=plots.NOTE)
        ax.set_yticks(y, labels, fontsize=plots.NOTE)
        ax.invert_yaxis()
        top = max(shares)
        ax.set_xlim(min(0.0, 1.2 * min(shares)), 1.2 * top if top > 0 else 1.0)
        ax.set_xlabel(_("share of the step lost to communication on the compute units (%)"))
        ax.grid(axis="y", visible=False)
        ax.set_title(_("communication on the compute units (model unless marked)"))
    return fig


# --------------------------------------------------------------------------- section 5


@plots.recipe
def fabrics_figure(rows: list):
    """One EP dispatch per topology family at equal bytes (``rows`` from
    :func:`uneven.ep.fabrics.dispatch_on_fabrics`): bytes on the busiest link plus path latency
    (link-load engine), coloured by the binding resource, and for the superpod the core-level
    model's latency with barriers and per-write hop latency. At most 40 bars in all."""
    from ..ep.fabrics import FabricDispatch

    rows = _objects("rows", rows, FabricDispatch, hi=40)
    if len(rows) + sum(len(r.core_model) for r in rows) > 40:
        raise ValueError("rows must make at most 40 bars (rows plus core-model entries)")
    bound_colors = {"NIC": plots.color("NIC"), "NVLink": plots.color("NVLink"),
                    "UB port": _UB_COLOR, "UB node uplink": _UB_COLOR,
                    "spine": plots.color("sky")}
    labels, drains, lats, cols, kinds = [], [], [], [], []
    for r in rows:
        labels.append(f"{r.name} ({r.notebook})")
        drains.append(r.drain * 1e6)
        lats.append(r.latency * 1e6)
        cols.append(bound_colors.get(r.bound, _BASE_COLOR))
        kinds.append(r.family)
        for name, t in r.core_model.items():
            labels.append(_("superpod, core model: {name}, INT8 copies (06)").format(
                name=_(name)))
            drains.append(t * 1e6)
            lats.append(0.0)
            cols.append(plots.PALETTE.get(name, _BASE_COLOR))
            kinds.append("core")
    fig, ax = plots.figure(10.5, 0.42 * len(labels) + 1.3)
    with plots.style():
        y = np.arange(len(labels))
        ax.barh(y, drains, color=cols, edgecolor="white")
        has = np.asarray(lats) > 0
        ax.barh(y[has], np.asarray(lats)[has], left=np.asarray(drains)[has], color="white",
                edgecolor=plots.color("ink"), hatch="///", lw=0.5)
        for yy, d, lat in zip(y, drains, lats, strict=True):
            ax.text(d + lat, yy, f" {d + lat:.0f} µs", va="center", fontsize=plots.NOTE)
        ax.set_yticks(y, labels, fontsize=plots.NOTE)
        ax.invert_yaxis()
        split = next((i for i, k in enumerate(kinds) if k != "scale-out"), 0)
        if split:
            ax.axhline(split - 0.5, color=plots.color("grey"), lw=0.8)
            ax.text(0.99, split - 0.62, _("scale-out ↑   scale-up ↓"),
                    transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                    fontsize=plots.NOTE,
                    color=plots.color("grey"))
        top = max(d + lat for d, lat in zip(drains, lats, strict=True))
        ax.set_xlim(0, top * 1.18 if top > 0 else 1.0)
        ax.set_xlabel(_("one dispatch, 128 tokens per rank, top-8, FP8 (µs, model)"))
        ax.grid(axis="y", visible=False)
        from matplotlib.patches import Patch

        handles = [Patch(color=c, label=_("bytes on the busiest {link}").format(link=n))
                   for n, c in (("NIC", bound_colors["NIC"]),
                                (_("NVLink port"), bound_colors["NVLink"]),
                                (_("UB port"), _UB_COLOR))]
        handles += [Patch(fc="white", ec=plots.color("ink"), hatch="///",
                          label=_("path latency")),
                    Patch(color=plots.color("serialised baseline"),
                          label=_("core model: serialised baseline")),
                    Patch(color=plots.color("UBEP"), label=_("core model: UBEP"))]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize=plots.NOTE)
        ax.set_title(_("the same EP dispatch on every topology family (equal bytes per rank)"))
    return fig


@plots.recipe
def regimes_figure(costs: dict, tokens, *, decode_tokens: tuple, training_tokens: tuple,
                   decode_gain: tuple, training_gain: float):
    """Left: the hiding ratio R (expert time over its tokens' communication time) against tokens
    per expert for each :class:`uneven.ep.roofline.ExpertCost` in ``costs``, with the decode
    and training ranges shaded. Right: what per-expert overlap saves in a decode layer against
    tokens per GPU (``decode_gain``: ``(batches, share)``, notebook 05's model) beside what both
    overlaps save in a training layer (``training_gain``, notebook 04's model). ``costs``: at
    most four; ``tokens``: 2 to 10,000 values in [1e-6, 1e12]; ranges ``(low, high)`` of
    positive token counts; ``decode_gain``: 1 to 64 batches (positive integers) and their
    shares; shares of magnitude at most 1e6."""
    from ..ep.roofline import MAX_TOKENS, ExpertCost, crossover_tokens, roofline_hiding_ratio

    check_dict("costs", costs, key=lambda k: isinstance(k, str) and len(k) <= 200, hi=4)
    instances("costs", costs, ExpertCost)
    n = _values("tokens", tokens, lo=1e-6, hi=MAX_TOKENS)
    if n.size < 2:
        raise ValueError(f"tokens must have at least 2 entries; got {n.size}")
    decode_tokens = _range("decode_tokens", decode_tokens)
    training_tokens = _range("training_tokens", training_tokens)
    b, g = check_pair("decode_gain", decode_gain)
    b = as_int_array("decode_gain", b, ndim=1, lo=1, hi=2**40)
    if not 1 <= b.size <= 64:
        raise ValueError(f"decode_gain must have 1 to 64 batches; got {b.size}")
    b = b.tolist()
    g = _values("decode_gain", g, n=len(b), lo=-1e6, hi=1e6)
    decode_gain = (b, g)
    training_gain = _number("training_gain", training_gain, lo=-1e6, hi=1e6)
    fig, (ax, ax_g) = plots.figure(12.0, 4.2, ncols=2, width_ratios=(1.3, 1.0))
    cols = [plots.color(c) for c in ("red", "sky", "blue", "orange")]
    with plots.style():
        ax.axvspan(*decode_tokens, color=plots.color("red"), alpha=0.07, lw=0)
        ax.axvspan(*training_tokens, color=plots.color("blue"), alpha=0.07, lw=0)
        ax.text(np.sqrt(decode_tokens[0] * decode_tokens[1]), 0.97, _("decode batches"),
                transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=plots.NOTE,
                color=plots.color("red"))
        ax.text(np.sqrt(training_tokens[0] * training_tokens[1]), 0.97,
                _("training\nmicro-batches"), transform=ax.get_xaxis_transform(), ha="center",
                va="top", fontsize=plots.NOTE, color=plots.color("blue"))
        for (name, c), col in zip(costs.items(), cols, strict=False):
            ax.plot(n, roofline_hiding_ratio(c, n), color=col, lw=1.8, label=_(name))
            nx = crossover_tokens(c)
            if 1e-6 <= nx <= MAX_TOKENS:  # the dot where the expert turns compute-bound
                ax.plot([nx], [roofline_hiding_ratio(c, nx)], "o", color=col, ms=4)
        ax.axhline(1.0, color=plots.color("ink"), lw=0.9, ls="--")
        ax.text(n[-1], 1.05, _("R = 1: compute as long as communication "), ha="right",
                va="bottom", fontsize=plots.SMALL)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(_("tokens per expert"))
        ax.set_ylabel(_("R = expert time / its tokens' all-to-all time"))
        ax.set_title(_("memory-bound experts (left of the dots) vs compute-bound (model)"),
                     fontsize=plots.LABEL)
        plots.legend(ax, "below", ncol=2)
        b, g = decode_gain
        ax_g.plot(b, 100 * np.asarray(g), "o-", color=plots.color("relay"),
                  label=_("decode layer: per-expert overlap, relay (05)"))
        ax_g.axhline(100 * training_gain, color=plots.color("blue"), lw=1.6, ls="--",
                     label=_("training layer: both overlaps, SP + EP (04)"))
        ax_g.axhline(0.0, color=plots.color("ink"), lw=0.8)
        ax_g.set_xscale("log", base=2)
        ax_g.set_xticks(b, [str(x) for x in b])
        ax_g.minorticks_off()
        ax_g.set_xlabel(_("decode tokens per GPU (EP32 on H20)"))
        ax_g.set_ylabel(_("layer time saved by overlap (%)"))
        ax_g.set_title(_("overlap's verdict depends on the batch (model)"), fontsize=plots.LABEL)
        plots.legend(ax_g, "below", ncol=1)
    return fig


@plots.recipe
def evidence_figure(rows: list):
    """Where each headline number was measured: the accelerators of its run (log scale) per
    paper, marker and colour by kind of evidence, hollow for a public anchor that is not the
    paper's own number; numbers without a stated size are counted in the tick label (``rows``
    from :func:`uneven.papers.evidence_rows`; at most 500, for at most 20 papers)."""
    rows = _rows("rows", rows, ("paper", "gpus", "kind"), hi=500)
    papers = list(dict.fromkeys(r["paper"] for r in rows))
    if len(papers) > 20:
        raise ValueError(f"rows must come from at most 20 papers; got {len(papers)}")
    fig, ax = plots.figure(10.0, 4.1)
    with plots.style():
        seen = set()
        counts = dict.fromkeys(papers, 0)
        offsets = dict.fromkeys(papers, 0)
        for r in rows:
            i = papers.index(r["paper"])
            if r["gpus"] is None:
                counts[r["paper"]] += 1
                continue
            lo, hi = r["gpus"]
            yy = i + 0.14 * (offsets[r["paper"]] - 1.0)
            offsets[r["paper"]] += 1
            col = KIND_COLORS[r["kind"]]
            anchor = bool(r.get("source"))
            xs = [lo, hi] if hi > lo else [lo]
            ax.plot(xs, [yy] * len(xs), color=col, lw=1.2, ls=":" if anchor else "-",
                    marker=_KIND_MARKERS[r["kind"]], ms=6.5, mfc="white" if anchor else col,
                    mec=col, mew=1.2)
            if r["kind"] not in seen:
                seen.add(r["kind"])
                ax.plot([], [], _KIND_MARKERS[r["kind"]], color=col, ms=6.5,
                        label=_(r["kind"]))
        ax.plot([], [], "o", mfc="white", mec=plots.color("ink"), ms=6.5,
                label=_("hollow: a public anchor,\nnot the paper's own number"))
        ticks = [f"{p}" + (_("\n(+{n} without a size)").format(n=counts[p]) if counts[p] else "")
                 for p in papers]
        ax.set_yticks(range(len(papers)), ticks, fontsize=plots.NOTE)
        ax.set_ylim(len(papers) - 0.5, -0.6)
        ax.set_xscale("log")
        ax.set_xlim(5, 3e4)
        ax.set_xlabel(_("accelerators in the run (GPUs or NPUs; a line spans a range)"))
        ax.grid(axis="y", visible=False)
        ax.set_title(_("the evidence behind each headline number, by where it was measured"))
        plots.legend(ax, "right", title=_("measured on"))
    return fig


def evidence_markdown(rows: list) -> str:
    """The evidence table as Markdown (one row per headline number; a public anchor's source
    is named in its note; ``rows`` from :func:`uneven.papers.evidence_rows`, at most 1,000)."""
    rows = _rows("rows", rows, ("notebook", "paper", "claim", "label", "kind", "hardware",
                                "scale", "note"), hi=1000, lo=0)
    head = ("| nb | paper | headline number | read in | measured on | hardware | scale | note |\n"
            "|---|---|---|---|---|---|---|---|\n")
    body = ""
    for r in rows:
        note = "; ".join(x for x in (f"from {r['source']}" if r.get("source") else "",
                                     r["note"]) if x) or "—"
        body += (f"| {r['notebook']} | {r['paper']} | {r['claim']} | {r['label']} | "
                 f"{r['kind']} | {r['hardware']} | {r['scale']} | {note} |\n")
    return head + body


def _objects(name, value, cls, *, lo=1, hi=32) -> list:
    """``value`` as a list of ``lo`` to ``hi`` instances of ``cls``."""
    if not isinstance(value, (list, tuple)) or not lo <= len(value) <= hi:
        raise ValueError(f"{name} must be a list of {lo} to {hi} {cls.__name__}; got "
                         f"{_show(value)}")
    for i, v in enumerate(value):
        check_instance(f"{name}[{i}]", v, cls)
    return list(value)


def _range(name, value) -> tuple:
    """A ``(low, high)`` pair of token counts, 0 < low <= high <= 1e12."""
    lo, hi = check_pair(name, value)
    lo = check_real(name, lo, lo=0.0, lo_open=True, hi=1e12)
    hi = check_real(name, hi, lo=lo, hi=1e12)
    return lo, hi


def _rows(name, rows, keys, *, lo=1, hi=1000) -> list:
    """Rows of :func:`uneven.papers.evidence_rows`: dicts with string ``keys`` (``gpus``: None
    or two integers, 1 <= fewest <= most; ``kind`` one of the kinds of evidence; ``source``
    optional, a string)."""
    from ..papers import EVIDENCE_KINDS, MAX_GPUS

    if not isinstance(rows, (list, tuple)) or not lo <= len(rows) <= hi:
        raise ValueError(f"{name} must be a list of {lo} to {hi} rows of evidence_rows(); got "
                         f"{_show(rows)}")
    for i, r in enumerate(rows):
        where = f"{name}[{i}]"
        if not isinstance(r, dict) or not set(keys) <= set(r):
            raise ValueError(f"{where} must be a dict with keys {', '.join(keys)}; got {_show(r)}")
        for k in keys:
            if k == "gpus":
                g = r[k]
                if g is not None and not (
                        isinstance(g, (tuple, list)) and len(g) == 2
                        and all(isinstance(x, int) and not isinstance(x, bool) for x in g)
                        and 1 <= g[0] <= g[1] <= MAX_GPUS):
                    raise ValueError(f"{where}['gpus'] must be None or (fewest, most) positive "
                                     f"integers; got {_show(g)}")
            elif k == "kind":
                if not (isinstance(r[k], str) and r[k] in EVIDENCE_KINDS):
                    raise ValueError(f"{where}['kind'] must be one of {', '.join(EVIDENCE_KINDS)}"
                                     f"; got {_show(r[k])}")
            else:
                check_str(f"{where}[{k!r}]", r[k])
        if r.get("source") is not None:
            check_str(f"{where}['source']", r["source"])
    return list(rows)



# --------------------------------------------------------------------------- the notebook's runs
# Each section's computation and its printed summary, so that a notebook cell is a short call.
# The numbers are the library's (policies, order_stats, unevenness, counterfactuals, ep).

_MS, _US = 1e-3, 1e-6
_PIECES = per_key(PAPER_KEYS, instance("uneven.unevenness:SlowPiece"))
#: Each table's policy fixed in advance: ZB-H2 planned for a healthy network, as a production
#: job replays it; relay with overlap at every batch; and notebook 06's EP64 split (count on
#: 1, send on 47) kept at every EP size and batch. The last is the *model's* choice, not
#: UBEP's: the chapter says UBEP's split follows the expert count and the batch.
DEFAULT_POLICIES = {N_("PipeMorph: warm-ups per delay profile"): "ZB-H2, planned healthy",
                    N_("Balancing and Beyond: transport and overlap per batch"):
                        "relay + overlap",
                    N_("UBEP: counting cores per EP size and batch"): "count on 1, send on 47"}
#: How the figure and the report name each table's policy fixed in advance.
DEFAULT_LABELS = {"PipeMorph: warm-ups per delay profile": N_("a production job's choice"),
                  "Balancing and Beyond: transport and overlap per batch":
                      N_("fixed in advance"),
                  "UBEP: counting cores per EP size and batch": N_("notebook 06's fixed split")}
#: Section 2's per-rank time distributions: label -> (name in uneven.order_stats, parameters).
DISTRIBUTIONS = {N_("Gaussian"): ("gaussian", {}), N_("exponential"): ("exponential", {}),
                 "Pareto α = 3": ("pareto", {"alpha": 3.0}),
                 "Pareto α = 2.5": ("pareto", {"alpha": 2.5})}
#: Batches (tokens per GPU) of the transport policy table, which Section 6 reads again.
TRANSPORT_BATCHES = (1, 4, 16, 64, 256)


@arguments(p=integer(lo=2, hi=64), delays_ms=items(integer(lo=0, hi=100_000), hi=8),
           links=items(integer(lo=0, hi=lambda a: a.p - 2), hi=63))
def delay_profiles(p: int = 8, delays_ms=(40, 80), links=(0, 3, 6)) -> dict:
    """Section 1's workloads for the warm-up table: healthy, and each of ``delays_ms`` on each of
    ``links`` of a ``p``-stage pipeline (per-link delays, s)."""
    profiles = {"healthy": np.zeros(p - 1)}
    for link in links:
        for c in delays_ms:
            d = np.zeros(p - 1)
            d[link] = c * _MS
            profiles[f"{c} ms on {link}↔{link + 1}"] = d
    return profiles


def policy_tables() -> SimpleNamespace:
    """Section 1: the three policy tables (``warm``, ``trans``, ``cores``; together ``tables``)
    and what the best fixed policy and each table's default lose; ``zb_loss``: ZB-H2 planned
    healthy on each delay profile; ``one_core``: counting on one core, over each workload's best."""
    from ..policies import core_split_table, transport_policy_table, warmup_policy_table

    warm = warmup_policy_table(delay_profiles(), p=8, m=24, t_op=10 * _MS, cap=16)
    trans = transport_policy_table(list(TRANSPORT_BATCHES), n_steps=6)
    cores = core_split_table([(ep, tok) for ep in (16, 64, 256) for tok in (2, 16, 128)])
    tables = dict(zip(DEFAULT_POLICIES, (warm, trans, cores), strict=True))
    lines = []
    for title, t in tables.items():
        chosen = sorted(set(t.best_names()), key=t.policies.index)
        d = DEFAULT_POLICIES[title]
        lines.append(_(title) + "\n  " + _("per-workload best: {names}").format(
            names=", ".join(chosen)) + "\n  " + _(
            "best fixed '{fixed}' loses up to {loss:.0%}; {label} '{default}' up to "
            "{default_loss:.0%} (model)").format(
            fixed=t.policies[t.fixed], loss=t.loss.max(), label=_(DEFAULT_LABELS[title]),
            default=d, default_loss=t.loss_of(d).max()))
    return SimpleNamespace(
        warm=warm, trans=trans, cores=cores, tables=tables,
        zb_loss=warm.loss_of("ZB-H2, planned healthy"),
        one_core=cores.ratio[cores.policies.index("count on 1, send on 47")],
        report="\n".join(lines))


def _gap(dist, n, kw):
    """How far the expected largest of ``n`` draws is above the mean, in standard deviations."""
    from ..order_stats import expected_max, expected_mean, standard_deviation

    mu, sd = expected_mean(dist, **kw), standard_deviation(dist, **kw)
    return (expected_max(dist, n, **kw) - mu) / sd


@arguments(ns=array("int", ndim=1, lo=1, hi=10**6, nonempty=True, max_size=1000),
           sim_ns=items(integer(lo=1, hi=10_000), hi=8), trials=integer(lo=100, hi=100_000))
def max_gaps(ns, sim_ns=(2, 8, 64, 512), trials: int = 4000) -> SimpleNamespace:
    """Section 2: the largest of N ranks above the mean, in standard deviations, for each
    distribution of :data:`DISTRIBUTIONS`: closed form at each N of ``ns`` (``closed``) and
    simulated at ``sim_ns`` (``simulated[label] = (ns, gaps, standard errors)``); ``worst_z``:
    the largest gap between the two in standard errors; ``z[n]``: every distribution's gap at
    N = 64 and 4,096."""
    from ..order_stats import expected_max, expected_mean, simulate_max, standard_deviation

    dists = DISTRIBUTIONS
    closed, simulated, worst_z = {}, {}, 0.0
    for label, (dist, kw) in dists.items():
        mu, sd = expected_mean(dist, **kw), standard_deviation(dist, **kw)
        closed[label] = (expected_max(dist, ns, **kw) - mu) / sd
        sims = [simulate_max(dist, n, trials=trials, seed=i, **kw) for i, n in enumerate(sim_ns)]
        for n, (m, se) in zip(sim_ns, sims, strict=True):
            worst_z = max(worst_z, abs(m - expected_max(dist, n, **kw)) / se)
        simulated[label] = (list(sim_ns), [(m - mu) / sd for m, _ in sims],
                            [se / sd for _, se in sims])
    lines = [_("largest gap between simulation and closed form: {z:.1f} standard "
               "errors").format(z=worst_z),
             f"{'N':>6s} " + " ".join(pad(_(label), 15, ">") for label in dists)]
    lines += [f"{n:6d} " + " ".join(f"{_gap(d, n, kw):13.2f} σ" for d, kw in dists.values())
              for n in (8, 64, 512, 4096)]
    z = {n: [_gap(d, n, kw) for d, kw in dists.values()] for n in (64, 4096)}
    return SimpleNamespace(closed=closed, simulated=simulated, worst_z=worst_z, z=z,
                           report="\n".join(lines))


def knob_report() -> str:
    """Section 2: each paper's unevenness knob, its range, and what s = 0.5 means."""
    from ..unevenness import KNOBS

    lines = []
    for key in PAPER_KEYS:
        k = KNOBS[key]
        unit = f" {k.unit}" if k.unit else ""
        # the knob's words come from uneven.unevenness (their msgids are listed by the
        # catalog test's dynamic_msgids); each line is a sentence after the padded piece
        lines.append(f"{key:10s} {pad(_(k.piece), 28)} " + _(
            "knob: {name} ({lo:g} → {hi:g}{unit}); s = 0.5: {reference}").format(
            name=_(k.name), lo=k.lo, hi=k.hi, unit=unit, reference=_(k.reference))
            + f"\n{'':11s}" + _("baseline: {baseline}; system: {system}; ideal: {ideal}").format(
            baseline=_(k.baseline), system=_(k.system), ideal=_(k.ideal)))
    return "\n".join(lines)


@arguments(pieces=_PIECES)
def slow_pieces_report(pieces: dict) -> SimpleNamespace:
    """Section 2: per paper, ranks, max / mean rank, and baseline and system over the ideal;
    ``ratios[key] = (baseline, system)`` and ``spread[key]`` (max / mean), rounded."""
    lines = [f"{pad(_('paper', 'column'), 10)} {pad(_('ranks', 'column'), 5, '>')} "
             f"{pad(_('max/mean'), 9, '>')} {pad(_('baseline/ideal'), 15, '>')} "
             f"{pad(_('system/ideal'), 13, '>')}"]
    for key, pc in pieces.items():
        v = pc.per_rank
        lines.append(f"{key:10s} {v.size:5d} {v.max() / v.mean():9.2f} "
                     f"{pc.baseline_ratio:15.2f} {pc.system_ratio:13.2f}   (model)")
    return SimpleNamespace(
        ratios={k: (round(p.baseline_ratio, 2), round(p.system_ratio, 2))
                for k, p in pieces.items()},
        spread={k: round(p.per_rank.max() / p.per_rank.mean(), 1) for k, p in pieces.items()},
        report="\n".join(lines))


@arguments(delay=real(lo=0.0, hi=10.0, unit="s"))
def network_fixes(delay: float = 60 * _MS) -> SimpleNamespace:
    """Section 3: how much of a ``delay`` (s) the network must remove before fixed ZB-H2 matches
    PipeMorph (``need[kind]``, share; ``sweep``), what the better EP transport saves skewed and
    balanced (``before_after``, ``gain``), and the UBEP dispatch as bytes get cheaper (``bw``;
    ``base_inf``: the baseline with free bytes, ``ubep_1x``: UBEP at today's bandwidth, s)."""
    from ..counterfactuals import bandwidth_sweep, network_fix_sweep, transport_before_after

    sweep = network_fix_sweep(delay, np.linspace(0, 1, 41))
    # the share the network must remove before the fixed schedule matches PipeMorph
    need = {kind: float(np.interp(sweep["pipemorph"], sweep[kind][::-1], sweep["shares"][::-1]))
            for kind in ("zb_cpu", "zb_hol")}
    before_after = transport_before_after()
    gain = {s: 1 - before_after[s, "SM-free"] / before_after[s, "SM-resident"]
            for s in ("skewed", "balanced")}
    bw = bandwidth_sweep([0.5, 1, 2, 4, 8, 16, np.inf])
    base_inf, ubep_1x = bw["baseline"][-1], bw["ubep"][1]
    report = "\n".join([
        _("PipeMorph under the whole {delay:.0f} ms: {pipemorph:.0f} ms (healthy {healthy:.0f} "
          "ms); ZB-H2 needs the network to remove {cpu:.0%} of the delay with CPU sends, "
          "{hol:.0%} with sends on the GPU stream (model)").format(
            delay=delay / _MS, pipemorph=sweep["pipemorph"] / _MS,
            healthy=sweep["healthy"] / _MS, cpu=need["zb_cpu"], hol=need["zb_hol"]),
        # the English shows the dict of the two gains
        _("better transport saves {{'skewed': '{skewed:.0%}', 'balanced': '{balanced:.0%}'}} of "
          "the exposed communication (model)").format(**gain),
        _("serialised baseline: {base:.0f} µs at 1×, {free:.0f} µs with free bytes; UBEP at 1×: "
          "{ubep:.0f} µs; the two barriers alone: {barriers:.0f} µs (model)").format(
            base=bw["baseline"][1] / _US, free=base_inf / _US, ubep=ubep_1x / _US,
            barriers=bw["barriers"] / _US)])
    return SimpleNamespace(sweep=sweep, need=need, before_after=before_after, gain=gain, bw=bw,
                           base_inf=base_inf, ubep_1x=ubep_1x, report=report)


#: The boundary cases' settings (see :func:`boundary_cases`).
BOUNDARY_SMALL_DELAYS_MS = (10, 20)
BOUNDARY_RHO = (0.0, 0.5, 0.9, 1.0)
BOUNDARY_TOKENS_PER_GPU = 1
#: Section 4's large batch on the superpod (writes in flight: the library's fitted default).
BOUNDARY_POD = {"ep": 64, "tokens_per_die": 1024}


@arguments(delay=real(lo=0.0, hi=10.0, unit="s"))
def boundary_cases(delay: float = 60 * _MS) -> SimpleNamespace:
    """Where each agreement of the chapter stops holding in the library's own models.

    One run per agreement, each changing what the agreement rests on (model):

    * ``fixed``: the warm-up table of Section 1 with delays of only 10 and 20 ms
      (:data:`BOUNDARY_SMALL_DELAYS_MS`): the best fixed plan's largest loss (``fixed.loss``,
      its name ``fixed.name``);
    * ``gap``: the slowest of 64 Gaussian ranks above the mean, in standard deviations, when
      the ranks share a cause with correlation ``rho`` (:data:`BOUNDARY_RHO`);
    * ``pipe``: a network fix that removes *all* of ``delay`` (s) on link 0↔1 (congestion that
      ECMP or spraying undoes): the fixed ZB-H2 (``zb``), PipeMorph under the whole delay
      (``pipemorph``), healthy (``healthy``), s;
    * ``transport``: the better transport's saving on the skewed and on the balanced decode
      layer at 1 token per GPU, where fixed and per-message costs bind, not the hot NIC;
    * ``pod``: the serialised superpod dispatch and UBEP at 1×, 2×, 4× and unlimited bandwidth
      (``factors``, ``baseline``, ``ubep`` s) with :data:`BOUNDARY_POD` (1,024 tokens per die,
      the fitted writes in flight): bytes bind; ``pod.small``: the same at 128 tokens per die,
      1× and unlimited;
    * ``tax``: sends on the GPU stream on a healthy pipeline (PipeMorph's re-plan, 0.5-ms
      sends), share of the iteration.

    ``rows``: one dict per agreement (``agreement``, ``construction``: what the model makes true
    by definition, ``holds``, ``stops``); ``markdown``: them as a table; ``report``: the numbers.
    """
    from ..counterfactuals import bandwidth_sweep, network_fix_sweep, transport_before_after
    from ..order_stats import expected_max_correlated
    from ..policies import warmup_policy_table
    from ..schedulers.pipeline import pipeline_schedule, simulate_pipeline

    warm = warmup_policy_table(delay_profiles(delays_ms=BOUNDARY_SMALL_DELAYS_MS), p=8, m=24,
                               t_op=10 * _MS, cap=16)
    fixed = SimpleNamespace(name=warm.policies[warm.fixed], loss=float(warm.loss.max()),
                            zb=float(warm.loss_of("ZB-H2, planned healthy").max()))
    gap = {r: float(expected_max_correlated(64, r)) for r in BOUNDARY_RHO}
    sw = network_fix_sweep(delay, [1.0])
    pipe = SimpleNamespace(zb=float(sw["zb_cpu"][0]), pipemorph=float(sw["pipemorph"]),
                           healthy=float(sw["healthy"]))
    ba = transport_before_after(tokens_per_gpu=BOUNDARY_TOKENS_PER_GPU)
    transport = {st: 1 - ba[st, "SM-free"] / ba[st, "SM-resident"]
                 for st in ("skewed", "balanced")}
    bw = bandwidth_sweep([1, 2, 4, np.inf], **BOUNDARY_POD)
    small = bandwidth_sweep([1, np.inf], ep=BOUNDARY_POD["ep"], tokens_per_die=128)
    pod = SimpleNamespace(factors=bw["factors"], baseline=bw["baseline"], ubep=bw["ubep"],
                          gain_2x=float(1 - bw["baseline"][1] / bw["baseline"][0]), small=small)
    zb = pipeline_schedule("zb-h2", 8, 24)
    on, off = (simulate_pipeline(zb, 0.01, 0.01, 0.01, transfer=0.5e-3, mode="replan",
                                 hol=h).iteration_time for h in (True, False))
    tax = (on - off) / on
    ms, us = (lambda x: f"{x / _MS:.0f} ms"), (lambda x: f"{x / _US:.0f} µs")
    rows = [
        {"agreement": "a choice fixed in advance loses",
         "construction": "the loss is measured against each workload's best, among the "
                         "candidates the table holds",
         "holds": "delays of 40–80 ms: every fixed plan loses somewhere (Section 1)",
         "stops": f"delays of only {' and '.join(map(str, BOUNDARY_SMALL_DELAYS_MS))} ms: the "
                  f"fixed '{fixed.name}' loses {fixed.loss:.0%} on every workload (ZB-H2 "
                  f"fixed for a healthy network still loses up to {fixed.zb:.0%})"},
        {"agreement": "the slowest rank sets the step",
         "construction": "every model defines the step as a maximum; PipeMorph's 3.00 is one "
                         "delayed link of three",
         "holds": f"independent ranks: the slowest of 64 is {gap[0.0]:.2f} σ above the mean",
         "stops": f"ranks sharing one cause (ρ = 0.9): {gap[0.9]:.2f} σ; ρ = 1: "
                  f"{gap[1.0]:.2f} σ, the slowest is the mean"},
        {"agreement": "pipeline: fixing the network is not enough",
         "construction": "the network is credited with a share of the delay: the result is a "
                         "break-even share, not a test of what ECMP can see",
         "holds": "a delay at an endpoint (a slow NIC), which no routing removes (Section "
                  "3's sweep at 0% removed)",
         "stops": f"congestion that spraying removes fully: fixed ZB-H2 {ms(pipe.zb)} against "
                  f"PipeMorph's {ms(pipe.pipemorph)} under the whole delay"},
        {"agreement": "decode: transport gains need balancing first",
         "construction": "the SM-resident transport is fitted to DeepEP's tables, the SM-free "
                         "one's lower fixed cost (10 against 30 µs per kernel) is assumed: at 1 "
                         "token its saving is about twice that gap",
         "holds": "64 tokens per GPU: the hot NIC's bytes bind (Section 3)",
         "stops": f"{BOUNDARY_TOKENS_PER_GPU} token per GPU: it saves {transport['skewed']:.0%}"
                  f" on the skewed layer, {transport['balanced']:.0%} on the balanced one"},
        {"agreement": "superpod: extra bandwidth does not cure a synchronisation-bound "
                      "dispatch",
         "construction": "barrier and hop latencies are fixed inputs, independent of bandwidth",
         "holds": f"128 tokens per die: free bytes leave the serialised dispatch at "
                  f"{us(small['baseline'][-1])}, above UBEP's {us(small['ubep'][0])} at 1× "
                  f"(Section 3)",
         "stops": f"{BOUNDARY_POD['tokens_per_die']:,} tokens per die: {us(pod.baseline[0])} → "
                  f"{us(pod.baseline[1])} at 2× ({pod.gain_2x:.0%} less), "
                  f"{us(pod.baseline[-1])} with free bytes, below UBEP's {us(pod.ubep[0])} at "
                  f"1×"},
        {"agreement": "communication on the compute units costs the step",
         "construction": "a send on the GPU stream blocks the next kernel for an assumed 0.5 "
                         "ms: the healthy share is that occupancy times the sends",
         "holds": "30 ms on one link: over half the iteration (Appendix A)",
         "stops": f"healthy links: {tax:.1%} of the iteration"},
    ]
    head = "| agreement | true by construction (model) | where it holds | where it stops (model) |"
    md = "\n".join([head, "|---|---|---|---|"] + [
        f"| {r['agreement']} | {r['construction']} | {r['holds']} | {r['stops']} |"
        for r in rows])
    report = "\n".join(f"{r['agreement']}: {r['stops']} (model)" for r in rows)
    return SimpleNamespace(fixed=fixed, gap=gap, pipe=pipe, transport=transport, pod=pod,
                           tax=tax, rows=rows, markdown=md, report=report)


#: Section 4's upper bound: DeepEP's 20 of an H800's 132 SMs held for the whole step [derived].
SM_BOUND = 20 / 132


@arguments(tax=items(instance("uneven.counterfactuals:TaxRow"), hi=64))
def tax_report(tax) -> str:
    """Section 4: each system's step with its communication on and off the compute units."""
    # the systems and settings are uneven.counterfactuals' English; the translated pieces are
    # padded to the English width, so the numbers keep their columns
    lines = [f"{r.system:38s} {r.setting:32s} {r.on / _MS:9.3f} ms vs {r.off / _MS:9.3f} ms "
             f"{pad(_('off the compute units:'), 22)} {r.share:6.1%} "
             + _("of the step (model)") for r in tax]
    lines.append(_("20 of 132 SMs held for the whole step: {share:.1%} of the compute "
                   "[derived]").format(share=SM_BOUND))
    return "\n".join(lines)


@arguments(fabrics=items(instance("uneven.ep.fabrics:FabricDispatch"), hi=64))
def fabrics_report(fabrics) -> str:
    """Section 5: one dispatch on each fabric, what binds it, and the core model on the pod."""
    lines = []
    for r in fabrics:
        # the fabrics' names are uneven.ep.fabrics' English; each translated piece is padded
        # to its English width, so the numbers keep their columns
        per_rank = _("per rank", "carried")
        if r.core_model:
            per_rank = pad(per_rank + _("; core model"), 20) + " " + _(", ").join(
                f"{pad(_(k), len(k))} {v / _US:.0f} µs" for k, v in r.core_model.items())
        lines.append(f"{r.family:9s} {r.name:58s} {r.time / _US:6.1f} µs"
                     f"{pad(_(', busiest:'), 10)} {pad(_(r.bound), 8)} "
                     f"{pad(_('network', 'carried'), 7)} {r.network / 1e6:4.2f} "
                     f"{pad(_('of', 'carried'), 2)} {r.offered / 1e6:4.2f} MB {per_rank} (model)")
    return "\n".join(lines)


@arguments(trans=instance("uneven.policies:PolicyTable"),
           batches=items(integer(lo=1, hi=4096), hi=64))
def overlap_gains(trans, batches=TRANSPORT_BATCHES) -> SimpleNamespace:
    """Section 6: the roofline of each expert (printed), what per-expert overlap saves a decode
    layer at each of the ``batches`` of ``trans`` (the transport policy table of
    :func:`policy_tables`; ``decode_gain``) and what both overlaps save a training layer
    (``training_gain``, notebook 04's ablation)."""
    from ..ep.roofline import EXPERT_COSTS, crossover_tokens, roofline_hiding_ratio
    from ..schedulers.moe_layer import ablation

    # the experts' names are uneven.ep.roofline's English; each translated piece is padded to
    # its English width, so the numbers keep their columns
    lines = [f"{name:52s} {pad(_('memory-bound below'), 18)} {crossover_tokens(c):5.0f} "
             f"{pad(_('tokens; R at'), 12)} 1 token {roofline_hiding_ratio(c, 1):7.2f}"
             f"{pad(_(', compute-bound'), 15)} {roofline_hiding_ratio(c, 1e5):5.2f} (model)"
             for name, c in EXPERT_COSTS.items()]
    if (not {"relay", "relay + overlap"} <= set(trans.policies)
            or len(trans.workloads) != len(batches)):
        raise ValueError("trans must be the transport policy table of policy_tables, with the "
                         f"policies 'relay' and 'relay + overlap' and one workload per batch of "
                         f"batches ({len(batches)}); got {_show(trans)}")
    relay, relay_ov = (trans.times[trans.policies.index(p)] for p in ("relay", "relay + overlap"))
    decode_gain = 1 - relay_ov / relay
    layers = ablation()
    training_gain = 1 - layers[3]["layer_time"] / layers[1]["layer_time"]
    lines.append(_("per-expert overlap saves {gains} of a decode layer at {batches} tokens per "
                   "GPU; both overlaps save {training:.0%} of a training layer (model)").format(
        gains=str([f"{g:+.0%}" for g in decode_gain]), batches=str(list(batches)),
        training=training_gain))
    return SimpleNamespace(batches=list(batches), decode_gain=decode_gain,
                           training_gain=training_gain, report="\n".join(lines))


@arguments(rows=items(mapping(), hi=4096))
def evidence_counts(rows) -> SimpleNamespace:
    """Section 6: how many headline numbers each kind of evidence and each source label holds."""
    from ..papers import EVIDENCE_KINDS

    if not all("kind" in r and "label" in r for r in rows):
        raise ValueError("rows must be what uneven.papers.evidence_rows returns (dicts with a "
                         f"kind and a label); got {_show(rows)}")
    kinds = {k: sum(r["kind"] == k for r in rows) for k in EVIDENCE_KINDS}
    labels = {lab: sum(r["label"] == f"[{lab}]" for r in rows)
              for lab in ("paper", "repo", "chapter")}
    # English: the two dicts as Python prints them; zh-TW: lists of translated kinds
    shown = [_("{{{items}}}").format(items=_(", ").join(items)) for items in (
        [_("'{key}': {n}", "kind").format(key=_(k), n=n) for k, n in kinds.items()],
        [_("'{key}': {n}", "label").format(key=k, n=n) for k, n in labels.items()])]
    return SimpleNamespace(kinds=kinds, labels=labels,
                           report=_("{count} headline numbers; measured on: {kinds}; read in: "
                                    "{labels}").format(count=len(rows), kinds=shown[0],
                                                       labels=shown[1]))


# --------------------------------------------------------------------------- appendix D

# what a critical path's time is, grouped for the figure
_PATH_GROUPS = ((N_("compute"), "compute"), (N_("communication"), "purple"),
                (N_("memory"), "grey"), (N_("injected delay"), "red"),
                (N_("CPU, launches, waits"), "sky"))


def _replays(**named) -> list:
    from ..trace.kineto import KinetoReplay

    out = [check_instance(k, v, KinetoReplay, "from a KinetoTrace what-if")
           for k, v in named.items()]
    if any(r.trace is not out[0].trace for r in out):
        raise ValueError(f"{', '.join(named)} must be replays of one KinetoTrace")
    return out


def _path_groups(replay) -> dict:
    """A critical path's time (s) per group of :data:`_PATH_GROUPS`."""
    from ..trace.kineto import KINETO_GROUPS as GROUPS

    out = dict.fromkeys((g for g, _ in _PATH_GROUPS), 0.0)
    for key, t in replay.critical_time.items():
        group = next((g for g in ("compute", "communication", "memory") if key in GROUPS[g]),
                     "injected delay" if key == "communication delay" else
                     "CPU, launches, waits")
        out[group] += t
    return out


def _on_rank(replay) -> tuple:
    """(rank holding most of the critical path's ops, how many, of how many)."""
    ranks = replay.trace.rank[replay.critical_path]
    values, counts = np.unique(ranks, return_counts=True)
    k = int(np.argmax(counts)) if counts.size else 0
    return (int(values[k]) if counts.size else -1), int(counts.max(initial=0)), ranks.size


#: Where a rank's waits came from (:attr:`uneven.trace.kineto.KinetoTrace.wait_modes`).
_WAIT_MODES = (N_("recorded", "wait"), N_("inferred", "wait"), N_("none", "wait"))


def kineto_report(base, slow, late) -> str:
    """Appendix D: the trace, its unmodified replay (``base``), a replay with slower
    communication (``slow``) and one with late communication (``late``), all of one
    :class:`uneven.trace.kineto.KinetoTrace` (model)."""
    base, slow, late = _replays(base=base, slow=slow, late=late)
    t = base.trace
    r0, n0, m0 = _on_rank(base)
    r1, n1, m1 = _on_rank(slow)
    delay = late.change
    # the what-ifs' labels (slow.what, late.what) are uneven.trace.kineto's English
    return "\n".join([
        _("{ranks} ranks, {gpu_ops:,} GPU ops, {cpu_calls:,} CPU calls, {collectives} "
          "collectives matched across ranks; waits {waits}").format(
            ranks=len(t.ranks), gpu_ops=t.n_gpu_ops, cpu_calls=t.n_ops - t.n_gpu_ops,
            collectives=t.n_collectives, waits=_(", ").join(
                _(m, context="wait") for m in sorted(set(t.wait_modes)))),
        _("unmodified replay: step {step:.2f} ms, every op within {error:.0f} ns of its recorded "
          "start; critical path {n} of {m} ops on rank {rank}").format(
            step=base.step_time * 1e3, error=t.replay_error * 1e9, n=n0, m=m0, rank=r0),
        _("{what}: step {step:.2f} ms ({change:+.1%}); critical path {n} of {m} ops on rank "
          "{rank} (model)").format(what=slow.what, step=slow.step_time * 1e3,
                                   change=slow.ratio - 1, n=n1, m=m1, rank=r1),
        _("{what}: step {step:.2f} ms ({delay:+.2f} ms, {change:+.1%}) (model)").format(
            what=late.what, step=late.step_time * 1e3, delay=delay * 1e3,
            change=late.ratio - 1)])


@plots.recipe
def kineto_replay_figure(base, slow):
    """Appendix D (model): the GPU streams of every rank before (``base``) and after a what-if
    (``slow``), critical-path ops solid and the rest faded, and where each critical path's
    time goes (ms). Both replays of one KinetoTrace of at most 64 streams and 20,000 ops."""
    from matplotlib.patches import Patch

    base, slow = _replays(base=base, slow=slow)
    t = base.trace
    g_ops = np.flatnonzero(t.is_gpu)
    table = base.trace_table()
    rows = sorted({int(x) for x in table.thread[g_ops]})
    if len(rows) > 64 or t.n_ops > 20_000:
        raise ValueError(f"base must come from a trace of at most 64 GPU streams and 20,000 "
                         f"ops to draw; got {len(rows)} streams, {t.n_ops} ops")
    row_of = {th: k for k, th in enumerate(rows)}
    names = [f"rank {t.ranks[table.thread_process[th]]} · {table.thread_names[th]}"
             for th in rows]
    from ..trace.kineto import KINETO_GROUPS as GROUPS
    from ..trace.kineto import KINETO_KINDS as KINDS

    is_comm = np.isin(t.kind, [KINDS.index(k) for k in GROUPS["communication"]])
    fig, (ax_b, ax_s, ax_p) = plots.figure(10.0, 7.2, nrows=3, height_ratios=(1, 1, 0.8))
    end = max(base.step_time, slow.step_time) * 1e3
    with plots.style():
        for ax, r, title in ((ax_b, base, _("unmodified replay")), (ax_s, slow, slow.what)):
            on = np.zeros(t.n_ops, dtype=bool)
            on[r.critical_path] = True
            for ops, colour in ((g_ops[~is_comm[g_ops]], plots.color("compute")),
                                (g_ops[is_comm[g_ops]], plots.color("purple"))):
                for path, alpha in ((False, 0.3), (True, 1.0)):
                    sel = ops[on[ops] == path]
                    y = [row_of[int(x)] for x in table.thread[sel]]
                    ax.barh(y, (r.finish[sel] - r.start[sel]) * 1e3,
                            left=r.start[sel] * 1e3, height=0.7, color=colour, alpha=alpha,
                            edgecolor=plots.color("ink") if path else "none", linewidth=0.4)
            ax.set_yticks(range(len(rows)), names, fontsize=plots.NOTE)
            ax.set_ylim(len(rows) - 0.5, -0.5)
            ax.set_xlim(0, end * 1.02)
            ax.grid(axis="y", visible=False)
            ax.set_title(_("{title}: step {step:.2f} ms (model)").format(
                title=title, step=r.step_time * 1e3), fontsize=plots.LABEL)
        ax_s.set_xlabel(_("time from the trace's first event (ms)"))
        plots.legend(ax_b, "right", handles=[
            Patch(color=plots.color("compute"), label=_("compute, memory")),
            Patch(color=plots.color("purple"), label=_("communication")),
            Patch(facecolor="white", edgecolor=plots.color("ink"), linewidth=0.4,
                  label=_("solid, outlined:\non the critical path"))])
        left = np.zeros(2)
        for group, colour in _PATH_GROUPS:
            vals = np.array([_path_groups(r)[group] for r in (base, slow)]) * 1e3
            if not vals.any():
                continue
            ax_p.barh([0, 1], vals, left=left, height=0.6, color=plots.color(colour),
                      label=_(group))
            left += vals
        ax_p.set_yticks([0, 1], [_("unmodified"), "what-if"])
        ax_p.set_ylim(1.6, -0.6)
        ax_p.set_xlim(0, end * 1.02)
        ax_p.set_xlabel(_("critical path's time (ms, model)"))
        ax_p.grid(axis="y", visible=False)
        ax_p.set_title(_("where each critical path spends its time"), fontsize=plots.LABEL)
        plots.legend(ax_p, "right")
    return fig


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "UnevenState": "UnevennessState",
    "uneven_state": "unevenness_state",
    "draw_uneven": "draw_unevenness",
})
