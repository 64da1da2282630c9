"""The shorter side of a synchronous duet runs the benchmark's own calls while it waits
for its go (docs/sync.md, "Waiting: fill, spin or block"): the rule that decides when a call fits,
by hand on a fake clock, and in real duets of duet micro."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import run_duet

from duetbench.micro.sampling import Filler

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "micro"
MS = 1_000_000


class Clock:
    """A fake ``perf_counter_ns``: the calls of the benchmark advance it."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def filler(clock: Clock, call_ms: float, calls: list[int] | None = None) -> Filler:
    def fn() -> None:
        clock.now += round(call_ms * MS)
        if calls is not None:
            calls.append(clock.now)

    return Filler(fn, clock=clock)


def wait(f: Filler, clock: Clock, go_ms: float, sample_ms: float = 8, evaluations: int = 1) -> int:
    """One handshake whose go comes ``go_ms`` after ready, as Handshake.wait drives ``f``:
    calls while go has not come and ``f`` accepts, then polling. The calls made."""
    f.arm(round(sample_ms * MS), evaluations)
    start, made = clock.now, 0
    while clock.now - start < go_ms * MS and f():
        made += 1
    clock.now = max(clock.now, start + round(go_ms * MS))  # polled until the go
    f.settle()
    return made


def test_no_call_before_a_sample_was_taken_or_a_wait_was_seen() -> None:
    clock = Clock()
    f = filler(clock, 8)
    f.arm()  # the first handshake: no sample yet
    assert not f()
    f.settle()
    assert f.calls == 0
    assert wait(f, clock, go_ms=8) == 0  # the first wait of 8 ms is learnt, not filled
    assert f.expected_ns == 8 * MS


def test_a_known_2x_fills_the_shorter_sides_waits_and_probes_one_in_nine() -> None:
    """A takes 8 ms, B 16 ms: A's waits are one call of A's each; the go comes during the
    call, so every ninth wait is polled to measure it exactly."""
    clock = Clock()
    f = filler(clock, 8)
    wait(f, clock, go_ms=8)
    made = [wait(f, clock, go_ms=8) for _ in range(27)]
    assert made == ([1] * Filler.PROBE + [0]) * 3
    assert f.expected_ns == 8 * MS


def test_many_short_calls_fill_a_long_wait_and_stop_in_time() -> None:
    """100 us calls in a 5 ms wait: calls while half of one fits, then polling."""
    clock = Clock()
    f = filler(clock, 0.1)
    wait(f, clock, go_ms=5, sample_ms=1, evaluations=10)
    made = wait(f, clock, go_ms=5, sample_ms=1, evaluations=10)
    assert 48 <= made <= 50
    assert f.expected_ns == 5 * MS


def test_equal_sides_do_not_fill_their_short_waits() -> None:
    """A/A: the waits are jitter, far shorter than half a call -- or, with short calls,
    longer than a call but a small part of the sample (0.3 ms of 1.4 ms, 7 calls of 0.2 ms:
    filled, the other side would then wait for this one's overrun, and so on)."""
    clock = Clock()
    f = filler(clock, 8)
    made = [wait(f, clock, go_ms=0.05) for _ in range(10)]
    assert made == [0] * 10
    f = filler(clock, 0.2)
    made = [wait(f, clock, go_ms=0.3, sample_ms=1.4, evaluations=7) for _ in range(10)]
    assert made == [0] * 10
    assert wait(f, clock, go_ms=1.4, sample_ms=1.4, evaluations=7) == 0  # one long wait
    made = [wait(f, clock, go_ms=1.4, sample_ms=1.4, evaluations=7) for _ in range(4)]
    assert made[-1] >= 5  # a 2x: waits as long as the sample are filled


