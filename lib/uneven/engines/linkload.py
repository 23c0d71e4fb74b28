"""Link-load engine: the bottleneck model of one synchronous communication phase.

Every transfer of the phase starts together; each link carries the sum of the bytes routed over
it; the phase ends when its most loaded link (bytes / capacity) has drained, plus the longest path
latency. That is exact for the *makespan* of one phase with fair, work-conserving links and no
cross-phase overlap, and it is what most collective cost models (alpha-beta, nccl-tests' busbw)
assume. Flows that start at different times need the fluid engine instead.

Three ways to describe the traffic, all giving the same per-link bytes:

* ``flows``: arrays ``src, dst, nbytes`` (one entry per transfer);
* ``matrix``: an ``n_gpus x n_gpus`` byte matrix (zero entries are skipped);
* ``kron``: a node-level weight matrix ``W`` (``n_nodes x n_nodes``) times a GPU-level block
  ``B`` (``gpus_per_node x gpus_per_node``): GPU (a, i) sends ``W[a, b] * B[i, j]`` bytes to
  GPU (b, j). A uniform all-to-all is ``W = 1, B = S``. Because every route in a rail-optimised
  cluster depends on the node pair only through "same leaf group or not", this form costs
  ``O(n_nodes^2 + g^2)`` instead of ``O(n_gpus^2)``: 16,384 GPUs take milliseconds.

Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, instance, real
from .._jit import njit
from .._routes import (
    KIND_SUPERPOD,
    MAX_ROUTE,
    P_G,
    P_K,
    P_KIND,
    P_LPR,
    P_NODES,
    P_NPL,
    P_OFF0,
    P_OFF1,
    P_OFF2,
    P_OFF3,
    P_OFF4,
    P_OFF5,
    P_PXN,
    _route,
)
from .._validate import _show, as_float_array, as_int_array, trusted
from ..limits import check_bytes, check_steps
from ..topology import LINK_KINDS, Topology

__all__ = ["LinkLoads", "link_loads", "link_loads_matrix", "link_loads_kron"]


@dataclass(frozen=True)
class LinkLoads(Checked):
    """Bytes per directed link for one phase, and the phase time they imply.

    ``bytes`` (per link, bytes) and ``max_latency`` (s, the longest path used) are the raw result;
    ``time()`` turns them into seconds with an optional per-kind efficiency. Checked when made:
    ``bytes`` has one finite entry >= 0 per link of ``topo`` (read-only), ``max_latency`` is
    finite and >= 0.
    """

    topo: Topology = instance(Topology, "from uneven.topology", repr=False)
    bytes: np.ndarray = array(shape=lambda ll: (ll.topo.n_links,), lo=0.0, repr=False)
    max_latency: float = real(lo=0.0, unit="s")

    def seconds_per_link(self, efficiency: dict | float | None = None) -> np.ndarray:
        """Drain time of each link (s): bytes / (capacity x efficiency of its kind)."""
        with np.errstate(over="ignore", under="ignore"):
            out = self.bytes / self.topo.scaled_capacity(efficiency)
        if not np.isfinite(out).all():
            raise ValueError(
                f"efficiency={_show(efficiency)} with these bytes gives a drain time beyond the "
                "range of a float (a capacity far too small for the bytes); use capacities and "
                "efficiencies of sensible magnitude"
            )
        return out

    def time(self, efficiency: dict | float | None = None) -> float:
        """Phase time (s) = slowest link's drain time + the longest path latency."""
        per_link = self.seconds_per_link(efficiency)
        return _finite_time(float(per_link.max(initial=0.0)) + self.max_latency, efficiency)

    def bottleneck(self, efficiency: dict | float | None = None) -> tuple[int, str, float]:
        """(link id, link name, drain seconds) of the most loaded link."""
        per_link = self.seconds_per_link(efficiency)
        link = int(np.argmax(per_link))
        return link, self.topo.link_name(link), float(per_link[link])

    def bottleneck_kind(self, efficiency: dict | float | None = None) -> str:
        """The :data:`uneven.topology.LINK_KINDS` name of :meth:`bottleneck`'s link, e.g.
        ``'nic_up'`` or ``'leaf_up'`` (a leaf's uplink bundle to the spine). Ties go to the
        lowest link id, as in :meth:`bottleneck`.

        >>> from uneven.topology import h800_cluster
        >>> link_loads(h800_cluster(2), [0], [8], [1e6]).bottleneck_kind()
        'nic_up'
        """
        link = self.bottleneck(efficiency)[0]
        return LINK_KINDS[int(self.topo.link_kind[link])]

    def drain_by_kind(self, efficiency: dict | float | None = None) -> dict:
        """The busiest link's drain time of each link kind the topology has (s): ``{kind:
        max over its links of bytes / (capacity x efficiency)}``, kinds in
        :data:`uneven.topology.LINK_KINDS` order. Its largest value is :meth:`bottleneck`'s.

        >>> from uneven.topology import h800_cluster
        >>> d = link_loads(h800_cluster(2), [0], [8], [1e6]).drain_by_kind()
        >>> list(d), d["nic_up"] * 1e6           # 1 MB over a 50 GB/s NIC: 20 us
        (['nvl_out', 'nvl_in', 'nic_up', 'nic_down', 'leaf_up', 'leaf_down'], 20.0)
        """
        per_link = self.seconds_per_link(efficiency)
        kinds = self.topo.link_kind
        return {LINK_KINDS[k]: float(per_link[kinds == k].max())
                for k in np.unique(kinds).tolist()}

    def by_kind(self) -> dict:
        """Total bytes per link kind, e.g. ``{'nic_up': ..., 'nvl_out': ...}`` (kinds present)."""
        out = {}
        for k in np.unique(self.topo.link_kind):
            out[LINK_KINDS[k]] = float(self.bytes[self.topo.link_kind == k].sum())
        return out

    def grid(self, kind: str) -> np.ndarray:
        """Bytes on the links of one kind as a 2-d array for heatmaps.

        GPU ports give ``n_nodes x gpus_per_node``, NIC links ``n_nodes x nics_per_node``, leaf
        links ``nics_per_node x leaf groups``, superpod node links ``n_nodes x 1``. ``kind`` must
        be a kind this topology has (``nvl_*``, ``nic_*``, ``leaf_*`` on a cluster; ``npu_*``,
        ``node_*`` on a superpod).
        """
        from .._validate import check_choice

        kinds = LINK_KINDS[:6] if self.topo.kind == "cluster" else LINK_KINDS[6:]
        kind = check_choice("kind", kind, kinds)
        ids = self.topo.links_of_kind(kind)
        vals = self.bytes[ids]
        t = self.topo
        if kind in ("nvl_out", "nvl_in", "npu_out", "npu_in"):
            return vals.reshape(t.n_nodes, t.gpus_per_node)
        if kind in ("nic_up", "nic_down"):
            return vals.reshape(t.n_nodes, t.nics_per_node)
        if kind in ("leaf_up", "leaf_down"):
            return vals.reshape(t.nics_per_node, -1)
        return vals.reshape(-1, 1)


