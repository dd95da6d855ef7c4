"""report.html: the report as pages that open from disk, where every number links down.

Beside report.md, in the same folder: ``report.html`` (every table and figure, the numbers of
the core section's tables linked), ``lists/`` (one page per linked cell: the experiments it was
computed from, with offline filters), ``records/<key[:2]>/<key>.html`` (one page per
experiment: prompt, attempts, traces with their mentioned IDs marked) and ``assets/`` (one
stylesheet, one script; nothing is fetched from a network, nothing needs a server).

    xdg-open results/report/report.html            # or open it in any browser

>>> _text(0.12345), _text(float("nan")), _ranges({1, 2, 3, 7, 9, 10})
('0.1235', '–', '1-3 7 9-10')

Exercised by ``pytest tests/test_html_report.py``.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from mip.analysis import stats
from mip.analysis.report import list_pages, record_pages, search_index
from mip.analysis.report.kept_pages import Pages, Said
from mip.analysis.report.list_pages import ranges as _ranges, text as _text
from mip.analysis.report.cells import Experiments, Table

TEMPLATES = Path(__file__).parent / "templates"
#: Instance IDs a record page and a mention-rate table show one by one (the rest: counted).
SHOWN_IDS = 100


@dataclass(frozen=True)
class Source:
    """Where analyze.py read the records, so that record pages can be written from them."""

    kind: str
    """``local`` or ``wandb``."""
    results: tuple[str, ...]
    api: bool = False
    """W&B through its API (the tables it downloaded), not offline run folders."""
    prompts: record_pages.Rebuild | None = None
    """How a local record's prompt is rebuilt (:class:`mip.tools.prompt_source.Rebuilder`); None: not rebuilt."""

    def views(self, keys: set[str], pages=None):
        """The record views of ``keys``; a local record whose page ``pages`` keeps comes as its key alone."""
        if self.kind == "local":
            return record_pages.local_views(self.results, keys, self.prompts, pages)
        from mip.analysis.results import WANDB_DOWNLOADS, wandb_rows

        rows = wandb_rows([WANDB_DOWNLOADS], "**/media/table/**/*.table.json") if self.api else wandb_rows(self.results)
        return record_pages.wandb_views(rows, keys)


@dataclass
class CellList:
    name: str
    """The file under ``lists/``."""
    experiments: Experiments
    value: str = ""
    """The number the list stands behind, as the table shows it (the first cell that links to it)."""

    @property
    def title(self) -> str:
        return self.experiments.title

    @property
    def keys(self) -> tuple[str, ...]:
        return self.experiments.keys

    @property
    def mention(self) -> bool:
        return self.experiments.mention


@dataclass
class Lists:
    """The list pages of a report: one per set of experiments (and its title) the cells link to, so
    that a figure's number and the table cell it repeats open one page."""

    pages: dict[Experiments, CellList] = field(default_factory=dict)

    def href(self, table: str, experiments: Experiments, value: str) -> str:
        """The link of a cell of ``table`` showing ``value`` to its experiments' list (the list learns
        the value of the first cell that links to it)."""
        page = experiments.page
        cell = self.pages.get(page)
        if cell is None:
            digest = hashlib.sha1(repr((table, page)).encode()).hexdigest()[:12]
            cell = self.pages[page] = CellList(f"{table[:40]}-{digest}.html".replace("/", "-"), page)
        cell.value = cell.value or value
        return f"lists/{cell.name}" + (f"#{experiments.fragment}" if experiments.fragment else "")

    def keys(self) -> set[str]:
        return {k for cell in self.pages.values() for k in cell.keys}


def table_html(table: Table, lists: Lists) -> Markup:
    """The table with each linked cell an anchor to its list (:class:`mip.analysis.report.cells.Table`)."""
    head = "".join(f"<th>{escape(c)}</th>" for c in table.frame.columns)
    body = []
    columns = {c: table.frame[c].array for c in table.frame.columns}  # each value as Table.cell gives it
    for i in range(len(table.frame)):
        cells, linked = [], table.links[i] if i < len(table.links) else {}
        for column, values in columns.items():
            text, link = _text(values[i]), linked.get(column)
            if isinstance(link, Experiments):
                href = lists.href(table.name, link, f"{column} = {text}")
                cells.append(f'<td><a href="{href}">{escape(text)}</a></td>')
            elif isinstance(link, dict):  # π⁺ / π⁻: each pattern named links to its experiments
                hrefs = {word: lists.href(table.name, e, f"{column}: {word}") for word, e in link.items()}
                # report.md's cells name patterns by short names (stats.SHORT); the link keeps the full one
                full = {stats.SHORT.get(p, p): p for p in link}
                words = [f'<a href="{hrefs[full[w]]}" title="{escape(full[w])}">{escape(w)}</a>' if w in full
                         else f'<a href="{hrefs[w]}">{escape(w)}</a>' if w in hrefs else str(escape(w))
                         for w in text.split(" ")]
                cells.append(f"<td>{' '.join(words)}</td>")
            else:
                cells.append(f"<td>{escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return Markup(f'<div class="scroll"><table class="data" id="t-{escape(table.name)}"><thead><tr>{head}</tr></thead>'
                  f'<tbody>{"".join(body)}</tbody></table></div>')


