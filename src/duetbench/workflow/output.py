"""Where a command's document goes: a file (written atomically) or standard output."""

from __future__ import annotations

import sys
from pathlib import Path


def write_output(text: str, path: Path | None) -> None:
    """``text`` (ending in a newline) to ``path``, or to stdout when there is none."""
    from ..atomic import write_atomic

    text = text if text.endswith("\n") else text + "\n"
    if path:
        write_atomic(path, text)
    else:
        sys.stdout.write(text)
