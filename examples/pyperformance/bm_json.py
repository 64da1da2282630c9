"""JSON: serialize and parse a nested document with the standard library's json.

Mostly C code (the ``_json`` accelerator) plus the Python-level encoder paths
taken by ``indent=`` and ``sort_keys=``.
"""

from __future__ import annotations

import json

from bench_common import run_benchmark

RECORDS = 300


def make_document(records: int = RECORDS) -> dict[str, object]:
    items = []
    for i in range(records):
        items.append(
            {
                "id": i,
                "name": f"item-{i:05d}",
                "label": "ünïcödé ✓" if i % 7 == 0 else "plain ascii",
                "price": round(i * 1.37, 2),
                "ratio": i / (records + 1),
                "active": i % 3 != 0,
                "parent": None if i % 5 else i // 5,
                "tags": [f"t{j}" for j in range(i % 6)],
                "dims": {"w": i % 13, "h": i % 17, "d": (i * 7) % 19},
            }
        )
    return {"version": 3, "source": "duetbench example", "items": items}


DOCUMENT = make_document()


def roundtrip(doc: dict[str, object] = DOCUMENT) -> int:
    compact = json.dumps(doc)
    pretty = json.dumps(doc, indent=2, sort_keys=True)
    back = json.loads(compact)
    again = json.loads(pretty)
    assert back == again
    return len(compact) + len(pretty)


if __name__ == "__main__":
    run_benchmark("json", roundtrip, loops=6, description=f"{RECORDS} records per loop")
