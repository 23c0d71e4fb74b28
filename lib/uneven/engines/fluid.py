"""Fluid engine: max-min fair bandwidth sharing with flow arrivals and completions.

Each flow moves ``size`` bytes over a fixed path of links. At every instant the active flows share
the links max-min fairly (weighted progressive filling): raise every unfrozen flow's rate at the
same pace; when a link fills up, freeze the flows on it; repeat. Rates change only when the set of
active flows changes, i.e. at an arrival or a completion, so the simulation jumps from event to
event (the flow-completion-driven loop used by m3's ``flowSim`` and most flow-level simulators).

Inputs are topology-agnostic arrays (SI units: bytes, seconds, bytes/s):

* ``path_ptr`` (int, length ``n_flows + 1``) and ``path_links`` (int): flow ``f`` crosses links
  ``path_links[path_ptr[f]:path_ptr[f + 1]]`` (CSR). A link may appear at most once per path. An
  empty path means "no network" (a local copy): the flow gets an infinite rate and finishes on
  arrival (plus its latency).
* ``capacity`` (bytes/s, > 0) per link.
* ``size`` (bytes, > 0), ``arrival`` (s, >= 0), ``weight`` and ``latency`` (s, >= 0) per flow.

``weight`` aggregates symmetric flows: a flow with weight ``m`` stands for ``m`` identical flows on
the same path. It receives ``m`` fair shares on every link, every rate reported is *per member*,
``size`` is per member, and the aggregate finishes when each member has moved ``size`` bytes. So
``weight=[8]`` gives exactly the finish time of eight separate copies, at one eighth of the work.

``latency`` is added to the finish time only; it does not hold bandwidth.

What makes the engine fast
--------------------------
1. **Re-fill above the event's level, in its component.** Max-min allocations decompose over the
   connected components of the bipartite (active flow, link) graph, and progressive filling
   freezes flows in increasing order of level. An event cannot change a freeze below a level
   ``lam``: for a completion, the smallest rate among the flows that leave (their links fill no
   earlier without them); for an arrival, the smallest water level of the new flows' links (the
   level at which the link fills if the flows on it below that level keep their rates: no such
   link can fill earlier). So only the flows at or above ``lam`` that are connected to the
   changed links through such flows are re-filled; the others keep their rate and count as a
   fixed load. (The cut is set ``1e-6`` relative below
   ``lam``, so that a rate equal to ``lam`` but computed an ulp below it is re-filled too.) A
   flow's progress is only brought up to date when it is re-filled. In a
   well-mixed fabric (an all-to-all through shared NICs) this re-fills about a third of the
   active flows per event.
2. **Batched completions** (``quantum > 0``, relative). Let ``now`` be the time of the last
   event and ``t_c`` the earliest predicted completion. Every flow whose predicted finish (at the
   current rates) is at most ``t_c + quantum * (t_c - now)`` completes at its predicted time, and
   rates are recomputed once, at the latest of those finish times ``t_b``. Between ``t_c`` and
   ``t_b`` the other flows keep their old rates, i.e. they do not yet pick up the bandwidth freed
   by the early finishers; that is the whole approximation (bytes are still conserved and no link
   is ever over capacity). With ``window = 0`` the batch never reaches past the next arrival, so
   arrivals are never delayed. Each batch leaves rates stale for at most
   ``quantum * (t_c - now)``, and ``t_c - now`` is at most that step's length, so stale time
   summed over a run is at most ``quantum`` times the simulated span. How that turns into
   finish-time error is measured, not proven (max-min sharing is not monotone, so a delay can
   propagate): on small random instances a targeted search found FCT-relative and makespan
   errors of at most ``0.8 * quantum``; the tests assert ``<= 2 * quantum`` there.
   ``quantum=0`` is exact mode. In both modes completions predicted within ``1e-12 (t_c - now)``
   plus two ulps of ``t_c`` (rounding-level ties) are handled as one event. The tie window is
   relative to the step, not to the clock, so exact mode is exact whatever the time offset: a run
   shifted by 10^4 s gives the same completion times, up to the ulps of the shifted clock. Use
   :func:`batched_error` to measure what a quantum costs on your instance.

   The relative window is short when events are dense (``t_c - now`` is then tiny), so it batches
   little in busy fabrics. ``window`` (seconds, absolute, default 0) is the fixed time quantum of
   flow-level simulators: the batch opened by the next event (a completion or an arrival) at
   ``t_0`` takes every completion predicted, and every arrival, up to
   ``t_0 + max(quantum * (t_0 - now), window)``; rates are recomputed once, at the latest of
   those times, and the flows that arrived in the window start then (each waits at most
   ``window``). Its error is not bounded relative to anything (stale rates idle some bandwidth
   for up to a window at every batch, and under heavy load that lost time accumulates), so
   measure it with :func:`batched_error`.

   ``backdate=True`` keeps the freed bandwidth in use. At a batch's recompute ``t_b`` each
   re-filled flow's new rate is counted from ``te`` instead of ``t_b``: its bytes change by
   ``(new - old) * (t_b - te)`` (a flow that arrived in the batch:
   ``new * (t_b - max(arrival, te))``), where ``te`` is the mean time of the batch's events on the
   flow's links, each weighted by the bandwidth it frees (a completion: weight x old rate) or
   takes (an arrival: weight x new rate); a flow with no event on its links uses the mean over the
   whole batch. When a link's flows keep their bottleneck through the batch, that is exactly the
   bytes they would have gained from each event at its own time, so what remains is second order
   and does not accumulate: the error is that of a batch, not of the run (on the 8-node all-to-all
   at 90% load, a 10 us window moves the makespan by ~5 us, at 10^4 flows (12 ms) as at 10^5 (104
   ms), against 40-70 us without). A flow whose credit exceeds what it had left finished inside
   the batch, at its backdated time. Bytes are conserved and every allocation is feasible
   (``peak_utilization`` <= 1), but between ``te`` and ``t_b`` a link may carry a finishing flow's
   old rate and its successors' new ones at once: backdating borrows the bandwidth that the plain
   batch idles. It changes nothing in exact mode.
3. **Weights** (above) let a caller collapse symmetric flows before simulating.

The kernel is a numba function over structure-of-arrays state: flow -> links CSR (the input) and
link -> flows CSR (built once; each link's segment is kept partitioned into active | inactive
entries by swaps), an indexed binary heap of predicted completions and an indexed heap of link
fair shares, all preallocated before the event loop.

``n_rate_updates`` counts recompute work: at each event, the number of active flows whose rate was
recomputed (the flows re-filled, see 1.), summed over events. A full recompute per event
would count every active flow at every event (that is what the reference does).

>>> r = simulate_fluid([0, 1, 2, 3], [0, 0, 0], capacity=[1e9], size=[1e6, 1e6, 2e6])
>>> (r.finish * 1e3).round(9).tolist()   # ms: the two short flows finish together
[3.0, 3.0, 4.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, check_fields, flag, instance, integer, real
from .._jit import njit
from .._validate import (
    as_float_array,
    as_int_array,
    check_bool,
    check_real,
    trusted,
)
from ..limits import MIN_BYTES, check_bytes

__all__ = [
    "FluidResult",
    "BatchedError",
    "max_min_rates",
    "simulate_fluid",
    "batched_error",
]

# Completions this close are one event: they differ only by rounding, and treating them apart
# would cost an event each for sub-ulp leftovers. The window is relative to the step (t_c - now),
# plus two ulps of the clock (_ULP2 * |t_c|): never relative to the clock alone, which at
# t = 1e4 s would be 10 ns, thousands of ulps, and would let a flow miss bandwidth freed just
# before it.
_TIE = 1e-12
# Flows whose rate is within this (relative) below the level lam of an event are re-filled too.
_LEVEL_MARGIN = 1e-6
_ULP2 = 4.440892098500626e-16  # two float64 ulps of 1.0 (2 * 2**-52)
# Ranges every run must stay inside: the slowest possible rate and the latest possible finish
# (checked before the kernel runs, so no division ever underflows to zero or overflows).
_RATE_FLOOR = 1e-250
_TIME_CEILING = 1e250


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class FluidResult(Checked):
    """Outcome of :func:`simulate_fluid`. Arrays are per flow unless noted; read-only.

    * ``finish`` (s): completion time of each flow (every member of an aggregate), + latency.
    * ``start`` (s): arrival time of each flow.
    * ``makespan`` (s): ``max(finish) - min(start)`` (0.0 when there are no flows).
    * ``n_events``: event instants processed (an arrival instant, or one batch of completions and,
      with ``window > 0``, arrivals);
      each is followed by one re-fill (see the module docstring).
    * ``n_rate_updates``: flow-rate recomputations summed over events (see module docstring).
    * ``link_bytes`` (bytes, per link): bytes carried, integrated from the rates during the run;
      equals ``sum(weight * size)`` over the flows crossing the link (conservation).
    * ``delivered`` (bytes, per flow): integral of the per-member rate over time; equals ``size``.
    * ``peak_utilization`` (per link): max over time of (sum of weight x rate) / capacity; <= 1.
    * ``quantum``, ``window``, ``backdate``: the batching settings used (``quantum`` and
      ``window`` both 0 = exact).

    Checked when made (also by direct construction): per-flow arrays of one length, per-link
    arrays of one length, finite numbers (``finish`` may hold ``nan`` only for a flow that a
    capped benchmark run did not finish).
    """

    finish: np.ndarray = array(shape=("flows",), allow_nan=True, repr=False)
    start: np.ndarray = array(shape=("flows",), repr=False)
    makespan: float = real(lo=0.0, unit="s")
    n_events: int = integer(lo=0)
    n_rate_updates: int = integer(lo=0)
    link_bytes: np.ndarray = array(shape=("links",), repr=False)
    delivered: np.ndarray = array(shape=("flows",), repr=False)
    peak_utilization: np.ndarray = array(shape=("links",), repr=False)
    quantum: float = real(lo=0.0)
    window: float = real(lo=0.0, unit="s")
    backdate: bool = flag(default=False)

    @property
    def fct(self) -> np.ndarray:
        """Flow completion time (s) = finish - start, per flow (``nan`` where ``finish`` is)."""
        out = self.finish - self.start
        out.flags.writeable = False
        return out


@dataclass(frozen=True, eq=False)
class BatchedError(Checked):
    """How far a batched run is from the exact one, from :func:`batched_error`.

    * ``max_fct_rel_error``: max over flows of ``|finish_b - finish_e| / (finish_e - start)``,
      i.e. relative to each flow's exact completion time (stricter than relative to the clock).
    * ``max_finish_rel_error``: max over flows of ``|finish_b - finish_e| / finish_e``.
    * ``makespan_rel_error``: ``|makespan_b - makespan_e| / makespan_e``.
    * ``exact``, ``batched``: the two :class:`FluidResult` objects.
    """

    quantum: float = real(lo=0.0)
    window: float = real(lo=0.0, unit="s")
    max_fct_rel_error: float = real(lo=0.0)
    max_finish_rel_error: float = real(lo=0.0)
    makespan_rel_error: float = real(lo=0.0)
    exact: FluidResult = instance(FluidResult, repr=False)
    batched: FluidResult = instance(FluidResult, repr=False)

    def __post_init__(self):
        check_fields(self)
        if self.exact.finish.shape != self.batched.finish.shape:
            raise ValueError("exact and batched must describe the same flows; got "
                             f"{self.exact.finish.size} and {self.batched.finish.size} flows")


# --------------------------------------------------------------------------- validation


def _check_paths(path_ptr, path_links, n_links: int):
    ptr = as_int_array("path_ptr", path_ptr, ndim=1)
    if _FLOW_BYTES * ptr.size > MIN_BYTES:
        check_bytes("path_ptr", f"{ptr.size - 1} flows", _FLOW_BYTES * ptr.size,
                    "the per-flow state of the simulation")
    if ptr.size < 1:
        raise ValueError("path_ptr must have length n_flows + 1 >= 1 (CSR offsets); got []")
    if ptr[0] != 0:
        raise ValueError(f"path_ptr must start at 0 (CSR offsets); got path_ptr[0] = {ptr[0]}")
    steps = np.diff(ptr)
    if steps.size and steps.min() < 0:
        i = int(np.argmax(steps < 0))
        raise ValueError(
            "path_ptr must be non-decreasing (CSR offsets); "
            f"got path_ptr[{i}] = {ptr[i]} > path_ptr[{i + 1}] = {ptr[i + 1]}"
        )
    links = as_int_array("path_links", path_links, ndim=1)
    if ptr[-1] != links.size:
        raise ValueError(
            f"path_ptr[-1] must equal len(path_links) = {links.size}; got {ptr[-1]}"
        )
    need = _FLOW_BYTES * ptr.size + _ENTRY_BYTES * links.size + _LINK_BYTES * n_links
    if need > MIN_BYTES:
        check_bytes("path_links", f"{links.size} path entries", need,
                    "the link -> flow index and the state of the simulation")
    if links.size:
        lo, hi = int(links.min()), int(links.max())
        if lo < 0 or hi >= n_links:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"path_links entries must be link ids in [0, {n_links - 1}] "
                f"(len(capacity) = {n_links}); got {bad}"
            )
        flow_of = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), steps)
        order = np.lexsort((links, flow_of))
        same = (flow_of[order][1:] == flow_of[order][:-1]) & (links[order][1:] == links[order][:-1])
        if same.any():
            j = int(np.argmax(same))
            raise ValueError(
                "path_links must not repeat a link within one flow's path; "
                f"flow {int(flow_of[order][j])} crosses link {int(links[order][j])} twice"
            )
    return ptr, links


def _check_weight(weight, n_flows: int) -> np.ndarray:
    if weight is None:
        return np.ones(n_flows)
    w = as_float_array("weight", weight, shape=(n_flows,), lo=0.0, lo_open=True)
    if w.size and not np.all(w == np.round(w)):
        i = int(np.argmax(w != np.round(w)))
        raise ValueError(
            "weight must hold positive integers (a multiplicity: how many identical flows "
            f"the entry stands for); got weight[{i}] = {w[i]}"
        )
    if w.size and float(w.sum()) > 2.0**53:
        raise ValueError(
            "weight must sum to at most 2**53, so that sums of weights stay exact integers; "
            f"got a sum of {float(w.sum()):.3g}"
        )
    return w


def _check_ranges(cap, weight, size=None, arrival=None, latency=None) -> None:
    """Refuse inputs whose rates or finish times would leave the range of a float.

    Every flow's per-member rate is at least ``min(capacity) / sum(weight)`` (its bottleneck link
    is shared by at most every flow), so it finishes at most ``size / that`` after it arrives.
    """
    if not weight.size or not cap.size:
        return
    w_total = float(weight.sum())  # exact: at most 2**53 (see _check_weight)
    floor = float(cap.min()) / w_total
    if not floor >= _RATE_FLOOR:
        raise ValueError(
            f"capacity and weight are too far apart: the smallest capacity {float(cap.min()):.3g} "
            f"bytes/s shared by weights summing to {w_total:.3g} could leave a flow "
            f"a rate below {_RATE_FLOOR:g} bytes/s; use capacities of sensible magnitude"
        )
    if size is None:
        return
    # Python floats: an overflow is inf, never a warning.
    big = float(size.max())
    horizon = float(arrival.max()) + big / floor + float(latency.max())
    moved = float(weight.max()) * big * weight.size
    if not (horizon <= _TIME_CEILING and moved <= _TIME_CEILING):
        raise ValueError(
            "size and capacity are too far apart: a flow of the largest size "
            f"({big:.3g} bytes) at the slowest possible rate could finish later "
            f"than {_TIME_CEILING:g} s, or the bytes moved exceed {_TIME_CEILING:g}; use sizes "
            "and capacities of sensible magnitude"
        )


# Bytes the simulation allocates per flow, per path entry and per link (all its arrays).
_FLOW_BYTES = 8 * 25
_ENTRY_BYTES = 8 * 8
_LINK_BYTES = 8 * 14


def _prepare(path_ptr, path_links, capacity, size, arrival, weight, latency, quantum, window):
    cap = as_float_array("capacity", capacity, ndim=1, lo=0.0, lo_open=True, unit="bytes/s")
    ptr, links = _check_paths(path_ptr, path_links, cap.size)
    n = ptr.size - 1
    size = as_float_array("size", size, shape=(n,), lo=0.0, lo_open=True, unit="bytes")
    arrival = (
        np.zeros(n)
        if arrival is None
        else as_float_array("arrival", arrival, shape=(n,), lo=0.0, unit="s")
    )
    weight = _check_weight(weight, n)
    latency = (
        np.zeros(n)
        if latency is None
        else as_float_array("latency", latency, shape=(n,), lo=0.0, unit="s")
    )
    quantum = check_real("quantum", quantum, lo=0.0)
    window = check_real("window", window, lo=0.0, unit="s")
    _check_ranges(cap, weight, size, arrival, latency)
    return ptr, links, cap, size, arrival, weight, latency, quantum, window


def _reverse_csr(ptr, links, n_links):
    """Link -> flow-entry CSR: ``slots[link_ptr[l]:link_ptr[l+1]]`` are the path entries on l."""
    counts = np.bincount(links, minlength=n_links).astype(np.int64)
    link_ptr = np.zeros(n_links + 1, dtype=np.int64)
    np.cumsum(counts, out=link_ptr[1:])
    slots = np.argsort(links, kind="stable").astype(np.int64)
    entry_flow = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    return link_ptr, slots, entry_flow, counts


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# --------------------------------------------------------------------------- indexed heaps
# A binary min-heap of item ids; ``key[item]`` is the priority, ``pos[item]`` the slot (-1 when
# absent). Keys are changed in place by the caller, who then calls ``_heap_fix``.


@njit
def _sift_up(heap, pos, key, i):
    item = heap[i]
    k = key[item]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[parent]
        if key[p] <= k:
            break
        heap[i] = p
        pos[p] = i
        i = parent
    heap[i] = item
    pos[item] = i


@njit
def _sift_down(heap, pos, key, i, n):
    item = heap[i]
    k = key[item]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        if key[heap[c]] >= k:
            break
        heap[i] = heap[c]
        pos[heap[i]] = i
        i = c
    heap[i] = item
    pos[item] = i


@njit
def _heap_push(heap, pos, key, n, item):
    heap[n] = item
    pos[item] = n
    _sift_up(heap, pos, key, n)
    return n + 1


@njit
def _heap_pop(heap, pos, key, n):
    top = heap[0]
    pos[top] = -1
    n -= 1
    if n > 0:
        heap[0] = heap[n]
        pos[heap[0]] = 0
        _sift_down(heap, pos, key, 0, n)
    return top, n


@njit
def _heap_remove(heap, pos, key, n, item):
    i = pos[item]
    pos[item] = -1
    n -= 1
    if i < n:
        last = heap[n]
        heap[i] = last
        pos[last] = i
        _sift_up(heap, pos, key, i)
        _sift_down(heap, pos, key, pos[last], n)
    return n


@njit
def _heapify(heap, pos, key, n):
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(heap, pos, key, i, n)


@njit
def _heap_fix(heap, pos, key, n, item):
    _sift_up(heap, pos, key, pos[item])
    _sift_down(heap, pos, key, pos[item], n)


# --------------------------------------------------------------------------- progressive filling


@njit
def _fill(comp_links, n_comp, path_ptr, path_links, link_ptr, slots, entry_flow, cnt, capacity,
          weight, rate, frozen, epoch, rem, wsum, nun, lheap, lpos, lkey, fmark, load):
    """Weighted progressive filling of the active flows on ``comp_links[:n_comp]``.

    Precondition: every link of every active flow on those links is itself in the list (it is a
    union of whole components). Active entries of link l are ``slots[link_ptr[l]:+cnt[l]]``.

    The heap of links is lazy: freezing a flow only updates its links' remaining capacity and
    weight (O(1) each), never their place in the heap. A link's fair share can only grow as flows
    freeze, so a key in the heap is a lower bound of the true share; when a link reaches the top,
    its share is recomputed, and if it grew the link sinks back to its place instead of being
    popped. A link whose flows all froze elsewhere is dropped when it reaches the top.
    The filling itself is :func:`_fill_upper` with every active flow marked (``fmark`` set to
    ``epoch`` by the caller); ``load`` receives each link's final load.
    """
    n = 0
    for i in range(n_comp):
        l = comp_links[i]
        c = cnt[l]
        if c == 0:
            continue
        w = 0.0
        for s in range(link_ptr[l], link_ptr[l] + c):
            w += weight[entry_flow[slots[s]]]
        rem[l] = capacity[l]
        wsum[l] = w
        nun[l] = c
        lkey[l] = capacity[l] / w
        lheap[n] = l
        lpos[l] = n
        n += 1
    _fill_upper(n, path_ptr, path_links, link_ptr, slots, entry_flow, cnt, weight, rate, frozen,
                fmark, epoch, rem, wsum, nun, lheap, lpos, lkey, load, capacity)


@njit
def _fill_upper(n, path_ptr, path_links, link_ptr, slots, entry_flow, cnt, weight, rate, frozen,
                fmark, epoch, rem, wsum, nun, lheap, lpos, lkey, load, capacity):
    """:func:`_fill` of the flows marked ``fmark == epoch`` only; the other active flows keep
    their ``rate`` and took their share of each link's capacity first. ``lheap[:n]`` holds the
    links with marked flows, with ``rem`` (capacity left by the others), ``wsum`` and ``nun``
    (weight and count of marked flows) and ``lkey = rem / wsum`` set. Writes each link's final
    load (bytes/s, all its flows) to ``load``."""
    _heapify(lheap, lpos, lkey, n)
    level = 0.0
    while n > 0:
        l = lheap[0]
        if nun[l] == 0:
            l, n = _heap_pop(lheap, lpos, lkey, n)
            load[l] = capacity[l] - rem[l]
            continue
        r = rem[l] / wsum[l]
        if r > lkey[l]:
            lkey[l] = r
            _sift_down(lheap, lpos, lkey, 0, n)
            continue
        l, n = _heap_pop(lheap, lpos, lkey, n)
        share = lkey[l]
        if share < level:
            share = level
        level = share
        load[l] = capacity[l] - rem[l] + wsum[l] * share
        for s in range(link_ptr[l], link_ptr[l] + cnt[l]):
            f = entry_flow[slots[s]]
            if frozen[f] == epoch or fmark[f] != epoch:
                continue
            frozen[f] = epoch
            rate[f] = share
            wf = weight[f]
            for e in range(path_ptr[f], path_ptr[f + 1]):
                l2 = path_links[e]
                if lpos[l2] < 0:
                    continue
                nun[l2] -= 1
                rem[l2] -= wf * share
                wsum[l2] -= wf


@njit
def _max_min_kernel(path_ptr, path_links, link_ptr, slots, entry_flow, cnt, capacity, weight):
    n_flows = path_ptr.size - 1
    n_links = capacity.size
    rate = np.full(n_flows, np.inf)
    frozen = np.zeros(n_flows, dtype=np.int64)
    comp = np.arange(n_links)
    rem = np.zeros(n_links)
    wsum = np.zeros(n_links)
    nun = np.zeros(n_links, dtype=np.int64)
    lheap = np.zeros(n_links, dtype=np.int64)
    lpos = np.full(n_links, -1, dtype=np.int64)
    lkey = np.zeros(n_links)
    fmark = np.ones(n_flows, dtype=np.int64)
    load = np.zeros(n_links)
    _fill(comp, n_links, path_ptr, path_links, link_ptr, slots, entry_flow, cnt, capacity,
          weight, rate, frozen, 1, rem, wsum, nun, lheap, lpos, lkey, fmark, load)
    return rate


# --------------------------------------------------------------------------- event loop


@njit
def _set_active(e, l, active, slots, entry_pos, link_ptr, cnt):
    """Move path entry ``e`` into (active=True) or out of the active prefix of link ``l``."""
    p = entry_pos[e]
    q = link_ptr[l] + cnt[l] if active else link_ptr[l] + cnt[l] - 1
    other = slots[q]
    slots[q] = e
    entry_pos[e] = q
    slots[p] = other
    entry_pos[other] = p
    cnt[l] += 1 if active else -1


@njit
def _advance(f, t, rate, tlast, remaining, delivered, weight, path_ptr, path_links, link_bytes):
    """Integrate flow ``f``'s current rate from its last update up to time ``t``."""
    dt = t - tlast[f]
    if dt > 0.0:
        moved = rate[f] * dt
        delivered[f] += moved
        remaining[f] -= moved
        wm = weight[f] * moved
        for e in range(path_ptr[f], path_ptr[f + 1]):
            link_bytes[path_links[e]] += wm
    tlast[f] = t


