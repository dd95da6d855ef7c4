"""The package never reads the repository's conf/: the entry points compose the config and
pass it in (run.py, analyze.py, attribute.py, filter.py, audit.py), and the package's own
commands (mip.show, mip.serve, mip.demo) read the config folder they are given."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from .conftest import REPO

# A path built to a folder named conf: `/ "conf"`, joinpath("conf"), "conf/task", REPO_CONF … (a
# command-line default such as --conf's `default="conf"` is the caller's folder, not the package's).
CONF_PATH = re.compile(r"""REPO_CONF|/\s*["']conf["']|\w\(\s*["']conf["']|["']conf/""")


def test_no_module_builds_a_path_to_conf():
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in sorted((REPO / "mip").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if CONF_PATH.search(line) and not line.lstrip().startswith("#")]
    assert not found, "\n".join(found)


def test_the_pattern_catches_what_it_should():
    for line in ('REPO_CONF = root / "conf"', "initialize_config_dir(str(Path(__file__).parent.parent / 'conf'))",
                 'Path(__file__).parents[1].joinpath("conf/task")'):
        assert CONF_PATH.search(line), line
    for line in ('parser.add_argument("--conf", default="conf")', 'if a in ("store", "conf")', '"see conf/model"'):
        assert not CONF_PATH.search(line), line


def test_an_audit_runs_from_a_copy_of_the_package_with_no_conf_beside_it(tmp_path, results):
    """The composed config travels in; the package, copied where no conf/ exists, needs nothing else."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mip.entry.config_store import register

    table = tmp_path / "reviews.csv"
    rows = pd.DataFrame({"text": [f"What is {i} + 1?" for i in range(40)], "label": ["even", "odd"] * 20})
    rows.to_csv(table, index=False)
    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("audit", overrides=["model=mock", f"audit.data={table}", "audit.labels=[even,odd]",
                                          "audit.n=[10]", "audit.p=[0.6]", "audit.seeds=[0]", "progress=false",
                                          f"paths.results_dir={tmp_path / 'out'}"])
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    package = tmp_path / "copy"
    shutil.copytree(REPO / "mip", package / "mip", ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "elsewhere"
    work.mkdir()
    script = """
import sys
from pathlib import Path
import mip
from mip.tools.audit import run_audit
from mip.config import AuditConfig
from mip.entry.config_store import load_saved
assert Path(mip.__file__).is_relative_to(Path(sys.argv[1])), mip.__file__
print(run_audit(load_saved(sys.argv[2], AuditConfig)))
"""
    proc = subprocess.run([sys.executable, "-c", script, str(package), str(tmp_path / "config.yaml")], cwd=work,
                          capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin",
                                                                             "PYTHONPATH": str(package),
                                                                             "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = Path(proc.stdout.strip().splitlines()[-1])
    assert report == tmp_path / "out" / "audit" / "reviews" / "audit.md" and "**Verdict:" in report.read_text()
    assert not (package / "conf").exists() and not (work / "conf").exists()


def test_show_and_serve_read_the_config_folder_they_are_given(tmp_path):
    from mip.entry.serve_command import command_line
    from mip.entry.shipped_tasks import shipped
    from mip.tools.prompt_source import ShowError, task_config

    with pytest.raises(ShowError, match="no config folder .*pass --conf"):
        task_config("arith", {}, shipped(tmp_path))
    assert task_config("arith", {}, shipped(REPO / "conf")).labels == ["even_number", "odd_number"]
    with pytest.raises(SystemExit, match="No config folder"):
        command_line(tmp_path)
    own = tmp_path / "conf"
    shutil.copytree(REPO / "conf", own)
    server = own / "model" / "smollm2_135m_server.yaml"
    server.write_text(yaml.safe_dump({**yaml.safe_load(server.read_text()), "base_url": "http://127.0.0.1:8123/v1"}))
    command, url = command_line(own)
    assert url == "http://127.0.0.1:8123/v1" and command[command.index("--port") + 1] == "8123"
