"""report.html's search across records (search.html): its index holds every linked record in
shards written only when their rows change, and in headless Chromium opened from disk a trace
phrase finds exactly the records whose trace holds it, a verdict finds its records, and a result
opens its record's page.

The browser test needs what tests/test_html_report.py's does (Debian's chromium, selenium).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from mip.analysis.report import search_index
from mip.analysis.results import load_local

from .test_html_report import _analyze, _browser
from .test_simulated import run_one_seed


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The planted three-model sweep (arith, every pattern, seed 0: 54 records) and its report."""
    root = tmp_path_factory.mktemp("search")
    results = run_one_seed(root / "results")
    out = _analyze(root / "report", f"results=[{results / 'store'}]", f"paths.results_dir={results}", encode=False)
    return out, load_local([results / "store"]).set_index("key"), results


def _rows(folder: Path) -> list[list]:
    rows = []
    for shard in (folder / "search").glob("*.js"):
        if shard.name != "shards.js":
            text = shard.read_text(encoding="utf-8")
            rows += json.loads(text[len("mipSearch.add("):-len(");\n")])
    return rows


def _pages(folder: Path) -> set[str]:
    return {p.stem for p in (folder / "records").rglob("*.html")}


def test_the_index_holds_every_record_with_a_page_in_a_few_hundred_bytes_beyond_its_text(report):
    folder, frame, _ = report
    rows = _rows(folder)
    field = {name: i for i, name in enumerate(search_index.FIELDS)}
    assert {r[field["key"]] for r in rows} == _pages(folder) and len(rows) == len(frame) == 54
    for r in rows:
        key = r[field["key"]]
        assert r[field["href"]] == f"records/{key[:2]}/{key}.html" and (folder / r[field["href"]]).is_file()
        assert r[field["verdict"]] == frame.loc[key, "verdict"] and r[field["trace"]] == frame.loc[key, "reasoning"]
    size = sum(p.stat().st_size for p in (folder / "search").glob("*.js"))
    text = sum(len(r[field["trace"]].encode()) + len(r[field["output"]].encode()) for r in rows)
    assert (size - text) / len(rows) < 400, (size, text)  # beyond the trace and output text a row holds
    assert 'href="search.html"' in (folder / "report.html").read_text(encoding="utf-8")


def test_a_shard_is_written_again_only_when_its_rows_change(tmp_path):
    keys = [f"{a}{b}0011" for a in "ab" for b in "0123"]
    info = pd.DataFrame({"key": keys, "model": "m", "task": "t", "pattern": "random", "seed": 0,
                         "verdict": "correct", "answer": "x", "reasoning": "Instance 1: x.", "output": "{}"})
    info = info.set_index("key")
    (tmp_path / "assets").mkdir()
    written = {k: f"records/{k[:2]}/{k}.html" for k in keys}
    assert search_index.write(tmp_path, info, written) == 8
    inode = (tmp_path / "search" / "a0.js").stat().st_ino
    assert search_index.write(tmp_path, info, written) == 0
    info.loc["b20011", "verdict"] = "incorrect"
    assert search_index.write(tmp_path, info, written) == 1
    assert search_index.write(tmp_path, info.drop(index="b30011"), written) == 0
    assert not (tmp_path / "search" / "b3.js").exists() and (tmp_path / "search" / "a0.js").stat().st_ino == inode
    assert json.loads((tmp_path / "search" / "b2.js").read_text()[len("mipSearch.add("):-3])[0][6] == "incorrect"


def test_a_second_report_of_the_same_store_keeps_every_shard(report, tmp_path):
    """analyze.py again into the same folder, nothing changed: the new report's shards are the last
    report's files (kept across the swap, as record pages are), and still hold every record."""
    _, _, results = report
    args = (f"results=[{results / 'store'}]", f"paths.results_dir={results}")
    out = _analyze(tmp_path / "report", *args, encode=False)
    before = {p.name: p.stat().st_ino for p in (out / "search").glob("??.js")}
    again = _analyze(tmp_path / "report", *args, encode=False)
    assert {p.name: p.stat().st_ino for p in (again / "search").glob("??.js")} == before and before
    assert len(_rows(again)) == 54


def test_a_browser_searches_across_records_from_disk(report):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    folder, frame, _ = report
    phrase = "Instance 12: odd_number"
    holding = {k for k, t in frame["reasoning"].items() if phrase.lower() in (t or "").lower()}
    assert 0 < len(holding) < len(frame)  # a phrase that tells records apart
    incorrect = set(frame.index[frame["verdict"] == "incorrect"])
    browser = _browser()

    def found(count: int) -> list[str]:
        WebDriverWait(browser, 20).until(lambda b: b.find_element(By.ID, "found").text
                                         == f"{count} of {len(frame)} records match")
        rows = browser.find_elements(By.CSS_SELECTOR, "#results tbody tr")
        return [r.find_element(By.TAG_NAME, "td").text for r in rows]

    try:
        browser.get((folder / "report.html").as_uri())  # from disk: no server
        browser.find_element(By.ID, "search-link").click()
        assert browser.find_element(By.TAG_NAME, "h1").text == "Search across records"
        browser.find_element(By.ID, "q").send_keys(phrase)
        assert sorted(found(len(holding))) == sorted(k[:10] for k in holding)
        marks = browser.find_elements(By.CSS_SELECTOR, "#results mark.found")
        assert len(marks) == len(holding) and {m.text for m in marks} == {phrase}
        browser.find_element(By.ID, "q").clear()
        Select(browser.find_element(By.CSS_SELECTOR, "select[data-field=verdict]")).select_by_value("incorrect")
        assert sorted(found(len(incorrect))) == sorted(k[:10] for k in incorrect)
        browser.find_element(By.ID, "q").send_keys("last_k")  # "any text" reads the model, task and pattern too
        last = {k for k in incorrect if frame.loc[k, "model"] == "simulated_last_k"}
        assert 0 < len(last) < len(incorrect)
        shown = found(len(last))
        Select(browser.find_element(By.CSS_SELECTOR, "select[data-field=model]")).select_by_value("simulated_last_k")
        browser.find_element(By.ID, "q").clear()
        assert found(len(last)) == shown
        browser.find_element(By.CSS_SELECTOR, "#results tbody a").click()
        assert browser.find_element(By.ID, "verdict").text == "incorrect"
        assert re.search(r"records/\w\w/(\w+)\.html$", browser.current_url).group(1)[:10] == shown[0]
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        browser.quit()
