"""Expert-parallel dispatch and combine as GPU-to-GPU byte matrices (no topology needed).

Input: each token's chosen experts ``expert_ids [T, k]``, the GPU holding each token
``src_gpu [T]``, the GPU holding each expert ``expert_gpu [n_experts]``, and ``gpus_per_node``
(GPU ``g`` sits on node ``g // gpus_per_node`` at local index ``g % gpus_per_node``). Output: two
``n_gpus × n_gpus`` float64 matrices of bytes, ``network[src, dst]`` (scale-out sends, e.g. IB)
and ``nvlink[src, dst]`` (intra-node sends), which a link-load engine can turn into time.
With replicated experts, pass the slot that serves each choice as ``expert_ids`` and the slot →
GPU map (``Placement.slot_gpu``) as ``expert_gpu``: the copy rule needs only each choice's GPU
(:attr:`uneven.ep.model.EpRouting.targets` gives both).

Which copies a token makes is the copy rule of :mod:`uneven.ep` (its vocabulary, once):

``mode="relay"`` (DeepSeek-V3's training dispatch, DeepEP's normal kernels): one network copy per
remote *node*, sent to the GPU there with the source's *local index* (so the traffic stays on one
NIC rail or plane), which copies it over NVLink to each other target GPU of its node. Targets on
the source's own node get NVLink copies straight from the source. (``"dedup"``, the old word,
still means this, with a ``DeprecationWarning``.)

``mode="direct"``: the source sends every target its own copy; off-node targets over the network,
same-node targets over NVLink, the token's own GPU costs nothing.

``unit="gpu"`` (default): one copy per distinct target GPU, which runs all its experts of the
token on it (DeepEP's normal kernels). ``unit="slot"``: one copy per chosen expert, even two on
one GPU, as DeepEP's low-latency kernels send (one message per token and top-k entry into the
destination expert's buffer, ``csrc/kernels/legacy/internode_ll.cu`` at dd758ca [repo]).

Combine is the mirror image: the same copies travel backwards (the matrices are transposed) with
the combine payload; in relay mode the relay sums its node's expert outputs before its single
network send, which is why one network copy per node suffices in both directions.

>>> import numpy as np
>>> ids = np.array([[0, 1, 2, 3]])           # 4 experts, one per GPU, 2 GPUs per node
>>> t = ep_dispatch_traffic(ids, [0], [0, 1, 2, 3], 2, 100.0, mode="relay")
>>> t.network.sum(), t.nvlink.sum()          # 1 copy to node 1 (to GPU 2), then 2 -> 3, 0 -> 1
(np.float64(100.0), np.float64(200.0))
>>> d = ep_dispatch_traffic(ids, [0], [0, 1, 2, 3], 2, 100.0, mode="direct")
>>> d.network.sum(), d.nvlink.sum()          # 0 -> 2 and 0 -> 3 on the network, 0 -> 1 on NVLink
(np.float64(200.0), np.float64(100.0))
>>> two = ep_dispatch_traffic([[2, 3]], [0], [0, 1, 2, 2], 2, 1.0, mode="direct", unit="slot")
>>> float(two.network[0, 2])                 # two experts on GPU 2: two copies per slot
2.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, check_fields, choice, integer, real
from .._jit import njit
from .._validate import as_int_array, check_int, check_real
from ..limits import check_bytes
from ._checks import PATHS, UNITS, bytes_per_token, check_path, check_unit
from ._kernels import _add_copies, _mark_token, _reference_copies

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

#: The dispatch modes (paths) of :func:`ep_dispatch_traffic`; see :mod:`uneven.ep`.
MODES = PATHS


@dataclass(frozen=True, eq=False)
class EpTraffic(Checked):
    """Bytes moved by one EP dispatch or combine.

    ``network``: float64 ``[n_gpus, n_gpus]``, bytes sent over the scale-out network, src→dst GPU.
    ``nvlink``: float64 ``[n_gpus, n_gpus]``, bytes sent inside a node, src→dst GPU.
    ``nodes_per_token``: int64 ``[T]``, distinct nodes holding the token's experts (own node
    included when it holds one); ``remote_nodes_per_token``: the same without the own node;
    ``gpus_per_token``: int64 ``[T]``, distinct GPUs holding the token's experts.
    ``mode`` "relay" or "direct" and ``unit`` "gpu" or "slot" (see :mod:`uneven.ep`);
    ``direction`` "dispatch" or "combine"; ``bytes_per_copy`` in bytes; ``gpus_per_node``. Every
    field is checked when made (square matrices of finite bytes >= 0 over whole nodes, one count
    per token); arrays are read-only.
    """

    network: np.ndarray = array(shape=("n", "n"), lo=0.0)
    nvlink: np.ndarray = array(shape=("n", "n"), lo=0.0)
    nodes_per_token: np.ndarray = array("int", shape=("T",), lo=0)
    remote_nodes_per_token: np.ndarray = array("int", shape=("T",), lo=0)
    gpus_per_token: np.ndarray = array("int", shape=("T",), lo=0)
    mode: str = choice(MODES)
    direction: str = choice(("dispatch", "combine"))
    gpus_per_node: int = integer(lo=1)
    bytes_per_copy: float = real(lo=0.0, unit="bytes")
    unit: str = choice(UNITS, default="gpu")

    def __post_init__(self):
        check_fields(self)
        if self.n_gpus % self.gpus_per_node:
            raise ValueError(f"gpus_per_node must divide the GPU count {self.n_gpus}; got "
                             f"{self.gpus_per_node}")

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
class DeepEpBytes(Checked):
    """DeepEP's "logical" RDMA bytes beside the bytes that really cross the network.

    ``logical``: float64 ``[n_gpus]`` per source GPU, Σ over its tokens of (distinct destination
    nodes, the sender's own node included when targeted) × bytes per copy: what DeepEP's internode
    test divides by time to print "RDMA GB/s". ``network``: float64 ``[n_gpus]``, the same without
    the own node: bytes that leave through the NIC. Both in bytes.
    """

    logical: np.ndarray = array(shape=("n",), lo=0.0)
    network: np.ndarray = array(shape=("n",), lo=0.0)

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
def _ep_kernel(expert_ids, src_gpu, expert_gpu, gpu_node, node_first_gpu, gpu_local, relay,
               per_slot, network, nvlink, nodes_out, remote_out, gpus_out, gpu_stamp,
               node_stamp, copies, node_copies, expert_cnt):
    """Add copy counts (not bytes: the wrapper scales once) into ``network`` and ``nvlink`` with
    the copy rule of :mod:`uneven.ep._kernels`: each token's copies are counted per source GPU
    (``copies [n_gpus, n_gpus]``, ``node_copies [n_gpus, n_nodes]``, the token's index is its
    stamp), then each source's counts are put on the links once; ``expert_cnt`` is scratch.
    Returns -1, or the first token whose expert id is out of range (then nothing is written)."""
    n_tokens, k = expert_ids.shape
    n_experts = expert_gpu.shape[0]
    for t in range(n_tokens):
        for j in range(k):
            e = expert_ids[t, j]
            if e < 0 or e >= n_experts:
                return t  # bad input: the wrapper raises
        s = src_gpu[t]
        n_n, n_r, n_g = _mark_token(t, s, expert_ids[t], k, expert_gpu, per_slot, gpu_node,
                                    gpu_stamp, node_stamp, copies[s], node_copies[s],
                                    expert_cnt)
        nodes_out[t] = n_n
        remote_out[t] = n_r
        gpus_out[t] = n_g
    for s in range(copies.shape[0]):
        _add_copies(s, copies[s], node_copies[s], relay, gpu_node, node_first_gpu, gpu_local,
                    network, nvlink)
    return -1


def _reference_ep(expert_ids, src_gpu, expert_gpu, gpus_per_node, relay, n_gpus,
                  per_slot=False):
    """Pure-Python dispatch copy counts from the copy rule's reference (tests only)."""
    network = np.zeros((n_gpus, n_gpus))
    nvlink = np.zeros((n_gpus, n_gpus))
    nodes, remote, gpus = [], [], []
    for t in range(expert_ids.shape[0]):
        s = int(src_gpu[t])
        targets = [int(expert_gpu[e]) for e in expert_ids[t]]
        target_nodes = {g // gpus_per_node for g in targets}
        nodes.append(len(target_nodes))
        remote.append(len(target_nodes - {s // gpus_per_node}))
        gpus.append(len(set(targets)))
        for (kind, a, b), n in _reference_copies(s, targets, gpus_per_node, relay,
                                                 per_slot).items():
            (network if kind == "network" else nvlink)[a, b] += n
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
    # The dense byte matrices, their transposes for combine, a sum of the two, and the copy
    # counts per source (per GPU and per node) they are made from.
    check_bytes(name, value, 8.0 * 6 * n_gpus * n_gpus + 8.0 * n_gpus * n_gpus // gpus_per_node,
                f"dense {n_gpus} x {n_gpus} network and NVLink byte matrices")
    return expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus


def _check_scaled(copies, bytes_per_copy) -> None:
    """Every byte total is at most (all copies) x ``bytes_per_copy``: it must be finite."""
    with np.errstate(over="ignore"):
        total = (float(copies) + 1.0) * bytes_per_copy
    if not np.isfinite(total):
        raise ValueError(f"bytes_per_copy={bytes_per_copy:.3g} times the number of copies is "
                         "beyond the range of a float; use a byte count of sensible magnitude")


def _dispatch_counts(expert_ids, src_gpu, expert_gpu, gpus_per_node, mode, n_gpus,
                     unit="gpu"):
    mode = check_path(mode)
    unit = check_unit(unit)
    expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus = _checked_inputs(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, n_gpus
    )
    n_tokens = expert_ids.shape[0]
    network = np.zeros((n_gpus, n_gpus))
    nvlink = np.zeros((n_gpus, n_gpus))
    nodes = np.empty(n_tokens, dtype=np.int64)
    remote = np.empty(n_tokens, dtype=np.int64)
    gpus = np.empty(n_tokens, dtype=np.int64)
    gpu_ids = np.arange(n_gpus, dtype=np.int64)
    bad = _ep_kernel(
        expert_ids, src_gpu, expert_gpu, gpu_ids // gpus_per_node,
        np.arange(0, n_gpus, gpus_per_node, dtype=np.int64), gpu_ids % gpus_per_node,
        mode == "relay", unit == "slot", network, nvlink, nodes, remote, gpus,
        np.full(n_gpus, -1, dtype=np.int64), np.full(n_gpus // gpus_per_node, -1, dtype=np.int64),
        np.zeros((n_gpus, n_gpus), dtype=np.int64),
        np.zeros((n_gpus, n_gpus // gpus_per_node), dtype=np.int64),
        np.zeros(expert_gpu.shape[0], dtype=np.int64),
    )
    if bad >= 0:  # let the shared validator word the error
        n_experts = expert_gpu.shape[0]
        as_int_array("expert_ids", expert_ids[bad:bad + 1], ndim=2, lo=0, hi=n_experts - 1)
    return network, nvlink, nodes, remote, gpus, mode, unit, gpus_per_node, src_gpu


def ep_dispatch_traffic(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    mode: str = "relay", n_gpus: int | None = None, *, unit: str = "gpu",
) -> EpTraffic:
    """Bytes of one EP dispatch (token copies from their GPU to their experts' GPUs).

    ``expert_ids`` int ``[T, k]``; ``src_gpu`` int ``[T]``; ``expert_gpu`` int ``[n_experts]``;
    ``bytes_per_copy``: bytes of one token copy (see :func:`dispatch_bytes_per_token`);
    ``mode`` "relay" (one network copy per remote node, then NVLink forwarding) or "direct";
    ``unit`` "gpu" (one copy per distinct target GPU) or "slot" (one per chosen expert);
    ``n_gpus`` defaults to the fewest whole nodes holding every GPU mentioned.
    Returns :class:`EpTraffic` with byte matrices (bytes) and per-token counts. Size: the dense
    matrices and the copy counts they are made from cost about ``49 n_gpus^2`` bytes, within
    the memory budget of :mod:`uneven.limits` (2 GiB by default: about 6,600 GPUs).

    >>> t = ep_dispatch_traffic([[0, 1]], [0], [2, 3], 2, 7392.0)
    >>> float(t.network[0, 2]), float(t.nvlink[2, 3]), t.remote_nodes_per_token.tolist()
    (7392.0, 7392.0, [1])
    """
    return _traffic("dispatch", expert_ids, src_gpu, expert_gpu, gpus_per_node,
                    bytes_per_copy, mode, n_gpus, unit)


def ep_combine_traffic(
    expert_ids, src_gpu, expert_gpu, gpus_per_node: int, bytes_per_copy: float,
    mode: str = "relay", n_gpus: int | None = None, *, unit: str = "gpu",
) -> EpTraffic:
    """Bytes of one EP combine: the dispatch copies travel back (matrices transposed).

    Same arguments as :func:`ep_dispatch_traffic`; ``bytes_per_copy`` is the combine payload
    (see :func:`combine_bytes_per_token`). Each expert GPU returns one partial sum per token
    (its local experts added up); in relay mode the relay adds its node's partials and sends
    one network copy, so combine network bytes = dispatch network bytes × (combine bytes /
    dispatch bytes), transposed.

    >>> t = ep_combine_traffic([[0, 1]], [0], [2, 3], 2, 14336.0)
    >>> float(t.network[2, 0]), float(t.nvlink[3, 2])
    (14336.0, 14336.0)
    """
    return _traffic("combine", expert_ids, src_gpu, expert_gpu, gpus_per_node,
                    bytes_per_copy, mode, n_gpus, unit)


def _traffic(direction, expert_ids, src_gpu, expert_gpu, gpus_per_node, bytes_per_copy, mode,
             n_gpus, unit) -> EpTraffic:
    bytes_per_copy = check_real("bytes_per_copy", bytes_per_copy, lo=0.0, unit="bytes")
    network, nvlink, nodes, remote, gpus, mode, unit, gpn, _ = _dispatch_counts(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, mode, n_gpus, unit
    )
    _check_scaled(network.sum() + nvlink.sum(), bytes_per_copy)  # the total bounds each entry
    if direction == "combine":
        network = np.ascontiguousarray(network.T)
        nvlink = np.ascontiguousarray(nvlink.T)
    network *= bytes_per_copy
    nvlink *= bytes_per_copy
    return EpTraffic(network, nvlink, nodes, remote, gpus, mode, direction, gpn, bytes_per_copy,
                     unit)


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
    network, _, nodes, remote, _, _, _, _, src = _dispatch_counts(
        expert_ids, src_gpu, expert_gpu, gpus_per_node, "relay", n_gpus
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
    """Bytes each GPU writes into its *own* NVLink receive buffer in DeepEP's relay dispatch.

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


def dispatch_bytes_per_token(hidden: int, dtype="fp8") -> float:
    """Bytes of one dispatched token copy with ``hidden`` values.

    ``dtype``: "fp8" (1 byte per value + a 4-byte scale per 128 values, DeepSeek-V3's dispatch),
    "bf16"/"fp16" (2 bytes), "fp32" (4 bytes), or a number of bytes per value.
    Metadata (indices, weights, padding) is not included.

    >>> dispatch_bytes_per_token(7168), dispatch_bytes_per_token(7168, "bf16")
    (7392.0, 14336.0)
    """
    return bytes_per_token(hidden, dtype)


def combine_bytes_per_token(hidden: int, dtype="bf16") -> float:
    """Bytes of one combined (returned) token copy; same ``dtype`` choices as
    :func:`dispatch_bytes_per_token`, default "bf16" as in DeepSeek-V3.

    >>> combine_bytes_per_token(7168)
    14336.0
    """
    return bytes_per_token(hidden, dtype)
