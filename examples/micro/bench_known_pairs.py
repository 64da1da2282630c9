"""The known 1.10x pair and its A/A pair, as ``bench_*`` functions (100 us each).

duet micro examples/micro/bench_known_pairs.py --a-path examples/micro/v_a --b-path examples/micro/v_b

Used by benchmarks/busy_machine_study.py: B does exactly 1.10x A's work in ``p10`` and
the same work in ``aa`` (examples/micro/README.md).
"""

import knownver


def bench_p10_100us():
    knownver.p10_100us()


def bench_aa_100us():
    knownver.aa_100us()
