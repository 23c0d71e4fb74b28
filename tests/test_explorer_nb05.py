"""Notebook 05's explorer driven headless, and its figure recipes."""

import numpy as np
import pytest

from uneven.ep.decode import DecodeSetup, simulate_decode
from uneven.ep.placement import contiguous_slots, eplb_placement, nic_aware_placement
from uneven.explorers import nb05
from uneven.workloads import expert_popularity


@pytest.fixture(scope="module")
def explorer():
    return nb05.balancing_explorer(show=False)


def test_defaults_and_presets(explorer):
    assert explorer.error is None and explorer.png[1:4] == b"PNG"
    s0 = explorer.state
    assert s0.label.startswith("contiguous") and s0.gpu_done.size == 32 and s0.nic_in.size == 16
    np.testing.assert_allclose(s0.layer_time, s0.gpu_done.max())
    explorer.preset_menu.value = "everything (+ overlap, SM-free)"
    s1 = explorer.state
    assert explorer.error is None and s1.layer_time < 0.6 * s0.layer_time and s1.swaps > 0
    explorer.preset_menu.value = "H800-like: one GPU per NIC"
    assert explorer.state.nic_in.size == 32 and explorer.state.gpus_per_nic == 1
    explorer.preset_menu.value = "DeepEP default (contiguous, direct)"
    explorer.controls["gpus_per_nic"].value = 2
    explorer.controls["nvlink_gbps"].value = 450.0
    assert explorer.state.layer_time == pytest.approx(s0.layer_time)


def test_controls_move_the_state(explorer):
    explorer.controls["n_hosts"].value = 8
    assert explorer.error is None and explorer.state.gpu_done.size == 64
    explorer.controls["n_hosts"].value = 4
    t = explorer.state.layer_time
    explorer.controls["nic_gbps"].value = 800.0
    assert explorer.state.layer_time < t
    explorer.controls["nic_gbps"].value = 400.0
    explorer.controls["mode"].value = "relay"
    assert explorer.state.nic_in.max() < explorer.state.layer_time
    explorer.controls["mode"].value = "direct"
    explorer.controls["skew"].value = 1.0
    assert explorer.state.nic_ratio < 1.2
    explorer.controls["skew"].value = 8.0


def test_bad_values_are_shown_not_raised():
    s = nb05.balancing_state(tokens_per_gpu=32)
    assert s.layer_time > 0
    with pytest.raises(ValueError, match="n_hosts"):
        nb05.balancing_state(n_hosts=3)
    ex = nb05.balancing_explorer(show=False)
    ex.compute = lambda **kw: nb05.balancing_state(**{**kw, "n_hosts": 3})
    ex.controls["skew"].value = 4.0
    assert ex.error is not None and "n_hosts" in ex.error and ex.state is not None


def test_figure_recipes_draw():
    load = expert_popularity(256, 8.0, seed=0) * 1e4
    pl = {"contiguous": contiguous_slots(256, 32), "EPLB": eplb_placement(load, 256, 32),
          "NIC-aware": nic_aware_placement(load, 256, 32)}
    assert nb05.load_figure(load, pl, load).to_png()[1:4] == b"PNG"
    r = simulate_decode(DecodeSetup(tokens_per_gpu=16), n_steps=3)
    assert nb05.swaps_figure({"EPLB": r}, drift=0.005).axes
    assert nb05.waterfall_figure(["a", "b"], [2.0, 1.0], [2.5, 1.2], paper=(190.21, 134.0)).axes
    # a step that adds time, with the layer times beside
    fig = nb05.waterfall_figure(["a", "b", "c"], [2.0, 2.5, 1.0], [2.5, 2.6, 1.2],
                                layer_us=[4.0, 3.5, 2.0])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("layer time" in t for t in labels)
    t = {("skewed", "x"): 2e-4, ("skewed", "y"): 1e-4, ("balanced", "x"): 1e-4,
         ("balanced", "y"): 5e-5}
    assert nb05.transport_figure(t).axes
    times = {"one copy per expert": [2e-4, 4e-4], "relay, overlap": [1e-4, 2e-4]}
    fig = nb05.batch_figure([16, 32], times, ["relay, overlap"] * 2)
    # the rings that mark the best choice have a legend entry beside the lines'
    assert any("best" in t.get_text() for ax in fig.axes if ax.get_legend()
               for t in ax.get_legend().get_texts())


