"""Gates with the repository's priors: what a second .. fifth gate on
the same runner costs with ``--history`` against without, on the same workload.

Three workloads (``--workload``): ``c``, gate_history_study.py's git history of a small C
program (``cc -O2``, a chain of xorshift steps), here only its commits that leave the
program unchanged (docs-only and neutral ones); ``example``, the job of examples/ci/
(its duet.yml and Makefile: a program that sleeps 0.1 s per iteration, 10 iterations,
aduet) on a history of docs-only commits; ``seeded``, tests/test_gate_history.py's
program that reports seeded iteration times (each run shifted by its own normal noise of
``--sd`` per side; seqn), so a gate's run values are the same with and without the
repository, and on a quiet or a busy machine: the difference is the rule's alone.
Every gate's truth is 0 and its verdict should
be ``equivalent`` at the 2 % threshold -- the verdict that needs the most runs, and the
one a gate of an ordinary pull request reaches. For every try, a fresh results repository; the
gates c0->c1, c1->c2, c2->c3, c5->c6, c6->c7 in that order, each run twice side by side
(the order alternating): with ``--history REPO`` (the gate then adds itself, so gate k
starts from the spread of gates 1 .. k-1) and without. Per gate: the runs and machine
seconds its stopping rule spent (stops.json), the verdict, the interval's width and
whether the prior was used or dropped.

    python3 benchmarks/gate_priors_study.py                    # C program, 2 tries
    python3 benchmarks/gate_priors_study.py --workload example --tries 2
    python3 benchmarks/gate_priors_study.py --workload seeded --tries 10 --sd 0.02
    python3 benchmarks/gate_priors_study.py --workload seeded --until precise:1%
    python3 benchmarks/gate_priors_study.py --tries 1 --gates 3

The machine's load is printed before and after: the figures mean nothing without it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_history_study import BUILD, calibrate, duet, git, load, make_history  # noqa: E402

#: (base, head) of the gates, in order: commits that leave the program unchanged
GATES = (("c0", "c1"), ("c1", "c2"), ("c2", "c3"), ("c5", "c6"), ("c6", "c7"))
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "ci"


def example_history(root: Path) -> Path:
    """examples/ci's job on 8 commits c0 .. c7 that change only a README."""
    repo = root / "example"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "study@example.invalid")
    git(repo, "config", "user.name", "study")
    (repo / "Makefile").write_text((EXAMPLES / "Makefile.example").read_text())
    (repo / "duet.yml").write_text((EXAMPLES / "duet.yml").read_text())
    (repo / "work.txt").write_text("0.1\n")
    for i in range(8):
        (repo / "README").write_text(f"docs, edition {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"c{i}: docs")
        git(repo, "tag", f"c{i}")
    return repo


SEEDED_CONFIG = """experiment: {name: seeded, measure: wall}
benchmarks:
  work:
    harness: generic
    repetitions: {seqn: 1}
    A: {command: "cp runs/$DUET_REP.csv it.csv", results: [it.csv]}
"""


def seeded_history(root: Path, seed: str, sd: float, max_runs: int) -> Path:
    """8 commits c0 .. c7 of a program whose iteration times are drawn per commit and run
    (10 ms, each run shifted by normal noise of ``sd``): the same for every gate."""
    repo = root / "seeded"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "study@example.invalid")
    git(repo, "config", "user.name", "study")
    (repo / "duet.yml").write_text(SEEDED_CONFIG)
    (repo / "runs").mkdir()
    for i in range(8):
        rng = random.Random(f"{seed} commit {i}")
        for rep in range(max_runs + 1):
            ns = int(1e7 * (1 + rng.gauss(0, sd)))
            (repo / "runs" / f"{rep}.csv").write_text("duration_ns\n" + f"{ns}\n" * 9)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"c{i}")
        git(repo, "tag", f"c{i}")
    return repo


