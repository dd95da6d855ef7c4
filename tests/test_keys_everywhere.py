"""A key is masked wherever its value appears: planted in every place a user may put one — the
base URL's path (a plain key, an ``sk-proj-`` key), its query (a value with lower-case escapes,
one with a raw ``+``, a bare ``?TOKEN``), a Cookie under ``extra_body.headers`` — and echoed back
by a careless server (the Authorization header and the query, in its replies and its error
messages), it is found in no file a sweep and its report write (records, logs, ``.hydra``,
job.json, W&B's offline files, report.html) nor in what they print."""

from __future__ import annotations

from pathlib import Path

from .conftest import run_entry, run_py
from .fake_server import FakeServer

IN_ENV = "sk-planted-env-0021"  # the value of the variable api_key_env names: sent as "Bearer …", echoed back
IN_PATH = "Pk7planted0path0AbCdEf22"  # a plain key as a path segment
IN_PATH_PROJ = "sk-proj-planted0path0023"
IN_SIG = "abc%2bDEFplanted0sig0024"  # lower-case escapes, as typed
IN_PLUS = "Rk7+planted+plus0025"  # a raw "+" (a space to a form decoder)
IN_BARE = "Bk7planted0bare0AbCd26"  # ?TOKEN, no name
IN_COOKIE = "session=planted-cookie-value-0027"
# The part of each that every form of it (escaped, decoded, as JSON) still holds.
MARKS = ("planted-env-0021", "planted0path0AbCdEf22", "planted0path0023", "planted0sig0024", "plus0025",
         "planted0bare0AbCd26", "planted-cookie-value-0027")


def files_holding(folder: Path, *marks: str) -> list[str]:
    """Every file under ``folder`` whose bytes (or name) hold one of ``marks``."""
    return sorted(f"{p}: {m}" for p in folder.rglob("*") for m in marks
                  if m in str(p) or (p.is_file() and m.encode() in p.read_bytes()))


def test_keys_planted_in_eight_places_reach_no_file_of_a_sweep_and_its_report(results):
    with FakeServer() as server:
        server.echo = True
        server.faults = {"500": 1}  # the first call of each prompt: an error message that repeats the key
        base_url = (f"http://127.0.0.1:{server.port}/p/{IN_PATH}/x/{IN_PATH_PROJ}/v1"
                    f"?sig={IN_SIG}&t={IN_PLUS}&{IN_BARE}")
        ran = run_py("-m", "model=smollm2_135m_server", f"model.base_url='{base_url}'", "model.model_id=fake-model",
                     "model.tokenizer=null", "model.api_key_env=MIP_TEST_KEY", "task=arith", "n=20", "p=0.6",
                     "budget=smoke", "progress=false", "pattern=majority_first,majority_last", "logger=wandb",
                     "logger.mode=offline", f"+model.extra_body.headers.Cookie='{IN_COOKIE}'",
                     env={"MIP_TEST_KEY": IN_ENV})
        targets, headers, bodies = list(server.targets_seen), list(server.headers_seen), list(server.bodies)
    assert ran.returncode == 0, ran.stderr[-3000:]
    # The keys went where they were put.
    assert any(h.get("authorization") == f"Bearer {IN_ENV}" for h in headers)
    assert any(t.startswith(f"/p/{IN_PATH}/x/{IN_PATH_PROJ}/v1/chat/completions?") and IN_BARE in t for t in targets)
    assert bodies[0]["headers"] == {"Cookie": IN_COOKIE}
    report = run_entry("analyze.py", f"results=[{results / 'store'}]", f"out_dir={results / 'report'}")
    assert report.returncode == 0, report.stderr[-3000:]
    written = {p.name for p in results.rglob("*") if p.is_file()}
    assert {"config.yaml", "overrides.yaml", "hydra.yaml", "multirun.yaml", "run.log", "job.json", "report.html"} <= written
    assert any(p.suffix == ".wandb" for p in results.rglob("*"))
    records = "".join(p.read_text() for p in (results / "store").rglob("pack-*.jsonl"))
    assert "you sent Bearer ***" in records  # the echo was stored, masked
    assert files_holding(results, *MARKS) == []
    printed = ran.stdout + ran.stderr + report.stdout + report.stderr
    assert [m for m in MARKS if m in printed] == []


def test_a_key_holding_a_line_break_is_refused_without_echo(results):
    key = "sk-planted-crlf-0028\r\nX-Injected: 1"
    out = run_entry("run.py", "model=smollm2_135m_server", "model.base_url=http://127.0.0.1:9/v1", "model.model_id=m",
                    "model.tokenizer=null", "model.api_key_env=MIP_TEST_KEY", "task=arith", "n=20", "p=0.6",
                    "budget=smoke", "pattern=majority_first", "progress=false", env={"MIP_TEST_KEY": key})
    assert out.returncode == 2 and out.stderr.count("error:") == 1, out.stderr[-2000:]
    assert "MIP_TEST_KEY" in out.stderr and "control character" in out.stderr
    assert "planted-crlf" not in out.stdout + out.stderr and "Injected" not in out.stdout + out.stderr
    assert not any("planted-crlf" in p.read_text(errors="replace") for p in results.rglob("*") if p.is_file())
