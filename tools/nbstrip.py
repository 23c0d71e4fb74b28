"""How git stores notebooks: through nbstripout, so running them never dirties ``git status``.

The options live here, once; ``make install`` (inside ``make lab``/``make test``) calls
``install``, the tests call ``strip``. Cell ids and cell tags are kept (the ``figure``/``explorer``
tags are part of the notebooks' contract); outputs, execution counts, widget state, timing
metadata and the kernel's version details (which differ from machine to machine) are not.

Usage::

    python tools/nbstrip.py install                 # set up the git filter (local git config)
    python tools/nbstrip.py normalize FILE.ipynb..  # rewrite files as the filter would store them
    python tools/nbstrip.py check FILE.ipynb..      # exit 1 if a file is not already normalised
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

EXTRA_KEYS = ("metadata.language_info.version metadata.language_info.codemirror_mode "
              "metadata.language_info.nbconvert_exporter")
OPTIONS = ("--keep-id", "--unix-newlines", "--extra-keys", EXTRA_KEYS)
ATTRIBUTES = ("*.ipynb filter=nbstripout", "*.ipynb diff=ipynb")


#: Keys nbstripout removes by default, plus ours: what the filter and the save hook both drop.
DEFAULT_KEYS = ("metadata.signature", "metadata.widgets", "cell.metadata.collapsed",
                "cell.metadata.ExecuteTime", "cell.metadata.execution",
                "cell.metadata.heading_collapsed", "cell.metadata.hidden", "cell.metadata.scrolled")


def strip_notebook(nb):
    """A notebook node (or dict) as the git filter stores it: the same options, in-process."""
    import nbformat
    from nbstripout import strip_output

    node = nbformat.from_dict(nb)
    return strip_output(node, keep_output=False, keep_count=False, keep_id=True,
                        extra_keys=[*DEFAULT_KEYS, *EXTRA_KEYS.split()])


def save_hook(model, path, contents_manager=None, **kwargs):
    """Jupyter ``pre_save_hook`` for ``make lab``: a notebook under ``notebooks/`` is saved as the
    git filter would store it, so running a notebook leaves ``git status`` clean (your edits to
    cells — answers included — are saved; outputs are not, and every notebook reruns in well
    under a minute). ``UNEVEN_KEEP_OUTPUTS=1`` turns it off."""
    import os

    if os.environ.get("UNEVEN_KEEP_OUTPUTS") == "1":
        return
    if model.get("type") != "notebook" or not str(path).lstrip("/").startswith("notebooks/"):
        return
    model["content"] = strip_notebook(model["content"])


def command(python: str = sys.executable) -> str:
    """The shell command git runs as the clean filter."""
    return shlex.join([python, "-m", "nbstripout", *OPTIONS])


def strip(text: str, python: str = sys.executable) -> str:
    """``text`` (a notebook's JSON) as the git filter stores it."""
    out = subprocess.run([python, "-m", "nbstripout", *OPTIONS], input=text.encode("utf-8"),
                         capture_output=True, check=True)
    return out.stdout.decode("utf-8")


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def install(where: Path | None = None, python: str = sys.executable) -> int:
    """Set up the filter in the local git config of the work tree around ``where``; outside a
    git work tree (or without git) say so and do nothing. Never edits a tracked file."""
    where = Path.cwd() if where is None else where
    try:
        top = _git("rev-parse", "--show-toplevel", cwd=where)
    except FileNotFoundError:
        print("nbstrip: git not found; notebook filter not installed")
        return 0
    if top.returncode != 0:
        print("nbstrip: not inside a git work tree; notebook filter not installed")
        return 0
    root = Path(top.stdout.strip())
    # nbstripout --install appends to the attributes file it is given unless both lines are
    # there: give it the committed .gitattributes only when that already has them.
    attrs = root / ".gitattributes"
    have = attrs.read_text().splitlines() if attrs.exists() else []
    attrfile = ".gitattributes" if all(a in have for a in ATTRIBUTES) else ".git/info/attributes"
    done = subprocess.run([python, "-m", "nbstripout", "--install", "--attributes", attrfile],
                          cwd=root)
    if done.returncode != 0:
        return done.returncode
    # nbstripout --install writes a bare command; ours carries the options above.
    for key, value in (("filter.nbstripout.clean", command(python)),
                       ("diff.ipynb.textconv", command(python) + " -t")):
        done = _git("config", "--local", key, value, cwd=root)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
    print(f"nbstrip: git filter for notebooks installed in {root}")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("install", "normalize", "check"):
        print(__doc__)
        return 2
    if argv[0] == "install":
        return install()
    bad = 0
    for name in argv[1:]:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        clean = strip(text)
        if clean != text:
            bad += 1
            if argv[0] == "normalize":
                path.write_text(clean, encoding="utf-8", newline="")
                print(f"normalised {path}")
            else:
                print(f"{path} is not what git's notebook filter stores")
    return 1 if bad and argv[0] == "check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