def _loads_result(topo, loads, lat) -> LinkLoads:
    """A :class:`LinkLoads` from a kernel's output (validated input, so no re-check)."""
    loads.flags.writeable = False
    return trusted(LinkLoads, topo=topo, bytes=loads, max_latency=float(lat))


def _check_topo(topo) -> Topology:
    if not isinstance(topo, Topology):
        raise ValueError(f"topo must be a uneven.topology.Topology; got {type(topo).__name__}")
    return topo


def _finite_time(t: float, efficiency=None) -> float:
    if not np.isfinite(t):
        raise ValueError(f"efficiency={_show(efficiency)} with these bytes gives a phase time "
                         "beyond the range of a float")
    return t


def _check_total(name: str, arr, block=None) -> None:
    """Per-link loads are sums of parts of the total bytes (times ``block``'s total): if a bound
    on that total is finite, so are they. The bound uses Python floats (inf, never a warning)."""
    if not arr.size:
        return
    total = float(arr.max()) * arr.size * MAX_ROUTE
    if block is not None:
        total *= float(block.max(initial=0.0)) * block.size if block.size else 0.0
    if total > 1e300:
        raise ValueError(f"{name} sums to more than a float can hold (bound {total:.3g}); "
                         "use byte counts of sensible magnitude")


# --------------------------------------------------------------------------- kernels


