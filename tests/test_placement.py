"""Expert placement: EPLB against the public implementation's own outputs, oracles for its steps,
NIC-aware packing and per-step NVLink swaps."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.ep.placement import (
    REPLICA_RULES,
    Placement,
    _chosen_slots,
    _reference_packing,
    _reference_replicate,
    _reference_slot,
    balanced_packing,
    contiguous_slots,
    eplb_placement,
    gpu_loads,
    host_loads,
    nic_aware_placement,
    nic_loads,
    nvlink_swaps,
    placement_from_phy2log,
    rebalance_experts,
    replica_table,
    replicate_experts,
    replicated_slots,
    route_to_slots,
    slot_loads,
)
from uneven.workloads import expert_popularity

FIXTURE = Path(__file__).parent / "data" / "eplb_public_outputs.npz"

# ---------------------------------------------------------------------------------------------
# EPLB against the public code


def test_readme_example_of_the_public_repository():
    # github.com/deepseek-ai/EPLB README: 12 experts, 16 replicas, 4 groups, 2 nodes, 8 GPUs
    weight = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
              [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
    phy2log, log2phy, logcnt = rebalance_experts(weight, 16, 4, 2, 8)
    assert phy2log.tolist() == [[5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
                                [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]]
    assert logcnt.tolist() == [[1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1],
                               [1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1]]
    assert log2phy.shape == (2, 12, 2)


def _cases():
    data = np.load(FIXTURE)
    i = 0
    while f"case{i}_weight" in data:
        yield i, {k.split("_", 1)[1]: data[k] for k in data.files if k.startswith(f"case{i}_")}
        i += 1


@pytest.mark.parametrize("i, case", list(_cases()), ids=lambda x: str(x) if isinstance(x, int)
                         else "")
def test_same_maps_as_the_public_eplb(i, case):
    """Saved outputs of the public eplb.py (tests/data/make_eplb_fixture.py, torch 2.13 CPU).

    In float64 the maps are identical. The public entry point first casts the loads to float32,
    which can flip a comparison of two nearly equal pack loads: then a few slots differ. The order
    of one expert's replicas in log2phy follows torch's unstable sort of equal loads (replicas of
    one expert always tie), so it is compared as a set."""
    P, G, Nn, N = (int(x) for x in case["args"])
    phy2log, log2phy, logcnt = rebalance_experts(case["weight"], P, G, Nn, N)
    np.testing.assert_array_equal(phy2log, case["phy2log_f64"])
    np.testing.assert_array_equal(logcnt, case["logcnt_f64"])
    np.testing.assert_array_equal(logcnt, case["logcnt"])
    assert log2phy.shape == case["log2phy"].shape
    assert np.mean(phy2log != case["phy2log"]) < 0.002  # float32 near-ties only
    same = (phy2log == case["phy2log"]).all(axis=1)
    np.testing.assert_array_equal(np.sort(log2phy[same], axis=2),
                                  np.sort(case["log2phy"][same], axis=2))
    # log2phy and phy2log describe the same map
    L = phy2log.shape[0]
    for layer in range(min(L, 3)):
        for e in range(logcnt.shape[1]):
            slots = log2phy[layer, e, : logcnt[layer, e]]
            assert (phy2log[layer, slots] == e).all()
            assert (log2phy[layer, e, logcnt[layer, e]:] == -1).all()


# ---------------------------------------------------------------------------------------------
# oracles for EPLB's steps


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=1, max_size=12),
       st.integers(0, 10))
def test_replication_kernel_matches_reference(w, extra):
    phy2log, rank, logcnt = replicate_experts(w, len(w) + extra)
    ref = _reference_replicate(w, len(w) + extra)
    assert phy2log.tolist() == ref[0] and rank.tolist() == ref[1] and logcnt.tolist() == ref[2]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.randoms(use_true_random=False))
def test_packing_kernel_matches_reference(n_packs, per, rnd):
    w = [rnd.choice([0.0, 1.0, 2.5, rnd.uniform(0, 10)]) for _ in range(n_packs * per)]
    pack, rank = balanced_packing(w, n_packs)
    ref = _reference_packing(w, n_packs)
    assert pack.tolist() == ref[0] and rank.tolist() == ref[1]
    assert np.bincount(pack, minlength=n_packs).tolist() == [per] * n_packs  # equal counts
    for p in range(n_packs):
        assert sorted(rank[pack == p].tolist()) == list(range(per))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=5), st.integers(0, 4))
def test_replication_minimises_the_largest_load_per_replica(w, extra):
    """Brute force over every way of giving the extra slots out."""
    w = np.array(w, dtype=float)
    _, _, logcnt = replicate_experts(w, w.size + extra)
    got = (w / logcnt).max()
    best = np.inf
    for combo in itertools.combinations_with_replacement(range(w.size), extra):
        cnt = np.ones(w.size) + np.bincount(np.array(combo, dtype=int), minlength=w.size)
        best = min(best, (w / cnt).max())
    assert got == pytest.approx(best)


def test_every_expert_has_a_replica_and_every_gpu_the_same_slot_count():
    rng = np.random.default_rng(0)
    w = rng.pareto(1.2, (6, 64)) + 0.01
    for G, Nn, N, P in ((8, 4, 16, 80), (8, 2, 16, 64), (1, 1, 32, 96), (4, 3, 12, 72)):
        phy2log, log2phy, logcnt = rebalance_experts(w, P, G, Nn, N)
        assert phy2log.shape == (6, P) and (logcnt >= 1).all()
        assert (logcnt.sum(axis=1) == P).all()
        for layer in range(6):
            assert np.bincount(phy2log[layer], minlength=64).tolist() == logcnt[layer].tolist()


def test_hierarchical_policy_keeps_whole_groups_on_one_node():
    rng = np.random.default_rng(1)
    w = rng.pareto(1.0, (5, 64)) + 0.01
    G, Nn, N, P = 8, 4, 16, 96
    phy2log, _, _ = rebalance_experts(w, P, G, Nn, N)
    node_of_slot = np.arange(P) // (P // Nn)
    for layer in range(5):
        for g in range(G):
            nodes = {int(node_of_slot[s]) for s in range(P) if phy2log[layer, s] // (64 // G) == g}
            assert len(nodes) == 1, f"group {g} spread over {nodes}"


def test_global_policy_when_nodes_do_not_divide_groups():
    w = np.random.default_rng(2).random((1, 24)) + 0.1
    a = rebalance_experts(w, 32, 6, 4, 8)[0]  # 6 % 4 != 0 -> global policy
    b = rebalance_experts(w, 32, 1, 1, 8)[0]
    np.testing.assert_array_equal(a, b)


def test_eplb_balances_gpus_on_a_skewed_load():
    load = expert_popularity(256, 8.0, seed=0) * 1e5
    p = eplb_placement(load, 320, 32)
    g = gpu_loads(p, load)
    assert g.max() / g.mean() < 1.01
    c = gpu_loads(contiguous_slots(256, 32), load)
    assert c.max() / c.mean() > 1.3


def test_eplb_placement_keeps_eplbs_replica_ranks():
    load = [5.0, 1.0, 1.0, 9.0]
    p = eplb_placement(load, 8, 2, gpus_per_node=2, gpus_per_nic=1)
    _, log2phy, _ = rebalance_experts([load], 8, 1, 1, 2)
    np.testing.assert_array_equal(p.log2phy, log2phy[0])


# ---------------------------------------------------------------------------------------------
# NIC-aware placement


def test_nic_aware_balances_nics_when_a_hot_expert_cannot_be_split():
    """No spare slots (256 experts on 32 H20 GPUs): the busiest expert alone exceeds a GPU's fair
    share, so no placement balances GPUs. EPLB puts the heaviest items on GPUs 0 and 1, which share
    NIC 0; NIC-aware packing pairs the hot GPU with a light one."""
    for seed in range(3):
        load = expert_popularity(256, 8.0, seed=seed) * 1e5
        e = eplb_placement(load, 256, 32)
        n = nic_aware_placement(load, 256, 32)
        assert gpu_loads(n, load).max() < 1.01 * gpu_loads(e, load).max()  # the hot expert's GPU
        ne, nn = nic_loads(e, load), nic_loads(n, load)
        assert nn.max() / nn.mean() < ne.max() / ne.mean() - 0.1


def test_nic_aware_is_balanced_per_level_and_valid():
    load = expert_popularity(64, 8.0, seed=3) * 1e4
    p = nic_aware_placement(load, 96, 16, gpus_per_node=8, gpus_per_nic=2)
    assert p.n_slots == 96 and p.slots_per_gpu == 6 and (p.logcnt >= 1).all()
    h = host_loads(p, load)
    assert h.max() / h.mean() < 1.02
    assert nic_loads(p, load).sum() == pytest.approx(load.sum())


def test_one_gpu_per_nic_gives_nic_loads_equal_to_gpu_loads():
    load = expert_popularity(32, 4.0, seed=1)
    p = nic_aware_placement(load, 32, 8, gpus_per_node=4, gpus_per_nic=1)
    np.testing.assert_allclose(nic_loads(p, load), gpu_loads(p, load))


# ---------------------------------------------------------------------------------------------
# routing to replicas, loads


def test_route_to_slots_spreads_sources_evenly_over_replicas():
    p = placement_from_phy2log([0, 1, 0, 2, 0, 3, 4, 5], 6, 8, gpus_per_node=4, gpus_per_nic=2)
    ids = np.zeros((12, 1), dtype=np.int64)
    src = np.arange(12) % 6  # 6 sources, 3 replicas: 2 sources each
    slots = route_to_slots(p, ids, src)
    assert set(slots.ravel().tolist()) == {0, 2, 4}
    assert np.bincount(slots.ravel(), minlength=8)[[0, 2, 4]].tolist() == [4, 4, 4]
    assert (p.phy2log[slots] == ids).all()


def test_slot_loads_conserve_the_total():
    load = np.arange(1.0, 9.0)
    p = eplb_placement(load, 12, 4, gpus_per_node=4, gpus_per_nic=2)
    assert slot_loads(p, load).sum() == pytest.approx(load.sum())
    assert gpu_loads(p, load).shape == (4,) and nic_loads(p, load).shape == (2,)


# ---------------------------------------------------------------------------------------------
# swaps


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(8, 2), (8, 1), (4, 2)]),
       st.floats(0.0, 0.2))
def test_swaps_never_raise_the_largest_gpu_or_nic_load_and_stay_in_the_host(seed, shape,
                                                                             threshold):
    gpn, gpnic = shape
    rng = np.random.default_rng(seed)
    n_gpus, spg = 2 * gpn, int(rng.integers(1, 4))
    n_exp = n_gpus * spg
    p = placement_from_phy2log(rng.permutation(n_exp), n_exp, n_gpus, gpus_per_node=gpn,
                               gpus_per_nic=gpnic)
    load = rng.pareto(1.0, n_exp) * 100
    r = nvlink_swaps(p, load, threshold=threshold)
    g0, g1 = gpu_loads(p, load), gpu_loads(r.placement, load)
    for h in range(2):
        sl = slice(h * gpn, (h + 1) * gpn)
        assert g1[sl].max() <= g0[sl].max() + 1e-9
        assert g1[sl].sum() == pytest.approx(g0[sl].sum())  # nothing leaves a host
    assert nic_loads(r.placement, load).max() <= nic_loads(p, load).max() + 1e-9
    assert r.nic_max_after <= r.nic_max_before + 1e-9
    assert r.pairs.shape[0] <= 2 and r.copy_bytes == pytest.approx(2 * 44.04e6 * r.pairs.shape[0])
    slot_host = p.slot_gpu // gpn
    for a, b in r.pairs:
        assert slot_host[a] == slot_host[b]
    assert sorted(r.placement.phy2log.tolist()) == sorted(p.phy2log.tolist())


def test_swap_threshold_and_blocked_experts():
    p = placement_from_phy2log([0, 1, 2, 3], 4, 4, gpus_per_node=4, gpus_per_nic=2)
    load = [5.0, 4.0, 1.0, 1.0]
    assert nvlink_swaps(p, load).pairs.tolist() == [[0, 2]]
    assert nvlink_swaps(p, load, threshold=1.0).pairs.size == 0  # gain 3 < 1.0 x mean 5.5
    assert nvlink_swaps(p, load, blocked=np.array([True, False, False, False])).pairs.size == 0


# ---------------------------------------------------------------------------------------------
# validation


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="n_replicas"):
        rebalance_experts([[1.0, 2.0]], 3, 1, 1, 2)
    with pytest.raises(ValueError, match="n_groups"):
        rebalance_experts([[1.0, 2.0, 3.0]], 3, 2, 1, 1)
    with pytest.raises(ValueError, match="n_nodes"):
        rebalance_experts([[1.0, 2.0]], 4, 1, 3, 4)
    with pytest.raises(ValueError, match="weight"):
        rebalance_experts([1.0, 2.0], 2, 1, 1, 1)
    with pytest.raises(ValueError, match="weight"):
        rebalance_experts([[1.0, -2.0]], 2, 1, 1, 1)
    with pytest.raises(ValueError, match="n_packs"):
        balanced_packing([1.0, 2.0, 3.0], 2)
    with pytest.raises(ValueError, match="phy2log"):
        placement_from_phy2log([0, 0], 2, 2, gpus_per_node=2, gpus_per_nic=1)
    with pytest.raises(ValueError, match="gpus_per_nic"):
        contiguous_slots(8, 8, gpus_per_node=8, gpus_per_nic=3)
    with pytest.raises(ValueError, match="placement"):
        gpu_loads("nope", [1.0])
    with pytest.raises(ValueError, match="blocked"):
        nvlink_swaps(contiguous_slots(4, 4, gpus_per_node=4), np.ones(4), blocked=[1, 0, 0, 0])
    with pytest.raises(ValueError, match="n_phy"):
        replicate_experts(np.ones(10), 10**7)
    assert isinstance(contiguous_slots(4, 2, gpus_per_node=2, gpus_per_nic=1), Placement)


def test_placements_are_read_only_and_checked_when_made_or_replaced():
    import dataclasses

    p = nic_aware_placement([8.0, 7.0, 1.0, 1.0], 8, 4, gpus_per_node=4, gpus_per_nic=2)
    for a in (p.phy2log, p.logcnt, p.log2phy):
        assert not a.flags.writeable
    # a direct construction with the same maps is the same placement
    same = Placement(p.phy2log, p.logcnt, p.log2phy, 4, 4, 2, "copy")
    assert same.log2phy.tolist() == p.log2phy.tolist()
    bad_cnt = p.logcnt.copy()
    bad_cnt[0] += 1
    bad_l2p = p.log2phy.copy()
    bad_l2p[0, 0] = bad_l2p[1, 0]  # expert 0 claims a slot of expert 1
    for changes, name in (({"logcnt": bad_cnt}, "logcnt"), ({"log2phy": bad_l2p}, "log2phy"),
                          ({"phy2log": p.phy2log[:-1]}, "phy2log"), ({"n_gpus": 12}, "n_gpus"),
                          ({"gpus_per_nic": 3}, "gpus_per_nic"), ({"name": 5}, "name"),
                          ({"n_gpus": True}, "n_gpus")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(p, **changes)
    r = nvlink_swaps(contiguous_slots(4, 4, gpus_per_node=4), [5.0, 4.0, 1.0, 1.0])
    assert not r.pairs.flags.writeable
    with pytest.raises(ValueError, match="pairs"):
        dataclasses.replace(r, pairs=[[0, 9]])
    with pytest.raises(ValueError, match="copy_bytes"):
        dataclasses.replace(r, copy_bytes=float("inf"))


def test_big_or_absurd_inputs_are_refused_before_the_work():
    # each extra slot scans every expert: 65,536 experts x ~10**6 extra slots is refused by the
    # work budget, not run
    with pytest.raises(ValueError, match="UNEVEN_MAX_STEPS"):
        replicate_experts(np.ones(65536), 1 << 20)
    with pytest.raises(ValueError, match="weight"):
        rebalance_experts(np.zeros((0, 4)), 4, 1, 1, 1)
    with pytest.raises(ValueError, match="load"):
        nic_aware_placement([1e300, 1.0], 2, 2, gpus_per_node=2, gpus_per_nic=1)
    with pytest.raises(ValueError, match="threshold"):
        nvlink_swaps(contiguous_slots(4, 4, gpus_per_node=4), np.ones(4), threshold=1e300)
    with pytest.raises(ValueError, match="blocked"):
        nvlink_swaps(contiguous_slots(4, 4, gpus_per_node=4), np.ones(4), blocked=[[True], []])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(8, 2), (8, 1), (4, 2)]))
def test_swapped_placements_with_replicas_keep_consistent_maps(seed, shape):
    """nvlink_swaps updates log2phy in place of rebuilding it: the maps it returns pass the
    checks of a direct construction and equal a rebuild from phy2log and the replica ranks."""
    gpn, gpnic = shape
    rng = np.random.default_rng(seed)
    n_gpus = 2 * gpn
    n_exp = n_gpus * int(rng.integers(1, 3))
    load = rng.pareto(1.0, n_exp) * 100
    p = eplb_placement(load, n_exp + n_gpus, n_gpus, gpus_per_node=gpn, gpus_per_nic=gpnic)
    for _ in range(3):  # a few rounds on a shifted load, so that swaps happen
        load = rng.permutation(load)
        p = nvlink_swaps(p, load, threshold=0.0).placement
        checked = Placement(p.phy2log, p.logcnt, p.log2phy, n_gpus, gpn, gpnic, p.name)
        rank = np.empty(p.n_slots, dtype=np.int64)
        valid = p.log2phy >= 0
        rank[p.log2phy[valid]] = np.nonzero(valid)[1]
        rebuilt = placement_from_phy2log(p.phy2log, n_exp, n_gpus, gpus_per_node=gpn,
                                         gpus_per_nic=gpnic, phyrank=rank)
        np.testing.assert_array_equal(checked.log2phy, rebuilt.log2phy)


# ---------------------------------------------------------------------------------------------
# the floor on the busiest GPU without replicas


def _best_busiest_gpu(load, n_gpus):
    """The least busiest-GPU load over every way to deal the experts, equal counts per GPU
    (brute force, tiny inputs only)."""
    m = len(load) // n_gpus
    best = np.inf
    for perm in itertools.permutations(range(len(load))):
        gpus = [sum(load[e] for e in perm[g * m:(g + 1) * m]) for g in range(n_gpus)]
        best = min(best, max(gpus))
    return best


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=6, max_size=6), st.sampled_from([2, 3]))
def test_busiest_gpu_floor_is_a_lower_bound_and_tight_when_one_expert_dominates(ints, n_gpus):
    from uneven.ep.placement import busiest_gpu_floor

    load = [float(x) for x in ints]
    floor = busiest_gpu_floor(load, n_gpus)
    best = _best_busiest_gpu(load, n_gpus)
    assert floor <= best + 1e-9  # no placement beats it
    m = len(load) // n_gpus
    s = sorted(load)
    assert floor == max(sum(load) / n_gpus, s[-1] + sum(s[:m - 1]))
    # one expert heavier than all the others together: the busiest expert's GPU decides
    heavy = [*load[:-1], 10.0 * (sum(load) + 1)]
    assert busiest_gpu_floor(heavy, n_gpus) == pytest.approx(_best_busiest_gpu(heavy, n_gpus))


def test_busiest_gpu_floor_of_notebook_05_and_its_errors():
    from uneven.ep.placement import busiest_gpu_floor

    load = expert_popularity(256, 8.0, seed=0)
    ratio = busiest_gpu_floor(load, 32) / (load.sum() / 32)
    p = eplb_placement(load, 256, 32)
    assert ratio <= gpu_loads(p, load).max() / gpu_loads(p, load).mean() + 1e-12
    assert busiest_gpu_floor(np.ones(8), 4) == 2.0  # uniform: the mean
    for bad, n, name in (([], 1, "expert_load"), ([[1.0, 2.0]], 1, "expert_load"),
                         ([1.0, 2.0, 3.0], 2, "n_gpus"), ([1.0, -1.0], 1, "expert_load"),
                         ([1.0, 2.0], 0, "n_gpus"), ([1.0, 2.0], 3, "n_gpus")):
        with pytest.raises(ValueError, match=name):
            busiest_gpu_floor(bad, n)


# ---------------------------------------------------------------------------------------------
# replica layouts and the rule that picks a replica


def test_equal_replicas_are_copies_of_the_contiguous_layout_side_by_side():
    p = replicated_slots(256, 512, 2, gpus_per_node=8, gpus_per_nic=1)
    plain = contiguous_slots(256, 256, gpus_per_node=8, gpus_per_nic=1)
    assert p.n_slots == 512 and p.slots_per_gpu == 1 and p.logcnt.tolist() == [2] * 256
    assert np.array_equal(p.phy2log, np.tile(plain.phy2log, 2))
    assert np.array_equal(p.log2phy, np.stack([np.arange(256), 256 + np.arange(256)], axis=1))
    one = replicated_slots(8, 4, 1, gpus_per_node=2, gpus_per_nic=1)
    assert np.array_equal(one.phy2log, contiguous_slots(8, 4, gpus_per_node=2,
                                                        gpus_per_nic=1).phy2log)
    # counts per expert: copy 0 of everyone, then the second copies, in expert order
    q = replicated_slots(4, 3, [2, 1, 1, 2], gpus_per_node=3, gpus_per_nic=1)
    assert q.phy2log.tolist() == [0, 1, 2, 3, 0, 3] and q.log2phy[3].tolist() == [3, 5]


@pytest.mark.parametrize("args, match", [
    ((256, 512, 1), r"replicas=1 with n_experts=256 gives 256 expert slots.*every GPU needs.*"
                    r"replicas=2 \(512 slots, 1 per GPU\)"),
    ((256, 384, 1), r"replicas=3 \(768 slots"),
    ((4, 2, [1, 1, 1, 2]), r"counts .* sum to 5.*multiple of 2, e.g. 4 \(1 fewer\) or 6"),
    ((4, 2, [1, 0, 1, 2]), "replicas"),
    ((4, 2, 10**9), "replicas"),
])
def test_replica_layouts_that_cannot_fill_the_gpus_say_why_and_what_works(args, match):
    with pytest.raises(ValueError, match=match):
        replicated_slots(*args, gpus_per_node=2, gpus_per_nic=1)


def test_route_to_slots_keeps_its_round_robin_default_and_offers_nearest():
    p = replicated_slots(4, 4, 2, gpus_per_node=2, gpus_per_nic=1)  # a copy per node
    ids = np.array([[0, 3]] * 4)
    src = np.arange(4)
    assert route_to_slots(p, ids, src).tolist() == [[0, 3], [4, 7], [0, 3], [4, 7]]
    assert route_to_slots(p, ids, src, rule="nearest").tolist() == [[0, 3], [0, 3], [4, 7],
                                                                     [4, 7]]
    table = replica_table(p)
    assert np.array_equal(table[src[:, None], ids], route_to_slots(p, ids, src, rule="nearest"))
    with pytest.raises(ValueError, match="rule"):
        route_to_slots(p, ids, src, rule="closest")
    with pytest.raises(ValueError, match="nodes_per_leaf"):
        replica_table(p, nodes_per_leaf=0)
    with pytest.raises(ValueError, match="first_node"):
        replica_table(p, nodes_per_leaf=1, first_node=-1)


def test_nearest_prefers_own_gpu_then_node_then_leaf_and_breaks_remote_ties_by_node():
    # 8 GPUs, 2 per node (4 nodes), 2 leaf groups of 2 nodes; expert 0 on GPUs 1, 4 and 6
    p = placement_from_phy2log([1, 0, 2, 3, 0, 4, 0, 5], 6, 8, gpus_per_node=2, gpus_per_nic=1)
    t = replica_table(p, nodes_per_leaf=2)[:, 0]
    gpu = t // p.slots_per_gpu
    assert gpu[1] == 1 and gpu[4] == 4 and gpu[6] == 6          # its own GPU
    assert gpu[0] == 1 and gpu[5] == 4 and gpu[7] == 6          # its own node
    assert gpu[2] == 1 and gpu[3] == 1                          # its own leaf group (nodes 0, 1)
    flat = replica_table(p)[:, 0] // p.slots_per_gpu            # one leaf group: node 1 ties
    # GPUs 2, 3 (node 1): a tie of three remote copies, broken by node: 1 mod 3 -> the second
    assert flat[2] == flat[3] == 4 and flat[0] == 1
    # the placement's node 0 as the cluster's node 1: leaves {node 0}, {1, 2}, {3} -> GPU 4
    assert route_to_slots(p, [[0]], [2], rule="nearest", nodes_per_leaf=2,
                          first_node=1)[0, 0] == 4


def test_a_remote_tie_follows_nodes_not_rails():
    """The relay sends a token's network copy on its own rail: with a tie broken by source
    node, every rail's NICs on both copies receive the same share."""
    p = replicated_slots(16, 32, 2, gpus_per_node=8, gpus_per_nic=1)  # 4 nodes, copies on 2 each
    t = replica_table(p) // p.slots_per_gpu
    copy_of = (t >= 16).astype(int)  # which copy each (GPU, expert) uses
    remote = (t // 8) != (np.arange(32) // 8)[:, None]
    for rail in range(8):
        rows = np.arange(rail, 32, 8)
        used = copy_of[rows][remote[rows]]
        assert 0.3 < used.mean() < 0.7  # both copies serve every rail


def _random_placement(rng):
    gpn = int(rng.choice([1, 2, 4]))
    n_gpus = gpn * int(rng.integers(1, 6))
    spg = int(rng.integers(1, 4))
    n_exp = int(rng.integers(1, n_gpus * spg + 1))
    p2l = np.concatenate([np.arange(n_exp), rng.integers(0, n_exp, n_gpus * spg - n_exp)])
    return placement_from_phy2log(rng.permutation(p2l), n_exp, n_gpus, gpus_per_node=gpn,
                                  gpus_per_nic=1, phyrank=None)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(REPLICA_RULES), st.sampled_from([None, 1, 2, 3]))
