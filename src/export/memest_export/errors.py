"""Errors of memest-export, their exit codes and the one way messages are
printed (doc/memest-export.md). Needs no PyTorch.

Every message is one line on standard error, "memest-export: ...", with the
outside text in it (the model's exception text, names, file names, the
command line) escaped as memest escapes it (escape.py). The model's code
is anything the exporter runs of the user's: the module's import, the class
or builder, forward() and the hooks it runs, the model's methods, the
__str__ of its exceptions; whatever it raises (BaseException: SystemExit and
KeyboardInterrupt too) is reported by describe(), never passed on."""

import os
import select
import sys

from .escape import PIECE, cut, esc_text

EXIT_OK = 0
EXIT_USAGE = 2        # a bad command line: option values, a model that cannot be imported or built
EXIT_EXPORT = 3       # the model cannot be exported: untraceable, an op memest has no type for, ...
EXIT_MISMATCH = 4     # --check: memest's figures differ from the module's
EXIT_MEMEST = 5       # --check: memest could not be run or refused the file
EXIT_OUTPUT = 6       # the output file cannot be written
EXIT_INTERNAL = 7     # a bug of memest-export itself
DOCUMENTED = (EXIT_OK, EXIT_USAGE, EXIT_EXPORT, EXIT_MISMATCH, EXIT_MEMEST, EXIT_OUTPUT, EXIT_INTERNAL)


class ExportError(Exception):
    """A one-line message (escaped: it may carry outside text) and the exit
    code the command returns for it."""

    def __init__(self, message, code=EXIT_EXPORT):
        super().__init__(esc_text(message))
        self.code = code


class UsageError(ExportError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)


def exit_code(code):
    """A failure's exit code, one of the documented ones (an ExportError the
    model's code made itself could carry any, 0 included)."""
    return code if code in DOCUMENTED and code != EXIT_OK else EXIT_INTERNAL


def _raw_str(obj, conv=str):
    try:
        s = conv(obj)
        if isinstance(s, str):
            return s
    except BaseException:  # noqa: B902 - the model's code: anything
        pass
    try:
        return "<%s object>" % type(obj).__name__
    except BaseException:
        return "<object>"


def safe_str(obj, limit=PIECE, conv=str):
    """str(obj) (or repr, conv=repr) escaped and cut, for a message: obj may be
    the model's own object, whose __str__ may raise anything or return anything."""
    return cut(_raw_str(obj, conv), limit)


def _own_dirs():
    """Folders whose frames are not the model's code: this package, PyTorch
    (when imported; torchvision beside it is the model's code), Python's own."""
    dirs = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    torch = sys.modules.get("torch")
    tf = getattr(torch, "__file__", None) if torch is not None else None
    if isinstance(tf, str):
        dirs.append(os.path.dirname(os.path.abspath(tf)) + os.sep)
    import sysconfig
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.append(os.path.abspath(p) + os.sep)
    return dirs


def user_line(exc):
    """file:line of the innermost frame of the model's code in exc's traceback
    (None when none is)."""
    try:
        import traceback
        dirs = _own_dirs()
        best = None
        for fs in traceback.extract_tb(exc.__traceback__):
            if fs.filename.startswith("<"):
                continue
            fn = os.path.abspath(fs.filename)
            if not any(fn.startswith(d) for d in dirs):
                best = "%s:%d" % (fn, fs.lineno)
        return best
    except Exception:
        return None


def describe(exc, where=True):
    """'TYPE: the first line of its text (at FILE:LINE)' of an exception the
    model's code raised, safe to print whatever the exception is."""
    try:
        name = type(exc).__name__
    except BaseException:
        name = "exception"
    lines = [ln for ln in _raw_str(exc).split("\n") if ln.strip()]
    first = cut(lines[0].strip()) if lines else ""
    s = "%s: %s" % (name, first) if first else name
    line = user_line(exc) if where else None
    return s + (" (at %s)" % line if line else "")


def write_all(fd, data, wait=False):
    """Writes all of bytes `data` to descriptor fd, again after a signal
    (InterruptedError); any other OSError is raised. A non-blocking fd that
    takes no more (BlockingIOError) is waited for (select) with wait=True,
    else raised as the OSError it is."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            if not wait:
                raise
            select.select([], [fd], [])
            continue
        view = view[n:]


# ---- the one place messages are printed ----------------------------------

_err_fd = [2]


def set_stderr_fd(fd):
    """Messages go to descriptor fd (the command keeps its own copy of
    standard error, whatever the model's code does to sys.stderr)."""
    _err_fd[0] = fd


def say(text):
    """Prints "memest-export: TEXT" (escaped) as one line on standard error."""
    data = ("memest-export: %s\n" % esc_text(text)).encode("utf-8", "surrogateescape")
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    try:
        write_all(_err_fd[0], data)
    except OSError:
        pass


def note(text):
    say("note: " + text)
