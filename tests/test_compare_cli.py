"""`duet compare`: the verdict table, its JSON schema, Markdown, exit codes.

Every JSON document a test produces is validated against the schema (no field it does
not declare) and checked for consistency: the summary counts the verdicts, each verdict
follows from its interval (or its p-value), the interval holds the change. Markdown and
terminal tables must show the JSON's numbers, formatted by the rules below.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
from contextlib import redirect_stdout
from importlib.resources import files
from typing import Any
from unittest import mock

import jsonschema
import numpy as np
import pandas as pd
import pytest
from tests.helpers import duet_in_process, recorded_as_is

from duetbench.analysis.compare import RUN_STATS


def synthetic_table(
    slowdown: float, seed: int = 1, runs: int = 10, iters: int = 20
) -> pd.DataFrame:
    """sduet-shaped data: shared run effects, 1 % iteration noise, B slower by ``slowdown``."""
    rng = np.random.default_rng(seed)
    rows = []
    for method in ("seqn", "sduet"):
        for r in range(runs):
            shared = 1 + rng.normal(0, 0.02)
            for pair, factor in (("A", 1.0), ("B", 1.0 + slowdown)):
                run_eff = shared if method == "sduet" else 1 + rng.normal(0, 0.02)
                t = 1_700_000_000_000_000_000 + r * 10_000_000_000
                for i in range(iters):
                    d = int(100e6 * factor * run_eff * (1 + rng.normal(0, 0.01)))
                    rows.append(
                        dict(
                            benchmark="b",
                            method=method,
                            run=r,
                            pair=pair,
                            iteration=i,
                            start_ns=t,
                            end_ns=t + d,
                            duration_ns=d,
                        )
                    )
                    t += d + 1000
    return pd.DataFrame(rows)


SCHEMA = json.loads(files("duetbench").joinpath("data/compare.schema.json").read_text())
ICONS = {"slower": "🔴 slower", "faster": "🟢 faster"}


def expected_verdict(row: dict[str, Any], settings: dict[str, Any]) -> str:
    """The verdict docs/statistics.md defines, derived from the row's own numbers."""
    t = settings["threshold"]
    if settings["test"] == "utest" and not t:
        p, change = row["p_value"], row["change"]
        if p is None or change is None:
            return "no data"
        if p < 1 - settings["confidence"]:
            return "slower" if change > 0 else "faster"
        return "no change detected"
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or hi is None:
        return "no data"
    if lo > 0 and lo > t:
        return "slower"
    if hi < 0 and hi < -t:
        return "faster"
    if t:
        return "equivalent" if -t < lo and hi < t else "inconclusive"
    return "no change detected"


def check_doc(doc: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(doc, SCHEMA)
    verdicts = [r["verdict"] for r in doc["rows"]]
    assert doc["summary"] == {
        "slower": verdicts.count("slower"),
        "faster": verdicts.count("faster"),
        "no_change": verdicts.count("no change detected"),
        "equivalent": verdicts.count("equivalent"),
        "inconclusive": verdicts.count("inconclusive"),
        "same": len(verdicts) - sum(verdicts.count(v) for v in ("slower", "faster", "no data")),
        "no_data": verdicts.count("no data"),
    }
    for r in doc["rows"]:
        assert r["verdict"] == expected_verdict(r, doc["settings"]), r
        # every number says what it is: p_value is the verdict's own test's
        if r["p_value"] is not None:
            test = doc["settings"]["test"]
            assert r["p_value_test"] == ("pooled-u" if test == "utest-pooled" else "signed-rank")
            own = r["u_p_value"] if test == "utest-pooled" else r["rank_p_value"]
            assert r["p_value"] == own, r
        if r["verdict"] in ("no change detected", "equivalent", "inconclusive"):
            assert r["within"] == pytest.approx(max(abs(r["ci_low"]), abs(r["ci_high"])))
        if r["ci_low"] is not None:
            assert r["ci_width"] == pytest.approx(r["ci_high"] - r["ci_low"])
        if r["verdict"] == "no data":  # no pair, or a single run (no interval)
            assert r["pairs"] == 0 or r["runs"] < 2, r
    return doc


def duet(*args: str) -> tuple[int, str]:
    """`duet ARGS` in this process: its exit status and standard output. (A subprocess
    costs seconds of start-up on a busy machine; test_quickstart_compare_table_json_markdown
    runs the real command.)"""
    from duetbench.cli import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": "200"}), redirect_stdout(out):
        rc = main(list(args))
    return rc, out.getvalue()


def compare_json(*args: str, expect_rc: int = 0) -> dict[str, Any]:
    rc, out = duet("compare", *args, "--format", "json")
    assert rc == expect_rc, out
    return check_doc(json.loads(out))


def pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.2f} %"


