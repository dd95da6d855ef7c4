"""`python -m mip.serve` (make serve): the embedded model behind `transformers serve`, on the
host and port that model=smollm2_135m_server calls."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import REPO, free_port, run_entry


def test_the_command_serves_the_converted_folder_on_the_server_configs_port(monkeypatch):
    monkeypatch.delenv("MIP_SERVER_URL", raising=False)
    proc = run_entry("-m", "mip.serve", "--print")
    assert proc.returncode == 0, proc.stderr[-2000:]
    words = proc.stdout.split()
    assert words[1] == "serve" and (words[words.index("--host") + 1], words[words.index("--port") + 1]) == ("127.0.0.1", "8000")
    folder = words[2]
    assert folder.endswith("models/smollm2_135m") and os.path.isfile(os.path.join(folder, "model.safetensors"))
    assert os.path.isfile(os.path.join(folder, "config.json"))


def test_a_remote_server_url_is_refused(monkeypatch):
    proc = run_entry("-m", "mip.serve", "--print", env={"MIP_SERVER_URL": "http://gpu-node-3:8000/v1"})
    assert proc.returncode != 0 and "not this machine" in proc.stderr


@pytest.mark.slow
def test_make_serve_answers_the_openai_models_endpoint():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mip.serve", "--port", str(port)], cwd=REPO, env=os.environ.copy(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as r:
                    assert r.status == 200 and b"smollm2" in r.read().lower()
                    return
            except OSError:
                time.sleep(1)
        pytest.fail("the server did not answer within 240 s")
    finally:
        proc.terminate()
        proc.wait(30)
