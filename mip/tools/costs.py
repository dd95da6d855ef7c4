"""What a job or a sweep costs, as its summary prints it: money for an API model at its
dated prices, time on one GPU (or the CPU) for a model run here at its config's throughput.

Split by slice — model, budget, prompt variant and strategy — never pooled, and for a dry run
per task too. A budget is its value, labelled as the analysis labels it
(:func:`mip.config.budgets.labels`): ``budget.max_tokens=999`` over smoke is a slice of its own.
A dry run gives two counts (:mod:`mip.job.dry_run`): the expected cost, one attempt per
experiment as its strategy sends it, and the ceiling, every attempt allowed
(``model.max_attempts``) each sending what the strategy may send at most.

>>> print("\\n".join(cost_lines(jobs) + dry_tables(jobs)))   # doctest: +SKIP

Exercised by ``pytest tests/test_costs.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mip.experiment.spend import cost_usd

if TYPE_CHECKING:  # pandas loads when a summary is printed, not with run.py
    import pandas as pd

#: What a dry run's cost is split by, beside the task.
SLICE = ("model", "budget", "prompt_variant", "strategy")

#: A dry-run table's columns: what a job's ``per_task`` counts, as the table names them.
COLUMNS = {"experiments": "to run", "prompt_tokens": "prompt tokens", "overflowing": "overflow (no call)",
           "calls": "calls", "max_output_tokens": "output tokens at most",
           "ceiling_calls": "calls, ceiling", "ceiling_output_tokens": "output tokens, ceiling"}


def _cost_basis(job: dict) -> str:
    """How a job's model cost is counted (a manifest written before jobs said so: from its backend)."""
    if job.get("cost_basis"):
        return job["cost_basis"]
    from mip.models import BACKENDS, backend_class

    return backend_class(job["backend"]).cost_basis if job.get("backend") in BACKENDS else "price"


def slice_label(where: dict[str, Any]) -> str:
    """``model budget=… prompt_variant=… strategy=…``, as the overrides that make the slice
    (a part an older manifest does not name is left out)."""
    return " ".join([str(where.get("model") or "?")] + [f"{k}={where[k]}" for k in SLICE[1:] if where.get(k)])


def _slices(jobs: list[dict]) -> list[dict[str, Any]]:
    """Each job's slice (:data:`SLICE`), its budget by the limits it ran at as the analysis labels
    it (:func:`mip.config.budgets.labels`; a manifest without them: its name)."""
    from mip.config.budgets import labels

    budgets = labels([j.get("budget") or "" for j in jobs], [j.get("budget_tokens") for j in jobs],
                     [j.get("budget_answer") for j in jobs], [j.get("budget_stated") for j in jobs])
    return [{**{k: j.get(k) or "" for k in SLICE}, "model": j.get("model", "?"), "budget": b}
            for j, b in zip(jobs, budgets)]


def _sent(job: dict) -> dict[str, Any]:
    """What a job sends: its dry run's count by its strategy; a run's (or an older dry run's)
    prompt tokens less those never sent, with no ceiling."""
    dry = bool(job.get("dry_run"))
    per_task = job.get("per_task") or {}
    if dry and per_task and all("calls" in t for t in per_task.values()):
        return {k: sum(t[c] for t in per_task.values()) for k, c in (
            ("calls", "calls"), ("sent tokens", "sent_prompt_tokens"), ("ceiling calls", "ceiling_calls"),
            ("ceiling prompt", "ceiling_prompt_tokens"), ("ceiling output", "ceiling_output_tokens"))}
    nan = float("nan")
    return {"calls": nan if dry else job.get("calls", nan), "ceiling calls": nan, "ceiling prompt": nan,
            "ceiling output": nan,
            "sent tokens": job["prompt_tokens"] - (job.get("overflow_prompt_tokens", 0) if dry else 0)}


