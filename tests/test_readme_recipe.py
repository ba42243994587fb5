"""The README's retriever recipe, as written, at tiny sizes: it builds the first stage that
ships (cpu.yaml's fusion over conventional CFR), and that fusion, served as
configs/serve/cpu.yaml serves it, answers a query with no file from the state, not from the
corpus's own order (issue 48: served without a file, every real state got Aesop.Nanos first).
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from conftest import REPO, require
from prover.cli import main
from prover.config import load_config
from retriever.settings import RetrieverTrainConfig

CPU = "configs/retriever/cpu.yaml"
README = (REPO / "README.md").read_text()


def recipe_lines() -> list[list[str]]:
    """The README's `prover retriever ...` lines that name cpu.yaml, in the README's order: the
    recipe as the stage commands write it (the section for a user with Lean repeats `pretrain`
    on LeanDojo Benchmark 4, a `data.root=` override, which is not this recipe's data)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.split("#", 1)[0])
            if words[:2] == ["prover", "retriever"] and CPU in words and not any("=" in w for w in words):
                lines.append(words)
    return lines


@pytest.fixture(scope="module")
def recipe_run(tmp_path_factory, mini_root, one_thread, monkeypatch_module):
    """Each line run as written (in the repository, as the README's lines are), with the tiny
    sizes' data and a few steps: what is tested is that the stages fit together."""
    run = tmp_path_factory.mktemp("retriever-cpu")
    tiny = [f"data.root={mini_root}", f"run_dir={run}", "tokenizer.vocab_size=4000",
            "pretrain.max_steps=10", "pretrain.checkpoint_every=1000",
            "cfr.max_steps=15", "cfr.checkpoint_every=1000", "fusion.folds=1"]
    monkeypatch_module.chdir(REPO)
    ran = []
    for words in recipe_lines():
        assert main([*words[1:], *tiny]) == 0, words
        ran.append(words[2])
    return run, ran


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_readme_recipe_trains_what_the_shipped_fusion_fuses(recipe_run):
    run, ran = recipe_run
    assert ran == ["pretrain", "train-cfr", "index", "train-fusion"]
    shipped = load_config(RetrieverTrainConfig, str(REPO / CPU))
    fitted = json.loads((run / "fusion" / "model.json").read_text())
    assert fitted["members"] == list(shipped.fusion.members)
    assert "cfr-conventional" in fitted["members"]
    # train-cfr trained the CFR the fusion loads, and index indexed that one.
    assert json.loads((run / "cfr-conventional" / "summary.json").read_text())["similarity"] == "conventional"
    assert (run / "cfr-conventional" / "index").is_dir() and not (run / "cfr").exists()


def real_states(data_root: Path, corpus) -> list[str]:
    """States of LeanDojo's real random/val records whose tactic used a premise of `corpus`."""
    names = {p.full_name for p in corpus.premises}
    records = json.loads((require(data_root / "mathlib-src" / "leandojo-real" / "val.json")).read_text())
    return [t["state_before"] for r in records for t in r["traced_tactics"]
            if any(a["full_name"] in names for a in t["annotated_tactic"][1])]


def test_served_fusion_without_a_file_answers_from_the_state(recipe_run, mini_root, data_root):
    from prover.commands.serve import serve_config
    from prover.serve.service import SearchService
    run, _ = recipe_run
    # configs/serve/cpu.yaml, pointed at this run and corpus as --index/--corpus do.
    cfg = serve_config(str(REPO / "configs/serve/cpu.yaml"), str(run), str(mini_root), None, None, None,
                       [f"retriever.models={REPO / CPU}", "retriever.device=cpu"])
    service = SearchService(cfg)
    try:
        health = service.health()
        assert health["retrievers"] == ["fusion", "bm25"] and health["rerank"] is False  # no CAR needed
        corpus = service._loaded.corpus
        states = real_states(data_root, corpus)
        assert len(states) >= 100
        # What a prior ordered by a file lists when there is none: the corpus's first premises,
        # Aesop's (Aesop/Nanos.lean, Aesop/Util/UnionFind.lean, ...).
        head = {p.full_name for p in corpus.premises[:100]}
        assert "Aesop.Nanos" in head
        tops = [service.search(s, 10).hits for s in states]
        assert all(len(t) == 10 for t in tops)
        assert not [t for t in tops if head & {h.premise.full_name for h in t}]
        aesop = [t for t in tops if any(corpus.files[corpus.premise_file[h.index]]
                                        .startswith(".lake/packages/aesop/") for h in t)]
        assert len(aesop) <= 0.02 * len(states)  # BM25's rare lexical match, not every query
        # With a file, every member votes and only what the file may use is ranked.
        with_file = service.search(states[0], 10, file_path="Mathlib/Order/Basic.lean")
        assert with_file.context is not None and len(with_file.hits) == 10
    finally:
        service.close()


def test_fusion_context_benchmark_scores_the_run_with_and_without_a_file(recipe_run, mini_root, tmp_path):
    """benchmarks/fusion_context.py, the script for the CPU recipe's row on leandojo-real/select,
    on this run and mini random/val: without a file the fusion keeps above BM25 alone, and above
    the fusion whose file-bound members still vote (what shipped before issue 48)."""
    from conftest import benchmark_script
    run, _ = recipe_run
    script = benchmark_script("fusion_context")
    script.main(["--config", str(REPO / CPU), "--run-dir", str(run), "--split", "random/val",
                 "--results-dir", str(tmp_path), "--allow-dirty", f"data.root={mini_root}"])
    result = json.loads((tmp_path / "fusion-context-mathlib-src-mini-random-val.json").read_text())
    rows = {r["row"].split(" (")[0] + (" (no file)" if "no file" in r["row"] else "")
            + (" before" if "before" in r["row"] else ""): r for r in result["rows"]}
    assert result["n_queries"] == 111
    with_file, no_file = rows["fusion"]["R@10"], rows["fusion (no file)"]["R@10"]
    before = rows["fusion (no file) before"]
    assert with_file > no_file > rows["bm25 (no file)"]["R@10"]
    assert no_file > before["R@10"]
    assert rows["fusion (no file)"]["top 10 with a corpus-head premise"] == 0.0
    assert before["top 10 with a corpus-head premise"] > 0.9


def test_structure_and_additive_benchmarks_fuse_the_runs_cfr(recipe_run, mini_root, tmp_path):
    """benchmarks/structure_retrieval.py and additive_twins.py with `--run-dir` of a trained run:
    the run's cfr-conventional is a member of every fusion (none is left out), its saved twin
    vectors are re-encoded from each premise text, and the rule for close calls names the
    member set that wins."""
    from conftest import benchmark_script
    run, _ = recipe_run
    common = ["--config", str(REPO / CPU), "--run-dir", str(run), "--split", "random/test", "--out", str(tmp_path),
              "--allow-dirty", f"data.root={mini_root}"]
    benchmark_script("structure_retrieval").main([*common, "--choose", "--latency-queries", "3"])
    result = json.loads((tmp_path / "structure-retrieval-mathlib-src-mini-random-test.json").read_text())
    assert result["members"] == [m for m in load_config(RetrieverTrainConfig, str(REPO / CPU)).fusion.members
                                 if m != "structure"]
    assert "cfr-conventional" in result["members"] and result["left_out_untrained"] == {}
    assert result["chosen_members"] in ("+".join(result["members"]), "+".join(result["members"] + ["structure"]))
    assert "on select" in result["decision"] or "already the best" in result["decision"]
    benchmark_script("additive_twins").main(common)
    added = json.loads((tmp_path / "additive-twins-mathlib-src-mini-random-test.json").read_text())
    assert "cfr-conventional" in added["members"] and added["twins"]["twins"] > 100
    assert {c["row"] for c in added["comparisons"]} == {"bm25", "structure", "fusion", "fusion+structure"}
