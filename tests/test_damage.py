"""Damage to a finished results directory: never silently different numbers.

Each kind of damage is applied (where it falls is drawn from a seeded generator) to a
copy of one small finished experiment. Then `duet process` and `duet compare` either
refuse (exit 2, naming what is wrong) or give exactly the original numbers, and
`duet run --resume` either repairs (executes the damaged run again, after which
`duet compare` gives the full table) or refuses clearly. Which kind gets which answer
is documented in docs/results.md, "What duet guarantees".
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import duet_in_process, run_duet

from duetbench.cli import main

SEED = 20240613
NAME = "tiny"
CONFIG = f"""
experiment:
  name: {NAME}
  seed: 5
  repetitions: {{seqn: 2, aduet: 2, sduet: 1}}
defaults:
  iterations: 3
benchmarks:
  same:
    command: "true"
  slower:
    A: {{command: "true"}}
    B: {{command: "sleep 0.002"}}
"""
KEYS = ["benchmark", "method", "run", "pair", "iteration"]
NUMBERS = [*KEYS, "start_ns", "end_ns", "duration_ns"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> dict:
    """The experiment, run once, with its `duet compare` JSON and its iterations table."""
    base = tmp_path_factory.mktemp("damage")
    cfg = base / "duet.yml"
    cfg.write_text(CONFIG)
    r = run_duet("run", str(cfg), "-o", str(base / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = base / "res" / NAME
    r = duet_in_process("compare", str(root), "--format", "json")
    assert r.returncode == 0, r.stderr
    r2 = duet_in_process("process", str(root), "-o", str(base / "table.csv"))
    assert r2.returncode == 0, r2.stderr
    return {
        "config": cfg,
        "root": root,
        "compare": _numbers(json.loads(r.stdout)),
        "table": _table(base / "table.csv"),
        "runs": sorted(json.loads(x)["run_id"] for x in (root / "journal.jsonl").open()),
    }


def _numbers(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "source"}


def _table(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path)[NUMBERS]
    return df.sort_values(KEYS).reset_index(drop=True)


# ---------------------------------------------------------------------- the kinds of damage


def _run(root: Path, rng: random.Random) -> Path:
    return root / "runs" / rng.choice(sorted(p.name for p in (root / "runs").glob("[!.]*")))


def _duet_run(root: Path, rng: random.Random) -> Path:
    """A duet run (two sides), so a side's file can be picked."""
    return root / "runs" / rng.choice(sorted(p.name for p in (root / "runs").glob("*duet*")))


def _side_file(root: Path, rng: random.Random, name: str) -> Path:
    return _duet_run(root, rng) / rng.choice("AB") / name


def _edit_json(path: Path, change: Callable[[dict], object]) -> None:
    d = json.loads(path.read_text())
    change(d)
    path.write_text(json.dumps(d))


def _journal_lines(root: Path) -> list[bytes]:
    return (root / "journal.jsonl").read_bytes().splitlines(keepends=True)


def _set_journal(root: Path, lines: list[bytes]) -> None:
    (root / "journal.jsonl").write_bytes(b"".join(lines))


def _journal_line_replaced(root: Path, rng: random.Random, text: bytes) -> None:
    lines = _journal_lines(root)
    lines[rng.randrange(len(lines) - 1)] = text + b"\n"  # not the last line: that may be torn
    _set_journal(root, lines)


def _replace_by_file(path: Path) -> None:
    shutil.rmtree(path)
    path.write_text("not a directory\n")


def _truncate(path: Path, rng: random.Random) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(1, len(data) - 1)])


