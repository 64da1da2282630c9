"""Configs that crashed or hung duetbench: each is now a ConfigError (exit 2) that names the
file, the line and the key, and says what to change (docs/config.md, section Limits)."""

from __future__ import annotations

import os
import socket
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from tests.helpers import duet_in_process, run_duet
from tests.watchdog import deadline

import duetbench.config.yamlload as yamlload
from duetbench.config import load_config, loads_config
from duetbench.config.limits import (
    MAX_CONFIG_BYTES,
    MAX_NAME_LENGTH,
    MAX_RUNS,
    HostCpus,
    cpu_ranges,
)
from duetbench.errors import ConfigError
from duetbench.plan import make_plan
from duetbench.schedule.cluster import cpu_reasons
from duetbench.schedule.inline import run_experiment

#: only catches hangs (each case here takes well under a second)
HANG_S = 60.0

NATIVE = "experiment:\n  name: x\nbenchmarks:\n  a:\n    command: 'true'\n"


def refused(text: str | bytes, line: int | None, *words: str, tmp_path: Path) -> str:
    """The error for a config file holding ``text``: file and line named, ``words`` said."""
    path = tmp_path / "bad.duet.yml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with deadline(HANG_S, "load_config"), pytest.raises(ConfigError) as ei:
        make_plan(load_config(path))
    msg = str(ei.value)
    where = f"bad.duet.yml, line {line}:" if line is not None else "bad.duet.yml: "
    assert msg.startswith(str(path.parent / where)), msg
    for w in words:
        assert w in msg, msg
    return msg


# ----------------------------------------------------------------------------- bytes and YAML


def test_nul_byte_names_its_line_and_column(tmp_path):
    refused(b"experiment:\n  name: x\0y\n", 2, "NUL (U+0000) at column 10", tmp_path=tmp_path)


def test_other_control_characters_are_named(tmp_path):
    refused(
        b"experiment:\n  name: x\n\x1b[2J\n", 3, "control character (U+001B)", tmp_path=tmp_path
    )


def test_a_file_that_is_not_utf8(tmp_path):
    msg = refused(b"experiment:\n  name: caf\xe9\n", 2, "not UTF-8", "0xe9", tmp_path=tmp_path)
    assert "column 12" in msg


def test_5000_nested_brackets(tmp_path):
    refused(NATIVE + "deep: " + "[" * 5000 + "\n", 6, "more than 50 levels", tmp_path=tmp_path)


def test_aliases_that_nest_deeper_than_the_limit(tmp_path):
    chain = "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 60))
    # l48: [*l47] is the first list 51 levels deep once its alias is replaced
    refused(chain + NATIVE, 49, "more than 50 levels", "aliases", tmp_path=tmp_path)


BILLION_LAUGHS = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "experiment: {name: x}\n"
)


def test_alias_bomb_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    """11 lines standing for 9**9 values: refused from the node graph, without expanding."""
    assert len(BILLION_LAUGHS.splitlines()) == 10
    built = 0
    construct = yamlload._construct

    def counting(*args, **kwargs):
        nonlocal built
        built += 1
        if built > 1_000_000:
            raise AssertionError("the alias bomb is being expanded")
        return construct(*args, **kwargs)

    monkeypatch.setattr(yamlload, "_construct", counting)
    # f: 9**5 + ... values, the first list beyond the bound
    refused(BILLION_LAUGHS, 6, "more than 200,000 values", "alias", tmp_path=tmp_path)
    assert built == 0


def test_an_alias_to_itself_is_still_named():
    with pytest.raises(ConfigError, match="line 1: an alias"):
        loads_config("duetbench: &x\n  name: x\n  duets: [a]\n  self: *x\n", "e.duet.yml")


