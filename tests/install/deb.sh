#!/bin/sh
# install.deb: cpack -G DEB writes the package; its control fields and files
# are what a system install needs (dpkg-deb -I / -c; nothing is installed).
#   usage: deb.sh CPACK_COMMAND BUILD_DIR
set -u
cpack=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memest-deb.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp" >"$tmp/cpack.log" 2>&1 \
    || { cat "$tmp/cpack.log"; echo "FAIL: cpack -G DEB"; exit 1; }
set -- "$tmp"/memest_*.deb
[ -f "$1" ] || { cat "$tmp/cpack.log"; echo "FAIL: no memest_*.deb written"; exit 1; }
deb=$1
echo "package: $(basename "$deb")"

info=$(dpkg-deb -I "$deb") || fail "dpkg-deb -I"
printf '%s\n' "$info"
[ "$(dpkg-deb -f "$deb" Package)" = memest ] || fail "Package is not memest"
[ "$(dpkg-deb -f "$deb" Section)" = utils ] || fail "Section is not utils"
depends=$(dpkg-deb -f "$deb" Depends)
for d in libc6 libcjson1 libyaml-0-2 python3; do
    printf '%s\n' "$depends" | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -qx "$d" || fail "Depends lacks $d: $depends"
done

files=$(dpkg-deb -c "$deb" | awk '{print $NF}') || fail "dpkg-deb -c"
for f in ./usr/bin/memest ./usr/bin/memest-export ./usr/share/man/man1/memest.1 \
         ./usr/share/bash-completion/completions/memest ./usr/share/zsh/vendor-completions/_memest \
         ./usr/share/memest/models/resnet50.json ./usr/share/memest/models/hf/llama-3-8b.json \
         ./usr/share/memest/python/memest_export/__init__.py ./usr/share/doc/memest/README.md \
         ./usr/share/doc/memest/doc/options.md; do
    printf '%s\n' "$files" | grep -qx -- "$f" || fail "the package lacks $f"
done

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "install.deb: all checks passed"