def duration(ns: float | None) -> str:
    if ns is None:
        return "-"
    # four significant digits in the largest unit that keeps the number >= 1 (docs/report.md)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1)):
        x = float(f"{ns / div:.4g}")
        if x >= 1 or unit == "ns":
            return f"{x:.{max(0, 3 - math.floor(math.log10(x)))}f} {unit}"
    raise AssertionError(ns)


def cells(row: dict[str, Any], settings: dict[str, Any], with_time: bool = False) -> list[str]:
    """A JSON row as the terminal and Markdown tables show it: the p-value is the one of
    the verdict's test (the pooled U test's for utest-pooled, else the signed-rank's); a
    verdict that B equals A says within how much; ``with_time``: the table has the column
    that says which rows compare CPU time (docs/statistics.md, "Beside other work: CPU
    time")."""
    ci = "-" if row["ci_low"] is None else f"[{pct(row['ci_low'])}, {pct(row['ci_high'])}]"
    p = row["u_p_value"] if settings["test"] == "utest-pooled" else row["rank_p_value"]
    verdict = row["verdict"]
    if verdict == "no change detected":
        verdict += f" (±{row['within'] * 100:.1f} %)"
    elif verdict == "equivalent":
        verdict += f" (±{settings['threshold'] * 100:g} %)"
    return [
        row["benchmark"] + (f" @{row['host']}" if row["host"] else ""),
        row["method"],
        duration(row["mean_a_ns"]),
        duration(row["mean_b_ns"]),
        pct(row["change"]),
        ci,
        "-" if p is None else (f"{p:.3g}" if p >= 0.001 else "<0.001"),
        str(row["runs"]),
        str(row["pairs"]),
        *([row["measure"]] if with_time else []),
        verdict,
    ]


def markdown_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and "| benchmark |" not in ln]
    return [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]


def terminal_rows(text: str) -> list[list[str]]:
    return [
        [c.strip() for c in ln.strip().strip("│").split("│")]
        for ln in text.splitlines()
        if ln.startswith("│")
    ]


def assert_tables_show(doc: dict[str, Any], source: str, *args: str) -> tuple[str, str]:
    """Markdown and terminal output of the same compare show the JSON's rows, in order."""
    md_rc, md = duet("compare", source, *args, "--format", "markdown")
    term_rc, term = duet("compare", source, *args)
    assert md_rc == term_rc == 0, md + term
    with_time = any(r.get("measure") == "cpu" for r in doc["rows"])
    want = [cells(r, doc["settings"], with_time) for r in doc["rows"]]
    assert terminal_rows(term) == want
    assert markdown_rows(md) == [[*c[:-1], ICONS.get(c[-1], c[-1])] for c in want]
    return md_plain(md), term


def md_plain(md: str) -> str:
    """Markdown with its backslash escapes removed: the text a reader sees."""
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~])", r"\1", md)


def no_overlap_table(runs: int = 3, iters: int = 5) -> pd.DataFrame:
    """aduet runs whose B iterations all start after A's last one ended: no pair at any m."""
    rows = []
    for r in range(runs):
        t = 1_700_000_000_000_000_000 + r * 10_000_000_000
        for pair in ("A", "B"):
            for i in range(iters):
                d = 100_000_000 + 1_000_000 * i
                rows.append(
                    dict(benchmark="b", method="aduet", run=r, pair=pair, iteration=i,
                         start_ns=t, end_ns=t + d, duration_ns=d)
                )  # fmt: skip
                t += d + 1000
    return pd.concat(
        [pd.DataFrame(rows), synthetic_table(0.05, runs=4, iters=5)], ignore_index=True
    )


