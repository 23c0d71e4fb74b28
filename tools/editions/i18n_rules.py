"""What a translation must keep from its English, and the words it must use.

Invariants of one entry (:func:`invariant_problems`): the same multiset of

* formulas ``$…$`` / ``$$…$$``, inline code `` `…` ``, link and image targets ``](…)``, HTML tags
  (verbatim);
* evidence labels ``[paper] [repo] [chapter] [3rd] [fig-OCR] [derived] (model) (our reading)``
  (verbatim, half-width brackets: the English label is kept, so a reader of either edition sees
  the same label, and a test can count it); a compound label, ``[paper, Table 3]``,
  ``[repo: the artifact's simulator]``, ``[derived from Table 3]``, ``(model; ...)``,
  ``*(model, fitted to [repo])*``, keeps its keyword: ``[paper`` or ``(model`` opens a label
  as often as in the English (what follows the keyword may be translated);
* numbers (digit sequences outside the above; a thousands separator is ignored, so ``1,024`` and
  ``1024`` are one number; a number the English writes as a word, "eight planes", is written as
  a word, 八個平面, in Chinese too);
* a number's unit (``50 GB/s``, ``2 MB``, ``52.4%``): the unit stays as written, except ``×``
  (or "times") after a number, which Chinese may write ``倍`` (``1.36×`` or ``1.36 倍``) as the
  chapter does; "N times" that counts occurrences (crosses the network 3.5 times) may be
  ``3.5 次``;
* the structure: heading level, table rows and columns, list items.

Terms (:func:`term_problems`): ``locale/<lang>/terms.tsv`` maps an English term to the one
rendering the edition uses and lists forbidden variants; an entry whose English has the term
must contain the rendering, and no entry may contain a forbidden variant (nor any of the
Simplified-only characters of :data:`SIMPLIFIED_ONLY`). A term of several words matches across
a line break. A translator comment ``i18n-terms-ok: link`` exempts one entry from one term where
the English word means something else (a web link, not a network link); the exemption is visible
in the catalog.

Punctuation (:func:`punctuation_problems`): Chinese text uses full-width punctuation
(，。：；？！（）); a half-width ``, ; : ? ! (`` between two CJK characters, outside formulas,
code, link targets and labels, is a slip.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import discover

LABELS = ("[paper]", "[repo]", "[chapter]", "[3rd]", "[fig-OCR]", "[derived]", "(model)",
          "(our reading)")
#: The opening of a compound label: a label keyword, then a separator and more text up to the
#: closing bracket (``[paper, Table 3]``, ``[derived from Table 3]``, ``(model; ...)``); a
#: translation may use a full-width separator there.
COMPOUND_LABEL = re.compile(
    r"\[(paper|repo|chapter|3rd|fig-OCR|derived)(?:\s*[,:;，：；]|\s+(?=[^\s\]]))[^\]\[]*"
    r"(?:\[[^\]]*\][^\]\[]*)*\](?!\()"
    r"|\((model|our reading)\s*[,:;，：；][^()]*(?:\([^()]*\)[^()]*)*\)")
FORMULA = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$\n]+?\$", re.S)
CODE = re.compile(r"`[^`\n]+`")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
TAG = re.compile(r"</?[A-Za-z][^>]*>")
URL = re.compile(r"\b(?:https?://)?(?:[\w-]+\.)+(?:com|org|io|net|dev)(?:/[\w./-]*[\w/])?")
ARXIV = re.compile(r"arXiv:\d{4}\.\d{4,5}")
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
UNITS = ("times", "GB/s", "Gb/s", "MB/s", "TB/s", "GiB", "MiB", "KiB", "GB", "MB", "KB", "TB",
         "kB", "µs", "us", "ms", "ns", "s", "%", "×", "GHz", "MHz", "W", "B", "M", "K", "k")
UNIT_AFTER = re.compile(r"(\d(?:[\d,.]*\d)?)\s?(" + "|".join(re.escape(u) for u in UNITS) +
                        r"|倍)(?![A-Za-z/])")
COUNT_AFTER = re.compile(r"(\d(?:[\d,.]*\d)?)\s?次")

#: Characters that occur only in Simplified Chinese (each has a different Traditional form that
#: Taiwan writes); none of them occurs in the chapter page's zh-TW text (a test checks), and
#: zhconv's zh-tw conversion turns each into another character (checked once by hand with
#: zhconv 1.4.3, which the project does not depend on). 缺 is not here: it is the ordinary
#: Traditional character too.
SIMPLIFIED_ONLY = (
    "这们为时个说对发与进过网络数据内还没么学习长门问间关开东车书见现电话买卖写头经样点实际产"
    "务动劳报场带导岁极页题顾风飞馆驱验鱼鸟齐龙乐归亲气权边达运远选递逻遗释钟钱铁银错键镜闭闲"
    "阵陆隐难雾鲜鸡亿仅从众优传伤伦会伟侧债倾偿储兴养冲决况净凭击创删别刚则剂劝办励势区医华协"
    "单卢卫却厂厅历压县参双变叙号吗听启吴员响团园围图圆圣坏块坚声壳处备复够夸夺奋奖妇妈娱孙宁"
    "宝审宪宫宽宾寻寿将尔尘尝层属岂岗岛币师帐帧帮庄庆库应废异弃张弹强当录彻径忆忧怀态总恋恒恶"
    "恼惊惯愿戏战户扑执扩扫扬扰抚抛抢护担拟拥拦择挂挡挣挤挥损换摄摆摇摊撑敌断无旧显晋晒晓晕暂"
    "术机杀杂条来构枪柜标栈栋栏树档桥梦检楼横欢欧毁毕汇汉沟泪泽洁浅测济浏浑浓涛润涨渐温湾湿满"
    "滤滥滚灭灯灵灾炉炼烂烟烦烧热爱独狭献环玛画畅疗盏盐监盖盘矫矿码砖础确碍礼离种积称稳穷窃竖"
    "竞笔笼筛签简类粮紧纠红纤约级纪纯纲纳纵纷纸纹线练组细织终绑结绕绘给绝统继绩续维综绿缓编缘"
    "缩罗罚罢联聪肃肠肤肾肿胀脉脏脑脚脱脸艰艺节苏荐荡荣药获营蓝虑虚虽补衬袭装观规视览觉计订认"
    "讨让训议讯记讲许论设访证评识诉诊词译试诗询该详语误请诸读课谁调谈谋谓谢谨贝负贡财责败货质"
    "贩贪购贯贵费贸资赏赔赖赚赛赞赶趋跃践轨转轮软轰轻载较辅辆辈辉输辖辽迁迈违连迟适邮邻酱钉钢"
    "钥钻铃铅铜铭锁锅镇闪闯阀阁阅队阳阴阶随隶静韩顶项顺须顽顿预领频颗额颜飘饭饮饰饱驰驶驻驾骂"
    "骑骗鲁鸣鹅黄龄")

#: Traditional words that hold a character of :data:`SIMPLIFIED_ONLY` in one of its rare
#: Traditional uses (拮据 "short of", 夸克 "quark"): never flagged.
TRADITIONAL_WORDS = ("拮据", "夸克")


# ---- invariants -----------------------------------------------------------------------------

def _take(pattern: re.Pattern, text: str) -> tuple[list[str], str]:
    found = pattern.findall(text)
    return found, pattern.sub(" ", text)


@dataclass
class Tokens:
    formulas: Counter
    code: Counter
    targets: Counter
    tags: Counter
    labels: Counter
    numbers: Counter
    units: Counter
    shape: tuple
    times: Counter  # English "N times": numbers whose × a translation may write N 次
    counts: Counter  # Chinese "N 次"


def _shape(text: str) -> tuple:
    lines = text.splitlines()
    heading = next((len(m.group(0)) for m in [re.match(r"^#+(?=\s)", text)] if m), 0)
    rows = [ln for ln in lines if ln.lstrip().startswith("|")]
    table = tuple(ln.strip().strip("|").count("|") + 1 for ln in rows)
    items = sum(1 for ln in lines if re.match(r"^\s*(?:[*+-]|\d+\.)\s", ln))
    return heading, table, items


def tokens(text: str) -> Tokens:
    formulas, rest = _take(FORMULA, text)
    code, rest = _take(CODE, rest)
    targets = LINK_TARGET.findall(rest)
    rest = LINK_TARGET.sub("]", rest)
    tags, rest = _take(TAG, rest)
    urls, rest = _take(URL, rest)
    arxiv, rest = _take(ARXIV, rest)
    labels = Counter()
    for label in LABELS:
        labels[label] = rest.count(label)
        rest = rest.replace(label, " ")
    for m in COMPOUND_LABEL.finditer(rest):
        key = m.group(1) or m.group(2)
        labels[f"[{key}, …]" if m.group(1) else f"({key}; …)"] += 1
    units, times = Counter(), Counter()
    for number, unit in UNIT_AFTER.findall(rest):
        units[(number.replace(",", ""), "×" if unit in ("倍", "times") else unit)] += 1
        if unit == "times":
            times[number.replace(",", "")] += 1
    counts = Counter(n.replace(",", "") for n in COUNT_AFTER.findall(rest))
    numbers = Counter(n.replace(",", "") for n in NUMBER.findall(rest))
    return Tokens(Counter(formulas), Counter(code), Counter(targets + urls + arxiv),
                  Counter(tags), +labels, numbers, units, _shape(text), times, counts)


def _diff(what: str, english: Counter, other: Counter) -> list[str]:
    if english == other:
        return []
    lost, added = english - other, other - english
    parts = []
    if lost:
        parts.append("missing " + ", ".join(f"{k!r}" + (f" ×{n}" if n > 1 else "")
                                             for k, n in lost.items()))
    if added:
        parts.append("extra " + ", ".join(f"{k!r}" + (f" ×{n}" if n > 1 else "")
                                           for k, n in added.items()))
    return [f"{what}: " + "; ".join(parts)]


def invariant_problems(english: str, translation: str) -> list[str]:
    """What ``translation`` fails to keep from ``english`` (empty when it keeps everything).

    >>> invariant_problems("It takes 2,240 µs [derived].", "需要 2240 µs [derived]。")
    []
    >>> invariant_problems("1.36× on 128 GPUs [chapter]", "128 顆 GPU 上為 1.36 倍(章節)")
    ["labels: missing '[chapter]'"]
    >>> invariant_problems("It crosses 3.5 times [paper, Table 4].", "跨越 3.5 次 [paper, 表 4]。")
    []
    >>> invariant_problems("See (model, fitted).", "見（模型，擬合）。")
    ["labels: missing '(model; …)'"]
    """
    e, t = tokens(english), tokens(translation)
    # "N times" counting occurrences may be "N 次": a missing N× the translation writes N 次
    for number, n in e.times.items():
        short = min(n, e.units[(number, "×")] - t.units[(number, "×")], t.counts[number])
        if short > 0:
            t.units[(number, "×")] += short
    problems = []
    for what in ("formulas", "code", "targets", "tags", "labels", "numbers", "units"):
        problems += _diff(what, getattr(e, what), getattr(t, what))
    if e.shape != t.shape:
        problems.append(f"structure (heading level, table columns per row, list items): "
                        f"English {e.shape}, translation {t.shape}")
    return problems


# ---- terms ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    english: str  # a regular expression, matched case-insensitively on word boundaries
    rendering: str  # the text a translation of an entry with the term must contain
    forbidden: tuple[str, ...]
    note: str = ""

    @property
    def pattern(self) -> re.Pattern:
        """The English as a pattern; a space matches any run of white space (a line break)."""
        return re.compile(r"(?<![\w-])(?:" + self.english.replace(" ", r"\s+") + r")(?![\w-])",
                          re.I)


def terms_path(lang: str = "zh_TW") -> Path:
    return discover.ROOT / "locale" / lang / "terms.tsv"


def load_terms(lang: str = "zh_TW") -> list[Term]:
    """The term table: tab-separated ``english  rendering  forbidden | variants  note``; lines
    starting with ``#`` are comments. Longer English terms are matched first."""
    out = []
    for n, line in enumerate(terms_path(lang).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
            raise ValueError(f"{terms_path(lang).name} line {n}: need english<TAB>rendering")
        forbidden = tuple(f.strip() for f in (cols[2] if len(cols) > 2 else "").split("|")
                          if f.strip())
        out.append(Term(cols[0].strip(), cols[1].strip(), forbidden,
                        cols[3].strip() if len(cols) > 3 else ""))
    return sorted(out, key=lambda t: -len(t.english))


def _prose(text: str) -> str:
    """``text`` without formulas, code, link targets, tags, URLs and labels: where terms count."""
    rest = CODE.sub(" ", FORMULA.sub(" ", text))
    rest = LINK_TARGET.sub("]", rest)
    rest = URL.sub(" ", TAG.sub(" ", rest))
    for label in LABELS:
        rest = rest.replace(label, " ")
    return COMPOUND_LABEL.sub(" ", rest)


def exemptions(tcomment: str | None) -> set[str]:
    """The words of a translator comment ``i18n-terms-ok: link, switch (why)``."""
    out = set()
    for m in re.finditer(r"i18n-terms-ok:\s*([^(\n]+)", tcomment or ""):
        out |= {w.strip().lower() for w in m.group(1).split(",") if w.strip()}
    return out


def term_problems(english: str, translation: str, terms: list[Term],
                  exempt: set[str] = frozenset()) -> list[str]:
    """Terms of ``english`` whose rendering ``translation`` lacks, and forbidden variants or
    Simplified-only characters in ``translation``.

    A term the translation keeps in English as often as the English has it (a paper's title,
    "Attack of the Bubbles"; a widget label the library still shows in English) needs no
    rendering; any other occurrence needs it.
    """
    problems = []
    prose, kept = _prose(english), _prose(translation)
    for term in terms:  # longest first: "expert placement" consumes its "placement"
        found = len(term.pattern.findall(prose))
        if not found:
            continue
        verbatim = len(term.pattern.findall(kept))
        prose, kept = term.pattern.sub(" ", prose), term.pattern.sub(" ", kept)
        if any(term.pattern.fullmatch(word) for word in exempt) or verbatim >= found:
            continue
        if term.rendering.lower() not in translation.lower():
            problems.append(f"term {term.english!r} must be rendered {term.rendering!r}")
    problems += forbidden_problems(translation, terms)
    return problems


def forbidden_problems(translation: str, terms: list[Term]) -> list[str]:
    """Forbidden variants and Simplified-only characters in ``translation``.

    An approved rendering never counts as a forbidden variant inside it (演算法 holds 算法), but
    a forbidden variant that holds a rendering is still found (集體通訊 holds 通訊).

    >>> forbidden_problems("演算法的頻寬", load_terms())
    []
    """
    problems = []
    spans = [(m.start(), m.end()) for term in terms
             for m in re.finditer(re.escape(term.rendering), translation)]
    for term in terms:
        for bad in term.forbidden:
            if any(not any(a <= m.start() and m.end() <= b and b - a > len(bad) for a, b in spans)
                   for m in re.finditer(re.escape(bad), translation)):
                problems.append(f"{bad!r} is not this edition's word: write {term.rendering!r}"
                                + (f" ({term.note})" if term.note else ""))
    for word in TRADITIONAL_WORDS:
        translation = translation.replace(word, " ")
    simplified = sorted({c for c in translation if c in SIMPLIFIED_ONLY})
    if simplified:
        problems.append("Simplified-only characters: " + " ".join(simplified))
    return problems


# ---- punctuation ----------------------------------------------------------------------------

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A half-width , ; : ? ! or ( with a CJK character on both sides (emphasis marks ``*`` ``_``,
#: and after the mark white space, may stand between): Chinese text writes ，；：？！（.
HALF_WIDTH_IN_CJK = re.compile(
    rf"(?<=[{CJK}])[*_]*([,;:?!(])[*_\s]*(?=[{CJK}])")
FULL_WIDTH = {",": "，", ";": "；", ":": "：", "?": "？", "!": "！", "(": "（"}


def punctuation_problems(translation: str) -> list[str]:
    """Half-width punctuation between CJK characters of ``translation`` (outside formulas, code,
    link targets, HTML tags, URLs and labels), each with its context.

    >>> punctuation_problems("見 `f(x)`，結果:很好 [paper, §3]。")
    ["half-width ':' between CJK characters (write '：'): '結果:很好'"]
    >>> punctuation_problems("比例 1:1，見 [01](01_x.ipynb)(英文)。")
    []
    """
    rest = _prose(translation)
    problems = []
    for m in HALF_WIDTH_IN_CJK.finditer(rest):
        mark = m.group(1)
        context = rest[max(0, m.start() - 2):m.end() + 2].replace("\n", " ")
        problems.append(f"half-width {mark!r} between CJK characters "
                        f"(write {FULL_WIDTH[mark]!r}): {context!r}")
    return problems



def emphasis_problems(english: str, translation: str) -> list[str]:
    """Emphasis marks the translation shows as literal asterisks where the English has none.

    CommonMark closes ``*``/``**`` after a punctuation mark only before white space or
    punctuation, so ``*尚未公開：*這套`` renders its asterisks; ``*尚未公開*：這套`` does not.
    Both texts are rendered with markdown-it (CommonMark) and the asterisks left in their text,
    code aside, are counted.

    >>> emphasis_problems("*Not yet:* here", "*尚未公開：*這套")[0][:40]
    '2 literal asterisk(s) in the rendered tr'
    >>> emphasis_problems("*Not yet:* here", "*尚未公開*：這套")
    []
    """
    def stars(text: str) -> int:
        html = _markdown().render(text)
        html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", html, flags=re.S)
        return html.count("*")

    extra = stars(translation) - stars(english)
    if extra <= 0:
        return []
    return [f"{extra} literal asterisk(s) in the rendered translation, {stars(english)} in the "
            "English: close emphasis before full-width punctuation (*尚未公開*：), not after it"]


def _markdown():
    from markdown_it import MarkdownIt  # with the site's MyST (the site extra)

    return MarkdownIt("commonmark")