@njit
def _loads_flows(ip, lat, src, dst, nbytes, loads):
    buf = np.empty(MAX_ROUTE, dtype=np.int64)
    max_lat = 0.0
    for f in range(src.size):
        b = nbytes[f]
        if b <= 0.0:
            continue
        n = _route(ip, src[f], dst[f], buf)
        path_lat = 0.0
        for h in range(n):
            loads[buf[h]] += b
            path_lat += lat[buf[h]]
        if path_lat > max_lat:
            max_lat = path_lat
    return max_lat


@njit
def _loads_dense(ip, lat, T, loads):
    buf = np.empty(MAX_ROUTE, dtype=np.int64)
    n_gpus = T.shape[0]
    max_lat = 0.0
    for s in range(n_gpus):
        for d in range(n_gpus):
            b = T[s, d]
            if b <= 0.0 or s == d:
                continue
            n = _route(ip, s, d, buf)
            path_lat = 0.0
            for h in range(n):
                loads[buf[h]] += b
                path_lat += lat[buf[h]]
            if path_lat > max_lat:
                max_lat = path_lat
    return max_lat


@njit
def _kind_max(lat, lo, hi):
    m = 0.0
    for i in range(lo, hi):
        if lat[i] > m:
            m = lat[i]
    return m


@njit
def _loads_kron(ip, lat, W, B, loads):
    g = ip[P_G]
    n_nodes = ip[P_NODES]
    # Node-level sums: what each node sends to / receives from other nodes, to itself, and to
    # nodes under another leaf group.
    row = np.zeros(n_nodes)
    col = np.zeros(n_nodes)
    row_x = np.zeros(n_nodes)
    col_x = np.zeros(n_nodes)
    npl = ip[P_NPL]
    any_cross_group = False
    for a in range(n_nodes):
        for b in range(n_nodes):
            w = W[a, b]
            if w <= 0.0 or a == b:
                continue
            row[a] += w
            col[b] += w
            if a // npl != b // npl:
                row_x[a] += w
                col_x[b] += w
                any_cross_group = True
    # Intra-node traffic: NVLink (or UB) port out of the sender, into the receiver.
    brow = np.zeros(g)
    bcol = np.zeros(g)
    has_intra_pattern = False
    for i in range(g):
        for j in range(g):
            if i != j and B[i, j] > 0.0:
                brow[i] += B[i, j]
                bcol[j] += B[i, j]
                has_intra_pattern = True
    max_lat = 0.0
    any_intra = False
    for a in range(n_nodes):
        w = W[a, a]
        if w <= 0.0 or not has_intra_pattern:
            continue
        any_intra = True
        for i in range(g):
            loads[ip[P_OFF0] + a * g + i] += w * brow[i]
            loads[ip[P_OFF1] + a * g + i] += w * bcol[i]
    total_b = 0.0
    for i in range(g):
        for j in range(g):
            total_b += B[i, j]
    any_row = False
    for a in range(n_nodes):
        if row[a] > 0.0:
            any_row = True
    any_cross = total_b > 0.0 and any_row

    if ip[P_KIND] == KIND_SUPERPOD:
        # Cross-node: out-port, node uplink, node downlink, in-port.
        full_row = np.zeros(g)
        full_col = np.zeros(g)
        for i in range(g):
            for j in range(g):
                full_row[i] += B[i, j]
                full_col[j] += B[i, j]
        for a in range(n_nodes):
            for i in range(g):
                loads[ip[P_OFF0] + a * g + i] += row[a] * full_row[i]
                loads[ip[P_OFF1] + a * g + i] += col[a] * full_col[i]
            loads[ip[P_OFF2] + a] += row[a] * total_b
            loads[ip[P_OFF3] + a] += col[a] * total_b
        if any_intra:
            max_lat = _kind_max(lat, ip[P_OFF0], ip[P_OFF1])
        if any_cross:
            max_lat = (_kind_max(lat, ip[P_OFF0], ip[P_OFF1])
                       + _kind_max(lat, ip[P_OFF2], ip[P_OFF3]))
        return max_lat

    k = ip[P_K]
    gpn = g // k
    lpr = ip[P_LPR]
    pxn = ip[P_PXN] == 1
    # Per GPU pair (i, j) of a cross-node transfer: which NICs it uses, and whether it first hops
    # over NVLink on the source node (PXN).
    nvl_o = np.zeros(g)
    nvl_i = np.zeros(g)
    R = np.zeros((k, k))
    for i in range(g):
        for j in range(g):
            b = B[i, j]
            if b <= 0.0:
                continue
            rs = i // gpn
            rd = j // gpn
            if rs == rd:
                R[rs, rd] += b
            elif pxn:
                nvl_o[i] += b
                nvl_i[j] += b
                R[rd, rd] += b
            else:
                R[rs, rd] += b
    r_up = np.zeros(k)
    r_down = np.zeros(k)
    r_off_up = np.zeros(k)
    r_off_down = np.zeros(k)
    for u in range(k):
        for d in range(k):
            r_up[u] += R[u, d]
            r_down[d] += R[u, d]
            if u != d:
                r_off_up[u] += R[u, d]
                r_off_down[d] += R[u, d]
    any_pxn = False
    for i in range(g):
        if nvl_o[i] > 0.0:
            any_pxn = True
    any_off = False
    for u in range(k):
        if r_off_up[u] > 0.0:
            any_off = True
    for a in range(n_nodes):
        if row[a] > 0.0:
            for i in range(g):
                loads[ip[P_OFF0] + a * g + i] += row[a] * nvl_o[i]
                loads[ip[P_OFF1] + a * g + i] += row[a] * nvl_i[i]
            grp = a // npl
            for u in range(k):
                loads[ip[P_OFF2] + a * k + u] += row[a] * r_up[u]
                up = row[a] * r_off_up[u] + row_x[a] * R[u, u]
                if up > 0.0:
                    loads[ip[P_OFF4] + u * lpr + grp] += up
        if col[a] > 0.0:
            grp = a // npl
            for d in range(k):
                loads[ip[P_OFF3] + a * k + d] += col[a] * r_down[d]
                down = col[a] * r_off_down[d] + col_x[a] * R[d, d]
                if down > 0.0:
                    loads[ip[P_OFF5] + d * lpr + grp] += down
    nvl_lat = _kind_max(lat, ip[P_OFF0], ip[P_OFF1])
    nic_lat = _kind_max(lat, ip[P_OFF2], ip[P_OFF3])
    spine_lat = _kind_max(lat, ip[P_OFF4], ip[P_OFF5])
    if any_intra:
        max_lat = nvl_lat
    if any_cross:
        cross = nic_lat
        if any_pxn:
            cross += nvl_lat
        if any_off or any_cross_group:
            cross += spine_lat
        if cross > max_lat:
            max_lat = cross
    return max_lat


