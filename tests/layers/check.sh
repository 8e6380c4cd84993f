#!/bin/sh
# check.sh SRC_ROOT OBJ_DIR - the layer rule of src/README.md, checked on the
# sources and on the compiled objects:
#   1. every folder of src/ is a layer of the rule, every public header
#      (include/memest/*.h) belongs to exactly one layer;
#   2. a file includes only headers of its own layer or of the layers before
#      it (a private header: only from its own folder);
#   3. an object refers only to symbols defined in its own layer or before it
#      (calls across the rule, whatever the includes say), and no .c file
#      declares an `extern` of its own (the way around rule 2);
#   4. no import cycle: the public headers' includes form no cycle, and no two
#      layers' objects refer to each other (implied by 3, checked by 3);
#   5. only the report layer writes to standard output (the stdout symbol,
#      printf, puts, putchar, vprintf), besides the files the rule lists;
#   6. no decision by an op's name: no string comparison reads `op->name`.
# Prints every violation; exit 1 if there is any.
set -u
root=$1
obj=$2
readme=$root/src/README.md
fail=0
bad() { echo "layers: $*"; fail=1; }

[ -f "$readme" ] || { echo "layers: $readme missing"; exit 1; }
# The rule: the fenced block after "```layers", lines "LAYER: headers...",
# in order, and "stdout: FILE..." for the files outside src/report allowed to
# write to standard output.
rule=$(awk '/^```layers$/ {on = 1; next} on && /^```/ {exit} on' "$readme")
[ -n "$rule" ] || { echo "layers: no \`\`\`layers block in $readme"; exit 1; }
layers=$(printf '%s\n' "$rule" | awk -F: '$1 != "stdout" && NF > 1 {print $1}')
stdout_ok=$(printf '%s\n' "$rule" | awk -F: '$1 == "stdout" {print $2}')

rank() { # rank LAYER: its position in the rule, or empty
    printf '%s\n' "$layers" | awk -v l="$1" '$0 == l {print NR}'
}
owner() { # owner HEADER-BASENAME: the layer owning include/memest/HEADER.h
    printf '%s\n' "$rule" | awk -F: -v h="$1" '$1 != "stdout" {
        n = split($2, a, " "); for (i = 1; i <= n; i++) if (a[i] == h) print $1 }'
}

# 1. folders and headers
for d in "$root"/src/*/; do
    l=$(basename "$d")
    [ -n "$(rank "$l")" ] || bad "src/$l/ is not a layer of the rule in src/README.md"
done
for l in $layers; do
    [ -d "$root/src/$l" ] || bad "layer $l has no folder src/$l/"
done
for h in "$root"/include/memest/*.h; do
    b=$(basename "$h" .h)
    n=$(owner "$b" | wc -l)
    [ "$n" -eq 1 ] || bad "include/memest/$b.h belongs to $n layers in src/README.md (must be 1)"
done

# 2. includes
check_includes() { # check_includes FILE LAYER LABEL
    r=$(rank "$2")
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1" | while IFS= read -r line; do
        inc=$(printf '%s' "$line" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
        ln=${line%%:*}
        case $inc in
        memest/*.h)
            b=$(basename "$inc" .h)
            ol=$(owner "$b")
            if [ -z "$ol" ]; then
                echo "layers: $3:$ln includes $inc, which no layer owns"
                echo x >> "$tmp/fail"
            elif [ "$(rank "$ol")" -gt "$r" ]; then
                echo "layers: $3:$ln ($2) includes $inc of the later layer $ol"
                echo x >> "$tmp/fail"
            fi ;;
        */*)
            echo "layers: $3:$ln includes $inc from another folder"
            echo x >> "$tmp/fail" ;;
        *)
            [ -f "$(dirname "$1")/$inc" ] || {
                echo "layers: $3:$ln includes $inc, not in its own folder"
                echo x >> "$tmp/fail"; } ;;
        esac
    done
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for l in $layers; do
    for f in "$root/src/$l"/*.c "$root/src/$l"/*.h; do
        [ -f "$f" ] || continue
        check_includes "$f" "$l" "src/$l/$(basename "$f")"
        case $f in
        *.c) grep -n '^[[:space:]]*extern[[:space:]]' "$f" | while IFS= read -r line; do
                 echo "layers: src/$l/$(basename "$f"):${line%%:*} declares an extern; include the owner's header"
                 echo x >> "$tmp/fail"
             done ;;
        esac
    done
done
for h in "$root"/include/memest/*.h; do
    b=$(basename "$h" .h)
    ol=$(owner "$b")
    [ -n "$ol" ] && check_includes "$h" "$ol" "include/memest/$b.h"
done
[ -f "$tmp/fail" ] && fail=1

# 4. header cycles: the include graph of the public headers, through tsort
for h in "$root"/include/memest/*.h; do
    b=$(basename "$h" .h)
    echo "$b $b"
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"memest\/\([^"]*\)\.h".*/\1/p' "$h" |
        while read -r i; do echo "$i $b"; done
done > "$tmp/edges"
tsort "$tmp/edges" > /dev/null 2> "$tmp/tsort" || true
[ -s "$tmp/tsort" ] && bad "include cycle among the public headers: $(tr '\n' ' ' < "$tmp/tsort")"

# 3 and 5. the objects: who defines what, who refers to what
objs=$(find "$obj" -name '*.o' -path '*/src/*' | sort)
[ -n "$objs" ] || { echo "layers: no objects under $obj"; exit 1; }
layer_of_obj() { printf '%s\n' "$1" | sed 's#.*/src/\([^/]*\)/.*#\1#'; }
for o in $objs; do
    l=$(layer_of_obj "$o")
    nm -P --defined-only "$o" 2>/dev/null | awk -v l="$l" -v f="$o" \
        '$2 ~ /^[TDRB]$/ {print $1, l, f}'
done > "$tmp/defs"
for o in $objs; do
    l=$(layer_of_obj "$o")
    rel=src/$l/$(basename "$o" .o)
    rel=${rel%.c}.c
    r=$(rank "$l")
    [ -n "$r" ] || { bad "$rel: not in a layer"; continue; }
    nm -P -u "$o" 2>/dev/null | awk '{print $1}' > "$tmp/undef"
    awk -v rel="$rel" -v l="$l" -v r="$r" -v order="$layers" '
        BEGIN { n = split(order, a, /[ \n]+/); for (i = 1; i <= n; i++) rk[a[i]] = i }
        NR == FNR { def[$1] = $2; next }
        ($1 in def) && rk[def[$1]] > r {
            print "layers: " rel " (" l ") refers to " $1 " of the later layer " def[$1]; bad = 1 }
        END { exit bad }' "$tmp/defs" "$tmp/undef" || fail=1
    case " $(echo $stdout_ok) " in *" $rel "*) continue ;; esac
    [ "$l" = report ] && continue
    for s in stdout printf puts putchar vprintf; do
        grep -qx "$s" "$tmp/undef" &&
            bad "$rel writes to standard output ($s) outside the report layer"
    done
done

# 6. decisions by op name
grep -rn 'str[n]*cmp[[:space:]]*([^;]*op->name' "$root/src" "$root/include" &&
    bad "a string comparison reads an op's name (use a flag of its descriptor)"

[ $fail -eq 0 ] && echo "layers: the rule holds ($(echo $layers | wc -w) layers, $(echo "$objs" | wc -l) objects)"
exit $fail
