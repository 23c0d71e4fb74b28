"""Shared by the tests of the library's zh-TW catalogs: the msgids a module passes to gettext,
the replacement fields of a template, one catalog as a dict, and what is wrong with a catalog."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import polib

from uneven import i18n


def literal_msgids(path: Path) -> list[tuple[str | None, str]]:
    """(msgctxt, msgid) of every ``_("...")`` / ``N_("...")`` call with a literal message in the
    module at ``path``, in order of appearance; a context may be the second argument or
    ``context=``. A call with a variable is skipped: its msgid is marked with ``N_`` where the
    string is written."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name) and n.func.id in ("_", "N_") and n.args),
                   key=lambda n: (n.lineno, n.col_offset))
    out = []
    for call in calls:
        first = call.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            assert call.func.id == "_", f"{Path(path).name}:{call.lineno}: N_ of a non-literal"
            continue
        given = call.args[1:2] + [kw.value for kw in call.keywords if kw.arg == "context"]
        for node in given:
            assert isinstance(node, ast.Constant), (
                f"{Path(path).name}:{call.lineno}: a context must be a literal string")
        out.append((given[0].value if given else None, first.value))
    return list(dict.fromkeys(out))


def fields(text: str) -> list[tuple[str, str, str | None]]:
    """The replacement fields of a ``str.format`` template: (name, format spec, conversion)."""
    return sorted((name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text)
                  if name is not None)


def catalog(part: str) -> dict[tuple[str | None, str], polib.POEntry]:
    """The entries of ``uneven-<part>.po`` (zh_TW) by (msgctxt, msgid), obsolete ones left out."""
    path = i18n.catalog_path("zh_TW", part)
    assert path.is_file(), f"no catalog {path}"
    return {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path)) if not e.obsolete}


def catalog_problems(entries: dict, wanted) -> list[str]:
    """What is wrong with a catalog's ``entries`` (see :func:`catalog`) for the ``wanted``
    (msgctxt, msgid) keys: missing, untranslated or fuzzy, other placeholders, left over."""
    problems = []
    for key in wanted:
        e = entries.get(key)
        if e is None:
            problems.append(f"missing: {key}")
        elif not e.msgstr or e.fuzzy:
            problems.append(f"untranslated or fuzzy: {key}")
        elif fields(e.msgid) != fields(e.msgstr):
            problems.append(f"placeholders differ: {key}: {fields(e.msgid)} vs "
                            f"{fields(e.msgstr)}")
    problems += [f"no longer used (delete it): {key}"
                 for key in sorted(set(entries) - set(wanted), key=str)]
    return problems
