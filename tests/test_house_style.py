"""The house style is data in uneven.plots, and every recipe draws in it on its own.

Every ``*_figure`` recipe and ``draw_*`` function of the explorers is a :func:`uneven.plots.recipe`
(it applies the house style itself); each explorer's figure, drawn from its default state
outside any ``style()`` block, has only house text sizes, bold titles and house colours; and the
recipes carry no literal font sizes, hex colours or title locations. The notebook tests run every
recipe call of every notebook through the same check (``UNEVEN_CHECK_STYLE=1``).
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import matplotlib
import pytest

from uneven import explorers, plots
from uneven.papers import PAPERS

EXPLORER_FILES = sorted((Path(explorers.__file__).parent).glob("nb*.py"))
MODULES = [importlib.import_module(f"uneven.explorers.{p.stem}") for p in EXPLORER_FILES]


def _recipes(mod):
    for name, fn in vars(mod).items():
        if inspect.isfunction(fn) and fn.__module__ == mod.__name__ and (
                name.endswith("_figure") or name.startswith("draw_")):
            yield name, fn


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_every_recipe_applies_the_house_style_itself(mod):
    bare = [name for name, fn in _recipes(mod) if not hasattr(fn, "__wrapped__")]
    assert not bare, f"recipes not decorated with @plots.recipe: {bare}"


@pytest.mark.parametrize("path", EXPLORER_FILES, ids=lambda p: p.stem)
def test_recipes_name_sizes_and_colours_instead_of_writing_them(path):
    src = path.read_text()
    assert not re.findall(r"fontsize=[0-9]", src), "a literal font size (use plots.SIZES)"
    assert not re.findall(r"#[0-9A-Fa-f]{6}\b", src), "a hex colour (use plots.color)"
    assert 'loc="left"' not in src, "titles are left-aligned by the house rc already"
    assert not re.findall(r"(?<![A-Za-z_])COLORS\[", src), "look colours up with plots.color"


def _default_explorers():
    yield "start", explorers.start_state, explorers.draw_start
    for p in PAPERS:
        yield p.key, getattr(explorers, f"{p.key}_state"), getattr(explorers, f"draw_{p.key}")
    yield "unevenness", explorers.unevenness_state, explorers.draw_unevenness


@pytest.mark.parametrize("key, state, draw", list(_default_explorers()),
                         ids=[k for k, *_ in _default_explorers()])
def test_each_explorer_figure_outside_any_style_block_is_in_the_house_style(key, state, draw):
    assert matplotlib.rcParams["axes.titlesize"] != plots.TITLE  # no style() is active here
    fig = plots.blank_figure(9.0, 4.5)
    draw(fig, state())
    assert plots.style_problems(fig) == []
    assert fig.axes and all(ax.title.get_fontweight() == "bold" for ax in fig.axes)


def test_a_recipe_drawn_without_the_decorator_is_caught():
    fig, ax = plots.figure(3, 2)
    ax.set_title("matplotlib's own")
    ax.plot([0, 1], color="#123456")
    problems = plots.style_problems(fig)
    assert any("size 12" in p for p in problems) and any("#123456" in p for p in problems)


def test_text_sizes_are_one_table():
    assert plots.SIZES["title"] == plots._RC["axes.titlesize"] == plots.TITLE
    assert plots.SIZES["legend"] == plots._RC["legend.fontsize"]
    assert plots._RC["axes.titlelocation"] == "left"
    tree = ast.parse(Path(plots.__file__).read_text())
    literal = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.keyword)
               and n.arg == "fontsize" and isinstance(n.value, ast.Constant)]
    assert not literal, f"plots.py writes font sizes as numbers at lines {literal}"
