"""Where the collection lives online: one setting, and the links built from it.

:data:`REPOSITORY` (``owner/name`` on GitHub) is the only place the repository's address is
written. Everything that points at it is derived here: each notebook's Binder and Colab links
(the badges that ``tools/editions/stamp.py`` puts at the top of every notebook and that the site
shows on every page), the ``pip`` requirement that the notebooks' first code cell installs on
Colab, and the package the classroom autograder installs. Until the repository is published the
address is the placeholder ``OWNER/uneven``; change it here, then re-run
``python tools/editions stamp`` (``make stamp``) and commit the re-stamped notebooks.

>>> binder_url("01_attack_of_the_bubbles.ipynb")
'https://mybinder.org/v2/gh/OWNER/uneven/main?labpath=notebooks%2F01_attack_of_the_bubbles.ipynb'
>>> colab_url("notebooks/03_deepseek_v3.ipynb")
'https://colab.research.google.com/github/OWNER/uneven/blob/main/notebooks/03_deepseek_v3.ipynb'
>>> pip_requirement()
'uneven @ git+https://github.com/OWNER/uneven@main'
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

__all__ = [
    "REPOSITORY",
    "BRANCH",
    "NOTEBOOK_DIR",
    "repository_url",
    "binder_url",
    "colab_url",
    "pip_requirement",
]

#: GitHub ``owner/name`` of the published repository (a placeholder until publication).
REPOSITORY = "OWNER/uneven"
#: The branch that Binder, Colab and the Colab install cell read.
BRANCH = "main"
#: Where the notebooks sit inside the repository.
NOTEBOOK_DIR = "notebooks"

_NAME = re.compile(r"^[0-9]{2}_[A-Za-z0-9_]+\.ipynb$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")


def _repository(repository: str | None) -> str:
    repo = REPOSITORY if repository is None else repository
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


def binder_url(notebook, repository: str | None = None) -> str:
    """A Binder link that opens ``notebook`` (a name like ``'01_x.ipynb'`` or a path to one) in
    JupyterLab, built from the repository's ``binder/`` environment."""
    name = _notebook(notebook)
    return (f"https://mybinder.org/v2/gh/{_repository(repository)}/{BRANCH}"
            f"?labpath={NOTEBOOK_DIR}%2F{name}")


def colab_url(notebook, repository: str | None = None) -> str:
    """A Colab link that opens ``notebook`` straight from the repository."""
    name = _notebook(notebook)
    return (f"https://colab.research.google.com/github/{_repository(repository)}/blob/{BRANCH}/"
            f"{NOTEBOOK_DIR}/{name}")


def pip_requirement(repository: str | None = None) -> str:
    """The ``pip install`` requirement that installs the package from the repository."""
    return f"uneven @ git+https://github.com/{_repository(repository)}@{BRANCH}"
