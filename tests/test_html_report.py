"""report.html: every number of the core tables opens the experiments it was computed from, and
each experiment its record page; from the local store and from W&B offline runs alike; and, in
headless Chromium opened from disk, a click from Table 2 down to a record.

The browser test needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them)
and the ``selenium`` package (the dev extra); without them it is skipped, saying which is missing.
Its screenshots of the three levels land in ``MIP_SCREENSHOTS`` (default: the test's tmp folder).
"""

from __future__ import annotations

import os
import re
import shutil
from html import escape
from pathlib import Path

import pandas as pd
import pytest

from mip.analysis.analyze import analyze
from mip.analysis.report import figures
from mip.job import run_job
from mip.entry.shipped_tasks import shipped
from mip.tools.prompt_source import Rebuilder

from .conftest import REPO, compose, unencoded, vary
from .test_simulated import MODELS, N, P, run_one_seed

TAG = f"n{N}_p{P}"


def _analyze(out: Path, *extra: str, encode: bool = True) -> Path:
    cfg = compose(f"out_dir={out}", f"core=[{N},{P}]", f"coverage.model_dir={REPO / 'conf' / 'model'}", *extra,
                  config_name="analyze")
    with pytest.MonkeyPatch.context() as patch:
        if not encode:  # the W&B report's figures are not what is tested here
            patch.setattr(figures, "save", unencoded)
        return analyze(cfg, prompts=Rebuilder.maker(cfg.paths.cache_dir, shipped(REPO / "conf"))).parent  # as analyze.py does


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The planted three-model sweep (arith, every pattern, seed 0), logged to the store and to
    W&B offline runs, and its report from each."""
    root = tmp_path_factory.mktemp("html")
    with pytest.MonkeyPatch.context() as patch:
        for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_ARTIFACT_DIR"):
            patch.setenv(var, str(root / "wandb-home" / var.lower()))
        patch.delenv("WANDB_API_KEY", raising=False)
        patch.delenv("WANDB_MODE", raising=False)
        patch.setenv("WANDB_SILENT", "true")
        results = run_one_seed(root / "results", logger="wandb")
        local = _analyze(root / "local", f"results=[{results / 'store'}]", f"paths.results_dir={results}")
        remote = _analyze(root / "wandb", "source=wandb", f"results=[{results / 'jobs'}]", encode=False)
    return local, remote


def _links(page: Path) -> dict[str, str]:
    """The anchors of a page: link text → href (the first of each text)."""
    out: dict[str, str] = {}
    for href, text in re.findall(r'<a href="([^"]+)">([^<]*)</a>', page.read_text(encoding="utf-8")):
        out.setdefault(text, href)
    return out


def _row(report: Path, table: str, first: str) -> str:
    html = (report / "report.html").read_text(encoding="utf-8")
    body = html[html.index(f'id="t-{table}"'):]
    body = body[:body.index("</table>")]
    return next(r for r in body.split("<tr>") if r.startswith(f"<td>{first}</td>"))


def _list_keys(report: Path, href: str) -> list[str]:
    page = (report / href).read_text(encoding="utf-8")
    return re.findall(r'href="\.\./records/\w\w/(\w+)\.html"', page)


def test_every_linked_number_lists_the_experiments_it_counts(reports):
    """Each list holds exactly the experiments its cell counts, read from the report's own tables."""
    local, _ = reports
    table2 = pd.read_csv(local / "tables" / f"table2_numbers_{TAG}.csv").set_index("model")
    patterns = pd.read_csv(local / "tables" / f"patterns_by_model_{TAG}.csv")
    bins = pd.read_csv(local / "tables" / f"table3_coverage_{TAG}.csv")
    for model in MODELS:
        row = _row(local, f"table2_{TAG}", model)
        acc = re.search(r'<td><a href="(lists/[^"]+)">[\d.]+</a></td>', row).group(1)  # the first link: Acc (%)
        assert len(_list_keys(local, acc)) == table2.loc[model, "experiments"] == 18
        best, worst = table2.loc[model, "best"], table2.loc[model, "worst"]
        delta = re.findall(r'<td><a href="(lists/[^"]+)">[\d.]+†?</a></td>', row)[1]  # Δ (pp)
        listed = (local / delta).read_text(encoding="utf-8")
        assert len(_list_keys(local, delta)) == sum(6 if x == "random" else 2 for x in (best, worst))
        assert set(re.findall(r'data-pattern="(\w+)"', listed)) == {best, worst}
        for pattern, sub in patterns[patterns["model"] == model].groupby("pattern"):
            href = re.search(rf'<td>{model}</td><td>{pattern}</td><td><a href="([^"]+)"',
                             (local / "report.html").read_text(encoding="utf-8")).group(1)
            assert len(_list_keys(local, href)) == int(sub["experiments"].iloc[0]) == (6 if pattern == "random" else 2)
        for _, b in bins[bins["model"] == model].iterrows():
            text = (local / "report.html").read_text(encoding="utf-8")
            found = re.search(rf'<td>{model}</td><td>smoke</td><td>unfiltered</td><td>{re.escape(escape(b["bin"]))}</td>'
                              r'<td><a href="([^"]+)"', text)
            if b["experiments"]:
                assert len(_list_keys(local, found.group(1))) == b["experiments"], (model, b["bin"])
        numbers = _row(local, f"table2_numbers_{TAG}", model)  # the unrounded numbers link the same lists
        assert _list_keys(local, re.search(r'<td><a href="(lists/[^"]+)">', numbers).group(1)) == _list_keys(local, acc)
    pages = list((local / "records").rglob("*.html"))
    assert len(pages) == 3 * 18
    for page in [local / "report.html", *pages[:5], *list((local / "lists").glob("*.html"))[:5]]:
        assert not re.search(r'(src|href)="(https?:)?//', page.read_text(encoding="utf-8")), page  # nothing online


