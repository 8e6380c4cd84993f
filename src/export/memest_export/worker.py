"""The model's code runs in a process of its own.

memest-export forks before it imports PyTorch: the child imports the
model's module, builds the model, records it and sends back the document
(or one error) through a pipe; the parent, which runs none of the model's
code, writes the output file and runs --check's memest. So nothing the
model's code does can write where the output goes or end the command with
a wrong exit code:

- its standard output is standard error (print() never reaches `-o -`),
  in the child at the descriptor level (C code and subprocesses too);
- whatever it raises (SystemExit, KeyboardInterrupt, a BaseException of its
  own) is the child's one error message, never an exit of the command;
- os._exit(), a signal, a crash of an extension, the kernel's OOM killer
  end the child only: the parent says so (exit 3, 2 while importing);
- chdir(), umask(), a patched os or builtins, closed descriptors, threads
  left running, atexit handlers: the child's, which ends with os._exit()
  once it has sent its result;
- its warnings, the exceptions of its threads and of its __del__ are notes
  (one escaped line each), not tracebacks.

Without os.fork (not POSIX) the work runs in the process itself."""

import json
import os
import select
import signal
import struct
import sys

from .errors import (EXIT_EXPORT, EXIT_INTERNAL, ExportError, describe, exit_code, note, safe_str,
                     set_stderr_fd, write_all)
from .progress import Progress

_HEAD = struct.Struct(">Q")


class Channel:
    """The child's end: stages (shown as progress, and named by the parent if
    the child dies in one) and the result."""

    def __init__(self, fd, progress):
        self.fd, self.progress = fd, progress

    def _send(self, obj):
        if self.fd is None:
            return
        data = json.dumps(obj).encode("utf-8")
        write_all(self.fd, _HEAD.pack(len(data)) + data)

    def stage(self, text, code=EXIT_EXPORT):
        """The work is now `text` (progress), exit `code` if the process dies in it."""
        self.progress.step(text)
        try:
            self._send({"stage": text, "code": code})
        except OSError:
            pass


def _status(st):
    if os.WIFSIGNALED(st):
        n = os.WTERMSIG(st)
        try:
            name = signal.Signals(n).name
        except ValueError:
            name = "?"
        return "killed by signal %d, %s" % (n, name)
    if os.WIFEXITED(st):
        return "exit status %d" % os.WEXITSTATUS(st)
    return "status %d" % st


def _setup_child():
    """The child's standard output becomes its standard error; messages keep a
    copy of standard error of their own; warnings and ignored exceptions are
    notes."""
    try:
        err = os.dup(2)
        set_stderr_fd(err)
    except OSError:
        err = None
    try:
        import fcntl
        writable = err is not None and fcntl.fcntl(2, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
    except OSError:
        writable = False
    if writable:
        os.dup2(2, 1)
    else:   # standard error closed (held by /dev/null, read only): what is printed is dropped
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = sys.stderr
    sys.dont_write_bytecode = True    # no __pycache__ beside the model's module
    _notes()
    return err


def _notes():
    import threading
    import warnings

    def showwarning(message, category, filename, lineno, file=None, line=None):
        note("%s:%s: %s: %s" % (safe_str(filename), lineno, getattr(category, "__name__", "Warning"),
                                safe_str(message)))

    def unraisable(u):
        note("ignored %s in %s" % (describe(u.exc_value), safe_str(u.object, conv=repr)))

    def thread_exc(a):
        note("thread %s raised %s" % (safe_str(getattr(a.thread, "name", "?")), describe(a.exc_value)))

    warnings.showwarning = showwarning
    sys.unraisablehook = unraisable
    threading.excepthook = thread_exc


def _flush_streams():
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if s is not None:
                s.flush()
        except BaseException:
            pass


def _own_line(exc):
    """file:line of the innermost frame of exc's traceback (a bug's place)."""
    try:
        import traceback
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            return "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno)
    except Exception:
        pass
    return None


def outcome(work, chan):
    """Runs work(chan): ("ok", value) or ("error", code, message)."""
    try:
        return ("ok", work(chan))
    except ExportError as e:
        return ("error", exit_code(e.code), str(e))
    except MemoryError:
        return ("error", EXIT_EXPORT, "out of memory")
    except BaseException as e:  # noqa: B902 - nothing ends the command unreported
        from .errors import user_line
        if user_line(e):        # raised in the model's code, outside the places that say which
            return ("error", EXIT_EXPORT, "the model's code raised %s" % describe(e))
        where = _own_line(e)
        return ("error", EXIT_INTERNAL, "internal error: %s%s" % (describe(e, where=False),
                                                               " (at %s)" % where if where else ""))


def run(work):
    """work(chan) in a child process; returns its value (JSON data) or raises
    ExportError with the child's error, or the parent's account of its end."""
    if hasattr(os, "fork"):
        result = _forked(work)
    else:
        progress = Progress()
        try:
            result = outcome(work, Channel(None, progress))
        finally:
            progress.end()
    if result[0] == "ok":
        return result[1]
    raise ExportError(result[2], exit_code(result[1]))


def _forked(work):
    """outcome(work, chan) in a child process: its result (a list); ExportError
    when the child ends without one."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        try:
            os.close(rfd)
            err = _setup_child()
            progress = Progress(err if err is not None else 2)
            chan = Channel(wfd, progress)
            res = outcome(work, chan)
            _flush_streams()
            progress.end()
            msg = {"result": list(res)}
            try:
                chan._send(msg)
            except (OSError, ValueError, TypeError):
                chan._send({"result": ["error", EXIT_INTERNAL, "internal error: the result cannot be sent"]})
        except BaseException:
            pass
        finally:
            os._exit(0)
    os.close(wfd)
    try:
        stage, result, status = _collect(rfd, pid)
    except BaseException:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        raise
    finally:
        os.close(rfd)
    if result is None:
        what, code = stage if stage else ("starting", EXIT_INTERNAL)
        raise ExportError("the process ended while %s, with no result (%s): the model's code ended it "
                          "or it crashed" % (what, _status(status)), code)
    return result


def _collect(rfd, pid):
    """Reads the child's messages until its result; returns (last stage as
    (text, code), result or None, wait status)."""
    buf = bytearray()
    stage, result, status, done = None, None, None, False
    while result is None:
        if done:   # the child is gone: what it left in the pipe, then stop
            r = select.select([rfd], [], [], 0)[0]
        else:
            r = select.select([rfd], [], [], 0.2)[0]
        chunk = b""
        if r:
            chunk = os.read(rfd, 1 << 16)
            buf += chunk
            while len(buf) >= _HEAD.size:
                (n,) = _HEAD.unpack_from(buf)
                if len(buf) < _HEAD.size + n:
                    break
                try:
                    msg = json.loads(bytes(buf[_HEAD.size:_HEAD.size + n]).decode("utf-8"))
                except ValueError:
                    msg = {}
                del buf[:_HEAD.size + n]
                if isinstance(msg, dict) and "stage" in msg:
                    stage = (str(msg["stage"]), msg.get("code", EXIT_EXPORT))
                elif isinstance(msg, dict) and isinstance(msg.get("result"), list) and msg["result"]:
                    result = msg["result"]
                    break
        if result is not None:
            break
        if done and not chunk:
            break
        if not done:
            if r and not chunk:           # end of file: the child (and all it forked) closed the pipe
                _, status = os.waitpid(pid, 0)
                done = True
                continue
            w, st = os.waitpid(pid, os.WNOHANG)
            if w == pid:
                status, done = st, True
    if status is None:
        _, status = os.waitpid(pid, 0)
    return stage, result, status
