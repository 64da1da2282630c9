"""Print the table of every `duet` command's arguments and flags, read from the parser.

docs/architecture.md ("Command-line flags") holds its output between the
``<!-- flags-table -->`` markers; tests/test_cli_flags.py fails when the two differ.
After changing a flag:

    PYTHONPATH=src python3 scripts/flags_table.py --write   # rewrite the section
    PYTHONPATH=src python3 scripts/flags_table.py           # print it

Hidden flags (an earlier name kept working, ``help=SUPPRESS``) are not listed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from duetbench.cli import build_parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BEGIN, END = "<!-- flags-table -->", "<!-- /flags-table -->"


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("duet",)
) -> Iterator[tuple[tuple[str, ...], list[argparse.Action]]]:
    """(command path, its actions) for every command and subcommand with arguments."""
    own = [
        a
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction | argparse._HelpAction)
        and a.help != argparse.SUPPRESS
    ]
    if own:
        yield path, own
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def _flag(action: argparse.Action) -> str:
    return "`" + "/".join(action.option_strings) + "`"


def table() -> str:
    """The Markdown table: one row per command, its arguments and its flags."""
    rows = ["| command | arguments | flags | count |", "|---|---|---|---|"]
    total = listed = 0
    for path, actions in commands(build_parser()):
        if path == ("duet",):
            actions = [a for a in actions if a.dest != "version"]
        args = [f"`{a.metavar or a.dest}`" for a in actions if not a.option_strings]
        flags = [_flag(a) for a in actions if a.option_strings]
        total += len(flags)
        listed += 1
        row = [f"`{' '.join(path)}`", ", ".join(args) or "-", ", ".join(flags) or "-"]
        rows.append("| " + " | ".join([*row, str(len(flags))]) + " |")
    rows.append(f"\n{total} flags over {listed} commands and subcommands (`duet --version` aside).")
    return "\n".join(rows) + "\n"


def section(page: str) -> str:
    """The text between the markers of ``page``."""
    return page.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite the section of {PAGE.name}")
    args = ap.parse_args()
    text = table()
    if not args.write:
        sys.stdout.write(text)
        return 0
    page = PAGE.read_text(encoding="utf-8")
    head, rest = page.split(BEGIN, 1)
    PAGE.write_text(f"{head}{BEGIN}\n{text}{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
