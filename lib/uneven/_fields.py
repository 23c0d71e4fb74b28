"""Checked fields for the library's frozen dataclasses (private).

A result or setting type declares what each field must be next to the field itself, and one
shared check (:func:`check_fields`, run by :class:`Checked`'s ``__post_init__``) enforces it when
the object is built directly or by ``dataclasses.replace``, with the messages of
:mod:`uneven._validate` (they name the field, show the value and say what is accepted). The
library's own results skip it through :func:`uneven._validate.trusted`. A type whose fields also
constrain each other (one must divide another, a sum must match) adds those few lines to its own
``__post_init__`` after calling :func:`check_fields`.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo(Checked):
...     n: int = integer(lo=1)
...     load: object = array(shape=("n",), lo=0.0)
...     unit: str = choice(("s", "ms"), default="s")
>>> Demo(2, [1.0, 2.0]).load.tolist()
[1.0, 2.0]
>>> Demo(3, [1.0, 2.0])
Traceback (most recent call last):
...
ValueError: load must have shape (3,); got (2,)
>>> Demo(0, [])
Traceback (most recent call last):
...
ValueError: n must be an integer >= 1; got 0

Shapes name dimensions: an entry that is the name of an integer field takes its value; any other
name is bound by the first array that uses it (``shape=("n", "n")`` is square, a later
``shape=("n",)`` must match); a callable ``shape(obj)`` gives the whole shape. Bounds may be
numbers, the name of an earlier field, or a callable ``bound(obj)``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from types import SimpleNamespace

import numpy as np

from ._validate import (
    _check_shape,
    _show,
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_mapping,
    check_real,
    check_str,
    frozen_array,
)

__all__ = ["Checked", "check_fields", "arguments", "real", "integer", "choice", "text", "flag",
           "instance", "array", "strings", "mapping", "per_key", "items", "named", "namespace",
           "any_value", "function", "optional", "graph", "recorded"]

_KEY = "uneven.check"


def _spec(kind: str, field_kw: dict, **kw):
    meta = dict(field_kw.pop("metadata", None) or {})
    meta[_KEY] = (kind, kw)
    return dataclasses.field(metadata=meta, **field_kw)


def real(lo=None, hi=None, *, lo_open=False, hi_open=False, unit="", **field_kw):
    """A finite real number in ``[lo, hi]`` (open ends on request), as ``float``."""
    return _spec("real", field_kw, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, unit=unit)


def integer(lo=None, hi=None, *, unit="", **field_kw):
    """An integer in ``[lo, hi]`` (never a bool), as ``int``; with a ``unit`` ("bytes") also a
    string such as ``"7 KB"``."""
    return _spec("integer", field_kw, lo=lo, hi=hi, unit=unit)


def choice(choices, **field_kw):
    """One of ``choices`` (a tuple, or a callable giving one when checked)."""
    return _spec("choice", field_kw, choices=choices)


def text(max_len: int = 10_000, **field_kw):
    """A string of at most ``max_len`` characters."""
    return _spec("text", field_kw, max_len=max_len)


def flag(**field_kw):
    """True or False."""
    return _spec("flag", field_kw)


def instance(cls, hint: str = "", **field_kw):
    """An instance of ``cls``: a class, or ``"module:Name"`` imported when first checked (for a
    class defined later or in a module that imports this one)."""
    return _spec("instance", field_kw, cls=cls, hint=hint)


def array(dtype: str = "float", *, ndim=None, shape=None, lo=None, hi=None, allow_nan=False,
          nonempty=False, max_size=None, **field_kw):
    """A read-only array (:func:`uneven._validate.frozen_array`): ``dtype`` "float", "int" or
    "bool"; ``shape`` of ints, ``None`` (any), dimension names or a callable; entries in
    ``[lo, hi]``; at least one entry if ``nonempty``, at most ``max_size``."""
    return _spec("array", field_kw, dtype=dtype, ndim=ndim, shape=shape, lo=lo, hi=hi,
                 allow_nan=allow_nan, nonempty=nonempty, max_size=max_size)


def strings(**field_kw):
    """A tuple of strings."""
    return _spec("strings", field_kw)


def mapping(json=False, **field_kw):
    """A dict (copied); with ``json=True`` one that JSON can write (finite numbers, strings,
    lists, dicts)."""
    return _spec("mapping", field_kw, json=json)


def function(hint: str = "", **field_kw):
    """A callable (``hint`` says what it is called with)."""
    return _spec("function", field_kw, hint=hint)


def optional(spec, **field_kw):
    """``None``, or a value that ``spec`` (another spec, e.g. ``array("int")``) accepts."""
    return _spec("optional", field_kw, item=spec.metadata[_KEY])


def graph(ops, src: str = "dep_src", **field_kw):
    """On a ``dep_ptr`` field: ``None`` (with field ``src`` ``None``), or the predecessor CSR
    ``(dep_ptr, field src)`` of ``ops`` ops (an int, a field name or a callable), both checked
    by :func:`uneven.engines.timeline.check_csr` and stored read-only."""
    return _spec("graph", field_kw, ops=ops, src=src)


def recorded(keys=(), ops=None, **field_kw):
    """``None``, or a result's record of its run: a dict of per-op ``start``, ``finish``,
    ``resource``, ``dep_ptr``, ``dep_src`` and ``keys``, for ``ops`` ops (``None``: any), checked
    by :func:`uneven.engines.timeline.check_recorded`."""
    return _spec("recorded", field_kw, keys=tuple(keys), ops=ops)


def per_key(keys, item, **field_kw):
    """A dict with exactly the keys ``keys`` (a tuple, or a callable giving one), each value
    checked by ``item`` (another spec, e.g. ``real(lo=0.0)``). The values of one dict share
    their dimension names, so ``per_key(("s", "y"), array(shape=("n",)))`` gives ``s`` and ``y``
    one length; each dict of a nested ``per_key`` has its own."""
    return _spec("per_key", field_kw, keys=keys, item=item.metadata[_KEY])


def items(item, lo: int = 1, hi: int = 4096, **field_kw):
    """A list or tuple of ``lo`` to ``hi`` entries, each checked by ``item`` (another spec), as a
    tuple."""
    return _spec("items", field_kw, item=item.metadata[_KEY], lo=lo, hi=hi)


def named(item, lo: int = 1, hi: int = 64, **field_kw):
    """A dict of ``lo`` to ``hi`` entries with string keys (labels), each value checked by
    ``item`` (another spec)."""
    return _spec("named", field_kw, item=item.metadata[_KEY], lo=lo, hi=hi)


def namespace(*attrs, made_by: str = "", **field_kw):
    """What a function of the library returns as a namespace (``made_by``): an object with the
    attributes ``attrs``."""
    return _spec("namespace", field_kw, attrs=attrs, made_by=made_by)


def any_value(**field_kw):
    """Documented but not checked (a callable, a dict of results checked by its owner ...)."""
    return _spec("any", field_kw)


# --------------------------------------------------------------------------------------------


def _resolve(obj, value):
    if callable(value) and not isinstance(value, type):
        return value(obj)
    if isinstance(value, str):
        return getattr(obj, value)
    return value


def _real(obj, name, value, dims, *, lo, hi, lo_open, hi_open, unit):
    return check_real(name, value, lo=_resolve(obj, lo), hi=_resolve(obj, hi), lo_open=lo_open,
                      hi_open=hi_open, unit=unit)


def _integer(obj, name, value, dims, *, lo, hi, unit=""):
    return check_int(name, value, lo=_resolve(obj, lo), hi=_resolve(obj, hi), unit=unit)


def _choice(obj, name, value, dims, *, choices):
    return check_choice(name, value, choices() if callable(choices) else choices)


def _text(obj, name, value, dims, *, max_len):
    return check_str(name, value, max_len=max_len)


def _flag(obj, name, value, dims):
    return check_bool(name, value)


def _class(cls):
    if isinstance(cls, str):
        module, _, attr = cls.partition(":")
        return getattr(importlib.import_module(module), attr)
    return cls


def _instance(obj, name, value, dims, *, cls, hint):
    return check_instance(name, value, _class(cls), hint)


def _shape(obj, name, shape, dims, arr):
    """The wanted shape, dimension names resolved (an unbound name is bound to ``arr``'s)."""
    if callable(shape):
        return tuple(shape(obj))
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, str):
            if d in dims:
                d = dims[d]
            elif d in dims["__fields__"]:
                d = getattr(obj, d)
            else:
                dims[d] = arr.shape[i] if i < arr.ndim else None
                d = dims[d]
        out.append(d)
    return tuple(out)


