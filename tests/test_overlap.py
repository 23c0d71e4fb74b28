"""The hiding ratio R and the tile-level fused GEMM + all-to-all on the timeline engine."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven._tiles import _piece_dependencies
from uneven.overlap import (
    H800,
    _reference_tile_overlap,
    fused_time_closed_form,
    hiding_ratio,
    tile_overlap,
)


def test_hiding_ratio_reproduces_the_notes_table():
    # R ≈ 1.5 h_ffn BW / peak on an H800 at 989 TFLOPS [derived from the paper's Eqs. 5-9]
    assert hiding_ratio(14336, 160e9) == pytest.approx(3.48, abs=0.005)
    assert hiding_ratio(14336, 50e9) == pytest.approx(1.09, abs=0.005)
    assert hiding_ratio(2048, 160e9) == pytest.approx(0.50, abs=0.005)
    assert hiding_ratio(2048, 50e9) == pytest.approx(0.16, abs=0.005)
    assert hiding_ratio(1000, 1e9, 1e12) == pytest.approx(1.5 * 1000 * 1e9 / 1e12)


def test_hiding_ratio_variants():
    base = hiding_ratio(14336, 160e9)
    assert hiding_ratio(14336, 160e9, backward=True) == pytest.approx(2 * base)
    assert hiding_ratio(14336, 160e9, H800["fp8_flops"]) == pytest.approx(
        base * 989 / 1979)
    fp8_disp = hiding_ratio(14336, 160e9, H800["fp8_flops"], dispatch_bytes=1 + 4 / 128)
    assert fp8_disp / base == pytest.approx(4 / (1 + 4 / 128 + 2) * 989 / 1979)
    assert 0.6 < fp8_disp / base < 0.7
    # exact uniform EP over n GPUs: r = (n-1)/n, which the paper's "≈" drops
    assert hiding_ratio(14336, 160e9, n=8) == pytest.approx(base * 8 / 7)
    assert hiding_ratio(14336, 160e9, remote_fraction=0.5) == pytest.approx(2 * base)


@settings(max_examples=50, deadline=None)
@given(h_ffn=st.floats(256, 65536), bw=st.floats(1e9, 2e12), peak=st.floats(1e13, 1e16))
def test_hiding_ratio_is_linear_and_scale_free(h_ffn, bw, peak):
    r = hiding_ratio(h_ffn, bw, peak)
    assert r == pytest.approx(1.5 * h_ffn * bw / peak)
    assert hiding_ratio(2 * h_ffn, bw, peak) == pytest.approx(2 * r)
    assert hiding_ratio(h_ffn, bw, 2 * peak) == pytest.approx(r / 2)


def test_hiding_ratio_validation():
    with pytest.raises(ValueError, match="not both"):
        hiding_ratio(1, 1e9, n=8, remote_fraction=0.5)
    with pytest.raises(ValueError, match="h_ffn"):
        hiding_ratio(0, 1e9)
    with pytest.raises(ValueError, match="backward"):
        hiding_ratio(1, 1e9, backward=1)
    with pytest.raises(ValueError, match="dispatch_bytes"):
        hiding_ratio(1, 1e9, dispatch_bytes=0, combine_bytes=0)


@settings(max_examples=80, deadline=None)
@given(G=st.floats(1e-6, 1e-2), C=st.floats(0.0, 1e-2), T=st.integers(1, 64))
def test_gemm_then_a2a_equals_closed_form_with_equal_tiles(G, C, T):
    r = tile_overlap(G, C, n_tiles=T)
    assert r.fused_time == pytest.approx(fused_time_closed_form(G, C, T), rel=1e-9, abs=1e-15)
    assert r.fused_time == pytest.approx(max(C, G) + min(C, G) / T, rel=1e-9, abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(G=st.floats(1e-6, 1e-2), C=st.floats(1e-7, 1e-2), n=st.sampled_from([1, 2, 4, 8]),
       per=st.integers(1, 8))
def test_a2a_then_gemm_sorted_equals_closed_form(G, C, n, per):
    T = n * per
    r = tile_overlap(G, C, n_tiles=T, direction="a2a_gemm", n_ranks=n)
    want = fused_time_closed_form(G, C, T, direction="a2a_gemm", n_ranks=n)
    assert r.fused_time == pytest.approx(want, rel=1e-9)


@settings(max_examples=120, deadline=None)
@given(G=st.floats(1e-6, 1e-2), C=st.floats(0.0, 1e-2), T=st.integers(1, 48),
       n=st.integers(1, 8), direction=st.sampled_from(["gemm_a2a", "a2a_gemm"]),
       order=st.sampled_from(["sorted", "random"]), seed=st.integers(0, 50))
def test_fused_time_is_between_max_and_sum(G, C, T, n, direction, order, seed):
    r = tile_overlap(G, C, n_tiles=T, direction=direction, order=order, n_ranks=n, seed=seed)
    assert r.sequential_time == pytest.approx(G + C)
    assert r.fused_time <= G + C + 1e-12 * (G + C)
    if direction == "gemm_a2a":
        assert r.fused_time >= max(G, C) - 1e-15
    else:  # the GPU's own rows need no transfer: the floor is the GEMM and the remote rows
        assert r.fused_time >= max(G, C) - 1e-15 if n > 1 else r.fused_time == pytest.approx(G)


@settings(max_examples=120, deadline=None)
@given(G=st.floats(1e-6, 1e-2), C=st.floats(1e-7, 1e-2), T=st.integers(1, 48),
       n=st.integers(2, 8), seed=st.integers(0, 1000))
def test_sorted_order_is_never_slower_than_random(G, C, T, n, seed):
    kw = dict(n_tiles=T, direction="a2a_gemm", n_ranks=n)
    sorted_ = tile_overlap(G, C, order="sorted", **kw).fused_time
    rand = tile_overlap(G, C, order="random", seed=seed, **kw).fused_time
    assert sorted_ <= rand * (1 + 1e-12)


@settings(max_examples=80, deadline=None)
@given(G=st.floats(1e-6, 1e-2), C=st.floats(1e-7, 1e-2), T=st.integers(1, 40),
       n=st.integers(1, 8), direction=st.sampled_from(["gemm_a2a", "a2a_gemm"]),
       order=st.sampled_from(["sorted", "random"]), sms=st.integers(0, 40),
       lat=st.floats(0.0, 1e-5), seed=st.integers(0, 50))
def test_engine_matches_the_reference_recurrences(G, C, T, n, direction, order, sms, lat, seed):
    r = tile_overlap(G, C, n_tiles=T, direction=direction, order=order, n_ranks=n,
                     comm_sms=sms, tile_latency=lat, seed=seed)
    g = G / T * 132 / (132 - sms)
    if direction == "gemm_a2a":
        comp, comm, need = [g] * T, [C / T + lat] * T, None
    else:
        P, need = _piece_dependencies(T, n, order, seed)
        comp, comm, need = [g] * T, [(C / P if P else 0.0) + lat] * P, need.tolist()
    assert r.fused_time == pytest.approx(_reference_tile_overlap(comp, comm, need, direction),
                                         rel=1e-9, abs=1e-15)
    assert r.compute_time == pytest.approx(sum(comp))


def test_one_tile_is_no_overlap_and_more_tiles_help():
    assert tile_overlap(2e-3, 1e-3, n_tiles=1).fused_time == pytest.approx(3e-3)
    times = [tile_overlap(2e-3, 1e-3, n_tiles=t).fused_time for t in (1, 2, 4, 16, 64)]
    assert all(a >= b for a, b in zip(times, times[1:], strict=False))
    # a latency per tile makes very fine tiles lose again (model)
    lat = [tile_overlap(1e-3, 1e-3, n_tiles=t, tile_latency=20e-6).fused_time
           for t in (4, 16, 256)]
    assert lat[2] > lat[1]


def test_sm_tax_slows_the_gemm():
    free = tile_overlap(2e-3, 0.5e-3, n_tiles=16)
    taxed = tile_overlap(2e-3, 0.5e-3, n_tiles=16, comm_sms=12)
    assert taxed.compute_time == pytest.approx(2e-3 * 132 / 120)
    assert taxed.fused_time > free.fused_time


def test_random_order_waits_for_almost_everything():
    r = tile_overlap(1e-3, 1e-3, n_tiles=32, direction="a2a_gemm", order="random")
    assert r.fused_time == pytest.approx(2e-3, rel=0.02)
    s = tile_overlap(1e-3, 1e-3, n_tiles=32, direction="a2a_gemm", order="sorted")
    assert s.fused_time < 0.8 * r.fused_time
    # and the op arrays describe the run
    assert r.start.shape == r.finish.shape == r.resource.shape == r.tile.shape
    assert set(np.unique(r.resource)) == {0, 1}


def test_tile_overlap_validation():
    with pytest.raises(ValueError, match="direction"):
        tile_overlap(1e-3, 1e-3, direction="both")
    with pytest.raises(ValueError, match="order"):
        tile_overlap(1e-3, 1e-3, order="shuffled")
    with pytest.raises(ValueError, match="n_tiles"):
        tile_overlap(1e-3, 1e-3, n_tiles=0)
    with pytest.raises(ValueError, match="n_tiles"):
        tile_overlap(1e-3, 1e-3, n_tiles=10**6)
    with pytest.raises(ValueError, match="comm_sms"):
        tile_overlap(1e-3, 1e-3, comm_sms=132)
    with pytest.raises(ValueError, match="compute_time"):
        tile_overlap(-1.0, 1e-3)
    with pytest.raises(ValueError, match="n_ranks must divide"):
        fused_time_closed_form(1.0, 1.0, 6, direction="a2a_gemm", n_ranks=4)


# --------------------------------------------------------------------------- hardening


def test_hiding_ratio_refuses_results_beyond_the_float_range():
    with pytest.raises(ValueError, match="peak_flops"):
        hiding_ratio(14336, 160e9, 5e-324)
    with pytest.raises(ValueError, match="remote_fraction"):
        hiding_ratio(14336, 160e9, remote_fraction=1.5)
    with pytest.raises(ValueError, match="h_ffn"):  # the denominator underflows to 0
        hiding_ratio(14336, 160e9, dispatch_bytes=5e-324, combine_bytes=0.0,
                     remote_fraction=0.5)


def test_tile_overlap_result_is_frozen_and_checked():
    import dataclasses

    r = tile_overlap(1e-3, 5e-4, n_tiles=8)
    for name in ("start", "finish", "resource", "tile"):
        arr = getattr(r, name)
        assert not arr.flags.writeable and arr.shape == (16,)
    for field, bad in (("n_tiles", True), ("fused_time", float("nan")), ("direction", "up"),
                       ("resource", np.full(16, 2)), ("start", np.zeros(3)),
                       ("n_pieces", 17)):
        with pytest.raises(ValueError, match=field):
            dataclasses.replace(r, **{field: bad})
    same = dataclasses.replace(r)
    assert same.fused_time == r.fused_time and same.speedup == r.speedup


def test_tile_overlap_refuses_absurd_magnitudes():
    with pytest.raises(ValueError, match="compute_time"):
        tile_overlap(1e300, 1e300)
    with pytest.raises(ValueError, match="compute_time"):  # a speedup beyond the float range
        tile_overlap(5e-324, 1.0, n_tiles=1, direction="a2a_gemm", n_ranks=1)
    with pytest.raises(ValueError, match="compute_time"):
        fused_time_closed_form(1e308, 1e308, 1)
