"""Fat-tree fabrics: how many switches and links, and what they cost per endpoint.

All switches have ``k`` ports (the radix). Counting follows the DeepSeek-V3 ISCA paper's Table 3:
``links`` are switch-to-switch links only (endpoint-to-leaf cables are not counted).

* ``FT2`` (two layers, leaf–spine): each leaf has ``k/2`` ports down and ``k/2`` up; ``k`` leaves
  and ``k/2`` spines: ``k²/2`` endpoints, ``3k/2`` switches, ``k²/2`` links.
* ``FT3`` (three layers, ``k`` pods): ``k³/4`` endpoints, ``5k²/4`` switches, ``k³/2`` links.
* ``MPFT`` (multi-plane fat-tree): ``planes`` disjoint FT2s, one per NIC rail (GPU ``i`` of every
  node plugs into plane ``i``): ``planes`` times everything in FT2.

For k = 64: FT2 2,048 / 96 / 2,048; FT3 65,536 / 5,120 / 131,072; MPFT(8) 16,384 / 768 / 16,384.

Prices: the paper gives total costs but no unit prices. The defaults below are **derived** by
solving ``switches·S + links·L = cost`` for the FT2 ($9M) and FT3 ($491M) rows of Table 3, which
gives S ≈ $83,008 per switch and L ≈ $503.5 per link; they reproduce the table's $k per endpoint
(4.39, 7.5) and the MPFT total ($72M).

>>> fat_tree(64, 2).switches, fat_tree(64, 3).endpoints
(96, 65536)
>>> round(cost_per_endpoint(fat_tree(64, 2)), 2)  # $9M / 2,048
4394.53
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._fields import Checked, any_value, check_fields, choice, integer
from ._validate import _show, as_int_array, check_choice, check_int, check_real
from .limits import PY_STEP, check_steps

__all__ = [
    "FatTree",
    "fat_tree",
    "multi_plane_fat_tree",
    "smallest_fabric",
    "fabric_cost",
    "cost_per_endpoint",
    "cost_per_endpoint_curve",
    "table3_unit_prices",
    "SWITCH_PRICE_USD",
    "LINK_PRICE_USD",
    "KINDS",
]

KINDS = ("FT2", "MPFT", "FT3")
#: Largest switch radix accepted (ports per switch; real switches have at most a few hundred).
MAX_RADIX = 1 << 16
#: Most planes of a multi-plane fat-tree.
MAX_PLANES = 1 << 16

# Table 3 of the DeepSeek-V3 ISCA paper [paper]: (switches, links, total cost in USD)
_TABLE3_FT2 = (96, 2048, 9e6)
_TABLE3_FT3 = (5120, 131072, 491e6)


def table3_unit_prices() -> tuple[float, float]:
    """(switch price, link price) in USD that reproduce Table 3's FT2 and FT3 totals [derived].

    >>> s, l = table3_unit_prices()
    >>> round(s, 1), round(l, 1)
    (83007.8, 503.5)
    """
    (s1, l1, c1), (s2, l2, c2) = _TABLE3_FT2, _TABLE3_FT3
    det = s1 * l2 - s2 * l1
    return (c1 * l2 - c2 * l1) / det, (s1 * c2 - s2 * c1) / det


SWITCH_PRICE_USD, LINK_PRICE_USD = table3_unit_prices()


@dataclass(frozen=True)
class FatTree(Checked):
    """Counts for one fabric.

    ``kind`` "FT2", "FT3" or "MPFT"; ``k`` switch radix (ports); ``planes`` (1 unless MPFT);
    ``endpoints`` attached endpoints (NICs/GPUs); ``capacity`` the most endpoints this fabric
    kind can take at radix ``k``; ``switches``; ``links`` switch-to-switch links.
    """

    kind: str = choice(KINDS)
    k: int = any_value()
    planes: int = integer(lo=1, hi=MAX_PLANES)
    endpoints: int = integer(lo=1, hi="capacity")
    capacity: int = integer(lo=1)
    switches: int = integer(lo=1)
    links: int = integer(lo=0)
    check_first = ("capacity",)

    def __post_init__(self):
        object.__setattr__(self, "k", _check_radix(self.k))
        check_fields(self)
        if self.kind != "MPFT" and self.planes != 1:
            raise ValueError(f"planes must be 1 for kind={self.kind!r}; got {self.planes}")


def _check_radix(k):
    k = check_int("k", k, lo=2, hi=MAX_RADIX)
    if k % 2:
        raise ValueError(f"k must be an even number of switch ports; got {k}")
    return k


def fat_tree(k: int, layers: int = 2) -> FatTree:
    """A full non-blocking fat-tree of radix-``k`` switches with 2 or 3 layers (``k`` even, at
    most :data:`MAX_RADIX`).

    >>> fat_tree(64, 2)
    FatTree(kind='FT2', k=64, planes=1, endpoints=2048, capacity=2048, switches=96, links=2048)
    """
    k = _check_radix(k)
    layers = check_choice("layers", layers, (2, 3))
    if layers == 2:
        n = k * k // 2
        return FatTree("FT2", k, 1, n, n, 3 * k // 2, k * k // 2)
    n = k**3 // 4
    return FatTree("FT3", k, 1, n, n, 5 * k * k // 4, k**3 // 2)


def multi_plane_fat_tree(k: int, planes: int = 8) -> FatTree:
    """``planes`` disjoint 2-layer fat-trees, one per NIC rail (DeepSeek's MPFT).

    >>> mp = multi_plane_fat_tree(64, 8)
    >>> mp.endpoints, mp.switches, mp.links
    (16384, 768, 16384)
    """
    one = fat_tree(k, 2)
    planes = check_int("planes", planes, lo=1, hi=MAX_PLANES)
    n = planes * one.endpoints
    return FatTree("MPFT", one.k, planes, n, n, planes * one.switches, planes * one.links)


def _trimmed_ft2(n, k):
    """(switches, links) of the smallest non-blocking 2-layer tree for ``n`` endpoints."""
    if n <= k:  # one switch holds them all
        return 1, 0
    leaves = math.ceil(n / (k // 2))
    uplinks = leaves * (k // 2)
    return leaves + math.ceil(uplinks / k), uplinks


def smallest_fabric(kind: str, n_endpoints: int, k: int = 64, planes: int = 8) -> FatTree:
    """The smallest non-blocking fabric of ``kind`` that connects ``n_endpoints``, radix ``k``.

    Trimmed trees: FT2 uses ``ceil(n/(k/2))`` leaves, each with ``k/2`` uplinks, and enough
    spines for those uplinks (a single switch when ``n <= k``). FT3 uses ``ceil(n/(k/2))`` edge
    switches, as many aggregation switches (``k/2`` down, ``k/2`` up each) and enough cores for
    their uplinks. MPFT splits the endpoints evenly over ``planes`` trimmed FT2s. With ``n`` equal
    to the capacity these are exactly :func:`fat_tree` / :func:`multi_plane_fat_tree`.
    Raises ``ValueError`` when ``n_endpoints`` exceeds the kind's capacity at radix ``k``.

    >>> smallest_fabric("FT2", 1024, 64).switches  # 32 leaves + 16 spines
    48
    """
    kind = check_choice("kind", kind, KINDS)
    k = _check_radix(k)
    planes = check_int("planes", planes, lo=1, hi=MAX_PLANES) if kind == "MPFT" else 1
    full = {
        "FT2": lambda: fat_tree(k, 2),
        "FT3": lambda: fat_tree(k, 3),
        "MPFT": lambda: multi_plane_fat_tree(k, planes),
    }[kind]()
    n = check_int("n_endpoints", n_endpoints, lo=1, hi=full.capacity)
    if kind == "FT2":
        switches, links = _trimmed_ft2(n, k)
    elif kind == "MPFT":
        per_plane = math.ceil(n / planes)
        sw, ln = _trimmed_ft2(per_plane, k)
        switches, links = planes * sw, planes * ln
    elif n <= k:  # one switch holds them all
        switches, links = 1, 0
    else:
        edges = math.ceil(n / (k // 2))
        aggs = edges  # each takes k/2 edge uplinks and sends k/2 up to the cores
        up = aggs * (k // 2)
        switches = edges + aggs + math.ceil(up / k)
        links = edges * (k // 2) + up
    return FatTree(kind, k, planes, n, full.capacity, switches, links)


def fabric_cost(
    fabric: FatTree, switch_price: float = SWITCH_PRICE_USD, link_price: float = LINK_PRICE_USD
) -> float:
    """Total cost in USD: switches × ``switch_price`` + links × ``link_price``.

    >>> round(fabric_cost(multi_plane_fat_tree(64, 8)) / 1e6)
    72
    """
    if not isinstance(fabric, FatTree):
        raise ValueError(f"fabric must be a FatTree; got {type(fabric).__name__}")
    switch_price = check_real("switch_price", switch_price, lo=0.0, unit="USD")
    link_price = check_real("link_price", link_price, lo=0.0, unit="USD")
    total = float(fabric.switches) * switch_price + float(fabric.links) * link_price
    if not math.isfinite(total):
        raise ValueError(f"switch_price and link_price give a cost beyond the range of a float; "
                         f"got {switch_price:.3g} and {link_price:.3g}")
    return total


def cost_per_endpoint(
    fabric: FatTree, switch_price: float = SWITCH_PRICE_USD, link_price: float = LINK_PRICE_USD
) -> float:
    """Fabric cost divided by attached endpoints (USD per endpoint).

    >>> round(cost_per_endpoint(fat_tree(64, 3)))
    7492
    """
    return fabric_cost(fabric, switch_price, link_price) / fabric.endpoints


def cost_per_endpoint_curve(
    n_endpoints,
    k: int = 64,
    planes: int = 8,
    switch_price: float = SWITCH_PRICE_USD,
    link_price: float = LINK_PRICE_USD,
) -> dict[str, np.ndarray]:
    """USD per endpoint of the smallest FT2, MPFT and FT3 holding each cluster size.

    ``n_endpoints``: int array of cluster sizes. Returns ``{"FT2": ..., "MPFT": ..., "FT3": ...,
    "single plane": ...}`` float64 arrays aligned with ``n_endpoints``; NaN where the kind cannot
    reach that size with radix-``k`` switches (FT2 beyond k²/2, MPFT beyond planes·k²/2, FT3
    beyond k³/4). ``"single plane"`` is what a classic design builds at each size: an FT2 while
    one fits, an FT3 beyond.

    >>> c = cost_per_endpoint_curve([2048, 16384])
    >>> [round(float(x), 2) if x == x else None for x in c["FT2"]]
    [4394.53, None]
    """
    sizes = as_int_array("n_endpoints", n_endpoints, ndim=1, lo=1)
    k = _check_radix(k)
    planes = check_int("planes", planes, lo=1, hi=MAX_PLANES)
    check_steps("n_endpoints", _show(n_endpoints), 4.0 * sizes.size * PY_STEP,
                "three fabrics per cluster size")
    out = {}
    for kind in KINDS:
        cap = smallest_fabric(kind, 1, k, planes).capacity
        vals = np.full(sizes.shape, np.nan)
        for i, n in enumerate(sizes.tolist()):
            if n <= cap:
                fab = smallest_fabric(kind, n, k, planes)
                vals[i] = cost_per_endpoint(fab, switch_price, link_price)
        out[kind] = vals
    out["single plane"] = np.where(np.isnan(out["FT2"]), out["FT3"], out["FT2"])
    return out
