"""Write examples/data/sums.jsonl: every sum of two 1-digit numbers (100 tasks).

The tiny and SmolLM2 examples train on it through ``envhub.make("gsm8k", dataset=...)``:
the gsm8k environment's verifier, this easy data.
"""

import json
from pathlib import Path


def main() -> None:
    """Write the file (overwrites it)."""
    path = Path(__file__).parent / "data" / "sums.jsonl"
    path.parent.mkdir(exist_ok=True)
    with open(path, "w") as f:
        for a in range(10):
            for b in range(10):
                row = {"task_id": f"sum/{a}+{b}", "prompt": f"What is {a} + {b}?", "answer": a + b}
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