def _frame(jobs: list[dict]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{**where, "experiments": j["experiments"], "to run": j["experiments"] - j["already_stored"],
                          "prompt tokens": j["prompt_tokens"],
                          "overflow": j.get("overflowing", 0) if j.get("dry_run") else 0,
                          "max output tokens": j.get("max_output_tokens", 0), **_sent(j),
                          "attempts": j.get("attempts_allowed", 1),
                          "in": j.get("price_input_per_mtok"), "out": j.get("price_output_per_mtok"),
                          "rate in": j.get("prompt_tokens_per_s"), "rate out": j.get("output_tokens_per_s"),
                          "device": j.get("device") or "GPU", "cost": _cost_basis(j),
                          "elapsed": j.get("elapsed_s"), "measured": j.get("measured") or "",
                          "reported": cost_usd(j.get("reported_cost_usd"))}
                         for j, where in zip(jobs, _slices(jobs))])


def cost_lines(jobs: list[dict], took_s: float | None = None, sweep_s: float | None = None) -> list[str]:
    """Per slice: experiments, prompt tokens, and the expected cost where prices are set, or
    for a model run on one's own GPU (or CPU) the time it takes at the config's throughput;
    for a dry run, the ceiling below it. After a real run, the time it took instead (``took_s``
    where the caller measured it, e.g. batches generated ahead of the jobs; else the jobs' own
    wall times). ``sweep_s``: the wall time of the sweep these jobs made, from launch to end — its
    one time: a sweep of one slice says it as the slice's, one of several after their own.
    Prompts a dry run found overflowing the context window are never sent: they are named and
    left out of cost and time."""
    import pandas as pd

    lines = []
    dry = all(j.get("dry_run") for j in jobs)
    groups = list(_frame(jobs).groupby(list(SLICE), sort=False))
    whole = sweep_s is not None and len(groups) == 1 and took_s is None and not dry
    for where, g in groups:
        label, model = slice_label(dict(zip(SLICE, where))), str(where[0])
        done = g["experiments"].sum() - g["to run"].sum()
        what = (f"{g['to run'].sum()} to run, {done} already stored" if dry
                else f"{g['to run'].sum()} run by this command, {done} found already stored")
        line = f"  {label}: {g['experiments'].sum()} experiments ({what}), {g['prompt tokens'].sum():,} prompt tokens"
        calls = g["calls"].sum(min_count=len(g))
        expected = _cost(model, g, int(g["sent tokens"].sum()), int(g["max output tokens"].sum()))
        if dry and pd.notna(calls):
            expected = f"one attempt each, {int(calls):,} calls: {expected}"
        if overflow := int(g["overflow"].sum()):
            line += (f"; {overflow} overflow the context window (input_overflow without a call: not sent, not "
                     f"counted); for the {g['to run'].sum() - overflow} sent ({g['sent tokens'].sum():,} prompt "
                     f"tokens): {expected}")
        elif (spent := None if dry else (sweep_s, 0) if whole else _spent(g, took_s)) and _timed(g):
            line += f"; {took(*spent, g['device'].iloc[0])}"  # what it took, not an estimate
        else:
            line += f"; {expected}" + (f"; {took(*spent)}" if spent else "")
        if not dry:
            line += reported_spend(g)
        lines.append(line)
        if dry and pd.notna(g["ceiling calls"].sum(min_count=len(g))):
            lines.append(_ceiling(g))
    if sweep_s is not None and not whole and not dry:
        lines.append(f"  the sweep {took(sweep_s, 0)}")
    return lines


def reported_spend(g: pd.DataFrame) -> str:
    """What the provider reported the slice's calls cost (``usage.cost``), beside the expected
    cost; empty where no reply reported one (a local model, a server without usage accounting)."""
    spent = g["reported"].sum(min_count=1)
    if spent != spent:  # NaN: none reported
        return ""
    some = "" if g["reported"].notna().all() else f" ({g['reported'].notna().sum()} of {len(g)} jobs reported it)"
    return f"; spent ${spent:,.4f} as the provider reported it (usage.cost){some}"


def _spent(g: pd.DataFrame, took_s: float | None) -> tuple[float, int] | None:
    """Seconds a real run took and over how many jobs: the caller's measure, else the jobs' own."""
    if took_s is not None:
        return took_s, 1
    return (float(g["elapsed"].sum()), len(g)) if g["elapsed"].notna().all() else None