def test_a_record_page_shows_the_checked_prompt_every_attempt_and_the_mentioned_ids(reports):
    local, _ = reports
    row = _row(local, f"table2_{TAG}", "simulated_first_k")
    href = re.search(r'<a href="(lists/[^"]+)" title="majority_last">last</a>', row).group(1)
    key = _list_keys(local, href)[0]
    page = (local / "records" / key[:2] / f"{key}.html").read_text(encoding="utf-8")
    assert "rebuilt from the record and its pool; hash checked" in page and "Instance 1:" in page
    assert 'class="verdict-incorrect">incorrect</span>' in page  # the first 9 under majority_last: minority
    assert "mentions <strong>9 of 20</strong>" in page
    assert re.findall(r'<span class="on">(\d+)</span>', page) == [str(i) for i in range(1, 10)]
    marks = {int(x) for x in re.findall(r'<mark class="id" title="ID ([\d, ]+)">', page) for x in x.split(", ")}
    assert marks == set(range(1, 10))
    assert "Attempt 1 of 1 (counted)" in page


def test_report_html_opens_on_its_contents_with_the_choices_folded(reports):
    """A table of contents first, Table 2 its first table, every item linked; the Choices text folded away."""
    local, _ = reports
    html = (local / "report.html").read_text(encoding="utf-8")
    toc = html[html.index('<nav id="toc">'):html.index("</nav>", html.index('<nav id="toc">'))]
    assert html.index('<nav id="toc">') < html.index('<table class="data"')
    items = re.findall(r'<a href="#([^"]+)">', toc)
    assert items.index(f"table2_{TAG}") < items.index(f"reference_c4") and "choices" in items
    assert all(f'id="{i}"' in html for i in items)
    assert re.search(r'<details id="choices"><summary>.*?</summary><ul><li>Every table', html, flags=re.S)


def _cells(report: Path) -> list[tuple[str, str, str]]:
    """Every linked cell of report.html: its table, its text and its list."""
    html = (report / "report.html").read_text(encoding="utf-8")
    out = []
    for table, body in re.findall(r'<table class="data" id="t-([^"]+)">(.*?)</table>', html, flags=re.S):
        out += [(table, text, href) for href, text in re.findall(r'<a href="(lists/[^"]+)"[^>]*>([^<]*)</a>', body)]
    assert len({t for t, _, _ in out}) >= 6, out  # Table 2, its numbers, intervals, patterns, Table 3, mention rates
    return out


def test_the_wandb_report_links_the_same_experiments(reports):
    """A report from W&B offline runs has the same lists, and record pages from the W&B rows
    (the prompt as logged, said to be unchecked)."""
    local, remote = reports
    names = sorted(p.name for p in (local / "lists").glob("*.html"))
    assert names and names == sorted(p.name for p in (remote / "lists").glob("*.html"))
    for name in names:
        assert _list_keys(local, f"lists/{name}") == _list_keys(remote, f"lists/{name}"), name
    assert _cells(local) == _cells(remote)  # the same cells link, to the same list files
    page = next((remote / "records").rglob("*.html")).read_text(encoding="utf-8")
    assert "as logged to W&amp;B; the W&amp;B table keeps no prompt hash" in page and "Instance 1:" in page


class _File:
    """A run's file as ``wandb.Api`` serves it: ``download`` writes it under ``root`` by its name and opens it."""

    def __init__(self, path: Path, name: str):
        self.path, self.name = path, name

    def download(self, replace: bool = False, root: str = ".", exist_ok: bool = False):
        target = Path(root) / self.name
        assert replace or exist_ok or not target.exists(), target
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.path, target)
        return open(target, encoding="utf-8")


