"""The "derive it" exercise kind, and answers typed in a near-miss form.

A function exercise is checked on inputs drawn afresh at each check: the right function passes,
each registered slip gets its own hint, a function that raises, hangs, returns the wrong type or
calls the library gets feedback (never a traceback), and the hidden inputs are never the ones
the page shows."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven.exercises import KINDS, _derive, check, exercise, register, registered

FUNCTION_KEYS = [k for k in registered() if exercise(k).kind == "function"]


def _worked(key):
    ex = exercise(key)
    scope = {"math": math}
    exec(f"def f({', '.join(ex.params)}):\n    return {ex.solution}", scope)  # noqa: S102
    return scope["f"]


def test_at_least_two_exercises_are_derive_it():
    assert {"01.1", "05.1"} <= set(FUNCTION_KEYS)


@pytest.mark.parametrize("key", FUNCTION_KEYS)
def test_the_worked_formula_passes_on_any_draw(key):
    for seed in range(5):
        fb = check(key, _worked(key), seed=seed)
        assert fb.ok and fb.message.startswith("✅ Right"), fb.message


@pytest.mark.parametrize("key", FUNCTION_KEYS)
def test_the_reference_is_the_library_and_agrees_with_the_formula(key):
    ex = exercise(key)
    assert ex.expected.__module__.startswith("uneven.exercises")
    f = _worked(key)
    for args in _derive.draw_inputs(ex.draw, ex.examples, 200, seed=1):
        assert math.isclose(f(*args), ex.expected(*args), rel_tol=1e-9, abs_tol=1e-12), args


@pytest.mark.parametrize("key", FUNCTION_KEYS)
def test_each_registered_slip_gets_its_own_hint(key):
    ex = exercise(key)
    assert ex.mistakes, f"{key} registers no slip"
    for wrong, message in ex.mistakes:
        fb = check(key, wrong, seed=3)
        assert not fb.ok and message in fb.message, (message, fb.message)
        others = [m for _, m in ex.mistakes if m != message]
        assert not any(m in fb.message for m in others)


@pytest.mark.parametrize("key", FUNCTION_KEYS)
def test_hidden_inputs_are_never_the_pages_and_change_per_check(key):
    ex = exercise(key)
    assert ex.examples, f"{key}: the page's examples are not registered"
    seen = set()
    for seed in range(200):
        inputs = _derive.draw_inputs(ex.draw, ex.examples, ex.n_draws, seed)
        assert not set(inputs) & set(ex.examples)
        seen.add(tuple(inputs))
    assert len(seen) == 200
    a = _derive.draw_inputs(ex.draw, ex.examples, ex.n_draws, None)
    b = _derive.draw_inputs(ex.draw, ex.examples, ex.n_draws, None)
    assert a != b  # without a seed every check draws anew


@pytest.mark.parametrize("key", FUNCTION_KEYS)
def test_a_table_of_the_pages_numbers_fails(key):
    ex = exercise(key)
    table = {tuple(e): ex.expected(*e) for e in ex.examples}

    def lookup(*args):
        return table.get(args, 1.0)

    assert not check(key, lookup).ok


def _feedback(fn, key="05.1"):
    fb = check(key, fn, seed=0)
    assert not fb.ok
    assert "Traceback" not in fb.message and "File " not in fb.message
    return fb.message


def test_a_raising_function_gets_its_error_and_the_input():
    msg = _feedback(lambda H, k: 1 / (H - H))
    assert "ZeroDivisionError" in msg and "H = " in msg and "k = " in msg


def _short_limit():
    # 05.1 with a 0.3 s limit: the same runner, a quicker test
    ex = exercise("05.1")
    register("t.hang", ex.expected, kind="function", params=ex.params, draw=ex.draw,
             examples=ex.examples, solution=ex.solution, time_limit=0.3)
    return "t.hang"


def test_a_hanging_function_is_stopped():
    def forever(H, k):
        while True:
            pass

    def sleeper(H, k):
        time.sleep(60)

    def stubborn(H, k):  # swallows Exception, not the time-out
        while True:
            try:
                sum(range(10**6))
            except Exception:
                pass

    assert "within 2 s" in _feedback(forever)  # the registered exercise's own limit
    key = _short_limit()
    for fn in (forever, sleeper, stubborn):
        t0 = time.monotonic()
        msg = _feedback(fn, key)
        assert "did not return within 0.3 s" in msg and time.monotonic() - t0 < 5


def test_a_hanging_function_is_stopped_off_the_main_thread():
    import threading

    out = {}

    def forever(H, k):
        while True:
            pass

    key = _short_limit()
    worker = threading.Thread(target=lambda: out.setdefault("fb", check(key, forever)))
    worker.start()
    worker.join(20)
    assert not worker.is_alive() and "did not return within" in out["fb"].message


def test_forms_of_a_function_answer():
    assert "placeholder" in check("05.1", lambda H, k: ...).message
    assert "2 arguments" in _feedback(lambda H: 1.0)
    assert "2 arguments" in _feedback(4.59)
    assert "return one number" in _feedback(lambda H, k: "many")
    assert "return one number" in _feedback(lambda H, k: [1.0, 2.0])
    assert "Not right yet" in _feedback(lambda H, k: float("nan"))
    assert check("05.1", lambda H, k: np.float64((H - 1) * (1 - (1 - 1 / H) ** k))).ok


def test_calling_the_library_is_named_not_graded():
    from uneven.ep import transport
    from uneven.ep.transport import expected_remote_hosts

    assert "uses the library" in _feedback(lambda H, k: expected_remote_hosts(k, H))
    assert "uses the library" in _feedback(lambda H, k: transport.expected_remote_hosts(k, H))
    assert "uses the library" in _feedback(lambda H, k: exercise("05.1").expected(H, k))


def test_the_wrong_value_is_shown_for_one_input_never_the_right_one():
    ex = exercise("05.1")
    msg = _feedback(lambda H, k: 2.0)
    inputs = _derive.draw_inputs(ex.draw, ex.examples, ex.n_draws, 0)
    right = ex.expected(*inputs[0])
    assert "returns 2" in msg and f"{right:.6g}" not in msg


def test_register_validates_the_function_fields():
    def draw(rng):
        return (1,)

    with pytest.raises(ValueError, match="params"):
        register("t.f", lambda x: x, kind="function", draw=draw, solution="x")
    with pytest.raises(ValueError, match="draw"):
        register("t.f", lambda x: x, kind="function", params=("x",), solution="x")
    with pytest.raises(ValueError, match="solution"):
        register("t.f", lambda x: x, kind="function", params=("x",), draw=draw)
    with pytest.raises(ValueError, match="examples"):
        register("t.f", lambda x: x, kind="function", params=("x",), draw=draw, solution="x",
                 examples=[(1, 2)])
    with pytest.raises(ValueError, match="kind 'function'"):
        register("t.f", lambda: 1.0, params=("x",))


# ---- near-miss forms: a message about the form, never "not right" ---------------------------

def _form_only(key, answer):
    fb = check(key, answer)
    assert not fb.ok and "Not right" not in fb.message, (key, answer, fb.message)
    return fb.message


def _example_of(kind, kinds=None):
    return next(k for k in registered() if exercise(k).kind == kind
                and (kinds is None or kinds(exercise(k).expected())))


def test_every_kind_has_near_miss_tests():
    assert set(KINDS) == {"number", "exact", "choice", "function"}


@pytest.mark.parametrize("key", [k for k in registered() if exercise(k).kind == "number"])
def test_a_number_typed_as_text_or_in_a_list_is_a_form_message(key):
    e = float(exercise(key).expected())
    for answer in (f"{e}", f" {e:g} ", [e], (e,)):
        assert "quotes" in _form_only(key, answer) or "list" in _form_only(key, answer)


@pytest.mark.parametrize("key", [k for k in registered() if exercise(k).kind == "exact"])
def test_an_exact_answer_in_the_wrong_form_is_a_form_message(key):
    e = exercise(key).expected()
    if isinstance(e, tuple):
        assert "quotes" in _form_only(key, ", ".join(map(str, e)))
        assert "quotes" in _form_only(key, str(e))
        assert "quotes" in _form_only(key, tuple(str(v) for v in e))
        assert "integers" in _form_only(key, e[0])
        assert check(key, list(e)).ok  # a list for a tuple means one thing
    elif isinstance(e, int):
        assert "quotes" in _form_only(key, str(e))
        assert "quotes" in _form_only(key, f" {e} ")
        assert _form_only(key, [e]) and _form_only(key, (e, e))
        assert check(key, float(e)).ok


@pytest.mark.parametrize("key", [k for k in registered() if exercise(k).kind == "choice"])
def test_letters_with_parentheses_or_spaces_are_read(key):
    e = exercise(key).expected()
    letters = [c.strip() for c in e.split(",")]
    for answer in ("(" + "), (".join(letters) + ")", " " + " ".join(letters).upper() + " ",
                   ") ".join(letters) + ")", "[" + ", ".join(letters) + "]"):
        assert check(key, answer).ok, answer
    assert "letters" in _form_only(key, 2)
    assert "letters" in _form_only(key, "the second one")


@given(st.one_of(st.text(max_size=12), st.integers(), st.floats(allow_nan=True),
                 st.lists(st.integers(), max_size=3)))
@settings(max_examples=150, deadline=None)
def test_nothing_typed_raises(answer):
    for key in ("01.2", "01.5", "01.4", "07.2", "05.1"):
        assert isinstance(check(key, answer, seed=0).message, str)
