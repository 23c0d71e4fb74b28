"""The classroom edition: otter-grader assignments built from the notebooks and the checkers.

For each notebook with exercises this writes, under ``dist/assignments/``:

* ``student/NN_name.ipynb`` — the notebook without its worked solutions, without hidden tests and
  without the self-check calls (a graded answer is not checked in front of the student); each
  answer cell is followed by otter's ``grader.check(...)``, which runs the *public* tests;
* ``autograder/NN_name-autograder.zip`` — otter's autograder bundle: every test, public and
  hidden (``otter run -a ... submission.ipynb`` grades a submission locally, without Docker),
  and the ``uneven`` wheel built from this checkout, which the bundle's environment installs
  (a Gradescope or Docker grader needs no published repository);
* ``solutions/NN_name.ipynb`` — the instructors' copy: the answers filled in, the worked
  solutions, every test.

Nothing is written twice. Each answer cell of a notebook (a code cell that calls
``check("NN.k", answer_NN_k)``) becomes one otter question; per exercise key it gets

* a public test (0 points): the answer's *format and range* — one finite number, an integer, a
  tuple of the right length, letters among the options — and its sign, read off the registered
  exercise's kind and its expected value's sign (nothing that narrows the value further);
* a hidden test (1 point): ``uneven.exercises.check(key, answer).ok`` — the same checker, the
  same tolerance, the expected value computed by the library when grading. For a "derive it"
  exercise the answer is the student's function, and the check calls it on inputs drawn when
  the submission is graded.

The solutions' answer values are the registry's expected values (for a function, its worked
formula), computed at build time and checked with the same checker before they are written.
The student and solutions notebooks do not import the self-check.

Usage: ``python tools/editions assignments [--out DIR] [--run-tests] [NOTEBOOK ...]``
(``--run-tests`` also has otter run every test against each solutions notebook.)
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from numbers import Integral, Real
from pathlib import Path

import nbformat

from . import discover
from .discover import EditionError, Notebook, Question

DIST = discover.ROOT / "dist" / "assignments"
HIDDEN_POINTS = 1


# ---- answers -----------------------------------------------------------------------------------

def _plain(value):
    """``value`` as plain Python (numpy scalars and arrays become floats, ints, tuples)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    raise EditionError(f"cannot write an answer of type {type(value).__name__}")


def function_source(key: str, name: str) -> str:
    """The worked answer of "derive it" exercise ``key`` as a function called ``name``."""
    from uneven.exercises import exercise

    ex = exercise(key)
    return f"def {name}({', '.join(ex.params)}):\n    return {ex.solution}"


def _defined(source: str, name: str):
    scope: dict = {}
    exec(compile(source, f"<worked answer {name}>", "exec"), scope)  # noqa: S102 - our own
    return scope[name]


def answer_literal(key: str) -> str:
    """Python source of the worked answer of exercise ``key``: the registry's expected value,
    rounded for reading and checked with the exercise's own checker (for a "derive it"
    exercise: the worked formula, the expression its function returns)."""
    from uneven.exercises import check, exercise

    ex = exercise(key)
    if ex.kind == "function":
        fn = _defined(function_source(key, "worked"), "worked")
        if not check(key, fn, seed=0).ok:
            raise EditionError(f"{key}: the worked formula {ex.solution} does not pass its own "
                               "checker")
        return ex.solution
    value = _plain(ex.expected())
    if isinstance(value, float):
        text = next(t for t in (f"{value:.{d}g}" for d in range(3, 18))
                    if check(key, float(t)).ok)
        text = text if any(c in text for c in ".en") else text + ".0"
    else:
        text = repr(value)
    if not check(key, eval(text)).ok:  # noqa: S307 - our own literal
        raise EditionError(f"{key}: the worked answer {text} does not pass its own checker")
    return text


# ---- tests -------------------------------------------------------------------------------------

#: What a student sees when the public test passes: the format, not the value, is right.
PUBLIC_OK = "the answer has the right form; its value is checked when your work is graded"


def _config(points: int, hidden: bool, success: str | None = None) -> str:
    lines = ['""" # BEGIN TEST CONFIG', f"points: {points}", f"hidden: {str(hidden).lower()}"]
    if success:
        lines.append("success_message: " + json.dumps(success))
    return "\n".join(lines + ['""" # END TEST CONFIG'])


def _sign_check(var: str, expected: float) -> list[str]:
    if expected > 0:
        return [f"    assert {var} > 0, '{var} is a quantity above zero'"]
    if expected < 0:
        return [f"    assert {var} < 0, '{var} is below zero'"]
    return []


