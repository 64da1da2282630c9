from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture
def write_config(tmp_path: Path):
    def write(text: str, name: str = "duet.yml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p

    return write


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


@pytest.fixture(scope="session")
def quickstart_results(tmp_path_factory) -> Path:
    """The bundled quickstart example, run once per test session (about a minute)."""
    out = tmp_path_factory.mktemp("quickstart")
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
