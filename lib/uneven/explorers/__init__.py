"""Each notebook's explorer and figure recipes, one module per notebook.

An explorer is compute + draw + controls (:class:`uneven.widgets.Explorer`); a figure recipe is a
named function that draws one of the notebook's figures from values the notebook computed with the
library. Notebooks call both; tests and benchmarks drive the same objects, so what a student moves
is what CI checks.

* :mod:`uneven.explorers.nb00` — the start page (an all-to-all on an H800-like cluster)
* :mod:`uneven.explorers.nb01` — Attack of the Bubbles (a pipeline under a slow link)
* :mod:`uneven.explorers.nb02` — ByteScale (a pooled DP×CP and its balance scheduler)
* :mod:`uneven.explorers.nb03` — Insights into DeepSeek-V3 (EP dispatch and combine)
* :mod:`uneven.explorers.nb04` — MegaScale-MoE (one MoE layer inside a node, fused overlap)
* :mod:`uneven.explorers.nb05` — Balancing and Beyond (placement, relay, a decode layer)
* :mod:`uneven.explorers.nb06` — UBEP (core groups, barriers, hop mix inside a superpod)
* :mod:`uneven.explorers.nb07` — what the six papers agree on (one unevenness knob per paper)
* :mod:`uneven.explorers.nb08` — a research quickstart (reports and figures only: the reader's
  own calls are the explorer there)
"""

from .nb00 import StartState, draw_start, start_explorer, start_state
from .nb01 import OP_RATIOS, PipeMorphState, draw_pipemorph, pipemorph_explorer, pipemorph_state
from .nb02 import ByteScaleState, bytescale_explorer, bytescale_state, draw_bytescale
from .nb03 import DeepSeekState, deepseek_explorer, deepseek_state, draw_deepseek
from .nb04 import MegaScaleState, draw_megascale, megascale_explorer, megascale_state
from .nb05 import BalancingState, balancing_explorer, balancing_state, draw_balancing
from .nb06 import UbepState, draw_ubep, ubep_explorer, ubep_state
from .nb07 import UnevennessState, draw_unevenness, unevenness_explorer, unevenness_state

__all__ = [
    "StartState", "start_state", "draw_start", "start_explorer",
    "ByteScaleState", "bytescale_state", "draw_bytescale", "bytescale_explorer",
    "DeepSeekState", "deepseek_state", "draw_deepseek", "deepseek_explorer",
    "OP_RATIOS", "PipeMorphState", "pipemorph_state", "draw_pipemorph", "pipemorph_explorer",
    "MegaScaleState", "megascale_state", "draw_megascale", "megascale_explorer",
    "BalancingState", "balancing_state", "draw_balancing", "balancing_explorer",
    "UbepState", "ubep_state", "draw_ubep", "ubep_explorer",
    "UnevennessState", "unevenness_state", "draw_unevenness", "unevenness_explorer",
]


def __getattr__(name):
    """The names before one stem per notebook, forwarded (one release) to the module that
    renamed them (each warns there)."""
    from . import nb00, nb01, nb02, nb03, nb05, nb07

    for mod in (nb00, nb01, nb02, nb03, nb05, nb07):
        try:
            return getattr(mod, name)
        except AttributeError:
            pass
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
