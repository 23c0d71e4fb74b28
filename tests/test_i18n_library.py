"""The library's own zh-TW strings (issue 26): the checker, the explorer panel, the shared figure
text, and the CJK font that figures of the zh-TW edition draw Chinese with.

* coverage: every message ``uneven.exercises``, ``uneven.widgets`` and ``uneven.plots`` pass to
  ``_()`` (found with ``ast``: the literal first arguments and their ``context=``), every
  registered mistake message, hint and unit, and the papers' "slow piece" has a current zh-TW
  entry in ``uneven.po`` / ``uneven-exercises.po`` (not empty, not fuzzy), and those catalogs hold
  nothing else; each translation keeps its msgid's ``{placeholders}``, numbers, units and code
  and uses the term table's words;
* exercises are checked identically in either language: the same worked solutions are right,
  the same registered mistakes get their hint, now in Chinese;
* figures in zh-TW put a CJK font first and render Chinese without a "Glyph ... missing from
  font" warning (skipped when no CJK font is installed, FAILED when ``UNEVEN_REQUIRE_CJK_FONT=1``,
  as in CI, which installs ``fonts-noto-cjk``).
"""

from __future__ import annotations

import ast
import importlib
import io
import os
import pkgutil
import re
import string
import sys
import warnings
from pathlib import Path

import matplotlib
import polib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from uneven import exercises, i18n, plots, widgets
from uneven.exercises import check, exercise, registered
from uneven.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import i18n_rules as rules  # noqa: E402

LANG = "zh_TW"
LIB = ROOT / "lib" / "uneven"
SOURCES = sorted((LIB / "exercises").glob("*.py")) + [LIB / "widgets.py", LIB / "plots.py",
                                                    LIB / "schedulers" / "calibration.py",
                                                    LIB / "_topology_text.py"]
CATALOGS = [i18n.catalog_path(LANG), i18n.catalog_path(LANG, "exercises")]
MODULES = [importlib.import_module(f"uneven.exercises.{m.name}")
           for m in pkgutil.iter_modules(exercises.__path__) if m.name.startswith("nb")]
SOLUTIONS = {k: v for mod in MODULES for k, v in mod.SOLUTIONS.items()}
#: The ``_()`` calls whose message is not a literal, and where their messages come from (each
#: source is listed in :func:`dynamic_messages`).
DYNAMIC_CALLS = {"slip", "ex.hint", "ex.unit", "p.slow_piece", "r"}


@pytest.fixture
def zh():
    i18n.set_language(LANG)
    yield
    i18n.set_language("en")


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.set_language(None)


# ---- coverage ---------------------------------------------------------------------------------

def literal_messages(paths=SOURCES) -> tuple[set, set]:
    """(context, msgid) of every ``_("...", context="...")`` call in ``paths``, and the source
    text of the first argument of every ``_()`` call whose message is not a literal."""
    found, dynamic = set(), set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "_" and node.args):
                continue
            context = None
            for kw in node.keywords:
                if kw.arg == "context":
                    assert isinstance(kw.value, ast.Constant), f"{path.name}:{node.lineno}"
                    context = kw.value.value
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add((context, arg.value))
            else:
                dynamic.add(ast.unparse(arg))
    return found, dynamic


def dynamic_messages() -> set:
    """The messages of the non-literal ``_()`` calls: registered mistakes, hints and units, and
    the papers' slow pieces and workloads that ``paper_map`` draws."""
    out = set()
    for key in registered():
        if not re.fullmatch(r"\d{2}\.\w+", key):  # a doctest's demo exercise, not a notebook's
            continue
        ex = exercise(key)
        out |= {(None, message) for _, message in ex.mistakes}
        if ex.hint:
            out.add((None, ex.hint))
        if ex.unit:
            out.add(("unit", ex.unit))
    out |= {("slow piece", p.slow_piece) for p in PAPERS}
    out |= {("workload", p.workload) for p in PAPERS}
    return out


def _entries():
    return [(po.name, e) for po in CATALOGS for e in polib.pofile(str(po)) if not e.obsolete]


