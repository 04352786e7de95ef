"""The sections of BENCHMARKS.md on Btrfs snapshots, for bench/report.py.

They are written from the JSON that `scripts/snapshot-mem` leaves in a
results directory with RESULTS=DIR: one file a tree and a count of
snapshots, `snapmem-TREE-N.json` (TREE is `snapdiff`, snapshots that
differ, or `same`, snapshots of an unchanging tree). Each holds the peak
RSS of every command, the entries scanned, the `--stats` lines of the
lineage, and, from the run's last count, the time rounds and the qgroups.
"""
import glob
import json
import os
import re
import statistics

TREES = {
    "snapdiff": "Btrfs snapshots that differ",
    "same": "Btrfs snapshots of an unchanging tree",
}
ABOUT = {
    "snapdiff": "A subvolume holding a copy of /usr/share on a loopback Btrfs, and N read-only "
                "snapshots of it; before each snapshot, 0.5% of its files are appended to (100 B, "
                "3 KB or 70 KB), 8 KiB is rewritten in place in 0.2%, 0.1% are deleted and a "
                "directory of 50 new files is added (a fixed seed per snapshot).",
    "same": "A subvolume holding a copy of /usr/share on a loopback Btrfs, and N read-only "
            "snapshots of it, unchanged between them.",
}
# The memory goal holds at this count of snapshots.
MEM_GOAL_MB, MEM_GOAL_AT = 64, 40
# `--snapshots` costs no more than `sdu -s`: within this, the noise of a round.
SNAPSHOTS_OVER_S = 1.05
MEM_COLS = [("sdu -s (root)", "`sdu -s`, root"),
            ("sdu -s (no CAP_SYS_ADMIN)", "`sdu -s`, no CAP_SYS_ADMIN"),
            ("sdu --snapshots (root)", "`--snapshots`, root"),
            ("sdu --snapshots (no CAP_SYS_ADMIN)", "`--snapshots`, no CAP_SYS_ADMIN"),
            ("btrfs filesystem du -s", "btrfs fi du -s"),
            ("du -s", "du -s"),
            ("SDU_OLD sdu -s (root)", "SDU_OLD, root"),
            ("SDU_OLD sdu -s (no CAP_SYS_ADMIN)", "SDU_OLD, no CAP_SYS_ADMIN")]
# The sets of runs a round holds: what sdu ran in, what du ran in.
SETS = [("warm, as root", "warm-root", "warm-root"),
        ("warm, no CAP_SYS_ADMIN", "warm-nocap", "warm-nocap"),
        ("first scan (cold), as root", "cold-root", "cold"),
        ("first scan (cold), no CAP_SYS_ADMIN", "cold-nocap", "cold")]


def runs_of(res, tree):
    """The results of one tree, by count of snapshots."""
    out = {}
    for path in glob.glob(os.path.join(res, f"snapmem-{tree}-*.json")):
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if d.get("tree") == tree and isinstance(d.get("snapshots"), int):
            out[d["snapshots"]] = d
    return dict(sorted(out.items()))


def trees(res):
    return [t for t in TREES if runs_of(res, t)]


def secs(s):
    if s is None:
        return "–"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def ratio(q):
    return "–" if q is None else f"{q:.2f}×"


def mb(d, name):
    m = (d.get("memory") or {}).get(name)
    return m["peak_mb"] if m else None


def rounds(d):
    """{(set, round, command): seconds} of a result's time rounds."""
    return {(t["set"], t["round"], t["command"]): t["seconds"] for t in d.get("times") or []}


def median_ratio(t, mine, ref):
    """The per-round ratios mine/ref ((set, command) each) and their median."""
    rs = sorted({r for _, r, _ in t})
    q = [t[(mine[0], r, mine[1])] / t[(ref[0], r, ref[1])] for r in rs
         if (mine[0], r, mine[1]) in t and t.get((ref[0], r, ref[1]))]
    return q, (statistics.median(q) if q else None)


def goal(text, q, ok, detail=""):
    return (text, f"{q}" + (f" ({detail})" if detail else ""), "yes" if ok else "**no**")


