"""Fuzz the whole public API: bad input must end in a clean, named error, never anything worse.

Every name in ``__all__`` of every public module of :mod:`uneven` is a target (classes bring their
constructor and their public methods), found at collection time by
:func:`_fuzz_worker.discover`: a new public function is fuzzed without anyone editing this file.
Each target is called from a recorded valid call (the library's doctests, replayed with recording
wrappers) with one or more parameters replaced by bad values chosen by the parameter's kind
(its default, annotation and name): negatives, zero, NaN, inf, huge integers such as 10**400,
bools, strings, None, complex numbers, empty, ragged and huge (zero-copy) arrays, wrong types,
objects of other public classes, and near-valid mutations of the valid value (negated, scaled by
10**6 or 10**300, cut short, transposed, retyped).

Calls run in a child process under a memory cap (``RLIMIT_AS``) with a per-call timeout, and the
library's own budgets (:mod:`uneven.limits`) set small, so every accepted call is quick. A call
passes if it returns a finite result (``inf``/``nan`` only where the docstring says so; never a
complex number) or raises ``ValueError``/``TypeError`` whose message names one of the call's
parameters. It fails on a crash (a signal), a hang, another exception type, an error that names
no parameter, a numpy warning (overflow, 0/0) or a non-finite result.

Two tests per target: ``test_every_family`` sends a fixed sweep of bad values to every parameter
(a rotating share of the sweep in the fast run, all of it with ``UNEVEN_FUZZ_FULL=1``), and
``test_random_bad_input`` lets hypothesis combine bad values over several parameters
(``UNEVEN_FUZZ_EXAMPLES`` examples per target). The fast run (``make test``) also caps each test
at ``UNEVEN_FUZZ_TEST_SECONDS`` (0.8 s), so slow figure recipes get fewer calls; ``make fuzz``
runs the full sweep and many more examples with no cap. The outcome table is printed at the end
of the session (``tests/conftest.py``; ``UNEVEN_FUZZ_REPORT=path`` also writes it as JSON).
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _fuzz_worker as fw  # noqa: E402

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("UNEVEN_FUZZ_EXAMPLES", "8"))
FULL = os.environ.get("UNEVEN_FUZZ_FULL", "0") not in ("", "0")
# Wall-clock seconds one test of the fast run may spend on one target (figure recipes cost tens
# of milliseconds a call); the full run has no such cap.
TEST_SECONDS = float(os.environ.get("UNEVEN_FUZZ_TEST_SECONDS", "inf" if FULL else "0.8"))
TIMEOUT = float(os.environ.get("UNEVEN_FUZZ_TIMEOUT", "30"))
# The library's budgets inside the fuzzed calls (small: every accepted call is quick) and the
# address-space cap of the child (the library must refuse before it gets near it).
CHILD_MAX_BYTES = os.environ.get("UNEVEN_FUZZ_MAX_BYTES", str(64 * 2**20))
CHILD_MAX_STEPS = os.environ.get("UNEVEN_FUZZ_MAX_STEPS", str(10**7))
MEM_CAP = int(os.environ.get("UNEVEN_FUZZ_MEM", str(3 * 2**30)))
WORKER = Path(__file__).resolve().parent / "_fuzz_worker.py"

TARGETS = fw.discover()
CLASS_NAMES = sorted({t.id.split(":")[1] for t in TARGETS if t.kind == "class"})

INF, NAN = math.inf, math.nan
SCALARS = [
    0, -1, 1, 3, 2**31, 2**63, -(2**63) - 1, 10**400, -(10**400), True, False, np.bool_(True),
    0.0, -0.0, 0.5, -1.5, 5e-324, 1e-300, 1e308, INF, -INF, NAN, 1 + 1j, complex(NAN, 0.0),
    np.float32(NAN), np.int64(-5), np.uint64(2**64 - 1), "", "x", "1", "nan", None, b"x",
]
CONTAINERS = [
    [], [[]], [[1, 2], [3]], [NAN], [INF, 1.0], [-1.0, 1.0], [10**400], [True, False],
    ["a", "b"], [None], [1 + 1j], (5,), (), (1, 2, 3), (2, 1), [0, 1], {}, {"x": 1},
    {"nic_up": NAN}, np.zeros(0), np.zeros((0, 3)), np.ones((2, 2, 2)), np.array([NAN]),
    np.array([-1]), np.array([2**62]), np.array(["a"]), np.array([1 + 1j]),
    np.array([1, 2], dtype=object), np.ones(3, dtype=np.float32), np.arange(4, dtype=np.uint8),
    np.eye(3),
]
SPECIAL = [
    ("@huge", (2**40,), 1.0), ("@huge", (10**5, 10**5), 1.0), ("@huge", (3 * 10**6,), 0.5),
    ("@object",), ("@callable", "none"), ("@callable", "raise"),
]
MUTATIONS = [("@mutate", how) for how in (
    "neg", "zero", "big", "huge", "tiny", "plus1", "minus1", "float", "str", "list", "nan",
    "drop", "dup", "T", "2d", "int32", "float32",
)]
POOL = [("@pool", name, k) for name in CLASS_NAMES for k in (0, 1)]
SWEEP = SCALARS + CONTAINERS + SPECIAL + MUTATIONS
# The fast run sends each parameter this many sweep values (rotating, so that over all
# parameters every value is used); the full run sends all of them.
FAST_SHARE = 16


class Zygote:
    """The capped worker process (see ``_fuzz_worker.py``) and the child of the current target."""

    def __init__(self, log_path: Path):
        self.ctrl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, UNEVEN_FUZZ_MEM=str(MEM_CAP), MPLBACKEND="Agg",
                   UNEVEN_FIGURES=str(log_path.parent / "figures"))
        env.pop("UNEVEN_MAX_BYTES", None)
        env.pop("UNEVEN_MAX_STEPS", None)
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(theirs.fileno())], pass_fds=[theirs.fileno()],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log,
            # in a scratch folder: a fuzzed path argument (an exporter's "x") lands there
            cwd=str(Path(log_path).parent),
        )
        theirs.close()
        ready = self._ctrl_recv(timeout=600)
        assert ready and ready[0] == "ready", f"fuzz worker did not start; see {log_path}"
        self.info = ready[1]
        self.sock = None
        self.pid = None

    def _ctrl_recv(self, timeout):
        r, _, _ = select.select([self.ctrl], [], [], timeout)
        if not r:
            return None
        data = self.ctrl.recv(1 << 22)
        return pickle.loads(data) if data else None

    def _open(self):
        mine, theirs = socket.socketpair()
        socket.send_fds(self.ctrl, [pickle.dumps(("open",))], [theirs.fileno()])
        theirs.close()
        reply = self._ctrl_recv(timeout=60)
        assert reply and reply[0] == "opened", "fuzz worker did not fork"
        self.pid = reply[1]
        self.sock = mine
        hello = fw.recv(mine)
        assert hello == ("pid", self.pid)
        # The library's budgets inside the child: small, so accepted calls are quick.
        fw.send(mine, ("env", CHILD_MAX_BYTES, CHILD_MAX_STEPS))

    def _end_child(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def _status(self):
        self.ctrl.send(pickle.dumps(("status", self.pid)))
        reply = self._ctrl_recv(timeout=60)
        return reply[1] if reply else None

    def call(self, tid, base, changes):
        """(category, detail, seconds) of one call; restarts the child after a crash or hang."""
        if self.sock is None:
            self._open()
        t0 = time.perf_counter()
        try:
            fw.send(self.sock, ("call", tid, base, changes))
        except (BrokenPipeError, ConnectionResetError):
            return self._died(t0)
        r, _, _ = select.select([self.sock], [], [], TIMEOUT)
        if not r:
            os.kill(self.pid, signal.SIGKILL)  # our own forked child, by its id
            self._status()
            self._end_child()
            return "hang", f"no answer within {TIMEOUT:g} s", time.perf_counter() - t0
        try:
            reply = fw.recv(self.sock)
        except (ConnectionResetError, pickle.UnpicklingError):
            reply = None
        if reply is None:
            return self._died(t0)
        return reply

    def _died(self, t0):
        sig = self._status()
        self._end_child()
        name = signal.Signals(sig).name if sig else "an exit"
        return "crash", f"the child died by {name}", time.perf_counter() - t0

    def next_target(self):
        self._end_child()

    def close(self):
        self._end_child()
        try:
            self.ctrl.send(pickle.dumps(("quit",)))
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    z = Zygote(tmp_path_factory.mktemp("fuzz") / "worker.log")
    yield z
    z.close()


def _record(target, category, detail, changes, failures, seconds=0.0):
    stats = fw.STATS.setdefault(target.short, {})
    stats[category] = stats.get(category, 0) + 1
    stats["seconds"] = stats.get("seconds", 0.0) + seconds
    if category in fw.FAILING:
        shown = {k: (v if len(repr(v)) < 80 else repr(v)[:77] + "...") for k, v in changes.items()}
        failures.append(f"{category}: {target.short}({shown}) -> {detail}")
        fw.FAILURES.append(failures[-1])


def _check(failures):
    if failures:
        head = "\n".join(failures[:12])
        more = f"\n... and {len(failures) - 12} more" if len(failures) > 12 else ""
        pytest.fail(f"{len(failures)} bad outcomes:\n{head}{more}", pytrace=False)


def _sweep_values(i):
    if FULL:
        return SWEEP + POOL
    n = len(SWEEP)
    picks = [SWEEP[(i * FAST_SHARE + j) % n] for j in range(FAST_SHARE)]
    return picks + [POOL[i % len(POOL)]] if POOL else picks


PARAM_INDEX = {}
for _t in TARGETS:
    for _name, _ in _t.params:
        PARAM_INDEX[(_t.id, _name)] = len(PARAM_INDEX)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.short)
def test_every_family(zygote, target):
    """A fixed sweep of bad values, one parameter at a time, from every recorded base call."""
    zygote.next_target()
    failures = []
    n_base = 3 if target.id in zygote.info["with_calls"] else 1
    params = [name for name, _ in target.params]
    if not params:  # nothing to vary: call it as it is
        for base in range(n_base):
            category, detail, secs = zygote.call(target.id, base, {})
            _record(target, category, detail, {}, failures, secs)
    # Value-major order: if the fast run's time cap stops the sweep, every parameter has had
    # the same share of it.
    sweeps = {name: _sweep_values(PARAM_INDEX[(target.id, name)]) for name in params}
    deadline = time.perf_counter() + TEST_SECONDS
    for k in range(max((len(v) for v in sweeps.values()), default=0)):
        if time.perf_counter() > deadline:
            break
        for name in params:
            if k >= len(sweeps[name]):
                continue
            changes = {name: sweeps[name][k]}
            category, detail, secs = zygote.call(target.id, k % n_base, changes)
            _record(target, category, detail, changes, failures, secs)
    _check(failures)


def _by_hint(hint):
    ints = st.one_of(st.integers(-(2**70), 2**70), st.integers(-3, 10**7),
                     st.sampled_from([0, -1, 2**63, 10**400, True]))
    floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.sampled_from([0.0, -0.0, 5e-324, 1e308, NAN, INF]))
    text = st.one_of(st.text(max_size=6), st.sampled_from(["", "x", "1F1B", "nan", "none"]))
    seqs = st.one_of(
        st.lists(st.one_of(st.integers(-5, 10**20), st.floats()), max_size=6),
        st.lists(st.lists(st.floats(allow_nan=True), max_size=3), max_size=3),
        st.tuples(st.floats(), st.floats()),
        arrays(dtype=st.sampled_from([np.float64, np.int64, np.float32, np.uint8, np.bool_,
                                      np.complex128]),
               shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
    )
    generic = st.one_of(st.sampled_from(SWEEP + POOL), st.none(), st.booleans(),
                        st.complex_numbers(allow_nan=True, allow_infinity=True),
                        st.dictionaries(st.text(max_size=8), st.floats(), max_size=3))
    own = {"int": ints, "float": floats, "str": text, "seq": seqs, "bool": st.booleans(),
           "dict": st.dictionaries(st.text(max_size=8), st.floats(), max_size=3)}.get(hint)
    mutated = st.sampled_from(MUTATIONS)
    parts = [mutated, generic, seqs, ints, floats]
    if own is not None:
        parts = [own, own, *parts]
    return st.one_of(*parts)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.short)
def test_random_bad_input(zygote, target):
    """Hypothesis combines bad values over one to three parameters per call."""
    zygote.next_target()
    failures = []
    params = list(target.params)
    deadline = time.perf_counter() + TEST_SECONDS

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not FULL,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        # Every example draws the same way whatever the clock says: a draw skipped on time
        # would make Hypothesis see a strategy that changes between runs (FlakyStrategyDefinition).
        base = data.draw(st.integers(0, 5), label="base")
        changes = {}
        if params:
            chosen = data.draw(st.lists(st.sampled_from(params), min_size=1, max_size=3,
                                        unique=True), label="params")
            for name, hint in chosen:
                changes[name] = data.draw(_by_hint(hint), label=name)
        if data.draw(st.integers(0, 19), label="extra") == 0:
            changes["**extra"] = {"not_a_parameter": 1}
        if time.perf_counter() > deadline:
            return
        category, detail, secs = zygote.call(target.id, base, changes)
        _record(target, category, detail, changes, failures, secs)

    run()
    _check(failures)


def test_discovery_finds_the_public_api():
    """The walk sees the engines, the schedulers and the notebooks' helpers, and every public
    module declares ``__all__`` (a module without it would escape the fuzz)."""
    ids = {t.id for t in TARGETS}
    for must in ("uneven.engines.fluid:simulate_fluid", "uneven.topology:Topology",
                 "uneven.topology:Topology.route", "uneven.schedulers.pipeline:simulate_pipeline",
                 "uneven.limits:check_bytes"):
        assert must in ids
    missing = []
    for m in fw.public_modules():
        public = [n for n, v in vars(m).items() if not n.startswith("_") and callable(v)
                  and getattr(v, "__module__", None) == m.__name__]
        if public and not hasattr(m, "__all__"):
            missing.append(m.__name__)
    assert not missing, f"public modules with public functions but no __all__: {missing}"
