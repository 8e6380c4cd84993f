# Hostile memest-export (class 1 of issue 30): what is at -o (a FIFO, a
# device, a symbolic link, the model's own module, standard output), a
# model that prints, exits, kills itself or swallows the recorder's errors,
# outside text with control bytes, numbers no tensor can have. Sourced by
# run.sh; the model's modules are written into $T by each case. Cases that
# need no PyTorch (the command line is refused before it is imported) run
# with any python3.

PY=${TORCH_PYTHON:-python3}

# x ARG...: runs the exporter (bounded, checked against the last expect)
x() { run "$PY" "$EXPORT" "$@"; }
# xsh 'COMMAND LINE': runs a command line through bash, where "$0" is the
# Python and "$1" the exporter (redirections, umask)
xsh() { run bash -c "$1" "$PY" "$EXPORT"; }

# net [FORWARD [INIT [TOP]]]: writes net.py, whose Net is a Linear(4, 2);
# FORWARD lines run first in forward(), INIT lines at the end of __init__,
# TOP lines at the module's top level. REC(x) is true while the model is
# recorded (not while fx traces it).
net() {
    {
        echo 'import os, sys, torch, torch.nn as nn'
        echo 'REC = lambda x: not isinstance(x, torch.fx.Proxy)'
        printf '%s\n' "${3:-}"
        echo 'class Net(nn.Module):'
        echo '    def __init__(self):'
        echo '        super().__init__()'
        echo '        self.fc = nn.Linear(4, 2)'
        printf '%s\n' "${2:-pass}" | sed 's/^/        /'
        echo '    def forward(self, x):'
        printf '%s\n' "${1:-pass}" | sed 's/^/        /'
        echo '        return self.fc(x)'
    } > net.py
}

# only NAME...: the case's folder holds these files and nothing else (no
# temporary, no __pycache__); the harness's .out and .err aside
only() {
    local want got
    want=$(printf '%s\n' "$@" | sort)
    got=$(ls -A | grep -v -x -e .out -e .err | sort)
    [ "$got" = "$want" ] || fail "the folder holds [$(echo $got)], expected [$(echo $want)]"
}

# is_model FILE: FILE is the exported Net
is_model() {
    [ "$(json_field "$1" layers.0.type)" = linear ] && [ "$(json_field "$1" layers.0.out_features)" = 2 ] ||
        fail "$1 is not the exported model"
}

# no_raw_control FILE: no control byte but newline in FILE
no_raw_control() {
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1"; then fail "a raw control byte in $1"; fi
}

# ---- what is at -o ---------------------------------------------------------

case_out_fifo() {
    need_torch
    net
    mkfifo f
    timeout 10 cat f > got &    # (the reader gives up if the exporter never opens f)
    expect 0
    x net:Net --input 4 -o f
    wait
    [ -p f ] || fail "f is no longer a FIFO"
    is_model got
    only f got net.py
}

case_out_device() {
    need_torch
    net
    mknod null c 1 3 || skip "mknod: not permitted here"
    expect 0
    x net:Net --input 4 -o null
    [ -c null ] || fail "null is no longer a character device"
    [ "$(stat -c %t,%T null)" = 1,3 ] || fail "null is another device now"
    only null net.py
}

case_out_device_full() {
    need_torch
    net
    mknod full c 1 7 || skip "mknod: not permitted here"
    expect 6 "cannot write full: No space left on device"
    x net:Net --input 4 -o full
    [ -c full ] || fail "full is no longer a character device"
    only full net.py
}

case_out_symlink() {
    # the link stays a link, its file (in another folder) is replaced whole
    # and keeps its permissions; no temporary in either folder
    need_torch
    net
    mkdir sub
    echo old > sub/real.json
    chmod 640 sub/real.json
    ln -s sub/real.json link.json
    expect 0
    x net:Net --input 4 -o link.json
    [ -L link.json ] && [ "$(readlink link.json)" = sub/real.json ] || fail "link.json is no longer the link"
    is_model sub/real.json
    [ "$(stat -c %a sub/real.json)" = 640 ] || fail "mode $(stat -c %a sub/real.json), expected 640"
    only link.json net.py sub
    [ "$(ls -A sub)" = real.json ] || fail "sub holds $(ls -A sub)"
}

