"""Plain ``bench_*`` functions and a pytest-benchmark-style test over the known-work package.

duet micro examples/micro/bench_known.py --a-path examples/micro/v_a --b-path examples/micro/v_b
"""

import knownver


def bench_100us():
    knownver.x2_100us()


def bench_5us():
    knownver.x2_5us()


def test_5ms(benchmark):
    benchmark(knownver.x2_5ms)
