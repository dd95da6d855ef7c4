"""Titles that fit their figure: a title wider than the room around its centre is wrapped,
then the layout is tightened again, so that no title is cut off at the figure's edge.

>>> fit(fig)    # what mip.analysis.report.figures.save does before it writes   # doctest: +SKIP

Also the words titles share: a count with its noun (:func:`plural`), the tasks a figure holds
(:func:`tasks_of`), with its count of experiments (:func:`holds`).

Checked for every figure of a report by tests/test_figures.py.
"""

from __future__ import annotations

import re
import textwrap
import warnings

import matplotlib.pyplot as plt
from matplotlib.text import Text

PAD_PX = 4  # room kept between a title and the figure's edge


def plural(count: int, word: str) -> str:
    """``1 replay``, ``3 replays``: a count with its noun in the right number.

    >>> plural(1, "replay"), plural(0, "experiment"), plural(2, "seed")
    ('1 replay', '0 experiments', '2 seeds')
    """
    return f"{count} {word}{'' if count == 1 else 's'}"


def tasks_of(frame) -> str:
    """``task ner`` or ``tasks math, ner pooled``: what a figure's records hold."""
    tasks = sorted(map(str, frame["task"].dropna().unique())) if "task" in frame else []
    if len(tasks) == 1:
        return f"task {tasks[0]}"
    return f"tasks {', '.join(tasks)} pooled" if tasks else "no task"


def holds(frame) -> str:
    """What a figure's records are, for its title: ``task ner, 36 experiments`` or ``tasks a, b pooled, …``."""
    return f"{tasks_of(frame)}, {plural(len(frame), 'experiment')}"


def titles(fig: plt.Figure) -> list[Text]:
    """The figure's suptitle and every axes' titles that hold text."""
    found = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title]
    return [t for t in found if t.get_visible() and t.get_text()]


def fit(fig: plt.Figure, tries: int = 4) -> None:
    """Tighten the layout, and wrap each title that then overflows the figure's width into
    lines short enough for the room about its centre; repeat, since wrapping changes the layout."""
    for _ in range(tries):
        with warnings.catch_warnings():  # "not compatible with tight_layout": a colorbar, a wide legend
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout()
        if not any(_wrap(title, fig) for title in titles(fig)):
            return


def fill(title: str, width: int) -> str:
    r"""A title wrapped to ``width`` columns that never parts a count from its noun
    (``6 experiments`` stays on one line).

    >>> fill("task ner, 6 experiments", 16)
    'task ner,\n6\xa0experiments'
    """
    return textwrap.fill(re.sub(r"(\d) (?=[a-z])", "\\1\u00a0", title), width)


def _wrap(title: Text, fig: plt.Figure) -> bool:
    """Wrap ``title`` if it overflows the figure left or right; True when its text changed."""
    box, edge = title.get_window_extent(fig.canvas.get_renderer()), fig.bbox
    if box.x0 >= edge.x0 and box.x1 <= edge.x1:
        return False
    centre = (box.x0 + box.x1) / 2
    room = 2 * min(centre - edge.x0, edge.x1 - centre) - 2 * PAD_PX
    lines = title.get_text().split("\n")
    width = max(len(line) for line in lines)
    # Characters are roughly equally wide: a line may keep the share of its characters that fits.
    chars = max(10, int(width * max(room, 0) / box.width) - 1)
    if chars >= width:
        return False
    title.set_text("\n".join(fill(line, chars) for line in lines))
    return True
