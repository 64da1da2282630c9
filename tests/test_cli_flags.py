"""Every flag of every `duet` command, walked through the parser: one meaning per flag
name across commands, a help text for every argument, and the default in it.

A flag name that two commands share must mean the same thing in both: a user who
learnt `--budget` in `duet run` (per benchmark x method) must not get the whole
experiment's budget from `duet micro`, nor `--repo` the git repository in one command
and the results repository in another, nor `duet run --version` a version label where
`duet --version` is the program's. :data:`MEANINGS` states each shared flag's one
meaning as words its help must say; a flag newly shared by two commands fails here until
its meaning is written down. One idea has one name: a hidden alias (:data:`ALIASES`) only
keeps an earlier name working. A flag that does nothing without another is an error.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers import TINY

from duetbench import cli
from duetbench.cli import build_parser
from duetbench.commands import COMMANDS

#: flag -> a pattern every help text of the flag matches (its one meaning)
MEANINGS: dict[str, str] = {
    "-o": r".",  # where the command's output goes (the command's own output)
    "--output": r".",
    "--format": r"^output format: ",
    "--repo": r"the results repository: a file \(SQLite\) or a postgresql:// URL",
    "--git": r"git checkout",
    "--versions": r"versions the experiment compared",
    "--budget": r"machine time per benchmark x method",
    "--threshold": r"practical threshold",
    "--until": r"precise:P",
    "--max-runs": r"most repetitions per benchmark x method",
    "--build": r"build command",
    "--only": r"only this benchmark",
    "--executor": r"where the sides (?:would )?run",
    "--resume": r"continue",
    # verbose: more of the same output (a line per run, every note in full)
    "-v": r"a status line per run|every note in full",
    "--verbose": r"a status line per run|every note in full",
    "--fail-on-regression": r"^exit 1 when ",
    "--method": r"method|sduet|auto",
    "--seed": r"seed",
    "--benchmark": r"benchmark",
    "--suite": r"suite",
    "--host": r"host",
    "--last": r"from the last N experiments",
    "--run-stat": r"how a run's (?:pairs|samples) are summarized",
    "--warmup": r"iterations dropped per run and side",
    "--test": r"what drives the verdict",
    "--interval": r"interval over run-level values",
    "--resamples": r"bootstrap resamples",
    "--confidence": r"confidence level",
    "--min-overlap": r"aduet pairing|single m",
    "--overlap-rate": r"aduet pairing",
    "--min-run-pairs": r"leave out runs with fewer pairs",
    "--winsorize": r"winsorize",
    "--cluster-by": r"resampling unit",
    "--slowdowns": r"slowdowns",
    "--aa": r"A/A",
    "--shuffles": r"re-pairings",
    "--span": r"runtime speedup",
    "--build-timeout": r"how long one build may take",
    # where it runs, as the config's `cpus:` (a placement or a list of CPUs)
    "--cpus": r"CPU",
    "--measure": r"what an? (?:sample|iteration)'s time is",
    "--keep-unbalanced": r"keep duet runs whose sides got unequal CPU shares",
}
#: flags of `duet` itself that no command may reuse for something else
PROGRAM_FLAGS = ("--version", "--debug")
#: hidden flag -> the flag it is another name of (an earlier release's name, still read)
ALIASES = {"--history": "--repo"}


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("duet",)
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """(command path, action) for every argument of every (sub)command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield path, action


ACTIONS = list(walk(build_parser()))


def test_every_command_is_walked() -> None:
    walked = {path[1] for path, _ in ACTIONS if len(path) > 1}
    assert walked == set(COMMANDS)
    history = {path[2] for path, _ in ACTIONS if path[:2] == ("duet", "history")}
    assert {"add", "list", "show", "changes", "mark", "unmark", "marks", "remove"} <= history


def hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS


def test_a_flag_name_shared_by_commands_has_one_meaning() -> None:
    by_flag: dict[str, list[tuple[str, str]]] = {}
    for path, action in ACTIONS:
        if hidden(action):
            continue
        for flag in action.option_strings:
            by_flag.setdefault(flag, []).append((" ".join(path), action.help or ""))
    shared = {f: uses for f, uses in by_flag.items() if len({p for p, _ in uses}) > 1}
    unexplained = sorted(set(shared) - set(MEANINGS) - set(PROGRAM_FLAGS))
    assert not unexplained, f"shared flags without a stated meaning in MEANINGS: {unexplained}"
    for flag, uses in shared.items():
        pattern = MEANINGS.get(flag)
        for command, text in uses:
            assert pattern is not None and re.search(pattern, text), (flag, command, text)


@pytest.mark.parametrize("flag", PROGRAM_FLAGS)
def test_the_programs_own_flags_belong_to_no_command(flag: str) -> None:
    """`duet --version` prints duetbench's version; `duet run --version` must not mean a
    version label."""
    users = [
        " ".join(path) for path, a in ACTIONS if flag in a.option_strings and path != ("duet",)
    ]
    assert users == []


