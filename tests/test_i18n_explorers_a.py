"""The zh-TW edition of notebooks 00-03's explorers, figure recipes and printed reports (issue 26).

* every literal msgid passed to ``_()`` or ``N_()`` in ``uneven.explorers.nb00`` ... ``nb03`` has a
  current entry (translated, not fuzzy) in that module's catalog
  ``lib/uneven/locale/zh_TW/LC_MESSAGES/uneven-nbNN.po``, with the same ``{placeholders}`` (name,
  format spec, conversion); the catalog holds no entry the module no longer uses; each entry keeps
  its English's numbers, units and labels and the term table's words (``editions.i18n_rules``),
  and no other library catalog gives the same msgid another translation (they merge into one);
* drawn under ``zh_TW`` the four notebooks' explorers and a few figure recipes carry Chinese in
  their titles, axis labels and legends, and the controls and presets Chinese labels with the
  same values; under English they carry no CJK character at all;
* the helpers :func:`~uneven.explorers._common.pad` and ``options`` behave.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib
import numpy as np
import polib
import pytest
from matplotlib.text import Text

import uneven
from uneven import i18n
from uneven.explorers import _common, nb00, nb01, nb02, nb03

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from _i18n_msgids import catalog, fields, literal_msgids  # noqa: E402
from editions import i18n_rules as rules  # noqa: E402

matplotlib.use("Agg")
MODULES = {"nb00": nb00, "nb01": nb01, "nb02": nb02, "nb03": nb03}
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u3000-\u303f]")
TERMS = rules.load_terms("zh_TW")


def _msgids(module) -> list[tuple[str | None, str]]:
    return literal_msgids(Path(module.__file__))


@pytest.fixture
def lang():
    """Set a language for one test and put the session's back afterwards."""
    yield uneven.set_language
    uneven.set_language(None)


# ---- catalogs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODULES)
def test_every_msgid_has_a_current_translation_with_the_same_placeholders(name):
    ids = _msgids(MODULES[name])
    assert len(ids) >= 10, f"{name}: only {len(ids)} strings found; is the module wrapped?"
    cat = catalog(name)
    problems = []
    for key in ids:
        e = cat.get(key)
        if e is None or not e.msgstr or e.fuzzy:
            problems.append(f"untranslated {key}")
        elif fields(e.msgid) != fields(e.msgstr):
            problems.append(f"placeholders differ {key}: {fields(e.msgstr)}")
        else:  # the template formats with the same arguments
            dummy = {f[0]: 1 for f in fields(e.msgid)}
            e.msgstr.format(**dummy)
    problems += [f"left over (no longer in {name}.py) {k}" for k in cat if k not in ids]
    assert not problems, f"uneven-{name}.po:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", MODULES)
def test_translations_keep_numbers_labels_and_terms(name):
    problems = []
    for e in catalog(name).values():
        problems += [f"{e.msgid!r}: {p}" for p in rules.invariant_problems(e.msgid, e.msgstr)]
        problems += [f"{e.msgid!r}: {p}"
                     for p in rules.term_problems(e.msgid, e.msgstr, TERMS,
                                                  rules.exemptions(e.tcomment))]
        if CJK.search(e.msgstr) and re.search(r"[\u4e00-\u9fff][,;:](?!\d)", e.msgstr):
            problems.append(f"{e.msgid!r}: half-width punctuation after Chinese: {e.msgstr!r}")
    assert not problems, "\n".join(problems)


def test_no_other_library_catalog_translates_these_msgids_otherwise():
    ours = {}
    for name in MODULES:
        for key, e in catalog(name).items():
            assert ours.setdefault(key, e.msgstr) == e.msgstr, (name, key)
    clashes = []
    for path in i18n.catalog_paths("zh_TW"):
        for e in polib.pofile(str(path)):
            key = (e.msgctxt, e.msgid)
            if e.msgstr and not e.obsolete and key in ours and ours[key] != e.msgstr:
                clashes.append(f"{path.name} {key}: {e.msgstr!r} vs {ours[key]!r}")
    assert not clashes, "one msgid, two translations (use a msgctxt):\n" + "\n".join(clashes)


# ---- figures and controls in either language ---------------------------------------------------

def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]


def _explorer_texts(ex) -> dict:
    fig = ex._fig
    titles = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    titles += [ax.get_title() for ax in fig.axes] + [ax.get_xlabel() for ax in fig.axes]
    titles += [ax.get_ylabel() for ax in fig.axes]
    labels = [w.description for w in ex.controls.values()]
    shown = [o[0] for w in ex.controls.values() for o in getattr(w, "options", ())
             if isinstance(o, tuple)]
    return {"figure": _texts(fig), "titles": [t for t in titles if t], "controls": labels,
            "options": shown, "presets": list(ex.presets)}


