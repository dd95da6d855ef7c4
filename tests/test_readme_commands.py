"""Every command the README shows runs as written (issue 29, items 1 and 7): each shell block
parses with bash, and each `python run.py …` line, split as bash splits it, passes run.py's
checks, expands to its sweep with Hydra's own sweeper and composes; the slow test runs each
as a dry run on the shared data."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from .conftest import RAW, REPO, compose, needs_raw, run_entry

README = (REPO / "README.md").read_text()
SHELL_BLOCKS = re.findall(r"```(?:bash|sh|shell)\n(.*?)```", README, re.S)
RUN_COMMANDS = [line.strip() for block in SHELL_BLOCKS for line in block.replace("\\\n", " ").splitlines()
                if line.strip().startswith("python run.py")]
# The other places a command is shown: run.py's docstring, the comments of conf/ and run.py --help.
EXAMPLE_SOURCES = [REPO / "run.py", *sorted((REPO / "conf").rglob("*.yaml"))]
EXAMPLES = sorted({m.group(1).strip() for path in EXAMPLE_SOURCES for m in
                   re.finditer(r"^\s*#?\s*(python run\.py\b.*)$", path.read_text(), re.M)} - set(RUN_COMMANDS))
PAPER_TASKS = {"all", "math", "ner", "occurrence", "sentiment", "wsd"}


def arguments(command: str) -> list[str]:
    """The command's arguments to run.py as bash hands them over (quotes removed, comments dropped)."""
    return shlex.split(command, comments=True)[2:]


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """The jobs Hydra's basic sweeper makes of these overrides, a preset's sweep included."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .conftest import registered

    registered()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        fixed = [o.input_line for o in parser.parse_overrides(overrides) if not o.is_sweep_override()]
        cfg = hydra_compose("config", overrides=fixed, return_hydra_config=True)
        params = [f"{k}={v}" for k, v in (cfg.hydra.sweeper.params or {}).items()]
        named = {o.split("=")[0] for o in overrides}
        parsed = parser.parse_overrides([*overrides, *(p for p in params if p.split("=")[0] not in named)])
        return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def reads_the_paper_data(job: list[str]) -> bool:
    cfg = compose(*(o for o in job if not o.startswith("hydra/")))
    return bool(set(cfg.task) & PAPER_TASKS)


def test_the_readme_shows_run_commands():
    assert len(RUN_COMMANDS) >= 8 and any("'pattern=glob(*)'" in c for c in RUN_COMMANDS)
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("command", EXAMPLES)
def test_every_other_example_parses_with_bash(command):
    proc = subprocess.run(["bash", "-n"], input=command, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.strip().splitlines()[0][:40])
def test_every_shell_block_parses_with_bash(block):
    proc = subprocess.run(["bash", "-n"], input=block, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("command", RUN_COMMANDS + EXAMPLES)
def test_every_run_command_passes_the_checks_and_composes(command, monkeypatch):
    from mip.cli import check_overrides
    from mip.config import Config

    monkeypatch.setenv("MIP_SLURM_PARTITION", "gpu-part")
    args = arguments(command)
    overrides = [a for a in args if not a.startswith("-")]
    check_overrides(args, Config, "run.py", groups=("experiment",), conf_dir=REPO / "conf")  # exits on a refusal
    jobs = sweep_jobs(overrides)
    assert (len(jobs) > 1) == ("-m" in args), "a sweep needs -m, and -m is for sweeps"
    first = jobs[0]
    cfg = compose(*(o for o in first if not o.startswith("hydra/")))
    assert cfg.budget.max_tokens <= cfg.model.context_window
    if reads_the_paper_data(first):  # the hub has no copy of WSD: a command on the paper's data names data_dir
        assert any(a.startswith("data_dir=") for a in args), command


def test_the_core_grid_command_is_21_jobs_and_the_budget_comparison_42():
    (core,) = [c for c in RUN_COMMANDS if "model=gpt_oss_120b 'pattern=glob(*)' seed=0,1,2" in c]
    (budgets,) = [c for c in RUN_COMMANDS if "budget=20k,100k" in c]
    assert len(sweep_jobs([a for a in arguments(core) if not a.startswith("-")])) == 21
    jobs = sweep_jobs([a for a in arguments(budgets) if not a.startswith("-")])
    assert len(jobs) == 42 and {o for job in jobs for o in job if o.startswith("budget=")} == {"budget=20k", "budget=100k"}


@needs_raw
@pytest.mark.slow
@pytest.mark.parametrize("command", RUN_COMMANDS)
def test_every_run_command_runs_as_a_dry_run(command, results):
    """As written, on this machine: a dry run (so no call, no SLURM, no key), the local
    launcher, the shared data where the command names ../shared/data/raw."""
    args = [a for a in arguments(command) if not a.startswith(("hydra/launcher=", "dry_run="))]
    args = [f"data_dir={RAW}" if a == "data_dir=../shared/data/raw" else a for a in args]
    ran = run_entry("run.py", *args, "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-3000:]