def _array(obj, name, value, dims, *, dtype, ndim, shape, lo, hi, allow_nan, nonempty,
           max_size):
    if max_size is not None and isinstance(value, np.ndarray) and value.size > max_size:
        raise ValueError(f"{name} must have at most {max_size} entries; got {value.size}")
    low = _resolve(obj, lo)
    each = isinstance(low, np.ndarray)  # another field's array: a bound entry by entry
    arr = frozen_array(name, value, dtype=dtype, ndim=ndim if shape is None else None,
                       lo=None if each else low, allow_nan=allow_nan)
    if shape is not None:
        _check_shape(name, arr, None, _shape(obj, name, shape, dims, arr))
    if each and np.any(arr < low):
        i = int(np.argmax(arr < low))
        raise ValueError(f"{name} must be >= {lo} entry by entry; entry {i} is {arr[i]} < "
                         f"{low[i]}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must have at least one entry; got an empty array")
    if max_size is not None and arr.size > max_size:
        raise ValueError(f"{name} must have at most {max_size} entries; got {arr.size}")
    hi = _resolve(obj, hi)
    if hi is not None and arr.size:
        top = arr[arr == arr].max() if allow_nan else arr.max()
        if top > hi:
            raise ValueError(f"{name} must have every entry <= {hi}; largest entry is {top}")
    return arr


