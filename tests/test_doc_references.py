"""Citations point inside the repository, at sections that exist.

Code, docs and messages cite the methods by a section of docs/statistics.md (or
another file of the repository), never a design file outside it; a renamed
section must not leave citations pointing nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEARCHED = ("src", "docs", "examples", "benchmarks", "tests", "README.md", "DEVELOPERS.md")
OUTSIDE = re.compile(r"METHODS\.md|DESIGN\.md|MEASURED\.md|\.\./shared|/work/shared")
TITLE = re.compile(r"statistics\.md(?:#[\w-]+)?\)?,\s*\"([^\"]{3,80})\"")
ANCHOR = re.compile(r"statistics\.md#([\w-]+)")


def files() -> list[Path]:
    out: list[Path] = []
    for name in SEARCHED:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        else:
            out += [
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in {".py", ".md", ".yml", ".yaml", ".txt", ".sh", ".toml"}
            ]
    return [p for p in out if p.name != Path(__file__).name]


def headings(path: Path) -> list[str]:
    return [
        line.lstrip("#").strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]


def slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def citations(text: str) -> tuple[list[str], list[str]]:
    # one logical text: docstrings and comments wrap a citation over lines
    flat = re.sub(r"\s*\n\s*(?:#+\s|\"|')?\s*", " ", text)
    return TITLE.findall(flat), ANCHOR.findall(text)


def test_nothing_points_outside_the_repository() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in files()
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_every_cited_section_of_statistics_md_exists() -> None:
    titles = headings(ROOT / "docs" / "statistics.md")
    anchors = {slug(t) for t in titles}
    missing = []
    for p in files():
        cited, linked = citations(p.read_text(encoding="utf-8", errors="replace"))
        missing += [
            f'{p.relative_to(ROOT)}: "{c}"'
            for c in cited
            if not any(t.startswith(c) for t in titles)
        ]
        missing += [f"{p.relative_to(ROOT)}: #{a}" for a in linked if a not in anchors]
    assert missing == []


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('see docs/statistics.md, "Several hosts".', True),
        ('(docs/statistics.md, "Pipeline and\n    # defaults")', True),
        ('(docs/statistics.md, "No such section")', False),
        ("[statistics.md](statistics.md#no-such-anchor)", False),
        ("[statistics.md](statistics.md#executing-runs)", True),
    ],
)
def test_the_check_reads_citations_as_written(text: str, ok: bool) -> None:
    titles = headings(ROOT / "docs" / "statistics.md")
    cited, linked = citations(text)
    assert cited or linked
    good = all(any(t.startswith(c) for t in titles) for c in cited) and all(
        a in {slug(t) for t in titles} for a in linked
    )
    assert good is ok


LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*)(?:#([\w-]+))?\)")


def test_every_relative_link_of_the_docs_reaches_a_file_and_heading() -> None:
    """Links between the pages (docs/, docs/measurements/, README, DEVELOPERS) reach an
    existing file, and a heading of it when they name one: moving a study to
    docs/measurements/ must not leave a link pointing nowhere."""
    pages = [ROOT / "README.md", ROOT / "DEVELOPERS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks are not links
        for target, anchor in LINK.findall(text):
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif (
                anchor and path.suffix == ".md" and anchor not in {slug(h) for h in headings(path)}
            ):
                broken.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []


def test_reference_pages_hold_no_dated_run_tables() -> None:
    """Dated runs live in docs/measurements/ (one page per study); a reference page states
    how things work and the current figure in a sentence with a link."""
    dated = re.compile(r"\b20\d\d-\d\d-\d\d\b")
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            starts_table = line.startswith("|") and (n == 0 or not lines[n - 1].startswith("|"))
            before = lines[max(0, n - 8) : n]
            if starts_table and any(dated.search(x) for x in before if not x.startswith("|")):
                found.append(f"{page.name}:{n + 1}: a table under a dated run")
    assert found == []
