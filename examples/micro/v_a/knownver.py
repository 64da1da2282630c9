"""Known-work package, version A (the baseline): every function does the base work.

Functions are named ``<variant>_<size>``: variants ``aa``, ``p1``, ``p3``, ``p10``,
``x2`` and sizes ``5us``, ``100us``, ``5ms`` (about that long per call on a
2020s x86 core under CPython 3.11). In this version every variant of a size
does the same work; in ``../v_b`` the variants do 1.00x, 1.01x, 1.03x, 1.10x
and 2x of it. Work is a count of steps of one pure-Python loop, so the ratio
of work between the versions is exact (:data:`WORK`).
"""

BASE_STEPS = {"5us": 100, "100us": 3_000, "5ms": 150_000}
#: variant -> (numerator, denominator) of its work relative to the base
FACTORS = {"aa": (1, 1), "p1": (1, 1), "p3": (1, 1), "p10": (1, 1), "x2": (1, 1)}


def spin(steps):
    """``steps`` rounds of a small linear congruential generator: the unit of work."""
    x = 1
    for _ in range(steps):
        x = (x * 5 + 1) & 0xFFFF
    return x


def _work(steps):
    def work():
        return spin(steps)

    work.steps = steps
    return work


#: function name -> steps of the loop it runs
WORK = {}
for _variant, (_num, _den) in FACTORS.items():
    for _size, _base in BASE_STEPS.items():
        WORK[_variant + "_" + _size] = _base * _num // _den
        globals()[_variant + "_" + _size] = _work(WORK[_variant + "_" + _size])
