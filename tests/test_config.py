"""Config loading: thesis format unchanged, native format, and errors with file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import duet_in_process, run_duet

from duetbench.config import load_config, loads_config
from duetbench.errors import ConfigError

THESIS_LISTING_1 = """
duetbench:
  name: dacapo
  duets: [avrora]
avrora:
  image: dacapo
  duet_repetitions: 2
  sequential_repetitions: 2
  schedule: randomized_interleaving_trials
  A:
    run: java -jar dacapo-A.jar -n 50 -o results.csv avrora
  B:
    run: java -jar dacapo-B.jar -n 50 -o results.csv avrora
  results:
    - results.csv
"""

THESIS_EXAMPLE = """
duetbench:
  suite: tmp
  verbose: true
  seed: 42
  remove_containers: true
  schedule: randomized_interleaving_trials
  duet_repetitions: 1
  syncduet_repetitions: 0
  sequential_repetitions: 0
  docker_command: podman
  artifacts:
    date: date
    hostname: hostname
  duets:
    - debug
    - renaissance
    - dacapo
debug:
  image: renaissance
  suite: debug
  run_base: ""
  timeout: 3
  results:
    - /duet/results
  A:
    run: echo RunningA > /duet/results && sleep 5
  B:
    run: echo RunningB > /duet/results
renaissance:
  suite: renaissance
  image: renaissance
  run_base: java -jar renaissance-gpl-0.13.0.jar --json /duet/results.json --repetitions 100
  timeout: 15
  results:
    - /duet/results.json
  A:
    run:  chi-square
dacapo:
  suite: dacapo
  image: dacapo
  syncduet_repetitions: 1
  run_base: java -jar dacapo-9.12-d3s.jar --iterations 30 --no-validation -o /duet/results.csv
  syncduet_run_base: java -agentpath:/b/libubench-agent.so -jar dacapo-9.12-d3s.jar --iteration-barrier $$ --iterations 30 --no-validation -o /duet/results.csv
  results:
    - /duet/results.csv
  timeout: 15
  A:
    run: avrora
"""


def test_thesis_listing_1_loads_unchanged():
    exp = loads_config(THESIS_LISTING_1)
    b = exp.benchmark("avrora")
    assert not b.aa
    assert b.side("A").command == "java -jar dacapo-A.jar -n 50 -o results.csv avrora"
    assert b.side("B").results == ("results.csv",)
    assert b.reps("aduet") == 2 and b.reps("seqn") == 2 and b.reps("sduet") == 0
    assert exp.executor in ("podman", "docker")  # image: needs a container engine


def test_thesis_example_inheritance_run_base_and_aa():
    exp = loads_config(THESIS_EXAMPLE)
    assert exp.seed == 42 and exp.schedule == "rmit" and exp.name == "tmp"
    assert exp.executor == "podman"
    assert dict(exp.artifacts) == {"date": "date", "hostname": "hostname"}
    ren = exp.benchmark("renaissance")
    assert ren.aa and ren.side("B") == ren.side("A")
    assert ren.side("A").command.endswith("--repetitions 100 chi-square")
    assert ren.harness == "renaissance" and ren.timeout == 15
    dac = exp.benchmark("dacapo")
    assert dac.reps("sduet") == 1 and dac.reps("aduet") == 1  # inherited duet_repetitions
    assert "--iteration-barrier $$" in dac.side("A").sync_command
    assert dac.side("A").results == ("/duet/results.csv",)  # inherited from the benchmark section


def test_image_needs_container_executor_unless_local(write_config):
    cfg = write_config(THESIS_LISTING_1)
    r = duet_in_process("plan", str(cfg), "--executor", "local")
    assert r.returncode == 0, r.stderr
    assert "avrora.aduet.000" in r.stdout


def test_native_full_example_loads(tmp_path):
    from pathlib import Path

    exp = load_config(
        Path(__file__).resolve().parents[1] / "docs" / "examples" / "native-full.duet.yml"
    )
    assert exp.format == "native"
    names = [b.name for b in exp.benchmarks]
    assert len(names) >= 2
    b = exp.benchmarks[0]
    assert b.timeout and (b.iterations or b.time_budget)


NATIVE = """
experiment:
  name: n
  seed: 7
  repetitions: {seqn: 2, aduet: 3}
  timeout: 2m
