"""Sequences on DP x CP (x PP) ranks: the cost model against ByteScale's Fig. 6a, packing and the
balance rounds against their pure-Python references, the step DAG against the engine's reference
and the pipeline module, the placement invariants, balancing properties, the heuristic against an
exact optimum, and the exactness of a token-level loss."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uneven.schedulers import sequences as S
from uneven.schedulers.pipeline import _fixed_order, pipeline_schedule, simulate_pipeline
from uneven.schedulers.sequences import (
    FIG6A,
    LLAMA_7B_GQA,
    CostModel,
    HdpSetup,
    assignment_gradient,
    best_fit_pack,
    compare_schemes,
    default_cost_model,
    global_batch,
    length_shares,
    list_schedule,
    offload_ranks,
    optimal_makespan,
    plan_items,
    schedule_step,
    select_ranks,
    widen_rings,
)
from uneven.workloads import token_share_above

SMALL = HdpSetup(n_gpus=64, context=131072, capacity=8192)  # 32 ranks, d_cp = 16
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ cost model and data


def test_cost_model_fits_fig6a_and_crosses_near_8k():
    c = default_cost_model(projections=False)
    s = np.array(FIG6A["tokens"], dtype=float)
    att = np.array(FIG6A["attention_ms"]) * 1e-3
    mlp = np.array(FIG6A["mlp_ms"]) * 1e-3
    assert np.all(np.abs(c.attention(s) / att - 1) < 0.05)
    assert np.all(np.abs(c.linear(s) / mlp - 1) < 0.05)
    assert 7000 < c.crossover() < 9000
    full = default_cost_model()
    assert full.beta_linear == pytest.approx(c.beta_linear * (1 + LLAMA_7B_GQA.projection_over_mlp))


def test_a_pack_costs_the_sum_of_squares():
    c = CostModel(1e-11, 0.0, 0.0)
    assert c.layer_time([4096] * 8) == pytest.approx(c.layer_time([32768]) / 8)


def test_global_batch_is_exact_seeded_and_clipped():
    a = global_batch(5_000_000, context=65536, seed=3)
    b = global_batch(5_000_000, context=65536, seed=3)
    assert a.sum() == 5_000_000 and np.array_equal(a, b)
    assert a.max() <= 65536 and a.min() >= 1
    assert not np.array_equal(a, global_batch(5_000_000, context=65536, seed=4))


def test_data_mixes_meet_the_paper_facts():
    byted = global_batch(1 << 31, seed=0)
    assert abs(token_share_above(byted, 131072) - 0.443) < 0.05
    assert abs(np.mean(byted <= 4096) - 0.80) < 0.04
    github = global_batch(1 << 31, mix="github", seed=0)
    assert abs(token_share_above(github, 131073) - 0.162) < 0.03
    assert abs(token_share_above(github, 262145) - 0.098) < 0.03


def test_length_shares_add_up():
    x = global_batch(10_000_000, seed=1)
    edges = [0] + [2**k for k in range(11, 22)] + [2**21 + 1]
    n, t = length_shares(x, edges)
    assert n.sum() == pytest.approx(1) and t.sum() == pytest.approx(1)


# ------------------------------------------------------------------ packing


@given(st.lists(st.integers(1, 100), min_size=0, max_size=60), st.integers(100, 300))
@FAST
def test_best_fit_kernel_matches_reference(lengths, cap):
    got = best_fit_pack(lengths, cap).tolist()
    assert got == S._reference_best_fit(lengths, cap)
    if lengths:
        fill = np.bincount(got, weights=lengths)
        assert fill.max() <= cap


# ------------------------------------------------------------------ placement invariants


@pytest.mark.parametrize("scheme", ["static", "naive", "balanced"])
@pytest.mark.parametrize("offload", [False, True])
def test_every_token_is_assigned_exactly_once(scheme, offload):
    if scheme == "static" and offload:
        return
    x = global_batch(8_000_000, context=131072, seed=2)
    step = schedule_step(x, SMALL, scheme, offload=offload)
    items = step.items
    assert sorted(items.seq_ids.tolist()) == list(range(x.size))  # each sequence in one item
    assert items.tokens.sum() == x.sum()
    for i in range(items.n):
        members = step.item_ranks[step.item_ptr[i]:step.item_ptr[i + 1]]
        assert np.unique(members).size == items.width[i]  # distinct ranks
    # every item's ops run on its ranks, once each (forward + backward as one op when pp = 1)
    counts = np.bincount(step.item, minlength=items.n)
    assert np.array_equal(counts, items.width)


@given(st.integers(0, 10_000), st.booleans())
@FAST
def test_hdp_never_uses_more_than_ceil_s_over_c_ranks(seed, offload):
    x = global_batch(4_000_000, context=131072, seed=seed)
    n, r = select_ranks(x, SMALL, offload=offload)
    assert np.all(n <= np.ceil(x / SMALL.capacity))
    assert np.all(n >= 1) and np.all((r >= 0) & (r <= 1))
    items = plan_items(x, SMALL, "naive", offload=offload)
    long_ = items.width > 1
    assert np.all(items.tokens[~long_] <= SMALL.capacity)  # packs fit one rank


def test_hdp_equals_the_static_mesh_when_every_sequence_fills_the_context():
    x = np.full(8, SMALL.context)
    steps = compare_schemes(x, SMALL)
    t = [s.step_time for s in steps.values()]
    assert t[0] == pytest.approx(t[1]) and t[0] == pytest.approx(t[2])


@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.1, 0.3]), st.booleans(),
       st.sampled_from([1_000_000, 6_000_000]))
@FAST
def test_balancing_never_increases_the_step_time(seed, delta, offload, tokens):
    x = global_batch(tokens, context=131072, seed=seed)
    steps = compare_schemes(x, SMALL, delta=delta, offload=offload)
    plain = steps["balanced HDP"]
    assert plain.step_time <= steps["naive HDP"].step_time + 1e-12 and plain.widened == 0
    wide = schedule_step(x, SMALL, "balanced", delta=delta, offload=offload, widen=True)
    assert wide.step_time <= plain.step_time + 1e-12  # the widening variant never slows it
    for s in steps.values():
        assert s.step_time >= s.lower_bound - 1e-9


@given(st.integers(0, 10_000), st.sampled_from(["dp", "pp", "longest-first"]))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_balancing_never_increases_the_step_time_with_pipelines(seed, balance):
    setup = HdpSetup(n_gpus=64, pp=2, context=131072, capacity=16384)  # 16 pipelines
    x = global_batch(2_000_000, context=131072, seed=seed)
    steps = compare_schemes(x, setup, balance=balance)
    assert steps["balanced HDP"].step_time <= steps["naive HDP"].step_time + 1e-12


def test_idle_ranks_are_used_by_a_long_sequence():
    """One 128K sequence and a few short packs on 32 ranks: naive HDP gives the sequence its 16
    ranks and leaves the others idle most of the step; balanced HDP widens its ring."""
    x = np.array([131072] + [4096] * 16)
    steps = compare_schemes(x, SMALL, widen=True)
    naive, bal = steps["naive HDP"], steps["balanced HDP"]
    plain = schedule_step(x, SMALL, "balanced")
    assert naive.items.width[0] == 16 and plain.step_time == pytest.approx(naive.step_time)
    assert bal.widened == 1 and not bal.fallback
    w = bal.items.width[0]
    assert 16 < w <= SMALL.d_hdp
    assert bal.step_time < 0.7 * naive.step_time
    assert bal.items.exposed_inter[0] == 0.0  # the widened ring still hides its transfer

    def idle(s):  # share of the ranks' time in the step spent waiting
        return 1.0 - s.busy.sum() / (s.busy.size * s.compute_time)

    assert idle(naive) > 0.4 and idle(bal) < 0.1


@given(st.integers(0, 10_000), st.sampled_from([0.6, 1.0, 1.5]), st.booleans())
@FAST
def test_widened_rings_stay_hidden_and_cost_no_rank_time(seed, slack, mha):
    setup = HdpSetup(n_gpus=64, context=131072, capacity=8192,
                     model=replace(LLAMA_7B_GQA, kv_heads=32) if mha else LLAMA_7B_GQA)
    x = global_batch(1_500_000, context=131072, seed=seed)
    items = plan_items(x, setup, "balanced")
    wide = widen_rings(items, setup, slack=slack)
    assert np.all(wide.width >= items.width) and wide.width.max() <= setup.d_hdp
    assert np.array_equal(wide.tokens, items.tokens) and wide.n == items.n
    grown = wide.width > items.width
    if not grown.any():
        assert wide is items
        return
    assert np.all(np.diff(wide.seq_ptr)[grown] == 1)  # only single sequences are widened
    assert np.all(wide.exposed_inter[grown] == 0.0)  # their rings still hide
    assert np.all(wide.offload_ratio[grown] == 0.0)
    cost = setup.cost_model
    rank_time = wide.width[grown] * wide.fwd_inter[grown]
    whole = wide.attention[grown] + cost.linear(wide.tokens[grown]) + wide.width[grown] * \
        cost.gamma
    assert np.allclose(rank_time, whole)  # N t(N) = attention + linear: widening is free
    # one rank more would no longer hide (or the pool is full, or the target is met)
    more = wide.width[grown] + 1
    hops = setup.hops()
    c = wide.tokens[grown] / more
    step_t = c * setup.model.kv_bytes_per_token / hops["inter_bw"] + hops["inter_lat"]
    hidden = wide.attention[grown] / more**2 >= step_t
    target = slack * float((np.where(wide.width > 1, wide.fwd_inter, wide.fwd_intra) *
                            wide.width).sum()) / setup.d_hdp
    assert np.all(~hidden | (more > setup.d_hdp) | (wide.fwd_inter[grown] <= target * 1.0001))


def test_case_study_balanced_plan_wins_on_its_own():
    x = global_batch(32 * 2**20, seed=0)
    steps = compare_schemes(x, HdpSetup())
    bal = steps["balanced HDP"]
    assert not bal.fallback
    assert bal.step_time < steps["naive HDP"].step_time < steps["static mesh"].step_time
    assert bal.step_time < 1.1 * bal.lower_bound
    assert bal.microbatches.max() > bal.microbatches.min()  # unequal counts per rank


def test_offload_pays_only_when_rings_are_transfer_bound():
    mha = HdpSetup(model=replace(LLAMA_7B_GQA, kv_heads=32))
    x = np.array([2**21, 2**20, 262144, 65536])
    n_gqa, _ = select_ranks(x, HdpSetup(), offload=True)
    n_mha, r_mha = select_ranks(x, mha, offload=True)
    assert np.array_equal(n_gqa, np.ceil(x / 8192))  # GQA rings already hide their transfers
    assert np.all(n_mha < np.ceil(x / 8192)) and np.all(r_mha > 0)
    D, r = offload_ranks(x, mha)
    assert np.all(n_mha >= D)
    # the ratio offloaded is what the chosen ranks need: memory fits, and D(s) is the floor
    l, C = mha.layers_per_stage, mha.capacity
    assert np.all((2 + (1 - r_mha) * (l - 2)) * x <= n_mha * l * C * (1 + 1e-9))
    faster = offload_ranks(x, replace(mha, pcie_bw=mha.pcie_bw * 4))[0]
    assert np.all(faster <= D)


# ------------------------------------------------------------------ kernels against references


@given(st.lists(st.integers(1, 6), min_size=1, max_size=40), st.integers(6, 12))
@FAST
def test_naive_kernel_matches_reference(widths, R):
    w = np.array(widths, dtype=np.int64)
    order = np.arange(w.size, dtype=np.int64)[::-1].copy()
    ptr = np.concatenate([[0], np.cumsum(w)])
    ranks = np.empty(ptr[-1], dtype=np.int64)
    slots = np.empty(ptr[-1], dtype=np.int64)
    S._naive_kernel(order, w, R, ranks, slots, ptr)
    ref = S._reference_naive(order.tolist(), widths, R)
    for i in range(w.size):
        assert ranks[ptr[i]:ptr[i + 1]].tolist() == ref[i][0]
        assert set(slots[ptr[i]:ptr[i + 1]].tolist()) == {ref[i][1]}


@given(st.lists(st.tuples(st.floats(0.1, 10), st.integers(1, 4)), min_size=1, max_size=30),
       st.integers(4, 10), st.sampled_from([0.0, 0.2, 0.5]), st.integers(1, 4),
       st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2, 4]), st.integers(1, 6))
@FAST
def test_balance_kernel_matches_reference(items, R, delta, p, mode, rpn, n_buckets):
    d = np.array([t for t, _ in items])
    w = np.array([k for _, k in items], dtype=np.int64)
    d_in = d * 0.8
    order, bucket_ptr = S.flop_buckets(d * w, n_buckets)
    ptr = np.concatenate([[0], np.cumsum(w)]).astype(np.int64)
    ranks = np.empty(ptr[-1], dtype=np.int64)
    slots = np.empty(ptr[-1], dtype=np.int64)
    load = np.empty(R)
    align = p > 1
    S._balance_kernel(order, bucket_ptr, w, d_in, d, R, delta, p, mode, align, rpn, ptr, ranks,
                      slots, load, np.empty(w.size))
    ref, ref_load = S._reference_balance(order.tolist(), bucket_ptr.tolist(), w.tolist(), d_in,
                                         d, R, delta, p, mode, align, rpn)
    for i in range(w.size):
        assert ranks[ptr[i]:ptr[i + 1]].tolist() == ref[i][0]
        assert slots[ptr[i]:ptr[i + 1]].tolist() == ref[i][1]
    assert np.allclose(load, ref_load)


def _dag_case(rng, p, R, n_items):
    widths = rng.integers(1, 4, size=n_items).clip(max=R)
    lists = [[] for _ in range(R)]
    for i in range(n_items):  # aligned slots, global item order: deadlock-free by construction
        members = rng.choice(R, size=widths[i], replace=False)
        slot = max(len(lists[r]) for r in members) if p > 1 else None
        for r in members:
            if p > 1:
                lists[r] += [-1] * (slot - len(lists[r]))
            lists[r].append(i)
    return widths, lists


@pytest.mark.parametrize("p", [1, 2, 3])
def test_step_dag_matches_the_reference_timeline(p):
    from uneven.engines.timeline import edges_to_csr, run_timeline

    rng = np.random.default_rng(p)
    for _ in range(15):
        R, n_items, tp = 4, int(rng.integers(1, 9)), 2
        widths, lists = _dag_case(rng, p, R, n_items)
        t_f = rng.uniform(0.1, 1.0, n_items)
        act = rng.uniform(0, 1e6, n_items)
        rank_ptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
        rank_items = np.array([i for x in lists for i in x], dtype=np.int64)
        item_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        n_slots = rank_ptr[-1]
        n_max = n_slots * 2 * p + n_items * 2 * p + 1
        arrs = [np.empty(n_max) if k == 0 else np.empty(n_max, dtype=np.int64) for k in range(6)]
        e_max = 3 * n_slots * 2 * p + 8
        src, dst = np.empty(e_max, dtype=np.int64), np.empty(e_max, dtype=np.int64)
        dly = np.empty(e_max)
        opid = np.full(max(n_slots * 2 * p, 1), -1, dtype=np.int64)
        dur, res, kind, item_of, rank_of, slot_of = arrs
        n, e = S._step_dag(p, R, rank_ptr, rank_items, item_ptr, t_f, act, 1e9, 1e8, 1e-6, 5e-6,
                           tp, dur, res, kind, item_of, rank_of, slot_of, src, dst, dly, opid)
        ptr, psrc, pdly = edges_to_csr(n, src[:e], dst[:e], dly[:e])
        tl = run_timeline(dur[:n], res[:n], ptr, psrc, pdly)
        ref = S._reference_step(p, R, lists, widths, t_f, act, (1e9, 1e8), (1e-6, 5e-6), tp)
        for o in range(n):
            if kind[o] < 0:
                continue
            r, s = rank_of[o], res[o] - rank_of[o] * p
            start, finish = ref[r, s, kind[o], slot_of[o]]
            assert tl.start[o] == pytest.approx(start) and tl.finish[o] == pytest.approx(finish)


@pytest.mark.parametrize("p, m", [(2, 1), (2, 5), (4, 3), (4, 8), (5, 12)])
def test_pipeline_order_and_time_match_the_pipeline_module(p, m):
    """Equal micro-batches: the step's 1F1B order is Megatron's (the pipeline module's fixed
    order) and its time is the pipeline module's, (m + p - 1)(F + B) plus the sends."""
    setup = HdpSetup(n_gpus=8 * p, tp=8, pp=p, model=replace(LLAMA_7B_GQA, layers=4 * p * 3),
                     context=8192, capacity=8192)
    x = np.full(m, 8192)  # one pack each: m equal micro-batches on one pipeline
    step = schedule_step(x, setup, "naive")
    t_f = step.items.fwd_inter[0] * setup.layers_per_stage
    send = step.items.act_bytes[0] / (8 * setup.nic_bw) + setup.hops()["inter_lat"]
    sched = pipeline_schedule("1f1b", p, m)
    sim = simulate_pipeline(sched, t_f, 2 * t_f, delays=send)
    assert step.compute_time == pytest.approx(sim.iteration_time)
    okind, omb, _ = _fixed_order(sched)
    for s in range(p):
        ops = np.flatnonzero(step.resource == s)
        ops = ops[np.argsort(step.start[ops], kind="stable")]
        assert step.kind[ops].tolist() == okind[s].tolist()


