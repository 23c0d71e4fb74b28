"""Today's hardware as topologies: H100, H200, B200, GB200 NVL72 and MI300X-class clusters.

Each preset is one call to :func:`uneven.topology.cluster` with sourced numbers; the topology's
``.sources`` says where each came from and :meth:`~uneven.topology.Topology.describe` prints them.
Labels: [vendor] a vendor's datasheet, white paper, user guide or reference architecture (named,
with its year where the document gives one); [paper], [repo] as elsewhere; [derived] arithmetic
on sourced numbers; *(our assumption)* where no source gives the number.

How bandwidths are counted (the H20 preset's convention): **nominal, per direction, in bytes/s**.
The engines charge the two directions of a port separately (``nvl_out`` and ``nvl_in``, ``nic_up``
and ``nic_down``), so a vendor's "900 GB/s" NVLink figure, which adds both directions, becomes
450e9 here, and a "400 Gb/s" NIC becomes 400e9 / 8 = 50e9. The H800 preset is the one exception:
its 160 GB/s is DeepSeek's *achieved* NVLink rate (400 GB/s bidirectional nominal would be 200 per
direction), so comparing it with these nominal presets flatters the newer parts. To model achieved
rates, pass a smaller ``nvlink_bw``/``nic_bw`` or an ``efficiency`` per link kind to the engines
(``{"nvl_out": 0.85, "nvl_in": 0.85}``). Latencies are the H800 preset's measured values (ISCA'25
Table 5 [paper]) reused *(our assumption)*: no vendor states a comparable end-to-end figure.

What :func:`~uneven.topology.cluster` cannot express, and how each preset is modelled:

* every scale-up domain is **one non-blocking switch with one port per GPU**. That is what the
  NVSwitch chips of an HGX board and the nine switch trays of an NVL72 rack provide (full
  bisection), but a failed switch chip or tray, which takes a share of every GPU's links, can
  only be approximated by scaling every ``nvl`` capacity by the share left, and in-switch
  reductions (NVLS/SHARP) are not modelled;
* **MI300X's Infinity Fabric is a full mesh**, one 64 GB/s-per-direction link per GPU pair, not a
  switch. The preset gives each GPU a port of the sum of its 7 links (448 GB/s per direction):
  exact when a GPU spreads its bytes evenly over its peers (all-to-all, balanced EP dispatch),
  up to 7x optimistic when they go to one peer (a pipeline send, a PXN forward to one GPU, a hot
  expert). For such traffic pass ``nvlink_bw=MI300X_LINK_BW``, which is pessimistic for the
  spread case by the same factor. No route is forwarded through a third GPU of the mesh;
* each **leaf serves one rail** of ``nodes_per_leaf`` nodes; real leaves often carry several rails.
  With a non-blocking spine this changes only which transfers pay the spine latency;
* an NVL72 **compute tray** (4 GPUs, 2 Grace CPUs and their C2C links) is not a unit of the model:
  the rack is one node of 72 GPUs with 72 NICs, NIC r serving GPU r.

>>> t = h100_cluster(64)
>>> t.n_gpus, t.gpus_per_nic, float(t.capacity[t.links_of_kind("nvl_out")[0]])
(512, 1, 450000000000.0)
>>> gb200_nvl72(2).gpus_per_node
72
"""

from __future__ import annotations

from types import MappingProxyType

from ._validate import check_int
from .topology import Topology, cloudmatrix384, cluster, h20_cluster, h800_cluster
from .units import gbit_per_s, gbyte_per_s, us

__all__ = [
    "h100_cluster",
    "h200_cluster",
    "b200_cluster",
    "gb200_nvl72",
    "mi300x_cluster",
    "MI300X_LINK_BW",
    "PRESETS",
]

#: One MI300X Infinity Fabric link, per direction (bytes/s): x16 lanes at 32 Gb/s each
#: [vendor: AMD CDNA 3 white paper] = 16 x 32e9 / 8 = 64e9 [derived].
MI300X_LINK_BW = 16 * gbit_per_s(32)

# The H800 preset's ISCA'25 Table 5 latencies, reused by every preset here (our assumption).
_NVL_LAT, _NIC_LAT, _SPINE_LAT = us(3.33), us(2.8), us(0.9)
_LATENCY = ("the H800 preset's measured values reused (ISCA'25 Table 5 [paper]): scale-up hop "
            "3.33 us, NIC to NIC under one leaf 2.8 us, +0.9 us through the spine "
            "(our assumption)")
