"""Errors of memest-export and their exit codes (README.md, "memest-export")."""

EXIT_OK = 0
EXIT_USAGE = 2        # a bad command line: option values, a model that cannot be imported or built
EXIT_EXPORT = 3       # the model cannot be exported: untraceable, an op memest has no type for, ...
EXIT_MISMATCH = 4     # --check: memest's figures differ from the module's
EXIT_MEMEST = 5       # --check: memest could not be run or refused the file
EXIT_OUTPUT = 6       # the output file cannot be written


class ExportError(Exception):
    """A one-line message and the exit code the command returns for it."""

    def __init__(self, message, code=EXIT_EXPORT):
        super().__init__(message)
        self.code = code


class UsageError(ExportError):
    def __init__(self, message):
        super().__init__(message, EXIT_USAGE)
