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
    assert err.startswith("error: no corpus.jsonl in") and "\n" not in err
    assert main(["search", "--corpus", str(tmp_path)]) == 2
    assert "give one QUERY, or --queries FILE" in capsys.readouterr().err
