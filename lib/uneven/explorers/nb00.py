"""Start page (notebook 00): an all-to-all on an H800-like cluster, with a hot node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import plots
from .._fields import Checked, array, integer, real, text
from .._moved import renamed_names
from .._validate import check_choice, check_instance, check_int, check_real
from ..collectives import all_to_all
from ..i18n import gettext as _
from ..topology import h800_cluster
from ..units import MB, gbit_per_s, to_us
from ..widgets import Explorer, dropdown, explore, int_slider, reuse, slider
from ._common import show_grid

__all__ = ["StartState", "start_state", "draw_start", "start_explorer"]

#: The control ``benchmarks/bench_widgets.py`` moves, and the values it moves it through.
BENCH_CONTROL = ("mb_per_pair", (0.5, 1.0, 2.0, 4.0, 8.0))


@dataclass(frozen=True)
class StartState(Checked):
    """An all-to-all on an H800-like cluster: its time (s), bottleneck, and NIC loads (bytes)."""

    time: float = real(lo=0.0, unit="s")
    bottleneck: str = text(max_len=200)
    nic_up: np.ndarray = array(ndim=2, nonempty=True, lo=0.0)
    nic_down: np.ndarray = array(shape=lambda s: s.nic_up.shape, lo=0.0)
    n_gpus: int = integer(lo=1)
    ideal: float = real(lo=0.0, unit="s")


def start_state(n_nodes: int = 4, mb_per_pair: float = 1.0, nic_gbps: float = 400.0,
                hot_factor: float = 1.0, fabric: str = "multi_plane") -> StartState:
    """All-to-all where every GPU sends ``mb_per_pair`` MB to every other GPU, except that node 0
    receives ``hot_factor`` times as much (a hot node, at most 1e6). ``nic_gbps`` is each NIC's
    rate in Gb/s (at most 1e9); ``mb_per_pair`` at most 1e9 MB; ``fabric`` is
    ``'multi_plane'`` (PXN) or ``'multi_rail'`` (cross-rail via shared spines)."""
    n_nodes = check_int("n_nodes", n_nodes, lo=1, hi=4096)
    s = check_real("mb_per_pair", mb_per_pair, lo=0.0, lo_open=True, hi=1e9, unit="MB") * MB
    nic = gbit_per_s(check_real("nic_gbps", nic_gbps, lo=1e-3, hi=1e9, unit="Gb/s"))
    hot = check_real("hot_factor", hot_factor, lo=1.0, hi=1e6)
    fabric = check_choice("fabric", fabric, ("multi_plane", "multi_rail"))
    topo = h800_cluster(n_nodes, fabric=fabric, nic_bw=nic,
                        cross_rail="pxn" if fabric == "multi_plane" else "spine")
    W = np.ones((n_nodes, n_nodes))
    W[:, 0] *= hot
    res = all_to_all(topo, node_weights=W, block=np.full((8, 8), s))
    ideal = (topo.n_gpus - 8) * s / nic  # the uniform, NIC-bound oracle
    return StartState(res.time, res.loads.bottleneck()[1], res.loads.grid("nic_up"),
                      res.loads.grid("nic_down"), topo.n_gpus, ideal)


@plots.recipe
def draw_start(fig, state: StartState, **_values):
    """Heatmaps of NIC bytes (sent, received) as a share of the busiest NIC, times in the title.

    Returns the layout key (the grid shape) for :class:`uneven.widgets.Explorer`.
    """
    from matplotlib.figure import Figure

    check_instance("fig", fig, Figure)
    check_instance("state", state, StartState, "from start_state(...)")
    busiest = max(state.nic_up.max(), state.nic_down.max(), 1e-300)  # one node: no NIC traffic

    def build(fig):
        axes = fig.subplots(1, 2, sharey=True)
        if fig.get_layout_engine() is None:  # widget figures place axes by hand (fast)
            fig.subplots_adjust(left=0.07, right=0.97, bottom=0.16, top=0.74, wspace=0.12)
        titles = (_("bytes sent per NIC"), _("bytes received per NIC"))
        for ax, grid, title in zip(axes, (state.nic_up, state.nic_down), titles, strict=True):
            plots.link_heatmap(ax, grid / busiest, col_label=_("NIC (rail)"), unit="B", vmax=1.0,
                               title=title, colorbar=False)
        axes[1].set_ylabel("")
        fig.colorbar(axes[1].images[0], ax=list(axes), shrink=0.85,
                     label=_("share of the busiest NIC"))
        title = fig.suptitle("", fontsize=plots.PANEL, x=0.02, ha="left")
        images = [ax.images[0] for ax in axes]
        return {"images": images, "title": title, "axes": axes, "dynamic": [*images, title]}

    art = reuse(fig, "a2a", build)
    for im, ax, grid in zip(art["images"], art["axes"], (state.nic_up, state.nic_down),
                            strict=True):
        show_grid(im, ax, grid / busiest)
    art["title"].set_text(_(
        "{n_gpus} GPUs: all-to-all takes {time:,.0f} µs (model); uniform NIC-bound oracle "
        "{ideal:,.0f} µs\nbottleneck: {bottleneck}; busiest NIC carries {busiest:,.1f} MB"
    ).format(n_gpus=state.n_gpus, time=to_us(state.time), ideal=to_us(state.ideal),
             bottleneck=state.bottleneck, busiest=busiest / MB))
    return state.nic_up.shape


def start_explorer(show: bool = True) -> Explorer:
    """The start page's tour widget: nodes, bytes per pair, NIC speed, a hot node, the fabric."""
    controls = {
        "n_nodes": int_slider(2, 32, 1, 4, _("nodes (8 GPUs each)")),
        "mb_per_pair": slider(0.25, 16.0, 0.25, 1.0, _("MB per GPU pair")),
        "nic_gbps": slider(100.0, 800.0, 100.0, 400.0, _("NIC (Gb/s)")),
        "hot_factor": slider(1.0, 8.0, 0.5, 2.0, _("node 0 receives ×")),
        "fabric": dropdown([(_("multi-plane + PXN"), "multi_plane"),
                            (_("shared spines, no PXN"), "multi_rail")], "multi_plane",
                           _("fabric")),
    }
    presets = {
        _("DeepSeek-V3 EP group (8 nodes)"): {"n_nodes": 8, "mb_per_pair": 1.0,
                                              "nic_gbps": 400.0, "hot_factor": 1.0,
                                              "fabric": "multi_plane"},
        _("hot node 8×"): {"n_nodes": 8, "hot_factor": 8.0},
    }
    return explore(start_state, draw_start, controls, presets=presets, show=show, figsize=(8, 3.2))


# The names before the explorers shared one stem per notebook (one release).
__getattr__ = renamed_names(__name__, {
    "A2AState": "StartState",
    "a2a_state": "start_state",
    "draw_a2a": "draw_start",
    "start_page_explorer": "start_explorer",
})
