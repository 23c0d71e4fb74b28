"""The translated editions (issue 26; zh-TW first): catalogs that cannot drift from the English.

* every ``NN`` notebook has a complete zh-TW catalog (``locale/zh_TW/LC_MESSAGES/NN_name.po``):
  every block translated, none stale (its English changed since: the test names the notebook and
  the cell), none left over; a notebook without one FAILS, it is never skipped;
* every translated entry keeps its English's formulas, inline code, link targets, evidence
  labels (a compound one, ``[paper, Table 3]``, by its keyword), numbers, units and structure
  (``editions.i18n_rules``), uses the term table's words (``locale/zh_TW/terms.tsv``), no
  forbidden variant or Simplified-only character, and full-width punctuation between Chinese
  characters;
* the machinery: blocks round-trip, extract marks changes stale and keeps the old translation as
  a hint, build keeps code cells byte for byte, the zh-TW start page executes with the figure
  contract of the English one, and ``uneven.set_language`` reads the library's catalog.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import polib
import pytest

from uneven import i18n as lib_i18n
from uneven import plots

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import discover, i18n  # noqa: E402
from editions import i18n_rules as rules  # noqa: E402

LANG = "zh_TW"
NOTEBOOKS = discover.notebook_paths()
CATALOGUED = [p for p in NOTEBOOKS if i18n.catalog_path(p, LANG).is_file()]
TERMS = rules.load_terms(LANG)
CHAPTER = ROOT.parent / "shared" / "chapter" / "parallelism-research-when-ranks-are-not-equal.txt"


def _entries(path: Path):
    return [e for e in polib.pofile(str(i18n.catalog_path(path, LANG))) if not e.obsolete]


def _translated(path: Path):
    return [e for e in _entries(path) if e.msgstr]


# ---- coverage and staleness -------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_a_complete_current_catalog(path):
    st = i18n.status(path, LANG)
    assert st.has_catalog, (f"{path.name}: no {LANG} catalog; run `python tools/editions i18n "
                            f"extract {path.name[:2]}` and translate it (locale/README.md)")
    problems = [f"stale {s}" for s in st.stale]
    problems += [f"untranslated {c}" for c in st.missing]
    problems += [f"left over {c} (run extract)" for c in st.extra]
    assert not problems, (f"{path.name}: {st.coverage:.1f}% of {st.entries} blocks current in "
                          f"{LANG}:\n" + "\n".join(problems[:40]))


def test_the_start_page_is_catalogued():
    assert NOTEBOOKS[0].name == "00_start_here.ipynb" and NOTEBOOKS[0] in CATALOGUED


# ---- invariants, terms, script ----------------------------------------------------------------

@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_translations_keep_numbers_formulas_code_links_and_labels(path):
    problems = []
    for e in _translated(path):
        for p in rules.invariant_problems(e.msgid, e.msgstr):
            problems.append(f"{path.name} {e.msgctxt}: {p}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_translations_use_the_term_table_and_taiwan_usage(path):
    problems = []
    for e in _translated(path):
        exempt = rules.exemptions(e.tcomment)
        for p in rules.term_problems(e.msgid, e.msgstr, TERMS, exempt):
            problems.append(f"{path.name} {e.msgctxt}: {p}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_translations_use_full_width_punctuation(path):
    problems = [f"{path.name} {e.msgctxt}: {p}"
                for e in _translated(path) for p in rules.punctuation_problems(e.msgstr)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_translations_render_their_emphasis(path):
    """No '*' shows on the page that the English does not show (emphasis closed after a
    full-width mark and before a CJK character stays literal in CommonMark)."""
    pytest.importorskip("markdown_it")
    problems = [f"{path.name} {e.msgctxt}: {p}" for e in _translated(path)
                for p in rules.emphasis_problems(e.msgid, e.msgstr)]
    assert not problems, "\n".join(problems)


def test_the_punctuation_check_flags_half_width_marks_between_chinese_characters():
    for mark, full in rules.FULL_WIDTH.items():
        found = rules.punctuation_problems(f"第一句{mark}第二句。")
        assert len(found) == 1 and repr(mark) in found[0] and repr(full) in found[0], mark
        assert rules.punctuation_problems(f"第一句{full}第二句。") == []
    # emphasis and a space after the mark do not hide it: **開始之前:** 只需要
    assert rules.punctuation_problems("**開始之前:** 只需要 Python。")
    # never inside code, formulas, link targets or labels, nor between numbers or Latin words
    fine = ("見 `f(a, b)` 與 $x(t)$，[01](01_x.ipynb)(英文)；比例 1:1、共 1,024 顆 GPU，"
            "詳見 [paper, 表 3] 與 (model；擬合)，以及 DeepSeek-AI, ISCA 2025。")
    assert rules.punctuation_problems(fine) == []


def test_the_library_catalogs_use_taiwan_usage():
    for po in sorted(lib_i18n.LOCALE_DIR.glob("*/LC_MESSAGES/*.po")):
        for e in polib.pofile(str(po)):
            assert not rules.forbidden_problems(e.msgstr, TERMS), (po.name, e.msgid)


def test_the_invariant_check_catches_each_kind_of_slip():
    en = ("At 50 GB/s that is **2,240 µs** [derived]; see `nic_down` and "
          "[01](01_attack_of_the_bubbles.ipynb), $T = S/B$ (model).")
    good = ("以 50 GB/s 計算是 **2240 µs** [derived];見 `nic_down` 與 "
            "[01](01_attack_of_the_bubbles.ipynb),$T = S/B$ (model)。")
    assert rules.invariant_problems(en, good) == []
    slips = {
        "numbers": good.replace("2240", "2204"),
        "units": good.replace("50 GB/s", "50 Gb/s"),
        "labels": good.replace("[derived]", "(推導)"),
        "code": good.replace("`nic_down`", "nic_down"),
        "targets": good.replace("01_attack_of_the_bubbles.ipynb", "zh_TW/01.ipynb"),
        "formulas": good.replace("$T = S/B$", "$T=S/B$"),
        "structure": "# " + good,
    }
    for kind, bad in slips.items():
        found = rules.invariant_problems(en, bad)
        assert found and found[0].startswith(kind), (kind, found)
    # the chapter's own way of writing a ratio is allowed: 1.36× or 1.36 倍
    assert rules.invariant_problems("1.36× ZeroBubble", "ZeroBubble 的 1.36 倍") == []
    # "N times" that counts may be N 次, but a ratio written N× may not
    assert rules.invariant_problems("it crosses 3.5 times", "它跨越 3.5 次") == []
    assert rules.invariant_problems("it crosses 3.5 times", "它跨越 3.5 倍") == []
    assert rules.invariant_problems("1.36× ZeroBubble", "ZeroBubble 的 1.36 次")
    assert rules.invariant_problems("it crosses 3.5 times", "它跨越 3.5 份")
    # a compound label keeps its keyword, as often as the English has it; the rest may be
    # translated
    en = "as [paper, Table 3] says, and [repo: the artifact] (model; fitted to [repo])"
    assert rules.invariant_problems(
        en, "如 [paper, 表 3] 所說，以及 [repo：artifact] (model；擬合自 [repo])") == []
    for bad in ("如表 3 所說，以及 [repo：artifact] (model；擬合自 [repo])",
                "如 [paper, 表 3] 所說，以及 artifact (model；擬合自 [repo])",
                "如 [paper, 表 3] 所說，以及 [repo：artifact]（模型；擬合自 [repo]）"):
        found = rules.invariant_problems(en, bad)
        assert found and found[0].startswith("labels"), (bad, found)
    assert rules.invariant_problems("[derived from Table 3]", "[derived，由表 3 算出]") == []
    assert rules.invariant_problems("[paper,\nTable 3]", "[paper, 表 3]") == []
    assert rules.invariant_problems("| a | b |\n|---|---|", "| 甲 | 乙 | 丙 |\n|---|---|")


def test_the_term_check_catches_another_rendering_and_mainland_words():
    en = "A bubble in the pipeline costs memory."
    assert rules.term_problems(en, "管線中的氣泡會花掉記憶體。", TERMS) == []
    assert any("bubble" in p for p in rules.term_problems(en, "管線中的空閒會花掉記憶體。", TERMS))
    assert any("內存" in p for p in rules.term_problems(en, "管線中的氣泡會花掉內存。", TERMS))
    assert any("Simplified" in p
               for p in rules.term_problems(en, "管线中的气泡会花掉记忆体。", TERMS))
    # the longer term wins: "expert placement" needs 專家配置, not 放置
    assert rules.term_problems("Expert placement matters.", "專家配置很重要。", TERMS) == []
    # a visible exemption for a word that means something else here
    assert rules.term_problems("No Binder link.", "沒有 Binder 連結。", TERMS)
    assert rules.term_problems("No Binder link.", "沒有 Binder 連結。", TERMS, {"link"}) == []
    # a term of several words is found across a line break
    en = "Under context\nparallelism the ring is the hidden\nratio's whole story."
    assert any("context parallelism" in p for p in rules.term_problems(en, "在序列切分下。", TERMS))
    # every form of offload, and "die" rendered 晶粒 (the English word only in code)
    for en in ("Offloading helps.", "It is offloaded.", "It offloads."):
        assert any("offload" in p for p in rules.term_problems(en, "它有幫助。", TERMS)), en
        assert rules.term_problems(en, "卸載有幫助。", TERMS) == [], en
    assert rules.term_problems("A 48-core die.", "一個 48 核心的晶粒。", TERMS) == []
    assert any("dies?" in p for p in rules.term_problems("A die.", "一個晶片。", TERMS))
    # the renderings of this edition's newer terms, and their forbidden variants
    for en, good, bad in (("the relay", "轉送", None),
                          ("a replica", "副本", None),
                          ("a baseline", "基準", "基線"),
                          ("a collective", "集合通訊", "集體通訊"),
                          ("the operator", "運算子", "操作符"),
                          ("the closed form", "封閉形式", "封閉解"),
                          ("the critical\npath", "關鍵路徑", "關鍵路線"),
                          ("jitter", "抖動", None),
                          ("the hiding ratio", "隱藏比", "隱藏率"),
                          ("an ablation", "消融實驗", None),
                          ("to re-plan", "重新規劃", "重規劃"),
                          ("one copy", "一份複本", "拷貝"),
                          ("the host", "主機", None)):
        assert rules.term_problems(en, good + "。", TERMS) == [], en
        if bad:
            assert any(repr(bad) in p for p in rules.term_problems(en, good + bad, TERMS)), en


def test_the_term_table_is_consistent():
    englishes = [t.english.lower() for t in TERMS]
    assert len(englishes) == len(set(englishes)), "a term is listed twice"
    for term in TERMS:
        assert not term.pattern.search(" "), term  # a valid pattern that needs a word
        assert not set(term.rendering) & set(rules.SIMPLIFIED_ONLY), term
        for other in TERMS:
            assert term.rendering not in other.forbidden, (term, other)


def test_the_simplified_only_list_holds_no_traditional_character():
    # Taiwan usage never holds one of the listed characters (else the list would flag correct
    # text): the start page's glossary, and the chapter page's zh-TW text when it is beside the
    # checkout (../shared/chapter/, as in CI)
    text = "".join(c.source for c in nbformat.read(NOTEBOOKS[0], as_version=4).cells)
    assert "資料平行" in text and "記憶體" in text
    if CHAPTER.is_file():
        text += CHAPTER.read_text(encoding="utf-8", errors="replace")
    assert not set(text) & set(rules.SIMPLIFIED_ONLY)
    assert {"这", "们", "为", "时", "个", "说", "对", "发", "与", "进", "过", "网", "络", "数",
            "据", "内"} <= set(rules.SIMPLIFIED_ONLY)
    # Traditional characters that Taiwan writes every day and that look like (or are also)
    # Simplified ones: none is listed (缺 was, and flagged correct text)
    traditional = ("缺才了干台面只后谷系准周几云采卷千斗升仆姜志制症朴杰凶借向局占表咸征曲松舍余"
                   "冬合游致郁欲御岳")
    assert not set(traditional) & set(rules.SIMPLIFIED_ONLY)
    assert rules.forbidden_problems("記憶體缺一塊，預算拮据；夸克。", TERMS) == []
    assert rules.forbidden_problems("预算拮据", TERMS) == ["Simplified-only characters: 预"]


# ---- blocks -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_blocks_round_trip_and_never_split_a_table_or_formula(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        pieces = i18n.segments(cell.source)
        assert "".join(p.text for p in pieces) == cell.source, cell.id
        for p in pieces:
            if p.kind == "text":
                lines = p.text.splitlines()
                assert rules.FORMULA.sub("", p.text.replace("\\$", "")).count("$") == 0, \
                    (cell.id, p.text[:80])
                assert p.text == p.text.strip("\n") and lines
        # a table is one block: no block boundary between two table rows
        for before, sep, after in zip(pieces, pieces[1:], pieces[2:], strict=False):
            if before.kind == after.kind == "text" and sep.text == "\n":
                assert not (before.text.splitlines()[-1].startswith("|")
                            and after.text.startswith("|")), cell.id


def test_blocks_follow_the_markdown_structure():
    src = ("## Heading\nA paragraph\nthat goes on.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
           "$$\nx = 1\n\ny = 2\n$$\n\n<details><summary>Solution 1</summary>\n\nText.\n"
           "</details>\n\n```python\nx = 1\n\ny = 2\n```")
    kinds = [(p.kind, p.text.split("\n")[0]) for p in i18n.segments(src) if p.kind != "sep"]
    assert kinds == [("text", "## Heading"), ("text", "A paragraph"), ("text", "| a | b |"),
                     ("fixed", "$$"), ("text", "<details><summary>Solution 1</summary>"),
                     ("text", "Text."), ("fixed", "</details>"), ("fixed", "```python")]


# ---- extract, status, build on a notebook of the test's own -----------------------------------

@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALE", tmp_path / "locale")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nFirst paragraph.\n\nSecond paragraph.",
                                      id="m1"),
        nbformat.v4.new_code_cell("x = 1  # code", id="k1"),
        nbformat.v4.new_markdown_cell("See [README](../README.md) and [01](01_x.ipynb).",
                                      id="m2"),
    ])
    path = tmp_path / "99_scratch.ipynb"
    nbformat.write(nb, path)
    return path


def _fill(path: Path, translations: dict[str, str]) -> None:
    cat = i18n.catalog_path(path, LANG)
    po = polib.pofile(str(cat))
    for e in po:
        if e.msgctxt in translations:
            e.msgstr = translations[e.msgctxt]
            if "fuzzy" in e.flags:
                e.flags.remove("fuzzy")
    po.save(str(cat))


def test_extract_marks_changes_stale_and_status_names_the_cell(scratch):
    r = i18n.extract(scratch, LANG)
    assert r.entries == 4 and len(r.new) == 4
    st = i18n.status(scratch, LANG)
    assert st.has_catalog and st.coverage == 0 and len(st.missing) == 4 and not st.complete
    _fill(scratch, {"m1#0": "# 標題", "m1#1": "第一段。", "m1#2": "第二段。",
                    "m2#0": "見 [README](../README.md) 與 [01](01_x.ipynb)。"})
    assert i18n.status(scratch, LANG).complete

    nb = nbformat.read(scratch, as_version=4)  # the English changes; nobody runs extract
    nb.cells[0].source = "# Title\n\nFirst paragraph, changed.\n\nSecond paragraph."
    nbformat.write(nb, scratch)
    st = i18n.status(scratch, LANG)
    assert not st.complete and len(st.stale) == 1
    assert st.stale[0].startswith("m1#1 (cell 0)") and "changed" in st.stale[0]

    r = i18n.extract(scratch, LANG)  # now extract: stale, the old text kept as the hint
    assert r.changed == ["m1#1"] and not r.new
    entry = {e.msgctxt: e for e in polib.pofile(str(i18n.catalog_path(scratch, LANG)))}["m1#1"]
    assert entry.fuzzy and entry.msgstr == "第一段。" and entry.previous_msgid == "First paragraph."
    assert "fuzzy" in i18n.status(scratch, LANG).stale[0]
    built, fallbacks = i18n.translated_notebook(scratch, LANG)
    assert fallbacks == ["m1#1"] and "First paragraph, changed." in built.cells[0].source

    nb.cells.pop(0)  # a removed cell's entries are dropped
    nbformat.write(nb, scratch)
    r = i18n.extract(scratch, LANG)
    assert sorted(r.removed) == ["m1#0", "m1#1", "m1#2"]
    assert [e.msgctxt for e in polib.pofile(str(i18n.catalog_path(scratch, LANG)))] == ["m2#0"]


def test_an_edited_msgid_or_hash_is_stale(scratch):
    i18n.extract(scratch, LANG)
    _fill(scratch, {"m1#0": "# 標題", "m1#1": "第一段。", "m1#2": "第二段。", "m2#0": "見。"})
    cat = i18n.catalog_path(scratch, LANG)
    po = polib.pofile(str(cat))
    po[1].msgid = "First paragraph (edited by hand)."
    po.save(str(cat))
    assert "msgid differs" in " ".join(i18n.status(scratch, LANG).stale)
    po[1].msgid = "First paragraph."
    po[1].comment = po[1].comment.replace(po[1].comment[13:20], "0000000")
    po.save(str(cat))
    assert "source-sha1 differs" in " ".join(i18n.status(scratch, LANG).stale)


def test_a_moved_block_keeps_its_translation(scratch):
    i18n.extract(scratch, LANG)
    _fill(scratch, {"m1#2": "第二段。"})
    nb = nbformat.read(scratch, as_version=4)
    nb.cells[0].source = "# Title\n\nNew first paragraph.\n\nFirst paragraph.\n\nSecond paragraph."
    nbformat.write(nb, scratch)
    r = i18n.extract(scratch, LANG)
    assert "m1#3" in r.moved and "m1#1" in r.new
    entries = {e.msgctxt: e for e in polib.pofile(str(i18n.catalog_path(scratch, LANG)))}
    assert entries["m1#3"].msgstr == "第二段。" and not entries["m1#3"].fuzzy


def test_build_keeps_code_and_relinks(scratch, monkeypatch, tmp_path):
    i18n.extract(scratch, LANG)
    _fill(scratch, {"m2#0": "見 [README](../README.md) 與 [01](01_x.ipynb)。"})
    built, fallbacks = i18n.translated_notebook(scratch, LANG)
    assert sorted(fallbacks) == ["m1#0", "m1#1", "m1#2"]
    assert built.cells[-1].source == "見 [README](../../README.md) 與 [01](01_x.ipynb)。"
    assert i18n.relink('<img src="../figures/a.png">') == '<img src="../../figures/a.png">'
    monkeypatch.setattr(i18n, "output_path", lambda nb, lang: tmp_path / "out" / nb.name)
    with pytest.raises(discover.EditionError, match="3 block"):
        i18n.build(scratch, LANG, strict=True)
    dest, _ = i18n.build(scratch, LANG)
    assert nbformat.read(dest, as_version=4).cells[2].source == "x = 1  # code"


# ---- the generated start page -----------------------------------------------------------------

def _code_cells(nb):
    return [(c.id, c.source, c.metadata) for c in nb.cells
            if c.cell_type == "code" and I18N_TAG not in c.metadata.get("tags", [])]


I18N_TAG = i18n.I18N_TAG


@pytest.mark.parametrize("path", CATALOGUED, ids=lambda p: p.name)
def test_the_edition_has_the_english_code_cells_and_one_language_cell(path):
    english = nbformat.read(path, as_version=4)
    built, _ = i18n.translated_notebook(path, LANG)
    assert _code_cells(built) == _code_cells(english)
    added = [c for c in built.cells if I18N_TAG in c.metadata.get("tags", [])]
    assert len(added) == 1 and f"uneven.set_language({LANG!r})" in added[0].source
    assert len(built.cells) == len(english.cells) + 1
    kinds = [c.cell_type for c in built.cells if c not in added]
    assert kinds == [c.cell_type for c in english.cells]


def test_the_editions_badges_open_the_zh_tw_notebook_on_binder(monkeypatch):
    """The badge cell is written by the stamp, not translated: unpublished, a Chinese note that
    names the zh-TW `make lab`; published, Binder opens notebooks/zh_TW/ (its postBuild builds
    them) and Colab, which opens files from git, the English notebook, and says so."""
    from editions import stamp

    from uneven import online

    path = NOTEBOOKS[1]
    assert not any(u.cell_id == stamp.BADGES_ID for u in i18n.units(discover.load(path).nb))
    for repository in (None, "someone/uneven"):
        monkeypatch.setattr(online, "REPOSITORY", repository)
        built, _ = i18n.translated_notebook(path, LANG)
        (badges,) = [c for c in built.cells if c.get("id") == stamp.BADGES_ID]
        english = stamp.badges_source(path.name)
        if repository is None:
            assert badges.source == stamp.NOT_PUBLISHED_ZH_TW != english
            assert "`make lab EDITION=zh_TW`" in badges.source
            continue
        assert f"labpath=notebooks%2Fzh_TW%2F{path.name}" in badges.source
        assert f"labpath=notebooks%2F{path.name}" in english
        assert f"blob/main/notebooks/{path.name}" in badges.source and "英文版" in badges.source
    with pytest.raises(ValueError, match="lang"):
        stamp.badges_source(path.name, "zh_CN")
    with pytest.raises(ValueError, match="lang"):
        online.binder_url(path.name, "someone/uneven", lang="zh")


@pytest.mark.notebook
def test_the_zh_tw_start_page_builds_strictly_and_executes(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tests"))
    from run_notebooks import run
    from test_notebooks import figure_contract_problems

    built, fallbacks = i18n.translated_notebook(NOTEBOOKS[0], LANG)
    assert fallbacks == []
    folder = tmp_path / "notebooks" / LANG  # the same depth as notebooks/zh_TW/ in the checkout
    folder.mkdir(parents=True)
    (tmp_path / "figures").mkdir()
    dest = folder / NOTEBOOKS[0].name
    nbformat.write(built, dest)
    monkeypatch.delenv("UNEVEN_FIGURES", raising=False)
    monkeypatch.delenv(lib_i18n.ENV, raising=False)
    nb, _ = run(dest, timeout=300)
    assert not figure_contract_problems(nb, dest.name)
    # figures_dir() found the checkout-like root from notebooks/zh_TW/, and the language sent
    # them to figures/zh_TW/, never over the English figures
    assert sorted(p.name for p in (tmp_path / "figures" / LANG).glob("*.png")) == [
        "00_h800_topology.png", "00_hot_node_heatmap.png", "00_paper_map.png"]
    assert not list((tmp_path / "figures").glob("*.png"))


# ---- the library's language setting -----------------------------------------------------------

@pytest.fixture
def library_catalog(tmp_path, monkeypatch):
    monkeypatch.setattr(lib_i18n, "LOCALE_DIR", tmp_path)
    monkeypatch.delenv(lib_i18n.ENV, raising=False)
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": "zh_TW"}
    po.append(polib.POEntry(msgid="right", msgstr="正確"))
    po.append(polib.POEntry(msgid="bottleneck", msgstr="瓶頸", msgctxt="figure title"))
    po.append(polib.POEntry(msgid="old", msgstr="舊", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="empty", msgstr=""))
    path = lib_i18n.catalog_path("zh_TW")
    path.parent.mkdir(parents=True)
    po.save(str(path))
    yield path
    lib_i18n.set_language(None)


def test_set_language_switches_the_library_strings(library_catalog):
    assert lib_i18n.get_language() == "en" and lib_i18n.gettext("right") == "right"
    import uneven

    assert uneven.set_language("zh-TW") == "zh_TW" == uneven.get_language()
    assert lib_i18n.gettext("right") == "正確"
    assert lib_i18n.gettext("bottleneck", context="figure title") == "瓶頸"
    assert lib_i18n.gettext("bottleneck") == "bottleneck"  # another context: English
    for english in ("old", "empty", "never translated"):  # fuzzy, empty, absent: English
        assert lib_i18n.gettext(english) == english
    po = polib.pofile(str(library_catalog))  # an edited catalog is read again
    po[0].msgstr = "對"
    po.save(str(library_catalog))
    os.utime(library_catalog, ns=(1, 2))
    assert lib_i18n.gettext("right") == "對"
    assert uneven.set_language("EN") == "en" and lib_i18n.gettext("right") == "right"
    with pytest.raises(ValueError, match="language must be one of 'en', 'zh_TW'; got 'fr'"):
        uneven.set_language("fr")


def test_the_environment_variable_sets_the_default(library_catalog, monkeypatch):
    lib_i18n.set_language(None)
    monkeypatch.setenv(lib_i18n.ENV, "zh_TW.UTF-8")
    assert lib_i18n.get_language() == "zh_TW" and lib_i18n.gettext("right") == "正確"
    assert lib_i18n.set_language("en") == "en"  # an explicit choice wins over the variable
    assert lib_i18n.gettext("right") == "right"
    lib_i18n.set_language(None)
    monkeypatch.setenv(lib_i18n.ENV, "klingon")
    with pytest.warns(RuntimeWarning, match="UNEVEN_LANG must be one of"):
        assert lib_i18n.get_language() == "en"


def test_figures_of_another_language_go_to_their_own_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path))
    monkeypatch.delenv(lib_i18n.ENV, raising=False)
    try:
        assert plots.figures_dir() == tmp_path
        lib_i18n.set_language("zh_TW")
        assert plots.figures_dir() == tmp_path / "zh_TW" and (tmp_path / "zh_TW").is_dir()
    finally:
        lib_i18n.set_language(None)
