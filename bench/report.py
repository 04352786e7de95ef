#!/usr/bin/env python3
"""Write BENCHMARKS.md from the results directory of scripts/bench.

Usage: report.py RESULTS_DIR OUTPUT.md
       report.py --section btrfs-root RESULTS_DIR OUTPUT.md
       report.py --section snapshots RESULTS_DIR OUTPUT.md
       report.py --section df RESULTS_DIR OUTPUT.md
       report.py --section html RESULTS_DIR OUTPUT.md
       report.py --section since RESULTS_DIR OUTPUT.md

With --section btrfs-root, OUTPUT.md must exist already: only its section
"Btrfs as root: the tree search" and that section's rows of the Goals table
are written again, from RESULTS_DIR (scripts/bench-btrfs with
BENCH_REPORT=section); the rest of the file, from an earlier run, is kept, and
the section says which command produced it. With --section snapshots, the
same for the sections on Btrfs snapshots (bench/snapmem.py), from the JSON
of scripts/snapshot-mem run with RESULTS=RESULTS_DIR; with --section df, the
section on `sdu --df` (bench/dfbench.py), from scripts/df-bench's JSON;
with --section html, the section on `--html` (bench/htmlbench.py), from
scripts/html-bench's; with --section since, the section on `--since`
(bench/sincebench.py), from scripts/since-bench's.

scripts/bench calls it at the end of a run (and with --report-only);
scripts/bench-shared and scripts/bench-btrfs call it too, so that the file
always shows every section that RESULTS_DIR holds. The file says what was
measured now and how to measure it again; nothing in it is written by hand.
"""
import json
import os
import platform
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
import dfbench  # noqa: E402
import htmlbench  # noqa: E402
import sincebench  # noqa: E402
import snapmem  # noqa: E402

# Every section scripts/bench can run, in the order of the file.
MAIN = {
    "usr-xfs": "Copy of /usr on XFS",
    "usr-btrfs": "Copy of /usr on Btrfs",
    "linux-xfs": "Linux-source-like tree (100k entries) on XFS",
    "linux-btrfs": "Linux-source-like tree (100k entries) on Btrfs",
    "million-xfs": "One directory of 1,000,000 empty files on XFS",
}
CONTEND = "contend-contend"
SHARED = {
    "shared-xfs": "Reflinked copies and partial clones on XFS",
    "shared-btrfs": "Reflinked copies and partial clones on Btrfs",
}
BTRFS_ROOT = {
    "usr": "Btrfs as root: the /usr copy",
    "snaps": "Btrfs as root: a subvolume with 10 diverged snapshots",
    "snapsub": "Btrfs as root: a subtree of snapshots (without their origin)",
    "zstd": "Btrfs as root: a tree compressed with zstd",
}
# Which option of scripts/bench runs (or leaves out) each section.
ONLY = {**{s: s for s in MAIN}, CONTEND: "contend", "shared-xfs": "shared",
        "shared-btrfs": "shared", "btrfs-root": "btrfs-root"}
PEERS = ["du -s", "diskus", "ncdu -0 -o /dev/null", "dust -d 0 -P -c", "pdu -H -d 1",
         "gdu -n -p -s", "dua aggregate", "btrfs filesystem du -s"]
NOCAP = "setpriv --bounding-set -sys_admin --inh-caps -sys_admin"


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f) if path.endswith(".json") else f.read()
    except (OSError, ValueError):
        return default


def tsv(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError:
        return []


def fmt_t(s):
    if s is None:
        return "–"
    if s >= 10:
        return f"{s:.2f} s"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s * 1000:.0f} ms"