defaults:
  iterations: 4
  env: {X: "1"}
benchmarks:
  one:
    command: echo hi
    env: {Y: 2}
    warmup: half
  two:
    A: {command: echo a}
    B: {command: echo b, env: {X: "3"}}
    time_budget: 500ms
    cpus: [0, 1]
"""


def test_native_inheritance_and_units():
    exp = loads_config(NATIVE)
    one, two = exp.benchmarks
    assert one.aa and not two.aa
    assert one.timeout == 120.0 and one.iterations == 4 and one.warmup == "half"
    assert dict(one.side("A").env) == {"X": "1", "Y": "2"}
    assert dict(two.side("B").env) == {"X": "3"} and dict(two.side("A").env) == {"X": "1"}
    assert two.time_budget == 0.5 and two.iterations is None and two.cpus == (0, 1)
    assert one.reps("seqn") == 2 and one.reps("aduet") == 3 and one.reps("sduet") == 0


@pytest.mark.parametrize(
    "text, line, words",
    [
        (
            "duetbench:\n  name: x\n  duets: [a]\n  sedd: 3\na:\n  A: {run: echo}\n",
            4,
            ["unknown key 'sedd'", "seed"],
        ),
        (
            "duetbench:\n  name: x\n  duets: [a]\n  seed: abc\na:\n  A: {run: echo}\n",
            4,
            ["seed", "integer"],
        ),
        ("duetbench:\n  name: x\n  duets: [a]\na:\n  B: {run: echo}\n", 4, ["no A side"]),
        (
            "duetbench:\n  name: x\n  duets: [a]\na:\n  A: {run: echo\n  B: x\n",
            6,
            ["not valid YAML"],
        ),
        (
            "experiment: {name: x}\nbenchmarks:\n  a:\n    command: echo\n    iteratons: 3\n",
            5,
            ["unknown key 'iteratons'", "iterations"],
        ),
        (
            "experiment: {name: x}\nbenchmarks:\n  a:\n    command: echo\n    timeout: soon\n",
            5,
            ["duration"],
        ),
        (
            "duetbench:\n  name: x\n  duets: [a, b]\na:\n  A: {run: echo}\n",
            3,
            ["no top-level section `b:`"],
        ),
    ],
)
def test_malformed_configs_give_file_line_and_exit_2(write_config, text, line, words):
    cfg = write_config(text, "bad.duet.yml")
    with pytest.raises(ConfigError) as ei:
        load_config(cfg)
    msg = str(ei.value)
    assert f"bad.duet.yml, line {line}" in msg, msg
    for w in words:
        assert w in msg
    r = run_duet("run", str(cfg), "-o", str(cfg.parent / "out"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "line" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1  # one paragraph
    assert not (cfg.parent / "out").exists()  # nothing created for a bad config


# ----------------------------------------------------------------------------- YAML edge cases


def _err(text: str) -> str:
    with pytest.raises(ConfigError) as ei:
        loads_config(text, "edge.duet.yml")
    return str(ei.value)


def test_merge_keys_own_keys_win_and_first_merged_wins():
    exp = loads_config(
        """
one: &one {image: first, timeout: 5}
two: &two {image: second, results: [r.csv], timeout: 9}
duetbench:
  name: m
  duets: [a, b]
a:
  <<: [*one, *two]
  A: {run: avrora}
b:
  <<: *one
  image: own
  A: &side {run: fop}
  B: *side