@njit
def _water_level(l, link_ptr, slots, entry_flow, cnt, capacity, weight, rate):
    """Level at which link ``l`` fills if every flow on it with a rate below the level keeps
    that rate and the others grow together: (cap - sum of the low rates) / (high weights)."""
    w = 0.0
    for s in range(link_ptr[l], link_ptr[l] + cnt[l]):
        w += weight[entry_flow[slots[s]]]
    if w == 0.0:  # no flow left on it
        return np.inf
    lev = capacity[l] / w
    for _ in range(cnt[l] + 1):
        used = 0.0
        w = 0.0
        for s in range(link_ptr[l], link_ptr[l] + cnt[l]):
            f = entry_flow[slots[s]]
            if rate[f] < lev:
                used += weight[f] * rate[f]
            else:
                w += weight[f]
        if w == 0.0:  # every flow stays below: the link never fills
            return np.inf
        nxt = (capacity[l] - used) / w
        if not nxt > lev:
            break
        lev = nxt
    return lev


@njit
def _add_event(f, fr, dt, sw, swt, path_ptr, path_links, emark, epoch, evw, evt):
    """Record flow ``f`` freeing (or taking) ``fr`` bytes/s at ``dt`` after the batch start on
    each of its links; returns the batch-wide sums (sum of fr, sum of fr * dt)."""
    for e in range(path_ptr[f], path_ptr[f + 1]):
        l = path_links[e]
        if emark[l] != epoch:
            emark[l] = epoch
            evw[l] = 0.0
            evt[l] = 0.0
        evw[l] += fr
        evt[l] += fr * dt
    return sw + fr, swt + fr * dt


