"""The test tiers (tests/tiers.py, DEVELOPERS.md "Test tiers"): markers applied from what a
test calls, a check of them while tests run, and one end-to-end smoke per command."""

from __future__ import annotations

import ast
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import run_duet
from tests.tiers import ProcessWatch, classify

from duetbench.commands import COMMANDS

TESTS = Path(__file__).resolve().parent


@dataclass
class FakeItem:
    """What classify reads of a pytest item."""

    obj: Any
    fixturenames: tuple[str, ...] = ()
    callspec: Any = None
    _fixtureinfo: Any = None
    nodeid: str = "fake"
    markers: list[str] = field(default_factory=list)


def _pure() -> int:
    text = "executor: podman, run subprocess.run"  # words in strings start nothing
    return len(text)


def _helper_that_runs_duet() -> None:
    run_duet("--version")


def _calls_a_helper() -> None:
    _helper_that_runs_duet()


def _needs_podman() -> None:
    from tests.helpers import podman

    podman("ps")


def test_markers_follow_what_a_test_calls_not_what_its_strings_say() -> None:
    assert classify(FakeItem(_pure)) == (False, False)  # type: ignore[arg-type]
    assert classify(FakeItem(_helper_that_runs_duet)) == (True, False)  # type: ignore[arg-type]
    assert classify(FakeItem(_calls_a_helper)) == (True, False)  # type: ignore[arg-type]
    assert classify(FakeItem(_needs_podman)) == (True, True)  # type: ignore[arg-type]
    assert classify(FakeItem(_pure, fixturenames=("image",))) == (True, True)  # type: ignore[arg-type]

    @dataclass
    class Spec:
        params: dict[str, Any]

    on_postgres = FakeItem(_pure, callspec=Spec({"repo_url": "postgresql"}))
    assert classify(on_postgres) == (True, True)  # type: ignore[arg-type]


def test_the_watch_sees_every_process_a_test_starts() -> None:
    watch = ProcessWatch()
    watch.install()
    try:
        watch.current = "t"
        subprocess.run(["true"], check=True)
        subprocess.run("exit 0", shell=True, check=True)
        watch.current = None
        subprocess.run(["true"], check=True)  # between tests: nobody's
    finally:
        watch.uninstall()
    assert [Path(p).name for p in watch.started["t"]] == ["true", "sh"]


def test_every_command_has_one_smoke_test() -> None:
    """The fast tier keeps one end-to-end test per `duet` command: the one marked
    ``@pytest.mark.smoke("COMMAND")``."""
    smokes: dict[str, list[str]] = {}
    for path in sorted(TESTS.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for dec in node.decorator_list:
                if (
                    isinstance(dec, ast.Call)
                    and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr == "smoke"
                ):
                    command = ast.literal_eval(dec.args[0])
                    smokes.setdefault(command, []).append(f"{path.name}::{node.name}")
    assert set(smokes) == set(COMMANDS), sorted(set(COMMANDS) ^ set(smokes))
    assert all(len(tests) == 1 for tests in smokes.values()), smokes
