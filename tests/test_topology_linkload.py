"""Topology routes and the link-load engine: oracles, reference equality, properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines.linkload import (
    _reference_link_loads,
    link_loads,
    link_loads_kron,
    link_loads_matrix,
)
from uneven.topology import (
    LINK_KINDS,
    cloudmatrix384,
    cluster,
    h20_cluster,
    h800_cluster,
    superpod,
)
from uneven.units import gbit_per_s, gbyte_per_s, us


def reference_route(t, src, dst):
    """Independent, spelled-out routing rules, by link *names* (cluster kind)."""
    if src == dst:
        return []
    g, k = t.gpus_per_node, t.nics_per_node
    gpn = g // k
    (ns, ls), (nd, ld) = divmod(src, g), divmod(dst, g)
    if ns == nd:
        return [f"nvl_out[node {ns}, gpu {ls}]", f"nvl_in[node {nd}, gpu {ld}]"]
    rs, rd = ls // gpn, ld // gpn
    hops = []
    if rs != rd and t.cross_rail == "pxn":
        hops += [f"nvl_out[node {ns}, gpu {ls}]", f"nvl_in[node {ns}, gpu {ld}]"]
        rs = rd
    hops.append(f"nic_up[node {ns}, nic {rs}]")
    gs, gd = ns // t.nodes_per_leaf, nd // t.nodes_per_leaf
    if rs != rd or gs != gd:
        hops += [f"leaf_up[rail {rs}, leaf {gs}]", f"leaf_down[rail {rd}, leaf {gd}]"]
    hops.append(f"nic_down[node {nd}, nic {rd}]")
    return hops


topologies = st.builds(
    lambda n, g_k, npl, fabric_x, over: cluster(
        n, gpus_per_node=g_k[0], nics_per_node=g_k[1], nvlink_bw=100.0, nic_bw=25.0,
        nodes_per_leaf=npl, oversubscription=over, fabric=fabric_x[0], cross_rail=fabric_x[1],
        nvlink_latency=1.0, nic_latency=3.0, spine_latency=0.5,
    ),
    st.integers(1, 7),
    st.sampled_from([(8, 8), (8, 4), (4, 2), (4, 1), (2, 2), (1, 1)]),
    st.integers(1, 4),
    st.sampled_from([("multi_plane", "pxn"), ("multi_rail", "pxn"), ("multi_rail", "spine")]),
    st.sampled_from([1.0, 2.0, 3.0]),
)


@settings(max_examples=60, deadline=None)
@given(topologies, st.data())
def test_route_matches_spelled_out_rules(t, data):
    src = data.draw(st.integers(0, t.n_gpus - 1))
    dst = data.draw(st.integers(0, t.n_gpus - 1))
    names = [t.link_name(int(x)) for x in t.route(src, dst)]
    assert names == reference_route(t, src, dst)


@settings(max_examples=40, deadline=None)
@given(topologies, st.data())
def test_engines_equal_reference_and_conserve_bytes(t, data):
    n = t.n_gpus
    m = data.draw(st.integers(0, 30))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    nbytes = rng.uniform(0, 1e6, m)
    got = link_loads(t, src, dst, nbytes)
    ref, ref_lat = _reference_link_loads(t, src, dst, nbytes)
    np.testing.assert_allclose(got.bytes, ref, rtol=1e-12, atol=1e-6)
    assert got.max_latency == pytest.approx(ref_lat)
    # Conservation: the bytes on the first link of each route add up to what was sent.
    hops = sum(len(t.route(int(s), int(d))) * b for s, d, b in zip(src, dst, nbytes, strict=True))
    assert got.bytes.sum() == pytest.approx(hops)
    # The dense-matrix form agrees.
    T = np.zeros((n, n))
    np.add.at(T, (src, dst), nbytes)
    np.fill_diagonal(T, 0.0)
    np.testing.assert_allclose(link_loads_matrix(t, T).bytes, ref, rtol=1e-12, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.one_of(topologies, st.builds(
    lambda n: superpod(n, npus_per_node=4, npu_bw=10.0, hop_latency=(0.1, 1.0, 2.5)),
    st.integers(1, 5))), st.data())
def test_kron_form_equals_dense_form(t, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    W = rng.uniform(0, 2, (t.n_nodes, t.n_nodes)) * (rng.random((t.n_nodes, t.n_nodes)) < 0.7)
    B = rng.uniform(0, 1e3, (t.gpus_per_node, t.gpus_per_node))
    T = np.kron(W, B)
    np.fill_diagonal(T, 0.0)
    dense = link_loads_matrix(t, T)
    kron = link_loads_kron(t, W, B)
    np.testing.assert_allclose(kron.bytes, dense.bytes, rtol=1e-9, atol=1e-6)
    assert kron.max_latency == pytest.approx(dense.max_latency)


@pytest.mark.parametrize("n_gpus, expect_us", [(16, 160.0), (64, 1120.0), (256, 4960.0)])
def test_uniform_all_to_all_is_nic_bound(n_gpus, expect_us):
    # Oracle: 8 GPUs per node, NIC 50 GB/s, NVLink 450 GB/s, 1 MB per pair:
    # every NIC sends (N - 8) x 1 MB, so the phase takes (N - 8) x 1 MB / 50 GB/s.
    t = cluster(n_gpus // 8, nvlink_bw=gbyte_per_s(450), nic_bw=gbyte_per_s(50))
    r = link_loads_kron(t, np.ones((t.n_nodes,) * 2), np.full((8, 8), 1e6))
    assert r.time() * 1e6 == pytest.approx(expect_us)
    assert r.bottleneck()[1].startswith(("nic_up", "nic_down"))


def test_h20_pairs_share_a_nic():
    t = h20_cluster(2)
    assert t.gpus_per_nic == 2
    r = link_loads(t, [0, 1], [8, 9], [1e6, 1e6])  # GPUs 0 and 1 both use NIC 0
    assert r.grid("nic_up")[0, 0] == pytest.approx(2e6)


def test_oversubscription_slows_cross_leaf_traffic():
    base = h800_cluster(4, nodes_per_leaf=2)
    over = h800_cluster(4, nodes_per_leaf=2, oversubscription=4.0)
    W, B = np.ones((4, 4)), np.full((8, 8), 1e6)
    assert link_loads_kron(over, W, B).time() > link_loads_kron(base, W, B).time()


def test_multi_plane_and_shared_spine_with_pxn_carry_the_same_loads():
    mp = h800_cluster(8, nodes_per_leaf=2, fabric="multi_plane")
    mr = h800_cluster(8, nodes_per_leaf=2, fabric="multi_rail", cross_rail="pxn")
    W, B = np.ones((8, 8)), np.full((8, 8), 1e6)
    np.testing.assert_allclose(link_loads_kron(mp, W, B).bytes, link_loads_kron(mr, W, B).bytes)


def test_superpod_hop_classes_and_latency():
    t = cloudmatrix384()
    assert (t.hop_class(0, 0), t.hop_class(0, 7), t.hop_class(0, 8)) == (0, 1, 2)
    assert t.path_latency(0, 8) == pytest.approx(11.5 * t.path_latency(0, 0))
    assert t.path_latency(0, 1) == pytest.approx(5 * t.path_latency(0, 0))


def test_presets_label_their_numbers():
    t = h800_cluster(2)
    assert t.capacity[t.route(0, 8)[0]] == gbit_per_s(400)
    assert t.path_latency(0, 8) == pytest.approx(us(2.8))
    for key in ("nvlink_bw", "nic_bw", "latency"):
        assert key in t.sources
    assert "H800" in t.describe()


def test_large_cluster_is_cheap_to_describe():
    t = h800_cluster(2048)
    assert t.n_gpus == 16384
    assert t.n_links < 100_000
    assert len(t.route(0, 16383)) == 6


@pytest.mark.parametrize("kwargs, word", [
    (dict(n_nodes=0, nvlink_bw=1, nic_bw=1), "n_nodes"),
    (dict(n_nodes=1, nvlink_bw=-1, nic_bw=1), "nvlink_bw"),
    (dict(n_nodes=1, nvlink_bw=1, nic_bw=1, nics_per_node=3), "nics_per_node"),
    (dict(n_nodes=1, nvlink_bw=1, nic_bw=1, fabric="torus"), "fabric"),
    (dict(n_nodes=1, nvlink_bw=1, nic_bw=1, cross_rail="spine"), "cross_rail"),
    (dict(n_nodes=1, nvlink_bw=1, nic_bw=1, oversubscription=0.5), "oversubscription"),
])
def test_cluster_validation(kwargs, word):
    with pytest.raises(ValueError, match=word):
        cluster(**kwargs)


def test_engine_validation():
    t = h800_cluster(1)
    with pytest.raises(ValueError, match="dst"):
        link_loads(t, [0], [99], [1.0])
    with pytest.raises(ValueError, match="nbytes"):
        link_loads(t, [0], [1], [-1.0])
    with pytest.raises(ValueError, match="same length"):
        link_loads(t, [0, 1], [1], [1.0])
    with pytest.raises(ValueError, match="traffic"):
        link_loads_matrix(t, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="efficiency"):
        link_loads(t, [0], [1], [1.0]).time({"warp": 0.5})
    with pytest.raises(ValueError, match="topo"):
        link_loads("h800", [0], [1], [1.0])


def test_grid_shapes():
    t = h800_cluster(3)
    r = link_loads_kron(t, np.ones((3, 3)), np.ones((8, 8)))
    assert r.grid("nic_up").shape == (3, 8)
    assert r.grid("nvl_out").shape == (3, 8)
    assert set(r.by_kind()) == set(LINK_KINDS[:6])


# ---------------------------------------------------------------------------------------------
# what binds: the bottleneck's kind and the busiest link of every kind


def _drains_by_hand(loads, efficiency=None):
    """Per kind, the largest bytes / capacity (x efficiency) over its links, spelled out."""
    t = loads.topo
    out = {}
    for link in range(t.n_links):
        kind = LINK_KINDS[int(t.link_kind[link])]
        eff = efficiency.get(kind, 1.0) if isinstance(efficiency, dict) else (efficiency or 1.0)
        out[kind] = max(out.get(kind, 0.0), loads.bytes[link] / (t.capacity[link] * eff))
    return out


@settings(max_examples=40, deadline=None)
@given(st.one_of(topologies, st.builds(
    lambda n, g: superpod(n, npus_per_node=g, npu_bw=gbyte_per_s(392),
                          node_uplink_bw=gbyte_per_s(392) * g / 4), st.integers(1, 4),
    st.sampled_from([1, 2, 4]))), st.data())
def test_bottleneck_kind_and_drain_by_kind_match_the_links(t, data):
    n = t.n_gpus
    m = data.draw(st.integers(0, 12))
    src = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), int)
    dst = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), int)
    nbytes = np.array(data.draw(st.lists(st.floats(0, 1e6), min_size=m, max_size=m)))
    eff = data.draw(st.sampled_from([None, 0.5, {"nvl_out": 0.1}, {"nic_down": 0.2}]))
    if t.kind == "superpod" and isinstance(eff, dict):
        eff = {"node_up": 0.3}
    loads = link_loads(t, src, dst, nbytes)
    drains = loads.drain_by_kind(eff)
    want = _drains_by_hand(loads, eff)
    assert list(drains) == [k for k in LINK_KINDS if k in want]
    assert drains == pytest.approx(want, rel=1e-12, abs=0)
    link, name, seconds = loads.bottleneck(eff)
    assert loads.bottleneck_kind(eff) == name.split("[")[0] == LINK_KINDS[t.link_kind[link]]
    assert max(drains.values()) == seconds
    # the bottleneck is the first kind (in link order) whose busiest link is the busiest of all
    assert loads.bottleneck_kind(eff) == next(k for k, v in drains.items() if v == seconds)