"""
    )
    a, b = exp.benchmarks
    assert a.side("A").image == "first" and a.timeout == 5.0  # the first merged mapping wins
    assert a.side("A").results == ("r.csv",)  # keys only the second one has still merge
    assert b.side("A").image == "own" and b.timeout == 5.0  # own keys win over merged ones
    assert not b.aa and b.side("B").command == "fop"  # an alias as B: an A/B with equal sides


def test_duplicate_key_names_both_lines():
    msg = _err(
        "duetbench:\n  name: x\n  duets: [a]\na:\n  A: {run: echo}\na:\n  A: {run: echo 2}\n"
    )
    assert "edge.duet.yml, line 6" in msg and "duplicate key 'a'" in msg and "line 4" in msg


def test_recursive_alias_is_a_config_error():
    msg = _err("duetbench: &x\n  name: x\n  duets: [a]\n  self: *x\n")
    assert "edge.duet.yml, line 1" in msg and "alias" in msg


def test_merge_of_a_scalar_is_a_config_error():
    msg = _err("duetbench:\n  <<: 3\n  name: x\n")
    assert "line 2" in msg and "`<<:` merges a mapping" in msg


def test_tabs_say_to_indent_with_spaces():
    msg = _err("duetbench:\n\tname: x\n")
    assert "line 2" in msg and "tabs" in msg and "spaces" in msg


# ----------------------------------------------------------------------------- thesis constructs
# tests/fixtures/thesis_configs/: one file per way the thesis (chapter 3, listing 1) and its
# tool's documentation and configs write the format. Each test checks what the file means.

THESIS_DIR = Path(__file__).resolve().parent / "fixtures" / "thesis_configs"


def _plan(path: Path, *extra: str) -> list[dict]:
    r = duet_in_process("plan", str(path), "--format", "json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_listing_1_alone_is_a_thesis_config():
    """Listing 1 as printed has no `duetbench:` section; its schedule sits in the benchmark."""
    exp = load_config(THESIS_DIR / "listing1.duet.yml")
    assert exp.format == "thesis" and exp.name == "listing1"
    assert exp.schedule == "rmit"  # `schedule:` of the benchmark section applies
    (b,) = exp.benchmarks
    assert not b.aa and b.side("A").image == b.side("B").image == "dacapo"
    assert b.side("B").command == "java -jar dacapo-B.jar -n 50 -o results.csv avrora"
    assert b.reps("aduet") == 2 and b.reps("seqn") == 2 and b.reps("sduet") == 0
    assert b.harness == "generic" and b.side("A").results == ("results.csv",)
    runs = _plan(THESIS_DIR / "listing1.duet.yml", "--executor", "local")
    assert sorted(r["run_id"] for r in runs) == [
        "avrora.aduet.000",
        "avrora.aduet.001",
        "avrora.seqn.000.A",
        "avrora.seqn.000.B",
        "avrora.seqn.001.A",
        "avrora.seqn.001.B",
    ]


def test_listing_1_schedule_in_a_benchmark_section_is_not_ignored():
    exp = loads_config(THESIS_LISTING_1)
    assert exp.schedule == "rmit"
    seq = loads_config(THESIS_LISTING_1.replace("randomized_interleaving_trials", "sequential"))
    assert seq.schedule == "sequential"


def test_conflicting_schedules_are_an_error():
    text = THESIS_LISTING_1.replace(
        "  duets: [avrora]\n", "  schedule: sequential\n  duets: [avrora]\n"
    )
    msg = _err(text)
    assert (
        "line 10" in msg
        and "sets `schedule: randomized_interleaving_trials`" in msg
        and "`duetbench:` section" in msg
    )


def test_documented_keys_and_per_side_overrides():
    exp = load_config(THESIS_DIR / "documented.duet.yml")
    assert (exp.name, exp.seed, exp.schedule) == ("renaissance", 42, "rmit")
    assert exp.executor == "podman" and exp.container.engine == "podman"
    assert exp.container.remove_containers is True
    assert dict(exp.artifacts) == {"uname": "uname -a", "lscpu": "lscpu"}  # only these
    ab, chi = exp.benchmarks
    assert ab.reps("aduet") == 4 and ab.reps("seqn") == 2  # own value, inherited value
    assert ab.side("A").image == "renaissance" and ab.side("B").image == "renaissance-graal"
    assert ab.side("A").results == ("/duet/results.json",)
    assert ab.side("B").results == ("/results.json",)
    assert ab.harness == ab.suite == "renaissance" and ab.timeout is None
    assert chi.aa and chi.timeout == 300.0 and chi.reps("aduet") == 2
    assert chi.side("A").command == (
        "java -jar renaissance-gpl-0.13.0.jar --json /duet/results.json --repetitions 100 chi-square"
    )


def test_whole_suite_run_base_unlisted_sections_and_timeout_zero():
    exp = load_config(THESIS_DIR / "suite.duet.yml")
    assert [b.name for b in exp.benchmarks] == ["500.perlbench_r", "505.mcf_r", "557.xz_r"]
    assert exp.executor == "docker" and exp.schedule == "sequential" and exp.seed == 0
    perl, mcf, xz = exp.benchmarks
    assert perl.harness == "speccpu" and perl.aa and perl.reps("seqn") == 0
    assert perl.side("A").command.endswith("--action onlyrun 500.perlbench_r")
    assert perl.timeout == mcf.timeout == 1800.0
    assert xz.timeout is None  # the thesis tool: a timeout of 0 or less is no timeout


def test_syncduet_bases_and_per_benchmark_repetitions():
    exp = load_config(THESIS_DIR / "syncduet.duet.yml")
    avrora, fop, h2 = exp.benchmarks
    assert avrora.repetitions == (("seqn", 1), ("aduet", 3), ("sduet", 2))
    assert avrora.side("A").sync_command.endswith(
        "--iteration-barrier $$ -n 30 -o /duet/results.csv avrora"
    )
    assert fop.reps("sduet") == 0 and fop.side("B").image == "dacapo-patched"
    assert h2.harness == "scalabench" and dict(h2.sides)["B"].command.endswith("h2 --size large")
    assert h2.side("B").sync_command.startswith("java -jar scalabench-B.jar --iteration-barrier $$")
    assert h2.side("A").sync_command.startswith("java -jar scalabench.jar --iteration-barrier $$")
    runs = _plan(THESIS_DIR / "syncduet.duet.yml", "--executor", "local")
    sduet = [r for r in runs if r["method"] == "sduet"]
    assert len(sduet) == 4 and {r["benchmark"] for r in sduet} == {"avrora", "h2"}
    # sduet runs use the syncduet command, the other methods the run command
    assert all("--iteration-barrier" in s["command"] for r in sduet for s in r["sides"])
    assert not any(
        "--iteration-barrier" in s["command"]
        for r in runs
        if r["method"] != "sduet"
        for s in r["sides"]
    )
    # schedule: sequential keeps the benchmarks in the order of `duets:`
    order = [r["benchmark"] for r in runs]
    assert order == sorted(order, key=["avrora", "fop", "h2"].index)


def test_older_thesis_keys():
    exp = load_config(THESIS_DIR / "older.duet.yml")
    debug, chi = exp.benchmarks
    assert debug.reps("aduet") == 4 and chi.reps("aduet") == 2  # `repetitions` = duet runs
    assert debug.reps("seqn") == chi.reps("seqn") == 2
    assert exp.container.remove_containers is False
    assert chi.side("A").results == ("/duet/results.json",)


def test_anchors_merges_and_quoted_numbers():
    exp = load_config(THESIS_DIR / "anchors.duet.yml")
    avrora, fop = exp.benchmarks
    assert avrora.reps("aduet") == 3 and avrora.reps("seqn") == 1
    assert avrora.harness == "dacapo" and avrora.timeout == 300.0  # `5m`
    assert avrora.side("B").image == "openjdk-patched" and avrora.side("A").image == "openjdk"
    assert avrora.side("B").command == avrora.side("A").command
    assert avrora.side("A").command == "java -jar dacapo.jar -n 10 -o /duet/results.csv avrora"
    assert fop.timeout == 90.0 and fop.aa


def test_benchmark_level_run_is_inherited_by_the_sides():
    exp = loads_config(
        "duetbench:\n  name: x\n  duets: [a]\na:\n  run: fop\n  run_base: java -jar d.jar\n"
        "  A: {image: v1}\n  B: {image: v2}\n"
    )
    (b,) = exp.benchmarks
    assert b.side("A").command == b.side("B").command == "java -jar d.jar fop"
    assert (b.side("A").image, b.side("B").image) == ("v1", "v2") and not b.aa


@pytest.mark.parametrize(
    "run, command",
    [("1", "1"), ("2.5", "2.5"), ("[echo, 'a b']", "echo 'a b'"), ("'yes'", "yes")],
)
def test_run_values_numbers_and_lists(run, command):
    exp = loads_config(f"duetbench:\n  name: x\n  duets: [a]\na:\n  A: {{run: {run}}}\n")
    assert exp.benchmarks[0].side("A").command == command


def test_numbers_as_names_and_single_strings_as_lists():
    exp = loads_config(
        "duetbench:\n  name: 2017\n  duets: 500\n  results: out.csv\n500:\n  A: {run: go}\n"
    )
    assert exp.name == "2017" and exp.benchmarks[0].name == "500"
    assert exp.benchmarks[0].side("A").results == ("out.csv",)


def test_suite_without_a_parser_is_a_label():
    """The thesis's own example.duet.yml has `suite: tmp` and `suite: debug`."""
    exp = loads_config(THESIS_EXAMPLE)
    debug = exp.benchmark("debug")
    assert debug.suite == "debug" and debug.harness == "generic"  # it has results
    local = loads_config("duetbench:\n  suite: tmp\n  duets: [a]\na:\n  A: {run: echo}\n")
    assert local.benchmarks[0].harness == "command" and local.benchmarks[0].suite == "tmp"
    assert local.name == "tmp"


