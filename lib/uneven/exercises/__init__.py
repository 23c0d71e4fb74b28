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
* ``"choice"``: one or more option letters (``"b"`` or ``"a, c"``), compared as a set;
* ``"function"`` ("derive it"): a function the student writes, called on inputs drawn afresh at
  every check and compared with the library's own function (see ``_derive``); no scan and no
  table of numbers can pass it.

An answer in a near-miss form gets a message about its form, never "not right": a number typed
as text (``"4"``), one number in a list, a tuple where one integer is asked, a function with the
wrong number of arguments. Forms that can mean only one thing are read as that thing: a list
for a tuple, ``"(b)"`` or ``" B "`` for ``b``.

Each notebook's exercises live in their own module (``uneven.exercises.nb01`` ...) and register
themselves when :func:`check` is first called.

>>> register("demo.1", lambda: 42.0, unit="s", mistakes=[(lambda e: 2 * e, "counted twice?")])
>>> check("demo.1", 42.01).ok
True
>>> print(check("demo.1", 84.0).message)
❌ Not right yet. counted twice?
>>> check("demo.1", 21.0).message == check("demo.1", 50.0).message  # no which-way clue
True
>>> print(check("demo.1", "42").message)
❌ That is text: write the number without quotes (42, not "42").

A "derive it" exercise compares a function with the library's on hidden inputs:

>>> register("demo.2", lambda h, k: h * k, kind="function", params=("h", "k"),
...          draw=lambda rng: (int(rng.integers(2, 9)), int(rng.integers(1, 9))),
...          examples=[(8, 8)], solution="h * k",
...          mistakes=[(lambda h, k: h + k, "add or multiply?")])
>>> check("demo.2", lambda h, k: k * h).ok
True
>>> print(check("demo.2", lambda h, k: h + k).message)
❌ Not right yet. add or multiply?
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real

from .._fields import Checked, flag, text
from ..i18n import gettext as _
from ._derive import agree, arity_problem, draw_inputs, library_names, run_student, show_args

__all__ = ["Feedback", "Exercise", "register", "check", "registered", "exercise", "KINDS"]

KINDS = ("number", "exact", "choice", "function")


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
    #: "function" kind: the argument names, a draw of one input tuple from a numpy Generator,
    #: the inputs the page shows (never drawn), the worked formula (a Python expression in the
    #: argument names), how many inputs a check tries and the time the student's function gets
    #: for all of them (s).
    params: tuple = ()
    draw: Callable | None = None
    examples: tuple = ()
    solution: str = ""
    n_draws: int = 12
    time_limit: float = 2.0

    def __post_init__(self):
        _check_fields(self.key, self.expected, self.kind, self.rtol, self.atol, self.unit,
                      self.options, self.mistakes, self.hint)
        object.__setattr__(self, "kind", self.kind.casefold())  # "NUMBER" is "number"
        _check_function_fields(self.kind, self.params, self.draw, self.examples, self.solution,
                               self.n_draws, self.time_limit)


def _show(value) -> str:
    from .._validate import _show as show

    return show(value)


def _check_fields(key, expected, kind, rtol, atol, unit, options, mistakes, hint) -> None:
    if not isinstance(key, str) or not key or len(key) > 100:
        raise ValueError(f"key must be a short non-empty string like '01.2'; got {_show(key)}")
    if not isinstance(kind, str) or kind.casefold() not in KINDS:
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


_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_function_fields(kind, params, draw, examples, solution, n_draws, time_limit) -> None:
    from .._validate import check_int, check_real

    check_int("n_draws", n_draws, lo=1, hi=1000)
    check_real("time_limit", time_limit, lo=0.01, hi=60.0)
    for name, value in (("params", params), ("examples", examples)):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"{name} must be a list or tuple; got {_show(value)}")
    if not isinstance(solution, str):
        raise ValueError(f"solution must be a string; got {_show(solution)}")
    if kind != "function":
        if params or draw is not None or examples or solution:
            raise ValueError("params, draw, examples and solution belong to kind 'function'; "
                             f"got them for kind {_show(kind)}")
        return
    if not params or not all(isinstance(p, str) and _PARAM.match(p) for p in params):
        raise ValueError("params must list the argument names of the function to write, e.g. "
                         f"('H', 'k'); got {_show(params)}")
    if not callable(draw):
        raise ValueError("draw must be a function of a numpy Generator that returns one input "
                         f"tuple; got {_show(draw)}")
    if not all(isinstance(e, (list, tuple)) and len(e) == len(params) for e in examples):
        raise ValueError(f"examples must be a list of {len(params)}-tuples (the inputs the page "
                         f"shows); got {_show(examples)}")
    if not solution.strip():
        raise ValueError("solution must be the worked formula, a Python expression in the "
                         f"arguments; got {_show(solution)}")


_REGISTRY: dict[str, Exercise] = {}


