"""Issue 62: every results file the index lists has its per-query data committed (or says why
not and how to regenerate them), and a report split's look is counted from the registry of
scorings, never written as a constant."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from prover.benchmarking.looks import REGISTRY, entries, look_of, take_look
from prover.benchmarking.per_query import layout_files, read_per_query, status, write_per_query
from prover.benchmarking.results_index import INDEX, RESULTS, SHIPPED, load_results, render, scored_splits

REPO = Path(__file__).resolve().parents[1]


def _statuses(results_dir: Path = RESULTS) -> dict[str, tuple[str, str]]:
    results = load_results(results_dir)
    layouts = layout_files(results_dir, list(results))
    return {stem: status(stem, results, scored_splits(stem, r), results_dir, layouts) for stem, r in results.items()}


def test_every_file_the_index_lists_has_per_query_data_or_says_why_not():
    index = INDEX.read_text()
    statuses = _statuses()
    listed = [stem for stem in statuses if f"[{stem}]({stem}.md)" in index]
    assert len(listed) == len(statuses) > 100  # the index lists every file
    lacking = [stem for stem in listed if statuses[stem][0] == "none"]
    assert not lacking, ("results files with neither per-query data nor a line saying why and how to "
                         "regenerate them (prover/benchmarking/per_query.py):\n" + "\n".join(lacking))
    for stem, (kind, what) in statuses.items():
        if kind == "missing":  # the line names a command
            assert "Regenerate: `" in what and len(what.split("Regenerate: `")[1]) > 10, stem
        if kind == "committed" and what != "in the file":
            for path in what.split(", "):
                assert (RESULTS / path).stat().st_size < 5 * 2**20, path  # the per-file limit


def test_a_quoted_row_without_per_query_data_fails(tmp_path):
    """A file that scores a split, with no per-query data and no line saying why, is caught; the
    line (a correction) or the data each make it pass."""
    r = {"benchmark": "retrieval", "split": "leandojo-real/report",
         "rows": [{"retriever": "bm25", "metrics": {"R@10": 0.2}}]}
    (tmp_path / "x-leandojo-real-report.json").write_text(json.dumps(r))
    assert _statuses(tmp_path)["x-leandojo-real-report"][0] == "none"
    r["corrections"] = [{"note": "no per-query data", "per_query": {"missing": "why", "regenerate": "python b.py"}}]
    (tmp_path / "x-leandojo-real-report.json").write_text(json.dumps(r))
    assert _statuses(tmp_path)["x-leandojo-real-report"][0] == "missing"
    del r["corrections"]
    r["per_query"] = write_per_query(tmp_path / "x-leandojo-real-report", [{"query": 0, "R@10": 0.2}])
    (tmp_path / "x-leandojo-real-report.json").write_text(json.dumps(r))
    assert _statuses(tmp_path)["x-leandojo-real-report"] == ("committed", "per_query/x-leandojo-real-report.jsonl.gz")
    assert read_per_query(r["per_query"], tmp_path) == [{"query": 0, "R@10": 0.2}]
    # The older layout: rankings/STEM-ROW.jsonl.gz, owned by the longest stem it starts with.
    (tmp_path / "x-leandojo-real-report-cfr.json").write_text(json.dumps({**r, "per_query": None}))
    (tmp_path / "rankings").mkdir()
    (tmp_path / "rankings" / "x-leandojo-real-report-cfr-bm25.jsonl.gz").write_bytes(b"")
    assert _statuses(tmp_path)["x-leandojo-real-report-cfr"] == ("committed", "rankings/x-leandojo-real-report-cfr-bm25.jsonl.gz")
    # A file that scores no split (a timing) needs none.
    (tmp_path / "timing.json").write_text(json.dumps({"benchmark": "cli-startup"}))
    assert _statuses(tmp_path)["timing"][0] == "measure"


def test_write_per_query_is_byte_stable(tmp_path):
    a = write_per_query(tmp_path / "a" / "s", [{"b": 1, "a": [1, 2]}])
    b = write_per_query(tmp_path / "b" / "s", [{"a": [1, 2], "b": 1}])
    assert (tmp_path / "a" / a).read_bytes() == (tmp_path / "b" / b).read_bytes()


def _constant_looks(source: str) -> list[str]:
    """Places a benchmark script asserts a look: `"scored_once": True`, or `look` given a
    literal number (as a dict entry, a keyword or an assignment)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value in ("scored_once", "look") and isinstance(v, ast.Constant):
                    found.append(f"{k.value}: {v.value!r} (line {node.lineno})")
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) \
                        and t.slice.value in ("scored_once", "look"):
                    found.append(f"[{t.slice.value!r}] = {node.value.value!r} (line {node.lineno})")
        if isinstance(node, ast.Tuple):  # a table of runs with their looks written in
            if any(isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.startswith(("first look", "second look"))
                   for e in node.elts):
                found.append(f"a look written as words (line {node.lineno})")
    return found


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "benchmarks").glob("*.py")))
def test_no_benchmark_asserts_its_look(script):
    assert not _constant_looks((REPO / "benchmarks" / script).read_text()), script


