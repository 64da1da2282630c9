"""Helpers shared by the tests (fixtures stay in conftest.py).

Running `duet`, waiting without timing floors, tools a test needs, process and
container checks, hand-built iterations tables and run records.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from duetbench.store.manifest import file_digest, manifest

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``: its output, stripped (a failure raises)."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def new_git_repo(repo: Path) -> Path:
    """An empty git repository at ``repo`` (created) on branch main, with a committer."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    return repo


def run_duet(
    *args: str, cwd: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env or {})
    e.setdefault("COLUMNS", "200")
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
    )


def duet_in_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`duet ARGS` through ``duetbench.cli.main`` in this process: the same parser, code
    and exit status as the `duet` script, without an interpreter start (about a second
    per call on a busy 2-CPU machine, most of it importing numpy, pandas and scipy).
    For commands that read and write files and return (history, dashboard, compare...);
    `duet run`, and anything a test signals or kills, runs as a process (``run_duet``)."""
    import contextlib
    import io

    from duetbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update({"COLUMNS": "200", **(env or {})})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse: usage errors, --help
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["duet", *args], code, out.getvalue(), err.getvalue())


# Timing in tests (docs: DEVELOPERS.md, "Tests on a busy machine"). CI runs on shared
# machines, so no test asserts how fast anything was: synchronization is judged by the
# order of events (an iteration starts only after the other side ended the one before),
# and every wait has a deadline that only catches a hang -- far longer than anything
# healthy takes on a 2-core machine whose cores are both kept busy. How close the starts
# of a sduet lie, in ms, is measured by benchmarks/sync_alignment.py.
HANG_S = 120.0


def wait_until(cond: Callable[[], object], what: str, timeout: float = HANG_S) -> None:
    """Poll ``cond`` until it is true; fail naming ``what`` if it never is (a hang)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g} s")
        time.sleep(0.02)


def require_tool(name: str, install: str) -> str:
    """The path of system tool ``name``; a failure (never a skip) naming how to install it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: {install}")
    return path


SETUP_HINT = "scripts/setup-system.sh installs it"


def lockstep_violations(
    a_start: Sequence[int],
    a_end: Sequence[int],
    b_start: Sequence[int],
    b_end: Sequence[int],
    slack_ns: int = 0,
) -> list[tuple[str, int]]:
    """Where the two sides were *not* in lockstep: ``(side, k)`` when that side started
    iteration k+1 before the other side had ended iteration k.

    A sduet guarantees none (the go for k+1 needs both sides' ready, which each sends
    after ending k); two unsynchronized sides of different work per iteration show
    many. ``slack_ns`` absorbs clock resolution (a harness that reads microseconds).
    """
    out = []
    for name, starts, ends in (("A", a_start, b_end), ("B", b_start, a_end)):
        xs, ye = [int(x) for x in starts], [int(y) for y in ends]  # by position
        for k in range(min(len(xs), len(ye)) - 1):
            if xs[k + 1] < ye[k] - slack_ns:
                out.append((name, k))
    return out


def print_start_gaps(gaps_ns: Sequence[float], label: str) -> None:
    """Report (never judge) how far apart the sides' iteration starts were."""
    diffs = [abs(g) for g in gaps_ns]
    print(
        f"\n{label}: |start_A - start_B| median {statistics.median(diffs) / 1e3:.0f} us, "
        f"max {max(diffs) / 1e3:.0f} us"
    )


HOLD_SCRIPT = """import os, sys, time
counter, hold, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(counter, "a") as f:  # one short O_APPEND write: atomic between the sides
    f.write("x\\n")
with open(counter) as f:
    n = sum(1 for _ in f)
while n > limit and os.path.exists(hold):
    time.sleep(0.02)
"""


