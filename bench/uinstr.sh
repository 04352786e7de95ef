#!/bin/sh
# bench/uinstr.sh — user-mode instructions of one run of each command,
# counted by valgrind's callgrind (exact, and the same from run to run:
# the system calls run natively and are not counted). The sampled user
# time of bench/usamples.py moves by ±10% between sessions on a shared
# machine; this count does not, so it tells whether a change removed work.
#
# Usage: bench/uinstr.sh [-o DIR] CMD [ARGS...]
#   prints "Ir N" for CMD; with -o DIR the callgrind profile is kept there
#   (callgrind_annotate DIR/callgrind.out; it has per-instruction costs).
#   As nobody: setpriv --reuid=65534 --regid=65534 --clear-groups \
#   bench/uinstr.sh target/release/sdu -s DIR (setpriv outside: valgrind
#   follows no exec).
set -eu
out=""
if [ "${1:-}" = "-o" ]; then out=$2; shift 2; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The command's own exit status does not matter (sdu exits 1 for an
# unreadable directory); a run valgrind did not finish does.
valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/callgrind.out" "$@" \
  >/dev/null 2>"$tmp/log" || true
grep -q 'Collected :' "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
sed -n 's/.*Collected : \([0-9]*\).*/Ir \1/p' "$tmp/log"
if [ -n "$out" ]; then mkdir -p "$out" && cp "$tmp/callgrind.out" "$out/"; fi
