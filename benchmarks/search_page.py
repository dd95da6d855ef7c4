"""report.html's search across records (search.html) on a study-sized index, in headless Chromium.

    python benchmarks/search_page.py [--records 20000] [--trace-chars 3000]

Writes the search index of ``--records`` synthetic records (15 models, traces of ``--trace-chars``
characters of ``Instance i: label.`` lines, as a long trace reads) with
:func:`mip.analysis.report.search_index.write`, then again with nothing changed, and opens
``search.html`` from disk in headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
``selenium``): the seconds until every record is loaded and listed, until a trace phrase's matches
are listed after it is typed (the page waits 120 ms after the last key), and until a verdict filter's
are. Also the index's bytes a record. What should show: a whole study loads in seconds and a search
answers well under a second.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from mip.analysis.report import search_index  # noqa: E402


def frame(records: int, trace_chars: int) -> pd.DataFrame:
    rng = random.Random(0)
    keys = [f"{rng.getrandbits(96):024x}" for _ in range(records)]
    lines = (f"Instance {rng.randint(1, 2000)}: {rng.choice(('positive', 'negative'))}." for _ in iter(int, 1))
    traces = [" ".join(next(lines) for _ in range(trace_chars // 25)) for _ in range(records)]
    return pd.DataFrame({"key": keys, "model": [f"model_{i % 15}" for i in range(records)], "task": "sentiment",
                         "pattern": "random", "seed": 0, "answer": "positive", "n": 2000, "p": 0.55, "budget": "20k",
                         "verdict": ["incorrect" if i % 3 == 0 else "correct" for i in range(records)],
                         "prompt_variant": "standard", "reasoning": traces, "output": '{"answer": "positive"}'})


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def until(page, text: str) -> float:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    start = time.monotonic()
    WebDriverWait(page, 120, poll_frequency=0.02).until(lambda p: p.find_element(By.ID, "found").text.startswith(text))
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--trace-chars", type=int, default=3_000)
    args = parser.parse_args()
    info = frame(args.records, args.trace_chars)
    root = Path(tempfile.mkdtemp(prefix="mip-search-"))
    (root / "assets").mkdir()
    shutil.copyfile(REPO / "mip" / "analysis" / "report" / "templates" / "report.css", root / "assets" / "report.css")
    links = {k: f"records/{k[:2]}/{k}.html" for k in info["key"]}
    for run in ("first", "again, nothing changed"):
        start = time.process_time()
        shards = search_index.write(root, info.set_index("key"), links)
        print(f"index written ({run}): {shards} shards, {time.process_time() - start:.2f} s CPU")
    size = sum(p.stat().st_size for p in (root / "search").glob("*.js"))
    print(f"index: {size / 1e6:.1f} MB, {size / args.records:.0f} bytes a record (trace text up to "
          f"{search_index.TRACE_CHARS} characters included)")
    heads = info["reasoning"].str[:search_index.TRACE_CHARS].str.lower()
    phrase = "Instance 1999: negative"
    page = browser()
    try:
        from selenium.webdriver.common.by import By

        start = time.monotonic()
        page.get((root / "search.html").as_uri())  # returns once the page and its scripts have loaded
        until(page, f"{args.records} of {args.records}")
        print(f"opened, loaded and listed: {time.monotonic() - start:.2f} s")
        start = time.monotonic()
        page.find_element(By.ID, "q").send_keys(phrase)
        until(page, f"{heads.str.contains(phrase.lower()).sum()} of")
        print(f"'{phrase}' typed and its records listed: {time.monotonic() - start:.2f} s")
        page.execute_script("const s = document.querySelector('select[data-field=verdict]'); s.value = 'incorrect';"
                            "s.dispatchEvent(new Event('change'))")
        wanted = (heads.str.contains(phrase.lower()) & (info["verdict"] == "incorrect")).sum()
        print(f"and verdict incorrect: {until(page, f'{wanted} of'):.2f} s")
    finally:
        page.quit()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