@njit
def _simulate_kernel(path_ptr, path_links, link_ptr, slots_in, entry_flow, capacity, size,
                     arrival, order, weight, latency, quantum, window, backdate, max_events,
                     finish, delivered, link_bytes, peak, counters):
    n_flows = path_ptr.size - 1
    n_links = capacity.size
    n_entries = path_links.size
    # --- preallocated state (nothing below allocates per event)
    slots = slots_in.copy()
    entry_pos = np.empty(n_entries, dtype=np.int64)
    for s in range(n_entries):
        entry_pos[slots[s]] = s
    cnt = np.zeros(n_links, dtype=np.int64)
    rate = np.zeros(n_flows)
    orate = np.zeros(n_flows)
    remaining = np.zeros(n_flows)
    tlast = np.zeros(n_flows)
    fmark = np.zeros(n_flows, dtype=np.int64)
    frozen = np.zeros(n_flows, dtype=np.int64)
    lmark = np.zeros(n_links, dtype=np.int64)
    qlinks = np.empty(n_links, dtype=np.int64)
    qflows = np.empty(n_flows, dtype=np.int64)
    fheap = np.empty(n_flows, dtype=np.int64)
    fpos = np.full(n_flows, -1, dtype=np.int64)
    fkey = np.zeros(n_flows)
    rem = np.zeros(n_links)
    wsum = np.zeros(n_links)
    nun = np.zeros(n_links, dtype=np.int64)
    lheap = np.empty(n_links, dtype=np.int64)
    lpos = np.full(n_links, -1, dtype=np.int64)
    lkey = np.zeros(n_links)
    load = np.zeros(n_links)
    hlinks = np.empty(n_links, dtype=np.int64)
    evw = np.zeros(n_links)  # backdating: bytes/s freed or taken on each link in the batch
    evt = np.zeros(n_links)  # ... times their offset from the batch start
    emark = np.zeros(n_links, dtype=np.int64)

    nf = 0  # completion-heap size
    ia = 0  # next arrival in ``order``
    now = 0.0
    epoch = 0
    n_updates = 0
    while True:
        t_arr = arrival[order[ia]] if ia < n_flows else np.inf
        t_c = fkey[fheap[0]] if nf > 0 else np.inf
        if t_arr == np.inf and t_c == np.inf:
            break
        if max_events >= 0 and epoch >= max_events:
            break
        epoch += 1
        nl = 0  # seeded links, then the BFS queue
        t_prev = now
        sw = 0.0
        swt = 0.0
        ia0 = ia
        if window > 0.0 or t_c <= t_arr:
            t_0 = t_c if t_c <= t_arr else t_arr  # the event that opens the batch
            if t_0 < now:  # a backdated flow that finished inside the last batch
                t_0 = now
            reach = quantum * (t_0 - now)
            if window > reach:
                reach = window
            w_end = t_0 + reach + _TIE * (t_0 - now) + _ULP2 * abs(t_0)
            if window == 0.0 and w_end > t_arr:  # a relative quantum never batches arrivals
                w_end = t_arr
            t_b = t_0
            lam = np.inf
            while nf > 0 and fkey[fheap[0]] <= w_end:
                f, nf = _heap_pop(fheap, fpos, fkey, nf)
                tf = fkey[f]
                if tf > t_b:
                    t_b = tf
                if rate[f] < lam:
                    lam = rate[f]
                if backdate:
                    sw, swt = _add_event(f, weight[f] * rate[f], tf - now, sw, swt, path_ptr,
                                         path_links, emark, epoch, evw, evt)
                remaining[f] = 0.0
                tlast[f] = tf
                finish[f] = tf + latency[f]
                for e in range(path_ptr[f], path_ptr[f + 1]):
                    l = path_links[e]
                    _set_active(e, l, False, slots, entry_pos, link_ptr, cnt)
                    if lmark[l] != epoch:
                        lmark[l] = epoch
                        qlinks[nl] = l
                        nl += 1
            # An absolute window also admits the arrivals inside it, at the end of the batch
            # (each waits at most the window).
            while window > 0.0 and ia < n_flows and arrival[order[ia]] <= w_end:
                f = order[ia]
                ia += 1
                if path_ptr[f + 1] == path_ptr[f]:  # no links: a local copy, done at once
                    delivered[f] = size[f]
                    finish[f] = arrival[f] + latency[f]
                    continue
                if arrival[f] > t_b:
                    t_b = arrival[f]
                remaining[f] = size[f]
                rate[f] = np.inf
                for e in range(path_ptr[f], path_ptr[f + 1]):
                    l = path_links[e]
                    _set_active(e, l, True, slots, entry_pos, link_ptr, cnt)
                    if lmark[l] != epoch:
                        lmark[l] = epoch
                        qlinks[nl] = l
                        nl += 1
            now = t_b
            if ia > ia0:
                for j in range(ia0, ia):
                    tlast[order[j]] = now
                for i in range(nl):  # see the arrival branch below
                    lev = _water_level(qlinks[i], link_ptr, slots, entry_flow, cnt, capacity,
                                       weight, rate)
                    if lev < lam:
                        lam = lev
        else:
            now = t_arr
            while ia < n_flows and arrival[order[ia]] == t_arr:
                f = order[ia]
                ia += 1
                if path_ptr[f + 1] == path_ptr[f]:  # no links: a local copy, done at once
                    delivered[f] = size[f]
                    finish[f] = now + latency[f]
                    continue
                remaining[f] = size[f]
                tlast[f] = now
                rate[f] = np.inf  # not filled yet: above every level
                for e in range(path_ptr[f], path_ptr[f + 1]):
                    l = path_links[e]
                    _set_active(e, l, True, slots, entry_pos, link_ptr, cnt)
                    if lmark[l] != epoch:
                        lmark[l] = epoch
                        qlinks[nl] = l
                        nl += 1
            # A new flow cannot change a freeze below the level at which one of its links
            # would fill, the flows on it keeping their old rates below that level (the new ones
            # have rate inf): the water level of the link, found by raising a first guess
            # cap / (sum of all weights) until no flow changes side (a few passes).
            lam = np.inf
            for i in range(nl):
                l = qlinks[i]
                lev = _water_level(l, link_ptr, slots, entry_flow, cnt, capacity, weight, rate)
                if lev < lam:
                    lam = lev

        # --- what the change can reach. Progressive filling freezes flows in increasing order
        # of level; every freeze below ``lam`` is the same as before the change (a departing
        # flow froze at lam = its rate, and its links fill no earlier without it; a new flow's
        # links fill no earlier than lam, see above). So only flows at or above lam (the upper
        # flows) are re-filled, and only those connected to the changed links through upper
        # flows (breadth-first); flows below lam keep their rates and count as fixed load.
        # Rates equal to lam in exact arithmetic may sit a few ulps below it (filled in another
        # order, at another event), and such a flow can change: the cut is set a little lower.
        # Re-filling a flow that is truly below lam is harmless (it gets its rate back).
        lam *= 1.0 - _LEVEL_MARGIN
        nq = 0
        head = 0
        nh = 0  # links holding re-filled flows, in lheap[:nh]
        while head < nl:
            l = qlinks[head]
            head += 1
            # Every re-filled flow on l is marked by the end of this scan (marks are made while
            # scanning), so the scan also sums the load of the others and the re-filled weight.
            used = 0.0
            w = 0.0
            k = 0
            for s in range(link_ptr[l], link_ptr[l] + cnt[l]):
                f = entry_flow[slots[s]]
                if fmark[f] != epoch:
                    if rate[f] < lam:
                        used += weight[f] * rate[f]
                        continue
                    fmark[f] = epoch
                    qflows[nq] = f
                    nq += 1
                    for e in range(path_ptr[f], path_ptr[f + 1]):
                        l2 = path_links[e]
                        if lmark[l2] != epoch:
                            lmark[l2] = epoch
                            qlinks[nl] = l2
                            nl += 1
                w += weight[f]
                k += 1
            if k > 0:
                rem[l] = capacity[l] - used
                wsum[l] = w
                nun[l] = k
                lkey[l] = rem[l] / w
                lheap[nh] = l
                lpos[l] = nh
                hlinks[nh] = l
                nh += 1

        # --- re-fill those flows, then move only the flows whose rate changed: a flow keeps
        # (tlast, remaining at tlast, rate), so an unchanged rate needs no update at all
        for i in range(nq):
            f = qflows[i]
            orate[f] = rate[f]
        _fill_upper(nh, path_ptr, path_links, link_ptr, slots, entry_flow, cnt, weight, rate,
                    frozen, fmark, epoch, rem, wsum, nun, lheap, lpos, lkey, load, capacity)
        n_updates += nq
        # --- backdating (see the module docstring): the batch's events, weighted by the
        # bandwidth each frees (a completion) or takes (an arrival, at its new rate)
        t_eff = now
        if backdate and now > t_prev:
            for j in range(ia0, ia):
                f = order[j]
                if path_ptr[f + 1] > path_ptr[f]:
                    sw, swt = _add_event(f, weight[f] * rate[f], arrival[f] - t_prev, sw, swt,
                                         path_ptr, path_links, emark, epoch, evw, evt)
            if sw > 0.0:
                t_eff = t_prev + swt / sw
                if t_eff > now:
                    t_eff = now
        nc = 0
        for i in range(nq):
            f = qflows[i]
            old = orate[f]
            new = rate[f]
            # Every re-filled flow is re-predicted, even when its rate did not change: keeping
            # the old prediction then (or the old rate when the new one is a few ulps away) was
            # tried, and on 1e5 flows it moved a finish by 6.5e-6 of its completion time away
            # from a full re-fill and from SimGrid (not understood yet; a near-tie amplifies it).
            # bring the flow up to ``now`` at its old rate, then predict at the new one
            dt = now - tlast[f]
            if dt > 0.0:
                remaining[f] -= old * dt
            tlast[f] = now
            r = remaining[f]
            if t_eff < now:
                # the new rate counts from te: the mean time of the events on the flow's links
                # (of the whole batch when none of its links had one), not from now
                a = 0.0
                b = 0.0
                for e in range(path_ptr[f], path_ptr[f + 1]):
                    l = path_links[e]
                    if emark[l] == epoch:
                        a += evw[l]
                        b += evt[l]
                te = t_prev + b / a if a > 0.0 else t_eff
                if te > now:
                    te = now
                if old == np.inf:  # arrived inside the batch: it had no rate before
                    ta = arrival[f] if arrival[f] > te else te
                    r -= new * (now - ta)
                else:
                    r -= (new - old) * (now - te)
                remaining[f] = r  # < 0: it finished inside the batch, before now
            elif r < 0.0:
                r = 0.0
            fkey[f] = now + r / new
            qflows[nc] = f
            nc += 1
        # New predicted completions. When most of the heap changes, rebuilding it (O(n)) beats
        # fixing each entry (O(k log n)).
        rebuild = 4 * nc >= nf
        for i in range(nc):
            f = qflows[i]
            if rebuild:
                if fpos[f] < 0:
                    fheap[nf] = f
                    fpos[f] = nf
                    nf += 1
            elif fpos[f] < 0:
                nf = _heap_push(fheap, fpos, fkey, nf, f)
            else:
                _heap_fix(fheap, fpos, fkey, nf, f)
        if rebuild:
            _heapify(fheap, fpos, fkey, nf)
        # --- peak utilisation: only links holding re-filled flows can carry more than before
        for i in range(nh):
            l = hlinks[i]
            u = load[l] / capacity[l]
            if u > peak[l]:
                peak[l] = u
    # Bytes delivered: a finished flow moved its size; an unfinished one (a capped run) what it
    # had moved by its last update. Link bytes follow from them (every byte of a flow crosses
    # every link of its path), so the event loop never integrates per link.
    for f in range(n_flows):
        if path_ptr[f + 1] == path_ptr[f]:
            continue
        if not np.isnan(finish[f]):
            delivered[f] = size[f]
        elif fpos[f] >= 0:  # still active when a capped run stopped: move it up to ``now``
            d = size[f] - (remaining[f] - rate[f] * (now - tlast[f]))
            delivered[f] = d if d > 0.0 else 0.0
        wd = weight[f] * delivered[f]
        for e in range(path_ptr[f], path_ptr[f + 1]):
            link_bytes[path_links[e]] += wd
    counters[0] = epoch
    counters[1] = n_updates


