"""The `duet` command: the parser built from ``duetbench.commands``, errors to exit statuses.

Every command lives in its own module of :mod:`duetbench.commands` (listed in
``COMMANDS``); this module only assembles them, runs the chosen one, and maps
errors to exit statuses (:class:`~duetbench.errors.ExitCode`, README.md "Exit status"):
a :class:`~duetbench.errors.DuetError` prints its message (``--debug`` or
``DUET_DEBUG``: its traceback) and exits with its code, Ctrl-C exits 130, a closed
pipe 0. SIGTERM (how CI cancels a job) and SIGHUP (a closed terminal) end every command as
Ctrl-C does (:func:`terminating_signals_interrupt`), so the cleanup of whatever phase it is
in runs: worktrees, workers, temporary files.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from types import FrameType

from ._version import __version__
from .commands import COMMANDS, SUMMARY, add_command
from .errors import DuetError, ExitCode
from .text import visible


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, counting the indentation of the command names when it sizes
    the name column, so a long name (``dashboard``) sits beside its help, not above it."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction) and action.choices:
            longest = max(len(name) for name in action.choices)
            indented = self._current_indent + 2 * self._indent_increment + longest
            self._action_max_length = max(self._action_max_length, indented)


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; each subparser's ``func`` is its module's ``run``.

    ``commands``: only these are built in full (their modules imported); the others are
    listed by name and summary, which is all `duet --help` and a parse of one command's
    line need (the default: every command in full)."""
    parser = argparse.ArgumentParser(
        prog="duet",
        description="A/B performance comparison with duet benchmarking.",
        epilog="documentation: `duet help` lists the pages; a message citing "
        "docs/NAME.md is read with `duet help NAME`. Start with `duet help getting-started`.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"duetbench {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        if commands is not None and name not in commands:
            sub.add_parser(name, help=SUMMARY[name])
            continue
        add_command(sub, name)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The command a command line names: its first word that is no option (duet's own
    options take no value), or None."""
    return next((w for w in argv if not w.startswith("-")), None)


#: signals that end duet as Ctrl-C does
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def terminating_signals_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does.

    Without this they end the interpreter at once: no ``finally`` runs, so a gate left
    its worktrees and a micro calibration its worker. With it, every phase of every
    command cleans up as on Ctrl-C (exit 130). A signal that is ignored (``nohup``)
    stays ignored."""
    previous = {}
    for sig in TERMINATING:
        try:
            if signal.getsignal(sig) != signal.SIG_IGN:
                previous[sig] = signal.signal(sig, _interrupt)
        except ValueError:  # not the main thread (an embedding program's worker)
            break
    try:
        yield
    finally:
        for sig, prev in previous.items():
            signal.signal(sig, prev)


def main(argv: list[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    # only the named command is built: `duet --help` and `duet COMMAND --help` import
    # no other command's module
    parser = build_parser([c for c in [command_of(given)] if c in COMMANDS])
    args = parser.parse_args(given)
    args.argv = given  # the command line as typed, for hints that repeat it (--resume)
    try:
        with terminating_signals_interrupt():
            return int(args.func(args) or 0)
    except DuetError as exc:
        if args.debug or os.environ.get("DUET_DEBUG"):
            raise
        cited = docs_hint(str(exc))
        text = visible(str(exc), lines=True)
        print(f"duet: error: {text}" + (f" [{cited}]" if cited else ""), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("duet: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK


_CITED = re.compile(r"\bdocs/([\w/-]+)\.md\b")


def docs_hint(message: str) -> str | None:
    """The commands that print the pages a message cites (``docs/NAME.md``) wherever
    duetbench is installed, ``duet help NAME`` (None when it cites none); the error's
    line ends with them."""
    names = list(dict.fromkeys(_CITED.findall(message)))
    if not names:
        return None
    return ", ".join(f"duet help {n}" for n in names)


if __name__ == "__main__":
    sys.exit(main())
