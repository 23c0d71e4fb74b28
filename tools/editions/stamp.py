"""Stamp every notebook with its Binder/Colab badges and a Colab install cell.

Two cells, both tagged ``stamp`` and rewritten from :mod:`uneven.online` on every run (so a changed
repository address reaches every notebook with one command):

* the first cell, markdown (id ``stamp-badges``): "launch binder" and "open in Colab" badges for
  this notebook;
* the first code cell (id ``stamp-install``): when ``import uneven`` fails — on Colab, or in any
  Python where the package is missing — ``%pip install`` it from the repository.

The README's Binder badge (between the lines ``<!-- stamp: badges -->`` and
``<!-- /stamp -->``) is rewritten the same way. While the collection is not published
(:func:`uneven.online.published`), the badges are a plain note and the install cell says to run
from a checkout: nothing links to a repository that does not exist.

Idempotent: a notebook that already carries the current stamp is left byte for byte as it is. The
file is written as git's notebook filter stores it (``tools/nbstrip.py``), so stamping leaves
nothing else to normalise. Usage::

    python tools/editions stamp            # stamp notebooks/NN_*.ipynb in place
    python tools/editions stamp --check    # exit 1 if a notebook lacks the current stamp
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from . import discover

BADGES_ID = "stamp-badges"
INSTALL_ID = "stamp-install"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


def _online():
    sys.path.insert(0, str(discover.ROOT / "lib"))
    from uneven import online

    return online


#: What stands where the badges would, until the collection is published.
NOT_PUBLISHED = ("*Not published yet:* this collection has no public repository, so there is no "
                 "Binder or Colab link. Run it from a checkout with `make lab` (see the README).")
README = discover.ROOT / "README.md"
README_BEGIN, README_END = "<!-- stamp: badges -->", "<!-- /stamp -->"


#: The same in the zh-TW edition (its notebooks are generated, so the badge cell is written
#: here rather than translated in a catalog: a new address changes no translation).
NOT_PUBLISHED_ZH_TW = ("*尚未公開*：這套教材還沒有公開的儲存庫，所以沒有 Binder 或 Colab 連結。"
                       "請在取出的工作目錄裡執行 `make lab EDITION=zh_TW`（見 README）。")


def badges_source(name: str, lang: str = "en") -> str:
    """The badge cell's markdown for notebook ``name`` in edition ``lang`` (``"en"`` or
    ``"zh_TW"``). The zh-TW Binder badge opens the zh-TW notebook, which Binder's postBuild
    generates; Colab opens files from git, so its badge there opens the English notebook and
    says so."""
    online = _online()
    if lang not in online.LANGUAGES:
        raise ValueError(f"lang must be one of {online.LANGUAGES}; got {lang!r}")
    if not online.published():
        return NOT_PUBLISHED if lang == "en" else NOT_PUBLISHED_ZH_TW
    binder = f"[![launch binder]({BINDER_BADGE})]({online.binder_url(name, lang=lang)})"
    colab = f"[![Open In Colab]({COLAB_BADGE})]({online.colab_url(name)})"
    return f"{binder} {colab}" if lang == "en" else f"{binder} {colab}（Colab 只能開啟英文版）"


def install_source() -> str:
    """The install cell's code: a no-op wherever ``uneven`` imports."""
    online = _online()
    if not online.published():
        return ("# Where the uneven package is missing (on Colab, say) there is nothing to "
                "install it from:\n"
                "# the collection is not published yet. Run the notebooks from a checkout.\n"
                "try:\n"
                "    import uneven  # noqa: F401\n"
                "except ImportError:\n"
                '    raise ImportError("uneven is not installed and the collection is not '
                'published yet: run "\n'
                '                      "this notebook from a checkout with `make lab` (see the '
                'README)") from None')
    return ("# On Colab (or wherever the uneven package is missing) install it from the "
            "repository.\n"
            "try:\n"
            "    import uneven  # noqa: F401\n"
            "except ImportError:\n"
            f'    %pip install --quiet "{online.pip_requirement()}"')


def readme_badges() -> str:
    """The README's badge line: Binder on the start page, or the not-published note."""
    online = _online()
    if not online.published():
        return ("*Not published yet:* this repository is not public, so there is no Binder "
                "link; run the notebooks locally with the two commands below.")
    url = online.binder_url("00_start_here.ipynb")
    return f"[![launch binder]({BINDER_BADGE})]({url})"


def stamped_readme(text: str) -> str:
    """The README's text with its badge block rewritten."""
    if README_BEGIN not in text or README_END not in text:
        raise discover.EditionError(f"README.md lacks the lines {README_BEGIN!r} and "
                                    f"{README_END!r} around its badges")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_BEGIN}\n{readme_badges()}\n{README_END}{tail}"


def stamp_cells(name: str):
    meta = {"tags": [discover.STAMP_TAG]}
    badges = nbformat.v4.new_markdown_cell(badges_source(name), id=BADGES_ID, metadata=meta)
    install = nbformat.v4.new_code_cell(install_source(), id=INSTALL_ID, metadata=dict(meta))
    return badges, install


def stamped(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` carrying the current stamp: old stamp cells dropped, the badge cell
    first, the install cell before the first other code cell."""
    nb = nbformat.from_dict(nb)
    cells = [c for c in nb.cells if not discover.is_stamp(c)]
    taken = {c.get("id") for c in cells} & {BADGES_ID, INSTALL_ID}
    if taken:
        raise discover.EditionError(f"{name}: cell id(s) {sorted(taken)} are reserved for the "
                                    "stamp but used by an untagged cell")
    badges, install = stamp_cells(name)
    first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    nb.cells = [badges, *cells[:first_code], install, *cells[first_code:]]
    return nb


def stamped_text(path: Path) -> str:
    """``path``'s notebook, stamped, as git's notebook filter stores it."""
    sys.path.insert(0, str(discover.ROOT / "tools"))
    import nbstrip

    nb = nbformat.read(path, as_version=4)
    # The filter's own stripping, in-process (the same options as `git add` runs it with).
    return nbformat.writes(nbstrip.strip_notebook(stamped(nb, path.name))) + "\n"


def main(argv: list[str], readme: Path = README) -> int:
    check = "--check" in argv
    listed = [Path(a) for a in argv if a != "--check"]
    paths = listed or discover.notebook_paths()
    stale = 0
    if not listed:  # the whole collection: the README's badge too
        text = readme.read_text(encoding="utf-8")
        new = stamped_readme(text)
        if new != text:
            stale += 1
            if check:
                print(f"{readme}: lacks the current badge; run: python tools/editions stamp")
            else:
                readme.write_text(new, encoding="utf-8")
                print(f"stamped {readme}")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = stamped_text(path)
        if new == text:
            continue
        stale += 1
        if check:
            print(f"{path}: lacks the current stamp; run: python tools/editions stamp")
        else:
            path.write_text(new, encoding="utf-8", newline="")
            print(f"stamped {path}")
    return 1 if check and stale else 0
