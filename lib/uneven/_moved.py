"""Forwarding for module paths and names that moved (private).

A module that moved keeps a file at its old path whose only content is a module
``__getattr__`` made by :func:`forward` (QuantEcon's pattern): every name taken from the old path
still works, with a ``DeprecationWarning`` naming the new home. The old paths go one release
after the move.
"""

from __future__ import annotations

import importlib
import warnings


def forward(old: str, new: str, renamed: dict | None = None):
    """A module ``__getattr__`` for the old path ``old`` that forwards to module ``new``;
    ``renamed`` maps old names to new ones where a name changed too.

    >>> import warnings
    >>> getattr_ = forward("uneven.old_place", "uneven.units")
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     us = getattr_("us")
    >>> us(1.0), seen[0].category.__name__
    (1e-06, 'DeprecationWarning')
    """
    renamed = dict(renamed or {})

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        target = importlib.import_module(new)
        new_name = renamed.get(name, name)
        try:
            value = getattr(target, new_name)
        except AttributeError:
            raise AttributeError(f"module {old!r} (moved to {new!r}) has no attribute "
                                 f"{name!r}") from None
        what = f"{new}.{new_name}" if new_name != name else new
        warnings.warn(f"{old} has moved: use {what} (the old path goes in the next release)",
                      DeprecationWarning, stacklevel=2)
        return value

    return __getattr__


def renamed_names(module: str, names: dict):
    """A module ``__getattr__`` for names of ``module`` that were renamed in place:
    ``names`` maps each old name to its new one (a ``DeprecationWarning`` per use)."""
    names = dict(names)

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is now {module}.{names[name]} (the old name goes in the "
                      "next release)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), names[name])

    return __getattr__
