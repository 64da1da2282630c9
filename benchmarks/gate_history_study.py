"""The gate on a real history: a 14-commit git history of a small C program.

The script builds a git repository in a temporary directory: ``c0`` .. ``c13``, each
commit tagged, the program compiled per commit by ``--build`` (``cc -O2``). Its work
(a chain of xorshift steps, so the compiler cannot shorten it) grows by **+4 % at c4**
and by **+8 % at c9**; the other commits change only the README (docs-only: c1, c3,
c6, c8, c10, c12) or a comment of the source (neutral: c2, c5, c7, c11, c13: the same
machine code). Then, with `duet` of this checkout:

1. ``duet gate --base c3 --head c4`` (the +4 % commit), ``--tries`` times: the exit
   status and interval (wanted: 1, an interval covering +4 %);
2. ``duet gate --base c0 --head c1`` (docs-only), ``--tries`` times (never 1);
3. ``duet bisect --good c0 --bad c6``, ``--bisect-tries`` times (wanted: c4);
4. 13 adjacent gates c(i-1) -> c(i) added to a results repository (``--history``), then
   ``duet history changes``: wanted exactly c4 and c9.

It prints each outcome and a Markdown summary. The machine's load is printed before
and after: the figures mean nothing without it.

    python3 benchmarks/gate_history_study.py                         # 3 tries each
    python3 benchmarks/gate_history_study.py --tries 1 --bisect-tries 1   # ~10 min
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = """\
#include <stdint.h>
/* %(comment)s */
#define WORK %(work)dULL
int main(void) {
    uint64_t x = 88172645463325252ULL;
    for (uint64_t i = 0; i < WORK; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    }
    volatile uint64_t sink = x; /* the result is used: the loop stays */
    (void)sink;
    return 0;
}
"""
CONFIG = """\
experiment:
  name: chist
  repetitions: {aduet: 1}
  stop: {max_runs: %(max_runs)d}
benchmarks:
  work:
    iterations: %(iterations)d
    command: ./build/bench