def _flip_digit(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    body = data.index(b"\n") + 1  # a digit of the values, not of the header
    digits = [i for i in range(body, len(data)) if chr(data[i]).isdigit()]
    i = rng.choice(digits)
    data[i] = ord(str((int(chr(data[i])) + 1 + rng.randrange(8)) % 10))
    path.write_bytes(bytes(data))


def _torn_last_line(root: Path, rng: random.Random) -> None:
    lines = _journal_lines(root)
    last = lines[-1].rstrip(b"\n")
    lines[-1] = last[: rng.randrange(1, len(last) - 1)]
    _set_journal(root, lines)


def _unjournaled(root: Path, rng: random.Random) -> None:
    """A crash between renaming a run into place and journaling it."""
    lines = _journal_lines(root)
    del lines[rng.randrange(len(lines))]
    _set_journal(root, lines)


def _foreign_run(root: Path, rng: random.Random) -> None:
    shutil.copytree(_run(root, rng), root / "runs" / "other.aduet.000")


def _host_file(root: Path) -> Path:
    return next((root / "hosts").glob("*.json"))


@dataclass(frozen=True)
class Kind:
    name: str
    damage: Callable[[Path, random.Random], None]
    read: str  # "same", or a regex the error of process/compare matches
    resume: str  # "same" (nothing executed again), "repair", or a regex of the refusal
    kept: bool = True  # repair: what remains of the damaged run is kept in runs/.superseded/


ERR_CHANGED = r"changed after the run was (journaled|recorded)"
KINDS = [
    # a journaled run's directory and run.json
    Kind("run dir deleted", lambda r, g: shutil.rmtree(_run(r, g)), "is missing", "repair", False),
    Kind(
        "run dir is a file", lambda r, g: _replace_by_file(_run(r, g)), "not a directory", "repair"
    ),
    Kind(
        "run dir emptied",
        lambda r, g: (shutil.rmtree(p := _run(r, g)), p.mkdir()),
        r"run\.json is missing",
        "repair",
    ),
    Kind(
        "run.json deleted",
        lambda r, g: (_run(r, g) / "run.json").unlink(),
        r"run\.json is missing",
        "repair",
    ),
    Kind(
        "run.json reduced to a status",
        lambda r, g: (_run(r, g) / "run.json").write_text('{"status": "ok"}'),
        r"run\.json lacks 'run_id'",
        "repair",
    ),
    Kind(
        "run.json not an object",
        lambda r, g: (_run(r, g) / "run.json").write_text("[]"),
        "not a JSON object",
        "repair",
    ),
    Kind(
        "run.json truncated",
        lambda r, g: _truncate(_run(r, g) / "run.json", g),
        "not valid JSON",
        "repair",
    ),
    Kind(
        "run.json not UTF-8",
        lambda r, g: (_run(r, g) / "run.json").write_bytes(b'{"run_id": "\xff\xfe"}'),
        "not UTF-8",
        "repair",
    ),
    Kind(
        "run.json empty",
        lambda r, g: (_run(r, g) / "run.json").write_bytes(b""),
        "not valid JSON",
        "repair",
    ),
    Kind(
        "run.json is a directory",
        lambda r, g: ((p := _run(r, g) / "run.json").unlink(), p.mkdir()),
        "is a directory",
        "repair",
    ),
    Kind(
        "run.json of another run",
        lambda r, g: shutil.copy(
            r / "runs" / "same.aduet.000" / "run.json", r / "runs" / "slower.sduet.000"
        ),
        "describes another run",
        "repair",
    ),
    Kind(
        "run.json status edited",
        lambda r, g: _edit_json(_run(r, g) / "run.json", lambda d: d.update(status="failed")),
        ERR_CHANGED,
        "repair",
    ),
    Kind(
        "run.json repetition edited",
        lambda r, g: _edit_json(_run(r, g) / "run.json", lambda d: d.update(rep=d["rep"] + 7)),
        ERR_CHANGED,
        "repair",
    ),
    Kind(
        "run.json file list removed",
        lambda r, g: _edit_json(_run(r, g) / "run.json", lambda d: d.pop("files")),
        ERR_CHANGED,
        "repair",
    ),
    # a run's files
    Kind(
        "side dir deleted",
        lambda r, g: shutil.rmtree(_duet_run(r, g) / g.choice("AB")),
        "is missing",
        "repair",
    ),
    Kind(
        "iterations.csv deleted",
        lambda r, g: _side_file(r, g, "iterations.csv").unlink(),
        r"iterations\.csv is missing",
        "repair",
    ),
    Kind(
        "iterations.csv truncated",
        lambda r, g: _truncate(_side_file(r, g, "iterations.csv"), g),
        r"iterations\.csv has \d+ bytes",
        "repair",
    ),
    Kind(
        "iterations.csv emptied",
        lambda r, g: _side_file(r, g, "iterations.csv").write_bytes(b""),
        r"iterations\.csv has 0 bytes",
        "repair",
    ),
    Kind(
        "iterations.csv digit changed",
        lambda r, g: _flip_digit(_side_file(r, g, "iterations.csv"), g),
        ERR_CHANGED,
        "repair",
    ),
    Kind(
        "iterations.csv is a directory",
        lambda r, g: ((p := _side_file(r, g, "iterations.csv")).unlink(), p.mkdir()),
        "not a regular file",
        "repair",
    ),
    Kind(
        "stdout.log deleted",
        lambda r, g: _side_file(r, g, "stdout.log").unlink(),
        r"stdout\.log is missing",
        "repair",
    ),
    Kind(
        "a file added to a run",
        lambda r, g: _side_file(r, g, "extra.csv").write_text("iteration\n0\n"),
        r"extra\.csv was not there when the run was recorded",
        "repair",
    ),
    Kind(
        "a symlink added to a run",
        lambda r, g: _side_file(r, g, "more.csv").symlink_to("iterations.csv"),
        r"more\.csv was not there",
        "repair",
    ),
    # the journal
    Kind("journal: torn last line", _torn_last_line, "same", "same"),
    Kind(
        "journal: last newline lost",
        lambda r, g: _set_journal(r, [*_journal_lines(r)[:-1], _journal_lines(r)[-1][:-1]]),
        "same",
        "same",
    ),
    Kind("journal deleted", lambda r, g: (r / "journal.jsonl").unlink(), "same", "same"),
    Kind("journal emptied", lambda r, g: (r / "journal.jsonl").write_bytes(b""), "same", "same"),
    Kind("a run renamed but not journaled", _unjournaled, "same", "same"),
    Kind(
        "journal: line duplicated",
        lambda r, g: _set_journal(r, [*(ls := _journal_lines(r)), g.choice(ls)]),
        "same",
        "same",
    ),
    Kind(
        "journal: garbage line",
        lambda r, g: _journal_line_replaced(r, g, b"#%& not json"),
        r"journal\.jsonl, line \d+: not valid JSON",
        r"journal\.jsonl, line \d+: not valid JSON",
    ),
    Kind(
        "journal: line not UTF-8",
        lambda r, g: _journal_line_replaced(r, g, b'{"run_id": "\xff"}'),
        "not UTF-8",
        "not UTF-8",
    ),
    Kind(
        "journal: line not an object",
        lambda r, g: _journal_line_replaced(r, g, b'["same.aduet.000", "ok"]'),
        "not a JSON object",
        "not a JSON object",
    ),
    Kind(
        "journal: line without run_id",
        lambda r, g: _journal_line_replaced(r, g, b'{"status": "ok"}'),
        "has no run_id",
        "has no run_id",
    ),
    Kind(
        "journal: run not in the plan",
        lambda r, g: _journal_line_replaced(r, g, b'{"run_id": "x.aduet.009", "status": "ok"}'),
        "not in this experiment's plan",
        "not in this experiment's plan",
    ),
    Kind(
        "journal is a directory",
        lambda r, g: ((r / "journal.jsonl").unlink(), (r / "journal.jsonl").mkdir()),
        r"journal\.jsonl is not a file",
        r"journal\.jsonl is not a file",
    ),
    # experiment.json
    Kind(
        "experiment.json deleted",
        lambda r, g: (r / "experiment.json").unlink(),
        "no experiment.json",
        "holds no experiment.json",
    ),
    Kind(
        "experiment.json not an object",
        lambda r, g: (r / "experiment.json").write_text('"tiny"'),
        "not a JSON object",
        "not a JSON object",
    ),
    Kind(
        "experiment.json truncated",
        lambda r, g: _truncate(r / "experiment.json", g),
        "not valid JSON",
        "not valid JSON",
    ),
    Kind(
        "experiment.json plan damaged",
        lambda r, g: _edit_json(r / "experiment.json", lambda d: d.update(plan=[1, 2])),
        "damaged 'plan'",
        "damaged 'plan'",
    ),
    # the layout
    Kind(
        "runs/ is a file",
        lambda r, g: _replace_by_file(r / "runs"),
        "runs is not a directory",
        "runs is not a directory",
    ),
    Kind(
        "hosts/ is a file",
        lambda r, g: _replace_by_file(r / "hosts"),
        "hosts is not a directory",
        "hosts is not a directory",
    ),
    Kind(
        "host file not an object",
        lambda r, g: _host_file(r).write_text("[]"),
        "not a JSON object",
        "not a JSON object",
    ),
    Kind(
        "host file truncated",
        lambda r, g: _truncate(_host_file(r), g),
        "not valid JSON",
        "not valid JSON",
    ),
    Kind("host file deleted", lambda r, g: _host_file(r).unlink(), "same", "same"),
    Kind(
        "a file in runs/",
        lambda r, g: (r / "runs" / "notes.txt").write_text("mine\n"),
        r"runs/notes\.txt is not a run of this experiment",
        "same",
    ),
    Kind("a run of another experiment", _foreign_run, "not a run of this experiment", "same"),
    # what crashes leave behind
    Kind(
        "a run in flight left by a crash",
        lambda r, g: shutil.copytree(_run(r, g), r / "runs" / ".tmp-same.aduet.000-99999"),
        "same",
        "same",
    ),
    Kind(
        "a stale lock of a dead duet run",
        lambda r, g: (r / ".lock").write_text('{"pid": 999999999, "host": "gone"}'),
        "same",
        "same",
    ),
]


def _duet(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, " ".join(err.split())  # one line: rich wraps long messages


def _check_numbers(
    capsys: pytest.CaptureFixture[str], finished: dict, root: Path, out: Path, expect: str
) -> None:
    """`duet process` and `duet compare`: exactly the original numbers, or the error."""
    rc_p, _, err_p = _duet(capsys, "process", root, "-o", out / "table.csv")
    rc_c, doc, err_c = _duet(capsys, "compare", root, "--format", "json")
    if expect == "same":
        assert rc_p == 0, err_p
        assert rc_c == 0, err_c
        pd.testing.assert_frame_equal(_table(out / "table.csv"), finished["table"])
        assert _numbers(json.loads(doc)) == finished["compare"]
    else:
        for rc, err in ((rc_p, err_p), (rc_c, err_c)):
            assert rc == 2, f"exit {rc}, expected a refusal matching {expect!r}: {err}"
            assert re.search(expect, err), err
            assert "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_damage_is_refused_or_repaired_never_silent(kind: Kind, finished, tmp_path, capsys):
    rng = random.Random(f"{SEED}:{kind.name}")
    root = tmp_path / "res" / NAME
    shutil.copytree(finished["root"], root, symlinks=True)
    kind.damage(root, rng)

    _check_numbers(capsys, finished, root, tmp_path, kind.read)

    rc, _, err = _duet(
        capsys, "run", finished["config"], "-o", tmp_path / "res", "--resume", "--no-compare"
    )
    if kind.resume not in ("same", "repair"):
        assert rc == 2 and re.search(kind.resume, err), err
        assert "Traceback" not in err
        return
    assert rc == 0, err
    entries = [json.loads(x) for x in (root / "journal.jsonl").read_bytes().splitlines()]
    last = {e["run_id"]: e["status"] for e in entries}
    assert sorted(last) == finished["runs"] and set(last.values()) == {"ok"}
    if kind.resume == "same":  # nothing executed again: the very same numbers
        assert "damaged" not in (e["status"] for e in entries)
        _check_numbers(capsys, finished, root, tmp_path, "same")
        return
    damaged = [e for e in entries if e["status"] == "damaged"]
    assert len(damaged) == 1, entries  # the damaged run, set aside and executed again
    assert damaged[0]["run_id"] in err and "executed again" in err
    kept = list((root / "runs" / ".superseded").glob(f"{damaged[0]['run_id']}.*.damaged"))
    assert len(kept) == kind.kept
    # the full table again: every run and side with all its iterations, every verdict row
    rc, _, err = _duet(capsys, "process", root, "-o", tmp_path / "repaired.csv")
    assert rc == 0, err
    sizes = _table(tmp_path / "repaired.csv").groupby(KEYS[:4]).size()
    assert sizes.to_dict() == finished["table"].groupby(KEYS[:4]).size().to_dict()
    rc, doc, err = _duet(capsys, "compare", root, "--format", "json")
    assert rc == 0, err
    rows = [(r["benchmark"], r["method"]) for r in json.loads(doc)["rows"]]
    assert rows == [(r["benchmark"], r["method"]) for r in finished["compare"]["rows"]]


def test_damage_kinds_are_many_and_distinct():
    assert len(KINDS) >= 40 and len({k.name for k in KINDS}) == len(KINDS)


def test_damaged_directory_in_a_subprocess_is_a_clear_error(finished, tmp_path):
    """The CLI as users run it: exit 2, the run and the repair named, no traceback."""
    root = tmp_path / "res" / NAME
    shutil.copytree(finished["root"], root)
    (root / "runs" / "same.seqn.001.A" / "run.json").write_text('{"status": "ok"}')
    for cmd in ("process", "compare", "report"):
        r = subprocess.run(
            [sys.executable, "-m", "duetbench", cmd, str(root), "-o", str(tmp_path / "o.html")]
            if cmd == "report"
            else [sys.executable, "-m", "duetbench", cmd, str(root)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 2, (cmd, r.stderr)
        assert "same.seqn.001.A" in r.stderr and "--resume" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
