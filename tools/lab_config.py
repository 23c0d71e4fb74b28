"""Jupyter settings for ``make lab`` (passed with ``--config``).

Notebooks under ``notebooks/`` are saved without outputs, exactly as git's notebook filter stores
them (``tools/nbstrip.py``), so running them never dirties ``git status`` and ``git pull`` never
conflicts with autosaved outputs. Set ``UNEVEN_KEEP_OUTPUTS=1`` to keep outputs in saved files.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbstrip import save_hook  # noqa: E402

c = get_config()  # noqa: F821 - provided by Jupyter when it loads this file
c.FileContentsManager.pre_save_hook = save_hook
