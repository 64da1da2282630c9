"""The writing half of the results repository: an experiment added in one transaction.

``Repository.add`` and ``Repository.add_imported`` (history/repository.py) call
:func:`add` and :func:`add_imported` with the repository's database and table store;
the inserts of versions, hosts, the experiment, its runs, verdict rows and run values
are here, the reading half stays with ``Repository`` (docs/history.md, "The
repository").
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.compare import CompareOptions
from ._blobs import BlobStore, encode
from ._db import Database, HistoryError, database_errors, guard, is_unique_violation
from ._ingest import ExperimentData, analyse, load_results_dir, load_table
from .fingerprint import HostFingerprint, fingerprint
from .imported import ImportedRun
from .versions import Version, complete_versions

#: test hook: the add step at which to stop (see :func:`checkpoint`)
HOOK_STEP_ENV = "DUETBENCH_HISTORY_HOOK_STEP"
HOOK_DIR_ENV = "DUETBENCH_HISTORY_HOOK_DIR"


def checkpoint(step: str) -> None:
    """Test hook: at ``$DUETBENCH_HISTORY_HOOK_STEP``, say so (a ``<step>.reached`` file in
    ``$DUETBENCH_HISTORY_HOOK_DIR``) and wait for ``<step>.release`` (at most 5 minutes)."""
    if os.environ.get(HOOK_STEP_ENV) != step or not os.environ.get(HOOK_DIR_ENV):
        return
    d = Path(os.environ[HOOK_DIR_ENV])
    (d / f"{step}.reached").write_text(str(os.getpid()))
    deadline = time.monotonic() + 300
    while not (d / f"{step}.release").exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def add(
    db: Database,
    blobs: BlobStore,
    source: str | Path | pd.DataFrame,
    versions: Mapping[str, Version] | Version | str,
    *,
    options: CompareOptions | None = None,
    name: str | None = None,
    host_records: Mapping[str, Mapping[str, Any]] | None = None,
) -> int:
    """Add a results directory (or an iterations table) as one experiment, in one
    transaction. ``versions``: the version of side A and of side B (one version: both).
    Refuses an experiment that is already in the repository."""
    sides = complete_versions(versions)
    if isinstance(source, pd.DataFrame):
        data = load_table(source, name=name, host_records=host_records)
    elif Path(source).is_dir():
        data = load_results_dir(Path(source))
    else:
        data = load_table(source, name=name, host_records=host_records)
    with guard(db):
        refuse_duplicate(db, data.uid)
    analysis = analyse(data, options)
    blob = encode(data.table)
    checkpoint("analysed")
    blobs.put_file(blob)
    checkpoint("table-written")
    with guard(db), db.transaction():
        refuse_duplicate(db, data.uid)
        vids = {s: version_id(db, v) for s, v in sides.items()}
        host_ids = {fp.fingerprint: host_id(db, fp) for fp in data.hosts.values()}
        blobs.put_row(blob)
        eid = insert_experiment(db, data, blob.hash, analysis.options)
        checkpoint("inserting")
        insert_details(db, eid, data, analysis, vids, host_ids)
        checkpoint("before-commit")
    return eid


def add_imported(db: Database, blobs: BlobStore, run: ImportedRun) -> int:
    """Add a run another tool measured (history/importers.py) as one experiment of one
    version (A = B) whose rows are points of the absolute series: no paired step, no
    run values (docs/history.md, "Importing other tools' results")."""
    fp = fingerprint({"host_name": run.host_name, **run.host})
    data = run.experiment_data(known_commit(db, run.version_of()), fp)
    with guard(db):
        refuse_duplicate(db, data.uid)
    blob = encode(data.table)
    blobs.put_file(blob)
    with guard(db), db.transaction():
        refuse_duplicate(db, data.uid)
        vid = version_id(db, known_commit(db, run.version_of()))
        hid = host_id(db, fp)
        blobs.put_row(blob)
        eid = insert_experiment(db, data, blob.hash, CompareOptions())
        db.executemany(
            "INSERT INTO experiment_versions (experiment_id, side, version_id) VALUES (?, ?, ?)",
            [(eid, "A", vid), (eid, "B", vid)],
        )
        db.execute(
            "INSERT INTO experiment_hosts (experiment_id, host_name, host_id) VALUES (?, ?, ?)",
            (eid, run.host_name, hid),
        )
        db.executemany(
            "INSERT INTO results (experiment_id, suite, benchmark, method, host_id, "
            "version_a, version_b, mean_a_ns, runs, pairs, verdict, level_a, level_a_se) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(eid, *row[:3], hid, vid, vid, *row[3:]) for row in run.result_rows()],
        )
    return eid


def known_commit(db: Database, v: Version) -> Version:
    """``v`` under the label the repository already gives its commit (an imported
    run of a commit that `duet history add --git` recorded as v1.4 joins v1.4)."""
    if not v.commit:
        return v
    with guard(db):
        row = db.one("SELECT label FROM versions WHERE commit_sha = ?", (v.commit,))
    return v if row is None else Version(str(row[0]), v.commit, v.commit_ns)


def refuse_duplicate(db: Database, uid: str) -> None:
    row = db.one("SELECT id, name, added_ns FROM experiments WHERE uid = ?", (uid,))
    if row is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(row[2]) / 1e9))
        raise HistoryError(
            f"experiment '{row[1]}' is already in the repository {db.location} "
            f"(experiment #{row[0]}, added {when}); nothing was added. To replace it, "
            f"remove it first: duet history remove {row[0]} --repo {db.location}"
        )


def version_id(db: Database, v: Version) -> int:
    row = db.one("SELECT id, commit_sha, commit_ns FROM versions WHERE label = ?", (v.label,))
    if row is None:
        db.execute(
            "INSERT INTO versions (label, commit_sha, commit_ns, first_seen_ns) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (label) DO NOTHING",
            (v.label, v.commit, v.commit_ns, time.time_ns()),
        )
        row = db.one("SELECT id, commit_sha, commit_ns FROM versions WHERE label = ?", (v.label,))
        assert row is not None
    vid, commit, commit_ns = row
    if v.commit and commit and v.commit != commit:
        raise HistoryError(
            f"version '{v.label}' is commit {commit[:12]} in the repository, but this add "
            f"says {v.commit[:12]}; give this build another label (e.g. {v.label}+{v.commit[:7]})"
        )
    if (v.commit and not commit) or (v.commit_ns is not None and commit_ns is None):
        db.execute(
            "UPDATE versions SET commit_sha = COALESCE(commit_sha, ?), "
            "commit_ns = COALESCE(commit_ns, ?) WHERE id = ?",
            (v.commit, v.commit_ns, vid),
        )
    return int(vid)


def host_id(db: Database, fp: HostFingerprint) -> int:
    facts = fp.facts_dict
    db.execute(
        "INSERT INTO hosts (fingerprint, cpu_model, cores, memory_bytes, kernel, facts) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING",
        (
            fp.fingerprint,
            facts.get("cpu_model"),
            facts.get("cores"),
            None if facts.get("memory_gib") is None else int(facts["memory_gib"]) << 30,
            facts.get("kernel"),
            json.dumps(facts, sort_keys=True, default=str),
        ),
    )
    row = db.one("SELECT id FROM hosts WHERE fingerprint = ?", (fp.fingerprint,))
    assert row is not None
    return int(row[0])


def insert_experiment(db: Database, data: ExperimentData, digest: str, opts: CompareOptions) -> int:
    settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(opts).items()}
    try:
        row = db.one(
            "INSERT INTO experiments (uid, name, source, started_ns, added_ns, seed, "
            "tool_version, config, table_hash, settings, problems) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                data.uid,
                data.name,
                data.source,
                data.started_ns,
                time.time_ns(),
                data.seed,
                data.tool_version,
                None if data.config is None else json.dumps(data.config, default=str),
                digest,
                json.dumps(settings, default=str),
                json.dumps(list(data.problems)),
            ),
        )
    except database_errors() as exc:
        if is_unique_violation(exc):  # the same experiment, added by another command just now
            raise HistoryError(
                f"experiment '{data.name}' is already in the repository {db.location} "
                "(another command added it just now); nothing was added"
            ) from None
        raise
    assert row is not None
    return int(row[0])


def insert_details(
    db: Database,
    eid: int,
    data: ExperimentData,
    analysis: Any,
    vids: Mapping[str, int],
    host_ids: Mapping[str, int],
) -> None:
    db.executemany(
        "INSERT INTO experiment_versions (experiment_id, side, version_id) VALUES (?, ?, ?)",
        [(eid, s, vid) for s, vid in vids.items()],
    )
    db.executemany(
        "INSERT INTO experiment_hosts (experiment_id, host_name, host_id) VALUES (?, ?, ?)",
        [(eid, h, host_ids[fp.fingerprint]) for h, fp in sorted(data.hosts.items())],
    )
    db.executemany(
        "INSERT INTO runs (experiment_id, run_id, suite, benchmark, method, rep, status, "
        "host_name, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                eid,
                str(r.get("run_id")),
                r.get("suite"),
                r.get("benchmark"),
                r.get("method"),
                r.get("rep"),
                r.get("status"),
                r.get("host"),
                json.dumps(r, default=str),
            )
            for r in data.runs
        ],
    )
    rows = []
    for r in analysis.results.to_dict("records"):
        base = str(r["benchmark"]).split(":", 1)[0]
        vb = vids["A"] if base in data.aa_benchmarks else vids["B"]
        rows.append(
            (eid, r["suite"], r["benchmark"], r["method"], host_ids[r["host_fingerprint"]])
            + (vids["A"], vb)
            + tuple(
                _num(r[c])
                for c in (
                    "mean_a_ns",
                    "mean_b_ns",
                    "change",
                    "ci_low",
                    "ci_high",
                    "p_value",
                    "runs",
                    "pairs",
                )
            )
            + (str(r["verdict"]),)
            + tuple(_num(r[c]) for c in ("level_a", "level_a_se", "level_b", "level_b_se"))
            + (r.get("basis"), r.get("stop_reason") or None)
            + (_num(r.get("confidence")), _num(r.get("threshold")))
        )
    db.executemany(
        "INSERT INTO results (experiment_id, suite, benchmark, method, host_id, version_a, "
        "version_b, mean_a_ns, mean_b_ns, change, ci_low, ci_high, p_value, runs, pairs, "
        "verdict, level_a, level_a_se, level_b, level_b_se, basis, stop_reason, "
        "confidence, threshold) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.executemany(
        "INSERT INTO run_values (experiment_id, suite, benchmark, method, host_id, host_name, "
        "run, value, pairs, median_a_ns, median_b_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (eid, r["suite"], r["benchmark"], r["method"], host_ids[r["host_fingerprint"]])
            + (r["host"], int(r["run"]), _num(r["value"]), int(r["pairs"]))
            + (_num(r["median_a_ns"]), _num(r["median_b_ns"]))
            for r in analysis.run_values.to_dict("records")
        ],
    )


def _num(v: Any) -> Any:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if f != f:  # NaN
        return None
    return int(f) if isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "iu") else f