_LEAVES = ("32 nodes per leaf per rail, as a 64-port 400G leaf with half its ports facing the "
           "nodes allows; the H800 preset's choice (our assumption)")
_PXN = ("PXN across rails: NCCL forwards over NVLink to the GPU on the destination's rail by "
        "default (our assumption that it is on)")


def _nodes(n_nodes) -> int:
    # Checked before it names the topology, so a long bad value is refused as n_nodes.
    return check_int("n_nodes", n_nodes, lo=1)


def _preset(label, n_nodes, *, gpus, nics, nvlink_bw, nic_bw, fabric, cross_rail,
            nodes_per_leaf, oversubscription, sources, unit="nodes") -> Topology:
    return cluster(
        n_nodes, gpus_per_node=gpus, nics_per_node=nics, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
        nodes_per_leaf=nodes_per_leaf, oversubscription=oversubscription, fabric=fabric,
        cross_rail=cross_rail, nvlink_latency=_NVL_LAT, nic_latency=_NIC_LAT,
        spine_latency=_SPINE_LAT, name=f"{label} x {_nodes(n_nodes)} {unit}", sources=sources,
    )


H100_SOURCES = {
    "gpus_per_node": "8 H100 SXM GPUs and 4 NVSwitch chips per node [vendor: NVIDIA DGX BasePOD "
    "reference architecture, DGX H100/H200 specifications]",
    "nvlink_bw": "NVLink 4: 900 GB/s per GPU, both directions added [vendor: NVIDIA H100 Tensor "
    "Core GPU datasheet, 2023] = 450 GB/s per direction [derived], nominal; a peer-to-peer copy "
    "test reaches about 380 GB/s one way (NVIDIA/nccl issue 1264 [repo])",
    "nics_per_node": "8 single-port ConnectX-7, one per GPU [vendor: DGX BasePOD reference "
    "architecture, DGX H100/H200 specifications]",
    "nic_bw": "400 Gb/s per ConnectX-7 [vendor: same] = 50 GB/s per direction [derived]",
    "fabric": "rail-optimised leaf-spine, rails meeting in shared spines [vendor: NVIDIA HGX AI "
    "Factory reference architecture (H100, H200, B200), 400 Gb/s per GPU]; " + _PXN,
    "leaves": _LEAVES,
    "latency": _LATENCY,
}


def h100_cluster(n_nodes: int = 8, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                 nodes_per_leaf: int = 32, oversubscription: float = 1.0,
                 nvlink_bw: float = gbyte_per_s(450),
                 nic_bw: float = gbit_per_s(400)) -> Topology:
    """HGX/DGX H100 SXM nodes: 8 GPUs on NVLink 4 (450 GB/s per direction), 8 NICs of 400 Gb/s,
    rail-optimised. Every number is labelled in ``.sources``; sizes as in
    :func:`~uneven.topology.cluster`.

    >>> print(h100_cluster(2).describe().splitlines()[2])
      NICs: 8 per node x 400 Gb/s (50 GB/s) per direction; 1 GPU per NIC, so 50 GB/s per GPU
    """
    return _preset("H100", n_nodes, gpus=8, nics=8, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
                   fabric=fabric, cross_rail=cross_rail, nodes_per_leaf=nodes_per_leaf,
                   oversubscription=oversubscription, sources=H100_SOURCES)


H200_SOURCES = {
    **H100_SOURCES,
    "gpus_per_node": "8 H200 SXM GPUs and 4 NVSwitch chips per node, the H100 board's layout "
    "[vendor: NVIDIA DGX BasePOD reference architecture, DGX H100/H200 specifications]",
    "nvlink_bw": "NVLink 4: 900 GB/s per GPU, both directions added [vendor: NVIDIA H200 Tensor "
    "Core GPU datasheet, 2024] = 450 GB/s per direction [derived], nominal",
    "memory": "what sets H200 apart is memory, 141 GB of HBM3e at 4.8 TB/s [vendor: same]; a "
    "topology carries no memory, so the fabric numbers equal the H100 preset's",
}


