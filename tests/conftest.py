"""Shared fixtures: the shared data folder, composed configs, isolated result folders."""

from __future__ import annotations

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


def compose(*overrides: str):
    """The typed Config for ``overrides``, composed exactly as run.py composes it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from mip.config import register

    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = hydra_compose("config", overrides=list(overrides))
    return OmegaConf.to_object(cfg)


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
