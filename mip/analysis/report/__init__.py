"""The analysis report: every table and figure the records support, and report.md.

>>> write_report(frame, "results/report")          # doctest: +SKIP
>>> [section.name for section in SECTIONS]         # report.md's and report.html's sections, in order
['core', 'budgets', 'generalisability', 'prompt_variants', 'strategies', 'expanded', 'other']

Choices where the paper leaves one are written into the report itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mip.analysis import inference, slices
from mip.analysis.headline import headline
from mip.analysis.report import compared, drawing, figures, grid_section, html, kept_figures, kept_parts, sections, \
    swap, strategy_section as strategies, metric_tables as tables
from mip.analysis.report.cells import Item, Links, Table
from mip.analysis.report.choices import choices
from mip.analysis.report.data_notes import core_notes, coverage_notes, spend_lines, where_text
from mip.analysis.report.model_sets import TracePool


@dataclass(frozen=True)
class Section:
    """One section of the report: its name, its heading and what computes its tables and figures
    from its records (``records``: the part of :func:`mip.analysis.slices.sections` it reads; ``run``
    None: the report fills it itself). Adding one here adds it to report.md, report.html and W&B."""

    name: str
    title: str
    run: Callable[["Report", pd.DataFrame], None] | None = None
    records: str | None = None

    def of(self, parts: slices.Sections) -> pd.DataFrame:
        return getattr(parts, self.records or self.name)


SECTIONS = [
    Section("core", "Core setting (§4.1): Tables 2, 6, 3; Figs. 2, 5, 14–18, 21", sections.core),
    Section("budgets", "Budget comparison (App. C.5): Table 6, Fig. 9, Table 7", compared.budgets),
    Section("generalisability", "Generalisability (§4.2): Fig. 3, Figs. 10, 11, 22, 23", grid_section.generalisability),
    Section("prompt_variants", "Prompt variants (§4.3): Table 5, Fig. 4, Fig. 20", compared.prompt_variants),
    Section("strategies", "Strategies (beyond the paper)"),
    Section("expanded", "Expanded orderings (§5.2.1)", sections.expanded),
    Section("other", "Records in no section, and the reference calculation"),
]


@dataclass
class Report:
    folder: Path
    entries: list[Item] = field(default_factory=list)
    """Every table, data file and figure as handed over; read :attr:`items`, which waits for the figures."""
    notes: list[str] = field(default_factory=list)
    section: str = "core"
    pool: TracePool = field(default_factory=TracePool)
    """The models pooled trace figures pool (mip.analysis.report.model_sets)."""
    mentioned: dict[str, list[int]] = field(default_factory=dict)
    """The IDs each traced experiment of the core section mentions, for report.html's mention-rate lists."""
    kept: kept_figures.Kept | None = None
    """The last report's figures, kept where nothing they are drawn from changed; None: draw every one."""
    drawing: drawing.Drawing | None = None
    """Where handed-over figures are drawn and encoded (worker processes); None: here, as they come."""
    pending: list[int] = field(default_factory=list)
    """The entries whose figures are being drawn, resolved by :meth:`drawn`."""
    parts: kept_parts.Parts | None = None
    """The last report's parts, kept where their records did not change; None: compute every part."""
    keys: dict[str, str | None] = field(default_factory=dict)
    """Each figure's key (:mod:`mip.analysis.report.kept_figures`; None: handed over drawn, never kept)."""

    def part(self, name: str, records: pd.DataFrame | list[pd.DataFrame | str | None],
             compute: Callable[[], None]) -> None:
        """One part of the current section (one setting's tables, figures and notes): ``compute()`` hands
        them to this report, unless the last report's part of this ``name`` computed from the same
        ``records`` is kept (:mod:`mip.analysis.report.kept_parts`), which hands over the same, in order.
        ``records``: everything ``compute`` reads beside the report's choices, as rows selected from the
        analysed table (never edited) and any text it is handed beside them."""
        if self.parts is None:
            return compute()
        name = f"{self.section}: {name}"
        key = self.parts.key(name, records)
        if self.parts.replay(self, key):
            return
        self.parts.computed.append(name)
        made, notes, mentioned = kept_parts.Made(key, len(self.entries)), self.notes, self.mentioned
        self.notes, self.mentioned = [], {}
        try:
            compute()
        finally:
            made.notes, made.mentioned = self.notes, self.mentioned
            self.notes, self.mentioned = notes + made.notes, mentioned | made.mentioned
        made.end = len(self.entries)
        self.parts.made.append(made)

    def table(self, frame: pd.DataFrame, name: str, how: str, links: Links = ()) -> None:
        """A table: its values and, per row, the experiments behind its cells (:mod:`mip.analysis.report.cells`)."""
        paths = tables.write_table(frame, self.folder / "tables", name)
        self.entries.append(Item(self.section, "table", paths, how, Table(name, frame, how, links)))

    def data(self, frame: pd.DataFrame, name: str, how: str, shown: tuple[pd.DataFrame, Links] | None = None) -> None:
        """A long table kept as CSV only, under ``data/`` (not printed into report.md); report.html
        shows ``shown`` of it (a summary table and its links), if given."""
        path = self.folder / "data" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
        self.entries.append(Item(self.section, "data", [path], how, Table(name, shown[0], how, shown[1])
                                 if shown is not None else None))

    def figure(self, fig, name: str, how: str, numbers: tuple[pd.DataFrame, Links] | None = None) -> None:
        """Save ``fig``: a :class:`mip.analysis.report.figures.Later` is drawn and encoded (by
        :attr:`drawing`) unless the last report's is kept; a :class:`~mip.analysis.report.figures.Missing`
        is not drawn, and the report says why. ``numbers``: the table of what the figure plots and its
        links, shown under it in report.html."""
        folder = self.folder / "figures"
        if isinstance(fig, figures.Missing):
            self.entries.append(Item(self.section, "missing", [folder / f"{name}.png"],
                                     f"{how}\n\n**Not drawn**: {fig.reason}"))
            return
        table = Table(name, numbers[0], how, numbers[1]) if numbers is not None else None
        if not isinstance(fig, figures.Later):  # drawn already: encoded now, never kept
            if self.kept is not None:
                self.kept.kept(name, None)
            self.keys[name] = None
            self.entries.append(Item(self.section, "figure", figures.save(fig, folder, name), how, table))
            return
        key = self.keys[name] = self.kept.key(fig.draw, fig.args, fig.kwargs) if self.kept is not None else None
        if key is not None and self.kept.kept(name, key):
            self.entries.append(Item(self.section, "figure", self.kept.paths(name), how, table))
            return
        self.drawing = self.drawing or drawing.Drawing(workers=1)
        self.drawing.add(fig, folder, name)
        self.pending.append(len(self.entries))
        self.entries.append(Item(self.section, "figure", [folder / f"{name}.png", folder / f"{name}.pdf"], how, table))

    @property
    def items(self) -> list[Item]:
        """Every table, data file and figure, each figure drawn (:meth:`drawn`)."""
        self.drawn()
        return self.entries

    def drawn(self) -> None:
        """Wait for the figures being drawn; one that had nothing to draw becomes a "missing" entry."""
        for i, done in zip(self.pending, self.drawing.results() if self.pending else []):
            if isinstance(done, figures.Missing):
                item = self.entries[i]
                self.entries[i] = Item(item.section, "missing", item.paths[:1],
                                       f"{item.how}\n\n**Not drawn**: {done.reason}")
                if self.kept is not None:
                    self.kept.missing(item.paths[0].stem)
        self.pending = []

    def tables(self) -> list[Table]:
        """Every table of the report, in its order (W&B logs these)."""
        return [i.table for i in self.entries if i.kind == "table" and i.table is not None]

    def images(self) -> list[Path]:
        """Every drawn figure's PNG, relative to the report's folder."""
        return [p.relative_to(self.folder) for i in self.items if i.kind == "figure" for p in i.paths
                if p.suffix == ".png"]

    def finish(self, header: list[str]) -> Path:
        """After the last table and figure: every figure drawn, the index of the figures kept for the
        next report, and report.md."""
        self.drawn()
        if self.kept is not None:
            self.kept.close()
        if self.parts is not None:
            self.parts.close(self)
        path = self.folder / "report.md"
        path.write_text(self.markdown(header), encoding="utf-8")
        return path

    def markdown(self, header: list[str]) -> str:
        lines = ["# MIP order-effects report", "", *header]
        if self.notes:
            lines += ["## Data notes", ""] + [f"- {n}" for n in self.notes] + [""]
        lines += ["## Choices", ""] + [f"- {c}" for c in choices()] + [""]
        for section in SECTIONS:
            items = [i for i in self.items if i.section == section.name]
            lines += [f"## {section.title}", ""]
            if not items:
                lines += ["No records fit this section.", ""]
            for item in items:
                kind, paths, how, main = item.kind, item.paths, item.how, item.paths[0]
                lines += [f"### {main.stem} ({'figure not drawn' if kind == 'missing' else kind})", "", how, ""]
                if kind == "missing":
                    continue
                rel = main.relative_to(self.folder)
                if kind != "data":
                    lines.append(f"![{main.stem}]({rel})" if kind == "figure" else main.read_text(encoding="utf-8"))
                lines += ["Files: " + ", ".join(f"`{p.relative_to(self.folder)}`" for p in paths), ""]
        return "\n".join(lines)


