"""Errors a user can cause.

Every error that bad input can trigger is a :class:`DuetError`; the CLI prints
its message (no traceback) and exits with status 2. Messages say what to change.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """The exit status of every `duet` command (README.md, "Exit status")."""

    OK = 0
    REGRESSION = 1  # --fail-on-regression: a "slower" verdict (compare), a slower change (history)
    USAGE = 2  # bad flags, config, input files (a DuetError)
    INCONCLUSIVE = 3  # reserved: a gate or stopping rule that cannot decide yet
    RUNS_FAILED = 4  # `duet run` finished, but some runs failed, timed out or hung
    INTERRUPTED = 130  # Ctrl-C or SIGTERM; `duet run --resume` continues


class DuetError(Exception):
    """Base class of every error caused by user input (configs, result files, flags)."""

    exit_code = ExitCode.USAGE


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


class OptionError(AnalysisError):
    """An option of the analysis with a value it cannot take.

    ``option`` is the keyword (``min_overlap``); the command line names it as its flag
    (:meth:`as_flag`: ``--min-overlap``). ``label`` replaces the keyword in the library's
    message where a phrase reads better ("minimum overlap").
    """

    def __init__(self, option: str, problem: str, value: object, *, label: str | None = None):
        self.option = option
        self.problem = problem
        self.value = value
        super().__init__(f"{label or option} {problem}, got {value!r}")

    def as_flag(self) -> DuetError:
        """The same error worded for the command line."""
        return DuetError(f"--{self.option.replace('_', '-')} {self.problem}, got {self.value!r}")