class _Run:
    """An offline run folder (``offline-run-<time>-<id>``) as ``wandb.Api`` serves a synced run."""

    def __init__(self, folder: Path):
        self.id, self._files = folder.name.rsplit("-", 1)[-1], folder / "files"

    def files(self):
        return [_File(p, p.relative_to(self._files).as_posix()) for p in sorted(self._files.rglob("*")) if p.is_file()]


class _Api:
    """A stand-in for ``wandb.Api``: the runs of a project are the offline run folders under ``root``."""

    def __init__(self, root: Path):
        self.root, self.asked = root, []

    def runs(self, path: str, filters: dict | None = None):
        self.asked.append((path, filters))
        return [_Run(f) for f in sorted(self.root.rglob("offline-run-*")) if f.is_dir()]


def test_the_wandb_api_report_links_the_same_experiments(reports, tmp_path, monkeypatch):
    """``source=wandb wandb.project=…``: the tables and record pages come through ``wandb.Api``
    (here a stand-in serving the planted sweep's own offline run files, downloaded as the API
    downloads them), and report.html links the same cells to the same experiments as from the store."""
    import wandb

    from mip.analysis import results as loaded

    local, _ = reports
    api = _Api(local.parent / "results" / "jobs")
    monkeypatch.setattr(wandb, "Api", lambda *a, **k: api)
    monkeypatch.setattr(loaded, "WANDB_DOWNLOADS", tmp_path / "downloads")
    remote = _analyze(tmp_path / "api", "source=wandb", "wandb.project=mip-test", "wandb.group=planted", encode=False)
    assert api.asked == [("mip-test", {"group": "planted"})] * len(api.asked) and api.asked
    assert list((tmp_path / "downloads").rglob("*.table.json"))  # read as downloaded, not from the run folders
    names = sorted(p.name for p in (local / "lists").glob("*.html"))
    assert names and names == sorted(p.name for p in (remote / "lists").glob("*.html"))
    for name in names:
        assert _list_keys(local, f"lists/{name}") == _list_keys(remote, f"lists/{name}"), name
    assert _cells(local) == _cells(remote)  # the same cells link, to the same list files
    key = _list_keys(remote, f"lists/{names[0]}")[0]
    page = (remote / "records" / key[:2] / f"{key}.html").read_text(encoding="utf-8")
    assert "as logged to W&amp;B" in page and "Instance 1:" in page


