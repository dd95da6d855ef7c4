"""Every module's examples run as written (``>>>`` lines; those marked ``+SKIP`` show a call
that needs a model, a store or a config and are not run), and every module runs at least one
example unless it is listed in :data:`NO_EXAMPLE` with the reason none can run: a docstring
whose examples are all skipped shows code that nothing checks."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mip

MODULES = sorted(m.name for m in pkgutil.walk_packages(mip.__path__, "mip."))

_STORE = "works on stored records or job folders that a run writes"
_MODEL = "needs a model's weights or a served model to call"
_FIGURE = "draws matplotlib figures from an analysis frame; tests/test_report*.py check them"
_SOURCE = "reads a dataset's raw files (shared/data/raw) or the Hugging Face hub"
_HYDRA = "composes configs or runs as a Hydra entry point; tests/test_cli.py and test_config.py run it"
_PACKAGE = "a package's registry and re-exports; its modules hold the examples"
_SHIM = "`python -m mip.<command>` as users type it: only calls the command's main in mip.entry"

#: Modules that run no example, each with the reason no example can run in a docstring.
NO_EXAMPLE: dict[str, str] = {
    "mip.analysis": _PACKAGE,
    "mip.experiment": _PACKAGE,
    "mip.tools": _PACKAGE,
    "mip.entry": _PACKAGE,
    "mip.tracking": _PACKAGE,
    "mip.summary": _SHIM,
    "mip.tools.embedded_demo": "runs SmolLM2 end to end (minutes)",
    "mip.analysis.report.compared": "a section needs a Report and the records of a partial grid (tests/test_matched.py)",
    "mip.tools.prompt_source": "rebuilding needs a stored record, its task config and its pool (tests/test_show.py)",
    "mip.tools.embedded_server": _MODEL,
    "mip.entry.demo_command": "runs SmolLM2 end to end (minutes)",
    "mip.entry.serve_command": _MODEL,
    "mip.entry.hydra_callbacks": _HYDRA,
    "mip.entry.run_command": _HYDRA,
    "mip.entry.analyze_command": _HYDRA,
    "mip.entry.attribute_command": _HYDRA,
    "mip.entry.filter_command": _HYDRA,
    "mip.entry.reports": _HYDRA,
    "mip.entry.schema_fields": _HYDRA,
    "mip.strategies.rebuild": "rebuilds a stored record's prompt from its pool: tests/test_records.py runs it",
    "mip.analysis.analyze": _STORE,
    "mip.attribution": _PACKAGE,
    "mip.attribution.profile_figures": _FIGURE,
    "mip.attribution.ixg": _MODEL,
    "mip.attribution.pooled": _FIGURE,
    "mip.attribution.replay": "replays stored outputs through a model's weights",
    "mip.attribution.weights": "loads a model's weights from disk: tests/test_attribution.py loads them",
    "mip.store.claims": _STORE,
    "mip.config": _PACKAGE,
    "mip.config.audit_config": "schemas whose fields say what they are",
    "mip.config.tool_config": "schemas whose fields say what they are",
    "mip.data": _PACKAGE,
    "mip.data.sources": _PACKAGE,
    "mip.data.sources.coarsewsd": _SOURCE,
    "mip.data.sources.gsm8k": _SOURCE,
    "mip.data.sources.hub": _SOURCE,
    "mip.data.sources.sst2": _SOURCE,
    "mip.data.sources.local_table": "reads a user's table through mip.data.sources.tables, whose example runs",
    "mip.data.sources.tweeteval": _SOURCE,
    "mip.data.sources.wikiann": _SOURCE,
    "mip.demo": _SHIM,
    "mip.tools.filtering": _MODEL,
    "mip.analysis.folders": _STORE,
    "mip.analysis.headline": "needs an analysis frame of every pattern and seed; tests/test_analyze.py checks it",
    "mip.job.dry_run": "counts a planned job's tokens from a composed config",
    "mip.job.loop": "the job loop, over a store and a backend",
    "mip.job.prefetch": _MODEL,
    "mip.models": _PACKAGE,
    "mip.models.event_loop": "threads and event loops: tests/test_openai_compat.py runs them",
    "mip.models.hf_local": _MODEL,
    "mip.models.openai_compat": _MODEL,
    "mip.models.transports": _MODEL,
    "mip.tools.preflight": _MODEL,
    "mip.entry.preflight_hook": _HYDRA,
    "mip.analysis.report.coverage_section": _FIGURE,
    "mip.analysis.report.grid_section": _FIGURE,
    "mip.analysis.report.strategy_section": _FIGURE,
    "mip.analysis.report.trace_figures": _FIGURE,
    "mip.analysis.report.variant_figures": _FIGURE,
    "mip.analysis.results": _STORE,
    "mip.serve": _SHIM,
    "mip.show": _SHIM,
    "mip.strategies.decomposed": _MODEL,
    "mip.strategies.self_prompting": _MODEL,
}


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name in NO_EXAMPLE:
        assert result.attempted == 0, f"{name} runs examples now: take it off NO_EXAMPLE in tests/test_doctests.py"
    else:
        assert result.attempted > 0, (f"{name} runs no example (none, or all `# doctest: +SKIP`): add one that runs, "
                                      "or list it in NO_EXAMPLE in tests/test_doctests.py with the reason none can")


def test_most_modules_run_an_example_and_every_listed_module_exists():
    assert set(NO_EXAMPLE) <= set(MODULES), f"NO_EXAMPLE names modules that are gone: {set(NO_EXAMPLE) - set(MODULES)}"
    # Packages that only re-export and the `python -m` shims hold no code of their own: not counted.
    code = [m for m in MODULES if NO_EXAMPLE.get(m) not in (_PACKAGE, _SHIM)]
    listed = [m for m in code if m in NO_EXAMPLE]
    assert len(listed) < len(code) / 2, f"{len(listed)} of {len(code)} modules with code run no example"