# --------------------------------------------------------------------------- public API


def max_min_rates(path_ptr, path_links, capacity, weight=None) -> np.ndarray:
    """Per-member max-min fair rate (bytes/s) of every flow, all flows active at once.

    Weighted progressive filling: each link's spare capacity is split among its unfrozen flows in
    proportion to their weights; the link with the smallest share per unit weight freezes its
    flows at that share; repeat. A flow with weight m gets m shares (the rate returned is what each
    of its m members gets). Flows with an empty path get ``inf``.

    Parameters: ``path_ptr``/``path_links`` CSR paths (link ids), ``capacity`` (bytes/s, > 0, per
    link), ``weight`` (positive integers summing to at most 2**53, per flow; default 1). Sizes as
    in :func:`simulate_fluid`.

    >>> max_min_rates([0, 1, 3, 4], [0, 0, 1, 1], capacity=[1.0, 2.0]).tolist()
    [0.5, 0.5, 1.5]
    """
    cap = as_float_array("capacity", capacity, ndim=1, lo=0.0, lo_open=True, unit="bytes/s")
    ptr, links = _check_paths(path_ptr, path_links, cap.size)
    w = _check_weight(weight, ptr.size - 1)
    _check_ranges(cap, w)
    link_ptr, slots, entry_flow, counts = _reverse_csr(ptr, links, cap.size)
    return _max_min_kernel(ptr, links, link_ptr, slots, entry_flow, counts, cap, w)


