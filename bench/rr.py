#!/usr/bin/env python3
"""rr.py: time commands round-robin (one run of each in turn, repeated), so
that a noisy neighbour hits every command alike. Reports the median wall,
user and sys time of each, and each median wall time as a ratio to the
first command's.

Usage: bench/rr.py [--runs N] [--warmup N] [--json FILE] NAME=CMD ...
(CMD is split on spaces; output discarded.)
"""
import json, os, statistics, subprocess, sys, time

def main():
    args = sys.argv[1:]
    runs, warm, out = 10, 2, None
    while args and args[0].startswith('--'):
        opt = args.pop(0)
        if opt == '--runs': runs = int(args.pop(0))
        elif opt == '--warmup': warm = int(args.pop(0))
        elif opt == '--json': out = args.pop(0)
        else: sys.exit(f'rr.py: unknown option {opt}')
    cmds = [a.split('=', 1) for a in args]
    res = {n: {'wall': [], 'user': [], 'sys': []} for n, _ in cmds}
    for i in range(warm + runs):
        for name, cmd in cmds:
            t0 = time.perf_counter()
            p = subprocess.Popen(cmd.split(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            if i >= warm:
                res[name]['wall'].append(wall)
                res[name]['user'].append(ru.ru_utime)
                res[name]['sys'].append(ru.ru_stime)
    base = statistics.median(res[cmds[0][0]]['wall'])
    print(f'{"command":40} {"wall ms":>8} {"user ms":>8} {"sys ms":>8} {"ratio":>6}')
    for name, _ in cmds:
        m = {k: statistics.median(v) * 1000 for k, v in res[name].items()}
        print(f'{name:40} {m["wall"]:8.1f} {m["user"]:8.1f} {m["sys"]:8.1f} {m["wall"] / base / 1000:6.3f}')
    if out:
        with open(out, 'w') as f:
            json.dump({'runs': runs, 'commands': cmds, 'results': res}, f)

main()