def test_a_wait_that_shrank_costs_at_most_one_call_and_is_learnt() -> None:
    clock = Clock()
    f = filler(clock, 1.5)
    for _ in range(3):
        wait(f, clock, go_ms=20, sample_ms=1.5)
    for _ in range(3):  # the go now comes after 3 ms
        f.arm(round(1.5 * MS))
        start = clock.now
        while clock.now - start < 3 * MS and f():
            pass
        assert 0 <= clock.now - start - 3 * MS <= 1.5 * MS  # ran on at most one call
        clock.now = max(clock.now, start + 3 * MS)
        f.settle()
    assert 3 * MS <= f.expected_ns <= 4.5 * MS  # the median of the last five waits


def test_one_long_wait_does_not_start_the_filling_but_three_do() -> None:
    clock = Clock()
    f = filler(clock, 1)
    for _ in range(3):
        wait(f, clock, go_ms=0.05, sample_ms=1)
    assert wait(f, clock, go_ms=30, sample_ms=1) == 0  # the other side preempted once
    assert wait(f, clock, go_ms=0.05, sample_ms=1) == 0
    assert f.expected_ns < 0.5 * MS
    for _ in range(3):
        wait(f, clock, go_ms=30, sample_ms=1)
    assert f.expected_ns == 30 * MS
    assert wait(f, clock, go_ms=30, sample_ms=1) >= 29


def test_a_call_that_raises_ends_the_filling_not_the_run() -> None:
    clock = Clock()
    calls: list[int] = []

    def fn() -> None:
        clock.now += MS
        calls.append(clock.now)
        if len(calls) == 3:
            raise ValueError("exhausted")

    f = Filler(fn, clock=clock)
    wait(f, clock, go_ms=10, sample_ms=1)
    wait(f, clock, go_ms=10, sample_ms=1)
    assert f.error == "ValueError: exhausted"
    assert wait(f, clock, go_ms=10, sample_ms=1) == 0
    assert f.to_json() == {"calls": 2, "error": "ValueError: exhausted"}


def test_a_setup_is_run_before_each_call() -> None:
    clock = Clock()
    order: list[str] = []

    def prepare():
        order.append("setup")
        return lambda: (order.append("call"), setattr(clock, "now", clock.now + MS))

    f = Filler(None, prepare=prepare, clock=clock)
    wait(f, clock, go_ms=3, sample_ms=1)
    wait(f, clock, go_ms=3, sample_ms=1)
    assert order and order == ["setup", "call"] * (len(order) // 2)


def _meta(out: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {"A": [], "B": []}
    for path in sorted(out.rglob("micro-meta.json")):
        doc = json.loads(path.read_text())
        found[doc["side"]].append(doc)
    return found


@pytest.mark.parametrize("wait_mode", ["fill", "spin"])
def test_duet_micro_fills_the_shorter_sides_waits_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait_mode: str
) -> None:
    """A real sduet of the known 2x: A (the shorter side) runs calls in most of its waits,
    B in hardly any; with DUET_SYNC_WAIT=spin nobody does."""
    if wait_mode == "spin":
        monkeypatch.setenv("DUET_SYNC_WAIT", "spin")
    else:
        monkeypatch.delenv("DUET_SYNC_WAIT", raising=False)
    out = tmp_path / "out dir"
    done = run_duet(
        "micro", "knownver:x2_100us", "--a-path", "v_a", "--b-path", "v_b", "--method",
        "sduet", "--runs", "2", "--samples", "30", "-o", str(out), "--format", "json",
        cwd=EXAMPLE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = _meta(out)
    assert len(meta["A"]) == len(meta["B"]) == 2
    if wait_mode == "spin":
        assert all("fill" not in m for side in meta.values() for m in side)
        return
    fills = {side: [m["fill"] for m in docs] for side, docs in meta.items()}
    assert all(f["error"] is None for side in fills.values() for f in side), fills
    # A waits about a sample's length at every handshake and fills it with calls; B fills
    # only where A was slowed for a stretch (a loaded CI: A 48 calls, B 17, in one run)
    calls = {side: sum(f["calls"] for f in fs) for side, fs in fills.items()}
    assert calls["A"] >= 15 and calls["B"] < calls["A"], fills
