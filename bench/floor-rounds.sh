#!/bin/sh
# bench/floor-rounds.sh — rounds of the syscall-floor figures: sdu -s
# against the C floor (bench/cwalk.c --fiemap -j2) on the /usr copies on XFS
# and Btrfs, unprivileged (as nobody), wall and user time round-robin
# (bench/rr.py) and user CPU sampled at 4999 Hz (bench/usamples.py); then
# the reflink-contention corpus at -j1/-j2/-j4 with context switches.
#
# Usage (root): [ROUNDS=N] [RUNS=M] bench/floor-rounds.sh BEFORE AFTER [DIR]
#   BEFORE, AFTER  two sdu binaries; DIR holds cwalk and mnt/{xfs,btrfs}/usr
#   and mnt/contend/contend mounted (default /var/tmp/sdu-floor); ROUNDS:
#   usamples rounds (default 3; sampled user time moves by up to ±15%
#   between rounds on a shared machine, so more rounds steady the median);
#   RUNS: runs of each command per round (default 10; fewer runs in more
#   rounds interleave the commands more finely)
set -eu
B=$(realpath "$1"); A=$(realpath "$2"); DIR=${3:-/var/tmp/sdu-floor}; ROUNDS=${ROUNDS:-3}; RUNS=${RUNS:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
N="setpriv --reuid=65534 --regid=65534 --clear-groups"
RR=$HERE/rr.py; US=$HERE/usamples.py; CW=$DIR/cwalk
for fs in xfs btrfs; do
  D=$DIR/mnt/$fs/usr
  echo "== rr usr $fs $(uptime)"
  $RR --runs 10 "floor=$N $CW --fiemap -j2 $D" "before=$N $B -s $D" "after=$N $A -s $D"
  echo "== usamples usr $fs $(uptime)"
  $US --rounds "$ROUNDS" --runs "$RUNS" "floor=$N $CW --fiemap -j2 $D" "before=$N $B -s $D" "after=$N $A -s $D"
done
D=$DIR/mnt/contend/contend
echo "== rr contend $(uptime)"
$RR --runs 10 "before-j1=$B -s -j1 $D" "before-j2=$B -s -j2 $D" "before-j4=$B -s -j4 $D" \
  "after-j1=$A -s -j1 $D" "after-j2=$A -s -j2 $D" "after-j4=$A -s -j4 $D" \
  "floor-j1=$CW --fiemap -j1 $D" "floor-j2=$CW --fiemap -j2 $D"
echo "== voluntary/involuntary context switches, 3 runs each $(uptime)"
for c in "$B -s -j1" "$B -s -j2" "$B -s -j4" "$A -s -j1" "$A -s -j2" "$A -s -j4" \
  "$CW --fiemap -j1" "$CW --fiemap -j2"; do
  v=""; for i in 1 2 3; do v="$v $(/usr/bin/time -f '%w/%c' $c $D 2>&1 >/dev/null | tail -1)"; done
  echo "$c:$v"
done
echo "== end $(uptime)"
