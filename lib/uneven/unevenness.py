"""Six slow pieces on one shared scale: a step's time against its own balanced ideal.

Each of the chapter's six papers finds one piece that is slower than the rest. This module gives
each paper one *knob* for how uneven that piece is, on a shared scale ``s`` from 0 to 1:
``s = 0`` is balanced, ``s = 0.5`` is the setting the paper's notebook studies, ``s = 1`` twice
as uneven (each knob is linear in ``s``; :data:`KNOBS` says what it moves). For every paper,
:func:`slow_piece` runs the library's model of two systems at that setting — the paper's
baseline and the paper's system — and of each system's **balanced ideal**: the same system, the
same total work or delay, with the uneven per-rank quantity replaced by its mean, so that no
rank is slower than another. A synchronous step follows the *maximum* over its ranks; the ideal
is what it would take if it followed the *mean*.

=========== ====================== =========================================================
paper       per-rank quantity      knob (s = 0 → 1) and model
=========== ====================== =========================================================
pipemorph   one-way delay per link delay on link 0↔1 of a 4-stage pipeline, 0 → 60 ms (10-ms
                                   ops, 12 micro-batches); ZB-H2 replayed vs PipeMorph's
                                   re-plan with CPU sends; ideal: the delay spread evenly over
                                   the 3 links
bytescale   busy time per rank     tail weight of the Byted-like length mix, 0 → 2 (4M tokens,
                                   256K context, 64 ranks of 2 GPUs); naive HDP vs balanced
                                   HDP; ideal: the mean busy time plus the gradient sync
deepseek    NIC receive time       expert skew 0 → 2 (EP64 on 8 H800 nodes, 32 tokens per
                                   GPU); free top-8 with one copy per expert GPU vs node-limited
                                   (M = 4) with one copy per node; ideal: every link of a kind
                                   carrying the mean of that kind
megascale   expert tokens per GPU  busiest / median expert 1 → 2 (one 8-GPU node, the 352B
                                   layer, SP + EP with both overlaps); as is vs tokens above
                                   1.1× the mean dropped (a capacity cap); ideal: equal loads
balancing   NIC receive time       busiest / median expert 1 → 15 (EP32 on H20, 64 tokens per
                                   GPU); contiguous placement with one copy per expert vs
                                   NIC-aware placement, relay and overlap; ideal: uniform
                                   popularity (the same tokens)
ubep        lateness per die       mean jitter per op 0 → 4 µs (EP64 dies, 128 tokens each);
                                   serialised baseline vs UBEP, median of 300 runs; ideal:
                                   every die late by exactly the mean on each op
=========== ====================== =========================================================

Settings are small so that one paper's point costs a few to a few tens of milliseconds; results
are cached per ``(paper, s)``. Times in seconds.

>>> r = slow_piece("pipemorph", 0.5)
>>> round(r.value), round(r.baseline_step * 1e3), round(r.system_step * 1e3)   # ms
(30, 480, 420)
>>> KNOBS["ubep"].value(0.25), round(r.baseline_ratio, 3)
(1.0, 1.143)
>>> c = unevenness_curves([0.0, 0.5], keys=("pipemorph", "ubep"))
>>> [round(float(x), 2) for x in c["ubep"]["baseline"]]
[1.0, 1.14]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from ._fields import Checked, array, choice, real, text
from ._validate import (
    _show,
    as_float_array,
    check_choice,
    check_real,
    trusted,
)
from .limits import check_steps
from .papers import PAPERS

__all__ = ["PAPER_KEYS", "Knob", "KNOBS", "SlowPiece", "slow_piece", "unevenness_curves",
           "GRID"]

#: The six papers, in the chapter's order (the keys of :data:`uneven.papers.PAPERS`).
PAPER_KEYS = tuple(p.key for p in PAPERS)
#: The shared-scale values the notebook's curves and explorer use.
GRID = tuple(round(0.1 * i, 1) for i in range(11))
_MAX_KNOB = 1e300  # largest magnitude of a knob's ends (lo + s (hi - lo) stays finite)
_MAX_QUANTITY = 1e15  # largest per-rank quantity or step time a SlowPiece holds
#: Work of one uncached :func:`slow_piece` per paper, in loop steps of :mod:`uneven.limits`
#: (about 1e6 per millisecond its model takes).
PIECE_STEPS = {"pipemorph": 2_000_000, "bytescale": 4_000_000, "deepseek": 30_000_000,
               "megascale": 4_000_000, "balancing": 25_000_000, "ubep": 10_000_000}


@dataclass(frozen=True)
class Knob(Checked):
    """One paper's unevenness knob: its value is ``lo + s (hi - lo)`` in ``unit``.

    ``piece``: the slow piece in words; ``name``: what the knob moves; ``reference``: the setting
    at ``s = 0.5``; ``baseline`` / ``system``: the two systems timed; ``rank``: what one entry
    of :attr:`SlowPiece.per_rank` belongs to, ``quantity`` what it is, in ``rank_unit``;
    ``ideal``: how the balanced ideal is built. Every text field is a string; ``lo`` and ``hi``
    are finite numbers of magnitude at most 1e300 (checked on construction).
    """

    key: str = text()
    piece: str = text()
    name: str = text()
    unit: str = text()
    lo: float = real(lo=-_MAX_KNOB, hi=_MAX_KNOB)
    hi: float = real(lo=-_MAX_KNOB, hi=_MAX_KNOB)
    reference: str = text()
    baseline: str = text()
    system: str = text()
    rank: str = text()
    rank_unit: str = text()
    ideal: str = text()
    quantity: str = text(default="")

    def value(self, s: float) -> float:
        """The knob's value at shared-scale ``s`` (0 … 1)."""
        s = check_real("s", s, lo=0.0, hi=1.0)
        return self.lo + s * (self.hi - self.lo)