def test_an_oversized_config_is_refused_unread(tmp_path):
    text = "# padding\n" * (MAX_CONFIG_BYTES // 10) + NATIVE
    msg = refused(text, None, "at most 1024 KiB", tmp_path=tmp_path)
    assert "larger than 1024 KiB" in msg
    with pytest.raises(ConfigError, match="at most 1024 KiB"):
        loads_config(text)
    # a large config below the bound loads
    exp = loads_config("# padding\n" * (MAX_CONFIG_BYTES // 20) + NATIVE)
    assert exp.benchmarks[0].name == "a"


@pytest.mark.parametrize(
    "value, says",
    [
        ("9" * 5000, "Exceeds the limit (4300 digits)"),  # Python's own bound on int()
        ("2001-13-45", "month must be in 1..12"),  # YAML reads it as a date
        ("!!float abc", "could not convert string to float"),
    ],
)
def test_values_yaml_cannot_read(tmp_path, value, says):
    msg = refused(NATIVE + f"    timeout: {value}\n", 6, says, "quotes", tmp_path=tmp_path)
    assert len(msg) < 400, msg  # the 5000 digits are not repeated


def test_a_huge_hex_number_is_shown_short(tmp_path):
    msg = refused(
        NATIVE.replace("name: x", "name: x\n  seed: 0x" + "f" * 4000),
        3,
        "the seed can be at most",
        "a number of about 4817 digits",
        tmp_path=tmp_path,
    )
    assert len(msg) < 300


@pytest.mark.parametrize(
    "escape, says",
    [("\\0", "NUL character"), ("\\ud800", "lone surrogate")],
    ids=["nul", "surrogate"],
)
def test_strings_no_command_or_path_can_hold(tmp_path, escape, says):
    refused(NATIVE.replace("'true'", f'"tr{escape}ue"'), 5, says, tmp_path=tmp_path)


def test_a_long_value_that_is_not_a_duration_is_refused_at_once(tmp_path):
    """`\\s*` twice around an optional unit made the duration pattern quadratic: a
    200 000-space value took minutes."""
    refused(
        NATIVE + "    timeout: '1" + " " * 200_000 + "x'\n",
        6,
        "is not a duration",
        tmp_path=tmp_path,
    )


# ----------------------------------------------------------------------------- plan size


@pytest.mark.parametrize(
    "text, line, key",
    [
        (NATIVE.replace("name: x", "name: x\n  repetitions: 1000000000000"), 3, "repetitions"),
        (NATIVE + "    repetitions: {aduet: 1000000000000}\n", 6, "aduet"),
        ("duetbench:\n  duet_repetitions: 1000000000000\n  duets: [a]\na:\n  A: {run: x}\n", 2, ""),
        (
            "duetbench:\n  duets: [a]\na:\n  sequential_repetitions: 10000000000000\n  A: {run: x}\n",
            4,
            "",
        ),
    ],
)
def test_repetitions_beyond_the_bound(tmp_path, text, line, key):
    msg = refused(text, line, "at most 100,000", tmp_path=tmp_path)
    assert "(got 1000000000000" in msg or "(got 10000000000000" in msg
    assert key in msg


def test_the_plan_of_all_benchmarks_is_bounded(tmp_path):
    text = textwrap.dedent(
        """\
        experiment: {name: x, repetitions: {aduet: 30000}}
        benchmarks:
          a: {command: x}
          b: {command: x, repetitions: {seqn: 20000, aduet: 5000}}
          c: {command: x}
        """
    )
    msg = refused(text, 4, "plans 105,000 runs", "more than the 100,000", tmp_path=tmp_path)
    assert "benchmark 'b' plans 45,000 (seqn 20,000 x 2, aduet 5,000, sduet 0)" in msg
    assert "key 'benchmarks.b.repetitions'" in msg


def test_make_plan_refuses_an_oversized_experiment_built_in_code():
    exp = loads_config(NATIVE)
    big = replace(exp.benchmarks[0], repetitions=(("seqn", 0), ("aduet", MAX_RUNS + 1)))
    with pytest.raises(ConfigError, match="plans 100,001 runs"):
        make_plan(replace(exp, benchmarks=(big,)))


def test_iterations_beyond_the_bound(tmp_path):
    refused(
        NATIVE + "    iterations: 1000000000000\n",
        6,
        "iterations can be at most 1,000,000",
        tmp_path=tmp_path,
    )
    refused(
        NATIVE + "    warmup: 1000000000000\n",
        6,
        "warmup can be at most 1,000,000",
        tmp_path=tmp_path,
    )


# ----------------------------------------------------------------------------- names


def _named(name: str, thesis: bool) -> str:
    if thesis:
        return f"duetbench:\n  duets: [{name}]\n{name}:\n  A: {{run: 'true'}}\n"
    return f"experiment:\n  name: x\nbenchmarks:\n  {name}:\n    command: 'true'\n"


@pytest.mark.parametrize("thesis", [False, True], ids=["native", "thesis"])
def test_a_240_character_benchmark_name(tmp_path, thesis):
    refused(
        _named("b" * 240, thesis),
        2 if thesis else 4,
        "has 240 characters",
        "at most 100",
        tmp_path=tmp_path,
    )


def test_every_directory_a_100_character_name_gives_fits(tmp_path):
    """Run ids name directories: the run's, `.tmp-<run-id>-<pid>` and
    `.superseded/<run-id>.<ns>`; each stays well under the 255 bytes a name may have."""
    name = "n" * MAX_NAME_LENGTH
    reps = "name: x\n  repetitions: {seqn: 50000, aduet: 0, sduet: 0}"  # 100 000 runs
    plan = make_plan(loads_config(_named(name, False).replace("name: x", reps)))
    assert len(plan) == MAX_RUNS  # the bound itself is allowed
    longest = max((r.run_id for r in plan), key=len)
    assert len(longest) == len(name + ".seqn.49999.A")
    pid_max, ns = 4194304, 2**63
    for dirname in (longest, f".tmp-{longest}-{pid_max}", f"{longest}.{ns}"):
        assert len(dirname.encode()) < 200, dirname


def test_a_100_character_benchmark_name_runs_and_resumes(tmp_path):
    name = "n" * MAX_NAME_LENGTH
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: long, repetitions: {seqn: 0, aduet: 1}}\n"
        f"benchmarks:\n  {name}: {{command: 'true', iterations: 1, cpus: none}}\n"
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "out"), "--no-compare")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "long" / "runs" / f"{name}.aduet.000" / "run.json").is_file()
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "out"), "--resume", "--no-compare")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- CPUs


