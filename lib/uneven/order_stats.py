"""Order statistics of a synchronous step: the expected slowest of N ranks.

A synchronous step (a barrier, a gradient all-reduce, the combine of an all-to-all) ends when the
*last* of its N ranks arrives. If each rank's time is ``base + X`` with ``X`` drawn independently
from one distribution, the step takes ``base + max(X_1 … X_N)``, and what matters is
``E[max]``, not ``E[X]``. How fast ``E[max]`` grows with N is set by the tail of ``X``:

* **exponential** (mean ``scale``): ``E[max] = scale · H_N``, with ``H_N = 1 + 1/2 + … + 1/N``
  the harmonic number, about ``ln N + 0.5772``: logarithmic growth;
* **gaussian** (mean 0, standard deviation ``scale``; a light tail): ``E[max] = scale · e_N``
  with ``e_N = ∫ x · N φ(x) Φ(x)^(N-1) dx``. Exact values for small N: ``e_2 = 1/√π``,
  ``e_3 = 3/(2√π)``; for large N about ``√(2 ln N)``: slower than the exponential's;
* **pareto** (shape ``alpha > 1``, minimum ``scale``; a heavy tail):
  ``E[max] = scale · Γ(N+1) Γ(1 - 1/α) / Γ(N + 1 - 1/α)``, which grows like ``N^(1/α)``: a power
  of N, so a few very slow ranks dominate.

:func:`expected_max` evaluates these forms (the Gaussian integral by quadrature on a fine grid,
accurate to about 1e-9 of ``scale``); :func:`simulate_max` estimates the same quantity by drawing
N ranks many times from a seeded ``numpy.random.Generator``, and the tests check the two against
each other. :func:`expected_mean` gives ``E[X]`` for the ratio "slowest over mean".

Units: whatever ``scale`` is in (seconds in the notebooks).

>>> round(expected_max("exponential", 64, scale=2e-6) * 1e6, 3)   # µs: the slowest of 64 ranks
9.488
>>> round(expected_max("gaussian", 2), 4), round(1 / math.sqrt(math.pi), 4)
(0.5642, 0.5642)
>>> expected_mean("exponential", scale=2.0), standard_deviation("gaussian", scale=2.0)
(2.0, 2.0)
>>> m, se = simulate_max("pareto", 4, trials=200, alpha=3.0, seed=2)
>>> abs(m - expected_max("pareto", 4, alpha=3.0)) < 5 * se
True
>>> round(gaussian_max_asymptotic(64), 3), round(float(harmonic(8)), 4)
(2.198, 2.7179)

Where the maximum stops mattering: ranks that share a cause. :func:`expected_max_correlated`
gives the slowest of N Gaussian ranks with a common correlation ``rho``; at ``rho = 1`` every
rank is slow together and the slowest is the mean.

>>> [round(expected_max_correlated(64, r), 3) for r in (0.0, 0.9, 1.0)]
[2.344, 0.741, 0.0]
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import _show, as_int_array, check_choice, check_int, check_real
from .limits import PY_STEP, check_bytes, check_steps

__all__ = [
    "DISTRIBUTIONS",
    "MAX_N",
    "MAX_SCALE",
    "harmonic",
    "expected_max",
    "expected_mean",
    "standard_deviation",
    "simulate_max",
    "gaussian_max_asymptotic",
    "expected_max_correlated",
]

#: Per-rank distributions :func:`expected_max` and :func:`simulate_max` know.
DISTRIBUTIONS = ("exponential", "gaussian", "pareto")
#: Largest number of ranks accepted (a closed form costs nothing; guards against typos).
MAX_N = 10**9
_MAX_DRAWS = 50_000_000  # ranks × trials drawn by simulate_max
_EULER_GAMMA = 0.5772156649015329
_GRID = None  # the Gaussian quadrature grid, built on first use
_GRID_POINTS = 24001


def _ranks(name, n, lo):
    """``(array, scalar)``: ``n`` as an int64 array (at least 1-d) of rank counts in
    ``[lo, MAX_N]``, and whether ``n`` was a single number; bools refused."""
    if isinstance(n, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer or an array of integers, not a bool; got "
                         f"{_show(n)}")
    arr = as_int_array(name, n, lo=lo, hi=MAX_N)  # refuses bools, ragged lists, strings
    scalar = not isinstance(n, (list, tuple, np.ndarray)) or (
        isinstance(n, np.ndarray) and n.ndim == 0)
    return arr, scalar


def harmonic(n) -> np.ndarray | float:
    """The harmonic number ``H_n = 1 + 1/2 + … + 1/n`` (``H_0 = 0``), for an int or an array.

    Exact summation up to n = 10**6, the asymptotic series ``ln n + γ + 1/(2n) - 1/(12n²) +
    1/(120 n⁴)`` above it (relative error below 1e-16 there). Largest ``n``: 10**9 (an array
    of them as large as the memory budget allows, :mod:`uneven.limits`).

    >>> harmonic(1), round(harmonic(4), 12)
    (1.0, 2.083333333333)
    >>> harmonic([1, 2, 3]).tolist()
    [1.0, 1.5, 1.8333333333333333]
    """
    full, scalar = _ranks("n", n, 0)
    arr = full.ravel()
    check_bytes("n", f"{arr.size} rank counts", 40.0 * arr.size, "the harmonic numbers")
    out = np.empty(arr.size)
    small = arr <= 1_000_000
    if small.any():
        top = int(arr[small].max())
        check_bytes("n", top, 24.0 * top, "a table of harmonic numbers up to max(n)")
        table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, top + 1))])
        out[small] = table[arr[small]]
    big = ~small
    if big.any():
        x = arr[big].astype(np.float64)
        out[big] = np.log(x) + _EULER_GAMMA + 1 / (2 * x) - 1 / (12 * x**2) + 1 / (120 * x**4)
    return float(out[0]) if scalar else out.reshape(full.shape)


def _gaussian_grid():
    # x, φ(x) and log Φ(x) on [-12, 12] in steps of 1e-3; log Φ through erfc, accurate far out.
    global _GRID
    if _GRID is None:
        x = np.linspace(-12.0, 12.0, _GRID_POINTS)
        erfc = np.vectorize(math.erfc, otypes=[float])
        lower = 0.5 * erfc(-x / math.sqrt(2.0))  # Φ(x)
        upper = 0.5 * erfc(x / math.sqrt(2.0))  # 1 - Φ(x)
        log_cdf = np.empty_like(x)
        neg = x < 0
        log_cdf[neg] = np.log(np.maximum(lower[neg], 1e-300))
        log_cdf[~neg] = np.log1p(-upper[~neg])
        pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        _GRID = (x, pdf, log_cdf)
    return _GRID


def _gaussian_e(n: int) -> float:
    """E[max of n standard normals] by the trapezoid rule on the grid."""
    if n == 1:
        return 0.0
    x, pdf, log_cdf = _gaussian_grid()
    dens = n * pdf * np.exp((n - 1) * log_cdf)  # density of the maximum
    f = x * dens
    return float(np.sum((f[1:] + f[:-1]) * np.diff(x)) / 2.0)  # the trapezoid rule


def gaussian_max_asymptotic(n) -> float:
    """The large-N approximation ``√(2 ln N) - (ln ln N + ln 4π) / (2 √(2 ln N))`` of
    ``E[max of N standard normals]`` (N >= 2); it approaches the exact value slowly.

    >>> round(gaussian_max_asymptotic(1000), 3)   # exact: 3.241
    3.116
    """
    n = check_int("n", n, lo=2, hi=MAX_N)
    a = math.sqrt(2.0 * math.log(n))
    return a - (math.log(math.log(n)) + math.log(4.0 * math.pi)) / (2.0 * a)


#: Largest ``scale`` accepted (any unit; keeps every moment and every simulated variance finite).
MAX_SCALE = 1e100
_MIN_B = 1e-9  # 1 - 1/alpha at least this: Gamma(1 - 1/alpha) stays finite and computable


def _params(dist, scale, alpha):
    dist = check_choice("dist", dist, DISTRIBUTIONS)
    scale = check_real("scale", scale, lo=0.0, lo_open=dist == "pareto", hi=MAX_SCALE)
    if dist == "pareto":
        alpha = check_real("alpha", alpha, lo=1.0, lo_open=True, hi=1e6)
        if not 1.0 - 1.0 / alpha >= _MIN_B:
            raise ValueError(f"alpha must be above 1 + 1e-9 (a finite mean of the maximum); got "
                             f"{_show(alpha)}")
    return dist, scale, alpha


def expected_max(dist: str, n, *, scale: float = 1.0, alpha: float = 2.0):
    """``E[max(X_1 … X_n)]`` for ``n`` independent ranks with ``X`` from ``dist``.

    ``dist``: ``"exponential"`` (mean ``scale``), ``"gaussian"`` (mean 0, standard deviation
    ``scale``) or ``"pareto"`` (minimum ``scale`` > 0, shape ``alpha`` in (1, 10**6], so the
    mean is finite). ``n``: an int or an array of ints in ``[1, 10**9]``; returns a float or an
    array. ``scale`` at most 1e100.
    Add a rank's fixed time to get the step: ``base + expected_max(...)``. Each Gaussian entry
    costs a quadrature over 24,001 points (counted against the work budget of
    :mod:`uneven.limits`).

    >>> round(expected_max("gaussian", 10), 6)          # Tippett's table: 1.538753
    1.538753
    >>> round(expected_max("pareto", 2, alpha=2.0), 4)  # 1 + ∫ (2/x² - 1/x⁴) dx = 8/3
    2.6667
    """
    dist, scale, alpha = _params(dist, scale, alpha)
    arr, scalar = _ranks("n", n, 1)
    flat = arr.ravel()
    if dist == "gaussian":
        check_steps("n", f"{flat.size} rank counts", flat.size * (PY_STEP + 8 * _GRID_POINTS),
                    "a quadrature per entry")
    elif dist == "pareto":
        check_steps("n", f"{flat.size} rank counts", flat.size * PY_STEP, "a gamma ratio per entry")
    if dist == "exponential":
        out = scale * np.asarray(harmonic(flat), dtype=float).ravel()
    elif dist == "gaussian":
        out = scale * np.array([_gaussian_e(int(k)) for k in flat])
    else:
        b = 1.0 - 1.0 / alpha
        out = scale * np.array([math.exp(math.lgamma(k + 1.0) + math.lgamma(b)
                                         - math.lgamma(k + b)) for k in flat])
    return float(out[0]) if scalar else out.reshape(arr.shape)


def expected_mean(dist: str, *, scale: float = 1.0, alpha: float = 2.0) -> float:
    """``E[X]`` of one rank: ``scale`` (exponential), 0 (gaussian), ``α·scale/(α-1)`` (pareto).

    >>> expected_mean("pareto", scale=1.0, alpha=3.0)
    1.5
    """
    dist, scale, alpha = _params(dist, scale, alpha)
    if dist == "exponential":
        return scale
    if dist == "gaussian":
        return 0.0
    return alpha * scale / (alpha - 1.0)


def standard_deviation(dist: str, *, scale: float = 1.0, alpha: float = 2.0) -> float:
    """The standard deviation of one rank's ``X``: ``scale`` (exponential and gaussian),
    ``scale · √(α / ((α - 1)² (α - 2)))`` (pareto, infinite when ``α <= 2``).

    >>> round(standard_deviation("pareto", scale=1.0, alpha=3.0), 4)
    0.866
    """
    dist, scale, alpha = _params(dist, scale, alpha)
    if dist != "pareto":
        return scale
    if alpha <= 2.0:
        return math.inf
    return scale * math.sqrt(alpha / ((alpha - 1.0) ** 2 * (alpha - 2.0)))


def simulate_max(dist: str, n: int, *, trials: int = 10_000, scale: float = 1.0,
                 alpha: float = 2.0, seed: int = 0) -> tuple[float, float]:
    """Monte Carlo estimate of ``E[max of n]``: ``(mean, standard error)`` over ``trials``
    independent steps, each drawing ``n`` ranks from a ``numpy.random.Generator`` seeded with
    ``seed``. Parameters as in :func:`expected_max`. Draws are made in chunks of at most
    5 million values; at most ``n * trials <= 5 * 10**7``.

    >>> m, se = simulate_max("exponential", 8, trials=20000, seed=1)
    >>> abs(m - expected_max("exponential", 8)) < 4 * se
    True
    """
    dist, scale, alpha = _params(dist, scale, alpha)
    n = check_int("n", n, lo=1, hi=MAX_N)
    trials = check_int("trials", trials, lo=2, hi=_MAX_DRAWS)
    seed = check_int("seed", seed, lo=0)
    if n * trials > _MAX_DRAWS:
        raise ValueError(f"n * trials must be <= {_MAX_DRAWS:,} draws; got {n} * {trials}")
    per = max(1, 5_000_000 // n)
    check_bytes("trials", trials, 8.0 * trials + 24.0 * min(per, trials) * n,
                "the maxima and one chunk of draws with its temporaries")
    check_steps("trials", trials, 20.0 * n * trials, "drawing n ranks per trial")
    rng = np.random.default_rng(seed)
    maxima = np.empty(trials)
    for lo in range(0, trials, per):
        hi = min(trials, lo + per)
        if dist == "exponential":
            x = rng.exponential(scale, (hi - lo, n))
        elif dist == "gaussian":
            x = rng.normal(0.0, scale, (hi - lo, n))
        else:
            x = scale * (1.0 + rng.pareto(alpha, (hi - lo, n)))  # classical Pareto, min = scale
        maxima[lo:hi] = x.max(axis=1)
    return float(maxima.mean()), float(maxima.std(ddof=1) / math.sqrt(trials))


def expected_max_correlated(n, rho: float, *, scale: float = 1.0):
    """``E[max(X_1 … X_n)]`` for ``n`` Gaussian ranks of mean 0, standard deviation ``scale``
    and one common pairwise correlation ``rho`` in [0, 1] (a shared cause: a slow software
    release, a hot room, a common congested link).

    Exact: write ``X_i = √rho · Z + √(1 - rho) · Y_i`` with ``Z``, ``Y_i`` independent standard
    normals; the shared ``Z`` moves every rank alike, so ``E[max] = scale · √(1 - rho) · e_n``
    with ``e_n`` the independent case of :func:`expected_max`. At ``rho = 1`` the slowest rank
    is the mean rank: spreading work evenly cannot help, only making every rank faster can.
    ``n`` an int or an array of ints in ``[1, 10**9]`` (costs as :func:`expected_max`);
    ``scale`` at most 1e100.

    >>> round(expected_max_correlated(10, 0.75), 6)   # half of Tippett's 1.538753
    0.769376
    """
    rho = check_real("rho", rho, lo=0.0, hi=1.0)
    return math.sqrt(1.0 - rho) * expected_max("gaussian", n, scale=scale)
