"""Order statistics of the slowest rank: closed forms against exact values, simulation and
their own properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.order_stats import (
    expected_max,
    expected_max_correlated,
    expected_mean,
    gaussian_max_asymptotic,
    harmonic,
    simulate_max,
    standard_deviation,
)


def test_gaussian_closed_forms_and_tippetts_table():
    # e_2 = 1/sqrt(pi), e_3 = 3/(2 sqrt(pi)), e_4 and e_5 from the arcsin forms; N = 10 ... 1000
    # from Tippett (1925) as tabulated by David and Nagaraja.
    e4 = 3 / math.sqrt(math.pi) * (0.5 + math.asin(1 / 3) / math.pi)
    want = {1: 0.0, 2: 1 / math.sqrt(math.pi), 3: 1.5 / math.sqrt(math.pi), 4: e4,
            10: 1.538753, 100: 2.507594, 1000: 3.241436}
    for n, v in want.items():
        assert expected_max("gaussian", n) == pytest.approx(v, abs=2e-6), n
    assert expected_max("gaussian", 5) == pytest.approx(1.162964, abs=2e-6)


def test_exponential_is_the_harmonic_number():
    for n in (1, 2, 7, 64, 1000):
        assert expected_max("exponential", n, scale=3.0) == pytest.approx(
            3.0 * sum(1.0 / k for k in range(1, n + 1)))


def test_pareto_against_direct_integration():
    # E[max] = x_m + integral_{x_m}^inf (1 - F(x)^N) dx with F(x) = 1 - (x_m / x)^alpha
    for alpha, n in ((2.0, 2), (3.0, 5), (2.5, 64)):
        x = np.geomspace(1.0, 1e7, 400_001)
        tail = 1.0 - (1.0 - x ** -alpha) ** n
        integral = float(np.sum((tail[1:] + tail[:-1]) * np.diff(x)) / 2)
        assert expected_max("pareto", n, alpha=alpha) == pytest.approx(1.0 + integral, rel=1e-4)
    assert expected_max("pareto", 2, alpha=2.0) == pytest.approx(8 / 3)


def test_harmonic_exact_and_asymptotic_agree():
    n = 1_000_000
    exact = harmonic(n)
    assert harmonic(n + 1) == pytest.approx(exact + 1 / (n + 1), rel=1e-14)
    assert harmonic(0) == 0.0 and harmonic(np.array([1, 2])).tolist() == [1.0, 1.5]


def test_moments():
    assert expected_mean("exponential", scale=2.0) == 2.0
    assert standard_deviation("exponential", scale=2.0) == 2.0
    assert expected_mean("gaussian", scale=5.0) == 0.0
    assert expected_mean("pareto", scale=2.0, alpha=3.0) == pytest.approx(3.0)
    assert standard_deviation("pareto", alpha=2.0) == math.inf


@settings(max_examples=12, deadline=None)
@given(dist=st.sampled_from(["exponential", "gaussian", "pareto"]),
       n=st.integers(1, 300), seed=st.integers(0, 1000))
def test_simulation_agrees_with_the_closed_form(dist, n, seed):
    kw = {"alpha": 3.5} if dist == "pareto" else {}
    m, se = simulate_max(dist, n, trials=4000, seed=seed, **kw)
    assert abs(m - expected_max(dist, n, **kw)) < 5 * se + 1e-12


@given(dist=st.sampled_from(["exponential", "gaussian", "pareto"]),
       n=st.integers(1, 10_000))
def test_more_ranks_never_wait_less(dist, n):
    assert expected_max(dist, n + 1) >= expected_max(dist, n)


def test_tails_rank_as_the_text_says():
    n = 4096
    z = {d: (expected_max(d, n, **kw) - expected_mean(d, **kw)) / standard_deviation(d, **kw)
         for d, kw in (("gaussian", {}), ("exponential", {}), ("pareto", {"alpha": 3.0}))}
    assert z["gaussian"] < z["exponential"] < z["pareto"]
    gaps = [expected_max("gaussian", n) - gaussian_max_asymptotic(n) for n in (10**3, 10**6)]
    assert 0 < gaps[1] < gaps[0] < 0.15  # the large-N form creeps up from below


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="dist"):
        expected_max("cauchy", 4)
    with pytest.raises(ValueError, match="alpha"):
        expected_max("pareto", 4, alpha=1.0)
    with pytest.raises(ValueError, match="n"):
        expected_max("gaussian", 0)
    with pytest.raises(ValueError, match="scale"):
        expected_max("exponential", 4, scale=-1.0)
    with pytest.raises(ValueError, match="trials"):
        simulate_max("gaussian", 10, trials=10**9)
    with pytest.raises(ValueError, match="n must be an integer"):
        expected_max("gaussian", True)


def test_hardened_inputs_and_budgets(monkeypatch):
    # ragged, string and bool inputs, an alpha whose 1 - 1/alpha rounds to 0, a huge scale
    for bad in ([[1, 2], [3]], "3", [True, False], 10**400):
        with pytest.raises(ValueError, match="n"):
            harmonic(bad)
    with pytest.raises(ValueError, match="alpha"):
        expected_max("pareto", 4, alpha=1.0 + 1e-15)
    with pytest.raises(ValueError, match="scale"):
        simulate_max("gaussian", 4, scale=1e300)
    assert harmonic(np.array(3)) == pytest.approx(11 / 6)  # a 0-d array is a number
    assert expected_max("gaussian", [[2, 3]]).shape == (1, 2)
    # loops that follow from a parameter are refused beyond the work budget, by name
    monkeypatch.setenv("UNEVEN_MAX_STEPS", "1e6")
    with pytest.raises(ValueError, match="n=.*UNEVEN_MAX_STEPS"):
        expected_max("gaussian", np.arange(1, 1000))
    with pytest.raises(ValueError, match="trials=.*UNEVEN_MAX_STEPS"):
        simulate_max("exponential", 100, trials=10_000)
    assert simulate_max("exponential", 4, trials=100)[0] > 0


# ---- where the maximum stops mattering: ranks that share a cause --------------------------------

def test_correlated_maximum_closed_form_ends_and_simulation():
    # rho = 0: the independent case; rho = 1: every rank alike, the slowest is the mean (0)
    assert expected_max_correlated(64, 0.0) == pytest.approx(expected_max("gaussian", 64))
    assert expected_max_correlated(64, 1.0) == 0.0
    assert expected_max_correlated(2, 0.5, scale=2.0) == pytest.approx(
        2.0 * math.sqrt(0.5) / math.sqrt(math.pi))
    # a simulation that builds the shared cause explicitly: X_i = sqrt(rho) Z + sqrt(1-rho) Y_i
    rng = np.random.default_rng(7)
    n, rho, trials = 64, 0.9, 20_000
    x = math.sqrt(rho) * rng.standard_normal((trials, 1)) + math.sqrt(1 - rho) * \
        rng.standard_normal((trials, n))
    m = x.max(axis=1)
    se = m.std(ddof=1) / math.sqrt(trials)
    assert abs(m.mean() - expected_max_correlated(n, rho)) < 4 * se
    # and the boundary case of notebook 07: at rho = 0.9 the slowest of 64 is within 0.75 sd
    assert expected_max_correlated(64, 0.9) < 0.75 < 2.3 < expected_max_correlated(64, 0.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5000), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_correlated_maximum_shrinks_as_the_shared_cause_grows(n, r1, r2):
    lo, hi = sorted((r1, r2))
    assert expected_max_correlated(n, hi) <= expected_max_correlated(n, lo) + 1e-12


def test_correlated_maximum_refuses_bad_rho_by_name():
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="rho"):
            expected_max_correlated(8, bad)
