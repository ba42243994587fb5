"""Every committed retrieval row agrees with an independent computation from its rankings file.

Deliberately does not import retriever.metrics: the definitions are re-implemented here,
naively, from the rankings alone (gold names, gold modules, same-module count, ranked list).
Rows, trained ones included, are found from the results files themselves, so a new row is
checked (or must be listed as lacking rankings) without editing this test.
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
RESULTS_FILES = sorted(RESULTS.glob("retrieval-*.json"))
KS = (1, 5, 10)

# Rows whose rankings were not committed (written on a lent GPU machine, only the JSON came
# back). Listed exactly, so a new row without rankings fails below instead of going unchecked.
WITHOUT_RANKINGS = {
    ("retrieval-mathlib-src-random-test-gpu", "cfr"),
    ("retrieval-mathlib-src-random-test-gpu", "cfr-conventional"),
    ("retrieval-mathlib-src-random-test-gpu", "cfr-conventional+car"),
    ("retrieval-mathlib-src-random-test-gpu-car-k1-20", "cfr-conventional+car"),
    ("retrieval-mathlib-src-random-test-gpu-car-k1-20", "cfr-conventional+car-only"),
}


def rankings_path(stem: str, retriever: str) -> Path:
    return RESULTS / "rankings" / f"{stem}-{retriever}.jsonl.gz"


def deduped(ranked: list[str]) -> list[int]:
    """Indices of each name's first occurrence: later copies do not count."""
    seen: set[str] = set()
    keep = []
    for i, name in enumerate(ranked):
        if name not in seen:
            seen.add(name)
            keep.append(i)
    return keep


def recall_at(row: dict, k: int) -> float:
    names = [row["ranked"][i] for i in deduped(row["ranked"])]
    return len(set(names[:k]) & set(row["gold"])) / len(set(row["gold"]))


def ndcg_at(row: dict, k: int) -> float:
    gold, modules = set(row["gold"]), set(row["gold_modules"])
    dcg = 0.0
    for rank, i in enumerate(deduped(row["ranked"])[:k], start=1):
        name, module = row["ranked"][i], row["ranked_modules"][i]
        rel = 1.0 if name in gold else (0.3 if module in modules else 0.0)
        dcg += rel / math.log2(rank + 1)
    ideal = sorted([1.0] * len(gold) + [0.3] * row["n_same_module"], reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg


def reciprocal_rank(row: dict) -> float:
    """1 / rank of the first gold premise in the stored (deduplicated) list, 0 if none."""
    gold = set(row["gold"])
    for rank, i in enumerate(deduped(row["ranked"]), start=1):
        if row["ranked"][i] in gold:
            return 1.0 / rank
    return 0.0


def recomputed(rankings: list[dict]) -> dict[str, float]:
    out = {}
    for k in KS:
        out[f"R@{k}"] = sum(recall_at(x, k) for x in rankings) / len(rankings)
        out[f"nDCG@{k}"] = sum(ndcg_at(x, k) for x in rankings) / len(rankings)
    out["MRR"] = sum(reciprocal_rank(x) for x in rankings) / len(rankings)
    return out


def test_every_retrieval_results_file_is_checked():
    assert len(RESULTS_FILES) >= 10  # the glob found the committed files, not an empty folder


@pytest.mark.parametrize("path", RESULTS_FILES, ids=lambda p: p.stem)
def test_committed_rows_match_independent_computation(path: Path):
    result = json.loads(path.read_text())
    assert result["rows"], path
    for row in result["rows"]:
        rankings_file = rankings_path(path.stem, row["retriever"])
        if not rankings_file.exists():
            assert (path.stem, row["retriever"]) in WITHOUT_RANKINGS, \
                f"{path.stem} row {row['retriever']} has no rankings file, so it cannot be checked"
            continue
        rankings = [json.loads(line) for line in gzip.open(rankings_file, "rt")]
        assert len(rankings) == row["n_queries"] == result["n_queries"], row["retriever"]
        expected = recomputed(rankings)
        for key, value in expected.items():
            assert row["metrics"][key] == pytest.approx(value, abs=1e-6), (row["retriever"], key)


def test_rows_without_rankings_are_exactly_the_listed_ones():
    missing = {(p.stem, row["retriever"]) for p in RESULTS_FILES
               for row in json.loads(p.read_text())["rows"]
               if not rankings_path(p.stem, row["retriever"]).exists()}
    assert missing == WITHOUT_RANKINGS


def test_the_selection_file_is_what_its_sources_say_and_the_shipped_config_took_its_choice():
    import importlib.util
    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    spec = importlib.util.spec_from_file_location("selection", RESULTS.parent / "selection.py")
    selection = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(selection)
    committed = json.loads((RESULTS / "selection.json").read_text())
    assert committed["choices"] == json.loads(json.dumps(selection.car_choices() + selection.other_choices()))
    d = next(c for c in committed["choices"] if c["choice"].startswith("CAR recipe D"))
    best = max(d["tried"], key=lambda t: t["val_R@10"])
    assert d["chosen"]["val_R@10"] == best["val_R@10"]  # chosen by validation, nothing else
    car = load_config(RetrieverTrainConfig, str(RESULTS.parents[1] / "configs" / "retriever" / "cpu-car.yaml"), []).car
    assert (car.k1, car.first_stage_weight) == (d["chosen"]["k1"], d["chosen"]["first_stage_weight"])
