"""Pipeline-parallel schedules under slow links.

An iteration is a set of ops (compute and sends) with per-stage orders and delayed dependencies:
the model of the timeline engine (:mod:`uneven.engines.timeline`). :func:`simulate_pipeline`
times it with a kernel of its own that walks the per-stage orders in one pass
(:mod:`uneven.schedulers._replay`); the tests check it against the timeline engine run on the
same ops, bit for bit.

Vocabulary (units: seconds):

* ``p`` stages (GPUs, ranks), ``m`` micro-batches, ``v`` model chunks per stage.
* Per-stage op times ``t_f`` (forward), ``t_b`` (backward for the input gradient) and ``t_w``
  (backward for the weight gradient), scalars or arrays of ``p``; they are the times of one
  micro-batch through the *whole* stage, so when a micro-batch visits a stage ``v`` times (one
  chunk each) a chunk op takes ``t / v``. Schedules without a separate W (GPipe, 1F1B,
  interleaved, looped BFS) run one backward of ``t_b + t_w``; a schedule that splits them may
  still run some backwards whole (a **BW** op, ``t_b + t_w``).
* Link ``i`` joins stages ``i`` and ``i+1``. ``delays[i]`` (s) is an extra one-way latency that
  hits activations (``i -> i+1``) and gradients (``i+1 -> i``) alike; ``transfer[i]`` (s) is the
  time a message occupies its sender (``bytes / bandwidth``). With looped chunks (interleaved,
  looped BFS, interleaved ZB) a further link ``p-1 -> 0`` carries the hand-over between chunks;
  give it as entry ``p-1`` (default 0; a scalar applies to it too). The V shapes and DualPipe
  send their second chunk (or direction) back over links ``p-2 ... 0``.
* Warm-up count ``w_i``: the forwards stage ``i`` runs before its first backward, **counting the
  first steady forward** (Megatron's ``p-i-1`` warm-up forwards plus one, so 1F1B has
  ``w_i = p-i``). Slackness ``Δ_i = w_i - w_{i+1}``.

Schedules (:func:`pipeline_schedule`):

=========== ===================================================================================
gpipe       all forwards, then all backwards (fixed order)
1f1b        Megatron 1F1B: ``w_i`` forwards, then B/F pairs, then the remaining B's (fixed order);
            ``w_i = p-i`` unless ``warmups`` is given (must not increase along the pipe)
interleaved Megatron interleaved 1F1B with ``v >= 2`` chunks (needs ``m % p == 0``)
zb-h1       zero bubble, 1F1B memory: ``w_i = p-i``, at most ``p`` micro-batches held per stage
zb-h2       zero bubble, about 2x memory: ``w_i = 2(p-i)-1``, at most ``2p-1`` held per stage
zb          the same dispatcher with any given ``warmups`` (and optional ``memory`` budget)
greedy      the dispatcher with no warm-up and no memory budget (B before F before W whenever
            ready); this is ``OurPolicy``, the "ZB" of the PipeMorph artifact, whose warm-ups
            come out as ``2(p-i)-1`` on a healthy network with equal op times
=========== ===================================================================================

Further fixed orders, one per schedule ``torch.distributed.pipelining`` ships (each order, its
source and the closed forms the tests check: :mod:`uneven.schedulers._pipeline_orders`):

============== ================================================================================
looped-bfs     breadth-first, ``v >= 2`` looped chunks (Lamy-Poirier 2022; PyTorch's
               ScheduleLoopedBFS): every micro-batch of a chunk, chunk after chunk, then the
               backwards the other way round
interleaved-zb ZB-H1 with ``v >= 2`` looped chunks (PyTorch's ScheduleInterleavedZeroBubble)
zb-v           Zero Bubble's ZB-V (Qi et al., ICLR 2024): stage ``i`` holds chunks ``i`` and
               ``2p-1-i``, so the second chunk flows back (PyTorch's ScheduleZBVZeroBubble)
dualpipe       DeepSeek-V3's DualPipe (report §3.2.1; github deepseek-ai/DualPipe): two pipes
               in opposite directions, ``m/2`` micro-batches each, two parameter copies per
               stage, F&B pairs (needs ``p`` even, ``m`` even, ``m >= 2p``)
dualpipe-v     its "cut-in-half" V shape (DualPipe's ``dualpipev.py``; PyTorch's
               ScheduleDualPipeV): ``2p`` chunks in the ZB-V placement (needs ``m >= 2p``)
============== ================================================================================

An **F&B** op is DualPipe's overlapped pair: the F of one chunk and the full backward of the
other, one op of ``t_fb`` (default ``t_f + t_b + t_w``: this model has no communication inside a
stage for the pair to hide, so the pair costs its two halves); it needs both inputs and sends
both outputs when it ends. A shorter ``t_fb`` is the reading where the overlap gains time.

Memory. A micro-batch's activations are **held from its F until its W** (until its B when B and W
are one op): the W pass still needs what F stored. This is the accounting of the Zero Bubble
authors' first-iteration schedule (activations freed at W; ``--zero-bubble-max-pending-backward``
counts micro-batches between F and W) and it is what ``peak_memory`` reports, in units of one
micro-batch's activations on one stage (a chunk op holds ``1/v`` of it; an F&B counts its F before
its backward frees, the peak inside the pair; DualPipe's chunks are whole stages and count 1,
and its stages hold two copies of the parameters: :attr:`PipelineSchedule.parameter_copies`).
``zb-h1``, ``zb-h2`` and ``zb`` have a **memory budget**, the same on every stage: ``p`` for
ZB-H1 (1F1B's peak, held by its stage 0), ``2p - 1`` for ZB-H2 (the peak of the authors'
hand-made ZB-H2). With these budgets the dispatcher reproduces the authors'
hand-made ZB-H1 and ZB-H2 orders (``efficiency.get_hand_schedule`` in sail-sg's repository) and
their makespans, 27 and 55 time units at F = B = W = 1 for p = 4, m = 8 and p = 8, m = 16.

Dispatched orders. ``zb-h1``, ``zb-h2`` and ``zb``: a stage runs its ``w_i`` forwards, then
its F's and B's in the 1F1B order (B, F, B, F, ..., then the last B's), each as soon as its input
has arrived. Before an F would exceed the stage's memory budget it runs a W (earliest micro-batch
first), and while the next F or B waits for its input it runs W's too: W's fill gaps, keep memory
within budget, and take the tail. Re-planning (PipeMorph, the artifact's ``DeltaiPolicy``): after
its ``w_i`` forwards a stage picks, among the ops whose inputs have arrived, a B before an F before
a W (earliest micro-batch first) and starts no F while ``w_i`` micro-batches are between their F
and their B; like the artifact, it has no memory budget (``peak_memory`` shows what it costs).
``greedy``: the same pick, with no warm-up and no budget.

How a schedule meets the delays (``mode`` of :func:`simulate_pipeline`):

* ``"replay"`` (what a production job does): the per-stage op order is planned once for the
  healthy network (zero extra delay, the given transfer times; or under ``plan_delays``), then
  **replayed** in that fixed order under the delays. A late tensor stalls its consumer and
  everything queued behind it. The only mode of the fixed orders other than 1F1B's.
* ``"online"``: the dispatcher runs live under the delays with the schedule's own warm-ups
  (for ``1f1b`` this is the replay: with no W to place, its order is fixed).
* ``"replan"`` (PipeMorph): warm-ups are re-planned for the delays by :func:`replan_warmups`,
  then dispatched live.

A replayed order can only finish later when a delay grows (each finish is a longest path through
a fixed graph whose edges got longer). A live dispatcher is a greedy list scheduler, and those
are not monotone (R. L. Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl.
Math. 17(2), 1969: shortening a task can lengthen the schedule). Model example:
``zb-h1``, p = 8, m = 16, every op 10 ms, extra delay on link 5 only, ``mode="online"``: the
iteration ends 32 ms late at 4 ms but 20 ms late at 5 ms. At 4 ms stage 5's gradients are back
whenever it picks, so B (which outranks W) wins every pick and the W's wait until the memory
budget forces them, piling up at the end; at 5 ms the gradient is still away at some picks and
the stage fills the wait with a W. The order chosen at 5 ms, replayed under 4 ms
(``simulate_pipeline(..., order=result_at_5ms)``), ends 18 ms late: a better order existed and
greedy did not take it. Not a timing error; ``tests/test_pipeline_replay.py`` pins it.

Head-of-line blocking (``hol``): with ``hol=True`` each send is an op on the sending stage's GPU
stream, right after the op that produced the tensor (an F&B's activation, then its gradient),
lasting ``transfer + delay`` of its link, so
that stage's next compute waits until the send has completed (a stuck NCCL send). With
``hol=False`` (the default, and the model behind the slack analysis) the send goes to a CPU sender
of that stage and direction, busy for ``transfer`` only, and the delay is a pure latency on the
way; compute continues. Sends are eager: they never wait for the receiver.

>>> s = pipeline_schedule("1f1b", p=4, m=8)
>>> simulate_pipeline(s, t_f=1.0, t_b=2.0).iteration_time  # (m + p - 1)(F + B)
33.0
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, any_value, array, check_fields, choice, flag, instance, real, strings
from .._jit import njit
from .._moved import renamed_names
from .._validate import (
    _show,
    as_float_array,
    as_int_array,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_real,
    trusted,
)
from ..engines._timeline_kernel import _deadlock_message, _resource_orders, _timeline_kernel
from ..limits import check_bytes, check_steps
from ._pipeline_graph import data_edges
from ._pipeline_orders import LOOPED_CHUNKS as _LOOPED_CHUNKS
from ._pipeline_orders import NEW_KINDS as _NEW
from ._pipeline_orders import check_chunks as _check_chunks
from ._pipeline_orders import fixed_order as _fixed_order
from ._pipeline_orders import formula_warmups as _formula_warmups
from ._pipeline_orders import full_order as _full_order
from ._pipeline_orders import slots_per_stage as _slots_per_stage
from ._replay import (
    BIDIRECTIONAL,
    LOOPED,
    V_SHAPE,
    has_send,
    hop,
    host,
    input_horizon,
    n_virtual,
    replay_orders,
    virtual_stage,
)

__all__ = [
    "OP_KINDS",
    "COMPUTE_KINDS",
    "SCHEDULE_KINDS",
    "MODES",
    "PipelineSchedule",
    "PipelineResult",
    "TraceResult",
    "pipeline_schedule",
    "simulate_pipeline",
    "simulate_trace",
    "DelayScan",
    "delay_scan",
    "replan_warmups",
    "slackness",
    "absorption_bound",
]

F, B, W, SEND_ACT, SEND_GRAD, FB, BW = 0, 1, 2, 3, 4, 5, 6
#: Names of the op kind codes in :class:`PipelineResult` (``kind`` array): F&B is an overlapped
#: forward and full backward (DualPipe), BW a full backward in a schedule that splits B and W.
OP_KINDS = ("F", "B", "W", "send-act", "send-grad", "F&B", "BW")
#: The codes of :data:`OP_KINDS` that are compute (the others are sends).
COMPUTE_KINDS = (F, B, W, FB, BW)
SCHEDULE_KINDS = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb", "greedy",
                  "looped-bfs", "interleaved-zb", "zb-v", "dualpipe", "dualpipe-v")
MODES = ("replay", "online", "replan")
# Kinds the dispatcher can run live (online, replan); every other kind is a fixed order.
_LIVE = ("1f1b", "zb-h1", "zb-h2", "zb", "greedy")
_PLACEMENT = {"zb-v": V_SHAPE, "dualpipe-v": V_SHAPE, "dualpipe": BIDIRECTIONAL}
_TOL = 1e-9  # slack for ceil(c / t_F), so that 0.07 / 0.01 = 7.000000000000001 counts as 7
#: Largest number of stages of a schedule (far beyond any real pipeline; each stage costs a few
#: hundred bytes in a schedule, and :func:`simulate_pipeline` has its own size limits).
MAX_STAGES = 1 << 20
#: Largest number of model chunks per stage (interleaved).
MAX_CHUNKS = 1 << 10
#: Largest delay a re-plan turns into warm-ups: ``delays[i] / t_f`` above this many forward
#: times is refused (no plan holds more micro-batches than this).
MAX_REPLAN_RATIO = 2**31
# Bytes a simulation allocates per op slot (2 p x ops per stage: compute ops and their sends),
# counting the DAG and the timeline kernel's arrays of the reference route (the replay kernel
# needs less) and the result.
_OP_BYTES = 320
# Latest finish time a simulation may reach (s): beyond it, times would lose all precision.
_TIME_CEILING = 1e250
_SPLIT = ("zb-h1", "zb-h2", "zb", "greedy", "interleaved-zb", "zb-v", "dualpipe", "dualpipe-v")
_DISPATCHED = ("zb", "greedy")


# --------------------------------------------------------------------------------------------
# schedules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineSchedule:
    """What to run: built by :func:`pipeline_schedule`.

    ``warmups``: leading forwards per stage (for dispatched kinds also the most micro-batches
    between their F and their B), ``None`` for ``greedy``. ``memory``: the budget of micro-batches
    held (F done, W not yet) on every stage, ``None`` for none. ``split_backward``: B and W are
    separate ops. ``dispatched``: the order comes from the dispatcher rather than a fixed recipe.

    Every field is checked against the others when a schedule is made, by
    :func:`pipeline_schedule`, by direct construction or by ``dataclasses.replace``: a schedule
    of other ``p`` or ``m`` must be built anew (its warm-ups depend on them).

    >>> import dataclasses
    >>> dataclasses.replace(pipeline_schedule("1f1b", 8, 64), m=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: warmups must have entries in [1, 2] (at most m = 2 micro-batches); got ...
    """

    kind: str
    p: int
    m: int
    v: int
    warmups: tuple | None
    split_backward: bool
    dispatched: bool
    memory: int | None = None

    def __post_init__(self):
        _validate_schedule(self)

    @property
    def parameter_copies(self) -> int:
        """Copies of its share of the model each stage holds: 2 for DualPipe (stage ``i`` holds
        model stage ``i`` for one direction and ``p-1-i`` for the other), 1 otherwise. DualPipeV
        keeps one copy here because its ``2p`` chunks share ``p`` stages; DeepSeek's table reads
        2x for it by comparing with 1F1B on twice as many devices (one per chunk)."""
        return 2 if self.kind == "dualpipe" else 1


def pipeline_schedule(kind: str, p: int, m: int, v: int | None = None, warmups=None,
                      memory=None) -> PipelineSchedule:
    """A pipeline schedule: one of :data:`SCHEDULE_KINDS` (see the module table).

    ``v``: chunks per stage, at least 2 for ``"interleaved"``, ``"looped-bfs"`` and
    ``"interleaved-zb"``; the V shapes and DualPipe have 2 (given or not); every other kind 1.
    ``warmups`` (length ``p``, integers >= 1 that never increase along the pipe; entries above
    ``m`` are clipped to ``m``) is accepted by ``"1f1b"`` and required by ``"zb"``. ``memory``
    (``"zb"`` only) is a budget of micro-batches held per stage, at least ``max(warmups)``;
    ``None`` means no budget. ``"zb-h1"`` and ``"zb-h2"`` come with ``p`` and ``2p - 1``.
    ``m``: a multiple of ``p`` for ``"interleaved"`` (Megatron), of ``max(1, m // p)`` for
    ``"interleaved-zb"`` (PyTorch's rounds), at least ``2p`` for the DualPipes, and even with
    ``p`` even for ``"dualpipe"``.

    >>> pipeline_schedule("zb-h2", p=4, m=12).warmups
    (7, 5, 3, 1)
    >>> pipeline_schedule("zb-h1", p=4, m=12).memory
    4
    >>> pipeline_schedule("1f1b", p=4, m=2).warmups  # clipped to m
    (2, 2, 2, 1)
    >>> pipeline_schedule("dualpipe", p=4, m=8).warmups  # the middle stages' first F is lone
    (4, 5, 5, 4)
    """
    kind = check_choice("kind", kind, SCHEDULE_KINDS)
    p = check_int("p", p, lo=1, hi=MAX_STAGES)
    m = check_int("m", m, lo=1)
    if v is not None:
        v = check_int("v", v, lo=1, hi=MAX_CHUNKS)
    v = _check_chunks(kind, p, m, v)
    if warmups is not None and kind not in ("1f1b", "zb"):
        raise ValueError(
            f"warmups is accepted only for kind '1f1b' or 'zb'; got warmups for kind={kind!r}"
        )
    if kind == "zb" and warmups is None:
        raise ValueError("warmups is required for kind='zb' (a list of p warm-up counts); got None")
    if warmups is not None:
        w = _check_warmups(warmups, p, m)
    elif kind == "1f1b":
        w = tuple(min(p - i, m) for i in range(p))
    else:
        w = _formula_warmups(kind, p, m, v)  # None for greedy
    split = kind in _SPLIT
    dispatched = kind in _DISPATCHED
    if memory is not None:
        if kind != "zb":
            raise ValueError(f"memory is accepted only for kind 'zb' (zb-h1 and zb-h2 come with "
                             f"their own budgets); got memory for kind={kind!r}")
        memory = check_int("memory", memory, lo=max(w))
    elif kind == "zb-h1":
        memory = p
    elif kind == "zb-h2":
        memory = 2 * p - 1
    if memory is not None:
        memory = min(memory, m)
    return PipelineSchedule(kind, p, m, v, w, split, dispatched, memory)


def _check_warmups(warmups, p, m) -> tuple:
    w = as_int_array("warmups", warmups, ndim=1, shape=(p,), lo=1)
    if np.any(np.diff(w) > 0):
        raise ValueError(
            "warmups must never increase along the pipe (w_i >= w_{i+1}); got "
            f"{w.tolist()}"
        )
    return tuple(int(x) for x in np.minimum(w, m))


def _validate_schedule(sc: PipelineSchedule) -> None:
    """Check every field of a schedule against the others (see :class:`PipelineSchedule`)."""
    def put(name, value):
        object.__setattr__(sc, name, value)

    anew = "; build the schedule anew with pipeline_schedule(...)"
    kind = check_choice("kind", sc.kind, SCHEDULE_KINDS)
    p = check_int("p", sc.p, lo=1, hi=MAX_STAGES)
    m = check_int("m", sc.m, lo=1)
    v = check_int("v", sc.v, lo=1, hi=MAX_CHUNKS)
    try:
        _check_chunks(kind, p, m, v)
    except ValueError as err:
        raise ValueError(f"{err}{anew}") from None
    for name, want in (("split_backward", kind in _SPLIT), ("dispatched", kind in _DISPATCHED)):
        value = check_bool(name, getattr(sc, name))
        if value != want:
            raise ValueError(f"{name} must be {want} for kind={kind!r}; got {value}{anew}")
        put(name, value)
    for name, value in (("kind", kind), ("p", p), ("m", m), ("v", v)):
        put(name, value)
    w = sc.warmups
    if kind == "greedy":
        if w is not None:
            raise ValueError(f"warmups must be None for kind='greedy'; got {_show(w)}{anew}")
    else:
        top = m * v
        if not _flat(w) or len(w) != p:
            raise ValueError(f"warmups must be a tuple of p = {p} warm-up counts; "
                             f"got {_show(w)}{anew}")
        w = tuple(int(x) for x in as_int_array("warmups", w, ndim=1, shape=(p,)))
        if min(w) < 1 or max(w) > top:
            unit = f"m x v = {top} chunk forwards" if v > 1 else f"m = {m} micro-batches"
            raise ValueError(f"warmups must have entries in [1, {top}] (at most {unit}); "
                             f"got {_show(w)}{anew}")
        if kind not in _NEW and any(a < b for a, b in zip(w, w[1:], strict=False)):
            raise ValueError(f"warmups must never increase along the pipe (w_i >= w_(i+1)); "
                             f"got {_show(w)}")
        formula = _formula_warmups(kind, p, m, v)
        if formula is not None and w != formula:
            raise ValueError(f"warmups must be {_show(formula)} for kind={kind!r} with p={p}, "
                             f"m={m}; got {_show(w)}{anew}")
    put("warmups", w)
    mem = sc.memory
    if kind == "zb-h1":
        want = min(p, m)
    elif kind == "zb-h2":
        want = min(2 * p - 1, m)
    else:
        want = None
    if mem is not None:
        mem = check_int("memory", mem, lo=1)
    if kind == "zb":
        if mem is not None:
            mem = check_int("memory", mem, lo=max(w), hi=m)
    elif mem != want:
        raise ValueError(f"memory must be {want} for kind={kind!r} with p={p}, m={m}; "
                         f"got {_show(mem)}{anew}")
    put("memory", mem)


def slackness(warmups) -> np.ndarray:
    """Δ_i = w_i - w_{i+1} for each link ``i`` (length ``p-1``, integers).

    >>> slackness([7, 5, 3, 1]).tolist()
    [2, 2, 2]
    """
    w = as_int_array("warmups", warmups, ndim=1, lo=1)
    if w.size == 0:
        raise ValueError("warmups must have at least one entry (one per stage); got []")
    return w[:-1] - w[1:]


def absorption_bound(delta, t_f, t_b, t_w=0.0):
    """Largest one-way delay (s) a link of slackness ``delta`` absorbs in a replayed plan's
    steady phase, without a stall that repeats micro-batch after micro-batch.

    Returns ``c* = ((Δ - 1)(t_f + t_b) + Δ t_w) / 2`` (0 when ``Δ <= 0``). ``t_b`` is the backward
    a stage runs between two forwards: the input-gradient part for the zero-bubble kinds, the
    *full* backward ``t_b + t_w`` for 1F1B. ``t_w`` is the W that sits in every steady cycle of
    both stages: 0 (the default) when the order keeps W's out of the steady phase (1F1B; the
    PipeMorph artifact's plans, whose W's drift to the tail), ``t_w`` when a memory budget forces
    one W per micro-batch into it (ZB-H1, ZB-H2). With equal op times ``t`` and ``t_w = 0`` this
    is ``(Δ - 1) t``, the knee of the paper's Fig. 8. ``delta``: an integer or an array of them.

    Why: follow micro-batch ``j`` across link ``k``. Stage ``k`` sends F_j, runs what its order
    puts before B_j — ``Δ_k + w_{k+1} - 1`` cycles of one F and one B (and one W) — then needs
    B_j back. Stage ``k+1`` needs ``w_{k+1} - 1`` such cycles plus F_j and B_j themselves, and the
    round trip adds ``2c``. No stall iff ``2c`` fits in the difference.

    What the model does, replaying a plan with delay ``c`` on link ``k`` only (sends off the GPU
    stream, every ``Δ_i >= 1``; property tests in ``tests/test_pipeline.py``):

    * ``c <= (Δ-1)(t_f+t_b)/2`` (``c*`` with ``t_w = 0``): the iteration grows by between ``c``
      and ``2c``, whatever ``m``: the first activation crossing and perhaps the last gradient
      crossing are paid once. Exactly ``2c`` for 1F1B. Exactly ``c`` for the artifact's plans,
      which keep a few W's between stage 0's last B's and so hide the last crossing.
    * with a memory budget, up to ``c*`` with ``t_w``: still independent of ``m`` (the early
      micro-batches, before the budget binds, may stall: more than ``2c`` in all);
    * beyond ``c*``: every ``w_k`` micro-batches pay the excess again, so the iteration time
      grows with ``m``: O(m c).

    >>> absorption_bound(2, 0.01, 0.01)
    0.01
    >>> absorption_bound([1, 2, 3], 1.0, 1.0).tolist()
    [0.0, 1.0, 2.0]
    >>> absorption_bound(2, 1.0, 1.0, t_w=1.0)  # ZB-H2 with its memory budget
    2.0
    """
    d = as_float_array("delta", delta)
    if not np.all(d == np.round(d)):
        raise ValueError(f"delta must be an integer or an array of integers; got {_show(delta)}")
    tf = _positive("t_f", t_f)
    tb = _positive("t_b", t_b)
    tw = check_real("t_w", t_w, lo=0.0, unit="s")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(d >= 1.0, ((d - 1.0) * (tf + tb) + d * tw) / 2.0, 0.0)
    if not np.isfinite(out).all():
        raise ValueError(f"delta, t_f, t_b and t_w give a bound beyond the range of a float; "
                         f"got delta up to {d.max():.3g}")
    return float(out[0]) if np.ndim(delta) == 0 else out.reshape(np.shape(delta))


def _positive(name, value) -> float:
    return check_real(name, value, lo=0.0, lo_open=True, unit="s")


def replan_warmups(delays, t_f, *, m=None, cap=None) -> tuple:
    """PipeMorph's warm-up plan for the given link delays (s).

    ``w_{p-1} = 1`` and, going upstream, ``w_i = w_{i+1} + ceil(c_i / t_F,i) + 2``: every link
    gets slackness 2 (absorbs one op time), a slow link as much more as its delay needs. ``t_f``
    is a scalar or one value per stage (s). ``m`` clips every count to ``m``.

    ``cap`` limits stage 0's in-flight micro-batches (its memory). The plan must keep
    ``w_0 >= w_1 >= ... >= 1`` (a stage never holds more than its upstream neighbour), so a cap
    cannot just clip ``w_0``: it is a budget of ``cap - 1`` slack units shared by all links. The
    rule used here: if ``cap < p`` the plan is ``min(p - i, cap)`` (1F1B-like, some links get
    Δ = 0); otherwise every link gets Δ = 1 and the remaining ``cap - p`` units go one by one
    to the link furthest below its wish (ties: the longer delay, then the upstream link).
    Sizes: at most :data:`MAX_STAGES` stages; a delay may be at most :data:`MAX_REPLAN_RATIO`
    forward times; any ``cap`` (the shares are computed in closed form, not unit by unit).

    >>> replan_warmups([0.03, 0.0, 0.0], t_f=0.01)
    (10, 5, 3, 1)
    >>> replan_warmups([0.03, 0.0, 0.0], t_f=0.01, cap=7)
    (7, 3, 2, 1)
    """
    c = as_float_array("delays", delays, ndim=1, lo=0.0, unit="s")
    p = c.size + 1
    if p > MAX_STAGES:
        raise ValueError(f"delays must have at most {MAX_STAGES - 1} entries (one per link); "
                         f"got {c.size}")
    tf = _per_stage("t_f", t_f, p, positive=True)
    if m is not None:
        m = check_int("m", m, lo=1)
    if cap is not None:
        cap = check_int("cap", cap, lo=1)
    cl, tl = c.tolist(), tf.tolist()
    ratio = [cl[i] / tl[i] for i in range(p - 1)]  # Python floats: an overflow is inf
    for i, r in enumerate(ratio):
        if not r <= MAX_REPLAN_RATIO:
            raise ValueError(
                f"delays[{i}] / t_f must be at most {MAX_REPLAN_RATIO} forward times (no plan "
                f"holds more micro-batches); got {cl[i]:.3g} s / {tl[i]:.3g} s"
            )
    want = np.array(
        [math.ceil(ratio[i] - _TOL) + 2 if cl[i] > 0 else 2 for i in range(p - 1)],
        dtype=np.int64,
    )
    if cap is None or 1 + int(want.sum()) <= cap:
        delta = want
    elif cap < p:
        return _clip_m(tuple(min(p - i, cap) for i in range(p)), m)
    else:
        delta = _share_slack(want, c, cap - p)
    w = np.ones(p, dtype=np.int64)
    w[:-1] += np.cumsum(delta[::-1])[::-1]
    return _clip_m(tuple(int(x) for x in w), m)


def _share_slack(want, c, units):
    """Every link gets slackness 1 and then ``units`` more, one at a time, each to the link
    furthest below its wish (ties: the longer delay, then the upstream link).

    Done in closed form rather than one unit at a time: taking from the largest deficit first
    lowers every deficit above some level ``L`` to ``L`` (which costs ``S(L) = sum(max(0,
    d - L))`` units), and the ``units - S(L)`` left over go one each to the links at level ``L``
    in tie order. So the cost does not grow with ``units`` (a cap of 10**9 is as quick as 10).
    """
    d = want - 1  # deficits after the first unit each; all >= 1
    if units >= int(d.sum()):
        return want.copy()
    lo, hi = 0, int(d.max())  # S(hi) = 0 <= units < S(0): find the least L with S(L) <= units
    while lo < hi:
        mid = (lo + hi) // 2
        if int(np.maximum(d - mid, 0).sum()) <= units:
            hi = mid
        else:
            lo = mid + 1
    level = lo
    delta = 1 + (d - np.minimum(d, level))
    left = units - int(np.maximum(d - level, 0).sum())
    if left:
        at_level = np.flatnonzero(d >= level)
        order = sorted(at_level.tolist(), key=lambda i: (-c[i], i))
        delta[order[:left]] += 1
    return delta


def _reference_share_slack(want, c, units):
    """The rule of :func:`_share_slack` applied one unit at a time (test oracle)."""
    delta = np.ones(want.size, dtype=np.int64)
    for _ in range(units):
        deficit = want - delta
        if deficit.max() <= 0:
            break
        best = max(range(want.size), key=lambda i: (deficit[i], c[i], -i))
        delta[best] += 1
    return delta


def _flat(value) -> bool:
    """A tuple, list or 1-d array whose entries are not themselves sequences."""
    if isinstance(value, np.ndarray):
        return value.ndim == 1
    return isinstance(value, (tuple, list)) and not any(
        isinstance(x, (tuple, list, np.ndarray)) for x in value
    )


def _int_tuple(name, value, n) -> tuple:
    if not _flat(value) or len(value) != n:
        raise ValueError(f"{name} must be a tuple of {n} integers (one per stage); "
                         f"got {_show(value)}")
    return tuple(int(x) for x in as_int_array(name, value, ndim=1, shape=(n,), lo=0))


def _clip_m(w, m):
    return w if m is None else tuple(min(x, m) for x in w)


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineResult(Checked):
    """One simulated iteration.

    Scalars: ``iteration_time`` (s, the makespan). Per stage (length ``p``): ``bubble_fraction``
    (idle compute time / iteration time; sends do not count as work), ``busy`` (s of F/B/W),
    ``peak_memory`` (the most micro-batches held at once: F done, W not yet, or B not yet when B
    and W are one op; in units of one micro-batch's activations on that stage, so an interleaved
    chunk counts ``1/v``), ``warmups`` (forwards before the first B, counting the first steady
    one; for ``replan`` the plan used).

    Per op, for timelines (``uneven.plots.gantt``): ``resource`` (int; stage ``s`` is its GPU
    stream ``s``; the CPU senders are ``p + 2s`` for activations and ``p + 2s + 1`` for
    gradients, named in ``resource_names``), ``start``/``finish`` (s), ``kind`` (codes of
    :data:`OP_KINDS`), ``microbatch``, ``chunk`` (DualPipe: the direction), ``stage`` (the
    sending stage for sends), ``pair_microbatch`` (an F&B's backward half: its micro-batch, of
    chunk ``1 - chunk``; -1 for every other op). Op ids follow each stage's order, each op's
    sends right after it. :meth:`dependencies` gives the data edges between them.
    """

    iteration_time: float = real(lo=0.0, unit="s")
    bubble_fraction: np.ndarray = array(shape=lambda r: (r.schedule.p,), repr=False)
    busy: np.ndarray = array(shape=lambda r: (r.schedule.p,), repr=False)
    peak_memory: np.ndarray = array(shape=lambda r: (r.schedule.p,), repr=False)
    warmups: tuple = any_value()
    schedule: PipelineSchedule = instance(PipelineSchedule, "from pipeline_schedule(...)",
                                          repr=False)
    mode: str = choice(MODES)
    hol: bool = flag()
    resource: np.ndarray = array("int", shape=("ops",), lo=0, hi=lambda r: 3 * r.schedule.p - 1,
                                 repr=False)
    start: np.ndarray = array(shape=("ops",), repr=False)
    finish: np.ndarray = array(shape=("ops",), repr=False)
    kind: np.ndarray = array("int", shape=("ops",), lo=0, hi=len(OP_KINDS) - 1, repr=False)
    microbatch: np.ndarray = array("int", shape=("ops",), lo=0, repr=False)
    chunk: np.ndarray = array("int", shape=("ops",), lo=0, repr=False)
    stage: np.ndarray = array("int", shape=("ops",), lo=0, hi=lambda r: r.schedule.p - 1,
                              repr=False)
    pair_microbatch: np.ndarray = array("int", shape=("ops",), lo=-1, repr=False)
    resource_names: tuple = strings(repr=False)
    kind_names: tuple = strings(default=OP_KINDS, repr=False)
    check_first = ("schedule",)

    def __post_init__(self):
        object.__setattr__(self, "warmups", _int_tuple("warmups", self.warmups,
                                                       check_instance("schedule", self.schedule,
                                                                      PipelineSchedule).p))
        check_fields(self)

    def order(self, stage: int) -> list:
        """The ops of one stage's GPU stream in run order, e.g. ``['F0', 'F1', 'B0', ...]``.

        Chunk ``c > 0`` ops carry a suffix (``'F3.1'``); sends on the stream show as ``'>3'``
        (activation) or ``'<3'`` (gradient), an F&B as ``'F3&B1.1'``, a full backward in a
        split schedule as ``'BW3'``.
        """
        stage = check_int("stage", stage, lo=0, hi=self.schedule.p - 1)
        ids = np.flatnonzero(self.resource == stage)
        ids = ids[np.lexsort((ids, self.start[ids]))]
        out = []
        for i in ids:
            k = int(self.kind[i])
            c = int(self.chunk[i])
            name = {SEND_ACT: ">", SEND_GRAD: "<"}.get(k, OP_KINDS[k])
            if k == FB:
                name = "F"
            text = f"{name}{self.microbatch[i]}" + (f".{c}" if c else "")
            if k == FB:
                text += f"&B{self.pair_microbatch[i]}" + (f".{1 - c}" if 1 - c else "")
            out.append(text)
        return out

    def dependencies(self):
        """The data edges between this result's ops, as a predecessor CSR ``(dep_ptr,
        dep_src)`` (int64; ``dep_ptr`` has one entry per op plus one): op ``i`` waits for
        ``dep_src[dep_ptr[i]:dep_ptr[i + 1]]``. A send waits for the op that produced its
        tensor; an F for the activation (its send, or its producer when there is no send op) of
        the previous virtual stage; a B or BW for the gradient of the next one, or on the last
        virtual stage for its own F; a W for its B; an F&B for both its halves' inputs, the
        forward's first. The order of each resource (its ops in id order) is not listed: it is
        implicit. These are the edges the timeline engine is given on the reference route
        (``tests/test_pipeline_schedules.py`` checks it, and that these edges with the link
        delays and the per-resource orders give back ``start``).

        >>> r = simulate_pipeline(pipeline_schedule("gpipe", 2, 1), 1.0, 1.0)
        >>> [OP_KINDS[k] for k in r.kind], [x.tolist() for x in r.dependencies()]
        (['F', 'B', 'F', 'B'], [[0, 0, 1, 2, 3], [3, 0, 2]])
        """
        sc = self.schedule
        return data_edges(sc.p, sc.m, _placement(sc), _visits(sc), self.kind, self.stage,
                          self.chunk, self.microbatch, self.pair_microbatch)


@dataclass(frozen=True)
class TraceResult(Checked):
    """Several iterations over a delay trace (:func:`simulate_trace`).

    ``iteration_times`` (s, one per iteration); ``warmups`` (int, ``[iterations, p]``, the plan
    each iteration ran); ``peak_memory`` (``[iterations, p]``, micro-batches held at the peak, as in
    :class:`PipelineResult`); ``switched`` (bool per iteration: the plan differs from the
    previous one).
    """

    iteration_times: np.ndarray = array(shape=("it",), lo=0.0, repr=False)
    warmups: np.ndarray = array("int", shape=("it", None), lo=0, repr=False)
    switched: np.ndarray = array("bool", shape=("it",), repr=False)
    peak_memory: np.ndarray = array(shape=lambda r: r.warmups.shape, lo=0.0, repr=False)

    @property
    def total_time(self) -> float:
        """Sum of the iteration times (s)."""
        return float(self.iteration_times.sum())


# --------------------------------------------------------------------------------------------
# public simulation entry points
# --------------------------------------------------------------------------------------------


def simulate_pipeline(
    schedule: PipelineSchedule,
    t_f,
    t_b,
    t_w=0.0,
    *,
    delays=0.0,
    transfer=0.0,
    mode: str = "replay",
    hol: bool = False,
    cap=None,
    plan_delays=None,
    warmups=None,
    t_fb=None,
    order=None,
) -> PipelineResult:
    """Simulate one training iteration of ``schedule`` (see the module doc for the model).

    ``t_f``, ``t_b``, ``t_w``: per-stage op times (s; scalar or length ``p``; ``t_f, t_b > 0``).
    ``t_fb`` (DualPipe kinds only): the time of an F&B pair, a whole micro-batch's forward and
    full backward through the stage overlapped (s; scalar or length ``p``, > 0); default
    ``t_f + t_b + t_w``, no gain from the overlap.
    ``delays``: extra one-way latency per link (s): a scalar for every link or an array of
    ``p-1`` (``p`` with a looped wrap link). ``transfer``: time a message occupies its
    sender (s, = bytes / bandwidth), same shapes. ``mode``: ``"replay"``, ``"online"`` or
    ``"replan"`` (:data:`MODES`; the fixed orders other than 1F1B replay only; ``replan`` takes
    only ``p``, ``m`` and whether B and W are
    split from ``schedule``). ``hol``: sends block the sending GPU stream. ``cap``: memory cap
    on stage 0's in-flight micro-batches for ``replan`` (see :func:`replan_warmups`).
    ``plan_delays`` (``replay`` of a dispatched kind only; same shapes as ``delays``): the link
    delays the order is planned under before it is replayed; default zero, a healthy network.
    The PipeMorph artifact's Fig. 8 plans each curve's order this way, under a small delay.
    ``warmups`` (``replan`` only): the warm-up counts to dispatch with instead of
    :func:`replan_warmups`'s (``p`` integers in [1, m], not increasing along the pipe), e.g. to
    search over plans (:mod:`uneven.schedulers.warmup_search`).
    ``order`` (``replay`` only): a :class:`PipelineResult` of the same schedule whose per-stage
    order of compute ops is replayed instead of the schedule's own, e.g. the order the online
    dispatcher chose under other delays (under its own delays it gives back that result's
    times). A fixed order can only get later when a delay grows; the online dispatcher can
    get earlier (see the module doc).

    Size: one iteration has ``2 p (2 or 3) m v`` op slots (compute ops and their sends), about
    320 bytes each, within the memory budget of :mod:`uneven.limits` (2 GiB by default: e.g.
    p = 64, m = 16,384 for 1F1B); the dispatcher (dispatched kinds, ``online``, ``replan``) takes
    about ``p`` steps per op, within the work budget (2e9 by default: e.g. p = 64, m = 40,000).
    Every finish time must stay below 1e250 s.

    >>> zb = pipeline_schedule("zb-h2", p=4, m=12)
    >>> [round(simulate_pipeline(zb, 0.01, 0.01, 0.01, delays=[c, 0, 0]).iteration_time, 3)
    ...  for c in (0.0, 0.01, 0.02)]
    [0.39, 0.4, 0.42]
    """
    if (type(schedule) is PipelineSchedule and type(mode) is str and mode == "replay"
            and type(hol) is bool and cap is None and plan_delays is None and warmups is None
            and t_fb is None and order is None):
        # The common call, checked in one pass; anything unusual takes the full checks below,
        # which name the culprit.
        quick = _quick_inputs(schedule, t_f, t_b, t_w, delays, transfer)
        if quick is not None:
            tf, tb, tw, ld, lt, horizon = quick
            _check_size(schedule, mode, tf, tb, tw, ld, lt, horizon=horizon)
            warm = schedule.warmups if schedule.dispatched else None
            return _simulate(schedule, tf, tb, tw, ld, lt, mode, hol, warm, plan=None)
    sched, tf, tb, tw, mode, hol = _check_common(schedule, t_f, t_b, t_w, mode, hol)
    tfb = _check_tfb(sched, t_fb, tf, tb, tw)
    p, v = sched.p, _wrap_v(sched)
    ld = _link_array("delays", delays, p, v)
    lt = _link_array("transfer", transfer, p, v)
    pd = None
    if plan_delays is not None:
        if mode != "replay" or not sched.dispatched:
            raise ValueError("plan_delays applies to mode='replay' of a dispatched kind (zb-h1, "
                             f"zb-h2, zb, greedy); got kind={sched.kind!r}, mode={mode!r}")
        pd = _link_array("plan_delays", plan_delays, p, v)
    _check_size(sched, mode, tf, tb, tw, ld if pd is None else np.maximum(ld, pd), lt, tfb=tfb)
    if warmups is not None:
        if mode != "replan" or cap is not None:
            raise ValueError(f"warmups applies to mode='replan' without cap; got mode={mode!r}, "
                             f"cap={cap!r}")
        warm = _check_warmups(warmups, p, sched.m)
    else:
        warm = _mode_warmups(sched, mode, ld, tf, cap)
    plan = None if pd is None else _plan(sched, tf, tb, tw, pd, lt, hol)
    given = None if order is None else _given_order(order, sched, mode, pd)
    return _simulate(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan=plan, tfb=tfb,
                     order=given)


def _given_order(result, sched, mode, plan_delays):
    """The per-stage compute order of ``result`` (a :class:`PipelineResult` of ``sched``) as
    the five arrays of :func:`_full_order`, for ``simulate_pipeline(..., order=result)``."""
    check_instance("order", result, PipelineResult, "from simulate_pipeline(...)")
    if mode != "replay" or plan_delays is not None:
        raise ValueError("order applies to mode='replay' without plan_delays (it is the plan); "
                         f"got mode={mode!r}"
                         + ("" if plan_delays is None else " and plan_delays"))
    if result.schedule != sched:
        raise ValueError(f"order must be a result of the same schedule ({sched.kind!r}, p="
                         f"{sched.p}, m={sched.m}); got one of {result.schedule.kind!r}, p="
                         f"{result.schedule.p}, m={result.schedule.m}")
    compute = np.isin(result.kind, COMPUTE_KINDS) & (result.resource < sched.p)
    olen = np.bincount(result.resource[compute], minlength=sched.p).astype(np.int64)
    okind, omb, ochunk, opair = np.full((4, sched.p, max(int(olen.max()), 1)), -1,
                                        dtype=np.int64)
    for s in range(sched.p):  # op ids follow each stage's order
        ids = np.flatnonzero(compute & (result.resource == s))
        okind[s, :ids.size] = result.kind[ids]
        omb[s, :ids.size] = result.microbatch[ids]
        ochunk[s, :ids.size] = result.chunk[ids]
        opair[s, :ids.size] = result.pair_microbatch[ids]
    return okind, omb, ochunk, opair, olen


def simulate_trace(
    schedule: PipelineSchedule,
    t_f,
    t_b,
    t_w=0.0,
    *,
    delay_trace,
    transfer=0.0,
    mode: str = "replay",
    hol: bool = False,
    cap=None,
    lag: int = 1,
    t_fb=None,
) -> TraceResult:
    """Run one iteration per row of ``delay_trace`` (s, shape ``[iterations, p-1]``).

    ``replay`` replays the healthy plan every iteration; ``online`` dispatches the schedule's
    warm-ups live. ``replan`` switches plans only at iteration boundaries: iteration ``k`` runs the
    warm-ups planned from row ``k - lag`` (the delays the monitor reported by then; the healthy
    plan while ``k < lag``), dispatched live under row ``k``. ``lag=0`` is an oracle. Other
    arguments (``t_fb`` too) as in :func:`simulate_pipeline`. Identical iterations are
    simulated once; the
    distinct ones together must fit the work budget of :mod:`uneven.limits` (each as in
    :func:`simulate_pipeline`).
    """
    sched, tf, tb, tw, mode, hol = _check_common(schedule, t_f, t_b, t_w, mode, hol)
    tfb = _check_tfb(sched, t_fb, tf, tb, tw)
    p, v = sched.p, _wrap_v(sched)
    n_links = p - 1 if v == 1 else p
    trace = as_float_array("delay_trace", delay_trace, ndim=2, lo=0.0, unit="s")
    if trace.shape[1] not in (p - 1, n_links):
        raise ValueError(
            f"delay_trace must have shape [iterations, {p - 1}] (one column per link); "
            f"got {trace.shape}"
        )
    if trace.shape[0] < 1:
        raise ValueError("delay_trace must have at least one row (iteration); got 0")
    lag = check_int("lag", lag, lo=0)
    lt = _link_array("transfer", transfer, p, v)
    n_distinct = len({row.tobytes() for row in trace})
    _check_size(sched, mode, tf, tb, tw, trace.max(axis=0, initial=0.0), lt, runs=n_distinct,
                runs_name="delay_trace", tfb=tfb)
    plan = None
    if mode == "replay" and sched.dispatched:
        plan = _plan(sched, tf, tb, tw, np.zeros(max(p, 1)), lt, hol)
    n_it = trace.shape[0]
    times = np.empty(n_it)
    warms = np.zeros((n_it, p), dtype=np.int64)
    peaks = np.zeros((n_it, p))
    cache: dict = {}
    for k in range(n_it):
        ld = _link_array("delay_trace row", trace[k], p, v)
        if mode == "replan":
            known = np.zeros(p) if k < lag else _link_array("delay_trace row", trace[k - lag], p, v)
            warm = _mode_warmups(sched, mode, known, tf, cap)
        else:
            warm = _mode_warmups(sched, mode, ld, tf, cap)
        key = (warm, ld.tobytes())
        if key not in cache:
            res = _simulate(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan=plan, tfb=tfb)
            cache[key] = (res.iteration_time, res.warmups, res.peak_memory)
        times[k], warms[k], peaks[k] = cache[key]
    switched = np.zeros(n_it, dtype=bool)
    switched[1:] = np.any(warms[1:] != warms[:-1], axis=1)
    for a in (times, warms, switched, peaks):
        a.flags.writeable = False
    return TraceResult(times, warms, switched, peaks)


@dataclass(frozen=True)
class DelayScan(Checked):
    """One schedule under a growing delay on one link (:func:`delay_scan`).

    ``delays`` (s), and per delay: ``iteration_times`` (s), ``extra`` (s over the same schedule
    with no delay), ``peak_memory`` (``[delays, p]`` micro-batches held), ``warmups``
    (``[delays, p]``, the plan run).
    """

    delays: np.ndarray = array(shape=("d",), lo=0.0, repr=False)
    iteration_times: np.ndarray = array(shape=("d",), lo=0.0, repr=False)
    extra: np.ndarray = array(shape=("d",), repr=False)
    peak_memory: np.ndarray = array(shape=lambda r: r.warmups.shape, lo=0.0, repr=False)
    warmups: np.ndarray = array("int", shape=("d", None), lo=0, repr=False)
    check_first = ("delays", "warmups")


def delay_scan(schedule: PipelineSchedule, t_f, t_b, t_w=0.0, *, link: int = 0, delays,
                **kwargs) -> DelayScan:
    """Simulate ``schedule`` once per entry of ``delays`` (s, one-way, on ``link`` only).

    Other keyword arguments go to :func:`simulate_pipeline` (``mode``, ``hol``, ``transfer``,
    ``cap``, ``plan_delays``, ``t_fb``); the zero-delay run they are compared with uses the same
    ones.
    All ``len(delays) + 1`` runs together must fit the work budget of :mod:`uneven.limits`.

    >>> s = pipeline_schedule("greedy", 2, 30)
    >>> sw = delay_scan(s, 0.01, 0.01, 0.01, delays=[0.0, 0.01, 0.02], plan_delays=[0.005])
    >>> [round(x * 1e3) for x in sw.extra]  # the PipeMorph artifact's Fig. 8, Δ = 3
    [0, 10, 20]
    """
    if not isinstance(schedule, PipelineSchedule):
        raise ValueError("schedule must be a PipelineSchedule from pipeline_schedule(...); got "
                         f"{type(schedule).__name__}")
    p = schedule.p
    n_links = p - 1 if _wrap_v(schedule) == 1 else p
    link = check_int("link", link, lo=0, hi=max(n_links - 1, 0))
    if n_links == 0:
        raise ValueError(f"schedule must have at least 2 stages to delay a link; got p={p}")
    cs = as_float_array("delays", delays, ndim=1, lo=0.0, unit="s")
    if kwargs.get("plan_delays") is not None and (
            kwargs.get("mode", "replay") != "replay" or not schedule.dispatched):
        raise ValueError("schedule must be of a dispatched kind (zb-h1, zb-h2, zb, greedy) in "
                         f"mode='replay' to take plan_delays; got kind={schedule.kind!r}, "
                         f"mode={kwargs.get('mode', 'replay')!r}")
    if cs.size:
        d = np.zeros(n_links)
        d[link] = cs.max()
        _, tf, tb, tw, _, _ = _check_common(schedule, t_f, t_b, t_w,
                                            kwargs.get("mode", "replay"), kwargs.get("hol", False))
        _check_size(schedule, kwargs.get("mode", "replay"), tf, tb, tw,
                    _link_array("delays", d, p, _wrap_v(schedule)), np.zeros(max(p, 1)),
                    runs=cs.size + 1, runs_name="delays",
                    tfb=_check_tfb(schedule, kwargs.get("t_fb"), tf, tb, tw))
    base = simulate_pipeline(schedule, t_f, t_b, t_w, delays=0.0, **kwargs).iteration_time
    times = np.empty(cs.size)
    peaks = np.empty((cs.size, p))
    warms = np.empty((cs.size, p), dtype=np.int64)
    d = np.zeros(n_links)
    for i, c in enumerate(cs):
        d[link] = c
        r = simulate_pipeline(schedule, t_f, t_b, t_w, delays=d, **kwargs)
        times[i], peaks[i], warms[i] = r.iteration_time, r.peak_memory, r.warmups
    extra = times - base
    for a in (cs, times, extra, peaks, warms):
        a.flags.writeable = False
    return DelayScan(cs, times, extra, peaks, warms)


# --------------------------------------------------------------------------------------------
# internals: validation
# --------------------------------------------------------------------------------------------


def _check_common(schedule, t_f, t_b, t_w, mode, hol):
    if not isinstance(schedule, PipelineSchedule):
        raise ValueError(
            "schedule must be a PipelineSchedule from pipeline_schedule(...); got "
            f"{type(schedule).__name__}"
        )
    mode = check_choice("mode", mode, MODES)
    hol = check_bool("hol", hol)
    p = schedule.p
    tf = _per_stage("t_f", t_f, p, positive=True)
    tb = _per_stage("t_b", t_b, p, positive=True)
    tw = _per_stage("t_w", t_w, p, positive=False)
    if mode != "replay" and schedule.kind not in _LIVE:
        raise ValueError(
            f"mode must be 'replay' for kind={schedule.kind!r}, a fixed order (the dispatcher "
            f"handles 1f1b, zb-h1, zb-h2, zb and greedy); got mode={mode!r}"
        )
    return schedule, tf, tb, tw, mode, hol


def _check_tfb(sched, t_fb, tf, tb, tw):
    """The per-stage F&B times (s): ``t_fb`` checked, or ``t_f + t_b + t_w`` when ``None``."""
    if t_fb is None:
        return tf + tb + tw
    if sched.kind not in ("dualpipe", "dualpipe-v"):
        raise ValueError(f"t_fb applies to kind 'dualpipe' or 'dualpipe-v' (the schedules with "
                         f"F&B pairs); got t_fb for kind={sched.kind!r}")
    return _per_stage("t_fb", t_fb, sched.p, positive=True)


def _placement(sched) -> int:
    """Where the virtual stages of a micro-batch's path live (codes of :mod:`._replay`)."""
    return _PLACEMENT.get(sched.kind, LOOPED)


def _visits(sched) -> int:
    """How often a micro-batch visits each stage: a chunk op takes ``1/visits`` of its time."""
    return 1 if sched.kind == "dualpipe" else sched.v


def _wrap_v(sched) -> int:
    """``sched.v`` when its chunks are looped (a wrap link ``p-1 -> 0``), else 1."""
    return sched.v if sched.kind in _LOOPED_CHUNKS else 1





def _quick_inputs(sched, t_f, t_b, t_w, delays, transfer):
    """``(tf, tb, tw, ld, lt, horizon)`` as the full checks would make them, when every time is
    a float or a float64 array of its shape and all are in range; ``None`` otherwise."""
    p, v = sched.p, _wrap_v(sched)
    times = []
    for x in (t_f, t_b, t_w):
        if type(x) is float:
            times.append(np.full(p, x))
        elif type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (p,):
            times.append(x)
        else:
            return None
    n_links = (p - 1,) if v == 1 else (p - 1, p)
    for x in (delays, transfer):
        if not (type(x) is float or (type(x) is np.ndarray and x.dtype == np.float64
                                     and x.ndim == 1 and x.size in n_links)):
            return None
        times.append(_spread_links(x, p, v))
    horizon = input_horizon(sched.m, sched.v, *times)
    return None if horizon < 0.0 else (*times, horizon)


def _check_size(sched, mode, tf, tb, tw, ld, lt, runs=1, runs_name=None, horizon=None,
                tfb=None):
    """Refuse a simulation beyond the memory or work budget, or whose times could overflow
    (``horizon``: the bound on finish times, s, when the caller has it; ``tfb``: F&B times)."""
    p, m, v = sched.p, sched.m, sched.v
    n_slots = 2 * p * _slots_per_stage(sched)
    size = f"p={p}, m={m}" + (f", v={v}" if v > 1 else "")
    check_bytes("schedule", size, _OP_BYTES * n_slots, f"{n_slots:,} op slots of one iteration")
    dispatch = mode != "replay" or sched.dispatched
    steps = n_slots * (p if dispatch else 4) * runs
    what = "dispatching every op past every stage" if dispatch else "building and timing the ops"
    if runs > 1:
        check_steps(runs_name, f"{runs} distinct runs of {size}", steps, what)
    else:
        check_steps("schedule", size, steps, what)
    # Python floats: an overflow is inf, never a warning.
    if horizon is None:
        horizon = (m * (sum(tf.tolist()) + sum(tb.tolist()) + sum(tw.tolist()))
                   + 2.0 * m * v * p * (float(ld.max()) + float(lt.max())))
        if tfb is not None:  # an F&B longer than its halves
            horizon += m * sum(max(0.0, x) for x in (tfb - (tf + tb + tw)).tolist())
    if not horizon <= _TIME_CEILING:
        raise ValueError(
            f"t_f, t_b, t_w, delays and transfer could put a finish time beyond {_TIME_CEILING:g} "
            f"s (bound {horizon:.3g} s for p={p}, m={m}); use times of sensible magnitude"
        )


def _per_stage(name, value, p, positive):
    arr = as_float_array(name, value, unit="s", lo=0.0, lo_open=positive)
    if np.ndim(value) == 0:  # as_float_array returns at least 1-d
        return np.full(p, float(arr[0]))
    if arr.shape != (p,):
        raise ValueError(f"{name} must be a scalar or have shape ({p},) (one per stage); "
                         f"got shape {arr.shape}")
    return arr


def _link_array(name, value, p, v):
    """Per-link values (s) as an array of length ``p``; entry ``p-1`` is the wrap link, which
    exists when ``v > 1`` (callers pass :func:`_wrap_v`)."""
    arr = as_float_array(name, value, lo=0.0, unit="s")
    if np.ndim(value) == 0:  # as_float_array returns at least 1-d
        return _spread_links(float(arr[0]), p, v)
    ok = (p - 1,) if v == 1 else (p - 1, p)
    if arr.ndim != 1 or arr.shape[0] not in ok:
        want = " or ".join(str(k) for k in ok)
        raise ValueError(f"{name} must be a scalar or a 1-d array of {want} entries (one per "
                         f"link); got shape {arr.shape}")
    return _spread_links(arr, p, v)


def _spread_links(x, p, v):
    """Checked per-link values (a float for every link, or an array of ``p-1`` or ``p``) as an
    array of ``p``; entry ``p-1``, the wrap link, is 0 unless ``v > 1``."""
    out = np.zeros(max(p, 1))
    if type(x) is float:
        out[: p - 1] = x
        if v > 1:
            out[p - 1] = x
    else:
        out[: x.size] = x
    return out


def _mode_warmups(sched, mode, ld, tf, cap):
    """The warm-up counts the dispatcher uses (``None``: no cap / fixed order)."""
    if cap is not None:
        if mode != "replan":
            raise ValueError(f"cap applies to mode='replan' only; got cap={cap!r} with "
                             f"mode={mode!r}")
        cap = check_int("cap", cap, lo=1)
    if mode == "replan":
        return replan_warmups(ld[: sched.p - 1], tf, m=sched.m, cap=cap)
    if mode == "online" or sched.dispatched:
        return sched.warmups
    return None


# --------------------------------------------------------------------------------------------
# internals: simulation
# --------------------------------------------------------------------------------------------


def _durations(sched, tf, tb, tw, split):
    v = _visits(sched)
    db = tb if split else tb + tw
    return tf / v, db / v, tw / v


def _mode_memory(sched, mode, warm):
    """The memory budget the dispatcher enforces: the schedule's own, raised for a re-plan to the
    warm-ups it needs (``None``: no budget, as in the PipeMorph artifact's simulator)."""
    if sched.memory is None or mode != "replan":
        return sched.memory
    return max(sched.memory, max(warm))


def _alternates(sched, mode) -> bool:
    """Whether the dispatcher keeps the 1F1B order of F's and B's (see the module doc)."""
    return mode != "replan" and sched.kind != "greedy"


def _plan(sched, tf, tb, tw, ld, lt, hol):
    """Order planned by the dispatcher under link delays ``ld`` (zeros: a healthy network)."""
    return _dispatch(sched, tf, tb, tw, ld, lt, hol, sched.warmups, sched.split_backward,
                     _alternates(sched, "replay"), sched.memory)


def _order(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan):
    """The per-stage order ``(kind, microbatch, chunk, pair, length)``: arrays ``[p, slots]``
    and the slots used per stage (see :func:`_full_order`)."""
    if mode == "replay":
        if not sched.dispatched:
            return _full_order(_fixed_order(sched), sched.p)
        if plan is None:
            plan = _plan(sched, tf, tb, tw, np.zeros(max(sched.p, 1)), lt, hol)
        return _full_order(plan[:3], sched.p)
    # online / replan: dispatched live under the delays
    return _full_order(_dispatch(sched, tf, tb, tw, ld, lt, hol, warm, sched.split_backward,
                                 _alternates(sched, mode), _mode_memory(sched, mode, warm))[:3],
                       sched.p)


def _simulate(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan, tfb=None, order=None):
    """Time the order in one pass (:func:`._replay.replay_orders`); same result as
    :func:`_simulate_dag`, the route through the generic timeline engine. ``tfb``: F&B times
    (s; default ``tf + tb + tw``). ``order``: the five order arrays to replay instead."""
    p = sched.p
    okind, omb, ochunk, opair, olen = (
        order if order is not None
        else _order(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan))
    tfb = tf + tb + tw if tfb is None else tfb
    # each op and its sends: one each way, two after an F&B
    n_max = (3 if sched.kind in ("dualpipe", "dualpipe-v") else 2) * p * okind.shape[1]
    start, finish = np.empty(n_max), np.empty(n_max)
    res, kind, mb, chunk, stage = np.empty((5, n_max), dtype=np.int64)
    pair = np.full(n_max, -1, dtype=np.int64)
    busy, bubble, peak = np.empty(p), np.empty(p), np.empty(p)
    warm_used = np.empty(p, dtype=np.int64)
    n, makespan = replay_orders(p, sched.m, _visits(sched), _placement(sched), okind, omb,
                                ochunk, opair, olen, tf, tb, tw, tfb, ld, lt, hol,
                                sched.split_backward, res, kind, mb, chunk, stage, pair,
                                start, finish, busy, bubble, peak, warm_used)
    if n < 0:  # pragma: no cover - every schedule's order is deadlock-free; a bug if this fires
        _simulate_dag(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan, tfb)  # raises
        raise AssertionError("the replay kernel and the timeline engine disagree on a deadlock")
    return _result(sched, mode, hol, makespan, busy, bubble, peak, tuple(warm_used.tolist()),
                   res[:n], start[:n], finish[:n], kind[:n], mb[:n], chunk[:n], stage[:n],
                   pair[:n])


def _result(sched, mode, hol, makespan, busy, bubble, peak, warm_used, res, start, finish, kind,
            mb, chunk, stage, pair):
    for a in (busy, peak, bubble, res, start, finish, kind, mb, chunk, stage, pair):
        a.flags.writeable = False
    return trusted(
        PipelineResult,
        iteration_time=float(makespan),
        bubble_fraction=bubble,
        busy=busy,
        peak_memory=peak,
        warmups=warm_used,
        schedule=sched,
        mode=mode,
        hol=hol,
        resource=res,
        start=start,
        finish=finish,
        kind=kind,
        microbatch=mb,
        chunk=chunk,
        stage=stage,
        pair_microbatch=pair,
        resource_names=_resource_names(sched.p),
    )


@functools.lru_cache(maxsize=64)
def _resource_names(p: int) -> tuple:
    return tuple([f"stage {s}" for s in range(p)]
                 + [n for s in range(p) for n in (f"stage {s} act sender",
                                                  f"stage {s} grad sender")])


def _simulate_dag(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan, tfb=None):
    """The reference route: ops and predecessor CSR (:func:`_build_dag`) timed by the generic
    timeline engine's kernel. Raises ``ValueError`` naming a cycle when the order deadlocks."""
    p = sched.p
    split = sched.split_backward
    order = _order(sched, tf, tb, tw, ld, lt, mode, hol, warm, plan)
    okind, olen = order[0], order[4]
    dur, res, kind, mb, chunk, stage, dep_ptr, dep_src, dep_dly, pair = _dag(
        sched, order, tf, tb, tw, ld, lt, hol, tfb, with_pairs=True
    )
    n = dur.size
    order_ptr, order_ops = _resource_orders(res)
    start = np.empty(n)
    finish = np.empty(n)
    done = np.zeros(n, dtype=np.int64)
    n_done = _timeline_kernel(dur, np.zeros(n), order_ptr, order_ops, dep_ptr, dep_src, dep_dly,
                              start, finish, done)
    if n_done < n:
        labels = [f"{OP_KINDS[k]}{j}.{c}@stage{s}" for k, j, c, s in zip(kind, mb, chunk, stage,
                                                                         strict=True)]
        raise ValueError(_deadlock_message(done, res, order_ptr, order_ops, dep_ptr, dep_src,
                                           labels))
    comp = ~np.isin(kind, (SEND_ACT, SEND_GRAD))
    busy = np.bincount(stage[comp], weights=dur[comp], minlength=p)
    used = np.arange(okind.shape[1]) < olen[:, None]
    k = np.where(used, okind, -1)
    # Held from F until W (until B when B and W are one op; BW and F&B free theirs); a chunk
    # holds 1/visits of a micro-batch; an F&B stores its F before its backward frees.
    up = np.isin(k, (F, FB)).astype(np.int64)
    down = -np.isin(k, (W if split else B, BW, FB)).astype(np.int64)
    steps = np.stack([up, down], axis=2).reshape(p, -1)
    peak = np.cumsum(steps, axis=1).max(axis=1) / _visits(sched)
    is_b = np.isin(k, (B, BW, FB))
    first_b = np.where(is_b.any(axis=1), is_b.argmax(axis=1), okind.shape[1])
    warm_used = tuple(int(np.sum(k[s, : first_b[s]] == F)) for s in range(p))
    makespan = float(finish.max())
    return _result(sched, mode, hol, makespan, busy, 1.0 - busy / makespan, peak, warm_used, res,
                   start, finish, kind, mb, chunk, stage, pair)


def _dag(sched, order, tf, tb, tw, ld, lt, hol, tfb=None, with_pairs=False):
    """Op arrays and predecessor CSR (see :func:`_build_dag`) for per-stage orders (3 or 5
    arrays, :func:`_full_order`): ``dur, res, kind, mb, chunk, stage, dep_ptr, dep_src,
    dep_dly`` (and the F&B pairs' ``pair`` with ``with_pairs``)."""
    p, m = sched.p, sched.m
    okind, omb, ochunk, opair, olen = _full_order(order, p)
    dF, dB, dW = _durations(sched, tf, tb, tw, sched.split_backward)
    visits = _visits(sched)
    dBW = (tb + tw) / visits
    dFB = (tf + tb + tw if tfb is None else tfb) / visits
    n_max = 3 * p * okind.shape[1]
    dur = np.empty(n_max)
    res, kind, mb, chunk, stage, pair = (np.empty(n_max, dtype=np.int64) for _ in range(6))
    dep_ptr = np.zeros(n_max + 1, dtype=np.int64)
    dep_src = np.empty(2 * n_max, dtype=np.int64)
    dep_dly = np.empty(2 * n_max)
    n, n_edges = _build_dag(p, m, visits, _placement(sched), okind, omb, ochunk, opair, olen,
                            dF, dB, dW, dBW, dFB, ld, lt, hol, dur, res, kind, mb, chunk, stage,
                            pair, dep_ptr, dep_src, dep_dly)
    out = (dur[:n], res[:n], kind[:n], mb[:n], chunk[:n], stage[:n], dep_ptr[: n + 1],
           dep_src[:n_edges], dep_dly[:n_edges])
    return (*out, pair[:n]) if with_pairs else out


def _dispatch(sched, tf, tb, tw, ld, lt, hol, warm, split, alternate, memory=None):
    p, m = sched.p, sched.m
    dF, dB, dW = _durations(sched, tf, tb, tw, split)
    n_per = m * (3 if split else 2)
    okind = np.empty((p, n_per), dtype=np.int64)
    omb = np.empty((p, n_per), dtype=np.int64)
    if warm is None:  # greedy: no memory cap, no forced warm-up
        w = np.full(p, m, dtype=np.int64)
        strict = False
    else:
        w = np.minimum(np.array(warm, dtype=np.int64), m)
        strict = True
    # The memory budget binds only when B and W are split (otherwise B frees what F held).
    budget = np.full(p, m if memory is None or not split else min(memory, m), dtype=np.int64)
    # times closer than eps count as equal (1e-9 of the shortest op)
    eps = 1e-9 * float(min(dF.min(), dB.min()))
    ostart = np.empty((p, n_per))
    # The zero-bubble kinds follow the Zero Bubble authors (a W only where it fits); greedy and
    # the re-plan follow the PipeMorph artifact's policies (any W fills any gap).
    fit_w = sched.kind in ("zb-h1", "zb-h2", "zb") and alternate
    done = _dispatch_kernel(p, m, w, budget, strict, alternate, fit_w, split, dF, dB, dW, ld, lt,
                            hol, eps, okind, omb, ostart)
    if done < p * n_per:  # pragma: no cover - guarded by tests; a bug if it ever fires
        raise RuntimeError(f"dispatcher stalled after {done} of {p * n_per} ops (warmups {warm})")
    return okind, omb, np.zeros((p, n_per), dtype=np.int64), ostart


@njit
def _dispatch_kernel(p, m, w, budget, strict, alternate, fit_w, split, dF, dB, dW, ld, lt, hol,
                     eps, okind, omb, ostart):  # pragma: no cover - compiled
    """Event-driven list scheduler; fills the per-stage orders, returns ops scheduled.

    At each step the stage that can start something earliest does so; at that moment it picks a
    B, else an F, else a W among the ops whose inputs are there. Ops on other stages start no
    earlier, and their outputs arrive later still, so the choice never misses an op that could
    have been ready (ties at equal times go to the lower stage). An F that would hold more than
    ``budget[s]`` micro-batches (F done, W not yet) is not eligible: the stage runs a W first.
    With ``fit_w`` a W placed in a gap must end before the next F or B can start; such a W may
    be placed at a time earlier than ops already placed on other stages, which is safe because
    nothing on another stage waits for a W.
    """
    n_per = okind.shape[1]
    inf = np.inf
    nf = np.zeros(p, dtype=np.int64)
    nb = np.zeros(p, dtype=np.int64)
    nw = np.zeros(p, dtype=np.int64)
    cnt = np.zeros(p, dtype=np.int64)
    free = np.zeros(p)
    f_arr = np.full((p, m), inf)
    f_arr[0, :] = 0.0
    b_arr = np.full((p, m), inf)
    b_fin = np.zeros((p, m))
    sfree = np.zeros((p, 2))
    total = p * n_per
    done = 0
    while done < total:
        best_t = inf
        best_s = -1
        best_k = -1
        for s in range(p):
            if cnt[s] == n_per:
                continue
            r_f = inf
            r_b = inf
            room = (nf[s] - nw[s] < budget[s]) if split else True
            if alternate:  # F/B in 1F1B order: w forwards, then B, F, B, F ..., then B's
                if nf[s] >= w[s] and (nb[s] == nf[s] - w[s] or nf[s] == m):
                    if nb[s] < m:
                        r_b = b_arr[s, nb[s]]
                elif room:
                    r_f = f_arr[s, nf[s]]
            else:
                if nf[s] < m and nf[s] - nb[s] < w[s] and room:
                    r_f = f_arr[s, nf[s]]
                if nb[s] < nf[s] and (not strict or nf[s] >= w[s]):
                    r_b = b_arr[s, nb[s]]
            r_w = inf
            if split and nw[s] < nb[s]:
                # Zero Bubble's rule (fit_w): a W goes where memory forces it, where it fits whole
                # before the next F or B can start, or in the tail. Otherwise (the artifact's
                # policies) any W fills any gap.
                nxt = min(r_f, r_b)
                forced = not room and nf[s] < m
                tail = nf[s] == m and nb[s] == m
                if (not fit_w or forced or tail
                        or (nxt < inf and max(free[s], b_fin[s, nw[s]]) + dW[s] <= nxt + eps)):
                    r_w = b_fin[s, nw[s]]
            r = min(r_f, min(r_b, r_w))
            if r == inf:
                continue
            t = max(free[s], r)
            # ``eps`` makes float ties (a tensor arriving "exactly" when the stage frees up)
            # behave like exact ties whatever the rounding: lower stage first, B before F.
            if t < best_t - eps:
                best_t = t
                best_s = s
                if r_b <= t + eps:
                    best_k = 1
                elif r_f <= t + eps:
                    best_k = 0
                else:
                    best_k = 2
        if best_s < 0:
            return done
        s = best_s
        t = best_t
        pos = cnt[s]
        if best_k == 0:
            j = nf[s]
            nf[s] += 1
            fin = t + dF[s]
            free[s] = fin
            if s < p - 1:
                f_arr[s + 1, j] = _send(fin, s, 0, s, ld, lt, hol, sfree, free)
            else:
                b_arr[s, j] = fin
        elif best_k == 1:
            j = nb[s]
            nb[s] += 1
            fin = t + dB[s]
            free[s] = fin
            b_fin[s, j] = fin
            if s > 0:
                b_arr[s - 1, j] = _send(fin, s, 1, s - 1, ld, lt, hol, sfree, free)
        else:
            j = nw[s]
            nw[s] += 1
            free[s] = t + dW[s]
        okind[s, pos] = best_k
        omb[s, pos] = j
        ostart[s, pos] = t
        cnt[s] += 1
        done += 1
    return done


@njit(inline="always")
def _send(fin, s, direction, link, ld, lt, hol, sfree, free):  # pragma: no cover - compiled
    """Arrival time of a tensor produced at ``fin`` on stage ``s``; updates busy times."""
    c = ld[link]
    tx = lt[link]
    if hol:  # the send sits on the GPU stream until it completes
        end = fin + tx + c
        free[s] = end
        return end
    if tx > 0.0:  # CPU sender: FIFO, busy for the transfer only
        st = max(fin, sfree[s, direction])
        sfree[s, direction] = st + tx
        return st + tx + c
    return fin + c


@njit
def _build_dag(p, m, div, place, okind, omb, ochunk, opair, olen, dF, dB, dW, dBW, dFB, ld, lt,
               hol, dur, res, kind, mb, chunk, stage, pair, dep_ptr, dep_src,
               dep_dly):  # pragma: no cover - compiled
    """Ops (compute + sends) and predecessor CSR for per-stage orders; returns (n, n_edges).

    Op ids follow each stage's order, each op's sends (activation, then gradient) right after
    it, so every resource's ops appear in run order (the engine's default sequence). The
    placement ``place`` and visits per stage ``div`` are those of :mod:`._replay`.
    """
    n_virt = n_virtual(place, p, div)
    n_cap = dur.size
    send_of = np.full((2, n_cap), -1, dtype=np.int64)  # an op's activation / gradient send
    link_of = np.full((2, n_cap), -1, dtype=np.int64)  # the link that tensor crosses
    prod = np.full(n_cap, -1, dtype=np.int64)  # the op a send carries the tensor of
    prod_f = np.full((n_virt, m), -1, dtype=np.int64)  # op of the forward (half) of (q, j)
    prod_b = np.full((n_virt, m), -1, dtype=np.int64)  # op of the backward (half) of (q, j)
    n = 0
    for s in range(p):
        for pos in range(olen[s]):
            k = okind[s, pos]
            c = ochunk[s, pos]
            j = omb[s, pos]
            q = virtual_stage(place, p, s, c)
            i = n
            n += 1
            kind[i] = k
            mb[i] = j
            chunk[i] = c
            stage[i] = s
            res[i] = s
            pair[i] = -1
            cb, jb, qb = c, j, q
            if k == 0:
                dur[i] = dF[s]
            elif k == 1:
                dur[i] = dB[s]
            elif k == 2:
                dur[i] = dW[s]
            elif k == 6:
                dur[i] = dBW[s]
            else:  # F&B
                dur[i] = dFB[s]
                cb = 1 - c
                jb = opair[s, pos]
                qb = virtual_stage(place, p, s, cb)
                pair[i] = jb
            if k == 0 or k == 5:
                prod_f[q, j] = i
            if k == 1 or k == 5 or k == 6:
                prod_b[qb, jb] = i
            for part in range(2):
                if part == 0:
                    if not ((k == 0 or k == 5) and q < n_virt - 1):
                        continue
                    to, _ = host(place, p, q + 1, c)
                    cs, js = c, j
                else:
                    if not ((k == 1 or k == 5 or k == 6) and qb > 0):
                        continue
                    to, _ = host(place, p, qb - 1, cb)
                    cs, js = cb, jb
                link = hop(place, p, s, to, part == 0)
                link_of[part, i] = link
                if link >= 0 and has_send(link, ld, lt, hol):
                    sid = n
                    n += 1
                    send_of[part, i] = sid
                    prod[sid] = i
                    kind[sid] = 3 + part
                    mb[sid] = js
                    chunk[sid] = cs
                    stage[sid] = s
                    pair[sid] = -1
                    res[sid] = s if hol else p + 2 * s + part
                    dur[sid] = lt[link] + ld[link] if hol else lt[link]
    # predecessors, in op id order so the CSR fills left to right
    e = 0
    for i in range(n):
        dep_ptr[i] = e
        k = kind[i]
        if k == 3 or k == 4:
            dep_src[e] = prod[i]
            dep_dly[e] = 0.0
            e += 1
            continue
        s = stage[i]
        q = virtual_stage(place, p, s, chunk[i])
        if k == 2:
            dep_src[e] = prod_b[q, mb[i]]
            dep_dly[e] = 0.0
            e += 1
            continue
        for part in range(2):
            src = -1
            if part == 0:  # the activation of an F (half)
                if (k == 0 or k == 5) and q > 0:
                    src = prod_f[q - 1, mb[i]]
            elif k == 1 or k == 5 or k == 6:  # the gradient of a backward (half)
                cb = 1 - chunk[i] if k == 5 else chunk[i]
                jb = pair[i] if k == 5 else mb[i]
                qb = virtual_stage(place, p, s, cb)
                if qb < n_virt - 1:
                    src = prod_b[qb + 1, jb]
                else:  # the last virtual stage starts its backward from its own F
                    dep_src[e] = prod_f[qb, jb]
                    dep_dly[e] = 0.0
                    e += 1
            if src >= 0:  # a tensor from another op: via its send op or straight with the delay
                link = link_of[part, src]
                sid = send_of[part, src]
                if sid >= 0:
                    dep_src[e] = sid
                    dep_dly[e] = 0.0 if hol else ld[link]
                else:
                    dep_src[e] = src
                    dep_dly[e] = ld[link] if link >= 0 else 0.0
                e += 1
    dep_ptr[n] = e
    return n, e


# the delay scan was called delay_sweep, easy to confuse with uneven.grid_sweep (one release)
__getattr__ = renamed_names(__name__, {"delay_sweep": "delay_scan", "DelaySweep": "DelayScan"})
