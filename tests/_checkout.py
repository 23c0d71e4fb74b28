"""A copy of the checkout as a fresh clone would have it, for tests that build from one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clean_copy(dest: Path) -> Path:
    """The checkout's tracked files (as they are in the work tree), nothing else: no venv, no
    build output, no caches."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = None
    if listed is None:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
            ".venv", ".git", "_build", "dist", "__pycache__", ".*cache*"))
        return dest
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def stop_process_group(proc) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM to its process group, then
    SIGKILL if it has not gone within 30 s."""
    import os
    import signal

    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
