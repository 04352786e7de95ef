#!/usr/bin/env python3
"""usamples.py: user CPU time of commands, sampled by perf at 4999 Hz
(`perf record -e cpu-clock:u`), taken round-robin so that a noisy
neighbour hits every command alike.

The kernel's own user/sys split (getrusage, what hyperfine and rr.py
report) comes from the scheduler tick: at CONFIG_HZ=250 a run with 50 ms of
user time holds a dozen ticks, so its medians move in steps of 4 ms. 4999
samples a second give 20 times as many, on the same principle (a timer
interrupt that finds the CPU in user mode).

Usage: bench/usamples.py [--rounds N] [--runs N] NAME=CMD ...
Each round runs every command N times (default 10) under one perf record;
prints per command the user ms per run (median over rounds, and each
round's), the ratio of the median to the first command's, and the median
of the per-round ratios to the first command ("r/round": each round runs
every command back to back, so a load that drifts between rounds cancels).
With --runs 2 and many rounds the commands interleave finely. Needs perf
and permission to use it (root, or perf_event_paranoid <= 1).
"""
import os, statistics, subprocess, sys, tempfile

FREQ = 4999

def samples(cmd, runs, data):
    script = 'for i in $(seq %d); do "$@" >/dev/null 2>&1; done; true' % runs
    subprocess.run(['perf', 'record', '-q', '-o', data, '-e', 'cpu-clock:u', '-F', str(FREQ),
                    '--', 'sh', '-c', script, 'sh'] + cmd.split(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    out = subprocess.run(['perf', 'report', '-i', data, '--stdio', '--sort', 'comm',
                          '-F', 'sample,comm'],
                         capture_output=True, text=True, check=True).stdout
    n = 0
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit() and f[1] not in ('sh', 'seq', 'setpriv'):
            n += int(f[0])
    return n * 1000.0 / FREQ / runs

def main():
    args = sys.argv[1:]
    rounds, runs = 3, 10
    while args and args[0].startswith('--'):
        opt = args.pop(0)
        if opt == '--rounds': rounds = int(args.pop(0))
        elif opt == '--runs': runs = int(args.pop(0))
        else: sys.exit(f'usamples.py: unknown option {opt}')
    cmds = [a.split('=', 1) for a in args]
    res = {n: [] for n, _ in cmds}
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, 'perf.data')
        for _ in range(rounds):
            for name, cmd in cmds:
                res[name].append(samples(cmd, runs, data))
    base = statistics.median(res[cmds[0][0]])
    first = res[cmds[0][0]]
    print(f'{"command":40} {"user ms":>8} {"ratio":>6} {"r/round":>7}  rounds')
    for name, _ in cmds:
        m = statistics.median(res[name])
        # The median of the ratios to the first command within each round:
        # a neighbour's load that drifts between rounds cancels out.
        per = statistics.median(x / f for x, f in zip(res[name], first))
        print(f'{name:40} {m:8.1f} {m / base:6.3f} {per:7.3f}  '
              + ' '.join(f'{x:.1f}' for x in res[name]))

main()
