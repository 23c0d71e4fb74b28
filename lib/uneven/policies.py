"""Choose per workload, or fix once: what a policy fixed in advance loses.

Three of the chapter's papers end with a table that picks a policy per workload: PipeMorph's
warm-up counts per link for the delays it measures, the EP library's transport and overlap per
batch size, UBEP's split of cores between counting and sending per expert count and batch. This
module puts those choices side by side in one form, a :class:`PolicyTable`: the time of every
candidate policy on every workload, computed by the library. From it follow

* the **per-workload best** (the column minimum: what a system that sees the workload picks);
* the **best fixed policy**: the one row that is best over all workloads (by the mean, or the
  worst, of its time over the per-workload best), i.e. the best a policy fixed before the data
  or the network is seen can do *in hindsight*;
* the **loss** of a fixed policy on each workload: its time over the per-workload best, minus 1.

The builders run the library's own simulators:

* :func:`warmup_policy_table`: a pipeline (:mod:`uneven.schedulers.pipeline`) under several
  link-delay profiles; each candidate is PipeMorph's re-planned warm-ups *for one profile*,
  dispatched live under another (the replan rule of :func:`~uneven.schedulers.pipeline.
  simulate_trace` with a one-iteration lag), plus schedules planned for a healthy network and
  replayed, as a production job runs them;
* :func:`transport_policy_table`: one decode MoE layer (:mod:`uneven.ep.decode`) per batch size,
  with one copy per expert or the same-index relay, with or without per-expert overlap;
* :func:`core_split_table`: one EP dispatch inside a superpod (:mod:`uneven.ep.superpod`) per
  EP size and batch, with 1, 2, 4 … counting cores beside the senders, or every core counting and
  then sending.

Times in seconds.

>>> t = policy_table([[1.0, 4.0], [1.5, 2.0]], ["a", "b"], ["w1", "w2"])
>>> t.best_names(), t.policies[t.fixed], [round(float(x), 2) for x in t.loss]
(['a', 'b'], 'b', [0.5, 0.0])
>>> t.time_of("a", "w2"), t.loss_of("a").tolist()
(4.0, [0.0, 1.0])
>>> core_split_table([(16, 4), (32, 8)], count_cores=(1, 2)).best_names()
['count on 1, send on 47', 'count on 1, send on 47']
>>> transport_policy_table([1, 2], n_steps=1, n_hosts=1).best_names()
['one copy per expert', 'one copy per expert']
>>> w = warmup_policy_table({"healthy": [0.0, 0.0, 0.0], "30 ms on 0": [0.03, 0.0, 0.0]}, p=4,
...                         m=12, cap=None, baselines=("zb-h2",))
>>> w.best_names(), w.info["plan for 30 ms on 0"]
(['plan for healthy', 'plan for 30 ms on 0'], (10, 5, 3, 1))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ._validate import (
    _show,
    as_float_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_mapping,
    check_real,
    frozen_array,
    trusted,
)
from .limits import PY_STEP, check_steps

__all__ = [
    "PolicyTable",
    "policy_table",
    "CRITERIA",
    "MAX_NAMES",
    "MAX_PROFILES",
    "warmup_policy_table",
    "TRANSPORT_OPTIONS",
    "OPTION_KEYS",
    "transport_policy_table",
    "core_split_table",
    "SERIAL_SPLIT",
]

CRITERIA = ("mean", "worst")
#: Most policies, and most workloads, a table may have.
MAX_NAMES = 1024
#: Name of the core-split policy in which every core counts, then every core sends.
SERIAL_SPLIT = "all cores count, then send"
_MAX_TIME = 1e15  # s: the largest time a table holds (ratios and means stay finite)
_MAX_OP = 1e6  # s: the longest op or link delay a builder accepts
#: Most delay profiles :func:`warmup_policy_table` compares (each is simulated under each plan).
MAX_PROFILES = 64


def _result(rows, policies, workloads, criterion, info) -> PolicyTable:
    """A table the library computed (checked names, finite positive times): no second check."""
    t = np.array(rows, dtype=np.float64)
    t.flags.writeable = False
    return trusted(PolicyTable, policies=policies, workloads=workloads, times=t,
                   criterion=criterion, info=info)


def _items(name, value, *, max_n=MAX_NAMES) -> tuple:
    """``value`` (a list, tuple, range or 1-d array) as a tuple of at most ``max_n`` entries."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be a list (1-d); got an array of shape {value.shape}")
    elif not isinstance(value, (list, tuple, range)):
        raise ValueError(f"{name} must be a list; got {_show(value)}")
    if len(value) > max_n:
        raise ValueError(f"{name} must have at most {max_n} entries; got {len(value)}")
    return tuple(value.tolist() if isinstance(value, np.ndarray) else value)