KNOBS = {
    "pipemorph": Knob("pipemorph", "a slow pipeline link", "one-way delay on link 0↔1", "ms",
                      0.0, 60.0, "30 ms, notebook 01's cascade (ops of 10 ms)",
                      "ZB-H2, replayed", "PipeMorph: re-plan + CPU sends", "link", "ms",
                      "the same total delay spread evenly over the 3 links", "delay"),
    "bytescale": Knob("bytescale", "a long sequence", "tail weight of the length mix", "×",
                      0.0, 2.0, "1, the Byted-like mix of notebook 02",
                      "naive HDP (no balance)", "balanced HDP", "rank", "s",
                      "every rank busy for the mean busy time", "busy time"),
    "deepseek": Knob("deepseek", "the NIC that EP must cross", "expert skew", "",
                     0.0, 2.0, "skew 1: some experts several times as popular",
                     "free top-8, one copy per expert GPU",
                     "node-limited (M = 4), one copy per node", "NIC", "µs",
                     "every NIC (and NVLink port) carrying the mean of its kind",
                     "receive time"),
    "megascale": Knob("megascale", "a hot expert (training)", "busiest / median expert", "×",
                      1.0, 2.0, "1.5, as in notebook 04", "SP + EP with both overlaps",
                      "… + capacity 1.1× (tokens above it dropped)", "GPU",
                      "× mean tokens", "every GPU with the mean number of expert tokens",
                      "expert tokens"),
    "balancing": Knob("balancing", "a hot expert and its NIC", "busiest / median expert", "×",
                      1.0, 15.0, "8, the chapter's sampled production layer",
                      "contiguous, one copy per expert", "NIC-aware + relay + overlap", "NIC",
                      "µs", "uniform expert popularity (the same tokens)", "receive time"),
    "ubep": Knob("ubep", "a barrier", "mean jitter per rank and op", "µs", 0.0, 4.0,
                 "2 µs, as in notebook 06", "serialised baseline (two barriers)", "UBEP",
                 "die", "µs", "every die late by exactly the mean on each op", "lateness"),
}


@dataclass(frozen=True, eq=False)
class SlowPiece(Checked):
    """One paper's slow piece at shared-scale ``s`` (knob ``value`` in the knob's unit).

    ``per_rank``: the uneven quantity per rank under the baseline (see :data:`KNOBS`; a
    non-empty read-only array of numbers in [0, 1e15]); ``baseline_step`` / ``system_step``:
    step (or phase) time (s, in [0, 1e15]); ``baseline_ideal`` / ``system_ideal``: each system's
    balanced ideal (s, in (0, 1e15]). Checked on construction.
    """

    key: str = choice(PAPER_KEYS)
    s: float = real(lo=0.0, hi=1.0)
    value: float = real(lo=-_MAX_KNOB, hi=_MAX_KNOB)
    per_rank: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=_MAX_QUANTITY, repr=False)
    baseline_step: float = real(lo=0.0, hi=_MAX_QUANTITY, unit="s")
    baseline_ideal: float = real(lo=1e-15, hi=_MAX_QUANTITY, unit="s")
    system_step: float = real(lo=0.0, hi=_MAX_QUANTITY, unit="s")
    system_ideal: float = real(lo=1e-15, hi=_MAX_QUANTITY, unit="s")

    @property
    def baseline_ratio(self) -> float:
        """Baseline step over its balanced ideal."""
        return self.baseline_step / self.baseline_ideal

    @property
    def system_ratio(self) -> float:
        """The paper's system's step over its balanced ideal."""
        return self.system_step / self.system_ideal

    @property
    def knob(self) -> Knob:
        """The paper's :class:`Knob`."""
        return KNOBS[self.key]


