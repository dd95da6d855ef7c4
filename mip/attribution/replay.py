"""attribute.py's work: choose stored outputs, rebuild and check their prompts, replay
them, and write per-replay tables, profiles and figures."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from mip.attribution import memory
from mip.attribution.ixg import Attributor
from mip.attribution.spans import ReplaySkip
from mip.attribution.memory import Plan
from mip.attribution.packing import labels_need_mask
from mip.attribution.profiles import profile, region_shares
from mip.attribution.weights import AttributionError, device_and_dtype, load_model, load_tokenizer
from mip.config import AttributeConfig, to_plain
from mip.analysis import folders, slices
from mip.analysis.out_dirs import claim, inputs_of
from mip.analysis.results import budget_labels
from mip.data import build_pool
from mip.data.pools import Pool, load_pool
from mip.experiment.instances import PATTERNS, structured
from mip.strategies.rebuild import rebuild_prompt
from mip.experiment.records import Record, counted_attempt
from mip.experiment.scoring import Verdict


def eligible(cfg: AttributeConfig) -> list[Record]:
    """The records of the model and tasks, restricted to the slices of ``cfg.where``."""
    return _eligible(cfg)[0]


def _eligible(cfg: AttributeConfig) -> tuple[list[Record], dict[str, str]]:
    """:func:`eligible`, and every record's budget slice by key: by its value, labelled over all
    the records found as analyze.py labels them (:func:`mip.analysis.results.budget_labels`)."""
    name = cfg.records_model or cfg.model.name
    try:
        found = list(folders.records(cfg.results))  # a store, or a job or sweep folder's own experiments
    except folders.FolderError as e:
        raise AttributionError(str(e)) from None
    unique = {r.key: r for r in found if r.experiment.model == name and r.experiment.task in cfg.task}
    records = sorted(unique.values(), key=lambda r: r.key)
    if not records:
        return records, {}
    budgets = budget_labels({r.key: r for r in found}.values())
    rows = pd.DataFrame([_row(r, budgets) for r in records])
    kept = slices.restrict(slices.add_columns(rows), cfg.where).index
    return [records[i] for i in kept], budgets


def _row(record: Record, budgets: dict[str, str]) -> dict:
    """A record's experiment as the slices see it: its budget by value (``budget_name``: as given)."""
    return {**record.experiment.model_dump(), "base_model": record.experiment.model,
            "pool_filtered": record.pool_filtered, "budget_name": record.experiment.budget,
            "budget": budgets.get(record.key, record.experiment.budget)}


def _merge(lists: list[list]) -> list:
    """Round-robin merge: the first of each list, then the second of each, …"""
    return [x[i] for i in range(max(map(len, lists), default=0)) for x in lists if i < len(x)]


def spread(records: list[Record], limit: int) -> list[Record]:
    """At most ``limit`` records spread evenly over patterns, then majority labels, then
    seeds: the (pattern, label, seed) cells are ordered by nested round-robin (patterns
    alternate fastest), and records are taken one per cell in that order, each cell's
    by key, before a second from any cell. Deterministic; 0 keeps every record."""
    if not limit or limit >= len(records):
        return records
    cells: dict[tuple, list[Record]] = {}
    for r in sorted(records, key=lambda r: r.key):
        e = r.experiment
        cells.setdefault((e.pattern, e.majority_label, e.seed), []).append(r)
    rank = {p: i for i, p in enumerate(PATTERNS)}
    per_pattern = []
    for pattern in sorted({c[0] for c in cells}, key=lambda p: (rank.get(p, 99), p)):
        labels = sorted({c[1] for c in cells if c[0] == pattern})
        per_pattern.append(_merge([sorted(c for c in cells if c[:2] == (pattern, label)) for label in labels]))
    order = [cells[c] for c in _merge(per_pattern)]
    return _merge(order)[:limit]


def replayable(record: Record, task) -> bool:
    return record.verdict.valid and record.answer in task.labels


def pools_for(cfg: AttributeConfig, records: list[Record]) -> dict[str, Pool]:
    """Every pool version the records name: each task's unfiltered pool and the filtered
    pools filter.py saved under ``pools_dir/<task>/filtered-*.json`` (checked by content hash)."""
    found: dict[str, Pool] = {}
    for name in sorted({r.experiment.task for r in records}):
        base = build_pool(cfg.task[name], cfg.data_dir, cfg.paths.cache_dir)
        found[base.version] = base
        folder = Path(cfg.pools_dir).expanduser() / name if cfg.pools_dir else None
        for path in sorted(folder.glob("filtered-*.json")) if folder and folder.is_dir() else []:
            pool = load_pool(path)
            if pool is not None:
                found[pool.version] = pool
    return found


