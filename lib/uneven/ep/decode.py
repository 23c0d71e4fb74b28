"""A decode step's MoE layer on scale-out hosts: dispatch, memory-bound experts, combine.

The workload (:func:`drifting_popularity`, :func:`sample_routing`): expert popularity follows a
power law whose busiest/median ratio is fixed (8 by default, the ratio the chapter reports for a
sampled production layer [chapter]); *which* experts are hot drifts slowly — each expert's latent
score follows an AR(1) walk and the power law is dealt out by rank every step — so a placement
planned from history goes stale. Each of ``n_gpus × tokens_per_gpu`` tokens draws ``k`` distinct
experts, one after another in proportion to popularity.

The layer (:func:`decode_layer`), built on the timeline engine
(:func:`uneven.engines.timeline.run_timeline`). Resources and their operations, per host slot in
the host's send order (:func:`uneven.ep.transport.send_order`):

* **dispatch**: each NIC's receive stream delivers, slot by slot, the RDMA copies it carries
  (``copies × (bytes / NIC bandwidth + per-message cost)``, after the transport's fixed cost); a
  stream runs no faster than the busiest sender's NIC can push, so it is stretched to that time
  when the senders are the slower side. Each GPU's NVLink port then takes the slot's NVLink copies
  (relay fan-out waits for the host's RDMA streams to reach that slot);
* **experts**: one stream per GPU. An expert with tokens costs the larger of reading its weights
  (``weights / HBM bandwidth``) and computing (``tokens × per-token time``), a roofline; an
  expert with none costs nothing. With few tokens per expert (small decode batches) the weights
  bind: the GEMMs are memory-bound. H20's compute is modest (296 dense FP8 TFLOPS against
  4.0 TB/s), so from about 37 tokens per expert the FLOPs bind instead;
  Without overlap a GPU starts its experts when all its inputs have arrived (as DeepEP's
  low-latency receive returns); with **per-expert overlap** each expert starts when its own inputs
  have arrived, and the SM tax of the transport stretches the GEMMs (communication runs beside);
* **combine**: each GPU's NVLink port sends outputs to same-host sources (or, with the relay, to
  the relays), each NIC's send stream sends its RDMA copies back in the order they become ready;
  a relay returns a token's sum once every slot its host holds for that token has finished (up to
  that slot in send order: a conservative model). A source GPU is done when its last result
  arrives: the per-rank completion times give the tails (P99 over steps).

Two simplifications are stated where they matter: the streams are serial (store-and-forward per
slot group, no fair sharing between flows), and the balanced side of each phase — senders in
dispatch, receivers in combine, which all hold the same batch — bounds a stream from below rather
than being timed op by op.

Units: seconds, bytes, bytes/s.

One H20 host, 8 experts in 16 slots, top-2, 4 tokens per GPU:

>>> from uneven.ep.transport import SM_FREE, decode_traffic
>>> from uneven.ep.placement import route_to_slots
>>> setup = DecodeSetup(n_hosts=1, n_experts=8, n_slots=16, k=2, tokens_per_gpu=4)
>>> pop = drifting_popularity(8, 2, 4.0, drift=0.1, seed=0)   # planned for row 0, run on row 1
>>> plan = make_placement("NIC-aware", setup, pop[0] * 64)
>>> src = np.repeat(np.arange(8), 4)
>>> ids = sample_routing(pop[1], 32, 2, seed=1)
>>> traffic = decode_traffic(plan, route_to_slots(plan, ids, src), src, "relay")
>>> layer = decode_layer(plan, traffic, SM_FREE, setup.hw, overlap=True)
>>> round(layer.layer_time * 1e6, 1), round(layer.exposed_comm * 1e6, 1)
(44.3, 22.3)
>>> run = simulate_decode(setup, placement="EPLB", mode="relay", n_steps=4, seed=2)
>>> round(run.median() * 1e6, 1), round(run.p99("exposed_comm") * 1e6, 1)
(84.5, 62.5)
>>> [round(x * 1e6) for x in isolated_phases(1, tokens_per_gpu=16, k=2, n_experts=16,
...                                         hw=H20_DECODE)]
[32, 32]
>>> round(expert_bytes(4096, 1024, 2.0) / 1e6, 2)
25.17
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from .._fields import Checked, array, check_fields, instance, integer, real, recorded, text
from .._jit import njit
from .._validate import (
    as_float_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..engines.timeline import run_timeline
from ..limits import PY_STEP, check_bytes, check_steps, max_steps
from ..units import gbit_per_s, gbyte_per_s, us
from ..workloads import expert_popularity, rng_from
from ._checks import check_loads
from .placement import (
    Placement,
    contiguous_slots,
    eplb_placement,
    nic_aware_placement,
    nvlink_swaps,
    route_to_slots,
)
from .traffic import combine_bytes_per_token, dispatch_bytes_per_token
from .transport import SM_RESIDENT, DecodeTraffic, Transport, decode_traffic, send_order

__all__ = [
    "DecodeHardware",
    "H20_DECODE",
    "DecodeSetup",
    "LayerResult",
    "DecodeRun",
    "PLACEMENTS",
    "drifting_popularity",
    "sample_routing",
    "decode_layer",
    "make_placement",
    "simulate_decode",
    "expert_bytes",
    "H800_DECODE",
    "isolated_phases",
    "RELAY_COSTS",
    "matching_batch",
    "relay_cost_for",
]

PLACEMENTS = ("contiguous", "EPLB", "NIC-aware")
#: Largest time a result may hold (s): far beyond any layer, far below a float's range.
_MAX_TIME = 1e100


def expert_bytes(hidden: int = 7168, intermediate: int = 2048, bytes_per_value: float = 1.0
                 ) -> float:
    """Bytes of one routed expert's weights (gate, up and down projections): 3·H·I values.
    ``hidden`` and ``intermediate`` up to 10**7, ``bytes_per_value`` up to 64.

    >>> round(expert_bytes() / 1e6, 2)      # DeepSeek-V3 in FP8
    44.04
    """
    h = check_int("hidden", hidden, lo=1, hi=10**7)
    i = check_int("intermediate", intermediate, lo=1, hi=10**7)
    return 3.0 * h * i * check_real("bytes_per_value", bytes_per_value, lo=0.0, lo_open=True,
                                    hi=64.0)


@dataclass(frozen=True)
class DecodeHardware(Checked):
    """One host type. Bandwidths in bytes/s per direction, latencies in s.

    ``nic_bw`` per NIC; ``gpus_per_nic`` GPUs share one NIC; ``nvlink_bw`` per GPU port;
    ``hbm_bw`` per GPU; ``expert_bytes`` bytes of weights read per expert that has tokens;
    ``token_time`` s per token per expert (its FLOPs at the GPU's dense rate);
    ``dispatch_bytes`` / ``combine_bytes`` per token copy; ``nic_latency`` / ``nvlink_latency``
    added once per crossing. Ranges: at most 1024 GPUs per node; bandwidths 1 .. 1e18 bytes/s;
    byte counts up to 1e15; times up to 1000 s.
    """

    name: str = text(max_len=200, default="H20")
    gpus_per_node: int = integer(lo=1, hi=1024, default=8)
    gpus_per_nic: int = integer(lo=1, hi="gpus_per_node", default=2)
    nic_bw: float = real(lo=1.0, hi=1e18, unit="bytes/s", default=gbit_per_s(400))
    nvlink_bw: float = real(lo=1.0, hi=1e18, unit="bytes/s", default=gbyte_per_s(450))
    hbm_bw: float = real(lo=1.0, hi=1e18, unit="bytes/s", default=4.0e12)
    expert_bytes: float = real(lo=0.0, hi=1e15, unit="bytes", default=3.0 * 7168 * 2048)
    token_time: float = real(lo=0.0, hi=1e3, unit="s", default=6.0 * 7168 * 2048 / 296e12)
    dispatch_bytes: float = real(lo=0.0, hi=1e15, unit="bytes",
                                 default=dispatch_bytes_per_token(7168, "fp8"))
    combine_bytes: float = real(lo=0.0, hi=1e15, unit="bytes",
                                default=combine_bytes_per_token(7168, "bf16"))
    nic_latency: float = real(lo=0.0, hi=1e3, unit="s", default=us(2.8))
    nvlink_latency: float = real(lo=0.0, hi=1e3, unit="s", default=us(1.0))

    def __post_init__(self):
        check_fields(self)
        if self.gpus_per_node % self.gpus_per_nic:
            raise ValueError(f"gpus_per_nic must divide gpus_per_node ({self.gpus_per_node}); "
                             f"got {self.gpus_per_nic}")


#: An H20 host: 8 GPUs and 4 × 400 Gb/s NICs, NVLink 900 GB/s bidirectional (450 per direction)
#: [public, lmsys H20 write-up]; that adjacent GPUs pair on one NIC is our assumption; HBM
#: 4.0 TB/s and 296 dense FP8 TFLOPS [public H20 spec]; DeepSeek-V3 experts (44.04 MB in FP8),
#: FP8 dispatch and BF16 combine; NIC latency 2.8 µs (ISCA'25 Table 5 [paper]); NVLink latency
#: 1 µs [model].
H20_DECODE = DecodeHardware()
#: An H800 host as in DeepEP's tables: one 400 Gb/s CX7 NIC per GPU, NVLink 160 GB/s per direction
#: achieved (ISCA'25 [paper]), H800 HBM 3.35 TB/s and 1,979 dense FP8 TFLOPS [public spec].
H800_DECODE = DecodeHardware(name="H800", gpus_per_nic=1, nvlink_bw=gbyte_per_s(160),
                             hbm_bw=3.35e12, token_time=6.0 * 7168 * 2048 / 1979e12)


@dataclass(frozen=True)
class DecodeSetup(Checked):
    """One EP group at decode: ``n_hosts`` hosts of ``hw``, ``n_experts`` routed experts in
    ``n_slots`` slots (``n_slots - n_experts`` spare slots for replicas), top-``k`` routing,
    ``tokens_per_gpu`` tokens per GPU per step, popularity with a fixed ``busiest_over_median``
    ratio whose hot experts drift by ``drift`` per step (0 = static)."""

    n_hosts: int = integer(lo=1, hi=128, default=4)
    n_experts: int = integer(lo=lambda s: s.n_gpus, hi=lambda s: max(s.n_gpus, 4096),
                             default=256)
    n_slots: int = integer(lo="n_experts", hi=lambda s: 4 * s.n_experts, default=256)
    k: int = integer(lo=1, hi=lambda s: min(32, s.n_experts), default=8)
    tokens_per_gpu: int = integer(lo=1, hi=4096, default=64)
    busiest_over_median: float = real(lo=1.0, hi=1000.0, default=8.0)
    drift: float = real(lo=0.0, hi=1.0, default=0.005)
    hw: DecodeHardware = instance(DecodeHardware, default=H20_DECODE)
    check_first = ("hw", "n_hosts")

    def __post_init__(self):
        check_fields(self)
        n_gpus = self.n_gpus
        if self.n_experts > 4096:
            raise ValueError(f"n_hosts x hw.gpus_per_node must be at most 4096 GPUs (one expert "
                             f"each at least); got {n_gpus}")
        for name in ("n_experts", "n_slots"):
            if getattr(self, name) % n_gpus:
                raise ValueError(f"{name} must be a multiple of the GPU count {n_gpus}; got "
                                 f"{getattr(self, name)}")
        if n_gpus * self.tokens_per_gpu * self.k > 10_000_000:
            raise ValueError(f"tokens_per_gpu x GPUs x k must be at most 10,000,000 routed "
                             f"copies per step; got {self.tokens_per_gpu} x {n_gpus} x {self.k}")

    @property
    def n_gpus(self) -> int:
        """GPUs in the EP group."""
        return self.n_hosts * self.hw.gpus_per_node


@dataclass(frozen=True, eq=False)
class LayerResult(Checked):
    """One MoE layer of one decode step (all times in s from the layer's start).

    ``completion`` ``[n_gpus]``: when each GPU has all its tokens' results back;
    ``layer_time`` = its maximum. ``arrival`` ``[n_slots]``: when each slot's inputs are all
    there; ``compute_start`` / ``compute_end`` ``[n_slots]``; ``compute_time`` ``[n_gpus]``: each
    GPU's expert time; ``exposed_comm`` = ``layer_time - compute_time.max()``: the communication
    the layer does not hide. ``dispatch_end`` = the last arrival. ``nic_in`` / ``nic_out``
    ``[n_nics]``: how long each NIC's dispatch receive and combine send streams are busy.
    ``traffic``: the copies (:class:`uneven.ep.transport.DecodeTraffic`). ``ops``: the run
    itself, for :func:`uneven.trace.to_chrome` (``None`` when not recorded): a dict of per-op
    ``start``, ``finish`` (s), ``resource``, the predecessor CSR ``dep_ptr``, ``dep_src``, and
    the layout of the op blocks (``blocks``: name -> (first op, end), ``slot_gpu``,
    ``n_nics``, ``n_gpus``, ``n_hosts``, ``streams_per_nic``). Arrays are read-only.
    """

    layer_time: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    exposed_comm: float = real(lo=-_MAX_TIME, hi=_MAX_TIME, unit="s")
    dispatch_end: float = real(lo=0.0, hi=_MAX_TIME, unit="s")
    completion: np.ndarray = array(ndim=1, nonempty=True, lo=0.0, hi=_MAX_TIME, repr=False)
    arrival: np.ndarray = array(shape=lambda r: r.traffic.nvl_in.shape, lo=0.0, hi=_MAX_TIME,
                                repr=False)
    compute_start: np.ndarray = array(shape=lambda r: r.traffic.nvl_in.shape, lo=0.0,
                                      hi=_MAX_TIME, repr=False)
    compute_end: np.ndarray = array(shape=lambda r: r.traffic.nvl_in.shape, lo=0.0,
                                    hi=_MAX_TIME, repr=False)
    compute_time: np.ndarray = array(shape=lambda r: r.completion.shape, lo=0.0, hi=_MAX_TIME,
                                     repr=False)
    nic_in: np.ndarray = array(shape=lambda r: r.traffic.rdma_sent.shape, lo=0.0, hi=_MAX_TIME,
                               repr=False)
    nic_out: np.ndarray = array(shape=lambda r: r.traffic.rdma_sent.shape, lo=0.0,
                                hi=_MAX_TIME, repr=False)
    traffic: DecodeTraffic = instance(DecodeTraffic, repr=False)
    ops: object = recorded(("blocks", "slot_gpu", "n_nics", "n_gpus", "n_hosts",
                            "streams_per_nic"), default=None, repr=False, compare=False)
    check_first = ("traffic",)

    def __post_init__(self):
        check_fields(self)
        if self.completion.size > self.traffic.nvl_in.size:
            raise ValueError(f"completion must have one entry per GPU (1 .. "
                             f"{self.traffic.nvl_in.size}); got {self.completion.size}")

@dataclass(frozen=True, eq=False)
class DecodeRun(Checked):
    """Many decode steps of one layer; only the timed ones (``start`` in
    :func:`simulate_decode`). Per step (``[n_steps]``): ``layer_time``, ``exposed_comm`` (s),
    ``nic_ratio`` (busiest / mean NIC receive copies in dispatch), ``swaps`` (swaps made before
    the step). ``completion`` ``[n_steps, n_gpus]`` (s). ``copy_bytes``: expert weights moved by
    swaps over the timed steps (bytes). ``placement``: the last step's placement. Arrays are
    read-only."""

    layer_time: np.ndarray = array(shape=("steps",), nonempty=True, lo=0.0, hi=_MAX_TIME,
                                   repr=False)
    exposed_comm: np.ndarray = array(shape=("steps",), lo=-_MAX_TIME, hi=_MAX_TIME, repr=False)
    nic_ratio: np.ndarray = array(shape=("steps",), lo=0.0, hi=1e6, repr=False)
    swaps: np.ndarray = array("int", shape=("steps",), lo=0, repr=False)
    completion: np.ndarray = array(shape=lambda r: (r.layer_time.size, r.placement.n_gpus),
                                   lo=0.0, hi=_MAX_TIME, repr=False)
    copy_bytes: float = real(lo=0.0, unit="bytes")
    placement: Placement = instance(Placement, repr=False)
    check_first = ("placement",)

    def p99(self, what: str = "layer_time") -> float:
        """99th percentile over steps of ``layer_time`` or ``exposed_comm`` (s)."""
        what = check_choice("what", what, ("layer_time", "exposed_comm"))
        return float(np.percentile(getattr(self, what), 99))

    def median(self, what: str = "layer_time") -> float:
        """Median over steps of ``layer_time`` or ``exposed_comm`` (s)."""
        what = check_choice("what", what, ("layer_time", "exposed_comm"))
        return float(np.median(getattr(self, what)))


# --------------------------------------------------------------------------------------------
# workload


def drifting_popularity(n_experts: int, n_steps: int, busiest_over_median: float = 8.0, *,
                        drift: float = 0.005, seed=0) -> np.ndarray:
    """Routing probabilities per step, float64 ``[n_steps, n_experts]`` (rows sum to 1).

    Every row is the same power law with busiest/median exactly ``busiest_over_median``
    (:func:`uneven.workloads.expert_popularity`), dealt to the experts by the rank of a latent
    score. The scores start standard normal and follow ``x ← ρ x + sqrt(1 − ρ²) ε`` with
    ``ρ = 1 − drift``: after ``1 / drift`` steps they keep a correlation of about ``e⁻¹`` with
    where they started. ``drift = 0``: the same row every step. At most 10 million entries
    (and within the budgets of :mod:`uneven.limits`: one Python-level step per row).

    >>> p = drifting_popularity(16, 3, 4.0, seed=1)
    >>> p.shape, bool(np.allclose(p.sum(axis=1), 1.0))
    ((3, 16), True)
    """
    n = check_int("n_experts", n_experts, lo=2, hi=1 << 16)
    s = check_int("n_steps", n_steps, lo=1)
    if n * s > 10_000_000:
        raise ValueError(f"n_steps × n_experts must be at most 10,000,000; got {s} × {n}")
    ratio = check_real("busiest_over_median", busiest_over_median, lo=1.0, hi=1e12)
    drift = check_real("drift", drift, lo=0.0, hi=1.0)
    _check_popularity_budget("n_steps", s, n)
    rng = rng_from(seed)
    shape = np.sort(expert_popularity(n, ratio, seed=0))[::-1]  # by rank, busiest first
    rho = 1.0 - drift
    x = rng.standard_normal(n)
    noise = rng.standard_normal((s, n)) * np.sqrt(max(0.0, 1.0 - rho * rho))
    out = np.empty((s, n))
    for t in range(s):
        if t:
            x = rho * x + noise[t]
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(-x, kind="stable")] = np.arange(n)
        out[t] = shape[rank]
    return out


def _check_popularity_budget(name, n_steps, n_experts):
    check_bytes(name, n_steps, 8.0 * 3 * n_steps * n_experts, "the popularity of every step")
    check_steps(name, n_steps, n_steps * (3.0 * PY_STEP + 4.0 * n_experts
                                          * max(1.0, np.log2(n_experts))),
                "ranking the experts at every step")


#: Draws of one choice rejected in a row (an expert the token already has) before the sampler
#: draws that choice directly from the experts left (one uniform, a scan over the experts).
#: Below this the draws are plain successive sampling; the direct draw only keeps popularity
#: that sits almost all on a few experts from looping (for it the result is the same
#: distribution).
REJECT_CAP = 64


@njit
def _sample_kernel(cdf, p, k, u, out, t0, drawn, budget):
    """Successive sampling without replacement for tokens ``t0 ..`` on the uniforms ``u``.

    Returns ``(t, pos, work)``: the tokens done so far (all of them, or up to the one that ran
    out of uniforms or of ``budget`` loop steps), the position in ``u`` where token ``t``'s
    draws start, and the loop steps spent. ``drawn`` (bool ``[n]``, all False) is scratch.
    """
    n_tok = out.shape[0]
    n = cdf.size
    pos = 0
    work = 0
    for t in range(t0, n_tok):
        start = pos
        m = 0
        miss = 0
        while m < k:
            if pos >= u.size or work > budget:
                for q in range(m):
                    drawn[out[t, q]] = False
                return t, start, work
            if miss < REJECT_CAP:
                e = np.searchsorted(cdf, u[pos] * cdf[n - 1], side="right")
                pos += 1
                work += 1
                if e >= n:
                    e = n - 1
                if drawn[e]:
                    miss += 1
                    continue
            else:  # draw this choice from the experts not drawn yet
                rest = 0.0
                for j in range(n):
                    if not drawn[j]:
                        rest += p[j]
                x = u[pos] * rest
                pos += 1
                work += 2 * n
                e = -1
                acc = 0.0
                for j in range(n):
                    if drawn[j]:
                        continue
                    if e < 0 or p[j] > 0.0:
                        e = j
                    acc += p[j]
                    if p[j] > 0.0 and acc > x:
                        break
            out[t, m] = e
            drawn[e] = True
            m += 1
            miss = 0
        for q in range(k):
            drawn[out[t, q]] = False
        work += k
    return n_tok, pos, work


def _reference_sample(p, n_tokens, k, u):
    """Pure-Python successive sampling on the same uniforms (tests only)."""
    cdf = np.cumsum(p)
    out, pos = [], 0
    for _ in range(n_tokens):
        row = []
        miss = 0
        while len(row) < k:
            if miss < REJECT_CAP:
                x = u[pos] * cdf[-1]
                pos += 1
                e = min(int(np.searchsorted(cdf, x, side="right")), len(p) - 1)
                if e in row:
                    miss += 1
                    continue
            else:
                left = [j for j in range(len(p)) if j not in row]
                x = u[pos] * sum(p[j] for j in left)
                pos += 1
                acc, e = 0.0, -1
                for j in left:
                    if e < 0 or p[j] > 0:
                        e = j
                    acc += p[j]
                    if p[j] > 0 and acc > x:
                        break
            row.append(e)
            miss = 0
        out.append(row)
    return np.array(out, dtype=np.int64).reshape(n_tokens, k)


def sample_routing(popularity, n_tokens: int, k: int, seed=0) -> np.ndarray:
    """Each of ``n_tokens`` tokens draws ``k`` distinct experts, one after another with
    probability proportional to ``popularity`` among those not yet drawn. Returns int64
    ``[n_tokens, k]``. Needs at least ``k`` experts with positive popularity; at most 10 million
    draws, and at most 2**20 experts. A popularity held almost all by ``k`` or fewer experts
    costs a scan over the experts for the draws it would otherwise repeat (see
    :data:`REJECT_CAP`); the work budget of :mod:`uneven.limits` bounds it.

    >>> sample_routing([0.5, 0.3, 0.2], 4, 2, seed=0).shape
    (4, 2)
    """
    p = as_float_array("popularity", popularity, ndim=1, lo=0.0)
    if p.size > 1 << 20:
        raise ValueError(f"popularity must have at most {1 << 20:,} experts; got {p.size:,}")
    n_tokens = check_int("n_tokens", n_tokens, lo=0, hi=10_000_000)
    nnz = int(np.count_nonzero(p))
    if nnz == 0:
        raise ValueError("popularity must have at least one expert with positive popularity")
    k = check_int("k", k, lo=1, hi=nnz)
    if n_tokens * k > 10_000_000:
        raise ValueError(f"n_tokens × k must be at most 10,000,000; got {n_tokens} × {k}")
    rng = rng_from(seed)
    check_bytes("n_tokens", n_tokens, 8.0 * 3 * n_tokens * k + 16.0 * p.size,
                "the routed experts and their uniforms")
    with np.errstate(over="ignore"):
        cdf = np.cumsum(p)
    if not np.isfinite(cdf[-1]):  # loads near the float limit: the same shares, scaled down
        p = p / p.max()
        cdf = np.cumsum(p)
    out = np.empty((n_tokens, k), dtype=np.int64)
    drawn = np.zeros(p.size, dtype=np.bool_)
    size = n_tokens * k * 2 + 64
    u = rng.random(size)
    limit = max_steps()
    t, work = 0, 0
    while True:
        t, pos, used = _sample_kernel(cdf, p, k, u, out, t, drawn, limit - work)
        work += used
        if t == n_tokens:
            return out
        if work > limit:  # popularity held by about k experts: the direct draws cost too much
            check_steps("popularity", popularity, work * n_tokens / max(t, 1),
                        f"drawing {k} distinct experts per token")
        u = np.concatenate([u[pos:], rng.random(size)])  # rare: the same stream, extended


# --------------------------------------------------------------------------------------------
# one layer on the timeline engine


@njit
def _max_by_group(group, value, out):
    for i in range(group.size):
        if value[i] > out[group[i]]:
            out[group[i]] = value[i]


def _ready_rank(seq_key, resource, ops):
    """Sequence numbers that order ``ops`` by ``seq_key`` within each resource (stable)."""
    order = np.lexsort((seq_key[ops], resource[ops]))
    rank = np.empty(ops.size, dtype=np.int64)
    rank[order] = np.arange(ops.size)
    return rank


def decode_layer(placement: Placement, traffic: DecodeTraffic, transport: Transport = SM_RESIDENT,
                 hw: DecodeHardware = H20_DECODE, *, overlap: bool = False,
                 relay_copy: float = 0.0, relay_sync: float = 0.0) -> LayerResult:
    """Time one MoE layer of one decode step (see the module docstring for the model).

    ``placement`` and ``traffic`` (from :func:`uneven.ep.transport.decode_traffic` on that
    placement) describe the step; ``transport`` its fixed, per-message and SM costs; ``hw`` the
    host; ``overlap`` per-expert overlap. The placement's ``gpus_per_nic`` and ``gpus_per_node``
    must match ``hw``'s.

    The relay's own work *(model)*, 0 by default (then the relay costs only its NVLink bytes and
    latency), each 0 .. 1 s and used only by relay traffic: ``relay_copy`` (s) per copy the relay
    forwards over NVLink, in dispatch and again in combine, paid on the port of the GPU that holds
    the slot, one copy after another (a forwarding kernel's per-copy work);
    ``relay_sync`` (s) once between an RDMA arrival and the relay's NVLink fan-out, and once
    between the last partial output reaching the relay and its RDMA copy back (detecting the
    arrival, then launching the next step).

    >>> from uneven.ep.transport import decode_traffic
    >>> p = contiguous_slots(16, 16)                     # 2 H20 hosts, one expert per GPU
    >>> src = np.arange(16)
    >>> ids = (src[:, None] + np.array([1, 8, 9])) % 16  # top-3, two experts on the other host
    >>> t = decode_traffic(p, route_to_slots(p, ids, src), src, "relay")
    >>> free = decode_layer(p, t).layer_time
    >>> round((decode_layer(p, t, relay_sync=us(5)).layer_time - free) * 1e6, 1)  # twice 5 µs
    10.0
    """
    relay_copy = check_real("relay_copy", relay_copy, lo=0.0, hi=1.0, unit="s")
    relay_sync = check_real("relay_sync", relay_sync, lo=0.0, hi=1.0, unit="s")
    g = _layer_shape(placement, traffic, transport, hw, overlap)
    g.relay_copy, g.relay_sync = (relay_copy, relay_sync) if g.relay else (0.0, 0.0)
    dur, res, seq, rel, comp = _layer_ops(g, traffic, transport, hw, overlap)
    inputs, edges = _layer_edges(g, traffic, transport, hw, overlap)
    fin, start, ptr, dep_src = _run_layer(g, dur, res, seq, rel, edges)
    blocks = {"dispatch RDMA": (0, g.o_dnvl), "dispatch NVLink": (g.o_dnvl, g.o_c),
              "expert": (g.o_c, g.o_envl), "combine NVLink": (g.o_envl, g.o_enic),
              "combine RDMA": (g.o_enic, g.o_chain), "relay chain": (g.o_chain, g.n_ops)}
    for a in (res, ptr, dep_src):
        a.flags.writeable = False
    ops = dict(start=start, finish=fin, resource=res, dep_ptr=ptr, dep_src=dep_src,
               blocks=blocks, slot_gpu=g.gpu, n_nics=g.K, n_gpus=g.N, n_hosts=g.H,
               streams_per_nic=g.sph)
    return _layer_result(g, traffic, transport, hw, fin, start, dur, comp, inputs, ops)


def _layer_shape(placement, traffic, transport, hw, overlap) -> SimpleNamespace:
    """Check :func:`decode_layer`'s arguments and budgets; return the layer's geometry: sizes,
    each slot's GPU, host and NIC, the send order, and where each block of ops starts."""
    p = check_instance("placement", placement, Placement)
    check_instance("traffic", traffic, DecodeTraffic, "from decode_traffic(...)")
    check_instance("transport", transport, Transport)
    check_instance("hw", hw, DecodeHardware)
    check_bool("overlap", overlap)
    if (p.gpus_per_nic, p.gpus_per_node) != (hw.gpus_per_nic, hw.gpus_per_node):
        raise ValueError(f"placement has {p.gpus_per_node} GPUs per node and {p.gpus_per_nic} per"
                         f" NIC but hw has {hw.gpus_per_node} and {hw.gpus_per_nic}")
    g = SimpleNamespace(relay=traffic.mode == "relay", P=p.n_slots, N=p.n_gpus, K=p.n_nics,
                        H=p.n_nodes, spg=p.slots_per_gpu, gpn=p.gpus_per_node,
                        gpnic=p.gpus_per_nic)
    g.sph = g.spg * g.gpn
    g.nph = g.gpn // g.gpnic
    P, N, K, H, sph = g.P, g.N, g.K, g.H, g.sph
    if traffic.nvl_in.size != P or traffic.rdma_in.shape != (K, sph) or (
        traffic.ret_src.size and traffic.ret_src.max() >= N
    ):
        raise ValueError("traffic was counted on another placement (slot, NIC or GPU count "
                         "differs)")
    n_ops = 2 * K * sph + 3 * P + (H * sph if g.relay else 0)
    n_edges = P * (2 * g.spg + g.nph + 4) + 2 * K * sph + H * sph
    check_bytes("placement", f"{P:,} slots on {N:,} GPUs", 8.0 * (16 * n_ops + 8 * n_edges),
                "the ops and edges of the layer's timeline")
    check_steps("placement", f"{P:,} slots on {N:,} GPUs",
                60 * PY_STEP + 40.0 * (n_ops + n_edges) + 4.0 * traffic.ret_src.size,
                "timing the layer twice")
    g.order = send_order(p)
    g.slot = np.arange(P, dtype=np.int64)
    g.gpu = g.slot // g.spg
    g.host = g.gpu // g.gpn
    g.nic_of_slot = g.gpu // g.gpnic
    g.slot_at = np.empty((H, sph), dtype=np.int64)
    g.slot_at[g.host, g.order] = g.slot
    # ops: [D_nic (K*sph) | D_nvl (P) | C (P) | E_nvl (P) | E_nic (K*sph) | chain (H*sph)]
    g.A = A = K * sph
    g.o_dnvl, g.o_c, g.o_envl, g.o_enic = A, A + P, A + 2 * P, A + 3 * P
    g.o_chain = 2 * A + 3 * P
    g.n_ops = g.o_chain + (H * sph if g.relay else 0)
    g.nic_ids = np.repeat(np.arange(K, dtype=np.int64), sph)
    g.js = np.tile(np.arange(sph, dtype=np.int64), K)
    return g


def _stretch(per_nic, other_side):
    """How much longer a NIC stream takes than its own copies say, when the other side's busiest
    NIC (``other_side``) has more copies to move (1 where this NIC moves nothing)."""
    busy = per_nic.astype(np.float64)
    floor = float(other_side.max(initial=0))
    return np.where(busy > 0, np.maximum(1.0, floor / np.maximum(busy, 1.0)), 1.0)


def _layer_ops(g, traffic, transport, hw, overlap):
    """Durations (s), resources, sequence numbers and release times of the layer's ops, and
    each slot's compute time (s)."""
    A, N, K, H, sph = g.A, g.N, g.K, g.H, g.sph
    t_d = hw.dispatch_bytes / hw.nic_bw + transport.per_message
    t_c = hw.combine_bytes / hw.nic_bw + transport.per_message
    s_d = _stretch(traffic.nic_in(), traffic.rdma_sent)
    s_c = _stretch(traffic.nic_out(), traffic.rdma_returned)
    dur = np.zeros(g.n_ops)
    res = np.empty(g.n_ops, dtype=np.int64)
    seq = np.empty(g.n_ops, dtype=np.int64)
    rel = np.zeros(g.n_ops)
    dur[:A] = traffic.rdma_in.ravel() * t_d * np.repeat(s_d, sph)
    res[:A], seq[:A], rel[:A] = g.nic_ids, g.js, transport.fixed
    o_dnvl, o_c, o_envl, o_enic, o_chain = g.o_dnvl, g.o_c, g.o_envl, g.o_enic, g.o_chain
    # the relay's forwarded copies: a slot's NVLink copies less those from its own host's tokens
    own_nvl = np.bincount(traffic.ret_op[traffic.ret_kind == 1], minlength=g.P)
    fwd = (traffic.nvl_in - own_nvl) * g.relay_copy if g.relay else 0.0
    dur[o_dnvl:o_c] = traffic.nvl_in * (hw.dispatch_bytes / hw.nvlink_bw) + fwd
    res[o_dnvl:o_c], seq[o_dnvl:o_c], rel[o_dnvl:o_c] = K + g.gpu, g.order, transport.fixed
    tax = 1.0 / (1.0 - transport.sm_tax) if overlap else 1.0
    tok = traffic.tokens
    comp = np.where(tok > 0, np.maximum(hw.expert_bytes / hw.hbm_bw, tok * hw.token_time) * tax,
                    0.0)
    dur[o_c:o_envl] = comp
    res[o_c:o_envl], seq[o_c:o_envl] = K + N + g.gpu, g.order
    rel[o_c:o_envl] = transport.fixed  # nothing computes before the dispatch kernel has run
    dur[o_envl:o_enic] = traffic.nvl_back * (hw.combine_bytes / hw.nvlink_bw) + fwd
    res[o_envl:o_enic], seq[o_envl:o_enic] = K + 2 * N + g.gpu, g.order
    dur[o_enic:o_chain] = traffic.rdma_back.ravel() * t_c * np.repeat(s_c, sph)
    res[o_enic:o_chain], seq[o_enic:o_chain] = K + 3 * N + g.nic_ids, g.js
    if g.relay:
        res[o_chain:] = K * 2 + 3 * N + np.repeat(np.arange(H, dtype=np.int64), sph)
        seq[o_chain:] = np.tile(np.arange(sph, dtype=np.int64), H)
    return dur, res, seq, rel, comp


def _layer_edges(g, traffic, transport, hw, overlap):
    """The dependencies of the layer's ops as ``(src, dst, delay)`` arrays, and each slot's
    ``inputs``: ``(op ids, delay, which slots wait for it)``, the ops its data arrives by."""
    src, dst, dly = [], [], []

    def edge(a, b, d):
        a = np.asarray(a, dtype=np.int64).ravel()
        b = np.asarray(b, dtype=np.int64).ravel()
        src.append(a)
        dst.append(b)
        dly.append(np.full(a.size, float(d)))

    P, N, spg, sph, nph, slot, order = g.P, g.N, g.spg, g.sph, g.nph, g.slot, g.order
    o_dnvl, o_c, o_envl, o_enic, o_chain = g.o_dnvl, g.o_c, g.o_envl, g.o_enic, g.o_chain
    own_dnic = g.nic_of_slot * sph + order  # the RDMA op that carries a slot's direct copies
    host_nics = g.host[:, None] * nph + np.arange(nph)[None, :]  # [P, nph]
    remote = traffic.remote_tokens > 0
    if g.relay:  # fan-out waits for every RDMA stream of the host to reach the slot
        edge((host_nics * sph + order[:, None])[remote], np.repeat(o_dnvl + slot[remote], nph),
             hw.nic_latency + g.relay_sync)
        inputs = [(o_dnvl + slot, hw.nvlink_latency, (traffic.nvl_in > 0) | remote)]
    else:
        inputs = [(own_dnic, hw.nic_latency, traffic.rdma_in.ravel()[own_dnic] > 0),
                  (o_dnvl + slot, hw.nvlink_latency, traffic.nvl_in > 0)]
    if overlap:
        for a, d, m in inputs:
            edge(a[m], o_c + slot[m], d)
        done = o_c + slot  # each expert's output leaves when the expert ends
    else:  # a GPU starts when all its inputs are there; sends when all its experts are done
        same_gpu = (g.gpu[:, None] * spg + np.arange(spg)[None, :])  # [P, spg]
        for a, d, m in inputs:
            mm = m[same_gpu]
            edge(a[same_gpu][mm], np.repeat(o_c + slot, spg).reshape(P, spg)[mm], d)
        by_order = np.argsort(order, kind="stable")
        last = np.empty(N, dtype=np.int64)
        last[g.gpu[by_order]] = slot[by_order]  # the later write wins: the last in send order
        done = o_c + last[g.gpu]
    edge(done, o_envl + slot, transport.fixed)
    if g.relay:
        edge(o_envl + g.slot_at.ravel(), o_chain + np.arange(g.H * sph),
             hw.nvlink_latency + g.relay_sync)
        chain_of = o_chain + (g.nic_ids // nph) * sph + g.js
        edge(chain_of, o_enic + np.arange(g.A), 0.0)
    else:
        q = g.slot_at[g.nic_ids // nph, g.js]  # the slot at each NIC stream position
        mine = g.nic_of_slot[q] == g.nic_ids
        edge(done[q[mine]], o_enic + np.flatnonzero(mine), transport.fixed)
    return inputs, (np.concatenate(src), np.concatenate(dst), np.concatenate(dly))


def _run_layer(g, dur, res, seq, rel, edges):
    """Run the layer's timeline twice: the combine streams send what is ready first, so their
    order comes from the first run's readiness. Returns (finish, start) of the second (s) and
    the predecessor CSR (dep_ptr, dep_src)."""
    e_src, e_dst, e_dly = edges
    ordr = np.argsort(e_dst, kind="stable")
    ptr = np.zeros(g.n_ops + 1, dtype=np.int64)
    np.cumsum(np.bincount(e_dst, minlength=g.n_ops), out=ptr[1:])
    dep_src, dep_dly = e_src[ordr], e_dly[ordr]
    tl = run_timeline(dur, res, ptr, dep_src, dep_dly, sequence=seq, release=rel)
    ready = np.zeros(g.n_ops)
    _max_by_group(e_dst, tl.finish[e_src] + e_dly, ready)
    ready = np.maximum(ready, rel)
    for lo, hi in ((g.o_envl, g.o_enic), (g.o_enic, g.o_chain)):
        ops = np.arange(lo, hi)
        seq[lo:hi] = _ready_rank(ready, res, ops)
    tl = run_timeline(dur, res, ptr, dep_src, dep_dly, sequence=seq, release=rel)
    return tl.finish, tl.start, ptr, dep_src


def _layer_result(g, traffic, transport, hw, fin, start, dur, comp, inputs,
                  ops=None) -> LayerResult:
    """Each GPU's completion, each slot's arrival and compute window, each NIC's busy time."""
    item_op = np.where(traffic.ret_kind == 0, g.o_enic + traffic.ret_op,
                       np.where(traffic.ret_kind == 1, g.o_envl + traffic.ret_op,
                                g.o_c + traffic.ret_op))
    lat = np.where(traffic.ret_kind == 0, hw.nic_latency,
                   np.where(traffic.ret_kind == 1, hw.nvlink_latency, 0.0))
    completion = np.zeros(g.N)
    _max_by_group(traffic.ret_src, fin[item_op] + lat, completion)
    arrival = np.full(g.P, transport.fixed)
    for a, d, m in inputs:
        arrival = np.where(m, np.maximum(arrival, fin[a] + d), arrival)
    compute_time = np.bincount(g.gpu, weights=comp, minlength=g.N)
    layer = float(completion.max())
    out = dict(completion=completion, arrival=arrival,
               compute_start=start[g.o_c:g.o_envl].copy(), compute_end=fin[g.o_c:g.o_envl].copy(),
               compute_time=compute_time, nic_in=dur[:g.A].reshape(g.K, g.sph).sum(axis=1),
               nic_out=dur[g.o_enic:g.o_chain].reshape(g.K, g.sph).sum(axis=1))
    for a in out.values():
        a.flags.writeable = False
    return trusted(LayerResult, layer_time=layer, exposed_comm=layer - float(compute_time.max()),
                   dispatch_end=float(arrival.max()), traffic=traffic, ops=ops, **out)


# --------------------------------------------------------------------------------------------
# many steps


def make_placement(kind: str, setup: DecodeSetup, load) -> Placement:
    """``"contiguous"`` (the setup must have no spare slots), ``"EPLB"`` (global policy) or
    ``"NIC-aware"`` placement of ``setup`` planned for ``load`` (float ``[n_experts]``, each
    >= 0 and at most 1e250)."""
    kind = check_choice("kind", kind, PLACEMENTS)
    check_instance("setup", setup, DecodeSetup)
    load = check_loads("load", load, shape=(setup.n_experts,))
    hw = setup.hw
    kw = dict(gpus_per_node=hw.gpus_per_node, gpus_per_nic=hw.gpus_per_nic)
    if kind == "contiguous":
        if setup.n_slots != setup.n_experts:
            raise ValueError(f"kind='contiguous' needs n_slots == n_experts ({setup.n_experts});"
                             f" got n_slots={setup.n_slots}")
        return contiguous_slots(setup.n_experts, setup.n_gpus, **kw)
    if kind == "EPLB":
        return eplb_placement(load, setup.n_slots, setup.n_gpus, **kw)
    return nic_aware_placement(load, setup.n_slots, setup.n_gpus, **kw)


def simulate_decode(setup: DecodeSetup = DecodeSetup(), *, placement: str = "NIC-aware",
                    swaps: bool = False, mode: str = "direct", overlap: bool = False,
                    transport: Transport = SM_RESIDENT, n_steps: int = 50, seed: int = 0,
                    swap_threshold: float = 0.02, cooldown: int = 10, ema: float = 0.2,
                    popularity=None, start: int = 0, relay_copy: float = 0.0,
                    relay_sync: float = 0.0) -> DecodeRun:
    """Run ``n_steps`` decode steps of one MoE layer and return per-step times and tails.

    The placement is planned once, before step 0, for the expected load of step 0 (a fresh
    moving average); the popularity then drifts (``setup.drift``). With ``swaps``, before each
    step every host may make one :func:`uneven.ep.placement.nvlink_swaps` swap, decided
    on an exponential moving average (weight ``ema`` on the newest step) of the token counts seen
    so far; a moved expert stays put for ``cooldown`` steps (hysteresis); ``swap_threshold`` is
    the smallest gain, as a share of the host's mean NIC load. ``start``: the first timed step,
    counted from the planning; steps ``0 .. start - 1`` run (the popularity drifts, tokens are
    routed, the moving average and the swaps follow them) but are not timed or returned, so the
    run measures a plan that is ``start`` steps old; with the same ``seed`` it times exactly
    steps ``start .. start + n_steps - 1`` of a longer run. ``popularity`` (float
    ``[start + n_steps, n_experts]``, routing probabilities in [0, 1], each row with at least
    ``k`` positive entries) replaces the drifting workload. Costs about 2-5 ms per timed step,
    far less per untimed one (no layer is timed); the steps must fit the work budget of
    :mod:`uneven.limits` (at its default, about 900 timed steps of the default setup).
    ``relay_copy`` and ``relay_sync`` (s): the relay's own work, as in :func:`decode_layer`
    (0 by default; used only with ``mode="relay"``).

    >>> r = simulate_decode(DecodeSetup(n_hosts=1, n_experts=8, n_slots=8, k=2,
    ...                                 tokens_per_gpu=2), n_steps=3, start=5, swaps=True)
    >>> r.layer_time.shape
    (3,)
    """
    a = _decode_args(setup, placement, swaps, mode, overlap, transport, n_steps, start, seed,
                     swap_threshold, cooldown, ema)
    relay_cost = dict(relay_copy=check_real("relay_copy", relay_copy, lo=0.0, hi=1.0, unit="s"),
                      relay_sync=check_real("relay_sync", relay_sync, lo=0.0, hi=1.0, unit="s"))
    pop = _decode_popularity(setup, popularity, a.total, a.seed)
    n_tok = setup.n_gpus * setup.tokens_per_gpu
    expected = pop[0] * n_tok * setup.k
    plc = make_placement(a.placement, setup, expected)
    src = np.repeat(np.arange(setup.n_gpus, dtype=np.int64), setup.tokens_per_gpu)
    avg = expected.copy()
    moved_at = np.full(setup.n_experts, -10**9)
    n = a.n_steps
    out = dict(layer_time=np.empty(n), exposed_comm=np.empty(n), nic_ratio=np.empty(n),
               swaps=np.zeros(n, dtype=np.int64), completion=np.empty((n, setup.n_gpus)))
    copied = 0.0
    seeds = np.random.SeedSequence([a.seed, 2]).generate_state(a.total)
    for t in range(a.total):
        if a.swaps and t > 0:
            r = nvlink_swaps(plc, avg, threshold=a.swap_threshold,
                             blocked=moved_at > t - 1 - a.cooldown,
                             expert_bytes=setup.hw.expert_bytes)
            if r.pairs.size:
                plc = r.placement
                moved_at[plc.phy2log[r.pairs.ravel()]] = t
                if t >= a.start:
                    out["swaps"][t - a.start] = r.pairs.shape[0]
                    copied += r.copy_bytes
        ids = sample_routing(pop[t], n_tok, setup.k, seed=int(seeds[t]))
        counts = np.bincount(ids.ravel(), minlength=setup.n_experts)
        avg = (1.0 - a.ema) * avg + a.ema * counts
        if t >= a.start:
            _time_step(out, t - a.start, plc, ids, src, a.mode, transport, setup.hw, a.overlap,
                       relay_cost)
    for v in out.values():
        v.flags.writeable = False
    return trusted(DecodeRun, copy_bytes=copied, placement=plc, **out)


def _decode_args(setup, placement, swaps, mode, overlap, transport, n_steps, start, seed,
                 swap_threshold, cooldown, ema) -> SimpleNamespace:
    """:func:`simulate_decode`'s arguments checked, and its work and memory budgets."""
    check_instance("setup", setup, DecodeSetup)
    placement = check_choice("placement", placement, PLACEMENTS)
    if placement == "contiguous" and setup.n_slots != setup.n_experts:
        raise ValueError(f"placement='contiguous' needs a setup without spare slots (n_slots == "
                         f"n_experts == {setup.n_experts}); got {setup.n_slots} slots")
    a = SimpleNamespace(
        placement=placement, swaps=check_bool("swaps", swaps),
        mode=check_choice("mode", mode, ("direct", "relay")),
        overlap=check_bool("overlap", overlap),
        transport=check_instance("transport", transport, Transport),
        n_steps=check_int("n_steps", n_steps, lo=1, hi=100_000),
        start=check_int("start", start, lo=0, hi=100_000), seed=check_int("seed", seed, lo=0),
        swap_threshold=check_real("swap_threshold", swap_threshold, lo=0.0, hi=1e3),
        cooldown=check_int("cooldown", cooldown, lo=0, hi=10**9),
        ema=check_real("ema", ema, lo=0.0, hi=1.0, lo_open=True))
    n_steps, start = a.n_steps, a.start
    a.total = total = start + n_steps
    copies = setup.n_gpus * setup.tokens_per_gpu * setup.k
    check_steps("n_steps", n_steps, _run_steps(setup, n_steps, start),
                f"{start:,} untimed and {n_steps:,} timed steps of {copies:,} routed copies")
    check_bytes("n_steps", n_steps, 8.0 * (3 * total * setup.n_experts
                                           + n_steps * (setup.n_gpus + 8) + 40 * copies),
                "the popularity of every step and the per-step results")
    return a


def _run_steps(setup, n_steps, start) -> float:
    """Loop steps of one :func:`simulate_decode` run (the work budget's estimate)."""
    copies = setup.n_gpus * setup.tokens_per_gpu * setup.k
    per_step = 20 * PY_STEP + 30.0 * copies + 20.0 * setup.n_experts
    per_timed = 300 * PY_STEP + 80.0 * copies + 400.0 * setup.n_slots
    return start * per_step + n_steps * (per_step + per_timed)


def _decode_popularity(setup, popularity, total, seed) -> np.ndarray:
    """Each step's expert popularity ``[total, n_experts]``: the drifting workload of ``setup``,
    or the caller's ``popularity`` (checked)."""
    if popularity is None:
        return drifting_popularity(setup.n_experts, total, setup.busiest_over_median,
                                   drift=setup.drift, seed=np.random.default_rng([seed, 1]))
    pop = as_float_array("popularity", popularity, shape=(total, setup.n_experts), lo=0.0,
                         hi=1.0)
    nnz = np.count_nonzero(pop, axis=1).min()
    if nnz < setup.k:
        raise ValueError(f"popularity must give every step at least k = {setup.k} experts "
                         f"with positive popularity; a step has {nnz}")
    return pop


def _time_step(out, i, plc, ids, src, mode, transport, hw, overlap, relay_cost) -> None:
    """Time step ``i`` (its routed ``ids``) on placement ``plc`` into row ``i`` of ``out``."""
    tr = decode_traffic(plc, route_to_slots(plc, ids, src), src, mode)
    lr = decode_layer(plc, tr, transport, hw, overlap=overlap, **relay_cost)
    out["layer_time"][i], out["exposed_comm"][i] = lr.layer_time, lr.exposed_comm
    nic_in = tr.nic_in()
    out["nic_ratio"][i] = nic_in.max() / nic_in.mean() if nic_in.mean() > 0 else 1.0
    out["completion"][i] = lr.completion


def isolated_phases(n_hosts: int, *, tokens_per_gpu: int = 128, k: int = 8, n_experts: int = 288,
                    hw: DecodeHardware = H800_DECODE, transport: Transport = SM_RESIDENT,
                    seed: int = 0) -> tuple[float, float]:
    """Dispatch and combine times (s) as DeepEP's low-latency test measures them: uniform
    top-``k`` routing of ``tokens_per_gpu`` tokens per GPU to ``n_experts`` experts (rounded up
    to a multiple of the GPU count, placed contiguously), one copy per expert, no expert compute
    between the phases. Dispatch = the last arrival; combine = the rest of the layer.

    >>> d, c = isolated_phases(4)
    >>> round(d * 1e6), round(c * 1e6)
    (164, 279)
    """
    n_hosts = check_int("n_hosts", n_hosts, lo=1, hi=128)
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1, hi=4096)
    check_instance("hw", hw, DecodeHardware)
    check_instance("transport", transport, Transport)
    seed = check_int("seed", seed, lo=0)
    n_gpus = n_hosts * hw.gpus_per_node
    n_exp = -(-check_int("n_experts", n_experts, lo=1, hi=4096) // n_gpus) * n_gpus
    if n_exp > 4096:
        raise ValueError(f"n_hosts x hw.gpus_per_node must be at most 4096 GPUs; got {n_gpus}")
    k = check_int("k", k, lo=1, hi=n_exp)
    if n_gpus * tokens_per_gpu * k > 10_000_000:
        raise ValueError(f"tokens_per_gpu x GPUs x k must be at most 10,000,000 routed copies; "
                         f"got {tokens_per_gpu} x {n_gpus} x {k}")
    bare = DecodeHardware(**{**hw.__dict__, "expert_bytes": 0.0, "token_time": 0.0})
    p = contiguous_slots(n_exp, n_gpus, gpus_per_node=hw.gpus_per_node,
                         gpus_per_nic=hw.gpus_per_nic)
    src = np.repeat(np.arange(n_gpus, dtype=np.int64), tokens_per_gpu)
    ids = sample_routing(np.ones(n_exp), src.size, k, seed=seed)
    lr = decode_layer(p, decode_traffic(p, route_to_slots(p, ids, src), src, "direct"),
                      transport, bare)
    return lr.dispatch_end, lr.layer_time - lr.dispatch_end


# --------------------------------------------------------------------------------------------
# inverse problems: the batch, and the relay cost, that match a measured time

#: The relay's own costs that :func:`relay_cost_for` can solve for (keywords of
#: :func:`simulate_decode`).
RELAY_COSTS = ("relay_copy", "relay_sync")
#: Most :func:`simulate_decode` runs one :func:`relay_cost_for` makes: 2 to start, up to 20 to
#: bracket the root, the rest to close in on it; the work budget is checked for a typical solve
#: (notebook 05's take about 10 runs).
_MAX_SOLVER_RUNS, _TYPICAL_SOLVER_RUNS = 64, 16
_RUN_KEYS = ("placement", "swaps", "mode", "overlap", "transport", "relay_copy", "relay_sync")


def _median_of(setup, run, what, n_steps, seed, start) -> float:
    r = simulate_decode(setup, n_steps=n_steps, seed=seed, start=start, **run)
    return r.median(what)


def _inverse_args(target, setup, what, n_steps, seed, start, run) -> dict:
    check_real("target", target, lo=0.0, lo_open=True, hi=1e3, unit="s")
    check_instance("setup", setup, DecodeSetup)
    check_choice("what", what, ("layer_time", "exposed_comm"))
    check_int("n_steps", n_steps, lo=1, hi=2000)
    check_int("seed", seed, lo=0)
    check_int("start", start, lo=0, hi=100_000)
    bad = sorted(set(run) - set(_RUN_KEYS))
    if bad:
        raise ValueError(f"the run's keywords must be among {_RUN_KEYS}; got {bad}")
    return dict(run)


def matching_batch(target: float, setup: DecodeSetup = DecodeSetup(), *, lo: int = 1,
                   hi: int = 256, what: str = "exposed_comm", n_steps: int = 60, seed: int = 1,
                   start: int = 0, **run) -> tuple[int, float]:
    """The tokens per GPU (``lo`` .. ``hi``) at which the median ``what`` (``"exposed_comm"`` or
    ``"layer_time"``) of :func:`simulate_decode` on ``setup`` with the keywords ``run`` comes
    closest to ``target`` (s), and that median (s). A bisection on the batch: it assumes the time
    grows with the batch, as it does for every rung of notebook 05's ablation. ``hi`` at most
    4096.

    >>> small = DecodeSetup(n_hosts=2, n_experts=16, n_slots=16, k=4)
    >>> b, t = matching_batch(100e-6, small, hi=64, n_steps=3, placement="contiguous")
    >>> b, round(t * 1e6, 1)
    (10, 98.8)
    """
    run = _inverse_args(target, setup, what, n_steps, seed, start, run)
    lo = check_int("lo", lo, lo=1, hi=4096)
    hi = check_int("hi", hi, lo=lo, hi=4096)
    runs = 2 + max(1, hi - lo).bit_length()
    check_steps("hi", hi, runs * _run_steps(replace(setup, tokens_per_gpu=hi), n_steps, start),
                f"up to {runs} runs of {n_steps:,} steps at up to {hi:,} tokens per GPU")
    cache: dict[int, float] = {}

    def at(b):
        if b not in cache:
            cache[b] = _median_of(replace(setup, tokens_per_gpu=b), run, what, n_steps, seed,
                                  start)
        return cache[b]

    a, z = lo, hi
    while z - a > 1:  # the largest batch below the target, and the next one
        m = (a + z) // 2
        if at(m) < target:
            a = m
        else:
            z = m
    best = min((a, z), key=lambda b: (abs(at(b) - target), b))
    return best, at(best)


def relay_cost_for(target: float, setup: DecodeSetup = DecodeSetup(), *,
                   cost: str = "relay_sync", what: str = "exposed_comm", n_steps: int = 60,
                   seed: int = 1, start: int = 0, tol: float = 1e-8, **run) -> float:
    """The relay cost (s) that makes the median ``what`` of :func:`simulate_decode` on ``setup``
    with the keywords ``run`` (``mode="relay"``) equal ``target`` (s): the inverse problem
    behind a measured time. ``cost``: ``"relay_copy"`` (per forwarded copy) or ``"relay_sync"``
    (per arrival → fan-out), the other one as ``run`` gives it (0 by default). Solved by a
    bracketed secant (Illinois) search to ``tol`` (s, on the median). Raises ValueError when the
    free relay is already slower than ``target``, or when a cost of 1 s stays below it.

    >>> small = DecodeSetup(n_hosts=2, n_experts=16, n_slots=16, k=4, tokens_per_gpu=4)
    >>> c = relay_cost_for(80e-6, small, n_steps=3, mode="relay", placement="NIC-aware")
    >>> r = simulate_decode(small, n_steps=3, seed=1, mode="relay", placement="NIC-aware",
    ...                     relay_sync=c)
    >>> round(r.median("exposed_comm") * 1e6, 2)
    80.0
    """
    run = _inverse_args(target, setup, what, n_steps, seed, start, run)
    cost = check_choice("cost", cost, RELAY_COSTS)
    tol = check_real("tol", tol, lo=1e-12, hi=1e-3, unit="s")
    if run.get("mode") != "relay":
        raise ValueError(f"the run must use mode='relay' (a relay cost needs a relay); got "
                         f"mode={run.get('mode', 'direct')!r}")
    check_steps("n_steps", n_steps, _TYPICAL_SOLVER_RUNS * _run_steps(setup, n_steps, start),
                f"about {_TYPICAL_SOLVER_RUNS} runs of {n_steps:,} steps")

    def gap(c):
        return _median_of(setup, {**run, cost: c}, what, n_steps, seed, start) - target

    a, fa = 0.0, gap(0.0)
    if fa > 0:
        raise ValueError(f"target must be above the free relay's median {what} "
                         f"({fa + target:.6g} s); got {target:.6g} s")
    if abs(fa) <= tol:
        return 0.0
    z = 1e-6
    fz = gap(z)
    while fz < 0:  # bracket the root, doubling
        a, fa = z, fz
        z *= 2.0
        if z > 1.0:
            raise ValueError(f"target must be reachable with a {cost} of at most 1 s; got "
                             f"{target:.6g} s")
        fz = gap(z)
    side = 0
    c = z
    for _ in range(_MAX_SOLVER_RUNS - 22):  # Illinois: a secant step that keeps the bracket
        c = z - fz * (z - a) / (fz - fa) if fz != fa else 0.5 * (a + z)
        fc = gap(c)
        if abs(fc) <= tol or z - a <= 1e-13:
            return float(c)
        if fc > 0:
            z, fz = c, fc
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa = c, fc
            if side == -1:
                fz *= 0.5
            side = -1
    return float(c)