def slow_piece(key: str, s: float = 0.5) -> SlowPiece:
    """Run paper ``key``'s model at shared-scale ``s`` (0 … 1; rounded to 3 decimals, cached).

    >>> r = slow_piece("ubep", 0.0)
    >>> r.baseline_step == r.baseline_ideal and r.system_step < r.baseline_step
    True
    """
    key = check_choice("key", key, PAPER_KEYS)
    s = round(check_real("s", s, lo=0.0, hi=1.0), 3)
    piece = _slow_piece(key, s)
    _CACHED.add((key, s))
    return piece


_CACHED: set = set()  # (key, s) pairs in the cache of _slow_piece


@cache  # at most 6 x 1,001 small results: s is rounded to 3 decimals
def _slow_piece(key, s):
    value = KNOBS[key].value(s)
    per_rank, bs, bi, ss, si = _MODELS[key](value)
    per_rank = np.array(per_rank, dtype=np.float64)
    per_rank.flags.writeable = False
    return trusted(SlowPiece, key=key, s=s, value=value, per_rank=per_rank,
                   baseline_step=float(bs), baseline_ideal=float(bi), system_step=float(ss),
                   system_ideal=float(si))


def unevenness_curves(s_values=GRID, keys=PAPER_KEYS) -> dict:
    """``{key: {"s": array, "baseline": array, "system": array}}``: each system's step over its
    balanced ideal at every ``s`` in ``s_values`` (numbers in [0, 1], rounded to 3 decimals as
    by :func:`slow_piece`; at most 1,001 of them), for each of ``keys`` (distinct entries of
    :data:`PAPER_KEYS`). Arrays are read-only. Each point not yet cached costs one run of the
    paper's model (up to about 25 ms), counted against the work budget of :mod:`uneven.limits`.
    """
    if not isinstance(keys, (list, tuple, np.ndarray)) or (
            isinstance(keys, np.ndarray) and keys.ndim != 1):
        raise ValueError(f"keys must be a list of paper keys; got {_show(keys)}")
    if len(keys) > len(PAPER_KEYS):
        raise ValueError(f"keys must be distinct entries of {PAPER_KEYS}; got {_show(keys)}")
    keys = [check_choice("keys", k, PAPER_KEYS) for k in keys]
    if len(set(keys)) != len(keys):
        raise ValueError(f"keys must not repeat a paper; got {_show(keys)}")
    if not isinstance(s_values, (list, tuple, np.ndarray)) or (
            isinstance(s_values, np.ndarray) and s_values.ndim != 1):
        raise ValueError(f"s_values must be a list of numbers in [0, 1]; got {_show(s_values)}")
    if len(s_values) > 1001:
        raise ValueError(f"s_values must have at most 1,001 entries; got {len(s_values)}")
    s_arr = as_float_array("s_values", s_values, ndim=1, lo=0.0, hi=1.0)
    s_arr.flags.writeable = False
    rounded = {round(float(v), 3) for v in s_arr}
    todo = sum(PIECE_STEPS[k] for k in keys for v in rounded if (k, v) not in _CACHED)
    check_steps("s_values", f"{len(rounded)} values", todo,
                "running each paper's model at each value not yet cached")
    out = {}
    for key in keys:
        rows = [slow_piece(key, float(v)) for v in s_arr]
        base = np.array([r.baseline_ratio for r in rows])
        system = np.array([r.system_ratio for r in rows])
        base.flags.writeable = system.flags.writeable = False
        out[key] = {"s": s_arr, "baseline": base, "system": system}
    return out


# --------------------------------------------------------------------------- the six models

_MS, _US = 1e-3, 1e-6


def _pipemorph(c_ms):
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    t = 10 * _MS
    zb = pipeline_schedule("zb-h2", 4, 12)
    c = c_ms * _MS
    uneven = np.array([c, 0.0, 0.0])
    even = np.full(3, c / 3)
    out = []
    for mode in ("replay", "replan"):
        for d in (uneven, even):
            out.append(simulate_pipeline(zb, t, t, t, delays=d, mode=mode).iteration_time)
    return uneven / _MS, *out


@lru_cache(maxsize=1)
def _hdp_setup():
    from .schedulers.sequences import HdpSetup

    return HdpSetup(n_gpus=128, tp=2, capacity=8 * 1024, context=256 * 1024)


def _bytescale(weight):
    from .schedulers.sequences import global_batch, plan_items, schedule_step

    setup = _hdp_setup()
    x = global_batch(4 * 2**20, context=setup.context, tail_weight=weight, seed=0)
    items = plan_items(x, setup, "naive")
    naive = schedule_step(x, setup, "naive", items=items)
    bal = schedule_step(x, setup, "balanced", items=items, _naive=naive)
    return (naive.busy, naive.step_time, naive.busy.mean() + naive.sync_time,
            bal.step_time, bal.busy.mean() + bal.sync_time)


