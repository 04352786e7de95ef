#!/usr/bin/env python3
"""Write BENCHMARKS.md from the results directory of scripts/bench.

Usage: report.py RESULTS_DIR OUTPUT.md   (scripts/bench --report-only calls it)
       report.py --btrfs RESULTS_DIR OUTPUT.md   (scripts/bench-btrfs: replaces only the
       section between the btrfs-root markers, or appends it)
"""
import datetime
import json
import os
import platform
import subprocess
import sys

TITLES = {
    "linux-xfs": "Linux-source-like tree (100k entries) on XFS",
    "linux-btrfs": "Linux-source-like tree (100k entries) on Btrfs",
    "usr-xfs": "Copy of /usr on XFS",
    "usr-btrfs": "Copy of /usr on Btrfs",
    "million-xfs": "One directory with 1,000,000 empty files on XFS",
    "contend-contend": "Reflink contention: 10,000 reflinked files whose shared data lies in one XFS allocation group",
    "shared-xfs": "Sharing accounting: reflinked copies and partial clones on XFS",
    "shared-btrfs": "Sharing accounting: reflinked copies and partial clones on Btrfs",
}
SHARED = ("shared-xfs", "shared-btrfs", "contend-contend")
ORDER = list(TITLES)


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f) if path.endswith(".json") else f.read()
    except OSError:
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


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return [("CPUs (nproc)", str(os.cpu_count())), ("CPU model", cpu),
            ("kernel", platform.release()), ("memory", mem)]


def timing_table(res_dir, kind, sid, ref_name, ref_label):
    data = load(os.path.join(res_dir, f"{kind}-{sid}.json"))
    rss = dict((r[0], r[1]) for r in tsv(os.path.join(res_dir, f"{kind}-{sid}.rss.tsv")) if len(r) > 1)
    failed = tsv(os.path.join(res_dir, f"{kind}-{sid}.failed.tsv"))
    out = []
    if data:
        results = data["results"]
        ref = next((r for r in results if r["command"] == ref_name), None)
        out.append(f"| command | median | mean ± σ | user | sys | user+sys | peak RSS | {ref_label} |")
        out.append("|---|--:|--:|--:|--:|--:|--:|--:|")
        for r in sorted(results, key=lambda r: r["median"]):
            ratio = f"{r['median'] / ref['median']:.2f}" if ref else "–"
            kib = rss.get(r["command"])
            peak = fmt_b(int(kib) * 1024) if kib and kib.isdigit() and int(kib) > 0 else "–"
            bad = [c for c in r.get("exit_codes") or [] if c not in (0, None)]
            name = r["command"] + (f" (exit {bad[0]} in {len(bad)} runs)" if bad else "")
            out.append(
                f"| `{name}` | {fmt_t(r['median'])} | {fmt_t(r['mean'])} ± {fmt_t(r['stddev'] or 0)} "
                f"| {fmt_t(r['user'])} | {fmt_t(r['system'])} | {fmt_t(r['user'] + r['system'])} "
                f"| {peak} | {ratio} |")
        out.append("")
    else:
        out.append("_No timings (run did not happen)._\n")
    for row in failed:
        name, rc, err = (row + ["", "", ""])[:3]
        out.append(f"- `{name}` left out: pre-flight run exited {rc}: `{err[:160]}`")
    if failed:
        out.append("")
    return out