def public_test(key: str, var: str) -> str:
    """The public test of exercise ``key``: format and range, never the value."""
    from uneven.exercises import exercise

    ex = exercise(key)
    fn = f"test_{key.replace('.', '_')}_format"
    unit = f" (in {ex.unit})" if ex.unit else ""
    body: list[str] = [f"def {fn}({var}):"]
    if ex.kind == "function":
        n = len(ex.params)
        example = ", ".join(repr(a) for a in ex.examples[0]) if ex.examples else None
        body += ["    import inspect",
                 "    import math",
                 "    from numbers import Real",
                 f"    assert callable({var}), '{var} must be a function'",
                 f"    inspect.signature({var}).bind(*range({n}))  # takes {n} arguments"]
        if example:
            body += [f"    value = {var}({example})  # the page's example",
                     "    assert value is not Ellipsis, 'replace the ... after return with your "
                     "formula'",
                     "    assert isinstance(value, Real) and math.isfinite(value), "
                     f"'{var} must return one finite number'"]
        return "\n".join([_config(0, False, PUBLIC_OK), *body, f"{fn}({var})"])
    expected = _plain(ex.expected())
    if ex.kind == "number":
        body += ["    import math",
                 "    from numbers import Real",
                 f"    assert isinstance({var}, Real) and not isinstance({var}, bool), "
                 f"'{var} must be one number{unit}: replace the ... with your answer'",
                 f"    assert math.isfinite({var}), '{var} must be a finite number'"]
        body += _sign_check(var, expected)
    elif ex.kind == "choice":
        letters = ", ".join(ex.options)
        body += [f"    assert isinstance({var}, str), "
                 f"'{var} must be a string of letters such as \"b\" or \"a, c\"'",
                 f"    picked = set({var}.lower().replace(',', ' ').split())",
                 f"    assert picked and picked <= set({tuple(sorted(ex.options))!r}), "
                 f"'{var} must use only the letters {letters}'"]
    elif isinstance(expected, tuple):
        n = len(expected)
        body += ["    from numbers import Real",
                 f"    assert hasattr({var}, '__len__') and len({var}) == {n}, "
                 f"'{var} must hold {n} integers'",
                 f"    assert all(isinstance(v, Real) and not isinstance(v, bool) and "
                 f"float(v).is_integer() for v in {var}), '{var} must hold integers'"]
    elif isinstance(expected, str):
        body += [f"    assert isinstance({var}, str) and {var}.strip(), "
                 f"'{var} must be a name (a string)'"]
    else:
        body += ["    from numbers import Real",
                 f"    assert isinstance({var}, Real) and not isinstance({var}, bool) and "
                 f"float({var}).is_integer(), '{var} must be a whole number{unit}'"]
        body += _sign_check(var, expected)
    return "\n".join([_config(0, False, PUBLIC_OK), *body, f"{fn}({var})"])


def hidden_test(key: str, var: str) -> str:
    """The hidden test of exercise ``key``: the notebook's own checker decides."""
    fn = f"test_{key.replace('.', '_')}_value"
    return "\n".join([
        _config(HIDDEN_POINTS, True),
        f"def {fn}({var}):",
        "    from uneven.exercises import check",
        f"    feedback = check({key!r}, {var})",
        "    assert feedback.ok, feedback.message",
        f"{fn}({var})",
    ])


# ---- the otter master notebook -----------------------------------------------------------------

def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _answer_cell_source(q: Question, source: str) -> str:
    """The answer cell as otter reads it: each placeholder carries the worked answer, marked
    ``# SOLUTION``; the self-check calls are dropped (otter's check cell follows)."""
    lines = []
    function = None
    for line in source.splitlines():
        m = discover.ANSWER_LINE.match(line.strip())
        if f := discover.FUNCTION_LINE.match(line):
            function = f.group(1)
        if (function in q.variables and line[:1].isspace()
                and discover.RETURN_PLACEHOLDER.match(line.strip())):
            key = q.keys[q.variables.index(function)]
            indent = line[:len(line) - len(line.lstrip())]
            lines.append(f"{indent}return {answer_literal(key)}  # SOLUTION")
        elif m and m.group(1) in q.variables:
            key = q.keys[q.variables.index(m.group(1))]
            unit = f"  {m.group(2)}" if m.group(2) else ""
            lines.append(f"{m.group(1)} = {answer_literal(key)}{unit}  # SOLUTION")
        elif discover.CHECK_CALL.search(line):
            continue
        else:
            lines.append(line)
    return "\n".join(lines).strip("\n")


