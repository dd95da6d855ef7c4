"""Every command README.md and docs/*.md show runs as written: each shell
block parses with bash; each entry-point line (`python run.py`, `analyze.py`,
`attribute.py`, `filter.py`, `audit.py`), split as bash splits it, passes that entry point's checks
and composes (run.py's also expands to its sweep as mip's sweeper splits it); each `python -m mip.…`
tool and `make` target exists and takes the options shown; the summary, show and analyze lines that
read a folder mip wrote run for real on one, as do the lines that need nothing outside (the filter
with the mock model, `mip.serve --print`); each benchmark line's arguments pass that script's own
parser; the slow test runs each run.py line as a dry run on the shared data. Every relative link
of those pages points to a file (and heading) that exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from . import stored
from .conftest import RAW, REPO, compose, needs_raw, run_entry

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TEXTS = {page.relative_to(REPO).as_posix(): page.read_text() for page in PAGES}
README = TEXTS["README.md"]
SHELL_BLOCKS = [(name, block) for name, text in TEXTS.items()
                for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, re.S)]


def command_lines(block: str) -> list[str]:
    """The block's commands, one a line, continuations joined, comments and the environment
    variables set for one command (`MIP_SERVER_URL=… python run.py …`) dropped."""
    lines = [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    return [re.sub(r"^(?:[A-Z_]+=\S+\s+)+(?=\S)", "", line) for line in lines if line and not line.startswith("#")]


def unique(lines) -> list[str]:
    """Each command once, however many pages show it and however it is spaced or commented."""
    return list({tuple(shlex.split(line, comments=True)): line for line in lines}.values())


def words(command: str) -> str:
    """A test id: the command as bash reads it."""
    return " ".join(shlex.split(command, comments=True))[:100]


LINES = [(name, line) for name, block in SHELL_BLOCKS for line in command_lines(block)]
RUN_COMMANDS = unique(line for name, line in LINES if line.startswith("python run.py"))
README_RUN_COMMANDS = [line for name, line in LINES if name == "README.md" and line.startswith("python run.py")]
TOOL_ENTRIES = ("analyze.py", "attribute.py", "filter.py", "audit.py")
TOOL_COMMANDS = unique(line for name, line in LINES if line.split()[:2][-1] in TOOL_ENTRIES and line.startswith("python "))
MODULE_COMMANDS = unique(line for name, line in LINES if line.startswith("python -m mip."))
MAKE_COMMANDS = unique(line for name, line in LINES if line.startswith("make "))
# The other places a command is shown: run.py's docstring, the comments of conf/ and run.py --help.
EXAMPLE_SOURCES = [REPO / "run.py", *sorted((REPO / "conf").rglob("*.yaml"))]
EXAMPLES = sorted({m.group(1).strip() for path in EXAMPLE_SOURCES for m in
                   re.finditer(r"^\s*#?\s*(python run\.py\b.*)$", path.read_text(), re.M)} - set(RUN_COMMANDS))
PAPER_TASKS = {"all", "math", "ner", "occurrence", "sentiment", "wsd"}


def arguments(command: str) -> list[str]:
    """The command's arguments to its program as bash hands them over (quotes removed, comments dropped)."""
    words = shlex.split(command, comments=True)
    return words[3:] if words[1] == "-m" else words[2:]


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """The jobs mip's sweeper makes of these overrides, a preset's sweep included."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from mip.entry.compositions import split_jobs

    from .conftest import registered

    registered()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        fixed = [o.input_line for o in parser.parse_overrides(overrides) if not o.is_sweep_override()]
        cfg = hydra_compose("config", overrides=fixed, return_hydra_config=True)
        params = [f"{k}={v}" for k, v in (cfg.hydra.sweeper.params or {}).items()]
        named = {o.split("=")[0] for o in overrides}
        parsed = parser.parse_overrides([*overrides, *(p for p in params if p.split("=")[0] not in named)])
        return [list(job) for batch in split_jobs(parsed) for job in batch]


def reads_the_paper_data(job: list[str]) -> bool:
    cfg = compose(*(o for o in job if not o.startswith("hydra/")))
    return bool(set(cfg.task) & PAPER_TASKS)


def test_the_pages_show_commands_of_every_entry_point():
    assert len(README_RUN_COMMANDS) >= 3 and len(RUN_COMMANDS) >= 8
    assert any("model=qwen36_35b 'pattern=glob(*)' seed=0,1,2 data_dir=../shared/data/raw" in c for c in README_RUN_COMMANDS)
    assert len(EXAMPLES) >= 8
    shown = {line.split()[1] for line in TOOL_COMMANDS} | {line.split()[2] for line in MODULE_COMMANDS}
    assert set(TOOL_ENTRIES) | {"mip.summary", "mip.show", "mip.demo", "mip.serve"} <= shown
    assert {"make run", "make test"} <= {" ".join(line.split()[:2]) for name, line in LINES if name == "README.md"}
    assert len(README.splitlines()) < 200


@pytest.mark.parametrize("command", EXAMPLES, ids=words)
def test_every_other_example_parses_with_bash(command):
    proc = subprocess.run(["bash", "-n"], input=command, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("page, block", SHELL_BLOCKS, ids=lambda b: b.strip().splitlines()[0][:40])
def test_every_shell_block_parses_with_bash(page, block):
    proc = subprocess.run(["bash", "-n"], input=block, text=True, capture_output=True)
    assert proc.returncode == 0, f"{page}: {proc.stderr}"


@pytest.mark.parametrize("command", RUN_COMMANDS + EXAMPLES, ids=words)
def test_every_run_command_passes_the_checks_and_composes(command, monkeypatch):
    from mip.entry.cli import check_overrides
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


def tool_schema(program: str):
    from mip.entry.audit_command import SET_BY_THE_AUDIT
    from mip.config import AnalyzeConfig, AttributeConfig, AuditConfig, FilterConfig

    return {"analyze.py": (AnalyzeConfig, None), "attribute.py": (AttributeConfig, None),
            "filter.py": (FilterConfig, None), "audit.py": (AuditConfig, SET_BY_THE_AUDIT)}[program]


@pytest.mark.parametrize("command", TOOL_COMMANDS, ids=words)
def test_every_tool_command_passes_its_checks_and_composes(command, tmp_path):
    """analyze.py, attribute.py, filter.py and audit.py lines: the entry point's own check of the
    overrides (as its `__main__` runs it: a bare folder, made here, becomes results=[…]), then its
    config composed with them."""
    from mip.entry.cli import check_overrides, folders_as_results

    program = command.split()[1]
    schema, refused = tool_schema(program)
    name = program.removesuffix(".py")
    args = [a for a in arguments(command) if a != "..."]  # `...`: "and the rest of your command"
    for folder in (tmp_path / a for a in args if FOLDER.fullmatch(a)):
        folder.mkdir(parents=True)
    args = folders_as_results([str(tmp_path / a) if FOLDER.fullmatch(a) else a for a in args], program)
    check_overrides(args, schema, program, refused, conf_dir=REPO / "conf", config_name=name)
    overrides = [a for a in args if not a.startswith(("-", "hydra/"))]
    compose(*overrides, config_name=name)


@pytest.mark.parametrize("command", MODULE_COMMANDS, ids=words)
def test_every_tool_module_takes_the_options_shown(command):
    """`python -m mip.…` lines: the module exists, its parser takes the arguments shown up to
    --help (added last, so that nothing runs; the real runs are below) and its usage line lists
    each option shown."""
    module = command.split()[2]
    if module == "mip.summary":  # one folder, no options
        assert len(arguments(command)) == 1 and not arguments(command)[0].startswith("-"), command
        return
    ran = run_entry("-m", module, *arguments(command), "--help")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "usage: python -m " + module in ran.stdout
    for option in (a.split("=")[0] for a in arguments(command) if a.startswith("--")):
        assert re.search(rf"\[{option}\b", ran.stdout), f"{module} has no option {option}"


@pytest.mark.parametrize("command", MAKE_COMMANDS, ids=words)
def test_every_make_target_exists(command):
    target = shlex.split(command, comments=True)[1:]
    proc = subprocess.run(["make", "-n", *target], cwd=REPO, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- real runs on a folder mip wrote
FOLDER = re.compile(r"results/(sweeps|runs)/\d{4}-\d\d-\d\d/[\w-]+")
KEY = re.compile(r"^[0-9a-f]{8}$")


def reads_a_folder(line: str) -> bool:
    """A summary, show or analyze line on a folder, store or key mip wrote (not W&B, not slices of
    models the folder lacks)."""
    words = line.split()
    program = words[2] if words[1] == "-m" else words[1]
    if program not in ("analyze.py", "mip.summary", "mip.show") or "source=wandb" in line or "where." in line:
        return False
    args = arguments(line)
    return bool(FOLDER.search(line)) or not args or bool(program == "mip.show" and KEY.match(args[0]))


ON_A_FOLDER = [line for line in MODULE_COMMANDS + TOOL_COMMANDS if reads_a_folder(line)]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A sweep mip wrote: the mock model, two patterns, three order seeds of random (12 experiments)."""
    results = tmp_path_factory.mktemp("written") / "results"
    env = {"MIP_RESULTS_DIR": str(results)}
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "pattern=random,majority_first", "progress=false", env=env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    (sweep,) = {p.parent.parent for p in results.glob("sweeps/*/*/*/job.json")}
    key = stored.entries(results / "store")[0].key
    return results, sweep, key


