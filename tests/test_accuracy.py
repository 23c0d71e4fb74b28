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


# ---- the zh-TW edition: render_markdown speaks the language in force ------------------------

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: The English table's header and first row as they always were (English stays byte-identical).
EN_HEADER = ("| notebook | paper | quantity | paper (label; where measured; hardware) | model | "
             "model / paper | assumptions matched |")
EN_FIRST = ("| 01 §2 | Attack of the Bubbles (PipeMorph) | iteration time, 20 ms delay on link 0, "
            "the artifact's ZB policy (Fig. 5) | 440 ms [repo]; simulation; none (the artifact's "
            "simulator) | 440 ms (model) | 1.00 | matched: 4 stages, 12 micro-batches, 10 ms per "
            "op, as the artifact's simulator |")


def _rules():
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    sys.path.insert(0, str(ROOT / "tests"))
    from _i18n_msgids import catalog, catalog_problems, fields, literal_msgids
    from editions import i18n_rules

    return catalog, catalog_problems, fields, literal_msgids, i18n_rules


@pytest.fixture
def language():
    """Set a language for one test; back to $UNEVEN_LANG afterwards."""
    from uneven import i18n

    yield i18n.set_language
    i18n.set_language(None)


def test_every_claim_text_has_a_current_zh_tw_entry_and_the_catalog_nothing_else():
    catalog, catalog_problems, _, literal_msgids, _ = _rules()
    wanted = literal_msgids(ROOT / "lib/uneven/accuracy.py")
    # every claim's quantity, kind and matched text is marked where it is written
    shown = {(None, getattr(c, f)) for c in accuracy.CLAIMS for f in ("quantity", "kind",
                                                                       "matched")}
    assert not shown - set(wanted), f"not marked with N_(): {sorted(shown - set(wanted))}"
    problems = catalog_problems(catalog("accuracy"), wanted)
    assert not problems, "\n".join(problems)


def test_each_translation_keeps_numbers_units_labels_terms_and_punctuation():
    catalog, _, _, _, rules = _rules()
    terms = rules.load_terms()
    problems = []
    for key, e in catalog("accuracy").items():
        # a compound adjective "two 20-µs barriers" is "兩道 20 µs barrier": the same unit
        english = re.sub(r"(\d)-(µs|ms|s)\b", r"\1 \2", e.msgid)
        found = (rules.invariant_problems(english, e.msgstr)
                 + rules.term_problems(e.msgid, e.msgstr, terms, rules.exemptions(e.tcomment))
                 + rules.punctuation_problems(e.msgstr))
        if "{" not in e.msgid and not CJK.search(e.msgstr):
            found.append("no Chinese in the translation")
        problems += [f"{key[1]!r}: {p}" for p in found]
    assert not problems, "\n".join(problems)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_table_under_zh_tw_has_the_english_shape_and_numbers(language):
    _, _, _, _, rules = _rules()
    rows = accuracy.table()
    language("en")
    en = accuracy.render_markdown(rows).splitlines()
    language("zh_TW")
    zh = accuracy.render_markdown(rows).splitlines()
    assert len(zh) == len(en) == len(rows) + 2
    assert CJK.search(zh[0]) and zh[1] == en[1]
    for e_line, z_line in zip(en[2:], zh[2:], strict=True):
        e, z = _cells(e_line), _cells(z_line)
        assert len(z) == len(e) == 7, z_line
        # notebook, paper title, model value with (model), ratio: as in English
        assert [z[i] for i in (0, 1, 4, 5)] == [e[i] for i in (0, 1, 4, 5)], z_line
        assert CJK.search(z[2]) and CJK.search(z[3]) and CJK.search(z[6]), z_line
        assert rules.tokens(z_line).numbers == rules.tokens(e_line).numbers, z_line
        assert rules.tokens(z_line).labels == rules.tokens(e_line).labels, z_line
    assert all(r["quantity"] == c.quantity and not CJK.search(r["matched"] + r["kind"])
               for r, c in zip(accuracy.table(), accuracy.CLAIMS, strict=True))  # data: English


def test_the_table_under_english_is_as_it_always_was(language):
    language("en")
    md = accuracy.render_markdown().splitlines()
    assert md[0] == EN_HEADER and md[2] == EN_FIRST
    assert md[6].startswith("| 02 §4 | ByteScale | naive HDP step, case study | 272 s [paper]; "
                            "production; undisclosed | ") and md[6].endswith("| as the row above |")
    assert not CJK.search("\n".join(md))


def test_the_sites_accuracy_page_speaks_its_language(language):
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    from editions import website

    from uneven import i18n

    language("en")
    en = website._accuracy_page("en")
    assert f"\n{EN_HEADER}\n" in en and f"\n{EN_FIRST}\n" in en
    zh = website._accuracy_page("zh_TW")
    assert i18n.get_language() == "en"  # the language in force is left as it was
    assert "| 筆記本 | 論文 | 量 |" in zh and "同上一列" in zh and "僅見於本章" in zh
    assert zh.count("(model)") == en.count("(model)") and "accuracy_header" not in website.TEXT[
        "zh_TW"]
    assert website._accuracy_page("en") == en