def rebuilt(cfg: AttributeConfig, records: list[Record]) -> tuple[list[tuple], Counter]:
    """(record, task, prompt, instance texts, counted stage) of each record to replay — the
    replayable ones, spread (``cfg.max_replays``), their prompts rebuilt and checked — and the
    counts of those skipped."""
    skipped: Counter = Counter()
    usable = [r for r in records if replayable(r, cfg.task[r.experiment.task])]
    if len(usable) < len(records):
        skipped["invalid or tie: not one of the two labels"] = len(records) - len(usable)
    todo = spread(usable, cfg.max_replays)
    pools = pools_for(cfg, todo)
    jobs = []
    for record in todo:
        task = cfg.task[record.experiment.task]
        pool = pools.get(record.pool_version)
        if pool is None:
            where = f"is pools_dir={cfg.pools_dir} where filter.py saved it?"
            skipped[f"pool {record.pool_version} not found ({where})"] += 1
            continue
        try:
            prompt = rebuild_prompt(record, task, pool)
        except ValueError as e:
            skipped["refused: prompt does not match its record"] += 1
            print(f"refused {record.key}: {e}", file=sys.stderr)
            continue
        stage = counted_attempt(record.attempts).stages[-1]
        jobs.append((record, task, prompt, [pool.get(x).text for x in record.instance_ids], stage))
    return jobs, skipped


def longest_tokens(tokenizer: Any, jobs: list[tuple]) -> int:
    """An upper bound on the longest replay's tokens: prompt, reasoning and output, and 64 for the template."""
    return max((len(tokenizer(prompt + (stage.reasoning or "") + (stage.output or ""))["input_ids"]) + 64
                for _, _, prompt, _, stage in jobs), default=0)


def placement(cfg: AttributeConfig, config: Any, tokenizer: Any, jobs: list[tuple], device: str, dtype: Any) -> Plan:
    """The memory plan for the longest of ``jobs`` (:func:`mip.attribution.memory.plan`), the one
    pass's mask counted where a task's labels need it; a replay that cannot fit is refused with
    its estimate, before any weight is read."""
    masked = any(labels_need_mask(tokenizer, labels) for labels in {tuple(job[1].labels) for job in jobs})
    try:
        return memory.plan(config, longest_tokens(tokenizer, jobs), dtype.itemsize, device, cfg.memory, masked)
    except memory.DoesNotFit as e:
        raise AttributionError(str(e)) from None


def _mb(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f} MB"


def attribution_inputs(cfg: AttributeConfig) -> dict:
    """What the replays are made from, as their out_dir keeps it (mip.analysis.out_dirs)."""
    return inputs_of("local", cfg.results, model=cfg.records_model or cfg.model.name, tasks=sorted(cfg.task),
                     where=to_plain(cfg.where), max_replays=cfg.max_replays)


def attribute(cfg: AttributeConfig, loaded: tuple[Any, Any] | None = None, plan: Plan | None = None) -> Path:
    """Replay every eligible record; returns the output folder.

    The prompts are rebuilt and counted first; the placement (``cfg.memory``) is then planned
    for the longest, and a replay that cannot fit is refused before any weight is read.
    ``loaded`` (a model and its tokenizer already in memory, e.g. benchmarks/gpu.py's random
    weights) and ``plan`` (the placement it was built for) skip the loading.
    """
    out = Path(cfg.out_dir)
    records, budgets = _eligible(cfg)
    if not records:
        raise AttributionError(f"No records of model {cfg.records_model or cfg.model.name} for tasks {list(cfg.task)} "
                               f"under {cfg.results}.")
    if refusal := claim(out, attribution_inputs(cfg)):
        raise AttributionError(refusal)
    if loaded is not None:
        tokenizer, config = loaded[1], loaded[0].config
    else:
        tokenizer, config = load_tokenizer(cfg)  # fails here, before any replay, when weights are missing
    jobs, skipped = rebuilt(cfg, records)
    device, dtype = device_and_dtype(cfg)
    plan = plan or placement(cfg, config, tokenizer, jobs, device, dtype)
    if plan.placement != "cpu" or not plan.mask:
        print(f"memory: {plan.describe()}", file=sys.stderr)
    model, tokenizer = loaded if loaded is not None else load_model(cfg, plan)
    attributor = Attributor(model, tokenizer, checkpointing=cfg.checkpointing, offload=plan.offload, mask=plan.mask)
    rows: list[dict] = []
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "replays.jsonl", "w", encoding="utf-8") as sink:
        for i, (record, task, prompt, texts, stage) in enumerate(jobs, start=1):
            try:
                replay = attributor.replay(record.key, prompt, texts, stage.output or "", stage.reasoning,
                                           task.labels, record.answer)
            except ReplaySkip as e:
                skipped[str(e)] += 1
                continue
            row = {**_row(record, budgets), "key": record.key,
                   "correct": record.verdict == Verdict.CORRECT,
                   "selected": replay.selected, "score": replay.score, "share": replay.share, "signed": replay.signed,
                   "u": replay.u, "tokens": replay.tokens, "seconds": replay.seconds, "passes": replay.passes,
                   "peak_rss_mb": replay.peak_rss_mb, "peak_gpu_allocated_mb": replay.peak_gpu_allocated_mb,
                   "peak_gpu_reserved_mb": replay.peak_gpu_reserved_mb, "offloaded_mb": replay.offloaded_mb,
                   "placement": plan.placement,
                   "checkpointing": replay.extra["checkpointing"], "instance_labels": record.instance_labels}
            sink.write(json.dumps(row) + "\n")
            rows.append(row)
            gpu = (f"peak GPU {_mb(replay.peak_gpu_allocated_mb)} allocated, {_mb(replay.peak_gpu_reserved_mb)} "
                   "reserved; " if replay.peak_gpu_allocated_mb is not None else "")
            print(f"[{i}/{len(jobs)}] {record.key}: {replay.tokens} tokens, {replay.passes} pass"
                  f"{'es' if replay.passes > 1 else ''}, {replay.seconds:.1f} s, {gpu}"
                  f"process RSS {replay.peak_rss_mb:,.0f} MB", file=sys.stderr)
    write_outputs(pd.DataFrame(rows), out, skipped, cfg)
    return out