def fmt_b(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def cpu(r):
    return r["user"] + r["system"]


class Results:
    def __init__(self, res):
        self.res = res

    def path(self, name):
        return os.path.join(self.res, name)

    def runs(self, name):
        """The hyperfine results of one set, by command name."""
        d = load(self.path(name)) or {}
        return {r["command"]: r for r in d.get("results", [])}

    def rss(self, kind, sid):
        rows = tsv(self.path(f"{kind}-{sid}.rss.tsv"))
        return {r[0]: int(r[1]) * 1024 for r in rows if len(r) > 1 and r[1].isdigit() and int(r[1])}

    def csw(self, kind, sid):
        return {r[0]: (r[1], r[2]) for r in tsv(self.path(f"{kind}-{sid}.csw.tsv")) if len(r) >= 3}


def machine(R):
    cpu_model, mem = "?", "?"
    try:
        cpu_model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        kib = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
        mem = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        pass
    load_avg = ", then ".join((load(R.path("load"), "") or "").split()) or "?"
    return [("CPUs (nproc)", str(os.cpu_count())), ("CPU model", cpu_model),
            ("kernel", platform.release()), ("memory", mem),
            ("load average (1 min) at the start and at the end of the run; above the "
             "number of CPUs, other work shared them", load_avg)]


def table(R, kind, sid, ref_name, ref_label, csw=False):
    """One hyperfine set as a table, fastest first, with a ratio column."""
    runs = R.runs(f"{kind}-{sid}.json")
    rss = R.rss(kind, sid)
    sw = R.csw(kind, sid) if csw else {}
    out = []
    if not runs:
        return ["_No timings: this set did not run._", ""]
    ref = runs.get(ref_name)
    head = f"| command | median | mean ± σ | user | sys | user+sys | peak RSS | {ref_label} |"
    rule = "|---|--:|--:|--:|--:|--:|--:|--:|"
    if csw:
        head += " ctx switches (vol. / invol.) |"
        rule += "--:|"
    out += [head, rule]
    for r in sorted(runs.values(), key=lambda r: r["median"]):
        ratio = f"{r['median'] / ref['median']:.2f}" if ref else "–"
        bad = [c for c in r.get("exit_codes") or [] if c not in (0, None)]
        name = r["command"] + (f" (exit {bad[0]} in {len(bad)} runs)" if bad else "")
        row = (f"| `{name}` | {fmt_t(r['median'])} | {fmt_t(r['mean'])} ± {fmt_t(r['stddev'] or 0)} "
               f"| {fmt_t(r['user'])} | {fmt_t(r['system'])} | {fmt_t(cpu(r))} "
               f"| {fmt_b(rss[r['command']]) if r['command'] in rss else '–'} | {ratio} |")
        if csw:
            v = sw.get(r["command"])
            row += f" {v[0]} / {v[1]} |" if v else " – |"
        out.append(row)
    out.append("")
    for row in tsv(R.path(f"{kind}-{sid}.failed.tsv")):
        name, rc, err = (row + ["", "", ""])[:3]
        out.append(f"- `{name}` left out: its first run exited {rc}: `{err[:160]}`")
        out.append("")
    return out


def goal(text, q, ok, detail=""):
    return (text, f"{q}" + (f" ({detail})" if detail else ""), "yes" if ok else "**no**")


def goals_main(R, sid):
    """The goals stated for a /usr copy: du-like speed, memory, the floor."""
    m = R.runs(f"main-{sid}.json")
    rss = R.rss("main", sid)
    out = []
    sdu, du, diskus = m.get("sdu -s --du total"), m.get("du -s"), m.get("diskus")
    if sdu and du:
        q = sdu["median"] / du["median"]
        out.append(goal("`sdu -s --du total` wall time ≤ 0.7× du's", f"{q:.2f}×", q <= 0.7,
                        f"{fmt_t(sdu['median'])} vs {fmt_t(du['median'])}"))
        out.append(goal("its CPU (user+sys) ≤ du's", f"{cpu(sdu) / cpu(du):.2f}×",
                        cpu(sdu) <= cpu(du), f"{fmt_t(cpu(sdu))} vs {fmt_t(cpu(du))}"))
    if sdu and diskus:
        q = sdu["median"] / diskus["median"]
        out.append(goal("`sdu -s --du total` faster than diskus", f"{q:.2f}×", q < 1,
                        f"{fmt_t(sdu['median'])} vs {fmt_t(diskus['median'])}"))
    if "sdu -s" in rss:
        out.append(goal("`sdu -s` peak RSS < 32 MiB", fmt_b(rss["sdu -s"]), rss["sdu -s"] < 32 << 20))
    s, f = m.get("no CAP_SYS_ADMIN: sdu -s"), m.get("no CAP_SYS_ADMIN: floor")
    if s and f:
        q = s["median"] / f["median"]
        out.append(goal("`sdu -s` without CAP_SYS_ADMIN ≤ 1.05× the floor's wall time",
                        f"{q:.2f}×", q <= 1.05, f"{fmt_t(s['median'])} vs {fmt_t(f['median'])}"))
        u = s["user"] / f["user"] if f["user"] else float("inf")
        out.append(goal("its user CPU ≤ 1.5× the floor's", f"{u:.2f}×", u <= 1.5,
                        f"{fmt_t(s['user'])} vs {fmt_t(f['user'])}"))
    return out


def goals_contend(R):
    m = R.runs(f"main-{CONTEND}.json")
    j1, j2 = m.get("sdu -s -j1"), m.get("sdu -s -j2")
    floor = next((r for n, r in m.items() if n.startswith("floor:")), None)
    out = []
    if j1 and j2:
        q = j2["median"] / j1["median"]
        out.append(goal("`sdu -s -j2` faster than `-j1`", f"{q:.2f}×", q < 1,
                        f"{fmt_t(j2['median'])} vs {fmt_t(j1['median'])}"))
    if j2 and floor:
        q = j2["median"] / floor["median"]
        out.append(goal("`sdu -s -j2` faster than the 2-thread floor", f"{q:.2f}×", q < 1,
                        f"{fmt_t(j2['median'])} vs {fmt_t(floor['median'])}"))
    return out


def goals_shared(R, sid):
    m = R.runs(f"main-{sid}.json")
    rss = R.rss("main", sid)
    out = []
    sdu = m.get("sdu -s")
    if sid == "shared-btrfs":
        ref = m.get("btrfs filesystem du -s")
        if sdu and ref:
            q = sdu["median"] / ref["median"]
            out.append(goal("`sdu -s` ≤ 0.45× `btrfs filesystem du -s`", f"{q:.2f}×", q <= 0.45,
                            f"{fmt_t(sdu['median'])} vs {fmt_t(ref['median'])}"))
        a, b = rss.get("sdu -s"), rss.get("btrfs filesystem du -s")
        if a and b:
            out.append(goal("its peak RSS ≤ 1.5× btrfs fi du's", f"{a / b:.2f}×", a <= 1.5 * b,
                            f"{fmt_b(a)} vs {fmt_b(b)}"))
        chk = (load(R.path(f"checks-{sid}.txt"), "") or "").strip()
        if chk:
            out.append(goal("Shared equals btrfs fi du's Set shared", chk.split(": ", 1)[-1].rsplit(":", 1)[0],
                            chk.endswith("OK")))
    else:
        ref = m.get("cwalk --fiemap")
        if sdu and ref:
            q = sdu["median"] / ref["median"]
            out.append(goal("`sdu -s` ≤ 1.15× `cwalk --fiemap` (the same system calls, one thread)",
                            f"{q:.2f}×", q <= 1.15, f"{fmt_t(sdu['median'])} vs {fmt_t(ref['median'])}"))
    return out


ROOT, NOCAP_ROW = "sdu -s (root: tree search)", "sdu -s (no CAP_SYS_ADMIN: FIEMAP)"
OLD_ROW = "sdu -s (root: tree search, SDU_OLD)"


def goals_btrfs_root(R, sid):
    m = R.runs(f"btrfsroot-{sid}.json")
    want = {"usr": [(ROOT, "du -s", 0.75)],
            "snaps": [(ROOT, "btrfs filesystem du -s", 0.25),
                      (NOCAP_ROW, "btrfs filesystem du -s", 0.35)]}.get(sid, [])
    out = []
    for a, b, limit in want:
        if a in m and b in m:
            q = m[a]["median"] / m[b]["median"]
            out.append(goal(f"`{a}` ≤ {limit}× `{b}`", f"{q:.2f}×", q <= limit,
                            f"{fmt_t(m[a]['median'])} vs {fmt_t(m[b]['median'])}; "
                            f"user+sys {cpu(m[a]) / cpu(m[b]):.2f}×"))
    # The root paths cost at most 10% more than the sdu before them
    # (SDU_OLD), measured interleaved (else from the table's one run).
    if sid in ("usr", "snaps"):
        p = R.runs(f"btrfsroot-{sid}.pair.json")
        how = "interleaved"
        if not (ROOT in p and OLD_ROW in p):
            p, how = m, "one hyperfine run"
        if ROOT in p and OLD_ROW in p:
            a, b = p[ROOT], p[OLD_ROW]
            q = a["median"] / b["median"]
            out.append(goal(f"`{ROOT}` ≤ 1.10× `{OLD_ROW}` ({how})", f"{q:.2f}×", q <= 1.10,
                            f"{fmt_t(a['median'])} vs {fmt_t(b['median'])}; "
                            f"user+sys {cpu(a) / cpu(b):.2f}×, {fmt_t(cpu(a))} vs {fmt_t(cpu(b))}"))
    return out


def pair_table(R, sid, kind, text):
    """The new and the old sdu as root, timed in rounds (btrfsroot-ID.KIND.json): one line."""
    d = load(R.path(f"btrfsroot-{sid}.{kind}.json")) or {}
    m = {r["command"]: r for r in d.get("results", [])}
    if ROOT not in m:
        return []
    r, old = m[ROOT], m.get(OLD_ROW)
    head = text.format(rounds=d.get("rounds", "?"), per=d.get("runs_per_round", "?"),
                       n=len(r["times"]))
    if not old:
        return [f"{head} `{ROOT}` {fmt_t(r['median'])} (user+sys {fmt_t(cpu(r))})."]
    return [f"{head} `{ROOT}` {fmt_t(r['median'])} against SDU_OLD's {fmt_t(old['median'])}, "
            f"**{r['median'] / old['median']:.2f}×** (min {fmt_t(r['min'])} against "
            f"{fmt_t(old['min'])}; user+sys {fmt_t(cpu(r))} against {fmt_t(cpu(old))}, "
            f"{cpu(r) / cpu(old):.2f}×)."]


def goal_table(rows):
    if not rows:
        return []
    out = ["| goal | measured | met |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return out + [""]


def peer_ratios(R, sid):
    """One line: sdu's two rows against every peer of the table."""
    m = R.runs(f"main-{sid}.json")
    out = []
    for mine, what in (("sdu -s --du total", "du's figure alone"), ("sdu -s", "all four figures")):
        r = m.get(mine)
        if not r:
            continue
        parts = [f"{r['median'] / m[p]['median']:.2f}× `{p.split()[0] if p != 'btrfs filesystem du -s' else 'btrfs fi du'}`"
                 for p in PEERS if p in m]
        if parts:
            out.append(f"- `{mine}` ({what}), wall time: " + ", ".join(parts) + ".")
    return out + ([""] if out else [])


def corpus_line(R, sid):
    st = load(R.path(f"stats-{sid}.json"), {}) or {}
    info = load(R.path(f"corpus-{sid}.json"), {}) or {}
    fs = {"xfs": "XFS (reflink=1)", "btrfs": "Btrfs"}.get(st.get("fs"), st.get("fs", "?"))
    what = f"`{info['source']}`" if info.get("source") else ""
    if "dirs" in info:
        what = (f"`bench/gen_tree.py source` (fixed seed): {info['dirs']:,} directories, "
                f"{info['files']:,} files, {info['hardlinks']} hardlinks, {info['symlinks']} "
                f"symlinks, depth ≤ {info['max_depth']}")
    elif "create_seconds" in info:
        what = "`bench/gen_tree.py empty`"
    entries = st.get("entries")
    size = (f"{entries:,} entries, du {fmt_b(st.get('du_bytes', 0))}, apparent "
            f"{fmt_b(st.get('apparent_bytes', 0))}") if entries else ""
    return f"The tree: {what}, on {fs}" + (f"; {size}" if size else "") + "."


def runs_line(R, kind, sid):
    d = load(R.path(f"{kind}-{sid}.json")) or {}
    rs = d.get("results") or []
    if not rs:
        return ""
    n = len(rs[0].get("times", []))
    return (f"Each command ran {n} times after warm-up runs, all in one hyperfine run "
            f"(`hyperfine -N`, warm cache); peak RSS is the largest of 3 more runs.")


def section_main(R, sid, title):
    L = [f"## {title}", "", corpus_line(R, sid) + " " + runs_line(R, "main", sid), ""]
    L += table(R, "main", sid, "du -s", "× du")
    L += peer_ratios(R, sid)
    g = goals_main(R, sid)
    if g:
        L += goal_table(g)
    L += [f"Reproduce: `sudo scripts/bench --only {sid}`.", ""]
    return L


def section_contend(R):
    L = ["## Reflink contention: 10,000 reflinked files whose data lies in one XFS allocation group", "",
         "The tree: `bench/mkcontend.sh DIR 100 100 16` on an XFS of 4 allocation groups: 100 files "
         "of 16 4-KiB extents in one directory (their data in one group), then 100 reflinked copies "
         "of that directory. Every FIEMAP there takes the group's AGF lock once per extent; the "
         "context switches (median of 3 runs, `/usr/bin/time -f '%w %c'`) show the threads waiting "
         "on it. " + runs_line(R, "main", CONTEND), ""]
    L += table(R, "main", CONTEND, "sdu -s -j1", "× sdu -j1", csw=True)
    g = goals_contend(R)
    if g:
        L += goal_table(g)
    L += ["Reproduce: `sudo scripts/bench --only contend --floor-only`.", ""]
    return L


def section_shared(R, sid, title):
    L = [f"## {title}", "",
         "The tree: a reflinked copy of the Linux-like tree, a reflinked copy of half of it again, "
         "and 500 files each with 64 KiB of their own and a 64 KiB range cloned out of a large "
         "file (`scripts/bench-shared`). " + runs_line(R, "main", sid), ""]
    ref = "btrfs filesystem du -s" if sid.endswith("btrfs") else "cwalk --fiemap"
    L += table(R, "main", sid, ref, "× " + ("btrfs fi du" if sid.endswith("btrfs") else "cwalk --fiemap"))
    figs = (load(R.path(f"figures-{sid}.txt"), "") or "").split("\n")
    if figs and figs[0].strip():
        row = figs[0].split()
        L.append(f"sdu's figures (bytes): Total {row[0]}, Exclusive {row[1]}, Shared {row[2]}, "
                 f"Reclaimable {row[3]}" + (
                     f"; `btrfs filesystem du -s --raw`: Total {figs[1].split()[0]}, Exclusive "
                     f"{figs[1].split()[1]}, Set shared {figs[1].split()[2]}"
                     if len(figs) > 1 and figs[1].strip() else "") + ".")
        L.append("")
    g = goals_shared(R, sid)
    if g:
        L += goal_table(g)
    L += ["Reproduce: `sudo scripts/bench --only shared` (it needs the Linux-like trees).", ""]
    return L


def section_btrfs_root(R):
    L = [SECTION_HEAD, "",
         "As root on Btrfs, `sdu -s` reads the subvolume's tree (directory entries, inode items, "
         "extent items and their refs) instead of getdents, statx and FIEMAP; under "
         f"`{NOCAP}` it has no CAP_SYS_ADMIN and maps with FIEMAP. As root, where the scan does "
         "not cover the whole filesystem, it also verifies who else holds each shared range: "
         "from the refs the tree search read where they settle it, else by asking Btrfs "
         "(`BTRFS_IOC_LOGICAL_INO_V2`), so that Reclaimable is exact. The trees "
         "(`scripts/bench-btrfs`, on the Btrfs image of `scripts/bench`): the /usr copy above; "
         "a subvolume holding a copy of /usr/share with 10 read-only snapshots, each taken after "
         "1% of the files were rewritten, 0.5% added and 0.5% removed (fixed seed); those 10 "
         "snapshots alone, given as 10 PATHs without the subvolume they were taken of (a subtree "
         "of snapshots: most of their data is also held by their origin, outside the scan); a "
         "copy of /usr/share in a directory whose `compression` property is zstd. Each table is "
         "one hyperfine run; `× btrfs fi du` and `CPU ×` compare median wall time and user+sys.", ""]
    info = (load(R.path("cmdline-btrfsroot"), "") or "").strip().splitlines()
    if info:
        cmd = info[0]
        L.append(f"This section comes from `sudo {cmd}`"
                 + (f", sdu `{info[2]}`" if len(info) > 2 else "") + ".")
        if len(info) > 3:
            path, _, ver = info[3].partition(" (")
            note = info[4] if len(info) > 4 else "an older sdu"
            L.append(f"`SDU_OLD` is {note} (`{ver.rstrip(')')}`); its rows are "
                     "`sdu -s (root: tree search, SDU_OLD)`. Beside each table, the new and the old "
                     "`sdu -s` as root were timed again interleaved: hyperfine cannot interleave "
                     "runs, so the pair ran in several hyperfine invocations (rounds), their "
                     "order swapped from one round to the next, and the rounds' runs merged.")
        ld = (load(R.path("load-btrfsroot"), "") or "").split()
        if ld:
            L.append("Load average (1 min) at its start and end: " + ", then ".join(ld)
                     + f" ({os.cpu_count()} CPUs; above that, other work shared them and wall "
                     "times say less than the CPU columns and the interleaved ratios).")
        L.append("")
    for sid, title in BTRFS_ROOT.items():
        m = R.runs(f"btrfsroot-{sid}.json")
        L += [f"### {title.split(': ', 1)[1].capitalize()}", ""]
        if not m:
            L += ["_No timings: this set did not run._", ""]
            continue
        du, bfd = m.get("du -s"), m.get("btrfs filesystem du -s")
        st = load(R.path(f"stats-btrfsroot-{sid}.json"), {}) or {}
        if st:
            L += [f"{st['entries']:,} entries, du {fmt_b(st['du_bytes'])}.", ""]
        L.append("| command | median | mean ± σ | user | sys | user+sys | × du | × btrfs fi du | CPU × btrfs fi du |")
        L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in sorted(m.values(), key=lambda r: r["median"]):
            q = lambda ref: f"{r['median'] / ref['median']:.2f}" if ref else "–"
            L.append(f"| `{r['command']}` | {fmt_t(r['median'])} | {fmt_t(r['mean'])} ± "
                     f"{fmt_t(r['stddev'] or 0)} | {fmt_t(r['user'])} | {fmt_t(r['system'])} | "
                     f"{fmt_t(cpu(r))} | {q(du)} | {q(bfd)} | "
                     f"{f'{cpu(r) / cpu(bfd):.2f}' if bfd else '–'} |")
        L.append("")
        counts = (load(R.path(f"stats-btrfsroot-{sid}.txt"), "") or "").strip()
        if counts:
            L += [f"`sdu -s --stats`: {counts}", ""]
        L += pair_table(R, sid, "pair",
                        "Interleaved, warm cache ({rounds} rounds of {per} runs per command after "
                        "1 warmup run each, the order swapped every round, {n} runs each):")
        L += pair_table(R, sid, "cold",
                        "Cold cache (`sync; echo 3 > /proc/sys/vm/drop_caches` before every run; "
                        "{rounds} rounds of one run per command, the order swapped every round):")
        if L[-1]:
            L.append("")
        g = goals_btrfs_root(R, sid)
        if g:
            L += goal_table(g)
    chk = (load(R.path("checks-btrfsroot.txt"), "") or "").strip().splitlines()
    if chk:
        bad = [c for c in chk if not c.endswith("OK")]
        L += [f"Checks: {len(chk) - len(bad)} of {len(chk)} pass (as root, the JSON documents "
              "are the same at `-j1` and `-j2`, and the figures the same with the tree search "
              "and with `--fiemap`, compared without `reclaimable_exact` and `unreachable`, which "
              "only the tree search settles; without CAP_SYS_ADMIN, the documents are the same "
              "with copies mapped once and with `--map-each-copy`)."
              + ("".join(f"\n- {c}" for c in bad)), ""]
    L += ["Reproduce: `sudo scripts/bench --only btrfs-root` (or `sudo scripts/bench-btrfs`; "
          "`SDU_OLD=PATH` adds an older sdu, `--cold` the cold-cache pairs, "
          "`BENCH_REPORT=section` writes this section alone into BENCHMARKS.md).", ""]
    return L


def section_walkers(R, sids):
    runs = {s: R.runs(f"walkers-{s}.json") for s in sids}
    runs = {s: r for s, r in runs.items() if r}
    if not runs:
        return []
    names = []
    for r in runs.values():
        names += [n for n in sorted(r, key=lambda n: r[n]["median"]) if n not in names]
    L = ["## Walker libraries", "",
         "The walk alone, by other means: each program walks the tree and prints Σ st_blocks×512 "
         "and the entry count (`bench/walkers`, `bench/cwalk.c`; every total is checked against "
         "`du -s -B1`). `walk-std` is `fs::read_dir` + `fs::symlink_metadata(path)` on rayon (what "
         "diskus does), `--dirent` with `DirEntry::metadata()`; `walk-jwalk` is jwalk 0.9 "
         "(`--path-stat`: full-path lstat); `walk-duacore` is dua-core 6, dua-cli's walker; "
         "`cwalk` the C floor, `-j2` with two threads sharing a stack of directory paths; "
         "`-j1` is one thread. `sdu -s` maps every file too where data may be shared (its floor "
         "there is `cwalk --fiemap`); the 1M-entry directory shows its walk alone. Median wall time:", ""]
    L.append("| program | " + " | ".join(f"`{s}`" for s in runs) + " |")
    L.append("|---|" + "--:|" * len(runs))
    for n in names:
        L.append(f"| `{n}` | " + " | ".join(fmt_t(r[n]["median"]) if n in r else "–"
                                             for r in runs.values()) + " |")
    L += ["", "Reproduce: `sudo scripts/bench` (the walkers run with every tree but the "
          "contention corpus; `--floor-only` leaves them out).", ""]
    return L


def render(R):
    """The whole file, as lines."""
    ran_main = [s for s in MAIN if R.runs(f"main-{s}.json")]
    ran = set(ran_main)
    if R.runs(f"main-{CONTEND}.json"):
        ran.add(CONTEND)
    ran |= {s for s in SHARED if R.runs(f"main-{s}.json")}
    if any(R.runs(f"btrfsroot-{s}.json") for s in BTRFS_ROOT):
        ran.add("btrfs-root")
    cmdline = (load(R.path("cmdline"), "") or "").strip().splitlines()
    dirty = (load(R.path("git"), "") or "").strip()
    duration = (load(R.path("duration_seconds"), "") or "").strip()
    skipped = {r[0]: r[1] for r in tsv(R.path("skipped")) if len(r) > 1}

    L = ["# Benchmarks", "",
         "<!-- Generated by scripts/bench (bench/report.py) from its results directory. "
         "Do not edit by hand: run `sudo scripts/bench` again. -->", "",
         "sdu against GNU du and the other disk-usage tools, warm cache, on loopback XFS and "
         "Btrfs images, one section per tree. `sdu -s --du total` prints du's figure alone and "
         "maps nothing: it is the like-for-like row against du and the peers. `sdu -s` computes "
         "all four figures, so on XFS with reflink and on Btrfs it also opens and maps every "
         "non-empty regular file (FIEMAP): its floor is the C program `floor` (`bench/cwalk.c "
         "--fiemap`), which makes only the system calls that work needs.", ""]
    run_cmd = cmdline[0] if cmdline else "scripts/bench"
    L.append("This file was written by:")
    L += ["", "```sh", f"sudo {run_cmd}".rstrip(), "```", ""]
    if duration.isdigit():
        L.append(f"The run took {int(duration) // 60} min {int(duration) % 60} s, building the trees "
                 "that were not built yet included (they are kept in sparse images under "
                 "`$BENCH_DIR`, default `/var/tmp/sdu-bench`).")
    if dirty:
        L.append("sdu was built from a work tree with uncommitted changes to its sources.")
    missing = [s for s in list(MAIN) + [CONTEND] + list(SHARED) + ["btrfs-root"] if s not in ran]
    if missing:
        L.append("Not measured in this run: " + "; ".join(
            f"`{s}` ({skipped.get(s) or skipped.get(ONLY[s]) or 'not selected'}; "
            f"`sudo scripts/bench --only {ONLY[s]}` measures it)" for s in missing) + ".")
    L.append("")

    L += ["## Machine and tools", "", "| | |", "|---|---|"]
    L += [f"| {k} | {v} |" for k, v in machine(R)]
    versions = [r for r in tsv(R.path("versions.tsv")) if len(r) > 1]
    L += [f"| {k} | `{v}` |" for k, v in versions]
    L.append("")

    # The goals at a glance, then a section per tree.
    summary = []
    for sid in ran_main:
        summary.append((sid, goals_main(R, sid)))
    if CONTEND in ran:
        summary.append(("contend", goals_contend(R)))
    for sid in SHARED:
        if sid in ran:
            summary.append((sid, goals_shared(R, sid)))
    for sid in BTRFS_ROOT:
        if "btrfs-root" in ran:
            summary.append((f"btrfs-root {sid}", goals_btrfs_root(R, sid)))
    summary += snapmem.summary(R.res)
    summary += dfbench.summary(R.res)
    summary += htmlbench.summary(R.res)
    summary += sincebench.summary(R.res)
    rows = [(s, g) for s, g in summary if g]
    if rows:
        L += ["## Goals", "", "| tree | met | not met |", "|---|--:|---|"]
        for s, g in rows:
            no = [a for a, _, c in g if c != "yes"]
            L.append(f"| {s} | {len(g) - len(no)} of {len(g)} | {'; '.join(no) or '–'} |")
        L += ["", "Each tree's section below gives the figures."
              " Wall times on this machine move by several percent from run to run when other "
              "work shares its cores; the CPU columns move less.", ""]

    for sid in ran_main:
        L += section_main(R, sid, MAIN[sid])
    if CONTEND in ran:
        L += section_contend(R)
    for sid, title in SHARED.items():
        if sid in ran:
            L += section_shared(R, sid, title)
    if "btrfs-root" in ran:
        L += section_btrfs_root(R)
    L += snapmem.sections(R.res)
    L += dfbench.section(R.res)
    L += htmlbench.section(R.res)
    L += sincebench.section(R.res)
    L += section_walkers(R, ran_main)

    L += ["## Method", "",
          "- **Timing**: `hyperfine -N` (no shell, output discarded), warm cache, warm-up runs "
          "first; every command of a table in one hyperfine run, so that a load that comes and "
          "goes hits them alike. Median and mean ± σ of wall time; user and sys are hyperfine's "
          "means, from the scheduler's tick (coarse for runs of a few ms of user time). Peak RSS: "
          "the largest `/usr/bin/time -f %M` of 3 runs.",
          "- **Flags**: every command prints one summary of the tree: `du -s`, `diskus`, "
          "`pdu -H --max-depth=1` (hardlinks once, like du), `dust -d 0 -P -c` (no progress, "
          "no colour), `gdu -n -p -s`, `ncdu -0 -o /dev/null` (ncdu 1.x has no summary mode: "
          "its export, thrown away), `dua aggregate`, `btrfs filesystem du -s` (FIEMAP on every "
          "file, one thread: the closest peer of sdu's sharing figures).",
          "- **The floor** (`bench/cwalk.c`): a C program making only the system calls a walk "
          "needs: openat and getdents64 per directory, one `statx(dirfd, name)` per entry; with "
          "`--fiemap`, also open + FS_IOC_FIEMAP + close per non-empty regular file (`-j N`: N "
          "threads). The floor goals compare `sdu -s` with it, both run under "
          f"`{NOCAP}`, as a user without CAP_SYS_ADMIN (as root on Btrfs, sdu reads the tree "
          "instead).",
          "- **Interleaving and profiles**: for differences of a few percent, `bench/rr.py` runs "
          "commands round-robin and `bench/usamples.py` samples user mode at 4999 Hz (`perf "
          "record -e cpu-clock:u`), a sharper clock than the tick; `bench/floor-rounds.sh` runs "
          "both against the floor, `bench/uinstr.sh` counts user instructions (callgrind), "
          "`bench/postsys.py` splits a profile's samples at the instruction after each syscall. "
          "`cargo build --profile profiling` keeps the symbols. docs/decisions.md gives what they "
          "found.",
          "- **Trees**: the Linux-like tree is `bench/gen_tree.py source` (fixed seed: the same "
          "names, sizes and bytes every time; log-normal sizes, median ~6 KiB, 0.1% hardlinks, "
          "0.6% symlinks); the /usr copies are `cp -a /usr` of the machine running the bench.",
          ""]
    checks = (load(R.path("checks.txt"), "") or "").strip().splitlines()
    if checks:
        bad = [c for c in checks if not c.endswith("OK")]
        L += ["## Checks", "",
              f"{len(checks) - len(bad)} of {len(checks)} totals (every walker and `sdu -s --du "
              "total -B1`, on every tree) equal `du -s -B1`." + "".join(f"\n- {c}" for c in bad), ""]

    return L


SECTION_HEAD = "## Btrfs as root: the tree search"
GOAL_ROW = "| btrfs-root "
# What --section writes again: its sections' headings, whether a line is
# one of its rows of the Goals table, and what the comment at the top
# says of it.
PARTS = {
    "btrfs-root": ([SECTION_HEAD], lambda l: l.startswith(GOAL_ROW),
                   "the section \"Btrfs as root: the tree search\" and its rows of the Goals "
                   "table from a later run of scripts/bench-btrfs (bench/report.py --section "
                   "btrfs-root), which that section names"),
    "snapshots": ([f"## {t}" for t in snapmem.TREES.values()], snapmem.is_goal_row,
                  "the sections on Btrfs snapshots and their rows of the Goals table from "
                  "scripts/snapshot-mem with RESULTS=DIR (bench/report.py --section snapshots), "
                  "which those sections name"),
    "df": ([f"## {dfbench.TITLE}"], dfbench.is_goal_row,
           "the section on `sdu --df` and its rows of the Goals table from scripts/df-bench "
           "with RESULTS=DIR (bench/report.py --section df)"),
    "html": ([f"## {htmlbench.TITLE}"], htmlbench.is_goal_row,
             "the section on `--html` from scripts/html-bench "
             "with RESULTS=DIR (bench/report.py --section html), its paragraph on the browser "
             "on shared trees by hand from scripts/browse-mem-shared's output"),
    "since": ([f"## {sincebench.TITLE}"], sincebench.is_goal_row,
              "the section on `--since` and its rows of the Goals table from scripts/since-bench "
              "with RESULTS=DIR (bench/report.py --section since)"),
}
COMMENT = "<!-- Generated by scripts/bench"


def sections_at(lines, heads):
    """The (start, end) of each section of LINES whose heading is in HEADS."""
    out = []
    for a, l in enumerate(lines):
        if l in heads:
            b = next((i for i in range(a + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
            out.append((a, b))
    return out


def splice(new, old, part="btrfs-root"):
    """OLD (the lines of an existing file) with PART's sections and its
    rows of the Goals table taken from NEW."""
    heads, is_row, _ = PARTS[part]
    got = sections_at(new, heads)
    if not got:
        sys.exit(f"report.py --section {part}: the results hold nothing for it")
    out = list(old)
    was = sections_at(out, heads)
    if was:
        oa = was[0][0]
        for a, b in reversed(was):
            del out[a:b]
    else:  # before the walkers (or the method), where the full file has it
        oa = next((i for i, l in enumerate(out) if l in ("## Walker libraries", "## Method")), len(out))
    out[oa:oa] = [l for a, b in got for l in new[a:b]]
    rows = [l for l in new if is_row(l)]
    at = next((i for i, l in enumerate(out) if is_row(l)), None)
    out = [l for l in out if not is_row(l)]
    if at is None and "## Goals" in out:  # the end of the Goals table
        at = out.index("## Goals")
        while at < len(out) and not out[at].startswith("|"):
            at += 1
        while at < len(out) and out[at].startswith("|"):
            at += 1
    if at is not None:
        out[at:at] = rows
    # The comment at the top says where each part comes from.
    for i, l in enumerate(out):
        if l.startswith(COMMENT):
            notes = [note for p, (hs, _, note) in PARTS.items()
                     if p == part or (note.split(" (")[0] in l and sections_at(out, hs))]
            out[i] = (COMMENT + " (bench/report.py) from its results directory"
                      + "".join(f"; {n}" for n in notes)
                      + ". Do not edit by hand: run `sudo scripts/bench` again. -->")
            break
    return out


def main():
    args = sys.argv[1:]
    part = None
    if args[:1] == ["--section"]:
        part = args[1]
        if part not in PARTS:
            sys.exit(f"report.py: --section {part}: only {' or '.join(PARTS)} can be written alone")
        args = args[2:]
    res, output = args
    R = Results(res)
    L = render(R)
    old = None
    if os.path.exists(output):
        with open(output) as f:
            old = f.read().rstrip("\n").split("\n")
    if part:
        if old is None:
            sys.exit(f"report.py --section {part}: no {output} to write the section into")
        L = splice(L, old, part)
    elif old and not snapmem.trees(res) and sections_at(old, PARTS["snapshots"][0]):
        # scripts/snapshot-mem writes its results apart (scripts/bench
        # empties RESULTS_DIR): its sections, which name their runs, stay.
        L = splice(old, L, "snapshots")
    if not part and old and not dfbench.runs(res) and sections_at(old, PARTS["df"][0]):
        L = splice(old, L, "df")
    if not part and old and not htmlbench.runs(res) and sections_at(old, PARTS["html"][0]):
        L = splice(old, L, "html")
    if not part and old and not sincebench.runs(res) and sections_at(old, PARTS["since"][0]):
        L = splice(old, L, "since")
    with open(output, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")


if __name__ == "__main__":
    main()
