"""`duet help`: the documentation a message cites, readable wherever duetbench is
installed (a wheel carries the pages), and the hint under an error that cites a page."""

from __future__ import annotations

import pytest

from duetbench.cli import docs_hint, main
from duetbench.commands.help import docs_dir, page_of, section_of, topics


@pytest.mark.smoke("help")
def test_duet_help_lists_prints_a_page_and_a_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help"]) == 0
    listed = capsys.readouterr().out
    for name in ("getting-started", "statistics", "micro", "history"):
        assert f"  {name} " in listed, listed
    assert main(["help", "docs/statistics.md"]) == 0  # as messages cite it
    page = capsys.readouterr().out
    assert page == (docs_dir() / "statistics.md").read_text(encoding="utf-8")
    assert main(["help", "statistics", "notes"]) == 0  # a section, any case
    notes = capsys.readouterr().out
    assert notes.startswith("## Notes\n") and "\n## " not in notes.removeprefix("## Notes")


def test_every_page_cited_in_the_code_can_be_read() -> None:
    """Every docs/NAME.md a message of src/duetbench cites is a page `duet help` serves."""
    import re
    from pathlib import Path

    import duetbench

    root = docs_dir()
    cited = set()
    for path in Path(duetbench.__file__).parent.rglob("*.py"):
        cited |= set(re.findall(r"\bdocs/([\w/-]+)\.md\b", path.read_text(encoding="utf-8")))
    cited -= {"NAME"}  # `duet help NAME` in the help text itself
    assert len(cited) > 5, "too few citations found: the pattern is wrong"
    for name in sorted(cited):
        assert page_of(name, root).is_file(), name
    assert set(cited) <= set(topics(root))


def test_unknown_topics_and_sections_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no documentation page 'nope'" in err and "statistics" in err
    assert main(["help", "statistics", "no such section"]) == 2
    err = capsys.readouterr().err
    assert "no section 'no such section'" in err and "Notes" in err
    text = "# T\n\n## A b\n\nx\n\n### A b c\n\ny\n\n## D\n\nz\n"
    assert section_of(text, "a B") == "## A b\n\nx\n\n### A b c\n\ny\n"
    assert section_of(text, "a b c") == "### A b c\n\ny\n"


def test_an_error_citing_a_page_says_how_to_read_it() -> None:
    hint = docs_hint("bad: see docs/statistics.md, section 'Notes' and docs/adaptive.md")
    assert hint == "duet help statistics, duet help adaptive"
    assert docs_hint("no citation here") is None


def test_the_error_line_ends_with_the_command_that_prints_its_page(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "deep.duet.yml"
    cfg.write_text("experiment: " + "[" * 200 + "]" * 200 + "\n")
    assert main(["plan", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err  # still one line
    assert "docs/config.md" in err and err.rstrip().endswith("[duet help config]"), err
