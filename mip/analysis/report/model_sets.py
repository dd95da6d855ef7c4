"""The models a pooled trace figure pools (§5.1 and its footnote 10).

The paper's trace analysis pools four reasoning models with full traces (DeepSeek-V4-Flash,
gpt-oss-120b, Qwen3.6-35B-A3B, Qwen3.6-Plus) and leaves out Grok 4.1 Fast, whose traces
are summaries. Each model config declares what its traces are (``traces:`` in
``conf/model/<name>.yaml``, :class:`mip.config.model.Traces`); pooled trace figures and
numbers (Fig. 5, Fig. 22) pool the ``full`` ones, or the models analyze.py's
``coverage.models`` names, and say in their titles which. Per-model figures are always drawn.

>>> pool = TracePool(declared={"a": "full", "b": "planted", "c": "full"})
>>> pool.members(["a", "b", "c"]), pool.describe(["a", "c"])
(['a', 'c'], 'pooled over the full-reasoning models a, c')
>>> pool.planted(["a", "b", "c"])
['b']
>>> TracePool(chosen=("b",)).describe(["b"])
'pooled over coverage.models b'

Exercised by ``pytest tests/test_report_sets.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from mip.config.model import Traces

def _schema_default(config) -> str:
    """``traces`` of the backend schema a model config extends (``/model_schema/<backend>@_here_``):
    a simulated model is ``planted`` without saying so."""
    from mip.models import schemas

    for entry in config.get("defaults", []) or []:
        if isinstance(entry, str) and entry.startswith("/model_schema/"):
            schema = schemas().get(entry.split("/")[2].split("@")[0])
            if schema is not None:
                return schema.__dataclass_fields__["traces"].default.value
    return Traces.absent.value


def declared_traces(model_dir: str | Path | None = None) -> dict[str, str]:
    """Each model config's name in ``model_dir`` (analyze.py passes its ``conf/model``; the
    package reads no ``conf/`` itself) and what its traces are (its schema's default where it
    says nothing); none without a folder."""
    folder = Path(model_dir).expanduser() if model_dir else None
    out = {}
    for path in sorted(folder.glob("*.yaml")) if folder is not None and folder.is_dir() else []:
        config = OmegaConf.load(path)
        kind = config.get("traces", None) or _schema_default(config)
        out[str(config.get("name", path.stem))] = Traces(kind).value
    return out


@dataclass(frozen=True)
class TracePool:
    """Which models pooled trace figures pool: ``chosen`` (coverage.models), else the models
    ``declared`` with full traces."""

    chosen: tuple[str, ...] | None = None
    declared: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, cfg) -> "TracePool":
        """From analyze.py's ``coverage`` config (:class:`mip.config.tool_config.CoverageConfig`)."""
        chosen = tuple(cfg.models) if cfg is not None and cfg.models is not None else None
        return cls(chosen, declared_traces(cfg.model_dir if cfg is not None else None))

    def members(self, models: Iterable[str]) -> list[str]:
        if self.chosen is not None:
            return sorted(m for m in set(models) if m in self.chosen)
        return sorted(m for m in set(models) if self.declared.get(m) == Traces.full.value)

    def planted(self, models: Iterable[str]) -> list[str]:
        """The models whose config declares planted traces (``traces: planted``, a simulated
        backend's default): the one test of "is this model simulated", never its name."""
        return sorted(m for m in set(models) if self.declared.get(m) == Traces.planted.value)

    def describe(self, members: list[str]) -> str:
        """The words a pooled figure's title carries."""
        how = "coverage.models" if self.chosen is not None else "the full-reasoning models"
        return f"pooled over {how} {', '.join(members)}"

    def select(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        """The rows of the pooled models (by registry name, ``base_model``) and the title words;
        with none, an empty frame and the reason for the report."""
        members = self.members(frame["base_model"].astype(str))
        if not members:
            kinds = ", ".join(f"{m}: {self.declared.get(m, 'absent')}"
                              for m in sorted(set(frame["base_model"].astype(str))))
            why = (f"coverage.models={list(self.chosen)} names none of them" if self.chosen is not None
                   else "none declares full reasoning traces")
            return frame.iloc[0:0], (f"no pooled figure: of the models here ({kinds}) {why}; the per-model figures "
                                     "show each. Pool others with coverage.models=[…].")
        return frame[frame["base_model"].astype(str).isin(members)], self.describe(members)
