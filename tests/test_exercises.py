"""The exercise checkers: right or not right, hints only for recognised mistakes, answers that
separate the regimes each question is about. Solutions are tested here, not in the notebooks."""

import importlib
import math
import pkgutil

import numpy as np
import pytest

from uneven import exercises
from uneven.exercises import check, exercise, register, registered

#: Each notebook's exercises module keeps its worked solutions and the answers of the
#: neighbouring regimes beside its checkers (``SOLUTIONS``, ``REGIME_NEIGHBOURS``).
MODULES = [importlib.import_module(f"uneven.exercises.{m.name}")
           for m in pkgutil.iter_modules(exercises.__path__) if m.name.startswith("nb")]
SOLUTIONS = {k: v for mod in MODULES for k, v in mod.SOLUTIONS.items()}
REGIME_NEIGHBOURS = {k: v for mod in MODULES for k, v in mod.REGIME_NEIGHBOURS.items()}


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_every_exercise_is_registered_and_has_a_solution(mod):
    nn = mod.__name__[-2:]
    keys = {k for k in registered() if k.startswith(f"{nn}.")}
    assert len(keys) >= 3 and keys == set(mod.SOLUTIONS), f"notebook {nn}: {sorted(keys)}"
    assert set(mod.REGIME_NEIGHBOURS) <= keys


@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solution_passes(key):
    fb = check(key, SOLUTIONS[key])
    assert fb.ok, f"{key}: {fb.message}"
    assert fb.message.startswith("✅ Right")


@pytest.mark.parametrize("key, wrong", [(k, v) for k, vs in REGIME_NEIGHBOURS.items() for v in vs])
def test_neighbouring_regimes_are_rejected(key, wrong):
    assert not check(key, wrong).ok


def _numeric_keys():
    return [k for k in registered() if exercise(k).kind == "number"]


@pytest.mark.parametrize("key", _numeric_keys())
def test_numeric_checkers_cannot_be_bisected(key):
    """Every wrong answer that is not a registered mistake gets the same reply, so a student
    cannot tell whether a guess is too high or too low."""
    ex = exercise(key)
    e = float(ex.expected())
    mistakes = [float(w(e)) for w, _ in ex.mistakes]

    def near_mistake(x):
        return any(math.isclose(x, m, rel_tol=max(ex.rtol, 1e-9), abs_tol=ex.atol)
                   for m in mistakes)

    probes = [e * f for f in (0.01, 0.3, 0.5, 0.77, 0.9, 1.1, 1.3, 1.9, 2.5, 7.0, 100.0)]
    probes += [e - 5 * max(ex.atol, 1e-9), e + 5 * max(ex.atol, 1e-9), -e, 0.0, 1e9]
    replies = {check(key, x).message for x in probes
               if not near_mistake(x) and not check(key, x).ok}
    assert len(replies) == 1, f"{key}: replies depend on the answer: {replies}"
    (reply,) = replies
    assert "too high" not in reply and "too low" not in reply
    for text in (f"{e:g}", f"{e:.0f}", f"{e:,.0f}", f"{e:.1f}"):
        if len(text) > 1:
            assert text not in reply, f"{key}: the reply shows the answer"


@pytest.mark.parametrize("key", registered())
def test_each_registered_mistake_triggers_only_its_own_hint(key):
    ex = exercise(key)
    if not ex.mistakes or ex.kind == "function":  # functions: tests/test_exercises_derive.py
        return
    e = ex.expected()
    for wrong, message in ex.mistakes:
        value = wrong if ex.kind == "choice" else wrong(e)
        fb = check(key, value)
        assert not fb.ok and message in fb.message
        if ex.kind == "number" and float(value) != 0:
            # half of "twice the answer" (or any other scaling of the slip) is not that slip
            other = float(e) * (float(e) / float(value))
            if not math.isclose(other, float(value), rel_tol=0.05):
                assert message not in check(key, other).message


def test_choice_checker_reads_letters_and_rejects_junk():
    register("t.choice", lambda: "a, c", kind="choice", options=("a", "b", "c"),
             mistakes=[("a", "one is missing")])
    assert check("t.choice", "c,a").ok and check("t.choice", "A C").ok
    assert "one is missing" in check("t.choice", "a").message
    assert not check("t.choice", "b").ok
    assert "letters" in check("t.choice", "z").message
    assert "letters" in check("t.choice", 3).message


def test_exact_checker_accepts_numpy_and_tuples():
    register("t.exact", lambda: (3, 2, 1), kind="exact",
             mistakes=[(lambda e: tuple(x + 1 for x in e), "off by one")])
    assert check("t.exact", np.array([3, 2, 1])).ok and check("t.exact", [3.0, 2, 1]).ok
    assert "off by one" in check("t.exact", (4, 3, 2)).message
    assert not check("t.exact", (1, 2, 3)).ok


def test_placeholders_and_bad_input():
    assert "placeholder" in check("01.2", ...).message
    assert "finite number" in check("01.2", "lots").message
    assert "finite number" in check("01.2", float("nan")).message
    with pytest.raises(ValueError, match="key"):
        check("nope", 1)
    with pytest.raises(ValueError, match="kind"):
        register("t.bad", lambda: 1, kind="essay")
    with pytest.raises(ValueError, match="options"):
        register("t.bad", lambda: "a", kind="choice")