def _missing_cpu() -> int:
    return max(os.sched_getaffinity(0)) + 1


def _usable_cpu() -> int:
    return min(os.sched_getaffinity(0))


@pytest.mark.parametrize("harness", ["command", "pyperf"])
def test_a_duet_on_one_cpu_is_refused_for_a_wall_clock_harness(tmp_path, harness):
    """Both sides on one CPU take turns; a wall-clock time then counts the other's turns."""
    text = (
        "experiment:\n  name: x\n  repetitions: {seqn: 2, aduet: 2}\n"
        f"benchmarks:\n  a:\n    harness: {harness}\n    cpus: [0]\n    command: 'true'\n"
    )
    msg = refused(text, 7, "runs aduet on CPU 0 alone", "List two CPUs", tmp_path=tmp_path)
    assert ("built-in harness" if harness == "command" else "pyperf harness") in msg
    seqn_only = text.replace("seqn: 2, aduet: 2", "seqn: 2")  # one side at a time: fine
    assert loads_config(seqn_only).benchmarks[0].cpus == (0,)
    cpu_time = text.replace(f"harness: {harness}", "harness: generic\n    results: [o.csv]")
    assert loads_config(cpu_time).benchmarks[0].cpus == (0,)  # a harness reporting CPU time


def test_a_cpu_this_host_lacks_is_refused_at_load_with_the_host_named(tmp_path):
    text = NATIVE + "    cpus: [0, 7]\n"
    here = HostCpus("h1", [0, 1, 2, 3])
    with pytest.raises(ConfigError) as ei:
        loads_config(text, "c.duet.yml", host_cpus=here)
    msg = str(ei.value)
    assert msg.startswith("c.duet.yml, line 6: key 'benchmarks.a.cpus': "), msg
    assert "CPU 7, which is not usable on host 'h1' (usable there: 0-3)" in msg
    assert loads_config(text).benchmarks[0].cpus == (0, 7)  # without a host: not checked
    # inherited from `defaults:` / the `duetbench:` section: that line is named
    inherited = "experiment: {name: x}\ndefaults:\n  cpus: [9]\nbenchmarks:\n  a: {command: x}\n"
    with pytest.raises(ConfigError, match="line 3: key 'defaults.cpus'"):
        loads_config(inherited, host_cpus=here)
    thesis = "duetbench:\n  cpus: [9]\n  duets: [a]\na:\n  A: {run: x}\n"
    with pytest.raises(ConfigError, match="line 2: key 'duetbench.cpus'"):
        loads_config(thesis, host_cpus=here)