@pytest.mark.parametrize("alias", ["builtin", "duet"])
def test_the_built_in_harness_by_its_other_names_times_each_iteration(alias):
    """`builtin` and `duet` (the thesis's names) are the built-in harness: the command runs
    per iteration. Read as a harness of their own they ran it once and found no results
    after the runs had been measured."""
    native = loads_config(
        f"experiment: {{name: x}}\nbenchmarks:\n  b:\n    harness: {alias}\n    command: go\n"
    )
    thesis = loads_config(f"duetbench:\n  duets: [a]\n  suite: {alias}\na:\n  A: {{run: go}}\n")
    explicit = loads_config(f"duetbench:\n  duets: [a]\na:\n  harness: {alias}\n  A: {{run: go}}\n")
    for exp in (native, thesis, explicit):
        assert exp.benchmarks[0].harness == "command"


@pytest.mark.parametrize(
    "text, line",
    [
        ("experiment: {name: x}\nbenchmarks:\n  b:\n    harness: generc\n    command: go\n", 4),
        (
            "experiment: {name: x}\ndefaults: {harness: generc}\nbenchmarks:\n  b: {command: go}\n",
            2,
        ),
        ("duetbench:\n  duets: [a]\na:\n  harness: generc\n  A: {run: go}\n", 4),
    ],
)
def test_a_harness_no_parser_has_is_refused_before_anything_runs(text, line):
    with pytest.raises(ConfigError) as err:
        loads_config(text)
    said = str(err.value)
    assert "harness 'generc' names no result parser" in said and "Did you mean 'generic'" in said
    assert err.value.line == line


