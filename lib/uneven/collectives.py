"""Collectives as traffic on a topology: time, and the bytes on every link.

Each function builds the transfers of a collective, hands them to the link-load engine phase by
phase, and returns a :class:`CollectiveResult`. The model is the bottleneck model of
:mod:`uneven.engines.linkload`: a phase ends when its most loaded link drains, plus its longest
path latency; a ring's steps are identical phases run one after the other.

Sizes follow nccl-tests: ``nbytes`` is the *total* buffer S (the all-gathered output, the
reduce-scattered input, the all-reduced buffer, the all-to-all buffer of one rank), so
``algbw = S / t`` and ``busbw = algbw * factor`` are directly comparable with nccl-tests output.

>>> from uneven.topology import cluster
>>> flat = cluster(1, gpus_per_node=8, nvlink_bw=100e9, nic_bw=1e9, nvlink_latency=5e-6)
>>> r = ring_all_reduce(flat, 1e9)
>>> round(r.time, 6)      # 2(n-1) alpha + 2(n-1)/n S/B = 14 x 5 us + 1.75 x 10 ms
0.01757
>>> round(r.busbw / 1e9, 2)
99.6
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._fields import Checked, choice, instance, integer, real
from ._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_choice,
    check_instance,
    check_int,
    check_real,
)
from .engines.linkload import (
    LinkLoads,
    link_loads,
    link_loads_kron,
    link_loads_matrix,
)
from .limits import check_bytes
from .topology import Topology

__all__ = [
    "CollectiveResult",
    "send_recv",
    "ring_all_gather",
    "ring_reduce_scatter",
    "ring_all_reduce",
    "all_to_all",
    "algbw",
    "busbw",
    "BUSBW_FACTOR",
    "alpha_beta_time",
    "fluid_transfers",
]

# nccl-tests (doc/PERFORMANCE.md): busbw = algbw * factor(n).
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


@dataclass(frozen=True)
class CollectiveResult(Checked):
    """Outcome of one collective.

    ``time`` (s) is the whole collective; ``loads`` holds the bytes every link carried over all
    its steps; ``steps`` phases of ``step_time`` seconds each (one phase for all-to-all).
    Every field is checked when the result is made.
    """

    op: str = choice(lambda: tuple(BUSBW_FACTOR))
    n_ranks: int = integer(lo=1)
    nbytes: float = real(lo=0.0, unit="bytes")
    time: float = real(lo=0.0, unit="s")
    steps: int = integer(lo=0)
    step_time: float = real(lo=0.0, unit="s")
    loads: LinkLoads = instance(LinkLoads, "from uneven.engines.linkload", repr=False)

    @property
    def algbw(self) -> float:
        """nccl-tests' algorithm bandwidth S / t (bytes/s); 0.0 when nothing moves (S = 0) and
        ``inf`` for bytes that take no time (one rank: nothing crosses a link)."""
        if self.nbytes == 0.0:
            return 0.0
        with np.errstate(over="ignore", divide="ignore"):
            return float(np.float64(self.nbytes) / self.time)

    @property
    def busbw(self) -> float:
        """nccl-tests' bus bandwidth (bytes/s), comparable across rank counts (0.0 when S = 0,
        ``inf`` for bytes that take no time, as for :attr:`algbw`)."""
        factor = BUSBW_FACTOR[self.op](self.n_ranks)
        if factor == 0.0:  # one rank: no bus traffic at all
            return 0.0
        with np.errstate(over="ignore"):
            return float(np.float64(self.algbw) * factor)


def algbw(nbytes: float, seconds: float) -> float:
    """Algorithm bandwidth S / t in bytes/s, as nccl-tests defines it.

    >>> algbw(1e9, 0.01) / 1e9
    100.0
    """
    nbytes = check_real("nbytes", nbytes, lo=0.0, unit="bytes")
    seconds = check_real("seconds", seconds, lo=0.0, lo_open=True, unit="s")
    return _finite("nbytes / seconds", nbytes / seconds)


def _finite(what: str, value: float) -> float:
    """``value`` if it is a finite float; else a ``ValueError`` naming the inputs of ``what``."""
    if not math.isfinite(value):
        raise ValueError(f"{what} is beyond the range of a float (got {value}); use inputs of "
                         "sensible magnitude")
    return value


def busbw(op: str, n: int, nbytes: float, seconds: float) -> float:
    """Bus bandwidth (bytes/s) = algbw x the nccl-tests factor of ``op`` for ``n`` ranks.

    >>> busbw("all_reduce", 8, 1e9, 0.01) / 1e9
    175.0
    """
    op = check_choice("op", op, BUSBW_FACTOR)
    n = check_int("n", n, lo=1)
    return _finite("nbytes / seconds", algbw(nbytes, seconds) * BUSBW_FACTOR[op](n))


def alpha_beta_time(op: str, n: int, nbytes: float, alpha: float, bandwidth: float) -> float:
    """Textbook ring cost (Thakur, Rabenseifner and Gropp 2005) with S = ``nbytes`` total.

    all_gather / reduce_scatter / all_to_all (pairwise): (n-1) alpha + (n-1)/n S / B;
    all_reduce: 2(n-1) alpha + 2(n-1)/n S / B. ``alpha`` in s, ``bandwidth`` in bytes/s.

    >>> round(alpha_beta_time("all_reduce", 4, 4e6, 1e-6, 1e9) * 1e6, 1)
    6006.0
    """
    op = check_choice("op", op, ("all_gather", "reduce_scatter", "all_to_all", "all_reduce"))
    n = check_int("n", n, lo=1)
    nbytes = check_real("nbytes", nbytes, lo=0.0, unit="bytes")
    alpha = check_real("alpha", alpha, lo=0.0, unit="s")
    bandwidth = check_real("bandwidth", bandwidth, lo=0.0, lo_open=True, unit="bytes/s")
    k = 2 if op == "all_reduce" else 1
    with np.errstate(over="ignore"):
        t = float(np.float64(k * (n - 1)) * alpha + k * (n - 1) / n * nbytes / bandwidth)
    return _finite("the time of n, nbytes, alpha and bandwidth", t)


def _ranks(topo: Topology, ranks) -> np.ndarray:
    if ranks is None:
        return np.arange(topo.n_gpus, dtype=np.int64)
    r = as_int_array("ranks", ranks, ndim=1, lo=0, hi=topo.n_gpus - 1)
    if r.size < 1 or np.unique(r).size != r.size:
        raise ValueError(f"ranks must be a non-empty list of distinct GPU ids; got {_show(ranks)}")
    return r


def send_recv(topo: Topology, src: int, dst: int, nbytes: float) -> CollectiveResult:
    """One point-to-point transfer of ``nbytes`` bytes from ``src`` to ``dst``.

    >>> from uneven.topology import h800_cluster
    >>> round(send_recv(h800_cluster(2), 0, 8, 1e6).time * 1e6, 1)  # 20 us + 2.8 us latency
    22.8
    """
    topo = check_instance("topo", topo, Topology, "from uneven.topology")
    nbytes = check_real("nbytes", nbytes, lo=0.0, unit="bytes")
    src = check_int("src", src, lo=0, hi=topo.n_gpus - 1)
    dst = check_int("dst", dst, lo=0, hi=topo.n_gpus - 1)
    loads = link_loads(topo, [src], [dst], [nbytes])
    t = loads.time()
    return CollectiveResult("send_recv", 2, nbytes, t, 1, t, loads)


def _ring(topo, nbytes, ranks, op, steps_per_rank):
    topo = check_instance("topo", topo, Topology, "from uneven.topology")
    nbytes = check_real("nbytes", nbytes, lo=0.0, unit="bytes")
    r = _ranks(topo, ranks)
    n = r.size
    steps = steps_per_rank * (n - 1)
    if n == 1:
        empty = link_loads(topo, [], [], [])
        return CollectiveResult(op, 1, nbytes, 0.0, 0, 0.0, empty)
    # Every step of a ring sends one chunk S/n from each rank to the next one; all steps load the
    # same links, so one phase times the step count is exact in this model.
    step = link_loads(topo, r, np.roll(r, -1), np.full(n, nbytes / n))
    step_time = step.time()
    _finite("nbytes times the step count",
            float(step.bytes.max(initial=0.0)) * steps + steps * step_time)
    total = LinkLoads(topo, step.bytes * steps, step.max_latency)
    return CollectiveResult(op, n, nbytes, steps * step_time, steps, step_time, total)


def ring_all_gather(topo: Topology, nbytes: float, ranks=None) -> CollectiveResult:
    """Ring all-gather of an ``nbytes`` output buffer over ``ranks`` (default: every GPU)."""
    return _ring(topo, nbytes, ranks, "all_gather", 1)


def ring_reduce_scatter(topo: Topology, nbytes: float, ranks=None) -> CollectiveResult:
    """Ring reduce-scatter of an ``nbytes`` input buffer (reduction cost not modelled)."""
    return _ring(topo, nbytes, ranks, "reduce_scatter", 1)


def ring_all_reduce(topo: Topology, nbytes: float, ranks=None) -> CollectiveResult:
    """Ring all-reduce = reduce-scatter then all-gather: 2(n-1) steps of S/n bytes."""
    return _ring(topo, nbytes, ranks, "all_reduce", 2)


def all_to_all(
    topo: Topology,
    nbytes_per_pair: float | None = None,
    *,
    traffic=None,
    node_weights=None,
    block=None,
) -> CollectiveResult:
    """All-to-all over every GPU of ``topo`` as one synchronous phase.

    Give exactly one of: ``nbytes_per_pair`` (uniform: every GPU sends that many bytes to every
    other GPU), ``traffic`` (an ``n_gpus x n_gpus`` byte matrix), or ``node_weights`` with
    ``block`` (see :func:`uneven.engines.linkload.link_loads_kron`). Size: the uniform and
    node-weighted forms cost ``n_nodes^2`` (about 16,000 nodes within the default 2 GiB budget
    of :mod:`uneven.limits`), a traffic matrix ``n_gpus^2``.

    >>> from uneven.topology import h800_cluster
    >>> r = all_to_all(h800_cluster(2), 1e6)
    >>> r.loads.bottleneck()[1][:6], round(r.time * 1e6, 1)
    ('nic_up', 166.1)
    """
    topo = check_instance("topo", topo, Topology, "from uneven.topology")
    given = [nbytes_per_pair is not None, traffic is not None, node_weights is not None]
    if sum(given) != 1 or (node_weights is not None) != (block is not None):
        raise ValueError(
            "all_to_all needs exactly one of nbytes_per_pair, traffic, or node_weights with block"
        )
    n = topo.n_gpus
    g = topo.gpus_per_node
    if nbytes_per_pair is not None:
        s = check_real("nbytes_per_pair", nbytes_per_pair, lo=0.0, unit="bytes")
        nn = topo.n_nodes
        check_bytes("topo", topo.name, 16.0 * (nn * nn + g * g), f"an {nn} x {nn} node weight "
                    "matrix (link_loads_kron)")
        loads = link_loads_kron(topo, np.ones((nn, nn)), np.full((g, g), s))
        total_per_rank = _finite("nbytes_per_pair x the GPU count", s * n)
    elif traffic is not None:
        T = as_float_array("traffic", traffic, shape=(n, n), lo=0.0, unit="bytes")
        loads = link_loads_matrix(topo, T)
        total_per_rank = float(T.sum(axis=1).max()) * n / max(n - 1, 1)
    else:
        loads = link_loads_kron(topo, node_weights, block)
        W = np.asarray(node_weights, dtype=float)
        B = np.asarray(block, dtype=float)
        total_per_rank = float(W.sum(axis=1).max() * B.sum(axis=1).max())
    t = loads.time()
    # nccl-tests counts the all-to-all buffer as n chunks including the one a rank keeps.
    return CollectiveResult("all_to_all", n, total_per_rank, t, 1, t, loads)


def fluid_transfers(topo: Topology, src, dst, nbytes, *, arrival=None, quantum: float = 0.0,
                    efficiency=None):
    """Transfers that start at different times, shared max-min fairly (the fluid engine).

    ``src``, ``dst`` are GPU ids, ``nbytes`` bytes, ``arrival`` start times (s, default 0). Each
    transfer's finish time includes its route's latency. ``efficiency`` (a number or a dict per
    link kind) scales link capacities. Returns :class:`uneven.engines.fluid.FluidResult`. Sizes
    as in :func:`uneven.engines.fluid.simulate_fluid`, each at most 1e200 bytes.

    >>> from uneven.topology import h800_cluster
    >>> r = fluid_transfers(h800_cluster(2), [0, 1], [8, 8], [1e6, 1e6])   # 2-to-1 incast
    >>> round(r.makespan * 1e6, 2)     # 2 MB into one 50 GB/s NIC, + PXN and NIC latency
    46.13
    """
    from .engines.fluid import simulate_fluid

    topo = check_instance("topo", topo, Topology, "from uneven.topology")
    quantum = check_real("quantum", quantum, lo=0.0)
    ptr, links = topo.paths(src, dst)
    # Bounded far below the engine's range check (largest size over slowest rate), so that an
    # absurd size is refused here under its own name.
    nbytes = as_float_array("nbytes", nbytes, ndim=1, lo=0.0, lo_open=True, hi=1e200,
                            unit="bytes")
    if nbytes.size != ptr.size - 1:
        raise ValueError(f"nbytes must have one entry per transfer ({ptr.size - 1}); "
                         f"got {nbytes.size}")
    lat = np.add.reduceat(np.append(topo.latency[links], 0.0), ptr[:-1]) if links.size else (
        np.zeros(nbytes.size))
    lat = np.where(ptr[1:] > ptr[:-1], lat, 0.0)
    cap = topo.scaled_capacity(efficiency)
    return simulate_fluid(ptr, links, cap, nbytes, arrival=arrival, latency=lat, quantum=quantum)
