#!/bin/sh
# check.sh SRC_ROOT OBJ_DIR - the layer rule of src/README.md, checked on the
# sources and on the compiled objects:
#   1. every folder of src/ with C sources is a layer of the rule, every public header
#      (include/memest/*.h) belongs to exactly one layer;
#   2. a file includes only headers of its own layer or of the layers before
#      it (a private header: only from its own folder);
#   3. an object refers only to symbols defined in its own layer or before it
#      (calls across the rule, whatever the includes say), and no .c file
#      declares an `extern` of its own (the way around rule 2);
#   2b. only src/sim and src/calc include the simulator (sim.h, alloc.h);
#   2c. only the model layer (and the GPU presets' parser) includes cJSON;
#   1b. a public header declares only functions its own layer defines;
#   4. no import cycle: the public headers' includes form no cycle, and no two
#      layers' objects refer to each other (implied by 3, checked by 3);
#   5. only the report layer writes to standard output (printf, puts,
#      putchar, vprintf, or a stream function given stdout), besides the
#      files the rule lists; the others may hand stdout to a report;
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
    # a folder with no C source is not a layer (src/export: the Python tool)
    ls "$d"*.c "$d"*.h > /dev/null 2>&1 || continue
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

# 2. includes, in one awk pass over every source and public header: each
# file is listed with its layer ("FILE LAYER LABEL"); the rule comes first
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$rule" > "$tmp/rule"
for l in $layers; do
    for f in "$root/src/$l"/*.c "$root/src/$l"/*.h; do
        [ -f "$f" ] && echo "$f $l src/$l/$(basename "$f")"
    done
done > "$tmp/files"
for h in "$root"/include/memest/*.h; do
    b=$(basename "$h" .h)
    ol=$(owner "$b")
    [ -n "$ol" ] && echo "$h $ol include/memest/$b.h"
done >> "$tmp/files"
awk '
    FNR == 1 { part++ }
    part == 1 {                       # the rule: "LAYER: headers..."
        split($0, kv, ":")
        if (kv[1] == "stdout" || kv[2] == "" && $0 !~ /:/) next
        rk[kv[1]] = ++n
        m = split(kv[2], hs, " ")
        for (i = 1; i <= m; i++) own[hs[i]] = kv[1]
        next
    }
    part == 2 { layer[$1] = $2; label[$1] = $3; files[++nf] = $1; next }
    END {
        for (k = 1; k <= nf; k++) {
            f = files[k]; l = layer[f]; dir = f; sub(/\/[^\/]*$/, "", dir)
            ln = 0
            while ((getline line < f) > 0) {
                ln++
                if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
                inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
                where = label[f] ":" ln
                if (inc ~ /^memest\/.*\.h$/) {
                    b = inc; sub(/^memest\//, "", b); sub(/\.h$/, "", b)
                    if (!(b in own)) {
                        print "layers: " where " includes " inc ", which no layer owns"; bad = 1
                    } else if (rk[own[b]] > rk[l]) {
                        print "layers: " where " (" l ") includes " inc " of the later layer " own[b]; bad = 1
                    }
                } else if (inc ~ /\//) {
                    print "layers: " where " includes " inc " from another folder"; bad = 1
                } else if ((getline dummy < (dir "/" inc)) < 0) {
                    print "layers: " where " includes " inc ", not in its own folder"; bad = 1
                } else close(dir "/" inc)
            }
            close(f)
            if (f ~ /\.c$/) {
                ln = 0
                while ((getline line < f) > 0) {
                    ln++
                    if (line ~ /^[ \t]*extern[ \t]/) {
                        print "layers: " label[f] ":" ln " declares an extern; include the owner'"'"'s header"; bad = 1
                    }
                }
                close(f)
            }
        }
        exit bad
    }' "$tmp/rule" "$tmp/files" || fail=1

# 2b. the simulator is sealed: its entry point and its allocator model
# (sim.h, alloc.h) are for the simulator and the estimate that runs it
# (src/sim, src/calc), not for the model builder, the card, the reports or
# the command, which read results (timeline.h, calc.h)
grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"memest/\(sim\|alloc\)\.h"' \
    "$root"/src/base/* "$root"/src/ops/* "$root"/src/step/* "$root"/src/model/* \
    "$root"/src/card/* "$root"/src/probe/* "$root"/src/report/* "$root"/src/app/* \
    "$root"/include/memest/*.h 2>/dev/null |
    grep -v "include/memest/\(sim\|alloc\)\.h:" > "$tmp/sealed" &&
    while IFS= read -r line; do bad "${line#"$root"/} includes the simulator"; done < "$tmp/sealed"

# 2c. cJSON stays in the model layer (reading model files), besides the GPU
# presets' parser (src/card/gpu.c reads the embedded models/gpus.json); the
# public headers never expose it
grep -ln '^[[:space:]]*#[[:space:]]*include[[:space:]]*<cjson/cJSON\.h>' \
    "$root"/src/*/* "$root"/include/memest/*.h 2>/dev/null |
    grep -v "/src/model/\|/src/card/gpu\.c$" > "$tmp/cjson" &&
    while IFS= read -r f; do bad "${f#"$root"/} includes cJSON outside the model layer"; done < "$tmp/cjson"

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
# (objects whose source is gone, left by an earlier build, are skipped)
objs=$(find "$obj" -name '*.c.o' -path '*/src/*' | sort | while read -r o; do
    s=src/${o##*/src/}
    [ -f "$root/${s%.o}" ] && echo "$o"
