#!/bin/sh
# install.prefix: cmake --install into a temporary prefix (no root needed),
# then the installed files work from there: memest on an installed model, the
# man page, the bash completion (plain bash, no bash-completion package), the
# zsh completion and the memest-export launcher.
#   usage: prefix.sh CMAKE_COMMAND BUILD_DIR
set -u
cmake=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memest-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
p=$tmp/prefix
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$cmake" --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }

for f in bin/memest bin/memest-export share/man/man1/memest.1 share/bash-completion/completions/memest \
         share/zsh/vendor-completions/_memest share/memest/models/resnet50.json share/memest/models/README.md \
         share/memest/models/hf/llama-3-8b.json share/memest/models/arch/llama.json \
         share/memest/python/memest_export/__init__.py share/doc/memest/README.md share/doc/memest/doc/options.md share/doc/memest/LICENSE; do
    [ -f "$p/$f" ] || fail "not installed: $f"
done

# memest, installed, on an installed model
if out=$("$p/bin/memest" "$p/share/memest/models/resnet50.json" --batch 2 2>&1); then
    case $out in *resnet50*) ;; *) fail "memest's output does not name resnet50: $out" ;; esac
else
    fail "installed memest exited $?: $out"
fi
[ "$("$p/bin/memest" --version 2>&1)" = "$("$build/memest" --version 2>&1)" ] || fail "memest --version differs"

# the man page renders
if command -v man >/dev/null 2>&1; then
    if out=$(LC_ALL=C.UTF-8 MANPAGER=cat MANWIDTH=80 man -l "$p/share/man/man1/memest.1" 2>&1); then
        case $out in *--batch*) ;; *) fail "man -l: the page does not show --batch" ;; esac
    else
        fail "man -l exited $?: $out"
    fi
else
    echo "man not found: the page's rendering is not checked"
fi

# the bash completion, sourced by a plain bash
comp=$p/share/bash-completion/completions/memest
complete_words() {  # the words of the command line, the last one being completed
    bash --norc --noprofile -c '
        . "$1" || exit 9
        shift
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
        _memest || true
        printf "%s\n" "${COMPREPLY[@]}"' bash "$comp" "$@"
}
expect() {  # expect WORD... -- the completion of the words after -- offers every WORD
    want=
    while [ "$1" != "--" ]; do want="$want $1"; shift; done
    shift
    got=$(complete_words "$@") || { fail "bash completion of '$*' failed"; return; }
    for w in $want; do
        printf '%s\n' "$got" | grep -qx -- "$w" || fail "bash completion of '$*' lacks $w (got: $(echo $got))"
    done
}
expect adam adamw -- memest --optim a
expect h100-80gb h100 -- memest --gpu h1
expect t4,l4 -- memest --gpu t4,l
expect all auto -- memest --gpu ''
expect --batch -- memest --ba
expect fp32 fp16 bf16 -- memest --dtype ''
expect "$p/share/memest/models/resnet50.json" -- memest "$p/share/memest/models/resn"
[ -z "$(complete_words memest --batch '')" ] || fail "bash completion offers something after --batch"
if ! bash --norc --noprofile -c '. "$1" && complete -p memest' bash "$comp" | grep -q -- '-F _memest memest'; then
    fail "the bash completion does not register _memest for memest"
fi

# the zsh completion
zc=$p/share/zsh/vendor-completions/_memest
[ "$(head -n 1 "$zc")" = "#compdef memest" ] || fail "_memest does not start with #compdef memest"
if command -v zsh >/dev/null 2>&1; then
    zsh -n "$zc" || fail "zsh -n $zc"
else
    echo "zsh not found: _memest's syntax is not checked"
fi

# memest-export finds its package in share/memest/python
if command -v python3 >/dev/null 2>&1; then
    PYTHONDONTWRITEBYTECODE=1 "$p/bin/memest-export" --help >"$tmp/export.log" 2>&1 \
        || { cat "$tmp/export.log"; fail "installed memest-export --help"; }
else
    echo "python3 not found: memest-export is not run"
fi

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "install.prefix: all checks passed"