def simulate_fluid(path_ptr, path_links, capacity, size, arrival=None, weight=None, latency=None,
                   quantum=0.0, window=0.0, backdate=False) -> FluidResult:
    """Event-driven max-min fair fluid simulation of flows with arrivals and completions.

    Parameters (SI units):
      ``path_ptr``, ``path_links``: CSR paths, link ids in ``[0, len(capacity))``, no repeats.
      ``capacity``: bytes/s per link, > 0.
      ``size``: bytes per flow (per member for aggregated flows), > 0.
      ``arrival``: s per flow, >= 0 (default 0).
      ``weight``: multiplicity per flow, positive integers (default 1).
      ``latency``: s per flow added to its finish time, >= 0 (default 0).
      ``quantum``: relative batching quantum, >= 0; 0 is exact (see the module docstring).
      ``window``: absolute batching window (s), >= 0, which also batches arrivals (each waits at
      most ``window``); 0 is exact (see the module docstring).
      ``backdate``: bool; count each batch's new rates from the mean time of its events (see the
      module docstring), so the error stays per batch. No effect in exact mode.

    Returns a :class:`FluidResult`.

    Size: about 200 bytes per flow, 64 per path entry and 112 per link must fit in the memory
    budget of :mod:`uneven.limits` (2 GiB by default: some 5 million flows of 4 links). The run
    takes at most ``2 n_flows`` events, each re-filling part of the component it touches, so the
    cost is O(events x component size x log links) at worst. Capacities, sizes and weights must
    keep every rate above 1e-250 bytes/s and every finish time below 1e250 s (refused otherwise),
    and the weights must sum to at most 2**53.

    N-to-1 incast, 4 flows of 1 MB into a 1 GB/s link: each gets 250 MB/s, all finish at 4 ms.

    >>> r = simulate_fluid([0, 1, 2, 3, 4], [0, 0, 0, 0], capacity=[1e9], size=[1e6] * 4)
    >>> round(r.makespan * 1e3, 9)
    4.0
    """
    backdate = check_bool("backdate", backdate)
    args = _prepare(path_ptr, path_links, capacity, size, arrival, weight, latency, quantum, window)
    return _run(*args, -1, backdate)


