"""Real releases: packaging 25.0 against 26.0 from PyPI, with `duet micro`, pyperf and a
plain timeit, quiet and beside busy processes (issues 25 and 27).

packaging 26.0's changelog claims a faster `Requirement()` and `Version` parsing. Four
functions are timed: `Requirement(...)`, `Version(...)` parsing, `str(Version)` and
`SpecifierSet(...)`. Each version is installed into a virtual environment of its own
(plus a second 26.0 environment for an A/A pair), as a user would compare two releases.

For every condition (``quiet``; ``two``: two busy loops in the benchmark's session) it
runs, one after the other under the same condition:

* ``duet micro bench_packaging.py --a-python A/bin/python --b-python B/bin/python``
  (sduet, the default; ``--budget``), for 25.0 -> 26.0 and for the A/A pair;
* ``pyperf timeit --fast --compare-to`` for each function (B's interpreter running,
  compared to A's), for the same two pairs;

and once, on the quiet machine first, a plain ``timeit`` of each function in each
environment (best of 7 repeats) as the reference ratio.

    python benchmarks/packaging_study.py --work /tmp/pkg            # quiet and two loops
    python benchmarks/packaging_study.py --work /tmp/pkg --conditions two --budget 40s

Needs the package index (pip installs packaging 25.0, 26.0 and pyperf into the
environments; the work directory keeps them for the next run). Figures go to
docs/measurements/packaging.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from busy_loops import busy_loops

BENCH = '''"""packaging's hot paths, as duet micro bench_* functions."""
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REQUIREMENT = 'requests[security,socks]>=2.8.1,==2.8.*; python_version < "3.12"'
VERSION = "1.2.3rc1.post4.dev5+local.7"
SPECIFIERS = ">=1.0,<2.0,!=1.5.*,~=1.4"
PARSED = Version(VERSION)


def bench_requirement():
    Requirement(REQUIREMENT)


def bench_version_parse():
    Version(VERSION)


def bench_version_str():
    str(PARSED)


def bench_specifierset():
    SpecifierSet(SPECIFIERS)