def write_report(frame: pd.DataFrame, folder: str | Path, filter_dir: str | Path | None = None,
                 where: slices.Where | None = None, core: tuple[int, float] | None = (slices.CORE_N, slices.CORE_P),
                 pool: TracePool | None = None, source: html.Source | None = None,
                 say: Callable[[str], None] | None = None,
                 logged: Callable[[Path, list[Table], list[Path]], None] | None = None,
                 summary: Callable[[pd.DataFrame], None] | None = None) -> Path:
    """Write tables, figures, report.md and report.html into a folder beside ``folder`` and swap it in
    whole (:mod:`mip.analysis.report.swap`): a kill leaves the previous report or this one. See :func:`_write`.
    Each part of a section whose records did not change since the report in ``folder`` is kept from it
    (:mod:`mip.analysis.report.kept_parts`). ``logged`` (W&B: :func:`mip.analysis.analyze.log_report`) then
    gets the report's folder, its tables (the structure report.md and report.html render) and its figures'
    images; ``summary`` the headline table of the records (:func:`mip.analysis.headline.headline`), its
    rows kept per slice as the parts are."""
    final = Path(folder).expanduser()
    with swap.beside(final) as new, drawing.Drawing(say=say) as figures_drawn:
        report = _write(frame, new, filter_dir, where, core, pool, source, say, figures_drawn, final)
        table = headline(slices.restrict(frame, where), keep=report.parts.value) if summary is not None else None
    if logged is not None:
        logged(final, report.tables(), [final / p for p in report.images()])
    if summary is not None:
        summary(table)
    return final / "report.md"


