"""A pytest-benchmark suite over the known-work package (examples/micro/v_a, v_b): in v_b,
``p10_*`` do 1.10x the work of v_a's, ``aa_*`` the same (docs/micro.md, "Known answers").

    pytest examples/micro/pytest_suite --duet-a examples/micro/v_a --duet-b examples/micro/v_b
"""

import knownver
import pytest


@pytest.mark.parametrize("variant", ["p10", "aa"])
def test_known(benchmark, known, variant):
    fn = known(f"{variant}_100us")
    benchmark.extra_info["steps"] = fn.steps
    assert benchmark(fn) == knownver.spin(fn.steps)


class TestPedantic:
    def test_with_setup(self, benchmark, steps):
        calls = []

        def setup():
            calls.append(1)
            return (steps["p10_100us"],), {}

        benchmark.pedantic(knownver.spin, setup=setup, rounds=20, warmup_rounds=2)
        assert calls


def test_not_a_benchmark(steps):
    assert steps["aa_100us"] == 3_000