def _strings(obj, name, value, dims):
    if not isinstance(value, tuple) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"{name} must be a tuple of strings; got {_show(value)}")
    return value


def _mapping(obj, name, value, dims, *, json=False):
    out = dict(check_mapping(name, value))
    if json:
        import json as _json

        try:
            _json.dumps(out, allow_nan=False)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a dict that JSON can write (str, finite numbers, "
                             f"lists, dicts); got {_show(out)}") from None
    return out


def _function(obj, name, value, dims, *, hint):
    if not callable(value):
        raise ValueError(f"{name} must be a callable{f' ({hint})' if hint else ''}; got "
                         f"{_show(value)}")
    return value


def _optional(obj, name, value, dims, *, item):
    kind, kw = item
    return None if value is None else _CHECKS[kind](obj, name, value, dims, **kw)


def _graph(obj, name, value, dims, *, ops, src):
    from .engines.timeline import check_csr

    n = _resolve(obj, ops)
    ptr, s = check_csr(n, value, getattr(obj, src), (name, src))
    for a in (ptr, s):
        if a is not None:
            a.flags.writeable = False
    object.__setattr__(obj, src, s)
    return ptr


def _recorded(obj, name, value, dims, *, keys, ops):
    from .engines.timeline import check_recorded

    return check_recorded(name, value, _resolve(obj, ops), keys)


def _per_key(obj, name, value, dims, *, keys, item):
    keys = tuple(keys() if callable(keys) else keys)
    if not isinstance(value, dict) or set(value) != set(keys):
        raise ValueError(f"{name} must be a dict with the keys {keys}; got {_show(value)}")
    kind, kw = item
    inner = {"__fields__": frozenset()}  # one set of dimension names per dict
    return {k: _CHECKS[kind](obj, f"{name}[{k!r}]", value[k], inner, **kw) for k in keys}


def _items(obj, name, value, dims, *, item, lo, hi):
    if not isinstance(value, (list, tuple)) or not lo <= len(value) <= hi:
        raise ValueError(f"{name} must be a list or tuple of {lo} to {hi} entries; got "
                         f"{_show(value)}")
    kind, kw = item
    return tuple(_CHECKS[kind](obj, f"{name}[{i}]", v, {"__fields__": frozenset()}, **kw)
                 for i, v in enumerate(value))


def _named(obj, name, value, dims, *, item, lo, hi):
    if not isinstance(value, dict) or not lo <= len(value) <= hi:
        raise ValueError(f"{name} must be a dict of {lo} to {hi} entries; got {_show(value)}")
    kind, kw = item
    out = {}
    for k, v in value.items():
        check_str(f"a key of {name}", k, max_len=200)
        out[k] = _CHECKS[kind](obj, f"{name}[{k!r}]", v, {"__fields__": frozenset()}, **kw)
    return out