def assignment_config(nb: Notebook, requirements: Path, files: list[str]) -> str:
    config = {
        "name": nb.stem,
        "requirements": str(requirements),
        "files": files,
        "overwrite_requirements": False,
        "init_cell": True,
        "check_all_cell": False,
        "export_cell": {"pdf": False, "run_tests": True,
                        "instructions": "Submit the zip file this cell writes."},
        "generate": {"pdf": False, "show_hidden": False},
        "tests": {"files": False, "ok_format": False},
        "run_tests": True,
        "solutions_pdf": False,
        "python_version": "3.11",
        "template_pdf": False,
    }
    return "# ASSIGNMENT CONFIG\n" + json.dumps(config, indent=2)


#: The setup cells' import of the self-check, left out of the classroom edition.
SELF_CHECK_IMPORT = re.compile(r"^from uneven\.exercises import check\s*(#.*)?$")


def _without_self_check(cell):
    if cell.cell_type != "code" or not any(SELF_CHECK_IMPORT.match(line.strip())
                                           for line in cell.source.splitlines()):
        return cell
    cell = nbformat.from_dict(cell)
    cell.source = "\n".join(line for line in cell.source.splitlines()
                            if not SELF_CHECK_IMPORT.match(line.strip()))
    return cell


def master_notebook(nb: Notebook, requirements: Path,
                    files: list[str] = ()) -> nbformat.NotebookNode:
    """The notebook in Otter Assign's format: each answer cell wrapped in a question block with
    its solution cells and its tests; ``files`` go into the autograder bundle."""
    qs = discover.questions(nb)
    discover.check_registry(nb, qs)
    by_cell = {q.cell: q for q in qs}
    solution_cells = {j for q in qs for j in q.solutions}
    out = [_raw(assignment_config(nb, requirements, list(files)))]
    for i, cell in enumerate(nb.nb.cells):
        if i in solution_cells:
            continue
        q = by_cell.get(i)
        if q is None:
            out.append(_without_self_check(cell))
            continue
        answer = nbformat.from_dict(cell)
        answer.source = _answer_cell_source(q, cell.source)
        points = HIDDEN_POINTS * len(q.keys)
        out += [_raw(f"# BEGIN QUESTION\nname: {q.name}\npoints: {points}"),
                _raw("# BEGIN SOLUTION"), answer,
                *(nb.nb.cells[j] for j in q.solutions),
                _raw("# END SOLUTION"), _raw("# BEGIN TESTS")]
        for key, var in zip(q.keys, q.variables, strict=True):
            out += [nbformat.v4.new_code_cell(public_test(key, var)),
                    nbformat.v4.new_code_cell(hidden_test(key, var))]
        out += [_raw("# END TESTS"), _raw("# END QUESTION")]
    master = nbformat.from_dict(nb.nb)
    master.cells = out
    return master


# ---- building ----------------------------------------------------------------------------------

def _restore_placeholders(student: nbformat.NotebookNode, source: Notebook) -> None:
    """otter writes ``answer = ...`` (and a bare ``...`` for a function's ``return`` line); put
    back the notebook's own placeholder line with its comment (``answer_01_1 = ...  # ms``,
    ``return ...  # expected copies``)."""
    original = {}
    for q in discover.questions(source):
        original.update(discover.placeholders(source.nb.cells[q.cell].source))
    for cell in student.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        function = None
        for k, line in enumerate(lines):
            if f := discover.FUNCTION_LINE.match(line):
                function = f.group(1)
            m = re.match(r"^(answer_\w+)\s*=\s*\.\.\.\s*$", line)
            if m and m.group(1) in original:
                lines[k] = original[m.group(1)]
            elif function in original and line.strip() == "..." and line[:1].isspace():
                lines[k] = line[:len(line) - len(line.lstrip())] + original[function]
        cell.source = "\n".join(lines)


def _stable_ids(nb: nbformat.NotebookNode, source: Notebook) -> None:
    """Cells otter adds get random ids; give them ids from their content, so two builds of the
    same notebook are the same files."""
    keep = {c.get("id") for c in source.nb.cells}
    seen: set[str] = set()
    for cell in nb.cells:
        if cell.get("id") not in keep or cell.get("id") in seen:
            digest = hashlib.sha1(cell.source.encode()).hexdigest()[:8]
            cell.id = next(f"otter-{digest}{'-' + str(n) if n else ''}" for n in range(1000)
                           if f"otter-{digest}{'-' + str(n) if n else ''}" not in seen)
        seen.add(cell.id)


