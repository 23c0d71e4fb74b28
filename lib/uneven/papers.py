"""The six papers of the chapter page, as data: what is slow, where they sit, what they report.

Notebooks, the start page's map and the README all read this table, so a paper is described once.
Every headline number carries its label: [paper] stated by the authors, [repo] from their public
artifact, [chapter] stated on the chapter page only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Paper", "PAPERS", "paper"]


@dataclass(frozen=True)
class Paper:
    """One paper: identifiers, placement on the map, and its headline with a label."""

    key: str
    title: str
    venue: str
    parallelism: str  # "PP", "DP×CP" or "EP"
    workload: str  # "training" or "serving"
    slow_piece: str
    notebook: str
    headline: str

    def __post_init__(self):
        from ._validate import check_choice, check_str

        for name in ("key", "title", "venue", "slow_piece", "notebook", "headline"):
            check_str(name, getattr(self, name))
        check_choice("parallelism", self.parallelism, ("PP", "DP×CP", "EP"))
        check_choice("workload", self.workload, ("training", "serving"))


PAPERS = (
    Paper("pipemorph", "Attack of the Bubbles (PipeMorph)", "NSDI 2026", "PP", "training",
          "a slow pipeline link", "01_attack_of_the_bubbles",
          "1.36× over ZeroBubble, 128 H800 GPUs, replayed delay trace [chapter]; 1.365× over 1F1B "
          "and 1.41× over ZeroBubble in the public artifact [repo]"),
    Paper("bytescale", "ByteScale", "SIGCOMM 2025", "DP×CP", "training",
          "a long sequence", "02_bytescale",
          "up to 7.89× over a static DP×CP mesh, LLaMA-7B, 2M tokens, 1,024 GPUs [paper]"),
    Paper("deepseek", "Insights into DeepSeek-V3", "ISCA 2025", "EP", "training",
          "the NIC that EP must cross", "03_deepseek_v3",
          "272.80 vs 272.52 B tokens/day, multi-plane vs shared-spine, 2,048 H800 (production) "
          "[paper]"),
    Paper("megascale", "MegaScale-MoE", "EuroSys 2026", "EP", "training",
          "cross-node TP/EP traffic in every layer", "04_megascale_moe",
          "1.65–1.88× Megatron-LM, 352B model, 240–1,440 H800 [paper]"),
    Paper("balancing", "Balancing and Beyond", "SIGCOMM 2026", "EP", "serving",
          "a hot expert and its NIC", "05_balancing_and_beyond",
          "communication 190.21 → 134.00 µs vs DeepEP default, EP32 on H20 [chapter]"),
    Paper("ubep", "UBEP", "SIGCOMM 2026", "EP", "serving",
          "a barrier and far hops in a superpod", "06_ubep",
          "dispatch latency up to 52.4% below CANN EP, 64 NPUs [chapter]"),
)


def paper(key: str) -> Paper:
    """Look a paper up by key (``'pipemorph'``, ``'deepseek'``, ...).

    >>> paper("deepseek").venue
    'ISCA 2025'
    """
    from ._validate import check_str

    key = check_str("key", key)
    for p in PAPERS:
        if p.key == key:
            return p
    keys = ", ".join(p.key for p in PAPERS)
    raise ValueError(f"key must be one of {keys}; got {key!r}")
