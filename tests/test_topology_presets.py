"""Hardware presets with sourced numbers, describe(), and topologies as plain dicts.

Oracles: each preset's capacities equal its vendor's figure turned into bytes/s per direction
(bidirectional / 2, bits / 8), computed here independently of the preset; the MI300X port model
is checked against the mesh it stands for (evenly spread traffic: equal; one peer: 7x); the dict
round trip is exact (hypothesis over what cluster() and superpod() accept, degraded links
included); every bad dict entry is refused naming its key.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.engines.linkload import link_loads
from uneven.hardware import (
    MI300X_LINK_BW,
    PRESETS,
    b200_cluster,
    gb200_nvl72,
    h100_cluster,
    h200_cluster,
    mi300x_cluster,
)
from uneven.topology import cluster, h800_cluster, superpod
from uneven.topology_io import topology_from_dict, topology_to_dict
from uneven.units import gbit_per_s

# (preset, GPUs per node, NICs per node, vendor's scale-up figure with both directions added,
#  NIC line rate in bits/s): the datasheet numbers as the vendors quote them.
VENDOR = {
    "h100": (h100_cluster, 8, 8, 900e9, 400e9),
    "h200": (h200_cluster, 8, 8, 900e9, 400e9),
    "b200": (b200_cluster, 8, 8, 1.8e12, 400e9),
    "gb200_nvl72": (gb200_nvl72, 72, 72, 1.8e12, 400e9),
    "mi300x": (mi300x_cluster, 8, 8, 7 * 128e9, 400e9),  # 7 links x 128 GB/s bidirectional
}
NEW = sorted(VENDOR)


def _bw(t, kind):
    values = t.capacity[t.links_of_kind(kind)]
    assert values.min() == values.max()
    return float(values[0])


def _same(a, b):
    """Two topologies equal in every field, arrays bit for bit (sources included)."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize("name", NEW)
def test_each_preset_has_its_vendors_numbers_per_direction(name):
    build, gpus, nics, scale_up_both_ways, nic_bits = VENDOR[name]
    t = build(3)
    assert (t.n_nodes, t.gpus_per_node, t.nics_per_node, t.n_gpus) == (3, gpus, nics, 3 * gpus)
    assert _bw(t, "nvl_out") == _bw(t, "nvl_in") == scale_up_both_ways / 2
    assert _bw(t, "nic_up") == _bw(t, "nic_down") == nic_bits / 8
    assert t.gpus_per_nic == 1
    assert (t.fabric, t.cross_rail, t.oversubscription) == ("multi_rail", "pxn", 1.0)


@pytest.mark.parametrize("name", NEW)
def test_each_number_has_a_source_with_a_label(name):
    t = VENDOR[name][0](2)
    for key in ("gpus_per_node", "nvlink_bw", "nics_per_node", "nic_bw", "fabric", "leaves",
                "latency"):
        assert key in t.sources, key
    for key, text in t.sources.items():
        assert any(label in text for label in ("[vendor", "[derived]", "[paper]", "[repo]",
                                               "(our assumption", "(our reading)", "(model)")), key
    # the two numbers every preset turns from the vendor's units say how
    assert "per direction [derived]" in t.sources["nvlink_bw"]
    assert "50 GB/s per direction [derived]" in t.sources["nic_bw"]


def test_presets_reuse_the_h800_latencies_and_say_so():
    ref = h800_cluster(2)
    for name in NEW:
        t = VENDOR[name][0](2)
        assert t.hop_latency == ref.hop_latency
        assert t.path_latency(0, t.gpus_per_node) == pytest.approx(ref.path_latency(0, 8))
        assert "our assumption" in t.sources["latency"]


def test_h200_fabric_equals_h100_and_the_difference_is_named():
    a, b = h100_cluster(4), h200_cluster(4)
    assert np.array_equal(a.capacity, b.capacity) and np.array_equal(a.latency, b.latency)
    assert "141 GB" in b.sources["memory"] and a.name != b.name


def test_b200_800g_variant_doubles_only_the_nics():
    base, fast = b200_cluster(2), b200_cluster(2, nic_bw=gbit_per_s(800))
    assert _bw(fast, "nic_up") == 2 * _bw(base, "nic_up") == 100e9
    assert _bw(fast, "nvl_out") == _bw(base, "nvl_out") == 900e9
    assert "ConnectX-8" in base.sources["variants"]


