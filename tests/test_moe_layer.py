"""The per-layer TP+TP vs SP+EP timeline, its overlaps, the cluster run, iteration and memory."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.parallel_volumes import INTERNAL_352B, collective_time, comm_volume
from uneven.schedulers.moe_layer import (
    H800_NODE,
    ablation,
    cluster_layer_timeline,
    iteration_model,
    layer_timeline,
    memory_per_gpu,
    mfu,
    training_flops_per_token,
)

FREE = H800_NODE.with_(comm_sms=0)  # no SM tax: overlap can only help


def _gemm_seconds(flops, hw=H800_NODE):
    return flops / (hw.peak_flops * hw.gemm_efficiency)


def test_no_overlap_is_the_sum_of_every_operator():
    for strategy in ("tp_tp", "sp_ep", "sp_agrs"):
        t = layer_timeline(strategy=strategy)
        assert t.layer_time == pytest.approx(t.compute_time + t.comm_time, rel=1e-12)
        assert t.exposed_comm == pytest.approx(t.comm_time)


def test_compute_is_the_flop_count_and_the_same_for_every_layout():
    s, n, hw = INTERNAL_352B, 8, H800_NODE
    T, h, hf, k = s.tokens, s.hidden, s.ffn_hidden, s.top_k
    gemm_f = 2 * T * h * h * 1.5 + 2 * T * h * h + 6 * T * k * h * hf  # QKV, proj, experts
    attn_f = 2 * s.seq_len**2 * h
    fwd = gemm_f / n / (hw.peak_flops * hw.gemm_efficiency) + attn_f / n / (
        hw.peak_flops * hw.attention_efficiency)
    bwd = 2 * gemm_f / n / (hw.peak_flops * hw.gemm_efficiency) + 2.5 * attn_f / n / (
        hw.peak_flops * hw.attention_efficiency)
    for strategy in ("tp_tp", "sp_ep"):
        t = layer_timeline(strategy=strategy)
        assert t.compute_time == pytest.approx(fwd + bwd)
        assert t.forward_time == pytest.approx(fwd + (t.comm_time / 2))


def test_communication_is_the_volume_there_and_back():
    s, n = INTERNAL_352B, 8
    sp_att = comm_volume(s, n, "attention", "sp") * 2
    ep = comm_volume(s, n, "ffn", "ep") * 2

    def a2a(b):
        return collective_time(b, n, "all_to_all", bandwidth=160e9, alpha=3.33e-6)

    # QKV and output all-to-alls carry (1 + 2/m) : 1 of the SP volume
    fwd = a2a(sp_att * 0.6) + a2a(sp_att * 0.4) + 2 * a2a(ep / 2)
    assert layer_timeline(strategy="sp_ep").comm_time == pytest.approx(2 * fwd)
    tp = comm_volume(s, n, "attention", "tp") * 2
    ring = collective_time(tp / 2, n, "ring", bandwidth=160e9, alpha=3.33e-6)
    assert layer_timeline(strategy="tp_tp").comm_time == pytest.approx(2 * 4 * ring)


@settings(max_examples=20, deadline=None)
@given(strategy=st.sampled_from(["tp_tp", "sp_ep", "sp_agrs"]), tiles=st.integers(1, 48),
       order=st.sampled_from(["sorted", "random"]), k=st.integers(1, 8),
       n=st.sampled_from([2, 4, 8]))
def test_overlap_never_hurts_without_an_sm_tax(strategy, tiles, order, k, n):
    shape = INTERNAL_352B.with_(top_k=k)
    kw = dict(shape=shape, strategy=strategy, n=n, n_tiles=tiles, order=order, hw=FREE)
    none = layer_timeline(**kw)
    inter = layer_timeline(inter_op=True, **kw)
    intra = layer_timeline(intra_op=True, **kw)
    both = layer_timeline(inter_op=True, intra_op=True, **kw)
    for t in (inter, intra, both):
        assert t.layer_time <= none.layer_time * (1 + 1e-12)
        assert t.layer_time >= max(t.compute_time, t.comm_time) * (1 - 1e-12)
        assert t.compute_time == pytest.approx(none.compute_time)


def test_one_tile_fuses_nothing():
    none = layer_timeline(strategy="sp_ep", hw=FREE)
    one = layer_timeline(strategy="sp_ep", intra_op=True, n_tiles=1, hw=FREE)
    assert one.layer_time == pytest.approx(none.layer_time)


def test_token_order_and_load():
    sorted_ = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True)
    rand = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True, order="random")
    assert rand.layer_time > sorted_.layer_time
    # the busiest GPU's extra expert tokens cost SP+EP, not TP (which splits every expert)
    assert layer_timeline(strategy="sp_ep", load=1.2).layer_time > layer_timeline().layer_time
    assert layer_timeline(strategy="tp_tp", load=1.2).layer_time == pytest.approx(
        layer_timeline(strategy="tp_tp").layer_time)


def test_ablation_steps_improve_in_order():
    rows = ablation()
    assert [r["label"].split(":")[0] for r in rows][0] == "baseline"
    speed = [r["speedup"] for r in rows]
    assert speed[0] == 1.0 and speed == sorted(speed)
    with pytest.raises(ValueError, match="strategy"):
        ablation(strategy="tp_tp")


def test_item_times_and_pp_sends():
    t = layer_timeline(strategy="sp_ep")
    s, f = t.item_time("dispatch")
    assert t.item_time("fc13")[0] == pytest.approx(f)
    assert "pp_send (activation)" in t.names
    send = t.item_time("pp_send (activation)")
    assert send[1] - send[0] == pytest.approx(8192 / 8 * 4096 * 2 / 50e9)
    with pytest.raises(ValueError, match="name"):
        t.item_time("router")


def test_cluster_run_equals_the_single_gpu_model_and_the_slowest_node_sets_the_pace():
    one = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True, pp_sends=False)
    c = cluster_layer_timeline(3)
    assert np.allclose(c.node_time, one.layer_time)
    loads = np.ones(24)
    loads[13] = 1.25  # one busy GPU on node 1
    c2 = cluster_layer_timeline(3, loads=loads)
    assert c2.node_time[0] == pytest.approx(one.layer_time)
    assert c2.node_time[2] == pytest.approx(one.layer_time)
    assert c2.makespan == c2.node_time[1] > one.layer_time
    # its node-mates wait for it at the collectives
    assert np.all(c2.gpu_time[8:16] > one.layer_time)
    busy = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True, pp_sends=False,
                          load=1.25)
    assert c2.makespan >= busy.layer_time * (1 - 1e-12)
    with pytest.raises(ValueError, match="loads"):
        cluster_layer_timeline(2, loads=np.ones(3))


def test_iteration_model_is_1f1b():
    r = iteration_model(1e-3, 2e-3, n_gpus=240)
    assert (r["dp"], r["m"]) == (2, 360)
    assert r["iteration_s"] == pytest.approx((360 + 14) * 4 * 3e-3)
    assert r["tokens_per_s"] == pytest.approx(720 * 8192 / r["iteration_s"])
    r6 = iteration_model(1e-3, 2e-3, n_gpus=1440)
    assert r6["m"] == 60
    # strong scaling: six times the GPUs, fewer micro-batches per pipeline, a larger bubble
    eff = r6["tokens_per_s"] / r["tokens_per_s"] / 6
    assert eff == pytest.approx((60 / 74) / (360 / 374))
    with pytest.raises(ValueError, match="n_gpus"):
        iteration_model(1e-3, 2e-3, n_gpus=100)


@pytest.mark.parametrize("strategy", ["tp_tp", "sp_ep", "sp_agrs"])
@pytest.mark.parametrize("changes", [{}, {"top_k": 5, "kv_heads": 32}, {"ffn_hidden": 2048}])
def test_training_flops_per_token_is_the_work_the_timeline_times(strategy, changes):
    # With every kernel at the peak, busy SM seconds x peak = the FLOPs the model counts.
    ideal = H800_NODE.with_(gemm_efficiency=1.0, attention_efficiency=1.0, comm_sms=0)
    shape = INTERNAL_352B.with_(**changes)
    t = layer_timeline(shape, strategy, hw=ideal)
    per_token_layer = t.compute_time * ideal.peak_flops * 8 / shape.tokens
    assert training_flops_per_token(shape) == pytest.approx(shape.layers * per_token_layer,
                                                            rel=1e-9)


def test_mfu_closed_form_and_validation():
    assert mfu(1e6, 3e8, 10, peak_flops=1e14) == pytest.approx(0.3)
    assert mfu(0.0, 3e8, 10) == 0.0
    # MegaScale-MoE's two ends of Table 3 imply the same FLOPs per token [derived]
    f240 = 0.3248 * 240 * 989e12 / 272.9e3
    f1440 = 0.2789 * 1440 * 989e12 / 1407.7e3
    assert f240 == pytest.approx(f1440, rel=0.002)
    assert mfu(1407.7e3, f1440, 1440) == pytest.approx(0.2789)
    with pytest.raises(ValueError, match="tokens_per_s"):
        mfu(-1.0, 3e8, 10)
    with pytest.raises(ValueError, match="flops_per_token"):
        mfu(1.0, 0.0, 10)
    with pytest.raises(ValueError, match="n_gpus"):
        mfu(1.0, 1.0, 2.5)
    with pytest.raises(ValueError, match="shape"):
        training_flops_per_token("Internal-352B")


def test_memory_per_gpu():
    sp = memory_per_gpu(strategy="sp_ep")
    tp = memory_per_gpu(strategy="tp_tp")
    attn = INTERNAL_352B.attention_params() * 4 * (1 - 1 / 8)  # 4 layers per stage
    assert sp["total"] - tp["total"] == pytest.approx(attn * (2 + 4 + 12 / 2))
    assert 1.2 < 100 * (sp["total"] / tp["total"] - 1) < 5.4  # the paper's range [paper]
    full = memory_per_gpu(strategy="sp_ep", sar=False)
    cut = 1 - sp["activations"] / full["activations"]
    assert 0.45 < cut < 0.7  # SAR: "about -50%" [paper]


def test_layer_validation():
    with pytest.raises(ValueError, match="strategy"):
        layer_timeline(strategy="ep_ep")
    with pytest.raises(ValueError, match="n must divide the KV heads"):
        layer_timeline(INTERNAL_352B.with_(kv_heads=2, heads=32), n=8)
    with pytest.raises(ValueError, match="load"):
        layer_timeline(load=0.0)
    with pytest.raises(ValueError, match="hw"):
        layer_timeline(hw={"peak": 1})
    with pytest.raises(ValueError, match="comm_sms"):
        H800_NODE.with_(comm_sms=200)
    with pytest.raises(ValueError, match="n must"):
        layer_timeline(n=16)


# --------------------------------------------------------------------------- hardening


def test_node_model_fields_are_checked():
    import dataclasses

    assert H800_NODE.with_(total_sms=132.0).total_sms == 132
    for field, bad in (("peak_flops", True), ("comm_sms", 132), ("alpha", float("inf")),
                       ("sources", {"x": 1}), ("sources", None)):
        with pytest.raises(ValueError, match=field):
            dataclasses.replace(H800_NODE, **{field: bad})
    with pytest.raises(ValueError, match="hw"):
        layer_timeline(hw="H800")


def test_absurd_hardware_is_refused_by_name_not_overflowed():
    for hw in (H800_NODE.with_(peak_flops=1e-300),
               H800_NODE.with_(peak_flops=1e-300, gemm_efficiency=1e-300),  # product is 0
               H800_NODE.with_(nvlink_bw=5e-324, a2a_efficiency=0.5)):
        with pytest.raises(ValueError, match="shape and hw"):
            layer_timeline(hw=hw)
        with pytest.raises(ValueError, match="shape and hw"):
            cluster_layer_timeline(1, hw=hw)


def test_layer_timeline_result_is_frozen_and_checked():
    import dataclasses

    t = layer_timeline()
    for name in ("start", "finish", "resource", "kind", "item"):
        assert not getattr(t, name).flags.writeable
    for field, bad in (("kind", np.full(t.kind.size, 9)), ("strategy", "ep"),
                       ("forward_time", t.layer_time * 2), ("names", ["qkv"]),
                       ("finish", t.start - 1.0), ("inter_op", 1)):
        with pytest.raises(ValueError, match=field):
            dataclasses.replace(t, **{field: bad})
    assert dataclasses.replace(t).layer_time == t.layer_time
    with pytest.raises(ValueError, match="name"):
        t.item_time(3)


def test_cluster_run_is_frozen_checked_and_budgeted(monkeypatch):
    import dataclasses

    c = cluster_layer_timeline(2)
    assert not c.gpu_time.flags.writeable and not c.loads.flags.writeable
    with pytest.raises(ValueError, match="makespan"):
        dataclasses.replace(c, makespan=0.0)
    with pytest.raises(ValueError, match="gpu_time"):
        dataclasses.replace(c, gpu_time=np.ones(5))
    with pytest.raises(ValueError, match="gpus_per_node"):
        cluster_layer_timeline(1, gpus_per_node=3)
    monkeypatch.setenv("UNEVEN_MAX_BYTES", str(64 * 2**20))
    with pytest.raises(ValueError, match="n_nodes"):
        cluster_layer_timeline(4096, n_tiles=512)


def test_iteration_model_and_mfu_refuse_results_beyond_the_float_range():
    with pytest.raises(ValueError, match="layer_forward"):
        iteration_model(2e6, 1.0, n_gpus=240)
    with pytest.raises(ValueError, match="layer_forward"):
        iteration_model(5e-324, 5e-324, n_gpus=240)
    with pytest.raises(ValueError, match="tokens_per_s"):
        mfu(1e308, 1e308, 1)


def test_memory_bound_operators_are_fitted_to_the_papers_third():
    """NodeModel.memory_bound adds the operators the layer has no op for; fit_memory_bound sets it
    so that attention and the GEMMs take the stated share of MegaScale-MoE's layer."""
    from uneven.schedulers.moe_layer import H800_NODE, fit_memory_bound, layer_timeline

    plain = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True)
    r = fit_memory_bound(share=1 / 3)
    fitted = layer_timeline(strategy="sp_ep", inter_op=True, intra_op=True,
                            hw=H800_NODE.with_(memory_bound=r))
    assert abs(plain.compute_time / fitted.layer_time - 1 / 3) < 1e-5
    assert fit_memory_bound(share=1.0) == 0.0  # already all kernels: nothing to add
    # more memory-bound work never makes any layout faster
    for strategy in ("tp_tp", "sp_ep", "sp_agrs"):
        times = [layer_timeline(strategy=strategy, hw=H800_NODE.with_(memory_bound=x)).layer_time
                 for x in (0.0, 0.5, 2.0)]
        assert times == sorted(times)
    with pytest.raises(ValueError, match="share"):
        fit_memory_bound(share=0.0)
