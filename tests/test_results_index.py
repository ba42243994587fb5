"""benchmarks/results/README.md is the render of the results JSON, and the numbers README.md and
docs/*.md cite from results files are in it (the rule: prover/benchmarking/cited_numbers.py)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from prover.benchmarking.cited_numbers import (doc_paths, index_numbers, numbers, page_violations, violations,
                                               with_markdown)
from prover.benchmarking.results_index import INDEX, RESULTS, SHIPPED, MissingTrainingRecord, render

REPO = Path(__file__).resolve().parents[1]
STEPS = "structure-retrieval-mathlib-src-random-test-cfr"  # the shipped recipe's random/test row
NO_DATA = "; **no per-query data, and no line saying why**"  # what the index says of a file with neither


def test_the_committed_index_is_the_render_of_the_results_json():
    assert INDEX.read_text() == render(), \
        "benchmarks/results/README.md is stale: run `python benchmarks/results_index.py` and commit it"


def _copy_results(tmp_path: Path) -> None:
    """The results JSON, the registry of looks and the per-query folders the index reads."""
    for p in RESULTS.glob("*.json"):
        shutil.copy(p, tmp_path / p.name)
    shutil.copy(RESULTS / "looks.jsonl", tmp_path / "looks.jsonl")
    for layout in ("rankings", "outcomes", "per_query"):
        if (RESULTS / layout).is_dir():
            (tmp_path / layout).symlink_to(RESULTS / layout)


def test_a_hand_edit_to_a_results_json_makes_the_committed_index_stale(tmp_path):
    _copy_results(tmp_path)
    assert render(tmp_path, SHIPPED) == INDEX.read_text()  # the copy renders as committed
    edited = json.loads((tmp_path / f"{STEPS}.json").read_text())
    fusion = next(r for r in edited["rows"] if r["row"] == "fusion+structure")
    fusion["R@10"] += 0.01  # one point of R@10, by hand
    (tmp_path / f"{STEPS}.json").write_text(json.dumps(edited))
    assert render(tmp_path, SHIPPED) != INDEX.read_text()


def test_every_number_on_every_page_comes_from_a_results_file_or_is_marked():
    found = page_violations(REPO, INDEX.read_text(), RESULTS)
    assert not found, (
        "numbers on README.md or docs/*.md that no results file named on their line or in their "
        "section shows, and that are not marked as from the literature or the code; the rule is "
        "in prover/benchmarking/cited_numbers.py:\n" + "\n".join(found))


def _bumped(n: str) -> str:
    """A hand edit of `n`: one more in its last digit."""
    digits = len(n.split(".")[1]) if "." in n else 0
    return f"{float(n) + 10 ** -digits:.{digits}f}"


def test_a_hand_edited_number_fails_the_rule_on_every_page(tmp_path):
    index = with_markdown(index_numbers(INDEX.read_text()), RESULTS)
    for page in doc_paths(REPO):
        text = page.read_text()
        assert violations(text, index) == [], page.name
        # A new number, named nowhere, fails on any page (a copy of it).
        copy = tmp_path / page.name
        copy.write_text(text + "\nThis took 12.34 s on a quiet machine.\n")
        assert any("12.34" in v for v in violations(copy.read_text(), index)), page.name
        # And one cited number edited by hand fails where the page cites any.
        lines = text.splitlines()
        caught, checked, in_code = None, False, False
        for i, line in enumerate(lines):
            in_code ^= line.lstrip().startswith("```")
            if in_code or "<!--" in line or not numbers(line):
                continue
            checked = True
            raw = next(m for m in re.findall(r"\d[\d,]*(?:\.\d+)?", line) if m.replace(",", "") == numbers(line)[0].lstrip("-"))
            edited = lines[:i] + [line.replace(raw, _bumped(raw.replace(",", "")), 1)] + lines[i + 1:]
            if violations("\n".join(edited), index):
                caught = (i + 1, raw)
                break
        assert caught or not checked, f"{page.name}: no hand edit of a number was caught"


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


# The files an audit (issue 52) found built on budget-stopped models, which the index missed.
AUDITED_PARTIAL = [
    "retrieval-mathlib-src-novel_premises-test-cpu-recipeA", "retrieval-mathlib-src-novel_premises-test-cpu",
    "retrieval-mathlib-src-random-test-cpu-carB", "retrieval-mathlib-src-random-test-cpu-carC",
    "retrieval-mathlib-src-random-test-cpu-cfrL", "retrieval-mathlib-src-random-test-cpu-latency-quiet",
    "retrieval-mathlib-src-random-test-gpu-car-k1-20", "retrieval-mathlib-src-random-test-gpu",
    "retrieval-mathlib-src-random-test", "tactic-neighbors-selection-mathlib-src-leandojo-real-val",
    "candidate-ranker-mathlib-src-leandojo-real-select", "premise-ceiling-mathlib-src-leandojo-real-select",
    "generator-mathlib-src-leandojo-real-select-ra-s1000", "generator-mathlib-src-leandojo-real-select-ra-s1000-alone",
    "generator-mathlib-src-leandojo-real-select-ra-s1000-inst3", "real-halves-mathlib-src",
    "replay-compare-mathlib-src-leandojo-real-report-t32-vs-mathlib-src-leandojo-real-report",
    "replay-compare-mathlib-src-leandojo-real-select-t32-vs-mathlib-src-leandojo-real-select-t8",
    "replay-compare-mathlib-src-leandojo-real-val-vs-5fe09dc"]


def _row(index_text: str, stem: str) -> str:
    return next(line for line in index_text.splitlines() if line.startswith(f"| [{stem}]("))


def test_the_index_marks_every_audited_file_partial():
    index_text = INDEX.read_text()
    unmarked = [s for s in AUDITED_PARTIAL if "**partial model**" not in _row(index_text, s)]
    assert not unmarked
    # ... and a file on finished models stays unmarked: the shipped generator scored on report.
    assert "**partial model**" not in _row(index_text, "generator-mathlib-src-leandojo-real-report-cpu")


def test_partial_is_read_from_every_stage_and_from_the_files_a_result_was_computed_from(tmp_path):
    rows = [{"retriever": "cfr", "metrics": {"R@10": 0.5},
             "training": {"pretrain": {"steps": 10, "planned_steps": 10, "stopped_by": "end"},
                          "cfr": {"steps": 7, "planned_steps": 20, "stopped_by": "budget"}}}]
    (tmp_path / "a-random-test.json").write_text(json.dumps({"benchmark": "retrieval", "rows": rows}))
    (tmp_path / "b.json").write_text(json.dumps({"benchmark": "compare", "file": "benchmarks/results/a-random-test.json"}))
    (tmp_path / "c.json").write_text(json.dumps({"benchmark": "x", "corrections": [{"note": "n", "sources": ["b"]}]}))
    text = render(tmp_path, _no_shipped(tmp_path))
    for stem in ("a-random-test", "b", "c"):
        assert "cfr partial: stopped by its budget at step 7 of 20" in _row(text, stem)
        assert "pretrain partial" not in _row(text, stem)


def _no_shipped(tmp_path: Path) -> Path:
    p = tmp_path / "shipped.json"
    p.write_text(json.dumps({"description": "none", "shipped": []}))
    return p


def test_a_results_file_naming_a_model_without_its_training_record_fails_the_render(tmp_path):
    _copy_results(tmp_path)
    assert render(tmp_path, SHIPPED) == INDEX.read_text()
    named = json.loads((tmp_path / "generator-mathlib-src-leandojo-real-report-cpu.json").read_text())
    named["model_training"] = None  # the model it names, without its record
    (tmp_path / "generator-mathlib-src-leandojo-real-report-cpu.json").write_text(json.dumps(named))
    with pytest.raises(MissingTrainingRecord, match="generator-mathlib-src-leandojo-real-report-cpu"):
        render(tmp_path, SHIPPED)
    # A correction that adds the record makes it render again, marked by what the record says.
    named["corrections"] = [{"note": "its record", "models": {named["model"]: {
        "steps": 5, "planned_steps": 9, "stopped_by": "budget", "git_commit": "abc"}}}]
    (tmp_path / "generator-mathlib-src-leandojo-real-report-cpu.json").write_text(json.dumps(named))
    assert "at step 5 of 9" in _row(render(tmp_path, SHIPPED), "generator-mathlib-src-leandojo-real-report-cpu")


def test_the_index_shows_looks_inherited_daggers_units_and_a_role_for_every_file(tmp_path):
    setting = {"k": 50, "temperature": 3.0, "weight": 0.5}
    files = {
        "sel": {"benchmark": "generator_neighbors_selection", "split": "leandojo-real/val",
                "chosen": {**setting, "em": 0.1, "ci": [0.05, 0.15]}},
        "gen-leandojo-real-report": {
            "benchmark": "generator", "split": "leandojo-real/report", "neighbors": {**setting, "max_query_chars": 1},
            "rows": [{"condition": "none", "exact_match@8": 0.1, "exact_match@8_ci": [0.05, 0.15]}],
            "comparisons": [{"a": "gold", "b": "none", "metric": "gold_loglik", "diff": 2.5, "diff_ci": [2.04, 2.99]},
                            {"a": "gold", "b": "none", "metric": "exact_match@8", "diff": 0.0, "diff_ci": [-0.01, 0.02]}],
            "corrections": [{"note": "report scored the second time", "look": 2}]},
        "alone-leandojo-real-report": {"benchmark": "generator", "split": "leandojo-real/report", "neighbors": None},
        "own-look-leandojo-real-report": {"benchmark": "generator", "split": "leandojo-real/report", "look": 2},
        "timing": {"benchmark": "cli-startup"}}
    for stem, r in files.items():
        (tmp_path / f"{stem}.json").write_text(json.dumps(r))
    text = render(tmp_path, _no_shipped(tmp_path))
    gen = _row(text, "gen-leandojo-real-report")
    assert f"| leandojo-real/report† | report (second look); 1 correction(s) in the file{NO_DATA} |" in gen
    assert "gold − none (gold_loglik): [+2.04, +2.99] nats" in gen  # nats, not ×100
    assert "gold − none (exact_match@8): [-1.0, +2.0] pts" in gen and "[5.0, 15.0] %" in gen
    assert f"| leandojo-real/report | report{NO_DATA} |" in _row(text, "alone-leandojo-real-report")  # no neighbours, no †
    assert f"| report (second look){NO_DATA} |" in _row(text, "own-look-leandojo-real-report")  # the file's own look
    assert "| none (measures cost, no quality scored) | measure |" in _row(text, "timing")