def test_duet_plan_and_run_check_this_hosts_cpus(tmp_path):
    bad = _missing_cpu()
    cfg = tmp_path / "duet.yml"
    cfg.write_text(NATIVE + f"    cpus: [{_usable_cpu()}, {bad}]\n    iterations: 1\n")
    r = duet_in_process("plan", str(cfg))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    usable = cpu_ranges(os.sched_getaffinity(0))
    assert f"not usable on host '{socket.gethostname()}' (usable there: {usable})" in r.stderr
    assert "--no-cpu-check" in r.stderr
    r = duet_in_process("plan", str(cfg), "--no-cpu-check")
    assert r.returncode == 0 and "a.aduet.000" in r.stdout, r.stderr
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and f"CPU {bad}, which is not usable" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_run_experiment_checks_the_cpus_before_anything_runs(tmp_path):
    exp = loads_config(
        NATIVE.replace("'true'", f"touch {tmp_path / 'ran'}")
        + f"    cpus: [{_usable_cpu()}, {_missing_cpu()}]\n",
        tmp_path / "duet.yml",
    )
    with pytest.raises(ConfigError, match="not usable on host"):
        run_experiment(replace(exp, setup=f"touch {tmp_path / 'setup-ran'}"), tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "setup-ran").exists()


def test_a_cluster_host_without_the_listed_cpus_is_excluded():
    exp = loads_config(NATIVE + "    cpus: [2, 3]\n")
    assert cpu_reasons(exp, "w1", {"cpus_available": list(range(8))}) == []
    (why,) = cpu_reasons(exp, "w2", {"cpus_available": [0, 1]})
    assert "CPUs 2-3, which are not usable on host 'w2' (usable there: 0-1)" in why
    assert cpu_reasons(exp, "w3", {}) == []  # unknown: the run tells


@pytest.mark.parametrize(
    "cpus, says",
    [
        ("[]", "the CPU list is empty"),
        ("[0, 0]", "CPU 0 is listed twice"),
        ("[true]", "not true"),
        ("[9000]", "a CPU number can be at most 8,191"),
        ("[-1]", "greater than or equal to 0"),
    ],
)
def test_cpu_lists(tmp_path, cpus, says):
    refused(NATIVE + f"    cpus: {cpus}\n", 6, says, tmp_path=tmp_path)


# ----------------------------------------------------------------------------- every number

EXP = "experiment:\n  name: x\n  {key}: {value}\nbenchmarks:\n  a:\n    command: x\n"
BENCH = "experiment:\n  name: x\nbenchmarks:\n  a:\n    command: x\n    {key}: {value}\n"
THESIS = "duetbench:\n  duets: [a]\n  {key}: {value}\na:\n  A: {{run: x}}\n"