def test_remove_containers_false_in_a_benchmark_keeps_containers():
    exp = loads_config("duetbench:\n  duets: [a]\na:\n  remove_containers: false\n  A: {run: x}\n")
    assert exp.container.remove_containers is False


def test_empty_artifacts_record_nothing_and_absent_artifacts_the_defaults():
    none = loads_config("duetbench:\n  artifacts:\n  duets: [a]\na:\n  A: {run: x}\n")
    assert none.artifacts == ()
    default = loads_config("duetbench:\n  duets: [a]\na:\n  A: {run: x}\n")
    assert dict(default.artifacts)["lscpu"] == "lscpu"


def test_docker_command_picks_the_engine_kind():
    def kind(cmd: str) -> str:
        return loads_config(
            f"duetbench:\n  docker_command: {cmd}\n  image: i\n  duets: [a]\na:\n  A: {{run: x}}\n"
        ).executor

    assert kind("sudo podman") == "podman" and kind("/usr/bin/docker") == "docker"
    assert kind("podman --remote") == "podman"


def test_env_merges_across_section_benchmark_and_side():
    exp = loads_config(
        "duetbench:\n  env: {X: 1, Y: 1}\n  duets: [a]\n"
        "a:\n  env: {Y: 2, Z: true}\n  A: {run: x, env: {Z: 3}}\n  B: {run: x}\n"
    )
    b = exp.benchmarks[0]
    assert dict(b.side("A").env) == {"X": "1", "Y": "2", "Z": "3"}
    assert dict(b.side("B").env) == {"X": "1", "Y": "2", "Z": "true"}


