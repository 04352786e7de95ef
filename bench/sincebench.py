#!/usr/bin/env python3
"""Rescans (`sdu --since SCAN`) against a full scan, du and diskus.

As a module, the section of BENCHMARKS.md on `--since` for bench/report.py
(`--section since`), from the `sincebench-*.json` that scripts/since-bench
leaves in a results directory with RESULTS=DIR: a short table, the goals.

    bench/sincebench.py detail DIR
        prints the longer tables of docs/scale.md ("Rescans"): every
        command warm and cold, as root and as nobody, CPU, peak RSS, what
        `--stats` counted, and the saved scan's size.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
from dfbench import load_runs, med  # noqa: E402

TITLE = "Rescans (`--since`)"
# issue 48: on the XFS /usr copy after 1% of its files changed, full
# accounting from a saved scan within du's time; on Btrfs as root, 0.1× du.
XFS_GOAL = 1.0
BTRFS_GOAL = 0.1
CMDS = ("du -s", "diskus", "sdu -s --du total (walk)", "sdu -s", "sdu -s --since SCAN",
        "sdu -s --since SCAN --verify")
SHORT = {"du -s": "du -s", "diskus": "diskus", "sdu -s --du total (walk)": "walk",
         "sdu -s": "`sdu -s`", "sdu -s --since SCAN": "`--since`",
         "sdu -s --since SCAN --verify": "`--since --verify`"}


def runs(res):
    """The XFS run first: the issue's goal is on it."""
    return sorted(load_runs(res, "sincebench"), key=lambda r: r["kind"] != "xfs")


def ratio(rs, name, ref="du -s"):
    """The median over the rounds of name / ref within each round."""
    if name not in rs or ref not in rs:
        return None
    q = [a / b for a, b in zip(rs[name]["wall"], rs[ref]["wall"]) if b]
    return med(q)


def cpu(x):
    return med([u + s for u, s in zip(x["user"], x["sys"])])


def cell(rs, name):
    if name not in rs:
        return "–"
    q = ratio(rs, name)
    return f"{med(rs[name]['wall']):.2f} s ({q:.2f}×)"


def level_of(r, share):
    return next((lv for lv in r.get("levels", []) if abs(lv["share"] - share) < 1e-9), None)


def goals_xfs(r):
    lv = level_of(r, 0.01)
    if not lv:
        return []
    out = []
    for who in ("root", "nobody"):
        rs = lv["warm"][who]
        q = ratio(rs, "sdu -s --since SCAN")
        w = ratio(rs, "sdu -s --du total (walk)")
        c = {n: cpu(rs[n]) / cpu(rs["du -s"]) for n in ("sdu -s --since SCAN",
                                                        "sdu -s --du total (walk)")}
        out.append((f"`sdu -s --since SCAN` ≤ {XFS_GOAL}× du after 1% changed, warm, as {who}",
                    f"{q:.2f}× (the walk {w:.2f}×; CPU {c['sdu -s --since SCAN']:.2f}×, the "
                    f"walk's {c['sdu -s --du total (walk)']:.2f}×)",
                    "yes" if q <= XFS_GOAL else "**no**"))
    return out


def goals_btrfs(r):
    rs = r["warm_runs"]["root"]
    q = ratio(rs, "sdu -s --since SCAN")
    return [(f"`sdu -s --since SCAN` ≤ {BTRFS_GOAL}× du after one more snapshot and 1% "
             "changed, as root", f"{q:.2f}×", "yes" if q <= BTRFS_GOAL else "**no**")]


def summary(res):
    """No row in the Goals table: the section's paragraph says whether
    each goal is met (BENCHMARKS.md has room for few lines)."""
    return []


def is_goal_row(line):
    return line.startswith("| since ")


def stat(lines, prefix):
    """The figure of the `--stats` line that starts with PREFIX."""
    for ln in lines:
        s = ln.strip()
        if s.startswith(prefix):
            return s[len(prefix):].strip()
    return "–"


def goal_text(rs):
    out = []
    for r in rs:
        for what, got, met in (goals_xfs(r) if r["kind"] == "xfs" else goals_btrfs(r)):
            out.append(f"{what}: {got}, {'met' if met == 'yes' else '**not met**'}")
    return "; ".join(out)


def section(res):
    rs = runs(res)
    if not rs:
        return []
    loads = "; ".join(f"{r['kind']} {r['load_start']} → {r['load_end']}" for r in rs)
    L = [f"## {TITLE}", "",
         "`sdu -s --since SCAN` after a share of the files changed since `--export` saved SCAN "
         "(bench/sincebench.py): median wall time of the warm rounds (each command once a round, "
         "in turn) and, in brackets, the median of its ratios to du's run of the same round. "
         f"Goals: {goal_text(rs)}. {rs[0]['cpus']} CPUs, load average (1, 5, 15 min) at the start "
         f"and end: {loads}. Cold rounds, CPU, peak RSS, what was proved and the saved scan's "
         "size: [scale](docs/scale.md#rescans---since). Reproduce: `sudo RESULTS=DIR "
         "scripts/since-bench`, then `bench/report.py --section since DIR BENCHMARKS.md`.",
         "", "| tree | changed | as | du -s | diskus | walk | `sdu -s` | `--since` | "
         "`--since --verify` |", "|---|--:|---|--:|--:|--:|--:|--:|--:|"]
    for r in rs:
        if r["kind"] == "xfs":
            for lv in r["levels"]:
                for who in ("root", "nobody"):
                    w = lv["warm"][who]
                    L.append(f"| /usr copy, XFS ({r['entries']:,}) | {lv['share']:.1%} | {who} | "
                             + " | ".join(cell(w, c) for c in CMDS) + " |")
        else:
            for who in ("root", "nobody"):
                w = r["warm_runs"][who]
                L.append(f"| {r['snapshots']} snapshots + 1, Btrfs ({r['entries']:,}) | 1% | "
                         f"{who} | " + " | ".join(cell(w, c) for c in CMDS) + " |")
    return L + [""]


