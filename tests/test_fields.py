"""Field specs (uneven._fields) on function arguments: @arguments checks each named parameter with
the spec a result type would use for a field, hands the function the checked value, and every
refusal names the parameter. Also explorers._common.handed_on, for arguments passed on as they are.
"""

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from uneven._fields import (
    arguments,
    array,
    instance,
    integer,
    items,
    named,
    namespace,
    real,
)
from uneven.explorers._common import handed_on


@arguments(n=integer(lo=1, hi=10), xs=array(shape=("n",), lo=0.0, max_size=10),
           scale=real(lo=0.0, lo_open=True, unit="s"))
def _weighted(n, xs, scale=1.0):
    return float(xs.sum() * scale), xs


def test_arguments_hand_on_the_checked_values_and_keep_the_signature():
    total, xs = _weighted(3, [1, 2, 3])
    assert total == 6.0 and xs.dtype == np.float64 and not xs.flags.writeable
    assert list(inspect.signature(_weighted).parameters) == ["n", "xs", "scale"]
    assert _weighted(2, np.array([0.5, 0.5]), scale=4)[0] == 4.0


@pytest.mark.parametrize("call, name", [
    (lambda: _weighted(0, []), "n"),
    (lambda: _weighted(2, [1.0]), "xs"),  # the shape names the other parameter
    (lambda: _weighted(2, [1.0, -1.0]), "xs"),
    (lambda: _weighted(1, [1.0], scale=0.0), "scale"),
    (lambda: _weighted(1, np.ones(11)), "xs"),  # max_size
])
def test_every_refusal_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


@given(st.integers(-100, 100))
def test_integer_bounds_hold_exactly(n):
    if 1 <= n <= 10:
        assert _weighted(n, [1.0] * n)[0] == n
    else:
        with pytest.raises(ValueError, match="^n must be an integer"):
            _weighted(n, [1.0] * max(n, 0))


@arguments(rows=items(real(lo=0.0), lo=2, hi=3), runs=named(instance(SimpleNamespace)),
           summary=namespace("cut", made_by="a section run"))
def _collections(rows, runs, summary):
    return rows, runs


def test_items_named_and_namespace():
    rows, runs = _collections([1, 2.5], {"a": SimpleNamespace()}, SimpleNamespace(cut=0.1))
    assert rows == (1.0, 2.5) and list(runs) == ["a"]
    good = dict(rows=[1, 2], runs={"a": SimpleNamespace()}, summary=SimpleNamespace(cut=0))
    for change, message in [
        (dict(rows=[1]), r"^rows must be a list or tuple of 2 to 3 entries"),
        (dict(rows=[1, -2]), r"^rows\[1\] must be"),
        (dict(runs={"a": 1}), r"^runs\['a'\] must be"),
        (dict(runs={1: SimpleNamespace()}), r"^a key of runs must be"),
        (dict(summary=SimpleNamespace()), r"^summary must be what a section run returns"),
    ]:
        with pytest.raises(ValueError, match=message):
            _collections(**{**good, **change})


def test_a_spec_for_a_missing_parameter_is_an_error_at_definition():
    with pytest.raises(TypeError, match="no parameters"):
        arguments(m=integer())(lambda n: n)


def test_handed_on_names_the_argument_once():
    with pytest.raises(ValueError, match=r"^together: assignment must"):
        with handed_on("together"):
            raise ValueError("assignment must be a list")
    with pytest.raises(ValueError, match=r"^expert_ids must"):
        with handed_on("expert_ids"):  # already named: unchanged
            raise ValueError("expert_ids must be integers")
