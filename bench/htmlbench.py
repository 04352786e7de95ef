#!/usr/bin/env python3
"""`sdu --html` against `sdu -s`: time and peak RSS, the runs interleaved.

    bench/htmlbench.py run [--rounds N] SDU DIR OUT.json
        ROUNDS rounds after a warm-up round, each round `sdu -s DIR`,
        `sdu --html PAGE DIR` and `sdu -a -d 0 DIR` (the scan with a node
        for every file, which the page needs) one after the other: every
        run's wall, user and system time and peak RSS (wait4's ru_maxrss),
        the page's size and the entries it holds, written to OUT.json.

As a module, the section of BENCHMARKS.md on `--html` for bench/report.py
(`--section html`), from the `htmlbench-*.json` of a results directory.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from dfbench import load_runs, med

TITLE = "The treemap page (`--html`) and the browser (`-i`), on shared trees"
# issue 47: `--html` within 1.3× the plain scan's time and memory.
WITHIN = 1.3
NAMES = ("sdu -s", "sdu --html", "sdu -a -d 0")


def run(sdu, tree, out, rounds):
    page = os.path.join(tempfile.mkdtemp(), "page.html")
    cmds = {
        "sdu -s": [sdu, "-s", tree],
        "sdu --html": [sdu, "--html", page, tree],
        "sdu -a -d 0": [sdu, "-a", "-d", "0", tree],
    }
    res = {n: {"wall": [], "user": [], "sys": [], "rss_kb": []} for n in cmds}
    for i in range(rounds + 1):
        for name, cmd in cmds.items():
            t0 = time.perf_counter()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            if status != 0:
                sys.exit(f"htmlbench: {' '.join(cmd)}: status {status}")
            if i > 0:
                r = res[name]
                r["wall"].append(wall)
                r["user"].append(ru.ru_utime)
                r["sys"].append(ru.ru_stime)
                r["rss_kb"].append(ru.ru_maxrss)
            print(f"round {i}{' (warm-up)' if i == 0 else ''} {name:12} {wall:6.2f} s "
                  f"{ru.ru_utime + ru.ru_stime:6.2f} s CPU {ru.ru_maxrss / 1000:6.1f} MB",
                  flush=True)
    text = open(page, encoding="utf-8").read()
    start = text.index('id="sdu-data">') + len('id="sdu-data">')
    data = json.loads(text[start:text.index("</script>", start)])
    json.dump({"tree": tree, "rounds": rounds, "results": res,
               "page_bytes": os.path.getsize(page), "items": len(data["e"]),
               "entries": data["entries"]}, open(out, "w"), indent=1)


def runs(res):
    return load_runs(res, "htmlbench")


def per_round(r, name, key):
    """name / `sdu -s` of each round: wall, CPU (user+sys) or peak RSS."""
    a, b = r["results"][name], r["results"]["sdu -s"]

    def v(x, i):
        return x["user"][i] + x["sys"][i] if key == "cpu" else x[key][i]
    return [v(a, i) / v(b, i) for i in range(len(a["wall"])) if v(b, i)]


def summary(res):
    """No row in the Goals table: the section's one paragraph says whether
    the goal is met (BENCHMARKS.md has room for few lines)."""
    return []


def is_goal_row(line):
    return line.startswith("| html ")


def section(res):
    """One paragraph per run: each command's medians, then the ratios to
    `sdu -s` taken within each round, and the goal."""
    rs = runs(res)
    if not rs:
        return []
    L = [f"## {TITLE}", ""]
    for r in rs:
        figs = []
        for name in NAMES:
            x = r["results"][name]
            cpu = med([u + s for u, s in zip(x["user"], x["sys"])])
            figs.append(f"`{name}` {med(x['wall']):.2f} s wall, {cpu:.2f} s CPU, "
                        f"{max(x['rss_kb']) / 1000:.1f} MB peak RSS")
        q = {k: med(per_round(r, "sdu --html", k)) for k in ("wall", "cpu", "rss_kb")}
        a = {k: med(per_round(r, "sdu -a -d 0", k)) for k in ("wall", "cpu", "rss_kb")}
        met = all(v <= WITHIN for k, v in q.items() if k != "cpu")
        L += [f"**The page.** Four /usr copies on XFS, three of them reflink copies of the first "
              f"({r['entries']:,} entries), warm, {r['rounds']} rounds of one run each in turn "
              f"(bench/htmlbench.py; medians, the largest peak): " + "; ".join(figs) + ". "
              f"Against `sdu -s` within each round, `--html` takes {q['wall']:.2f}× its wall "
              f"time, {q['cpu']:.2f}× its CPU and {q['rss_kb']:.2f}× its peak RSS, and the scan "
              f"with a node for every file that the page needs (`-a -d 0`) {a['wall']:.2f}×, "
              f"{a['cpu']:.2f}× and {a['rss_kb']:.2f}×: the goal, within {WITHIN}× in time and "
              f"memory, is {'met' if met else '**not met**'}. The page is "
              f"{r['page_bytes'] / 1e6:.2f} MB, {r['items']:,} items. Reproduce: `sudo "
              f"RESULTS=DIR scripts/html-bench`, then `bench/report.py --section html DIR "
              f"BENCHMARKS.md`.", ""]
    return L


if __name__ == "__main__":
    a = sys.argv[1:]
    n = 5
    if a[:1] == ["run"] and a[1:2] == ["--rounds"]:
        n = int(a[2])
        a = ["run"] + a[3:]
    if len(a) != 4 or a[0] != "run":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    run(a[1], a[2], a[3], n)
