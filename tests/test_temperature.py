"""Temperature per paper model: each paper model's config states what the paper used,
what mip sends and what the provider accepts, with the page and date it was read; docs/models.md
lists the same, and the config sends what it says."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^# temperature: paper (?P<paper>\S+); sends (?P<sends>\S+); accepts (?P<accepts>.+); "
                  r"source (?P<url>https://\S+), read (?P<date>\d{4}-\d\d-\d\d)$", re.M)
ROW = re.compile(r"^\| `(?P<model>\w+)` \| (?P<paper>\S+) \| (?P<sends>\S+) \| (?P<accepts>.+) \| "
                 r"(?P<url>https://\S+) \| (?P<date>\d{4}-\d\d-\d\d) \|$", re.M)
PAPER = sorted(p for p in (REPO / "conf" / "model").glob("*.yaml") if "model_defaults: paper" in p.read_text())


def _stated(path: Path) -> dict[str, str]:
    found = LINE.findall(path.read_text())
    assert len(found) == 1, f"{path.name}: one '# temperature: paper …; sends …; accepts …; source URL, read DATE' line"
    return dict(zip(("paper", "sends", "accepts", "url", "date"), found[0]))


def _sent(path: Path) -> str:
    """What the config sends: its temperature key (null: left out), else its backend's default."""
    conf = yaml.safe_load(path.read_text())
    schema = next(d for d in conf["defaults"] if isinstance(d, str) and d.startswith("/model_schema/"))
    if "vllm" in schema:  # no key: mip.models.vllm_engine decodes greedily
        assert "temperature=0.0" in (REPO / "mip" / "models" / "vllm_engine.py").read_text()
        return "0"
    value = conf.get("temperature", 0.0)
    return "null" if value is None else f"{value:g}"


def test_the_paper_models_are_found():
    assert len(PAPER) >= 13 and any(p.stem == "gpt54_nano" for p in PAPER)


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_each_paper_model_states_its_temperature_with_source_and_date(path):
    stated = _stated(path)
    assert stated["paper"] == "0"  # the paper decodes at temperature 0
    assert date.fromisoformat(stated["date"]) <= date.today()
    assert stated["sends"] == _sent(path), f"{path.name} says it sends {stated['sends']}, sends {_sent(path)}"


def test_the_gpt5_family_sends_what_openai_accepts():
    """OpenAI's GPT-5 family accepts only its default temperature: the body leaves it out."""
    for path in PAPER:
        if "openai/gpt-5" in path.read_text():
            assert _sent(path) == "null" and "default" in _stated(path)["accepts"]


def test_minimax_sends_a_temperature_it_takes():
    """MiniMax takes (0, 1] only: 0 is refused (https://platform.minimax.io/docs/api-reference/text-chat)."""
    path = REPO / "conf" / "model" / "minimax_m27.yaml"
    assert 0 < float(_sent(path)) <= 1 and "(0, 1]" in _stated(path)["accepts"]


def test_deepseek_in_thinking_mode_sends_no_temperature_it_would_ignore():
    """DeepSeek's thinking mode ignores temperature without an error
    (https://api-docs.deepseek.com/guides/thinking_mode): the body leaves it out."""
    for stem in ("deepseek_v4_flash", "deepseek_v4_pro"):
        path = REPO / "conf" / "model" / f"{stem}.yaml"
        conf = yaml.safe_load(path.read_text())
        assert conf["reasoning"] == {"enabled": True} and _sent(path) == "null"
        assert "ignores" in _stated(path)["accepts"]


def test_docs_list_what_the_configs_state():
    rows = {m["model"]: {k: m[k] for k in ("paper", "sends", "accepts", "url", "date")}
            for m in ROW.finditer((REPO / "docs" / "models.md").read_text())}
    assert rows == {p.stem: _stated(p) for p in PAPER}