case_out_new_file_umask() {
    need_torch
    net
    expect 0
    xsh 'umask 027 && exec "$0" "$1" net:Net --input 4 -o new.json'
    [ "$(stat -c %a new.json)" = 640 ] || fail "mode $(stat -c %a new.json), expected 640 (0666 less umask 027)"
    is_model new.json
    only new.json net.py
}

case_out_directory() {
    need_torch
    net
    mkdir d
    expect 6 "cannot write d: Is a directory"
    x net:Net --input 4 -o d
    [ -d d ] && [ -z "$(ls -A d)" ] || fail "d changed"
    only d net.py
}

case_out_missing_folder() {
    need_torch
    net
    expect 6 "cannot write nodir/x.json: No such file or directory"
    x net:Net --input 4 -o nodir/x.json
    only net.py
}

case_out_file_too_large() {
    # past a file-size limit: exit 6, the old file as it was, no temporary
    need_torch
    command -v prlimit > /dev/null || skip "no prlimit"
    net
    echo old > out.json
    expect 6 "cannot write out.json: File too large"
    run prlimit --fsize=200 "$PY" "$EXPORT" net:Net --input 4 -o out.json
    [ "$(cat out.json)" = old ] || fail "out.json changed"
    only out.json net.py
}

case_out_kept_on_failure() {
    need_torch
    net 'if REC(x): raise ValueError("no")'
    echo old > out.json
    expect 3 "forward() at batch 2 raised ValueError: no"
    x net:Net --input 4 -o out.json
    [ "$(cat out.json)" = old ] || fail "out.json changed"
    only out.json net.py
}

case_out_empty_path() {
    expect 2 "-o: expected a file name, got ''"
    x net:Net --input 4 -o ''
}

case_out_is_stdout() {
    expect 2 "-o x.json is also standard output"
    xsh 'exec "$0" "$1" net:Net --input 4 -o x.json > x.json'
    [ ! -s x.json ] || fail "x.json was written"
}

case_out_is_stderr() {
    echo keep > e.txt
    expect 2
    xsh '"$0" "$1" net:Net --input 4 -o e.txt 2>> e.txt; rc=$?; tail -n 1 e.txt >&2; exit $rc'
    grep -q 'memest-export: -o e.txt is also standard error' .err || fail "not refused as standard error"
    [ "$(head -n 1 e.txt)" = keep ] || fail "e.txt was replaced"
}

case_out_is_module() {
    need_torch
    net
    cp net.py net.orig
    expect 2 "-o net.py is the file of module 'net'"
    x net:Net --input 4 -o net.py
    cmp -s net.py net.orig || fail "net.py changed"
    only net.py net.orig
}

case_out_is_imported_module() {
    # any module the model imports is an input too
    need_torch
    echo 'WIDTH = 2' > helper.py
    net '' '' 'import helper'
    cp helper.py helper.orig
    expect 2 "-o ./helper.py is the file of module 'helper'"
    x net:Net --input 4 -o ./helper.py
    cmp -s helper.py helper.orig || fail "helper.py changed"
}

case_stdout_is_module() {
    need_torch
    net
    cp net.py net.orig
    expect 2 "standard output is "
    xsh 'exec "$0" "$1" net:Net --input 4 >> net.py'
    cmp -s net.py net.orig || fail "net.py changed"
}

case_stdout_closed() {
    need_torch
    net
    expect 6 "cannot write to standard output: Bad file descriptor"
    xsh 'exec "$0" "$1" net:Net --input 4 >&-'
}

case_out_chdir_umask_by_model() {
    # the model's constructor changes the directory and the umask: -o is
    # still the file the command line named, with the user's umask
    need_torch
    mkdir sub
    net '' 'os.chdir("sub"); os.umask(0)'
    expect 0
    xsh 'umask 022 && exec "$0" "$1" net:Net --input 4 -o out.json'
    is_model out.json
    [ "$(stat -c %a out.json)" = 644 ] || fail "mode $(stat -c %a out.json), expected 644"
    [ -z "$(ls -A sub)" ] || fail "sub holds $(ls -A sub)"
}

# ---- the model's standard output -------------------------------------------

