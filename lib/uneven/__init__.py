"""uneven: a small simulator for distributed LLM training and serving when ranks are not equal."""

from . import units

__version__ = "0.1.0"
__all__ = ["units"]
