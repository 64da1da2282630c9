"""ResultsStore: one experiment's results directory (layout: store/layout.py).

A run is built in ``runs/.tmp-<run-id>-<pid>``; its run.json lists every file of
the run with size and SHA-256, the files are fsynced, the directory is renamed
into place, and only then is the run journaled, with the SHA-256 of its run.json.
That chain lets readers (``duet process``, ``compare``, ``report``) and
``--resume`` tell a finished run from a damaged one: readers refuse a damaged
directory (never silently different numbers); ``--resume`` executes a damaged
run again and refuses damage it cannot repair (docs/results.md, "What duet
guarantees").
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import fsync_dir, fsync_tree, write_json_atomic
from ..errors import ResultsDirError
from ..files import DOCUMENT_MAX, RECORD_MAX, read_bytes
from ..records import RunRecord
from ..schema import FINISHED_STATUSES
from . import checks, manifest
from .journal import DAMAGED, Journal, damaged_entry, run_entry
from .layout import (
    CLUSTER_LOG,
    EXPERIMENT_FILE,
    HOSTS_DIR,
    JOURNAL_FILE,
    LOCK_FILE,
    RUN_FILE,
    RUNS_DIR,
    STOPS_FILE,
    SUPERSEDED_DIR,
    TABLE_FILE,
    TMP_RUN_PREFIX,
    host_file_name,
)
from .lock import ExperimentLock


def is_empty_dir(root: Path) -> bool:
    """``root`` holds nothing (but possibly the lock file of a `duet run` that died early)."""
    try:
        return not (set(os.listdir(root)) - {LOCK_FILE})
    except FileNotFoundError:
        return True
    except OSError as exc:
        raise ResultsDirError(f"cannot read {root}: {exc.strerror or exc}") from None


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


class ResultsStore:
    """One experiment's results directory: the only code that knows its file names."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / RUNS_DIR
        self.hosts_dir = self.root / HOSTS_DIR
        self.journal_path = self.root / JOURNAL_FILE
        self.experiment_path = self.root / EXPERIMENT_FILE
        self.cluster_log_path = self.root / CLUSTER_LOG
        self.stops_path = self.root / STOPS_FILE
        #: where `duet process` writes the iterations table by default
        self.table_path = self.root / TABLE_FILE
        self._journal = Journal(self.journal_path, self.root.parent)
        #: run id -> what was wrong, for the runs the last :meth:`prepare_resume` set aside
        self.damaged: dict[str, str] = {}
        #: what the last :meth:`prepare_resume` moved out of runs/ besides damaged runs
        self.moved_aside: list[str] = []

    # ------------------------------------------------------------------ paths
    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def run_json_path(self, run_id: str) -> Path:
        return self.runs_dir / run_id / RUN_FILE

    def host_path(self, host: str) -> Path:
        return self.hosts_dir / host_file_name(host)

    def has_experiment(self) -> bool:
        """Whether experiment.json exists (the directory was created by `duet run`)."""
        return self.experiment_path.exists()

    @staticmethod
    def lock(root: Path) -> ExperimentLock:
        """Take the exclusive lock of the experiment directory ``root`` for a `duet run`
        (store/lock.py): a second `duet run` on it refuses at once, naming this one."""
        return ExperimentLock.acquire(root)

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
    def open(cls, root: Path, *, writable: bool = False) -> ResultsStore:
        """An existing results directory. Readers open it as it is (nothing is written);
        ``writable`` (``duet run --resume``) creates missing ``runs/``, ``hosts/`` and journal."""
        root = Path(root)
        store = cls(root)
        try:
            os.stat(store.experiment_path)
        except FileNotFoundError:
            raise ResultsDirError(
                f"{root} is not a duetbench results directory (no {EXPERIMENT_FILE}). "
                "Point at the directory `duet run` created, e.g. results/<experiment-name>."
            ) from None
        except NotADirectoryError:
            raise ResultsDirError(f"{root} is a file, not a results directory") from None
        except OSError as exc:
            raise ResultsDirError(
                f"cannot read {root} ({_why(exc)}); check its permissions"
            ) from None
        store.experiment()
        for d in (store.runs_dir, store.hosts_dir):
            if d.exists() and not d.is_dir():
                raise ResultsDirError(
                    f"{d} is not a directory: the results directory is damaged. Move that file "
                    f"away; `duet run` of the experiment's duet.yml with `-o {root.parent} --resume` then recreates "
                    f"{d.name}/ (and executes again every run that was in it)"
                )
        if store.journal_path.exists() and not store.journal_path.is_file():
            raise ResultsDirError(
                f"{store.journal_path} is not a file: the results directory is damaged. Move it "
                f"away; `duet run` of the experiment's duet.yml with `-o {root.parent} --resume` then rebuilds the journal "
                "from the run directories"
            )
        if writable:
            try:
                store.runs_dir.mkdir(exist_ok=True)
                store.hosts_dir.mkdir(exist_ok=True)
                store.journal_path.touch()
            except OSError as exc:
                raise ResultsDirError(f"cannot write into {root}: {_why(exc)}") from None
        return store

    def experiment(self) -> dict[str, Any]:
        """experiment.json, checked: an object whose plan (if any) lists objects with a run id."""
        path = self.experiment_path
        exp: Any = None
        problem = None
        try:
            exp = json.loads(read_bytes(path, DOCUMENT_MAX).decode("utf-8"))
        except OSError as exc:
            problem = f"cannot be read ({_why(exc)})"
        except ValueError as exc:  # UnicodeDecodeError is a ValueError
            problem = f"is not valid JSON ({exc})"
        if problem is None and not isinstance(exp, dict):
            problem = f"is not a JSON object (it holds {type(exp).__name__})"
        elif problem is None:
            plan = exp.get("plan", [])
            if not isinstance(plan, list) or not all(
                isinstance(r, dict) and isinstance(r.get("run_id"), str) for r in plan
            ):
                problem = "has a damaged 'plan' (a list of runs, each with a run_id)"
        if problem is not None:
            raise ResultsDirError(
                f"{path} {problem}: the results directory is damaged. {EXPERIMENT_FILE} holds "
                "the config and the plan and cannot be recreated; restore it from a copy"
            )
        return exp  # type: ignore[no-any-return]

    def micro_calibrations(self) -> dict[str, dict[str, str]]:
        """The stored micro calibrations: benchmark -> side -> Calibration JSON text.

        They are part of the resolved config in experiment.json (``Benchmark.micro``), so
        `duet run --resume` / `duet micro --resume` reuse them (docs/micro.md, "Resume")."""
        config = self.experiment().get("config")
        benchmarks = config.get("benchmarks") if isinstance(config, dict) else None
        found: dict[str, dict[str, str]] = {}
        for bench in benchmarks if isinstance(benchmarks, list) else []:
            micro = bench.get("micro") if isinstance(bench, dict) else None
            pairs = micro.get("calibrations") if isinstance(micro, dict) else None
            if isinstance(pairs, list) and pairs:
                found[str(bench.get("name"))] = {
                    str(p[0]): str(p[1]) for p in pairs if isinstance(p, list) and len(p) == 2
                }
        return found

    def plan(self) -> list[dict[str, Any]]:
        """The experiment's plan as stored (RunSpec.to_dict() of every run; [] without one)."""
        return list(self.experiment().get("plan") or [])

    def plan_ids(self) -> set[str] | None:
        """The run ids of the experiment's plan (None for an experiment.json without a plan)."""
        plan = self.plan()
        return {r["run_id"] for r in plan} if plan else None

    # ------------------------------------------------------------------ journal
    def journal(self) -> list[dict[str, Any]]:
        """The journal's entries in the order they were written. A torn last line is ignored."""
        return self._journal.entries()

    def _last_entries(self) -> dict[str, dict[str, Any]]:
        return self._journal.last_entries(self.plan_ids())

    def finished(self) -> dict[str, dict[str, Any]]:
        """Run id -> journal entry of every finished run (never executed again)."""
        return {
            rid: e for rid, e in self._last_entries().items() if e["status"] in FINISHED_STATUSES
        }

    # ------------------------------------------------------------------ damage checks
    def check_run(
        self, run_id: str, entry: dict[str, Any] | None
    ) -> tuple[RunRecord | None, str | None]:
        """A run directory against its journal ``entry`` (None: not journaled): (record, None)
        when it is usable, else (None, what is wrong)."""
        run, raw, problem = checks.load_run(self.run_dir(run_id), run_id)
        if run is None:
            return None, problem
        if entry is not None:
            digest = entry.get("run_sha256")
            if digest and hashlib.sha256(raw).hexdigest() != digest:
                return None, (
                    f"{RUNS_DIR}/{run_id}/{RUN_FILE} was changed after the run was journaled"
                )
            if run.status != entry["status"]:
                return None, (
                    f"{RUNS_DIR}/{run_id}/{RUN_FILE} says {str(run.status)!r}, the journal "
                    f"{entry['status']!r}"
                )
        if run.finished:
            problem = checks.check_files(self.run_dir(run_id), run_id, run)
            if problem is not None:
                return None, problem
        return run, None

    def _run_entries(self) -> list[str]:
        """Names in runs/ but duet's own (``.tmp-*`` runs in flight, ``.superseded``)."""
        try:
            names = os.listdir(self.runs_dir)
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise ResultsDirError(
                f"{self.runs_dir} is not a directory: the results directory is damaged. Move "
                f"that file away; `duet run` of the experiment's duet.yml with `-o {self.root.parent} --resume` then "
                "executes every run again"
            ) from None
        except OSError as exc:
            raise ResultsDirError(f"cannot read {self.runs_dir}: {_why(exc)}") from None
        return sorted(n for n in names if not n.startswith("."))

    def usable_runs(self) -> list[tuple[str, RunRecord]]:
        """Every run of the directory with its record, for readers; a :class:`ResultsDirError`
        naming each damaged run (and how to repair it) instead of leaving any out.

        A journaled run must be there, unchanged. A run directory that is not journaled is
        used when it is complete: a crash came between its rename and its journal entry, or a
        `duet run` is in progress. Directories of runs in flight (``.tmp-*``) are not read."""
        last = self._last_entries()
        plan = self.plan_ids()
        problems: list[str] = []
        out: dict[str, RunRecord] = {}
        for rid, e in last.items():
            if e["status"] == DAMAGED:
                problems.append(
                    f"run {rid}: `duet run --resume` found it damaged ({e.get('message')}) "
                    "and has not executed it again yet"
                )
                continue
            run, problem = self.check_run(rid, e)
            if run is None:
                problems.append(f"run {rid}: {problem}")
            else:
                out[rid] = run
        for name in self._run_entries():
            if name in last:
                continue
            if plan is not None and name not in plan:
                problems.append(f"{RUNS_DIR}/{name} is not a run of this experiment's plan")
                continue
            run, problem = self.check_run(name, None)
            if run is not None:
                out[name] = run
            elif os.path.lexists(self.run_dir(name)):  # else: set aside by `duet run` meanwhile
                problems.append(f"run {name}: {problem}")
        if problems:
            raise checks.damaged_directory(self.root, problems)
        return sorted(out.items())

    # ------------------------------------------------------------------ resume
    def prepare_resume(self) -> list[str]:
        """Before resuming (the lock held): repair a torn last journal line, journal runs
        renamed but not journaled, and set aside (into runs/.superseded/) temporary,
        unfinished, foreign and damaged runs. A damaged journaled run gets a ``damaged``
        journal entry, so it is executed again. Damage that executing runs cannot repair
        (experiment.json, journal lines, host files) raises :class:`ResultsDirError`.

        Returns the ids of recovered runs; :attr:`damaged` and :attr:`moved_aside` say what
        was set aside."""
        self.damaged, self.moved_aside = {}, []
        self.hosts()  # a damaged host file is refused now, not after the runs
        self._run_entries()  # runs/ that is not a directory likewise
        self._journal.repair_tail()
        last = self._last_entries()
        plan = self.plan_ids()
        for rid, e in sorted(last.items()):
            if e["status"] not in FINISHED_STATUSES:
                continue
            run, problem = self.check_run(rid, e)
            if run is not None:
                continue
            if os.path.lexists(self.run_dir(rid)):
                self._set_aside(rid, DAMAGED)
            self._journal.append(damaged_entry(rid, problem))
            self.damaged[rid] = str(problem)
        finished = {rid for rid, e in last.items() if e["status"] in FINISHED_STATUSES}
        finished -= set(self.damaged)
        recovered = []
        for name in sorted(os.listdir(self.runs_dir)):
            if name.startswith(TMP_RUN_PREFIX):
                shutil.rmtree(self.runs_dir / name, ignore_errors=True)
                continue
            if name.startswith(".") or name in finished:
                continue
            if plan is not None and name not in plan:
                self.moved_aside.append(f"{RUNS_DIR}/{name} is not a run of this experiment")
                self._set_aside(name, "foreign")
                continue
            run, _problem = self.check_run(name, None)
            if run is not None and run.finished:
                self._journal.append(run_entry(run, self.run_json_path(name)))
                recovered.append(name)
            else:  # interrupted or unreadable: keep it for inspection, out of the way
                self._set_aside(name, "")
        return recovered

    def _set_aside(self, name: str, why: str) -> None:
        attic = self.runs_dir / SUPERSEDED_DIR
        attic.mkdir(exist_ok=True)
        suffix = f".{why}" if why else ""
        os.replace(self.runs_dir / name, attic / f"{name}.{time.time_ns()}{suffix}")

    # ------------------------------------------------------------------ runs
    def new_run_dir(self, run_id: str) -> Path:
        tmp = self.runs_dir / f"{TMP_RUN_PREFIX}{run_id}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        return tmp

    def commit_run(self, tmp: Path, run: RunRecord) -> Path:
        """Write run.json with the list of the run's files (size, SHA-256), fsync everything,
        rename into place, then journal the run (with run.json's SHA-256) if it finished."""
        record = run.with_files(manifest.manifest(tmp))
        write_json_atomic(tmp / RUN_FILE, record.to_json())
        fsync_tree(tmp)
        final = self.run_dir(run.run_id)
        if os.path.lexists(final):  # an unfinished attempt of the same run (interrupted earlier)
            self._set_aside(final.name, "")
        os.replace(tmp, final)
        fsync_dir(self.runs_dir)
        if record.finished:
            self._journal.append(run_entry(record, final / RUN_FILE))
        return final

    def commit_run_contents(
        self, run_id: str, files: Iterable[tuple[str, str, int, bytes | str]], run: RunRecord
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
                if not parts or Path(rel).is_absolute() or ".." in parts or rel == RUN_FILE:
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

    def read_run(self, run_id: str) -> RunRecord | None:
        """run.json of a run as it is (None if missing or unusable), without damage checks."""
        return checks.load_run(self.run_dir(run_id), run_id)[0]

    def run_ids(self) -> list[str]:
        return [n for n in self._run_entries() if self.run_dir(n).is_dir()]

    def runs(self) -> Iterator[tuple[str, RunRecord | None]]:
        """Every run directory with its run.json (None if unusable), without damage checks;
        the analysis reads :meth:`usable_runs`."""
        for rid in self.run_ids():
            yield rid, self.read_run(rid)

    # ------------------------------------------------------------------ cluster events
    def log_cluster_event(self, entry: dict[str, Any]) -> None:
        """Append one scheduling event (host seen/excluded, attempt lost...) to cluster.jsonl."""
        entry = {"ns": time.time_ns(), **entry}
        with open(self.cluster_log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def cluster_events(self) -> list[dict[str, Any]]:
        """The events of cluster.jsonl (none for an inline experiment). Damaged lines are
        skipped: the log explains the scheduling, no number comes from it."""
        try:
            lines = read_bytes(self.cluster_log_path, DOCUMENT_MAX).splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ResultsDirError(f"cannot read {self.cluster_log_path}: {_why(exc)}") from None
        out = []
        for line in lines:
            try:
                event = json.loads(line.decode("utf-8"))
            except ValueError:  # UnicodeDecodeError is a ValueError
                continue
            if isinstance(event, dict):
                out.append(event)
        return out

    # ------------------------------------------------------------------ adaptive stops
    def write_stops(self, doc: dict[str, Any]) -> None:
        """stops.json: the stopping decisions of an adaptive experiment, replaced whole
        (atomically) whenever a benchmark x method stops (docs/results.md)."""
        write_json_atomic(self.stops_path, doc)

    def stops(self) -> dict[str, Any] | None:
        """stops.json (None: not an adaptive experiment, or nothing stopped yet)."""
        try:
            doc = json.loads(read_bytes(self.stops_path, RECORD_MAX).decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ResultsDirError(
                f"{self.stops_path} cannot be read ({exc}); `duet run --resume` rewrites it "
                "from the runs"
            ) from None
        if not isinstance(doc, dict):
            raise ResultsDirError(
                f"{self.stops_path} is not a JSON object; `duet run --resume` rewrites it"
            )
        return doc

    # ------------------------------------------------------------------ hosts
    def has_host(self, host: str) -> bool:
        return self.host_path(host).exists()

    def write_host(self, host: str, info: dict[str, Any]) -> None:
        write_json_atomic(self.host_path(host), info)

    def hosts(self) -> dict[str, dict[str, Any]]:
        """hosts/<host>.json by host name; a damaged file is a :class:`ResultsDirError`."""
        try:
            names = sorted(n for n in os.listdir(self.hosts_dir) if n.endswith(".json"))
        except FileNotFoundError:
            return {}
        except NotADirectoryError:
            raise ResultsDirError(
                f"{self.hosts_dir} is not a directory: the results directory is damaged. Move "
                f"that file away; `duet run` of the experiment's duet.yml with `-o {self.root.parent} --resume` records "
                "the host again"
            ) from None
        except OSError as exc:
            raise ResultsDirError(f"cannot read {self.hosts_dir}: {_why(exc)}") from None
        out = {}
        for name in names:
            if name.startswith("."):
                continue  # the temporary file of an atomic write cut by a crash
            p = self.hosts_dir / name
            d: Any = None
            try:
                d = json.loads(read_bytes(p, RECORD_MAX).decode("utf-8"))
                problem = None if isinstance(d, dict) else "is not a JSON object"
            except OSError as exc:
                problem = f"cannot be read ({_why(exc)})"
            except ValueError as exc:
                problem = f"is not valid JSON ({exc})"
            if problem is not None:
                raise ResultsDirError(
                    f"{p} {problem}: the results directory is damaged. Delete that file; "
                    f"`duet run` of the experiment's duet.yml with `-o {self.root.parent} --resume` records the host "
                    "again when it runs there (only the host_* and artifact_* columns of the "
                    "iterations table come from it)"
                )
            out[str(d.get("host") or p.stem)] = d
        return out