def test_list_schedule_against_the_exact_optimum():
    rng = np.random.default_rng(0)
    worst = 1.0
    for _ in range(60):
        k = int(rng.integers(2, 7))
        R = int(rng.integers(2, 5))
        d = rng.uniform(0.5, 5.0, k)
        w = rng.integers(1, R + 1, k)
        opt = optimal_makespan(d, w, R)
        heur = list_schedule(d, w, R)
        assert heur >= opt - 1e-9
        worst = max(worst, heur / opt)
    # packs only: LPT is within 4/3 of the optimum (Graham)
    for _ in range(25):
        d = rng.uniform(0.5, 5.0, 6)
        R = int(rng.integers(2, 4))
        assert list_schedule(d, np.ones(6, int), R) <= 4 / 3 * optimal_makespan(d, [1] * 6, R) \
            + 1e-9
    print(f"worst heuristic / optimum with rings: {worst:.3f}")
    assert worst < 2.0


# ------------------------------------------------------------------ exactness


def _random_assignment(rng, n_seq, n_ranks, split_prob=0.3):
    out = []
    for _ in range(n_seq):
        if rng.random() < split_prob:
            members = rng.choice(n_ranks, size=2, replace=False)
            mb = int(rng.integers(0, 4))
            out.append([(int(r), mb) for r in members])
        else:
            out.append((int(rng.integers(0, n_ranks)), int(rng.integers(0, 4))))
    return out


