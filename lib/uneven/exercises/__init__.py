"""Checkers for the notebooks' exercises: right or not right, never which way.

A student writes ``check("01.2", my_answer)``. The expected value is computed by the library at
check time (never stored as a constant) and compared with a tolerance chosen to separate the
regimes the question is about. The reply says only whether the answer is right. A hint appears
only when the answer matches a *specific* mistake registered for that exercise (an exact factor
of 2, Gb/s read as GB/s, an off-by-one slackness): each such mistake is a value computed the
wrong way, and only an answer close to that value triggers its hint. So no sequence of tries can
home in on the answer: every other wrong answer gets the same reply.

Exercise kinds:

* ``"number"``: a finite number, right within ``rtol`` (relative) or ``atol`` (absolute);
* ``"exact"``: an integer, a tuple of integers or a name, compared exactly;
* ``"choice"``: one or more option letters (``"b"`` or ``"a, c"``), compared as a set.

Each notebook's exercises live in their own module (``uneven.exercises.nb01`` ...) and register
themselves when :func:`check` is first called.

>>> register("demo.1", lambda: 42.0, unit="s", mistakes=[(lambda e: 2 * e, "counted twice?")])
>>> check("demo.1", 42.01).ok
True
>>> print(check("demo.1", 84.0).message)
❌ Not right yet. counted twice?
>>> check("demo.1", 21.0).message == check("demo.1", 50.0).message  # no which-way clue
True
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real

from .._fields import Checked, flag, text

__all__ = ["Feedback", "Exercise", "register", "check", "registered", "exercise", "KINDS"]

KINDS = ("number", "exact", "choice")
_WRONG = "❌ Not right yet."


@dataclass(frozen=True)
class Feedback(Checked):
    """Result of a check: ``ok`` and a message for the student."""

    ok: bool = flag()
    message: str = text()

    def __repr__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:
        return self.message


@dataclass(frozen=True)
class Exercise:
    """A registered exercise (see :func:`register`)."""

    key: str
    expected: Callable
    kind: str
    rtol: float
    atol: float
    unit: str
    options: tuple
    mistakes: tuple = field(default=())
    hint: str = ""

    def __post_init__(self):
        _check_fields(self.key, self.expected, self.kind, self.rtol, self.atol, self.unit,
                      self.options, self.mistakes, self.hint)


def _show(value) -> str:
    from .._validate import _show as show

    return show(value)


def _check_fields(key, expected, kind, rtol, atol, unit, options, mistakes, hint) -> None:
    if not isinstance(key, str) or not key or len(key) > 100:
        raise ValueError(f"key must be a short non-empty string like '01.2'; got {_show(key)}")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {_show(kind)}")
    if not callable(expected):
        raise ValueError(f"expected must be a callable that computes the answer; got "
                         f"{type(expected).__name__}")
    from .._validate import check_real

    for name, tol in (("rtol", rtol), ("atol", atol)):
        check_real(name, tol, lo=0.0)
    for name, value in (("unit", unit), ("hint", hint)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string; got {_show(value)}")
    if isinstance(options, str) or not isinstance(options, (list, tuple)) or not all(
        isinstance(o, str) and o for o in options
    ):
        raise ValueError(f"options must be a list of option letters; got {_show(options)}")
    if kind == "choice" and not options:
        raise ValueError("options must list the letters of a choice exercise; got none")
    if isinstance(mistakes, str) or not isinstance(mistakes, (list, tuple)) or not all(
        isinstance(m, (list, tuple)) and len(m) == 2 and isinstance(m[1], str)
        and (callable(m[0]) or isinstance(m[0], str)) for m in mistakes
    ):
        raise ValueError("mistakes must be a list of (wrong value function or letters, message) "
                         f"pairs; got {_show(mistakes)}")


_REGISTRY: dict[str, Exercise] = {}


def register(key: str, expected: Callable, *, kind: str = "number", rtol: float = 0.02,
             atol: float = 0.0, unit: str = "", options: Sequence[str] = (),
             mistakes: Sequence = (), hint: str = "") -> None:
    """Register exercise ``key``; ``expected()`` computes the answer with the library.

    ``mistakes``: pairs ``(wrong, message)``, where ``wrong(expected)`` computes the value that
    one specific slip gives (for ``"choice"``, ``wrong`` is the wrong set of letters as a string).
    ``hint``: one sentence shown with *every* wrong answer (so it can point at the method, never
    at the value). ``options``: the letters of a choice exercise.
    """
    _check_fields(key, expected, kind, rtol, atol, unit, options, mistakes, hint)
    _REGISTRY[key] = Exercise(key, expected, kind, float(rtol), float(atol), unit,
                              tuple(options), tuple(mistakes), hint)


def registered() -> list[str]:
    """Keys of every registered exercise."""
    _load_notebook_exercises()
    return sorted(_REGISTRY)


def exercise(key: str) -> Exercise:
    """The registered :class:`Exercise` called ``key`` (for tests and the classroom build)."""
    _load_notebook_exercises()
    if not isinstance(key, str) or key not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"key must name a registered exercise ({known}); got {_show(key)}")
    return _REGISTRY[key]


def check(key: str, answer) -> Feedback:
    """Check ``answer`` for exercise ``key`` and return :class:`Feedback`."""
    ex = exercise(key)
    if answer is None or answer is ...:
        return Feedback(False, "✏️ Replace the placeholder with your answer, then run the check.")
    expected = ex.expected()
    if ex.kind == "number":
        return _check_number(ex, answer, expected)
    if ex.kind == "choice":
        return _check_choice(ex, answer, expected)
    return _check_exact(ex, answer, expected)


def _wrong(ex: Exercise, slip: str | None = None) -> Feedback:
    parts = [_WRONG]
    if slip:
        parts.append(slip)
    if ex.hint:
        parts.append(f"Hint: {ex.hint}")
    return Feedback(False, " ".join(parts))


def _close(ex: Exercise, a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=ex.rtol, abs_tol=ex.atol)


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except (OverflowError, TypeError, ValueError):
        return False


def _check_number(ex: Exercise, answer, expected) -> Feedback:
    if not isinstance(answer, Real) or isinstance(answer, bool) or not _finite(answer):
        unit = f" (in {ex.unit})" if ex.unit else ""
        return Feedback(False, f"❌ Please give a single finite number{unit}.")
    answer = float(answer)
    if _close(ex, answer, expected):
        return Feedback(True, "✅ Right.")
    for wrong, message in ex.mistakes:
        value = float(wrong(expected))
        if not _close(ex, value, expected) and _close(ex, answer, value):
            return _wrong(ex, message)
    return _wrong(ex)


def _normalise(value, depth=0):
    if depth > 20:
        raise TypeError("answer is nested too deeply")
    if isinstance(value, (list, tuple)):
        if len(value) > 10_000:
            raise TypeError("answer is too long")
        return tuple(_normalise(v, depth + 1) for v in value)
    if hasattr(value, "tolist") and getattr(value, "size", 0) <= 10_000:
        return _normalise(value.tolist(), depth + 1)
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, Real) and _finite(value) and float(value).is_integer():
        return int(value)
    return value


def _check_exact(ex: Exercise, answer, expected) -> Feedback:
    try:
        got = _normalise(answer)
    except TypeError:
        return _wrong(ex)
    if got == _normalise(expected):
        return Feedback(True, "✅ Right.")
    for wrong, message in ex.mistakes:
        if got == _normalise(wrong(expected)):
            return _wrong(ex, message)
    return _wrong(ex)


def _letters(value, options) -> frozenset | None:
    if not isinstance(value, str):
        return None
    picked = frozenset(c for c in value.lower().replace(",", " ").split())
    if not picked or not picked <= set(options):
        return None
    return picked


def _check_choice(ex: Exercise, answer, expected) -> Feedback:
    got = _letters(answer, ex.options)
    if got is None:
        listed = ", ".join(repr(o) for o in ex.options)
        return Feedback(False, f"❌ Please answer with one or more of the letters {listed}, "
                               "e.g. \"b\" or \"a, c\".")
    if got == _letters(expected, ex.options):
        return Feedback(True, "✅ Right.")
    for wrong, message in ex.mistakes:
        if got == _letters(wrong, ex.options):
            return _wrong(ex, message)
    return _wrong(ex)


_LOADED = False


def _load_notebook_exercises() -> None:
    # Each notebook's exercises sit in a module of this package; importing one registers them.
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("nb"):
            importlib.import_module(f"{__name__}.{info.name}")
