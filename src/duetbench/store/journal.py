"""journal.jsonl: one line per finished run, appended and fsynced (docs/results.md).

A run is journaled after its directory was renamed into place, with the SHA-256 of
its run.json. The last line may be torn by a crash while appending (no newline, not
a complete entry): readers ignore it and ``--resume`` cuts it. Any other line that
is not an entry is damage (:class:`~duetbench.errors.ResultsDirError` naming the line).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import ResultsDirError
from ..files import DOCUMENT_MAX, read_bytes
from ..records import RunRecord
from ..schema import FINISHED_STATUSES
from .manifest import file_digest

#: journal status of a run that ``--resume`` found damaged and set aside to execute again
DAMAGED = "damaged"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def parse_entry(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """One journal line: (None, entry) or (what is wrong, None)."""
    try:
        entry = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text", None
    except ValueError as exc:
        return f"not valid JSON ({exc})", None
    if not isinstance(entry, dict):
        return f"not a JSON object (it holds {type(entry).__name__})", None
    if not isinstance(entry.get("run_id"), str) or not entry["run_id"]:
        return "the entry has no run_id", None
    if entry.get("status") not in (*FINISHED_STATUSES, DAMAGED):
        return f"the entry's status {entry.get('status')!r} is not a finished run's", None
    return None, entry


def run_entry(record: RunRecord, run_json: Path) -> dict[str, Any]:
    """The journal entry of a finished run whose run.json is ``run_json``."""
    return {
        "run_id": record.run_id,
        "status": record.status,
        "host": record.host or None,
        "start_ns": record.start_ns,
        "end_ns": record.end_ns,
        "run_sha256": file_digest(run_json),
        "journaled_ns": time.time_ns(),
    }


def damaged_entry(run_id: str, problem: str | None) -> dict[str, Any]:
    """The entry that makes ``--resume`` execute a damaged run again."""
    return {"run_id": run_id, "status": DAMAGED, "message": problem, "journaled_ns": time.time_ns()}


class Journal:
    """The journal of one results directory. ``resume_hint`` is the directory a repair
    message tells the user to pass to `duet run -o` (the experiment directory's parent)."""

    def __init__(self, path: Path, resume_hint: Path) -> None:
        self.path = path
        self.resume_hint = resume_hint

    def lines(self) -> tuple[list[tuple[int, dict[str, Any]]], int | None]:
        """The entries with their line numbers, and the byte offset of a torn last line,
        if there is one. Any other line that is not an entry is a :class:`ResultsDirError`."""
        try:
            data = read_bytes(self.path, DOCUMENT_MAX)
        except FileNotFoundError:
            return [], None
        except OSError as exc:
            raise ResultsDirError(f"cannot read {self.path}: {_why(exc)}") from None
        entries: list[tuple[int, dict[str, Any]]] = []
        torn = None
        offset = 0
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, 1):
            start, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            problem, entry = parse_entry(raw)
            if entry is not None:
                entries.append((number, entry))
            elif number == len(lines):
                torn = start  # no newline after it: the append was cut by a crash
            else:
                raise ResultsDirError(
                    f"{self.path}, line {number}: {problem}: the journal is damaged. "
                    "Delete that line; the run it named is then taken from its directory (or "
                    f"executed again) by `duet run <config> -o {self.resume_hint} --resume`"
                )
        return entries, torn

    def entries(self) -> list[dict[str, Any]]:
        """The entries in the order they were written. A torn last line is ignored."""
        return [e for _, e in self.lines()[0]]

    def last_entries(self, plan: set[str] | None) -> dict[str, dict[str, Any]]:
        """Each journaled run's latest entry (a run executed again after damage has several);
        an entry naming a run outside ``plan`` (when given) is a :class:`ResultsDirError`."""
        last: dict[str, dict[str, Any]] = {}
        for number, e in self.lines()[0]:
            if plan is not None and e["run_id"] not in plan:
                raise ResultsDirError(
                    f"{self.path}, line {number}: run {e['run_id']!r} is not in this "
                    "experiment's plan: the journal is damaged (or belongs to another "
                    "experiment). Delete that line"
                )
            last[e["run_id"]] = e
        return last

    def append(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def repair_tail(self) -> None:
        """Cut a torn last line (a crash while appending) so the next entry starts a line;
        a complete last entry that only lost its newline gets it back."""
        _, torn = self.lines()
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if torn is not None:
            os.truncate(self.path, torn)
        elif size:
            with open(self.path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    return
            with open(self.path, "ab") as f:
                f.write(b"\n")
        else:
            return
        with open(self.path, "ab") as f:
            os.fsync(f.fileno())
