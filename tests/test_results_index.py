"""benchmarks/results/README.md is the render of the results JSON, and the numbers README.md and
docs/*.md cite from results files are in it (the rule: prover/benchmarking/cited_numbers.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from prover.benchmarking.cited_numbers import doc_paths, index_numbers, violations
from prover.benchmarking.results_index import INDEX, RESULTS, SHIPPED, render

REPO = Path(__file__).resolve().parents[1]
STEPS = "retrieval-mathlib-src-random-test-cpu"  # the shipped recipe's random/test row


def test_the_committed_index_is_the_render_of_the_results_json():
    assert INDEX.read_text() == render(), \
        "benchmarks/results/README.md is stale: run `python benchmarks/results_index.py` and commit it"


def test_a_hand_edit_to_a_results_json_makes_the_committed_index_stale(tmp_path):
    for p in RESULTS.glob("*.json"):
        shutil.copy(p, tmp_path / p.name)
    assert render(tmp_path, SHIPPED) == INDEX.read_text()  # the copy renders as committed
    edited = json.loads((tmp_path / f"{STEPS}.json").read_text())
    fusion = next(r for r in edited["rows"] if r["retriever"] == "fusion")
    fusion["metrics"]["R@10"] += 0.01  # one point of R@10, by hand
    (tmp_path / f"{STEPS}.json").write_text(json.dumps(edited))
    assert render(tmp_path, SHIPPED) != INDEX.read_text()


def test_numbers_in_readme_and_docs_are_in_the_results_index():
    index = index_numbers(INDEX.read_text())
    found = [v for p in doc_paths(REPO) if p.exists()
             for v in violations(p.read_text(), index, str(p.relative_to(REPO)))]
    assert not found, (
        "numbers cited from results files that the results index (benchmarks/results/README.md) "
        "does not show; the rule is in prover/benchmarking/cited_numbers.py:\n" + "\n".join(found))


def _fused(index_text: str) -> str:
    """The shipped random/test row's R@10 and interval, as the index shows them."""
    row = next(line for line in index_text.splitlines() if f"({STEPS}.md)" in line
               and line.startswith("| fusion"))
    return row.split(" | ")[2]


def test_a_hand_edit_to_a_cited_number_fails_the_rule(tmp_path):
    index_text = INDEX.read_text()
    value = _fused(index_text)  # e.g. "50.7 [48.8, 52.8]"
    readme = tmp_path / "README.md"
    readme.write_text(
        f"On random/test the fusion reaches {value} (`benchmarks/results/{STEPS}.md`).\n\n"
        "<!-- results -->\n| split | fusion R@10 |\n|---|---|\n"
        f"| random/test | {value} |\n\n"
        "Uncited prose is not checked: 12.34.\n")
    index = index_numbers(index_text)
    assert violations(readme.read_text(), index) == []
    head = value.split()[0]
    bumped = f"{float(head) + 0.1:.1f}"
    # By hand, in the citing line, then in the marked table: each edit alone fails.
    text = readme.read_text()
    line_edit = text.replace(f"reaches {head}", f"reaches {bumped}")
    table_edit = text.replace(f"| random/test | {head}", f"| random/test | {bumped}")
    assert any(bumped in v for v in violations(line_edit, index))
    assert any("results -->" in v and bumped in v for v in violations(table_edit, index))
