"""Test-session set-up shared by every test directory.

With pytest-xdist each worker compiles numba kernels into a cache of its own: two processes
writing one cache at once is a known way to corrupt it (numba issue #4807).
"""

import os
import tempfile

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"uneven-numba-{_worker}-")
