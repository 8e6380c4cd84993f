"""Progress on standard error when it is a terminal, and never otherwise: one
line, "memest-export: recording at batch 2 (1/2)", rewritten in place and
erased when the work ends, as memest's own progress line (no colour). The
text is escaped (it names the model as the command line gives it)."""
import os

from .errors import write_all
from .escape import cut


class Progress:
    def __init__(self, fd=2):
        """fd: the descriptor of standard error (the command's own copy)."""
        self.fd = fd
        try:
            self.on = os.isatty(fd)
        except (OSError, TypeError, ValueError):
            self.on = False
        self.width = 0

    def _write(self, text):
        try:
            write_all(self.fd, text.encode("utf-8"))
        except OSError:
            self.on = False

    def step(self, text):
        """Shows `text` as the current stage (nothing when not a terminal)."""
        if not self.on:
            return
        line = "memest-export: " + cut(text, 100)
        self._write("\r" + line + " " * max(0, self.width - len(line)))
        self.width = len(line)

    def end(self):
        """Erases the line."""
        if self.on and self.width:
            self._write("\r" + " " * self.width + "\r")
        self.width = 0