"""
BUILD = "mkdir -p build && cc -O2 -o build/bench bench.c"
#: (kind, relative work) per commit c0 .. c13
HISTORY = (
    ("initial", 1.0),
    ("docs", 1.0),
    ("neutral", 1.0),
    ("docs", 1.0),
    ("+4 %", 1.04),
    ("neutral", 1.04),
    ("docs", 1.04),
    ("neutral", 1.04),
    ("docs", 1.04),
    ("+8 %", 1.04 * 1.08),
    ("docs", 1.04 * 1.08),
    ("neutral", 1.04 * 1.08),
    ("docs", 1.04 * 1.08),
    ("neutral", 1.04 * 1.08),
)
INTERVAL = re.compile(r"([+-]\d+\.\d+) % \[([+-]\d+\.\d+) %, ([+-]\d+\.\d+) %\]")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_history(root: Path, work: int, max_runs: int, iterations: int) -> Path:
    repo = root / "chist"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "study@example.invalid")
    git(repo, "config", "user.name", "study")
    (repo / "duet.yml").write_text(CONFIG % {"max_runs": max_runs, "iterations": iterations})
    for i, (kind, factor) in enumerate(HISTORY):
        comment = f"revision {i}" if kind == "neutral" else "a small program"
        (repo / "bench.c").write_text(PROGRAM % {"work": round(work * factor), "comment": comment})
        if kind == "docs" or i == 0:
            (repo / "README").write_text(f"docs, edition {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}: {kind}")
        git(repo, "tag", f"c{i}")
    return repo


def calibrate(root: Path, ms: float) -> int:
    """The WORK giving about ``ms`` milliseconds per run of the program on this machine."""
    probe = root / "probe"
    probe.mkdir()
    work = 10_000_000
    (probe / "bench.c").write_text(PROGRAM % {"work": work, "comment": "probe"})
    subprocess.run(["sh", "-c", BUILD], cwd=probe, check=True)
    best = min(_timed(probe / "build" / "bench") for _ in range(5))
    return max(1_000_000, round(work * ms / 1000 / best))


def _timed(exe: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(exe)], check=False)
    return time.perf_counter() - t0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def duet(repo: Path, *args: str) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "duetbench", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250"},
    )
    return p.returncode, p.stdout + p.stderr, time.perf_counter() - t0


def interval(text: str) -> str:
    m = INTERVAL.search(text)
    return f"{m.group(1)} % [{m.group(2)}, {m.group(3)}]" if m else "no interval"


def gate(repo: Path, out: Path, base: str, head: str, extra: list[str]) -> tuple[int, str, float]:
    code, text, secs = duet(
        repo, "gate", "--base", base, "--head", head, "--build", BUILD, "duet.yml",
        "-o", str(out), *extra,
    )  # fmt: skip
    if code == 2:
        print(text[-2000:], file=sys.stderr)
    return code, interval(text), secs


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tries", type=int, default=3, help="gates of each kind (default 3)")
    ap.add_argument("--bisect-tries", type=int, default=3)
    ap.add_argument("--ms", type=float, default=20.0, help="the program's run time (ms)")
    ap.add_argument("--iterations", type=int, default=5, help="iterations per run")
    ap.add_argument("--max-runs", type=int, default=20, help="the config's stop: max_runs")
    ap.add_argument("--threshold", default="2%")
    ap.add_argument("--total-budget", default="20m", help="duet bisect --total-budget")
    ap.add_argument("--keep", type=Path, help="build the history here and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="gate-history-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# gate on a 14-commit C history, {started}; load before: {load()}")
    work = calibrate(root, args.ms)
    repo = make_history(root, work, args.max_runs, args.iterations)
    out = root / "results"
    extra = ["--threshold", args.threshold]
    print(f"WORK = {work} (about {args.ms:g} ms per run), {args.iterations} iterations per run,")
    print(f"max_runs {args.max_runs}, threshold {args.threshold}; history in {repo}\n")
    rows: list[tuple[str, str, str, str]] = []
    for t in range(args.tries):
        code, iv, secs = gate(repo, out, "c3", "c4", extra)
        rows.append(("gate c3 -> c4 (+4 %)", f"try {t + 1}", f"exit {code}", f"{iv}, {secs:.0f} s"))
        print(*rows[-1], sep=" | ", flush=True)
    for t in range(args.tries):
        code, iv, secs = gate(repo, out, "c0", "c1", extra)
        rows.append(("gate c0 -> c1 (docs)", f"try {t + 1}", f"exit {code}", f"{iv}, {secs:.0f} s"))
        print(*rows[-1], sep=" | ", flush=True)
    c4 = git(repo, "rev-parse", "c4")
    for t in range(args.bisect_tries):
        code, text, secs = duet(
            repo, "bisect", "--good", "c0", "--bad", "c6", "--build", BUILD, "duet.yml",
            "-o", str(out), "--total-budget", args.total_budget, *extra,
        )  # fmt: skip
        found = re.search(r"first bad commit: ([0-9a-f]+)", text)
        named = "c4" if found and found.group(1) == c4 else (found.group(1)[:10] if found else "-")
        left = re.search(r"one of these (\d+)", text)
        what = f"named {named}" if found else f"range of {left.group(1) if left else '?'} left"
        rows.append(("bisect c0..c6 (c4)", f"try {t + 1}", f"exit {code}", f"{what}, {secs:.0f} s"))
        print(*rows[-1], sep=" | ", flush=True)
        print("    " + "\n    ".join(text.strip().splitlines()), flush=True)
    history = root / "perf.sqlite"
    for i in range(1, len(HISTORY)):
        code, iv, secs = gate(repo, out, f"c{i - 1}", f"c{i}", [*extra, "--history", str(history)])
        kind = HISTORY[i][0]
        rows.append(
            (f"adjacent gate c{i - 1} -> c{i}", kind, f"exit {code}", f"{iv}, {secs:.0f} s")
        )
        print(*rows[-1], sep=" | ", flush=True)
    code, text, _ = duet(repo, "history", "changes", "--repo", str(history), "--format", "json")
    changes = json.loads(text)["changes"] if code == 0 else []
    found = ", ".join(f"{c['first_bad']} {c['change'] * 100:+.2f} %" for c in changes) or "none"
    rows.append(("history changes", "13 adjacent gates", f"exit {code}", f"changes: {found}"))
    print(*rows[-1], sep=" | ")
    for c in changes:
        print(f"    {c['first_bad']}: {c['evidence']}")
    print(f"\nload after: {load()}\n")
    print("| what | case | exit | outcome |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
