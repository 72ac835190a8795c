"""Write the held-out splits of ``examples/smollm2_mix.yaml``'s arithmetic sources.

``data/sums_{train,test}.jsonl``: the 100 sums of two 1-digit numbers, 20 held out for test
(those with ``(10a + b) % 5 == 2``). ``data/products_{train,test}.jsonl``: the 45 products
``a x b`` with ``1 <= a <= b <= 9``, 10 held out (``(a + b) % 4 == 1``).
``data/diffs_{train,test}.jsonl``: the 55 differences ``a - b`` with ``0 <= b <= a <= 9``, 15
held out (``(a + 2b) % 4 == 3``). No task is in both splits of a file pair (validation refuses
a split that shares one with training).
"""

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def _write(name: str, rows: list[dict]) -> None:
    (DATA / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def main() -> None:
    """Write the four files (overwrites them)."""
    DATA.mkdir(exist_ok=True)
    sums = [(a, b) for a in range(10) for b in range(10)]
    held = [(a, b) for a, b in sums if (10 * a + b) % 5 == 2]
    for split, pairs in (("train", [p for p in sums if p not in held]), ("test", held)):
        rows = [
            {"task_id": f"sum/{a}+{b}", "prompt": f"What is {a} + {b}?", "answer": a + b}
            for a, b in pairs
        ]
        _write(f"sums_{split}.jsonl", rows)
    prods = [(a, b) for a in range(1, 10) for b in range(a, 10)]
    held = [(a, b) for a, b in prods if (a + b) % 4 == 1]
    for split, pairs in (("train", [p for p in prods if p not in held]), ("test", held)):
        rows = [
            {"task_id": f"mul/{a}x{b}", "prompt": f"What is {a} times {b}?", "answer": str(a * b)}
            for a, b in pairs
        ]
        _write(f"products_{split}.jsonl", rows)
    diffs = [(a, b) for a in range(10) for b in range(a + 1)]
    held = [(a, b) for a, b in diffs if (a + 2 * b) % 4 == 3]
    for split, pairs in (("train", [p for p in diffs if p not in held]), ("test", held)):
        rows = [
            {"task_id": f"diff/{a}-{b}", "prompt": f"What is {a} minus {b}?", "answer": a - b}
            for a, b in pairs
        ]
        _write(f"diffs_{split}.jsonl", rows)


if __name__ == "__main__":
    main()