def goals(d):
    """The goals of issue 45 on one count of snapshots."""
    out = []
    if d["snapshots"] == MEM_GOAL_AT:
        for name in ("sdu -s", "sdu --snapshots"):
            for who, label in (("root", "as root"), ("no CAP_SYS_ADMIN", "without CAP_SYS_ADMIN")):
                m = mb(d, f"{name} ({who})")
                if m is not None:
                    out.append(goal(f"`{name}` peak RSS ≤ {MEM_GOAL_MB} MB, {label}",
                                    f"{m:.1f} MB", m <= MEM_GOAL_MB))
    t = rounds(d)
    want = [("`sdu -s` warm, as root, ≤ 0.5× du", ("warm-root", "sdu"), ("warm-root", "du"), 0.5),
            ("`sdu -s` warm, without CAP_SYS_ADMIN, ≤ 0.8× du", ("warm-nocap", "sdu"),
             ("warm-nocap", "du"), 0.8),
            ("`sdu --snapshots` warm, as root, ≤ 0.5× du", ("warm-root", "snapshots"),
             ("warm-root", "du"), 0.5),
            ("`sdu --snapshots` warm, without CAP_SYS_ADMIN, ≤ 0.8× du",
             ("warm-nocap", "snapshots"), ("warm-nocap", "du"), 0.8),
            (f"`sdu --snapshots` ≤ {SNAPSHOTS_OVER_S}× `sdu -s`, warm, as root",
             ("warm-root", "snapshots"), ("warm-root", "sdu"), SNAPSHOTS_OVER_S),
            ("`sdu -s` first scan (cold), as root, ≤ du", ("cold-root", "sdu"), ("cold", "du"), 1.0),
            ("`sdu -s` first scan (cold), without CAP_SYS_ADMIN, ≤ du", ("cold-nocap", "sdu"),
             ("cold", "du"), 1.0)]
    for text, mine, ref, limit in want:
        q, med = median_ratio(t, mine, ref)
        if med is not None:
            met = sum(x <= limit for x in q)
            out.append(goal(text, f"{med:.2f}×", med <= limit,
                            f"median of {len(q)} rounds; {met} of {len(q)} within"))
    return out


def summary(res):
    """The rows of the Goals table: (tree label, goals)."""
    return [(f"{tree} {n}", goals(d)) for tree in trees(res)
            for n, d in runs_of(res, tree).items()]


def memory_table(runs):
    cols = [(k, h) for k, h in MEM_COLS if any(mb(d, k) is not None for d in runs.values())]
    L = ["| snapshots | entries | " + " | ".join(h for _, h in cols) + " |",
         "|--:|--:|" + "--:|" * len(cols)]
    for n, d in runs.items():
        e = d.get("entries")
        L.append(f"| {n} | {f'{e:,}' if e else '–'} | " + " | ".join(
            "–" if mb(d, k) is None else f"{mb(d, k):.1f}" for k, _ in cols) + " |")
    return L + [""]