def _labels(name, value) -> tuple:
    """``value`` as a non-empty tuple of unique strings."""
    names = _items(name, value)
    if not names or not all(isinstance(x, str) and len(x) <= 1000 for x in names) or (
            len(set(names)) != len(names)):
        raise ValueError(f"{name} must be a non-empty list of unique strings (each at most "
                         f"1,000 characters); got {_show(value)}")
    return tuple(str(x) for x in names)


def _plain(x) -> bool:
    """A string or a finite real number (not a bool)."""
    if isinstance(x, str):
        return len(x) <= 10_000
    if isinstance(x, Real) and not isinstance(x, (bool, np.bool_)):
        try:
            return bool(np.isfinite(float(x)))
        except (OverflowError, TypeError, ValueError):
            return False
    return False


def _info_value(name, v):
    """A value ``info`` may hold: a string, a finite real number, or a tuple of them."""
    if _plain(v):
        return v
    if isinstance(v, (tuple, list)) and len(v) <= MAX_NAMES and all(_plain(x) for x in v):
        return tuple(v)
    raise ValueError(f"{name} must be a string, a finite number or a tuple of them; got "
                     f"{_show(v)}")


def _check_table(policies, workloads, times, criterion, info):
    """The checked fields of a :class:`PolicyTable` (a read-only ``times``)."""
    policies = _labels("policies", policies)
    workloads = _labels("workloads", workloads)
    t = frozen_array("times", times, shape=(len(policies), len(workloads)))
    if t.size and not (t.min() > 0.0 and t.max() <= _MAX_TIME):
        raise ValueError(f"times must be in (0, {_MAX_TIME:g}] s; got entries from {t.min()} to "
                         f"{t.max()}")
    criterion = check_choice("criterion", criterion, CRITERIA)
    info = check_mapping("info", info)
    if len(info) > len(policies):
        raise ValueError(f"info must have at most one entry per policy; got {len(info)}")
    out = {}
    for k, v in info.items():
        if not isinstance(k, str) or k not in policies:
            raise ValueError(f"info keys must be names of policies; got {_show(k)}")
        out[k] = _info_value(f"info[{k!r}]", v)
    return policies, workloads, t, criterion, out


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """Times (s) of every candidate policy (rows) on every workload (columns).

    ``policies`` and ``workloads``: names (unique strings, at most :data:`MAX_NAMES` each);
    ``times`` float ``[n_policies, n_workloads]`` in (0, 1e15] s (read-only); ``criterion``: how
    the best fixed policy is chosen (``"mean"`` or ``"worst"`` of its time over each workload's
    best); ``info``: per policy name, what the builder wants to show (a string, a number or a
    tuple of them, e.g. the warm-up counts of a plan). Checked on construction.
    """

    policies: tuple
    workloads: tuple
    times: np.ndarray = field(repr=False)
    criterion: str = "mean"
    info: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        fields = _check_table(self.policies, self.workloads, self.times, self.criterion,
                              self.info)
        for name, value in zip(("policies", "workloads", "times", "criterion", "info"), fields,
                               strict=True):
            object.__setattr__(self, name, value)

    @property
    def adaptive(self) -> np.ndarray:
        """Per workload, the best policy's time (s): what choosing per workload achieves."""
        return self.times.min(axis=0)

    @property
    def best(self) -> np.ndarray:
        """Per workload, the index of its best policy (the first one on a tie)."""
        return self.times.argmin(axis=0)

    def best_names(self) -> list:
        """Per workload, the name of its best policy."""
        return [self.policies[i] for i in self.best]

    @property
    def ratio(self) -> np.ndarray:
        """``times / adaptive``: each policy's time over each workload's best (>= 1)."""
        return self.times / self.adaptive[None, :]

    @property
    def fixed(self) -> int:
        """Index of the best fixed policy: lowest mean (or worst) ratio over the workloads;
        ties go to the first."""
        r = self.ratio
        score = r.mean(axis=1) if self.criterion == "mean" else r.max(axis=1)
        return int(np.argmin(score))

    @property
    def fixed_times(self) -> np.ndarray:
        """Per workload, the best fixed policy's time (s)."""
        return self.times[self.fixed]

    @property
    def loss(self) -> np.ndarray:
        """Per workload, what the best fixed policy loses: its time over the best, minus 1."""
        return self.fixed_times / self.adaptive - 1.0

    def loss_of(self, policy: str) -> np.ndarray:
        """Per workload, what fixing ``policy`` loses (time over the best, minus 1)."""
        policy = check_choice("policy", policy, self.policies)
        return self.ratio[self.policies.index(policy)] - 1.0

    def time_of(self, policy: str, workload: str) -> float:
        """Time (s) of ``policy`` on ``workload``."""
        policy = check_choice("policy", policy, self.policies)
        workload = check_choice("workload", workload, self.workloads)
        return float(self.times[self.policies.index(policy), self.workloads.index(workload)])


