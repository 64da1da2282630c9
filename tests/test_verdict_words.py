"""One vocabulary of verdict words: ``schema.Verdict`` defines them (docs/architecture.md,
"Glossary"); every other module names them through it, never as a string literal, so a
word cannot drift in one place (a renamed verdict, a typo in a comparison that is then
never true)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import docstring_ids

import duetbench
from duetbench.schema import VERDICTS

SRC = Path(duetbench.__file__).parent
#: the module that defines the words
DEFINED_IN = "schema.py"


def verdict_literals(rel: str, text: str) -> list[str]:
    """Every string literal of ``text`` that is a verdict word, but docstrings and a
    column read by name (``table["slower"]``: a column of counts named by the word)."""
    tree = ast.parse(text)
    skip = docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
    return [
        f"{rel}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in VERDICTS
        and id(node) not in skip
    ]


def test_verdict_words_are_written_only_where_they_are_defined() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel != DEFINED_IN:
            found += verdict_literals(rel, path.read_text(encoding="utf-8"))
    assert found == [], "use schema.Verdict (or analysis.stats' constants)"


def test_a_verdict_word_written_as_a_literal_is_found() -> None:
    text = (
        '"""A docstring may say slower."""\n'
        "from duetbench.schema import Verdict\n"
        "def f(v, table):\n"
        '    """no change detected"""\n'
        "    counts = table['faster']\n"
        '    return v == Verdict.SLOWER or v in ("equivalent", "no data"), f"{v}: slower"\n'
    )
    assert verdict_literals("x.py", text) == ["x.py:6: 'equivalent'", "x.py:6: 'no data'"]
