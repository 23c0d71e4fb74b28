"""What a translation must keep from its English, and the words it must use.

Invariants of one entry (:func:`invariant_problems`): the same multiset of

* formulas ``$…$`` / ``$$…$$``, inline code `` `…` ``, link and image targets ``](…)``, HTML tags
  (verbatim);
* evidence labels ``[paper] [repo] [chapter] [3rd] [fig-OCR] [derived] (model) (our reading)``
  (verbatim, half-width brackets: the English label is kept, so a reader of either edition sees
  the same label, and a test can count it);
* numbers (digit sequences outside the above; a thousands separator is ignored, so ``1,024`` and
  ``1024`` are one number; a number the English writes as a word, "eight planes", is written as
  a word, 八個平面, in Chinese too);
* a number's unit (``50 GB/s``, ``2 MB``, ``52.4%``): the unit stays as written, except ``×``
  (or "times") after a number, which Chinese may write ``倍`` (``1.36×`` or ``1.36 倍``) as the
  chapter does;
* the structure: heading level, table rows and columns, list items.

Terms (:func:`term_problems`): ``locale/<lang>/terms.tsv`` maps an English term to the one
rendering the edition uses and lists forbidden variants; an entry whose English has the term
must contain the rendering, and no entry may contain a forbidden variant (nor any of the
Simplified-only characters of :data:`SIMPLIFIED_ONLY`). A translator comment
``i18n-terms-ok: link`` exempts one entry from one term where the English word means something
else (a web link, not a network link); the exemption is visible in the catalog.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import discover

LABELS = ("[paper]", "[repo]", "[chapter]", "[3rd]", "[fig-OCR]", "[derived]", "(model)",
          "(our reading)")
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

#: Characters that occur only in Simplified Chinese (each has a different Traditional form that
#: Taiwan writes); none of them occurs in the chapter page's zh-TW text (a test checks).
SIMPLIFIED_ONLY = (
    "这们为时个说对发与进过网络数据内还没么学习长门问间关开东车书见现电话买卖写头经样点"
    "实际产务动劳报场带导岁极页题顾风飞馆驱验鱼鸟齐龙乐归亲气权边达运远选递逻遗释钟钱"
    "铁银错键镜闭闲阵陆隐难雾鲜鸡亿仅从众优传伤伦会伟侧债倾偿储兴养冲决况净凭击创删别"
    "刚则剂劝办励势区医华协单卢卫却厂厅历压县参双变叙号吗听启吴员响团园围图圆圣坏块坚"
    "声壳处备复够夸夺奋奖妇妈娱孙宁宝审宪宫宽宾寻导寿将尔尘尝层属岂岗岛币师帐帧帮庄庆"
    "库应废异弃张弹强当录彻径忆忧怀态总恋恒恶恼惊惯愿戏战户扑执扩扫扬扰抚抛抢护担拟拥"
    "拦择挂挡挣挤挥损换据摄摆摇摊撑敌数断无旧显晋晒晓晕暂术机杀杂条来极构枪柜标栈栋栏"
    "树档桥梦检楼横欢欧毁毕汇汉沟泪泽洁浅测济浏浑浓涛润涨渐温湾湿满滤滥滚灭灯灵灾炉炼"
    "烂烟烦烧热爱独狭献环玛画畅疗盏盐监盖盘矫矿码砖础确碍礼离种积称稳穷窃竖竞笔笼筛签"
    "简类粮紧纠红纤约级纪纯纲纳纵纷纸纹线练组细织终经绑结绕绘给绝统继绩续维综绿缓编缘"
    "缩缺罗罚罢联聪肃肠肤肾肿胀脉脏脑脚脱脸艰艺节苏荐荡荣药获营蓝虑虚虽补衬袭装见观规"
    "视览觉计订认讨让训议讯记讲许论设访证评识诉诊词译试诗话询该详语误请诸读课谁调谈谋"
    "谓谢谨贝负贡财责败货质贩贪购贯贵费贸资赏赔赖赚赛赞赶趋跃践轨转轮软轰轻载较辅辆辈"
    "辉输辖辽迁迈违连迟适邮邻酱钉钢钥钻铃铅铜铭锁锅错键镇闪闯阀阁阅队阳阴阶随隶静韩顶"
    "项顺须顽顿预领频颗额颜飘饭饮饰饱馆驰驶驻驾骂骑骗鲁鸣鹅黄龄")


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
    units = Counter()
    for number, unit in UNIT_AFTER.findall(rest):
        units[(number.replace(",", ""), "×" if unit in ("倍", "times") else unit)] += 1
    numbers = Counter(n.replace(",", "") for n in NUMBER.findall(rest))
    return Tokens(Counter(formulas), Counter(code), Counter(targets + urls + arxiv),
                  Counter(tags), +labels, numbers, units, _shape(text))


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
    """
    e, t = tokens(english), tokens(translation)
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
        return re.compile(r"(?<![\w-])(?:" + self.english + r")(?![\w-])", re.I)


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
    return rest


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
    problems = []
    # an approved rendering never counts as a forbidden variant inside it (演算法 holds 算法)
    rest = translation
    for term in terms:
        rest = rest.replace(term.rendering, "\0")
    for term in terms:
        for bad in term.forbidden:
            if bad in rest:
                problems.append(f"{bad!r} is not this edition's word: write {term.rendering!r}"
                                + (f" ({term.note})" if term.note else ""))
    simplified = sorted({c for c in translation if c in SIMPLIFIED_ONLY})
    if simplified:
        problems.append("Simplified-only characters: " + " ".join(simplified))
    return problems
