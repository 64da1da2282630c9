"""The results directory (DESIGN.md): layout, atomic writes, the journal, resume.

    results/<experiment>/
      .lock             held by the `duet run` using the directory (lock.py)
      experiment.json   tool version, resolved config, seed, the plan, start time
      journal.jsonl     one line per finished run, appended and fsynced
      hosts/<host>.json detected host configuration and artifact outputs
      runs/<run-id>/    run.json + A/ and/or B/ (each side's private directory)
      cluster.jsonl     runs on a Dask cluster only: hosts seen/excluded, attempts lost

A run is built in ``runs/.tmp-<run-id>-<pid>`` and renamed into place only when
complete, then journaled. Resume trusts the journal (and recovers a run that
was renamed but not yet journaled when the crash came); leftovers are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import __version__
from .errors import ResultsDirError
from .lock import LOCK_NAME

FINISHED = ("ok", "failed", "timeout")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary name, fsync, rename into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def is_empty_dir(root: Path) -> bool:
    """``root`` holds nothing (but possibly the lock file of a `duet run` that died early)."""
    try:
        return not (set(os.listdir(root)) - {LOCK_NAME})
    except FileNotFoundError:
        return True
    except OSError as exc:
        raise ResultsDirError(f"cannot read {root}: {exc.strerror or exc}") from None


class ResultsStore:
    """One experiment's results directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.hosts_dir = self.root / "hosts"
        self.journal_path = self.root / "journal.jsonl"
        self.experiment_path = self.root / "experiment.json"

    # ------------------------------------------------------------------ open / create
    @classmethod
    def create(
        cls, root: Path, experiment: dict[str, Any], plan: list[dict[str, Any]]
    ) -> ResultsStore:
        root = Path(root)
        if root.exists() and not is_empty_dir(root):
            raise ResultsDirError(
                f"{root} already exists and is not empty. Pass --resume to continue that experiment, "
                "or choose another output directory with -o. Nothing was overwritten."
            )
        store = cls(root)
        store.runs_dir.mkdir(parents=True, exist_ok=True)
        store.hosts_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            store.experiment_path,
            {
                "tool": "duetbench",
                "version": __version__,
                "name": experiment["name"],
                "seed": experiment["seed"],
                "config": experiment,
                "plan": plan,
                "started_ns": time.time_ns(),
            },
        )
        store.journal_path.touch()
        fsync_dir(root)
        return store

    @classmethod
    def open(cls, root: Path) -> ResultsStore:
        root = Path(root)
        store = cls(root)
        if not store.experiment_path.is_file():
            raise ResultsDirError(
                f"{root} is not a duetbench results directory (no experiment.json). "
                "Point at the directory `duet run` created, e.g. results/<experiment-name>."
            )
        store.runs_dir.mkdir(exist_ok=True)
        store.hosts_dir.mkdir(exist_ok=True)
        store.journal_path.touch()
        return store

    def experiment(self) -> dict[str, Any]:
        try:
            return json.loads(self.experiment_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ResultsDirError(
                f"{self.experiment_path} is unreadable ({exc}); the results directory is damaged"
            ) from None

    # ------------------------------------------------------------------ journal
    def journal(self) -> list[dict[str, Any]]:
        """Finished runs in the order they finished. A torn last line (crash) is ignored."""
        entries = []
        try:
            lines = self.journal_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return entries

    def finished(self) -> dict[str, dict[str, Any]]:
        return {e["run_id"]: e for e in self.journal() if e.get("status") in FINISHED}

    def _append_journal(self, entry: dict[str, Any]) -> None:
        with open(self.journal_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    # ------------------------------------------------------------------ runs
    def prepare_resume(self) -> list[str]:
        """Recover runs renamed but not journaled; clear temporary and unfinished leftovers.

        Returns the ids of recovered runs.
        """
        done = self.finished()
        recovered = []
        for entry in sorted(self.runs_dir.iterdir()) if self.runs_dir.exists() else []:
            if entry.name.startswith(".tmp-"):
                shutil.rmtree(entry, ignore_errors=True)
                continue
            if entry.name.startswith(".") or not entry.is_dir() or entry.name in done:
                continue
            run = self.read_run(entry.name)
            if run is not None and run.get("status") in FINISHED:
                self._append_journal(self._journal_entry(run))
                recovered.append(entry.name)
            else:  # interrupted or unreadable: keep it for inspection, out of the way
                attic = self.runs_dir / ".superseded"
                attic.mkdir(exist_ok=True)
                target = attic / f"{entry.name}.{time.time_ns()}"
                os.replace(entry, target)
        return recovered

    def new_run_dir(self, run_id: str) -> Path:
        tmp = self.runs_dir / f".tmp-{run_id}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        return tmp

    def commit_run(self, tmp: Path, run: dict[str, Any]) -> Path:
        """Write run.json, fsync the run's files, rename into place, then journal it if finished."""
        write_json_atomic(tmp / "run.json", run)
        _fsync_tree(tmp)
        final = self.runs_dir / run["run_id"]
        if final.exists():  # an unfinished attempt of the same run (interrupted earlier)
            attic = self.runs_dir / ".superseded"
            attic.mkdir(exist_ok=True)
            os.replace(final, attic / f"{final.name}.{time.time_ns()}")
        os.replace(tmp, final)
        fsync_dir(self.runs_dir)
        if run.get("status") in FINISHED:
            self._append_journal(self._journal_entry(run))
        return final

    def commit_run_contents(
        self, run_id: str, files: Iterable[tuple[str, str, int, bytes | str]], run: dict[str, Any]
    ) -> Path:
        """Commit a run executed elsewhere (a cluster worker) from its returned directory contents.

        ``files`` are ``(relative path, kind, mode, data)`` with kind ``d`` (directory, data
        unused), ``f`` (regular file, data = bytes) or ``l`` (symlink, data = target). The files
        go to a temporary run directory, then :meth:`commit_run` (fsync, rename, journal).
        """
        tmp = self.new_run_dir(run_id)
        base = tmp.resolve()
        try:
            for rel, kind, mode, data in files:
                parts = Path(rel).parts
                if not parts or Path(rel).is_absolute() or ".." in parts or rel == "run.json":
                    continue
                target = tmp.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.parent.resolve().is_relative_to(base):
                    continue  # never write through a symlink out of the run directory
                if kind == "d":
                    target.mkdir(exist_ok=True)
                    os.chmod(target, (mode & 0o7777) | 0o700)
                elif kind == "l":
                    os.symlink(str(data), target)
                elif kind == "f":
                    with open(target, "wb") as f:
                        f.write(data if isinstance(data, bytes) else str(data).encode())
                    os.chmod(target, mode & 0o7777)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.commit_run(tmp, run)

    # ------------------------------------------------------------------ cluster events
    @property
    def cluster_log_path(self) -> Path:
        return self.root / "cluster.jsonl"

    def log_cluster_event(self, entry: dict[str, Any]) -> None:
        """Append one scheduling event (host seen/excluded, attempt lost...) to cluster.jsonl."""
        entry = {"ns": time.time_ns(), **entry}
        with open(self.cluster_log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def cluster_events(self) -> list[dict[str, Any]]:
        """The events of cluster.jsonl (none for an inline experiment); torn lines ignored."""
        try:
            lines = self.cluster_log_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    @staticmethod
    def _journal_entry(run: dict[str, Any]) -> dict[str, Any]:
        return {
            "run_id": run["run_id"],
            "status": run["status"],
            "host": run.get("host"),
            "start_ns": run.get("start_ns"),
            "end_ns": run.get("end_ns"),
            "journaled_ns": time.time_ns(),
        }

    def read_run(self, run_id: str) -> dict[str, Any] | None:
        path = self.runs_dir / run_id / "run.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None

    def run_ids(self) -> list[str]:
        if not self.runs_dir.exists():
            return []
        return sorted(
            p.name for p in self.runs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")
        )

    def runs(self) -> Iterable[tuple[str, dict[str, Any] | None]]:
        for rid in self.run_ids():
            yield rid, self.read_run(rid)

    # ------------------------------------------------------------------ hosts
    def host_path(self, host: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host) or "host"
        return self.hosts_dir / f"{safe}.json"

    def write_host(self, host: str, info: dict[str, Any]) -> None:
        write_json_atomic(self.host_path(host), info)

    def hosts(self) -> dict[str, dict[str, Any]]:
        out = {}
        if self.hosts_dir.exists():
            for p in sorted(self.hosts_dir.glob("*.json")):
                try:
                    d = json.loads(p.read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError):
                    continue
                out[d.get("host", p.stem)] = d
        return out
