"""docs/instructors.md's grading commands, run as they are written.

The block marked ``<!-- run by tests/test_instructors_guide.py -->`` is run verbatim with bash in a
clean copy of the checkout (the project's venv linked in, its install step taken as done, every
web request failing at once): ``make assignments``, the output folders, ``otter run`` on a filled
student notebook (alice) and on the zip a student's export cell writes (bob, who got the "derive
it" question wrong). The scores must be what the answers deserve."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from _checkout import ROOT, clean_copy

sys.path.insert(0, str(ROOT / "tools"))
from editions import assignments, discover  # noqa: E402

GUIDE = ROOT / "docs" / "instructors.md"
MARK = "<!-- run by tests/test_instructors_guide.py -->"
NOTEBOOK = ROOT / "notebooks" / "05_balancing_and_beyond.ipynb"
WRONG_KEY = "05.1"


def guide_block() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    assert MARK in text, f"{GUIDE.name} lost its tested block"
    m = re.match(r"\s*```bash\n(.*?)\n```", text.split(MARK, 1)[1], re.S)
    assert m, "the marked block is not a ```bash block"
    return m.group(1)


def test_the_block_grades_the_notebook_it_names():
    block = guide_block()
    assert "make assignments" in block and "mkdir -p" in block
    assert f"{NOTEBOOK.stem}-autograder.zip" in block and ".zip" in block


def _filled(student: nbformat.NotebookNode, wrong: set[str]) -> nbformat.NotebookNode:
    """The student notebook with every answer typed in: the worked values, except for the keys
    in ``wrong`` (a formula with a registered slip: one copy per remote expert)."""
    from uneven.exercises import exercise

    nb = nbformat.from_dict(student)
    qs = discover.questions(discover.load(NOTEBOOK))
    by_name = {v: k for q in qs for k, v in zip(q.keys, q.variables, strict=True)}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines, function = cell.source.splitlines(), None
        for i, line in enumerate(lines):
            if f := discover.FUNCTION_LINE.match(line):
                function = f.group(1)
            m = discover.ANSWER_LINE.match(line.strip())
            if m and m.group(1) in by_name:
                lines[i] = f"{m.group(1)} = {assignments.answer_literal(by_name[m.group(1)])}"
            elif function in by_name and discover.RETURN_PLACEHOLDER.match(line.strip()):
                key = by_name[function]
                formula = ("k * (H - 1) / H" if key in wrong
                           else assignments.answer_literal(key))
                assert exercise(key).kind == "function"
                lines[i] = f"    return {formula}"
        cell.source = "\n".join(lines)
    return nb


@pytest.mark.slow
@pytest.mark.editions
def test_the_guides_grading_commands_work_as_written(tmp_path):
    from nbclient import NotebookClient

    work = clean_copy(tmp_path / "uneven")
    venv = Path(sys.prefix)
    (work / ".venv").symlink_to(venv, target_is_directory=True)
    dead = "http://127.0.0.1:9"
    env = dict(os.environ, PYTHONPATH=str(work / "lib"), UNEVEN_FIGURES=str(tmp_path / "figs"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), MAKEFLAGS="-o .venv/.uneven-installed",
               http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead,
               ALL_PROXY=dead, NO_PROXY="", no_proxy="")
    # the submissions, from a build of the same checkout
    built = assignments.build([NOTEBOOK], tmp_path / "built")
    assert built
    student = nbformat.read(tmp_path / "built" / "student" / NOTEBOOK.name, as_version=4)
    alice = work / "submissions" / "alice"
    bob = work / "submissions" / "bob"
    for folder in (alice, bob):
        folder.mkdir(parents=True)
    nbformat.write(_filled(student, set()), alice / NOTEBOOK.name)
    # bob runs his notebook to the end; its export cell writes the zip he hands in
    bob_nb = _filled(student, {WRONG_KEY})
    nbformat.write(bob_nb, bob / NOTEBOOK.name)  # the export cell zips the saved file
    saved = os.environ.copy()
    os.environ.update(env)
    try:
        NotebookClient(bob_nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(bob)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    zips = list(bob.glob(f"{NOTEBOOK.stem}*.zip"))
    assert len(zips) == 1, f"the export cell wrote {zips}"
    (bob / NOTEBOOK.name).unlink()  # bob hands in the zip only

    done = subprocess.run(["bash", "-e", "-c", guide_block()], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"the guide's commands failed:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    qs = discover.questions(discover.load(NOTEBOOK))
    wrong_q = next(q.name for q in qs if WRONG_KEY in q.keys)
    for who, zero in (("alice", set()), ("bob", {wrong_q})):
        results = json.loads((work / "results" / who / "results.json").read_text())
        scores = {t["name"]: (t["score"], t["max_score"]) for t in results["tests"]
                  if t["name"] in {q.name for q in qs}}
        assert set(scores) == {q.name for q in qs}, scores
        for name, (score, best) in scores.items():
            assert score == (0 if name in zero else best), f"{who}: {name} {score} of {best}"
    # the build in the copy wrote every assignment, the wheel only inside the bundles
    dist = work / "dist" / "assignments"
    assert (dist / "autograder" / f"{NOTEBOOK.stem}-autograder.zip").is_file()
    assert not list(dist.rglob("*.whl")) and not (work / "build").exists()
    shutil.rmtree(work / "dist", ignore_errors=True)