def on(command: str, written) -> list[str]:
    """The command's arguments with its example folder, store and key replaced by those written."""
    results, sweep, key = written
    args = [FOLDER.sub(lambda m: str(sweep if m.group(1) == "sweeps" else sweep / "0"), a) for a in arguments(command)]
    args = [a.replace("store=/scratch/mip/results/store", f"store={results / 'store'}") for a in args]
    args = [a.replace("out_dir=paper/report", f"out_dir={results / 'paper-report'}") for a in args]
    return [key[: len(a)] if KEY.match(a) else a for a in args]


@pytest.mark.parametrize("command", ON_A_FOLDER, ids=words)
def test_reading_commands_run_on_a_folder_mip_wrote(command, written, figures_unencoded):
    results, _, _ = written
    args = on(command, written)
    if command.startswith("python analyze.py"):  # each report where the line puts it, none over another
        ran = run_entry("analyze.py", *args, env={"MIP_RESULTS_DIR": str(results)})
    else:
        ran = run_entry("-m", command.split()[2], *args, env={"MIP_RESULTS_DIR": str(results)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip()


PYTHON_BLOCKS = [(name, block) for name, text in TEXTS.items() for block in re.findall(r"```python\n(.*?)```", text, re.S)]


@pytest.mark.parametrize("page, block", PYTHON_BLOCKS, ids=lambda b: b.strip().splitlines()[0][:40])
def test_every_python_block_runs_on_a_store_mip_wrote(page, block, written):
    results, _, _ = written
    exec(compile(block.replace('"results/store"', repr(str(results / "store"))), page, "exec"), {})


def test_reading_commands_are_run_on_a_folder():
    shown = {line.split()[2] if line.startswith("python -m") else line.split()[1] for line in ON_A_FOLDER}
    assert shown == {"analyze.py", "mip.summary", "mip.show"}


def test_the_core_grid_command_is_21_jobs_and_the_budget_comparison_42():
    (core,) = {c for c in RUN_COMMANDS if "model=gpt_oss_120b 'pattern=glob(*)' seed=0,1,2" in c}
    (budgets,) = {c for c in RUN_COMMANDS if "budget=20k,100k" in c}
    assert len(sweep_jobs([a for a in arguments(core) if not a.startswith("-")])) == 21
    jobs = sweep_jobs([a for a in arguments(budgets) if not a.startswith("-")])
    assert len(jobs) == 42 and {o for job in jobs for o in job if o.startswith("budget=")} == {"budget=20k", "budget=100k"}


def test_each_extending_recipe_names_the_test_that_follows_it():
    """docs/extending.md: a section per part, each naming the test that follows it."""
    page = TEXTS["docs/extending.md"]
    sections = re.findall(r"^## (.*)$", page, re.M)
    assert sections == ["A task", "A pattern", "A backend", "A backend's cost basis", "A strategy", "A metric",
                        "A report section"]
    named = set(re.findall(r"`(test_\w+)`", page))
    tests = {name for module in ("test_extending.py", "test_costs.py")
             for name in re.findall(r"^def (test_\w+)", (REPO / "tests" / module).read_text(), re.M)}
    assert len(named) == 7 and named <= tests


# ---------------------------------------------------------------- links
LINKS = [(name, target) for name, text in TEXTS.items()
         for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", target)]


def slugs(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page, target", LINKS)
def test_every_relative_link_points_to_a_file_and_heading(page, target):
    path, _, anchor = target.partition("#")
    file = (REPO / page).parent / path if path else REPO / page
    assert file.exists(), f"{page}: {target}"
    if anchor:
        assert anchor in slugs(file.read_text()), f"{page}: {target}"


CODE_FILES = sorted({*REPO.glob("*.py"), *(REPO / "mip").rglob("*.py"), *(REPO / "benchmarks").glob("*.py"),
                     *(REPO / "conf").rglob("*.yaml")})
CITED_SECTIONS = sorted({(page, section) for f in CODE_FILES
                         for page, section in re.findall(r'(README|benchmarks/RESULTS\.md|docs/[\w-]+\.md)[,:] "([^"]+)"',
                                                         f.read_text(encoding="utf-8"))})


def test_code_cites_sections_that_exist():
    """What the code and configs tell a reader to look up (`README, "Running the paper's grid"`)
    is a heading of that page; a renamed section once left a command's hint pointing nowhere."""
    assert CITED_SECTIONS, "no section cited: the pattern below no longer finds the citations"
    for page, section in CITED_SECTIONS:
        text = (REPO / ("README.md" if page == "README" else page)).read_text(encoding="utf-8")
        headings = re.findall(r"^#+ (.*)$", text, re.M)
        assert any(h.startswith(section) for h in headings), f'{page}, "{section}": no such heading'


def as_a_dry_run(command: str) -> tuple[str, ...]:
    """The command's arguments as this machine runs it: a dry run (so no call, no SLURM, no key,
    no preflight), the local launcher, the shared data where it names ../shared/data/raw."""
    args = [a for a in arguments(command) if not a.startswith(("hydra/launcher=", "dry_run=", "preflight=", "logger="))]
    return tuple(f"data_dir={RAW}" if a == "data_dir=../shared/data/raw" else a for a in args)


DRY_RUNS = list({as_a_dry_run(c): c for c in RUN_COMMANDS}.values())  # each dry run once


@needs_raw
@pytest.mark.slow
@pytest.mark.parametrize("command", DRY_RUNS, ids=words)
def test_every_run_command_runs_as_a_dry_run(command, results):
    """As written, on this machine, as a dry run (:func:`as_a_dry_run`)."""
    ran = run_entry("run.py", *as_a_dry_run(command), "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-3000:]


BENCHMARK_COMMANDS = unique(line for name, line in LINES if line.startswith("python benchmarks/"))


@pytest.mark.parametrize("command", BENCHMARK_COMMANDS, ids=words)
def test_every_benchmark_takes_the_options_shown(command):
    """`python benchmarks/….py` lines (minutes each: `make bench` runs them, docs/benchmarks.md):
    the script exists, and its own parser takes the options and values shown (an unknown option
    or a value of the wrong type fails it)."""
    words = shlex.split(command, comments=True)
    script = REPO / words[1]
    assert script.is_file(), command
    # the script as run, stopped right after its parser took the arguments
    # (parse_known_args: parse_args calls it, so a script using either stops there)
    check = ("import runpy, sys; sys.argv = sys.argv[1:]; import argparse\n"
             "real = argparse.ArgumentParser.parse_known_args\n"
             "def parse(self, args=None, namespace=None):\n"
             "    ns, rest = real(self, args, namespace)\n"
             "    if rest: self.error('unrecognized arguments: ' + ' '.join(rest))\n"
             "    print('PARSED', sorted(vars(ns))); raise SystemExit(0)\n"
             "argparse.ArgumentParser.parse_known_args = parse\n"
             "runpy.run_path(sys.argv[0], run_name='__main__')")
    parsed = subprocess.run([sys.executable, "-c", check, str(script), *words[2:]], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert parsed.returncode == 0 and "PARSED" in parsed.stdout, parsed.stderr[-2000:]


# ---------------------------------------------------------------- real runs that need nothing outside
# Lines that call no paid API, GPU, hub or user's file run as written (their data_dir, the
# shared data, relative to the repository as the pages say); the others are composed above, and
# each has a real run of its kind elsewhere (tests/test_demo.py, test_audit.py, test_readback.py).
OFFLINE_FILTERS = [line for line in TOOL_COMMANDS if line.startswith("python filter.py") and "filter_models=[mock]" in line]
OFFLINE_MODULES = [line for line in MODULE_COMMANDS if line.split()[2] == "mip.serve" and "--print" in line]


def test_some_lines_need_nothing_outside():
    assert OFFLINE_FILTERS and OFFLINE_MODULES


@needs_raw
@pytest.mark.parametrize("command", OFFLINE_FILTERS, ids=words)
def test_filter_lines_with_the_mock_model_run_as_written(command, tmp_path):
    results = tmp_path / "results"
    ran = run_entry("filter.py", *arguments(command), env={"MIP_RESULTS_DIR": str(results)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert (results / "filter" / "table4_agreement.md").is_file()


@pytest.mark.parametrize("command", OFFLINE_MODULES, ids=words)
def test_module_lines_that_print_run_as_written(command):
    ran = run_entry("-m", command.split()[2], *arguments(command))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "transformers serve" in ran.stdout
