"""Moved to :mod:`uneven.ep.transport`.

This path still works, with a ``DeprecationWarning``, until the next release.
"""

from ._moved import forward

__getattr__ = forward(__name__, "uneven.ep.transport")