def test_states_and_recipes_check_their_inputs():
    import dataclasses

    from uneven import plots

    s = nb05.balancing_state(n_hosts=2, tokens_per_gpu=16)
    assert not s.gpu_done.flags.writeable and not s.gpu_ready.flags.writeable
    for changes, name in (({"gpu_done": s.gpu_done[:-1]}, "gpu_done"),
                          ({"nic_in": -s.nic_in}, "nic_in"), ({"layer_time": np.inf}, "layer_time"),
                          ({"label": None}, "label"), ({"swaps": True}, "swaps")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(s, **changes)
    fig, _ = plots.figure(8, 3)
    with pytest.raises(ValueError, match="state"):
        nb05.draw_balancing(fig, (1.0, 2.0))
    with pytest.raises(ValueError, match="fig"):
        nb05.draw_balancing(None, s)
    with pytest.raises(ValueError, match="nic_gbps"):
        nb05.balancing_state(nic_gbps=1e300)
    plan = contiguous_slots(8, 4, gpus_per_node=4)
    with pytest.raises(ValueError, match="load"):
        nb05.swap_to_steady(plan, [1.0, 2.0], 0.02)
    with pytest.raises(ValueError, match="placement"):
        nb05.swap_to_steady(float("inf"), np.ones(8), 0.02, max_rounds=0)
    load = np.ones(8)
    for call, name in (
        (lambda: nb05.load_figure([0, 0, 0, 1], {"contiguous": plan}, load), "counts"),
        (lambda: nb05.load_figure(load, {"mine": plan}, load), "per_placement"),
        (lambda: nb05.load_figure(load, {"contiguous": plan}, np.zeros(8)), "load"),
        (lambda: nb05.swaps_figure([], drift=0.1), "runs"),
        (lambda: nb05.waterfall_figure(None, [1.0], [1.0]), "names"),
        (lambda: nb05.waterfall_figure(["a"], [1e308], [1.0]), "median_us"),
        (lambda: nb05.waterfall_figure(["a"], [1.0], [1.0], paper=5), "paper"),
        (lambda: nb05.transport_figure({("skewed", "x"): 1.0}), "table"),
        (lambda: nb05.batch_figure([16, 16], {"relay": [1.0, 1.0]}, ["relay"] * 2), "batches"),
        (lambda: nb05.batch_figure([16], {"relay": [0.0]}, ["relay"]), "times"),
        (lambda: nb05.batch_figure([16], {"relay": [1.0]}, ["direct"]), "best"),
    ):
        with pytest.raises(ValueError, match=name):
            call()


def test_waterfall_puts_the_paper_beside_the_model():
    fig = nb05.waterfall_figure(["a", "b", "c"], [200.0, 120.0, 40.0], [210.0, 130.0, 45.0],
                                layer_us=[300.0, 250.0, 150.0], paper=nb05.PAPER_COMM)
    main, side = fig.axes
    heights = [b.get_height() for b in side.patches]
    assert heights == pytest.approx([1.0, 0.6, 0.2])  # the model's rungs over the first
    paper = [ln for ln in side.lines if "[chapter]" in ln.get_label()]
    assert len(paper) == 1
    assert list(paper[0].get_ydata()) == pytest.approx([1.0, 134.00 / 190.21])  # the two ends
    # dots only: no line drawn between the paper's two ends, which would suggest values between
    assert all(ln.get_linestyle() in ("None", "") for ln in side.lines)
    assert side.get_ylim()[1] == pytest.approx(1.1)  # nothing above 1: the axis stops near it
    assert any("[chapter]" in t.get_text() for t in side.get_legend().get_texts())
    assert len(nb05.waterfall_figure(["a"], [1.0], [1.0]).axes) == 1  # no paper, no panel


def test_waterfall_draws_the_solved_rungs_beside_the_paper():
    fig = nb05.waterfall_figure(["a", "b", "c"], [200.0, 120.0, 40.0], [210.0, 130.0, 45.0],
                                paper=nb05.PAPER_COMM, fitted_us=[200.0, 240.0, 134.0 / 190.21
                                                                   * 200.0])
    side = fig.axes[1]
    fit = [ln for ln in side.lines if "solved" in ln.get_label()]
    assert len(fit) == 1 and list(fit[0].get_ydata()) == pytest.approx([1.0, 1.2, 134 / 190.21])
    assert side.get_ylim()[1] == pytest.approx(1.1 * 1.2)  # the axis holds the highest rung
    with pytest.raises(ValueError, match="fitted_us"):
        nb05.waterfall_figure(["a"], [1.0], [1.0], fitted_us=[1.0])  # needs the paper
    with pytest.raises(ValueError, match="fitted_us"):
        nb05.waterfall_figure(["a"], [1.0], [1.0], paper=(2.0, 1.0), fitted_us=[1.0, 2.0])


def test_transport_figure_puts_two_batches_side_by_side():
    a = {("skewed", "x"): 2e-4, ("skewed", "y"): 1e-4, ("balanced", "x"): 1e-4,
         ("balanced", "y"): 5e-5}
    b = {k: 2 * v for k, v in a.items()}
    fig = nb05.transport_figure(a, b, titles=["19 tokens", "64 tokens"])
    titles = ["".join(ax.get_title(loc) for loc in ("left", "center", "right"))
              for ax in fig.axes]
    assert titles == ["19 tokens", "64 tokens"]
    tops = [max(p.get_height() for p in ax.patches) for ax in fig.axes]
    assert tops == pytest.approx([200.0, 400.0])  # µs, each panel its own table
    other = {("skewed", "x"): 2e-4, ("skewed", "z"): 1e-4, ("balanced", "x"): 1e-4,
             ("balanced", "z"): 5e-5}
    for call, name in ((lambda: nb05.transport_figure(a, other), "table"),
                       (lambda: nb05.transport_figure(), "tables"),
                       (lambda: nb05.transport_figure(a, b, titles=["one"]), "titles")):
        with pytest.raises(ValueError, match=name):
            call()


def test_ablation_runs_pass_the_relay_costs_to_the_relay_rungs_only():
    s = DecodeSetup(n_hosts=2, tokens_per_gpu=4)
    free = nb05.ablation_runs(s, n_steps=2)
    dear = nb05.ablation_runs(s, n_steps=2, relay_sync=2e-5)
    relay = [i for i, (_, kw) in enumerate(nb05.ABLATION) if kw.get("mode") == "relay"]
    assert relay == [3, 4, 5]
    assert dear.med[:3] == free.med[:3]
    assert all(dear.med[i] > free.med[i] for i in relay)
    with pytest.raises(ValueError, match="relay_sync"):
        nb05.ablation_runs(s, n_steps=2, relay_sync=-1.0)


def test_matched_ablation_calibrates_then_solves():
    m = nb05.matched_ablation(n_steps=4)
    # the matched batch is the closest to the paper's baseline among its neighbours
    near = [simulate_decode(DecodeSetup(tokens_per_gpu=b), placement="contiguous", n_steps=4,
                            seed=1).median("exposed_comm") * 1e6
            for b in (m.batch - 1, m.batch + 1)]
    assert all(abs(m.base - 190.21) <= abs(x - 190.21) for x in near)
    assert m.fitted[-1] == pytest.approx(134.0, abs=0.05)
    assert m.fitted[:m.relay_rung] == m.abl.med[:m.relay_rung]
    assert 0 < m.break_even < m.sync
    # the sync sits on the critical path twice (dispatch and combine): the solve is linear
    assert m.sync * 1e6 == pytest.approx((134.0 - m.abl.med[-1]) / 2, abs=0.05)
    # the last rung's break-evens: the relay with that cost exposes what one copy per expert does
    last = nb05._decode_kw(nb05.ABLATION[-1][1])
    direct = simulate_decode(m.setup, n_steps=4, seed=1, **{**last, "mode": "direct"})
    assert m.direct_final == pytest.approx(direct.median("exposed_comm") * 1e6)
    for cost, c in m.break_even_final.items():
        r = simulate_decode(m.setup, n_steps=4, seed=1, **{**last, cost: c})
        assert r.median("exposed_comm") * 1e6 == pytest.approx(m.direct_final, abs=0.011)  # tol
    assert 0 < m.break_even_final["relay_sync"] < m.break_even
    for _q, p, v, r in m.rows:
        assert r == pytest.approx(v / p)
    assert "[chapter]" in m.report


def test_leave_one_out_takes_each_mechanism_away_once():
    s = DecodeSetup(n_hosts=2, tokens_per_gpu=4)
    t = nb05.leave_one_out(s, n_steps=2)
    full = nb05._decode_kw(nb05.ABLATION[-1][1])
    # "all" is the ablation's last rung, whatever order the rungs came in
    assert t.all == pytest.approx(nb05.ablation_runs(s, n_steps=2).med[-1])
    assert list(t.without) == list(nb05.WITHOUT) == list(t.change)
    for name, drop in nb05.WITHOUT.items():
        kw = nb05._decode_kw({**nb05.ABLATION[-1][1], **drop})
        # each variant differs from the full set in exactly one keyword
        assert sum(kw.get(k) != full.get(k) for k in set(kw) | set(full)) == 1
        want = simulate_decode(s, n_steps=2, seed=1, **kw).median("exposed_comm") * 1e6
        assert t.without[name] == pytest.approx(want)
        assert t.change[name] == pytest.approx(t.without[name] - t.all)
    assert "(model)" in t.report
    with pytest.raises(ValueError, match="n_steps"):
        nb05.leave_one_out(s, n_steps=0)
