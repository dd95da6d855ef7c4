"""Serve the embedded model over an OpenAI-compatible API, for ``model=smollm2_135m_server``.

    python -m mip.serve            # (or `make serve`) then, in another shell:
    python run.py model=smollm2_135m_server

The command line of :func:`mip.tools.embedded_server.server_command`, from the model configs
``model=smollm2_135m`` and ``model=smollm2_135m_server`` composed from ``--conf`` (default: ``conf``
in the folder you are in, the repository's). ``--print`` prints the command instead of starting it.

Exercised by ``pytest tests/test_serve_command.py tests/test_package.py``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mip.entry.config_store import compose_conf
from mip.tools.embedded_server import server_command


def command_line(conf_dir: str | Path, port: int | None = None) -> tuple[list[str], str]:
    """The ``transformers serve`` command line and the URL the server config will call, from
    the model configs of the config folder ``conf_dir``."""
    try:
        embedded = compose_conf(conf_dir, "model=smollm2_135m")
        server = compose_conf(conf_dir, "model=smollm2_135m_server").model
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    return server_command(embedded, server, port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mip.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int,
                        help="port to listen on (default: the port of the server config's base_url)")
    parser.add_argument("--print", action="store_true", help="print the command, do not start the server")
    parser.add_argument("--conf", default="conf", help="the config folder with model/smollm2_135m*.yaml "
                        "(default: conf, in the repository folder you run from)")
    args = parser.parse_args(argv)
    command, base_url = command_line(args.conf, args.port)
    if args.print:
        print(" ".join(command))
        return 0
    hint = "" if base_url.endswith(":8000/v1") else f" MIP_SERVER_URL={base_url}"
    print(f"Serving SmolLM2-135M at {base_url} (Ctrl-C stops it). In another shell:\n"
          f"  {hint.strip() + ' ' if hint else ''}python run.py model=smollm2_135m_server\n"
          f"$ {' '.join(command)}", flush=True)
    os.execv(command[0], command)  # the server replaces this process: Ctrl-C reaches it directly
    return 0  # not reached