def test_token_level_loss_is_assignment_invariant_and_a_local_mean_is_not():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=12)
    ref = assignment_gradient(lengths, [(0, 0)] * 12)
    differs = 0
    for _ in range(20):
        a = _random_assignment(rng, 12, 3)
        assert np.allclose(assignment_gradient(lengths, a), ref)
        for loss in ("microbatch", "sequence"):
            local = assignment_gradient(lengths, a, loss=loss)
            differs += not np.allclose(local, assignment_gradient(lengths, [(0, 0)] * 12,
                                                                  loss=loss))
    assert differs >= 36
    # the token-level gradient is the plain mean over all tokens
    assert np.allclose(ref, assignment_gradient(lengths, [(r % 2, r // 2) for r in range(12)]))


# ------------------------------------------------------------------ validation


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="capacity"):
        HdpSetup(context=2**21, capacity=3 * 8192)  # d_cp = 86 does not divide 512
    with pytest.raises(ValueError, match="tp"):
        HdpSetup(tp=3)
    with pytest.raises(ValueError, match="n_gpus"):
        HdpSetup(n_gpus=12)
    with pytest.raises(ValueError, match="scheme"):
        schedule_step([8192], SMALL, "dynamic")
    with pytest.raises(ValueError, match="context"):
        plan_items([SMALL.context + 1], SMALL, "naive")
    with pytest.raises(ValueError, match="offload"):
        plan_items([100], SMALL, "static", offload=True)
    with pytest.raises(ValueError, match="delta"):
        schedule_step([100], SMALL, delta=1.0)
    with pytest.raises(ValueError, match="widen"):
        schedule_step([100], SMALL, widen=1)
    with pytest.raises(ValueError, match="slack"):
        widen_rings(plan_items([100], SMALL, "naive"), SMALL, slack=0.0)
    with pytest.raises(ValueError, match="static"):
        widen_rings(plan_items([100], SMALL, "static"), SMALL)
    with pytest.raises(ValueError, match="capacity"):
        best_fit_pack([5, 11], 10)
    with pytest.raises(ValueError, match="8 items"):
        optimal_makespan(np.ones(9), np.ones(9, int), 2)
    with pytest.raises(ValueError, match="loss"):
        assignment_gradient([3], [(0, 0)], loss="mean")
    with pytest.raises(ValueError, match="assignment"):
        assignment_gradient([3, 4], [(0, 0)])


def test_results_are_checked_when_made_and_read_only():
    items = plan_items([20000, 3000, 5000], SMALL, "naive")
    assert not items.width.flags.writeable and not items.tokens.flags.writeable
    with pytest.raises(ValueError, match="width"):
        replace(items, width=np.array([0, 1, 1][: items.n]))
    with pytest.raises(ValueError, match="offload_ratio"):
        replace(items, offload_ratio=np.full(items.n, 1.5))
    with pytest.raises(ValueError, match="seq_ptr"):
        replace(items, seq_ptr=items.seq_ptr[::-1].copy())
    with pytest.raises(ValueError, match="scheme"):
        replace(items, scheme="dynamic")
    step = schedule_step([20000, 3000, 5000], SMALL, "naive")
    assert not step.busy.flags.writeable and not step.start.flags.writeable
    with pytest.raises(ValueError):
        step.busy[0] = 1.0
    with pytest.raises(ValueError, match="busy"):
        replace(step, busy=step.busy[:-1])
    with pytest.raises(ValueError, match="step_time"):
        replace(step, step_time=float("nan"))
    with pytest.raises(ValueError, match="items"):
        replace(step, items=None)
    with pytest.raises(ValueError, match="scheme"):
        replace(step, scheme="static")  # naive items cannot make a static step
    with pytest.raises(ValueError, match="resource"):
        replace(step, resource=step.resource + SMALL.d_hdp)
    assert replace(step, step_time=0.0).tokens_per_s == float("inf")  # documented
    assert replace(step).step_time == step.step_time  # a valid copy passes its own checks
    with pytest.raises(ValueError, match="name"):
        replace(LLAMA_7B_GQA, name=7)
    with pytest.raises(ValueError, match="pcie_bw"):
        replace(SMALL, pcie_bw=1e-300)


def test_cost_model_ranges_and_scalars():
    c = default_cost_model()
    assert isinstance(c.attention(8192), float) and isinstance(c.linear(8192.0), float)
    assert c.attention(np.array([[1.0, 2.0]])).shape == (1, 2)
    for bad in (-1.0, float("inf"), 2.0**60, True, "8K", [1 + 2j]):
        with pytest.raises(ValueError, match="s"):
            c.attention(bad)
    with pytest.raises(ValueError, match="alpha"):
        CostModel(1e300, 0.0, 0.0)
    with pytest.raises(ValueError, match="beta_linear"):
        c.crossover("1")
    assert CostModel(0.0, 1e-7, 2e-7).crossover() == float("inf")  # documented
    assert CostModel(5e-324, 0.0, 1e6).crossover() == float("inf")  # beyond a float
    with pytest.raises(ValueError, match="attention"):
        S.fit_cost_model([1.0, 2.0], [1e6, 1e6], [1.0, 1.0])  # alpha = 1e6 / s**2 fits > 1e6
    with pytest.raises(ValueError, match="model"):
        default_cost_model(replace(LLAMA_7B_GQA, ffn=1, kv_heads=32, heads=32))


def test_work_and_memory_budgets_refuse_before_running(monkeypatch):
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "100000")
    with pytest.raises(ValueError, match="UNEVEN_MAX_STEPS"):
        best_fit_pack(np.full(20000, 3), 4)  # 20,000 bins to scan for 20,000 sequences
    with pytest.raises(ValueError, match="durations.*UNEVEN_MAX_STEPS"):
        list_schedule(np.ones(5000), np.ones(5000, dtype=int), 4096)
    # the balance kernel stops by itself at its step limit
    w = np.ones(50, dtype=np.int64)
    d = np.ones(50)
    ptr = np.arange(51, dtype=np.int64)
    out = [np.empty(50, dtype=np.int64), np.empty(50, dtype=np.int64), np.empty(4)]
    order = np.arange(50, dtype=np.int64)
    one = np.array([0, 50], dtype=np.int64)
    out.append(np.empty(50))
    assert S._balance_kernel(order, one, w, d, d, 4, 0.0, 1, 0, False, 0, ptr, *out, 10) == -1
    assert S._balance_kernel(order, one, w, d, d, 4, 0.0, 1, 0, False, 0, ptr, *out) == 50
    monkeypatch.setenv("UNEVEN_MAX_BYTES", str(2**20))
    with pytest.raises(ValueError, match="UNEVEN_MAX_BYTES"):
        assignment_gradient([100_000], [(0, 0)], dim=8)


def test_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="lengths"):
        plan_items([SMALL.context + 1], SMALL, "naive")
    with pytest.raises(ValueError, match="lengths"):
        select_ranks([2.0**50], SMALL)
    with pytest.raises(ValueError, match="setup"):
        offload_ranks([1000], "setup")
    with pytest.raises(ValueError, match="_naive"):
        schedule_step([20000], SMALL, "balanced", _naive=0.5)
    naive = schedule_step([20000], SMALL, "naive")
    with pytest.raises(ValueError, match="_naive"):  # a naive step of other items
        schedule_step([20000], SMALL, "balanced", _naive=naive)
    with pytest.raises(ValueError, match="items"):
        schedule_step([20000], HdpSetup(n_gpus=16, context=131072, capacity=16384),
                      "naive", items=plan_items([131072], SMALL, "naive"))
    for bad in (None, [(0, 0, 0)], [[]], [("a", 0)], [(0, True)], [[(0, 0)] * 5000]):
        with pytest.raises(ValueError, match="assignment"):
            assignment_gradient([3], bad)
    with pytest.raises(ValueError, match="durations"):
        list_schedule([1e300], [1], 1)
    with pytest.raises(ValueError, match="edges"):
        length_shares([1, 2], [0, float("inf")])


def test_fit_cost_model_refuses_a_single_distinct_length():
    # the reproducer: at one length every split between alpha s**2 and beta_attn s fits
    with pytest.raises(ValueError, match=r"tokens must hold at least 2 distinct lengths.*all 1000"):
        S.fit_cost_model([1000, 1000, 1000], [1.0, 2.0, 3.0], [1.0, 5.0, 9.0])
    with pytest.raises(ValueError, match="tokens"):  # equal to one part in 10**12: still one
        S.fit_cost_model([1000.0, 1000.0 * (1 + 1e-12)], [1e-3, 1e-3], [1e-3, 1e-3])
    # two distinct lengths among three points are enough (two coefficients): closed form
    s = np.array([1000.0, 1000.0, 3000.0])
    c = S.fit_cost_model(s, 2e-9 * s**2 + 3e-6 * s, 5e-7 * s)
    assert (c.alpha, c.beta_attn, c.beta_linear) == pytest.approx((2e-9, 3e-6, 5e-7), rel=1e-9)


@FAST
@given(st.lists(st.integers(1, 1 << 20), min_size=2, max_size=6, unique=True),
       st.lists(st.integers(0, 5), min_size=2, max_size=12),
       st.floats(1e-12, 1e-8), st.floats(1e-9, 1e-5), st.floats(1e-9, 1e-5))
def test_fit_cost_model_recovers_exact_times_from_any_two_distinct_lengths(
        distinct, picks, alpha, beta_attn, beta):
    s = np.array([distinct[i % len(distinct)] for i in picks] + distinct[:2], dtype=float)
    c = S.fit_cost_model(s, alpha * s**2 + beta_attn * s, beta * s)
    # relative least squares on exact data: the attention model is reproduced at every length
    assert c.attention(s) == pytest.approx(alpha * s**2 + beta_attn * s, rel=1e-6)
    assert c.beta_linear == pytest.approx(beta, rel=1e-9)
    one = np.full(len(picks), float(distinct[0]))
    with pytest.raises(ValueError, match="tokens"):
        S.fit_cost_model(one, alpha * one**2 + beta_attn * one, beta * one)
