"""``python -m mip.summary <job, sweep or store folder>``: what the jobs under a folder did, as
:func:`mip.tools.run_summary.summarise` writes it, with its stored text's control codes escaped.

    python -m mip.summary results/sweeps/2026-11-30/10-00-00     # a sweep folder (or a job folder, or a store)

>>> main([])  # no folder: the usage line (on stderr), exit 2
2

Exercised by ``pytest tests/test_cli.py tests/test_show.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mip.analysis.folders import WHAT_TO_PASS, FolderError, open_folder
from mip.config.masking import printable
from mip.tools.run_summary import summarise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: python -m mip.summary <job, sweep or store folder>   (e.g. results/sweeps/2026-11-30/10-00-00)",
              file=sys.stderr)
        return 2
    folder = Path(argv[0])
    try:
        opened = open_folder(folder) if folder.is_dir() else None
    except FolderError as e:
        print(printable(f"error: {e}"), file=sys.stderr)
        return 2
    if opened is None:
        print(printable(f"error: {folder} is not a folder; {WHAT_TO_PASS}."), file=sys.stderr)
        return 2
    print(printable(summarise(opened)))  # stored text (an error quoting a reply) with its control codes escaped
    return 0
