"""Paths as users type them, and names and paths that are hostile.

`duet run -o DIR` with DIR relative (the README's `results/`) or absolute, with
spaces and shell syntax in it, from a working directory other than the
config's, for the built-in harness, a suite harness writing
``$DUET_OUTPUT_DIR/out.csv`` and the sduet handshake of an own harness
(``$$`` in ``sync_command``); then the other commands on the results given by a
relative path from yet another directory. Also: names that would escape the
results directory, rich markup and Markdown in names and paths.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import ROOT, duet_in_process, recorded_as_is, run_duet

from duetbench.errors import ConfigError

HARNESS = ROOT / "examples" / "sync" / "harness.sh"
# a path a careless or hostile user might pass: spaces, quotes, `;`, command substitution
HOSTILE = "res dir/$(touch PWNED)'x;y `touch PWNED2`"


def _config(kind: str) -> str:
    """The experiment `t` with one A/B benchmark of ``kind``."""
    h = shlex.quote(str(HARNESS))
    if kind == "builtin":
        bench = """
    iterations: 3
    A: {command: "sh -c 'i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done'"}
    B: {command: "sh -c 'i=0; while [ $i -lt 4000 ]; do i=$((i+1)); done'"}"""
        reps = "{aduet: 1, sduet: 2}"
    elif kind == "suite":  # the harness loops by itself and writes where duetbench says
        bench = f"""
    harness: generic
    A: {{command: "sh {h} \\"$DUET_OUTPUT_DIR/out.csv\\" 4 2000"}}
    B: {{command: "sh {h} \\"$DUET_OUTPUT_DIR/out.csv\\" 4 4000"}}
    results: ["$DUET_OUTPUT_DIR/out.csv"]"""
        reps = "{seqn: 2, aduet: 1}"
    else:  # sduet with an own harness: `$$` is the sync directory
        bench = f"""
    harness: generic
    A:
      command: "sh {h} out.csv 4 2000"
      sync_command: "DUET_SYNC_DIR=$$ sh {h} out.csv 4 2000"
    B:
      command: "sh {h} out.csv 4 4000"
      sync_command: "DUET_SYNC_DIR=$$ sh {h} out.csv 4 4000"
    results: [out.csv]"""
        reps = "{sduet: 2}"
    return f"experiment:\n  name: t\n  seed: 5\n  repetitions: {reps}\nbenchmarks:\n  b:{bench}\n"


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (an escaped `\\|` does not split)."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|"))


def _outside_code(md: str) -> str:
    """Markdown text without its code spans (where `<`, `*`... are shown as they are)."""
    return re.sub(r"(`+)(.+?)\1", "", md)


def _no_injection(tmp_path: Path) -> None:
    hits = [p for p in tmp_path.rglob("PWNED*") if p.is_file()]
    hits += [p for p in Path.cwd().glob("PWNED*")]
    assert hits == [], f"shell syntax in a path was executed: {hits}"


def _check_results(root: Path, tmp_path: Path, kind: str) -> None:
    """Every run ok, run.json names the final directories, `process`/`compare` see the data."""
    runs = sorted(p for p in (root / "runs").iterdir() if not p.name.startswith("."))
    assert runs
    for run_dir in runs:
        record = json.loads((run_dir / "run.json").read_text())
        assert record["status"] == "ok", record["message"]
        for pair, side in record["sides"].items():
            if kind != "builtin":
                assert side["result_files"] == ["out.csv"]
            # the side's working directory under the run's final name, not runs/.tmp-...
            assert side["cwd"] == str(run_dir.resolve() / pair)
        text = json.dumps({k: v for k, v in record.items() if k != "sides"})
        text += json.dumps(
            [{k: v for k, v in s.items() if k != "stderr_tail"} for s in record["sides"].values()]
        )
        assert ".tmp-" not in text
        if record["method"] == "sduet":  # the harness really waited at the handshake
            assert record["sync"]["go_count"] >= (3 if kind == "builtin" else 4)
    # process and compare with the results given relative to another working directory
    other = tmp_path / "other place"
    other.mkdir(exist_ok=True)
    rel = os.path.relpath(root, other)
    r = duet_in_process("process", rel, "-o", "it.csv", cwd=other)
    assert r.returncode == 0, r.stderr
    table = pd.read_csv(other / "it.csv")
    assert len(table) > 0 and not r.stderr.startswith("0 iterations"), r.stderr
    # every run (what this test checks is paths; a busy machine makes duets unbalanced)
    r = duet_in_process(
        "compare", rel, "--format", "json", "--resamples", "200", "--keep-unbalanced", cwd=other
    )
    assert r.returncode == 0, r.stderr
    rows = {row["method"]: row for row in json.loads(r.stdout)["rows"]}
    methods = {"builtin": {"aduet", "sduet"}, "suite": {"seqn", "aduet"}, "sync": {"sduet"}}[kind]
    assert set(rows) == methods, rows
    for method, row in rows.items():  # aduet pairs need overlapping iterations: timing, not judged
        if method != "aduet":
            assert row["runs"] == 2 and row["pairs"] > 0 and row["mean_b_ns"] > 0, row
    _no_injection(tmp_path)


@pytest.mark.parametrize("kind", ["builtin", "suite", "sync"])
@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_run_with_hostile_output_path_from_another_directory(tmp_path, kind, where):
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    cfg = conf_dir / "duet.yml"
    cfg.write_text(_config(kind))
    cwd = tmp_path / "work"
    cwd.mkdir()
    if where == "relative":  # both relative to the working directory of `duet run`
        out, cfg_arg = HOSTILE, os.path.join("..", "conf", "duet.yml")
    else:
        out, cfg_arg = str(tmp_path / HOSTILE), str(cfg)
    r = run_duet("run", cfg_arg, "-o", out, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "benchmark" in r.stdout and " b " in r.stdout, (r.stdout, r.stderr)  # verdict table
    root = (cwd / out / "t") if where == "relative" else Path(out) / "t"
    assert (root / "experiment.json").is_file()
    _check_results(root, tmp_path, kind)


def test_other_commands_take_a_relative_results_dir(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(_config("suite"))
    r = run_duet("run", "duet.yml", "-o", "results", "--no-compare", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    elsewhere = tmp_path / "sub" / "dir"
    elsewhere.mkdir(parents=True)
    rel = os.path.join("..", "..", "results", "t")
    for args in (
        ("hosts", rel),
        ("evaluate", rel, "--resamples", "100"),
        ("report", rel, "--format", "markdown", "--resamples", "100"),
        ("report", rel, "-o", "r.html", "--resamples", "100"),
    ):
        r = duet_in_process(*args, cwd=elsewhere)
        assert r.returncode == 0, (args, r.stderr)
        assert "problem:" not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
    md = duet_in_process("report", rel, "--format", "markdown", "--resamples", "100", cwd=elsewhere)
    assert "| b " in md.stdout


def test_results_written_before_the_fix_resolve_once(tmp_path):
    """A side's result_files are stored relative to its directory; `process` given the results
    by a relative path must find them there (it used to prefix the side directory twice)."""
    cfg = tmp_path / "duet.yml"
    cfg.write_text(_config("suite"))
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    r = duet_in_process("process", "res/t", "-o", "it.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "problem" not in r.stderr, r.stderr
    assert len(pd.read_csv(tmp_path / "it.csv")) == 3 * 2 * 4  # 4 seqn runs, 1 aduet, 4 iterations


# ------------------------------------------------------------------ rich markup in paths


def test_rich_markup_in_output_path_runs_compares_and_resumes(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(_config("builtin"))
    out = "res[/tmp]"  # `[/tmp]` is a closing tag for rich
    r = run_duet("run", "duet.yml", "-o", out, "-v", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "MarkupError" not in r.stderr and "Traceback" not in r.stderr
    assert "res[/tmp]" in r.stderr.replace("\n", "")  # the path shown as typed, not as markup
    root = tmp_path / out / "t"
    r = duet_in_process("compare", str(root), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert " b " in r.stdout
    r = run_duet("run", "duet.yml", "-o", out, "--resume", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "already finished" in r.stderr
    # what a host reports (its CPU model, kernel...) is text too
    (host_file,) = (root / "hosts").glob("*.json")
    info = json.loads(host_file.read_text())
    info["cpu_model"] = "CPU[/] [bold]x"
    host_file.write_text(json.dumps(info))
    r = duet_in_process("hosts", str(root))
    assert r.returncode == 0, r.stderr
    assert "CPU[/] [bold]x" in r.stdout


def test_rich_markup_in_table_values_is_shown_as_text(tmp_path):
    """An iterations table from another tool may hold any benchmark or experiment name."""
    rows = []
    for bench in ("x[/]", "[bold]y"):
        for run in range(3):
            for pair, d in (("A", 100), ("B", 130)):
                for it in range(4):
                    rows.append(
                        dict(
                            experiment="e[/x]",
                            benchmark=bench,
                            method="seqn",
                            run=run,
                            pair=pair,
                            iteration=it,
                            duration_ns=d + it + run,
                        )
                    )
    path = tmp_path / "t[bold].csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    r = duet_in_process("compare", str(path), "--resamples", "200")
    assert r.returncode == 0, r.stderr
    assert "x[/]" in r.stdout and "[bold]y" in r.stdout and "e[/x]" in r.stdout
    r = duet_in_process("evaluate", str(path), "--resamples", "100")
    assert r.returncode == 0, r.stderr
    assert "x[/]" in r.stdout and "[bold]y" in r.stdout


# ------------------------------------------------------------------ Markdown


def test_markdown_shows_names_and_paths_as_text(tmp_path):
    rows = []
    for run in range(3):
        for pair, d in (("A", 100), ("B", 130)):
            for it in range(4):
                rows.append(
                    dict(
                        experiment="<img src=x onerror=alert(1)>",
                        benchmark="*b*|<b>x</b>",
                        method="seqn",
                        run=run,
                        pair=pair,
                        iteration=it,
                        duration_ns=d + it,
                    )
                )
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    for cmd in (("compare",), ("report",)):
        r = duet_in_process(*cmd, str(path), "--format", "markdown", "--resamples", "100")
        assert r.returncode == 0, r.stderr
        md = r.stdout
        assert "<img" not in md and "<b>" not in md, md
        assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in md
        assert "\\*b\\*\\|&lt;b&gt;x&lt;/b&gt;" in md
        # the table keeps its columns: the `|` in the name does not split a cell
        header = next(x for x in md.splitlines() if x.startswith("| benchmark"))
        row = next(x for x in md.splitlines() if x.startswith("| \\*b"))
        assert len(_cells(row)) == len(_cells(header))


def test_markdown_escapes_results_dir_path_and_problems(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(_config("suite"))
    out = tmp_path / "<b>res` x"
    r = run_duet("run", str(cfg), "-o", str(out), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = out / "t"
    # one damaged result file: the problem line names its path
    bad = next(p for p in sorted((root / "runs").glob("b.aduet.*/A/out.csv")))
    bad.write_text("iteration,start_ns,end_ns\n0,x,y\n")
    recorded_as_is(root, bad.parent.parent.name)  # as the harness left it, not damage
    for cmd in ("compare", "report"):
        r = run_duet(cmd, str(root), "--format", "markdown", "--resamples", "100")
        assert r.returncode == 0, r.stderr
        assert "<b>" not in _outside_code(r.stdout), r.stdout
        assert "&lt;b&gt;res\\` x" in r.stdout  # in the problem line


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "name",
    [
        "../../x",
        "/abs",
        '""',
        '"."',
        '".."',
        "a/b",
        '"a\\0b"',
        '"a\\tb"',
        '"a\\nb"',
        "x" * 101,
        '"x y"',
        "x[/]",
    ],
)
@pytest.mark.parametrize("fmt", ["native", "thesis"])
def test_bad_experiment_names_are_refused(tmp_path, name, fmt):
    from duetbench.config import load_config

    if fmt == "native":
        text = f'experiment:\n  name: {name}\nbenchmarks:\n  x: {{command: "true"}}\n'
    else:
        text = f"duetbench:\n  name: {name}\n  duets: [x]\nx:\n  A: {{run: 'true'}}\n"
    cfg = tmp_path / "duet.yml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    msg = str(exc.value)
    if "\\0" in name:  # refused while reading the YAML: no value may hold a NUL
        assert exc.value.line == 2 and "NUL" in msg, msg
    else:
        assert exc.value.line == 2 and "name" in (exc.value.key or ""), msg
        assert "letters, digits" in msg and "100" in msg, msg
    # and `duet run` says so, exit 2, writing nothing
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("name", ["quickstart", "a.b-c_d+e", "2017", "x" * 100])
def test_good_experiment_names_load(tmp_path, name):
    from duetbench.config import load_config

    cfg = tmp_path / "duet.yml"
    cfg.write_text(f'experiment:\n  name: "{name}"\nbenchmarks:\n  x: {{command: "true"}}\n')
    assert load_config(cfg).name == name


def test_thesis_name_from_file_name_is_made_safe(tmp_path):
    """Without `name:` a thesis config is named after its file; a file name that is not a safe
    name gives a safe one (the user did not write it)."""
    from duetbench.config import load_config

    cfg = tmp_path / "my bench [v2].duet.yml"
    cfg.write_text("duetbench:\n  duets: [x]\nx:\n  A: {run: 'true'}\n")
    assert load_config(cfg).name == "my-bench-v2"


# ------------------------------------------------------------------ $$ quoting


@pytest.mark.parametrize(
    "template",
    [
        "printf '%s' $$ > seen",
        "printf '%s' \"$$\" > seen",
        "printf '%s' '$$' > seen",
        "printf '%s' x$$/y > seen",
    ],
)
def test_sync_dir_placeholder_is_one_quoted_word(tmp_path, template):
    from duetbench.execute.driver import substitute_sync_dir

    d = str(tmp_path / "a b/$(touch PWNED)'c;d`touch PWNED2`\"e\\f")
    cmd = substitute_sync_dir(template, d)
    import subprocess

    subprocess.run(["/bin/sh", "-c", cmd], cwd=tmp_path, check=True)
    seen = (tmp_path / "seen").read_text()
    assert seen == (f"x{d}/y" if "x$$" in template else d)
    _no_injection(tmp_path)


@pytest.mark.container
def test_sync_placeholder_in_containers_with_hostile_output_path(tmp_path, image):  # noqa: F811
    """The container executor substitutes `$$` the same way: one quoted word, the same path
    inside the containers as outside."""
    import uuid

    import yaml

    name = f"paths-{uuid.uuid4().hex[:8]}"
    bin_dir = tmp_path / "h"
    bin_dir.mkdir()
    (bin_dir / "harness.sh").write_bytes(HARNESS.read_bytes())
    sides = {
        pair: {
            "command": f'sh /h/harness.sh "$DUET_OUTPUT_DIR/out.csv" 4 {work}',
            "sync_command": f'DUET_SYNC_DIR=$$ sh /h/harness.sh "$DUET_OUTPUT_DIR/out.csv" 4 {work}',
        }
        for pair, work in (("A", 2000), ("B", 4000))
    }
    doc = {
        "experiment": {
            "name": name,
            "seed": 5,
            "executor": "podman",
            "default_artifacts": False,
            "repetitions": {"sduet": 2},
            "timeout": "120s",
        },
        "defaults": {"image": image, "harness": "generic", "mounts": [f"{bin_dir}:/h:ro"]},
        "benchmarks": {"b": {**sides, "results": ["$DUET_OUTPUT_DIR/out.csv"]}},
    }
    (tmp_path / "duet.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    cwd = tmp_path / "work"
    cwd.mkdir()
    r = run_duet("run", "../duet.yml", "-o", HOSTILE, cwd=cwd)
    assert r.returncode == 0, r.stderr
    root = cwd / HOSTILE / name
    for run_id in ("b.sduet.000", "b.sduet.001"):
        record = json.loads((root / "runs" / run_id / "run.json").read_text())
        assert record["status"] == "ok", record["message"]
        assert record["sync"]["go_count"] >= 4
    other = tmp_path / "other place"
    other.mkdir()
    rel = os.path.relpath(root, other)
    r = duet_in_process("compare", rel, "--format", "json", "--keep-unbalanced", cwd=other)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    assert row["runs"] == 2 and row["pairs"] > 0
    _no_injection(tmp_path)


@pytest.mark.parametrize("name", ["../x", "/x", "", ".", "..", "a\0b"])
def test_experiment_built_in_code_cannot_write_outside_the_output_dir(tmp_path, name):
    from dataclasses import replace

    from duetbench.config import loads_config
    from duetbench.errors import ResultsDirError
    from duetbench.schedule.inline import run_experiment

    exp = loads_config('experiment: {name: x}\nbenchmarks:\n  b: {command: "true"}\n')
    out = tmp_path / "out"
    with pytest.raises(ResultsDirError):
        run_experiment(replace(exp, name=name), out)
    assert list(tmp_path.iterdir()) == []
