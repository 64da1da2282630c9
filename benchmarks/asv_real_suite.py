"""A real library's own asv suite, unchanged, under `duet micro`.

cdflib (pure Python on numpy) ships its asv suite (``asv.conf.json``, ``benchmarks/``)
in its sdist. This script downloads two released sdists with pip (a package
registry is all it needs), unpacks them, and runs ``duet micro --asv`` with the
suite of version A, A's source tree on side A's path and B's on side B's; both
sides use this interpreter (its numpy). The verdicts go to stdout as Markdown.

    python benchmarks/asv_real_suite.py                          # cdflib 1.3.1 -> 1.3.2, 3 x 10 s
    python benchmarks/asv_real_suite.py --a 1.3.0 --b 1.3.1 --budget 20s --method sduet --method seqn

``--budget`` is `duet micro`'s: machine time per benchmark x method (cdflib's suite has
three benchmarks, so the default 10 s is about 30 s of sampling per method).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def sdist(
    package: str, version: str, into: Path, needed: tuple[str, ...] = ("benchmarks",)
) -> Path:
    """The unpacked sdist of ``package==version`` (downloaded with pip), which must hold
    ``needed`` (asv_continuous.py also needs ``asv.conf.json``)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "-q", "-d", str(into), f"{package}=={version}"],
        check=True,
    )  # fmt: skip
    (archive,) = into.glob(f"{package}-{version}.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    tree = into / f"{package}-{version}"
    for name in needed:
        if not (tree / name).exists():
            raise SystemExit(f"{package} {version}: its sdist has no {name}")
    return tree


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--package", default="cdflib")
    p.add_argument("--a", default="1.3.1", help="version A")
    p.add_argument("--b", default="1.3.2", help="version B")
    p.add_argument(
        "--budget", default="10s", help="duet micro --budget: per benchmark x method (10s)"
    )
    p.add_argument("--runs", default="6")
    p.add_argument("--method", action="append", default=None)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="asv-real-") as tmp:
        base = Path(tmp)
        a = sdist(args.package, args.a, base / "a")
        b = sdist(args.package, args.b, base / "b")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(SRC), env.get("PYTHONPATH")) if x)
        methods = [x for m in (args.method or ["sduet"]) for x in ("--method", m)]
        done = subprocess.run(
            [sys.executable, "-m", "duetbench", "micro", "--asv", str(a / "benchmarks"),
             "--a-path", str(a), "--b-path", str(b), "--budget", args.budget,
             "--runs", args.runs, *methods, "--format", "json", "-o", str(base / "results")],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode not in (0, 4):
            print(done.stderr, file=sys.stderr)
            return done.returncode
        rows = json.loads(done.stdout)["rows"]
    print(f"{args.package} {args.a} (A) -> {args.b} (B), duet micro --budget {args.budget}\n")
    print("| benchmark | method | change | 95 % interval | verdict |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| `{r['benchmark']}` | {r['method']} | {r['change'] * 100:+.2f} % "
            f"| [{r['ci_low'] * 100:+.2f} %, {r['ci_high'] * 100:+.2f} %] | {r['verdict']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
