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
"""

from .nb00 import A2AState, a2a_state, draw_a2a, start_page_explorer
from .nb01 import OP_RATIOS, PipelineState, draw_pipeline, pipeline_explorer, pipeline_state
from .nb02 import HdpExploreState, bytescale_explorer, draw_hdp, hdp_explore_state
from .nb03 import EpExploreState, deepseek_explorer, draw_ep, ep_explore_state
from .nb04 import MegaScaleState, draw_megascale, megascale_explorer, megascale_state
from .nb05 import BalanceState, balance_state, balancing_explorer, draw_balance
from .nb06 import UbepState, draw_ubep, ubep_explorer, ubep_state
from .nb07 import UnevenState, draw_uneven, uneven_state, unevenness_explorer

__all__ = [
    "A2AState", "a2a_state", "draw_a2a", "start_page_explorer",
    "HdpExploreState", "hdp_explore_state", "draw_hdp", "bytescale_explorer",
    "EpExploreState", "ep_explore_state", "draw_ep", "deepseek_explorer",
    "OP_RATIOS", "PipelineState", "pipeline_state", "draw_pipeline", "pipeline_explorer",
    "MegaScaleState", "megascale_state", "draw_megascale", "megascale_explorer",
    "BalanceState", "balance_state", "draw_balance", "balancing_explorer",
    "UbepState", "ubep_state", "draw_ubep", "ubep_explorer",
    "UnevenState", "uneven_state", "draw_uneven", "unevenness_explorer",
]