EXPLORERS = {"nb00": nb00.start_explorer, "nb01": nb01.pipemorph_explorer,
             "nb02": nb02.bytescale_explorer, "nb03": nb03.deepseek_explorer}


@pytest.mark.parametrize("name", EXPLORERS)
def test_the_default_explorer_speaks_the_language(name, lang):
    lang("en")
    en = EXPLORERS[name](show=False)
    assert en.error is None
    english = _explorer_texts(en)
    for part, texts in english.items():
        assert not [t for t in texts if CJK.search(t)], (name, part)
    lang("zh_TW")
    zh = EXPLORERS[name](show=False)
    assert zh.error is None, zh.error
    chinese = _explorer_texts(zh)
    assert CJK.search(zh._fig._suptitle.get_text()), zh._fig._suptitle.get_text()
    for part in ("titles", "controls", "presets"):
        assert sum(bool(CJK.search(t)) for t in chinese[part]) >= 2, (name, part, chinese[part])
    # the same controls with the same values: only what is shown changed
    assert list(zh.controls) == list(en.controls) and zh.values() == en.values()
    assert len(zh.presets) == len(en.presets)
    assert list(zh.presets.values()) == list(en.presets.values())
    for key, w in zh.controls.items():
        if hasattr(w, "options"):
            assert _values(w) == _values(en.controls[key]), key


def _values(w) -> list:
    return [o[1] if isinstance(o, tuple) else o for o in w.options]


def test_a_preset_applies_in_chinese(lang):
    lang("zh_TW")
    ex = nb01.pipemorph_explorer(show=False)
    name = uneven.i18n.gettext("HOL blocking, 30 ms")
    assert CJK.search(name) and name in ex.presets
    ex.preset_menu.value = name
    assert ex.error is None and ex.values()["hol"] is True and ex.values()["delay_ms"] == 30.0
    ex.controls["ratio"].value = "backward-heavy 1 : 2 : 1"  # the value, not the label
    assert ex.error is None and ex.controls["ratio"].label == "反向較重 1 : 2 : 1"


def _recipe_figures():
    t = 10e-3
    cmp = nb01.schedule_comparison(t, delays_ms=(0, 10, 20))
    yield "comparison_figure", nb01.comparison_figure(cmp), "bubble and memory (model)"
    ex = nb02.alg2_example()
    yield "alg2_figure", nb02.alg2_figure(ex.plans), "time (s)"
    bws = np.linspace(50, 900, 8)
    bound = nb03.decode_bound_curves(bws)
    yield ("tpot_figure", nb03.tpot_figure(bws, bound.tpot, bound.tpot_lat, {50: 14.76},
                                           latency_us=3.7),
           "time per output token (ms)")


def test_figure_recipes_draw_chinese_text_and_english_text(lang):
    lang("en")
    english = {name: (_texts(fig), key) for name, fig, key in _recipe_figures()}
    lang("zh_TW")
    chinese = {name: _texts(fig) for name, fig, _key in _recipe_figures()}
    for name, (texts, key) in english.items():
        assert key in texts and not [t for t in texts if CJK.search(t)], name
        zh = chinese[name]
        assert key not in zh and sum(bool(CJK.search(t)) for t in zh) >= 3, (name, zh)
        assert len(zh) == len(texts), name  # the same artists, other words


def test_printed_reports_follow_the_language_with_the_same_numbers(lang):
    lang("en")
    en = nb03.copy_table(n_tokens=512).report
    lang("zh_TW")
    zh = nb03.copy_table(n_tokens=512).report
    assert "per token (model)" in en and not CJK.search(en)
    assert "每個 token (model)" in zh
    number = re.compile(r"\d+\.\d+")
    assert number.findall(zh) == number.findall(en)


# ---- helpers -----------------------------------------------------------------------------------

def test_pad_counts_a_cjk_character_as_two_columns_and_keeps_english_as_format_does():
    for text, width, align in (("rank", 8, "<"), ("healthy", 8, ">"), ("x", 5, "^"),
                               ("too long for it", 4, "<")):
        assert _common.pad(text, width, align) == format(text, f"{align}{width}s")
    assert _common.pad("階段 0", 10) == "階段 0    " and _common.pad("模型", 6, ">") == "  模型"
    with pytest.raises(ValueError, match="align"):
        _common.pad("x", 3, "=")


def test_options_pair_values_only_when_a_label_translates(lang):
    lang("en")
    assert _common.options(list(nb01.OP_RATIOS)) == list(nb01.OP_RATIOS)
    lang("zh_TW")
    opts = _common.options(list(nb01.OP_RATIOS))
    assert all(isinstance(o, tuple) for o in opts)  # a dropdown takes all pairs or none
    assert [v for _label, v in opts] == list(nb01.OP_RATIOS)
    assert opts[1] == ("F : B : W = 1 : 1 : 0.5", "F : B : W = 1 : 1 : 0.5")
    assert _common.options(["2M", 4]) == ["2M", 4]