def test_a_constant_look_is_caught():
    assert _constant_looks('result = {"scored_once": True}')
    assert _constant_looks('result["look"] = 1')
    assert _constant_looks('benches = (("q", 2, "second look at the report half"),)')
    assert not _constant_looks('result.update(take_look(stem, bench, split, commit, tag))')


def test_looks_are_counted_from_the_registry(tmp_path):
    registry = tmp_path / "looks.jsonl"
    first = take_look("s-report", "structure-retrieval", "leandojo-real/report", "aaa", "default", registry)
    assert first == {"look": 1, "earlier_looks": []}
    assert take_look("s-select", "structure-retrieval", "leandojo-real/select", "aaa", "default", registry)["look"] is None
    other = take_look("t-report", "additive-twins", "leandojo-real/report", "bbb", "default", registry)
    assert other["look"] == 1  # another benchmark's scoring is its own
    again = take_look("s-report-cfr", "structure-retrieval", "leandojo-real/report", "ccc", "cfr", registry)
    assert again["look"] == 2 and again["earlier_looks"] == [{"stem": "s-report", "git_commit": "aaa", "setting": "default"}]
    # A rerun that overwrites its file keeps the earlier line: the third look.
    assert take_look("s-report-cfr", "structure-retrieval", "leandojo-real/report", "ddd", "cfr", registry)["look"] == 3
    assert look_of("s-report-cfr", "ccc", registry) == 2 and look_of("s-report-cfr", "ddd", registry) == 3
    assert len(entries(registry)) == 4  # the select split is not counted


def test_the_index_shows_structures_cfr_rows_as_second_looks():
    """The audit's item 2: structure was scored on report and both test splits, changed, and
    scored again with CFR."""
    index = INDEX.read_text()
    for split in ("leandojo-real-report", "random-test", "novel_premises-test"):
        stem = f"structure-retrieval-mathlib-src-{split}"
        # The rows without CFR came first (some rerun since for their per-query data, later
        # looks again); the CFR rows after them are never first looks.
        assert look_of(stem, None) == 1
        assert look_of(f"{stem}-cfr", load_results()[f"{stem}-cfr"]["git_commit"]) > 1
        row = next(line for line in index.splitlines() if line.startswith(f"| [{stem}-cfr]("))
        assert "look" in row and "first look" not in row, row
    headline = [line for line in index.splitlines() if line.startswith("| fusion+structure")]
    assert len(headline) == 3 and all("look" in line for line in headline)


def test_the_registry_is_where_the_index_reads_looks_from(tmp_path):
    """The committed index renders from the committed registry: a copy without it differs."""
    for p in RESULTS.glob("*.json"):
        (tmp_path / p.name).write_text(p.read_text())
    for layout in ("rankings", "outcomes", "per_query"):
        if (RESULTS / layout).is_dir():
            (tmp_path / layout).symlink_to(RESULTS / layout)
    (tmp_path / REGISTRY.name).write_text(REGISTRY.read_text())
    assert render(tmp_path, SHIPPED) == INDEX.read_text()
    (tmp_path / REGISTRY.name).unlink()
    assert render(tmp_path, SHIPPED) != INDEX.read_text()
