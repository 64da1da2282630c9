"""Container duet study: do duets in containers answer as local duets do?

Podman, a busybox image holding a stand-in for a Renaissance harness
(benchmarks/container_standin.c: repetitions of a fixed integer loop of ~22 ms, results
in Renaissance's --json format, the sduet handshake compiled in). Thesis-format configs,
unchanged but for the benchmark (`docker_command: podman`, as the issue's). Per try and
harness, one experiment of three benchmarks -- A/A, B doing 10 % more work, B doing 2x --
with 4 aduet and 4 sduet runs each, 12 iterations per side and run:

- harness ``builtin``: duet's built-in harness in the container runs the stand-in once
  per iteration (one repetition each);
- harness ``external``: the stand-in runs its 12 repetitions itself (`suite: renaissance`).

Conditions: ``quiet`` (nothing added) and ``busy`` (one busy loop on the host beside the
duet, in its own process group). The truth per harness: the ratio the same harness gives
run alone, one side after the other (seqn), with many repetitions, measured in the same
study on the quiet machine.

Per harness x condition x method x change over the tries it prints: tries whose result
lies within 3 % of the truth, the median and worst error, the verdicts `slower` (of a
change) or the A/A false alarms (`slower` or `faster`), runs left out as unbalanced (of
all runs), results with `no data`, and which measure `auto` chose.

    python benchmarks/container_study.py --quick            # ~3 min: checks that it works
    python benchmarks/container_study.py --csv study.csv    # the full study (10 tries, ~35 min)
    python benchmarks/container_study.py --from-csv study.csv --markdown

Run the full study on a quiet machine (`uptime`: load below 0.5); it prints the load
before and after. Results: docs/measurements/container-duets.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from duetbench.analysis import compare
from duetbench.config import loads_config
from duetbench.process import process
from duetbench.schedule.inline import run_experiment

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "benchmarks" / "container_standin.c"
SYNC_H = REPO / "src" / "duetbench" / "sync"
#: loop steps per repetition: ~22 ms on the project's 2-vCPU VM
UNITS = 20_000_000
ITERATIONS = 12
CHANGES = {"aa": 1.0, "p10": 1.1, "x2": 2.0}
HARNESSES = ("builtin", "external")
CONDITIONS = ("quiet", "busy")
METHODS = ("aduet", "sduet")
#: a result within this of the truth counts as right (the issue's goal)
WITHIN = 0.03
BUSY_LOOP = "import time\nend = time.monotonic() + 7200\nwhile time.monotonic() < end:\n    pass\n"


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> str:
    """The load averages (1, 5, 15 min), as `uptime` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def build_image(engine: str = "podman") -> str:
    """A busybox-static rootfs with the stand-in at /opt/standin, imported (no registry)."""
    busybox = shutil.which("busybox") or "/bin/busybox"
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "standin"
        subprocess.run(
            ["gcc", "-O2", "-static", "-I", str(SYNC_H), "-o", str(binary), str(STANDIN)],
            check=True,
        )
        digest = hashlib.sha256(binary.read_bytes() + Path(busybox).read_bytes()).hexdigest()
        image = f"localhost/duetbench-container-study:{digest[:12]}"
        if subprocess.run([engine, "image", "exists", image]).returncode == 0:
            return image
        applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for d in ("bin", "etc", "opt", "proc", "sys", "dev", "root", "tmp"):
                info = tarfile.TarInfo(d)
                info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
                tar.addfile(info)
            tar.add(busybox, "bin/busybox")
            tar.add(binary, "opt/standin")
            for applet in applets.stdout.split():
                if applet != "busybox":
                    info = tarfile.TarInfo(f"bin/{applet}")
                    info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                    tar.addfile(info)
            for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                               ("etc/group", "root:x:0:\n")):  # fmt: skip
                data = text.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        subprocess.run([engine, "import", "-", image], input=buf.getvalue(), check=True,
                       capture_output=True)  # fmt: skip
    return image


def config_text(harness: str, image: str, name: str, seed: int, reps: dict[str, int],
                changes: dict[str, float]) -> str:  # fmt: skip
    """A thesis-format config: the issue's, one benchmark per change."""
    if harness == "builtin":
        base = f"  iterations: {ITERATIONS}\n  run_base: /opt/standin -r 1 --json /dev/null\n"
    else:
        cmd = f"/opt/standin -r {ITERATIONS} --json /tmp/results.json"
        base = (
            "  suite: renaissance\n  results: [/tmp/results.json]\n"
            f"  run_base: {cmd}\n  syncduet_run_base: {cmd}\n"
        )
    text = (
        "duetbench:\n"
        f"  name: {name}\n  seed: {seed}\n  schedule: randomized_interleaving_trials\n"
        f"  duet_repetitions: {reps.get('aduet', 0)}\n"
        f"  syncduet_repetitions: {reps.get('sduet', 0)}\n"
        f"  sequential_repetitions: {reps.get('seqn', 0)}\n"
        f"  docker_command: podman\n  image: {image}\n  timeout: 300\n"
        "  artifacts: {uname: uname -a}\n"
        f"{base}  duets: [{', '.join(changes)}]\n"
    )
    for bench, ratio in changes.items():
        text += (
            f"{bench}:\n  A: {{run: '--work {UNITS} {bench}'}}\n"
            f"  B: {{run: '--work {round(UNITS * ratio)} {bench}'}}\n"
        )
    return text


