"""Damage checks of run directories: run.json readable and a run record, the run's files
as run.json recorded them (docs/results.md, "Damage")."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..errors import ResultsDirError
from ..files import RECORD_MAX, read_bytes
from ..records import RunRecord
from . import manifest
from .layout import RUN_FILE, RUNS_DIR, SUPERSEDED_DIR

#: at most this many damaged runs are listed in one error message
SHOWN = 8


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def load_run(run_dir: Path, run_id: str) -> tuple[RunRecord | None, bytes, str | None]:
    """run.json of ``runs/<run_id>`` (``run_dir``): (record, raw bytes, None) or
    (None, raw bytes or b"", what is wrong)."""
    rel = f"{RUNS_DIR}/{run_id}"
    try:
        st = os.lstat(run_dir)
    except FileNotFoundError:
        return None, b"", f"its directory {rel} is missing"
    except OSError as exc:
        return None, b"", f"{rel} cannot be read ({_why(exc)})"
    if not stat.S_ISDIR(st.st_mode):
        return None, b"", f"{rel} is not a directory"
    where = f"{rel}/{RUN_FILE}"
    try:
        raw = read_bytes(run_dir / RUN_FILE, RECORD_MAX)
    except FileNotFoundError:
        return None, b"", f"{where} is missing"
    except IsADirectoryError:
        return None, b"", f"{where} is a directory, not a file"
    except OSError as exc:
        return None, b"", f"{where} cannot be read ({_why(exc)})"
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, raw, f"{where} is not UTF-8 text"
    except ValueError as exc:
        return None, raw, f"{where} is not valid JSON ({exc})"
    try:
        record = RunRecord.from_json(data, where)
    except ResultsDirError as exc:
        return None, raw, str(exc)
    if record.run_id != run_id:
        return None, raw, f"{where} describes another run ({record.run_id!r})"
    return record, raw, None


def check_files(run_dir: Path, run_id: str, record: RunRecord) -> str | None:
    """The run's files against the list run.json recorded (None: all as recorded)."""
    if record.files is None:
        return None  # written by a duet before run.json listed files
    return manifest.check(run_dir, record.files, f"{RUNS_DIR}/{run_id}")


def damaged_directory(root: Path, problems: list[str]) -> ResultsDirError:
    """The error readers raise for a results directory with damaged runs."""
    shown = "\n  ".join(problems[:SHOWN])
    more = f"\n  ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return ResultsDirError(
        f"{root} is damaged, so its numbers would be wrong:\n  {shown}{more}\n"
        f"Repair: `duet run <config> -o {root.parent} --resume` sets the damaged "
        f"runs aside ({RUNS_DIR}/{SUPERSEDED_DIR}/) and executes them again; or restore the "
        "directory from a copy."
    )
