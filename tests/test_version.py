"""One version, read from one place: mip/__init__.py writes it;
pyproject.toml, job.json and the README read or agree with it."""

from __future__ import annotations

import json
import re
import tomllib

import mip

from .conftest import REPO, run_entry


def test_pyproject_reads_the_version_from_the_package():
    from setuptools.config.pyprojecttoml import read_configuration

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert read_configuration(REPO / "pyproject.toml")["project"]["version"] == mip.__version__


def test_the_readme_speaks_of_this_version():
    """The newest `mip X.Y` the README names is the package's major.minor."""
    named = {tuple(map(int, v)) for v in re.findall(r"mip (\d+)\.(\d+)", (REPO / "README.md").read_text())}
    assert max(named) == tuple(map(int, mip.__version__.split(".")[:2]))


def test_a_jobs_manifest_carries_the_version(results):
    ran = run_entry("run.py", "model=mock", "task=arith", "n=10", "dry_run=true", "progress=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    (manifest,) = results.rglob("job.json")
    assert json.loads(manifest.read_text())["mip_version"] == mip.__version__
