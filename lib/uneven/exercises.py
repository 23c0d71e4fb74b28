"""Checkers for the notebooks' exercises: friendly feedback that never gives the answer away.

A student writes ``check("00.1", my_answer)``. The expected value is computed by the library at
check time (never stored as a constant), compared with a tolerance, and the reply says only whether
the answer is right, and if not, which way it is off and a hint about common slips (a unit, a
factor of two). Instructors can register more exercises with :func:`register`.

>>> register("demo.1", lambda: 42.0, unit="s", hint="think of the question")
>>> check("demo.1", 42.01).ok
True
>>> print(check("demo.1", 84.0).message)
... # doctest: +ELLIPSIS
❌ Not yet: your answer is too high. It is off by about a factor of 2: ...
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

__all__ = ["Feedback", "register", "check", "registered"]


@dataclass(frozen=True)
class Feedback:
    """Result of a check: ``ok`` and a message for the student."""

    ok: bool
    message: str

    def __repr__(self) -> str:
        return self.message

    def _repr_markdown_(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Exercise:
    expected: Callable
    rtol: float
    unit: str
    hint: str
    kind: str


_REGISTRY: dict[str, _Exercise] = {}


def register(key: str, expected: Callable, *, rtol: float = 0.02, unit: str = "",
             hint: str = "", kind: str = "number") -> None:
    """Register exercise ``key``; ``expected()`` computes the answer with the library.

    ``kind`` is ``"number"`` (compared with relative tolerance ``rtol``) or ``"exact"``
    (compared with ``==``, for integers, lists and names).
    """
    if kind not in ("number", "exact"):
        raise ValueError(f"kind must be 'number' or 'exact'; got {kind!r}")
    if not callable(expected):
        raise ValueError("expected must be a callable that computes the answer")
    _REGISTRY[key] = _Exercise(expected, float(rtol), unit, hint, kind)


def registered() -> list[str]:
    """Keys of every registered exercise."""
    _load_notebook_exercises()
    return sorted(_REGISTRY)


def check(key: str, answer) -> Feedback:
    """Check ``answer`` for exercise ``key`` and return :class:`Feedback`."""
    _load_notebook_exercises()
    if key not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"key must name a registered exercise ({known}); got {key!r}")
    ex = _REGISTRY[key]
    if answer is None or answer is ...:
        return Feedback(False, "✏️ Replace the placeholder with your answer, then run the check.")
    expected = ex.expected()
    if ex.kind == "exact":
        try:
            same = _normalise(answer) == _normalise(expected)
        except TypeError:
            same = False
        if same:
            return Feedback(True, "✅ Correct.")
        return Feedback(False, "❌ Not yet." + (f" Hint: {ex.hint}" if ex.hint else ""))
    if not isinstance(answer, Real) or isinstance(answer, bool) or not math.isfinite(answer):
        return Feedback(False, f"❌ Please give a single finite number{_unit(ex.unit)}.")
    answer = float(answer)
    if math.isclose(answer, expected, rel_tol=ex.rtol, abs_tol=1e-12):
        return Feedback(True, f"✅ Correct (within {ex.rtol:.0%}).")
    parts = ["❌ Not yet: your answer is too " + ("high." if answer > expected else "low.")]
    if expected != 0 and answer != 0:
        ratio = answer / expected
        for factor, why in ((1e3, "a unit slip (ms vs s, µs vs ms, MB vs GB)?"),
                            (1e6, "a unit slip (µs vs s, MB vs TB)?"),
                            (8.0, "bits vs bytes?"),
                            (2.0, "did you count something twice?")):
            if math.isclose(ratio, factor, rel_tol=0.05) or math.isclose(ratio, 1 / factor,
                                                                          rel_tol=0.05):
                parts.append(f"It is off by about a factor of {factor:g}: {why}")
                break
    if ex.hint:
        parts.append(f"Hint: {ex.hint}")
    return Feedback(False, " ".join(parts))


def _unit(unit: str) -> str:
    return f" (in {unit})" if unit else ""


def _normalise(value):
    if isinstance(value, (list, tuple)):
        return tuple(_normalise(v) for v in value)
    if hasattr(value, "tolist"):
        return _normalise(value.tolist())
    if isinstance(value, str):
        return value.strip().lower()
    return value


_LOADED = False


def _load_notebook_exercises() -> None:
    # Exercise definitions live next to the library they use; importing registers them.
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import _exercises_nb  # noqa: F401