BAD_THESIS = [
    # (config, line, words the message must contain)
    (
        "duetbench:\n  name: x\n  duets: [a]\na:\n  A: {run: echo}\n  B: {image: v2}\n",
        6,
        ["side B has no `run:`"],
    ),
    ("duetbench:\n  name: x\n  duets: [a]\na:\n  A:\n", 5, ["side A has no `run:`"]),
    ("duetbench:\n  name: x\n  duets: [a]\na:\n", 4, ["`a:` is empty", "A: {run"]),
    ("duetbench:\n", 1, ["`duetbench:` section is empty", "duets"]),
    ("duetbench:\n  name: x\n  duets:\na:\n  A: {run: x}\n", 3, ["`duets:` is empty"]),
    ("duetbench:\n  name: x\n  duets: [duetbench]\n", 3, ["settings section"]),
    (
        "duetbench:\n  name: x\n  duets: [a]\na:\n  A: {run: on}\n",
        5,
        ["a.A.run", "boolean", "quotes"],
    ),
    ("duetbench:\n  duet_repetitions: yes\n  duets: [a]\na:\n  A: {run: x}\n", 2, ["whole number"]),
    ("duetbench:\n  duet_repetitions: 2.5\n  duets: [a]\na:\n  A: {run: x}\n", 2, ["integer"]),
    ("duetbench:\n  timeout: soon\n  duets: [a]\na:\n  A: {run: x}\n", 2, ["duration"]),
    (
        "duetbench:\n  artifacts: [lscpu]\n  duets: [a]\na:\n  A: {run: x}\n",
        2,
        ["name to a command"],
    ),
    ("duetbench:\n  repetitions_type: swapped\n  duets: [a]\na:\n  A: {run: x}\n", 2, ["swap"]),
    (
        "duetbench:\n  shedule: sequential\n  duets: [a]\na:\n  A: {run: x}\n",
        2,
        ["unknown key 'shedule'", "Did you mean 'schedule'"],
    ),
    (
        "duetbench:\n  duets: [a]\na:\n  A: {run: x, imgae: i}\n",
        4,
        ["unknown key 'imgae'", "'image'"],
    ),
    (
        "duetbench:\n  duets: [a]\na:\n  suite: dacpo\n  A: {run: x}\n",
        4,
        ["suite 'dacpo'", "Did you mean 'dacapo'"],
    ),
    (
        "duetbench:\n  duets: [alpha]\nalpah:\n  A: {run: x}\n",
        2,
        ["no top-level section `alpha:`", "Did you mean 'alpah'?"],
    ),
    (
        "duetbench:\n  syncduet_repetitions: 2\n  results: [r.csv]\n  duets: [a]\na:\n  A: {run: x}\n",
        2,
        ["syncduet_run_base", "syncduet_repetitions: 0"],
    ),
    ("avrora:\n  A: {run: x}\nfop:\n  image: y\n", 1, ["cannot tell the config format"]),
    (
        "duetbench:\n  duets: [a]\na:\n  A: {run: x}\n  yes: 1\n",
        5,
        ["unknown key 'True'", "quotes"],
    ),
]


def _assert_names_line_and_fix(text: str, line: int, words: list[str]) -> str:
    """The error for ``text`` names its line and says every one of ``words``."""
    msg = _err(text)
    assert f"edge.duet.yml, line {line}:" in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


