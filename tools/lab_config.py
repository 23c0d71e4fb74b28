"""Jupyter settings for ``make lab`` (passed with ``--config``).

Notebooks under ``notebooks/`` are saved without outputs, exactly as git's notebook filter stores
them (``tools/nbstrip.py``), so running them never dirties ``git status`` and ``git pull`` never
conflicts with autosaved outputs. Set ``UNEVEN_KEEP_OUTPUTS=1`` to keep outputs in saved files.
The hook comes with a small server extension, ``tools/lab_extension.py``.

JupyterLab's own settings for the project (no "Would you like to get notified about official
Jupyter news?" pop-up, no update check) are not here: they are JupyterLab settings overrides,
``tools/lab_overrides.json``, which ``make install`` copies to where the venv's JupyterLab reads
them (``.venv/share/jupyter/lab/settings/overrides.json``) and Binder's ``postBuild`` to where
Binder's does. A reader's own choice in Settings still wins over them.
"""

import sys
from pathlib import Path

# The server imports its extensions by module name: tools/ must be on its path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

c = get_config()  # noqa: F821 - provided by Jupyter when it loads this file
c.ServerApp.jpserver_extensions.update({"lab_extension": True})
