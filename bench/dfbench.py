"""The section of BENCHMARKS.md on `sdu --df`, for bench/report.py.

It is written from the JSON that `scripts/df-bench` leaves in a results
directory with RESULTS=DIR: one file an image, `dfbench-NAME.json`, with
the warm rounds (bench/rr.py's JSON: every run's wall, user and system
time, the commands interleaved), the peak RSS of `sdu -s` and `sdu --df`,
and the cold runs (the cache dropped before each).
"""
import glob
import json
import os
import statistics

TITLE = "`sdu --df` against `sdu -s`"
# issue 46: `sdu --df` costs no more than `sdu -s` of the same mount + 10%.
OVER_S = 1.10


def runs(res):
    return load_runs(res, "dfbench")


def load_runs(res, prefix):
    """Every readable RES/PREFIX-*.json, in name order (a bench script
    writes one per run)."""
    out = []
    for path in sorted(glob.glob(os.path.join(res, f"{prefix}-*.json"))):
        try:
            with open(path) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            continue
    return out


def med(xs):
    return statistics.median(xs) if xs else None


def cpu(r, name):
    w = r["warm"]["results"].get(name)
    return med([u + s for u, s in zip(w["user"], w["sys"])]) if w else None


def wall(r, name):
    w = r["warm"]["results"].get(name)
    return med(w["wall"]) if w else None


def per_round(r, name, ref):
    """The ratio name/ref of each warm round (the runs interleaved)."""
    w = r["warm"]["results"]
    return [a / b for a, b in zip(w[name]["wall"], w[ref]["wall"]) if b]


def goals(r):
    q = per_round(r, "sdu --df", "sdu -s")
    if not q:
        return []
    m = med(q)
    c = cpu(r, "sdu --df") / cpu(r, "sdu -s")
    met = sum(x <= OVER_S for x in q)
    return [(f"`sdu --df` ≤ {OVER_S}× `sdu -s`, warm", f"{m:.2f}× (median of {len(q)} rounds; "
             f"{met} of {len(q)} within; CPU {c:.2f}×)", "yes" if m <= OVER_S else "**no**")]


def summary(res):
    return [(f"df {r['name']}", goals(r)) for r in runs(res)]


def is_goal_row(line):
    return line.startswith("| df ")


def f(s):
    return "–" if s is None else (f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s")


def section(res):
    rs = runs(res)
    if not rs:
        return []
    L = [f"## {TITLE}", "",
         "`sdu --df MOUNT` (the table whose rows add up to df's Used) beside `sdu -s -x MOUNT`, "
         "`df MOUNT` and `du -sx MOUNT`, as root, each image mounted read-only. Warm: the "
         "commands one after the other in each round (bench/rr.py), medians; cold: the cache "
         "dropped before each run.", ""]
    for r in rs:
        L += [f"### {r['name']} ({r['fstype']}, {r['used']} used)", "",
              "| command | warm wall | warm CPU (user+sys) | / `sdu -s` (wall, per round → median) "
              "| peak RSS | cold wall |",
              "|---|--:|--:|--:|--:|--:|"]
        for name in ("sdu -s", "sdu --df", "df", "du -sx"):
            q = per_round(r, name, "sdu -s") if name != "sdu -s" else []
            ratio = (", ".join(f"{x:.2f}" for x in q) + f" → {med(q):.2f}×") if q else ""
            rss = r.get("rss_mb", {}).get(name)
            cold = r.get("cold", {}).get(name)
            L.append(f"| `{name}` | {f(wall(r, name))} | {f(cpu(r, name))} | {ratio} | "
                     f"{'' if rss is None else f'{rss:.1f} MB'} | "
                     f"{'' if not cold else f(med(cold)) + f' ({len(cold)} runs)'} |")
        L.append("")
    L += ["Reproduce: `sudo RESULTS=DIR scripts/df-bench IMAGE...`, then "
          "`bench/report.py --section df DIR BENCHMARKS.md`.", ""]
    return L