def test_quickstart_compare_table_json_markdown(quickstart_results, tmp_path):
    r = duet_in_process("compare", str(quickstart_results))
    assert r.returncode == 0, r.stderr
    for word in ("arith-aa", "arith-ab", "seqn", "aduet", "sduet", "verdict"):
        assert word in r.stdout
    r = duet_in_process("compare", str(quickstart_results), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = check_doc(json.loads(r.stdout))
    assert doc == compare_json(str(quickstart_results))  # in this process: the same
    assert doc["source"] == str(quickstart_results) and doc["experiment"] == "quickstart"
    assert doc["settings"]["seed"] == 42  # the experiment's
    # on a busy machine duet runs whose sides got unequal CPU shares are left out
    assert doc["problems"] == [] and set(doc["excluded"]["runs"]) <= {"unbalanced"}
    assert {(row["benchmark"], row["method"]) for row in doc["rows"]} == {
        (b, m) for b in ("arith-aa", "arith-ab") for m in ("seqn", "aduet", "sduet")
    }
    # 5 runs each; an aduet run whose iterations never overlapped by more than m is left
    # out of the test -- and a note says so (how often depends on the machine's load)
    lost, unbalanced = {}, {}
    for note in doc["notes"]:
        m = re.match(r"(\S+) aduet: (\d+) of 5 runs had no iteration pair overlapping", note)
        u = re.match(r"(\S+) (aduet|sduet): (\d+) of 5 runs were left out as unbalanced", note)
        if u:
            unbalanced[(u[1], u[2])] = int(u[3])
        if m:
            lost[m[1]] = int(m[2])
        else:  # every other note belongs to a row that lists a warning besides runs_lost
            # (on a 2-CPU host: duets that held both cores; under load: e.g. unkept overlap)
            who = re.match(r"(\S+) (seqn|aduet|sduet): ", note)
            assert who, note
            (row,) = [r for r in doc["rows"] if (r["benchmark"], r["method"]) == who.groups()]
            assert set(row["warnings"]) - {"runs_lost"}, (note, row)
    assert sum(unbalanced.values()) == doc["excluded"]["runs"].get("unbalanced", 0)
    for row in doc["rows"]:
        left = 5 - unbalanced.get((row["benchmark"], row["method"]), 0)
        assert (
            row["runs"] + (lost.get(row["benchmark"], 0) if row["method"] == "aduet" else 0) == left
        )
        assert ("runs_lost" in row["warnings"]) == (row["runs"] < left)
        assert (row["unkept_overlap"] is None) == (row["method"] != "aduet")
        if row["runs"] >= 2:  # one run left (the others unbalanced) has no interval
            assert row["pairs"] > 0 and row["ci_low"] <= row["change"] <= row["ci_high"], row
    md_text, term_text = assert_tables_show(doc, str(quickstart_results))
    # under the table one line per kind of note names every row it applies to; the JSON
    # has every sentence
    kinds = [ln[2:] for ln in md_text.splitlines() if re.match(r"^- [a-z_]+: ", ln)]
    assert len(kinds) == len({ln.split(":")[0] for ln in kinds})
    for row in doc["rows"]:
        for code in row["warnings"]:
            (line,) = [ln for ln in kinds if ln.startswith(f"{code}: ")]
            assert f"{row['benchmark']} {row['method']}" in line, (code, line)
    md = duet_in_process(
        "compare", str(quickstart_results), "--format", "markdown", "-o", str(tmp_path / "s.md")
    )
    assert md.returncode == 0 and md.stdout == ""
    text = (tmp_path / "s.md").read_text()
    assert md_plain(text) == md_text and text.count("\n| arith-") == 6 and "| benchmark |" in text


def test_fail_on_regression_and_threshold(tmp_path):
    slow = tmp_path / "slow.csv"
    synthetic_table(0.05).to_csv(slow, index=False)
    doc = compare_json(str(slow), "--fail-on-regression", expect_rc=1)
    rows = {row["method"]: row for row in doc["rows"]}
    assert rows["sduet"]["verdict"] == "slower" and doc["settings"]["threshold"] == 0.0
    assert 0.04 < rows["sduet"]["change"] < 0.06
    # a 5 % change is inside a 10 % practical threshold: only the verdicts change (and
    # within, which says how equal an equivalent B is)
    thr = compare_json(str(slow), "--threshold", "10%", "--fail-on-regression", expect_rc=0)
    assert thr["settings"]["threshold"] == 0.1
    assert [r["verdict"] for r in thr["rows"]] == ["equivalent"] * 2
    drop = ("verdict", "within")
    assert [{k: v for k, v in r.items() if k not in drop} for r in thr["rows"]] == [
        {k: v for k, v in r.items() if k not in drop} for r in doc["rows"]
    ]
    md, term = assert_tables_show(thr, str(slow), "--threshold", "10%")
    assert "threshold 10 %" in md and "threshold 10 %" in term
    # a threshold between the two lower bounds (as a fraction): only the narrower passes it
    assert rows["seqn"]["ci_low"] < rows["sduet"]["ci_low"]
    mid = (rows["seqn"]["ci_low"] + rows["sduet"]["ci_low"]) / 2
    between = compare_json(
        str(slow), "--threshold", f"{mid:.6f}", "--fail-on-regression", expect_rc=1
    )
    assert {r["method"]: r["verdict"] for r in between["rows"]} == {
        "sduet": "slower",
        "seqn": "inconclusive",  # above 0, but not shown to be beyond the threshold
    }
    same = tmp_path / "same.parquet"
    synthetic_table(0.0, seed=5).to_parquet(same)
    doc = compare_json(str(same), "--fail-on-regression")
    assert {row["verdict"] for row in doc["rows"]} == {"no change detected"}
    assert all(r["ci_low"] <= 0 <= r["ci_high"] for r in doc["rows"])
    # how equal: the interval's largest distance from 0, in the table too
    assert all(0 < r["within"] < 0.05 for r in doc["rows"])
    eq = compare_json(str(same), "--threshold", "5%")
    assert {row["verdict"] for row in eq["rows"]} == {"equivalent"}
    term = duet_in_process("compare", str(same), "--threshold", "5%")
    assert "equivalent (±5 %)" in term.stdout, term.stdout


def _numbers(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The numbers of a row; the verdict and whether it is calibrated belong to the test."""
    skip = {"verdict", "calibrated"}
    return {m: {k: v for k, v in r.items() if k not in skip} for m, r in rows.items()}


def test_test_and_interval_options_and_reproducibility(tmp_path):
    """All 12 combinations of --test and --interval: their settings, consistent verdicts
    and intervals, the same estimate from ratio and difference tests, the U test's
    verdict on the ratio test's numbers, and resampling reproducible by its seed."""
    t = tmp_path / "t.csv"
    synthetic_table(0.03, seed=2).to_csv(t, index=False)

    def run(*args: str) -> dict[str, dict[str, Any]]:
        doc = compare_json(str(t), "--resamples", "999", *args)
        settings = {k: doc["settings"][k] for k in ("resamples", "seed", "test", "interval")}
        assert settings == {
            "resamples": 999,
            "seed": int(args[args.index("--seed") + 1]),
            "test": args[args.index("--test") + 1],
            "interval": args[args.index("--interval") + 1],
        }
        return {r["method"]: r for r in doc["rows"]}

    out = {}
    for test in ("ratio", "diff", "utest"):
        for interval in ("t", "bca", "percentile", "studentized"):
            rows = out[test, interval] = run("--test", test, "--interval", interval, "--seed", "7")
            for r in rows.values():
                assert (r["runs"], r["pairs"]) == (10, 200)
                assert r["ci_low"] <= r["change"] <= r["ci_high"], (test, interval, r)
            # B 3 % slower with shared run effects: every option finds sduet slower
            assert rows["sduet"]["verdict"] == "slower", (test, interval)
            assert rows["sduet"]["change"] == pytest.approx(0.03, abs=0.006)
    for interval in ("t", "bca", "percentile", "studentized"):
        # the U test decides by its p-value; change and interval are the ratio test's
        assert _numbers(out["utest", interval]) == _numbers(out["ratio", interval])
        # the pooled U test's p-value is the same whatever the test and interval
        for m in ("seqn", "sduet"):
            assert out["diff", interval][m]["u_p_value"] == out["ratio", "t"][m]["u_p_value"]
    # bootstrap intervals: the same seed gives the same numbers, another seed others;
    # the t interval does not resample (the seed changes nothing)
    assert run("--test", "diff", "--interval", "bca", "--seed", "7") == out["diff", "bca"]
    other = run("--test", "diff", "--interval", "bca", "--seed", "8")
    assert other["sduet"]["change"] == out["diff", "bca"]["sduet"]["change"]
    assert other["sduet"]["ci_low"] != out["diff", "bca"]["sduet"]["ci_low"]
    assert run("--test", "ratio", "--interval", "t", "--seed", "8") == out["ratio", "t"]


def test_no_data_rows_are_reported_in_every_format(tmp_path):
    """aduet runs without a single overlapping pair: a "no data" row, counted, with a note
    in JSON, the terminal and Markdown; --fail-on-regression still judges the rest."""
    path = tmp_path / "t.csv"
    no_overlap_table().to_csv(path, index=False)
    doc = compare_json(str(path), "--fail-on-regression", expect_rc=1)
    rows = {r["method"]: r for r in doc["rows"]}
    assert rows["aduet"]["verdict"] == "no data" and doc["summary"]["no_data"] == 1
    assert (rows["aduet"]["runs"], rows["aduet"]["pairs"]) == (0, 0)
    assert rows["aduet"]["change"] is None and rows["aduet"]["u_p_value"] is not None
    assert rows["sduet"]["verdict"] == "slower"
    (note,) = doc["notes"]
    assert note.startswith("b aduet: 3 of 3 runs had no iteration pair") and "m = 0.4" in note
    md, term = assert_tables_show(doc, str(path))
    assert "runs_lost: b aduet (3 of 3 runs)" in md and "3 of 3 runs" in term


def test_multi_host_table_is_resampled_by_host(tmp_path):
    from duetbench.analysis.simulate import simulate

    path = tmp_path / "hosts.parquet"
    simulate(benchmarks=1, hosts=2, runs=4, iterations=5, seed=3).to_parquet(path)
    doc = compare_json(str(path))
    assert doc["settings"]["cluster_by"] is None  # the default: hosts, as there are two
    assert {r["clustered_by"] for r in doc["rows"]} == {"host"}
    assert all(r["runs"] == 8 for r in doc["rows"])  # 4 per host
    by_run = compare_json(str(path), "--cluster-by", "run")
    assert by_run["settings"]["cluster_by"] == "run"
    assert {r["clustered_by"] for r in by_run["rows"]} == {"run"}
    md, term = assert_tables_show(doc, str(path))
    assert "intervals resample hosts" in term


def test_problems_and_exclusions_of_a_damaged_results_directory(quickstart_results, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(quickstart_results, root)
    victim = sorted((root / "runs").glob("arith-ab.aduet.*"))[0] / "A" / "iterations.csv"
    text = victim.read_text().splitlines()
    victim.write_text("\n".join(text[:4]) + "\n" + text[4][:12] + "\n")  # truncated mid-row
    failed = sorted((root / "runs").glob("arith-aa.seqn.*"))[0] / "run.json"
    run = json.loads(failed.read_text())
    failed.write_text(json.dumps({**run, "status": "failed"}))
    # as if the runs themselves had ended so (a harness that died mid-row, a failed run):
    # damage done after a run was recorded is refused instead (tests/test_damage.py)
    recorded_as_is(root, victim.parent.parent.name)
    recorded_as_is(root, failed.parent.name)
    doc = compare_json(str(root))
    (problem,) = doc["problems"]
    assert str(victim) in problem and "truncated" in problem
    # (on a busy machine duet runs with unequal CPU shares are left out too: unbalanced)
    unbalanced = doc["excluded"]["runs"].pop("unbalanced", 0)
    assert doc["excluded"] == {"runs": {"failed": 1}, "iterations": {}, "timed_out_runs_used": 0}
    rows = {(r["benchmark"], r["method"]): r for r in doc["rows"]}
    assert rows["arith-aa", "seqn"]["runs"] == 4  # the failed run is left out
    md, term = assert_tables_show(doc, str(root))
    assert f"- {problem}" in md and "problem:" in term
    line = "excluded: 1 failed run(s)" + (f", {unbalanced} unbalanced run(s)" if unbalanced else "")
    assert f"- {line}" in md and line in term


def test_u_tests_and_pairing_options_on_the_command_line(tmp_path):
    t = tmp_path / "t.csv"
    synthetic_table(0.0, seed=4).to_csv(t, index=False)
    schema = json.loads(files("duetbench").joinpath("data/compare.schema.json").read_text())
    r = duet_in_process("compare", str(t), "--test", "utest-pooled", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert doc["settings"]["test"] == "utest-pooled"
    assert all(row["calibrated"] is False for row in doc["rows"])  # labelled
    assert all(row["rank_p_value"] is not None for row in doc["rows"])
    r = duet_in_process("compare", str(t), "--test", "utest-pooled", "--format", "markdown")
    assert "utest-pooled test (not calibrated" in r.stdout
    r = duet_in_process(
        "compare", str(t), "--test", "utest", "--overlap-rate", "thesis", "--min-run-pairs", "0",
        "--format", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert doc["settings"]["overlap_rate"] == "thesis" and doc["settings"]["min_run_pairs"] == 0
    assert all(row["calibrated"] and row["verdict"] == "no change detected" for row in doc["rows"])
    r = duet_in_process("compare", str(t), "--min-run-pairs", "2")
    assert r.returncode == 2 and "--min-run-pairs" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("run_stat", RUN_STATS)
def test_every_run_statistic_is_offered_and_valid_json(tmp_path, run_stat):
    t = tmp_path / "t.csv"
    synthetic_table(0.03, seed=3).to_csv(t, index=False)
    doc = compare_json(str(t), "--run-stat", run_stat)
    assert doc["settings"]["run_stat"] == run_stat
    sduet = next(row for row in doc["rows"] if row["method"] == "sduet")
    assert sduet["verdict"] == "slower" and sduet["change"] == pytest.approx(0.03, abs=0.006)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--confidence", "95"], "between 0 and 1"),
        (["--threshold", "lots"], "--threshold"),
        (["--warmup", "some"], "--warmup"),
    ],
)
def test_bad_options_exit_2(tmp_path, args, words):
    t = tmp_path / "t.csv"
    synthetic_table(0.0).to_csv(t, index=False)
    r = duet_in_process("compare", str(t), *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_bad_table_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("benchmark,method\nx,seqn\n")
    r = duet_in_process("compare", str(bad))
    assert r.returncode == 2 and "missing column" in r.stderr and "bad.csv" in r.stderr
    r = duet_in_process("compare", str(tmp_path / "nothere"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def lost_run_notes(rows: pd.DataFrame, table: pd.DataFrame, m: float) -> list[str]:
    from duetbench.dataset import Dataset
    from duetbench.report.notes import verdict_notes

    return verdict_notes(rows, Dataset(table, "t.csv"), m)


def test_runs_without_pairs_are_reported():

    table = pd.DataFrame(
        {"suite": ["s"] * 4, "benchmark": ["b"] * 4, "method": ["aduet"] * 4, "run": [0, 1, 2, 3]}
    )
    rows = pd.DataFrame([{"suite": "s", "benchmark": "b", "method": "aduet", "runs": 3}])
    (note,) = lost_run_notes(rows, table, 0.4)
    assert "1 of 4 runs" in note and "m = 0.4" in note
    assert lost_run_notes(rows.assign(runs=4), table, 0.4) == []


def test_runs_left_out_for_few_pairs_are_named_in_the_note():
    table = pd.DataFrame(
        {"suite": ["s"] * 8, "benchmark": ["b"] * 8, "method": ["sduet"] * 8, "run": range(8)}
    )
    rows = pd.DataFrame(
        [{"suite": "s", "benchmark": "b", "method": "sduet", "runs": 6, "runs_few_pairs": 2}]
    )
    (note,) = lost_run_notes(rows, table, 0.4)
    assert "2 of 8 runs" in note and "--min-run-pairs" in note


def test_the_p_column_goes_with_the_verdicts_test():
    from duetbench.analysis.compare import labelled
    from duetbench.report.tables import VERDICT_COLUMNS, verdict_rows

    row = dict(benchmark="b", method="seqn", p_value=0.0001, rank_p_value=0.25, verdict="x")
    col = next(c for c in VERDICT_COLUMNS if c.title == "p (rank)")

    def p_cell(test: str) -> str:
        (r,) = verdict_rows(labelled(pd.DataFrame([{**row, "test": test}])))
        return col.format(r[col.key])

    assert p_cell("ratio") == "0.25"
    assert p_cell("utest") == "0.25"
    assert p_cell("utest-pooled") == "<0.001"  # title: not calibrated