def _run(ptr, links, cap, size, arrival, weight, latency, quantum, window, max_events,
         backdate=False):
    backdate = bool(backdate) and (quantum > 0.0 or window > 0.0)  # exact mode has no batches
    n, n_links = ptr.size - 1, cap.size
    link_ptr, slots, entry_flow, _ = _reverse_csr(ptr, links, n_links)
    order = np.argsort(arrival, kind="stable").astype(np.int64)
    finish = np.full(n, np.nan)
    delivered = np.zeros(n)
    link_bytes = np.zeros(n_links)
    peak = np.zeros(n_links)
    counters = np.zeros(2, dtype=np.int64)
    _simulate_kernel(ptr, links, link_ptr, slots, entry_flow, cap, size, arrival, order, weight,
                     latency, float(quantum), float(window), bool(backdate), int(max_events),
                     finish, delivered, link_bytes, peak, counters)
    return _result(finish, arrival, counters[0], counters[1], link_bytes, delivered, peak,
                   quantum, window, backdate)


def _result(finish, arrival, n_events, n_updates, link_bytes, delivered, peak, quantum, window,
            backdate=False):
    done = finish[~np.isnan(finish)]  # all of them, unless a benchmark capped the events
    makespan = float(done.max() - arrival.min()) if done.size else 0.0
    return trusted(
        FluidResult,
        finish=_frozen(finish),
        start=_frozen(arrival.copy()),
        makespan=makespan,
        n_events=int(n_events),
        n_rate_updates=int(n_updates),
        link_bytes=_frozen(link_bytes),
        delivered=_frozen(delivered),
        peak_utilization=_frozen(peak),
        quantum=float(quantum),
        window=float(window),
        backdate=bool(backdate),
    )


