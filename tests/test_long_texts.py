"""A record page with a very long trace: it shows the trace's start and links the whole text, a file
beside the page; the search's index holds the trace's start only. An API model's reply through a
local OpenAI-compatible server that pads its trace (tests/fake_server.py)."""

from __future__ import annotations

import re

from mip.analysis.report import record_pages, search_index
from mip.analysis.results import load_local

from .conftest import compose, vary
from .fake_server import FakeServer
from .test_report_scale import N, P, _analyze


def test_a_long_trace_is_clipped_on_its_page_and_opens_whole(tmp_path):
    from mip.job import run_job

    with FakeServer(reasoning_shape="reasoning", trace_chars=3 * record_pages.CLIP_CHARS) as server:
        base = compose("model=smollm2_135m_server", f"model.base_url={server.base_url}", "model.model_id=fake-model",
                       "model.tokenizer=null", "model.context_window=100000", "task=arith", f"n={N}", f"p={P}",
                       "budget=20k", "progress=false", f"paths.results_dir={tmp_path}")
        assert run_job(vary(base, pattern="majority_first", seed=0), tmp_path / "jobs" / "one").ok
    frame = load_local([tmp_path / "store"]).set_index("key")
    out = _analyze(tmp_path / "store", tmp_path / "report", f"paths.results_dir={tmp_path}")
    assert len(frame) == 2
    for key, trace in frame["reasoning"].items():
        assert len(trace) > 2 * record_pages.CLIP_CHARS
        page = out / "records" / key[:2] / f"{key}.html"
        text = page.read_text(encoding="utf-8")
        link = re.search(rf'its first {record_pages.CLIP_CHARS} of {len(trace)} characters; '
                         r'<a href="([^"]+)">open it whole</a>', text)
        assert link, "no link to the whole trace"
        assert (page.parent / link.group(1)).read_text(encoding="utf-8") == trace
        assert page.stat().st_size < len(trace) // 2  # the page holds its start, not the whole
    shards = "".join(p.read_text(encoding="utf-8") for p in (out / "search").glob("??.js"))
    assert shards.count("Checking again.") <= 2 * search_index.TRACE_CHARS // len("Checking again.") + 2