def test_replica_choice_equals_the_reference_and_is_never_farther_than_needed(seed, rule, npl):
    rng = np.random.default_rng(seed)
    p = _random_placement(rng)
    leaf = None if npl is None else np.arange(p.n_nodes) // npl
    table = replica_table(p, rule=rule, nodes_per_leaf=npl)
    ids = rng.integers(0, p.n_experts, (7, 3))
    src = rng.integers(0, p.n_gpus, 7)
    picked = route_to_slots(p, ids, src, rule=rule, nodes_per_leaf=npl)
    assert np.array_equal(picked, table[src[:, None], ids])
    assert np.array_equal(p.phy2log[table], np.broadcast_to(np.arange(p.n_experts), table.shape))
    for g in range(p.n_gpus):
        for e in range(p.n_experts):
            assert table[g, e] == _reference_slot(p, g, e, rule, leaf)
    if rule == "nearest":  # a replica on the token's own GPU or node is always taken
        own = p.slot_gpu[table]
        for g in range(p.n_gpus):
            for e in range(p.n_experts):
                gpus = p.slot_gpu[p.log2phy[e, :p.logcnt[e]]]
                if g in gpus:
                    assert own[g, e] == g
                elif (gpus // p.gpus_per_node == g // p.gpus_per_node).any():
                    assert own[g, e] // p.gpus_per_node == g // p.gpus_per_node
    else:
        assert np.array_equal(table, p.log2phy[np.arange(p.n_experts)[None, :],
                                               np.arange(p.n_gpus)[:, None] % p.logcnt])
    # the vectorised helper on arbitrary broadcast shapes
    assert np.array_equal(_chosen_slots(p, src[:, None], ids, rule, leaf), picked)