def goals(res_dir, sections):
    """The speed and memory goals (the "Goals" table), computed from the same runs."""
    def med(kind, sid, name):
        d = load(os.path.join(res_dir, f"{kind}-{sid}.json"))
        r = next((r for r in (d or {}).get("results", []) if r["command"] == name), None)
        return r
    def rss(sid, name):
        rows = dict((r[0], r[1]) for r in tsv(os.path.join(res_dir, f"main-{sid}.rss.tsv")) if len(r) > 1)
        v = rows.get(name)
        return int(v) * 1024 if v and v.isdigit() else None
    out = ["## Goals", "", "| goal | measured | met |", "|---|---|---|"]
    for sid in ("usr-xfs", "usr-btrfs"):
        if sid not in sections:
            continue
        sdu, du, diskus = (med("main", sid, n) for n in ("sdu -s --du total", "du -s", "diskus"))
        if sdu and du:
            q = sdu["median"] / du["median"]
            out.append(f"| {sid}: `sdu -s --du total` wall ≤ 0.7× du | {q:.2f}× "
                       f"({fmt_t(sdu['median'])} vs {fmt_t(du['median'])}) | {'yes' if q <= 0.7 else 'no'} |")
            c1, c2 = sdu["user"] + sdu["system"], du["user"] + du["system"]
            out.append(f"| {sid}: its CPU ≤ du's | {fmt_t(c1)} vs {fmt_t(c2)} | {'yes' if c1 <= c2 else 'no'} |")
        if sdu and diskus:
            ok = sdu["median"] < diskus["median"]
            out.append(f"| {sid}: below diskus | {fmt_t(sdu['median'])} vs {fmt_t(diskus['median'])} "
                       f"| {'yes' if ok else 'no'} |")
        m = rss(sid, "sdu -s")
        if m:
            out.append(f"| {sid}: `sdu -s` peak RSS < 32 MiB | {fmt_b(m)} | {'yes' if m < 32 << 20 else 'no'} |")
    for sid in ("usr-xfs", "usr-btrfs"):
        if sid not in sections:
            continue
        # The goals are for a caller without CAP_SYS_ADMIN: the pair run
        # under setpriv, where the results have it (older runs: as root).
        sdu = med("main", sid, "no CAP_SYS_ADMIN: sdu -s")
        floor = med("main", sid, "no CAP_SYS_ADMIN: floor")
        if not (sdu and floor):
            sdu = med("main", sid, "sdu -s")
            floor = next((r for r in (load(os.path.join(res_dir, f"main-{sid}.json")) or {}).get("results", [])
                          if r["command"].startswith("floor:")), None)
        if sdu and floor:
            q = sdu["median"] / floor["median"]
            out.append(f"| {sid}: `sdu -s` ≤ 1.05× the floor (`{floor['command']}`) | {q:.2f}× "
                       f"({fmt_t(sdu['median'])} vs {fmt_t(floor['median'])}) | {'yes' if q <= 1.05 else 'no'} |")
            u = sdu["user"] / floor["user"] if floor["user"] else float("inf")
            out.append(f"| {sid}: its user CPU ≤ 1.5× the floor's | {u:.2f}× ({fmt_t(sdu['user'])} vs "
                       f"{fmt_t(floor['user'])}) | {'yes' if u <= 1.5 else 'no'} |")
    if "contend-contend" in sections:
        rs = (load(os.path.join(res_dir, "main-contend-contend.json")) or {}).get("results", [])
        by = {r["command"]: r for r in rs}
        j1, j2 = by.get("sdu -s -j1"), by.get("sdu -s -j2")
        floor = next((r for r in rs if r["command"].startswith("floor:")), None)
        if j1 and j2:
            out.append(f"| contention corpus: `sdu -s -j2` faster than `-j1` | {fmt_t(j2['median'])} vs "
                       f"{fmt_t(j1['median'])} | {'yes' if j2['median'] < j1['median'] else 'no'} |")
        if j2 and floor:
            out.append(f"| contention corpus: `sdu -s -j2` faster than the floor | {fmt_t(j2['median'])} vs "
                       f"{fmt_t(floor['median'])} | {'yes' if j2['median'] < floor['median'] else 'no'} |")
    if "shared-btrfs" in sections:
        sdu, ref = med("main", "shared-btrfs", "sdu -s"), med("main", "shared-btrfs", "btrfs filesystem du -s")
        if sdu and ref:
            q = sdu["median"] / ref["median"]
            out.append(f"| shared-btrfs: `sdu -s` ≤ 0.45× `btrfs filesystem du -s` | {q:.2f}× "
                       f"({fmt_t(sdu['median'])} vs {fmt_t(ref['median'])}) | {'yes' if q <= 0.45 else 'no'} |")
        a, b = rss("shared-btrfs", "sdu -s"), rss("shared-btrfs", "btrfs filesystem du -s")
        if a and b:
            out.append(f"| shared-btrfs: peak RSS ≤ 1.5× btrfs fi du's | {a / b:.2f}× ({fmt_b(a)} vs "
                       f"{fmt_b(b)}) | {'yes' if a <= 1.5 * b else 'no'} |")
        chk = (load(os.path.join(res_dir, "checks-shared-btrfs.txt"), "") or "").strip()
        if chk:
            out.append(f"| shared-btrfs: shared equals btrfs fi du's set shared | {chk.split(': ', 1)[-1]} "
                       f"| {'yes' if chk.endswith('OK') else 'no'} |")
    if "shared-xfs" in sections:
        sdu, ref = med("main", "shared-xfs", "sdu -s"), med("main", "shared-xfs", "cwalk --fiemap")
        if sdu and ref:
            q = sdu["median"] / ref["median"]
            out.append(f"| shared-xfs: `sdu -s` ≤ 1.15× `cwalk --fiemap` | {q:.2f}× "
                       f"({fmt_t(sdu['median'])} vs {fmt_t(ref['median'])}) | {'yes' if q <= 1.15 else 'no'} |")
    out.append("")
    out.append("`sdu -s` on XFS with reflink and on Btrfs also maps every non-empty file with "
               "FIEMAP to compute the sharing figures; the du-like goals are measured on "
               "`sdu -s --du total`, which prints du's figure only and maps nothing.")
    out.append("")
    return out


