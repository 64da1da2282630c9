"""plan.py on its own: the runs of an experiment, their order and every draw, from the seed.

`duet run --resume` compares the stored plan with a new one run by run, so a plan must
come out the same from the same config and seed -- also in a later duetbench version.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from duetbench.config import loads_config
from duetbench.errors import ConfigError
from duetbench.plan import RunSpec, make_plan, seed_key

CONFIG = """
experiment:
  name: p
  seed: {seed}
  schedule: {schedule}
  repetitions: {{seqn: 3, aduet: 9, sduet: 7}}
benchmarks:
  alpha:
    A: {{command: "a1"}}
    B: {{command: "b1"}}
  beta:
    command: "same"
    cpus: none
  gamma:
    harness: generic
    results: [out.json]
    A: {{command: "a3", sync_command: "sync-a3"}}
    B: {{command: "b3", sync_command: "sync-b3"}}
"""


def plan_of(seed: int = 11, schedule: str = "rmit", only: list[str] | None = None):
    exp = loads_config(CONFIG.format(seed=seed, schedule=schedule))
    return make_plan(exp, only)


def as_json(plan: list[RunSpec]) -> str:
    return json.dumps([r.to_dict() for r in plan])


def test_run_ids_are_unique_and_say_benchmark_method_repetition_and_side():
    plan = plan_of()
    ids = [r.run_id for r in plan]
    assert len(ids) == len(set(ids)) == 3 * (2 * 3 + 9 + 7)
    for r in plan:
        if r.method == "seqn":
            (side,) = r.side_names
            assert r.run_id == f"{r.benchmark}.seqn.{r.rep:03d}.{side}"
            assert r.order is None
        else:
            assert r.run_id == f"{r.benchmark}.{r.method}.{r.rep:03d}"
    reps = Counter((r.benchmark, r.method) for r in plan)
    assert reps[("alpha", "seqn")] == 6 and reps[("alpha", "aduet")] == 9
    assert reps[("alpha", "sduet")] == 7
    assert [r.index for r in plan] == list(range(len(plan)))


def test_seqn_runs_hold_one_side_each_on_a_drawn_balanced_cpu_slot():
    """A seqn run's one side is placed like a duet side (a drawn slot), not always on slot 0."""
    runs = [r for r in plan_of() if r.method == "seqn"]
    for r in runs:
        (side,) = r.sides
        assert r.run_id.endswith(f".{side.name}")
        if r.benchmark == "beta":  # cpus: none
            assert side.cpu_slot is None
    for bench in ("alpha", "gamma"):
        for name in ("A", "B"):
            slots = Counter(
                r.sides[0].cpu_slot
                for r in runs
                if r.benchmark == bench and r.sides[0].name == name
            )
            assert set(slots) <= {0, 1} and abs(slots[0] - slots[1]) <= 1, (bench, name, slots)
    seqn = [r.run_id for r in plan_of(schedule="sequential") if r.method == "seqn"]
    assert seqn[:2] == ["alpha.seqn.000.A", "alpha.seqn.000.B"]


def test_duet_runs_launch_in_the_drawn_order_with_one_cpu_slot_per_side():
    for r in plan_of():
        if r.method == "seqn":
            continue
        assert r.is_duet and "".join(r.side_names) == r.order
        slots = {s.name: s.cpu_slot for s in r.sides}
        if r.benchmark == "beta":  # cpus: none
            assert slots == {"A": None, "B": None}
        else:
            assert sorted(slots.values()) == [0, 1]


@pytest.mark.parametrize("seed", [0, 1, 11, 2026])
def test_orders_and_cpu_slots_are_balanced_per_benchmark_and_method(seed):
    plan = plan_of(seed)
    for bench in ("alpha", "gamma"):
        for method in ("aduet", "sduet"):
            runs = [r for r in plan if (r.benchmark, r.method) == (bench, method)]
            orders = Counter(r.order for r in runs)
            a_slots = Counter(r.side("A").cpu_slot for r in runs)
            assert abs(orders["AB"] - orders["BA"]) <= 1, (bench, method, orders)
            assert abs(a_slots[0] - a_slots[1]) <= 1, (bench, method, a_slots)


def test_the_same_seed_gives_the_same_plan_and_another_seed_other_draws():
    assert as_json(plan_of(11)) == as_json(plan_of(11))
    a, b = plan_of(11), plan_of(12)
    assert [r.run_id for r in a] != [r.run_id for r in b]  # the RMIT order
    assert {r.run_id: r.order for r in a} != {r.run_id: r.order for r in b}


