"""Expert-parallel dispatch and combine as GPU-to-GPU byte matrices (no topology needed).

Input: each token's chosen experts ``expert_ids [T, k]``, the GPU holding each token
``src_gpu [T]``, the GPU holding each expert ``expert_gpu [n_experts]``, and ``gpus_per_node``
(GPU ``g`` sits on node ``g // gpus_per_node`` at local index ``g % gpus_per_node``). Output: two
``n_gpus × n_gpus`` float64 matrices of bytes, ``network[src, dst]`` (scale-out sends, e.g. IB)
and ``nvlink[src, dst]`` (intra-node sends), which a link-load engine can turn into time.

Two dispatch modes:

``"direct"`` (DeepEP low-latency kernels): one copy to every distinct GPU the token's experts live
on. A token whose two experts share a GPU sends one copy there (the GPU runs both experts on
it). Off-node targets go over the network, same-node targets over NVLink, the token's own GPU
costs nothing.

``"dedup"`` (DeepEP normal kernels, DeepSeek-V3 training): one network copy per destination
*node*, sent to the GPU with the *same local index* as the source (the forwarder, so traffic
stays on one NIC rail/plane); the forwarder then copies it over NVLink to each other target GPU
on its node. Targets on the source's own node get NVLink copies straight from the source.

Combine is the mirror image: the same copies travel backwards (the matrices are transposed) with
the combine payload; in dedup mode the forwarder sums its node's expert outputs before its single
network send, which is why one network copy per node suffices in both directions.

>>> import numpy as np
>>> ids = np.array([[0, 1, 2, 3]])           # 4 experts, one per GPU, 2 GPUs per node
>>> t = ep_dispatch_traffic(ids, [0], [0, 1, 2, 3], 2, 100.0, mode="dedup")
>>> t.network.sum(), t.nvlink.sum()          # 1 copy to node 1 (to GPU 2), then 2 -> 3, 0 -> 1
(np.float64(100.0), np.float64(200.0))
>>> d = ep_dispatch_traffic(ids, [0], [0, 1, 2, 3], 2, 100.0, mode="direct")
>>> d.network.sum(), d.nvlink.sum()          # 0 -> 2 and 0 -> 3 on the network, 0 -> 1 on NVLink
(np.float64(200.0), np.float64(100.0))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from numba import carray

from ._jit import njit
from ._validate import (
    _show,
    as_int_array,
    check_choice,
    check_int,
    check_real,
    frozen_array,
)
from .limits import check_bytes
from .schedulers.experts import _gen_top2, _route_8x32, _route_generated, _stack_ptr

__all__ = [
    "EpTraffic",
    "DeepEpBytes",
    "ep_dispatch_traffic",
    "ep_combine_traffic",
    "deepep_logical_bytes",
    "local_buffer_writes",
    "dispatch_bytes_per_token",
    "combine_bytes_per_token",
]

MODES = ("dedup", "direct")


@dataclass(frozen=True, eq=False)
class EpTraffic:
    """Bytes moved by one EP dispatch or combine.

    ``network``: float64 ``[n_gpus, n_gpus]``, bytes sent over the scale-out network, src→dst GPU.
    ``nvlink``: float64 ``[n_gpus, n_gpus]``, bytes sent inside a node, src→dst GPU.
    ``nodes_per_token``: int64 ``[T]``, distinct nodes holding the token's experts (own node
    included when it holds one); ``remote_nodes_per_token``: the same without the own node;
    ``gpus_per_token``: int64 ``[T]``, distinct GPUs holding the token's experts.
    ``mode`` "dedup" or "direct"; ``direction`` "dispatch" or "combine"; ``bytes_per_copy`` in
    bytes; ``gpus_per_node``. Every field is checked when made (square matrices of finite bytes
    >= 0 over whole nodes, one count per token); arrays are read-only.
    """

    network: np.ndarray
    nvlink: np.ndarray
    nodes_per_token: np.ndarray
    remote_nodes_per_token: np.ndarray
    gpus_per_token: np.ndarray
    mode: str
    direction: str
    gpus_per_node: int
    bytes_per_copy: float

    def __post_init__(self):
        put = object.__setattr__
        net = frozen_array("network", self.network, ndim=2, lo=0.0)
        n = net.shape[0]
        if net.shape != (n, n):
            raise ValueError(f"network must be a square n_gpus x n_gpus matrix; got {net.shape}")
        put(self, "network", net)
        put(self, "nvlink", frozen_array("nvlink", self.nvlink, shape=(n, n), lo=0.0))
        nodes = frozen_array("nodes_per_token", self.nodes_per_token, dtype="int", ndim=1, lo=0)
        put(self, "nodes_per_token", nodes)
        for name in ("remote_nodes_per_token", "gpus_per_token"):
            put(self, name, frozen_array(name, getattr(self, name), dtype="int",
                                         shape=nodes.shape, lo=0))
        put(self, "mode", check_choice("mode", self.mode, MODES))
        put(self, "direction", check_choice("direction", self.direction,
                                            ("dispatch", "combine")))
        g = check_int("gpus_per_node", self.gpus_per_node, lo=1)
        if n % g:
            raise ValueError(f"gpus_per_node must divide the GPU count {n}; got {g}")
        put(self, "gpus_per_node", g)
        put(self, "bytes_per_copy", check_real("bytes_per_copy", self.bytes_per_copy, lo=0.0,
                                               unit="bytes"))

    @property
    def n_gpus(self) -> int:
        """Number of GPUs (rows of the matrices)."""
        return self.network.shape[0]

    @property
    def network_bytes(self) -> float:
        """Total bytes on the scale-out network (bytes)."""
        return float(self.network.sum())

    @property
    def nvlink_bytes(self) -> float:
        """Total bytes on NVLink (bytes)."""
        return float(self.nvlink.sum())


@dataclass(frozen=True, eq=False)
class DeepEpBytes:
    """DeepEP's "logical" RDMA bytes beside the bytes that really cross the network.

    ``logical``: float64 ``[n_gpus]`` per source GPU, Σ over its tokens of (distinct destination
    nodes, the sender's own node included when targeted) × bytes per copy: what DeepEP's internode
    test divides by time to print "RDMA GB/s". ``network``: float64 ``[n_gpus]``, the same without
    the own node: bytes that leave through the NIC. Both in bytes.
    """

    logical: np.ndarray
    network: np.ndarray

    def __post_init__(self):
        logical = frozen_array("logical", self.logical, ndim=1, lo=0.0)
        object.__setattr__(self, "logical", logical)
        object.__setattr__(self, "network", frozen_array("network", self.network,
                                                         shape=logical.shape, lo=0.0))

    @property
    def logical_total(self) -> float:
        """Σ of ``logical`` (bytes)."""
        return float(self.logical.sum())

    @property
    def network_total(self) -> float:
        """Σ of ``network`` (bytes)."""
        return float(self.network.sum())

    @property
    def ratio(self) -> float:
        """logical / network (unitless); ``inf`` if nothing crosses the network."""
        net = self.network_total
        return self.logical_total / net if net > 0 else math.inf


# --------------------------------------------------------------------------------------------
# kernel


@njit
def _ep_kernel(
    expert_ids, src_gpu, expert_gpu, expert_node, node_first_gpu, gpu_node, gpu_local, dedup,
    network, nvlink, nodes_out, remote_out, gpus_out, gpu_stamp, node_stamp, gbuf, nbuf,
):
    """Add copy counts (not bytes: the wrapper scales once) into ``network`` and ``nvlink``.
    Returns -1, or the first token whose expert id is out of range (then stops).

    Speed notes: ``gpu_stamp[g] == t`` marks GPU ``g`` as seen for token ``t`` (likewise per
    node), which deduplicates in O(k) without clearing between tokens; stamps are written
    unconditionally and counters advance by the comparison, so no branch mispredicts. Node and
    local index come from lookup tables (an integer division per copy costs more than the rest).
    The forwarder of node ``nd`` is ``node_first_gpu[nd] + s_local``, which is ``s`` itself on
    the source's own node: so one formula covers both NVLink cases, and the extra zero-byte
    writes (``+= False``) stand in for branches.
    """
    n_tokens, k = expert_ids.shape
    n_experts = expert_gpu.shape[0]
    for t in range(n_tokens):
        s = src_gpu[t]
        s_node = gpu_node[s]
        s_local = gpu_local[s]
        n_g = 0
        n_n = 0
        own_node = 0
        for j in range(k):
            e = expert_ids[t, j]
            if e < 0 or e >= n_experts:
                return t  # bad input: the wrapper raises
            g = expert_gpu[e]
            new_gpu = gpu_stamp[g] != t
            gpu_stamp[g] = t
            gbuf[n_g] = g
            n_g += new_gpu
            nd = expert_node[e]
            new_node = node_stamp[nd] != t
            node_stamp[nd] = t
            nbuf[n_n] = nd
            n_n += new_node
            own_node += new_node & (nd == s_node)
        nodes_out[t] = n_n
        remote_out[t] = n_n - own_node
        gpus_out[t] = n_g
        if dedup:
            for q in range(n_n):  # one network copy per remote node, to its forwarder
                nd = nbuf[q]
                network[s, node_first_gpu[nd] + s_local] += nd != s_node
            for q in range(n_g):  # forwarder (or the source itself) -> each other target GPU
                g = gbuf[q]
                f = node_first_gpu[gpu_node[g]] + s_local
                nvlink[f, g] += g != f
        else:
            for q in range(n_g):
                g = gbuf[q]
                remote = gpu_node[g] != s_node
                network[s, g] += remote
                nvlink[s, g] += (not remote) & (g != s)
    return -1


def _reference_ep(expert_ids, src_gpu, expert_gpu, gpus_per_node, dedup, n_gpus):
    """Pure-Python dispatch copy counts, written with sets (tests only)."""
    network = np.zeros((n_gpus, n_gpus))
    nvlink = np.zeros((n_gpus, n_gpus))
    nodes, remote, gpus = [], [], []
    for t in range(expert_ids.shape[0]):
        s = int(src_gpu[t])
        s_node, s_local = divmod(s, gpus_per_node)
        targets = {int(expert_gpu[e]) for e in expert_ids[t]}
        target_nodes = {g // gpus_per_node for g in targets}
        nodes.append(len(target_nodes))
        remote.append(len(target_nodes - {s_node}))
        gpus.append(len(targets))
        for g in targets:
            same_node = g // gpus_per_node == s_node
            if same_node:
                if g != s:
                    nvlink[s, g] += 1
            elif not dedup:
                network[s, g] += 1
            else:
                forwarder = (g // gpus_per_node) * gpus_per_node + s_local
                if g != forwarder:
                    nvlink[forwarder, g] += 1
        if dedup:
            for nd in target_nodes - {s_node}:
                network[s, nd * gpus_per_node + s_local] += 1
    as_arr = lambda x: np.array(x, dtype=np.int64)  # noqa: E731
    return network, nvlink, as_arr(nodes), as_arr(remote), as_arr(gpus)


# --------------------------------------------------------------------------------------------
# public API


def _checked_inputs(expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus):
    gpus_per_node = check_int("gpus_per_node", gpus_per_node, lo=1)
    expert_gpu = as_int_array("expert_gpu", expert_gpu, ndim=1, lo=0)
    n_experts = expert_gpu.shape[0]
    if n_experts == 0:
        raise ValueError("expert_gpu must place at least one expert; got an empty array")
    # An int64 C-contiguous id matrix is used as is (at 67M selections a checked copy costs a
    # third of the aggregation); the kernel checks the range and the wrapper then raises.
    if not (
        isinstance(expert_ids, np.ndarray)
        and expert_ids.dtype == np.int64
        and expert_ids.ndim == 2
        and expert_ids.flags.c_contiguous
    ):
        expert_ids = as_int_array("expert_ids", expert_ids, ndim=2, lo=0, hi=n_experts - 1)
    src_gpu = as_int_array("src_gpu", src_gpu, shape=(expert_ids.shape[0],), lo=0)
    highest = int(expert_gpu.max())
    if src_gpu.size:
        highest = max(highest, int(src_gpu.max()))
    if n_gpus is None:  # the fewest whole nodes that hold every GPU mentioned
        n_gpus = (highest // gpus_per_node + 1) * gpus_per_node
        name, value = "expert_gpu", f"GPU ids up to {highest}"
    else:
        n_gpus = check_int("n_gpus", n_gpus, lo=highest + 1)
        if n_gpus % gpus_per_node:
            raise ValueError(
                f"n_gpus must be a multiple of gpus_per_node ({gpus_per_node}); got {n_gpus}"
            )
        name, value = "n_gpus", n_gpus
    # The dense byte matrices, their transposes for combine, and a sum of the two.
    check_bytes(name, value, 8.0 * 5 * n_gpus * n_gpus,
                f"dense {n_gpus} x {n_gpus} network and NVLink byte matrices")
    return expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus


def _check_scaled(copies, bytes_per_copy) -> None:
    """Every byte total is at most (all copies) x ``bytes_per_copy``: it must be finite."""
    with np.errstate(over="ignore"):
        total = (float(copies) + 1.0) * bytes_per_copy
    if not np.isfinite(total):
        raise ValueError(f"bytes_per_copy={bytes_per_copy:.3g} times the number of copies is "
                         "beyond the range of a float; use a byte count of sensible magnitude")


def _dispatch_counts(expert_ids, src_gpu, expert_gpu, gpus_per_node, mode, n_gpus):
    mode = check_choice("mode", mode, MODES)
    expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus = _checked_inputs(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus
    )
    n_tokens, k = expert_ids.shape
    network = np.zeros((n_gpus, n_gpus))
    nvlink = np.zeros((n_gpus, n_gpus))
    nodes = np.empty(n_tokens, dtype=np.int64)
    remote = np.empty(n_tokens, dtype=np.int64)
    gpus = np.empty(n_tokens, dtype=np.int64)
    gpu_ids = np.arange(n_gpus, dtype=np.int64)
    bad = _ep_kernel(
        expert_ids, src_gpu, expert_gpu, expert_gpu // gpus_per_node,
        np.arange(0, n_gpus, gpus_per_node, dtype=np.int64),
        gpu_ids // gpus_per_node, gpu_ids % gpus_per_node, mode == "dedup",
        network, nvlink, nodes, remote, gpus,
        np.full(n_gpus, -1, dtype=np.int64), np.full(n_gpus // gpus_per_node, -1, dtype=np.int64),
        np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64),
    )
    if bad >= 0:  # let the shared validator word the error
        n_experts = expert_gpu.shape[0]
        as_int_array("expert_ids", expert_ids[bad:bad + 1], ndim=2, lo=0, hi=n_experts - 1)
    return network, nvlink, nodes, remote, gpus, mode, gpus_per_node, src_gpu


def ep_dispatch_traffic(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    mode: str = "dedup", n_gpus: int | None = None,
) -> EpTraffic:
    """Bytes of one EP dispatch (token copies from their GPU to their experts' GPUs).

    ``expert_ids`` int ``[T, k]``; ``src_gpu`` int ``[T]``; ``expert_gpu`` int ``[n_experts]``;
    ``bytes_per_copy``: bytes of one token copy (see :func:`dispatch_bytes_per_token`);
    ``mode`` "dedup" (one network copy per node, then NVLink forwarding) or "direct";
    ``n_gpus`` defaults to the fewest whole nodes holding every GPU mentioned.
    Returns :class:`EpTraffic` with byte matrices (bytes) and per-token counts. Size: the dense
    matrices cost about ``40 n_gpus^2`` bytes, within the memory budget of :mod:`uneven.limits`
    (2 GiB by default: about 7,000 GPUs).

    >>> t = ep_dispatch_traffic([[0, 1]], [0], [2, 3], 2, 7392.0)
    >>> float(t.network[0, 2]), float(t.nvlink[2, 3]), t.remote_nodes_per_token.tolist()
    (7392.0, 7392.0, [1])
    """
    bytes_per_copy = check_real("bytes_per_copy", bytes_per_copy, lo=0.0, unit="bytes")
    network, nvlink, nodes, remote, gpus, mode, gpn, _ = _dispatch_counts(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, mode, n_gpus
    )
    _check_scaled(nodes.sum() + gpus.sum(), bytes_per_copy)
    network *= bytes_per_copy
    nvlink *= bytes_per_copy
    return EpTraffic(network, nvlink, nodes, remote, gpus, mode, "dispatch", gpn, bytes_per_copy)


def ep_combine_traffic(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    mode: str = "dedup", n_gpus: int | None = None,
) -> EpTraffic:
    """Bytes of one EP combine: the dispatch copies travel back (matrices transposed).

    Same arguments as :func:`ep_dispatch_traffic`; ``bytes_per_copy`` is the combine payload
    (see :func:`combine_bytes_per_token`). Each expert GPU returns one partial sum per token
    (its local experts added up); in dedup mode the forwarder adds its node's partials and sends
    one network copy, so combine network bytes = dispatch network bytes × (combine bytes /
    dispatch bytes), transposed.

    >>> t = ep_combine_traffic([[0, 1]], [0], [2, 3], 2, 14336.0)
    >>> float(t.network[2, 0]), float(t.nvlink[3, 2])
    (14336.0, 14336.0)
    """
    bytes_per_copy = check_real("bytes_per_copy", bytes_per_copy, lo=0.0, unit="bytes")
    network, nvlink, nodes, remote, gpus, mode, gpn, _ = _dispatch_counts(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, mode, n_gpus
    )
    _check_scaled(nodes.sum() + gpus.sum(), bytes_per_copy)
    network = np.ascontiguousarray(network.T) * bytes_per_copy
    nvlink = np.ascontiguousarray(nvlink.T) * bytes_per_copy
    return EpTraffic(network, nvlink, nodes, remote, gpus, mode, "combine", gpn, bytes_per_copy)


def deepep_logical_bytes(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    n_gpus: int | None = None,
) -> DeepEpBytes:
    """DeepEP's "RDMA bytes" per source GPU, beside the bytes that truly leave the node.

    DeepEP's internode test counts, per token, every distinct destination node *including the
    sender's own*; only the others cross the NIC. With experts spread uniformly over ``N`` nodes
    the ratio logical/true is ``N / (N − 1)``: 2 at EP16 (2 nodes of 8 GPUs), 8/7 at EP64.
    Arguments as :func:`ep_dispatch_traffic`; returns :class:`DeepEpBytes` (bytes).

    >>> b = deepep_logical_bytes([[0, 1]], [0], [0, 2], 2, 10.0)
    >>> b.logical_total, b.network_total, b.ratio
    (20.0, 10.0, 2.0)
    """
    bytes_per_copy = check_real("bytes_per_copy", bytes_per_copy, lo=0.0, unit="bytes")
    network, _, nodes, remote, _, _, _, src = _dispatch_counts(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, "dedup", n_gpus
    )
    _check_scaled(nodes.sum(), bytes_per_copy)
    n = network.shape[0]
    logical = np.bincount(src, weights=nodes.astype(np.float64), minlength=n) * bytes_per_copy
    true = np.bincount(src, weights=remote.astype(np.float64), minlength=n) * bytes_per_copy
    return DeepEpBytes(logical, true)


def local_buffer_writes(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    n_gpus: int | None = None,
) -> np.ndarray:
    """Bytes each GPU writes into its *own* NVLink receive buffer in DeepEP's dedup dispatch.

    DeepEP's normal kernels give every target GPU of a node one write into its NVLink receive
    buffer, made by that node's forwarder (the GPU with the token's local index; the source itself
    on its own node) — including the forwarder's write to itself, a local copy that crosses no
    link (``csrc/kernels/legacy/internode.cu`` at dd758caf: one forwarder warp per destination
    rank, itself included). :func:`ep_dispatch_traffic` leaves these out of its link bytes; this
    returns them per GPU (float64 ``[n_gpus]``, bytes), for models in which the forwarding work,
    not the link, sets the pace. Arguments as :func:`ep_dispatch_traffic`.

    >>> local_buffer_writes([[0, 1]], [0], [0, 2], 2, 10.0).tolist()  # GPU 0 and GPU 2 (index 0)
    [10.0, 0.0, 10.0, 0.0]
    """
    bytes_per_copy = check_real("bytes_per_copy", bytes_per_copy, lo=0.0, unit="bytes")
    ids, src, egpu, g, n = _checked_inputs(expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus)
    _check_scaled(ids.size, bytes_per_copy)
    if ids.size and (ids.min() < 0 or ids.max() >= egpu.size):
        raise ValueError(f"expert_ids entries must be in [0, {egpu.size - 1}]; got "
                         f"[{ids.min()}, {ids.max()}]")
    targets = np.sort(egpu[ids], axis=1)
    distinct = np.ones(targets.shape, dtype=bool)
    distinct[:, 1:] = targets[:, 1:] != targets[:, :-1]
    own_index = (targets % g) == (src % g)[:, None]
    hit = targets[distinct & own_index]
    return np.bincount(hit, minlength=n).astype(np.float64) * bytes_per_copy


# --------------------------------------------------------------------------------------------
# bytes per token copy

_BYTES_PER_VALUE = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}


def _bytes_per_token(hidden, dtype, name="dtype"):
    """Bytes of a token of ``hidden`` values in ``dtype`` (errors name ``name``, the caller's
    parameter)."""
    hidden = check_int("hidden", hidden, lo=1, hi=2**40)
    if isinstance(dtype, Real) and not isinstance(dtype, (bool, np.bool_)):
        per = check_real(name, dtype, lo=2.0**-10, hi=1e6, unit="bytes per value")
        return hidden * per
    choices = ("fp8", *_BYTES_PER_VALUE)
    if not isinstance(dtype, str) or dtype.lower() not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))} or a number of bytes per "
            f"value in [2**-10, 1e6]; got {_show(dtype)}"
        )
    dtype = dtype.lower()
    if dtype == "fp8":
        # 1 byte per value plus one float32 scale per block of 128 values (a last, partial
        # block still needs its scale): H·(1 + 4/128) when 128 divides H.
        return float(hidden + 4 * math.ceil(hidden / 128))
    return hidden * _BYTES_PER_VALUE[dtype]


def dispatch_bytes_per_token(hidden: int, dtype="fp8") -> float:
    """Bytes of one dispatched token copy with ``hidden`` values.

    ``dtype``: "fp8" (1 byte per value + a 4-byte scale per 128 values, DeepSeek-V3's dispatch),
    "bf16"/"fp16" (2 bytes), "fp32" (4 bytes), or a number of bytes per value.
    Metadata (indices, weights, padding) is not included.

    >>> dispatch_bytes_per_token(7168), dispatch_bytes_per_token(7168, "bf16")
    (7392.0, 14336.0)
    """
    return _bytes_per_token(hidden, dtype)


def combine_bytes_per_token(hidden: int, dtype="bf16") -> float:
    """Bytes of one combined (returned) token copy; same ``dtype`` choices as
    :func:`dispatch_bytes_per_token`, default "bf16" as in DeepSeek-V3.

    >>> combine_bytes_per_token(7168)
    14336.0
    """
    return _bytes_per_token(hidden, dtype)


# --------------------------------------------------------------------------------------------
# generate, route and aggregate in one pass (the DeepSeek-V3 step at cluster scale)


@njit(inline="always")
def _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, n_experts,
               n_groups, max_groups, k, w32t, skew_on, has_bias, biast, dedup, expert_gpu,
               expert_node, gpu_node, node_first_gpu, network, nvlink, load, stats, fast,
               scratch):
    """The body of :func:`_generated_step_kernel` on the scratch arrays it is given (a tuple:
    fewer than 30 arguments, or CPython passes them as ``*args``, which numba cannot inline). Each
    source GPU's copies are counted per destination GPU and node (``gpu_cnt``, ``node_cnt``)
    and written to the byte matrices once, after its tokens."""
    (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank, rank16,
     gpu_stamp, node_stamp, gpu_cnt, node_cnt) = scratch
    gsize = n_experts // n_groups
    n_pairs = (n_experts + 1) // 2
    n_nodes = ep // gpus_per_node
    n_nodes_sum = 0
    remote_sum = 0
    gpus_sum = 0
    stamp = 0
    for gpu in range(gpu_lo, gpu_hi):
        grp = gpu // ep - group_lo
        s = gpu % ep
        s_node = s // gpus_per_node
        s_local = s % gpus_per_node
        for g in range(ep):
            gpu_cnt[g] = 0
        for nd in range(n_nodes):
            node_cnt[nd] = 0
        t0 = gpu * tokens_per_gpu
        for t in range(t0, t0 + tokens_per_gpu):
            _gen_top2(key, t, n_pairs, gsize, n_groups, w32t, skew_on, has_bias, biast, buf, top,
                      sec, hi_s, lo_s)
            if fast:
                _route_8x32(buf, top, sec, max_groups, k, gscore, rank, kept, tops, cand,
                            cval, order, rank16)
            else:
                _route_generated(buf, top, sec, gsize, n_groups, max_groups, k, gscore, kept,
                                 tops, cand, cval, order, False)
            stamp += 1
            n_g = 0
            n_n = 0
            for j in range(k):
                e = order[j]
                load[grp, e] += 1
                g = expert_gpu[e]
                new_gpu = gpu_stamp[g] != stamp
                gpu_stamp[g] = stamp
                gpu_cnt[g] += new_gpu
                n_g += new_gpu
                nd = expert_node[e]
                new_node = node_stamp[nd] != stamp
                node_stamp[nd] = stamp
                node_cnt[nd] += new_node
                n_n += new_node
            n_nodes_sum += n_n
            remote_sum += n_n - (node_stamp[s_node] == stamp)
            gpus_sum += n_g
        if dedup:  # one network copy per remote node, then NVLink from its same-rank GPU
            for nd in range(n_nodes):
                if nd != s_node:
                    network[grp, s, node_first_gpu[nd] + s_local] += node_cnt[nd]
            for g in range(ep):
                f = node_first_gpu[gpu_node[g]] + s_local
                if g != f:
                    nvlink[grp, f, g] += gpu_cnt[g]
        else:
            for g in range(ep):
                if gpu_node[g] != s_node:
                    network[grp, s, g] += gpu_cnt[g]
                elif g != s:
                    nvlink[grp, s, g] += gpu_cnt[g]
    stats[0] += n_nodes_sum
    stats[1] += remote_sum
    stats[2] += gpus_sum


@njit(nogil=True)
def _step_kernel_8x32(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                      max_groups, k, w32t, skew_on, has_bias, biast, dedup, expert_gpu,
                      expert_node, gpu_node, node_first_gpu, network, nvlink, load, stats):
    """:func:`_generated_step_kernel` for 256 experts in 8 groups, its scratch on the stack."""
    dt = biast.dtype
    buf = carray(_stack_ptr(256, dt), 256)
    top = carray(_stack_ptr(8, dt), 8)
    sec = carray(_stack_ptr(8, dt), 8)
    hi_s = carray(_stack_ptr(128, dt), 128)
    lo_s = carray(_stack_ptr(128, dt), 128)
    gscore = carray(_stack_ptr(8, np.float64), 8)
    kept = carray(_stack_ptr(8, np.int64), 8)
    tops = carray(_stack_ptr(256, dt), 256)
    cand = carray(_stack_ptr(256, np.int64), 256)
    cval = carray(_stack_ptr(256, dt), 256)
    order = carray(_stack_ptr(256, np.int64), 256)
    rank = carray(_stack_ptr(8, np.int64), 8)
    rank16 = carray(_stack_ptr(16, np.int32), 16)
    gpu_stamp = np.zeros(ep, dtype=np.int64)
    node_stamp = np.zeros(ep // gpus_per_node, dtype=np.int64)
    gpu_cnt = np.empty(ep, dtype=np.int64)
    node_cnt = np.empty(ep // gpus_per_node, dtype=np.int64)
    _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, 256, 8,
               max_groups, k, w32t, skew_on, has_bias, biast, dedup, expert_gpu, expert_node,
               gpu_node, node_first_gpu, network, nvlink, load, stats, True,
               (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank,
                rank16, gpu_stamp, node_stamp, gpu_cnt, node_cnt))


@njit(nogil=True)
def _generated_step_kernel(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                           n_experts, n_groups, max_groups, k, w32t, skew_on, has_bias, biast,
                           dedup, expert_gpu, expert_node, gpu_node, node_first_gpu, network,
                           nvlink, load, stats):
    """Dispatch copy counts of the tokens of GPUs ``[gpu_lo, gpu_hi)``, each token's gate
    scores generated (counter-based, as ``counter_gate_scores``) and node-limited-routed in cache,
    its copies counted at once: no score matrix, no id matrix. ``network``/``nvlink``
    ``[groups, ep, ep]`` and ``load`` ``[groups, n_experts]`` are indexed by EP group minus
    ``group_lo``, GPUs by their index inside the group; experts sit contiguously on the group's
    GPUs and the routing groups are the group's nodes. ``stats`` += (nodes, remote nodes, GPUs)
    summed over tokens. Node and GPU of an expert come from lookup tables (``expert_gpu``,
    ``expert_node``, ``gpu_node``, ``node_first_gpu``): an integer division per copy would cost
    more than the routing. 256 experts in 8 groups (DeepSeek-V3) run :func:`_step_kernel_8x32`."""
    if n_experts == 256 and n_groups == 8:
        _step_kernel_8x32(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node,
                          max_groups, k, w32t, skew_on, has_bias, biast, dedup, expert_gpu,
                          expert_node, gpu_node, node_first_gpu, network, nvlink, load, stats)
        return
    n_tops = 2 * max(max_groups, (k + 1) // 2)
    dt = biast.dtype
    n_nodes = ep // gpus_per_node
    buf = np.empty(n_experts, dtype=dt)
    top = np.empty(n_groups, dtype=dt)
    sec = np.empty(n_groups, dtype=dt)
    hi_s = np.empty(128, dtype=dt)
    lo_s = np.empty(128, dtype=dt)
    gscore = np.empty(n_groups)
    kept = np.empty(n_groups, dtype=np.int64)
    tops = np.empty(n_tops)
    cand = np.empty(n_experts, dtype=np.int64)
    cval = np.empty(n_experts, dtype=dt)
    order = np.empty(n_experts, dtype=np.int64)
    rank = np.empty(n_groups, dtype=np.int64)
    rank16 = np.empty(16, dtype=np.int32)
    gpu_stamp = np.zeros(ep, dtype=np.int64)
    node_stamp = np.zeros(n_nodes, dtype=np.int64)
    gpu_cnt = np.empty(ep, dtype=np.int64)
    node_cnt = np.empty(n_nodes, dtype=np.int64)
    _step_gpus(key, gpu_lo, gpu_hi, group_lo, tokens_per_gpu, ep, gpus_per_node, n_experts,
               n_groups, max_groups, k, w32t, skew_on, has_bias, biast, dedup, expert_gpu,
               expert_node, gpu_node, node_first_gpu, network, nvlink, load, stats, False,
               (buf, top, sec, hi_s, lo_s, gscore, kept, tops, cand, cval, order, rank,
                rank16, gpu_stamp, node_stamp, gpu_cnt, node_cnt))
