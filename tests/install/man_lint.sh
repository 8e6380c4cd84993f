#!/bin/sh
# docs.man_lint: doc/memest.1 renders without a single warning, by groff
# (-ww: every warning) and, where man-db is installed, by man --warnings at
# 80 columns.   usage: man_lint.sh PAGE
set -u
page=$1
status=0
out=$(LC_ALL=C.UTF-8 groff -man -ww -z "$page" 2>&1) || status=1
if [ -n "$out" ]; then
    printf 'groff -man -ww -z %s:\n%s\n' "$page" "$out"
    status=1
fi
if command -v man >/dev/null 2>&1; then
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || status=1
    if [ -n "$out" ]; then
        printf 'man --warnings -l %s:\n%s\n' "$page" "$out"
        status=1
    fi
fi
exit $status
