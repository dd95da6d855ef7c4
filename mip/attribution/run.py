"""attribute.py's work: choose stored outputs, rebuild and check their prompts, replay
them, and write per-replay tables, profiles and figures."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from mip.attribution.ixg import Attributor, ReplaySkip
from mip.attribution.profiles import profile, region_shares
from mip.config import AttributeConfig
from mip.data import build_pool
from mip.experiments import rebuild_prompt
from mip.records import Record, iter_records


class AttributionError(RuntimeError):
    """attribute.py cannot start: the message says what is missing."""


def weights_folder(cfg: AttributeConfig) -> str:
    """Where the weights are; they must be on disk before any work starts."""
    if cfg.weights:
        return cfg.weights
    if cfg.model.gguf_package:
        from mip.models.hf_local import converted_dir

        return str(converted_dir(cfg.model, Path(cfg.cache_dir).expanduser()))
    return cfg.model.model_id


def load_model(cfg: AttributeConfig) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = weights_folder(cfg)
    device = cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, cfg.dtype) if cfg.dtype else (torch.bfloat16 if device.startswith("cuda") else torch.float32)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, local_files_only=True).to(device)
    except (OSError, ValueError) as e:
        raise AttributionError(
            f"No weights for {cfg.model.name} on disk at {source!r} ({type(e).__name__}). Download them first "
            "(e.g. `huggingface-cli download <id>`) or pass weights=<folder>."
        ) from e
    return model, tokenizer


def eligible(cfg: AttributeConfig) -> list[Record]:
    name = cfg.records_model or cfg.model.name
    unique = {r.key: r for r in iter_records(cfg.results) if r.experiment.model == name and r.experiment.task in cfg.task}
    return sorted(unique.values(), key=lambda r: r.key)


def attribute(cfg: AttributeConfig) -> Path:
    """Replay every eligible record; returns the output folder."""
    out = Path(cfg.out_dir)
    records = eligible(cfg)
    if not records:
        raise AttributionError(f"No records of model {cfg.records_model or cfg.model.name} for tasks {list(cfg.task)} "
                               f"under {cfg.results}.")
    model, tokenizer = load_model(cfg)  # fails here, before any replay, when weights are missing
    attributor = Attributor(model, tokenizer, checkpointing=cfg.checkpointing)
    pools = {name: build_pool(task, cfg.data_dir, cfg.cache_dir) for name, task in cfg.task.items()
             if any(r.experiment.task == name for r in records)}
    skipped: Counter = Counter()
    rows: list[dict] = []
    out.mkdir(parents=True, exist_ok=True)
    todo = records[: cfg.max_replays] if cfg.max_replays else records
    with open(out / "replays.jsonl", "w", encoding="utf-8") as sink:
        for i, record in enumerate(todo, start=1):
            task = cfg.task[record.experiment.task]
            if record.verdict == "invalid" or record.answer not in task.labels:
                skipped["invalid or tie: not one of the two labels"] += 1
                continue
            try:
                prompt = rebuild_prompt(record, task, pools[task.name])
            except ValueError as e:
                skipped["refused: prompt does not match its record"] += 1
                print(f"refused {record.key}: {e}", file=sys.stderr)
                continue
            counted = next(a for a in record.attempts if a.verdict != "invalid")
            stage = counted.stages[-1]
            texts = [pools[task.name].get(x).text for x in record.instance_ids]
            try:
                replay = attributor.replay(record.key, prompt, texts, stage.output or "", stage.reasoning,
                                           task.labels, record.answer)
            except ReplaySkip as e:
                skipped[str(e)] += 1
                continue
            row = {**record.experiment.model_dump(), "key": record.key, "correct": record.verdict == "correct",
                   "selected": replay.selected, "score": replay.score, "share": replay.share, "signed": replay.signed,
                   "u": replay.u, "tokens": replay.tokens, "seconds": replay.seconds, "peak_rss_mb": replay.peak_rss_mb,
                   "checkpointing": replay.extra["checkpointing"], "instance_labels": record.instance_labels}
            sink.write(json.dumps(row) + "\n")
            rows.append(row)
            print(f"[{i}/{len(todo)}] {record.key}: {replay.tokens} tokens, {replay.seconds:.1f} s, "
                  f"peak RSS {replay.peak_rss_mb:,.0f} MB", file=sys.stderr)
    write_outputs(pd.DataFrame(rows), out, skipped, cfg)
    return out


def write_outputs(replays: pd.DataFrame, out: Path, skipped: Counter, cfg: AttributeConfig) -> None:
    from mip.attribution.figures import profile_figure
    from mip.report.figures import save

    summary = {"replays": len(replays), "skipped": dict(skipped)}
    if not replays.empty:
        summary.update({"seconds_per_replay": float(replays["seconds"].mean()),
                        "peak_rss_mb": float(replays["peak_rss_mb"].max()),
                        "checkpointing": bool(replays["checkpointing"].all())})
        instances = replays[["key", "task", "pattern", "majority_label", "share", "signed", "instance_labels"]].explode(
            ["share", "signed", "instance_labels"])
        instances["position"] = instances.groupby("key").cumcount() + 1
        instances["is_majority"] = instances["instance_labels"] == instances["majority_label"]
        instances.drop(columns=["instance_labels"]).to_csv(out / "instances.csv", index=False)
        regions = region_shares(replays)
        regions.to_csv(out / "regions.csv", index=False)
        by_label = instances.groupby(["pattern", "is_majority"])["share"].mean().rename("mean_share").reset_index()
        by_label.to_csv(out / "majority_vs_minority.csv", index=False)
        for (n, p), group in replays.groupby(["n", "p"]):
            bin_size = cfg.bin_size if int(n) >= 10 * cfg.bin_size else 1
            for pattern, sub in group.groupby("pattern"):
                curve = profile(sub, "binned", bin_size)
                save(profile_figure(curve, bin_size, pattern, int(n), float(p), sub), out / "figures",
                     f"profile_{pattern}_n{n}_p{p}")
            pooled = group[group["pattern"] != "random"]
            if not pooled.empty:
                curve = profile(pooled, "binned", bin_size)
                save(profile_figure(curve, bin_size, "structured patterns pooled", int(n), float(p), pooled),
                     out / "figures", f"profile_pooled_n{n}_p{p}")
        rel = pd.DataFrame([{"n": n, "p": p, "bin": b + 1, "share": v}
                            for (n, p), g in replays.groupby(["n", "p"])
                            for b, v in enumerate(profile(g, "relative", bins=min(cfg.relative_bins, int(n))))])
        rel.to_csv(out / "relative_profiles.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary), file=sys.stderr)
