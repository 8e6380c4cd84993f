#!/bin/sh
# long_functions.sh SRC_ROOT - no function of src/ (its C files) is over 120
# lines, first to last line, besides those tests/layers/long_functions.allow
# names (one a line: NAME, then why). Reads universal-ctags' line: and end:
# fields. Fails listing each function over the limit that the list does not
# name, each name on the list with no reason or no longer over the limit,
# and when ctags finds no function or measures none; first checks, on a
# file of its own, that a function of 121 lines is found and one of 120 is
# not. Exit 77 (skipped) without universal-ctags.
set -u
root=$1
limit=120
allow=$root/tests/layers/long_functions.allow
command -v ctags > /dev/null 2>&1 || { echo "long_functions: no ctags (universal-ctags): skipped"; exit 77; }
ctags --version 2>/dev/null | grep -q "Universal Ctags" ||
    { echo "long_functions: ctags is not universal-ctags (no end: field): skipped"; exit 77; }
[ -f "$allow" ] || { echo "long_functions: $allow missing"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure DIR: "LINES FILE:LINE NAME" for every function of DIR's C files,
# "? FILE:LINE NAME" for one without an end line
measure() {
    ctags --languages=C --c-kinds=f --fields=+ne -o - -R "$1" | awk -F'\t' '
        /^!_/ { next }
        $2 !~ /\.c$/ { next }
        { name = $1; file = $2; rest = $0
          p = index(rest, ";\"\t"); if (!p) { print "? " file ":? " name; next }
          n = split(substr(rest, p + 3), f, "\t"); l = ""; e = ""
          for (i = 1; i <= n; i++) {
              if (f[i] ~ /^line:/) l = substr(f[i], 6)
              if (f[i] ~ /^end:/) e = substr(f[i], 5) }
          if (l == "" || e == "") print "? " file ":" l " " name
          else print e - l + 1, file ":" l, name }'
}

# the check itself: a function of limit + 1 lines is over, one of limit is not
mkdir "$tmp/probe"
awk -v n=$limit 'BEGIN {
    print "int probe_long(int x)\n{"; for (i = 0; i < n - 3; i++) print "    x++;"; print "    return x;\n}"
    print "int probe_fits(int x)\n{"; for (i = 0; i < n - 4; i++) print "    x++;"; print "    return x;\n}" }' \
    > "$tmp/probe/probe.c"
measure "$tmp/probe" > "$tmp/probe.out"
if ! grep -qx "$((limit + 1)) $tmp/probe/probe.c:1 probe_long" "$tmp/probe.out" ||
   ! grep -qx "$limit $tmp/probe/probe.c:$((limit + 2)) probe_fits" "$tmp/probe.out"; then
    echo "long_functions: ctags does not measure functions as expected; it gave:"
    cat "$tmp/probe.out"
    exit 1
fi

(cd "$root" && measure src) > "$tmp/all"
fail=0
nfun=$(wc -l < "$tmp/all")
[ "$nfun" -gt 0 ] || { echo "long_functions: ctags found no function in $root/src"; exit 1; }
if grep -q '^?' "$tmp/all"; then
    echo "long_functions: functions ctags gives no end line for:"; grep '^?' "$tmp/all"; fail=1
fi
# the list: NAME REASON..., '#' comments and blank lines left out
awk '/^[ \t]*(#|$)/ { next } { print $1, (NF > 1) }' "$allow" > "$tmp/allow"
while read -r name has_reason; do
    [ "$has_reason" = 1 ] || { echo "long_functions: $name on long_functions.allow has no reason"; fail=1; }
    awk -v n="$name" -v lim=$limit '$3 == n && $1 != "?" && $1 > lim { found = 1 } END { exit !found }' \
        "$tmp/all" ||
        { echo "long_functions: $name on long_functions.allow is not a function over $limit lines (take it off)"; fail=1; }
done < "$tmp/allow"
awk -v lim=$limit 'FILENAME == ARGV[1] { ok[$1] = 1; next }
    $1 != "?" && $1 > lim && !($3 in ok) {
        print "long_functions: " $2 ": " $3 " is " $1 " lines (over " lim "; split it, or name it in tests/layers/long_functions.allow with why)"; bad = 1 }
    END { exit bad }' "$tmp/allow" "$tmp/all" || fail=1
[ $fail -eq 0 ] && echo "long_functions: $nfun functions, none over $limit lines but the $(wc -l < "$tmp/allow") listed"
exit $fail
