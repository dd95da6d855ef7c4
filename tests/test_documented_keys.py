"""Every key a page documents is accepted: each `key=value` README.md and
docs/*.md show in running text is taken by the entry point whose config has it, after the
group that brings it (`strategy.batch_size` after `strategy=decomposed`, `model.base_url` after
an API model), and composes; the mistakes the pages show as refused are refused. The commands
of their shell blocks are tested whole in tests/test_readme_commands.py."""

from __future__ import annotations

import re

import pytest

from .conftest import REPO, run_entry

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PROGRAMS = ("run.py", "analyze.py", "attribute.py", "audit.py", "filter.py")
TOKEN = re.compile(r"^[+~]?[a-z_][\w.]*=\S+$")

#: What the pages show as a mistake, with what makes it one, each refused in one line (exit 2).
MISTAKES = {
    "+nn=10": ("run.py",), "n=abc": ("run.py",), "n=0": ("run.py", "model=mock"), "p=1.5": ("run.py", "model=mock"),
    "order_seeds=[]": ("run.py", "model=mock"), "model=../../etc": ("run.py",), "task=../task/arith": ("run.py",),
    "model.gguf_file=x": ("run.py", "model=gpt_oss_120b"), "model.api_key_env=sk-…": ("run.py", "model=gpt_oss_120b"),
    "model.max_concurrency=4": ("run.py", "model=mock"), "dta=…": ("audit.py",),
}
#: Spans that hold `name=value` but are no config key: a W&B tag, a Python call's argument.
NOT_KEYS = {"sweep=<group>", 'why="…")', "verify=False)"}


def spans() -> list[tuple[str, str]]:
    """Each inline code span of the pages' running text that holds a `key=value`, by page."""
    found = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", text):
            if any(TOKEN.match(word) for word in span.split()):
                found.append((page.name, span))
    return found


def owner(key: str) -> str | None:
    """The entry point whose config (its schema, its config groups) has ``key``."""
    from mip.config import AnalyzeConfig, AttributeConfig, AuditConfig, Config, FilterConfig
    from mip.entry.overrides import config_groups
    from mip.entry.schema_fields import schema_has

    key = key.lstrip("+~")
    for program, schema, groups in [("run.py", Config, ("experiment",)), ("analyze.py", AnalyzeConfig, ()),
                                    ("attribute.py", AttributeConfig, ()), ("audit.py", AuditConfig, ()),
                                    ("filter.py", FilterConfig, ())]:
        own = config_groups(REPO / "conf", "config" if program == "run.py" else program.removesuffix(".py"))
        if key in own or key in groups or schema_has(schema, key):
            return program
    return None


def placeholder(value: str) -> bool:
    return "…" in value or value.startswith("<") or value in ("k", "r", "N", "[n,p]")


def sample(program: str, key: str) -> str:
    """A value of ``key``'s type for a placeholder (`strategy.batch_size=k`, `model.base_url=…`)."""
    from mip.entry.overrides import leaf_type
    from mip.config import AnalyzeConfig, AttributeConfig, AuditConfig, Config, FilterConfig

    schema = {"run.py": Config, "analyze.py": AnalyzeConfig, "attribute.py": AttributeConfig, "audit.py": AuditConfig,
              "filter.py": FilterConfig}[program]
    from mip.entry.overrides import config_groups

    groups = config_groups(REPO / "conf", "config" if program == "run.py" else program.removesuffix(".py"))
    if key in groups:  # `task=<name>`: the group's default option
        return groups[key]
    hint = _leaf(schema, key) or leaf_type(schema, key)
    if key == "core":
        return "[100,0.6]"
    if key.endswith("url"):
        return "http://127.0.0.1:8000/v1"
    return {int: "3", float: "0.5", bool: "true"}.get(hint, "[100]" if "list" in str(hint) else "x")


def _leaf(schema: type, key: str):
    """The type of a key under a config group whose options extend their field's schema."""
    from mip.entry.overrides import leaf_type

    group, _, field = key.partition(".")
    if group in ("model", "strategy") and field:
        for option in option_schemas(group).values():
            if (hint := leaf_type(option, field)) is not None:
                return hint
    return None


def option_schemas(group: str) -> dict[str, type]:
    """Each option of a config group whose options extend their field's schema (model, strategy),
    by the schema its file names (`- /<group>_schema/<name>@_here_`)."""
    from omegaconf import OmegaConf

    from mip.models import schemas as models
    from mip.strategies import schemas as strategies

    registry = (models if group == "model" else strategies)()
    found = {}
    for path in sorted((REPO / "conf" / group).glob("*.yaml")):
        for entry in OmegaConf.load(path).get("defaults", []):
            if isinstance(entry, str) and entry.lstrip("/").startswith(f"{group}_schema/"):
                found[path.stem] = registry[entry.lstrip("/").split("/", 1)[1].split("@")[0]]
    return found


