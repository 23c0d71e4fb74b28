"""The zh-TW strings of the explorers of notebooks 04-08 (``uneven.explorers.nb04`` ... ``nb08``).

Every literal msgid a module passes to ``_()`` (or marks with ``N_()``, for a label that is also a
key in code and is translated where it is drawn) has a current zh-TW entry in
``lib/uneven/locale/zh_TW/LC_MESSAGES/uneven-nbNN.po`` with the same ``{placeholders}`` (names and
format specs), no entry is left over, the Chinese keeps the edition's words and full-width
punctuation, and each notebook's default explorer figure (notebook 08 has only recipes: its
binding figure) shows Chinese text under ``zh_TW`` and none under English.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib.text
import polib
import pytest

from uneven import i18n

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from _i18n_msgids import catalog, catalog_problems, literal_msgids  # noqa: E402
from editions import i18n_rules as rules  # noqa: E402

MODULES = ("nb04", "nb05", "nb06", "nb07", "nb08")
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def dynamic_msgids(module: str) -> list[tuple[str | None, str]]:
    """Strings of other modules that ``module`` draws translated (nb07: the knobs of
    :mod:`uneven.unevenness` and the papers' short names)."""
    if module != "nb07":
        return []
    from uneven.papers import PAPERS
    from uneven.unevenness import KNOBS

    out = []
    for k in KNOBS.values():
        out += [(None, k.piece), (None, k.baseline), (None, k.system), (None, k.quantity),
                (None, k.name), (None, k.reference), (None, k.ideal)]
        if k.rank not in ("rank", "NIC", "GPU"):  # the words the edition keeps in English
            out.append(("rank", k.rank))
    out += [(None, p.short) for p in PAPERS if p.short not in ("NIC", "barrier")]
    # a name (UBEP) is not translated
    return [key for key in dict.fromkeys(out) if re.search("[a-z]{3}", key[1])]


@pytest.fixture
def language():
    """Set a language for one test; back to $UNEVEN_LANG afterwards."""
    yield i18n.set_language
    i18n.set_language(None)


@pytest.mark.parametrize("module", MODULES)
def test_every_msgid_has_a_current_translation_with_the_same_placeholders(module):
    entries = catalog(module)
    wanted = literal_msgids(ROOT / f"lib/uneven/explorers/{module}.py") + dynamic_msgids(module)
    assert wanted, f"{module} passes no string to _()"
    problems = catalog_problems(entries, wanted)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", MODULES)
def test_the_chinese_keeps_the_terms_script_and_punctuation(module):
    terms = rules.load_terms()
    problems = []
    for key, e in catalog(module).items():
        found = rules.forbidden_problems(e.msgstr, terms) + rules.punctuation_problems(e.msgstr)
        # labels such as [paper] and (model) stay as they are
        for label in rules.LABELS:
            if e.msgid.count(label) != e.msgstr.count(label):
                found.append(f"label {label} count differs")
        problems += [f"{key}: {p}" for p in found]
    assert not problems, "\n".join(problems)


def test_one_english_has_one_rendering_across_the_library_catalogs():
    seen: dict[tuple[str | None, str], tuple[str, str]] = {}
    clashes = []
    for path in i18n.catalog_paths("zh_TW"):
        for e in polib.pofile(str(path)):
            if not e.msgstr or e.fuzzy or e.obsolete:
                continue
            key = (e.msgctxt, e.msgid)
            if key in seen and seen[key][1] != e.msgstr:
                clashes.append(f"{key}: {seen[key][0]} {seen[key][1]!r} vs {path.name} "
                               f"{e.msgstr!r} (give one a msgctxt)")
            seen.setdefault(key, (path.name, e.msgstr))
    assert not clashes, "\n".join(clashes)


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def _explorer_figure(module: str):
    """The default explorer of ``module`` (its figure and the explorer), or for nb08 the binding
    figure of a small EP dispatch."""
    import importlib

    mod = importlib.import_module(f"uneven.explorers.{module}")
    if module == "nb08":
        from uneven.ep import ep_step

        return mod.binding_figure({"16 GPUs": ep_step(16, 16, ep=16)}), None
    make = {"nb04": "megascale_explorer", "nb05": "balancing_explorer",
            "nb06": "ubep_explorer", "nb07": "unevenness_explorer"}[module]
    ex = getattr(mod, make)(show=False)
    assert ex.error is None, ex.error
    return ex._fig, ex


@pytest.mark.parametrize("module", MODULES)
def test_the_default_figure_speaks_the_language_in_force(module, language):
    language("zh_TW")
    fig, ex = _explorer_figure(module)
    zh = _texts(fig)
    chinese = [t for t in zh if CJK.search(t)]
    assert len(chinese) >= 3, f"{module}: too little Chinese in the zh-TW figure: {zh}"
    if ex is not None:  # the controls and presets too
        labels = [w.description for w in ex.controls.values()]
        assert sum(bool(CJK.search(x)) for x in labels) >= 1, labels
        presets = list(ex.presets)
        assert all(CJK.search(p) for p in presets), presets
        assert ex.png[:4] == b"\x89PNG"
    language("en")
    fig, ex = _explorer_figure(module)
    en = _texts(fig)
    assert en and not [t for t in en if CJK.search(t)], f"{module}: Chinese under English"
    if ex is not None:
        assert not [p for p in ex.presets if CJK.search(p)]


def test_numbers_stay_the_librarys_in_a_translated_report(language):
    from uneven.explorers import nb04
    from uneven.parallel_volumes import INTERNAL_352B

    language("en")
    en = nb04.tp_layer(INTERNAL_352B).report
    language("zh_TW")
    zh = nb04.tp_layer(INTERNAL_352B).report
    assert en != zh and CJK.search(zh)
    number = re.compile(r"\d+(?:\.\d+)?")
    assert sorted(number.findall(en)) == sorted(number.findall(zh))
    assert len(en.splitlines()) == len(zh.splitlines())
