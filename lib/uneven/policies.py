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
* :func:`transport_policy_table`: one decode MoE layer (:mod:`uneven.ep_decode`) per batch size,
  with one copy per expert or the same-index relay, with or without per-expert overlap;
* :func:`core_split_table`: one EP dispatch inside a superpod (:mod:`uneven.schedulers.cores`) per
  EP size and batch, with 1, 2, 4 … counting cores beside the senders, or every core counting and
  then sending.

Times in seconds.

>>> t = policy_table([[1.0, 4.0], [1.5, 2.0]], ["a", "b"], ["w1", "w2"])
>>> t.best_names(), t.policies[t.fixed], [round(float(x), 2) for x in t.loss]
(['a', 'b'], 'b', [0.5, 0.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validate import as_float_array, check_choice, check_int, check_real

__all__ = [
    "PolicyTable",
    "policy_table",
    "CRITERIA",
    "warmup_policy_table",
    "TRANSPORT_OPTIONS",
    "transport_policy_table",
    "core_split_table",
    "SERIAL_SPLIT",
]

CRITERIA = ("mean", "worst")


def _names(name, value) -> tuple:
    """``value`` as a tuple, or a ValueError naming ``name`` when it is not a list of things."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a list; got {value!r}")
    return tuple(value)
#: Name of the core-split policy in which every core counts, then every core sends.
SERIAL_SPLIT = "all cores count, then send"


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """Times (s) of every candidate policy (rows) on every workload (columns).

    ``policies`` and ``workloads``: names; ``times`` float ``[n_policies, n_workloads]``;
    ``criterion``: how the best fixed policy is chosen (``"mean"`` or ``"worst"`` of its time
    over each workload's best); ``info``: per policy, what the builder wants to show (e.g. the
    warm-up counts of a plan).
    """

    policies: tuple
    workloads: tuple
    times: np.ndarray = field(repr=False)
    criterion: str = "mean"
    info: dict = field(default_factory=dict, repr=False)

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
    """A :class:`PolicyTable` from a ``[policies, workloads]`` array of times (s, > 0) and the
    names of both axes (unique strings)."""
    policies = _names("policies", policies)
    workloads = _names("workloads", workloads)
    for name, names in (("policies", policies), ("workloads", workloads)):
        if not names or len(set(names)) != len(names) or not all(isinstance(x, str)
                                                                 for x in names):
            raise ValueError(f"{name} must be a non-empty list of unique strings; got {names!r}")
    t = as_float_array("times", times, shape=(len(policies), len(workloads)), lo=0.0,
                       lo_open=True, unit="s")
    t.flags.writeable = False
    criterion = check_choice("criterion", criterion, CRITERIA)
    return PolicyTable(policies, workloads, t, criterion, dict(info or {}))


# --------------------------------------------------------------------------- pipeline warm-ups


def warmup_policy_table(profiles: dict, *, p: int = 8, m: int = 24, t_op: float = 0.01,
                        cap: int | None = 16, baselines=("zb-h2", "1f1b"),
                        criterion: str = "mean") -> PolicyTable:
    """Pipeline iteration time (s) of warm-up plans under link-delay profiles.

    ``profiles``: ``{name: delays}`` with ``p - 1`` one-way link delays (s) each; every profile is
    a workload. Candidates: for each profile, ``"plan for <name>"`` — PipeMorph's warm-ups planned
    for that profile (:func:`~uneven.schedulers.pipeline.replan_warmups`, stage 0 capped at
    ``cap`` micro-batches), dispatched live with CPU-side sends under the workload's delays; and
    for each kind in ``baselines`` (``"zb-h2"``, ``"zb-h1"``, ``"1f1b"``) its order planned for a
    healthy network and replayed (CPU-side sends too). Every operation takes ``t_op`` (s).
    ``info`` holds each candidate's warm-up counts.

    >>> d = {"healthy": [0.0, 0.0, 0.0], "30 ms on 0": [0.03, 0.0, 0.0]}
    >>> t = warmup_policy_table(d, p=4, m=12, cap=None, baselines=("zb-h2",))
    >>> [round(x * 1e3) for x in t.times[t.policies.index("ZB-H2, planned healthy")]]
    [390, 480]
    """
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline, simulate_trace

    p = check_int("p", p, lo=2, hi=64)
    m = check_int("m", m, lo=1, hi=1024)
    t = check_real("t_op", t_op, lo=0.0, lo_open=True, unit="s")
    if cap is not None:
        cap = check_int("cap", cap, lo=1)
    if not isinstance(profiles, dict) or not profiles:
        raise ValueError(f"profiles must be a non-empty dict of name -> delays; got {profiles!r}")
    delays = {str(k): as_float_array(f"profiles[{k!r}]", v, shape=(p - 1,), lo=0.0, unit="s")
              for k, v in profiles.items()}
    names = {"zb-h2": "ZB-H2", "zb-h1": "ZB-H1", "1f1b": "1F1B"}
    for kind in baselines:
        check_choice("baselines", kind, tuple(names))
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
    for kind in baselines:
        sched = pipeline_schedule(kind, p, m)
        rows.append([simulate_pipeline(sched, t, t, t, delays=d).iteration_time
                     for d in delays.values()])
        info[f"{names[kind]}, planned healthy"] = sched.warmups
    policies = [f"plan for {n}" for n in delays] + [f"{names[k]}, planned healthy"
                                                    for k in baselines]
    return policy_table(rows, policies, list(delays), criterion=criterion, info=info)


# --------------------------------------------------------------------------- decode transport

#: The transport and overlap choices of notebook 05 (keyword arguments of
#: :func:`uneven.ep_decode.simulate_decode`).
TRANSPORT_OPTIONS = {
    "one copy per expert": {"mode": "direct"},
    "one copy per expert + overlap": {"mode": "direct", "overlap": True},
    "relay": {"mode": "relay"},
    "relay + overlap": {"mode": "relay", "overlap": True},
}


def transport_policy_table(batches, *, options: dict | None = None, n_steps: int = 10,
                           seed: int = 3, placement: str = "NIC-aware", swaps: bool = True,
                           criterion: str = "mean", **setup) -> PolicyTable:
    """Median decode-layer time (s) of each transport/overlap option per batch size.

    ``batches``: tokens per GPU (workloads ``"<b> tokens/GPU"``); ``options``: ``{name: kwargs
    of simulate_decode}`` (default :data:`TRANSPORT_OPTIONS`); ``n_steps`` decode steps per
    point with ``seed``; ``placement`` and ``swaps`` as in :func:`uneven.ep_decode.
    simulate_decode`; ``setup``: other fields of :class:`uneven.ep_decode.DecodeSetup` (EP32
    on H20 by default).
    """
    from .ep_decode import DecodeSetup, simulate_decode

    b = [check_int("batches", x, lo=1, hi=4096) for x in np.atleast_1d(batches).tolist()]
    if not b or len(set(b)) != len(b):
        raise ValueError(f"batches must be distinct token counts per GPU; got {batches!r}")
    options = dict(TRANSPORT_OPTIONS if options is None else options)
    n_steps = check_int("n_steps", n_steps, lo=1, hi=10_000)
    rows = []
    setups = [DecodeSetup(tokens_per_gpu=x, **setup) for x in b]
    for kw in options.values():
        rows.append([simulate_decode(s, placement=placement, swaps=swaps, n_steps=n_steps,
                                     seed=seed, **kw).median() for s in setups])
    return policy_table(rows, list(options),
                        [f"{x} token{'' if x == 1 else 's'}/GPU" for x in b],
                        criterion=criterion)


# --------------------------------------------------------------------------- core split


def core_split_table(workloads, *, count_cores=(1, 2, 4, 8, 16, 24), costs=None,
                     criterion: str = "mean", seed: int = 0) -> PolicyTable:
    """Jitter-free dispatch latency (s) of each split of a die's cores, per workload.

    ``workloads``: ``(ep_size, tokens_per_die)`` pairs (uniform top-8 routing on a
    CloudMatrix-like superpod, :func:`uneven.schedulers.cores.ep_traffic` with ``seed``).
    Candidates: UBEP's scheme with ``c`` counting cores beside ``cores - c`` senders, for each
    ``c`` in ``count_cores`` (below the core count), and :data:`SERIAL_SPLIT` — every core counts,
    then every core sends, with the same equal hop mix and flag inside each block (no barrier).
    ``costs``: a :class:`uneven.schedulers.cores.CoreCosts` (48 cores per die by default).
    """
    from .schedulers.cores import CoreCosts, ep_traffic, phase_latency, phase_plan, scheme

    costs = CoreCosts() if costs is None else costs
    if not isinstance(costs, CoreCosts):
        raise ValueError(f"costs must be a CoreCosts; got {type(costs).__name__}")
    pairs = []
    for w in _names("workloads", workloads):
        if not (isinstance(w, (tuple, list)) and len(w) == 2):
            raise ValueError(f"workloads must be (ep_size, tokens_per_die) pairs; got {w!r}")
        pairs.append((check_int("ep_size", w[0], lo=2, hi=1024),
                      check_int("tokens_per_die", w[1], lo=1, hi=8192)))
    if not pairs:
        raise ValueError("workloads must list at least one (ep_size, tokens_per_die) pair")
    splits = sorted({check_int("count_cores", c, lo=1, hi=costs.cores - 1)
                     for c in _names("count_cores", count_cores)})
    if not splits:
        raise ValueError("count_cores must list at least one size of the counting group")
    schemes = {f"count on {c}, send on {costs.cores - c}": scheme("ubep", count_cores=c)
               for c in splits}
    schemes[SERIAL_SPLIT] = scheme("baseline", assignment="hop_mix", sync="block")
    rows = {name: [] for name in schemes}
    for ep, tok in pairs:
        traffic = ep_traffic(ep, tokens_per_rank=tok, seed=seed)
        for name, s in schemes.items():
            rows[name].append(phase_latency(phase_plan(traffic, costs, s)))
    return policy_table(list(rows.values()), list(rows),
                        [f"EP{e}, {k} tokens/die" for e, k in pairs], criterion=criterion)