def main():
    res_dir, output = sys.argv[1], sys.argv[2]
    sections = [s for s in ORDER if os.path.exists(os.path.join(res_dir, f"stats-{s}.json"))]
    versions = tsv(os.path.join(res_dir, "versions.tsv"))
    cmdline = (load(os.path.join(res_dir, "cmdline"), "") or "").strip().splitlines()
    git = (load(os.path.join(res_dir, "git"), "") or "").split()
    duration = (load(os.path.join(res_dir, "duration_seconds"), "") or "").strip()
    checks = (load(os.path.join(res_dir, "checks.txt"), "") or "").strip().splitlines()
    try:
        when = datetime.datetime.fromtimestamp(
            os.path.getmtime(os.path.join(res_dir, "versions.tsv"))).strftime("%Y-%m-%d %H:%M")
    except OSError:
        when = "?"

    L = []
    L.append("# Benchmarks")
    L.append("")
    L.append("<!-- Generated by scripts/bench (bench/report.py). Do not edit by hand: rerun "
             "`sudo scripts/bench` (or `scripts/bench --report-only`). -->")
    L.append("")
    rev = f" at commit `{git[0]}`" if git else ""
    dirty = " (with uncommitted changes to src/)" if len(git) > 1 else ""
    L.append(f"Measured {when}{rev}{dirty}. The full run took "
             f"{int(duration) // 60} min {int(duration) % 60} s." if duration.isdigit() else
             f"Measured {when}{rev}{dirty}.")
    L.append("")
    L.append("Reproduce (as root, never in CI; the corpus is built once and kept in sparse "
             "images under `$BENCH_DIR`, default `/var/tmp/sdu-bench`):")
    L.append("")
    L.append("```sh")
    L.append(f"sudo {cmdline[0] if cmdline else 'scripts/bench'}".rstrip())
    if len(cmdline) > 1:
        L.append(f"# {cmdline[1]}")
    L.append("```")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    for k, v in machine():
        L.append(f"| {k} | {v} |")
    L.append("")
    L.append("## Tools")
    L.append("")
    L.append("| tool | version |")
    L.append("|---|---|")
    for row in versions:
        if len(row) > 1:
            L.append(f"| {row[0]} | `{row[1]}` |")
    L.append("")
    L.append("## Method")
    L.append("")
    L.append("- Warm cache: `hyperfine -N` (no shell, output discarded) with warmup runs before "
             "the timed runs; all commands of a table are in the same hyperfine run. Wall time "
             "median and mean ± σ; user and sys are hyperfine's mean CPU times.")
    L.append("- Peak RSS: the maximum over 3 runs of `/usr/bin/time -f %M`.")
    L.append("- `× du`: median wall time relative to GNU `du -s` in the same table (below 1 is "
             "faster). In the walker tables `× cwalk` is relative to the single-threaded C walker.")
    L.append("- Every command prints one summary of the tree. Flags: `pdu -H --max-depth=1` "
             "(hardlinks once, like du; root only), `dust -d 0 -P -c` (no progress, no colour), "
             "`gdu -n -p -s` (non-interactive, no progress, summary), `ncdu -0 -o /dev/null` "
             "(export mode, no UI), `dua aggregate`, `diskus` (defaults).")
    L.append("- `cwalk` (bench/cwalk.c) is the floor: one thread, openat + getdents64 per "
             "directory and one `statx(dirfd, name, AT_SYMLINK_NOFOLLOW|AT_STATX_DONT_SYNC)` "
             "per entry; `cwalk --fiemap` also opens every non-empty regular file and runs "
             "FS_IOC_FIEMAP (256-extent buffer, until FIEMAP_EXTENT_LAST): the floor for "
             "sdu's sharing analysis.")
    L.append("")
    L.append("## Corpus")
    L.append("")
    L.append("| corpus | fs | entries | `du -s` | apparent | built in | notes |")
    L.append("|---|---|--:|--:|--:|--:|---|")
    for s in sections:
        st = load(os.path.join(res_dir, f"stats-{s}.json"), {})
        info = load(os.path.join(res_dir, f"corpus-{s}.json"), {}) or {}
        notes = []
        if "dirs" in info:
            notes.append(f"{info['dirs']} dirs, {info['files']} files, {info['hardlinks']} "
                         f"hardlinks, {info['symlinks']} symlinks, depth ≤ {info['max_depth']}")
        if "create_seconds" in info:
            notes.append(f"creating the files took {info['create_seconds']} s")
        if "source" in info:
            notes.append(f"`{info['source']}`")
        built = f"{info['build_seconds']} s" if "build_seconds" in info else "?"
        L.append(f"| {s.split('-')[0]} | {st.get('fs', '?')} | {st.get('entries', '?'):,} | "
                 f"{fmt_b(st.get('du_bytes', 0))} | {fmt_b(st.get('apparent_bytes', 0))} | "
                 f"{built} | {'; '.join(notes)} |")
    L.append("")
    L.append("The Linux-like tree comes from `bench/gen_tree.py source` (fixed seed: same "
             "names, sizes and bytes every time): 6% directories, file sizes log-normal "
             "(median ~6 KiB, mostly 1–40 KiB, 0.3% between 64 KiB and 4 MiB, 1% empty), "
             "0.1% hardlinks, 0.6% symlinks. The 1M-entry directory is made by "
             "`bench/gen_tree.py empty` (os.open/os.close in a loop, then fsync of the directory).")
    L.append("")

    L += goals(res_dir, sections)
    for s in sections:
        if s in SHARED:
            continue
        L.append(f"## {TITLES[s]}")
        L.append("")
        L += timing_table(res_dir, "main", s, "du -s", "× du")
    L.append("`sdu -s` computes all four figures, so on XFS with reflink and on Btrfs it "
             "maps every non-empty regular file with FIEMAP (its floor there is `cwalk "
             "--fiemap`); `sdu -s --du total` prints du's figure only and maps nothing: that "
             "row is the like-for-like comparison with `du -s` and the other peers.")
    L.append("")
    for s in sections:
        if s not in SHARED:
            continue
        L.append(f"## {TITLES[s]}")
        L.append("")
        if s == "contend-contend":
            L.append("Reproduce: `sudo scripts/bench --only contend --floor-only`. "
                     "`bench/mkcontend.sh DIR 100 100 16` on an XFS of 4 allocation groups: 100 "
                     "files of 16 4-KiB extents in one directory (so their data lies in one "
                     "group), then 100 reflinked copies of that directory. Context switches "
                     "(voluntary / involuntary, median of 3 runs, `/usr/bin/time -f '%w %c'`) "
                     "show the AGF lock contention.")
            L.append("")
            L += timing_table(res_dir, "main", s, "sdu -s -j1", "× sdu -j1")
            csw = tsv(os.path.join(res_dir, f"main-{s}.csw.tsv"))
            if csw:
                L.append("| command | voluntary ctx switches | involuntary |")
                L.append("|---|--:|--:|")
                for row in csw:
                    if len(row) >= 3:
                        L.append(f"| `{row[0]}` | {row[1]} | {row[2]} |")
                L.append("")
            continue
        L.append("Reproduce: `sudo scripts/bench-shared` (after `scripts/bench`). The directory "
                 "holds a reflinked copy of the Linux-like tree, a reflinked copy of half of it "
                 "again, and 500 files with a 64 KiB range cloned out of a large file. "
                 "`× ref` is relative to `btrfs filesystem du -s` on Btrfs and to `cwalk "
                 "--fiemap` (the C floor doing the same syscalls) on XFS.")
        L.append("")
        ref = "btrfs filesystem du -s" if s.endswith("btrfs") else "cwalk --fiemap"
        L += timing_table(res_dir, "main", s, ref, "× ref")
        figs = (load(os.path.join(res_dir, f"figures-{s}.txt"), "") or "").strip()
        if figs:
            L.append("Figures (sdu: total, exclusive, shared, reclaimable; then `btrfs "
                     "filesystem du -s --raw`: total, exclusive, set shared):")
            L.append("")
            L.append("```")
            L += figs.splitlines()
            L.append("```")
            L.append("")
        chk = (load(os.path.join(res_dir, f"checks-{s}.txt"), "") or "").strip()
        if chk:
            L.append(f"- {chk}")
            L.append("")
    extra = load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "extra.md"), "")
    if extra:
        L += extra.strip().splitlines()
        L.append("")

    L.append("## Walker comparison")
    L.append("")
    L.append("Which walker should sdu use? Each binary walks the tree and prints Σ st_blocks×512 "
             "(every entry, root included, an inode with several links once) and the entry "
             "count; the script checks each total against `du -s -B1`. Default thread count is "
             "the number of CPUs; `-j1` is one thread.")
    L.append("")
    L.append("- `walk-jwalk`: jwalk 0.9 (rayon), `skip_hidden(false)`, `follow_links(false)`, "
             "`sort(false)`; the stat runs inside `process_read_dir` on the worker that read the "
             "directory, as `fstatat` relative to one extra `open` of that directory (jwalk only "
             "hands out paths). `--path-stat` uses `DirEntry::metadata()` (full-path lstat).")
    L.append("- `walk-duacore`: `dua_core::walk` (dua-core 6, the crate jwalk's description now "
             "points to: \"Use `dua-core` instead\"; dua-cli 3 is built on it), Order::Completion, "
             "default Options (metadata via `fs::DirEntry::metadata`, i.e. fstatat relative to the "
             "open directory, on the workers). `dua aggregate (CLI)` is the dua program itself.")
    L.append("- `walk-std`: `fs::read_dir` + `fs::symlink_metadata(path)` with rayon, what diskus "
             "does; `--dirent` uses `DirEntry::metadata()` instead.")
    L.append("- `cwalk`: the C floor (above); `cwalk -j2` shares a LIFO of directory paths between "
             "2 threads (each directory opened by full path, entries stat-ed relative to it).")
    L.append("- `sdu -s`: sdu's own fd-relative walker (`-j 1`: one thread). On XFS with "
             "reflink and on Btrfs sdu also runs FIEMAP on every non-empty regular file, so its "
             "floor there is `cwalk --fiemap`, not `cwalk`; the 1M-entry directory (empty files, "
             "no FIEMAP) shows its walk alone.")
    L.append("")
    for s in sections:
        if s in SHARED:
            continue
        L.append(f"### {TITLES[s]}")
        L.append("")
        L += timing_table(res_dir, "walkers", s, "cwalk", "× cwalk")
    if any(os.path.exists(os.path.join(res_dir, f"btrfsroot-{k}.json")) for k in BTRFS_ROOT):
        L += btrfs_root_section(res_dir)
        L.append("")
    L.append("## Notes")
    L.append("")
    L.append("- Peers are installed by the script when missing: `hyperfine`, `time`, `gdu`, "
             "`ncdu`, `btrfs-progs`, `xfsprogs` from Debian (apt); `diskus`, "
             "`parallel-disk-usage` (`pdu`), `du-dust` (`dust`) and `dua-cli` (`dua`) with "
             "`cargo install --locked`.")
    L.append("- ncdu 1.x has no non-interactive summary mode; `ncdu -0 -o /dev/null DIR` does "
             "the same scan and writes its export to /dev/null.")
    L.append("- `btrfs filesystem du -s` (Btrfs tables only) computes shared and exclusive bytes "
             "with FS_IOC_FIEMAP on every file, single-threaded: the closest peer of sdu's "
             "sharing figures; `cwalk --fiemap` is the floor for that work.")
    L.append("- jwalk's crates.io description reads \"Use `dua-core` instead\": dua-core is a "
             "published library crate (the walker of dua-cli 3), so it is measured directly "
             "(`walk-duacore`), with the dua CLI beside it.")
    L.append("- The 1M-entry directory is one flat directory: walkers that parallelise across "
             "directories cannot split it.")
    L.append("- Wall time well above user+sys means the machine was not quiet (or waited on I/O); "
             "compare CPU columns when in doubt, and regenerate on a quiet machine.")
    L.append("")
    if checks:
        L.append("### Checks")
        L.append("")
        L.append("```")
        L += checks
        L.append("```")
        L.append("")

    with open(output, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")


BTRFS_ROOT = {
    "usr": "Copy of /usr",
    "snaps": "A subvolume (a /usr/share copy) with 10 diverged snapshots",
    "zstd": "A /usr/share copy with compression zstd",
}
BTRFS_BEGIN = "<!-- btrfs-root begin: scripts/bench-btrfs writes this section -->"
BTRFS_END = "<!-- btrfs-root end -->"


def btrfs_root_section(res_dir):
    """The section of scripts/bench-btrfs: one table per tree, the goals, the checks."""
    L = [BTRFS_BEGIN, "## Btrfs as root: the tree search", ""]
    L.append("Reproduce: `sudo scripts/bench-btrfs` (on scripts/bench's Btrfs image). `sdu -s` "
             "as root reads the tree instead of getdents, statx and FIEMAP (directory entries, inode "
             "items, extent items and their refs, through the tree search); under `setpriv "
             "--bounding-set -sys_admin --inh-caps -sys_admin` it has no CAP_SYS_ADMIN and maps "
             "with FIEMAP. `× du` is relative to `du -s`; `× btrfs fi du` to "
             "`btrfs filesystem du -s`, by median wall time; the CPU columns compare user+sys "
             "(on a 2-core machine shared with other work, wall time also measures the "
             "neighbours: sdu runs 2 threads, du, btrfs fi du and compsize one). One hyperfine "
             "run per tree.")
    L.append("")
    med, cpus = {}, {}
    for sid, title in BTRFS_ROOT.items():
        data = load(os.path.join(res_dir, f"btrfsroot-{sid}.json"))
        L.append(f"### {title}")
        L.append("")
        if not data:
            L.append("_No timings (run did not happen)._")
            L.append("")
            continue
        res = data["results"]
        by = {r["command"]: r for r in res}
        du = by.get("du -s")
        bfd = by.get("btrfs filesystem du -s")
        L.append("| command | median | mean ± σ | user | sys | user+sys | × du | × btrfs fi du "
                 "| CPU × du | CPU × btrfs fi du |")
        L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        cpu = lambda r: r["user"] + r["system"]
        for r in sorted(res, key=lambda r: r["median"]):
            q = lambda ref: f"{r['median'] / ref['median']:.2f}" if ref else "–"
            c = lambda ref: f"{cpu(r) / cpu(ref):.2f}" if ref else "–"
            L.append(f"| `{r['command']}` | {fmt_t(r['median'])} | {fmt_t(r['mean'])} ± "
                     f"{fmt_t(r['stddev'] or 0)} | {fmt_t(r['user'])} | {fmt_t(r['system'])} "
                     f"| {fmt_t(cpu(r))} | {q(du)} | {q(bfd)} | {c(du)} | {c(bfd)} |")
            med[(sid, r["command"])] = r["median"]
            cpus[(sid, r["command"])] = cpu(r)
        L.append("")
        st = (load(os.path.join(res_dir, f"stats-btrfsroot-{sid}.txt"), "") or "").strip()
        if st:
            L.append("`sdu -s --stats` (root, then without CAP_SYS_ADMIN):")
            L.append("")
            L.append("```")
            L += st.splitlines()
            L.append("```")
            L.append("")
    root, nocap = "sdu -s (root: tree search)", "sdu -s (no CAP_SYS_ADMIN: FIEMAP)"
    goals = [("usr", root, "du -s", 0.75), ("snaps", root, "btrfs filesystem du -s", 0.25),
             ("snaps", nocap, "btrfs filesystem du -s", 0.35)]
    L.append("### Goals")
    L.append("")
    L.append("| goal (median wall time) | measured | met | user+sys ratio |")
    L.append("|---|--:|---|--:|")
    for sid, a, b, goal in goals:
        if (sid, a) in med and (sid, b) in med:
            q = med[(sid, a)] / med[(sid, b)]
            c = cpus[(sid, a)] / cpus[(sid, b)]
            L.append(f"| {sid}: `{a}` ≤ {goal}× `{b}` | {q:.2f}× | {'yes' if q <= goal else 'no'} "
                     f"| {c:.2f}× |")
    L.append("")
    chk = (load(os.path.join(res_dir, "checks-btrfsroot.txt"), "") or "").strip()
    if chk:
        L.append("```")
        L += chk.splitlines()
        L.append("```")
        L.append("")
    L.append(BTRFS_END)
    return L


def splice_btrfs(res_dir, output):
    text = open(output).read() if os.path.exists(output) else ""
    sec = "\n".join(btrfs_root_section(res_dir))
    if BTRFS_BEGIN in text and BTRFS_END in text:
        a = text.index(BTRFS_BEGIN)
        b = text.index(BTRFS_END) + len(BTRFS_END)
        text = text[:a] + sec + text[b:]
    else:
        text = text.rstrip() + "\n\n" + sec + "\n"
    with open(output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--btrfs":
        splice_btrfs(sys.argv[2], sys.argv[3])
    else:
        main()