def bringing(tokens: list[str]) -> list[str]:
    """The group option each `<group>.<key>` of a run.py span needs where the span names none:
    the default's where it has the key, else the first option that has it."""
    from mip.entry.overrides import config_groups, leaf_type

    defaults = config_groups(REPO / "conf", "config")
    named = {t.split("=", 1)[0].lstrip("+~") for t in tokens}
    added = []
    for token in tokens:
        group, _, field = token.split("=", 1)[0].partition(".")
        if group in ("model", "strategy") and field and group not in named:
            have = [o for o, schema in option_schemas(group).items() if leaf_type(schema, field) is not None]
            assert have, f"no option of {group} has {field}"
            choice = defaults[group] if defaults[group] in have else have[0]
            added.append(f"{group}={choice}")
            named.add(group)
    return added


def shows_filters(tokens: list[str]) -> bool:
    """`verdict=incorrect pattern=majority_last …`: ``python -m mip.show``'s filter words, no
    entry point's keys (tests/test_show_filters.py runs them)."""
    from mip.tools.record_list import FIELDS

    keys = [t.split("=", 1)[0] for t in tokens]
    return all(k in FIELDS for k in keys) and any(owner(k) is None for k in keys)


def documented() -> dict[tuple[str, ...], str]:
    """Each documented span as the command that composes it: program, then overrides; by page."""
    commands = {}
    for page, span in spans():
        words = span.split()
        program = next((w for w in words if w in PROGRAMS), None)
        tokens = [w for w in words if TOKEN.match(w) and w not in NOT_KEYS and w not in MISTAKES]
        if not tokens or shows_filters(tokens):
            continue
        program = program or owner(tokens[0].split("=", 1)[0])
        assert program, f"{page}: `{span}` names a key no entry point has"
        args = []
        for token in tokens:
            key, value = token.split("=", 1)
            assert owner(key) == program, f"{page}: `{span}`: {key} is no key of {program}"
            if "," in value and not value.startswith("["):  # a sweep (`seed=0,1,2`): its first job's value
                value = value.split(",")[0]
            args.append(f"{key}={sample(program, key.lstrip('+~')) if placeholder(value) else value}")
        if program == "run.py":
            args = bringing(args) + args
        commands[(program, *args)] = f"{page}: `{span}`"
    return commands


DOCUMENTED = documented()


def test_the_pages_document_keys_of_groups_and_of_other_entry_points():
    """The issue's examples are among them: a strategy's own setting and an API model's key."""
    shown = {" ".join(c) for c in DOCUMENTED}
    assert "run.py strategy=decomposed strategy.batch_size=3" in shown
    assert "run.py strategy=decomposed strategy.max_reasks=3" in shown
    assert any(c[0] == "analyze.py" for c in DOCUMENTED) and any(c[0] == "audit.py" for c in DOCUMENTED)
    assert len(DOCUMENTED) >= 30


@pytest.mark.parametrize("command", list(DOCUMENTED), ids=lambda c: " ".join(c)[:90])
def test_every_documented_key_is_accepted_and_composes(command, results):
    """Through the entry point as a user types it (its own check of the overrides, then Hydra's
    composition): `--cfg job` prints the composed config and runs nothing."""
    ran = run_entry(command[0], *command[1:], "--cfg", "job")
    assert ran.returncode == 0, f"{DOCUMENTED[command]}: {ran.stderr[-1500:]}"
    for override in command[1:]:
        key, value = override.lstrip("+~").split("=", 1)
        if "." in key and not value.startswith("["):
            assert f"{key.rsplit('.', 1)[1]}: " in ran.stdout, ran.stdout[-2000:]


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_every_mistake_the_pages_show_is_refused_in_one_line(mistake, results):
    program, *context = MISTAKES[mistake]
    ran = run_entry(program, *context, mistake.replace("…", "x"), "dry_run=true" if program == "run.py" else "--help")
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), ran.stderr[-1500:]


def test_a_strategys_setting_without_its_strategy_says_which_strategy_brings_it(results):
    ran = run_entry("run.py", "strategy.max_reasks=1")
    assert ran.returncode == 2, ran.stderr[-1500:]
    assert ran.stderr.strip().splitlines() == [
        "error: strategy.max_reasks is a setting of strategy decomposed, not of strategy single_call; add "
        "strategy=decomposed (`python run.py strategy=decomposed --cfg job` lists its keys)."]


def test_a_decomposed_dry_run_with_its_batch_size_counts_its_calls(results):
    """The acceptance line: n = 20 in batches of 5 is four calls an experiment, six experiments."""
    ran = run_entry("run.py", "strategy=decomposed", "strategy.batch_size=5", "n=20", "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    row = next(line for line in ran.stdout.splitlines() if line.strip().startswith("|  arith"))
    assert [c.strip() for c in row.split("|")][1:6] == ["arith", "6", row.split("|")[3].strip(), "0", "24"], row
