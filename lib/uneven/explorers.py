"""Ready-made explorers for the notebooks: compute + draw + controls, testable headless.

Each ``*_explorer`` function returns a :class:`uneven.widgets.Explorer`; the notebooks call it
and tests and benchmarks drive the same object, so what a student moves is what CI checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import plots
from ._validate import check_choice, check_int, check_real
from .collectives import all_to_all
from .topology import h800_cluster
from .units import MB, gbit_per_s, to_us
from .widgets import Explorer, dropdown, explore, int_slider, reuse, slider, toggle

__all__ = [
    "A2AState", "a2a_state", "draw_a2a", "start_page_explorer",
    "EpExploreState", "ep_explore_state", "draw_ep", "deepseek_explorer",
    "OP_RATIOS", "PipelineState", "pipeline_state", "draw_pipeline", "pipeline_explorer",
]


@dataclass(frozen=True)
class A2AState:
    """An all-to-all on an H800-like cluster: its time (s), bottleneck, and NIC loads (bytes)."""

    time: float
    bottleneck: str
    nic_up: np.ndarray
    nic_down: np.ndarray
    n_gpus: int
    ideal: float


def a2a_state(n_nodes: int = 4, mb_per_pair: float = 1.0, nic_gbps: float = 400.0,
              hot_factor: float = 1.0, fabric: str = "multi_plane") -> A2AState:
    """All-to-all where every GPU sends ``mb_per_pair`` MB to every other GPU, except that node 0
    receives ``hot_factor`` times as much (a hot node). ``nic_gbps`` is each NIC's rate in Gb/s;
    ``fabric`` is ``'multi_plane'`` (PXN) or ``'multi_rail'`` (cross-rail via shared spines)."""
    n_nodes = check_int("n_nodes", n_nodes, lo=1, hi=4096)
    s = check_real("mb_per_pair", mb_per_pair, lo=0.0, lo_open=True, unit="MB") * MB
    nic = gbit_per_s(check_real("nic_gbps", nic_gbps, lo=0.0, lo_open=True, unit="Gb/s"))
    hot = check_real("hot_factor", hot_factor, lo=1.0)
    fabric = check_choice("fabric", fabric, ("multi_plane", "multi_rail"))
    topo = h800_cluster(n_nodes, fabric=fabric, nic_bw=nic,
                        cross_rail="pxn" if fabric == "multi_plane" else "spine")
    W = np.ones((n_nodes, n_nodes))
    W[:, 0] *= hot
    res = all_to_all(topo, node_weights=W, block=np.full((8, 8), s))
    ideal = (topo.n_gpus - 8) * s / nic  # the uniform, NIC-bound oracle
    return A2AState(res.time, res.loads.bottleneck()[1], res.loads.grid("nic_up"),
                    res.loads.grid("nic_down"), topo.n_gpus, ideal)


def draw_a2a(fig, state: A2AState, **_):
    """Heatmaps of NIC bytes (sent, received) as a share of the busiest NIC, times in the title.

    Returns the layout key (the grid shape) for :class:`uneven.widgets.Explorer`.
    """
    busiest = max(state.nic_up.max(), state.nic_down.max(), 1e-300)  # one node: no NIC traffic

    def build(fig):
        axes = fig.subplots(1, 2, sharey=True)
        if fig.get_layout_engine() is None:  # widget figures place axes by hand (fast)
            fig.subplots_adjust(left=0.07, right=0.97, bottom=0.16, top=0.74, wspace=0.12)
        for ax, grid, what in zip(axes, (state.nic_up, state.nic_down), ("sent", "received"),
                                  strict=True):
            plots.link_heatmap(ax, grid / busiest, col_label="NIC (rail)", unit="B", vmax=1.0,
                               title=f"bytes {what} per NIC", colorbar=False)
        axes[1].set_ylabel("")
        fig.colorbar(axes[1].images[0], ax=list(axes), shrink=0.85,
                     label="share of the busiest NIC")
        title = fig.suptitle("", fontsize=9, x=0.02, ha="left")
        images = [ax.images[0] for ax in axes]
        return {"images": images, "title": title, "axes": axes, "dynamic": [*images, title]}

    art = reuse(fig, "a2a", build)
    for im, ax, grid in zip(art["images"], art["axes"], (state.nic_up, state.nic_down),
                            strict=True):
        _show_grid(im, ax, grid / busiest)
    art["title"].set_text(
        f"{state.n_gpus} GPUs: all-to-all takes {to_us(state.time):,.0f} µs (model); uniform "
        f"NIC-bound oracle {to_us(state.ideal):,.0f} µs\nbottleneck: {state.bottleneck}; "
        f"busiest NIC carries {busiest / MB:,.1f} MB"
    )
    return state.nic_up.shape


def _show_grid(image, ax, grid):
    """Put ``grid`` into a heatmap and fit the axes to its shape (it may change with a slider)."""
    image.set_data(grid)
    image.set_extent((-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5))
    ax.set_xlim(-0.5, grid.shape[1] - 0.5)
    ax.set_ylim(grid.shape[0] - 0.5, -0.5)


def start_page_explorer(show: bool = True) -> Explorer:
    """The start page's tour widget: nodes, bytes per pair, NIC speed, a hot node, the fabric."""
    controls = {
        "n_nodes": int_slider(2, 32, 1, 4, "nodes (8 GPUs each)"),
        "mb_per_pair": slider(0.25, 16.0, 0.25, 1.0, "MB per GPU pair"),
        "nic_gbps": slider(100.0, 800.0, 100.0, 400.0, "NIC (Gb/s)"),
        "hot_factor": slider(1.0, 8.0, 0.5, 1.0, "node 0 receives ×"),
        "fabric": dropdown([("multi-plane + PXN", "multi_plane"),
                            ("shared spines, no PXN", "multi_rail")], "multi_plane", "fabric"),
    }
    presets = {
        "DeepSeek-V3 EP group (8 nodes)": {"n_nodes": 8, "mb_per_pair": 1.0, "nic_gbps": 400.0,
                                          "hot_factor": 1.0, "fabric": "multi_plane"},
        "hot node 8×": {"n_nodes": 8, "hot_factor": 8.0},
    }
    return explore(a2a_state, draw_a2a, controls, presets=presets, show=show, figsize=(8, 3.2))