def detail(res):
    """The tables of docs/scale.md."""
    L = []
    for r in runs(res):
        if r["kind"] == "xfs":
            L += [f"{r['tree']}, {r['entries']:,} entries, {r['warm']} warm rounds after a "
                  f"warm-up, {r['cold']} cold, {r['cpus']} CPUs, load {r['load_start']} → "
                  f"{r['load_end']}; {r['sdu']}.", "",
                  "| changed | command | root: warm s (× du) | CPU s | peak MB | cold s (× du) | "
                  "nobody: warm s (× du) | CPU s | peak MB | cold s (× du) |",
                  "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
            for lv in r["levels"]:
                for name in CMDS:
                    row = f"| {lv['share']:.1%} ({lv['changed']:,} of {lv['files']:,}) | {SHORT[name]} |"
                    for who in ("root", "nobody"):
                        w, c = lv["warm"][who], lv["cold"][who]
                        x = w[name]
                        cs = (f"{med(c[name]['wall']):.2f} ({ratio(c, name):.2f}×)"
                              if name in c else "–")
                        row += (f" {med(x['wall']):.2f} ({ratio(w, name):.2f}×) | {cpu(x):.2f} | "
                                f"{max(x['rss_kb']) / 1000:.1f} | {cs} |")
                    L.append(row)
            L += [""] + stats_table([(f"{lv['share']:.1%}", lv) for lv in r["levels"]])
            for lv in r["levels"]:
                if lv.get("strace"):
                    L += [""] + strace_table(lv)
            # The scans saved before each share changed differ by a few
            # hundred bytes: the first stands for them.
            L += [""] + scan_table([("XFS /usr copy", r["levels"][0]["scan"])])
        else:
            L += ["", f"{r['tree']}, {r['entries']:,} entries, {r['warm']} warm rounds after a "
                  f"warm-up, load {r['load_start']} → {r['load_end']}.", "",
                  "| as | command | warm s | ratio to du | CPU s | peak RSS MB |",
                  "|---|---|--:|--:|--:|--:|"]
            for who in ("root", "nobody"):
                w = r["warm_runs"][who]
                for name in CMDS:
                    if name in w:
                        x = w[name]
                        L.append(f"| {who} | {SHORT[name]} | {med(x['wall']):.2f} | "
                                 f"{ratio(w, name):.2f}× | {cpu(x):.2f} | "
                                 f"{max(x['rss_kb']) / 1000:.1f} |")
            L += [""] + stats_table([("1% + 1 snapshot", r)])
            L += [""] + scan_table([(f"Btrfs, {r['snapshots']} snapshots", r["scan"])])
    return L


STATS = (("files credited", "files credited with a saved map (--since), proven"),
         ("FIEMAP calls", "FIEMAP calls"))


def stats_table(levels):
    L = ["| changed | as | `--since --stats`: files credited with a saved map, proven | "
         "FIEMAP calls | same output as `sdu -s` |", "|--:|---|--:|--:|---|"]
    for label, lv in levels:
        for who in ("root", "nobody"):
            s = lv["stats"][who]
            L.append(f"| {label} | {who} | {stat(s, STATS[0][1])} | {stat(s, STATS[1][1])} | "
                     f"{'yes' if lv['same_output'][who] else '**no**'} |")
    return L


def strace_counts(text):
    """{syscall: (seconds, calls)} of a `strace -c` table."""
    out = {}
    for ln in text.splitlines():
        f = ln.split()
        if len(f) >= 5 and f[0].replace(".", "").isdigit() and f[-1] != "total":
            try:
                out[f[-1]] = (float(f[1]), int(f[3]))
            except ValueError:
                continue
    return out


def strace_table(lv):
    """The system calls of du, `sdu -s` and `--since` at one share changed,
    the busiest of `--since` first."""
    names = ("du -s", "sdu -s", "sdu -s --since SCAN")
    c = {n: strace_counts(lv["strace"][n]) for n in names}
    top = sorted(c[names[2]], key=lambda k: -c[names[2]][k][0])[:7]
    L = [f"| `strace -c -f`, {lv['share']:.1%} changed, root: syscall | "
         + " | ".join(f"{SHORT[n]} calls, s" for n in names) + " |", "|---|--:|--:|--:|"]
    for k in top:
        L.append(f"| {k} | " + " | ".join(
            f"{c[n][k][1]:,}, {c[n][k][0]:.3f}" if k in c[n] else "–" for n in names) + " |")
    return L


def scan_table(scans):
    L = ["| saved scan | as | entries | saved maps | extents | JSON bytes | per entry | "
         "without maps | maps (base64) per map | zstd | zstd without maps |",
         "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for label, sc in scans:
        for who, s in sc.items():
            per_map = f"{s['mappings_b64'] / s['maps']:.1f}" if s["maps"] else "–"
            L.append(f"| {label} | {who} | {s['entries']:,} | {s['maps']:,} | {s['extents']:,} | "
                     f"{s['bytes']:,} | {s['bytes'] / s['entries']:.1f} | "
                     f"{s['bytes_without_maps']:,} | {per_map} | {s['zstd_bytes']:,} | "
                     f"{s['zstd_bytes_without_maps']:,} |")
    return L


if __name__ == "__main__":
    if sys.argv[1:2] != ["detail"] or len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    print("\n".join(detail(sys.argv[2])))
