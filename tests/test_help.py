"""Each entry point's --help lists its own config groups and keys, one line each:
conf/hydra/help/<entry>.yaml, the groups' options as Hydra finds them."""

from __future__ import annotations

import dataclasses
import re

import pytest

from mip.entry.audit_command import SET_BY_THE_AUDIT
from mip.config import AnalyzeConfig, AttributeConfig, AuditConfig, Config, FilterConfig
from mip.entry.overrides import config_groups, options

from .conftest import REPO, run_entry

ENTRIES = {"run.py": ("config", Config), "analyze.py": ("analyze", AnalyzeConfig),
           "attribute.py": ("attribute", AttributeConfig), "filter.py": ("filter", FilterConfig),
           "audit.py": ("audit", AuditConfig)}
EXTRA_GROUPS = {"run.py": {"+experiment", "hydra/launcher"}}


def sections(text: str) -> dict[str, list[str]]:
    """The lines under each `== Title ==` heading, up to the next blank line."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = line.strip("= ").split(" ")[0].rstrip(",")
            found[current] = []
        elif not line.strip():
            current = None if current is None or found[current] else current
        elif current:
            found[current].append(line)
    return found


@pytest.fixture(scope="module", params=sorted(ENTRIES))
def helped(request):
    ran = run_entry(request.param, "--help")
    assert ran.returncode == 0, ran.stderr[-2000:]
    return request.param, ran.stdout


def test_help_lists_its_own_groups_with_their_options(helped):
    program, text = helped
    config_name, _ = ENTRIES[program]
    own = config_groups(REPO / "conf", config_name)
    if program != "run.py":  # fixed to none there: a paper model's grid is run.py's business
        own.pop("model_defaults", None)
    rows = {line.split()[0]: line for line in sections(text).get("Groups", [])}
    assert set(rows) == set(own) | EXTRA_GROUPS.get(program, set()), text
    for group in own:
        assert all(option in rows[group] for option in options(REPO / "conf", group)), rows[group]


def test_help_lists_every_key_on_one_line(helped):
    program, text = helped
    _, schema = ENTRIES[program]
    keys = [line for title, lines in sections(text).items() if title in ("Keys", "The") for line in lines]
    assert keys and all(re.match(r"^  \S+ {2,}\S", line) or line.startswith("  n, p") for line in keys), keys
    named = {line.split()[0].split(".")[0] for line in keys}  # audit.data … name the key audit
    refused = set(SET_BY_THE_AUDIT) if program == "audit.py" else set()
    missing = [f.name for f in dataclasses.fields(schema) if f.name not in named | refused]
    assert missing == [], f"{program} --help has no line for {missing}"
    if refused:
        assert all(key in text for key in refused)


def test_analyze_help_lists_no_group_of_run_py():
    ran = run_entry("analyze.py", "--help")
    assert "model:" not in ran.stdout and not re.search(r"^\s+model\s{2,}deepseek", ran.stdout, re.M)
