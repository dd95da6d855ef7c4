"""What the source's text may not hold: no reach into a framework's internals (Hydra's or
OmegaConf's private modules, ``hydra._internal`` or ``omegaconf._utils``, frame inspection to find
a caller), and no comment that cites the issue tracker instead of explaining the code (a clone
cannot read the tracker; history is in CHANGELOG.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INTERNALS = re.compile(r"\b(?:hydra|omegaconf)\._|_getframe")  # a private module of either, or a frame
TRACKER = re.compile(r"\bissues?\s+#?\d", re.IGNORECASE)


def hits(pattern: re.Pattern, folders: list[Path], globs: tuple[str, ...] = ("*.py",)) -> list[str]:
    """``path:line: text`` of each line of a file under ``folders`` (``.py`` unless ``globs`` say
    otherwise) that ``pattern`` finds."""
    paths = sorted({path for folder in folders for glob in globs for path in folder.rglob(glob)})
    return [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in paths
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_no_framework_internals_or_frame_inspection():
    found = hits(INTERNALS, [REPO / "mip", REPO / "hydra_plugins"])
    assert not found, "use Hydra's public API (plugins, callbacks, compose), not its internals:\n" + "\n".join(found)


def test_no_comment_cites_the_tracker():
    """Code, configs and the reference pages; CHANGELOG.md and benchmarks/RESULTS.md keep the history."""
    found = hits(TRACKER, [REPO / "mip", REPO / "tests", REPO / "hydra_plugins", REPO / "benchmarks"])
    found += hits(TRACKER, [REPO / "docs", REPO / "conf"], ("*.md", "*.yaml"))
    root = ["README.md", "Makefile", *(p.name for p in REPO.glob("*.py"))]
    found += [f"{name}:{n}: {line.strip()}" for name in root
              for n, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1)
              if TRACKER.search(line)]
    assert not found, ("say what the code does and why; the history goes to CHANGELOG.md:\n" + "\n".join(found))


@pytest.mark.parametrize("line, cited", [("# see {} 27", True), ('"""{} 43 case 5: a label', True),
                                         ("({}s 28 and 29)", True), ("the {} is the order", False),
                                         ("github.com/x/y/{}s/237", False)])
def test_the_tracker_check_finds_a_cite(line, cited):
    line = line.format("is" + "sue")  # spelled apart, so this file holds no cite itself
    assert bool(TRACKER.search(line)) is cited
