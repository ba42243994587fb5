"""Write benchmarks/results/README.md, the index of the results files, from their JSON.

    python benchmarks/results_index.py           # write it
    python benchmarks/results_index.py --check   # exit 1 if the committed one is stale
"""
from __future__ import annotations

import sys

from prover.benchmarking.harness import parser
from prover.benchmarking.results_index import INDEX, MissingTrainingRecord, render


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--check", action="store_true", help="only say whether the committed index is the render")
    args = p.parse_args(argv)
    try:
        text = render()
    except MissingTrainingRecord as e:  # the index does not render what it cannot mark
        print(f"error: {e}")
        return 1
    if args.check:
        stale = not INDEX.exists() or INDEX.read_text() != text
        print(f"{INDEX} is {'stale: run python benchmarks/results_index.py' if stale else 'current'}")
        return int(stale)
    INDEX.write_text(text)
    print(f"wrote {INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
