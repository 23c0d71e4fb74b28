"""The accuracy table: the stored values are the model's current ones; each row points somewhere."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from uneven import accuracy
from uneven.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]


def test_the_stored_values_are_what_the_model_computes_now():
    fresh = accuracy.table(fresh=True)
    stored = accuracy.table()
    for f, s in zip(fresh, stored, strict=True):
        assert f["model_value"] == pytest.approx(s["model_value"], rel=1e-9), (
            f"{f['key']}: the model now gives {f['model_value']:.6g}, the stored table "
            f"{s['model_value']:.6g}; run python -m uneven.accuracy --refresh")


def test_every_claim_has_a_model_and_a_stored_value_and_nothing_else():
    keys = [c.key for c in accuracy.CLAIMS]
    assert len(set(keys)) == len(keys)
    assert set(accuracy.MODELS) == set(keys)
    from uneven._accuracy_values import VALUES
    assert set(VALUES) == set(keys)


def test_labels_agree_with_the_papers_evidence():
    # the table says where a number was read and measured as the paper's evidence list does
    for c in accuracy.CLAIMS:
        paper = next(p for p in PAPERS if p.key == c.paper)
        assert any(e.label == c.label and e.kind == c.kind for e in paper.evidence), c.key


def _sections(nb_file: Path) -> set:
    cells = json.loads(nb_file.read_text(encoding="utf-8"))["cells"]
    found = set()
    for c in cells:
        for line in "".join(c["source"]).splitlines():
            m = re.match(r"^##\s+(\d+)\s+·", line) or re.match(r"^##\s+Appendix\s+([A-Z])\b",
                                                               line)
            if m:
                found.add(m.group(1))
    return found


def test_every_row_names_a_section_its_notebook_has():
    for c in accuracy.CLAIMS:
        nb, where = c.notebook.split(" ", 1)
        paper = next(p for p in PAPERS if p.key == c.paper)
        assert paper.notebook.startswith(nb), c.key
        section = where.removeprefix("§").removeprefix("App. ")
        assert section in _sections(ROOT / "notebooks" / f"{paper.notebook}.ipynb"), c.key


def test_the_paper_number_is_in_the_notebook_that_compares_it():
    for r in accuracy.table():
        paper = next(p for p in PAPERS if p.title == r["paper"])
        text = (ROOT / "notebooks" / f"{paper.notebook}.ipynb").read_text(encoding="utf-8")
        v = r["paper_value"]
        spellings = {f"{v:g}", f"{v:,.0f}", f"{v:.2f}", f"{v / 1e3:,.1f}",
                     f"{int(v) // 60} min {int(v) % 60} s"}  # 520 s is "8 min 40 s"
        assert any(s in text for s in spellings), (r["key"], spellings)


def test_ratio_is_model_over_paper_and_markdown_has_a_row_per_claim():
    rows = accuracy.table()
    for r in rows:
        assert r["ratio"] == pytest.approx(r["model_value"] / r["paper_value"])
    md = accuracy.render_markdown(rows).splitlines()
    assert len(md) == len(rows) + 2
    assert all(line.split(" | ")[4].endswith("(model)") for line in md[2:])


def test_bad_input_is_refused_with_the_parameter_named():
    with pytest.raises(ValueError, match="key must be one of"):
        accuracy.model_value("no.such")
    with pytest.raises(ValueError, match="fresh"):
        accuracy.table(fresh="yes")
    with pytest.raises(ValueError, match="unit"):
        replace(accuracy.CLAIMS[0], unit="furlongs")
    with pytest.raises(ValueError, match="value"):
        replace(accuracy.CLAIMS[0], value=-1.0)
