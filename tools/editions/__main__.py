"""``python tools/editions COMMAND``: the editions built from the notebooks.

Commands: ``stamp`` (badges and Colab install cell in every notebook; ``--check``),
``assignments`` (the classroom set under ``dist/``), ``site`` (the self-study site under
``_build/``), ``guide`` (the generated part of ``docs/instructors.md``; ``--check``), ``i18n``
(``extract``, ``build``, ``status``: the translated editions, locale/README.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, so `editions` imports
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from editions.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