# --------------------------------------------------------------------------- notebook 03


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
    from .ep_model import route_ep_group

    return route_ep_group(n_nodes, tokens_per_gpu, k=k, max_nodes=max_nodes, skew=skew, seed=0)


def ep_explore_state(ib_gbps: float = 400.0, nvl_ratio: float = 3.2, max_nodes: int = 4,
                     k: int = 8, skew: float = 0.0, dispatch_dtype: str = "fp8",
                     tokens_per_gpu: int = 512, n_nodes: int = 8) -> EpExploreState:
    """Route ``tokens_per_gpu`` tokens per GPU on ``n_nodes`` H800-like nodes (256 experts,
    node-limited top-``k`` with at most ``max_nodes`` nodes per token, capped at the node count)
    and time dispatch and combine. ``ib_gbps``: NIC rate (Gb/s); ``nvl_ratio``: NVLink bandwidth
    per direction as a multiple of one NIC's; ``skew``: expert popularity spread (0 = uniform)."""
    from .ep_model import ep_round

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
    _show_grid(art["image"], art["ax_map"], state.recv)
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


# --------------------------------------------------------------------------- notebook 01

#: Op-time shapes t_F : t_B : t_W offered by the notebook 01 explorer (B = input gradient).
OP_RATIOS = {
    "equal (F = B = W)": (1.0, 1.0, 1.0),
    "F : B : W = 1 : 1 : 0.5": (1.0, 1.0, 0.5),
    "backward-heavy 1 : 2 : 1": (1.0, 2.0, 1.0),
    "forward-heavy 2 : 1 : 1": (2.0, 1.0, 1.0),
}
PIPELINE_CHOICES = ("1f1b", "zb-h1", "zb-h2", "pipemorph", "manual")