def time_table(d):
    """One row a set of runs: median times, and each ratio by round with its median."""
    t = rounds(d)
    rs = sorted({r for _, r, _ in t})
    L = [f"Time, {d['snapshots']} snapshots, {len(rs)} round{'s' if len(rs) != 1 else ''}, "
         "interleaved: a round runs a row's commands one after the other, after a warm-up, "
         "so that a load that comes and goes hits them alike; cold, the cache is dropped "
         "before each run, and the two cold rows share their round's du. Times are medians; each "
         "ratio is given round by round, then its median in bold:", "",
         "| runs | `sdu -s` | `--snapshots` | du -s | btrfs fi du -s | `sdu -s` / du "
         "| `--snapshots` / du | `--snapshots` / `sdu -s` |",
         "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for label, sset, dset in SETS:
        if not any(k[0] == sset for k in t):
            continue
        cols = [[] for _ in range(7)]
        for r in rs:
            s, p = t.get((sset, r, "sdu")), t.get((sset, r, "snapshots"))
            du, fi = t.get((dset, r, "du")), t.get((sset, r, "btrfs-fi-du"))
            row = [s, p, du, fi, s / du if s and du else None, p / du if p and du else None,
                   p / s if p and s else None]
            for c, v in zip(cols, row):
                if v is not None:
                    c.append(v)
        cells = [secs(statistics.median(c)) if c else "–" for c in cols[:4]]
        for c in cols[4:]:
            if not c:
                cells.append("–")
            elif len(c) == 1:
                cells.append(f"**{ratio(c[0])}**")
            else:
                cells.append(", ".join(f"{v:.2f}" for v in c)
                             + f" → **{ratio(statistics.median(c))}**")
        L.append(f"| {label} | " + " | ".join(cells) + " |")
    return L + [""]


def qgroups_line(d):
    q = d.get("qgroups") or {}
    if not q:
        return []
    show = [s for s in q.get("show") or [] if s]
    t = rounds(d)
    snap = [v for (s, _, c), v in t.items() if s == "warm-root" and c == "snapshots"]
    line = (f"qgroups, {d['snapshots']} snapshots, on a copy of the image, timed apart: "
            f"`btrfs quota enable` {secs(q.get('quota_enable_s'))}, then waiting for the rescan "
            f"it starts (`btrfs quota rescan -W`) {secs(q.get('quota_rescan_s'))}")
    if show:
        line += ("; `btrfs qgroup show`, warm: " + ", ".join(secs(s["seconds"]) for s in show)
                 + f" (peak RSS {max(s['peak_mb'] for s in show):.1f} MB, "
                 f"{q.get('show_lines', '?')} lines)")
    if snap:
        line += (f"; against `sdu --snapshots`, warm, as root: {secs(statistics.median(snap))}"
                 + (" (median)" if len(snap) > 1 else ""))
    return [line + ".", ""]


def stats_lines(d):
    st = d.get("stats") or {}
    L = []
    for who, label in (("root", "as root"), ("nocap", "without CAP_SYS_ADMIN")):
        # What the scan did not do (a count of 0) is left out.
        got = [(k, f"{int(v):,}" if v.isdigit() else v) for k, v in (st.get(who) or {}).items()
               if v != "0"]
        if got:
            L.append(f"- {label}: " + "; ".join(f"{k} {v}" for k, v in got) + ".")
    if L:
        L = [f"`sdu -s --stats`, {d['snapshots']} snapshots:", ""] + L + [""]
    return L


def run_line(d):
    m = d.get("machine") or {}
    n = m.get("nproc", "?")
    busy = max(m.get("load_start", 0), m.get("load_end", 0)) > (n if isinstance(n, int) else 0)
    runs = d.get("runs", 1)
    return (f"`{d.get('command', 'scripts/snapshot-mem')}` ({d.get('sdu', 'sdu')}; peak RSS the "
            f"largest of {runs} run{'s' if runs != 1 else ''} after a warm-up): {n} CPUs, kernel "
            f"{m.get('kernel', '?')}, load average (1 min) {m.get('load_start', '?')} at the start "
            f"and {m.get('load_end', '?')} at the end"
            + ("; above the number of CPUs, other work shared them" if busy else "") + ".")


def section(res, tree):
    runs = runs_of(res, tree)
    if not runs:
        return []
    L = [f"## {TREES[tree]}", "",
         ABOUT[tree] + " `sdu -s` and `sdu --snapshots` of the whole filesystem, as root (the "
         "tree search, snapshots read by difference) and without CAP_SYS_ADMIN (FIEMAP), beside "
         "`btrfs filesystem du -s` and `du -s`; the snapshots are added to one image as the "
         "counts grow. The runs:", ""]
    seen = []
    for d in runs.values():
        line = run_line(d)
        if line not in seen:
            seen.append(line)
            L.append("- " + line)
    L += ["", "Peak RSS (MB, 10^6 bytes; `/usr/bin/time -f %M`):", ""]
    L += memory_table(runs)
    for d in runs.values():
        if d.get("times"):
            L += time_table(d)
        L += qgroups_line(d)
        L += stats_lines(d)
    L += [f"Reproduce: `sudo TREE={tree} TIME_ROUNDS=3 QGROUPS=3 RESULTS=DIR scripts/snapshot-mem "
          "40`, then `... 100` (the counts grow on one image, kept under WORK), then "
          "`bench/report.py --section snapshots DIR BENCHMARKS.md`.", ""]
    return L


def sections(res):
    L = []
    for tree in trees(res):
        L += section(res, tree)
    return L


def is_goal_row(line):
    """Whether a line of the Goals table is one of these sections' rows."""
    return re.match(r"\| (%s) \d+ \|" % "|".join(TREES), line) is not None