@pytest.mark.parametrize(
    "template, key, value, says",
    [
        (EXP, "timeout", ".nan", "not NaN"),
        (EXP, "timeout", ".inf", "at most 30 days"),
        (EXP, "timeout", "1.0e+300", "at most 30 days"),
        (EXP, "timeout", "'0.1ms'", "at least 1 ms"),
        (EXP, "timeout", "true", "not a boolean"),
        (EXP, "kill_grace", ".nan", "not NaN"),
        (EXP, "kill_grace", "-.inf", "must be positive"),
        (EXP, "seed", str(2**64), "the seed can be at most"),
        (EXP, "retries", "true", "not true"),
        (EXP, "retries", "1000", "retries can be at most 100"),
        (EXP, "hosts", "{min_cores: true}", "not true"),
        (EXP, "hosts", "{max_cores: 10000000}", "at most 1,000,000"),
        (EXP, "hosts", "{min_memory_gb: .inf}", "finite number"),
        (EXP, "hosts", "{min_memory_gb: true}", "not true"),
        (EXP, "repetitions", "{seqn: true}", "not true"),
        (BENCH, "iterations", "true", "not true"),
        (BENCH, "iterations", "0", "greater than 0"),
        (BENCH, "time_budget", ".inf", "at most 30 days"),
        (BENCH, "time_budget", ".nan", "not NaN"),
        (BENCH, "timeout", "-5", "must be positive"),
        (BENCH, "warmup", "true", "not true"),
        (THESIS, "timeout", ".nan", "not NaN"),
        (THESIS, "timeout", ".inf", "at most 30 days"),
        (THESIS, "syncduet_repetitions", "true", "not true"),
        (THESIS, "iterations", "10000000", "at most 1,000,000"),
        (THESIS, "seed", str(2**70), "the seed can be at most"),
        (THESIS, "warmup", "2000000", "at most 1,000,000"),
        (THESIS, "time_budget", "1.0e+300", "at most 30 days"),
    ],
    ids=lambda v: {id(EXP): "experiment", id(BENCH): "benchmark", id(THESIS): "thesis"}.get(
        id(v), str(v)
    ),
)
def test_numbers_out_of_bounds_in_both_formats(tmp_path, template, key, value, says):
    line = 3 if template is not BENCH else 6
    msg = refused(template.format(key=key, value=value), line, says, tmp_path=tmp_path)
    assert f".{key}" in msg


def test_numbers_at_their_bounds_load():
    exp = loads_config(
        EXP.format(key="timeout", value="720h").replace(
            "name: x", "name: x\n  seed: 9223372036854775807"
        )
        + "    iterations: 1000000\n    warmup: 1000000\n    cpus: [8190, 8191]\n"
    )
    bench = exp.benchmarks[0]
    assert bench.timeout == 30 * 24 * 3600 and exp.seed == 2**63 - 1
    assert bench.iterations == 1_000_000 and bench.warmup == 1_000_000
    thesis = loads_config(THESIS.format(key="timeout", value="-.inf"))
    assert thesis.benchmarks[0].timeout is None  # 0 or less: no timeout, as in the thesis tool


# ----------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(
    "data",
    [
        b"experiment:\n  name: x\0\n",
        b"experiment:\n  name: \xff\xfe\n",
        ("x: " + "[" * 5000 + "\n").encode(),
        BILLION_LAUGHS.encode(),
        (NATIVE + "    repetitions: 1000000000000\n").encode(),
        _named("b" * 240, False).encode(),
    ],
    ids=["nul", "not-utf8", "brackets", "alias-bomb", "repetitions", "long-name"],
)
def test_duet_plan_exits_2_without_a_traceback(tmp_path, data):
    cfg = tmp_path / "bad.duet.yml"
    cfg.write_bytes(data)
    r = run_duet("plan", str(cfg), timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.startswith(f"duet: error: {cfg}, line ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_duet_plan_shows_markup_in_values_as_written(write_config):
    cfg = write_config(NATIVE + "    harness: 'y[/]'\n    repetitions: {seqn: 0, aduet: 1}\n")
    r = duet_in_process("plan", str(cfg))
    assert r.returncode == 2  # a harness names a parser: this one is refused, shown as written
    assert "harness 'y[/]' names no result parser" in r.stderr
