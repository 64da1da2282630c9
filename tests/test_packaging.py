"""What `pip install` gives a user: the license in the metadata and the documentation
that messages cite, readable with `duet help` (a cited page must exist wherever duet
runs)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.helpers import ROOT


def test_the_wheel_carries_the_license_and_the_docs(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("duetbench-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = z.read(metadata).decode()
        z.extractall(tmp_path / "installed")
    # what `pip show duetbench` prints as License
    assert "License: MIT" in meta or "License-Expression: MIT" in meta, meta[:800]
    assert any(n.endswith("LICENSE") and ".dist-info/" in n for n in names), names
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert [n for n in pages if f"duetbench/docs/{n}" not in names] == []
    # `duet help` of the installed copy serves its own pages, not a checkout's
    found = subprocess.run(
        [sys.executable, "-S", "-c",
         "from duetbench.commands.help import docs_dir; print(docs_dir())"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={"PYTHONPATH": str(tmp_path / "installed")},
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == tmp_path / "installed" / "duetbench" / "docs"
