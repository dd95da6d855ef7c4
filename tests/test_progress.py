"""mip.progress: a tqdm bar on a terminal, plain log lines elsewhere — never a carriage
return in a log; and every entry point quiets the libraries' bars before importing them."""

from __future__ import annotations

import ast
import functools
import io
import logging
import sys

import pytest
from tqdm.auto import tqdm

from mip import progress
from mip.job import run_job

from .conftest import REPO, compose

ENTRY_POINTS = ["run.py", "audit.py", "attribute.py", "filter.py"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("script", ENTRY_POINTS)
def test_an_entry_point_quiets_library_bars_before_importing_anything_else(script):
    """Only the standard library and mip.cli may be imported before quiet_library_bars():
    transformers reads the setting when it is imported."""
    body = ast.parse((REPO / script).read_text()).body
    calls = [i for i, node in enumerate(body) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
             and getattr(node.value.func, "id", None) == "quiet_library_bars"]
    assert calls, f"{script} does not call quiet_library_bars()"
    before = [n.names[0].name if isinstance(n, ast.Import) else n.module for n in body[:calls[0]]
              if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(name in sys.stdlib_module_names or name == "mip.cli" for name in before), before


def test_a_job_off_a_terminal_logs_progress_lines_without_carriage_returns(tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.setattr(progress, "bar", functools.partial(progress.bar, interval=0))  # a line per experiment
    cfg = compose("model=mock", "task=arith", "n=10", "p=0.6", "pattern=majority_first", "progress=true",
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    with caplog.at_level(logging.INFO, logger="mip.progress"):
        run_job(cfg, tmp_path / "job")
    err = capsys.readouterr().err
    assert not sys.stderr.isatty() and "\r" not in err, err[-500:]
    lines = [r.getMessage() for r in caplog.records if r.name == "mip.progress"]
    assert lines and lines[-1].startswith("mock/majority_first: 2/2 exp ("), lines
    assert not any("\r" in line for line in lines)


def test_lines_say_at_most_one_line_per_interval_and_a_last_one_only_after_another():
    quiet = progress.Lines(5, "job", "exp", interval=3600)
    for _ in range(5):
        quiet.update()
    quiet.close()
    assert quiet.said == -1  # a short job writes nothing
    chatty = progress.Lines(5, "job", "exp", interval=0)
    chatty.update(2)
    assert chatty.said == 2
    chatty.interval = 3600
    chatty.update(3)
    chatty.close()
    assert chatty.said == 5  # the last count, once a line was written


def test_a_terminal_gets_a_tqdm_bar_and_progress_false_none(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    live = progress.bar(3, "job", "exp")
    assert isinstance(live, tqdm) and not live.disable
    live.close()
    off = progress.bar(3, "job", "exp", enabled=False)
    assert isinstance(off, tqdm) and off.disable
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(progress.bar(3, "job", "exp"), progress.Lines)