def _tables(report, lists: Lists) -> dict[int, Markup]:
    """Every entry's table with its cells linked, by the entry's place (registers each cell's list):
    the figures need not be drawn yet."""
    return {n: table_html(item.table, lists) for n, item in enumerate(report.entries) if item.table is not None}


def _items(report, tables: dict[int, Markup], sections) -> list[tuple[str, list[dict]]]:
    """Each section's items as the page shows them: every table (a data file: the table report.html
    shows of it, if any) with its cells linked, every figure (waiting for those being drawn)."""
    out = []
    for section in sections:
        items = []
        for n, item in enumerate(report.items):
            if item.section != section.name:
                continue
            main = item.paths[0]
            items.append({"name": item.name, "how": item.how.replace("**", ""),
                          "kind": "figure not drawn" if item.kind == "missing" else item.kind,
                          "image": main.relative_to(report.folder).as_posix() if item.kind == "figure" else None,
                          "table": tables.get(n),
                          "files": [] if item.kind == "missing" else
                          [p.relative_to(report.folder).as_posix() for p in item.paths]})
        out.append((section.title, items))
    return out


def _clip_long_texts(view, path: Path) -> None:
    """A long output or trace of ``view`` shows its start; the whole of it is a file beside the page ``path``."""
    for a, attempt in enumerate(view.attempts, 1):
        for stage in attempt.stages:
            stage.whole = {}  # type: ignore[attr-defined]
            for part in ("reasoning", "output"):
                text = getattr(stage, part)
                if text and len(text) > record_pages.CLIP_CHARS:
                    whole = path.with_name(f"{view.key}.{a}.{stage.name}.{part}.txt")
                    whole.unlink(missing_ok=True)  # a kept file is the last report's too (a link): a new one
                    whole.write_text(text, encoding="utf-8")
                    stage.whole[part] = (whole.name, len(text))  # type: ignore[attr-defined]
                    setattr(stage, part, text[:record_pages.CLIP_CHARS])
            stage.marked = record_pages.marked(stage.reasoning, view.n)  # type: ignore[attr-defined]


def write(report, header: list[str], frame: pd.DataFrame, source: Source | None, sections,
          choices: list[str]) -> Path:
    """Write report.html, its lists and record pages under ``report.folder``; return report.html's path.
    ``frame``: the report's records (a list shows their fields); ``sections``: the report's
    (:data:`mip.analysis.report.SECTIONS`), whose items' tables link each cell to its list."""
    folder = report.folder
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    local = source is not None and source.kind == "local"  # a W&B row has no fingerprint: its pages are written anew
    pages = Pages(folder / "records", [*TEMPLATES.iterdir(), Path(__file__)], keep=local)
    (folder / "assets").mkdir(parents=True, exist_ok=True)
    for asset in ("report.css", "report.js"):
        shutil.copyfile(TEMPLATES / asset, folder / "assets" / asset)
    lists = Lists()
    tables = _tables(report, lists)  # registers every cell's list
    written = _record_pages(env, folder, pages, source, lists.keys())  # while the figures are drawn
    page = env.get_template("report.html.j2").render(header=[h for h in header if h], notes=report.notes,
                                                     choices=choices, sections=_items(report, tables, sections))
    path = folder / "report.html"
    path.write_text(page, encoding="utf-8")
    info = frame.drop_duplicates("key").set_index("key")
    search_index.write(folder, info, written)
    list_pages.write(env, folder / "lists", lists.pages.values(), list_pages.ListRows(info, report.mentioned, written))
    return path


def _record_pages(env, folder: Path, pages: Pages, source: Source | None, keys: set[str]) -> dict[str, str]:
    """A page per listed record (one kept unchanged since the last report is not written again):
    each record's page path by its key."""
    written: dict[str, str] = {}
    record = env.get_template("record.html.j2")
    said = Said("record pages", len(keys) if source is not None else 0)
    for view in source.views(keys, pages) if source is not None else []:
        said.update()
        if isinstance(view, str):  # unchanged since its page was written
            written[view] = pages.path(view).relative_to(folder).as_posix()
            continue
        path = pages.path(view.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        _clip_long_texts(view, path)
        prompt, left_out = record_pages.clipped(view.prompt) if view.prompt else (None, 0)
        path.unlink(missing_ok=True)
        path.write_text(record.render(v=view, prompt=prompt, left_out=left_out, mentioned_set=set(view.mentioned),
                                      shown_ids=min(view.n, SHOWN_IDS), mentioned_ranges=_ranges(view.mentioned)),
                        encoding="utf-8")
        written[view.key] = path.relative_to(folder).as_posix()
    pages.close(set(written))
    return written
