"""The synchronous-duet handshake (duetbench.sync): protocol, robustness, harnesses.

Alignment tests run two real processes per duet with *different* per-iteration
work (B does 4x A's work) and judge them by the order of events, never by how many
ms apart the starts were (that depends on the machine's load; it is measured by
benchmarks/sync_alignment.py): with the coordinator every start of iteration k lies
between go k and go k+1, and no side starts iteration k+1 before the other ended
iteration k. Without it (the control) A runs ahead of B, which breaks that order.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.helpers import (
    HANG_S,
    SETUP_HINT,
    lockstep_violations,
    print_start_gaps,
    require_tool,
    wait_until,
)

import duetbench.sync as sync
import duetbench.sync.client as sync_client
from duetbench.sync import SyncClient, SyncCoordinator, SyncError, SyncTimeout

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "sync"
ITERATIONS = 12
SIDE_TIMEOUT_S = HANG_S  # a side that hangs fails the test instead of stalling the suite


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    env["DUET_SYNC_TIMEOUT"] = str(SIDE_TIMEOUT_S)
    return env


def _read_csv(path: Path) -> list[tuple[int, int, int]]:
    lines = path.read_text().splitlines()
    assert lines[0] == "iteration,start_ns,end_ns"
    rows = [tuple(int(x) for x in line.split(",")) for line in lines[1:]]
    assert [r[0] for r in rows] == list(range(len(rows)))
    assert all(e >= s for _, s, e in rows)
    return rows  # type: ignore[return-value]


def _run_sides(
    cmds: dict[str, Sequence[str]],
    env_for: dict[str, dict[str, str]],
    coord: SyncCoordinator | None,
    timeout: float = HANG_S,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Start every side at once; like the executor, report each exit to the coordinator."""
    procs = {
        pair: subprocess.Popen(
            list(cmd), env=env_for[pair], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for pair, cmd in cmds.items()
    }
    results: dict[str, subprocess.CompletedProcess[str]] = {}

    def reap(pair: str) -> None:
        proc = procs[pair]
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        results[pair] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if coord is not None:
            coord.side_finished(pair)

    threads = [threading.Thread(target=reap, args=(p,)) for p in cmds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _duet(
    tmp_path: Path, make_cmd, work: dict[str, int], synchronized: bool = True
) -> tuple[dict[str, list[tuple[int, int, int]]], SyncCoordinator | None]:
    """Run A and B (different work): each side's (iteration, start_ns, end_ns) rows."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = {p: tmp_path / f"{p}.csv" for p in work}
    cmds = {p: make_cmd(out[p], ITERATIONS, work[p]) for p in work}
    if synchronized:
        with SyncCoordinator.create(tmp_path / "sync") as coord:
            envs = {p: {**_base_env(), **coord.env(p)} for p in work}
            res = _run_sides(cmds, envs, coord)
    else:
        coord = None
        res = _run_sides(cmds, {p: _base_env() for p in work}, None)
    for p, r in res.items():
        assert r.returncode == 0, f"side {p}: {r.stderr}"
    rows = {p: _read_csv(out[p]) for p in work}
    assert len(rows["A"]) == len(rows["B"]) == ITERATIONS
    if coord is not None:
        _assert_starts_between_gos(coord, rows)
    return rows, coord


def _violations(rows: dict[str, list[tuple[int, int, int]]]) -> list[tuple[str, int]]:
    a, b = rows["A"], rows["B"]
    return lockstep_violations(
        [r[1] for r in a], [r[2] for r in a], [r[1] for r in b], [r[2] for r in b]
    )


def _gaps(rows: dict[str, list[tuple[int, int, int]]]) -> list[int]:
    return [b[1] - a[1] for a, b in zip(rows["A"], rows["B"], strict=True)]


def _assert_starts_between_gos(
    coord: SyncCoordinator, rows: dict[str, list[tuple[int, int, int]]]
) -> None:
    """Timing-free evidence: every side starts iteration k after go k and before go k+1."""
    gos = coord.go_times_ns
    assert all(len(r) == len(gos) for r in rows.values())
    assert all(set(e.pairs) == set(rows) for e in coord.go_events)
    for pair, r in rows.items():
        for k, (_, start, _) in enumerate(r):
            assert gos[k] <= start, f"{pair} started iteration {k} before its go"
            if k + 1 < len(gos):
                assert start < gos[k + 1], f"{pair} started iteration {k} after go {k + 1}"


def _check_aligned(tmp_path: Path, make_cmd, work: dict[str, int], label: str) -> None:
    rows, coord = _duet(tmp_path, make_cmd, work)
    assert coord is not None
    print_start_gaps(_gaps(rows), label)
    assert _violations(rows) == []
    events = coord.go_events
    assert len(events) == ITERATIONS
    assert all(set(e.pairs) == {"A", "B"} for e in events)
    assert coord.protocol_errors == []
    assert not (tmp_path / "sync").exists()


def _check_control(tmp_path: Path, make_cmd, label: str) -> None:
    """Without the coordinator the sides are not in lockstep: the check of the
    synchronized runs tells the two apart, whatever the machine's speed.

    B does 4x A's work per iteration, so the order can only come out as in a sduet if
    A were slowed to exactly B's pace in each of the 12 iterations.
    """
    rows, _ = _duet(tmp_path, make_cmd, WORK, synchronized=False)
    print_start_gaps(_gaps(rows), f"{label} control (no coordinator)")
    bad = _violations(rows)
    print(f"{label} control: {len(bad)} of {2 * (ITERATIONS - 1)} starts before the other's end")
    assert bad, "without the coordinator the sides still ran in lockstep"


# --------------------------------------------------------------------------- harness commands


def _py_cmd(out: Path, n: int, work: int) -> list[str]:
    return [
        sys.executable,
        str(EXAMPLES / "harness.py"),
        str(out),
        "--iterations",
        str(n),
        "--work",
        str(work * 60_000),  # 60k loop steps: ~11 ms on a quiet moment of a 2.5 GHz core
    ]


def _sh_cmd(shell: Sequence[str]):
    def make(out: Path, n: int, work: int) -> list[str]:
        return [*shell, str(EXAMPLES / "harness.sh"), str(out), str(n), str(work * 2500)]

    return make


def _c_cmd(binary: Path):
    def make(out: Path, n: int, work: int) -> list[str]:
        return [str(binary), str(out), str(n), str(work * 5_000_000)]

    return make


def _compile(tmp_path: Path, static: bool) -> Path:
    binary = tmp_path / ("harness-static" if static else "harness")
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-Werror"]
    cmd += ["-static"] if static else []
    cmd += ["-I", str(REPO / "src" / "duetbench" / "sync"), "-o", str(binary)]
    cmd += [str(EXAMPLES / "harness.c")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return binary


def _shell(spec: list[str]) -> list[str]:
    """The shell command of a parameter: a shell that is not installed fails the test
    (with how to install it), never silently drops it from the run."""
    if spec == ["busybox", "sh"]:
        return [require_tool("busybox", f"apt-get install busybox-static ({SETUP_HINT})"), "sh"]
    if spec == ["bash"]:
        return [require_tool("bash", "apt-get install bash")]
    return spec


SHELLS = [
    pytest.param(["/bin/sh"], id="sh"),
    pytest.param(["busybox", "sh"], id="busybox-sh"),
]

WORK = {"A": 1, "B": 4}  # units of ~10 ms of work per iteration: B does 4x A's work


# --------------------------------------------------------------------------- alignment


def test_python_sides_start_together_and_control_drifts(tmp_path: Path) -> None:
    _check_aligned(tmp_path / "sync-run", _py_cmd, WORK, "python")
    (tmp_path / "control").mkdir()
    _check_control(tmp_path / "control", _py_cmd, "python")


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_harness_starts_together(tmp_path: Path, shell: list[str]) -> None:
    shell = _shell(shell)
    (tmp_path / "run").mkdir()
    _check_aligned(tmp_path / "run", _sh_cmd(shell), WORK, " ".join(shell))
    (tmp_path / "control").mkdir()
    _check_control(tmp_path / "control", _sh_cmd(shell), " ".join(shell))


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_c_harness_starts_together(tmp_path: Path, static: bool) -> None:
    binary = _compile(tmp_path, static)
    (tmp_path / "run").mkdir()
    _check_aligned(tmp_path / "run", _c_cmd(binary), WORK, f"C {'static' if static else 'dynamic'}")
    if not static:
        (tmp_path / "control").mkdir()
        _check_control(tmp_path / "control", _c_cmd(binary), "C")


def test_c_harness_compiles_with_strict_c99(tmp_path: Path) -> None:
    cmd = ["gcc", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-pedantic", "-O2", "-Wall"]
    cmd += ["-Wextra", "-Werror", "-I", str(REPO / "src" / "duetbench" / "sync")]
    cmd += ["-o", str(tmp_path / "h"), str(EXAMPLES / "harness.c")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def test_mixed_languages_share_one_duet(tmp_path: Path) -> None:
    """The protocol is language-neutral: a C side and a shell side in one duet."""
    binary = _compile(tmp_path, static=False)
    c_make, sh_make = _c_cmd(binary), _sh_cmd(["/bin/sh"])
    out = {"A": tmp_path / "A.csv", "B": tmp_path / "B.csv"}
    cmds = {"A": c_make(out["A"], 5, 1), "B": sh_make(out["B"], 5, 2)}
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        res = _run_sides(cmds, {p: {**_base_env(), **coord.env(p)} for p in cmds}, coord)
        assert all(r.returncode == 0 for r in res.values()), res
        assert len(coord.go_times_ns) == 5
        _assert_starts_between_gos(coord, {p: _read_csv(out[p]) for p in out})


# --------------------------------------------------------------------------- early exit, death


_LOOP = "import duetbench.sync as s, sys\nfor _ in range(int(sys.argv[1])):\n    s.wait()\n"


@pytest.mark.parametrize("tell", ["done", "side_finished"])
def test_side_with_fewer_iterations_does_not_block_the_other(tmp_path: Path, tell: str) -> None:
    """A stops after 3 iterations; B (12) still finishes: its lone readies get go at once."""
    code_a = _LOOP + ("s.done()\n" if tell == "done" else "")
    cmds = {
        "A": [sys.executable, "-c", code_a, "3"],
        "B": [sys.executable, str(EXAMPLES / "harness.py"), str(tmp_path / "B.csv")]
        + ["--iterations", "12", "--work", "1000"],
    }
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        envs = {p: {**_base_env(), **coord.env(p)} for p in cmds}
        # With "done" the executor never reports A's exit: the side's own message must do.
        # (B blocked by the missing go would run into DUET_SYNC_TIMEOUT, then fail.)
        res = _run_sides(cmds, envs, coord if tell == "side_finished" else None)
        events = coord.go_events
    assert res["A"].returncode == 0 and res["B"].returncode == 0, res
    assert len(_read_csv(tmp_path / "B.csv")) == 12
    assert [e.pairs for e in events[:3]] == [("A", "B"), ("B", "A"), ("A", "B")]
    assert [e.pairs for e in events[3:]] == [("B",)] * 9


def test_killed_side_is_reported_and_the_other_finishes(tmp_path: Path) -> None:
    """A dies while waiting for go; the executor's side_finished releases B."""
    # B: 3 iterations, then it holds until `released` exists, then 3 more
    released = tmp_path / "released"
    hold = f"import os, time\nwhile not os.path.exists({str(released)!r}):\n    time.sleep(0.01)\n"
    code_b = _LOOP + hold + _LOOP.split("\n", 1)[1]
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        env_a = {**_base_env(), **coord.env("A")}
        env_b = {**_base_env(), **coord.env("B")}
        a = subprocess.Popen([sys.executable, "-c", _LOOP, "1000"], env=env_a)
        b = subprocess.Popen([sys.executable, "-c", code_b, "3"], env=env_b)
        # 3 iterations together, then A waits for go while B holds: kill A there.
        _wait_until(lambda: coord.ready_counts["A"] == 4)
        a.kill()
        a.wait(HANG_S)
        coord.side_finished("A")
        released.touch()
        assert b.wait(HANG_S) == 0
        events = coord.go_events
        assert [len(e.pairs) for e in events] == [2, 2, 2, 1, 1, 1]
        assert coord.wait_finished(0) is False  # B exited without done; not reported yet
        coord.side_finished("B")
        assert coord.wait_finished(HANG_S)


def test_close_after_side_died_mid_protocol(tmp_path: Path) -> None:
    """A wrote ready and died; B never came. close() is prompt and leaves no FIFO."""
    sync_dir = tmp_path / "run" / "sync"
    coord = SyncCoordinator.create(sync_dir)
    coord.start()
    a = subprocess.Popen([sys.executable, "-c", _LOOP, "5"], env={**_base_env(), **coord.env("A")})
    _wait_until(lambda: coord.ready_counts["A"] == 1)
    a.kill()
    a.wait(HANG_S)
    # prompt: a pending ready of a dead side must not make close() wait for anything
    closer = threading.Thread(target=coord.close)
    closer.start()
    closer.join(HANG_S)
    assert not closer.is_alive(), "close() hangs on the dead side's pending ready"
    assert not sync_dir.exists()
    assert (tmp_path / "run").exists()  # only what create() made is removed
    coord.close()  # idempotent
    coord.side_finished("A")  # harmless after close


def test_close_releases_a_waiting_side_with_an_error(tmp_path: Path) -> None:
    """The coordinator going away while a side waits: the side fails at once, no timeout."""
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        # no timeout: only the close can end this wait (an error other than SyncTimeout)
        client = SyncClient(coord.directory, "A", timeout_s=None)
        timer = threading.Thread(
            target=lambda: (_wait_until(lambda: coord.ready_counts["A"] == 1), coord.close())
        )
        timer.start()
        with pytest.raises(SyncError, match="closed") as err:
            client.wait()
        assert not isinstance(err.value, SyncTimeout)
        timer.join()


def test_close_with_preexisting_directory_keeps_it(tmp_path: Path) -> None:
    with SyncCoordinator.create(tmp_path) as coord:
        assert sorted(os.listdir(tmp_path)) == ["go.A", "go.B", "ready"]
        assert coord.go_times_ns == []
    assert tmp_path.exists() and os.listdir(tmp_path) == []


def test_stale_fifos_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "ready")
    with pytest.raises(SyncError, match="fresh directory"):
        SyncCoordinator.create(tmp_path)


# --------------------------------------------------------------------------- client edge cases


def test_wait_without_sync_dir_is_a_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    """No sync directory: nothing is opened, nothing waited for (any file access fails)."""

    def no_files(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a no-op wait touched a file: {args}")

    monkeypatch.setattr(sync_client.os, "open", no_files)
    monkeypatch.setattr(sync_client.os, "mkfifo", no_files)
    assert sync.wait(environ={}) is False
    assert sync.done(environ={"DUET_PAIR": "A"}) is False
    assert sync.wait(environ={"DUET_SYNC_DIR": ""}) is False


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_wait_without_sync_dir_is_a_noop(tmp_path: Path, shell: list[str]) -> None:
    res = subprocess.run(
        [*_shell(shell), str(EXAMPLES / "harness.sh"), str(tmp_path / "r.csv"), "3", "10"],
        env=_base_env(),
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert res.returncode == 0, res.stderr
    assert len(_read_csv(tmp_path / "r.csv")) == 3


def test_missing_coordinator_fails_fast(tmp_path: Path) -> None:
    """FIFOs left without a coordinator: nobody reads `ready`, the side errors at once --
    with no timeout set, so only the missing reader can have ended the wait."""
    os.mkfifo(tmp_path / "ready")
    os.mkfifo(tmp_path / "go.A")
    env = {"DUET_SYNC_DIR": str(tmp_path), "DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "0"}
    with pytest.raises(SyncError, match="no coordinator") as err:
        sync.wait(environ=env)
    assert not isinstance(err.value, SyncTimeout)
    with pytest.raises(SyncError, match="does not exist"):
        sync.wait(environ={**env, "DUET_SYNC_DIR": str(tmp_path / "nope")})


def test_hung_coordinator_times_out(tmp_path: Path) -> None:
    """Someone holds `ready` but never answers: DUET_SYNC_TIMEOUT ends the wait."""
    os.mkfifo(tmp_path / "ready")
    os.mkfifo(tmp_path / "go.A")
    fds = [os.open(tmp_path / n, os.O_RDWR | os.O_NONBLOCK) for n in ("ready", "go.A")]
    try:
        env = {"DUET_SYNC_DIR": str(tmp_path), "DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "0.4"}
        t0 = time.monotonic()
        with pytest.raises(SyncTimeout):
            sync.wait(environ=env)
        assert time.monotonic() - t0 > 0.35  # it waited the timeout (a lower bound only)
        assert os.read(fds[0], 100) == b"A\n"  # the ready line, byte-exact
    finally:
        for fd in fds:
            os.close(fd)


def _hung_dir(tmp_path: Path) -> tuple[Path, list[int]]:
    d = tmp_path / "hung"
    d.mkdir()
    os.mkfifo(d / "ready")
    os.mkfifo(d / "go.A")
    return d, [os.open(d / n, os.O_RDWR | os.O_NONBLOCK) for n in ("ready", "go.A")]


# Shells whose `read` has -t (dash has not: there only the executor's run timeout
# ends a wait on a coordinator that is alive but never answers).
TIMEOUT_SHELLS = [p for p in SHELLS if p.id != "sh"] + [pytest.param(["bash"], id="bash")]
ALL_SHELLS = SHELLS + [pytest.param(["bash"], id="bash")]


def _shell_wait(shell: list[str], d: Path, timeout: str):
    script = f'. "{sync.helper_path("sh")}"; duet_sync_wait'
    env = {**_base_env(), "DUET_SYNC_DIR": str(d), "DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": timeout}
    t0 = time.monotonic()
    res = subprocess.run(
        [*_shell(shell), "-c", script], env=env, capture_output=True, text=True, timeout=HANG_S
    )
    return res, time.monotonic() - t0


@pytest.mark.parametrize("shell", TIMEOUT_SHELLS)
def test_shell_wait_times_out(tmp_path: Path, shell: list[str]) -> None:
    d, fds = _hung_dir(tmp_path)
    try:
        res, elapsed = _shell_wait(shell, d, "1")
        assert res.returncode == 1, res.stderr
        assert "DUET_SYNC_TIMEOUT" in res.stderr
        assert elapsed > 0.9  # it waited the timeout (a lower bound only)
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_shell_wait_fails_fast_when_coordinator_gone(tmp_path: Path, shell: list[str]) -> None:
    """Stale FIFOs (executor killed): end-of-file at once, in every shell; and the same
    when the coordinator closes during the wait. No timeout is set (0 = forever), so an
    exit with status 2 ("closed") can only come from the end-of-file."""
    d, fds = _hung_dir(tmp_path)
    for fd in fds:
        os.close(fd)
    res, _ = _shell_wait(shell, d, "0")
    assert res.returncode == 2 and "closed" in res.stderr, res.stderr
    with SyncCoordinator.create(tmp_path / "live") as coord:
        # close once the shell has said ready, i.e. while it waits for go
        timer = threading.Thread(
            target=lambda: (_wait_until(lambda: coord.ready_counts["A"] == 1), coord.close())
        )
        timer.start()
        res, _ = _shell_wait(shell, coord.directory, "0")
        timer.join()
    assert res.returncode == 2 and "closed" in res.stderr, res.stderr


def test_c_wait_times_out_and_fails_fast(tmp_path: Path) -> None:
    binary = _compile(tmp_path, static=False)
    d, fds = _hung_dir(tmp_path)
    try:
        env = {**_base_env(), "DUET_SYNC_DIR": str(d), "DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "0.5"}
        t0 = time.monotonic()
        res = subprocess.run(
            [binary, tmp_path / "x.csv", "1"], env=env, capture_output=True, timeout=HANG_S
        )
        assert res.returncode == 1 and b"DUET_SYNC_TIMEOUT" in res.stderr
        assert time.monotonic() - t0 > 0.45  # it waited the timeout (a lower bound only)
    finally:
        for fd in fds:
            os.close(fd)
    # now nobody holds `ready`: no coordinator, an error at once (no timeout to end it)
    env["DUET_SYNC_TIMEOUT"] = "0"
    res = subprocess.run(
        [binary, tmp_path / "x.csv", "1"], env=env, capture_output=True, timeout=HANG_S
    )
    assert res.returncode == 2 and b"no coordinator" in res.stderr


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"DUET_PAIR": ""}, "DUET_PAIR"),
        ({"DUET_PAIR": "A B"}, "DUET_PAIR"),
        ({"DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "soon"}, "DUET_SYNC_TIMEOUT"),
        ({"DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "-1"}, "DUET_SYNC_TIMEOUT"),
    ],
)
def test_bad_environment_is_a_clear_error(tmp_path: Path, env: dict[str, str], match: str) -> None:
    with pytest.raises(SyncError, match=match):
        sync.wait(environ={"DUET_SYNC_DIR": str(tmp_path), **env})


def test_timeout_zero_means_forever() -> None:
    client = SyncClient.from_env(
        {"DUET_SYNC_DIR": "/x", "DUET_PAIR": "B", "DUET_SYNC_TIMEOUT": "0"}
    )
    assert client is not None and client.timeout_s is None
    client = SyncClient.from_env({"DUET_SYNC_DIR": "/x", "DUET_PAIR": "B"})
    assert client is not None and client.timeout_s == sync.DEFAULT_TIMEOUT_S


def test_protocol_bytes_and_malformed_messages(tmp_path: Path) -> None:
    """Drive the coordinator with raw bytes: `A\\n`, `B\\n` -> `go\\n` on both go FIFOs."""
    with SyncCoordinator.create(tmp_path / "s") as coord:
        d = coord.directory
        go = {p: os.open(d / f"go.{p}", os.O_RDONLY | os.O_NONBLOCK) for p in "AB"}
        ready = os.open(d / "ready", os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(ready, b"hello\nA\n")
            _wait_until(lambda: coord.ready_counts["A"] == 1)  # both lines handled
            assert coord.go_events == []
            with pytest.raises(BlockingIOError):
                os.read(go["A"], 10)
            os.write(ready, b"B\n")
            _wait_until(lambda: len(coord.go_events) == 1)  # recorded after both writes
            assert os.read(go["A"], 10) == b"go\n" and os.read(go["B"], 10) == b"go\n"
            assert "hello" in coord.protocol_errors[0]
            os.write(ready, b"B done\nA\n")
            _wait_until(lambda: len(coord.go_events) == 2)
            assert coord.go_events[1].pairs == ("A",)
            assert coord.finished == {"B"}
        finally:
            for fd in (*go.values(), ready):
                os.close(fd)
        ev = coord.go_events[0]
        assert abs(ev.epoch_ns - time.time_ns()) < 60e9 and ev.monotonic_ns > 0


# --------------------------------------------------------------------------- CLI


def test_cli_wait_done_path(tmp_path: Path) -> None:
    py = [sys.executable, "-m", "duetbench.sync"]
    res = subprocess.run([*py, "wait"], env=_base_env(), capture_output=True, timeout=HANG_S)
    assert res.returncode == 0
    res = subprocess.run([*py, "path", "sh"], capture_output=True, text=True, timeout=HANG_S)
    assert Path(res.stdout.strip()).read_text().startswith("# duet_sync.sh")
    bad = {**_base_env(), "DUET_SYNC_DIR": str(tmp_path), "DUET_PAIR": "A"}
    res = subprocess.run([*py, "wait"], env=bad, capture_output=True, text=True, timeout=HANG_S)
    assert res.returncode == 2 and "duet-sync:" in res.stderr
    # one real synchronized iteration per side through the CLI, then done
    with SyncCoordinator.create(tmp_path / "s") as coord:
        script = [
            sys.executable,
            "-c",
            "from duetbench.sync import main; main(['wait']); main(['done'])",
        ]
        res_all = _run_sides(
            {"A": script, "B": script}, {p: {**_base_env(), **coord.env(p)} for p in "AB"}, None
        )
        assert all(r.returncode == 0 for r in res_all.values())
        assert len(coord.go_events) == 1 and coord.wait_finished(HANG_S)


def test_cli_coordinate(tmp_path: Path) -> None:
    d = tmp_path / "s"
    coord = subprocess.Popen(
        [sys.executable, "-m", "duetbench.sync", "coordinate", str(d)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until(lambda: (d / "go.B").exists())
        sh = shutil.which("sh") or "/bin/sh"
        cmds = {
            p: [sh, str(EXAMPLES / "harness.sh"), str(tmp_path / f"{p}.csv"), "3", "10"]
            for p in "AB"
        }
        envs = {p: {**_base_env(), "DUET_SYNC_DIR": str(d), "DUET_PAIR": p} for p in "AB"}
        res = _run_sides(cmds, envs, None)
        assert all(r.returncode == 0 for r in res.values()), res
        out, _ = coord.communicate(timeout=HANG_S)  # exits once both sides said done
    finally:
        if coord.poll() is None:
            coord.kill()
    assert coord.returncode == 0
    assert len(out.splitlines()) == 3
    assert not d.exists()


def _wait_until(cond) -> None:
    wait_until(cond, "the coordinator's state")


# --------------------------------------------------------------------------- spin or block

_WAIT_S = 1.0  # the hung coordinator never answers: each wait ends with its timeout
_PY_WAITER = """
import sys, time
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "client":
    import duetbench.sync as s
    wait, err = (lambda: s.wait()), s.SyncTimeout
else:  # the micro worker's own copy of the handshake (standard library only)
    sys.path.insert(0, sys.argv[3])
    import handshake as h
    import os
    wait, err = (lambda: h.Handshake.from_env(os.environ).wait()), h.HandshakeError
t0 = time.process_time()
try:
    wait()
except err:
    print(time.process_time() - t0)
"""


def _waiter_cpu_s(tmp_path: Path, kind: str, mode: str | None) -> float:
    """CPU seconds one side burns in a wait that ends with its timeout."""
    (tmp_path / f"{kind}-{mode}").mkdir()
    d, fds = _hung_dir(tmp_path / f"{kind}-{mode}")
    env = {**_base_env(), "DUET_SYNC_DIR": str(d), "DUET_PAIR": "A"}
    env["DUET_SYNC_TIMEOUT"] = str(_WAIT_S)
    if mode is not None:
        env["DUET_SYNC_WAIT"] = mode
    try:
        if kind == "c":
            binary = _compile(tmp_path, static=False)
            proc = subprocess.Popen(
                [binary, tmp_path / "x.csv", "1"], env=env, stderr=subprocess.PIPE
            )
            _pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            assert proc.returncode == 1, proc.stderr.read() if proc.stderr else ""
            proc.stderr and proc.stderr.close()
            return usage.ru_utime + usage.ru_stime
        micro = REPO / "src" / "duetbench" / "micro"
        res = subprocess.run(
            [sys.executable, "-c", _PY_WAITER, str(REPO / "src"), kind, str(micro)],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_S,
        )
        assert res.returncode == 0 and res.stdout.strip(), res.stderr
        return float(res.stdout)
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("kind", ["client", "micro", "c"])
def test_a_waiting_side_keeps_its_cpu_busy_unless_told_to_block(tmp_path: Path, kind: str) -> None:
    """In a sduet the shorter side waits at every handshake for the longer one. Asleep,
    it would leave its CPU idle for the second part of the longer side's iteration, which
    then runs faster than its first part: a known 2x read as 2.15-2.2 on a quiet 2-CPU
    machine and as 1.4-1.8 beside a busy intruder. Spinning (the default) keeps the
    other side's surroundings alike all through (docs/sync.md, "Waiting: fill, spin or block").
    Bounds leave room for a busy machine: a spinning wait gets at least a share of a CPU."""
    spin = _waiter_cpu_s(tmp_path, kind, None)
    block = _waiter_cpu_s(tmp_path, kind, "block")
    assert spin > 0.25 * _WAIT_S, (spin, block)
    assert block < 0.1 * _WAIT_S, (spin, block)
    with pytest.raises(SyncError, match="DUET_SYNC_WAIT"):
        SyncClient.from_env({"DUET_SYNC_DIR": "/x", "DUET_PAIR": "A", "DUET_SYNC_WAIT": "nap"})


@pytest.mark.parametrize("kind", ["client", "micro", "c"])
def test_fill_is_a_busy_wait_everywhere(tmp_path: Path, kind: str) -> None:
    """DUET_SYNC_WAIT=fill is the micro worker's default (its samples' function runs while
    it waits, tests/test_micro_fill.py); a client with no function to run -- the generic
    client, the C helper, the worker's wait without a filler -- spins instead of failing."""
    assert _waiter_cpu_s(tmp_path, kind, "fill") > 0.25 * _WAIT_S