@contextmanager
def condition(name: str) -> Iterator[None]:
    """One busy loop on the host for ``busy``; nothing for ``quiet``."""
    if name == "quiet":
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", BUSY_LOOP], process_group=0)
    try:
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def run_one(text: str, out: Path, cond: str) -> pd.DataFrame:
    """The experiment of ``text`` under ``cond``: compare's rows (measure auto)."""
    out.mkdir(parents=True, exist_ok=True)
    exp = loads_config(text, out / "duet.yml")
    with condition(cond):
        summary = run_experiment(exp, out)
    return compare(process(summary.root).table)


def truth(harness: str, image: str, reps: int, tmp: Path) -> dict[str, float]:
    """The ratio B/A of each change, run alone (seqn) on the quiet machine."""
    changes = {k: v for k, v in CHANGES.items() if v != 1.0}
    text = config_text(harness, image, f"truth-{harness}", 1, {"seqn": reps}, changes)
    res = run_one(text, tmp / f"truth-{harness}", "quiet")
    out = {"aa": 1.0}
    for r in res.to_dict("records"):
        out[str(r["benchmark"])] = 1.0 + float(r["change"])
        _log(f"truth {harness} {r['benchmark']}: {1 + r['change']:.4f} "
             f"[{1 + r['ci_low']:.4f}, {1 + r['ci_high']:.4f}] ({r['measure']})")  # fmt: skip
    return out


def rows_of(res: pd.DataFrame, **cell: Any) -> list[dict[str, Any]]:
    rows = []
    for r in res.to_dict("records"):
        change = r.get("change")
        rows.append(
            {
                **cell,
                "method": r["method"],
                "change": str(r["benchmark"]),
                "measured": math.nan if change is None else 1.0 + float(change),
                "ci_low": 1.0 + float(r["ci_low"]),
                "ci_high": 1.0 + float(r["ci_high"]),
                "verdict": r["verdict"],
                "runs": int(r.get("runs") or 0),
                "left_out": int(r.get("runs_unbalanced") or 0),
                "measure": r.get("measure", ""),
                "reason": r.get("measure_reason", ""),
            }
        )
    return rows


def summary(df: pd.DataFrame) -> pd.DataFrame:
    out = []
    for key, g in df.groupby(["harness", "condition", "method", "change"], sort=True):
        err = (g["measured"] / g["truth"] - 1.0).abs()
        is_aa = key[3] == "aa"
        alarm = g["verdict"].isin(["slower", "faster"])
        out.append(
            {
                "harness": key[0],
                "condition": key[1],
                "method": key[2],
                "change": key[3],
                "tries": len(g),
                "within": int((err <= WITHIN).sum()),
                "median err": float(err.median()),
                "worst err": float(err.max()),
                "false alarms": int(alarm.sum()) if is_aa else math.nan,
                "slower": math.nan if is_aa else int((g["verdict"] == "slower").sum()),
                "left out": f"{int(g['left_out'].sum())}/{int(g['runs'].sum() + g['left_out'].sum())}",
                "no data": int((g["measured"].isna() | (g["verdict"] == "no data")).sum()),
                "measure": " ".join(f"{k}:{v}" for k, v in g["measure"].value_counts().items()),
            }
        )
    return pd.DataFrame(out)


def markdown(s: pd.DataFrame) -> str:
    lines = ["| harness | condition | method | change | within 3 % | median err | worst err | "
             "`slower` / A/A false alarms | left out | no data | measure |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in s.to_dict("records"):
        n = r["tries"]
        said = r["false alarms"] if r["change"] == "aa" else r["slower"]
        lines.append(
            f"| {r['harness']} | {r['condition']} | {r['method']} | {r['change']} | "
            f"{r['within']}/{n} | {r['median err']:.2%} | {r['worst err']:.2%} | "
            f"{int(said)}/{n} | {r['left out']} | {r['no data']} | {r['measure']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 try, 2 runs, 4 truth runs")
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--reps", type=int, default=4, help="aduet and sduet runs per try")
    ap.add_argument("--truth-reps", type=int, default=20)
    ap.add_argument("--harnesses", default=",".join(HARNESSES))
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--keep", type=Path, help="keep every experiment's results here")
    ap.add_argument("--from-csv", type=Path)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    if args.from_csv:
        s = summary(pd.read_csv(args.from_csv))
        print(markdown(s) if args.markdown else s.to_string(index=False))
        return
    if args.quick:
        args.tries, args.reps, args.truth_reps = 1, 2, 4
    harnesses = args.harnesses.split(",")
    conds = args.conditions.split(",")
    image = build_image()
    _log(f"image {image}; load {load()}")
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        truths = {h: truth(h, image, args.truth_reps, base) for h in harnesses}
        rows: list[dict[str, Any]] = []
        for t in range(args.tries):
            for harness in harnesses:
                for cond in conds:
                    name = f"c-{harness}-{cond}-{t}"
                    text = config_text(harness, image, name, 100 + t,
                                       {"aduet": args.reps, "sduet": args.reps}, CHANGES)  # fmt: skip
                    t0 = time.monotonic()
                    res = run_one(text, base / name, cond)
                    got = rows_of(res, harness=harness, condition=cond, attempt=t)
                    for r in got:
                        r["truth"] = truths[harness][r["change"]]
                        r["load"] = load()
                    rows.extend(got)
                    _log(f"{name}: {time.monotonic() - t0:.0f} s, load {load()}")
                    if args.csv:
                        pd.DataFrame(rows).to_csv(args.csv, index=False)
    df = pd.DataFrame(rows)
    _log(f"done in {time.monotonic() - t_start:.0f} s; load {load()}")
    s = summary(df)
    print(markdown(s) if args.markdown else s.to_string(index=False))
    print(f"\ntruth: {truths}")


if __name__ == "__main__":
    main()
