"""`duet help [TOPIC [SECTION]]`: the documentation, wherever duetbench is installed.

Messages cite pages as ``docs/NAME.md`` (and sections by title). In a source checkout
the pages are its ``docs/``; a wheel carries a copy in ``duetbench/docs/`` (setup.py),
so a pip-installed user reads the same pages with ``duet help NAME``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..errors import DuetError, ExitCode

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


DESCRIPTION = (
    "Print a page of duetbench's documentation, or one section of it. A "
    "message that cites docs/statistics.md, section 'Notes' is read with `duet help "
    "statistics Notes`."
)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "topic",
        nargs="?",
        help="a page: statistics, docs/statistics.md or measurements/placement (default: "
        "the list of pages)",
    )
    p.add_argument(
        "section",
        nargs="?",
        help="a section title, or its beginning (default: the whole page)",
    )


def docs_dir() -> Path:
    """Where the pages are: the package's copy (a wheel), else the checkout's docs/."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "docs", package.parents[1] / "docs"):
        if (candidate / "getting-started.md").is_file():
            return candidate
    raise DuetError(
        "the documentation is not installed with this copy of duetbench; it is in the "
        "docs/ folder of the source"
    )


def topics(root: Path) -> dict[str, Path]:
    """Page name (``statistics``, ``measurements/placement``) -> file."""
    return {
        p.relative_to(root).with_suffix("").as_posix(): p
        for p in sorted(root.rglob("*.md"))
        if p.is_file()
    }


def page_of(topic: str, root: Path) -> Path:
    """The page ``topic`` names, however a message wrote it."""
    name = topic.strip().removeprefix("./").removeprefix("docs/").removesuffix(".md")
    name = name.split("#", 1)[0]
    pages = topics(root)
    if name in pages:
        return pages[name]
    by_stem = [p for key, p in pages.items() if key.rsplit("/", 1)[-1] == name]
    if len(by_stem) == 1:
        return by_stem[0]
    raise DuetError(
        f"no documentation page {topic!r}; the pages are: {', '.join(pages)} "
        "(`duet help` lists them with their titles)"
    )


def _title(line: str) -> str:
    return line.replace("`", "").strip().lower()


def section_of(text: str, section: str) -> str:
    """The section whose title is ``section`` (or starts with it, any case), with its
    subsections."""
    lines = text.splitlines()
    wanted = _title(section)
    headings = [
        (i, len(m.group(1)), m.group(2))
        for i, line in enumerate(lines)
        if (m := _HEADING.match(line))
    ]
    found = [h for h in headings if _title(h[2]) == wanted] or [
        h for h in headings if _title(h[2]).startswith(wanted)
    ]
    if not found:
        names = "; ".join(title for _, _, title in headings)
        raise DuetError(f"no section {section!r} on this page; its sections: {names}")
    start, level, _ = found[0]
    end = next((i for i, lvl, _ in headings if i > start and lvl <= level), len(lines))
    return "\n".join(lines[start:end]).rstrip() + "\n"


def _show(text: str) -> None:
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)


def run(args: argparse.Namespace) -> int:
    root = docs_dir()
    if args.topic is None:
        lines = ["duetbench's documentation (duet help TOPIC [SECTION]):", ""]
        for name, path in topics(root).items():
            first = path.read_text(encoding="utf-8").splitlines()[:1]
            title = first[0].lstrip("# ").strip() if first else ""
            lines.append(f"  {name:<32} {title}")
        sys.stdout.write("\n".join(lines) + "\n")
        return ExitCode.OK
    text = page_of(args.topic, root).read_text(encoding="utf-8")
    _show(section_of(text, args.section) if args.section else text)
    return ExitCode.OK