# --------------------------------------------------------------------------- public API


def link_loads(topo: Topology, src, dst, nbytes) -> LinkLoads:
    """Per-link bytes of a phase given as flows ``src[i] -> dst[i]`` of ``nbytes[i]`` bytes.

    Size: the flow arrays (24 bytes per flow) within the memory budget of :mod:`uneven.limits`
    (2 GiB by default: about 80 million flows); the bytes must sum to a finite number.

    >>> from uneven.topology import h800_cluster
    >>> t = h800_cluster(2)
    >>> r = link_loads(t, [0], [8], [1e6])       # GPU 0 -> GPU 0 of the next node, same rail
    >>> r.bottleneck()[1], r.time() * 1e6         # 1 MB over a 50 GB/s NIC + 2.8 us
    ('nic_up[node 0, nic 0]', 22.8)
    """
    topo = _check_topo(topo)
    hi = topo.n_gpus - 1
    src = as_int_array("src", src, ndim=1, lo=0, hi=hi)
    dst = as_int_array("dst", dst, ndim=1, lo=0, hi=hi)
    nbytes = as_float_array("nbytes", nbytes, ndim=1, lo=0.0, unit="bytes")
    if not (src.size == dst.size == nbytes.size):
        raise ValueError(
            f"src, dst and nbytes must have the same length; got {src.size}, {dst.size}, "
            f"{nbytes.size}"
        )
    _check_total("nbytes", nbytes)
    loads = np.zeros(topo.n_links)
    lat = _loads_flows(topo.iparams, topo.latency, src, dst, nbytes, loads)
    return _loads_result(topo, loads, lat)