def batched_error(path_ptr, path_links, capacity, size, arrival=None, weight=None, latency=None,
                  quantum=1e-3, window=0.0, backdate=False, *,
                  exact: FluidResult | None = None) -> BatchedError:
    """Run exact and batched (``quantum``, ``window``, ``backdate``) simulations of one instance;
    compare them.

    Pass ``exact`` (a previous exact :class:`FluidResult` of the same instance) to skip the exact
    run. Relative errors are 0 where both runs agree exactly (including 0/0). Sizes as in
    :func:`simulate_fluid` (two runs).

    >>> e = batched_error([0, 1, 2], [0, 0], [1.0], [1.0, 1.001], quantum=0.01)
    >>> e.batched.n_events < e.exact.n_events, e.makespan_rel_error < 0.01
    (True, True)
    """
    backdate = check_bool("backdate", backdate)
    args = _prepare(path_ptr, path_links, capacity, size, arrival, weight, latency, quantum, window)
    if args[-2] == 0.0 and args[-1] == 0.0:
        raise ValueError("quantum (or window) must be > 0 for a batched run; got quantum=0.0")
    if exact is None:
        exact = _run(*args[:-2], 0.0, 0.0, -1)
    elif not isinstance(exact, FluidResult) or exact.quantum != 0.0 or exact.window != 0.0:
        raise ValueError("exact must be a FluidResult from simulate_fluid(..., quantum=0)")
    elif exact.finish.shape != args[3].shape:
        raise ValueError(
            f"exact must describe the same flows: {exact.finish.size} flows vs {args[3].size}"
        )
    batched = _run(*args, -1, backdate)
    return _compare(exact, batched)


def _compare(exact: FluidResult, batched: FluidResult) -> BatchedError:
    diff = np.abs(batched.finish - exact.finish)
    fct = exact.finish - exact.start

    def ratio(num, den):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(num == 0.0, 0.0, num / den)
        return float(r.max(initial=0.0))

    ms_diff = abs(batched.makespan - exact.makespan)
    return BatchedError(
        quantum=batched.quantum,
        window=batched.window,
        max_fct_rel_error=ratio(diff, fct),
        max_finish_rel_error=ratio(diff, exact.finish),
        makespan_rel_error=0.0 if ms_diff == 0.0 else ms_diff / exact.makespan,
        exact=exact,
        batched=batched,
    )


# --------------------------------------------------------------------------- references


