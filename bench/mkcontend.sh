#!/bin/bash
# mkcontend.sh DIR COPIES FILES EXTENTS: DIR/src holds FILES files of
# EXTENTS 4 KiB extents each (a written block, then a hole), made in one
# directory so that their data lies in one allocation group; DIR/c0..
# are COPIES reflinked copies of it (cp -r --reflink=always): every copy's
# shared data lies in that one group.
set -e
d=$1 copies=${2:-100} files=${3:-100} e=${4:-16}
rm -rf "$d"; mkdir -p "$d/src"
args=()
for ((i=0;i<e;i++)); do args+=(-c "pwrite -q $((i*8192)) 4096"); done
for ((f=0;f<files;f++)); do xfs_io -f "${args[@]}" "$d/src/f$f"; done
sync -f "$d/src"
for ((c=0;c<copies;c++)); do cp -r --reflink=always "$d/src" "$d/c$c"; done
sync -f "$d"
