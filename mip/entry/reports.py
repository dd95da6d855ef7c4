"""A refused analysis leaves the out_dir as it found it.

Hydra writes into an analysis's out_dir (``.hydra/``, ``<program>.log``) before analyze.py's or
attribute.py's own code runs, so a refusal there came after an existing report's config and
log had been rewritten. The entry points now

1. refuse, before ``hydra.main`` runs, an out_dir that holds another analysis's output
   (:func:`check_out_dir`: the config composed once here, :func:`mip.analysis.out_dirs.taken`);
2. run ``main`` inside :func:`kept`: on any other refusal (exit 2: no records, slices that
   match none, missing weights) what Hydra and the analysis's note wrote there is put back as
   it was, and an out_dir made for the refused run is removed.

    if __name__ == "__main__":                      # analyze.py
        with kept(check_out_dir(sys.argv[1:], CONF, "analyze", analysis_inputs)):
            main()

Exercised by ``pytest tests/test_report_dirs.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mip.analysis.out_dirs import INPUTS
from mip.entry.cli import _NO_RUN, _refuse


def check_out_dir(args: list[str], conf_dir: str | os.PathLike, config_name: str,
                  inputs: Callable[[Any], dict]) -> Path | None:
    """The out_dir the command would write, after refusing (one line, exit 2) one that holds
    another analysis's output; None where no analysis runs (``--help``, ``--cfg``, ``-m``) or the
    config does not compose (Hydra then says why, as before)."""
    from omegaconf import OmegaConf

    from mip.analysis.out_dirs import taken
    from mip.entry.config_store import compose_conf

    if _NO_RUN & set(args) or {"-m", "--multirun"} & set(args):
        return None
    try:
        cfg = OmegaConf.to_object(compose_conf(conf_dir, *args, config_name=config_name))
        folder, wanted = Path(str(cfg.out_dir)).expanduser(), inputs(cfg)
    except Exception:  # noqa: BLE001 - Hydra's own composition says what is wrong
        return None
    if why := taken(folder, wanted):
        _refuse(why)
    return folder


def _written_by_hydra(folder: Path) -> list[Path]:
    """The files a run writes into its out_dir before its work: Hydra's ``.hydra/`` configs and
    log, and the note of what it analyses (mip.analysis.out_dirs.INPUTS)."""
    hydra = folder / ".hydra"
    return [*(hydra.iterdir() if hydra.is_dir() else ()), *folder.glob("*.log"), *folder.glob(INPUTS)]


@contextlib.contextmanager
def kept(folder: Path | None) -> Iterator[None]:
    """Put back ``folder``'s ``.hydra/`` files and logs as they were when a refusal (exit 2)
    ends the run inside; remove the folder where it did not exist and holds only what Hydra
    wrote. ``folder`` None: nothing to keep."""
    if folder is None:
        yield
        return
    existed = folder.is_dir()
    before = {p: p.read_bytes() for p in _written_by_hydra(folder)} if existed else {}
    try:
        yield
    except SystemExit as e:
        if e.code == 2:
            _put_back(folder, existed, before)
        raise


def _put_back(folder: Path, existed: bool, before: dict[Path, bytes]) -> None:
    try:
        if not existed:
            if folder.is_dir() and all(p.name in (".hydra", INPUTS) or p.suffix == ".log" for p in folder.iterdir()):
                shutil.rmtree(folder)
            return
        for path in _written_by_hydra(folder):
            if path not in before:
                path.unlink()
        for path, data in before.items():
            if not path.is_file() or path.read_bytes() != data:
                path.write_bytes(data)
    except OSError as e:  # the refusal is what matters; say what could not be put back
        print(f"warning: could not restore {folder} ({e})", file=sys.stderr)
