"""Float objects: build many small point objects, normalize them, reduce them.

Exercises object allocation, attribute access and float math (sin, cos, sqrt)
rather than raw arithmetic.
"""

from __future__ import annotations

import math

from bench_common import run_benchmark

POINTS = 20_000


class Point:
    def __init__(self, t: float) -> None:
        self.x = math.cos(t) * (1.0 + t / POINTS)
        self.y = math.sin(t) * 2.0
        self.z = t * 0.001

    def length(self) -> float:
        return math.sqrt(self.x * self.x + self.y * self.y + self.z * self.z)

    def scale(self, factor: float) -> None:
        self.x *= factor
        self.y *= factor
        self.z *= factor


def helix(count: int = POINTS) -> tuple[float, float, float]:
    points = [Point(i * 0.01) for i in range(count)]
    for p in points:
        norm = p.length()
        if norm:
            p.scale(1.0 / norm)
    hi = [-math.inf, -math.inf, -math.inf]
    for p in points:
        hi[0] = max(hi[0], p.x)
        hi[1] = max(hi[1], p.y)
        hi[2] = max(hi[2], p.z)
    return hi[0], hi[1], hi[2]


if __name__ == "__main__":
    run_benchmark("float", helix, loops=2, description=f"{POINTS} points per loop")
