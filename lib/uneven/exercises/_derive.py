"""The "derive it" exercise kind: the student's function against the library's, on hidden inputs.

The student writes a small function (``copies(H, k)``, ``knee(delta, t_f, t_b)``). The checker
draws fresh valid inputs for every check (from the operating system's entropy unless a ``seed``
is given, and never one of the examples the page shows), calls the student's function on each
under a time limit, and compares with the library's own function. A table of right answers
cannot pass it, and neither can a scan: the inputs change from one check to the next.

What the student sees is one of: right; not right, with the first input where the function
disagrees and what it returned there (never the right value); a registered slip's hint, when the
function agrees with that slip on every input; or a format message (not a function, a wrong
number of arguments, a return value that is not a number, the placeholder, a call into the
library, an exception or a time-out, named by its type and the input that caused it, never as a
traceback).
"""

from __future__ import annotations

import inspect
import math
import signal
import sys
import threading
import time
import types
from contextlib import contextmanager
from numbers import Real

import numpy as np

from ..i18n import gettext as _

#: Most draws to find inputs that differ from the page's examples (they are few and drawn from
#: ranges of thousands of values, so this is never reached in practice).
_MAX_REJECTIONS = 1000


class _TimeUp(BaseException):
    # A BaseException, so that a student's `except Exception` does not swallow the time-out.
    pass


@contextmanager
def _deadline(seconds: float):
    """Raise :class:`_TimeUp` in the running code after ``seconds`` of wall time.

    In the main thread (a Jupyter kernel, otter's grader) a timer signal interrupts even a
    ``time.sleep``; it repeats every 50 ms so a bare ``except:`` cannot swallow it for good.
    Elsewhere a trace function checks the clock at every line of Python. Neither can stop a loop
    that swallows every exception with a bare ``except:`` and goes on: that one needs the
    kernel's interrupt button, as any endless cell does."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def alarm(signum, frame):
            raise _TimeUp

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    end = time.monotonic() + seconds

    def tracer(frame, event, arg):
        if time.monotonic() > end:
            raise _TimeUp
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def library_names(fn) -> list[str]:
    """Names the function (and any function defined inside it) looks up that resolve to this
    library: a derived formula that calls the library's own function proves nothing."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return []
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        names.update(c.co_freevars)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    scope = dict(getattr(fn, "__globals__", {}))
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    found = []
    for name in sorted(names):
        obj = scope.get(name)
        if obj is None:
            continue
        module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(
            obj, "__module__", "")
        if isinstance(module, str) and (module == "uneven" or module.startswith("uneven.")):
            found.append(name)
    return found


def arity_problem(fn, params: tuple[str, ...]) -> str | None:
    """Why ``fn`` cannot be called with one positional argument per parameter, or None."""
    if not callable(fn) or isinstance(fn, type):
        return _("is not a function")
    try:
        inspect.signature(fn).bind(*params)
    except TypeError:
        if len(params) == 1:
            return _("does not take one argument")
        return _("does not take {n} arguments").format(n=len(params))
    except ValueError:  # a builtin without a signature: try it when checking
        return None
    return None


def draw_inputs(draw, examples, n: int, seed) -> list[tuple]:
    """``n`` input tuples from ``draw(rng)``, none of them one of ``examples``."""
    rng = np.random.default_rng(seed)
    shown = {tuple(e) for e in examples}
    out: list[tuple] = []
    for _attempt in range(n * _MAX_REJECTIONS):
        args = tuple(_plain(a) for a in draw(rng))
        if args not in shown:
            out.append(args)
            if len(out) == n:
                return out
    raise RuntimeError("the draw keeps giving the page's examples")  # a bug in the exercise


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def show_args(params, args) -> str:
    return ", ".join(f"{p} = {_num(a)}" for p, a in zip(params, args, strict=True))


def _num(x) -> str:
    if isinstance(x, bool) or not isinstance(x, Real):
        return repr(x)
    return f"{x:.6g}"


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def run_student(fn, inputs: list[tuple], time_limit: float):
    """Call ``fn`` on every input under one time limit for them all.

    Returns ``("ok", values)``, or ``(problem, args, detail)`` for the first input that failed:
    ``"timeout"``, ``"raised"`` (detail: the exception), ``"placeholder"`` or ``"type"``
    (detail: what it returned)."""
    values: list[float] = []
    args: tuple = inputs[0]
    try:
        with _deadline(time_limit):
            for args in inputs:
                try:
                    got = fn(*args)
                except _TimeUp:
                    raise
                except Exception as err:  # the student's bug, reported as feedback
                    return ("raised", args, err)
                if got is Ellipsis:
                    return ("placeholder", args, got)
                got = _plain(got)
                if isinstance(got, np.ndarray) and got.size == 1:
                    got = got.item()
                if not isinstance(got, Real) or isinstance(got, bool):
                    return ("type", args, got)
                values.append(float(got))
    except _TimeUp:
        return ("timeout", args, None)
    return ("ok", values)


def agree(got: list[float], want: list[float], rtol: float, atol: float) -> int | None:
    """Index of the first input where ``got`` and ``want`` differ, or None if they agree."""
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not (math.isfinite(g) and _close(g, w, rtol, atol)):
            return i
    return None