def link_loads_matrix(topo: Topology, traffic) -> LinkLoads:
    """Per-link bytes of a phase given as an ``n_gpus x n_gpus`` byte matrix (row = sender).

    Size: the matrix itself must fit in the memory budget of :mod:`uneven.limits` (2 GiB by
    default: about 16,000 GPUs); :func:`link_loads_kron` describes far larger phases.

    >>> from uneven.topology import h800_cluster
    >>> T = np.zeros((16, 16)); T[0, 8] = 1e6
    >>> link_loads_matrix(h800_cluster(2), T).bottleneck()[1]
    'nic_up[node 0, nic 0]'
    """
    topo = _check_topo(topo)
    n = topo.n_gpus
    check_bytes("topo", topo.name, 8.0 * n * n, f"an {n} x {n} traffic matrix")
    T = as_float_array("traffic", traffic, shape=(n, n), lo=0.0, unit="bytes")
    _check_total("traffic", T)
    loads = np.zeros(topo.n_links)
    lat = _loads_dense(topo.iparams, topo.latency, T, loads)
    return _loads_result(topo, loads, lat)


def link_loads_kron(topo: Topology, node_weights, block) -> LinkLoads:
    """Per-link bytes when GPU (a, i) sends ``node_weights[a, b] * block[i, j]`` to GPU (b, j).

    ``node_weights`` is ``n_nodes x n_nodes`` (dimensionless), ``block`` is
    ``gpus_per_node x gpus_per_node`` (bytes); a GPU never sends to itself. Size: the weight
    matrix must fit in the memory budget of :mod:`uneven.limits` (2 GiB by default: about
    16,000 nodes, i.e. 131,072 GPUs of 8) and ``n_nodes^2`` steps in its work budget.

    >>> import numpy as np
    >>> from uneven.topology import h800_cluster
    >>> t = h800_cluster(4)
    >>> r = link_loads_kron(t, np.ones((4, 4)), np.full((8, 8), 1e6))   # uniform all-to-all, 1 MB
    >>> round((r.time() - r.max_latency) * 1e6, 3)    # (N - 8) x 1 MB / 50 GB/s
    480.0
    """
    topo = _check_topo(topo)
    nn, g = topo.n_nodes, topo.gpus_per_node
    check_bytes("topo", topo.name, 8.0 * (nn * nn + g * g), f"an {nn} x {nn} node weight matrix")
    check_steps("topo", topo.name, nn * nn + g * g, "one pass over the node and GPU pairs")
    W = as_float_array("node_weights", node_weights, shape=(nn, nn), lo=0.0)
    B = as_float_array("block", block, shape=(g, g), lo=0.0, unit="bytes")
    _check_total("node_weights", W, B)
    loads = np.zeros(topo.n_links)
    lat = _loads_kron(topo.iparams, topo.latency, W, B, loads)
    return _loads_result(topo, loads, lat)


def _reference_link_loads(topo: Topology, src, dst, nbytes) -> tuple[np.ndarray, float]:
    """Pure-Python reference: route every flow with ``topo.route`` and add its bytes."""
    loads = [0.0] * topo.n_links
    max_lat = 0.0
    for s, d, b in zip(src, dst, nbytes, strict=True):
        if b <= 0 or s == d:
            continue
        path = topo.route(int(s), int(d))
        for link in path:
            loads[int(link)] += float(b)
        max_lat = max(max_lat, float(sum(topo.latency[int(x)] for x in path)))
    return np.array(loads), max_lat