def _fields(text: str) -> list[str]:
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def test_the_collector_finds_literal_and_dynamic_messages(tmp_path):
    src = tmp_path / "demo.py"
    src.write_text('x = _("a {n}", context="c")\ny = _("b" "c")\nz = _(slip)\nw = f(1)\n')
    assert literal_messages([src]) == ({("c", "a {n}"), (None, "bc")}, {"slip"})


def test_every_library_message_has_a_current_zh_tw_entry_and_nothing_else():
    literal, dynamic = literal_messages()
    assert dynamic == DYNAMIC_CALLS, ("a _() call without a literal message: list where its "
                                      f"messages come from in dynamic_messages(): {dynamic}")
    assert len(literal) >= 50
    wanted = literal | dynamic_messages()
    entries = {(e.msgctxt, e.msgid): e for _, e in _entries()}
    missing = sorted(wanted - set(entries), key=str)
    assert not missing, f"{len(missing)} messages without a zh-TW entry: {missing[:10]}"
    stale = [k for k, e in entries.items() if not e.msgstr or e.fuzzy]
    assert not stale, f"untranslated or fuzzy: {stale[:10]}"
    leftover = sorted(set(entries) - wanted, key=str)
    assert not leftover, f"entries no code uses any more: {leftover[:10]}"
    assert len(_entries()) == len(entries), "an entry is in both catalogs"


def test_translations_keep_placeholders_numbers_code_and_terms():
    terms = rules.load_terms(LANG)
    problems = []
    for name, e in _entries():
        if _fields(e.msgid) != _fields(e.msgstr):
            problems.append(f"{name} {e.msgid!r}: placeholders {_fields(e.msgstr)}")
        problems += [f"{name} {e.msgid!r}: {p}" for p in rules.invariant_problems(
            e.msgid, e.msgstr)]
        problems += [f"{name} {e.msgid!r}: {p}" for p in rules.term_problems(
            e.msgid, e.msgstr, terms, rules.exemptions(e.tcomment))]
        if not e.msgstr.isascii():
            problems += [f"{name} {e.msgid!r}: half-width {c!r} in Chinese text"
                         for c in _half_width(e.msgstr)]
    assert not problems, "\n".join(problems)


def _half_width(text: str) -> set:
    """Half-width , : ; ? in ``text`` outside code, calls, quoted Python values and numbers
    (``7,392``, ``1:1``) and format fields (``{x:.2f}``): Chinese text takes the full-width
    ones."""
    text = rules.CODE.sub("", text)
    text = re.sub(r"\{[^{}]*\}", "0", text)  # a field stands for a number ({over:g}:1)
    text = re.sub(r"[\w.]+\([^()]*\)", "", text)  # rebalance_experts(load[None], 320, ...)
    text = re.sub(r"\"[^\"]*\"|'[^']*'", "", text)
    text = re.sub(r"\d[,:]\d", "", text)
    return {c for c in ",:;?" if c in text}


def test_the_term_check_sees_a_wrong_rendering_in_these_catalogs():
    terms = rules.load_terms(LANG)
    assert rules.term_problems("bytes on link (MB)", "鏈路上的位元組（MB）", terms) == []
    assert rules.term_problems("bytes on link (MB)", "链路上的位元組（MB）", terms)


def test_hints_quote_the_explorers_labels_as_the_explorers_show_them(zh):
    # "use the preset 'twice each setting (s = 1)'": the zh-TW hint names the preset as the
    # zh-TW explorer shows it (its catalog uneven-nb07.po), 「各設定的兩倍（s = 1）」
    quoted = re.compile(r"(?<!\w)'([^']+)'(?!\w)")
    checked = 0
    for _, message in sorted(dynamic_messages(), key=str):
        for label in quoted.findall(message):
            shown = i18n.gettext(label)
            assert shown in i18n.gettext(message), (message, shown)
            checked += shown != label
    assert checked >= 2


# ---- the checker in both languages ------------------------------------------------------------

@pytest.mark.parametrize("key", sorted(SOLUTIONS))
def test_worked_solutions_are_right_in_both_languages(key):
    i18n.set_language("en")
    english = check(key, SOLUTIONS[key], seed=1)
    i18n.set_language(LANG)
    chinese = check(key, SOLUTIONS[key], seed=1)
    assert english.ok and chinese.ok, (key, english.message, chinese.message)
    assert english.message.startswith("✅ Right") and chinese.message.startswith("✅ 正確")


