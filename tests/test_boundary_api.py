"""The public API at its boundary, found by the fuzzer's discovery (no list by hand): every
time, bandwidth or size parameter takes its value as a string with a unit and gives the same
answer, and every choice string is accepted in any case."""

from __future__ import annotations

import copy
import inspect
import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _fuzz_worker as fw  # noqa: E402

# parameter name -> (unit of the string we pass, factor from the SI value to that unit)
KINDS = (
    (re.compile(r"(t_[a-z]{1,3}|.*(delay|latency|jitter|transfer|duration|timeout).*)"),
     "ms", 1e3),
    (re.compile(r".*(_bw|bandwidth)"), "GB/s", 1e-9),
    (re.compile(r".*(_bytes|nbytes)"), "kB", 1e-3),
)


# Both tests on one pytest-xdist worker: the catalog runs every doctest (about a minute), once.
pytestmark = pytest.mark.xdist_group("boundary")


@pytest.fixture(scope="module")
def catalog():
    return fw.Catalog()


def _kind(name):
    for pattern, unit, factor in KINDS:
        if pattern.fullmatch(name):
            return unit, factor
    return None


def _as_text(value, unit, factor):
    if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple, np.ndarray)):
        return None
    if isinstance(value, (int, float)):
        return f"{float(value) * factor!r} {unit}" if math.isfinite(value) and value > 0 else None
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.dtype.kind not in "if" or not arr.size or arr.size > 64:
        return None
    return [f"{float(x) * factor!r} {unit}" for x in arr]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and (a.dtype.kind not in "fc" or np.allclose(
            a, b, rtol=1e-9, atol=1e-15, equal_nan=True)) and (
            a.dtype.kind in "fc" or np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return True  # figures, widgets, callables: not compared


def _calls(catalog):
    for tid, t in catalog.targets.items():
        if t.kind == "method" or tid.startswith("uneven.limits:"):
            continue  # (the budget checks take the library's own byte counts)
        obj = catalog.objects[tid]
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        for args, kwargs in catalog.calls[tid][:2]:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                continue
            yield tid, obj, sig, bound


def test_every_unit_parameter_takes_a_string_with_its_unit(catalog):
    problems, checked = [], 0
    for tid, obj, _sig, bound in _calls(catalog):
        for name, value in bound.arguments.items():
            kind = _kind(name)
            text = _as_text(value, *kind) if kind else None
            if text is None:
                continue
            if inspect.isclass(obj) and not isinstance(value, (int, float)):
                continue  # an array field of a result type: not a parameter anyone types
            changed = copy.copy(bound)
            changed.arguments = dict(bound.arguments, **{name: text})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    plain = obj(*bound.args, **bound.kwargs)
                except Exception:  # noqa: BLE001 - a recorded call that no longer runs
                    continue
                try:
                    got = obj(*changed.args, **changed.kwargs)
                except Exception as err:  # noqa: BLE001
                    problems.append(f"{tid}({name}={text!r}): {type(err).__name__}: "
                                    f"{str(err)[:120]}")
                    continue
            checked += 1
            if got is not None and not _same(plain, got):
                problems.append(f"{tid}({name}={text!r}): a different result than {value!r}")
    print(f"{checked} unit parameters checked")
    assert checked > 50
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(sorted(problems))


def test_every_choice_string_is_accepted_in_upper_case(catalog):
    problems, checked = [], 0
    for tid, obj, _sig, bound in _calls(catalog):
        for name, value in bound.arguments.items():
            if not isinstance(value, str) or value.upper() == value or len(value) > 40:
                continue
            changed = copy.copy(bound)
            changed.arguments = dict(bound.arguments, **{name: value.upper()})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    obj(*changed.args, **changed.kwargs)
                except ValueError as err:
                    if "must be one of" in str(err) or "choose" in str(err):
                        problems.append(f"{tid}({name}={value.upper()!r}): {str(err)[:120]}")
                except Exception:  # noqa: BLE001 - other failures are the fuzzer's business
                    pass
            checked += 1
    print(f"{checked} string parameters checked")
    assert checked > 20
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(sorted(problems))
