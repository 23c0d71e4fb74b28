"""Clusters and superpods, described by structure rather than by tables.

A :class:`Topology` is a handful of integers (nodes, GPUs per node, NICs per node, nodes per leaf
switch, how rails meet) plus one capacity and one latency per *directed* link. Routes are computed
arithmetically by :func:`route`, which is a numba function that every engine calls from inside its
kernel, so a 16,384-GPU cluster costs a few hundred thousand floats, never an N x N table.

The model of a scale-out cluster (kind ``"cluster"``):

* each GPU has one NVLink port to its node's NVLink switch (``nvl_out``/``nvl_in``, one direction
  each); the NVLink domain is non-blocking, so only the ports can be hot;
* each node has ``nics_per_node`` NICs; NIC r serves GPUs ``r*g .. r*g+g-1`` with
  ``g = gpus_per_node // nics_per_node`` (H800: 1 GPU per NIC, H20: 2);
* rail-optimised leaves: NIC r of nodes ``0..nodes_per_leaf-1`` share one leaf switch of rail r,
  the next ``nodes_per_leaf`` nodes the next leaf, and so on;
* above the leaves, the spine layer is modelled as non-blocking (ideal ECMP: no hash collisions),
  reached through one aggregate uplink per leaf whose capacity is the leaf's downlink capacity
  divided by ``oversubscription``;
* ``fabric="multi_plane"``: every rail is its own plane with its own spines, so traffic can only
  change rail over NVLink (PXN: forward to the GPU on the destination's rail, then stay on it);
  ``fabric="multi_rail"``: rails meet in shared spines, so cross-rail traffic may either go up
  through the spines (``cross_rail="spine"``) or be forwarded over NVLink (``cross_rail="pxn"``).

The model of a superpod (kind ``"superpod"``, CloudMatrix384-like): every NPU has one port to the
node's L1 switch and every node one aggregate uplink to a non-blocking L2 tier. What matters there
is the *hop class* of an access: 0 = own memory, 1 = same node (one switch), 2 = another node
(L1 -> L2 -> L1). :func:`hop_class` gives it; each class has its own latency.

Units: capacities in bytes/s, latencies in seconds.

>>> t = h800_cluster(n_nodes=4)
>>> t.n_gpus, t.n_links
(32, 144)
>>> for link in t.route(0, 9):
...     print(t.link_name(link))
nvl_out[node 0, gpu 0]
nvl_in[node 0, gpu 1]
nic_up[node 0, nic 1]
nic_down[node 1, nic 1]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ._routes import (
    KIND_CLUSTER,
    KIND_SUPERPOD,
    MAX_ROUTE,
    N_IPARAMS,
    P_G,
    P_K,
    P_KIND,
    P_LPR,
    P_N,
    P_NLINKS,
    P_NODES,
    P_NPL,
    P_OFF0,
    P_PLANES,
    P_PXN,
    _hop_class,
    _paths_csr,
    _route,
)
from ._topology_text import describe_text
from ._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_choice,
    check_int,
    check_real,
    check_str,
)
from .limits import check_bytes
from .units import gbit_per_s, gbyte_per_s, us

__all__ = [
    "Topology",
    "cluster",
    "superpod",
    "h800_cluster",
    "h20_cluster",
    "cloudmatrix384",
    "LINK_KINDS",
    "MAX_ROUTE",
    "MAX_BW",
]

# Link kinds. A link's kind says which resource it is; heatmaps and efficiencies are per kind.
NVL_OUT, NVL_IN, NIC_UP, NIC_DOWN, LEAF_UP, LEAF_DOWN = 0, 1, 2, 3, 4, 5
NPU_OUT, NPU_IN, NODE_UP, NODE_DOWN = 6, 7, 8, 9
LINK_KINDS = (
    "nvl_out", "nvl_in", "nic_up", "nic_down", "leaf_up", "leaf_down",
    "npu_out", "npu_in", "node_up", "node_down",
)
#: Largest bandwidth a builder accepts (bytes/s): far beyond any link, and small enough that no
#: sum of link capacities overflows.
MAX_BW = 1e30



@dataclass(frozen=True)
class Topology:
    """A cluster or superpod. Build one with :func:`cluster`, :func:`superpod` or a preset.

    Attributes are plain numbers; ``capacity`` (bytes/s), ``latency`` (s) and ``kind`` (index into
    :data:`LINK_KINDS`) are per directed link. ``hop_latency`` (s) is the latency of an access of
    hop class 0, 1, 2 (used by superpods; for clusters it is 0, NVLink, network). ``sources`` says
    where each default number came from.

    Every field is checked when a topology is made, also by direct construction and by
    ``dataclasses.replace``: the link arrays must fit the structure (a topology of other nodes
    must be built anew, e.g. with :func:`cluster`), capacities must be finite and > 0, latencies
    finite and >= 0. The arrays are read-only (a degraded link is a new topology:
    ``dataclasses.replace(t, capacity=new_capacity)``).

    >>> import dataclasses
    >>> t = h800_cluster(2)
    >>> dataclasses.replace(t, n_nodes=4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_nodes=4 does not match the link arrays and routes of this topology, which ...
    >>> t.capacity[0] = 0.0
    Traceback (most recent call last):
    ...
    ValueError: assignment destination is read-only
    """

    name: str
    kind: str
    n_nodes: int
    gpus_per_node: int
    nics_per_node: int
    nodes_per_leaf: int
    fabric: str
    cross_rail: str
    oversubscription: float
    capacity: np.ndarray = field(repr=False)
    latency: np.ndarray = field(repr=False)
    link_kind: np.ndarray = field(repr=False)
    iparams: np.ndarray = field(repr=False)
    hop_latency: tuple = (0.0, 0.0, 0.0)
    sources: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        _validate_topology(self)

    @property
    def n_gpus(self) -> int:
        """Number of accelerators (GPUs or NPUs)."""
        return self.n_nodes * self.gpus_per_node

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return int(self.capacity.size)

    @property
    def gpus_per_nic(self) -> int:
        """GPUs that share one NIC (1 on H800, 2 on H20)."""
        return self.gpus_per_node // self.nics_per_node

    @property
    def n_leaves(self) -> int:
        """Leaf switches (rail-optimised: one set per rail)."""
        if self.kind != "cluster":
            return 0
        return self.nics_per_node * int(self.iparams[P_LPR])

    def route(self, src: int, dst: int) -> np.ndarray:
        """Link ids (int64) that a transfer from ``src`` to ``dst`` crosses, in order."""
        src = check_int("src", src, lo=0, hi=self.n_gpus - 1)
        dst = check_int("dst", dst, lo=0, hi=self.n_gpus - 1)
        out = np.empty(MAX_ROUTE, dtype=np.int64)
        n = _route(self.iparams, src, dst, out)
        return out[:n].copy()

    def paths(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many transfers in CSR form: ``(ptr, links)``, transfer i crossing
        ``links[ptr[i]:ptr[i+1]]``. This is the path input of the fluid engine.

        >>> ptr, links = h800_cluster(2).paths([0, 0], [1, 8])
        >>> ptr.tolist(), links.size
        ([0, 2, 4], 4)
        """
        src = as_int_array("src", src, ndim=1, lo=0, hi=self.n_gpus - 1)
        dst = as_int_array("dst", dst, ndim=1, lo=0, hi=self.n_gpus - 1)
        if src.size != dst.size:
            raise ValueError(f"src and dst must have the same length; got {src.size}, {dst.size}")
        check_bytes("src", f"{src.size} transfers", 8 * (MAX_ROUTE + 1) * src.size,
                    "their routes in CSR form")
        ptr = np.zeros(src.size + 1, dtype=np.int64)
        links = np.empty(src.size * MAX_ROUTE, dtype=np.int64)
        n = _paths_csr(self.iparams, src, dst, ptr, links)
        return ptr, links[:n].copy()

    def hop_class(self, src: int, dst: int) -> int:
        """0 for the same device, 1 for the same node, 2 for another node."""
        src = check_int("src", src, lo=0, hi=self.n_gpus - 1)
        dst = check_int("dst", dst, lo=0, hi=self.n_gpus - 1)
        return int(_hop_class(self.iparams, src, dst))

    def path_latency(self, src: int, dst: int) -> float:
        """Latency (s) of one access from ``src`` to ``dst``: the sum over its route's links."""
        src = check_int("src", src, lo=0, hi=self.n_gpus - 1)
        dst = check_int("dst", dst, lo=0, hi=self.n_gpus - 1)
        if src == dst:
            return float(self.hop_latency[0])
        return float(self.latency[self.route(src, dst)].sum())

    def link_name(self, link: int) -> str:
        """Human-readable name of a link, e.g. ``'nic_up[node 3, nic 5]'``."""
        link = check_int("link", link, lo=0, hi=self.n_links - 1)
        k = int(self.link_kind[link])
        idx = link - int(self.iparams[P_OFF0 + _kind_slot(k)])
        name = LINK_KINDS[k]
        if k in (NVL_OUT, NVL_IN, NPU_OUT, NPU_IN):
            node, local = divmod(idx, self.gpus_per_node)
            dev = "gpu" if self.kind == "cluster" else "npu"
            return f"{name}[node {node}, {dev} {local}]"
        if k in (NIC_UP, NIC_DOWN):
            node, nic = divmod(idx, self.nics_per_node)
            return f"{name}[node {node}, nic {nic}]"
        if k in (LEAF_UP, LEAF_DOWN):
            lpr = int(self.iparams[P_LPR])
            rail, group = divmod(idx, lpr)
            return f"{name}[rail {rail}, leaf {group}]"
        return f"{name}[node {idx}]"

    def links_of_kind(self, kind: str) -> np.ndarray:
        """Link ids of one kind, in the natural order (node-major)."""
        kind = check_choice("kind", kind, LINK_KINDS)  # the canonical spelling ("NIC_UP" too)
        return np.flatnonzero(self.link_kind == LINK_KINDS.index(kind))

    def scaled_capacity(self, efficiency=None) -> np.ndarray:
        """Link capacities (bytes/s) times ``efficiency``: a number in [1e-6, 1] for every link,
        or a dict of such numbers per link kind (missing kinds keep 1), or None (1).

        At least 1e-6: below that a link is not slow but broken, and the engines' rate floors
        (fluid: 1e-250 bytes/s) would refuse it under another name.

        >>> t = h800_cluster(2)
        >>> float(t.scaled_capacity({"nic_up": 0.5})[t.links_of_kind("nic_up")[0]]) / 1e9
        25.0
        """
        if efficiency is None:
            return self.capacity * 1.0
        if isinstance(efficiency, dict):
            eff = np.ones(self.n_links)
            for name, value in efficiency.items():
                if name not in LINK_KINDS:
                    raise ValueError(
                        f"efficiency keys must be link kinds {LINK_KINDS}; got {name!r}"
                    )
                eff[self.link_kind == LINK_KINDS.index(name)] = check_real(
                    f"efficiency[{name!r}]", value, lo=1e-6, hi=1.0
                )
            return self.capacity * eff
        return self.capacity * check_real("efficiency", efficiency, lo=1e-6, hi=1.0)

    def describe(self) -> str:
        """A short text block: devices and nodes, the per-GPU scale-up and NIC bandwidths (per
        direction, with units), the rails/planes layout, the fabric, the hop latencies, then the
        source of every default number. A link kind whose links differ shows its range.

        >>> print(h800_cluster(2).describe())  # doctest: +ELLIPSIS
        H800 x 2 nodes: 2 nodes x 8 = 16 GPUs
          scale-up: 160 GB/s per GPU per direction, one port into a non-blocking domain of 8 GPUs...
          NICs: 8 per node x 400 Gb/s (50 GB/s) per direction; 1 GPU per NIC, so 50 GB/s per GPU
          rails: 8 (NIC r of every node on rail r); 1 leaf per rail, up to 32 nodes each; 8 leaves
          fabric: multi_plane - 8 planes (one per rail) that share no switch; traffic changes ...
          spine: non-blocking (ideal ECMP) above the leaves; leaf uplinks oversubscribed 1:1
          hop latency: scale-up 3.33 µs; NIC to NIC under one leaf 2.8 µs; through the spine +0.9 µs
          sources:
            nvlink_bw: 160 GB/s per direction achieved ...
        """
        return describe_text(self)


def _kind_slot(k: int) -> int:
    # Superpod link kinds reuse the first four offset slots.
    return k - NPU_OUT if k >= NPU_OUT else k


# --------------------------------------------------------------------------- builders


def cluster(
    n_nodes: int,
    *,
    gpus_per_node: int = 8,
    nics_per_node: int = 8,
    nvlink_bw: float,
    nic_bw: float,
    nodes_per_leaf: int = 32,
    oversubscription: float = 1.0,
    fabric: str = "multi_plane",
    cross_rail: str = "pxn",
    nvlink_latency: float = 0.0,
    nic_latency: float = 0.0,
    spine_latency: float = 0.0,
    name: str = "cluster",
    sources: dict | None = None,
) -> Topology:
    """A scale-out cluster of ``n_nodes`` nodes (see the module docstring for the model).

    Size: the topology holds three numbers per directed link (``2 n_gpus + 2 n_nodes
    nics_per_node`` + a few per leaf), 24 bytes each; the memory budget of
    :mod:`uneven.limits` (2 GiB by default) allows about 40 million GPUs.

    Parameters
    ----------
    nvlink_bw : bytes/s per GPU per direction into/out of the NVLink domain (at most
        :data:`MAX_BW`, like every bandwidth here).
    nic_bw : bytes/s per NIC per direction.
    nodes_per_leaf : nodes whose NIC r hang off one leaf switch of rail r.
    oversubscription : leaf downlink capacity / leaf uplink capacity (1 = non-blocking).
    fabric : ``"multi_plane"`` (rails never meet in a switch) or ``"multi_rail"`` (shared spines).
    cross_rail : ``"pxn"`` (forward over NVLink to the destination's rail) or ``"spine"``
        (only with ``multi_rail``).
    nvlink_latency, nic_latency, spine_latency : seconds for an NVLink hop, a NIC-to-NIC crossing
        under one leaf, and the extra of going through the spine.

    >>> c = cluster(2, nvlink_bw=160e9, nic_bw=50e9)
    >>> c.n_gpus, c.gpus_per_nic
    (16, 1)
    """
    name = check_str("name", name)
    n_nodes = check_int("n_nodes", n_nodes, lo=1)
    g = check_int("gpus_per_node", gpus_per_node, lo=1)
    k = check_int("nics_per_node", nics_per_node, lo=1)
    if g % k:
        raise ValueError(
            f"nics_per_node must divide gpus_per_node={g}; got {k} (accepted: a divisor of {g})"
        )
    nvlink_bw = check_real("nvlink_bw", nvlink_bw, lo=0.0, lo_open=True, hi=MAX_BW,
                           unit="bytes/s")
    nic_bw = check_real("nic_bw", nic_bw, lo=0.0, lo_open=True, hi=MAX_BW, unit="bytes/s")
    npl = check_int("nodes_per_leaf", nodes_per_leaf, lo=1)
    over = check_real("oversubscription", oversubscription, lo=1.0)
    fabric = check_choice("fabric", fabric, ("multi_plane", "multi_rail"))
    cross_rail = check_choice("cross_rail", cross_rail, ("pxn", "spine"))
    if fabric == "multi_plane" and cross_rail != "pxn":
        raise ValueError(
            "cross_rail must be 'pxn' when fabric='multi_plane' (planes share no switch, so traffic"
            f" can change rail only over NVLink); got {cross_rail!r}"
        )
    nvl_lat = check_real("nvlink_latency", nvlink_latency, lo=0.0, unit="s")
    nic_lat = check_real("nic_latency", nic_latency, lo=0.0, unit="s")
    spine_lat = check_real("spine_latency", spine_latency, lo=0.0, unit="s")

    offs, ip = _structure("cluster", n_nodes, g, k, npl, cross_rail, fabric)
    n, lpr, n_links = n_nodes * g, int(ip[P_LPR]), offs[-1]
    _check_links_budget(n_nodes, n_links)
    sizes = np.diff(offs)
    kind = np.repeat(np.arange(6, dtype=np.int64), sizes)
    # A leaf's uplink bundle carries what its nodes' NICs could send, divided by oversubscription.
    nodes_in_group = np.minimum(npl, n_nodes - np.arange(lpr) * npl)
    leaf_cap = np.tile(nodes_in_group * nic_bw / over, k)
    capacity = np.concatenate(
        [np.full(2 * n, nvlink_bw), np.full(2 * n_nodes * k, nic_bw), leaf_cap, leaf_cap]
    ).astype(np.float64)
    # Latency is charged once per crossing: on the out-port of NVLink, on the NIC uplink, and on the
    # leaf uplink for the extra of going through the spine.
    latency = np.zeros(n_links)
    latency[offs[0] : offs[1]] = nvl_lat
    latency[offs[2] : offs[3]] = nic_lat
    latency[offs[4] : offs[5]] = spine_lat
    return Topology(
        name=name, kind="cluster", n_nodes=n_nodes, gpus_per_node=g, nics_per_node=k,
        nodes_per_leaf=npl, fabric=fabric, cross_rail=cross_rail, oversubscription=over,
        capacity=capacity, latency=latency, link_kind=kind, iparams=ip,
        hop_latency=(0.0, nvl_lat, nic_lat), sources=_check_sources(sources),
    )


def superpod(
    n_nodes: int,
    *,
    npus_per_node: int = 8,
    npu_bw: float,
    node_uplink_bw: float | None = None,
    hop_latency: tuple = (0.0, 0.0, 0.0),
    name: str = "superpod",
    sources: dict | None = None,
) -> Topology:
    """A load/store superpod: NPU ports to an in-node switch, node uplinks to a non-blocking tier.

    ``hop_latency`` = (local, one hop, two hops) access latencies in seconds; they are spread on the
    links so that a route's summed latency equals its hop class's latency.
    ``node_uplink_bw`` defaults to ``npus_per_node * npu_bw`` (a non-blocking L2 tier).
    Size: 24 bytes per directed link (``2 n_npus + 2 n_nodes`` links); the memory budget of
    :mod:`uneven.limits` (2 GiB by default) allows about 40 million NPUs.

    >>> superpod(2, npu_bw=1e9).n_links
    36
    """
    name = check_str("name", name)
    n_nodes = check_int("n_nodes", n_nodes, lo=1)
    g = check_int("npus_per_node", npus_per_node, lo=1)
    npu_bw = check_real("npu_bw", npu_bw, lo=0.0, lo_open=True, hi=MAX_BW, unit="bytes/s")
    if node_uplink_bw is None:
        node_uplink_bw = g * npu_bw
    node_uplink_bw = check_real("node_uplink_bw", node_uplink_bw, lo=0.0, lo_open=True,
                                hi=g * MAX_BW, unit="bytes/s")
    h0, h1, h2 = _hop_latencies(hop_latency)
    offs, ip = _structure("superpod", n_nodes, g, 1, n_nodes, "none", "load_store")
    n = n_nodes * g
    _check_links_budget(n_nodes, offs[-1])
    sizes = np.diff(offs)
    kind = np.repeat(np.arange(NPU_OUT, NPU_OUT + 4, dtype=np.int64), sizes)
    capacity = np.concatenate(
        [np.full(2 * n, npu_bw), np.full(2 * n_nodes, node_uplink_bw)]
    ).astype(np.float64)
    latency = np.zeros(int(offs[-1]))
    latency[offs[0] : offs[1]] = h1  # one hop: out-port (the in-port adds nothing)
    latency[offs[2] : offs[3]] = h2 - h1  # two hops: the extra of going through L2
    return Topology(
        name=name, kind="superpod", n_nodes=n_nodes, gpus_per_node=g, nics_per_node=1,
        nodes_per_leaf=n_nodes, fabric="load_store", cross_rail="none", oversubscription=1.0,
        capacity=capacity, latency=latency, link_kind=kind, iparams=ip,
        hop_latency=(h0, h1, h2), sources=_check_sources(sources),
    )


# --------------------------------------------------------------------------- structure checks


def _structure(kind, n_nodes, g, k, npl, cross_rail, fabric):
    """Link-segment offsets (Python ints) and the routing parameter vector of a structure."""
    ip = np.zeros(N_IPARAMS, dtype=np.int64)
    n = n_nodes * g
    if kind == "cluster":
        lpr = -(-n_nodes // npl)  # leaf groups per rail
        sizes = [n, n, n_nodes * k, n_nodes * k, k * lpr, k * lpr]
    else:
        lpr = 1
        sizes = [n, n, n_nodes, n_nodes]
    offs = [0]
    for size in sizes:
        offs.append(offs[-1] + size)
    if offs[-1] >= 2**62:
        raise ValueError(f"n_nodes={n_nodes} with {g} devices per node gives more links than "
                         "any index can hold")
    ip[P_KIND] = KIND_CLUSTER if kind == "cluster" else KIND_SUPERPOD
    ip[P_N], ip[P_G], ip[P_K] = n, g, k
    ip[P_NPL], ip[P_LPR], ip[P_NODES] = npl, lpr, n_nodes
    ip[P_PXN] = 1 if cross_rail == "pxn" else 0
    # Routes never read the plane count: with the spine layer modelled as one ideal (ECMP without
    # collisions) bundle per leaf, separate planes and shared spines load links alike under PXN.
    # It is kept in the vector so kernels could tell the fabrics apart (e.g. a plane failure).
    ip[P_PLANES] = k if fabric == "multi_plane" else 1
    if kind == "cluster":
        ip[P_OFF0 : P_OFF0 + 6] = offs[:6]
    else:
        ip[P_OFF0 : P_OFF0 + 4] = offs[:4]
        ip[P_OFF0 + 4] = offs[4]
        ip[P_OFF0 + 5] = offs[4]
    ip[P_NLINKS] = offs[-1]
    return offs, ip


def _check_links_budget(n_nodes, n_links):
    check_bytes("n_nodes", n_nodes, 24 * n_links,
                f"{n_links:,} directed links x (capacity, latency, kind)")


def _hop_latencies(hop_latency) -> tuple:
    if isinstance(hop_latency, np.ndarray) and hop_latency.size == 3:
        hop_latency = tuple(hop_latency.tolist())
    if not isinstance(hop_latency, (tuple, list)) or len(hop_latency) != 3:
        raise ValueError("hop_latency must be 3 numbers (local, 1 hop, 2 hops) in s; "
                         f"got {_show(hop_latency)}")
    h0, h1, h2 = (check_real(f"hop_latency[{i}]", v, lo=0.0, unit="s")
                  for i, v in enumerate(hop_latency))
    if not h1 <= h2:
        raise ValueError(f"hop_latency must have one hop <= two hops; got {hop_latency}")
    return h0, h1, h2


def _check_sources(sources) -> dict:
    if sources is None:
        return {}
    if not isinstance(sources, Mapping) or not all(
        isinstance(key, str) and isinstance(text, str) for key, text in sources.items()
    ):
        raise ValueError(f"sources must be a dict of str -> str (where each number came from); "
                         f"got {_show(sources)}")
    return dict(sources)


def _frozen_array(name, value, *, as_int=False, shape=None, lo=None, lo_open=False, unit=""):
    """``value`` checked and read-only; an owned float64/int64 array is taken over, not copied."""
    want = np.int64 if as_int else np.float64
    if not (isinstance(value, np.ndarray) and value.dtype == want and value.base is None
            and value.flags.c_contiguous):
        if as_int:
            value = as_int_array(name, value, shape=shape)
        else:
            value = as_float_array(name, value, shape=shape, lo=lo, lo_open=lo_open, unit=unit)
    else:
        if shape is not None and value.shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {value.shape}")
        if not as_int and value.size:
            if not np.isfinite(value).all():
                raise ValueError(f"{name} must contain only finite numbers")
            worst = value.min()
            if lo is not None and (worst < lo or (lo_open and worst == lo)):
                cmp = ">" if lo_open else ">="
                raise ValueError(f"{name} must have every entry {cmp} {lo} (in {unit}); "
                                 f"smallest entry is {worst}")
    value.flags.writeable = False
    return value


def _validate_topology(t: Topology) -> None:
    """Every field of ``t`` checked against the others (see :class:`Topology`)."""
    def put(name, value):
        object.__setattr__(t, name, value)

    check_str("name", t.name)
    kind = check_choice("kind", t.kind, ("cluster", "superpod"))
    n_nodes = check_int("n_nodes", t.n_nodes, lo=1)
    g = check_int("gpus_per_node", t.gpus_per_node, lo=1)
    k = check_int("nics_per_node", t.nics_per_node, lo=1, hi=g)
    npl = check_int("nodes_per_leaf", t.nodes_per_leaf, lo=1)
    if kind == "cluster":
        if g % k:
            raise ValueError(f"nics_per_node must divide gpus_per_node={g}; got {k}")
        fabric = check_choice("fabric", t.fabric, ("multi_plane", "multi_rail"))
        cross = check_choice("cross_rail", t.cross_rail, ("pxn", "spine"))
        if fabric == "multi_plane" and cross != "pxn":
            raise ValueError(f"cross_rail must be 'pxn' when fabric='multi_plane'; got {cross!r}")
        over = check_real("oversubscription", t.oversubscription, lo=1.0)
    else:
        if k != 1 or npl != n_nodes:
            raise ValueError(f"nics_per_node must be 1 and nodes_per_leaf must be n_nodes for a "
                             f"superpod; got {k} and {npl}")
        fabric = check_choice("fabric", t.fabric, ("load_store",))
        cross = check_choice("cross_rail", t.cross_rail, ("none",))
        over = check_real("oversubscription", t.oversubscription, lo=1.0, hi=1.0)
    for name, value in (("kind", kind), ("fabric", fabric), ("cross_rail", cross),
                        ("n_nodes", n_nodes), ("gpus_per_node", g), ("nics_per_node", k),
                        ("nodes_per_leaf", npl), ("oversubscription", over)):
        put(name, value)
    offs, ip = _structure(kind, n_nodes, g, k, npl, cross, fabric)
    got = t.iparams
    if not (isinstance(got, np.ndarray) and got.shape == ip.shape and np.array_equal(got, ip)):
        culprit = "n_nodes"
        if isinstance(got, np.ndarray) and got.shape == ip.shape:
            for name, slot, value in (("n_nodes", P_NODES, n_nodes), ("gpus_per_node", P_G, g),
                                      ("nics_per_node", P_K, k), ("nodes_per_leaf", P_NPL, npl),
                                      ("cross_rail", P_PXN, ip[P_PXN]),
                                      ("fabric", P_PLANES, ip[P_PLANES]),
                                      ("kind", P_KIND, ip[P_KIND])):
                if got[slot] != value:
                    culprit = name
                    break
            built = (f"n_nodes={int(got[P_NODES])}, gpus_per_node={int(got[P_G])}, "
                     f"nics_per_node={int(got[P_K])}, nodes_per_leaf={int(got[P_NPL])}, "
                     f"cross_rail={'pxn' if got[P_PXN] else 'spine'!r}")
        else:
            culprit, built = "iparams", "another structure"
        value = getattr(t, culprit, None)
        raise ValueError(
            f"{culprit}={value!r:.40} does not match the link arrays and routes of this topology, "
            f"which were built for {built}; build a new topology (cluster(...), "
            "h800_cluster(...)) instead"
        )
    put("iparams", _frozen_array("iparams", got, as_int=True))
    n_links = offs[-1]
    put("capacity", _frozen_array("capacity", t.capacity, shape=(n_links,), lo=0.0, lo_open=True,
                                  unit="bytes/s"))
    put("latency", _frozen_array("latency", t.latency, shape=(n_links,), lo=0.0, unit="s"))
    lk = _frozen_array("link_kind", t.link_kind, as_int=True, shape=(n_links,))
    first = 0 if kind == "cluster" else NPU_OUT
    for i in range(len(offs) - 1):
        seg = lk[offs[i] : offs[i + 1]]
        if seg.size and (seg.min() != first + i or seg.max() != first + i):
            raise ValueError(f"link_kind must give links {offs[i]}..{offs[i + 1] - 1} the kind "
                             f"{LINK_KINDS[first + i]!r}; it does not")
    put("link_kind", lk)
    h0, h1, h2 = (_hop_latencies(t.hop_latency) if kind == "superpod" else
                  tuple(check_real(f"hop_latency[{i}]", v, lo=0.0, unit="s")
                        for i, v in enumerate(_three(t.hop_latency))))
    put("hop_latency", (h0, h1, h2))
    put("sources", _check_sources(t.sources))


def _three(hop_latency):
    if isinstance(hop_latency, np.ndarray) and hop_latency.size == 3:
        hop_latency = tuple(hop_latency.tolist())
    if not isinstance(hop_latency, (tuple, list)) or len(hop_latency) != 3:
        raise ValueError("hop_latency must be 3 numbers (local, 1 hop, 2 hops) in s; "
                         f"got {_show(hop_latency)}")
    return hop_latency


# --------------------------------------------------------------------------- presets

H800_SOURCES = {
    "nvlink_bw": "160 GB/s per direction achieved (DeepSeek-V3 report / ISCA'25 [paper]; "
    "400 GB/s is the bidirectional nominal figure)",
    "nic_bw": "one 400 Gb/s CX7 InfiniBand NIC per GPU = 50 GB/s nominal (ISCA'25 [paper])",
    "latency": "NVLink 3.33 us, IB 2.8 us same leaf / 3.7 us cross leaf, 64-B messages measured "
    "at the CPU (ISCA'25 Table 5 [paper])",
    "leaves": "64-port switches, rail-optimised: 32 nodes per leaf per rail [model]",
    "fabric": "eight planes that share no switch, PXN across rails (ISCA'25 [paper])",
}


def _count(n_nodes) -> int:
    # Checked before it names the topology: a value whose text is long would otherwise fail on
    # the name's length instead of naming n_nodes.
    return check_int("n_nodes", n_nodes, lo=1)


def h800_cluster(n_nodes: int = 8, *, fabric: str = "multi_plane", cross_rail: str = "pxn",
                 nodes_per_leaf: int = 32, oversubscription: float = 1.0,
                 nvlink_bw: float = gbyte_per_s(160), nic_bw: float = gbit_per_s(400)) -> Topology:
    """DeepSeek-V3-like H800 nodes: 8 GPUs, 8 NICs of 400 Gb/s, NVLink ~160 GB/s per direction.

    Every default is labelled in ``.sources``. Sizes as in :func:`cluster` (about 5 million
    nodes within the default memory budget).

    >>> print(h800_cluster(2).describe().splitlines()[0])
    H800 x 2 nodes: 2 nodes x 8 = 16 GPUs
    """
    return cluster(
        n_nodes, gpus_per_node=8, nics_per_node=8, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
        nodes_per_leaf=nodes_per_leaf, oversubscription=oversubscription, fabric=fabric,
        cross_rail=cross_rail, nvlink_latency=us(3.33), nic_latency=us(2.8),
        spine_latency=us(0.9), name=f"H800 x {_count(n_nodes)} nodes", sources=H800_SOURCES,
    )


H20_SOURCES = {
    "nvlink_bw": "900 GB/s bidirectional NVLink = 450 GB/s per direction (public H20 spec, "
    "as quoted by the SGLang/Ant Group H20 write-up)",
    "nic_bw": "4 x 400 Gb/s RDMA NICs per 8-GPU node, so two GPUs share one NIC (same source)",
    "latency": "taken equal to the H800 preset's ISCA'25 Table 5 values [model]",
    "fabric": "multi-rail with shared spines [model]; PXN across rails",
}


def h20_cluster(n_nodes: int = 4, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                nodes_per_leaf: int = 32, oversubscription: float = 1.0) -> Topology:
    """H20-like nodes: 8 GPUs sharing 4 NICs of 400 Gb/s in pairs, NVLink 450 GB/s per direction.
    Sizes as in :func:`cluster`."""
    return cluster(
        n_nodes, gpus_per_node=8, nics_per_node=4, nvlink_bw=gbyte_per_s(450),
        nic_bw=gbit_per_s(400), nodes_per_leaf=nodes_per_leaf, oversubscription=oversubscription,
        fabric=fabric, cross_rail=cross_rail, nvlink_latency=us(3.33), nic_latency=us(2.8),
        spine_latency=us(0.9), name=f"H20 x {_count(n_nodes)} nodes", sources=H20_SOURCES,
    )


CM384_SOURCES = {
    "size": "48 nodes x 8 Ascend 910C NPUs = 384 (CloudMatrix384, arXiv 2506.12708 [public])",
    "npu_bw": "> 392 GB/s unidirectional UB bandwidth per NPU [public]; 392 used",
    "node_uplink_bw": "L2 tier non-blocking, inter-node < 3% below intra-node bandwidth "
    "[public]; modelled as 0.97 x 8 x 392 GB/s",
    "hop_latency": "local 0.12 us [model]; one hop 5x local [model]; two hops 11.5x local "
    "(chapter page, UBEP [chapter]); two hops - one hop < 1 us [public]",
}


def cloudmatrix384(n_nodes: int = 48, *, local_latency: float = us(0.12),
                   one_hop_factor: float = 5.0, two_hop_factor: float = 11.5) -> Topology:
    """A CloudMatrix384-like superpod; hop latencies as multiples of a local access
    (``local_latency`` at most 1 s, factors at most 1e6).

    >>> t = cloudmatrix384()
    >>> t.n_gpus, round(t.hop_latency[2] / t.hop_latency[0], 1)
    (384, 11.5)
    """
    local = check_real("local_latency", local_latency, lo=0.0, lo_open=True, hi=1.0, unit="s")
    f1 = check_real("one_hop_factor", one_hop_factor, lo=1.0, hi=1e6)
    f2 = check_real("two_hop_factor", two_hop_factor, lo=f1, hi=1e6)
    bw = gbyte_per_s(392)
    return superpod(
        n_nodes, npus_per_node=8, npu_bw=bw, node_uplink_bw=0.97 * 8 * bw,
        hop_latency=(local, f1 * local, f2 * local),
        name=f"CloudMatrix-like x {_count(n_nodes)} nodes", sources=CM384_SOURCES,
    )


def _check_topology(topo) -> Topology:
    if not isinstance(topo, Topology):
        raise ValueError(f"topo must be a uneven.topology.Topology; got {type(topo).__name__}")
    return topo