case_stdout_prints() {
    # print() at import, in the constructor, forward() and a hook, a write to
    # descriptor 1, a subprocess and an atexit handler: all on stderr, the
    # document alone on stdout
    need_torch
    net 'print("in-forward"); os.write(1, b"fd-one\n")
if REC(x): __import__("subprocess").run(["echo", "sub-echo"])' \
        'print("in-init"); self.fc.register_forward_hook(lambda *a: print("in-hook"))' \
        'print("at-import"); __import__("atexit").register(lambda: print("at-exit"))'
    expect 0
    x net:Net --input 4 -o -
    is_model .out
    for w in at-import in-init in-forward fd-one sub-echo in-hook; do
        grep -qx "$w" .err || fail "'$w' is not on stderr"
    done
    only net.py
}

# ---- the model's code raising or ending the process -------------------------

case_exit_in_forward() {
    need_torch
    net 'sys.exit(0)'
    expect 3 "forward() raised SystemExit: 0 (at "
    x net:Net --input 4 -o out.json
    only net.py
}

case_exit_in_recording() {
    need_torch
    net 'if REC(x): sys.exit(0)'
    expect 3 "forward() at batch 2 raised SystemExit: 0"
    x net:Net --input 4 -o out.json
    only net.py
}

case_interrupt_in_forward() {
    need_torch
    net 'if REC(x): raise KeyboardInterrupt'
    expect 3 "forward() at batch 2 raised KeyboardInterrupt"
    x net:Net --input 4 -o -
}

case_exit_at_import() {
    need_torch
    net '' '' 'sys.exit(0)'
    expect 2 "cannot import 'net': SystemExit: 0"
    x net:Net --input 4 -o out.json
    only net.py
}

case_exit_in_constructor() {
    need_torch
    net '' 'raise KeyboardInterrupt'
    expect 2 "cannot build 'net:Net': KeyboardInterrupt"
    x net:Net --input 4 -o out.json
}

case_exit_in_module_getattr() {
    # a module's __getattr__ (PEP 562) is the model's code too
    need_torch
    net '' '' 'def __getattr__(name): sys.exit(0)'
    expect 2 "cannot build 'net:Other': looking up 'Other' raised SystemExit: 0"
    x net:Other --input 4 -o out.json
}

case_base_exception_in_hook() {
    need_torch
    net '' 'class Stop(BaseException): pass
def pre(m, a):
    if REC(a[0]): raise Stop("from a hook")
self.fc.register_forward_pre_hook(pre)'
    expect 3 "forward() at batch 2 raised Stop: from a hook"
    x net:Net --input 4 -o -
}

case_exit_in_train() {
    # the model's own train() (the exporter sets and restores the mode)
    need_torch
    net '' '' ''
    cat >> net.py << 'EOF'
    def train(self, mode=True):
        sys.exit(4)
EOF
    expect 3 "train() raised SystemExit: 4"
    x net:Net --input 4 -o out.json
}

case_os_exit_in_forward() {
    need_torch
    net 'if REC(x): os._exit(0)'
    expect 3 "the process ended while recording at batch 2 (1/2), with no result (exit status 0)"
    x net:Net --input 4 -o out.json
    only net.py
}

case_killed_at_import() {
    need_torch
    net '' '' 'os.kill(os.getpid(), 9)'
    expect 2 "the process ended while building net:Net, with no result (killed by signal 9, SIGKILL)"
    x net:Net --input 4 -o out.json
    only net.py
}

case_swallowed_recorder_error() {
    # forward() catching the recorder's error cannot make a file without the op
    need_torch
    net 'try:
    x = torch.cumsum(x, 1)
except Exception:
    pass'
    expect 3 "unsupported op torch.cumsum"
    x net:Net --input 4 -o out.json
    only net.py
}

case_own_export_error_code_zero() {
    need_torch
    net 'if REC(x): raise __import__("memest_export").ExportError("fake", 0)'
    expect 3 "forward() at batch 2 raised ExportError: fake"
    x net:Net --input 4 -o out.json
    only net.py
}

case_exception_str_exits() {
    # the exception's own __str__ exits: still one line
    need_torch
    net 'if REC(x): raise Odd()' '' 'class Odd(Exception):
    def __str__(self): sys.exit(1)'
    expect 3 "forward() at batch 2 raised Odd"
    x net:Net --input 4 -o out.json
}