def gate(
    repo: Path, out: Path, base: str, head: str, build: str, extra: list[str]
) -> dict[str, object]:
    """One gate: its exit status and what its stopping rule spent and decided."""
    before = set(out.iterdir()) if out.exists() else set()
    code, text, wall = duet(
        repo, "gate", "--base", base, "--head", head, "--build", build, "duet.yml",
        "-o", str(out), "--threshold", "2%", *extra,
    )  # fmt: skip
    if code == 2:
        print(text[-2000:], file=sys.stderr)
        raise SystemExit(2)
    (root,) = set(out.iterdir()) - before
    (entry,) = json.loads((root / "stops.json").read_text())["stops"].values()
    (bench,) = entry["decisions"]
    d = entry["decisions"][bench]
    prior = (entry.get("priors") or {}).get(bench)
    used = d.get("prior_used")
    return {
        "code": code,
        "runs": int(entry["runs"]),
        "seconds": float(entry["seconds"]),
        "wall": wall,
        "verdict": d["verdict"],
        "width": (d["high"] - d["low"]) * 100 if d["high"] is not None else float("nan"),
        "prior": "-" if prior is None else ("used" if used else "dropped"),
        "earlier": 0 if prior is None else int(prior["experiments"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workload", choices=("c", "example", "seeded"), default="c")
    ap.add_argument("--sd", type=float, default=0.01, help="seeded: run noise per side")
    ap.add_argument("--until", default="decided", help="the gates' goal (default decided)")
    ap.add_argument("--tries", type=int, default=2, help="fresh repositories (default 2)")
    ap.add_argument("--gates", type=int, default=len(GATES), help="gates per try (default 5)")
    ap.add_argument("--ms", type=float, default=20.0, help="the program's run time (ms)")
    ap.add_argument("--iterations", type=int, default=5, help="iterations per run")
    ap.add_argument("--max-runs", type=int, default=200, help="the examples' max_runs")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gate-priors-"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# gates with and without the repository's priors, {started}; load before: {load()}")
    work = calibrate(root, args.ms) if args.workload == "c" else 0
    build = {"c": BUILD, "example": "make", "seeded": "true"}[args.workload]
    rows: list[tuple[int, int, str, dict[str, object], dict[str, object]]] = []
    for t in range(args.tries):
        try_root = root / f"try{t}"
        try_root.mkdir()
        if args.workload == "c":
            repo = make_history(try_root, work, args.max_runs, args.iterations)
        elif args.workload == "example":
            repo = example_history(try_root)
        else:
            repo = seeded_history(try_root, f"try {t}", args.sd, args.max_runs)
        extra_all = ["--max-runs", str(args.max_runs)] if args.workload == "seeded" else []
        extra_all += ["--until", args.until]
        history = try_root / "perf.sqlite"
        for k, (base, head) in enumerate(GATES[: args.gates]):
            runs = {}
            order = ("with", "without") if (t + k) % 2 == 0 else ("without", "with")
            for mode in order:
                extra = [*extra_all, *(["--history", str(history)] if mode == "with" else [])]
                runs[mode] = gate(repo, try_root / mode, base, head, build, extra)
            w, wo = runs["with"], runs["without"]
            rows.append((t + 1, k + 1, f"{base}->{head}", w, wo))
            print(
                f"try {t + 1} gate {k + 1} {base}->{head}: with {w['runs']} runs "
                f"{w['seconds']:.0f} s ({w['verdict']}, width {w['width']:.2f} %, prior "
                f"{w['prior']} from {w['earlier']}); without {wo['runs']} runs "
                f"{wo['seconds']:.0f} s ({wo['verdict']}, width {wo['width']:.2f} %)",
                flush=True,
            )
    what = {
        "c": f"C program {args.ms} ms x {args.iterations} iterations per run, max_runs "
        f"{args.max_runs}",
        "example": "examples/ci's job (sleep 0.1 s x 10 iterations per run, max_runs 200)",
        "seeded": f"seeded iteration times, run noise {args.sd * 100:g} % per side, seqn, "
        f"max_runs {args.max_runs}",
    }[args.workload]
    print(f"\nload after: {load()}; {what}; --until {args.until}")
    print("\n| try | gate | commits | prior (earlier gates) | runs with / without | "
          "machine s with / without | verdict with / without |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for t, k, name, w, wo in rows:
        print(
            f"| {t} | {k} | {name} | {w['prior']} ({w['earlier']}) | {w['runs']} / {wo['runs']} "
            f"| {w['seconds']:.0f} / {wo['seconds']:.0f} | {w['verdict']} / {wo['verdict']} |"
        )
    print("\n| gate | tries | mean runs with / without | ratio of machine seconds (sum) |")
    print("|---|---|---|---|")
    for k in range(1, args.gates + 1):
        sel = [(w, wo) for _t, kk, _n, w, wo in rows if kk == k]
        rw = statistics.mean(float(w["runs"]) for w, _ in sel)  # type: ignore[arg-type]
        rwo = statistics.mean(float(wo["runs"]) for _, wo in sel)  # type: ignore[arg-type]
        sw = sum(float(w["seconds"]) for w, _ in sel)  # type: ignore[arg-type]
        swo = sum(float(wo["seconds"]) for _, wo in sel)  # type: ignore[arg-type]
        print(f"| {k} | {len(sel)} | {rw:.1f} / {rwo:.1f} | {sw / swo:.2f}x |")
    later = [(w, wo) for _t, k, _n, w, wo in rows if k >= 2]
    if later:
        sw = sum(float(w["seconds"]) for w, _ in later)  # type: ignore[arg-type]
        swo = sum(float(wo["seconds"]) for _, wo in later)  # type: ignore[arg-type]
        rw = sum(int(w["runs"]) for w, _ in later)  # type: ignore[call-overload]
        rwo = sum(int(wo["runs"]) for _, wo in later)  # type: ignore[call-overload]
        print(
            f"\ngates 2..{args.gates}: {rw} runs with the priors against {rwo} without "
            f"({rw / rwo:.2f}x); machine seconds {sw:.0f} against {swo:.0f} ({sw / swo:.2f}x)"
        )
    print(f"(results kept in {root})")


if __name__ == "__main__":
    main()