def test_gb200_nvl72_is_one_nvlink_domain_per_rack():
    t = gb200_nvl72(2)
    assert t.name == "GB200 NVL72 x 2 racks"
    assert t.hop_class(0, 71) == 1 and t.hop_class(0, 72) == 2
    assert [t.link_name(x) for x in t.route(0, 71)] == ["nvl_out[node 0, gpu 0]",
                                                        "nvl_in[node 0, gpu 71]"]
    # GPU 5 to GPU 9 of the next rack: PXN over NVLink to GPU 9, then NIC 9 (one per GPU)
    assert [t.link_name(x) for x in t.route(5, 72 + 9)] == [
        "nvl_out[node 0, gpu 5]", "nvl_in[node 0, gpu 9]", "nic_up[node 0, nic 9]",
        "nic_down[node 1, nic 9]"]


def test_mi300x_port_equals_the_mesh_for_spread_traffic_and_is_7x_for_one_peer():
    nbytes = 7e6
    t = mi300x_cluster(1)
    # all-to-all inside a node: every GPU sends nbytes to each of its 7 peers; in the mesh each
    # pair link carries nbytes, so the phase takes nbytes / 64 GB/s
    src, dst = np.nonzero(~np.eye(8, dtype=bool))
    spread = link_loads(t, src, dst, np.full(src.size, nbytes))
    mesh_time = nbytes / MI300X_LINK_BW
    assert spread.time() - spread.max_latency == pytest.approx(mesh_time, rel=1e-12)
    # one pair: the mesh still has one 64 GB/s link; the aggregate port is 7x faster
    pair = link_loads(t, [0], [1], [nbytes])
    assert mesh_time / (pair.time() - pair.max_latency) == pytest.approx(7.0)
    per_link = mi300x_cluster(1, nvlink_bw=MI300X_LINK_BW)
    one = link_loads(per_link, [0], [1], [nbytes])
    assert one.time() - one.max_latency == pytest.approx(mesh_time, rel=1e-12)


def test_presets_table_holds_every_preset_and_each_builds():
    assert set(NEW) | {"h800", "h20", "cloudmatrix384"} == set(PRESETS)
    for name, build in PRESETS.items():
        assert build().n_gpus > 0, name


@pytest.mark.parametrize("build", [h100_cluster, gb200_nvl72, mi300x_cluster])
def test_presets_refuse_bad_arguments_by_name(build):
    with pytest.raises(ValueError, match="n_nodes"):
        build("x" * 500)
    with pytest.raises(ValueError, match="nic_bw"):
        build(2, nic_bw=-1)
    with pytest.raises(ValueError, match="cross_rail"):
        build(2, fabric="multi_plane", cross_rail="spine")


# --------------------------------------------------------------------------- describe()


@pytest.mark.parametrize("name, scale_up", [("h100", "450 GB/s"), ("h200", "450 GB/s"),
                                            ("b200", "900 GB/s"), ("gb200_nvl72", "900 GB/s"),
                                            ("mi300x", "448 GB/s")])