@dataclass(frozen=True)
class PipelineState:
    """One iteration under a delay, next to the same schedule on a healthy network (times in s)."""

    result: object
    healthy_time: float
    delay: float
    link: int
    warmups: tuple
    notes: tuple = ()


def pipeline_state(delay_ms: float = 10.0, link: int = 0, schedule: str = "zb-h2",
                   delta: int = 3, ratio: str = "equal (F = B = W)", t_ms: float = 10.0,
                   p: int = 4, m: int = 12, hol: bool = False, cap: int = 0) -> PipelineState:
    """Simulate one iteration with ``delay_ms`` ms of one-way delay on link ``link``.

    ``schedule``: '1f1b', 'zb-h1', 'zb-h2' (replayed healthy plans), 'pipemorph' (re-planned
    warm-ups, dispatched live), or 'manual' (zero-bubble order with slackness ``delta`` on every
    link, replayed). ``ratio`` names an entry of :data:`OP_RATIOS`; ``t_ms`` scales it (ms).
    ``hol``: sends block the GPU stream. ``cap``: memory cap on stage 0's in-flight micro-batches
    for 'pipemorph' (0 = none).
    """
    from .schedulers.pipeline import pipeline_schedule, simulate_pipeline

    schedule = check_choice("schedule", schedule, PIPELINE_CHOICES)
    ratio = check_choice("ratio", ratio, OP_RATIOS)
    p = check_int("p", p, lo=2, hi=16)
    m = check_int("m", m, lo=1, hi=256)
    notes = []
    link = check_int("link", link, lo=0)
    if link > p - 2:  # the slider allows 8 stages; a smaller pipeline has fewer links
        notes.append(f"link {link}↔{link + 1} does not exist with p = {p}: using {p - 2}↔{p - 1}")
        link = p - 2
    delay = check_real("delay_ms", delay_ms, lo=0.0, unit="ms") * 1e-3
    t = check_real("t_ms", t_ms, lo=0.0, lo_open=True, unit="ms") * 1e-3
    tf, tb, tw = (t * x for x in OP_RATIOS[ratio])
    delays = np.zeros(p - 1)
    delays[link] = delay
    kw = {"hol": bool(hol)}
    if schedule == "1f1b":
        sched, mode = pipeline_schedule("1f1b", p, m), "replay"
    elif schedule in ("zb-h1", "zb-h2"):
        sched, mode = pipeline_schedule(schedule, p, m), "replay"
    elif schedule == "manual":
        delta = check_int("delta", delta, lo=1, hi=16)
        warm = [1 + delta * (p - 1 - i) for i in range(p)]
        if max(warm) > m:
            notes.append(f"warm-ups above m = {m} are clipped to m")
        sched, mode = pipeline_schedule("zb", p, m, warmups=warm), "replay"
    else:
        sched, mode = pipeline_schedule("zb-h2", p, m), "replan"
        if cap:
            kw["cap"] = check_int("cap", cap, lo=1)
    if cap and schedule != "pipemorph":
        notes.append("the memory cap applies to PipeMorph's re-plan only")
    res = simulate_pipeline(sched, tf, tb, tw, delays=delays, mode=mode, **kw)
    healthy = _healthy_time(sched, tf, tb, tw, mode, **kw)
    return PipelineState(res, healthy, delay, link, res.warmups, tuple(notes))


@lru_cache(maxsize=64)
def _healthy_time(sched, tf, tb, tw, mode, **kw) -> float:
    # The healthy iteration does not depend on the delay slider: compute it once per setting.
    from .schedulers.pipeline import simulate_pipeline

    return simulate_pipeline(sched, tf, tb, tw, delays=0.0, mode=mode, **kw).iteration_time


