"""Fat-tree counts and cost: the DeepSeek-V3 ISCA Table 3 oracles and trimmed-tree properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.fabric import (
    KINDS,
    LINK_PRICE_USD,
    SWITCH_PRICE_USD,
    FatTree,
    cost_per_endpoint,
    cost_per_endpoint_curve,
    fabric_cost,
    fat_tree,
    multi_plane_fat_tree,
    smallest_fabric,
    table3_unit_prices,
)


def test_table3_counts_k64():
    ft2, ft3, mp = fat_tree(64, 2), fat_tree(64, 3), multi_plane_fat_tree(64, 8)
    assert (ft2.endpoints, ft2.switches, ft2.links) == (2048, 96, 2048)
    assert (ft3.endpoints, ft3.switches, ft3.links) == (65536, 5120, 131072)
    assert (mp.endpoints, mp.switches, mp.links) == (16384, 768, 16384)
    assert (ft2.kind, ft3.kind, mp.kind, mp.planes) == ("FT2", "FT3", "MPFT", 8)


@pytest.mark.parametrize("k", [2, 4, 8, 16, 48, 64, 128])
def test_closed_forms(k):
    ft2, ft3 = fat_tree(k, 2), fat_tree(k, 3)
    assert (ft2.endpoints, ft2.switches, ft2.links) == (k * k // 2, 3 * k // 2, k * k // 2)
    assert (ft3.endpoints, ft3.switches, ft3.links) == (k**3 // 4, 5 * k * k // 4, k**3 // 2)
    # port budget: every switch port is either an endpoint port or one end of a link
    # (FT3's core layer uses all k ports downward; FT2 spines likewise)
    for ft in (ft2, ft3):
        assert ft.endpoints + 2 * ft.links == ft.switches * k


def test_table3_costs_are_reproduced():
    s, l = table3_unit_prices()
    assert (s, l) == (SWITCH_PRICE_USD, LINK_PRICE_USD)
    assert s == pytest.approx(83007.8125)
    assert l == pytest.approx(503.54, abs=0.01)
    assert fabric_cost(fat_tree(64, 2)) == pytest.approx(9e6)
    assert fabric_cost(fat_tree(64, 3)) == pytest.approx(491e6)
    assert fabric_cost(multi_plane_fat_tree(64, 8)) == pytest.approx(72e6)
    # Table 3 prints $k per endpoint: 4.39, 4.39, 7.5
    assert cost_per_endpoint(fat_tree(64, 2)) / 1e3 == pytest.approx(4.39, abs=0.005)
    assert cost_per_endpoint(multi_plane_fat_tree(64, 8)) / 1e3 == pytest.approx(4.39, abs=0.005)
    assert cost_per_endpoint(fat_tree(64, 3)) / 1e3 == pytest.approx(7.5, abs=0.05)
    # the other Table 3 rows, priced the same way: SlimFly $146M
    assert (1568 * s + 32928 * l) / 1e6 == pytest.approx(146, abs=1)


def test_custom_prices():
    assert fabric_cost(fat_tree(4, 2), switch_price=10.0, link_price=1.0) == 6 * 10 + 8 * 1
    assert cost_per_endpoint(fat_tree(4, 2), 10.0, 1.0) == pytest.approx(68 / 8)


@pytest.mark.parametrize("kind", KINDS)
def test_smallest_fabric_at_capacity_is_the_full_tree(kind):
    full = {"FT2": fat_tree(64, 2), "FT3": fat_tree(64, 3), "MPFT": multi_plane_fat_tree(64, 8)}
    f = full[kind]
    s = smallest_fabric(kind, f.endpoints, 64, 8)
    assert (s.switches, s.links, s.capacity) == (f.switches, f.links, f.capacity)


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(KINDS),
    st.sampled_from([4, 8, 16, 64]),
    st.integers(1, 8),
    st.data(),
)
def test_smallest_fabric_grows_with_size_and_has_enough_ports(kind, k, planes, data):
    cap = smallest_fabric(kind, 1, k, planes).capacity
    a = data.draw(st.integers(1, cap))
    b = data.draw(st.integers(a, cap))
    fa, fb = smallest_fabric(kind, a, k, planes), smallest_fabric(kind, b, k, planes)
    assert fa.switches <= fb.switches and fa.links <= fb.links
    # ports suffice for the endpoints and both ends of every link
    assert fa.endpoints + 2 * fa.links <= fa.switches * k


def test_cost_curve_shape():
    sizes = np.array([64, 1024, 2048, 2049, 16384, 16385, 65536, 65537])
    c = cost_per_endpoint_curve(sizes, 64, 8)
    assert set(c) == {"FT2", "MPFT", "FT3", "single plane"}
    ft2, mp, ft3 = c["FT2"], c["MPFT"], c["FT3"]
    # what a single-plane design builds: FT2 while it fits, FT3 beyond
    np.testing.assert_allclose(c["single plane"][:3], ft2[:3])
    np.testing.assert_allclose(c["single plane"][3:7], ft3[3:7])
    assert np.isnan(ft2[3:]).all() and not np.isnan(ft2[:3]).any()
    assert np.isnan(mp[5:]).all() and not np.isnan(mp[:5]).any()
    assert np.isnan(ft3[7]) and not np.isnan(ft3[:7]).any()
    # at full size the three Table 3 values
    assert ft2[2] == pytest.approx(4394.53, abs=0.01)
    assert mp[4] == pytest.approx(4394.53, abs=0.01)
    assert ft3[6] == pytest.approx(491e6 / 65536)
    # a 2-layer tree (single or multi-plane) is cheaper per endpoint than a 3-layer one
    assert np.all(mp[1:5] < ft3[1:5])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: fat_tree(63, 2), "k must be an even"),
        (lambda: fat_tree(0, 2), "k must be"),
        (lambda: fat_tree(64, 4), "layers must be one of"),
        (lambda: multi_plane_fat_tree(64, 0), "planes must be"),
        (lambda: smallest_fabric("FT4", 10), "kind must be one of"),
        (lambda: smallest_fabric("FT2", 2049, 64), "n_endpoints must be an integer in"),
        (lambda: smallest_fabric("FT2", 0, 64), "n_endpoints must be"),
        (lambda: fabric_cost("FT2"), "fabric must be a FatTree"),
        (lambda: fabric_cost(fat_tree(4), switch_price=-1), "switch_price must be"),
        (lambda: cost_per_endpoint(fat_tree(4), link_price=float("inf")), "link_price must be"),
        (lambda: cost_per_endpoint_curve([0, 5]), "n_endpoints entries must be >= 1"),
        (lambda: cost_per_endpoint_curve([[5]]), "n_endpoints must be a 1-d"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_fattree_is_frozen():
    f = fat_tree(4)
    assert isinstance(f, FatTree)
    with pytest.raises(AttributeError):
        f.k = 8
