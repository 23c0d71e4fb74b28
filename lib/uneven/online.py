"""Where the collection lives online: one setting, and the links built from it.

The repository's address is written in one place, ``[project.urls] Repository`` in
``pyproject.toml`` (``https://github.com/owner/name``); :data:`REPOSITORY` is its ``owner/name``,
or ``None`` while the line is absent, which means the collection is not published yet.
Everything that points at it is derived here: each notebook's Binder and Colab links (the badges
that ``tools/editions/stamp.py`` writes at the top of every notebook and of the README, and that
the site shows) and the ``pip`` requirement of the notebooks' install cell. Until the collection
is published, the stamp writes a plain note instead of badges and the install cell says how to
run from a checkout; no link points at a repository that does not exist. (The classroom
autograder needs no address: it carries the package as a wheel.)

At publication: add the ``Repository`` line, run ``make stamp``, commit the re-stamped files.

>>> binder_url("01_attack_of_the_bubbles.ipynb", repository="someone/uneven")
'https://mybinder.org/v2/gh/someone/uneven/main?labpath=notebooks%2F01_attack_of_the_bubbles.ipynb'
>>> colab_url("notebooks/03_deepseek_v3.ipynb", repository="someone/uneven")
'https://colab.research.google.com/github/someone/uneven/blob/main/notebooks/03_deepseek_v3.ipynb'
>>> pip_requirement(repository="someone/uneven")
'uneven @ git+https://github.com/someone/uneven@main'
>>> repository_from_url("https://github.com/someone/uneven/")
'someone/uneven'
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ._validate import check_choice

__all__ = [
    "REPOSITORY",
    "BRANCH",
    "NOTEBOOK_DIR",
    "LANGUAGES",
    "PYPROJECT",
    "published",
    "repository_from_url",
    "repository_url",
    "binder_url",
    "colab_url",
    "pip_requirement",
]

#: The branch that Binder, Colab and the install cell read.
BRANCH = "main"
#: Where the notebooks sit inside the repository.
NOTEBOOK_DIR = "notebooks"
#: The editions a Binder link can open (the zh-TW one is generated on Binder by its postBuild).
LANGUAGES = ("en", "zh_TW")
#: The checkout's ``pyproject.toml`` (absent when the package is installed from a wheel).
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

_NAME = re.compile(r"^[0-9]{2}_[A-Za-z0-9_]+\.ipynb$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
_GITHUB = re.compile(r"^https://github\.com/([^/\s]+/[^/\s]+?)(?:\.git)?/?$")


def repository_from_url(url) -> str:
    """``owner/name`` of a GitHub repository address ``https://github.com/owner/name``."""
    m = _GITHUB.match(url) if isinstance(url, str) else None
    if not m or not _REPO.match(m.group(1)):
        raise ValueError("url must be a GitHub repository address like "
                         f"'https://github.com/owner/name'; got {url!r}")
    return m.group(1)


def _configured(pyproject: Path = PYPROJECT) -> str | None:
    """The ``Repository`` URL of ``[project.urls]``: from the checkout's pyproject.toml when
    there is one (the source of truth), else from the installed package's metadata."""
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # pragma: no cover - 3.10 reads the installed metadata
        tomllib = None
    if tomllib is not None and pyproject.is_file():
        with pyproject.open("rb") as f:
            urls = tomllib.load(f).get("project", {}).get("urls", {})
        url = next((v for k, v in urls.items() if k.lower() == "repository"), None)
        return None if url is None else repository_from_url(url)
    from importlib import metadata

    try:
        entries = metadata.metadata("uneven").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "repository":
            return repository_from_url(url.strip())
    return None


#: GitHub ``owner/name`` of the published repository, or None: not published yet.
REPOSITORY: str | None = _configured()


def published() -> bool:
    """Whether the collection has a public repository (``[project.urls] Repository``)."""
    return REPOSITORY is not None


def _repository(repository: str | None) -> str:
    repo = REPOSITORY if repository is None else repository
    if repo is None:
        raise ValueError("repository: the collection is not published yet (add "
                         "'Repository = \"https://github.com/owner/name\"' under [project.urls] "
                         "in pyproject.toml), so there is no address to link to; got None")
    if not isinstance(repo, str) or not _REPO.match(repo):
        raise ValueError(f"repository must be a GitHub 'owner/name'; got {repo!r}")
    return repo


def _notebook(notebook) -> str:
    name = PurePosixPath(str(notebook).replace("\\", "/")).name
    if not _NAME.match(name):
        raise ValueError("notebook must be a notebook file name like "
                         f"'01_attack_of_the_bubbles.ipynb' (a path to one is fine); got "
                         f"{notebook!r}")
    return name


def repository_url(repository: str | None = None) -> str:
    """The repository's web address.

    >>> repository_url("someone/uneven")
    'https://github.com/someone/uneven'
    """
    return f"https://github.com/{_repository(repository)}"


def binder_url(notebook, repository: str | None = None, lang: str = "en") -> str:
    """A Binder link that opens ``notebook`` (a name like ``'01_x.ipynb'`` or a path to one) in
    JupyterLab, built from the repository's ``binder/`` environment. ``lang``: ``"en"`` or
    ``"zh_TW"`` (Binder's postBuild generates the zh-TW notebooks into ``notebooks/zh_TW/``;
    they are not in git, so Colab has no zh-TW link).

    >>> binder_url("01_attack_of_the_bubbles.ipynb", "someone/uneven", lang="zh_TW").split("=")[1]
    'notebooks%2Fzh_TW%2F01_attack_of_the_bubbles.ipynb'
    """
    name = _notebook(notebook)
    lang = check_choice("lang", lang, LANGUAGES)
    folder = "" if lang == "en" else f"{lang}%2F"
    return (f"https://mybinder.org/v2/gh/{_repository(repository)}/{BRANCH}"
            f"?labpath={NOTEBOOK_DIR}%2F{folder}{name}")


def colab_url(notebook, repository: str | None = None) -> str:
    """A Colab link that opens ``notebook`` straight from the repository."""
    name = _notebook(notebook)
    return (f"https://colab.research.google.com/github/{_repository(repository)}/blob/{BRANCH}/"
            f"{NOTEBOOK_DIR}/{name}")


def pip_requirement(repository: str | None = None) -> str:
    """The ``pip install`` requirement that installs the package from the repository."""
    return f"uneven @ git+https://github.com/{_repository(repository)}@{BRANCH}"