@pytest.mark.parametrize("text, line, words", BAD_THESIS)
def test_bad_thesis_configs_name_line_and_fix(text, line, words):
    msg = _assert_names_line_and_fix(text, line, words)
    assert "Value error" not in msg  # pydantic's wording is not shown


def test_bad_thesis_config_exits_2_from_the_cli(write_config):
    cfg = write_config(BAD_THESIS[0][0], "bad.duet.yml")
    r = run_duet("run", str(cfg), "-o", str(cfg.parent / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "bad.duet.yml, line 6" in r.stderr and "side B has no `run:`" in r.stderr
    assert not (cfg.parent / "out").exists()


BAD_NATIVE = [
    ("experiment: {name: x, seed: -1}\nbenchmarks:\n  a: {command: echo}\n", 1, ["seed", "0"]),
    ("experiment: {name: x, seed: true}\nbenchmarks:\n  a: {command: echo}\n", 1, ["whole number"]),
    (
        "experiment: {name: x, repetitions: yes}\nbenchmarks:\n  a: {command: echo}\n",
        1,
        ["'experiment.repetitions'", "whole number"],
    ),
    ("experiment: {name: x}\nbenchmarks:\n  a:\n", 3, ["`a:` is empty"]),
    ("experiment:\nbenchmarks:\n  a: {command: echo}\n", 1, ["`experiment:` is empty"]),
    (
        "experiment: {name: x}\nbenchmarks:\n  a: {command: echo}\nduetbench: {duets: [a]}\n",
        1,
        ["both `duetbench:`", "keep one"],
    ),
]


@pytest.mark.parametrize("text, line, words", BAD_NATIVE)
def test_bad_native_configs_name_line_and_fix(text, line, words):
    msg = _assert_names_line_and_fix(text, line, words)
    assert "instance of" not in msg and "more problem" not in msg


def test_native_numbers_as_text():
    exp = loads_config("experiment: {name: 5, seed: '3'}\nbenchmarks:\n  a: {command: 1}\n")
    assert exp.name == "5" and exp.seed == 3 and exp.benchmarks[0].side("A").command == "1"


def test_misspelled_top_level_section_is_named():
    msg = _err("# c\nduetbnch:\n  duets: [a]\na:\n  A: {run: x}\n")
    assert "line 2" in msg and "Did you mean `duetbench:` instead of `duetbnch:`?" in msg


def test_plan_table_shows_each_runs_sides_and_cpu_slots():
    """seqn runs name their one side (A or B), duets their launch order and both slots."""
    import re
    from pathlib import Path

    cfg = Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "duet.yml"
    r = duet_in_process("plan", str(cfg), "--executor", "local")
    assert r.returncode == 0, r.stderr
    rows = [line.split("│")[1:-1] for line in r.stdout.splitlines() if re.match(r"│ \d", line)]
    cells = [[c.strip() for c in row] for row in rows]
    seqn = [c for c in cells if c[3] == "seqn"]
    duets = [c for c in cells if c[3] in ("aduet", "sduet")]
    assert seqn and duets
    assert {c[5] for c in seqn} == {"A", "B"}
    assert all(c[6] in (f"{c[5]}:0", f"{c[5]}:1") for c in seqn)  # a drawn slot, like duets
    assert {c[6][-1] for c in seqn} == {"0", "1"}
    assert {c[5] for c in duets} <= {"AB", "BA"}
    assert all(
        sorted(c[6].split()) == ["A:0", "B:1"] or sorted(c[6].split()) == ["A:1", "B:0"]
        for c in duets
    )


@pytest.mark.parametrize(
    ("installed", "engine"),
    [
        ({"podman", "docker"}, "podman"),
        ({"docker"}, "docker"),
        ({"podman"}, "podman"),
        (set(), "podman"),
    ],
)
def test_thesis_engine_without_docker_command_follows_what_is_installed(
    write_config, monkeypatch, installed, engine
):
    import duetbench.config.thesis as thesis

    monkeypatch.setattr(
        thesis.shutil, "which", lambda name: f"/usr/bin/{name}" if name in installed else None
    )
    exp = load_config(write_config(THESIS_LISTING_1))
    assert exp.executor == engine
