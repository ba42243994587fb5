"""Every script in benchmarks/ runs on the one harness (prover/benchmarking/harness.py): run as
`python benchmarks/NAME.py` with the project installed, no script edits sys.path, imports
another script, or is named like one of our packages (its folder comes first on the import path)."""
from __future__ import annotations

import ast
import json
import sys

from prover.benchmarking.harness import command_line, write_results
from tests.conftest import REPO

SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))
# A three-line forwarder to `prover benchmark` (a Ray job's entry point): that command line,
# not this file, reads the config and writes the results.
NOT_ON_THE_HARNESS = {"search_job"}


def imported_modules(path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_every_benchmark_script_imports_the_harness():
    assert len(SCRIPTS) > 25
    missing = {p.stem for p in SCRIPTS if "prover.benchmarking.harness" not in imported_modules(p)}
    assert missing == NOT_ON_THE_HARNESS


def test_no_script_edits_sys_path_or_imports_another_script():
    stems = {p.stem for p in SCRIPTS}
    for p in SCRIPTS:
        assert "sys.path" not in p.read_text(encoding="utf-8"), p.name
        others = {m for m in imported_modules(p) if m.split(".")[0] == "benchmarks" or m in stems}
        assert not others, f"{p.name} imports {others}: shared code belongs in prover/benchmarking/"


def test_no_script_shadows_a_package():
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert {"prover", "retriever", "generator"} <= packages
    assert not packages & {p.stem for p in SCRIPTS}


def test_write_results_writes_the_record_and_its_tables(tmp_path):
    result = {"benchmark": "x", "rows": [{"R@10": 0.5}], "note": "ü"}
    json_path, md_path = write_results(tmp_path / "sub" / "x-random-val", result, "| a |\n")
    assert json.loads(json_path.read_text(encoding="utf-8")) == result
    assert md_path.read_text(encoding="utf-8") == "| a |\n"
    # A file kept in its own layout (selection.json): indent 1 and a final newline.
    json_path, _ = write_results(tmp_path / "selection", result, "", indent=1)
    assert json_path.read_text(encoding="utf-8") == json.dumps(result, indent=1, ensure_ascii=False) + "\n"


def test_command_line_is_what_was_typed(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/ltr_fusion.py", "--data", "d"])
    assert command_line() == "python benchmarks/ltr_fusion.py --data d"
    assert command_line("benchmarks/x.py", ["a=1"]) == "python benchmarks/x.py a=1"


def test_a_close_call_keeps_what_is_shipped():
    """DEVELOPING.md's rule, on the choices where it arose: a select gain whose interval reaches
    zero keeps the shipped option; one above zero ships the winner."""
    from prover.benchmarking.harness import choose_within_noise, corrections_markdown
    assert choose_within_noise("statements", "steps", (-1.0, 1.7))[0] == "statements"  # fusion queries
    assert choose_within_noise("8 tactics", "32 tactics", (0.0, 7.5))[0] == "8 tactics"  # replay search
    kept, why = choose_within_noise("uniform", "steps-hard-bm25", [0.2, 4.1])
    assert kept == "steps-hard-bm25" and "above zero" in why
    assert choose_within_noise("a", "a", (-1, 1)) == ("a", "a is already the best on select")
    assert corrections_markdown({}) == []
    assert corrections_markdown({"corrections": ["x"]}) == ["", "## Corrections", "", "- x"]


def test_a_correction_is_added_to_the_json_and_its_markdown_once_and_numbers_stay(tmp_path):
    import json

    import pytest

    from prover.benchmarking.corrections import add_correction
    (tmp_path / "x.json").write_text(json.dumps({"rows": [{"em": 0.1}]}))
    (tmp_path / "x.md").write_text("# x\n\n| em |\n|---|\n| 10.0 |\n")
    entry = {"note": "scored on report for the second time", "look": 2}
    add_correction("x", entry, tmp_path)
    add_correction("x", entry, tmp_path)  # not twice
    result = json.loads((tmp_path / "x.json").read_text())
    assert result == {"rows": [{"em": 0.1}], "corrections": [entry]}
    assert (tmp_path / "x.md").read_text().endswith(
        "| 10.0 |\n\n## Corrections\n\n- scored on report for the second time\n")
    with pytest.raises(ValueError, match="note"):
        add_correction("x", {"look": 1}, tmp_path)
    # A family that renders its own corrections rewrites its Markdown from the JSON.
    add_correction("x", "a sentence", tmp_path, render=lambda r: f"{len(r['corrections'])} corrections\n")
    assert (tmp_path / "x.md").read_text() == "2 corrections\n"
