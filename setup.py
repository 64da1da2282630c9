"""Packaging beyond pyproject.toml: the documentation goes into the package.

Messages cite the docs as ``docs/NAME.md``; ``duet help NAME`` prints them. In a source
checkout (an editable install) it reads ``docs/`` of the checkout; in a wheel the pages
are copied to ``duetbench/docs/`` by the build step below, so a pip-installed user can
read every page a message cites.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DOCS = Path(__file__).resolve().parent / "docs"


class BuildPyWithDocs(build_py):
    """build_py, plus docs/ copied into the built package as duetbench/docs/."""

    def run(self) -> None:
        super().run()
        if not DOCS.is_dir():  # an sdist without docs: nothing to copy
            return
        dest = Path(self.build_lib) / "duetbench" / "docs"
        for src in sorted(DOCS.rglob("*")):
            if src.is_file() and src.suffix in (".md", ".yml"):
                target = dest / src.relative_to(DOCS)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)


setup(cmdclass={"build_py": BuildPyWithDocs})
