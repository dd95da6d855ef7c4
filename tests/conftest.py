"""Shared fixtures: the shared data folder, composed configs, isolated result folders."""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MIP_SHARED_DIR", REPO.parent / "shared")).resolve()
RAW = SHARED / "data" / "raw"
PAPER = SHARED / "paper" / "order-effects-in-mip.md"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

needs_raw = pytest.mark.skipif(not RAW.is_dir(), reason=f"shared data not found at {RAW}")


@functools.cache
def registered() -> None:
    """mip's schemas in Hydra's ConfigStore, once per test process: the store is a process-wide
    singleton, and registering again re-converts every schema (a tenth of each compose's time)."""
    from mip.entry.config_store import register

    register()


def compose(*overrides: str, config_name: str = "config"):
    """The typed config for ``overrides``, composed exactly as run.py (or, with
    ``config_name="analyze"``, analyze.py) composes it.

    Memoised per process: many tests compose the same few configs (``task=all``, one model),
    and a composition costs ~0.3 s. The key holds the environment, which the config files read
    (``${oc.env:MIP_RESULTS_DIR}`` …), less pytest's own variables; each caller gets a copy to change."""
    environ = tuple(sorted((k, v) for k, v in os.environ.items() if not k.startswith("PYTEST_")))
    key = (config_name, overrides, environ)
    if key not in _COMPOSED:
        _COMPOSED[key] = _compose(config_name, overrides)
    return copy.deepcopy(_COMPOSED[key])


_COMPOSED: dict = {}


def _compose(config_name: str, overrides: tuple[str, ...]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from mip.entry.config_store import composed

    registered()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        # its task_source the folder composed from, as compose_conf and run.py set it
        cfg = composed(hydra_compose(config_name, overrides=list(overrides), return_hydra_config=True))
    return OmegaConf.to_object(cfg)


def vary(cfg, pattern: str | None = None, **fields):
    """A copy of a composed Config with another pattern and other top-level values (seed=…):
    what composing again with ``pattern=<name> seed=<s>`` gives (tests/test_helpers.py checks that it
    is), without composing again. A composition takes ~0.3 s, a small job a tenth of that, so a
    test that builds a sweep job by job composes once and varies."""
    if pattern is not None:
        fields["pattern"] = dataclasses.replace(cfg.pattern, name=pattern)
    return copy.deepcopy(dataclasses.replace(cfg, **fields))


def unencoded(fig, folder: Path, name: str) -> list[Path]:
    """mip.analysis.report.figures.save less the PNG and PDF encoding, which is most of a report's time:
    for tests that read a report's tables and text. The figures are still drawn;
    test_analyze's every-table-and-figure test encodes and checks each file."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [folder / f"{name}.png", folder / f"{name}.pdf"]


@pytest.fixture
def figures_unencoded(monkeypatch) -> None:
    from mip.analysis.report import figures

    monkeypatch.setattr(figures, "save", unencoded)


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """A fresh results folder for run.py and composed configs."""
    folder = tmp_path / "results"
    monkeypatch.setenv("MIP_RESULTS_DIR", str(folder))
    return folder


def run_py(*args: str, env: dict | None = None, timeout: int = 900):
    """Run ``python run.py args`` in the repository, returning the CompletedProcess."""
    import subprocess

    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, str(REPO / "run.py"), *args],
        cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


@dataclasses.dataclass
class Ran:
    """What an entry point run in this process returned and printed (CompletedProcess's fields)."""

    returncode: int
    stdout: str
    stderr: str


def run_entry(program: str, *args: str, env: dict | None = None) -> Ran:
    """``python <program> args`` (or, with ``program="-m"``, ``python -m <module> args``) run in
    this process, from the repository root, as the interpreter would run it (``__main__``, its
    argv, its exit code, what it prints).

    For checks that end early (a refusal, a typo, an empty store): an interpreter's start and
    mip's imports cost ~1.5 s of CPU each, most of such a test. Tests of what needs a process
    of its own (a kill, two jobs at once, a fresh start) use :func:`run_py`. Hydra's global
    state and the logging handlers a run configures are undone afterwards."""
    import contextlib
    import io
    import logging
    import runpy
    import warnings

    from hydra.core.global_hydra import GlobalHydra

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = (list(sys.argv), dict(os.environ), os.getcwd(), list(root.handlers), root.level)
    module = args[0] if program == "-m" else None
    sys.argv = [module or str(REPO / program), *args[1 if module else 0:]]
    os.environ.update(env or {})
    os.chdir(REPO)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if module:
                with warnings.catch_warnings():  # a test module imported it: runs it afresh as __main__ all the same
                    warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
                    runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(REPO / program), run_name="__main__")
    except SystemExit as e:
        if isinstance(e.code, str):  # sys.exit("message"): printed, exit code 1
            err.write(e.code + "\n")
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    finally:
        sys.argv[:] = saved[0]
        os.environ.clear()
        os.environ.update(saved[1])
        os.chdir(saved[2])
        for handler in [h for h in root.handlers if h not in saved[3]]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(saved[4])
        GlobalHydra.instance().clear()
    return Ran(code, out.getvalue(), err.getvalue())


def local_models(tmp_path: Path, url: str, *models: str) -> str:
    """A config folder with ``<model>_local``: the paper's model file, pointed at ``url`` (a
    sweep over models cannot override ``model.base_url`` on the command line); returns the
    override that puts it on Hydra's search path."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    for model in models:
        (tmp_path / "conf" / "model" / f"{model}_local.yaml").write_text(
            f"defaults:\n  - /model/{model}@_here_\n  - _self_\nbase_url: {url}\n")
    return f"hydra.searchpath=[file://{tmp_path / 'conf'}]"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory):
    """A real `transformers serve` on 127.0.0.1 serving SmolLM2-135M, for the real openai client."""
    import shutil
    import subprocess
    import time
    import urllib.request

    from mip.models.hf_local import converted_dir

    exe = Path(sys.executable).with_name("transformers")
    if not exe.exists() and not shutil.which("transformers"):
        pytest.skip("transformers serve is not installed (pip install 'transformers[serving]')")
    folder = converted_dir(compose("model=smollm2_135m").model, Path(os.environ.get("MIP_CACHE_DIR", "~/.cache/mip")).expanduser())
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(exe if exe.exists() else "transformers"), "serve", str(folder), "--host", "127.0.0.1",
                                 "--port", str(port), "--device", "cpu"], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {log.read_text()[-2000:]}")
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail(f"transformers serve did not start: {log.read_text()[-2000:]}")
    yield f"{url}/v1"
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A real single-node SLURM cluster, when slurmctld is installed (.ci/run installs it)."""
    from .slurm_cluster import SlurmCluster, available

    if not available():
        pytest.skip("SLURM is not installed (apt-get install slurm-wlm munge)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    cluster.start()
    yield cluster
    cluster.stop()
