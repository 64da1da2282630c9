"""N-body: a few gravitating bodies integrated with a simple symplectic Euler step.

Pure-Python float arithmetic on lists, with attribute-free inner loops.
Initial conditions are drawn from a fixed seed, so every run does the same work.
"""

from __future__ import annotations

import random

from bench_common import run_benchmark

BODIES = 6
STEPS = 3_000
DT = 0.001


def initial_system(count: int, seed: int = 20260) -> list[list[float]]:
    """[x, y, z, vx, vy, vz, mass] per body; a heavy central body at rest first."""
    rng = random.Random(seed)
    bodies = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 40.0]]
    for _ in range(count - 1):
        pos = [rng.uniform(-5.0, 5.0) for _ in range(3)]
        vel = [rng.uniform(-0.5, 0.5) for _ in range(3)]
        bodies.append([*pos, *vel, rng.uniform(0.01, 0.1)])
    return bodies


def total_energy(bodies: list[list[float]]) -> float:
    energy = 0.0
    for i, (x, y, z, vx, vy, vz, m) in enumerate(bodies):
        energy += 0.5 * m * (vx * vx + vy * vy + vz * vz)
        for x2, y2, z2, _, _, _, m2 in bodies[i + 1 :]:
            dx, dy, dz = x - x2, y - y2, z - z2
            energy -= m * m2 / (dx * dx + dy * dy + dz * dz) ** 0.5
    return energy


def simulate(steps: int = STEPS, dt: float = DT) -> float:
    bodies = initial_system(BODIES)
    pairs = [(a, b) for i, a in enumerate(bodies) for b in bodies[i + 1 :]]
    for _ in range(steps):
        for a, b in pairs:
            dx = a[0] - b[0]
            dy = a[1] - b[1]
            dz = a[2] - b[2]
            dist2 = dx * dx + dy * dy + dz * dz
            scale = dt / (dist2 * dist2**0.5)
            ma = a[6] * scale
            mb = b[6] * scale
            a[3] -= dx * mb
            a[4] -= dy * mb
            a[5] -= dz * mb
            b[3] += dx * ma
            b[4] += dy * ma
            b[5] += dz * ma
        for body in bodies:
            body[0] += dt * body[3]
            body[1] += dt * body[4]
            body[2] += dt * body[5]
    return total_energy(bodies)


if __name__ == "__main__":
    run_benchmark(
        "nbody",
        simulate,
        loops=2,
        description=f"{BODIES} bodies, {STEPS} steps per loop",
    )
