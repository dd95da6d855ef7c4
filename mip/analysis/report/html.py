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

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from mip.analysis import stats
from mip.analysis.report import cell_lists, record_pages, search_index, section_lists
from mip.analysis.report.cell_lists import Lists
from mip.analysis.report.kept_pages import Pages, Said

TEMPLATES = Path(__file__).parent / "templates"
#: The row key of each linked table, by its name's start (the columns the table shows).
KEYS = {"table2_numbers_": ("model", "budget", "pool"), "table2_": ("Model", "Budget", "Pool"),
        "budgets_numbers_": ("model", "budget"), "budgets_": ("model", "metric"), "table5_prompt_variants_": ("model", "prompt_variant", "budget"), "patterns_by_model_": ("model", "pattern"),
        "table3_coverage_": ("model", "budget", "pool", "bin"), "mention_rates_": ("model", "pattern")}
#: Instance IDs a record page and a mention-rate table show one by one (the rest: counted).
SHOWN_IDS = 100
#: Mention-rate tables show the rate of every ID up to this n, else of the first and last ten.
ALL_IDS = 30


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

    def views(self, keys: set[str], kept=None):
        """The record views of ``keys``; a local record ``kept`` says is unchanged comes as its key alone."""
        if self.kind == "local":
            return record_pages.local_views(self.results, keys, self.prompts, kept)
        from mip.analysis.results import WANDB_DOWNLOADS, wandb_rows

        rows = wandb_rows([WANDB_DOWNLOADS], "**/media/table/**/*.table.json") if self.api else wandb_rows(self.results)
        return record_pages.wandb_views(rows, keys)


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def _ranges(ids) -> str:
    """``1-3 7 9-10``: a set of IDs as the list pages' filter reads it."""
    out, run = [], []
    for i in sorted(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return " ".join(out)


def _keys_of(name: str) -> tuple[str, ...] | None:
    return next((cols for start, cols in KEYS.items() if name.startswith(start)), None)


def table_html(frame: pd.DataFrame, name: str, lists: Lists) -> Markup:
    """The table with each linked cell an anchor to its list (the list learns the number it stands behind)."""
    keys, linked = lists.columns.get(name) or _keys_of(name), lists.cells.get(name, {})
    head = "".join(f"<th>{escape(c)}</th>" for c in frame.columns)
    body = []
    for _, row in frame.iterrows():
        links = linked.get(tuple(str(row[c]) for c in keys), {}) if keys else {}
        cells = []
        for column in frame.columns:
            text, link = _text(row[column]), links.get(column)
            if isinstance(link, str):
                cell = lists.lists[link.split("#")[0][6:]]
                cell.value = cell.value or f"{column} = {text}"
                cells.append(f'<td><a href="{link}">{escape(text)}</a></td>')
            elif isinstance(link, dict):  # π⁺ / π⁻: each pattern named links to its experiments
                for word, href in link.items():
                    lists.lists[href[6:]].value = f"{column}: {word}"
                # report.md's cells name patterns by short names (stats.SHORT); the link keeps the full one
                full = {stats.SHORT.get(p, p): p for p in link}
                words = [f'<a href="{link[full[w]]}" title="{escape(full[w])}">{escape(w)}</a>' if w in full
                         else f'<a href="{link[w]}">{escape(w)}</a>' if w in link else str(escape(w))
                         for w in text.split(" ")]
                cells.append(f"<td>{' '.join(words)}</td>")
            else:
                cells.append(f"<td>{escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return Markup(f'<div class="scroll"><table class="data" id="t-{escape(name)}"><thead><tr>{head}</tr></thead>'
                  f'<tbody>{"".join(body)}</tbody></table></div>')


def mention_table(rates: pd.DataFrame, name: str, lists: Lists) -> pd.DataFrame | None:
    """Figs. 5 and 21's numbers as a table: per model and pattern, the rate of each ID (every ID
    up to :data:`ALL_IDS`, else the first and last ten); each rate links to its list at that ID."""
    if rates.empty:
        return None
    n = int(rates["position"].max())
    shown = list(range(1, n + 1)) if n <= ALL_IDS else [*range(1, 11), *range(n - 9, n + 1)]
    rows = []
    for (model, pattern), group in rates.groupby(["model", "pattern"], sort=False):
        by = group.set_index("position")["rate"]
        rows.append({"model": model, "pattern": pattern, "experiments": int(group["experiments"].iloc[0]),
                     **{f"ID {i}": round(float(by.get(i, float("nan"))), 4) for i in shown}})
        url = lists.cells.get(name, {}).get((str(model), str(pattern)), {}).get("experiments")
        if isinstance(url, str):
            for i in shown:
                lists.cells[name][(str(model), str(pattern))][f"ID {i}"] = f"{url}{'&' if '#' in url else '#'}id={i}"
    return pd.DataFrame(rows)


def _items(report, lists: Lists, sections: list[tuple[str, str]]) -> list[tuple[str, list[dict]]]:
    out = []
    for section, title in sections:
        items = []
        for _, kind, paths, how in [i for i in report.items if i[0] == section]:
            main, name = paths[0], paths[0].stem
            item = {"name": name, "how": how.replace("**", ""), "image": None, "table": None,
                    "kind": "figure not drawn" if kind == "missing" else kind,
                    "files": [] if kind == "missing" else [p.relative_to(report.folder).as_posix() for p in paths]}
            if kind == "figure":
                item["image"] = main.relative_to(report.folder).as_posix()
            frame = report.shown.get(name)
            if kind == "data" and name.startswith("mention_rates_") and frame is not None:
                frame = mention_table(frame, name, lists)
            if frame is not None and kind in ("table", "data") and (kind == "table" or name.startswith("mention_rates_")):
                item["table"] = table_html(frame, name, lists)
            items.append(item)
        out.append((title, items))
    return out


def _list_rows(cell, info: pd.DataFrame, mentioned: dict[str, set[int]], written: dict[str, str]) -> list[dict]:
    """A list's rows; a mention-rate list's carry their mentioned IDs (as ranges) for its ID count."""
    rows = []
    for key in cell.keys:
        r = info.loc[key]
        ids = mentioned.get(key)
        rows.append({**{c: _text(r[c]) for c in cell_lists.LIST_COLUMNS if c != "key"}, "key": key,
                     "invalid_kind": r["invalid_kind"] if isinstance(r["invalid_kind"], str) else "",
                     "ids": _ranges(ids) if ids and cell.mention else "", "mentioned": "–" if ids is None else len(ids),
                     "href": f"../{written[key]}" if key in written else None})
    return rows


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


def write(report, header: list[str], parts, source: Source | None, sections: list[tuple[str, str]],
          choices: list[str], baseline: pd.DataFrame | None = None) -> Path:
    """Write report.html, its lists and record pages under ``report.folder``; return report.html's path.
    ``parts``: the report's sections (:func:`mip.analysis.slices.sections`), whose tables' numbers link down;
    ``baseline``: the single-call experiments the strategies are compared with."""
    folder = report.folder
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    shutil.rmtree(folder / "lists", ignore_errors=True)  # lists of an earlier report in this folder are not this one's
    local = source is not None and source.kind == "local"  # a W&B row has no fingerprint: its pages are written anew
    pages = Pages(folder / "records", [*TEMPLATES.iterdir(), Path(__file__)], keep=local)
    (folder / "assets").mkdir(parents=True, exist_ok=True)
    for asset in ("report.css", "report.js"):
        shutil.copyfile(TEMPLATES / asset, folder / "assets" / asset)
    lists = Lists()
    core = parts.core
    traced = cell_lists.core(lists, core) if not core.empty else pd.DataFrame(columns=["key", "mentioned_ids"])
    cell_lists.budgets(lists, parts.budgets)
    cell_lists.prompt_variants(lists, parts.prompt_variants)
    section_lists.intervals(lists, core)
    section_lists.generalisability(lists, parts.generalisability)
    section_lists.strategies(lists, parts.strategies, baseline)
    section_lists.expanded(lists, parts.expanded)
    mentioned = dict(zip(traced["key"], traced["mentioned_ids"])) if len(traced) else {}
    written: dict[str, str] = {}
    record = env.get_template("record.html.j2")
    keys = lists.keys()
    said = Said("record pages", len(keys) if source is not None else 0)
    for view in source.views(keys, pages.kept) if source is not None else []:
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
    page = env.get_template("report.html.j2").render(header=[h for h in header if h], notes=report.notes,
                                                     choices=choices, sections=_items(report, lists, sections))
    path = folder / "report.html"
    path.write_text(page, encoding="utf-8")
    shown = [f for f in (core, parts.budgets, parts.prompt_variants, parts.generalisability, parts.strategies, baseline,
                         parts.expanded) if f is not None and not f.empty]
    info = (pd.concat(shown) if shown else core).drop_duplicates("key").set_index("key")
    search_index.write(folder, info, written)
    listing = env.get_template("list.html.j2")
    filters = [("verdict", "verdict"), ("pattern", "pattern"), ("task", "task"), ("seed", "seed")]
    for cell in lists.lists.values():
        (folder / "lists").mkdir(exist_ok=True)
        (folder / "lists" / cell.name).write_text(listing.render(cell=cell, filters=filters, rows=_list_rows(
            cell, info, mentioned, written)), encoding="utf-8")
    return path