@dataclass(frozen=True)
class Hold:
    """A benchmark command that counts its calls and, while ``hold`` exists, blocks in
    every call after the first ``limit``: a run is then *in progress* at a known point
    for as long as the test needs, whatever the machine's speed. ``token`` is on its
    command line (see :func:`pids_with`)."""

    command: str
    counter: Path
    hold: Path

    def calls(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0

    def release(self) -> None:
        self.hold.unlink(missing_ok=True)


def make_hold(directory: Path, limit: int, token: str, python: str = "python3") -> Hold:
    script = directory / "hold.py"
    script.write_text(HOLD_SCRIPT)
    counter, hold = directory / "calls.txt", directory / "hold"
    hold.touch()
    return Hold(f"{python} {script} {counter} {hold} {limit} {token}", counter, hold)


def pids_with(token: str) -> list[int]:
    """Live processes whose command line contains ``token`` (zombies excluded)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if token in cmd and ") Z " not in stat and int(d.name) != os.getpid():
            found.append(int(d.name))
    return found


def recorded_as_is(root, run_id: str) -> None:
    """Record run ``run_id``'s files as they are now, in run.json and the journal, as if the
    run itself had left them so: then they are what the run wrote, not damage done later."""
    run_json = root / "runs" / run_id / "run.json"
    run = json.loads(run_json.read_text())
    run["files"] = manifest(run_json.parent)
    run_json.write_text(json.dumps(run))
    journal = root / "journal.jsonl"
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    for e in entries:
        if e["run_id"] == run_id:
            e.update(run_sha256=file_digest(run_json), status=run["status"])
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))


T0 = 1_700_000_000_000_000_000


def run_rows(
    a: list[int], b: list[int], *, run: int = 0, method: str = "sduet", benchmark: str = "b"
) -> list[dict]:
    rows = []
    for pair_, durs in (("A", a), ("B", b)):
        t = T0 + run * 10**12
        for i, d in enumerate(durs):
            rows.append(
                dict(
                    experiment="e",
                    host="h",
                    suite="s",
                    benchmark=benchmark,
                    method=method,
                    run=run,
                    pair=pair_,
                    order="AB",
                    iteration=i,
                    start_ns=t,
                    end_ns=t + d,
                    duration_ns=d,
                )
            )
            t += max(a[i] if i < len(a) else d, b[i] if i < len(b) else d) + 10
    return rows


RUN_JSON_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "run_json"


def run_json_generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "run_json_generate", RUN_JSON_FIXTURES / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_written(data: dict[str, Any]) -> str:
    """run.json's bytes as the store writes them (atomic.write_json_atomic)."""
    return json.dumps(data, indent=2, default=str) + "\n"


def shape(value: Any, key: str = "") -> Any:
    """The keys of a JSON value, in order, without the values (the file names under `files`
    and the launch order of the sides are data, not keys)."""
    if isinstance(value, dict):
        if key == "files":
            return "{files}"
        items = [(k, shape(v, k)) for k, v in value.items()]
        return sorted(items) if key == "sides" else items  # the sides' order is drawn
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [shape(value[0])]
    return None


SYNC_SH = ROOT / "src" / "duetbench" / "sync" / "duet_sync.sh"


EXAMPLE_SH = ROOT / "examples" / "sync" / "harness.sh"


BUILD_IMAGE = ROOT / "examples" / "containers" / "build-image.sh"


# what setup-system.sh writes to /etc/containers/containers.conf; used only when podman
# cannot start a container without it (a sandbox where that file is missing)
SANDBOX_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "none"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""


def podman(*args: str, check: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def containers(label: str, value: str) -> list[str]:
    """Names of all containers (any state) with ``label=value``."""
    p = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"label={label}={value}")
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def container_config(
    tmp_path: Path,
    name: str,
    image: str,
    benchmarks: dict,
    defaults: dict | None = None,
    file: str = "duet.yml",
    **experiment: object,
) -> Path:
    """A native duet.yml running every side in ``image`` with podman."""
    doc = {
        "experiment": {
            "name": name,
            "seed": 5,
            "executor": "podman",
            "default_artifacts": False,
            "artifacts": {"uname": "uname -a"},
            **experiment,
        },
        "defaults": {"image": image, **(defaults or {})},
        "benchmarks": benchmarks,
    }
    cfg = tmp_path / file
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False))
    return cfg


def assert_nothing_left(token: str, timeout: float = HANG_S) -> None:
    """No container of experiment ``token`` and no process naming it (drivers, podman
    clients, conmon, the guard's engine calls) -- allowing cleanup its time."""
    deadline = time.monotonic() + timeout
    while True:
        left, procs = containers("duetbench.experiment", token), pids_with(token)
        if not left and not procs:
            return
        if time.monotonic() > deadline:
            cmds = [Path(f"/proc/{p}/cmdline").read_bytes()[:200] for p in procs]
            raise AssertionError(f"left behind: containers {left}, processes {cmds}")
        time.sleep(0.2)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def placed(data: dict[str, Any]) -> dict[str, Any]:
    """A run.json written now without the keys records of before lack: `placement` (issue
    15), right after `all_cores_busy`, pinned or shared; `other_load` after it (the
    executor's measure of other work on the host: CPUs, execute/loadwatch.py); each
    side's `cpu_s` (the CPU time it used: execute/driver.py, a container's cgroup) and an
    external harness's `runq_s` (its run delay); for a shared duet's side seen running,
    `ran_on` (where it ran, execute/cpuwatch.py); and in containers the run's and each
    side's `window` (their iterations' own, execute/container_cpu.py)."""
    keys = list(data)
    assert data["placement"] in ("pinned", "shared")
    assert keys[keys.index("all_cores_busy") + 1] == "placement"
    assert keys[keys.index("placement") + 1] == "other_load"
    load = data["other_load"]
    assert set(load) == {"processes", "steal"} and all(v >= 0 for v in load.values())
    if "window" in data:  # containers: the sides' iterations' overlap (execute/container_cpu.py)
        assert keys[keys.index("other_load") + 1] == "window"
        assert data["window"]["end_ns"] > data["window"]["start_ns"], data["window"]
    out = {k: v for k, v in data.items() if k not in ("placement", "other_load", "window")}
    sides = {}
    for name, side in data.get("sides", {}).items():  # and each side's CPU time
        if side["status"] == "ok":
            assert side["cpu_s"] >= 0, side
        elif "cpu_s" in side:  # a side stopped or failed mid-run: measured when it could be
            assert side["cpu_s"] >= 0, side
        if "runq_s" in side:  # external harnesses, containers: the run delay of their threads
            assert side["runq_s"] >= 0, side
        if "window" in side:  # containers: its iterations' own window, or why there is none
            w = side["window"]
            assert "why" in w or (w["end_ns"] >= w["start_ns"] and w["cpu_s"] >= 0), side
        if "ran_on" in side:  # only the sides of a shared duet are watched
            assert data["placement"] == "shared" and data["method"] != "seqn", data
            assert all(c.isdigit() and n >= 1 for c, n in side["ran_on"].items()), side
        dropped = ("cpu_s", "runq_s", "ran_on", "window")
        sides[name] = {k: v for k, v in side.items() if k not in dropped}
    if "sides" in out:
        out["sides"] = sides
    return out


def docstring_ids(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module, its classes and functions (words
    in prose are not code: the layering and verdict-word checks skip them)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


#: the smallest experiment that runs: two aduet runs of `true` (the CLI tests' config)
TINY = """experiment:
  name: tiny
  repetitions: {aduet: 2}
  default_artifacts: false
benchmarks:
  b: {command: 'true', iterations: 3}
"""
