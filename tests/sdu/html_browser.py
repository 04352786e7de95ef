#!/usr/bin/env python3
"""Opens a page of `sdu --html` in headless Chromium (selenium and
chromedriver) and checks it as a person would use it.

    html_browser.py check PAGE SCREENSHOT EXPECTED DIR A B REST OTHER
        Screenshots the page (PNG), hovers the rectangle of DIR and checks
        that the tooltip shows DIR's four figures, clicks it and checks the
        zoom (breadcrumb, caption, table of the five largest) and the
        tooltip of an entry inside it. EXPECTED is a JSON object
        {path: [total, exclusive, shared, reclaimable]} from `sdu --json`.
        Then, in each of the page's areas, that the rectangles of A and B
        (two entries of the top) have the ratio of areas their figures
        have; that every part drawn lies inside the outline of the entry
        it belongs to; and that the rest of REST (a directory holding
        entries too small to draw) is labelled and styled as no entry is,
        beside OTHER, a real directory named `other`.
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


def check(page, shot, expected, target, a, b, rest, other):
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
        rests = set(d.execute_script(
            "return Array.from(document.querySelectorAll('#cells g.cell.rest'))"
            ".map(function (g) { return sduPath(+g.dataset.i); });"))
        unknown = [p for p in paths if p not in want and p not in rests]
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
            # The page opens on the space on disk: Exclusive + Shared.
            key=lambda p: (-(want[p][1] + want[p][2]), p))
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
        ratios = areas(d, want, a, b)
        parts = stripes(d)
        label = rest_label(d, page, rest, other)
        growth(d, page, target)
        print(f"ok: {len(paths)} cells; {target} and {first} as sdu --json says; "
              f"{a} / {b} by area {ratios}; {parts} parts inside their outlines; "
              f"rest {label!r}; growth")
    finally:
        d.quit()


def page_data(page):
    text = open(page, encoding="utf-8").read()
    open_tag = '<script type="application/json" id="sdu-data">'
    start = text.index(open_tag) + len(open_tag)
    end = text.index("</script>", start)
    return text, start, end, json.loads(text[start:end])


def box(d, path):
    """The drawn rectangle (SVG units) of the cell of PATH at the top."""
    cell = cell_of(d, path)
    if cell is None:
        fail(f"no rectangle for {path} in " + d.find_element("id", "map-label").text)
    r = cell.find_element("css selector", "rect.edge")
    return [float(r.get_attribute(k)) for k in ["x", "y", "width", "height"]]


def areas(d, want, a, b):
    """In each area, the rectangles of A and B (entries of the top) are to
    each other as their figures in that area: Total, Exclusive + Shared,
    Reclaimable. The figures differ enough between the areas that a page
    drawing one layout for all would fail."""
    names = d.execute_script("return JSON.parse(document.getElementById('sdu-data').textContent).areas;")
    got = []
    for k, name in enumerate(names):
        d.execute_script("sduArea(arguments[0]);", k)
        checked = d.find_element("css selector", "#area input:checked").get_attribute("value")
        if checked != str(k):
            fail(f"area {name}: the control shows {checked}")
        fig = lambda p: {"total": want[p][0], "disk": want[p][1] + want[p][2],
                         "reclaimable": want[p][3]}[name]
        ra, rb = box(d, a), box(d, b)
        drawn = (ra[2] * ra[3]) / (rb[2] * rb[3])
        figures = fig(a) / fig(b)
        if abs(drawn / figures - 1) > 0.03:
            fail(f"area {name}: {a} / {b} drawn {drawn:.4f}, figures {figures:.4f}")
        caption = d.find_element("id", "map-label").text
        label = {"total": "Total", "disk": "Space on disk", "reclaimable": "Reclaimable"}[name]
        if f"each an area of its {label}" not in caption:
            fail(f"area {name}: the caption says {caption!r}")
        got.append((name, round(drawn, 3)))
    if len({r for _, r in got}) < 3:
        fail(f"the areas drew the same ratio: {got}")
    # Clicking the control lays out again too.
    d.find_element("css selector", "#area input[value='0']").click()
    if abs(box(d, a)[2] * box(d, a)[3] / (box(d, b)[2] * box(d, b)[3]) - got[0][1]) > 0.01:
        fail("clicking Total did not lay out by Total")
    return got


def stripes(d):
    """Every part drawn (solid, hatched, dotted) lies inside an outline: a
    cell whose entries are drawn inside it has its parts cut to each
    entry's outline (none crosses one), any other cell's parts lie inside
    its edge. Some hatching lies inside entries, so something is checked.
    In every area."""
    count = 0
    for k in range(3):
        d.execute_script("sduArea(arguments[0]);", k)
        bad = d.execute_script("""
            var out = [], n = 0, hatched = 0;
            function box(r) {
              return ['x', 'y', 'width', 'height'].map(function (k) { return +r.getAttribute(k); });
            }
            function inside(a, b) {
              var e = 1e-6;
              return a[0] >= b[0] - e && a[1] >= b[1] - e &&
                a[0] + a[2] <= b[0] + b[2] + e && a[1] + a[3] <= b[1] + b[3] + e;
            }
            document.querySelectorAll('#cells g.cell').forEach(function (g) {
              var self = g.dataset.i, edge = box(g.querySelector('rect.edge'));
              var outlines = {};
              g.querySelectorAll('rect.outline').forEach(function (o) {
                if (!inside(box(o), edge)) { out.push('outline ' + o.dataset.i + ' leaves ' + self); }
                outlines[o.dataset.i] = box(o);
              });
              var nested = Object.keys(outlines).length > 0;
              g.querySelectorAll('rect.part').forEach(function (p) {
                n++;
                var within = p.dataset['in'], b = box(p);
                if (p.dataset.of !== self) { out.push('a part of ' + p.dataset.of + ' in ' + self); }
                if (within !== undefined && (p.getAttribute('fill') || '').indexOf('hatch') >= 0) { hatched++; }
                var frame = within === undefined ? edge : outlines[within];
                if (within === undefined && nested) { out.push('cell ' + self + ' paints across its entries'); }
                else if (!frame) { out.push('a part in ' + within + ' of ' + self + ' without an outline'); }
                else if (!inside(b, frame)) { out.push('a part of ' + self + ' at ' + b + ' outside ' + frame); }
              });
            });
            return [out, n, hatched];""")
        out, n, hatched = bad
        if out:
            fail(f"area {k}: {out[:5]}")
        if n == 0 or (k < 2 and hatched == 0):
            fail(f"area {k}: {n} parts, {hatched} hatched inside entries: nothing checked")
        count += n
    d.execute_script("sduArea(1);")
    return count


def rest_label(d, page, rest, other):
    """The rest of REST (entries too small to draw, its own blocks) is
    labelled in parentheses with how many entries it stands for, a label
    that is no name in the page, in italics; OTHER, a real directory named
    `other`, keeps its name and plain style."""
    _, _, _, data = page_data(page)
    names = {e[1] for e in data["e"] if isinstance(e[1], str)}
    d.execute_script("sduZoom(arguments[0]);", next(
        i for i, e in enumerate(data["e"]) if e[2] == 0 and
        d.execute_script("return sduPath(arguments[0]);", i) == rest))
    cells = d.find_elements("css selector", "#cells g.cell.rest")
    if len(cells) != 1:
        fail(f"{len(cells)} rests drawn in {rest}")
    text = cells[0].find_element("css selector", "text.rest")
    label = text.text
    if not re.fullmatch(r"\(\d+ smaller entr(y|ies)\)", label) or label in names or label == "other":
        fail(f"the rest of {rest} is labelled {label!r}")
    if d.execute_script("return getComputedStyle(arguments[0]).fontStyle;", text) != "italic":
        fail("the rest's label is not in italics")
    fill = cells[0].find_element("css selector", "rect.part").get_attribute("fill")
    if fill != "url(#dots)":
        fail(f"the rest is filled {fill}")
    d.execute_script("sduZoom(0);")
    cell = cell_of(d, other)
    if cell is None or "rest" in cell.get_attribute("class"):
        fail(f"{other} is not drawn as an entry")
    t = cell.find_element("css selector", "text")
    if t.text != "other" or "rest" in (t.get_attribute("class") or ""):
        fail(f"{other} is labelled {t.text!r}")
    return label


def growth(d, page, target):
    """The page with an earlier Total per entry (as `--compare` gives it):
    every entry had half its Total. The growth colouring is offered,
    colours differently, and the tooltip of TARGET says what it had."""
    text, start, end, data = page_data(page)
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
    if len(a) == 9 and a[0] == "check":
        check(*a[1:])
    elif len(a) == 3 and a[0] == "marks":
        marks(a[1], a[2])
    elif len(a) == 3 and a[0] == "measure":
        measure(a[1], int(a[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