def draw_pipeline(fig, state: PipelineState, **_):
    """Gantt of the stages' GPU streams, with the iteration time against the healthy one."""
    from .schedulers.pipeline import OP_KINDS

    def build(fig):
        ax = fig.subplots()
        if fig.get_layout_engine() is None:
            fig.subplots_adjust(left=0.1, right=0.86, bottom=0.17, top=0.74)
        live = plots.LiveGantt(ax, OP_KINDS, time_unit="ms")
        title = fig.suptitle("", fontsize=9, x=0.02, ha="left")
        return {"ax": ax, "live": live, "title": title,
                "dynamic": [*live.collections, title]}

    art = reuse(fig, "pipeline", build)
    r = state.result
    p = r.schedule.p
    on_gpu = r.resource < p  # the stages' GPU streams (CPU senders are left out of the picture)
    layout = art["live"].update(r.resource[on_gpu], r.start[on_gpu], r.finish[on_gpu],
                                r.kind[on_gpu], xmax=plots.nice_ceiling(r.iteration_time))
    extra = r.iteration_time - state.healthy_time
    art["title"].set_text(
        f"iteration {r.iteration_time * 1e3:,.0f} ms vs {state.healthy_time * 1e3:,.0f} ms healthy "
        f"(+{extra * 1e3:,.0f} ms for {state.delay * 1e3:g} ms on link "
        f"{state.link}↔{state.link + 1}) · model\n"
        f"warm-ups {list(state.warmups)} · peak in-flight {r.peak_inflight.tolist()} · "
        f"mean bubble {100 * float(np.mean(r.bubble_fraction)):.0f}%"
        + (f"\nnote: {'; '.join(state.notes)}" if state.notes else "")
    )
    return layout


def pipeline_explorer(show: bool = True) -> Explorer:
    """Notebook 01's widget: delay, link, schedule, op-time shape, p, m, HOL, memory cap."""
    controls = {
        "delay_ms": slider(0.0, 60.0, 1.0, 10.0, "delay (ms)"),
        "link": int_slider(0, 6, 1, 0, "slow link i↔i+1"),
        "schedule": dropdown([("1F1B (replayed)", "1f1b"), ("ZB-H1 (replayed)", "zb-h1"),
                              ("ZB-H2 (replayed)", "zb-h2"), ("PipeMorph re-plan", "pipemorph"),
                              ("manual slackness Δ", "manual")], "zb-h2", "schedule"),
        "delta": int_slider(1, 8, 1, 3, "manual Δ"),
        "ratio": dropdown(list(OP_RATIOS), "equal (F = B = W)", "t_F : t_B : t_W"),
        "p": int_slider(2, 8, 1, 4, "stages p"),
        "m": int_slider(4, 32, 1, 12, "micro-batches m"),
        "hol": toggle(False, "sends block the GPU stream (HOL)"),
        "cap": int_slider(0, 32, 1, 0, "memory cap on stage 0 (0 = none)"),
    }
    presets = {
        "paper's Fig. 5 setting: ZB, 10 ms": {"delay_ms": 10.0, "link": 0, "schedule": "zb-h2",
                                         "p": 4, "m": 12, "hol": False},
        "cascade: ZB, 20 ms": {"delay_ms": 20.0, "link": 0, "schedule": "zb-h2", "p": 4,
                               "m": 12},
        "PipeMorph, 30 ms": {"delay_ms": 30.0, "link": 0, "schedule": "pipemorph", "p": 4,
                             "m": 12},
        "HOL blocking, 30 ms": {"delay_ms": 30.0, "schedule": "zb-h2", "hol": True},
    }
    return explore(pipeline_state, draw_pipeline, controls, presets=presets, show=show,
                   figsize=(9.0, 3.2), columns=3)
