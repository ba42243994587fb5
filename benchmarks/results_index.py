"""Write benchmarks/results/README.md, the index of the results files, from their JSON.

    python benchmarks/results_index.py
"""
from __future__ import annotations

import sys

from prover.benchmarking.results_index import INDEX, render


def main() -> int:
    INDEX.write_text(render())
    print(f"wrote {INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
