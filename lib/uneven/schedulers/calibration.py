"""Calibrating the HDP model to ByteScale's own case-study rank (Fig. 18 of arXiv:2502.21231 v1).

:func:`~uneven.schedulers.sequences.default_cost_model` takes a rank's per-layer times from
ByteScale's Fig. 6a, a profile whose hardware and configuration the paper does not give. Its
case study (LLaMA-7B, 2M context, 1,024 GPUs, Byted data) prints per-layer times for the ranks
that ran it in Fig. 18a, and forward against backward in Fig. 18b, all read from an OCR of the
figures [fig-OCR] (:data:`FIG18`). :func:`fit_fig18` fits three factors to them, each against
the same quantity in the model (units: s, bytes/s):

* **attention**: a 312K sequence on 39 ranks (compute-bound in the model: its ring hides) —
  scales the cost model's attention terms;
* **MLP**: 8K tokens per rank, against Fig. 6a's own MLP reading at 8K — scales the linear
  terms;
* **ring step**: attention over the 256 ranks of a static-mesh micro-batch of short sequences
  (transfer-bound: each of its 255 ring steps moves 8K tokens of KV) — sets the NIC rate that
  makes one step take what the paper's did;
* **backward**: the middle of Fig. 18b's 2.3-2.5x.

>>> fit = fit_fig18()
>>> round(fit.attention_scale, 2), round(fit.linear_scale, 2), round(fit.nic_bw * 8 / 1e9)
(4.52, 5.28, 85)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._fields import Checked, check_fields, instance, real
from .._validate import check_instance
from ..i18n import gettext as _
from .sequences import HdpSetup, default_cost_model

__all__ = ["FIG18", "Fig18Fit", "fit_fig18"]

#: ByteScale Fig. 18 [fig-OCR], per-layer forward times of the case study's ranks (s) and the
#: backward/forward ratio. ``ring_*``: (tokens of the sequence, ranks of its ring, attention s).
FIG18 = {
    "mlp_8k": (9e-3, 10e-3),  # MLP, 8K tokens per rank (a range read off the figure)
    "ring_312k": (312 * 1024, 39, 110e-3),  # HDP: a 312K sequence on 39 ranks
    "ring_static": (256, 405e-3),  # the static mesh: attention over 256 ranks
    "backward_over_forward": (2.3, 2.5),  # Fig. 18b
}

_MLP_6A_8K = 1.8e-3  # Fig. 6a's MLP at 8K tokens [fig-OCR] (s)


@dataclass(frozen=True)
class Fig18Fit(Checked):
    """The fitted factors and the setup that uses them.

    ``attention_scale``/``linear_scale``: the paper's rank over the Fig. 6a model, attention and
    linear terms (each in (0, 1e3]); ``nic_bw``: the per-GPU NIC rate (bytes/s) that gives Fig.
    18a's ring step; ``backward_factor``; ``setup``: the input setup with all four applied;
    ``nic_bw_before``: the input's NIC rate. Checked when made.
    """

    attention_scale: float = real(lo=0.0, hi=1e3, lo_open=True)
    linear_scale: float = real(lo=0.0, hi=1e3, lo_open=True)
    nic_bw: float = real(lo=1e3, hi=1e18, unit="bytes/s")
    backward_factor: float = real(lo=0.5, hi=10.0)
    setup: HdpSetup = instance(HdpSetup, "e.g. HdpSetup()", repr=False)
    nic_bw_before: float = real(lo=1e3, hi=1e18, unit="bytes/s")

    def __post_init__(self):
        check_fields(self)

    @property
    def rows(self) -> tuple:
        """Per reading ``(what, paper s, model before s, model after s)``."""
        base = replace(self.setup, cost=default_cost_model(self.setup.model),
                       nic_bw=self.nic_bw_before, backward_factor=2.0)
        s312, n312, t312 = FIG18["ring_312k"]
        n_static, t_static = FIG18["ring_static"]
        short, tokens = _static_pack(self.setup)
        mlp = float(np.mean(FIG18["mlp_8k"]))
        return (
            ("attention, 312K sequence on 39 ranks (HDP)", t312,
             _ring_attention(base, s312, n312)[0], _ring_attention(self.setup, s312, n312)[0]),
            ("attention, micro-batch on 256 ranks (static)", t_static,
             _ring_attention(base, tokens, n_static, short)[0],
             _ring_attention(self.setup, tokens, n_static, short)[0]),
            ("MLP, 8K tokens per rank", mlp, _MLP_6A_8K, _MLP_6A_8K * self.linear_scale),
        )

    @property
    def report(self) -> str:
        """The readings, the paper's value beside the model's before and after (ms)."""
        from ..explorers._common import pad  # display width: a CJK character takes two

        # the rows' names in the language in force (rows keeps the English)
        names = (_("attention, 312K sequence on 39 ranks (HDP)"),
                 _("attention, micro-batch on 256 ranks (static)"), _("MLP, 8K tokens per rank"))
        lines = [f"{pad(_('Fig. 18 reading [fig-OCR]'), 44)} {pad(_('paper'), 9, '>')} "
                 f"{pad(_('model, Fig. 6a'), 15, '>')} {pad(_('calibrated'), 11, '>')}"]
        for name, (_what, paper, before, after) in zip(names, self.rows, strict=True):
            lines.append(f"{pad(name, 44)} {paper * 1e3:7.1f} ms {before * 1e3:12.1f} ms "
                         f"{after * 1e3:8.1f} ms")
        lines.append(_("fitted: attention x{att:.2f}, MLP x{mlp:.2f}, NIC {nic:.0f} Gb/s per GPU "
                       "effective (was {was:.0f}), backward = {bwd:g} x forward (was 2) (model)")
                     .format(att=self.attention_scale, mlp=self.linear_scale,
                             nic=self.nic_bw * 8 / 1e9, was=self.nic_bw_before * 8 / 1e9,
                             bwd=self.backward_factor))
        return "\n".join(lines)


def _static_pack(setup):
    """A static-mesh micro-batch of short sequences: ``d_cp * C`` tokens of 4K sequences."""
    n_static = FIG18["ring_static"][0]
    short = [4096] * (n_static * setup.capacity // 4096)
    return short, float(sum(short))


def _ring_attention(setup, tokens, width, lengths=None):
    """Attention part (s) of one layer forward of a ring item across nodes: ``width`` ranks,
    ``tokens`` in total (one sequence, or ``lengths`` packed)."""
    cost = setup.cost_model
    s = np.asarray([tokens] if lengths is None else lengths, dtype=np.float64)
    att = float(cost._att(s).sum())
    step_c = att / width**2
    hops = setup.hops()
    step_t = tokens / width * setup.model.kv_bytes_per_token / hops["inter_bw"] + hops["inter_lat"]
    return step_c + (width - 1) * max(step_c, step_t), step_c


def fit_fig18(setup: HdpSetup | None = None) -> Fig18Fit:
    """Fit the attention, MLP, ring-step and backward factors of ``setup`` (default
    ``HdpSetup()``: the case study's 512 ranks of 2 GPUs, C = 8K) to :data:`FIG18` (model)."""
    setup = HdpSetup() if setup is None else check_instance("setup", setup, HdpSetup,
                                                            "e.g. HdpSetup()")
    base = replace(setup, cost=default_cost_model(setup.model))
    s312, n312, t312 = FIG18["ring_312k"]
    n_static, t_static = FIG18["ring_static"]
    mlp_paper = float(np.mean(FIG18["mlp_8k"]))
    att_before, _ = _ring_attention(base, s312, n312)
    k_att = t312 / att_before
    k_lin = mlp_paper / _MLP_6A_8K
    cost = base.cost_model.scaled(k_att, k_lin)
    short, pack_tokens = _static_pack(setup)
    slow = replace(base, cost=cost)
    _, step_c = _ring_attention(slow, pack_tokens, n_static, short)
    step_t = (t_static - step_c) / (n_static - 1)
    lat = slow.hops()["inter_lat"]
    if not step_t > max(step_c, lat):
        raise ValueError(f"setup={setup!r}: Fig. 18a's ring step cannot be transfer-bound here")
    per_rank_bw = (pack_tokens / n_static) * setup.model.kv_bytes_per_token / (step_t - lat)
    nic = per_rank_bw / setup.tp
    bwd = float(np.mean(FIG18["backward_over_forward"]))
    fitted = replace(base, cost=cost, nic_bw=nic, backward_factor=bwd)
    return Fig18Fit(attention_scale=k_att, linear_scale=k_lin, nic_bw=nic, backward_factor=bwd,
                    setup=fitted, nic_bw_before=setup.nic_bw)
