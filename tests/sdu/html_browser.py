#!/usr/bin/env python3
"""Opens a page of `sdu --html` in headless Chromium (selenium and
chromedriver) and checks it as a person would use it.

    html_browser.py check PAGE SCREENSHOT EXPECTED DIR
        Screenshots the page (PNG), hovers the rectangle of DIR and checks
        that the tooltip shows DIR's four figures, clicks it and checks the
        zoom (breadcrumb, caption, table of the five largest) and the
        tooltip of an entry inside it. EXPECTED is a JSON object
        {path: [total, exclusive, shared, reclaimable]} from `sdu --json`.
    html_browser.py marks PAGE MARK
        Checks that the table of the largest entries marks each bound
        Reclaimable with MARK before its figure, and that the legend
        explains MARK and no other.
    html_browser.py measure PAGE N
        Opens PAGE N times and prints, as JSON, the time from the
        navigation's start to the page's `sdu-ready` mark (ms) and the
        page's size.

Exit status 77 when selenium or Chromium is missing (the cargo test
decides whether that skips or fails), 1 when a check fails.
"""

import json
import os
import re
import shutil
import statistics
import sys

MISSING = 77


def driver():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        print(f"selenium is not installed: {e}", file=sys.stderr)
        sys.exit(MISSING)
    browser = shutil.which("chromium") or "/usr/bin/chromium"
    chromedriver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not (os.path.exists(browser) and os.path.exists(chromedriver)):
        print("chromium or chromedriver is not installed", file=sys.stderr)
        sys.exit(MISSING)
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1400,900",
              "--force-device-scale-factor=1"]:
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(chromedriver), options=opts)


def wait_ready(d):
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(d, 30).until(
        lambda d: d.execute_script(
            "return document.documentElement.getAttribute('data-ready')") == "1")


def figures_in(text):
    """The byte counts the tooltip shows, by figure name."""
    out = {}
    for name in ["Total", "Exclusive", "Shared", "Reclaimable"]:
        m = re.search(name + r"\s*\n?\s*\S+ \(([\d,]+) bytes\)", text)
        if m:
            out[name] = int(m.group(1).replace(",", ""))
    return out


def check_tip(d, cell, path, want):
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(d).move_to_element(cell).perform()
    tip = d.find_element("id", "tip")
    if not tip.is_displayed():
        fail(f"no tooltip over {path}")
    text = tip.text
    if text.splitlines()[0] != path:
        fail(f"the tooltip names {text.splitlines()[0]!r}, not {path!r}:\n{text}")
    got = figures_in(text)
    names = ["Total", "Exclusive", "Shared", "Reclaimable"]
    if [got.get(n) for n in names] != want:
        fail(f"the tooltip of {path} shows {got}, sdu --json says {want}:\n{text}")


def cell_of(d, path):
    return d.execute_script(
        "var p = arguments[0];"
        "return Array.from(document.querySelectorAll('#cells g.cell'))"
        ".find(function (g) { return sduPath(+g.dataset.i) === p; }) || null;", path)


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(page, shot, expected, target):
    want = json.load(open(expected))
    d = driver()
    try:
        d.get("file://" + os.path.abspath(page))
        wait_ready(d)
        d.save_screenshot(shot)
        # Every drawn cell's path is an entry sdu reported (or "other").
        paths = d.execute_script(
            "return Array.from(document.querySelectorAll('#cells g.cell'))"
            ".map(function (g) { return sduPath(+g.dataset.i); });")
        unknown = [p for p in paths if p not in want and not p.endswith("/other")]
        if unknown:
            fail(f"cells of no entry: {unknown}")
        cell = cell_of(d, target)
        if cell is None:
            fail(f"no rectangle for {target} among {paths}")
        check_tip(d, cell, target, want[target])
        cell.click()
        current = d.find_element("css selector", "#crumbs [aria-current]").text
        if current != target.rsplit("/", 1)[-1]:
            fail(f"after the click the breadcrumb ends in {current!r}")
        caption = d.find_element("id", "map-label").text
        if f"Treemap of {target} " not in caption:
            fail(f"after the click the caption says {caption!r}")
        rows = d.find_elements("css selector", "#top tbody tr")
        heads = d.find_elements("css selector", "#top tbody th[scope=row]")
        inside = sorted(
            (p for p in want if p.startswith(target + "/") and "/" not in p[len(target) + 1:]),
            key=lambda p: (-want[p][0], p))
        if not 0 < len(rows) <= 5 or len(heads) != len(rows):
            fail(f"the table has {len(rows)} rows, {len(heads)} row headers")
        first = inside[0]
        if heads[0].text != first.rsplit("/", 1)[-1]:
            fail(f"the table's first row is {heads[0].text!r}, not {first!r}")
        d.save_screenshot(os.path.splitext(shot)[0] + "-zoomed.png")
        inner = cell_of(d, first)
        if inner is None:
            fail(f"no rectangle for {first} after zooming into {target}")
        check_tip(d, inner, first, want[first])
        # The breadcrumb leads back.
        d.find_element("css selector", "#crumbs button").click()
        if d.find_element("css selector", "#crumbs [aria-current]").text == current:
            fail("the breadcrumb did not lead back")
        growth(d, page, target)
        print(f"ok: {len(paths)} cells; {target} and {first} as sdu --json says; growth")
    finally:
        d.quit()