def _write(frame: pd.DataFrame, folder: str | Path, filter_dir: str | Path | None = None,
           where: slices.Where | None = None, core: tuple[int, float] | None = (slices.CORE_N, slices.CORE_P),
           pool: TracePool | None = None, source: html.Source | None = None,
           say: Callable[[str], None] | None = None, figures_drawn: drawing.Drawing | None = None,
           last: Path | None = None) -> "Report":
    """Write tables, figures and report.md under ``folder``; return the report.

    ``where`` restricts the records (:func:`mip.analysis.slices.restrict`); ``core`` is the core
    (n, p), None to take every (n, p) run with several selection seeds. With ``filter_dir``
    holding filter.py's Table 4, it joins the report. ``pool``: the models pooled trace figures
    pool (default: those whose shipped config declares full traces). The report is always
    written: a slice without a valid experiment shows "–" and a note. ``say`` hears each step as it starts;
    ``figures_drawn`` draws the figures (default: here, one after another); ``last``: the folder of
    the last report, whose unchanged parts this one keeps.
    """
    say = say or (lambda line: None)
    report = Report(Path(folder), pool=pool if pool is not None else TracePool.of(None), drawing=figures_drawn)
    report.folder.mkdir(parents=True, exist_ok=True)
    loaded = list(frame.attrs.get("notes", []))  # unreadable and quarantined records, key schemes
    frame = slices.restrict(frame, where)
    code = kept_figures.code_key()
    report.kept = kept_figures.Kept(report.folder / "figures", code)
    report.parts = kept_parts.Parts(last, report.folder, code, repr((where, core, report.pool)), frame)
    report.notes = [*loaded, *coverage_notes(frame)]
    parts = slices.sections(frame, core)
    report.notes += parts.notes
    report.notes += core_notes(frame, parts, core)
    simulated = report.pool.planted(frame["base_model"].astype(str))
    if simulated:
        report.notes.append(f"Simulated models (a planted, known positional rule, not an LLM): {', '.join(simulated)}.")
    for section in SECTIONS:
        report.section = section.name
        records = section.of(parts) if section.run is not None else None
        if records is not None and not records.empty:
            say(f"tables and figures: {section.name} ({len(records)} records)")
            section.run(report, records)
    report.section = "strategies"
    if not parts.strategies.empty:
        baseline = slices.single_call_twins(frame, parts.strategies)
        report.part("every slice", [parts.strategies, baseline],
                    lambda: strategies.strategies(report, parts.strategies, baseline=baseline))
    report.section = "other"
    _other(report, parts.rest, filter_dir)
    header = [f"{len(frame)} experiments from {frame['base_model'].nunique()} model(s)"
              + (f", restricted by {where_text(where)}" if where_text(where) else "") + ".",
              "Core setting: " + parts.core_text, *spend_lines(frame), ""]
    say("report.html: lists and record pages")  # while the figures are drawn: report.html waits for them last
    html.write(report, header, frame, source, SECTIONS, choices())
    report.finish(header)
    return report


def _other(report: Report, rest: pd.DataFrame, filter_dir: str | Path | None) -> None:
    """The last section: the records no section takes (``rest``), Table 4 from ``filter_dir`` and App. C.4."""
    rest = slices.unassigned(rest)
    if not rest.empty:
        report.table(rest, "unassigned", "Records that fit no section, counted per slice — not pooled into any table.")
        report.notes.append(f"{int(rest['experiments'].sum())} record(s) fit no section; see 'unassigned'.")
    table4 = Path(filter_dir).expanduser() / "table4_agreement.csv" if filter_dir else None
    if table4 is not None and table4.is_file():
        report.table(pd.read_csv(table4), "table4_agreement",
                     "Instance filtering (App. C.1, Table 4): per task, the share and count of pool instances answered "
                     "correctly by every filter model, by none, and by exactly one.")
    ref = inference.reference_calculation()
    report.table(pd.DataFrame([ref]).round(12), "reference_c4",
                 "App. C.4: independent predictions at q = 0.9 on 1,100 + 900 instances; exact binomial probability "
                 "of a reversed or tied majority.")