def policy_table(times, policies, workloads, *, criterion: str = "mean",
                 info: dict | None = None) -> PolicyTable:
    """A :class:`PolicyTable` from a ``[policies, workloads]`` array of times (s, in
    (0, 1e15]) and the names of both axes (unique strings, at most :data:`MAX_NAMES` each);
    ``info``: ``{policy name: a string, a number or a tuple of them}``."""
    policies = _labels("policies", policies)
    workloads = _labels("workloads", workloads)
    t = as_float_array("times", times, shape=(len(policies), len(workloads)), lo=0.0,
                       lo_open=True, hi=_MAX_TIME, unit="s")  # a copy: the caller's array stays
    return PolicyTable(policies, workloads, t, criterion, {} if info is None else info)


# --------------------------------------------------------------------------- pipeline warm-ups


def warmup_policy_table(profiles: dict, *, p: int = 8, m: int = 24, t_op: float = 0.01,
                        cap: int | None = 16, baselines=("zb-h2", "1f1b"),
                        criterion: str = "mean") -> PolicyTable:
    """Pipeline iteration time (s) of warm-up plans under link-delay profiles.

    ``profiles``: ``{name: delays}`` (at most :data:`MAX_PROFILES`) with ``p - 1`` one-way link
    delays (s, at most 1e6 and at most 1e9 ``t_op`` each); every profile is a workload.
    Candidates: for each profile, ``"plan for <name>"`` — PipeMorph's warm-ups planned for
    that profile (:func:`~uneven.schedulers.pipeline.replan_warmups`, stage 0 capped at
    ``cap`` micro-batches), dispatched live with CPU-side sends under the workload's delays;
    and for each kind in ``baselines`` (``"zb-h2"``, ``"zb-h1"``, ``"1f1b"``) its order
    planned for a healthy network and replayed (CPU-side sends too). Every operation takes
    ``t_op`` (s, at most 1e6). ``info`` holds each candidate's warm-up counts. Largest sizes:
    ``p <= 64``, ``m <= 1024``, and the ``n² + n · len(baselines)`` simulations of ``n``
    profiles within the work budget of :mod:`uneven.limits`.

    >>> d = {"healthy": [0.0, 0.0, 0.0], "30 ms on 0": [0.03, 0.0, 0.0]}
    >>> t = warmup_policy_table(d, p=4, m=12, cap=None, baselines=("zb-h2",))
    >>> [round(x * 1e3) for x in t.times[t.policies.index("ZB-H2, planned healthy")]]
    [390, 480]
    """
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline, simulate_trace

    p = check_int("p", p, lo=2, hi=64)
    m = check_int("m", m, lo=1, hi=1024)
    t = check_real("t_op", t_op, lo=0.0, lo_open=True, hi=_MAX_OP, unit="s")
    if cap is not None:
        cap = check_int("cap", cap, lo=1, hi=10**6)
    criterion = check_choice("criterion", criterion, CRITERIA)
    if not isinstance(profiles, Mapping) or not 1 <= len(profiles) <= MAX_PROFILES:
        raise ValueError(f"profiles must be a dict of 1 to {MAX_PROFILES} entries name -> delays; "
                         f"got {_show(profiles)}")
    delays = {}
    for k, v in profiles.items():
        if not isinstance(k, str) or not k or len(k) > 200:
            raise ValueError(f"profiles must have names (non-empty strings of at most 200 "
                             f"characters) as keys; got {_show(k)}")
        delays[k] = as_float_array(f"profiles[{k!r}]", v, shape=(p - 1,), lo=0.0, hi=_MAX_OP,
                                   unit="s")
    names = {"zb-h2": "ZB-H2", "zb-h1": "ZB-H1", "1f1b": "1F1B"}
    kinds = _items("baselines", baselines, max_n=len(names))
    for kind in kinds:
        check_choice("baselines", kind, tuple(names))
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"baselines must not repeat a kind; got {_show(baselines)}")
    worst = max(float(d.max()) for d in delays.values())
    if worst > 1e9 * t:
        raise ValueError(f"profiles' delays must be at most 1e9 ops of t_op (no plan holds more "
                         f"micro-batches); got {worst:g} s with t_op = {t:g} s")
    n = len(delays)
    check_steps("profiles", f"{n} profiles", (n * n + len(kinds) * n) * (6 * p * p * m + PY_STEP),
                "one pipeline iteration per (plan, profile) pair")
    zb = pipeline_schedule("zb-h2", p, m)
    rows, info = [], {}
    for plan_name, plan_delays in delays.items():
        row = []
        for d in delays.values():
            tr = simulate_trace(zb, t, t, t, delay_trace=np.stack([plan_delays, d]),
                                mode="replan", lag=1, cap=cap)
            row.append(tr.iteration_times[1])
            info[f"plan for {plan_name}"] = tuple(int(x) for x in tr.warmups[1])
        rows.append(row)
    for kind in kinds:
        sched = pipeline_schedule(kind, p, m)
        rows.append([simulate_pipeline(sched, t, t, t, delays=d).iteration_time
                     for d in delays.values()])
        info[f"{names[kind]}, planned healthy"] = sched.warmups
    policies = tuple(f"plan for {n}" for n in delays) + tuple(f"{names[k]}, planned healthy"
                                                              for k in kinds)
    return _result(rows, policies, tuple(delays), criterion, info)