@lru_cache(maxsize=1)
def _h800_group():
    from .topology import LINK_KINDS, h800_cluster

    topo = h800_cluster(8)
    kinds = {k: topo.link_kind == LINK_KINDS.index(k)
             for k in ("nic_up", "nic_down", "nvl_out", "nvl_in")}
    return topo, kinds


def _ideal_phase(phase, kinds):
    # Every link of a kind carrying the mean of that kind, plus the path latency.
    sec = phase.loads.seconds_per_link()
    return max(float(sec[sel].mean()) for sel in kinds.values()) + phase.loads.max_latency


def _deepseek(skew):
    from .ep.model import ep_round, route_ep_group

    topo, kinds = _h800_group()
    free = ep_round(topo, route_ep_group(8, 32, max_nodes=8, skew=skew, seed=0), mode="direct")
    capped = ep_round(topo, route_ep_group(8, 32, max_nodes=4, skew=skew, seed=0), mode="relay")
    per_nic = free.dispatch.loads.seconds_per_link()[kinds["nic_down"]] / _US
    return (per_nic, free.dispatch.time, _ideal_phase(free.dispatch, kinds),
            capped.dispatch.time, _ideal_phase(capped.dispatch, kinds))


@lru_cache(maxsize=1)
def _megascale_balanced():
    from .schedulers.moe_layer import cluster_layer_timeline

    return cluster_layer_timeline(1).makespan


def _megascale(ratio):
    from .parallel_volumes import INTERNAL_352B
    from .schedulers.moe_layer import cluster_layer_timeline
    from .workloads import expert_loads

    per_expert = expert_loads(32, INTERNAL_352B.tokens * INTERNAL_352B.top_k, ratio, seed=0)
    per_gpu = per_expert.reshape(8, 4).sum(axis=1).astype(np.float64)
    loads = per_gpu / per_gpu.mean()
    ideal = _megascale_balanced()
    as_is = cluster_layer_timeline(1, loads=loads).makespan
    capped = cluster_layer_timeline(1, loads=np.minimum(loads, 1.1)).makespan
    return loads, as_is, ideal, capped, ideal


def _decode_layer(ratio, placement, mode, overlap):
    from .ep.decode import (
        DecodeSetup,
        decode_layer,
        drifting_popularity,
        make_placement,
        sample_routing,
    )
    from .ep.placement import route_to_slots
    from .ep.transport import decode_traffic

    setup = DecodeSetup()
    n_tok = setup.n_gpus * setup.tokens_per_gpu
    pop = drifting_popularity(setup.n_experts, 1, ratio, drift=0.0, seed=0)[0]
    ids = sample_routing(pop, n_tok, setup.k, seed=1)
    plc = make_placement(placement, setup, pop * n_tok * setup.k)
    src = np.repeat(np.arange(setup.n_gpus, dtype=np.int64), setup.tokens_per_gpu)
    tr = decode_traffic(plc, route_to_slots(plc, ids, src), src, mode)
    return decode_layer(plc, tr, hw=setup.hw, overlap=overlap)


@lru_cache(maxsize=2)
def _balancing_ideal(placement, mode, overlap):
    return _decode_layer(1.0, placement, mode, overlap).layer_time


def _balancing(ratio):
    base = ("contiguous", "direct", False)
    system = ("NIC-aware", "relay", True)
    b = _decode_layer(ratio, *base)
    s = _decode_layer(ratio, *system)
    return (b.nic_in / _US, b.layer_time, _balancing_ideal(*base), s.layer_time,
            _balancing_ideal(*system))


@lru_cache(maxsize=1)
def _ubep_plans():
    from .ep.superpod import CoreCosts, phase_plan, scheme, superpod_traffic

    traffic = superpod_traffic(64, seed=0)
    return tuple(phase_plan(traffic, CoreCosts(), scheme(k)) for k in ("baseline", "ubep"))


def _ubep(sigma_us):
    from .ep.superpod import core_timeline, latency_samples, phase_latency

    sigma = sigma_us * _US
    out = []
    for plan in _ubep_plans():
        step = float(np.median(latency_samples(plan, 300, sigma, seed=1)))
        # With every die late by exactly sigma on each jittered op, all dies shift alike: the
        # serialised scheme runs count, send and poll one after another (3 sigma); UBEP counts
        # beside its sends, then polls (2 sigma).
        serial_ops = 2 if plan.scheme.concurrent else 3
        out += [step, phase_latency(plan) + serial_ops * sigma]
    late = core_timeline(_ubep_plans()[0], jitter=sigma, seed=1).jitter.sum(axis=0) / _US
    return late, *out


_MODELS = {"pipemorph": _pipemorph, "bytescale": _bytescale, "deepseek": _deepseek,
           "megascale": _megascale, "balancing": _balancing, "ubep": _ubep}
