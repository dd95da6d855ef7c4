"""Print stored records as a researcher reads them: the rebuilt prompt, every attempt's
output, reasoning trace, finish reason and usage, and the verdict.

    python -m mip.show 3f2a9c0d                      # a key, or its first characters, in the store
    python -m mip.show results/runs/2026-12-01/10-00-00   # a job (or sweep) folder: its records
    python -m mip.show results/store --full          # a store folder; --full prints whole prompts
    python -m mip.show results/runs/2026-12-01/10-00-00 verdict=incorrect pattern=majority_last seed=1   # some records

Keys are looked up in ``store=`` (default: ``paths.store_dir`` of ``--conf``'s ``paths/default.yaml``,
``results/store`` unless ``MIP_RESULTS_DIR`` moves it; the pool cache likewise ``paths.cache_dir``).
Records keep a prompt's hash, not its text: the prompt is rebuilt from the record, its task
config (the job folder's ``config.yaml``, else ``--conf``'s ``task/`` composed by name; the
default ``--conf`` is ``conf`` in the folder you are in, the repository's) and its pool
(the cached pool, a filtered pool under ``<results>/pools/``, or the pool built again), and
checked against the hash (:mod:`mip.tools.prompt_source`). Finding and printing the records is
:mod:`mip.tools.record_view`'s; this module is the command line and where its defaults come from.

>>> flags(["3f2a", "store=results/store", "pattern=random", "--full"])
['3f2a', '--store=results/store', 'pattern=random', '--full']

Exercised by ``pytest tests/test_show.py``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from mip.config.masking import printable
from mip.entry.shipped_tasks import shipped
from mip.tools import record_list
from mip.tools.prompt_source import Rebuilder, ShowError
from mip.tools.record_view import find, render

#: The options a user may also write as Hydra-style ``key=value`` words.
OPTIONS = ("store", "results_dir", "cache_dir", "conf")


def flags(argv: list[str]) -> list[str]:
    """The command line with ``store=…`` (and the other :data:`OPTIONS`) written as ``--store=…``."""
    return [f"--{a}" if a.split("=", 1)[0] in OPTIONS else a for a in argv]


def default_paths(conf_dir: Path) -> dict[str, str]:
    """The paths group every entry config takes (``conf_dir/paths/default.yaml``, the one home
    of where results and caches live), resolved: ``MIP_RESULTS_DIR`` and ``MIP_CACHE_DIR`` move them."""
    from omegaconf import OmegaConf

    file = conf_dir.expanduser() / "paths" / "default.yaml"
    hint = "pass --conf <the repository's conf folder>, or --store and --cache_dir"
    if not file.is_file():
        raise ShowError(f"{file} is missing: {hint}.")
    try:
        paths = OmegaConf.to_container(OmegaConf.create({"paths": OmegaConf.load(file)}), resolve=True)["paths"]
        return {"store_dir": str(paths["store_dir"]), "cache_dir": str(paths["cache_dir"])}
    except Exception as e:  # a malformed group: said, with what to pass instead
        raise ShowError(f"{file} does not give paths.store_dir and paths.cache_dir ({type(e).__name__}: {e}); "
                        f"{hint}.") from None


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(prog="python -m mip.show", description=__doc__.split("\n\n")[0])
    out.add_argument("target", help="a record key (or its first characters), a job or sweep folder, or a store folder")
    out.add_argument("--store", help="store to look keys up in (default: paths.store_dir, results/store unless "
                     "MIP_RESULTS_DIR moves it)")
    out.add_argument("--results_dir", help="where filtered pools live (default: the store's parent folder)")
    out.add_argument("--cache_dir", help="pool cache (default: paths.cache_dir, ~/.cache/mip unless MIP_CACHE_DIR "
                     "moves it)")
    out.add_argument("--conf", default="conf", help="config folder whose task/ names a key's task when no job "
                     "folder is given (default: conf, in the repository folder you run from)")
    out.add_argument("filters", nargs="*", metavar="key=value", help="only the records whose field has this value "
                     "(or one of key=a,b): " + ", ".join(record_list.FIELDS))
    out.add_argument("--full", action="store_true", help="print whole prompts, outputs and traces")
    out.add_argument("--all", action="store_true", help="print every record of a folder, not only the first")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(flags(sys.argv[1:] if argv is None else argv))
    paths = functools.cache(lambda: default_paths(Path(args.conf)))  # read only where a default is needed
    try:
        default_store = lambda: Path(args.store or paths()["store_dir"]).expanduser()  # noqa: E731
        try:
            wanted = record_list.filters(args.filters)
        except ValueError as e:  # an unknown filter key
            raise ShowError(str(e)) from None
        found, job_tasks, store, job_cache = find(args.target, default_store)
        records = record_list.matching(found, wanted)
        if not records:
            raise ShowError(f"none of the {len(found)} record(s) of {args.target} has {' '.join(args.filters)} "
                            f"(they hold {record_list.why_none(found, wanted)}).")
        if len(records) > 1:
            of = f" of {len(found)}, with {' '.join(args.filters)}" if wanted else ""
            print(printable(f"{len(records)} records{of}:\n{record_list.table(records)}"))
            if not args.all:
                print("The first one follows; --all prints each, `python -m mip.show <key>` any one.\n")
        results_dir = Path(args.results_dir).expanduser() if args.results_dir else store.parent
        cache_dir = Path(args.cache_dir or job_cache or paths()["cache_dir"]).expanduser()
        rebuild = Rebuilder(job_tasks, results_dir, cache_dir, shipped(args.conf))  # each pool loaded once
        for record in records if args.all else records[:1]:
            prompt, how = rebuild(record)
            if prompt is None:
                raise ShowError(how.removeprefix("not rebuilt: "))
            print(printable(render(record, prompt, args.full)) + "\n")  # a reply's control codes escaped
    except ShowError as e:
        print(printable(f"error: {e}"), file=sys.stderr)
        return 2
    return 0