def register(key: str, expected: Callable, *, kind: str = "number", rtol: float = 0.02,
             atol: float = 0.0, unit: str = "", options: Sequence[str] = (),
             mistakes: Sequence = (), hint: str = "", params: Sequence[str] = (),
             draw: Callable | None = None, examples: Sequence = (), solution: str = "",
             n_draws: int = 12, time_limit: float = 2.0) -> None:
    """Register exercise ``key``; ``expected()`` computes the answer with the library.

    ``mistakes``: pairs ``(wrong, message)``, where ``wrong(expected)`` computes the value that
    one specific slip gives (for ``"choice"``, ``wrong`` is the wrong set of letters as a string).
    ``hint``: one sentence shown with *every* wrong answer (so it can point at the method, never
    at the value). ``options``: the letters of a choice exercise.

    ``kind="function"``: ``expected(*args)`` is the library's function of the arguments
    ``params``; ``draw(rng)`` returns one valid input tuple; ``examples`` are the inputs the page
    shows (never drawn); ``solution`` is the worked formula as an expression in ``params``; each
    mistake is ``(wrong(*args), message)``, the function one slip computes.
    """
    _check_fields(key, expected, kind, rtol, atol, unit, options, mistakes, hint)
    _check_function_fields(kind, params, draw, examples, solution, n_draws, time_limit)
    _REGISTRY[key] = Exercise(key, expected, kind, float(rtol), float(atol), unit,
                              tuple(options), tuple(mistakes), hint, tuple(params), draw,
                              tuple(tuple(e) for e in examples), solution, int(n_draws),
                              float(time_limit))


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


def _placeholder() -> Feedback:
    return Feedback(False, _("✏️ Replace the placeholder with your answer, then run the check."))


def check(key: str, answer, *, seed: int | None = None) -> Feedback:
    """Check ``answer`` for exercise ``key`` and return :class:`Feedback`.

    ``seed`` fixes the hidden inputs of a ``"function"`` exercise (for tests); by default every
    check draws new ones."""
    ex = exercise(key)
    if seed is not None:
        from .._validate import check_int

        seed = check_int("seed", seed, lo=0, hi=2**63 - 1)
    if answer is None or answer is ...:
        return _placeholder()
    if ex.kind == "function":
        return _check_function(ex, answer, seed)
    expected = ex.expected()
    if ex.kind == "number":
        return _check_number(ex, answer, expected)
    if ex.kind == "choice":
        return _check_choice(ex, answer, expected)
    return _check_exact(ex, answer, expected)


def _wrong(ex: Exercise, slip: str | None = None) -> Feedback:
    # A registered slip's message and the exercise's hint are English in the notebook's module
    # (registered once, at import); they are translated here, at check time, in the language
    # in force then.
    parts = [_("❌ Not right yet.")]
    if slip:
        parts.append(_(slip))
    if ex.hint:
        parts.append(_("Hint: {hint}").format(hint=_(ex.hint)))
    return Feedback(False, " ".join(parts))


def _right() -> Feedback:
    return Feedback(True, _("✅ Right."))


def _unit(ex: Exercise) -> str:
    return _(ex.unit, context="unit")


def _close(ex: Exercise, a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=ex.rtol, abs_tol=ex.atol)


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except (OverflowError, TypeError, ValueError):
        return False