def _namespace(obj, name, value, dims, *, attrs, made_by):
    if not isinstance(value, SimpleNamespace) or not all(hasattr(value, a) for a in attrs):
        raise ValueError(f"{name} must be what {made_by} returns (with {', '.join(attrs)}); got "
                         f"{_show(value)}")
    return value


def _any(obj, name, value, dims):
    return value


_CHECKS = {"real": _real, "integer": _integer, "choice": _choice, "text": _text, "flag": _flag,
           "instance": _instance, "array": _array, "strings": _strings, "mapping": _mapping,
           "per_key": _per_key, "items": _items, "named": _named,
           "namespace": _namespace, "any": _any, "function": _function, "optional": _optional,
           "graph": _graph, "recorded": _recorded}
_SPECS: dict = {}


def check_fields(obj) -> None:
    """Check every field of the dataclass ``obj`` that carries a spec, in field order (the names
    in the class attribute ``check_first`` before the others: fields that later bounds and shapes
    read), and store the checked value (a float, an int, a read-only array ...)."""
    cls = type(obj)
    specs = _SPECS.get(cls)
    if specs is None:
        fields = dataclasses.fields(cls)
        first = getattr(cls, "check_first", ())
        order = sorted((f for f in fields if _KEY in f.metadata),
                       key=lambda f: first.index(f.name) if f.name in first else len(first))
        specs = _SPECS[cls] = (tuple((f.name, *f.metadata[_KEY]) for f in order),
                               frozenset(f.name for f in fields))
    specs, names = specs
    dims: dict = {"__fields__": names}
    for name, kind, kw in specs:
        value = _CHECKS[kind](obj, name, getattr(obj, name), dims, **kw)
        object.__setattr__(obj, name, value)


class Checked:
    """Base of a frozen dataclass whose fields carry specs: its ``__post_init__`` checks them,
    and its ``repr`` shows times, sizes and bandwidths with their units (``12.5 ms``,
    ``50 GB/s``) where a field's spec names one (``real(unit="s")``)."""

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "__repr__" not in cls.__dict__:  # set before @dataclass runs: it keeps ours
            cls.__repr__ = _unit_repr

    def __post_init__(self):
        check_fields(self)


_SHOWN_UNITS = ("s", "bytes", "bytes/s")


def _unit_repr(self) -> str:
    from .quantities import format_quantity

    parts = []
    for f in dataclasses.fields(self):
        if not f.repr:
            continue
        value = getattr(self, f.name, None)
        kind, kw = f.metadata.get(_KEY, (None, {}))
        if (kind == "real" and kw.get("unit") in _SHOWN_UNITS
                and isinstance(value, float) and np.isfinite(value)):
            parts.append(f"{f.name}={format_quantity(value, kw['unit'])}")
        else:
            parts.append(f"{f.name}={value!r}")
    return f"{type(self).__qualname__}({', '.join(parts)})"


def arguments(**specs):
    """Check a function's arguments with the same specs as the fields of a result type.

    Each keyword names a parameter and gives its spec; the function receives the checked value
    (a float, an int, a read-only array, a tuple ...). Bounds and shapes may name other
    parameters, which are checked first when they come earlier in ``specs``.

    >>> @arguments(n=integer(lo=1), xs=array(shape=("n",)))
    ... def total(n, xs):
    ...     return float(xs.sum())
    >>> total(2, [1.0, 2.5])
    3.5
    >>> total(2, [1.0])
    Traceback (most recent call last):
    ...
    ValueError: xs must have shape (2,); got (1,)
    """
    checks = tuple((name, *spec.metadata[_KEY]) for name, spec in specs.items())

    def wrap(fn):
        sig = inspect.signature(fn)
        missing = set(specs) - set(sig.parameters)
        if missing:
            raise TypeError(f"{fn.__name__} has no parameters {sorted(missing)}")

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            values = bound.arguments
            view = SimpleNamespace(**values)  # what bounds and shapes read
            dims: dict = {"__fields__": frozenset(values)}
            for name, kind, kw in checks:
                values[name] = _CHECKS[kind](view, name, values[name], dims, **kw)
                setattr(view, name, values[name])
            return fn(*bound.args, **bound.kwargs)

        return checked

    return wrap
