"""`prover search` (issue 51): informal queries answered from the terminal, one or many."""
from __future__ import annotations

import json

from prover.cli import main


def test_search_json_hits_with_matched_words(mini_root, capsys):
    assert main(["search", "addition is associative", "--k", "10", "--json", "--corpus", str(mini_root)]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 10 and {"full_name", "score", "matched", "doc", "statement"} <= set(hits[0])
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    add_assoc = next(h for h in hits if h["full_name"] == "add_assoc")
    assert "associative→assoc" in add_assoc["matched"]


def test_search_many_queries_in_one_process(mini_root, tmp_path, capsys):
    qf = tmp_path / "q.txt"
    qf.write_text("addition is associative\n\n$a \\le b$ and $b \\le a$ imply $a = b$\n", encoding="utf-8")
    assert main(["search", "--queries", str(qf), "--k", "5", "--corpus", str(mini_root)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["query"] for r in lines] == ["addition is associative", "$a \\le b$ and $b \\le a$ imply $a = b$"]
    assert all(len(r["hits"]) == 5 for r in lines)
    assert "le" in lines[1]["hits"][0]["matched"]  # \\le read as the notation ≤, as a name says it


def test_search_bad_input_is_one_line(tmp_path, capsys):
    assert main(["search", "x", "--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --corpus {tmp_path}: no corpus.jsonl there") and "\n" not in err
    assert main(["search", "--corpus", str(tmp_path)]) == 2
    assert "give one QUERY, or --queries FILE" in capsys.readouterr().err


def test_search_without_a_data_folder_falls_back_to_the_demo_library(tmp_path, monkeypatch, capsys):
    """No mathlib-src in the data folder (a user's first day): the demo library, said in one
    line naming the folder and the command that fills it (issue 61: it failed on ../shared)."""
    monkeypatch.setenv("PROVER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PROVER_CACHE", str(tmp_path / "cache"))
    assert main(["search", "addition is commutative", "--k", "3"]) == 0
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.startswith("search:")]
    assert len(err) == 1 and f"no corpus at {tmp_path / 'data' / 'mathlib-src'}" in err[0]
    assert "prover data extract PATH/TO/mathlib4" in err[0] and "searching the bundled demo library" in err[0]
    assert captured.out.splitlines()[0].split()[:2] == ["1.", "Demo.MyNat.add_comm"]
    assert main(["search", "addition is commutative", "--k", "3", "--corpus", "demo"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["1.", "Demo.MyNat.add_comm"]
