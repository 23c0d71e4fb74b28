"""Topologies as plain dicts, so a cluster can live in a TOML or JSON file, and back again.

:func:`topology_to_dict` writes a topology as the arguments of the builder that makes it
(:func:`~uneven.topology.cluster` or :func:`~uneven.topology.superpod`, chosen by ``"kind"``),
plus, for a topology changed after it was built (a degraded link), the links that differ, keyed
by their names (:meth:`~uneven.topology.Topology.link_name`). :func:`topology_from_dict` builds
it again. The round trip is exact: floats are written as the floats they are (JSON keeps every
digit), so the rebuilt link arrays equal the original ones bit for bit.

A dict may name a preset of :data:`uneven.hardware.PRESETS` instead of a kind, with that preset's
own arguments, and add changed links either way. A TOML file (read with the standard library's
``tomllib``, Python 3.11+)::

    preset = "h100"
    n_nodes = 64
    nic_bw = 25e9                          # bytes/s; "200 Gb/s" works where units are parsed

    [link_capacity]                        # one slow NIC, bytes/s per direction
    "nic_up[node 3, nic 5]" = 12.5e9

Units are SI (bytes/s, seconds). Writing goes to JSON (``json.dumps(topology_to_dict(t))``):
the standard library reads TOML but does not write it, and this module adds no dependency.

>>> import json
>>> from uneven.hardware import h100_cluster
>>> d = topology_to_dict(h100_cluster(2))
>>> d["kind"], d["n_nodes"], d["nvlink_bw"], d["nic_bw"]
('cluster', 2, 450000000000.0, 50000000000.0)
>>> t = topology_from_dict(json.loads(json.dumps(d)))
>>> t.name, bool((t.capacity == h100_cluster(2).capacity).all())
('H100 x 2 nodes', True)
>>> topology_from_dict({"preset": "h100", "n_nodes": 2, "nic_bandwidth": 5e10})
Traceback (most recent call last):
...
ValueError: data has an unknown key 'nic_bandwidth' (did you mean 'nic_bw'?); ...
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
from collections.abc import Mapping

import numpy as np

from ._validate import _show, check_choice, check_real
from .hardware import PRESETS
from .quantities import warn_implausible
from .topology import LINK_KINDS, Topology, cluster, superpod

__all__ = ["topology_to_dict", "topology_from_dict"]

_BUILDERS = {"cluster": cluster, "superpod": superpod}
# Keys every dict may carry beside its builder's arguments: links changed after building.
_LINK_KEYS = ("link_capacity", "link_latency")
_LINK_NAME = re.compile(r"([a-z_]+)\[(?:node (\d+), (gpu|npu|nic) (\d+)|rail (\d+), leaf (\d+)"
                        r"|node (\d+))\]")


def topology_to_dict(topology: Topology) -> dict:
    """``topology`` as a plain dict of numbers, strings, lists and dicts (JSON- and TOML-shaped):
    its builder's arguments under ``"kind"``, and links that differ from what those arguments
    build under ``"link_capacity"`` (bytes/s) and ``"link_latency"`` (s), keyed by link name.

    The builder's bandwidths and latencies are the most common value of each link kind, so one
    degraded link is one entry, not a whole new topology.

    >>> import dataclasses
    >>> from uneven.topology import h800_cluster
    >>> t = h800_cluster(2)
    >>> slow = t.capacity.copy(); slow[t.links_of_kind("nic_up")[5]] = 25e9
    >>> topology_to_dict(dataclasses.replace(t, capacity=slow))["link_capacity"]
    {'nic_up[node 0, nic 5]': 25000000000.0}
    """
    if not isinstance(topology, Topology):
        raise ValueError("topology must be a uneven.topology.Topology (from cluster(), superpod() "
                         f"or a preset); got {type(topology).__name__}")
    t = topology
    if t.kind == "cluster":
        d = {"kind": "cluster", "name": t.name, "n_nodes": t.n_nodes,
             "gpus_per_node": t.gpus_per_node, "nics_per_node": t.nics_per_node,
             "nvlink_bw": _common(t, t.capacity, "nvl_out"),
             "nic_bw": _common(t, t.capacity, "nic_up"),
             "nodes_per_leaf": t.nodes_per_leaf, "oversubscription": t.oversubscription,
             "fabric": t.fabric, "cross_rail": t.cross_rail,
             "nvlink_latency": _common(t, t.latency, "nvl_out"),
             "nic_latency": _common(t, t.latency, "nic_up"),
             "spine_latency": _common(t, t.latency, "leaf_up")}
    else:
        d = {"kind": "superpod", "name": t.name, "n_nodes": t.n_nodes,
             "npus_per_node": t.gpus_per_node, "npu_bw": _common(t, t.capacity, "npu_out"),
             "node_uplink_bw": _common(t, t.capacity, "node_up"),
             "hop_latency": [float(x) for x in t.hop_latency]}
    d["sources"] = dict(t.sources)
    _fewest_overrides(t, d)
    try:
        built = _BUILDERS[t.kind](**{k: v for k, v in d.items() if k != "kind"})
    except ValueError as err:  # a topology made by hand, with numbers no builder takes
        raise ValueError(f"topology cannot be written as builder arguments: {err}") from None
    if t.kind == "cluster" and tuple(built.hop_latency) != tuple(t.hop_latency):
        d["hop_latency"] = [float(x) for x in t.hop_latency]
    for key, mine, theirs in (("link_capacity", t.capacity, built.capacity),
                              ("link_latency", t.latency, built.latency)):
        changed = np.flatnonzero(mine != theirs)
        if changed.size:
            d[key] = {t.link_name(int(i)): float(mine[i]) for i in changed}
    return d


def topology_from_dict(data: Mapping) -> Topology:
    """The topology a dict describes (see the module docstring): ``"kind"`` (``"cluster"``, the
    default, or ``"superpod"``) and that builder's arguments, or ``"preset"`` (a name in
    :data:`uneven.hardware.PRESETS`) and that preset's arguments; optionally ``"hop_latency"``
    (a cluster's three hop-class latencies, s) and changed links under ``"link_capacity"``
    (bytes/s) and ``"link_latency"`` (s), keyed by link name. A bad entry raises ``ValueError``
    naming its key.

    >>> t = topology_from_dict({"n_nodes": 2, "nvlink_bw": 160e9, "nic_bw": 50e9})
    >>> t.n_gpus, t.fabric
    (16, 'multi_plane')
    >>> topology_from_dict({"n_nodes": 2, "nvlink_bw": 160e9, "nic_bw": -1})
    Traceback (most recent call last):
    ...
    ValueError: data['nic_bw']: nic_bw must be a finite number in (0.0, 1e+30] (in bytes/s); got -1
    """
    if not isinstance(data, Mapping):
        raise ValueError("data must be a dict (e.g. from tomllib.load or json.load); got "
                         f"{_show(data)}")
    for key in data:
        if not isinstance(key, str):
            raise ValueError(f"data must have string keys; got the key {_show(key)}")
    if "preset" in data:
        if "kind" in data:
            raise ValueError("data must give either 'preset' or 'kind', not both; got "
                             f"preset={_show(data['preset'])} and kind={_show(data['kind'])}")
        name = check_choice("data['preset']", data["preset"], tuple(PRESETS))
        builder, skip, extra = PRESETS[name], {"preset"}, _LINK_KEYS
    else:
        kind = check_choice("data['kind']", data.get("kind", "cluster"), tuple(_BUILDERS))
        builder, skip = _BUILDERS[kind], {"kind"}
        extra = _LINK_KEYS + (("hop_latency",) if kind == "cluster" else ())
    params = inspect.signature(builder).parameters
    allowed = tuple(params) + tuple(extra)
    for key in data:
        if key not in allowed and key not in skip:
            near = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"data has an unknown key {key!r}{hint}; accepted keys: "
                             f"{', '.join(sorted(skip) + list(allowed))}")
    for key, p in params.items():
        if p.default is inspect.Parameter.empty and key not in data:
            raise ValueError(f"data lacks the key {key!r}, which {builder.__name__}() needs")
    kwargs = {k: v for k, v in data.items() if k in params}
    for key, value in kwargs.items():  # a number in a file is the caller's too: check its unit
        unit = "bytes/s" if key.endswith("_bw") else "s" if key.endswith("_latency") else None
        if unit and isinstance(value, (int, float)) and not isinstance(value, bool):
            warn_implausible(f"data[{key!r}]", value, unit, passed=True)
    t = _rebuilt(data, builder, kwargs)
    if "hop_latency" in data and t.kind == "cluster":
        try:  # the topology's own check names the entry (hop_latency[1] ...)
            t = dataclasses.replace(t, hop_latency=data["hop_latency"])
        except ValueError as err:
            raise ValueError(f"data['hop_latency']: {err}") from None
    changes = {}
    for key, field, unit in (("link_capacity", "capacity", "bytes/s"),
                             ("link_latency", "latency", "s")):
        if key in data:
            changes[field] = _changed_links(t, key, data[key], getattr(t, field), unit)
    if changes:
        t = dataclasses.replace(t, **changes)
    return t


# --------------------------------------------------------------------------- helpers


#: Builder arguments read off the links: (argument, "capacity" or "latency", link kind).
_READ_OFF = {"cluster": (("nvlink_bw", "capacity", "nvl_out"), ("nic_bw", "capacity", "nic_up"),
                         ("nvlink_latency", "latency", "nvl_out"),
                         ("nic_latency", "latency", "nic_up"),
                         ("spine_latency", "latency", "leaf_up")),
             "superpod": (("npu_bw", "capacity", "npu_out"),
                          ("node_uplink_bw", "capacity", "node_up"))}


def _fewest_overrides(t, d) -> None:
    """Where a link kind has a few distinct values (a tie, or a kind of two links with one
    degraded), take for each builder argument the value that leaves the fewest changed links:
    one argument sets several kinds (``nic_bw`` the NICs, leaves and spines), so the most common
    value of one kind can be the wrong one."""
    def overrides(args) -> int:
        try:
            built = _BUILDERS[t.kind](**{k: v for k, v in args.items() if k != "kind"})
        except ValueError:
            return t.n_links + 1
        return int(np.count_nonzero(built.capacity != t.capacity)
                   + np.count_nonzero(built.latency != t.latency))

    for key, field, kind in _READ_OFF[t.kind]:
        values, counts = np.unique(getattr(t, field)[t.links_of_kind(kind)], return_counts=True)
        if not 2 <= values.size <= 8:  # one value, or too many to try: the most common stays
            continue
        order = np.lexsort((values, -counts))  # most common first, then the smallest
        scored = [(overrides({**d, key: float(values[i])}), rank, float(values[i]))
                  for rank, i in enumerate(order)]
        d[key] = min(scored)[2]


def _common(t, array, kind) -> float:
    """The most frequent value of ``array`` over the links of ``kind`` (ties: the smallest)."""
    values, counts = np.unique(array[t.links_of_kind(kind)], return_counts=True)
    return float(values[int(np.argmax(counts))])


def _rebuilt(data, builder, kwargs):
    """``builder(**kwargs)``; its refusal renamed to the dict key it is about."""
    try:
        return builder(**kwargs)
    except ValueError as err:
        msg = str(err)
        key = _first_named(msg, [k for k in data if k in kwargs])
        where = f"data[{key!r}]" if key else "data"
        raise ValueError(f"{where}: {msg}") from None


def _first_named(message: str, keys) -> str | None:
    """The key that ``message`` names first (as a whole word), if any."""
    best, at = None, len(message) + 1
    for key in keys:
        m = re.search(r"(?<![A-Za-z0-9_])" + re.escape(key) + r"(?![A-Za-z0-9_])", message)
        if m and m.start() < at:
            best, at = key, m.start()
    return best


def _changed_links(t, key, entries, base, unit) -> np.ndarray:
    """``base`` with the links named in ``entries`` set to their values (checked)."""
    where = f"data[{key!r}]"
    if not isinstance(entries, Mapping):
        raise ValueError(f"{where} must be a dict of link name -> value in {unit}, e.g. "
                         f"{{'nic_up[node 0, nic 1]': 25e9}}; got {_show(entries)}")
    out = base.copy()
    for name, value in entries.items():
        link = _link_id(t, name, where)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            warn_implausible(f"{where}[{name!r}]", value, unit, passed=True)
        out[link] = check_real(f"{where}[{name!r}]", value, lo=0.0, lo_open=unit != "s",
                               unit=unit)
    return out


def _link_id(t, name, where) -> int:
    """The link id that ``name`` (as :meth:`Topology.link_name` writes it) has in ``t``."""
    hint = ("link names are what Topology.link_name gives, e.g. 'nic_up[node 3, nic 5]', "
            "'nvl_out[node 0, gpu 2]', 'leaf_up[rail 1, leaf 0]', 'node_up[node 4]'")
    m = _LINK_NAME.fullmatch(name) if isinstance(name, str) else None
    kind = m.group(1) if m else None
    if kind not in LINK_KINDS or not np.any(t.link_kind == LINK_KINDS.index(kind)):
        raise ValueError(f"{where} has the key {_show(name)}, which names no link of this "
                         f"{t.kind}; {hint}")
    k = LINK_KINDS.index(kind)
    first = int(np.searchsorted(t.link_kind, k))  # kinds are stored in order, one segment each
    groups = m.groups()[1:]
    if groups[0] is not None:  # [node N, gpu|npu|nic R]
        node, what, r = int(groups[0]), groups[1], int(groups[2])
        per = t.nics_per_node if what == "nic" else t.gpus_per_node
        idx = node * per + r if node < t.n_nodes and r < per else -1
    elif groups[3] is not None:  # [rail R, leaf G]
        per = t.n_leaves // t.nics_per_node
        rail, leaf = int(groups[3]), int(groups[4])
        idx = rail * per + leaf if rail < t.nics_per_node and leaf < per else -1
    else:  # [node N]
        idx = int(groups[5]) if int(groups[5]) < t.n_nodes else -1
    link = first + idx
    if idx < 0 or t.link_kind[link] != k or t.link_name(link) != name:
        raise ValueError(f"{where} has the key {name!r}, which names no link of this topology "
                         f"({t.n_nodes} nodes x {t.gpus_per_node}); {hint}")
    return link