done)
[ -n "$objs" ] || { echo "layers: no objects under $obj"; exit 1; }
# one nm over every object: "OBJECT: SYMBOL TYPE ..."
# shellcheck disable=SC2086
nm -A -P $objs 2>/dev/null > "$tmp/nm"
echo "$stdout_ok" > "$tmp/stdout_ok"
awk -v order="$layers" '
    BEGIN { n = split(order, a, /[ \n]+/); for (i = 1; i <= n; i++) rk[a[i]] = i }
    FILENAME ~ /stdout_ok$/ { for (i = 1; i <= NF; i++) ok[$i] = 1; next }
    {
        o = $1; sub(/:$/, "", o)
        rel = o; sub(/^.*\/src\//, "src/", rel); sub(/\.o$/, "", rel)
        l = rel; sub(/^src\//, "", l); sub(/\/.*/, "", l)
        objlayer[rel] = l
        if ($3 ~ /^[TDRB]$/) def[$2] = l
        else if ($3 == "U") { nu++; ufile[nu] = rel; usym[nu] = $2 }
    }
    END {
        for (k = 1; k <= nu; k++) {
            f = ufile[k]; s = usym[k]; l = objlayer[f]
            if (!(l in rk)) { if (!(f in seen)) print "layers: " f ": not in a layer"; seen[f] = 1; bad = 1; continue }
            if ((s in def) && rk[def[s]] > rk[l]) {
                print "layers: " f " (" l ") refers to " s " of the later layer " def[s]; bad = 1
            }
            if (l != "report" && !(f in ok) && (s == "printf" || s == "puts" || s == "putchar" || s == "vprintf")) {
                print "layers: " f " writes to standard output (" s ") outside the report layer"; bad = 1
            }
        }
        exit bad
    }' "$tmp/stdout_ok" "$tmp/nm" || fail=1
# 1b. a header declares what its own layer implements: every memest_
# function a public header declares (comments left out) that an object
# defines is defined in the layer owning the header
for h in "$root"/include/memest/*.h; do
    b=$(basename "$h" .h)
    ol=$(owner "$b")
    [ -n "$ol" ] || continue
    awk -v h="include/memest/$b.h" -v l="$ol" '
        { line = $0
          while (1) {
              if (inc) { e = index(line, "*/"); if (!e) { line = ""; break }
                         line = substr(line, e + 2); inc = 0 }
              s = index(line, "/*"); if (!s) break
              out = out substr(line, 1, s - 1); line = substr(line, s + 2); inc = 1 }
          out = out line "\n" }
        END { while (match(out, /memest_[a-z0-9_]+[ \t]*\(/)) {
                  name = substr(out, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
                  print h, l, name; out = substr(out, RSTART + RLENGTH) } }' "$h"
done > "$tmp/decls"
awk '
    NR == FNR { o = $1; sub(/:$/, "", o); sub(/^.*\/src\//, "", o); sub(/\/.*/, "", o)
                if ($3 ~ /^[TDRB]$/) { def[$2] = o; file[$2] = $1 } ; next }
    ($3 in def) && def[$3] != $2 && !seen[$1 SUBSEP $3]++ {
        f = file[$3]; sub(/:$/, "", f); sub(/^.*\/src\//, "src/", f); sub(/\.o$/, "", f)
        print "layers: " $1 " (" $2 ") declares " $3 ", defined in " f; bad = 1 }
    END { exit bad }' "$tmp/nm" "$tmp/decls" || fail=1

# a stream function given stdout outside the report layer (handing stdout
# to a report is fine)
for o in $objs; do
    rel=src/${o##*/src/}
    rel=${rel%.o}
    case $rel in src/report/*) continue ;; esac
    case " $(echo $stdout_ok) " in *" $rel "*) continue ;; esac
    grep -nE '\b(v?fprintf)[[:space:]]*\([[:space:]]*stdout\b|\b(fputs|fputc|putc|fwrite)[[:space:]]*\([^;]*,[[:space:]]*stdout[[:space:]]*\)' \
        "$root/$rel" > "$tmp/w" && bad "$rel writes to standard output outside the report layer: $(head -1 "$tmp/w")"
done

# 6. decisions by op name
grep -rn 'str[n]*cmp[[:space:]]*([^;]*op->name' "$root/src" "$root/include" &&
    bad "a string comparison reads an op's name (use a flag of its descriptor)"

[ $fail -eq 0 ] && echo "layers: the rule holds ($(echo $layers | wc -w) layers, $(echo "$objs" | wc -l) objects)"
exit $fail
