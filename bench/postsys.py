#!/usr/bin/env python3
"""postsys.py: how many of a profile's user-mode samples fall on the
instruction right after a `syscall`, per function.

A timer interrupt that arrives while the kernel runs with interrupts off
(the end of every system call) is taken right after the return to user
mode, so `cpu-clock:u` sampling (and the kernel's tick-based user time)
charges the end of each system call to the user instruction that follows
it. Those samples grow with the number of system calls, not with the
user-space work; this script separates them from the rest.

Usage: perf record -e cpu-clock:u -F 4999 -o DATA -- CMD...
       bench/postsys.py DATA [N]
prints the total, the samples right after a syscall, and the N (default
25) functions with the most samples (all / right after a syscall).
"""
import collections, functools, re, subprocess, sys

def main():
    data = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    out = subprocess.run(['perf', 'script', '-G', '-i', data, '--show-mmap-events',
                          '-F', 'comm,pid,ip,sym,dso'],
                         capture_output=True, text=True, check=True).stdout
    maps = collections.defaultdict(list)  # pid -> [(start, end, pgoff, path)]
    cnt = collections.Counter()
    mm = re.compile(r'PERF_RECORD_MMAP2? (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ 0x([0-9a-f]+|0)\b.*\]: r-xp (\S+)')
    for line in out.splitlines():
        m = mm.search(line)
        if m:
            a, n, off = int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)
            maps[int(m.group(1))].append((a, a + n, off, m.group(5)))
            continue
        f = line.split()
        if 'PERF_RECORD' in line or len(f) < 3 or f[0] in ('sh', 'setpriv', 'seq') or not f[1].isdigit():
            continue
        pid, ip = int(f[1]), int(f[2], 16)
        sym = ' '.join(f[3:-1]) or '?'
        where = next(((path, ip - a + off) for a, e, off, path in reversed(maps[pid])
                      if a <= ip < e), ('?', 0))
        cnt[(where[0], where[1], sym)] += 1

    @functools.lru_cache(None)
    def segments(path):
        r = subprocess.run(['readelf', '-lW', path], capture_output=True, text=True).stdout
        return [(int(f[1], 16), int(f[2], 16), int(f[4], 16))
                for f in (l.split() for l in r.splitlines()) if f and f[0] == 'LOAD']

    @functools.lru_cache(None)
    def after_syscall(path, off):
        # The file offset, as an address in the ELF file's own layout.
        addr = next((off - o + v for o, v, n in segments(path) if o <= off < o + n), off)
        r = subprocess.run(['objdump', '-d', '--start-address=%#x' % (addr - 2),
                            '--stop-address=%#x' % addr, path], capture_output=True, text=True)
        return '\tsyscall' in r.stdout

    total = sum(cnt.values())
    post, by, post_by = 0, collections.Counter(), collections.Counter()
    for (path, addr, sym), c in cnt.items():
        by[sym] += c
        if path != '?' and addr >= 2 and after_syscall(path, addr):
            post += c
            post_by[sym] += c
    print(f'user samples {total}; right after a syscall {post} ({100 * post / max(total, 1):.1f}%); '
          f'other {total - post}')
    for s, c in by.most_common(top):
        print(f'{c:7d} {post_by[s]:7d}  {s[:100]}')

main()
