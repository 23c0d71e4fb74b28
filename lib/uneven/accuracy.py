"""How close the model comes to the papers: every headline number beside the model's, one table.

Each :class:`Claim` is one number a paper (or its artifact, or the chapter page) reports, with its
two labels (where we read it, where it was measured; :mod:`uneven.papers`), the assumptions under
which the model computes the same quantity, and the notebook section that computes it there. The
model's value comes from the same library calls the notebook makes (:data:`MODELS`), so the table
cannot drift from the notebooks; :func:`table` puts them side by side with their ratio.

Computing every row takes about half a minute (notebooks 03 and 05 run whole sweeps), so the
values are kept in :mod:`uneven._accuracy_values`, written by ``python -m uneven.accuracy
--refresh``; ``tests/test_accuracy.py`` recomputes them and fails when the two differ, so the
stored table is always the current model's.

>>> rows = table()
>>> rows[0]["notebook"], rows[0]["label"]
('01 §2', '[repo]')
>>> all(r["ratio"] > 0 for r in rows)
True
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

from ._fields import Checked, check_fields, choice, real, text
from ._validate import _show, check_choice, check_str
from .i18n import gettext as _
from .papers import EVIDENCE_KINDS, LABELS, PAPERS

__all__ = ["Claim", "CLAIMS", "UNITS", "MODELS", "model_value", "table", "render_markdown"]

def N_(message: str, context: str | None = None) -> str:
    """Mark ``message`` for the zh-TW catalog ``uneven-accuracy.po`` without translating it (as
    :func:`uneven.explorers._common.N_`, not imported so that this module stays light): a claim's
    text stays English in :data:`CLAIMS` and :func:`table`, and :func:`render_markdown` shows it
    in the language in force."""
    return message


#: The kinds of evidence as the table shows them (translated in :func:`render_markdown`).
_KINDS_SHOWN = (N_("testbed"), N_("production"), N_("simulation"), N_("analysis"),
                N_("chapter-only"))

#: Display units: SI factor of one unit (values are stored in SI: s, B/s, plain ratios).
UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "GB/s": 1e9, "tokens/s": 1.0, "×": 1.0, "%": 0.01}


@dataclass(frozen=True)
class Claim(Checked):
    """One headline number: ``key`` (``"02.balanced"``), ``paper`` (a key of
    :data:`uneven.papers.PAPERS`), ``quantity`` (what is compared), ``value`` (the paper's
    number, SI), ``unit`` (display unit, a key of :data:`UNITS`), ``label`` and ``kind`` (as in
    :class:`uneven.papers.Evidence`), ``hardware`` (the paper's), ``notebook`` (where the model
    computes it), ``matched`` (what the model's value shares with the paper's, and what not)."""

    key: str = text(max_len=40)
    paper: str = choice(tuple(p.key for p in PAPERS))
    quantity: str = text(max_len=300)
    value: float = real(lo=0.0, lo_open=True, hi=1e15)
    unit: str = choice(tuple(UNITS))
    label: str = choice(LABELS)
    kind: str = choice(EVIDENCE_KINDS)
    hardware: str = text(max_len=100)
    notebook: str = text(max_len=40)
    matched: str = text(max_len=400)

    def __post_init__(self):
        check_fields(self)


MS, US, GB = 1e-3, 1e-6, 1e9

CLAIMS = (
    Claim("01.fig5", "pipemorph", N_("iteration time, 20 ms delay on link 0, the artifact's ZB "
          "policy (Fig. 5)"), 440 * MS, "ms", "repo", "simulation", "none (the artifact's "
          "simulator)", "01 §2", N_("matched: 4 stages, 12 micro-batches, 10 ms per op, as the "
          "artifact's simulator")),
    Claim("01.trace", "pipemorph", N_("PipeMorph over ZeroBubble, a replayed delay trace"),
          1.41, "×", "repo", "testbed", "H800", "01 App. A", N_("not matched: the model replays "
          "its own episodic trace on 8 stages, not the artifact's 45-minute trace on 128 GPUs")),
    Claim("01.chapter", "pipemorph", N_("PipeMorph over ZeroBubble, one-hour production trace"),
          1.36, "×", "chapter", "testbed", "H800", "01 App. A", N_("not matched: as the row above; "
          "the chapter's trace is not public")),
    Claim("02.static", "bytescale", N_("static mesh step, case study"), 520.0, "s", "paper",
          "production", "undisclosed", "02 §4", N_("matched: LLaMA-7B, 2M context, 1,024 GPUs, "
          "Byted-like batch; per-layer times fitted to Fig. 18 (model)")),
    Claim("02.naive", "bytescale", N_("naive HDP step, case study"), 272.0, "s", "paper",
          "production", "undisclosed", "02 §4", N_("as the row above")),
    Claim("02.balanced", "bytescale", N_("balanced HDP step, case study"), 157.0, "s", "paper",
          "production", "undisclosed", "02 §4", N_("as the row above")),
    Claim("02.github", "bytescale", N_("balanced HDP over the static mesh, GitHub data, 2M "
          "(up to)"), 7.89, "×", "paper", "production", "undisclosed", "02 §7",
          N_("partly: GitHub-like lengths drawn by the model, not the paper's batch")),
    Claim("03.ep32", "deepseek", N_("DeepEP normal dispatch per GPU, EP32"), 58 * GB, "GB/s",
          "repo", "testbed", "H800 + CX7 InfiniBand", "03 §3", N_("matched: 4,096 tokens per GPU, "
          "top-8 of 256, 4 nodes per token at most, forwarders' local writes counted; links at "
          "line rate (03's fitted efficiency not applied)")),
    Claim("03.ep64", "deepseek", N_("DeepEP normal dispatch per GPU, EP64"), 51 * GB, "GB/s",
          "repo", "testbed", "H800 + CX7 InfiniBand", "03 §3", N_("as the row above")),
    Claim("03.tpot", "deepseek", N_("decode TPOT bound at 50 GB/s"), 14.76 * MS, "ms", "paper",
          "analysis", "H800 (arithmetic)", "03 §5", N_("matched: the paper's own formula")),
    Claim("03.planes", "deepseek", N_("multi-plane over shared-spine, training throughput "
          "(272.80 / 272.52)"), 272.80 / 272.52, "×", "paper", "production", "H800", "03 §4",
          N_("partly: the model compares one all-to-all's time with PXN, not a training job")),
    Claim("04.ablation", "megascale", N_("SP + EP and both overlaps over TP + TP (ablation)"), 1.28,
          "×", "paper", "testbed", "H800", "04 §5", N_("matched: the 352B layer; operator times "
          "fitted to the kernels' memory-bound time (model)")),
    Claim("04.tokens240", "megascale", N_("MegaScale-MoE throughput at 240 GPUs (Table 3)"),
          272.9e3, "tokens/s", "paper", "testbed", "H800", "04 §5", N_("matched: 352B model, PP "
          "and DP as the paper's; operator times fitted as in 04 §5 (model)")),
    Claim("04.tokens1440", "megascale", N_("MegaScale-MoE throughput at 1,440 GPUs (Table 3)"),
          1407.7e3, "tokens/s", "paper", "testbed", "H800", "04 §5", N_("as the row above")),
    Claim("04.speedup", "megascale", N_("speed-up over Megatron-LM at 1,440 GPUs"), 1.88, "×",
          "paper", "testbed", "H800", "04 §5", N_("not matched: the model's baseline is its own "
          "TP + TP layer, not Megatron-LM's code")),
    Claim("05.default", "balancing", N_("exposed communication, DeepEP's default, EP32"),
          190.21 * US, "µs", "chapter", "chapter-only", "H20", "05 §6",
          N_("by construction: the batch (tokens per GPU) is the one at which the model matches "
             "this number (model)")),
    Claim("05.all", "balancing", N_("exposed communication, all of the paper's mechanisms, EP32"),
          134.00 * US, "µs", "chapter", "chapter-only", "H20", "05 §6", N_("at the matched batch, "
          "with the relay's forwarding free; a relay sync of about 47 µs per crossing would close "
          "the gap (05 §6, an upper bound)")),
    Claim("05.ll32", "balancing", N_("DeepEP low-latency dispatch, EP32 (another system: the "
          "transport the model fits)"), 155 * US, "µs", "repo", "testbed", "H800 + CX7 "
          "InfiniBand", "05 App. C", N_("matched: 128 tokens per GPU, top-8; the transport's fixed "
          "and per-message costs are fitted to this table (model)")),
    Claim("06.cut", "ubep", N_("dispatch latency cut against the baseline, 64 NPUs read as 64 "
                               "dies"), 0.524, "%", "chapter", "chapter-only",
          "Ascend 910C (CloudMatrix384)", "06 §4",
          N_("partly: CANN EP's internals are not public, the model's baseline is a serialised "
          "dispatch with two 20-µs barriers (model); read as 128 dies the model gives 30%")),
    Claim("06.p99", "ubep", N_("P99 time per output token cut, light jitter"), 0.111, "%",
          "chapter", "chapter-only", "Ascend 910C (CloudMatrix384)", "06 §5", N_("partly: EP64, "
          "58 layers, i.i.d. 2-µs jitter per op (model); no attention or scheduler")),
    Claim("06.p99tail", "ubep", N_("P99 time per output token cut, heavy-tailed (Pareto) delays"),
          0.111, "%", "chapter", "chapter-only", "Ascend 910C (CloudMatrix384)", "06 §5",
          N_("partly: as the row above with Pareto α = 1.5 per-op delays (model)")),
    Claim("06.cm8", "ubep", N_("CloudMatrix-Infer dispatch, EP8 (another system: the model's "
          "anchor)"), 116 * US, "µs", "paper", "testbed", "Ascend 910C (CloudMatrix384)", "06 §7",
          N_("fitted: writes in flight per core chosen to match this row and the next (model)")),
    Claim("06.cm256", "ubep", N_("CloudMatrix-Infer dispatch, EP256"), 152 * US, "µs", "paper",
          "testbed", "Ascend 910C (CloudMatrix384)", "06 §7", N_("as the row above")),
)


# ---- the model's side: the notebooks' own calls ----------------------------------------------

@functools.lru_cache(maxsize=1)
def _trace_runs():
    from .explorers import nb01
    from .workloads import episodic_delay_trace

    return nb01.trace_runs(episodic_delay_trace(1200, 7, seed=0), 20 * MS, p=8, m=24)


def _fig5() -> float:
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    t = 10 * MS
    return simulate_pipeline(pipeline_schedule("greedy", 4, 12), t, t, t,
                             delays=[20 * MS, 0, 0]).iteration_time


def _trace_ratio() -> float:
    r = _trace_runs()
    return r["ZB-H2, HOL"].total_time / r["PipeMorph"].total_time


@functools.lru_cache(maxsize=1)
def _bytescale():
    from .explorers import nb02
    from .schedulers.sequences import global_batch

    x = global_batch(32 * 2**20, context=2 * 2**20, seed=0)
    cal = nb02.calibration(x)
    sweep = nb02.context_sweep([256 * 1024, 512 * 1024, 2**20, 2 * 2**20], cal.fit.setup)
    return cal, sweep


def _step(name):
    return lambda: _bytescale()[0].after[name].step_time


@functools.lru_cache(maxsize=1)
def _deepep():
    from .ep import deepep_benchmark

    rows = deepep_benchmark((32, 64), tokens_per_gpu=4096, count_local_writes=True)
    return {r["ep"]: r["dispatch_logical_GBps"] * GB for r in rows}


def _tpot() -> float:
    from .ep import decode_tpot_bound
    from .units import gbyte_per_s

    return decode_tpot_bound(gbyte_per_s(50))


def _planes() -> float:
    from .explorers import nb03

    times = nb03.fabric_times(n_nodes=32, overs=(2.0,)).times
    return (times["MRFT (shared spines), PXN", 2.0] / times["MPFT (8 planes), PXN", 2.0])


@functools.lru_cache(maxsize=1)
def _megascale():
    from .explorers import nb04
    from .parallel_volumes import INTERNAL_352B

    cal = nb04.calibrated_layers(INTERNAL_352B)
    return cal, nb04.scaling_table(INTERNAL_352B, cal.tp, cal.best)


def _tokens(g):
    return lambda: _megascale()[1].model[g]["MegaScale"]["tokens_per_s"]


@functools.lru_cache(maxsize=1)
def _balancing():
    from .explorers import nb05

    return nb05.matched_ablation()


def _ll32() -> float:
    from .ep import isolated_phases

    return isolated_phases(4)[0]


@functools.lru_cache(maxsize=1)
def _ubep():
    from .ep import superpod_traffic
    from .explorers import nb06

    costs = nb06.calibration().costs
    ep64 = superpod_traffic(64, seed=0)
    sweep = nb06.ep_sweep(costs, (64,), 2 * US)
    tails = nb06.tail_runs(ep64, costs)
    return sweep, tails, nb06.phase_table(costs).table


def _p99(model: int):
    from .explorers import nb06

    return lambda: _ubep()[1].gain99[list(nb06.TAIL_MODELS)[model]]


#: Claim key -> a function of no arguments that returns the model's value (SI).
MODELS = {
    "01.fig5": _fig5,
    "01.trace": _trace_ratio,
    "01.chapter": _trace_ratio,
    "02.static": _step("static mesh"),
    "02.naive": _step("naive HDP"),
    "02.balanced": _step("balanced HDP"),
    "02.github": lambda: _bytescale()[1].at_2m["github"],
    "03.ep32": lambda: _deepep()[32],
    "03.ep64": lambda: _deepep()[64],
    "03.tpot": _tpot,
    "03.planes": _planes,
    "04.ablation": lambda: _megascale()[0].rows[-1]["speedup"],
    "04.tokens240": _tokens(240),
    "04.tokens1440": _tokens(1440),
    "04.speedup": lambda: _megascale()[1].gain[-1],
    "05.default": lambda: _balancing().abl.med[0] * US,
    "05.all": lambda: _balancing().abl.med[-1] * US,
    "05.ll32": _ll32,
    "06.cut": lambda: _ubep()[0].cut[64],
    "06.p99": _p99(0),
    "06.p99tail": _p99(2),
    "06.cm8": lambda: _ubep()[2][8]["baseline", "dispatch"] * US,
    "06.cm256": lambda: _ubep()[2][256]["baseline", "dispatch"] * US,
}


def _claim(key: str) -> Claim:
    key = check_choice("key", check_str("key", key), [c.key for c in CLAIMS])
    return next(c for c in CLAIMS if c.key == key)


def model_value(key: str) -> float:
    """The model's value of claim ``key`` (SI), computed now (seconds to tens of seconds).

    >>> round(model_value("03.tpot") * 1e3, 2)
    14.76
    """
    return float(MODELS[_claim(key).key]())


def _stored() -> dict:
    from ._accuracy_values import VALUES

    return VALUES


def table(fresh: bool = False) -> list:
    """One dict per claim: ``key``, ``notebook``, ``paper`` (title), ``quantity``, ``label`` (as
    ``[paper]``), ``kind``, ``hardware``, ``unit``, ``paper_value`` and ``model_value`` (in
    ``unit``), ``ratio`` (model / paper), ``matched``. ``fresh=True`` computes the model's values
    now; otherwise they are the stored ones (``python -m uneven.accuracy --refresh`` writes
    them, a test keeps them current)."""
    if not isinstance(fresh, bool):
        raise ValueError(f"fresh must be True or False; got {_show(fresh)}")
    values = {c.key: model_value(c.key) for c in CLAIMS} if fresh else _stored()
    titles = {p.key: p.title for p in PAPERS}
    rows = []
    for c in CLAIMS:
        m = values.get(c.key)
        if m is None:
            raise ValueError(f"no stored model value for {c.key!r}: run python -m "
                             "uneven.accuracy --refresh")
        scale = UNITS[c.unit]
        rows.append({"key": c.key, "notebook": c.notebook, "paper": titles[c.paper],
                     "quantity": c.quantity, "label": f"[{c.label}]", "kind": c.kind,
                     "hardware": c.hardware, "unit": c.unit, "paper_value": c.value / scale,
                     "model_value": m / scale, "ratio": m / c.value, "matched": c.matched})
    return rows


def _fmt(v: float, digits: int = 4) -> str:
    return f"{v:,.0f}" if v >= 1000 else f"{v:.{digits}g}"


def render_markdown(rows=None) -> str:
    """The table as Markdown (notebook 07 and the site's accuracy page show it), in the language
    in force (:func:`uneven.set_language`): under ``zh_TW`` the header, each claim's quantity,
    kind of evidence and matched assumptions are Chinese (``uneven-accuracy.po``); the numbers,
    units, labels, paper titles, hardware and ``(model)`` are the English's."""
    rows = table() if rows is None else rows
    need = ("notebook", "paper", "quantity", "label", "kind", "hardware", "unit", "paper_value",
            "model_value", "ratio", "matched")
    if (not isinstance(rows, (list, tuple)) or len(rows) > 10_000
            or not all(isinstance(r, dict) and all(k in r for k in need) for r in rows)
            or not all(r["unit"] in UNITS and all(isinstance(r[k], (int, float)) and r[k] > 0
                                                  for k in ("paper_value", "model_value", "ratio"))
                       for r in rows)):
        raise ValueError(f"rows must be what table() returns (a list of dicts with keys "
                         f"{', '.join(need)}); got {_show(rows)}")
    out = [_("| notebook | paper | quantity | paper (label; where measured; hardware) | model | "
             "model / paper | assumptions matched |"), "|---|---|---|---|---|---|---|"]
    paper_cell = _("{value}{unit} {label}; {kind}; {hardware}")
    for r in rows:
        unit = r["unit"] if r["unit"] in ("×", "%") else f" {r['unit']}"
        paper = paper_cell.format(value=_fmt(r["paper_value"], 5), unit=unit, label=r["label"],
                                  kind=_(r["kind"]), hardware=r["hardware"])
        out.append(f"| {r['notebook']} | {r['paper']} | {_(r['quantity'])} | {paper} | "
                   f"{_fmt(r['model_value'])}{unit} (model) | {r['ratio']:.2f} | "
                   f"{_(r['matched'])} |")
    return "\n".join(out)


def _refresh(path=None) -> dict:
    """Compute every model value and write them to :mod:`uneven._accuracy_values`."""
    from pathlib import Path

    values = {c.key: model_value(c.key) for c in CLAIMS}
    target = Path(path) if path is not None else Path(__file__).with_name("_accuracy_values.py")
    lines = ['"""The model\'s value of each claim of :mod:`uneven.accuracy` (SI), as '
             '``python -m uneven.accuracy', '--refresh`` last computed them; '
             'tests/test_accuracy.py checks they are current."""', "", "VALUES = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in values.items()]
    lines.append("}")
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return values


if __name__ == "__main__":
    if sys.argv[1:] == ["--refresh"]:
        _refresh()
    print(render_markdown())