def _timed(g: pd.DataFrame) -> bool:
    """Whether a model's cost is the time it runs (no price set; a local model, or rates given)."""
    import pandas as pd

    first = g.iloc[0]
    priced = pd.notna(first["in"]) and pd.notna(first["out"])
    return not priced and (first["cost"] == "time" or (pd.notna(first["rate in"]) and pd.notna(first["rate out"])))


def took(seconds: float, jobs: int, device: str | None = None) -> str:
    """What jobs that ran took, measured: their wall time (added up over several jobs; ``jobs=0``:
    a sweep's own, launches included), which on a shared machine is more than the CPU time the model used.

    >>> took(175.2, 1, "CPU")
    'took 175 s on the CPU (measured wall time)'
    >>> print(took(5400, 3))
    took 1.5 h (measured: the 3 jobs' wall times added up)
    >>> print(took(203, 0))
    took 203 s (measured: the sweep's wall time, from launch to end)
    """
    text = (f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min" if seconds < 5400
            else f"{seconds / 3600:.1f} h")
    where = f" on the {device}" if device else ""
    how = ("measured: the sweep's wall time, from launch to end" if jobs == 0 else
           f"measured: the {jobs} jobs' wall times added up" if jobs > 1 else "measured wall time")
    return f"took {text}{where} ({how})"


def _ceiling(g: pd.DataFrame) -> str:
    """A dry run's ceiling for one slice: every attempt allowed, each call its whole output limit."""
    import pandas as pd

    first = g.iloc[0]
    calls, prompt, output = (int(g[c].sum()) for c in ("ceiling calls", "ceiling prompt", "ceiling output"))
    line = (f"    ceiling, every attempt allowed ({int(g['attempts'].max())} per experiment): {calls:,} calls, "
            f"{prompt:,} prompt tokens, {output:,} output tokens at most")
    if pd.notna(first["in"]) and pd.notna(first["out"]):
        return line + f": ${prompt / 1e6 * first['in']:,.2f} input + ${output / 1e6 * first['out']:,.2f} output"
    if first["cost"] != "none" and pd.notna(first["rate in"]) and pd.notna(first["rate out"]):
        return line + f": {_hours((prompt / first['rate in'] + output / first['rate out']) / 3600, first['device'])}"
    return line


def _cost(model: str, g: pd.DataFrame, prompt: int, output: int) -> str:
    """The cost of one slice's jobs, over the prompts that are sent: money at the config's
    prices, time at its throughput, or what to set."""
    import pandas as pd

    first = g.iloc[0]
    if pd.notna(first["in"]) and pd.notna(first["out"]):
        measured = f"; {first['measured']}" if first["measured"] else ""  # the preflight's numbers, said as such
        return (f"expected cost ${prompt / 1e6 * first['in']:,.2f} input + at most ${output / 1e6 * first['out']:,.2f} "
                f"output (whole budget used{measured})")
    device = first["device"]
    if pd.notna(first["rate in"]) and pd.notna(first["rate out"]):
        hours = (prompt / first["rate in"] + output / first["rate out"]) / 3600
        return (f"{_hours(hours, device)} if every experiment uses its whole budget ({prompt:,} prompt tokens at "
                f"{first['rate in']:,.0f}/s + {output:,} output tokens at {first['rate out']:,.0f}/s on one {device}, "
                f"the rates in conf/model/{model}.yaml; set model.prompt_tokens_per_s and model.output_tokens_per_s to "
                "your measured rates)")
    if first["cost"] == "none":
        return "no cost (a scripted or simulated model, not an LLM)"
    if first["cost"] == "time":
        return (f"{device} time unknown (set model.prompt_tokens_per_s and model.output_tokens_per_s: tokens per "
                f"second on one {device})")
    unused = f"; {first['measured']}" if first["measured"] else ""  # a preflight not used, and why
    return (f"cost unknown: no public price shipped in conf/model/{model}.yaml; set model.price_input_per_mtok and "
            f"model.price_output_per_mtok (USD per million tokens){unused}")


