"""The six papers of the chapter page, as data: what is slow, where they sit, what they report.

Notebooks, the start page's map and the README all read this table, so a paper is described once.
Every number carries two labels:

* **where we read it**: [paper] stated by the authors (for ByteScale: its arXiv v1); [repo] from
  a public artifact (code, logs, README); [chapter] stated on the chapter page only; [3rd] read
  by a third party; [derived] arithmetic on stated numbers;
* **where it was measured** (:data:`EVIDENCE_KINDS`): ``testbed`` (a cluster set up for the
  experiment, e.g. with injected delays), ``production`` (a production cluster or job),
  ``simulation`` (a simulator), ``analysis`` (arithmetic or a model in the paper), or
  ``chapter-only`` (the paper is not public, so we cannot say how it was measured).

:attr:`Paper.evidence` lists each paper's headline numbers as :class:`Evidence`;
:func:`evidence_rows` flattens them for a table (notebook 07 renders it, nothing is typed twice).

>>> paper("bytescale").evidence[0].label
'paper'
>>> sorted({e.kind for p in PAPERS for e in p.evidence}) == sorted(EVIDENCE_KINDS)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ._fields import Checked, check_fields, choice, flag, text
from ._validate import _show, check_choice, check_int, check_str

__all__ = ["Paper", "PAPERS", "paper", "Evidence", "EVIDENCE_KINDS", "LABELS", "MAX_GPUS",
           "evidence_rows"]

#: Where a number was measured.
EVIDENCE_KINDS = ("testbed", "production", "simulation", "analysis", "chapter-only")
#: Where we read a number.
LABELS = ("paper", "repo", "chapter", "3rd", "derived")
#: Most accelerators an :class:`Evidence` run may state.
MAX_GPUS = 10**7


@dataclass(frozen=True)
class Evidence(Checked):
    """One headline number of a paper.

    ``claim``: the number and what it compares, in words; ``label``: where we read it
    (:data:`LABELS`); ``kind``: where it was measured (:data:`EVIDENCE_KINDS`); ``hardware``:
    the accelerators (``"undisclosed"`` when the paper does not say); ``scale``: the size of the
    run in words; ``gpus``: ``(fewest, most)`` accelerators of the run(s), or ``None``;
    ``note``: a caveat (another label's version of the same number, what is unverified);
    ``section``: where the notebook compares it with the model; ``source``: empty when the number
    is the paper's own, else the public document it comes from (a notebook's anchor, such as
    DeepEP's README for a paper that is not public). Checked on construction (strings, a
    label and a kind from the lists, ``gpus`` two integers in [1, 10**7]).
    """

    claim: str = text()
    label: str = choice(LABELS)
    kind: str = choice(EVIDENCE_KINDS)
    hardware: str = text()
    scale: str = text()
    gpus: tuple | None = None
    note: str = text(default="")
    section: str = text(default="")
    source: str = text(default="")

    def __post_init__(self):
        check_fields(self)
        gpus = self.gpus
        if gpus is not None:
            if not isinstance(gpus, (tuple, list)) or len(gpus) != 2:
                raise ValueError(f"gpus must be None or (fewest, most) positive ints; got "
                                 f"{_show(gpus)}")
            lo = check_int("gpus", gpus[0], lo=1, hi=MAX_GPUS)
            object.__setattr__(self, "gpus", (lo, check_int("gpus", gpus[1], lo=lo, hi=MAX_GPUS)))


@dataclass(frozen=True)
class Paper(Checked):
    """One paper: identifiers, placement on the map, its headline with a label, its evidence.

    ``headline``: one line for tables such as the start page's; ``evidence``: every headline
    number as :class:`Evidence`; ``public``: whether the paper's text could be read (else its
    numbers are [chapter]); ``artifact``: the public code or logs used, if any; ``system``: the
    :data:`uneven.plots.PALETTE` name its system is drawn with; ``short``: the slow piece in a
    few words, for small labels. Everything keyed by paper (the unevenness knobs, notebook 07's
    colours, the explorers benchmarked and warmed) is derived from :data:`PAPERS`, and
    ``tests/test_layout.py`` checks that each paper has all of them. Checked on
    construction (strings, ``parallelism`` and ``workload`` from their lists, ``evidence`` a
    tuple of at most 64 :class:`Evidence`, ``public`` a bool).
    """

    key: str = text()
    title: str = text()
    venue: str = text()
    parallelism: str = choice(("PP", "DP×CP", "EP"))
    workload: str = choice(("training", "serving"))
    slow_piece: str = text()
    notebook: str = text()
    headline: str = text()
    evidence: tuple = ()
    public: bool = flag(default=True)
    artifact: str = text(default="")
    system: str = text(default="")
    short: str = text(default="")

    def __post_init__(self):
        check_fields(self)
        ev = self.evidence
        if not isinstance(ev, (tuple, list)) or len(ev) > 64 or not all(
                isinstance(e, Evidence) for e in ev):
            raise ValueError(f"evidence must be a tuple of at most 64 Evidence; got {_show(ev)}")
        object.__setattr__(self, "evidence", tuple(ev))


PAPERS = (
    Paper("pipemorph", "Attack of the Bubbles (PipeMorph)", "NSDI 2026", "PP", "training",
          "a slow pipeline link", "01_attack_of_the_bubbles",
          "1.36× over ZeroBubble, 128 H800 GPUs, replayed delay trace [chapter]; 1.365× over 1F1B "
          "and 1.41× over ZeroBubble in the public artifact [repo]",
          evidence=(
              Evidence("1.36× ZeroBubble's throughput under a one-hour production delay trace "
                       "replayed as injected delays", "chapter", "testbed", "H800",
                       "128 GPUs", (128, 128),
                       "the public artifact reports 1.365× over 1F1B and 1.41× over ZeroBubble "
                       "on a synthetic trace of about 45 minutes [repo]", "01 §7"),
              Evidence("1.365× over 1F1B (28.84 vs 21.12 samples/s), 1.41× over ZeroBubble",
                       "repo", "testbed", "H800", "128 GPUs, TP8 × PP8 × DP2", (128, 128),
                       "synthetic trace of about 45 minutes; injected delays", "01 §7"),
              Evidence("iteration time 1.2–3.5× better under injected link delays", "paper",
                       "testbed", "H800", "clusters with injected delays", None, "", "01 §7"),
              Evidence("Fig. 5 (390 → 400 → 440 ms) and Fig. 8 (knees at (Δ − 1)·t)", "repo",
                       "simulation", "none (the artifact's simulator)", "2–4 stages", None,
                       "the model reproduces all of them", "01 §2–3"),
              Evidence("warm-up plan within 1.7–2.3% of an ILP optimum on average, 5.5% at "
                       "worst", "paper", "simulation", "none", "simulated pipelines", None,
                       "not re-derived here", "01 §7"),
          ),
          artifact="github.com/wutianyuan1/PipeMorph",
          system="PipeMorph", short="slow link"),
    Paper("bytescale", "ByteScale", "SIGCOMM 2025", "DP×CP", "training",
          "a long sequence", "02_bytescale",
          "at most 7.89× the throughput of a fixed DP×CP mesh, 2M tokens, GitHub data [paper]; "
          "the chapter ties it to LLaMA-7B on 1,024 GPUs [chapter]",
          evidence=(
              Evidence("at most 7.89× the throughput of a fixed DP × CP mesh, GitHub data, "
                       "2M-token context", "paper", "production", "undisclosed",
                       "production cluster (more than 12,000 GPUs in all)", None,
                       "the setting LLaMA-7B on 1,024 GPUs is the chapter's [chapter]; arXiv "
                       "v1's figure does not pin down the panel", "02 §9"),
              Evidence("2.41× with production data, Mistral-8×22B at a 2M-token context on "
                       "16,384 GPUs",
                       "chapter", "production", "undisclosed", "16,384 GPUs", (16384, 16384),
                       "not in arXiv v1; presumably the camera-ready; unverified", "02 App. C"),
              Evidence("Byted data: up to 4.26×; case study 8 min 40 s → 4 min 32 s → "
                       "2 min 37 s (3.31×)", "paper", "production", "undisclosed",
                       "LLaMA-7B, 2M context, 1,024 GPUs", (1024, 1024), "", "02 §4–5"),
              Evidence("ablation 1.59× → 2.01× → 3.69× → 3.89× (dynamic communication, "
                       "offload, balance, data loader)", "paper", "production", "undisclosed",
                       "1,024 GPUs", (1024, 1024), "", "02 §6"),
              Evidence("PP-Balance 3.42–4.28×, DP-Balance 6.21–7.89× at 2M, GitHub data",
                       "paper", "production", "undisclosed", "70B and MoE models", None, "",
                       "02 App. B"),
          ),
          artifact="none",
          system="balanced HDP", short="long sequence"),
    Paper("deepseek", "Insights into DeepSeek-V3", "ISCA 2025", "EP", "training",
          "the NIC that EP must cross", "03_deepseek_v3",
          "272.80 vs 272.52 B tokens/day, multi-plane vs shared-spine, 2,048 H800 (production) "
          "[paper]",
          evidence=(
              Evidence("272.80 vs 272.52 billion tokens/day on a multi-plane vs a shared-spine "
                       "network", "paper", "production", "H800", "full training job, 2,048 GPUs",
                       (2048, 2048), "also on the chapter page", "03 §4"),
              Evidence("DeepEP normal kernels 43 / 58 / 51 GB/s per GPU at EP16 / 32 / 64",
                       "repo", "testbed", "H800 + CX7 InfiniBand", "16–64 GPUs", (16, 64),
                       "the chapter says 42–58 GB/s [chapter]", "03 §3"),
              Evidence("up to 20 of 132 SMs per H800 spent on communication", "paper",
                       "production", "H800", "DeepSeek-V3 training", None,
                       "DeepEP's README sets 24 SMs (Buffer.set_num_sms) in its example "
                       "configuration [repo]", "07 §4"),
              Evidence("decode TPOT bound 14.76 ms at 50 GB/s, 0.82 ms at 900 GB/s", "paper",
                       "analysis", "H800 (arithmetic)", "one EP exchange per layer", None, "",
                       "03 §5"),
              Evidence("a two-layer multi-plane fat-tree reaches 16,384 GPUs", "paper",
                       "analysis", "64-port switches", "theoretical; about 2,000 deployed",
                       (2048, 16384), "", "03 §4"),
          ),
          artifact="github.com/deepseek-ai/DeepEP",
          system="one copy per node", short="NIC"),
    Paper("megascale", "MegaScale-MoE", "EuroSys 2026", "EP", "training",
          "cross-node TP/EP traffic in every layer", "04_megascale_moe",
          "1.65–1.88× Megatron-LM, 352B model, 240–1,440 H800 [paper]",
          evidence=(
              Evidence("1.65–1.88× the throughput of Megatron-LM on a 352B MoE model", "paper",
                       "testbed",
                       "H800", "240–1,440 GPUs", (240, 1440),
                       "runs at production scale; Megatron-LM at commit f1f03922", "04 §6"),
              Evidence("1.28× from SP + EP and both overlaps (ablation)", "paper", "testbed",
                       "H800", "240 GPUs", (240, 240), "", "04 §4"),
              Evidence("86% strong-scaling efficiency from 240 to 1,440 GPUs", "derived",
                       "testbed", "H800", "240–1,440 GPUs", (240, 1440),
                       "Table 3's tokens/s at 1,440 GPUs over six times those at 240", "04 §6"),
              Evidence("communication 43.6% of the forward pass, 32% of the step", "paper",
                       "production", "Hopper", "a profile of an internal MoE model", None, "",
                       "04 §1"),
              Evidence("SP + EP 14.9–32.9% above TP + TP in MFU, one node", "paper",
                       "testbed", "H800", "8 GPUs per model", (8, 8), "", "04 §4"),
          ),
          artifact="none",
          system="SP+EP", short="hot expert (training)"),
    Paper("balancing", "Balancing and Beyond", "SIGCOMM 2026", "EP", "serving",
          "a hot expert and its NIC", "05_balancing_and_beyond",
          "communication 190.21 → 134.00 µs vs DeepEP default, EP32 on H20 [chapter]",
          evidence=(
              Evidence("communication time 190.21 µs with DeepEP's default, 134.00 µs with the "
                       "paper's design", "chapter",
                       "chapter-only", "H20", "EP32 (4 hosts)", (32, 32),
                       "the chapter: claims from production, and runs on H20 and H800", "05 §10"),
              Evidence("busiest expert about 8× the median expert's tokens", "chapter",
                       "chapter-only", "undisclosed", "one sampled production layer", None,
                       "", "05 §1"),
              Evidence("DeepEP low-latency dispatch 77 / 155 / 194 µs at EP8 / 32 / 256",
                       "repo", "testbed", "H800 + CX7 InfiniBand", "8–256 GPUs", (8, 256),
                       "the transport the model fits; not this paper's number", "05 §10",
                       source="DeepEP docs/legacy.md (README until April 2026)"),
          ),
          public=False, artifact="none (EPLB and DeepEP used as public anchors)",
          system="NIC-aware", short="hot expert + NIC"),
    Paper("ubep", "UBEP", "SIGCOMM 2026", "EP", "serving",
          "a barrier and far hops in a superpod", "06_ubep",
          "dispatch time up to 52.4% under CANN EP's, 64 NPUs [chapter]",
          evidence=(
              Evidence("dispatch takes up to 52.4% less time than with Huawei's CANN EP",
                       "chapter", "chapter-only", "Ascend 910C (CloudMatrix384)", "64 NPUs",
                       (64, 64),
                       "the chapter: a slice of a superpod in production use", "06 §7"),
              Evidence("P99 TPOT (time per output token) lower by up to 11.1%", "chapter",
                       "chapter-only", "Ascend 910C (CloudMatrix384)", "one partition",
                       None, "", "06 §5"),
              Evidence("an access two hops away takes 11.5× as long as a local access", "chapter",
                       "chapter-only", "CloudMatrix384 UB fabric", "—", None, "", "06 §1"),
              Evidence("CloudMatrix-Infer dispatch 116 µs at EP8, 152 µs at EP256", "paper",
                       "testbed", "Ascend 910C (CloudMatrix384)", "EP8–EP256", (8, 256),
                       "an operator benchmark run on a production superpod; its own operator, "
                       "neither CANN's nor UBEP's", "06 §4",
                       source="CloudMatrix384 report, arXiv:2506.12708"),
          ),
          public=False, artifact="none (the CloudMatrix384 report used as a public anchor)",
          system="UBEP", short="barrier"),
)


def paper(key: str) -> Paper:
    """Look a paper up by key (``'pipemorph'``, ``'deepseek'``, ...).

    >>> paper("deepseek").venue
    'ISCA 2025'
    """
    key = check_choice("key", check_str("key", key), [p.key for p in PAPERS])
    return next(p for p in PAPERS if p.key == key)


def evidence_rows(papers=None) -> list:
    """Every headline number as a dict: ``notebook``, ``paper``, ``claim``, ``label`` (as
    ``[paper]``), ``kind``, ``hardware``, ``scale``, ``gpus``, ``note``, ``section``,
    ``source`` (empty for the paper's own numbers).

    >>> rows = evidence_rows()
    >>> rows[0]["notebook"], rows[0]["label"]
    ('01', '[chapter]')
    """
    papers = PAPERS if papers is None else papers
    if not isinstance(papers, (list, tuple)) or len(papers) > 1000:
        raise ValueError(f"papers must be a list of at most 1,000 Paper objects; got "
                         f"{_show(papers)}")
    out = []
    for p in papers:
        if not isinstance(p, Paper):
            raise ValueError(f"papers must be Paper objects; got {type(p).__name__}")
        for e in p.evidence:
            out.append({"notebook": p.notebook[:2], "paper": p.title, "claim": e.claim,
                        "label": f"[{e.label}]", "kind": e.kind, "hardware": e.hardware,
                        "scale": e.scale, "gpus": e.gpus, "note": e.note,
                        "section": e.section, "source": e.source})
    return out
