"""A small, real CPU workload: N rounds of integer arithmetic in pure Python."""

import sys


def work(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1_000_003
    return acc


if __name__ == "__main__":
    print(work(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
