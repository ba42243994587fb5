"""`python -m prover.benchmarking.readme_numbers`: every number of README.md's Results section
recomputes from committed files (issue 62), and the command catches a hand edit and a file
whose numbers disagree with its per-query data."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from prover.benchmarking.readme_numbers import README, check, main, recompute, results_section
from prover.benchmarking.harness import RESULTS_DIR

REPO = Path(__file__).resolve().parents[1]
GENERATOR = "generator-mathlib-src-leandojo-real-report-cpu-select"


def test_the_documented_command_recomputes_every_cited_file(capsys):
    """Every results file README's Results section names is recomputed from its per-query data
    (`--require-all` fails on one read only as it writes its numbers)."""
    assert main(["--require-all"]) == 0, capsys.readouterr().out[-3000:]
    out = capsys.readouterr().out
    assert f"{GENERATOR}: recomputed from outcomes/" in out
    assert "read as the file writes them" not in out and "; not:" not in out
    cited_files = [line.split(":", 1)[0] for line in out.splitlines() if ": recomputed" in line]
    assert len(cited_files) >= 10 and "informal-queries-batch2-mathlib-src-report" in cited_files
    assert "python -m prover.benchmarking.readme_numbers" in results_section(README.read_text())


def test_a_file_read_only_as_written_fails_require_all(tmp_path, capsys, monkeypatch):
    import prover.benchmarking.readme_numbers as rn
    monkeypatch.setattr(rn, "recompute", lambda stem, results=RESULTS_DIR: ("read as the file writes them", set(), []))
    monkeypatch.setattr(rn, "_COMMITTED", {})
    text = "\n## Results\n\nA row (`benchmarks/results/real-halves-mathlib-src.md`).\n"
    monkeypatch.setattr(rn, "README", tmp_path / "README.md")
    (tmp_path / "README.md").write_text(text)
    assert rn.main([]) == 0 and rn.main(["--require-all"]) == 1
    assert "real-halves-mathlib-src: not recomputed" in capsys.readouterr().out


def test_search_replay_and_informal_records_recompute_and_catch_an_edit(tmp_path):
    """Two more forms: each theorem's outcome held in the file (search-replay), and each query's
    metrics held in the file (informal_dense, intervals over intent groups)."""
    for stem, edit, says in (
            ("search-replay-mathlib-src-leandojo-real-report",
             lambda r: r["rows"][2]["rate_ci"].__setitem__(0, 0.01), "none recomputes"),
            ("informal-dense-mathlib-src-report",
             lambda r: r["comparisons"][0]["ci"].__setitem__(0, 0.0), "(R@10) recomputes")):
        how, numbers, bad = recompute(stem)
        assert how.startswith("recomputed") and not bad and numbers
        result = json.loads((RESULTS_DIR / f"{stem}.json").read_text())
        edit(result)
        (tmp_path / f"{stem}.json").write_text(json.dumps(result))
        assert any(says in b for b in recompute(stem, tmp_path)[2]), stem


def test_the_generator_row_is_recomputed_from_its_outcomes():
    how, numbers, bad = recompute(GENERATOR)
    assert how.startswith("recomputed") and not bad
    # README's 9.7 against 8.9, and their paired difference, come out of the outcome files.
    assert {"9.7", "6.6", "12.8", "8.9", "5.8", "12.5", "0.8", "-1.2", "2.9"} <= numbers


def test_a_hand_edited_number_in_the_section_fails():
    text = README.read_text()
    _, problems = check(text)
    assert not problems
    edited = text.replace("9.7 [6.6, 12.8]", "97.7 [6.6, 12.8]", 1)
    assert edited != text
    _, problems = check(edited)
    assert any("97.7" in p for p in problems)


def test_a_file_that_disagrees_with_its_outcomes_fails(tmp_path):
    shutil.copy(RESULTS_DIR / f"{GENERATOR}.json", tmp_path / f"{GENERATOR}.json")
    (tmp_path / "outcomes").symlink_to(RESULTS_DIR / "outcomes")
    result = json.loads((tmp_path / f"{GENERATOR}.json").read_text())
    result["rows"][0]["exact_match@8"] += 0.01  # one point by hand
    (tmp_path / f"{GENERATOR}.json").write_text(json.dumps(result))
    _, _, bad = recompute(GENERATOR, tmp_path)
    assert any("exact_match@8 recomputes" in b for b in bad)


def test_per_query_rows_recompute_from_top10_and_gold(tmp_path):
    """A per_query/ file (structure's layout): R@10 is recomputed from each query's top 10 and gold,
    the row's mean and interval and the paired difference from those; an edited row fails."""
    import numpy as np
    from prover.benchmarking.harness import mean_interval, paired_intervals
    from prover.benchmarking.per_query import write_per_query
    rng = np.random.default_rng(0)
    records = []
    for i in range(60):
        gold = [int(g) for g in rng.choice(50, 2, replace=False)]
        rows = {}
        for row in ("fusion", "fusion+structure"):
            top = [int(t) for t in rng.permutation(50)[:10]]
            rows[row] = {"top10": top, "R@10": len(set(gold) & set(top)) / 2}
        records.append({"query": i, "theorem": f"t{i // 3}", "gold": gold, "rows": rows})
    stem = "structure-retrieval-x-leandojo-real-report"
    result = {"benchmark": "structure-retrieval", "per_query": write_per_query(tmp_path / stem, records), "rows": []}
    theorems = [r["theorem"] for r in records]
    values = {row: np.asarray([r["rows"][row]["R@10"] for r in records]) for row in ("fusion", "fusion+structure")}
    for row, v in values.items():
        result["rows"].append({"row": row, "R@10": round(float(v.mean()), 4),
                               "R@10 95% CI": [round(x, 4) for x in mean_interval(v, clusters=theorems)]})
    d = paired_intervals(values["fusion+structure"], values["fusion"], clusters=theorems).diff
    result["comparisons"] = [{"a": "fusion+structure", "b": "fusion", "metric": "R@10",
                              "diff": round(float(values["fusion+structure"].mean() - values["fusion"].mean()), 4),
                              "ci": [round(d[0], 4), round(d[1], 4)]}]
    (tmp_path / f"{stem}.json").write_text(json.dumps(result))
    how, numbers, bad = recompute(stem, tmp_path)
    assert how == f"recomputed from per_query/{stem}.jsonl.gz" and not bad
    assert f"{100 * result['rows'][0]['R@10']:.1f}" in numbers
    result["comparisons"][0]["ci"][0] -= 0.01
    (tmp_path / f"{stem}.json").write_text(json.dumps(result))
    assert any("fusion+structure − fusion (R@10) recomputes" in b for b in recompute(stem, tmp_path)[2])
    records[0]["rows"]["fusion"]["R@10"] = 1.0 - records[0]["rows"]["fusion"]["R@10"]  # not what its top 10 says
    write_per_query(tmp_path / stem, records)
    assert any("differs from its top 10 and gold" in b for b in recompute(stem, tmp_path)[2])