def test_describe_states_the_numbers_with_units(name, scale_up):
    t = VENDOR[name][0](64)
    text = t.describe()
    g = t.gpus_per_node
    assert text.splitlines()[0].endswith(f": 64 nodes x {g} = {64 * g} GPUs")
    assert f"scale-up: {scale_up} per GPU per direction" in text
    assert f"non-blocking domain of {g} GPUs" in text
    assert f"NICs: {g} per node x 400 Gb/s (50 GB/s) per direction" in text
    assert "so 50 GB/s per GPU" in text
    lpr = -(-64 // t.nodes_per_leaf)
    assert f"rails: {g} (NIC r of every node on rail r); {lpr} leaves per rail" in text
    assert "multi_rail - rails meet in shared spines; traffic changes rail over NVLink (PXN)" \
        in text
    assert "oversubscribed 1:1" in text
    assert "scale-up 3.33 µs; NIC to NIC under one leaf 2.8 µs; through the spine +0.9 µs" in text
    for key, source in t.sources.items():
        assert f"    {key}: {source}" in text


def test_describe_shows_planes_oversubscription_and_a_degraded_link():
    t = h800_cluster(2, oversubscription=2.0)
    text = t.describe()
    assert "multi_plane - 8 planes (one per rail) that share no switch" in text
    assert "oversubscribed 2:1" in text and "(a..b" not in text
    slow = t.capacity.copy()
    slow[t.links_of_kind("nic_up")[3]] = gbit_per_s(100)
    text = dataclasses.replace(t, capacity=slow).describe()
    assert "100 Gb/s..400 Gb/s (12.5 GB/s..50 GB/s)" in text and "(a..b" in text


def test_describe_of_a_superpod_states_its_tiers():
    text = PRESETS["cloudmatrix384"]().describe()
    assert "48 nodes x 8 = 384 NPUs" in text
    assert "NPU port: 392 GB/s per NPU per direction" in text
    assert "node uplink: 3.042 TB/s per node per direction" in text
    assert "local 0.12 µs; one hop 0.6 µs; two hops 1.38 µs" in text


# --------------------------------------------------------------------------- dicts


def _json_round_trip(t):
    d = topology_to_dict(t)
    text = json.dumps(d)  # must be plain JSON: no numpy scalars, no tuples needed
    back = topology_from_dict(json.loads(text))
    _same(back, t)
    assert topology_to_dict(back) == d
    return d


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_round_trips_exactly(name):
    build = PRESETS[name]
    t = build() if name == "cloudmatrix384" else build(3)
    d = _json_round_trip(t)
    assert "link_capacity" not in d and "link_latency" not in d
    assert d["kind"] == t.kind


def test_a_preset_by_name_with_a_degraded_link():
    d = {"preset": "h100", "n_nodes": 4, "link_capacity": {"nic_up[node 3, nic 5]": 12.5e9}}
    t = topology_from_dict(d)
    ref = h100_cluster(4)
    link = int(ref.links_of_kind("nic_up")[3 * 8 + 5])
    assert t.capacity[link] == 12.5e9
    rest = np.arange(t.n_links) != link
    assert np.array_equal(t.capacity[rest], ref.capacity[rest])
    out = _json_round_trip(t)
    assert out["link_capacity"] == {"nic_up[node 3, nic 5]": 12.5e9}


def _divisor_pairs():
    return st.integers(1, 9).flatmap(
        lambda k: st.integers(1, 4).map(lambda m: (k * m, k)))  # (gpus_per_node, nics_per_node)


# Plausible ranges (outside them the library warns of a unit slip; exactness does not depend on it)
_BW = st.floats(1e6, 1e14, allow_nan=False)
_NIC_BW = st.floats(1e6, 2e11, allow_nan=False)
_LAT = st.floats(0.0, 1e-3, allow_nan=False)
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@st.composite
def clusters(draw):
    g, k = draw(_divisor_pairs())
    fabric = draw(st.sampled_from(["multi_plane", "multi_rail"]))
    cross = "pxn" if fabric == "multi_plane" else draw(st.sampled_from(["pxn", "spine"]))
    return cluster(
        draw(st.integers(1, 12)), gpus_per_node=g, nics_per_node=k, nvlink_bw=draw(_BW),
        nic_bw=draw(_NIC_BW), nodes_per_leaf=draw(st.integers(1, 14)),
        oversubscription=draw(st.floats(1.0, 64.0)), fabric=fabric, cross_rail=cross,
        nvlink_latency=draw(_LAT), nic_latency=draw(_LAT), spine_latency=draw(_LAT),
        name=draw(_TEXT), sources=draw(st.dictionaries(_TEXT, _TEXT, max_size=3)))


@st.composite
def superpods(draw):
    h1 = draw(_LAT)
    h2 = draw(st.floats(h1, 2e-3))
    uplink = draw(st.one_of(st.none(), _BW))
    return superpod(draw(st.integers(1, 12)), npus_per_node=draw(st.integers(1, 16)),
                    npu_bw=draw(_BW), node_uplink_bw=uplink,
                    hop_latency=(draw(_LAT), h1, h2), name=draw(_TEXT),
                    sources=draw(st.dictionaries(_TEXT, _TEXT, max_size=3)))


@st.composite
def changed(draw, topologies):
    """A topology with a few links changed after it was built (degraded or slower)."""
    t = draw(topologies)
    cap, lat = t.capacity.copy(), t.latency.copy()
    for link in draw(st.lists(st.integers(0, t.n_links - 1), max_size=4)):
        cap[link] = draw(_BW)
    for link in draw(st.lists(st.integers(0, t.n_links - 1), max_size=2)):
        lat[link] = draw(_LAT)
    return dataclasses.replace(t, capacity=cap, latency=lat)


@settings(max_examples=60, deadline=None)
@given(st.one_of(clusters(), superpods(), changed(clusters()), changed(superpods())))
def test_round_trip_is_exact_for_whatever_the_builders_accept(t):
    d = _json_round_trip(t)
    changed_links = {**d.get("link_capacity", {}), **d.get("link_latency", {})}
    assert len(changed_links) <= 6  # a changed link is one entry, never the whole topology


def test_a_degraded_link_of_a_two_link_kind_is_one_entry():
    """Found by the test above (CI): with two NIC uplinks, one degraded, the most common uplink
    value is a tie; taking the degraded one as nic_bw made every healthy NIC, leaf and spine link
    an entry (7). The writer takes the value that leaves the fewest entries."""
    t = cluster(2, gpus_per_node=3, nics_per_node=1, nvlink_bw=1e6, nic_bw=1000001.0,
                nodes_per_leaf=1, fabric="multi_plane", cross_rail="pxn")
    cap = t.capacity.copy()
    cap[t.links_of_kind("nic_up")[0]] = 1e6
    d = _json_round_trip(dataclasses.replace(t, capacity=cap))
    assert d["nic_bw"] == 1000001.0 and d["link_capacity"] == {"nic_up[node 0, nic 0]": 1e6}


@settings(max_examples=30, deadline=None)
@given(clusters(), st.data())
def test_each_link_name_addresses_its_own_link(t, data):
    link = data.draw(st.integers(0, t.n_links - 1))
    value = float(t.capacity[link]) * 0.5
    u = topology_from_dict({**topology_to_dict(t),
                            "link_capacity": {t.link_name(link): value}})
    diff = np.flatnonzero(u.capacity != t.capacity)
    assert diff.tolist() == [link] and u.capacity[link] == value


def test_a_cluster_hop_latency_set_by_hand_round_trips():
    t = dataclasses.replace(h800_cluster(2), hop_latency=(1e-7, 2e-6, 5e-6))
    assert _json_round_trip(t)["hop_latency"] == [1e-7, 2e-6, 5e-6]


def test_a_toml_file_builds_the_topology_it_describes():
    tomllib = pytest.importorskip("tomllib")
    text = """
        name = "my H100 pod"
        n_nodes = 64
        nvlink_bw = 450e9
        nic_bw = 50e9
        fabric = "multi_rail"
        nodes_per_leaf = 16
        oversubscription = 2.0
        nic_latency = 2.8e-6

        [link_capacity]
        "nic_up[node 3, nic 5]" = 12.5e9

        [sources]
        nic_bw = "one ConnectX-7 per GPU"
    """
    t = topology_from_dict(tomllib.loads(text))
    assert (t.name, t.n_gpus, t.n_leaves, t.oversubscription) == ("my H100 pod", 512, 32, 2.0)
    assert t.capacity[t.links_of_kind("nic_up")[3 * 8 + 5]] == 12.5e9
    assert t.hop_latency == (0.0, 0.0, 2.8e-6) and t.sources == {"nic_bw": "one ConnectX-7 per GPU"}
    preset = topology_from_dict(tomllib.loads('preset = "gb200_nvl72"\nn_nodes = 2\n'))
    _same(preset, gb200_nvl72(2))


def test_a_toml_file_may_give_bandwidths_with_units():
    tomllib = pytest.importorskip("tomllib")
    if "uneven.quantities" not in sys.modules and not _has_quantities():
        pytest.skip("uneven.quantities (units at the boundary) is not part of this build")
    d = tomllib.loads('n_nodes = 2\nnvlink_bw = "450 GB/s"\nnic_bw = "400 Gb/s"\n'
                      '[link_capacity]\n"nic_up[node 1, nic 0]" = "100 Gb/s"\n')
    t = topology_from_dict(d)
    assert _bw(t, "nvl_out") == 450e9 and t.capacity[t.links_of_kind("nic_up")[8]] == 12.5e9


def _has_quantities() -> bool:
    try:
        import uneven.quantities  # noqa: F401
    except ImportError:
        return False
    return True


BASE = {"n_nodes": 2, "nvlink_bw": 160e9, "nic_bw": 50e9}


@pytest.mark.parametrize("data, key", [
    ({**BASE, "n_nodes": 0}, "data['n_nodes']"),
    ({**BASE, "nic_bw": -1}, "data['nic_bw']"),
    ({**BASE, "nvlink_bw": "fast"}, "data['nvlink_bw']"),
    ({**BASE, "nics_per_node": 3}, "data['nics_per_node']"),
    ({**BASE, "fabric": "torus"}, "data['fabric']"),
    ({**BASE, "cross_rail": "spine"}, "data['cross_rail']"),
    ({**BASE, "oversubscription": 0.5}, "data['oversubscription']"),
    ({**BASE, "nic_latency": -1e-6}, "data['nic_latency']"),
    ({**BASE, "name": 7}, "data['name']"),
    ({**BASE, "sources": ["from a datasheet"]}, "data['sources']"),
    ({**BASE, "hop_latency": [0.0, 1e-6]}, "data['hop_latency']"),
    ({**BASE, "hop_latency": [0.0, -1.0, 1e-6]}, "data['hop_latency']"),
    ({**BASE, "kind": "torus"}, "data['kind']"),
    ({**BASE, "nic_bandwith": 5e10}, "'nic_bandwith' (did you mean 'nic_bw'?)"),
    ({"n_nodes": 2, "nic_bw": 5e10}, "data lacks the key 'nvlink_bw'"),
    ({**BASE, "link_capacity": [["nic_up[node 0, nic 0]", 1e9]]}, "data['link_capacity']"),
    ({**BASE, "link_capacity": {"nic_up[node 2, nic 0]": 1e9}}, "data['link_capacity']"),
    ({**BASE, "link_capacity": {"nic_up[node 01, nic 0]": 1e9}}, "data['link_capacity']"),
    ({**BASE, "link_capacity": {"npu_out[node 0, npu 0]": 1e9}}, "data['link_capacity']"),
    ({**BASE, "link_capacity": {"nic_up[node 0, nic 0]": 0.0}},
     "data['link_capacity']['nic_up[node 0, nic 0]']"),
    ({**BASE, "link_latency": {"nvl_out[node 1, gpu 7]": -1.0}},
     "data['link_latency']['nvl_out[node 1, gpu 7]']"),
    ({"kind": "superpod", "n_nodes": 2, "npu_bw": 0.0}, "data['npu_bw']"),
    ({"kind": "superpod", "n_nodes": 2, "npu_bw": 1e9, "hop_latency": [0, 2e-6, 1e-6]},
     "data['hop_latency']"),
    ({"kind": "superpod", "n_nodes": 2, "npu_bw": 1e9, "nic_bw": 1e9}, "'nic_bw'"),
    ({"preset": "h999", "n_nodes": 2}, "data['preset']"),
    ({"preset": "h100", "kind": "cluster"}, "either 'preset' or 'kind'"),
    ({"preset": "h100", "n_nodes": -3}, "data['n_nodes']"),
    ({"preset": "h100", "gpus_per_node": 4}, "'gpus_per_node'"),
    ({"preset": "mi300x", "nvlink_bw": 0}, "data['nvlink_bw']"),
    ({1: 2}, "string keys"),
    ([("n_nodes", 2)], "data must be a dict"),
])
def test_a_bad_dict_is_refused_naming_its_key(data, key):
    with pytest.raises(ValueError) as err:
        topology_from_dict(data)
    assert key in str(err.value)


def test_to_dict_refuses_what_is_not_a_topology():
    with pytest.raises(ValueError, match="topology must be"):
        topology_to_dict({"n_nodes": 2})


def test_a_bare_number_in_a_dict_that_looks_like_a_unit_slip_warns_naming_the_entry():
    from uneven.quantities import UnitWarning

    with pytest.warns(UnitWarning, match=r"data\['nic_bw'\]=400 B/s .*'400 Gb/s'"):
        t = topology_from_dict({"n_nodes": 2, "nvlink_bw": 160e9, "nic_bw": 400})
    assert t.capacity[t.links_of_kind("nic_up")[0]] == 400.0  # still runs, as a bare call does
    with pytest.warns(UnitWarning, match=r"data\['link_capacity'\]\['nic_up\[node 0, nic 1\]'\]"):
        topology_from_dict({"n_nodes": 2, "nvlink_bw": 160e9, "nic_bw": 50e9,
                            "link_capacity": {"nic_up[node 0, nic 1]": 25}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plausible numbers and strings with units: silent
        topology_from_dict({"n_nodes": 2, "nvlink_bw": "160 GB/s", "nic_bw": 50e9,
                            "nic_latency": 3e-6, "link_capacity": {"nic_up[node 0, nic 1]": 25e9}})