def write_outputs(replays: pd.DataFrame, out: Path, skipped: Counter, cfg: AttributeConfig) -> None:
    from mip.attribution.profile_figures import profile_figure
    from mip.attribution.pooled import pooled_figures
    from mip.analysis.report.figures import save

    summary = {"replays": len(replays), "skipped": dict(skipped)}
    if not replays.empty:
        def peak(column: str) -> float | None:  # None: not measured (the CPU: no GPU memory)
            values = replays[column].dropna() if column in replays else []
            return float(values.max()) if len(values) else None

        summary.update({"seconds_per_replay": float(replays["seconds"].mean()),
                        "passes": {str(k): int(v) for k, v in replays["passes"].value_counts().sort_index().items()}
                        if "passes" in replays else None,
                        "placement": str(replays["placement"].iloc[0]) if "placement" in replays else None,
                        "peak_gpu_allocated_mb": peak("peak_gpu_allocated_mb"),
                        "peak_gpu_reserved_mb": peak("peak_gpu_reserved_mb"),
                        "offloaded_mb": peak("offloaded_mb"),
                        "process_peak_rss_mb": peak("peak_rss_mb"),
                        "checkpointing": bool(replays["checkpointing"].all())})
        replays = slices.add_columns(replays)
        keep = ["key", "task", "pattern", "majority_label", "share", "signed", "instance_labels", *slices.SETTING]
        instances = replays[keep].explode(["share", "signed", "instance_labels"])
        instances["position"] = instances.groupby("key").cumcount() + 1
        instances["is_majority"] = instances["instance_labels"] == instances["majority_label"]
        instances.drop(columns=["instance_labels"]).to_csv(out / "instances.csv", index=False)
        regions, relative = [], []
        for setting, group in slices.of(replays, slices.SETTING):  # one slice each, never pooled (mip.analysis.slices)
            n, p, tag = int(setting["n"]), float(setting["p"]), slices.file_tag(setting, slices.SETTING)
            regions.append(region_shares(group).assign(**{k: v for k, v in setting.items() if k not in ("n", "p")}))
            relative += [{**setting, "bin": b + 1, "share": v}
                         for b, v in enumerate(profile(group, "relative", bins=min(cfg.relative_bins, n)))]
            bin_size = cfg.bin_size if n >= 10 * cfg.bin_size else 1
            for pattern, sub in group.groupby("pattern"):
                curve = profile(sub, "binned", bin_size)
                save(profile_figure(curve, bin_size, pattern, n, p, sub, weights=cfg.model.name), out / "figures",
                     f"profile_{pattern}_{tag}")
            pooled = group[group["pattern"].map(structured)]
            if not pooled.empty:
                curve = profile(pooled, "binned", bin_size)
                figure = profile_figure(curve, bin_size, "structured patterns pooled", n, p, pooled,
                                        weights=cfg.model.name)
                save(figure, out / "figures", f"profile_pooled_{tag}")
        pooled = []
        # Figs. 33–35 (App. F.3, F.4)
        for name, fig, rows in pooled_figures(replays, cfg.relative_bins, weights=cfg.model.name):
            save(fig, out / "figures", name)
            pooled += [{"figure": name.split("_")[0], **row} for row in rows]
        if pooled:
            pd.DataFrame(pooled).to_csv(out / "pooled_profiles.csv", index=False)
        pd.concat(regions).to_csv(out / "regions.csv", index=False)
        by_label = instances.groupby([*slices.SETTING, "pattern", "is_majority"])["share"].mean().rename("mean_share")
        by_label.reset_index().to_csv(out / "majority_vs_minority.csv", index=False)
        pd.DataFrame(relative).to_csv(out / "relative_profiles.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary), file=sys.stderr)