'''
#: function -> (setup, statement) for timeit and pyperf
STATEMENTS = {
    "requirement": (
        "from packaging.requirements import Requirement",
        "Requirement('requests[security,socks]>=2.8.1,==2.8.*; python_version < \"3.12\"')",
    ),
    "version_parse": (
        "from packaging.version import Version",
        "Version('1.2.3rc1.post4.dev5+local.7')",
    ),
    "version_str": (
        "from packaging.version import Version; v = Version('1.2.3rc1.post4.dev5+local.7')",
        "str(v)",
    ),
    "specifierset": (
        "from packaging.specifiers import SpecifierSet",
        "SpecifierSet('>=1.0,<2.0,!=1.5.*,~=1.4')",
    ),
}
ENVS = {"a25": "25.0", "b26": "26.0", "c26": "26.0"}
PAIRS = {"25.0 -> 26.0": ("a25", "b26"), "A/A 26.0": ("b26", "c26")}


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def environments(work: Path) -> dict[str, Path]:
    """A virtual environment per name of ENVS with its packaging and pyperf (kept)."""
    out = {}
    for name, version in ENVS.items():
        env = work / name
        python = env / "bin" / "python"
        if not python.exists():
            _log(f"creating {env} (packaging {version})")
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", f"packaging=={version}", "pyperf"],
                check=True,
            )
        out[name] = python
    return out


def timeit_ratio(pythons: dict[str, Path], a: str, b: str) -> dict[str, float]:
    """Plain timeit, best of 7 repeats, A and B alternating: B's time over A's."""
    out = {}
    for fn, (setup, stmt) in STATEMENTS.items():
        best: dict[str, float] = {}
        for _ in range(7):
            for side in (a, b):
                code = (
                    "import timeit\n"
                    f"t = timeit.Timer({stmt!r}, setup={setup!r})\n"
                    "n, _ = t.autorange()\n"
                    "print(min(t.repeat(3, n)) / n)\n"
                )
                done = subprocess.run(
                    [str(pythons[side]), "-c", code], capture_output=True, text=True, check=True
                )
                best[side] = min(best.get(side, float("inf")), float(done.stdout))
        out[fn] = best[b] / best[a]
    return out


def duet_ratio(pythons: dict[str, Path], a: str, b: str, bench: Path, budget: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="pkg-duet-") as tmp:
        args = [sys.executable, "-m", "duetbench", "micro", str(bench)]
        args += ["--a-python", str(pythons[a]), "--b-python", str(pythons[b])]
        args += ["--budget", budget, "-o", tmp, "--format", "json"]
        done = subprocess.run(args, capture_output=True, text=True, cwd=bench.parent)
        if done.returncode not in (0, 4):
            raise SystemExit(f"duet micro failed ({done.returncode}):\n{done.stderr[-2000:]}")
        doc = json.loads(done.stdout)
    out = {}
    for r in doc["rows"]:
        fn = r["benchmark"].split("bench_")[-1]
        out[fn] = {
            "ratio": None if r["change"] is None else 1 + r["change"],
            "ci": [
                None if r["ci_low"] is None else 1 + r["ci_low"],
                None if r["ci_high"] is None else 1 + r["ci_high"],
            ],
            "verdict": r["verdict"],
            "measure": r.get("measure"),
            "runs": r["runs"],
        }
    return out


def pyperf_ratio(pythons: dict[str, Path], a: str, b: str) -> dict[str, dict[str, Any]]:
    """``pyperf timeit --fast --compare-to A``, run by B's interpreter: B/A and the words."""
    out = {}
    for fn, (setup, stmt) in STATEMENTS.items():
        done = subprocess.run(
            [str(pythons[b]), "-m", "pyperf", "timeit", "--fast", "--compare-to",
             str(pythons[a]), "-s", setup, stmt],
            capture_output=True, text=True,
        )  # fmt: skip
        text = done.stdout + done.stderr
        m = re.search(r"Mean \+- std dev: \[[^\]]+\] (.+?) -> \[[^\]]+\] (.+?): (.+)", text)
        if m is None:
            out[fn] = {"ratio": None, "said": text.strip().splitlines()[-1:] or ["?"]}
            continue
        said = m.group(3).strip()
        faster = re.match(r"([\d.]+)x (faster|slower)", said)
        ratio = None
        if faster:
            x = float(faster.group(1))
            ratio = 1 / x if faster.group(2) == "faster" else x
        out[fn] = {"ratio": ratio, "said": said}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--work", type=Path, required=True, help="keeps the environments")
    p.add_argument("--conditions", default="quiet,two")
    p.add_argument("--budget", default="40s", help="duet micro's budget per pair")
    p.add_argument("--json", type=Path, help="write every figure here")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    pythons = environments(args.work)
    bench = args.work / "bench_packaging.py"
    bench.write_text(BENCH)
    result: dict[str, Any] = {"date": dt.datetime.now().isoformat(timespec="minutes")}
    _log("timeit reference (run it on a quiet machine)")
    result["timeit"] = {pair: timeit_ratio(pythons, *envs) for pair, envs in PAIRS.items()}
    for cond in [c for c in args.conditions.split(",") if c]:
        for pair, (a, b) in PAIRS.items():
            with busy_loops(cond):
                _log(f"{cond}: duet micro {pair}")
                duet = duet_ratio(pythons, a, b, bench, args.budget)
                _log(f"{cond}: pyperf {pair}")
                perf = pyperf_ratio(pythons, a, b)
            result.setdefault(cond, {})[pair] = {"duet": duet, "pyperf": perf}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def markdown(result: dict[str, Any]) -> str:
    lines = []
    for cond in ("quiet", "one", "two"):
        if cond not in result:
            continue
        lines += [
            f"\n**{cond}**\n",
            "| pair | function | timeit B/A (quiet) | duet micro B/A [95 % CI] | duet verdict "
            "| time | pyperf B/A | pyperf said |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for pair, got in result[cond].items():
            for fn in STATEMENTS:
                d = got["duet"].get(fn, {})
                ci = d.get("ci") or [None, None]
                pp = got["pyperf"].get(fn, {})
                lines.append(
                    f"| {pair} | {fn} | {_x(result['timeit'][pair][fn])} | {_x(d.get('ratio'))} "
                    f"[{_x(ci[0])}, {_x(ci[1])}] | {d.get('verdict', '-')} "
                    f"| {d.get('measure', '-')} | {_x(pp.get('ratio'))} | {pp.get('said', '-')} |"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
