"""Files that are not what they should be: a FIFO (open() would block), a symlink to
/dev/zero (never ends), a 2 GiB file where a small JSON document belongs (reading it
exhausts memory), an unwritable repository directory, a 5,000-character target. Every
command refuses them with exit 2 and a message naming the file, never a traceback or a
hang (files.py: regular files only, bounded by kind)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import TINY, run_duet

from duetbench.files import FileRefused, read_bytes
from duetbench.history import HistoryError, Repository

DEADLINE_S = 120  # only catches a hang


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("special files")
    (d / "tiny.yml").write_text(TINY)
    r = run_duet("run", str(d / "tiny.yml"), "-o", str(d / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    return d / "res" / "tiny"


def _spoil(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:  # 2 GiB of NULs (sparse: no disk used)
        with open(path, "wb") as f:
            f.truncate(2 << 30)


def _duet(*args: str) -> subprocess.CompletedProcess[str]:
    t = time.monotonic()
    r = run_duet(*args, timeout=DEADLINE_S)
    r.seconds = time.monotonic() - t  # type: ignore[attr-defined]
    return r


def test_the_reader_refuses_special_and_huge_files_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="FIFO"):  # would block forever in open()
        read_bytes(fifo, 100)
    with pytest.raises(FileRefused, match="character device"):
        read_bytes("/dev/zero", 100)
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(101)
    with pytest.raises(FileRefused, match="more than the 100 bytes"):
        read_bytes(big, 100)
    with pytest.raises(FileRefused, match="directory"):
        read_bytes(tmp_path, 100)
    (tmp_path / "ok").write_bytes(b"x" * 100)
    assert read_bytes(tmp_path / "ok", 100) == b"x" * 100


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "2GiB"])
@pytest.mark.parametrize(
    "victim", ["experiment.json", "runs/b.aduet.000/run.json", "hosts", "journal.jsonl"]
)
def test_a_damaged_results_directory_is_refused_by_name(
    results: Path, tmp_path: Path, kind: str, victim: str
) -> None:
    root = tmp_path / "tiny"
    shutil.copytree(results, root, symlinks=True)
    path = root / victim
    if path.is_dir():
        (path,) = path.glob("*.json")
    _spoil(path, kind)
    r = _duet("compare", str(root))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert path.name in r.stderr, r.stderr
    said = ("not a regular file", "is not a file", "more than the")
    assert any(words in r.stderr for words in said), r.stderr


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_every_reading_command_refuses_them(results: Path, tmp_path: Path, kind: str) -> None:
    root = tmp_path / "tiny"
    shutil.copytree(results, root, symlinks=True)
    _spoil(root / "experiment.json", kind)
    config = tmp_path / "tiny.yml"
    config.write_text(TINY)
    for args in (
        ("compare", str(root)),
        ("report", str(root), "-o", str(tmp_path / "r.html")),
        ("evaluate", str(root)),
        ("process", str(root)),
        ("hosts", str(root)),
        ("history", "add", str(root), "--repo", str(tmp_path / "p.sqlite"), "--versions", "v1"),
        ("run", str(config), "-o", str(tmp_path), "--resume", "--no-compare"),
    ):
        r = _duet(*args)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
        assert "experiment.json" in r.stderr and "not a regular file" in r.stderr, args


def test_a_fifo_config_or_table_is_refused(tmp_path: Path) -> None:
    for name in ("duet.yml", "table.csv", "table.parquet"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "zero.yml").symlink_to("/dev/zero")
    for args in (
        ("plan", "duet.yml"),
        ("run", "duet.yml", "-o", "out"),
        ("plan", "zero.yml"),
        ("compare", "table.csv"),
        ("compare", "table.parquet"),
        ("history", "add", "table.csv", "--repo", "p.sqlite", "--versions", "v1"),
    ):
        r = run_duet(*args, cwd=tmp_path, timeout=DEADLINE_S)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
        assert "not a regular file" in r.stderr, (args, r.stderr)


def test_a_table_of_nuls_gets_a_message(tmp_path: Path) -> None:
    (tmp_path / "zeros.parquet").write_bytes(b"\0" * 100_000)
    r = run_duet("compare", str(tmp_path / "zeros.parquet"))
    assert r.returncode == 2 and "cannot read the table: " in r.stderr
    assert r.stderr.split("cannot read the table: ")[1].strip(), r.stderr  # never empty


def test_history_add_into_an_unusable_directory(results: Path, tmp_path: Path) -> None:
    (tmp_path / "a file").write_text("")
    r = run_duet(
        "history", "add", str(results), "--repo", str(tmp_path / "a file" / "p.sqlite"),
        "--versions", "v1",
    )  # fmt: skip
    assert r.returncode == 2 and "is not a directory" in r.stderr, r.stderr
    (tmp_path / "p.sqlite-tables").write_text("")  # where the tables go: a file
    r = run_duet(
        "history", "add", str(results), "--repo", str(tmp_path / "p.sqlite"), "--versions", "v1"
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "cannot store the iterations table in" in r.stderr


def test_an_unwritable_tables_directory_is_an_error_not_a_traceback(
    results: Path, tmp_path: Path, monkeypatch
) -> None:
    """As root every directory is writable: the failing mkdir is simulated."""

    def refuse(self: Path, *args: object, **kw: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with Repository.open(tmp_path / "p.sqlite") as repo, pytest.raises(HistoryError) as err:
        repo.add(results, "v1")
    assert "Permission denied" in str(err.value) and "p.sqlite-tables" in str(err.value)


def test_a_target_of_5000_characters(tmp_path: Path) -> None:
    for target in ("a" * 5000, "a" * 5000 + ":f", "a/" * 2500 + "x.py"):
        r = subprocess.run(
            [sys.executable, "-m", "duetbench", "micro", target, "-o", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
        assert f"{len(target)} characters long" in r.stderr