def h200_cluster(n_nodes: int = 8, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                 nodes_per_leaf: int = 32, oversubscription: float = 1.0,
                 nvlink_bw: float = gbyte_per_s(450),
                 nic_bw: float = gbit_per_s(400)) -> Topology:
    """HGX/DGX H200 nodes: the H100 fabric (NVLink 4 at 450 GB/s per direction, 8 NICs of
    400 Gb/s); only the memory differs, which a topology does not hold.

    >>> h200_cluster(4).name
    'H200 x 4 nodes'
    """
    return _preset("H200", n_nodes, gpus=8, nics=8, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
                   fabric=fabric, cross_rail=cross_rail, nodes_per_leaf=nodes_per_leaf,
                   oversubscription=oversubscription, sources=H200_SOURCES)


B200_SOURCES = {
    "gpus_per_node": "8 B200 GPUs per HGX/DGX B200 node [vendor: NVIDIA DGX BasePOD reference "
    "architecture, DGX B200 specification]",
    "nvlink_bw": "NVLink 5: 18 links, 1.8 TB/s per GPU with both directions added [vendor: "
    "NVIDIA Blackwell architecture technical brief, 2024], 14.4 TB/s for the 8 GPUs [vendor: "
    "NVIDIA DGX B200 datasheet, 2024] = 900 GB/s per direction [derived], nominal",
    "nics_per_node": "8 single-port ConnectX-7, one per GPU [vendor: DGX B200 specification]",
    "nic_bw": "400 Gb/s per ConnectX-7 [vendor: same] = 50 GB/s per direction [derived]",
    "variants": "800 Gb/s per GPU is the HGX B300 design: ConnectX-8 SuperNICs, still NVLink 5 "
    "at 14.4 TB/s per node [vendor: NVIDIA HGX AI Factory reference architecture for B300, "
    "2-8-9-800]; model it with nic_bw=gbit_per_s(800)",
    "fabric": H100_SOURCES["fabric"],
    "leaves": _LEAVES,
    "latency": _LATENCY,
}


def b200_cluster(n_nodes: int = 8, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                 nodes_per_leaf: int = 32, oversubscription: float = 1.0,
                 nvlink_bw: float = gbyte_per_s(900),
                 nic_bw: float = gbit_per_s(400)) -> Topology:
    """HGX/DGX B200 nodes: 8 GPUs on NVLink 5 (900 GB/s per direction), 8 ConnectX-7 NICs of
    400 Gb/s. NVIDIA's 800 Gb/s variant is HGX B300 with ConnectX-8 SuperNICs (same NVLink):
    ``b200_cluster(nic_bw=gbit_per_s(800))`` models it.

    >>> t = b200_cluster(2, nic_bw=gbit_per_s(800))
    >>> float(t.capacity[t.links_of_kind("nic_up")[0]]) / 1e9
    100.0
    """
    return _preset("B200", n_nodes, gpus=8, nics=8, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
                   fabric=fabric, cross_rail=cross_rail, nodes_per_leaf=nodes_per_leaf,
                   oversubscription=oversubscription, sources=B200_SOURCES)


GB200_NVL72_SOURCES = {
    "gpus_per_node": "one node is one rack: 18 compute trays of 4 Blackwell GPUs and 2 Grace "
    "CPUs, joined by 9 NVLink switch trays into one 72-GPU NVLink domain [vendor: NVIDIA DGX "
    "GB200 user guide, hardware]",
    "nvlink_bw": "NVLink 5: 1.8 TB/s per GPU with both directions added [vendor: DGX GB200 user "
    "guide, networking], 130 TB/s for the rack = 72 x 1.8 [derived] = 900 GB/s per GPU per "
    "direction [derived], nominal",
    "scale_up": "the switch trays give every GPU full bandwidth to every other (non-blocking), "
    "modelled as one switch with one port per GPU (our reading)",
    "nics_per_node": "72 per rack: each compute tray has 4 ConnectX-7 InfiniBand ports, one per "
    "GPU [vendor: NVIDIA GB200 NVL multi-node tuning guide, 2025; Mission Control GB200 network "
    "guide, compute tray ports]",
    "nic_bw": "400 Gb/s NDR per ConnectX-7 [vendor: same] = 50 GB/s per direction [derived]; "
    "GB300 NVL72 trays carry 4 ConnectX-8 instead [vendor: NVIDIA NVL72 AI Factory reference "
    "architecture], nic_bw=gbit_per_s(800)",
    "fabric": "rail-optimised scale-out between racks with shared spines, NIC r of every rack "
    "on rail r (our assumption); " + _PXN,
    "leaves": "8 racks per leaf per rail, one 576-GPU scalable unit (our assumption)",
    "latency": _LATENCY,
}


