"""The command line: every command lives in duetbench.commands and is listed by
`duet --help`; arguments stop at commands/; a broken first-party import is an error,
never a missing command or a changed message."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.helpers import run_duet

import duetbench
from duetbench import cli
from duetbench.commands import COMMANDS

SRC = Path(duetbench.__file__).parent
#: Where an argparse.Namespace may appear: the CLI, the commands, and the standalone
#: entry points of processes duet starts (the sync command line, the microbenchmark
#: worker, which runs without duetbench in the side's interpreter).
ARGPARSE_ALLOWED = ("cli.py", "commands/", "sync/cli.py", "sync/__main__.py", "micro/worker.py")


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (p.relative_to(SRC).as_posix(), ast.parse(p.read_text(encoding="utf-8")))
        for p in sorted(SRC.rglob("*.py"))
        # the pyperf shim runs inside the benchmarked interpreter and imports only pyperf
        # (its import_module calls name pyperf's modules; an old pyperf is a clear error)
        if "pyperf_shim" not in p.parts
    ]


def test_help_lists_every_command_and_each_has_its_own() -> None:
    r = run_duet("--help")
    assert r.returncode == 0, r.stderr
    for name in COMMANDS:
        assert f"    {name} " in r.stdout, name
        assert (SRC / "commands" / f"{name}.py").is_file()
        h = run_duet(name, "--help")
        assert h.returncode == 0 and h.stdout.startswith(f"usage: duet {name}"), h.stderr


def test_a_command_that_cannot_be_imported_is_an_error_not_a_missing_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", (*COMMANDS, "no_such_command"))
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        cli.build_parser()


def test_no_namespace_below_the_commands() -> None:
    # where argparse itself may be imported: tests/test_layering.py
    for rel, tree in modules():
        if rel.startswith(ARGPARSE_ALLOWED):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute | ast.Name):
                name = node.attr if isinstance(node, ast.Attribute) else node.id
                assert name != "Namespace", f"{rel}:{node.lineno}: a Namespace below commands/"


def _imports_first_party(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.ImportFrom) and (
                node.level > 0 or (node.module or "").startswith("duetbench")
            ):
                return True
            if isinstance(node, ast.Import) and any(
                a.name.startswith("duetbench") for a in node.names
            ):
                return True
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
                ("__import__", "import_module")
            ):
                return True  # a module named at run time: treat it as ours
    return False


def test_no_first_party_import_error_is_swallowed() -> None:
    for rel, tree in modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Try) or not _imports_first_party(node.body):
                continue
            for handler in node.handlers:
                caught = ast.unparse(handler.type) if handler.type else "everything"
                assert "ImportError" not in caught and caught != "everything", (
                    f"{rel}:{handler.lineno} catches {caught} around a duetbench import"
                )


def test_modules_and_functions_stay_small() -> None:
    # docs/architecture.md, "Size limits": no exceptions
    too_big = []
    for rel, tree in modules():
        lines = (SRC / rel).read_text(encoding="utf-8").count("\n")
        if lines > 600:
            too_big.append(f"{rel}: {lines} lines (at most 600)")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if n > 120:
                    too_big.append(f"{rel}: {node.name} has {n} lines (at most 120)")
    assert too_big == []