# --------------------------------------------------------------------------- decode transport

#: The transport and overlap choices of notebook 05 (keyword arguments of
#: :func:`uneven.ep.decode.simulate_decode`).
TRANSPORT_OPTIONS = {
    "one copy per expert": {"mode": "direct"},
    "one copy per expert + overlap": {"mode": "direct", "overlap": True},
    "relay": {"mode": "relay"},
    "relay + overlap": {"mode": "relay", "overlap": True},
}


#: The keyword arguments of :func:`uneven.ep.decode.simulate_decode` an option may set.
OPTION_KEYS = ("mode", "overlap", "transport")


def _check_options(options) -> dict:
    from .ep.transport import TRANSPORT_MODES, Transport

    if not isinstance(options, Mapping) or not 1 <= len(options) <= 64:
        raise ValueError(f"options must be a dict of 1 to 64 entries name -> keyword arguments; "
                         f"got {_show(options)}")
    _labels("options", list(options))
    out = {}
    for name, kw in options.items():
        where = f"options[{name!r}]"
        if not isinstance(kw, Mapping) or not set(kw) <= set(OPTION_KEYS):
            raise ValueError(f"{where} must be a dict with keys among {', '.join(OPTION_KEYS)}; "
                             f"got {_show(kw)}")
        kw = dict(kw)
        if "mode" in kw:
            kw["mode"] = check_choice(f"{where}['mode']", kw["mode"], TRANSPORT_MODES)
        if "overlap" in kw:
            kw["overlap"] = check_bool(f"{where}['overlap']", kw["overlap"])
        if "transport" in kw:
            check_instance(f"{where}['transport']", kw["transport"], Transport)
        out[name] = kw
    return out


def transport_policy_table(batches, *, options: dict | None = None, n_steps: int = 10,
                           seed: int = 3, placement: str = "NIC-aware", swaps: bool = True,
                           criterion: str = "mean", **setup) -> PolicyTable:
    """Median decode-layer time (s) of each transport/overlap option per batch size.

    ``batches``: distinct tokens per GPU, each in [1, 4096] (workloads ``"<b> tokens/GPU"``);
    ``options``: ``{name: kwargs of simulate_decode}`` with keys among :data:`OPTION_KEYS`
    (default :data:`TRANSPORT_OPTIONS`); ``n_steps`` decode steps per point with ``seed``;
    ``placement`` and ``swaps`` as in :func:`uneven.ep.decode.simulate_decode`; ``setup``: other
    fields of :class:`uneven.ep.decode.DecodeSetup` (EP32 on H20 by default). Every decode step
    of every point counts against the work budget of :mod:`uneven.limits` (about 2 ms plus
    150 ns per token copy).
    """
    from .ep.decode import PLACEMENTS, DecodeSetup, simulate_decode

    b = [check_int("batches", x, lo=1, hi=4096) for x in _items("batches", np.atleast_1d(
        batches) if isinstance(batches, (np.ndarray, Real)) else batches, max_n=256)]
    if not b or len(set(b)) != len(b):
        raise ValueError(f"batches must be distinct token counts per GPU; got {_show(batches)}")
    options = _check_options(TRANSPORT_OPTIONS if options is None else options)
    n_steps = check_int("n_steps", n_steps, lo=1, hi=10_000)
    seed = check_int("seed", seed, lo=0)
    placement = check_choice("placement", placement, PLACEMENTS)
    swaps = check_bool("swaps", swaps)
    criterion = check_choice("criterion", criterion, CRITERIA)
    if "tokens_per_gpu" in setup:
        raise ValueError("tokens_per_gpu must not be given: batches sets it")
    try:
        setups = [DecodeSetup(tokens_per_gpu=x, **setup) for x in b]
    except (TypeError, ValueError) as err:
        given = ", ".join(f"{k}={_show(v)}" for k, v in setup.items())
        raise ValueError(f"{given} do not make a DecodeSetup: {err}") from None
    per_step = sum(2000 * PY_STEP + 150 * s.n_gpus * s.tokens_per_gpu * s.k for s in setups)
    check_steps("n_steps", n_steps, len(options) * n_steps * per_step,
                "every decode step of every option and batch")
    rows = []
    for kw in options.values():
        rows.append([simulate_decode(s, placement=placement, swaps=swaps, n_steps=n_steps,
                                     seed=seed, **kw).median() for s in setups])
    return _result(rows, tuple(options), tuple(f"{x} token{'' if x == 1 else 's'}/GPU"
                                               for x in b), criterion, {})


