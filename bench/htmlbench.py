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
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TITLE = "The treemap page: `--html`"
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
    out = []
    for path in sorted(glob.glob(os.path.join(res, "htmlbench-*.json"))):
        try:
            with open(path) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            continue
    return out


def med(xs):
    return statistics.median(xs) if xs else None


def per_round(r, name, key):
    """name / `sdu -s` of each round: wall, CPU (user+sys) or peak RSS."""
    a, b = r["results"][name], r["results"]["sdu -s"]

    def v(x, i):
        return x["user"][i] + x["sys"][i] if key == "cpu" else x[key][i]
    return [v(a, i) / v(b, i) for i in range(len(a["wall"])) if v(b, i)]


def goals(r):
    out = []
    for key, what in (("wall", "wall time"), ("rss_kb", "peak RSS")):
        q = per_round(r, "sdu --html", key)
        m = med(q)
        out.append((f"`sdu --html` {what} ≤ {WITHIN}× `sdu -s`'s", f"{m:.2f}×",
                    "yes" if m <= WITHIN else "**no**"))
    return out


def summary(res):
    return [("html usr×4", goals(r)) for r in runs(res)]


def is_goal_row(line):
    return line.startswith("| html ")


def section(res):
    rs = runs(res)
    if not rs:
        return []
    L = [f"## {TITLE}", "",
         "`sdu --html PAGE DIR` beside `sdu -s DIR` and `sdu -a -d 0 DIR` (the scan with a node "
         "for every file, as the page needs), warm, one run of each in turn per round "
         "(bench/htmlbench.py); each ratio is taken within a round, then the median.", ""]
    for r in rs:
        L += [f"On four /usr copies on XFS, three of them reflink copies of the first "
              f"({r['entries']:,} entries; the page {r['page_bytes'] / 1e6:.2f} MB, "
              f"{r['items']:,} items), {r['rounds']} rounds:", "",
              "| command | wall | CPU (user+sys) | peak RSS | / `sdu -s`: wall, CPU, RSS |",
              "|---|--:|--:|--:|--:|"]
        for name in NAMES:
            x = r["results"][name]
            cpu = med([u + s for u, s in zip(x["user"], x["sys"])])
            ratio = "" if name == "sdu -s" else ", ".join(
                f"{med(per_round(r, name, k)):.2f}×" for k in ("wall", "cpu", "rss_kb"))
            L.append(f"| `{name}` | {med(x['wall']):.2f} s | {cpu:.2f} s | "
                     f"{max(x['rss_kb']) / 1000:.1f} MB | {ratio} |")
        L.append("")
    L += ["Reproduce: `sudo RESULTS=DIR scripts/html-bench`, then "
          "`bench/report.py --section html DIR BENCHMARKS.md`.", ""]
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
