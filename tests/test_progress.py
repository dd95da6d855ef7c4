"""mip.tracking.progress: a tqdm bar on a terminal, plain log lines elsewhere — never a carriage
return in a log; and every entry point quiets the libraries' bars before importing them."""

from __future__ import annotations

import ast
import functools
import io
import json
import logging
import re
import sys

import pytest
from tqdm.auto import tqdm

from mip.tracking import progress
from mip.job import run_job
from mip.tools.costs import cost_lines
from mip.models import Request
from mip.models.mock import MockBackend

from .conftest import REPO, compose, run_entry
from .fake_server import FakeServer

ENTRY_POINTS = ["run.py", "audit.py", "attribute.py", "filter.py"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("script", ENTRY_POINTS)
def test_an_entry_point_quiets_library_bars_before_importing_anything_else(script):
    """Only the standard library and mip.entry.cli may be imported before quiet_library_bars():
    transformers reads the setting when it is imported."""
    body = ast.parse((REPO / script).read_text()).body
    calls = [i for i, node in enumerate(body) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
             and getattr(node.value.func, "id", None) == "quiet_library_bars"]
    assert calls, f"{script} does not call quiet_library_bars()"
    before = [n.names[0].name if isinstance(n, ast.Import) else n.module for n in body[:calls[0]]
              if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(name in sys.stdlib_module_names or name == "mip.entry.cli" for name in before), before


def test_a_job_off_a_terminal_logs_progress_lines_without_carriage_returns(tmp_path, capsys, caplog, monkeypatch):
    cfg = compose("model=mock", "task=arith", "n=10", "p=0.6", "pattern=random", "progress=true",
                  "progress_interval_s=0",  # a line per experiment
                  f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}")
    with caplog.at_level(logging.INFO, logger="mip.progress"):
        run_job(cfg, tmp_path / "job")
    err = capsys.readouterr().err
    assert not sys.stderr.isatty() and "\r" not in err, err[-500:]
    lines = [r.getMessage() for r in caplog.records if r.name == "mip.progress"]
    assert not any("\r" in line for line in lines)
    # done/total, one line per experiment as it is stored, each with its rate and ETA (tqdm's formats)
    assert [re.match(r"mock/random: (\d+/\d+) exp \(", line).group(1) for line in lines] == [f"{k}/6" for k in range(1, 7)]
    for line in lines:
        assert re.search(r"\(\d\d:\d\d, (\?|[\d.]+) exp/(s|min|h), ETA (\?|[\d:]+)\)$", line), line
    assert lines[-1].endswith("ETA 00:00)")


def test_a_sweep_logs_jobs_done_of_its_total_with_rate_and_eta(results):
    ran = run_entry("run.py", "-m", "model=mock", "task=arith", "pattern=majority_first,majority_last,random",
                    "seed=0,1", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    lines = re.findall(r"^sweep: (\d+/\d+) jobs \((.*)\)$", ran.stdout, re.M)
    assert [done for done, _ in lines] == [f"{k}/6" for k in range(1, 7)], ran.stdout[-3000:]
    # the first job's time holds the checks and the pools it built: the ETA follows the jobs after it
    assert re.fullmatch(r"\d\d:\d\d, ETA after the next job", lines[0][1]), lines
    assert all(re.fullmatch(r"\d\d:\d\d, [\d.]+ jobs/(s|min|h), ETA [\d:]+", rest) for _, rest in lines[1:]), lines
    # Review: the jobs' own times leave out each launch; the sweep says its own wall time, once.
    assert re.search(r"took \d+ (s|min|h) \(measured: the sweep's wall time, from launch to end\)$", ran.stdout, re.M)


def test_a_run_closes_with_the_time_it_took_not_an_estimate(results, monkeypatch):
    """A 175 s run once closed with "under one CPU-minute" (the whole-budget estimate from
    the config's rates). A model whose cost is its time now closes with the measured time."""
    with FakeServer(reasoning_shape="reasoning_content") as server:
        monkeypatch.setenv("MIP_TEST_API_KEY", "k")
        ran = run_entry("run.py", "model=smollm2_135m_server", f"model.base_url={server.base_url}",
                        "model.model_id=fake-model", "model.tokenizer=null", "model.api_key_env=MIP_TEST_API_KEY",
                        "task=arith", "pattern=majority_first", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    (line,) = [x for x in ran.stdout.splitlines() if x.startswith("  smollm2_135m_server budget=smoke ")]
    (manifest,) = results.glob("runs/*/*/job.json")
    elapsed = json.loads(manifest.read_text())["elapsed_s"]
    assert f"; took {elapsed:.0f} s on the CPU (measured wall time)" in line, line
    assert "whole budget" not in line and "minute" not in line


def test_a_terminal_bar_moves_with_each_stored_experiment_before_the_job_ends(tmp_path, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "Bar", functools.partial(progress.Bar, mininterval=0))  # every update drawn
    seen = []
    real = MockBackend.generate

    def generate(self, requests):
        for completion in real(self, requests):
            seen.append(terminal.getvalue())  # the screen when the next reply comes
            yield completion

    monkeypatch.setattr(MockBackend, "generate", generate)
    cfg = compose("model=mock", "task=arith", "pattern=random", "progress=true", f"paths.results_dir={tmp_path}",
                  f"paths.cache_dir={tmp_path / 'cache'}")
    run_job(cfg, tmp_path / "job")
    drawn = [re.findall(r"(\d)/6", screen)[-1] for screen in seen]
    assert drawn == ["0", "1", "2", "3", "4", "5"]  # the bar stood at k/6 when reply k + 1 came


def test_a_batch_draws_a_token_bar_under_the_job_on_a_terminal(tmp_path, monkeypatch):
    from mip.models.hf_local import HFBackend
    from mip.models.base import BackendContext

    from .test_hf_local import Model, Tokenizer

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "Bar", functools.partial(progress.Bar, mininterval=0))
    backend = HFBackend(compose("model=smollm2_135m").model, BackendContext(tmp_path))
    backend._tokenizer, backend._model = Tokenizer(), Model()
    list(backend.generate([Request("a", "abc", 4), Request("b", "de", 3)]))
    frames = re.findall(r"batch 1/1 of 2 prompts: +\d+%\|[^|]*\| (\d)/4", terminal.getvalue())
    assert frames[:5] == ["0", "1", "2", "3", "4"], terminal.getvalue()[-500:]  # one frame per decoding step


def test_log_lines_go_above_an_open_bar_and_the_console_comes_back_after(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    console = logging.StreamHandler(sys.stdout)
    logging.root.addHandler(console)
    try:
        live = progress.bar(3, "job", "exp")
        assert console not in logging.root.handlers  # tqdm's handler writes the lines above the bar
        assert any(type(h).__name__ == "_TqdmLoggingHandler" for h in logging.root.handlers)
        inner = progress.bar(10, "batch", "tokens", leave=False)  # a bar under it redirects nothing more
        inner.close()
        live.close()
        assert console in logging.root.handlers
    finally:
        logging.root.removeHandler(console)


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


def test_a_closing_line_gives_the_measured_time_also_where_a_batch_ran_ahead_of_the_jobs():
    """The demo generates its seven jobs' answers in one batch before the jobs run: their own wall
    times are near zero, the batch's time is what the model took (mip.demo passes it)."""
    job = {"model": "smollm2_135m", "experiments": 2, "already_stored": 0, "prompt_tokens": 500, "dry_run": False,
           "max_output_tokens": 640, "backend": "hf", "device": "CPU", "prompt_tokens_per_s": 300,
           "output_tokens_per_s": 25, "elapsed_s": 0.2}
    (ahead,) = cost_lines([job] * 7, took_s=175.2)
    assert ahead.endswith("; took 175 s on the CPU (measured wall time)") and "budget" not in ahead
    (own,) = cost_lines([job] * 7)
    assert own.endswith("; took 1 s on the CPU (measured: the 7 jobs' wall times added up)")
    (dry,) = cost_lines([{**job, "dry_run": True}])  # a dry run still estimates, and says so
    assert "if every experiment uses its whole budget" in dry