# --------------------------------------------------------------------------- core split


def core_split_table(workloads, *, count_cores=(1, 2, 4, 8, 16, 24), costs=None,
                     criterion: str = "mean", seed: int = 0) -> PolicyTable:
    """Jitter-free dispatch latency (s) of each split of a die's cores, per workload.

    ``workloads``: ``(ep_size, tokens_per_die)`` pairs (uniform top-8 routing on a
    CloudMatrix-like superpod, :func:`uneven.ep.superpod.superpod_traffic` with ``seed``;
    ``ep_size`` in [2, 1024], ``tokens_per_die`` in [1, 8192], their product at most 2**20).
    Candidates: UBEP's scheme with ``c`` counting cores beside ``cores - c`` senders, for each
    ``c`` in ``count_cores`` (below the core count), and :data:`SERIAL_SPLIT` — every core counts,
    then every core sends, with the same equal hop mix and flag inside each block (no barrier).
    ``costs``: a :class:`uneven.ep.superpod.CoreCosts` (48 cores per die by default).
    Routing and planning count against the work budget of :mod:`uneven.limits`.
    """
    from .ep.superpod import (
        MAX_RANKS,
        CoreCosts,
        phase_latency,
        phase_plan,
        scheme,
        superpod_traffic,
    )

    costs = CoreCosts() if costs is None else costs
    check_instance("costs", costs, CoreCosts)
    criterion = check_choice("criterion", criterion, CRITERIA)
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    pairs = []
    for i, w in enumerate(_items("workloads", workloads, max_n=256)):
        if not (isinstance(w, (tuple, list)) and len(w) == 2):
            raise ValueError(f"workloads must be (ep_size, tokens_per_die) pairs; got "
                             f"{_show(w)}")
        ep = check_int(f"workloads[{i}] ep_size", w[0], lo=2, hi=MAX_RANKS)
        tok = check_int(f"workloads[{i}] tokens_per_die", w[1], lo=1, hi=8192)
        if ep * tok > 1 << 20:
            raise ValueError(f"workloads[{i}] must have ep_size * tokens_per_die <= {1 << 20}; "
                             f"got {ep} * {tok}")
        pairs.append((ep, tok))
    if not pairs or len(set(pairs)) != len(pairs):
        raise ValueError(f"workloads must list distinct (ep_size, tokens_per_die) pairs, at least "
                         f"one; got {_show(workloads)}")
    splits = sorted({check_int("count_cores", c, lo=1, hi=costs.cores - 1)
                     for c in _items("count_cores", count_cores, max_n=4096)})
    if not splits:
        raise ValueError("count_cores must list at least one size of the counting group")
    steps = sum(10.0 * ep * tok * max(256, ep)
                + (len(splits) + 1) * (80.0 * ep * ep + 200 * PY_STEP) for ep, tok in pairs)
    check_steps("workloads", f"{len(pairs)} workloads", steps,
                "routing each workload and planning each split")
    schemes = {f"count on {c}, send on {costs.cores - c}": scheme("ubep", count_cores=c)
               for c in splits}
    schemes[SERIAL_SPLIT] = scheme("baseline", assignment="hop_mix", sync="block")
    rows = {name: [] for name in schemes}
    for ep, tok in pairs:
        traffic = superpod_traffic(ep, tokens_per_rank=tok, seed=seed)
        for name, s in schemes.items():
            rows[name].append(phase_latency(phase_plan(traffic, costs, s)))
    return _result(list(rows.values()), tuple(rows),
                   tuple(f"EP{e}, {k} tokens/die" for e, k in pairs), criterion, {})
