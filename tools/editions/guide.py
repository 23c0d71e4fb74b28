"""The per-notebook part of the instructors' guide, read from the notebooks themselves.

``docs/instructors.md`` holds prose written by hand and, between two marker lines, a section per
notebook generated here: title, time, prerequisites and learning objectives (from the notebook's
front matter), and a table of its auto-graded exercises (from its answer cells and the
``uneven.exercises`` registry: kind, unit, tolerance, points, what the public and hidden tests
check). Re-run after a notebook changes; the test suite fails while the guide is out of step.

Usage: ``python tools/editions guide`` (rewrite) or ``python tools/editions guide --check``.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import discover
from .assignments import HIDDEN_POINTS

GUIDE = discover.ROOT / "docs" / "instructors.md"
BEGIN = "<!-- BEGIN GENERATED: python tools/editions guide -->"
END = "<!-- END GENERATED -->"
_EXERCISE = re.compile(r"\*\*Exercise\s+(\d{2}\.\d+)\s*[—-]\s*(.+?)\.?\*\*")


def _relink(text: str) -> str:
    """Notebook links in front matter point next to the notebook; from docs/ they go up."""
    return re.sub(r"\]\((\d{2}_[A-Za-z0-9_]+\.ipynb)", r"](../notebooks/\1", text)


def _tolerance(ex) -> str:
    if ex.kind == "function":
        return (f"it agrees with the library's function on {ex.n_draws} inputs drawn at "
                f"grading time (relative tolerance {ex.rtol:g})")
    if ex.kind == "choice":
        return "the library's letters (as a set)"
    if ex.kind == "exact":
        return "exactly the library's value"
    parts = []
    if ex.rtol:
        parts.append(f"{ex.rtol * 100:g}%")
    if ex.atol:
        parts.append(f"{ex.atol:g} {ex.unit}".strip())
    return "within " + " or ".join(parts) + " of the library's value"


def _kind(ex) -> str:
    if ex.kind == "function":
        return f"a function of ({', '.join(ex.params)})"
    if ex.kind == "choice":
        return "letter(s) " + "/".join(ex.options)
    if ex.kind == "exact":
        value = ex.expected()
        if isinstance(value, (tuple, list)):
            return f"{len(value)} integers"
        return "a name" if isinstance(value, str) else "an integer"
    return f"a number ({ex.unit})" if ex.unit else "a number"


def section(nb: discover.Notebook) -> str:
    from uneven.exercises import exercise

    fm = discover.front_matter(nb)
    lines = [f"### {fm.title}", "",
             f"[`notebooks/{nb.name}`](../notebooks/{nb.name}) · **Time:** {fm.time}", "",
             f"**Prerequisites:** {_relink(fm.prerequisites)}", "",
             "**Learning objectives** — after it, a student can:", ""]
    lines += [f"{i}. {_relink(o)}" for i, o in enumerate(fm.objectives, 1)]
    qs = discover.questions(nb)
    lines.append("")
    if not qs:
        lines += ["No auto-graded exercises.", ""]
        return "\n".join(lines)
    lines += ["**Auto-graded exercises** (one otter question per answer cell; each answer has a "
              "public format test worth 0 points and a hidden value test):", "",
              "| question | exercise | kind | answer | hidden test: right when it is | points |",
              "|---|---|---|---|---|---|"]
    for q in qs:
        prompt = nb.nb.cells[q.prompt].source if q.prompt is not None else ""
        m = _EXERCISE.search(prompt)
        what = m.group(2).strip() if m else ""
        for k, key in enumerate(q.keys):
            ex = exercise(key)
            name = f"`{q.name}`" if k == 0 else ""
            label = f"{key} — {what}" if what and k == 0 else key
            lines.append(f"| {name} | {label} | {_kind(ex)} | `{q.variables[k]}` | "
                         f"{_tolerance(ex)} | {HIDDEN_POINTS} |")
    lines.append("")
    return "\n".join(lines)


def generated() -> str:
    nbs = discover.notebooks()
    for nb in nbs:
        discover.check_registry(nb)
    return "\n".join(section(nb) for nb in nbs)


def render(text: str) -> str:
    """``text`` (the guide) with its generated part replaced by the current one."""
    if BEGIN not in text or END not in text:
        raise discover.EditionError(f"{GUIDE} lacks the marker lines {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{generated()}\n{END}{tail}"


def main(argv: list[str], path: Path = GUIDE) -> int:
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(f"{path} is out of step with the notebooks; run: python tools/editions guide")
            return 1
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"updated {path}")
    return 0