def test_a_hidden_flag_is_another_name_of_a_shown_one() -> None:
    """`--history REPO` (run, gate, bisect, plan: the results repository's name there in
    earlier releases) sets what `--repo` sets; `--help` shows only `--repo`."""
    users = set()
    for path, action in ACTIONS:
        if not hidden(action):
            continue
        (flag,) = action.option_strings
        assert flag in ALIASES, f"{' '.join(path)} {flag}: hidden, but no alias"
        shown = [a for p, a in ACTIONS if p == path and ALIASES[flag] in a.option_strings]
        assert len(shown) == 1 and shown[0].dest == action.dest, (path, flag)
        users.add(path[1])
    assert users == {"run", "gate", "bisect", "plan"}
    parser = build_parser()
    for argv in (["run", "x.yml"], ["gate", "x.yml"], ["plan", "x.yml"]):
        old = parser.parse_args([*argv, "--history", "perf.sqlite"])
        new = parser.parse_args([*argv, "--repo", "perf.sqlite"])
        assert old.repo == new.repo == "perf.sqlite"


def test_every_argument_has_help_and_its_default() -> None:
    missing, no_default = [], []
    for path, action in ACTIONS:
        name = "/".join(action.option_strings) or action.dest
        if not action.help:
            missing.append(f"{' '.join(path)} {name}")
        elif (
            action.option_strings
            and action.default not in (None, False, argparse.SUPPRESS)
            and "default" not in action.help
        ):
            no_default.append(f"{' '.join(path)} {name} (default {action.default!r})")
    assert not missing, f"arguments without help: {missing}"
    assert not no_default, f"defaults not stated in --help: {no_default}"


def test_the_budget_means_the_same_in_run_micro_gate_and_bisect() -> None:
    texts = {path[1]: a.help or "" for path, a in ACTIONS if "--budget" in a.option_strings}
    assert set(texts) == {"run", "micro", "gate", "bisect"}
    for command, text in texts.items():
        assert "machine time per benchmark x method" in text, (command, text)
        assert "whole experiment" not in text, (command, text)


def test_plan_help_describes_every_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["plan", "--help"])
    text = capsys.readouterr().out
    for words in ("the duet.yml", "only this benchmark", "where the sides", "output format"):
        assert words in text, text


BISECT = ["bisect", "--good", "c0", "--bad", "c1"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "tiny.yml", "--last", "5"], "--last does nothing without --repo REPO"),
        (["run", "tiny.yml", "--versions", "v1"], "--versions does nothing without --repo REPO"),
        (["run", "tiny.yml", "--git", "."], "--git does nothing without --repo REPO"),
        (["run", "tiny.yml", "--repo", "p.sqlite", "--last", "5"],
         "--last does nothing without a stopping rule"),
        (["gate", "tiny.yml", "--last", "5"], "--last does nothing without --repo REPO"),
        ([*BISECT, "tiny.yml", "--last", "5"], "--last does nothing without --repo REPO"),
        (["gate", "tiny.yml", "--build-timeout", "5m"],
         "--build-timeout does nothing without --build CMD"),
        ([*BISECT, "tiny.yml", "--build-timeout", "5m"],
         "--build-timeout does nothing without --build CMD"),
        (["plan", "tiny.yml", "--host", "ab12"], "--host does nothing without --repo REPO"),
        (["plan", "tiny.yml", "--last", "3"], "--last does nothing without --repo REPO"),
        (["compare", "res", "-o", "out.txt"], "-o/--output does nothing without --format json"),
        (["compare", "res", "--format", "json", "-v"], "-v/--verbose does nothing without"),
        (["evaluate", "res", "-o", "out.txt"], "-o/--output does nothing without --format json"),
        (["history", "changes", "--repo", "p.sqlite", "-o", "out.txt"],
         "-o/--output does nothing without --format json"),
    ],
)  # fmt: skip
def test_a_flag_that_does_nothing_without_another_is_an_error(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv, said
) -> None:
    """Refused with exit 2 before anything is read, measured or created."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yml").write_text(TINY)
    assert cli.main(argv) == 2
    assert said in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yml"]


def _flags_table_script():  # noqa: ANN202 - the module of scripts/flags_table.py
    path = Path(__file__).resolve().parents[1] / "scripts" / "flags_table.py"
    spec = importlib.util.spec_from_file_location("flags_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_page_lists_every_commands_flags() -> None:
    """docs/architecture.md, "Command-line flags", is the parser's table (rewrite it with
    `PYTHONPATH=src python3 scripts/flags_table.py --write`)."""
    script = _flags_table_script()
    page = script.PAGE.read_text(encoding="utf-8")
    assert script.section(page) == script.table(), "run scripts/flags_table.py --write"
    shown = sum(len(a.option_strings) > 0 and not hidden(a) for p, a in ACTIONS)
    assert f"{shown} flags over " in script.table()
