#!/bin/sh
# sdu's own addition to the run of GNU's du tests (not from coreutils; see
# scripts/gnu-du-tests): PATHs ending in several slashes, walked as
# fts_open trims them (to one), and du's quotes around an argument in a
# UTF-8 locale (gnulib's quote: U+2018 and U+2019), a file name still in
# ASCII quotes. GNU du passes it as the control.

. "${srcdir=.}/tests/init.sh"; path_prepend_ ./src
print_ver_ du

mkdir -p d/a d/b/c || framework_failure_

du -d1 d// | sed 's/^[0-9][0-9]*	//' | LC_ALL=C sort > out || fail=1
printf '%s\n' d/ d/a d/b > exp
compare exp out || fail=1

du -a d///b// | sed 's/^[0-9][0-9]*	//' | LC_ALL=C sort > out || fail=1
printf '%s\n' d///b/ d///b/c > exp
compare exp out || fail=1

returns_ 1 du nope// 2> err || fail=1
printf "du: cannot access 'nope/': No such file or directory\n" > exp
compare exp err || fail=1

if locale -a | grep -Eiqx 'c\.utf-?8'; then
  returns_ 1 env LC_ALL=C.UTF-8 du --max-depth=x d 2> err || fail=1
  printf '%s\n' "du: invalid maximum depth $(printf '\342\200\230')x$(printf '\342\200\231')" \
    "Try 'du --help' for more information." > exp
  compare exp err || fail=1

  returns_ 1 env LC_ALL=C.UTF-8 du --time=x d 2> err || fail=1
  head -n1 err > out
  printf '%s\n' "du: invalid argument $(printf '\342\200\230')x$(printf '\342\200\231') for $(printf '\342\200\230')--time$(printf '\342\200\231')" > exp
  compare exp out || fail=1

  returns_ 1 env LC_ALL=C.UTF-8 du nope 2> err || fail=1
  printf "du: cannot access 'nope': No such file or directory\n" > exp
  compare exp err || fail=1
fi

Exit $fail