def dry_tables(jobs: list[dict]) -> list[str]:
    """Per slice, a dry run's count per task (a job's totals where its manifest has no
    ``per_task``): experiments to run, prompt tokens, how many would overflow the context
    window (stored as input_overflow without a call), the calls and output tokens of one
    attempt each, and of every attempt allowed (the ceiling; "-" where an older manifest did
    not count them)."""
    import pandas as pd

    rows = []
    for j, where in zip(jobs, _slices(jobs)):
        per_task = j.get("per_task") or {"(all)": {"experiments": j["experiments"] - j["already_stored"],
                                                   "prompt_tokens": j["prompt_tokens"],
                                                   "overflowing": j.get("overflowing", 0),
                                                   "max_output_tokens": j.get("max_output_tokens", 0)}}
        rows += [{**where, "task": task, **{c: counts.get(c) for c in COLUMNS}} for task, counts in per_task.items()]
    if not rows:
        return []
    lines = []
    for where, g in pd.DataFrame(rows).groupby(list(SLICE), sort=False):
        table = g.groupby("task", sort=True)[list(COLUMNS)].sum(min_count=1)
        if len(table) > 1:
            table.loc["all"] = table.sum(min_count=len(table))
        table = table.rename(columns=COLUMNS).map(lambda v: "-" if pd.isna(v) else f"{int(v):,}").reset_index()
        lines += [f"  {slice_label(dict(zip(SLICE, where)))}, per task:",
                  *("    " + row for row in table.to_markdown(index=False, stralign="right").splitlines())]
    return lines


def comparison(jobs: list[dict]) -> list[str]:
    """A dry run of several slices (a swept model or budget) side by side: one row a slice
    (model × budget, and prompt variant or strategy where they vary), with the experiments to
    run, prompt tokens, the expected cost (one attempt each, whole budget used) and the ceiling
    (every attempt allowed) in dollars at the config's prices, and for a model run on one's own
    GPU (or CPU) the hours at its config's throughput. None for one slice, or a real run."""
    import pandas as pd

    if not jobs or not all(j.get("dry_run") for j in jobs):
        return []
    frame = _frame(jobs)
    keys = [k for k in SLICE if frame[k].nunique() > 1 or k in ("model", "budget")]
    groups = list(frame.groupby(keys, sort=False))
    if len(groups) < 2:
        return []
    rows = []
    for where, g in groups:
        first, sent, out = g.iloc[0], float(g["sent tokens"].sum()), float(g["max output tokens"].sum())
        ceiling = float(g["ceiling prompt"].sum(min_count=len(g))), float(g["ceiling output"].sum(min_count=len(g)))
        row = dict(zip(keys, where)) | {"experiments": f"{int(g['to run'].sum()):,}",
                                        "prompt tokens": f"{int(g['prompt tokens'].sum()):,}"}
        priced = pd.notna(first["in"]) and pd.notna(first["out"])
        rated = pd.notna(first["rate in"]) and pd.notna(first["rate out"]) and first["cost"] != "none"
        usd = (lambda p, o: f"${p / 1e6 * first['in'] + o / 1e6 * first['out']:,.2f}") if priced else None
        hours = (lambda p, o: f"{(p / first['rate in'] + o / first['rate out']) / 3600:,.2f}") if rated else None
        free = first["cost"] == "none"
        row["expected cost"] = usd(sent, out) if usd else "none" if free else "-" if hours else "unknown"
        row["ceiling"] = usd(*ceiling) if usd and pd.notna(ceiling[0]) else "none" if free else "-"
        row["GPU-hours"] = (f"{hours(sent, out)} (ceiling {hours(*ceiling)})" if hours and pd.notna(ceiling[0])
                            else hours(sent, out) if hours else "-")
        rows.append(row)
    table = pd.DataFrame(rows)
    if (table["GPU-hours"] == "-").all():
        table = table.drop(columns="GPU-hours")
    return [f"  side by side ({' × '.join(keys)}; expected: one attempt each, whole budget used; ceiling: every "
            "attempt allowed):", *("    " + line for line in table.to_markdown(index=False, stralign="right")
                                   .splitlines())]


def _hours(hours: float, device: str) -> str:
    if hours >= 1:
        return f"≈ {hours:,.1f} {device}-h"
    return f"≈ {round(hours * 60)} {device}-min" if hours * 60 >= 0.5 else f"under one {device}-minute"
