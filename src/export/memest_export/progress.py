"""Progress on standard error when it is a terminal, and never otherwise: one
line, "memest-export: recording at batch 2 (1/2)", rewritten in place and
erased when the work ends, as memest's own progress line (no colour)."""
import sys


class Progress:
    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.on = bool(isatty and isatty())
        self.width = 0

    def step(self, text):
        """Shows `text` as the current stage (nothing when not a terminal)."""
        if not self.on:
            return
        line = "memest-export: " + text
        self.stream.write("\r" + line + " " * max(0, self.width - len(line)))
        self.stream.flush()
        self.width = len(line)

    def end(self):
        """Erases the line."""
        if self.on and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
        self.width = 0
