"""The text of :meth:`uneven.topology.Topology.describe` (private): every number with its unit.

Bandwidths are per direction in decimal units (vendors' GB = 1e9 B; a NIC also in Gb/s), times
in microseconds. A link kind whose links differ (a degraded link) shows its range ``a..b``, so a
changed topology never describes itself as the uniform one it came from.
"""

from __future__ import annotations

import numpy as np

from .i18n import gettext as _


def bandwidth(x: float) -> str:
    """``'450 GB/s'``, ``'1.8 TB/s'``: bytes/s with a decimal prefix."""
    for scale, unit in ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if x >= scale:
            return f"{x / scale:.4g} {unit}"
    return f"{x:.4g} B/s"


def microseconds(x: float) -> str:
    """``'3.33 µs'``: seconds shown in microseconds."""
    return f"{x * 1e6:.3g} µs"


_RANGE = ".."  # no number or unit on the lines after the name contains it


def spread(values: np.ndarray, show) -> str:
    """One value if all links agree, else the range ``'low..high'``."""
    lo, hi = float(values.min()), float(values.max())
    return show(lo) if lo == hi else f"{show(lo)}{_RANGE}{show(hi)}"


def describe_text(t) -> str:
    """The summary of a topology ``t`` (see :meth:`Topology.describe`)."""
    if t.kind == "cluster":
        lines = [_("{name}: {n} nodes x {g} = {total} GPUs").format(
            name=t.name, n=t.n_nodes, g=t.gpus_per_node, total=t.n_gpus)]
        lines += _cluster_lines(t)
    else:
        lines = [_("{name}: {n} nodes x {g} = {total} NPUs").format(
            name=t.name, n=t.n_nodes, g=t.gpus_per_node, total=t.n_gpus)]
        lines += _superpod_lines(t)
    if any(_RANGE in line for line in lines[1:]):
        lines.append(_("  (a..b: the links of that kind differ, from a to b)"))
    if t.sources:
        lines.append(_("  sources:"))
        lines += [f"    {key}: {text}" for key, text in t.sources.items()]
    return "\n".join(lines)


def _of(t, array, kind):
    return array[t.links_of_kind(kind)]


def _cluster_lines(t) -> list:
    k, g, over = t.nics_per_node, t.gpus_per_node, t.oversubscription
    nic = _of(t, t.capacity, "nic_up")
    lpr = t.n_leaves // k
    rails = (_("  rails: {k} (NIC r of every node on rail r); {lpr} leaf per rail, up to "
               "{per_leaf} nodes each; {leaves} leaves") if lpr == 1 else
             _("  rails: {k} (NIC r of every node on rail r); {lpr} leaves per rail, up to "
               "{per_leaf} nodes each; {leaves} leaves")).format(
        k=k, lpr=lpr, per_leaf=t.nodes_per_leaf, leaves=t.n_leaves)
    if t.fabric == "multi_plane":
        fabric = _("  fabric: multi_plane - {k} planes (one per rail) that share no switch; "
                   "traffic changes rail over NVLink (PXN)").format(k=k)
    elif t.cross_rail == "pxn":
        fabric = _("  fabric: multi_rail - rails meet in shared spines; traffic changes rail "
                   "over NVLink (PXN)")
    else:
        fabric = _("  fabric: multi_rail - rails meet in shared spines; traffic changes rail "
                   "in the spine")
    per_gpu = spread(nic / t.gpus_per_nic, bandwidth)
    return [
        _("  scale-up: {bw} per GPU per direction, one port into a non-blocking domain of {g} "
          "GPUs (links nvl_out/nvl_in)").format(bw=spread(_of(t, t.capacity, "nvl_out"),
                                                          bandwidth), g=g),
        (_("  NICs: {k} per node x {gbps} ({bw}) per direction; {n} GPUs per NIC, so {per} per "
           "GPU") if t.gpus_per_nic > 1 else
         _("  NICs: {k} per node x {gbps} ({bw}) per direction; {n} GPU per NIC, so {per} per "
           "GPU")).format(k=k, gbps=spread(nic * 8, _gigabits), bw=spread(nic, bandwidth),
                          n=t.gpus_per_nic, per=per_gpu),
        rails,
        fabric,
        _("  spine: non-blocking (ideal ECMP) above the leaves; leaf uplinks oversubscribed "
          "{over:g}:1").format(over=over),
        _("  hop latency: scale-up {up}; NIC to NIC under one leaf {leaf}; through the spine "
          "+{spine}").format(up=spread(_of(t, t.latency, "nvl_out"), microseconds),
                             leaf=spread(_of(t, t.latency, "nic_up"), microseconds),
                             spine=spread(_of(t, t.latency, "leaf_up"), microseconds)),
    ]


def _gigabits(bits_per_s: float) -> str:
    return f"{bits_per_s / 1e9:.4g} Gb/s"


def _superpod_lines(t) -> list:
    h0, h1, h2 = t.hop_latency
    return [
        _("  NPU port: {bw} per NPU per direction into its node's switch (links "
          "npu_out/npu_in)").format(bw=spread(_of(t, t.capacity, "npu_out"), bandwidth)),
        _("  node uplink: {bw} per node per direction into a non-blocking second tier (links "
          "node_up/node_down)").format(bw=spread(_of(t, t.capacity, "node_up"), bandwidth)),
        _("  fabric: load_store - hop class 0 is the device's own memory, 1 the same node, 2 "
          "another node"),
        _("  hop latency: local {h0}; one hop {h1}; two hops {h2}").format(
            h0=microseconds(h0), h1=microseconds(h1), h2=microseconds(h2)),
    ]
