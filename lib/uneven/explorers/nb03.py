"""Notebook 03 (Insights into DeepSeek-V3): EP dispatch and combine on an H800-like group."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import plots
from .._validate import check_choice, check_int, check_real
from ..topology import h800_cluster
from ..units import gbit_per_s, to_us
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider
from ._common import show_grid

__all__ = ["EpExploreState", "ep_explore_state", "draw_ep", "deepseek_explorer"]



@dataclass(frozen=True)
class EpExploreState:
    """One EP dispatch + combine on an H800-like group, for the notebook 03 explorer.

    Times in s: busiest network-side and NVLink-side link of each phase, and each phase. Per-GPU
    bandwidths in bytes/s (DeepEP's definition and through the NIC). Copies per token. ``recv``:
    per GPU (nodes x 8), how long its busier incoming port (NIC or NVLink) is busy in dispatch, as
    a share of the phase. ``max_nodes``: the node cap actually used (at most the node count).
    """

    dispatch_nic: float
    dispatch_nvl: float
    combine_nic: float
    combine_nvl: float
    dispatch_time: float
    combine_time: float
    logical_bw: float
    true_bw: float
    ib_copies: float
    nvl_copies: float
    recv: np.ndarray
    ratio: float
    max_nodes: int


@lru_cache(maxsize=4)
def _cached_routing(n_nodes, tokens_per_gpu, k, max_nodes, skew):
    from ..ep_model import route_ep_group

    return route_ep_group(n_nodes, tokens_per_gpu, k=k, max_nodes=max_nodes, skew=skew, seed=0)


def ep_explore_state(ib_gbps: float = 400.0, nvl_ratio: float = 3.2, max_nodes: int = 4,
                     k: int = 8, skew: float = 0.0, dispatch_dtype: str = "fp8",
                     tokens_per_gpu: int = 512, n_nodes: int = 8) -> EpExploreState:
    """Route ``tokens_per_gpu`` tokens per GPU on ``n_nodes`` H800-like nodes (256 experts,
    node-limited top-``k`` with at most ``max_nodes`` nodes per token, capped at the node count)
    and time dispatch and combine. ``ib_gbps``: NIC rate (Gb/s); ``nvl_ratio``: NVLink bandwidth
    per direction as a multiple of one NIC's; ``skew``: expert popularity spread (0 = uniform)."""
    from ..ep_model import ep_round

    ib = gbit_per_s(check_real("ib_gbps", ib_gbps, lo=1.0, unit="Gb/s"))
    ratio = check_real("nvl_ratio", nvl_ratio, lo=0.1)
    n_nodes = check_choice("n_nodes", n_nodes, (2, 4, 8, 16))
    max_nodes = min(check_int("max_nodes", max_nodes, lo=1), n_nodes)
    k = check_int("k", k, lo=1, hi=max_nodes * 256 // n_nodes)
    skew = check_real("skew", skew, lo=0.0)
    tokens_per_gpu = check_int("tokens_per_gpu", tokens_per_gpu, lo=1, hi=8192)
    dispatch_dtype = check_choice("dispatch_dtype", dispatch_dtype, ("fp8", "bf16"))
    topo = h800_cluster(n_nodes, nic_bw=ib, nvlink_bw=ratio * ib)
    routing = _cached_routing(n_nodes, tokens_per_gpu, k, max_nodes, skew)
    r = ep_round(topo, routing, dispatch_dtype=dispatch_dtype)
    T = routing.expert_ids.shape[0]
    bd = r.dispatch_traffic.bytes_per_copy
    loads = r.dispatch.loads
    recv = np.maximum(loads.grid("nic_down") / ib, loads.grid("nvl_in") / (ratio * ib))
    return EpExploreState(
        r.dispatch.nic_time, r.dispatch.nvlink_time, r.combine.nic_time, r.combine.nvlink_time,
        r.dispatch.time, r.combine.time, r.logical_bw, r.true_bw,
        r.dispatch_traffic.network_bytes / T / bd, r.dispatch_traffic.nvlink_bytes / T / bd,
        recv / r.dispatch.time, ratio, max_nodes,
    )


def draw_ep(fig, state: EpExploreState, **_):
    """Bars: how long the busiest network-side and NVLink-side links are busy in dispatch and
    combine, as a share of each phase (the taller bar binds). Heatmap: how long each GPU's busier
    incoming port is busy in dispatch, as a share of the phase. Absolute times are in the title.
    Returns the layout key for :class:`uneven.widgets.Explorer`."""
    nic_vals = [state.dispatch_nic / state.dispatch_time, state.combine_nic / state.combine_time]
    nvl_vals = [state.dispatch_nvl / state.dispatch_time, state.combine_nvl / state.combine_time]
    ytop = 1.4  # room for the legend above bars that reach 1

    def build(fig):
        ax_bar, ax_map = fig.subplots(1, 2, width_ratios=(1.0, 1.2))
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.08, right=0.97, bottom=0.16, top=0.74, wspace=0.3)
        x = np.arange(2)
        nic = ax_bar.bar(x - 0.18, [0, 0], 0.36, color=plots.COLORS["blue"], label="network side")
        nvl = ax_bar.bar(x + 0.18, [0, 0], 0.36, color=plots.COLORS["orange"], label="NVLink")
        ax_bar.set_xticks(x, ["dispatch", "combine"])
        ax_bar.set_ylabel("busiest link busy / phase time")
        ax_bar.legend(loc="upper center", ncol=2)
        ax_bar.set_title("which resource binds", loc="left")
        plots.link_heatmap(ax_map, state.recv, col_label="GPU", unit="B", vmax=1.0,
                           title="receive-side busy share per GPU", colorbar=True)
        ax_map.figure.axes[-1].set_ylabel("share of the phase")
        title = fig.suptitle("", fontsize=9, x=0.02, ha="left")
        image = ax_map.images[0]
        return {"nic": nic, "nvl": nvl, "ax_bar": ax_bar, "ax_map": ax_map, "image": image,
                "title": title, "dynamic": [*nic, *nvl, image, title]}

    art = reuse(fig, "ep", build)
    for bar, v in zip(art["nic"], nic_vals, strict=True):
        bar.set_height(v)
    for bar, v in zip(art["nvl"], nvl_vals, strict=True):
        bar.set_height(v)
    show_grid(art["image"], art["ax_map"], state.recv)
    art["ax_bar"].set_ylim(0, ytop)
    art["title"].set_text(
        f"dispatch {to_us(state.dispatch_time):,.0f} µs, combine {to_us(state.combine_time):,.0f}"
        f" µs (model) · per GPU {state.logical_bw / 1e9:.0f} GB/s DeepEP-style, "
        f"{state.true_bw / 1e9:.0f} GB/s through the NIC\n"
        f"node cap M = {state.max_nodes}; per token {state.ib_copies:.2f} IB and "
        f"{state.nvl_copies:.2f} NVLink copies; NVLink/NIC bandwidth {state.ratio:g}"
    )
    return state.recv.shape  # the layout key: the background changes only with the grid


def deepseek_explorer(show: bool = True) -> Explorer:
    """Notebook 03's widget: bandwidths, node cap, experts per token, skew, dtype, size."""
    controls = {
        "ib_gbps": slider(100.0, 800.0, 50.0, 400.0, "NIC (Gb/s)"),
        "nvl_ratio": slider(1.0, 10.0, 0.2, 3.2, "NVLink / NIC"),
        "max_nodes": int_slider(1, 8, 1, 4, "node cap M"),
        "k": int_slider(4, 16, 1, 8, "experts per token"),
        "skew": slider(0.0, 2.0, 0.25, 0.0, "expert skew"),
        "dispatch_dtype": dropdown([("FP8 + scales", "fp8"), ("BF16", "bf16")], "fp8",
                                   "dispatch"),
        "tokens_per_gpu": int_slider(128, 2048, 128, 512, "tokens per GPU"),
        "n_nodes": dropdown([2, 4, 8, 16], 8, "nodes"),
    }
    presets = {
        "DeepSeek-V3 training (EP64)": {"ib_gbps": 400.0, "nvl_ratio": 3.2, "max_nodes": 4,
                                        "k": 8, "skew": 0.0, "dispatch_dtype": "fp8",
                                        "n_nodes": 8},
        "no node cap (M = 8)": {"max_nodes": 8},
        "13 experts, M = 4": {"k": 13, "max_nodes": 4},
        "NVLink 9× the NIC": {"nvl_ratio": 9.0},
        "a hot expert group (skew 2)": {"skew": 2.0},
    }
    return explore(ep_explore_state, draw_ep, controls, presets=presets, show=show,
                   figsize=(8.5, 3.4))