def _reference_max_min_rates(path_ptr, path_links, capacity, weight=None) -> np.ndarray:
    """Plain-Python weighted progressive filling (test oracle; slow and obvious)."""
    cap = as_float_array("capacity", capacity, ndim=1, lo=0.0, lo_open=True, unit="bytes/s")
    ptr, links = _check_paths(path_ptr, path_links, cap.size)
    w = _check_weight(weight, ptr.size - 1)
    paths = [[int(x) for x in links[ptr[f]:ptr[f + 1]]] for f in range(ptr.size - 1)]
    return np.array(_ref_fill(paths, [float(c) for c in cap], [float(x) for x in w]))


def _ref_fill(paths, cap, weight):
    rate = [math.inf] * len(paths)
    on_link = [[] for _ in cap]
    for f, path in enumerate(paths):
        for l in path:
            on_link[l].append(f)
    unfrozen = {f for f, path in enumerate(paths) if path}
    used = [0.0] * len(cap)
    busy = [l for l in range(len(cap)) if on_link[l]]
    while unfrozen:
        best, best_link = math.inf, -1
        for l in busy:
            wsum = sum(weight[f] for f in on_link[l] if f in unfrozen)
            if wsum > 0 and (cap[l] - used[l]) / wsum < best:
                best, best_link = (cap[l] - used[l]) / wsum, l
        for f in on_link[best_link]:
            if f in unfrozen:
                unfrozen.discard(f)
                rate[f] = best
                for l in paths[f]:
                    used[l] += weight[f] * best
    return rate


def _reference_simulate_fluid(path_ptr, path_links, capacity, size, arrival=None, weight=None,
                              latency=None, quantum=0.0, window=0.0, backdate=False,
                              max_events=None) -> FluidResult:
    """Plain-Python fluid simulation recomputing every rate from scratch at every event.

    Same event semantics as :func:`simulate_fluid` (arrival instants; completion batches with the
    same window rule; the same backdating rule), so the two agree to rounding.
    ``n_rate_updates`` counts all active flows at every event. ``max_events`` stops early
    (unfinished flows get ``nan``), for benchmarks.
    """
    ptr, links, cap, size, arrival, weight, latency, quantum, window = _prepare(
        path_ptr, path_links, capacity, size, arrival, weight, latency, quantum, window
    )
    backdate = check_bool("backdate", backdate) and (quantum > 0.0 or window > 0.0)
    n, n_links = ptr.size - 1, cap.size
    paths = [[int(x) for x in links[ptr[f]:ptr[f + 1]]] for f in range(n)]
    cap_l, w_l = [float(c) for c in cap], [float(x) for x in weight]
    order = sorted(range(n), key=lambda f: (arrival[f], f))
    finish = [math.nan] * n
    delivered = [0.0] * n
    remaining = [0.0] * n
    link_bytes = [0.0] * n_links
    peak = [0.0] * n_links
    rate = [0.0] * n
    active: list[int] = []
    now, ia, n_events, n_updates = 0.0, 0, 0, 0

    def move(f, dt, moved=None):
        if moved is None:
            moved = rate[f] * dt
        delivered[f] += moved
        remaining[f] -= moved
        for l in paths[f]:
            link_bytes[l] += w_l[f] * moved

    while True:
        t_arr = float(arrival[order[ia]]) if ia < n else math.inf
        # a backdated flow may be due before now (it finished inside the last batch)
        due = {f: now + (remaining[f] if backdate else max(remaining[f], 0.0)) / rate[f]
               for f in active}
        t_c = min(due.values(), default=math.inf)
        if t_arr == math.inf and t_c == math.inf:
            break
        if max_events is not None and n_events >= max_events:
            break
        t_prev, old, new, done = now, list(rate), [], []
        if window > 0.0 or t_c <= t_arr:
            t_0 = max(min(t_c, t_arr), now)
            w_end = (t_0 + max(quantum * (t_0 - now), window) + _TIE * (t_0 - now)
                     + _ULP2 * abs(t_0))
            if window == 0.0:
                w_end = min(w_end, t_arr)
            done = [f for f in active if due[f] <= w_end]
            while window > 0.0 and ia < n and arrival[order[ia]] <= w_end:
                new.append(order[ia])
                ia += 1
            t_b = max([t_0] + [due[f] for f in done]
                      + [float(arrival[f]) for f in new if paths[f]])
            for f in active:
                if f in done:
                    move(f, due[f] - now)
                    finish[f] = due[f] + float(latency[f])
                else:
                    move(f, t_b - now)
            active = [f for f in active if f not in done]
            now = t_b
            for f in new:
                if not paths[f]:
                    delivered[f] = float(size[f])
                    finish[f] = float(arrival[f]) + float(latency[f])
                else:
                    remaining[f] = float(size[f])
                    active.append(f)
        else:
            for f in active:
                move(f, t_arr - now)
            now = t_arr
            while ia < n and arrival[order[ia]] == t_arr:
                f = order[ia]
                ia += 1
                if not paths[f]:
                    delivered[f] = float(size[f])
                    finish[f] = now + float(latency[f])
                else:
                    remaining[f] = float(size[f])
                    active.append(f)
        n_events += 1
        sub = _ref_fill([paths[f] for f in active], cap_l, [w_l[f] for f in active])
        for f, r in zip(active, sub, strict=True):
            rate[f] = r
        n_updates += len(active)
        if backdate and now > t_prev:
            # events: (flow, bytes/s freed or taken, offset from the batch start)
            events = [(f, w_l[f] * old[f], due[f] - t_prev) for f in done]
            events += [(f, w_l[f] * rate[f], float(arrival[f]) - t_prev) for f in new if paths[f]]
            lw, lt = {}, {}
            for f, fr, dt in events:
                for l in paths[f]:
                    lw[l] = lw.get(l, 0.0) + fr
                    lt[l] = lt.get(l, 0.0) + fr * dt
            sw = sum(fr for _, fr, _ in events)
            t_eff = min(t_prev + sum(fr * dt for _, fr, dt in events) / sw, now) if sw else now
            arrived = set(new)
            for f in active if t_eff < now else []:
                a = sum(lw[l] for l in paths[f] if l in lw)
                te = min(t_prev + sum(lt[l] for l in paths[f] if l in lt) / a if a else t_eff,
                         now)
                if f in arrived:
                    move(f, 0.0, rate[f] * (now - max(float(arrival[f]), te)))
                else:
                    move(f, 0.0, (rate[f] - old[f]) * (now - te))
        used = [0.0] * n_links
        for f in active:
            for l in paths[f]:
                used[l] += w_l[f] * rate[f]
        for l in range(n_links):
            peak[l] = max(peak[l], used[l] / cap_l[l])
    return _result(np.array(finish), arrival, n_events, n_updates, np.array(link_bytes),
                   np.array(delivered), np.array(peak), quantum, window, backdate)
