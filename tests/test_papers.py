"""The papers table: its existing API, the evidence fields, and the labels the notebooks rely on."""

import pytest

from uneven import plots
from uneven.papers import EVIDENCE_KINDS, LABELS, PAPERS, Evidence, evidence_rows, paper


def test_existing_api_and_map_fields():
    assert [p.key for p in PAPERS] == ["pipemorph", "bytescale", "deepseek", "megascale",
                                       "balancing", "ubep"]
    for p in PAPERS:
        assert paper(p.key) is p
        assert p.parallelism in ("PP", "DP×CP", "EP") and p.workload in ("training", "serving")
        assert p.notebook[:2].isdigit() and p.title and p.venue and p.slow_piece and p.headline
    fig, ax = plots.figure(8, 4)
    plots.paper_map(ax, highlight="ubep")  # the start page's map still draws
    with pytest.raises(ValueError, match="key"):
        paper("adaptra")


def test_every_number_carries_its_labels():
    for p in PAPERS:
        assert p.evidence, p.key
        for e in p.evidence:
            assert e.label in LABELS and e.kind in EVIDENCE_KINDS and e.hardware and e.scale
    # the two serving papers are not public: their own numbers can only be the chapter's
    for key in ("balancing", "ubep"):
        p = paper(key)
        assert not p.public
        assert {e.label for e in p.evidence if not e.source} == {"chapter"}
        assert {e.kind for e in p.evidence if not e.source} == {"chapter-only"}


def test_bytescale_headline_setting_is_the_chapters():
    p = paper("bytescale")
    first = p.evidence[0]
    assert "7.89" in first.claim and first.label == "paper"
    assert "LLaMA-7B" not in first.claim and "LLaMA-7B" in first.note and "[chapter]" in first.note
    assert "[chapter]" in p.headline.split("LLaMA-7B")[1]
    assert next(e for e in p.evidence if "16,384" in e.scale).label == "chapter"


def test_evidence_rows_and_validation():
    rows = evidence_rows()
    assert len(rows) == sum(len(p.evidence) for p in PAPERS)
    assert {r["kind"] for r in rows} == set(EVIDENCE_KINDS)
    assert all(r["label"].startswith("[") for r in rows)
    with pytest.raises(ValueError, match="label"):
        Evidence("x", "blog", "testbed", "H800", "8 GPUs")
    with pytest.raises(ValueError, match="kind"):
        Evidence("x", "paper", "lab", "H800", "8 GPUs")
    with pytest.raises(ValueError, match="gpus"):
        Evidence("x", "paper", "testbed", "H800", "8 GPUs", gpus=(16, 8))
    with pytest.raises(ValueError, match="papers"):
        evidence_rows(["not a paper"])


def test_evidence_and_papers_are_checked():
    import dataclasses

    e = paper("deepseek").evidence[0]
    for change, name in (({"gpus": (True, 8)}, "gpus"), ({"gpus": 8}, "gpus"),
                         ({"gpus": (1, 10**400)}, "gpus"), ({"hardware": 1j}, "hardware"),
                         ({"label": ["paper"]}, "label")):
        with pytest.raises(ValueError, match=name):
            dataclasses.replace(e, **change)
    p = paper("deepseek")
    with pytest.raises(ValueError, match="evidence"):
        dataclasses.replace(p, evidence=("not evidence",))
    with pytest.raises(ValueError, match="public"):
        dataclasses.replace(p, public=1)
    with pytest.raises(ValueError, match="papers"):
        evidence_rows("deepseek")