def _clean_solutions(solutions: nbformat.NotebookNode) -> None:
    for cell in solutions.cells:
        if cell.cell_type == "code":
            cell.source = re.sub(r"\s*# SOLUTION$", "", cell.source, flags=re.M)


#: Where otter's graders (Gradescope, ``otter grade`` in Docker) unpack the bundle: its
#: ``files/`` land in ``source/files/``.
GRADER_FILES = "/autograder/source/files"


def build_wheel(dest: Path) -> Path:
    """The ``uneven`` wheel, built from this checkout's files (as they are in the work tree)
    with the venv's own build backend: nothing is downloaded, nothing is written into the
    checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "uneven"
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(discover.ROOT / name, src / name)
        shutil.copytree(discover.ROOT / "lib", src / "lib",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.nbi",
                                                      "*.nbc"))
        dest.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                               "--no-build-isolation", "--no-index", "-w", str(dest), str(src)],
                              capture_output=True, text=True)
    if done.returncode:
        raise EditionError(f"building the uneven wheel failed:\n{done.stderr[-2000:]}")
    (wheel,) = dest.glob("uneven-*.whl")
    return wheel


def requirement(wheel: Path) -> str:
    """The bundle's requirement line: the wheel that travels inside it."""
    return f"uneven @ file://{GRADER_FILES}/{wheel.name}"


def build_one(nb: Notebook, out: Path, run_tests: bool = False,
              wheel: Path | None = None) -> dict:
    """Build the three pieces of one notebook's assignment; return its summary."""
    work = out / ".build" / nb.stem
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sys.path.insert(0, str(discover.ROOT / "lib"))
    wheel = wheel or build_wheel(out / ".build" / "wheel")
    shutil.copyfile(wheel, work / wheel.name)
    requirements = work / "requirements.txt"
    requirements.write_text(requirement(wheel) + "\n")
    master = master_notebook(nb, requirements.relative_to(work), [wheel.name])
    nbformat.write(master, work / nb.name)
    from otter.assign import main as otter_assign

    try:
        otter_assign(str(work / nb.name), str(work / "result"), no_pdfs=True,
                     no_run_tests=not run_tests)
    except Exception as err:
        raise EditionError(f"otter assign failed for {nb.name}: {err}") from err

    student = nbformat.read(work / "result" / "student" / nb.name, as_version=4)
    _restore_placeholders(student, nb)
    _stable_ids(student, nb)
    solutions = nbformat.read(work / "result" / "autograder" / nb.name, as_version=4)
    _clean_solutions(solutions)
    _stable_ids(solutions, nb)
    for sub in ("student", "solutions", "autograder"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for folder in ("student", "autograder"):  # the wheel belongs in the bundle only
        (work / "result" / folder / wheel.name).unlink(missing_ok=True)
    nbformat.write(student, out / "student" / nb.name)
    nbformat.write(solutions, out / "solutions" / nb.name)
    (zipped,) = (work / "result" / "autograder").glob("*.zip")
    shutil.copyfile(zipped, out / "autograder" / f"{nb.stem}-autograder.zip")
    qs = discover.questions(nb)
    return {"notebook": nb.name,
            "questions": [{"name": q.name, "keys": list(q.keys), "points": len(q.keys)}
                          for q in qs]}


def build(paths: list[Path] | None = None, out: Path = DIST, run_tests: bool = False) -> list:
    """Build every notebook's assignment (the ones with exercises) under ``out``."""
    out = Path(out)
    for sub in ("student", "solutions", "autograder", ".build"):
        shutil.rmtree(out / sub, ignore_errors=True)
    summaries = []
    wheel = build_wheel(out / ".build" / "wheel")
    for path in paths or discover.notebook_paths():
        nb = discover.load(path)
        if not discover.questions(nb):
            print(f"{nb.name}: no exercises, no assignment")
            continue
        t0 = time.perf_counter()
        summaries.append(build_one(nb, out, run_tests=run_tests, wheel=wheel))
        print(f"{nb.name}: assignment built in {time.perf_counter() - t0:.1f} s")
    (out / "summary.json").write_text(json.dumps(summaries, indent=1) + "\n")
    shutil.rmtree(out / ".build", ignore_errors=True)
    return summaries


def main(argv: list[str]) -> int:
    out, run_tests, paths = DIST, False, []
    args = iter(argv)
    for a in args:
        if a == "--out":
            out = Path(next(args))
        elif a == "--run-tests":
            run_tests = True
        else:
            paths.append(Path(a))
    t0 = time.perf_counter()
    build(paths or None, out, run_tests=run_tests)
    print(f"assignments written to {out} in {time.perf_counter() - t0:.1f} s")
    return 0