def test_table_5_links_each_prompt_variants_experiments(tmp_path):
    """Beyond the core: Table 5's numbers (per model, prompt variant and budget) link down too."""
    results = tmp_path / "results"
    for variant in ("standard", "hint"):
        base = compose("model=simulated_last_k", "task=arith", f"n={N}", f"p={P}", "budget=smoke", "progress=false",
                       f"prompt_variant={variant}", f"paths.results_dir={results}")
        for pattern in ("majority_first", "majority_last"):
            for seed in (0, 1):
                assert run_job(vary(base, pattern=pattern, seed=seed), results / "jobs" / f"{variant}-{pattern}-{seed}").ok
    report = _analyze(tmp_path / "out", f"results=[{results / 'store'}]", f"paths.results_dir={results}", encode=False)
    for variant in ("standard", "hint"):
        row = _row(report, f"table5_prompt_variants_{TAG}_unfiltered", f"simulated_last_k</td><td>{variant}")
        links = re.findall(r'<td><a href="(lists/[^"]+)">', row)
        experiments, delta = links[0], links[5]  # experiments, valid, sets, acc, acc_sd, delta
        assert len(_list_keys(report, experiments)) == len(_list_keys(report, delta)) == 8  # 2 patterns × 2 seeds × 2 labels
        for key in _list_keys(report, experiments):
            assert f"· {variant} ·" in (report / "records" / key[:2] / f"{key}.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------ in a browser


def _browser():
    """A headless Chromium from Debian's packages driven by Selenium, or the reason there is none."""
    try:
        from selenium import webdriver
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def test_a_browser_clicks_from_table_2_down_to_a_record(reports, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.expected_conditions import presence_of_element_located, text_to_be_present_in_element
    from selenium.webdriver.support.ui import WebDriverWait

    local, _ = reports
    shots = Path(os.environ.get("MIP_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    browser = _browser()
    try:
        browser.get((local / "report.html").as_uri())  # from disk: no server
        table = browser.find_element(By.ID, f"t-table2_{TAG}")
        row = next(r for r in table.find_elements(By.TAG_NAME, "tr") if r.text.startswith("simulated_first_k"))
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", table)
        browser.save_screenshot(str(shots / "1-table.png"))
        row.find_element(By.CSS_SELECTOR, 'a[title="majority_last"]').click()  # shown by its short name
        assert "pattern majority_last" in browser.find_element(By.TAG_NAME, "h1").text
        assert "π⁺ / π⁻: majority_last" in browser.find_element(By.ID, "value").text
        rows = browser.find_elements(By.CSS_SELECTOR, "#experiments tbody tr")
        assert len(rows) == 2 and all("majority_last" in r.text for r in rows)
        count = browser.find_element(By.ID, "count")
        assert count.text == "2 of 2 experiments shown"
        verdict = browser.find_element(By.CSS_SELECTOR, "select[data-col=verdict]")
        assert [o.text for o in verdict.find_elements(By.TAG_NAME, "option")] == ["all", "incorrect"]
        browser.save_screenshot(str(shots / "2-list.png"))
        box = browser.find_element(By.ID, "list-search")  # a text search over every column
        second = rows[1].find_element(By.TAG_NAME, "a").text
        box.send_keys("no such text")
        assert count.text == "0 of 2 experiments shown"
        box.send_keys(Keys.BACKSPACE * 40)
        box.send_keys(second)
        assert count.text == "1 of 2 experiments shown"
        box.send_keys(Keys.BACKSPACE * 40)
        assert count.text == "2 of 2 experiments shown"

        def keys() -> list[str]:
            return [r.find_elements(By.TAG_NAME, "td")[11].text
                    for r in browser.find_elements(By.CSS_SELECTOR, "#experiments tbody tr")]

        head = browser.find_elements(By.CSS_SELECTOR, "#experiments th")[11]  # sort by the record's key
        head.click()
        assert keys() == sorted(keys())
        head.click()  # and the other way
        assert keys() == sorted(keys(), reverse=True)
        rows = browser.find_elements(By.CSS_SELECTOR, "#experiments tbody tr")
        rows[0].find_element(By.TAG_NAME, "a").click()
        assert browser.find_element(By.ID, "verdict").text == "incorrect"
        browser.find_element(By.CSS_SELECTOR, "#prompt summary").click()  # the prompt, collapsed until asked
        assert "Instance 1:" in browser.find_element(By.CSS_SELECTOR, "#prompt pre").text
        on = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#mentioned span.on")]
        assert on == [str(i) for i in range(1, 10)]
        marked = {e.text for e in browser.find_elements(By.CSS_SELECTOR, "pre.trace mark.id")}
        assert marked and {int(x) for m in marked for x in re.findall(r"\d+", m)} == set(range(1, 10))
        search = browser.find_element(By.ID, "trace-search")
        search.send_keys("Instance")
        WebDriverWait(browser, 10).until(lambda b: b.find_element(By.ID, "search-count").text)
        assert re.fullmatch(r"\d+ match(es)?", browser.find_element(By.ID, "search-count").text)
        search.clear()
        search.send_keys("Instance 9")  # "9" is marked as an ID, its own element: still one match
        WebDriverWait(browser, 10).until(text_to_be_present_in_element((By.ID, "search-count"), "1 match"))
        assert browser.find_element(By.ID, "search-count").text == "1 match"
        assert browser.find_element(By.ID, "mentioned-ranges").text == "1-9"
        browser.find_element(By.CSS_SELECTOR, "#prompt summary").click()
        search.clear()
        search.send_keys("majority")  # the trace's own words, found and marked
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(shots / "3-record.png"))
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        # Fig. 21's numbers: the first-9 model under majority_last mentions ID 9, never ID 10.
        browser.get((local / "report.html").as_uri())
        rates = browser.find_element(By.ID, f"t-mention_rates_{TAG}_smoke_unfiltered")
        row = next(r for r in rates.find_elements(By.TAG_NAME, "tr") if r.text.startswith("simulated_first_k majority_last"))
        cells = row.find_elements(By.TAG_NAME, "td")
        for i, rate, count in ((9, "1", "mentioned by 2 of them (100.0 %)"), (10, "0", "mentioned by 0 of them (0.0 %)")):
            assert cells[2 + i].text == rate
            browser.execute_script("arguments[0].click()", cells[2 + i].find_element(By.TAG_NAME, "a"))
            # A script's click does not wait for the list to load: wait for its count (missing meanwhile).
            WebDriverWait(browser, 20).until(text_to_be_present_in_element(
                (By.ID, "count"), f"2 of 18 experiments shown; ID {i} is {count}"))
            assert browser.find_element(By.ID, "count").text == f"2 of 18 experiments shown; ID {i} is {count}"
            browser.back()
            rates = WebDriverWait(browser, 20).until(presence_of_element_located(
                (By.ID, f"t-mention_rates_{TAG}_smoke_unfiltered")))
            row = next(r for r in rates.find_elements(By.TAG_NAME, "tr")
                       if r.text.startswith("simulated_first_k majority_last"))
            cells = row.find_elements(By.TAG_NAME, "td")
        errors += [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        browser.quit()
