"""What the editions are built from, found rather than listed: the notebooks
(``notebooks/NN_*.ipynb``), their front matter, and their exercises (the ``uneven.exercises``
registry, the code cells that call ``check("NN.k", answer_...)`` and the markdown cells tagged
``solution`` that follow them).

A notebook that breaks the conventions (a check of an unregistered key, a registered key that no
cell checks, a solution cell with no exercise before it, front matter without objectives, time or
prerequisites) raises :class:`EditionError` naming the notebook and the cell, so a new notebook
either builds into every edition or says why it cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOK_NAME = re.compile(r"^(\d{2})_[A-Za-z0-9_]+\.ipynb$")

#: ``check("01.3a", answer_01_3a)`` or ``check("05.1", copies)``: the key and the name it checks.
CHECK_CALL = re.compile(r"""check\(\s*["'](\d{2}\.[0-9A-Za-z]+)["']\s*,\s*([A-Za-z_]\w*)\s*\)""")
#: ``answer_01_1 = ...  # ms``: the placeholder line a student fills in.
ANSWER_LINE = re.compile(r"^(answer_\w+)\s*=\s*\.\.\.\s*(#.*)?$")
#: A "derive it" answer: ``def copies(H, k):`` whose body is ``return ...  # what it returns``.
FUNCTION_LINE = re.compile(r"^def ([A-Za-z_]\w*)\((.*)\):\s*$")
RETURN_PLACEHOLDER = re.compile(r"^return\s+\.\.\.\s*(#.*)?$")


def placeholders(source: str) -> dict[str, str]:
    """The answer placeholders of a cell: name -> its placeholder line (stripped): an
    ``answer_... = ...`` line, or for a function to write, the ``return ...`` line of its body."""
    out: dict[str, str] = {}
    current = None
    for line in source.splitlines():
        stripped = line.strip()
        if m := ANSWER_LINE.match(stripped):
            out[m.group(1)] = stripped
        elif m := FUNCTION_LINE.match(line):
            current = m.group(1)
        elif current and line[:1].isspace() and RETURN_PLACEHOLDER.match(stripped):
            out[current] = stripped
        elif stripped and not line[:1].isspace():
            current = None
    return out
#: The tag of the collapsed worked solutions, of the cells the stamp tool owns, and of the
#: collapsed cells that pin a section's numbers (the tests run them; the site leaves them out).
SOLUTION_TAG = "solution"
STAMP_TAG = "stamp"
CHECK_TAG = "check"


class EditionError(ValueError):
    """A notebook does not follow the conventions an edition is built from."""


@dataclass(frozen=True)
class Question:
    """One answer cell of a notebook: the exercise keys it checks (``01.3a``, ``01.3b``), the
    variables that hold the answers, the cell's index, and the indices of the prompt cell before
    it and of the ``solution`` cells after it."""

    notebook: str
    number: str  # "01.3"
    keys: tuple[str, ...]
    variables: tuple[str, ...]
    cell: int
    prompt: int | None
    solutions: tuple[int, ...]

    @property
    def name(self) -> str:
        """The question's name for otter (``ex01_3``)."""
        return "ex" + self.number.replace(".", "_")


@dataclass(frozen=True)
class FrontMatter:
    """What a notebook's opening cells promise: title, objectives, prerequisites, time."""

    title: str
    objectives: tuple[str, ...]
    prerequisites: str
    time: str


@dataclass
class Notebook:
    """A notebook of the collection, read from disk."""

    path: Path
    nb: nbformat.NotebookNode = field(repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def number(self) -> str:
        return self.path.name[:2]

    @property
    def stem(self) -> str:
        return self.path.stem


def notebook_paths(folder: Path = NOTEBOOK_DIR) -> list[Path]:
    """Every ``NN_*.ipynb`` in ``folder``, in order (the start page, ``00``, first)."""
    return sorted(p for p in folder.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name))


def load(path: Path) -> Notebook:
    return Notebook(Path(path), nbformat.read(path, as_version=4))


def notebooks(folder: Path = NOTEBOOK_DIR) -> list[Notebook]:
    return [load(p) for p in notebook_paths(folder)]


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def is_stamp(cell) -> bool:
    return STAMP_TAG in tags(cell)


def is_check(cell) -> bool:
    return CHECK_TAG in tags(cell)


# ---- exercises ---------------------------------------------------------------------------------

def _number(keys: list[str], where: str) -> str:
    bases = {re.sub(r"[a-z]+$", "", k) for k in keys}
    if len(bases) != 1:
        raise EditionError(f"{where}: one answer cell checks exercises {keys} of different "
                           "numbers; give each exercise its own cell")
    return bases.pop()


def questions(nb: Notebook) -> list[Question]:
    """The notebook's answer cells, in order, each with its prompt and its solution cells."""
    out: list[Question] = []
    cells = nb.nb.cells
    claimed: set[int] = set()
    for i, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        calls = CHECK_CALL.findall(cell.source)
        if not calls:
            continue
        where = f"{nb.name} cell {i}"
        keys = [k for k, _ in calls]
        variables = [v for _, v in calls]
        for key in keys:
            if not key.startswith(nb.number + "."):
                raise EditionError(f"{where}: checks exercise {key!r}, which belongs to another "
                                   f"notebook (keys here start with {nb.number}.)")
        found = placeholders(cell.source)
        missing = [v for v in variables if v not in found]
        if missing:
            raise EditionError(f"{where}: {', '.join(missing)} is checked but has no placeholder "
                               "in the same cell: a line `answer_... = ...  # unit`, or a "
                               "function whose body is `return ...  # what it returns`")
        prompt = next((j for j in range(i - 1, -1, -1) if cells[j].cell_type == "markdown"
                       and SOLUTION_TAG not in tags(cells[j])), None)
        sols = []
        for j in range(i + 1, len(cells)):
            if cells[j].cell_type == "markdown" and SOLUTION_TAG in tags(cells[j]):
                sols.append(j)
                claimed.add(j)
            else:
                break
        out.append(Question(nb.name, _number(keys, where), tuple(keys), tuple(variables), i,
                            prompt, tuple(sols)))
    for i, cell in enumerate(cells):
        if SOLUTION_TAG in tags(cell) and i not in claimed:
            raise EditionError(f"{nb.name} cell {i}: tagged '{SOLUTION_TAG}' but does not follow "
                               "an answer cell (a code cell that calls check)")
    return out


def registered_keys(number: str) -> list[str]:
    """The keys of ``uneven.exercises`` that belong to notebook ``number``."""
    from uneven.exercises import registered

    return [k for k in registered() if k.startswith(number + ".")]


def check_registry(nb: Notebook, qs: list[Question] | None = None) -> None:
    """Every key the notebook checks is registered, and every registered key of the notebook is
    checked in one of its cells."""
    qs = questions(nb) if qs is None else qs
    found = [k for q in qs for k in q.keys]
    dupes = sorted({k for k in found if found.count(k) > 1})
    if dupes:
        raise EditionError(f"{nb.name}: exercises checked in more than one cell: {dupes}")
    registered = registered_keys(nb.number)
    unknown = sorted(set(found) - set(registered))
    unused = sorted(set(registered) - set(found))
    if unknown:
        raise EditionError(f"{nb.name}: checks exercises that uneven.exercises does not register: "
                           f"{unknown}")
    if unused:
        raise EditionError(f"{nb.name}: uneven.exercises registers {unused}, but no cell of the "
                           "notebook checks them")


# ---- front matter ------------------------------------------------------------------------------

_OBJECTIVES = re.compile(r"\*\*(?:You will be able to|On this page you will)\*\*:?\s*\n")
_PREREQ = re.compile(r"\*\*Before you start:?\*\*:?\s*(.*?)(?=\*\*Time:?\*\*|\n\n|$)", re.S)
_TIME = re.compile(r"\*\*Time:?\*\*:?\s*(.*?)(?=\n\n|$)", re.S)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def front_matter(nb: Notebook) -> FrontMatter:
    """Title, learning objectives, prerequisites and time, read from the markdown cells before
    the notebook's first section (``## ``)."""
    head = []
    for cell in nb.nb.cells:
        if cell.cell_type == "markdown" and not is_stamp(cell):
            if cell.source.lstrip().startswith("## ") and head:
                break
            head.append(cell.source)
        elif cell.cell_type == "code" and not is_stamp(cell) and head:
            break
    text = "\n\n".join(head)
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
    if title is None:
        raise EditionError(f"{nb.name}: no '# title' line in its opening cells")
    m = _OBJECTIVES.search(text)
    if not m:
        raise EditionError(f"{nb.name}: no '**You will be able to**' list in its opening cells")
    objectives: list[str] = []
    for line in text[m.end():].splitlines():
        item = re.match(r"\s*\d+\.\s+(.*)", line)
        if item:
            objectives.append(item.group(1))
        elif objectives and line.startswith("   ") and line.strip():
            objectives[-1] += " " + line.strip()
        else:
            break
    if not objectives:
        raise EditionError(f"{nb.name}: the objectives list is empty")
    pre = _PREREQ.search(text)
    time = _TIME.search(text)
    if not pre or not time:
        raise EditionError(f"{nb.name}: the opening cells need '**Before you start:**' and "
                           "'**Time:**'")
    return FrontMatter(title, tuple(_one_line(o) for o in objectives),
                       _one_line(pre.group(1)), _one_line(time.group(1)).rstrip())