case_thread_left_running() {
    # a thread the model leaves running does not keep the command waiting
    need_torch
    net '' '__import__("threading").Thread(target=__import__("time").sleep, args=(600,)).start()'
    expect 0
    x net:Net --input 4 -o out.json
    is_model out.json
}

# ---- outside text in messages ------------------------------------------------

case_esc_exception_text() {
    need_torch
    net 'if REC(x): raise ValueError("\x1b[2J\rgone\x07\nsecond line")'
    expect 3 'raised ValueError: \x1B[2J\x0Dgone\x07 (at'
    x net:Net --input 4 -o out.json
}

case_esc_module_name() {
    need_torch
    expect 2 "cannot import 'no\\x1B[31mpe'"
    x $'no\x1b[31mpe:Net' --input 4
}

case_esc_option() {
    expect 2 'unrecognized arguments: --\x1B[2Jx'
    x net:Net --input 4 $'--\x1b[2Jx'
}

case_esc_invalid_utf8() {
    expect 2 '--input 4\xFF'
    x net:Net --input $'4\xff'
}

case_esc_submodule_name() {
    # a submodule's name (add_module takes any) in the recorder's message
    need_torch
    net 'return self.get_submodule("a\x1bb")(x)' 'self.add_module("a\x1bb", B())' 'class B(nn.Module):
    def forward(self, x): return torch.cumsum(x, 1)'
    expect 3 "in module 'a\\x1Bb' (B)"
    x net:Net --input 4 -o out.json
}

case_esc_warning() {
    # the model's warnings are notes, escaped; the error stays one line
    need_torch
    net 'import warnings; warnings.warn("\x1b[31mred\nsecond")
if REC(x): raise ValueError("no")'
    expect 3 "raised ValueError: no"
    notes_ok
    x net:Net --input 4 -o out.json
    grep -q 'memest-export: note: .*UserWarning: \\x1B\[31mred\\x0Asecond' .err || fail "no escaped note"
    no_raw_control .err
}

case_esc_syntax_error() {
    need_torch
    printf 'def f(:\n    pass\n' > net.py
    expect 2 "cannot import 'net': SyntaxError"
    x net:Net --input 4 -o out.json
}

# ---- numbers -------------------------------------------------------------------

case_input_huge() {
    expect 2 "--input 100000000000000000000: expected a size between 1 and 2^53-1, got '100000000000000000000'"
    x net:Net --input 100000000000000000000
}

case_input_bad_sizes() {
    local v
    for v in 0 -1 1_0 $'\xef\xbc\x93' ' 3' '3,' '3,,4' 1e3 0x10 +3 'int64:'$'\xd9\xa3'; do
        expect 2 "--input $v"
        x net:Net --input "$v"
    done
}

case_input_too_many_dims() {
    expect 2 "--input 1,1,1,1,1,1,1,1: 8 dimensions and the batch's: memest's tensors have at most 8"
    x net:Net --input 1,1,1,1,1,1,1,1
}

case_input_bytes_overflow() {
    expect 2 "past the 2^63-1 bytes a tensor can hold"
    x net:Net --input 9007199254740991,9007199254740991
}

case_input_out_of_memory() {
    need_torch
    net
    expect 2 "--input 9007199254740991: cannot make its example tensor at batch 2 (72057594037927928 bytes): out of memory"
    x net:Net --input 9007199254740991 -o out.json
    only net.py
}

case_batch_dim_bad() {
    local v
    for v in 100000000000000000000 x 2 -3 +1 '1 ' 1.0; do
        expect 2 "--batch-dim"
        x net:Net --input 4 --batch-dim "$v"
    done
}

case_check_batch_bad() {
    local v
    for v in 0 9007199254740992 1e3 -1 ' 2'; do
        expect 2 "--check-batch: expected a whole number between 1 and 2^53-1, got '$v'"
        x net:Net --input 4 --check-batch "$v" --check -o out.json
    done
}

case_check_batch_out_of_memory() {
    need_torch
    net
    expect 2 "--check-batch 9007199254740991: cannot make the example inputs"
    x net:Net --input 4 --check --check-batch 9007199254740991 -o out.json --memest "$MEMEST"
    only net.py
}

case_kwargs_deep() {
    expect 2 "--kwargs: not JSON"
    x net:Net --input 4 --kwargs "$(printf '%.0s[' $(seq 1 100000))"
}
