"""The names of the files and directories of a results directory, in one place.

    results/<experiment>/
      .lock             held by the `duet run` using the directory (store/lock.py)
      experiment.json   tool version, resolved config, seed, the plan, start time
      journal.jsonl     one line per finished run, appended and fsynced
      hosts/<host>.json detected host configuration and artifact outputs
      runs/<run-id>/    run.json + A/ and/or B/ (each side's private directory)
      runs/.tmp-<run-id>-<pid>/  a run in flight
      runs/.superseded/ runs set aside by --resume
      cluster.jsonl     runs on a Dask cluster only: hosts seen/excluded, attempts lost
      stops.json        adaptive experiments only: each benchmark x method's stopping
                        decision, its runs and the planned runs it skipped
      iterations.parquet  written by `duet process` by default

Only the store package uses these names; everything else asks
:class:`~duetbench.store.ResultsStore` for paths (docs/results.md, "Layout").
"""

from __future__ import annotations

LOCK_FILE = ".lock"
EXPERIMENT_FILE = "experiment.json"
JOURNAL_FILE = "journal.jsonl"
HOSTS_DIR = "hosts"
RUNS_DIR = "runs"
RUN_FILE = "run.json"
CLUSTER_LOG = "cluster.jsonl"
STOPS_FILE = "stops.json"
TABLE_FILE = "iterations.parquet"
#: where --resume sets aside damaged, interrupted and foreign runs (inside runs/)
SUPERSEDED_DIR = ".superseded"
#: prefix of a run directory in flight: runs/.tmp-<run-id>-<pid>
TMP_RUN_PREFIX = ".tmp-"


def host_file_name(host: str) -> str:
    """hosts/<name>.json for a host name (characters outside [A-Za-z0-9-_.] become _)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host) or "host"
    return f"{safe}.json"