def test_the_draws_of_a_seed_stay_what_they_were():
    """A later duetbench must plan an old experiment the same way (--resume compares)."""
    assert seed_key("rmit") == 6315111756086315610
    assert seed_key("alpha", "aduet") == 8486077948102760185
    plan = plan_of(11, schedule="sequential")
    orders = "".join(r.order[0] for r in plan if (r.benchmark, r.method) == ("alpha", "aduet"))
    slots = "".join(
        str(r.side("A").cpu_slot) for r in plan if (r.benchmark, r.method) == ("alpha", "aduet")
    )
    assert (orders, slots) == ("AABBAABAB", "101100110")
    assert [r.run_id for r in plan_of(11)][:4] == [
        "beta.seqn.002.A",
        "beta.sduet.001",
        "alpha.aduet.001",
        "beta.seqn.000.A",
    ]


def test_only_keeps_the_draws_and_positions_of_the_full_plan():
    full = plan_of()
    for only in (["beta"], ["gamma", "alpha"]):
        part = plan_of(only=only)
        assert as_json(part) == as_json([r for r in full if r.benchmark in only])


def test_only_with_an_unknown_benchmark_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown benchmark.*delta.*alpha, beta, gamma"):
        plan_of(only=["delta"])


def test_rmit_interleaves_everything_and_sequential_keeps_declaration_order():
    rmit = plan_of(schedule="rmit")
    seq = plan_of(schedule="sequential")
    assert sorted(r.run_id for r in rmit) == sorted(r.run_id for r in seq)
    keys = [(r.benchmark, r.method) for r in seq]
    assert keys == sorted(keys, key=lambda k: (k[0], ["seqn", "aduet", "sduet"].index(k[1])))
    assert [r.rep for r in seq if (r.benchmark, r.method) == ("beta", "aduet")] == list(range(9))
    changes = sum(
        (a.benchmark, a.method) != (b.benchmark, b.method)
        for a, b in zip(rmit, rmit[1:], strict=False)
    )
    assert changes > len(rmit) // 2  # shuffled across benchmarks and methods, not grouped


def test_sduet_runs_an_external_harness_with_its_sync_command():
    for r in plan_of():
        if r.benchmark != "gamma":
            continue
        commands = {s.name: s.command for s in r.sides}
        if r.method == "sduet":
            assert commands == {"A": "sync-a3", "B": "sync-b3"}
        else:
            assert set(commands.values()) <= {"a3", "b3"}


def test_a_run_spec_round_trips_through_json_with_the_side_written_as_pair():
    for r in plan_of():
        data = json.loads(json.dumps(r.to_dict()))
        assert [list(s)[0] for s in data["sides"]] == ["pair"] * len(r.sides)
        assert [s["pair"] for s in data["sides"]] == list(r.side_names)
        assert RunSpec.from_dict(data) == r


def test_cpus_none_pins_no_side_and_a_record_takes_the_run_identity_from_its_spec():
    plan = plan_of(schedule="sequential")
    beta = [r for r in plan if r.benchmark == "beta"]
    assert beta and all(s.cpu_slot is None for r in beta for s in r.sides)
    run = next(r for r in plan if r.benchmark == "alpha" and r.method == "aduet")
    fields = run.record_fields()
    assert {k: fields[k] for k in ("run_id", "benchmark", "method", "rep", "order")} == {
        "run_id": run.run_id,
        "benchmark": "alpha",
        "method": "aduet",
        "rep": run.rep,
        "order": "".join(run.side_names),
    }
    assert RunSpec.from_dict(fields["spec"]) == run


def test_seed_keys_tell_the_parts_apart():
    assert seed_key("ab", "c") != seed_key("a", "bc")
    assert seed_key(1, "x") == seed_key("1", "x")  # parts are written as text
    assert 0 <= seed_key("rmit") < 2**64


def test_a_long_plan_is_printed_as_plain_text_and_as_json(tmp_path) -> None:
    """100 000 runs took minutes and 0.8 GB in a rich table: a plan longer than
    terminal.PLAIN_ROWS is printed as aligned plain text, every run on its line."""
    from tests.helpers import run_duet

    from duetbench.report.terminal import PLAIN_ROWS

    n = PLAIN_ROWS + 1
    cfg = tmp_path / "long.yml"
    cfg.write_text(
        f"experiment:\n  name: long\n  repetitions: {{aduet: {n}}}\n  default_artifacts: false\n"
        "benchmarks:\n  b: {command: 'true', iterations: 1}\n"
    )
    r = run_duet("plan", str(cfg))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert not any(c in r.stdout for c in "│┃┏━")  # no boxes
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "run"])
    rows = lines[header + 2 :]
    assert len(rows) == n and rows[0].split()[0] == "0" and rows[-1].split()[0] == str(n - 1)
    assert sorted(line.split()[1] for line in rows) == sorted(f"b.aduet.{i:03d}" for i in range(n))
    doc = json.loads(run_duet("plan", str(cfg), "--format", "json").stdout)
    assert [d["run_id"] for d in doc] == [line.split()[1] for line in rows]
    assert json.loads(json.dumps(RunSpec.from_dict(doc[0]).to_dict())) == doc[0]
