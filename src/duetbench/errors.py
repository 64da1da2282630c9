"""Errors a user can cause.

Every error that bad input can trigger is a :class:`DuetError`; the CLI prints
its message (no traceback) and exits with status 2. Messages say what to change.
"""

from __future__ import annotations

from pathlib import Path


class DuetError(Exception):
    """Base class of every error caused by user input (configs, result files, flags)."""

    exit_code = 2


class ConfigError(DuetError):
    """A `duet.yml` that cannot be used: names file, line and key."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        self.detail = message
        where = ""
        if self.file:
            where = self.file
            if line is not None:
                where += f", line {line}"
            where += ": "
        keypart = f"key '{key}': " if key else ""
        super().__init__(f"{where}{keypart}{message}")


class ResultFileError(DuetError):
    """A harness result file that is malformed or truncated."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.detail = message
        where = self.path + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class ResultsDirError(DuetError):
    """A results directory that cannot be used as asked (exists without --resume, not ours...)."""


class ExecutorError(DuetError):
    """An executor that cannot run here (no container engine, bad CPU list...)."""


class AnalysisError(DuetError):
    """Input to the analysis that cannot give an answer (no pairs, missing columns...)."""