def gb200_nvl72(n_nodes: int = 1, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                nodes_per_leaf: int = 8, oversubscription: float = 1.0,
                nvlink_bw: float = gbyte_per_s(900),
                nic_bw: float = gbit_per_s(400)) -> Topology:
    """GB200 NVL72 racks: each rack (``n_nodes`` counts racks) is one NVLink domain of 72 GPUs
    at 900 GB/s per direction each, with one 400 Gb/s NIC per GPU.

    >>> t = gb200_nvl72(2)
    >>> t.n_gpus, t.nics_per_node, t.hop_class(0, 71), t.hop_class(0, 72)
    (144, 72, 1, 2)
    """
    return _preset("GB200 NVL72", n_nodes, gpus=72, nics=72, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
                   fabric=fabric, cross_rail=cross_rail, nodes_per_leaf=nodes_per_leaf,
                   oversubscription=oversubscription, sources=GB200_NVL72_SOURCES, unit="racks")


MI300X_SOURCES = {
    "gpus_per_node": "8 MI300X on one universal base board, fully connected by 7 Infinity Fabric "
    "links per GPU [vendor: AMD CDNA 3 architecture white paper, 2023 (revised with MI325X)]",
    "nvlink_bw": "896 GB/s peak aggregate peer-to-peer per GPU, both directions added, over 7 "
    "x16 links at up to 32 Gb/s per lane [vendor: same, Table 2] = 7 x 64 GB/s = 448 GB/s per "
    "direction [derived], nominal",
    "scale_up": "a full mesh, one link per GPU pair, modelled as one switch port of the 7 links' "
    "sum: exact for evenly spread traffic, up to 7x optimistic for traffic to one peer (then pass "
    "nvlink_bw=MI300X_LINK_BW) (model)",
    "nics_per_node": "8 per node, one per GPU, as Azure's ND MI300X v5 has [vendor: Microsoft "
    "Azure ND MI300X v5 size series, 2024]; AMD leaves the NIC to the system builder",
    "nic_bw": "400 Gb/s NDR InfiniBand each [vendor: same] = 50 GB/s per direction [derived]",
    "fabric": "rail-optimised leaf-spine with shared spines (our assumption); PXN across rails, "
    "which RCCL implements (its PXN parameters in the rccl sources [repo]) (our assumption "
    "that it is on)",
    "leaves": _LEAVES,
    "latency": _LATENCY,
}


def mi300x_cluster(n_nodes: int = 8, *, fabric: str = "multi_rail", cross_rail: str = "pxn",
                   nodes_per_leaf: int = 32, oversubscription: float = 1.0,
                   nvlink_bw: float = 7 * MI300X_LINK_BW,
                   nic_bw: float = gbit_per_s(400)) -> Topology:
    """MI300X-class nodes: 8 GPUs in an Infinity Fabric full mesh, modelled as a switch port of
    448 GB/s per direction (the sum of a GPU's 7 links; see the module docstring for what that
    gets right and wrong), and 8 NICs of 400 Gb/s.

    >>> float(mi300x_cluster(2).capacity[0]) / 1e9, MI300X_LINK_BW / 1e9
    (448.0, 64.0)
    """
    return _preset("MI300X", n_nodes, gpus=8, nics=8, nvlink_bw=nvlink_bw, nic_bw=nic_bw,
                   fabric=fabric, cross_rail=cross_rail, nodes_per_leaf=nodes_per_leaf,
                   oversubscription=oversubscription, sources=MI300X_SOURCES)


#: Every preset by a short name (what :func:`uneven.topology_io.topology_from_dict` reads as
#: ``{"preset": name, ...}``).
PRESETS = MappingProxyType({
    "h800": h800_cluster,
    "h20": h20_cluster,
    "h100": h100_cluster,
    "h200": h200_cluster,
    "b200": b200_cluster,
    "gb200_nvl72": gb200_nvl72,
    "mi300x": mi300x_cluster,
    "cloudmatrix384": cloudmatrix384,
})
