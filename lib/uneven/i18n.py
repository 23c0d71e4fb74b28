"""The language the library speaks: English, or Traditional Chinese (Taiwan) for the zh-TW edition.

``uneven.set_language("zh_TW")`` (or the environment variable ``UNEVEN_LANG=zh_TW``, read when no
language was set in the session) switches the library's user-facing strings to the catalog
``lib/uneven/locale/<language>/LC_MESSAGES/uneven.po`` (and its ``uneven-*.po`` fragments);
every string without a current translation
(absent, empty or marked fuzzy) stays English. Catalogs are gettext ``.po`` files, read with polib
(no compiled ``.mo`` to keep in step with them). The zh-TW notebooks (``notebooks/zh_TW/``, built
by ``python tools/editions i18n build``) set the language in their first code cell.

>>> from uneven import i18n
>>> i18n.set_language("en")
'en'
>>> i18n.gettext("all-to-all time")
'all-to-all time'
>>> _ = i18n.set_language(None)  # back to $UNEVEN_LANG
"""

from __future__ import annotations

import os
import re
import warnings
from functools import lru_cache
from pathlib import Path

from ._validate import _show, check_choice

#: The languages there is an edition of; English is the source and the fallback.
LANGUAGES = ("en", "zh_TW")
#: The environment variable read when no language was set with :func:`set_language`.
ENV = "UNEVEN_LANG"
#: Where the library's catalogs live: ``<LOCALE_DIR>/<language>/LC_MESSAGES/uneven.po``.
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "uneven"

_chosen: str | None = None


def _normalise(name: str, value) -> str:
    """``"zh-TW"``, ``"zh_tw"`` and ``"zh_TW.UTF-8"`` are all ``"zh_TW"``."""
    if isinstance(value, str):
        value = value.split(".", 1)[0].replace("-", "_")
    return check_choice(name, value, LANGUAGES)


def set_language(language: str | None) -> str | None:
    """Set the language of the library's messages, figure text and widget labels.

    ``language`` is one of :data:`LANGUAGES` (``"en"``, ``"zh_TW"``; ``"zh-TW"`` is accepted), or
    ``None`` to go back to the environment variable ``UNEVEN_LANG`` (English when it is unset).
    Returns the language now in force.

    >>> set_language("zh-TW")
    'zh_TW'
    >>> set_language(None) == get_language()
    True
    """
    global _chosen
    _chosen = None if language is None else _normalise("language", language)
    return get_language() if language is None else _chosen


def get_language() -> str:
    """The language in force: the one set with :func:`set_language`, else ``$UNEVEN_LANG``, else
    English. An ``UNEVEN_LANG`` that names no edition warns once and gives English."""
    if _chosen is not None:
        return _chosen
    env = os.environ.get(ENV, "").strip()
    if not env:
        return "en"
    try:
        return _normalise(ENV, env)
    except ValueError as err:
        _warn_env(str(err))
        return "en"


@lru_cache(maxsize=8)
def _warn_env(message: str) -> None:
    warnings.warn(f"{message}; using English", RuntimeWarning, stacklevel=4)


def catalog_path(language: str, part: str = "") -> Path:
    """The ``.po`` file of the library's strings in ``language`` (it may not exist yet):
    ``uneven.po``, or with ``part`` a fragment ``uneven-<part>.po`` (one per explorer module, say,
    so that translators of different modules never edit the same file)."""
    language = _normalise("language", language)
    if not (isinstance(part, str) and re.fullmatch(r"[a-z0-9_]{0,40}", part)):
        raise ValueError(f"part must be a short catalog name of lower-case letters, digits and "
                         f"'_' (e.g. 'nb03', 'exercises'), or '' for uneven.po; got {_show(part)}")
    name = f"{DOMAIN}-{part}.po" if part else f"{DOMAIN}.po"
    return LOCALE_DIR / language / "LC_MESSAGES" / name


def catalog_paths(language: str) -> list[Path]:
    """Every catalog of the library in ``language``: ``uneven.po`` and its ``uneven-*.po``
    fragments, in name order."""
    folder = LOCALE_DIR / _normalise("language", language) / "LC_MESSAGES"
    return sorted(folder.glob(f"{DOMAIN}.po")) + sorted(folder.glob(f"{DOMAIN}-*.po"))


def _catalog(language: str) -> dict[tuple[str | None, str], str]:
    out: dict[tuple[str | None, str], str] = {}
    for path in catalog_paths(language):
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            continue
        out.update(_read_catalog(str(path), stamp))
    return out


@lru_cache(maxsize=8)
def _read_catalog(path: str, stamp: int) -> dict[tuple[str | None, str], str]:
    """(msgctxt, msgid) -> msgstr for every current translation of one ``.po`` (the file's
    modification time is part of the key, so an edited catalog is read again)."""
    import polib

    out = {}
    for entry in polib.pofile(path):
        if entry.msgstr and not entry.fuzzy and not entry.obsolete:
            out[(entry.msgctxt, entry.msgid)] = entry.msgstr
    return out


def gettext(message: str, context: str | None = None) -> str:
    """``message`` in the language in force, or ``message`` itself when the catalog has no
    current translation of it. ``context`` is the entry's ``msgctxt`` (the same English can need
    two renderings: a figure title and a widget label).

    Placeholders are the caller's business: translate the template, then format it, so the
    numbers stay the library's (``gettext("{n} GPUs").format(n=8)``).
    """
    language = get_language()
    if language == "en":
        return message
    return _catalog(language).get((context, message), message)


#: The conventional short name; call sites import ``gettext as _`` (no private name crosses).
_ = gettext

#: Monospace fonts whose CJK characters are exactly two of their Latin columns wide (the first
#: installed one is used; fonts-noto-cjk, declared in binder/apt.txt, has the first).
CJK_MONO_FONTS = ("Noto Sans Mono CJK TC", "Noto Sans Mono CJK SC", "Noto Sans Mono CJK JP")


def output_font_css() -> str:
    """CSS that shows printed output in one of :data:`CJK_MONO_FONTS`, for a page in a language
    other than English ("" in English). A printed table is padded by display width (a CJK
    character counts two columns); a browser otherwise takes the Latin characters from the code
    font and the CJK ones from a fallback font about 1.66 columns wide, and the table drifts.

    >>> _ = set_language("zh_TW"); "Noto Sans Mono CJK TC" in output_font_css()
    True
    >>> _ = set_language("en"); output_font_css()
    ''
    >>> _ = set_language(None)
    """
    if get_language() == "en":
        return ""
    fonts = ", ".join(f"'{f}'" for f in CJK_MONO_FONTS)
    return (f".jp-OutputArea-output pre, .cell_output pre {{ font-family: {fonts}, "
            "monospace; }")


def output_font():
    """The style of :func:`output_font_css` as a notebook output (nothing visible; nothing in
    English): the zh-TW notebooks show it in their language cell."""
    css = output_font_css()
    if not css:
        return None
    from IPython.display import HTML

    return HTML(f"<style>{css}</style>")


__all__ = ["LANGUAGES", "ENV", "CJK_MONO_FONTS", "set_language", "get_language", "gettext",
           "catalog_path", "catalog_paths", "output_font_css", "output_font"]