def _as_number(text: str) -> float | None:
    try:
        value = float(text.strip().replace(",", "").replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _form(message: str) -> Feedback:
    return Feedback(False, "❌ " + message)


def _quoted(answer) -> Feedback | None:
    """A number typed as text, or one number in a list: say so (it is a form, not a value)."""
    if isinstance(answer, str) and _as_number(answer) is not None:
        return _form(_("That is text: write the number without quotes ({answer}, not "
                       "\"{answer}\").").format(answer=answer.strip()))
    if isinstance(answer, (list, tuple)) and len(answer) == 1:
        return _form(_("That is a list of one value: give the number itself, without "
                       "brackets."))
    return None


def _check_number(ex: Exercise, answer, expected) -> Feedback:
    if not isinstance(answer, Real) or isinstance(answer, bool) or not _finite(answer):
        near = _quoted(answer)
        if near is not None:
            return near
        if ex.unit:
            return Feedback(False, _("❌ Please give a single finite number (in {unit}).")
                            .format(unit=_unit(ex)))
        return Feedback(False, _("❌ Please give a single finite number."))
    answer = float(answer)
    if _close(ex, answer, expected):
        return _right()
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


def _exact_form(answer, want) -> Feedback | None:
    """A message about the answer's form when it is not the form of ``want`` (normalised)."""
    if isinstance(want, tuple):
        n = len(want)
        example = "(" + ", ".join(str(i + 1) for i in range(n)) + ")"
        if isinstance(answer, str):
            return _form(_("That is text: give {n} integers as a tuple, e.g. {example}, without "
                           "quotes.").format(n=n, example=example))
        if not isinstance(answer, tuple):
            return _form(_("Give {n} integers as a tuple, e.g. {example}.")
                         .format(n=n, example=example))
        if len(answer) != n:
            return _form(_("Give {n} integers, e.g. {example}; that has {got}.")
                         .format(n=n, example=example, got=len(answer)))
        if any(isinstance(a, str) for a in answer):
            return _form(_("Some of those are text: write the integers without quotes."))
        return None
    if isinstance(want, int):
        if isinstance(answer, str):
            return _quoted(answer) or _form(_("That is text: give one integer, without quotes."))
        if isinstance(answer, tuple):
            return _quoted(list(answer)) or _form(_("Give one integer, not a list of them."))
        return None
    if isinstance(want, str) and not isinstance(answer, str):
        return _form(_("Give the name as a string, in quotes."))
    return None


def _check_exact(ex: Exercise, answer, expected) -> Feedback:
    try:
        got = _normalise(answer)
    except TypeError:
        return _wrong(ex)
    want = _normalise(expected)
    near = _exact_form(got, want)
    if near is not None:
        return near
    if got == want:
        return _right()
    for wrong, message in ex.mistakes:
        if got == _normalise(wrong(expected)):
            return _wrong(ex, message)
    return _wrong(ex)


def _letters(value, options) -> frozenset | None:
    if not isinstance(value, str):
        return None
    # "(b)", "b)", "b." and "[a, c]" mean the letters themselves
    words = re.sub(r"[()\[\].;:,]", " ", value.lower()).split()
    picked = frozenset(words)
    if not picked or not picked <= set(options):
        return None
    return picked


def _check_choice(ex: Exercise, answer, expected) -> Feedback:
    got = _letters(answer, ex.options)
    if got is None:
        listed = ", ".join(repr(o) for o in ex.options)
        return Feedback(False, _("❌ Please answer with one or more of the letters {listed}, "
                                 "e.g. \"b\" or \"a, c\".").format(listed=listed))
    if got == _letters(expected, ex.options):
        return _right()
    for wrong, message in ex.mistakes:
        if got == _letters(wrong, ex.options):
            return _wrong(ex, message)
    return _wrong(ex)


def _check_function(ex: Exercise, fn, seed) -> Feedback:
    params = ", ".join(ex.params)
    problem = arity_problem(fn, ex.params)
    if problem:
        if len(ex.params) > 1:
            message = _("Please give a function of {n} arguments ({params}), e.g. "
                        "`def f({params}): return ...`; yours {problem}.")
        else:
            message = _("Please give a function of 1 argument ({params}), e.g. "
                        "`def f({params}): return ...`; yours {problem}.")
        return _form(message.format(n=len(ex.params), params=params, problem=problem))
    used = library_names(fn)
    if used:
        return _form(_("Your function uses the library ({names}): write the formula with plain "
                       "arithmetic (math and numpy are fine). The check compares with the "
                       "library's own function, so calling it shows nothing.")
                     .format(names=", ".join(used)))
    inputs = draw_inputs(ex.draw, ex.examples, ex.n_draws, seed)
    outcome = run_student(fn, inputs, ex.time_limit)
    if outcome[0] != "ok":
        what, args, detail = outcome
        where = show_args(ex.params, args)
        if what == "placeholder":
            return _placeholder()
        if what == "timeout":
            return _form(_("Your function did not return within {seconds} s (it was working on "
                           "{where}). Is there a loop that never ends?")
                         .format(seconds=f"{ex.time_limit:g}", where=where))
        if what == "raised":
            text = str(detail).strip()
            if text:
                message = _("Your function raised {error} for {where}: {text}.")
            else:
                message = _("Your function raised {error} for {where}.")
            return _form(message.format(error=type(detail).__name__, where=where,
                                        text=text[:200]))
        if ex.unit:
            message = _("Your function returned {value} for {where}: return one number "
                        "(in {unit}).")
        else:
            message = _("Your function returned {value} for {where}: return one number.")
        return _form(message.format(value=_show(detail), where=where, unit=_unit(ex)))
    got = outcome[1]
    want = [float(ex.expected(*args)) for args in inputs]
    bad = agree(got, want, ex.rtol, ex.atol)
    if bad is None:
        return Feedback(True, _("✅ Right, on {n} inputs drawn for this check.")
                        .format(n=len(inputs)))
    for wrong, message in ex.mistakes:
        slip = [float(wrong(*args)) for args in inputs]
        if agree(slip, want, ex.rtol, ex.atol) is not None and \
                agree(got, slip, ex.rtol, ex.atol) is None:
            return _wrong(ex, message)
    where = show_args(ex.params, inputs[bad])
    return _wrong(ex, _("For {where} your function returns {value}.")
                  .format(where=where, value=f"{got[bad]:.6g}"))


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