def growth(d, page, target):
    """The page with an earlier Total per entry (as `--compare` gives it):
    every entry had half its Total. The growth colouring is offered,
    colours differently, and the tooltip of TARGET says what it had."""
    text = open(page, encoding="utf-8").read()
    open_tag = '<script type="application/json" id="sdu-data">'
    start = text.index(open_tag) + len(open_tag)
    end = text.index("</script>", start)
    data = json.loads(text[start:end])
    data["old"] = True
    for e in data["e"]:
        e.append(None if e[2] == 4 else e[3] // 2)
    doc = json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    grown = os.path.splitext(page)[0] + "-growth.html"
    open(grown, "w", encoding="utf-8").write(text[:start] + doc + text[end:])
    d.get("file://" + os.path.abspath(grown))
    wait_ready(d)
    fills = lambda: d.execute_script(
        "return Array.from(document.querySelectorAll('#cells g.cell > rect'))"
        ".map(function (r) { return r.getAttribute('fill'); }).join(' ');")
    before = fills()
    radio = d.find_element("css selector", "#mode input[value=growth]")
    if not radio.is_displayed():
        fail("no growth colouring offered with earlier totals")
    radio.click()
    if fills() == before or "rgb(" not in fills():
        fail("the growth colouring changed no colour")
    if "Grew" not in d.find_element("id", "legend").text:
        fail("no growth legend")
    cell = cell_of(d, target)
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(d).move_to_element(cell).perform()
    tip = d.find_element("id", "tip").text
    was = re.search(r"Total before\s*\n?\s*\S+ \(([\d,]+) bytes\)", tip)
    now = figures_in(tip).get("Total")
    if not was or int(was.group(1).replace(",", "")) != now // 2:
        fail(f"the tooltip does not say the earlier Total:\n{tip}")


def marks(page, want):
    """The table of the largest entries marks a bound Reclaimable before
    its figure: every cell is unmarked or carries WANT, one at least does,
    and the legend explains WANT and no other mark."""
    d = driver()
    try:
        d.get("file://" + os.path.abspath(page))
        wait_ready(d)
        cells = [r.find_elements("css selector", "td")[3].text
                 for r in d.find_elements("css selector", "#top tbody tr")]
        marked = [c for c in cells if not c[:1].isdigit()]
        if not marked or any(not c.startswith(want) for c in marked):
            fail(f"Reclaimable cells {cells}, not marked {want!r}")
        lines = [p.text for p in d.find_elements("css selector", "#legend p.mark")]
        if len(lines) != 1 or not lines[0].startswith(want + " Reclaimable "):
            fail(f"legend lines of the marks: {lines}")
        print(f"ok: {cells}; {lines}")
    finally:
        d.quit()


def measure(page, n):
    d = driver()
    times = []
    try:
        for _ in range(n):
            d.get("file://" + os.path.abspath(page))
            wait_ready(d)
            times.append(d.execute_script(
                "return performance.getEntriesByName('sdu-ready')[0].startTime;"))
        cells = d.execute_script("return document.querySelectorAll('#cells g.cell').length;")
    finally:
        d.quit()
    print(json.dumps({
        "bytes": os.path.getsize(page),
        "ready_ms_median": round(statistics.median(times), 1),
        "ready_ms_max": round(max(times), 1),
        "runs": n,
        "cells_drawn": cells,
    }))


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "check":
        check(*a[1:])
    elif len(a) == 3 and a[0] == "marks":
        marks(a[1], a[2])
    elif len(a) == 3 and a[0] == "measure":
        measure(a[1], int(a[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