def _zh(message: str, context=None) -> str:
    i18n.set_language(LANG)
    return i18n.gettext(message, context)


def _slip_answer(ex, wrong):
    if ex.kind == "choice":
        return wrong
    if ex.kind == "function":
        return wrong  # the slip's own function agrees with the slip on every input
    return wrong(ex.expected())


@pytest.mark.parametrize("key", [k for k in registered() if exercise(k).mistakes
                                 and re.fullmatch(r"\d{2}\.\w+", k)])
def test_each_registered_mistake_gives_its_hint_in_chinese(key, zh):
    ex = exercise(key)
    for wrong, message in ex.mistakes:
        i18n.set_language(LANG)
        fb = check(key, _slip_answer(ex, wrong), seed=2)
        assert not fb.ok
        parts = ["❌ 還不對。", _zh(message)]
        if ex.hint:
            parts.append("提示：" + _zh(ex.hint))
        assert fb.message == " ".join(parts), key
        assert _zh(message) != message  # translated, not the English fallback
        i18n.set_language("en")
        english = check(key, _slip_answer(ex, wrong), seed=2)
        assert english.message.startswith("❌ Not right yet. " + message)


def test_format_messages_in_chinese_and_english(zh):
    assert check("01.2", "30").message == ("❌ 這是文字：請直接寫數字，不加引號"
                                           "（寫 30，不是 \"30\"）。")
    assert check("01.2", None).message == "✏️ 把佔位符換成你的答案，再執行檢查。"
    assert check("01.2", [1, 2]).message == "❌ 請給一個有限的數字（單位：ms）。"
    assert check("05.1", lambda h: h).message == (
        "❌ 請給一個有 2 個引數（H, k）的函式，例如 `def f(H, k): return ...`；"
        "你給的不接受 2 個引數。")
    assert check("05.4", "x").message == ("❌ 請給一個有限的數字"
                                          "（單位：每個 GPU 每一步的交換次數）。")
    assert check("01.4", "z").message.startswith("❌ 請用選項字母 'a', 'b', 'c', 'd' 中的")
    wrong = check("05.1", lambda h, k: 0.5, seed=3).message
    assert wrong.startswith("❌ 還不對。 在 H = ") and "你的函式傳回 0.5。 提示：" in wrong
    i18n.set_language("en")
    assert check("01.2", "30").message == '❌ That is text: write the number without quotes ' \
                                          '(30, not "30").'
    assert check("05.1", lambda h: h).message == (
        "❌ Please give a function of 2 arguments (H, k), e.g. `def f(H, k): return ...`; "
        "yours does not take 2 arguments.")
    assert check("01.2", [1, 2]).message == "❌ Please give a single finite number (in ms)."


# ---- the explorer panel ------------------------------------------------------------------------

def _draw(fig, state, **_):
    art = widgets.reuse(fig, "demo", lambda f: {"title": f.suptitle("")})
    art["title"].set_text(f"{state:g}")


def _explorer():
    def compute(x):
        if x > 0.8:
            raise ValueError("x too large")
        return 2 * x

    return widgets.explore(compute, _draw, {"x": widgets.slider(0.0, 1.0, 0.1, 0.5, "x")},
                           presets={"half": {"x": 0.5}}, show=False)


def test_the_explorer_panel_speaks_the_language_in_force(zh):
    ex = _explorer()
    assert ex.preset_menu.options == ("（自訂）", "half")
    assert ex.preset_menu.description == "預設組合"
    ex.controls["x"].value = 0.9
    assert ex.preset_menu.value == "（自訂）" and ex.error == "ValueError: x too large"
    assert ex.message.value.endswith(" —— 圖中仍是最後一個有效設定的結果。")
    i18n.set_language("en")
    ex = _explorer()
    assert ex.preset_menu.options == ("(custom)", "half") and ex.preset_menu.description == "preset"
    ex.controls["x"].value = 0.9
    assert ex.message.value.endswith("</span> — the figure shows the last valid setting.")


# ---- figures -----------------------------------------------------------------------------------

