"""Seeded workload generators: expert-load skew, sequence-length mixes, link-delay traces.

Every generator takes ``seed`` (an int or a ``numpy.random.Generator``) and nothing else random,
so a notebook gives the same numbers on every run.

>>> loads = expert_loads(64, 100_000, busiest_over_median=8.0, seed=0)
>>> int(loads.sum()), round(float(loads.max() / np.median(loads)), 1)
(100000, 8.0)
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_int, check_pair, check_real
from .limits import PY_STEP, check_bytes, check_steps

__all__ = [
    "rng_from",
    "expert_popularity",
    "expert_loads",
    "sequence_lengths",
    "token_share_above",
    "episodic_delay_trace",
    "gaussian_delay_trace",
]


def rng_from(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int seed (or the generator itself)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_int("seed", seed, lo=0))


def expert_popularity(n_experts: int, busiest_over_median: float, seed=0) -> np.ndarray:
    """Routing probabilities whose busiest/median ratio is exactly ``busiest_over_median``.

    A power law ``p_r ~ r^-s`` over ranks r = 1..n (shuffled over experts by ``seed``), with s
    chosen so that p_max / p_median hits the target. Ratio 1 gives uniform popularity; the
    ratio may be at most 1e12, and ``n_experts`` at most about a million (a bisection of ~100
    steps over the ranks, within the work budget of :mod:`uneven.limits`).

    >>> p = expert_popularity(8, 4.0)
    >>> round(float(p.sum()), 12), round(float(p.max() / np.median(p)), 6)
    (1.0, 4.0)
    """
    n = check_int("n_experts", n_experts, lo=2)
    ratio = check_real("busiest_over_median", busiest_over_median, lo=1.0, hi=1e12)
    check_bytes("n_experts", n, 8 * 6 * n, "the rank and popularity vectors")
    check_steps("n_experts", n, 150 * n * max(1, int(np.log2(n))), "the bisection over ranks")
    rng = rng_from(seed)
    ranks = np.arange(1, n + 1, dtype=np.float64)
    median_rank = np.median(ranks)

    # p_1 / p_median = median_rank^s for an odd count; an even count's median averages two ranks,
    # so solve for s numerically (bisection) instead.
    def ratio_for(s):
        p = ranks**-s
        return p.max() / np.median(p)

    if n == 2 and ratio >= 2.0:  # the median of two is their mean: p_1 / median < 2 always
        raise ValueError(f"busiest_over_median must be below 2 with n_experts=2 (the median of "
                         f"two experts is their mean); got {ratio}")
    lo, hi = 0.0, max(1.0, np.log(ratio) / np.log(median_rank) * 2 + 1)
    while ratio_for(hi) < ratio:
        hi *= 2
        if hi > 1e4:  # not reached for ratio <= 1e12 and n >= 3 (s < 100 suffices there)
            raise ValueError(f"busiest_over_median={ratio} is not reachable with n_experts={n}")
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if ratio_for(mid) < ratio:
            lo = mid
        else:
            hi = mid
    p = ranks ** -(0.5 * (lo + hi))
    p /= p.sum()
    return p[rng.permutation(n)]


def expert_loads(n_experts: int, n_tokens: int, busiest_over_median: float, seed=0) -> np.ndarray:
    """Integer tokens per expert (int64) summing to ``n_tokens`` with a target busiest/median.

    Rounds ``n_tokens * popularity`` by largest remainders, so the ratio is hit up to rounding
    (the production layer sampled in *Balancing and Beyond* had about 8x [chapter]).
    """
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hi=2**53)
    p = expert_popularity(n_experts, busiest_over_median, seed)
    exact = p * n_tokens
    loads = np.floor(exact).astype(np.int64)
    short = n_tokens - int(loads.sum())
    order = np.argsort(-(exact - loads), kind="stable")
    loads[order[:short]] += 1
    return loads


def sequence_lengths(
    n: int,
    *,
    median: float = 1500,
    tail_index: float = 0.8,
    tail_start: float = 4096,
    tail_fraction: float = 0.08,
    min_len: int = 128,
    max_len: int = 2_097_152,
    seed=0,
) -> np.ndarray:
    """Heavy-tailed sequence lengths (int64 tokens): a log-normal body plus a Pareto tail.

    A fraction ``tail_fraction`` of samples come from a Pareto tail starting at ``tail_start`` with
    index ``tail_index`` (smaller = heavier), clipped to ``max_len``; the rest are log-normal around
    ``median``. The defaults are calibrated [model] to two facts of ByteScale's Byted data set
    (Fig. 4 [paper]): about 80% of samples have at most 4K tokens (here ~78%), and the 1% of samples
    at 128K or more hold 44.3% of the tokens (here ~44%). ``max_len`` is at most 2**62;
    ``n`` is limited by the memory budget of :mod:`uneven.limits` (about 50 million by default).

    >>> sequence_lengths(4, seed=1).tolist()
    [2119, 4731, 2087, 408]
    """
    n = check_int("n", n, lo=1)
    check_bytes("n", n, 8 * 6 * n, "the samples and their temporaries")
    median = check_real("median", median, lo=1.0)
    tail_index = check_real("tail_index", tail_index, lo=0.0, lo_open=True)
    tail_start = check_real("tail_start", tail_start, lo=1.0)
    tail_fraction = check_real("tail_fraction", tail_fraction, lo=0.0, hi=1.0)
    min_len = check_int("min_len", min_len, lo=1)
    max_len = check_int("max_len", max_len, lo=min_len, hi=2**62)
    rng = rng_from(seed)
    with np.errstate(over="ignore"):
        body = rng.lognormal(np.log(median), 1.0, n)
        tail = tail_start * (1.0 + rng.pareto(tail_index, n))
    lengths = np.where(rng.random(n) < tail_fraction, tail, body)
    # Clip as floats, then cast: an overflowing sample becomes max_len, never a wrapped int64.
    return np.clip(np.round(lengths), min_len, max_len).astype(np.int64)


def token_share_above(lengths, threshold: float) -> float:
    """Fraction of all tokens that sit in sequences of at least ``threshold`` tokens.

    ``lengths``: tokens per sequence, each >= 0, with a positive (finite) sum.

    >>> token_share_above([100, 300], 200)
    0.75
    """
    lengths = as_float_array("lengths", lengths, ndim=1, lo=0.0)
    with np.errstate(over="ignore"):
        total = float(lengths.sum())
    if lengths.size == 0 or not 0.0 < total < np.inf:
        raise ValueError("lengths must be a non-empty array with a positive, finite sum; got "
                         f"{lengths.size} entries summing to {total}")
    threshold = check_real("threshold", threshold, lo=0.0)
    return float(lengths[lengths >= threshold].sum() / total)


def episodic_delay_trace(
    n_iterations: int,
    n_links: int,
    *,
    n_episodes: int = 9,
    episode_length: int = 70,
    delay_range: tuple = (0.020, 0.060),
    links_per_episode: tuple = (1, 3),
    seed=0,
) -> np.ndarray:
    """Per-iteration one-way delays (s), shape ``(n_iterations, n_links)``.

    Episodes of ``episode_length`` iterations are spread evenly over the run; in each, a random
    set of ``links_per_episode`` (low..high) links gets a delay drawn uniformly from
    ``delay_range`` (s); between episodes every link is healthy. The defaults follow the trace
    of PipeMorph's public 128-GPU artifact [repo]: 9 episodes of 70 iterations, 20-60 ms on
    1-3 of 7 links.
    """
    n_it = check_int("n_iterations", n_iterations, lo=1)
    n_links = check_int("n_links", n_links, lo=1)
    check_bytes("n_iterations", n_it, 8 * n_it * n_links, "an n_iterations x n_links trace")
    n_ep = check_int("n_episodes", n_episodes, lo=0)
    ep_len = check_int("episode_length", episode_length, lo=1)
    delay_range = check_pair("delay_range", delay_range)
    links_per_episode = check_pair("links_per_episode", links_per_episode)
    check_steps("n_episodes", n_ep, n_ep * PY_STEP + n_ep * ep_len * n_links,
                "drawing the episodes")
    lo = check_real("delay_range[0]", delay_range[0], lo=0.0, unit="s")
    hi = check_real("delay_range[1]", delay_range[1], lo=lo, unit="s")
    kmin = check_int("links_per_episode[0]", links_per_episode[0], lo=1, hi=n_links)
    kmax = check_int("links_per_episode[1]", links_per_episode[1], lo=kmin, hi=n_links)
    if n_ep * ep_len > n_it:
        raise ValueError(
            f"n_episodes * episode_length must fit in n_iterations={n_it}; got {n_ep} x {ep_len}"
        )
    rng = rng_from(seed)
    trace = np.zeros((n_it, n_links))
    gap = (n_it - n_ep * ep_len) / (n_ep + 1) if n_ep else 0
    for e in range(n_ep):
        start = int(round(gap * (e + 1) + ep_len * e))
        k = int(rng.integers(kmin, kmax + 1))
        links = rng.choice(n_links, size=k, replace=False)
        trace[start : start + ep_len, links] = rng.uniform(lo, hi, size=k)
    return trace


def gaussian_delay_trace(
    n_iterations: int,
    n_links: int,
    *,
    mean: float = 0.030,
    std: float = 0.010,
    change_every: tuple = (5, 40),
    slow_fraction: float = 0.3,
    seed=0,
) -> np.ndarray:
    """Delays (s) that re-draw every U(change_every) iterations.

    A random subset of links gets N(mean, std) clipped at 0, the others none (after PipeMorph's
    dynamic trace generator [repo]). ``change_every`` is a pair (low, high) of iteration counts.
    Size: the trace (8 bytes per entry) within the memory budget of :mod:`uneven.limits`, and
    ``n_iterations / change_every[0]`` re-draws within its work budget.

    >>> gaussian_delay_trace(6, 2, change_every=(3, 3), slow_fraction=1.0).shape
    (6, 2)
    """
    n_it = check_int("n_iterations", n_iterations, lo=1)
    n_links = check_int("n_links", n_links, lo=1)
    check_bytes("n_iterations", n_it, 8 * n_it * n_links, "an n_iterations x n_links trace")
    mean = check_real("mean", mean, lo=0.0, unit="s")
    std = check_real("std", std, lo=0.0, unit="s")
    change_every = check_pair("change_every", change_every)
    a = check_int("change_every[0]", change_every[0], lo=1)
    b = check_int("change_every[1]", change_every[1], lo=a)
    check_steps("change_every", change_every, -(-n_it // a) * (PY_STEP + 4 * n_links),
                "one re-draw per change")
    frac = check_real("slow_fraction", slow_fraction, lo=0.0, hi=1.0)
    rng = rng_from(seed)
    trace = np.zeros((n_it, n_links))
    it = 0
    while it < n_it:
        span = int(rng.integers(a, b + 1))
        slow = rng.random(n_links) < frac
        delays = np.maximum(rng.normal(mean, std, n_links), 0.0)
        trace[it : it + span] = np.where(slow, delays, 0.0)
        it += span
    return trace
