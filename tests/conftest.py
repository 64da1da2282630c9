"""Fixtures shared by the tests; helpers (functions, constants) are in tests/helpers.py."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.helpers import (
    BUILD_IMAGE,
    EXAMPLE_SH,
    ROOT,
    SANDBOX_CONF,
    SETUP_HINT,
    SYNC_SH,
    podman,
    require_tool,
    run_duet,
)
from tests.tiers import ProcessWatch, mark_tiers


@pytest.fixture
def write_config(tmp_path: Path):
    def write(text: str, name: str = "duet.yml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p

    return write


PROCESS_WATCH = ProcessWatch()


def pytest_configure(config):
    """A shell starts background jobs (`pytest &`, a CI step's `cmd &`) with SIGINT
    ignored, and an ignored signal stays ignored across exec: every `duet run` and
    noisy neighbour a test starts would then ignore the Ctrl-C the test sends it, and
    wait for its deadline. A *handled* signal is reset to the default in a child, so
    handle it here as an interactive Python does.

    The process watch checks the automatic test tiers (tests/tiers.py) while tests run."""
    # Under pytest-xdist (the README's test command) a worker's environment names it;
    # the pytest processes tests start would inherit that, and pytest-benchmark then
    # disables itself as if they ran under xdist too.
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        os.environ.pop(name, None)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    PROCESS_WATCH.install()


def pytest_unconfigure(config):
    PROCESS_WATCH.uninstall()


def pytest_collection_modifyitems(config, items):
    """The e2e and slow markers, applied from what each test calls (tests/tiers.py)."""
    mark_tiers(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    PROCESS_WATCH.current = item.nodeid
    yield
    PROCESS_WATCH.current = None


@pytest.fixture(autouse=True)
def _tier_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts processes is e2e; one that runs a container engine, a browser
    or a database server is slow (tests/tiers.py): the markers must say so."""
    yield
    problems = PROCESS_WATCH.problems(request.node)
    if problems:
        pytest.fail(f"test tiers: {'; '.join(problems)}", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """In CI a skipped test is a failure: container, browser and noise tests must really run there."""
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        names = ", ".join(getattr(r, "nodeid", "?") for r in skipped[:10])
        if reporter:
            reporter.write_line(
                f"CI: {len(skipped)} test(s) were skipped ({names}); in CI nothing may be skipped"
            )
        session.exitstatus = 1


@contextmanager
def once_per_session(request: pytest.FixtureRequest, name: str) -> Iterator[tuple[Path, bool]]:
    """A folder ``name`` that every pytest-xdist worker of this session shares, locked
    while the caller is inside, and whether an earlier caller finished filling it
    (``done``): the first fills it, the others wait and reuse it."""
    factory = request.getfixturevalue("tmp_path_factory")
    base = factory.getbasetemp()
    if hasattr(request.config, "workerinput"):  # a worker's base is .../pytest-N/popen-gwK
        base = base.parent
    folder = base / name
    folder.mkdir(exist_ok=True)
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / ".done"
        yield folder, done.exists()
        done.touch()


@pytest.fixture(scope="session")
def quickstart_results(request: pytest.FixtureRequest) -> Path:
    """The bundled quickstart example, run once per test session (about a minute) and
    shared by the workers."""
    with once_per_session(request, "quickstart") as (out, done):
        if not done:
            r = run_duet(
                "run",
                str(ROOT / "examples" / "quickstart" / "duet.yml"),
                "-o",
                str(out),
                "--no-compare",
                timeout=600,
            )
            assert r.returncode == 0, r.stderr
    return out / "quickstart"


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A busybox-static image built by examples/containers/build-image.sh (`podman import`
    of a rootfs tarball), once per content: the tag is a hash of everything that goes in."""
    require_tool("podman", f"apt-get install podman runc ({SETUP_HINT})")
    busybox = Path("/bin/busybox")
    if not busybox.exists():
        busybox = Path(require_tool("busybox", f"apt-get install busybox-static ({SETUP_HINT})"))
    digest = hashlib.sha256()
    for p in (busybox, EXAMPLE_SH, SYNC_SH, BUILD_IMAGE):
        digest.update(p.read_bytes())
    name = f"localhost/duetbench-test-busybox:{digest.hexdigest()[:12]}"
    if podman("image", "exists", name).returncode != 0:
        subprocess.run(["sh", str(BUILD_IMAGE), name, "podman"], check=True, capture_output=True)
    probe = podman("run", "--rm", name, "true")
    saved = os.environ.get("CONTAINERS_CONF")
    if probe.returncode != 0 and "rlimit" in probe.stderr:
        conf = tmp_path_factory.mktemp("containers") / "containers.conf"
        conf.write_text(SANDBOX_CONF)
        os.environ["CONTAINERS_CONF"] = str(conf)
        probe = podman("run", "--rm", name, "true")
    assert probe.returncode == 0, f"podman cannot run a container here: {probe.stderr}"
    yield name
    if saved is None:
        os.environ.pop("CONTAINERS_CONF", None)
    else:
        os.environ["CONTAINERS_CONF"] = saved


WORKLOADS_DIR = Path(__file__).resolve().parents[1] / "examples" / "workloads"


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/workloads' known-answer program, built with its setup.sh (make + gcc -O2) in a
    fresh directory once per test module."""
    require_tool("gcc", f"apt-get install gcc libc6-dev ({SETUP_HINT})")
    build = tmp_path_factory.mktemp("workloads")
    for name in ("workload.c", "Makefile", "setup.sh"):
        shutil.copy(WORKLOADS_DIR / name, build / name)
    subprocess.run(["sh", str(build / "setup.sh")], check=True, capture_output=True)
    exe = build / "workload"
    assert exe.is_file()
    return exe


@pytest.fixture
def known(tmp_path: Path) -> Path:
    """A copy of examples/micro (the known-work package of the micro tests) in a
    directory whose name has a space."""
    dest = tmp_path / "known work"
    example = Path(__file__).resolve().parents[1] / "examples" / "micro"
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
