"""The translated editions (zh-TW first): catalogs, not copies.

``python tools/editions i18n extract [--lang zh_TW] [NN ...]``
    updates ``locale/<lang>/LC_MESSAGES/NN_name.po`` from the English notebooks: a new block
    gets an empty entry, a changed one is marked fuzzy (stale) with its old translation kept as a
    hint and the old English as ``#| msgid``, a removed one is dropped.
``python tools/editions i18n build [--lang zh_TW] [--strict] [NN ...]``
    writes ``notebooks/<lang>/NN_name.ipynb`` (git-ignored): code cells byte for byte the English
    ones, markdown from the catalog (English where a block has no current translation; with
    ``--strict`` that is an error), one added code cell tagged ``i18n`` that sets the library's
    language, links to ``../`` files one folder further up.
``python tools/editions i18n status [--lang zh_TW]``
    coverage and stale entries per notebook.

One entry is one block of a markdown cell: a paragraph (with the list that follows it when no
blank line parts them), a heading, a table, a ``<details><summary>`` line; blank lines part
blocks, never a fenced code block, a ``$$`` formula or a table (a fenced code block or a
formula alone is kept as it is, not translated). ``msgctxt`` is
``"<cell id>#<k>"`` (k counts the cell's translatable blocks from 0), and an extracted comment
``source-sha1: ...`` carries the hash of the English the translation was made from, so a changed
English source shows even when someone edited the ``msgid`` by hand.

Why gettext ``.po`` with polib: it is the format translators' tools (Poedit, Weblate, Lokalize)
read, with the stale-translation convention built in (``#, fuzzy`` and ``#| msgid``); polib is a
small, pure-Python, long-maintained reader and writer of it, and the library reads its own
catalogs with it too (``uneven.i18n``), so there is one format and one reader.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import discover, stamp

ROOT = discover.ROOT
LOCALE = ROOT / "locale"
LANGUAGES = ("zh_TW",)
LANGUAGE_NAMES = {"zh_TW": "Chinese (Traditional, Taiwan)"}
LANGUAGE_CELL_ID = "i18n-language"
I18N_TAG = "i18n"

HEADING = re.compile(r"^#{1,6}\s")
TAG_ONLY = re.compile(r"^\s*(</?[A-Za-z][^>]*>\s*)+$")
SUMMARY = re.compile(r"^\s*<details>\s*<summary>.*</summary>\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
HASH_COMMENT = re.compile(r"^source-sha1: ([0-9a-f]{40})$", re.M)


# ---- blocks ---------------------------------------------------------------------------------

@dataclass
class Piece:
    kind: str  # "text" (translatable), "fixed" (kept as it is) or "sep" (line breaks)
    text: str


def _has_words(text: str) -> bool:
    """Anything left to translate once tags, code, formulas and link targets are taken out."""
    rest = re.sub(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", " ", text, flags=re.S | re.M)
    rest = re.sub(r"<[^>]*>", " ", rest)
    rest = re.sub(r"`[^`]*`", " ", rest)
    rest = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", rest, flags=re.S)
    rest = re.sub(r"\]\([^)]*\)", "]", rest)
    return bool(re.search(r"[^\W\d_]", rest))


def segments(source: str) -> list[Piece]:
    """``source`` cut into blocks and the line breaks between them; ``"".join`` of the pieces'
    text gives ``source`` back exactly.

    >>> [(p.kind, p.text) for p in segments("# Title\\nSome text,\\nsame block.\\n\\n</details>")]
    [('text', '# Title'), ('sep', '\\n'), ('text', 'Some text,\\nsame block.'), ('sep', '\\n\\n'), \
('fixed', '</details>')]
    """
    pieces: list[Piece] = []
    block: list[str] = []

    def add(kind: str, text: str) -> None:
        if not text:
            return
        if kind == "sep" and pieces and pieces[-1].kind == "sep":
            pieces[-1].text += text
        else:
            pieces.append(Piece(kind, text))

    def flush() -> None:
        if block:
            text = "".join(block)
            body = text.rstrip("\n")
            add("text" if _has_words(body) else "fixed", body)
            add("sep", text[len(body):])
            block.clear()

    fence: str | None = None
    math = False
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        if fence:
            block.append(line)
            if stripped.startswith(fence):
                fence = None
            continue
        if math:
            block.append(line)
            if stripped.endswith("$$"):
                math = False
            continue
        if m := FENCE.match(line):
            fence = m.group(1)
            block.append(line)
            continue
        if stripped.startswith("$$") and (stripped == "$$" or not stripped.endswith("$$")):
            math = True
            block.append(line)
            continue
        if not stripped:
            flush()
            add("sep", line)
            continue
        if HEADING.match(line) or TAG_ONLY.match(line) or SUMMARY.match(line):
            flush()
            block.append(line)
            flush()
            continue
        block.append(line)
    flush()
    return pieces


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Unit:
    """One translatable block of a notebook."""

    context: str  # msgctxt: "<cell id>#<k>"
    source: str  # the English
    cell_index: int
    cell_id: str
    tags: tuple[str, ...]

    @property
    def words(self) -> int:
        return len(self.source.split())


def units(nb) -> list[Unit]:
    """Every translatable block of the notebook's markdown cells, in order. A markdown cell
    without an nbformat cell id cannot be keyed: :class:`discover.EditionError`."""
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or discover.is_stamp(cell):  # the stamp writes its own
            continue
        cell_id = cell.get("id")
        if not cell_id:
            raise discover.EditionError(f"markdown cell {index} has no cell id to key it by")
        k = 0
        for piece in segments(cell.source):
            if piece.kind == "text":
                out.append(Unit(f"{cell_id}#{k}", piece.text, index, cell_id,
                                tuple(cell.metadata.get("tags", []))))
                k += 1
    return out


# ---- catalogs -------------------------------------------------------------------------------

def catalog_path(notebook: Path, lang: str = "zh_TW") -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{Path(notebook).stem}.po"


def output_path(notebook: Path, lang: str = "zh_TW") -> Path:
    return ROOT / "notebooks" / lang / Path(notebook).name


def source_hash(entry) -> str | None:
    m = HASH_COMMENT.search(entry.comment or "")
    return m.group(1) if m else None


def _comment(unit: Unit) -> str:
    where = f"cell {unit.cell_index} ({unit.cell_id})"
    if unit.tags:
        where += ", tags: " + ", ".join(unit.tags)
    return f"source-sha1: {digest(unit.source)}\n{where}"


def load_catalog(path: Path):
    import polib

    return polib.pofile(str(path), wrapwidth=0) if path.is_file() else None


def new_catalog(notebook: Path, lang: str):
    import polib

    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": f"uneven notebooks/{Path(notebook).name}",
        "Language": lang,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    po.header = (f"{LANGUAGE_NAMES.get(lang, lang)} catalog of notebooks/{Path(notebook).name}.\n"
                 "Generated by `python tools/editions i18n extract`; translate the msgstr lines\n"
                 "only (see locale/README.md).")
    return po


@dataclass
class ExtractReport:
    notebook: str
    entries: int = 0
    words: int = 0
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _current(entry) -> bool:
    return bool(entry.msgstr) and not entry.fuzzy and not entry.obsolete


def extract(notebook: Path, lang: str = "zh_TW", write: bool = True) -> ExtractReport:
    """Bring the catalog of ``notebook`` in step with its English (see the module's doc)."""
    import polib

    notebook = Path(notebook)
    path = catalog_path(notebook, lang)
    old = load_catalog(path)
    po = new_catalog(notebook, lang)
    if old is not None:
        po.metadata.update(old.metadata)
        po.header = old.header or po.header
    previous = {e.msgctxt: e for e in (old or []) if not e.obsolete}
    by_source = {e.msgid: e for e in (old or []) if _current(e)}
    report = ExtractReport(notebook.name)
    seen = set()
    for unit in units(nbformat.read(notebook, as_version=4)):
        seen.add(unit.context)
        report.entries += 1
        report.words += unit.words
        entry = polib.POEntry(msgctxt=unit.context, msgid=unit.source, msgstr="",
                              comment=_comment(unit))
        was = previous.get(unit.context)
        if was is not None and was.msgid == unit.source and \
                source_hash(was) == digest(unit.source):
            entry.msgstr, entry.flags, entry.tcomment = was.msgstr, list(was.flags), was.tcomment
            entry.previous_msgid = was.previous_msgid
        elif unit.source in by_source:  # the same English moved to another block: reuse it
            entry.msgstr = by_source[unit.source].msgstr
            entry.tcomment = by_source[unit.source].tcomment
            report.moved.append(unit.context)
        elif was is not None and was.msgstr:  # changed: stale, old translation as the hint
            entry.msgstr, entry.tcomment = was.msgstr, was.tcomment
            entry.flags = ["fuzzy"]
            entry.previous_msgid = was.previous_msgid if was.fuzzy and was.previous_msgid \
                else was.msgid
            report.changed.append(unit.context)
        else:
            report.new.append(unit.context)
        po.append(entry)
    report.removed = [c for c in previous if c not in seen]
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
        po.save(str(path))
    return report


# ---- status ---------------------------------------------------------------------------------

@dataclass
class Status:
    notebook: str
    has_catalog: bool
    entries: int = 0
    words: int = 0
    translated: int = 0
    missing: list[str] = field(default_factory=list)  # contexts with no translation at all
    stale: list[str] = field(default_factory=list)  # "context: why"
    extra: list[str] = field(default_factory=list)  # catalog entries no English block has

    @property
    def coverage(self) -> float:
        return 100.0 * self.translated / self.entries if self.entries else 100.0

    @property
    def complete(self) -> bool:
        return self.has_catalog and not self.missing and not self.stale and not self.extra


def stale_reason(entry, unit: Unit) -> str | None:
    """Why ``entry`` is not a current translation of ``unit`` (None when it is)."""
    if entry.fuzzy:
        return "marked fuzzy: the English changed since it was translated"
    if source_hash(entry) != digest(unit.source):
        return "the English changed since it was translated (source-sha1 differs)"
    if entry.msgid != unit.source:
        return "msgid differs from the English (edited by hand?)"
    return None


def status(notebook: Path, lang: str = "zh_TW") -> Status:
    notebook = Path(notebook)
    po = load_catalog(catalog_path(notebook, lang))
    all_units = units(nbformat.read(notebook, as_version=4))
    st = Status(notebook.name, po is not None, len(all_units), sum(u.words for u in all_units))
    entries = {e.msgctxt: e for e in (po or []) if not e.obsolete}
    for unit in all_units:
        entry = entries.get(unit.context)
        if entry is None or not entry.msgstr:
            st.missing.append(unit.context)
        elif why := stale_reason(entry, unit):
            st.stale.append(f"{unit.context} (cell {unit.cell_index}): {why}")
        else:
            st.translated += 1
    known = {u.context for u in all_units}
    st.extra = [c for c in entries if c not in known]
    return st


# ---- build ----------------------------------------------------------------------------------

#: A markdown link or image target, or an HTML src/href, that starts with ``../``.
UP_LINK = re.compile(r"(\]\(|\bsrc=\"|\bhref=\")\.\./")


def relink(text: str) -> str:
    """Links out of ``notebooks/`` go one folder further up from ``notebooks/<lang>/``; links to
    the other notebooks (``01_x.ipynb``) stay as they are and so open their translated copies."""
    return UP_LINK.sub(lambda m: m.group(1) + "../../", text)


def language_cell(lang: str):
    # the assignment keeps the cell from echoing the language back as an output; its one
    # output is an invisible style: printed tables in a font whose CJK is two columns wide
    cell = nbformat.v4.new_code_cell(
        "# 本版本的函式庫訊息與圖表文字使用繁體中文（尚未翻譯的部分顯示英文）\n"
        f"import uneven\n_ = uneven.set_language({lang!r})\n"
        "uneven.i18n.output_font()  # 印出的表格：中文字剛好兩欄寬的等寬字型" if lang == "zh_TW"
        else
        f"import uneven\n_ = uneven.set_language({lang!r})\nuneven.i18n.output_font()")
    cell.id = LANGUAGE_CELL_ID
    cell.metadata["tags"] = [I18N_TAG]
    return cell


def translate_markdown(cell, entries: dict, fallbacks: list[str]) -> str:
    """The cell's markdown with each block replaced by its current translation (the English
    where there is none: its context is added to ``fallbacks``)."""
    out, k = [], 0
    for piece in segments(cell.source):
        if piece.kind != "text":
            out.append(piece.text)
            continue
        context = f"{cell.id}#{k}"
        k += 1
        entry = entries.get(context)
        unit = Unit(context, piece.text, 0, cell.id, ())
        if entry is not None and entry.msgstr and stale_reason(entry, unit) is None:
            out.append(entry.msgstr)
        else:
            out.append(piece.text)
            fallbacks.append(context)
    return relink("".join(out))


def translated_notebook(notebook: Path, lang: str = "zh_TW") -> tuple[object, list[str]]:
    """The ``lang`` edition of ``notebook`` (nothing written) and the contexts left English."""
    notebook = Path(notebook)
    nb = nbformat.read(notebook, as_version=4)
    po = load_catalog(catalog_path(notebook, lang))
    entries = {e.msgctxt: e for e in (po or []) if not e.obsolete}
    out = copy.deepcopy(nb)
    fallbacks: list[str] = []
    for cell in out.cells:
        if cell.cell_type == "markdown" and discover.is_stamp(cell):
            cell.source = stamp.badges_source(notebook.name, lang)
        elif cell.cell_type == "markdown":
            cell.source = translate_markdown(cell, entries, fallbacks)
    # the language cell goes before the first code cell the stamp tool does not own
    at = next((i for i, c in enumerate(out.cells)
               if c.cell_type == "code" and not discover.is_stamp(c)), len(out.cells))
    out.cells.insert(at, language_cell(lang))
    out.metadata["uneven"] = {"language": lang, "source": f"notebooks/{notebook.name}",
                              "untranslated_blocks": len(fallbacks)}
    out.metadata.setdefault("language_info", {})
    return out, fallbacks


def build(notebook: Path, lang: str = "zh_TW", strict: bool = False) -> tuple[Path, list[str]]:
    nb, fallbacks = translated_notebook(notebook, lang)
    if strict and fallbacks:
        raise discover.EditionError(
            f"{Path(notebook).name}: {len(fallbacks)} block(s) without a current {lang} "
            f"translation: {', '.join(fallbacks[:8])}{' ...' if len(fallbacks) > 8 else ''}")
    dest = output_path(notebook, lang)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest, fallbacks


# ---- command line ---------------------------------------------------------------------------

def _selected(numbers: list[str]) -> list[Path]:
    paths = discover.notebook_paths()
    if not numbers:
        return paths
    chosen = [p for p in paths if p.name[:2] in numbers or p.stem in numbers]
    unknown = set(numbers) - {p.name[:2] for p in chosen} - {p.stem for p in chosen}
    if unknown:
        raise SystemExit(f"no notebook {', '.join(sorted(unknown))}")
    return chosen


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python tools/editions i18n")
    parser.add_argument("command", choices=("extract", "build", "status"))
    parser.add_argument("notebooks", nargs="*", help="NN or NN_name (default: all)")
    parser.add_argument("--lang", default="zh_TW", choices=LANGUAGES)
    parser.add_argument("--strict", action="store_true",
                        help="build: fail on any block without a current translation")
    args = parser.parse_intermixed_args(argv)
    paths = _selected(args.notebooks)
    if args.command == "extract":
        for p in paths:
            r = extract(p, args.lang)
            print(f"{r.notebook}: {r.entries} entries, {r.words} English words; "
                  f"{len(r.new)} new, {len(r.changed)} changed (now fuzzy), "
                  f"{len(r.moved)} moved, {len(r.removed)} removed")
        return 0
    if args.command == "build":
        failed = 0
        for p in paths:
            try:
                dest, fallbacks = build(p, args.lang, strict=args.strict)
            except discover.EditionError as err:
                print(err)
                failed += 1
                continue
            note = f", {len(fallbacks)} block(s) left English" if fallbacks else ""
            print(f"{dest.relative_to(ROOT)}{note}")
        return 1 if failed else 0
    incomplete = 0
    for p in paths:
        st = status(p, args.lang)
        if not st.has_catalog:
            print(f"{st.notebook}: no {args.lang} catalog ({st.entries} entries, "
                  f"{st.words} words to translate)")
            incomplete += 1
            continue
        print(f"{st.notebook}: {st.coverage:5.1f}% ({st.translated}/{st.entries} entries), "
              f"{len(st.missing)} missing, {len(st.stale)} stale")
        for line in st.stale:
            print(f"    stale {line}")
        for line in st.extra:
            print(f"    extra {line} (no such block in the English; run extract)")
        incomplete += not st.complete
    return 1 if incomplete else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
