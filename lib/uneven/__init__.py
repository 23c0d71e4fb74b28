"""uneven: a small simulator for distributed LLM training and serving when ranks are not equal.

The core names are re-exported here; plotting, widgets and the notebooks' explorers live in
:mod:`uneven.plots`, :mod:`uneven.widgets` and :mod:`uneven.explorers` (they import matplotlib and
ipywidgets, so they load only when asked for). Every public function refuses bad input with a
``ValueError`` naming the parameter, and refuses a call beyond the memory or work budget of
:mod:`uneven.limits` (2 GiB, 2e9 loop steps; ``UNEVEN_MAX_BYTES`` / ``UNEVEN_MAX_STEPS``) before
allocating.

>>> import uneven
>>> round(uneven.all_to_all(uneven.h800_cluster(2), 1e6).time * 1e6, 1)
166.1
"""

from . import limits, sweep, units
from .collectives import (
    BUSBW_FACTOR,
    CollectiveResult,
    algbw,
    all_to_all,
    alpha_beta_time,
    busbw,
    fluid_transfers,
    ring_all_gather,
    ring_all_reduce,
    ring_reduce_scatter,
    send_recv,
)
from .engines.fluid import FluidResult, batched_error, max_min_rates, simulate_fluid
from .engines.linkload import LinkLoads, link_loads, link_loads_kron, link_loads_matrix
from .engines.timeline import Timeline, edges_to_csr, run_timeline
from .hardware import b200_cluster, gb200_nvl72, h100_cluster, h200_cluster, mi300x_cluster
from .i18n import get_language, set_language
from .schedulers.pipeline import (
    OP_KINDS,
    PipelineResult,
    PipelineSchedule,
    absorption_bound,
    pipeline_schedule,
    replan_warmups,
    simulate_pipeline,
    simulate_trace,
    slackness,
)
from .sweep import grid_sweep
from .topology import Topology, cloudmatrix384, cluster, h20_cluster, h800_cluster, superpod
from .topology_io import topology_from_dict, topology_to_dict
from .workloads import (
    episodic_delay_trace,
    expert_loads,
    expert_popularity,
    gaussian_delay_trace,
    sequence_lengths,
)

__version__ = "0.1.0"

__all__ = [
    "units", "limits",
    # topology
    "Topology", "cluster", "superpod", "h800_cluster", "h20_cluster", "cloudmatrix384",
    "h100_cluster", "h200_cluster", "b200_cluster", "gb200_nvl72", "mi300x_cluster",
    "topology_from_dict", "topology_to_dict",
    # engines
    "LinkLoads", "link_loads", "link_loads_matrix", "link_loads_kron",
    "Timeline", "run_timeline", "edges_to_csr",
    "FluidResult", "simulate_fluid", "max_min_rates", "batched_error",
    # collectives
    "CollectiveResult", "send_recv", "ring_all_gather", "ring_reduce_scatter", "ring_all_reduce",
    "all_to_all", "fluid_transfers", "algbw", "busbw", "BUSBW_FACTOR", "alpha_beta_time",
    # pipeline schedules
    "PipelineSchedule", "PipelineResult", "OP_KINDS", "pipeline_schedule", "simulate_pipeline",
    "simulate_trace", "replan_warmups", "slackness", "absorption_bound",
    # workloads
    "expert_popularity", "expert_loads", "sequence_lengths", "episodic_delay_trace",
    "gaussian_delay_trace",
    # research scale (uneven.sweep is the module)
    "grid_sweep", "sweep",
    # the language of messages and figure text (the zh-TW edition)
    "set_language", "get_language",
]
