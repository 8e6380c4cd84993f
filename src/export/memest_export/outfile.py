"""The files memest-export writes, as memest writes its own (src/base/outfile.c,
include/memest/outfile.h): whole or not at all, and never onto an input or
standard output. Needs no PyTorch.

A target that is a regular file, or does not exist, is written to a
temporary file in its directory (".NAME.XXXXXXXX" from mkstemp; through a
symbolic link, in the linked file's directory), which is renamed onto it
once complete: a failure leaves the target as it was and removes the
temporary. The new file gets the old one's permissions, or 0666 less the
umask. A target that exists and is not a regular file (/dev/stdout,
/dev/null, a FIFO, a terminal) is written directly: it cannot be replaced,
and is never renamed over. A failure is ExportError(EXIT_OUTPUT), "cannot
write PATH: REASON" with the system's reason."""

import os
import stat
import sys
import tempfile

from .errors import EXIT_OUTPUT, ExportError, UsageError, write_all


def _fail(path, e):
    reason = getattr(e, "strerror", None) or "a write failed"
    return ExportError("cannot write %s: %s" % (path, reason), EXIT_OUTPUT)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(path, data):
    """Writes bytes `data` to `path` as above; raises ExportError (exit 6)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        st = os.stat(path)
    except (OSError, ValueError):   # absent, or not reachable: the temporary's creation says why
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        # a device, a FIFO, a terminal: written in place, as fopen(path, "w") does
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        except OSError as e:
            raise _fail(path, e)
        try:
            write_all(fd, data, wait=True)
        except OSError as e:
            os.close(fd)
            raise _fail(path, e)
        try:
            os.close(fd)
        except OSError as e:
            raise _fail(path, e)
        return
    if st is not None:
        if not os.access(path, os.W_OK):    # a file the user may not write stays as it is
            raise _fail(path, PermissionError(13, os.strerror(13)))
        target = os.path.realpath(path)     # through symbolic links
        mode = stat.S_IMODE(st.st_mode)
    else:
        target = path
        mode = 0o666 & ~_umask()
    folder, name = os.path.split(target)
    # the name cut to 100 bytes, so that the temporary's stays within the limit
    prefix = "." + os.fsdecode(os.fsencode(name)[:100]) + "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder or ".")
    except OSError as e:
        raise _fail(path, e)
    try:
        try:
            os.fchmod(fd, mode)
            write_all(fd, data, wait=True)
        finally:
            os.close(fd)
        os.rename(tmp, target)
    except BaseException as e:   # KeyboardInterrupt too: the temporary never stays
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _fail(path, e)
        raise


def write_stdout(data, fd=1):
    """Writes bytes `data` to standard output (descriptor fd); ExportError
    (exit 6) "cannot write to standard output: REASON" when it fails."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        write_all(fd, data, wait=True)
    except OSError as e:
        raise ExportError("cannot write to standard output: %s" % (e.strerror or "a write failed"),
                          EXIT_OUTPUT)


# ---- paths that must not be written --------------------------------------

def file_id(path=None, fd=None):
    """(device, inode) of the regular file at path (following links) or open
    as descriptor fd; None when it is no regular file."""
    try:
        st = os.fstat(fd) if fd is not None else os.stat(path)
    except (OSError, ValueError, TypeError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def std_ids():
    """{1: id, 2: id}: the regular files standard output and error are (file_id)."""
    return {fd: file_id(fd=fd) for fd in (1, 2)}


def check_output_path(opt, path, stds):
    """Refuses (UsageError) an output path that is empty, or the regular file
    standard output or standard error is (the one would overwrite the other);
    stds as std_ids() gives it. Run before any work."""
    if path == "":
        raise UsageError("%s: expected a file name, got ''" % opt)
    if path == "-":
        return
    me = file_id(path)
    for fd, what in ((1, "standard output"), (2, "standard error")):
        if me is not None and stds.get(fd) == me:
            raise UsageError("%s %s is also %s: one would overwrite the other" % (opt, path, what))


def module_files():
    """{(device, inode): (module name, file)} of every Python module loaded now
    (the model's own module, what it imported, this program): the files an
    output must not overwrite."""
    import types
    out = {}
    for name, m in list(sys.modules.items()):
        try:
            if not issubclass(type(m), types.ModuleType):
                continue
            f = types.ModuleType.__getattribute__(m, "__dict__").get("__file__")
            if not isinstance(f, str):
                continue
        except Exception:
            continue
        fid = file_id(f)
        if fid is not None:
            out.setdefault(fid, (name, f))
    return out


def check_not_source(opt, shown, path, stdout_id):
    """Refuses (UsageError) an output that is the file of a loaded module: the
    model's .py file, one it imports, this program's. path "-" is standard
    output, whose file is stdout_id (file_id); shown is the path as given."""
    mods = module_files()
    if path == "-":
        hit = mods.get(stdout_id) if stdout_id is not None else None
        if hit is not None:
            raise UsageError("standard output is %s, the file of module '%s': it would be overwritten"
                             % (hit[1], hit[0]))
        return
    fid = file_id(path)
    hit = mods.get(fid) if fid is not None else None
    if hit is not None:
        raise UsageError("%s %s is the file of module '%s' (%s): it would be overwritten"
                         % (opt, shown, hit[0], hit[1]))