def test_shared_figure_text_follows_the_language(zh):
    fig, ax = plots.figure(4, 2)
    plots.cdf(ax, [1.0, 2.0], unit="ms")
    assert ax.get_xlabel() == "數值（ms）" and ax.get_ylabel() == "≤ x 的比例"
    fig, ax = plots.figure(4, 2)
    plots.gantt(ax, [0, 1], [0.0, 0.001], [0.001, 0.002], [0, 0], kind_names=["F"],
                time_unit="us", title="管線")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["階段 0", "階段 1"]
    assert ax.get_xlabel() == "時間（µs）"
    assert fig._repr_mimebundle_()[0]["text/plain"] == "[圖：管線]"
    i18n.set_language("en")
    assert plots._font_rc() == {}  # English: the house style exactly as before
    fig, ax = plots.figure(4, 2)
    plots.gantt(ax, [0], [0.0], [0.001], [0], kind_names=["F"], title="pipe")
    assert ax.get_yticklabels()[0].get_text() == "stage 0" and ax.get_xlabel() == "time (ms)"
    assert fig._repr_mimebundle_()[0]["text/plain"] == "[figure: pipe]"


def _require_cjk_font():
    if plots.cjk_fonts():
        return
    if os.environ.get("UNEVEN_REQUIRE_CJK_FONT") == "1":
        pytest.fail(f"UNEVEN_REQUIRE_CJK_FONT=1 but none of {plots.CJK_FONTS} is installed "
                    f"(apt-get install {plots.CJK_FONT_PACKAGE})")
    pytest.skip(f"no CJK font installed (apt-get install {plots.CJK_FONT_PACKAGE}); "
                "UNEVEN_REQUIRE_CJK_FONT=1 makes this a failure")


def _chinese_figure():
    from uneven.topology import h800_cluster

    fig, (a, b, c) = plots.figure(12, 3.5, ncols=3)
    a.plot([0, 1], [1, 0])
    a.set_title("管線平行的氣泡")
    a.set_xlabel("時間（ms）")
    a.set_ylabel("記憶體（GB）")
    plots.paper_map(b)
    plots.draw_topology(c, h800_cluster(2), highlight=(1, 14))
    fig.suptitle("六篇論文：最慢的一環決定步調")
    return fig


def test_zh_tw_figures_render_chinese_with_a_cjk_font(zh, tmp_path, monkeypatch):
    _require_cjk_font()
    monkeypatch.setenv("UNEVEN_FIGURES", str(tmp_path))
    with plots.style():
        families = matplotlib.rcParams["font.sans-serif"]
        assert families[0] == plots.cjk_fonts()[0] and "DejaVu Sans" in families
        assert matplotlib.rcParams["axes.titlesize"] == plots.TITLE  # the house style stays
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*missing from font")
        fig = _chinese_figure()
        path = plots.save(fig, "zh_glyphs")
        png = fig.to_png()
        canvas = FigureCanvasAgg(fig)
        with plots.style():
            canvas.draw()  # what an explorer does on every update
    assert path == tmp_path / LANG / "zh_glyphs.png" and path.stat().st_size > 10_000
    assert png[1:4] == b"PNG"


def test_the_glyph_check_fails_without_the_cjk_font(zh):
    # the same figure in the English style (no CJK font first) warns: the check above can fail
    fig = _chinese_figure()
    monkey = {"font.family": ["sans-serif"], "font.sans-serif": ["DejaVu Sans"]}
    with matplotlib.rc_context({**plots._RC, **monkey}):
        with pytest.warns(UserWarning, match="missing from font"):
            fig.savefig(io.BytesIO(), format="png")


def test_a_cjk_font_installed_after_the_font_cache_is_found(monkeypatch):
    _require_cjk_font()
    from matplotlib import font_manager

    manager = font_manager.fontManager
    without = [f for f in manager.ttflist if f.name not in plots.CJK_FONTS]
    monkeypatch.setattr(manager, "ttflist", without)
    plots.cjk_fonts.cache_clear()
    try:
        found = plots.cjk_fonts()
        assert found and found[0] in plots.CJK_FONTS
        assert any(f.name == found[0] for f in manager.ttflist)
    finally:
        plots.cjk_fonts.cache_clear()
