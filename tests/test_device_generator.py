"""The lent-GPU generator run (benchmarks/on_device_generator.sh), rehearsed on a CPU.

The same script a lease runs, end to end on mathlib-src-mini at toy sizes: packing here, then
sizing, training, the four premise conditions on two splits, replay search in one process and
the results writer, with Ray, bm25s and FAISS made unimportable as on the device. Only the GPU
itself is not exercised."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import device_generator as dg  # noqa: E402
from generator.settings import NeighborsConfig  # noqa: E402

BLOCKER = """
import importlib.abc, sys
BLOCKED = {"ray", "bm25s", "faiss", "lean_dojo", "lean_interact", "fastapi", "uvicorn", "lightgbm"}
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not on the device image")
sys.meta_path.insert(0, _Block())
"""


@pytest.fixture(scope="module")
def tiny_pack(mini_root: Path, tmp_path_factory) -> tuple[Path, dict]:
    cfg = dg.load(REPO / "configs" / "generator" / "device_tiny.yaml",
                  [f"data.root={mini_root}", f"run_dir={tmp_path_factory.mktemp('run')}"])
    out = tmp_path_factory.mktemp("pack")
    return out, dg.pack(cfg, out)


def test_pack_holds_every_state_the_run_asks_about(tiny_pack):
    out, manifest = tiny_pack
    assert manifest["train_pairs"] > 1000 and manifest["pool"]
    assert manifest["eval_splits"]["random/test"]["examples"] == 12
    lookup = dg.load_json(out / "lookup.json.gz")
    assert len(lookup["replay"]) == manifest["replay_theorems"] == 4
    nearest = {state for state, _ in lookup["neighbors"]["nearest"]}
    rows = dg.read_rows(out / "eval-random-test.jsonl.gz")
    from prover.env.base import normalize_ws
    assert all(normalize_ws(r["state"]) in nearest for r in rows)  # no neighbour lookup can miss
    assert all(len(r["fusion"]) == 5 for r in rows)  # lease.retriever.k premises of the fusion per state
    # Training inputs like test inputs (issue 54): premises on every example, as many as fit of
    # k, the gold ones hidden at the rate the fusion misses them on the rate split.
    match, aug = manifest["retrieval_match"], manifest["augment"]
    assert match["split"] == "random/val" and match["with_gold"] > 0
    assert 0 < match["gold_shown_given_gold"] < 1 and 0 < match["premises_shown_mean"] <= 5
    assert match["premises_shown_mean_by_text"]["full"] < match["premises_shown_mean_by_text"]["name"]
    # The rate shown in training, after the byte budget's cut, is the test's: the draw's rate is
    # the test rate over the share of drawn positives that survive the cut.
    assert 0 < match["train_gold_survival"] <= 1
    rate = min(1.0, round(match["gold_shown_given_gold"] / match["train_gold_survival"], 4))
    assert manifest["config"]["augment"] == {**manifest["config"]["augment"], "max_premises": 5,
                                             "without_premises": "negatives", "positive_rate": rate}
    assert aug["without_premises"] == 0 and aug["premises_shown_mean"] > 1
    assert 0 < aug["positives_per_example"]["0"] < aug["with_positives"]  # some gold tactics shown none
    assert aug["inputs_with_gold"] / aug["with_positives"] == pytest.approx(match["gold_shown_given_gold"], abs=0.1)
    train = dg.read_rows(out / "train.jsonl.gz")
    assert all(len(r) == 3 and r[0].endswith(r[2]) and len(r[2]) < len(r[0]) for r in train[:50])
    # The replay theorems' reachable states all have premises packed (their initial state at least).
    for r in lookup["replay"]:
        assert any(k.startswith(r["key"] + "\n") for k in lookup["premises"])


def test_rehearsal_runs_the_device_script_end_to_end(tiny_pack, tmp_path, mini_root):
    pack_dir, _ = tiny_pack
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PACK": str(pack_dir), "WHEELS": str(tmp_path / "no-wheels"),
           "CONFIG": "configs/generator/device_tiny.yaml", "PYTHONPATH": str(block), "DEVICE_KIND": "rehearsal",
           "PROVER_DATA": str(mini_root.parent)}
    proc = subprocess.run(["bash", "benchmarks/on_device_generator.sh", "240", f"run_dir={tmp_path / 'run'}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "run exit 0" in proc.stdout
    landed = tmp_path / "results"
    written = dg.land(out / "results.tgz", landed)
    assert written
    sizing = json.loads((landed / "generator-sizing-device.json").read_text())
    assert sizing["ceiling"]["tflops"] > 0 and sizing["ceiling"]["n"] == 128
    assert [r["variant"] for r in sizing["variants"]] == ["sdpa", "eager+fp32"]
    assert [r["size"] for r in sizing["rows"]] == ["toy-a", "toy-b"]
    assert all(r["examples_per_s"] > 0 and r["params"] > 0 and r["share_of_bf16_rate"] > 0 and r["flops_per_example"] > 0
               and r["fused_adamw"] for r in sizing["variants"] + sizing["rows"])
    assert {r["variant"] for r in sizing["rows"]} == {sizing["variant"]}
    assert sizing["chosen"] == dg.choose_size(sizing["rows"], 0.5)["size"]
    fusion = "bm25+usage+neighbors-tactic"
    for split in ("random-test", "random-val"):
        em = json.loads((landed / f"generator-mathlib-src-mini-{split}-device.json").read_text())
        assert [r["condition"] for r in em["rows"]] == ["neighbors", "none", "gold", fusion, "alone-none", "alone-gold",
                                                        f"alone-{fusion}", "bare-none", "bare-alone-none"], em["absent"]
        assert all(r["device_kind"] == "rehearsal" and r["n"] == 12 for r in em["rows"])
        assert [r.get("neighbours_mixed") for r in em["rows"]] == [None, True, True, True, False, False, False, True, False]
        assert em["training_throughput"]["examples_per_s"] > 0 and em["training_throughput"]["share_of_bf16_rate"] > 0
        pairs = {(c["a"], c["b"]) for c in em["comparisons"] if c["metric"] == "exact_match@4"}
        assert {("gold", "none"), (fusion, "none"), (fusion, "neighbors"), ("alone-gold", "alone-none"),
                (f"alone-{fusion}", "alone-none"), (fusion, "bare-none"), (f"alone-{fusion}", "bare-alone-none")} <= pairs
        assert em["bootstrap"]["paired_over"] == "theorems"
        assert em["bare_model_training"]["steps"] == em["model_training"]["steps"]
        assert (landed / "outcomes" / f"generator-mathlib-src-mini-{split}-device-gold.jsonl.gz").exists()
        assert (landed / "outcomes" / f"generator-mathlib-src-mini-{split}-device-bare-none.jsonl.gz").exists()
    rp = json.loads((landed / "search-replay-mathlib-src-mini-random-test-device.json").read_text())
    assert [r["row"] for r in rp["rows"]][1:] == ["bm25+usage+neighbors-tactic", "none"]
    assert rp["n_theorems"] == 4 and all(r["theorems"] == 4 for r in rp["rows"])
    assert [(c["a"], c["b"]) for c in rp["comparisons"]] == [("bm25+usage+neighbors-tactic", "none")]
    assert rp["rows"][1]["premise_lookup_misses"] == 0 and rp["neighbour_lookup_misses"] == 0
    assert "not pass@1" in (landed / "search-replay-mathlib-src-mini-random-test-device.md").read_text()
    with tarfile.open(out / "train.tgz") as tar:
        summary = json.loads(tar.extractfile("train/summary.json").read())
        bare = json.loads(tar.extractfile("train-bare/summary.json").read())
    assert bare["steps"] == summary["steps"] and bare["planned_steps"] == summary["steps"]
    # The model came back in parts beside the archives; reassembled here it scores as it did there.
    parts = sorted(out.glob("model-part-*.safetensors"))
    assert len(parts) > 1 and summary["brought_back"]["parts"] == [p.name for p in parts]
    assert all(p.stat().st_size <= 0.05 * 1024 * 1024 for p in parts)
    model_dir = dg.land_model(out, tmp_path / "model")
    from generator.evaluate import EvalExample, evaluate_condition
    from generator.model import TacticGenerator
    back = TacticGenerator.load(model_dir)
    rows = dg.read_rows(pack_dir / "eval-random-test.jsonl.gz")
    examples = [EvalExample(r["theorem"], r["file_path"], None, r["state"], r["tactic"], (), 0) for r in rows]
    again = evaluate_condition(back, examples, [[] for _ in rows], 4, 16)
    em = json.loads((landed / "generator-mathlib-src-mini-random-test-device.json").read_text())
    there = next(r for r in em["rows"] if r["condition"] == "alone-none")
    assert again["exact_match@4"] == there["exact_match@4"]
    # The rows there were scored with the weights already rounded to bf16, as they came back.
    assert again["gold_loglik"] == pytest.approx(there["gold_loglik"], abs=1e-4)
    # The plan comes from the probe; on a busy CPU the guard may stop it first, and then it says so.
    assert 0 < summary["steps"] <= summary["planned_steps"]
    assert summary["partial"] == (summary["stopped_by"] == "budget") == (summary["steps"] < summary["planned_steps"])
    assert summary["size"] == sizing["chosen"]


def test_the_lease_reads_the_retriever_choice_and_the_search_budget_as_their_own_settings(tmp_path):
    """`lease.retriever` is a RetrieverConfig and `lease.search` a SearchConfig; the keys they
    replaced (lease.fusion, lease.k, lease.max_expansions, lease.search_timeout_s) fail in one
    line naming the new key, from the file or the command line."""
    from prover.search.best_first import SearchConfig
    from retriever.settings import RetrieverConfig
    cfg = dg.load(REPO / "configs" / "generator" / "device.yaml")
    choice, search = OmegaConf.to_object(cfg.lease.retriever), OmegaConf.to_object(cfg.lease.search)
    assert isinstance(choice, RetrieverConfig) and (choice.name, choice.k) == ("bm25+usage+neighbors-tactic", 10)
    assert isinstance(search, SearchConfig) and (search.max_expansions, search.timeout_s) == (16, 300.0)
    tiny = dg.load(REPO / "configs" / "generator" / "device_tiny.yaml", ["lease.retriever.k=3"])
    assert (tiny.lease.retriever.k, tiny.lease.search.max_expansions) == (3, 2)
    with pytest.raises(SystemExit, match=r"lease.k in the command line is now lease.retriever.k"):
        dg.load(REPO / "configs" / "generator" / "device.yaml", ["lease.k=5"])
    old = tmp_path / "old.yaml"
    old.write_text("lease:\n  search_timeout_s: 30\n")
    with pytest.raises(SystemExit, match=r"lease.search_timeout_s in .*old.yaml is now lease.search.timeout_s"):
        dg.load(old)


def test_a_deadline_leaves_rows_absent_with_the_reason(tmp_path):
    """Past the deadline no condition starts, and the files still say which and why."""
    clock = dg.Clock(0.0)
    gen = SimpleNamespace(pool=[], input_cfg=SimpleNamespace(max_bytes=256))
    frozen = SimpleNamespace(cfg=NeighborsConfig(k=5), distribution=lambda s: {})
    ctx = {"lease": OmegaConf.structured(dg.LeaseConfig(exact_match_at=4)), "commit": "0000000-test", "machine": {}, "kind": "",
           "dataset": "d", "fusion": "f", "command": "c", "train_pairs": 1, "train_split": "random/train",
           "training": {"params": 1}}
    rows = [{"key": "a.lean::t#0", "theorem": "t", "file_path": "a.lean", "state": "⊢ True", "tactic": "trivial",
             "gold": [], "fusion": []}]
    dg.em_split(gen, frozen, "random/test", rows, ctx, clock, tmp_path)
    result = json.loads((tmp_path / "generator-d-random-test-device.json").read_text())
    assert result["rows"] == [] and set(result["absent"]) == {"neighbors", "none", "gold", "f", "alone-none", "alone-gold",
                                                               "alone-f", "bare-none", "bare-alone-none"}
    assert all("deadline" in why for c, why in result["absent"].items() if not c.startswith("bare-"))
    assert result["absent"]["bare-none"] == "no model was trained without premises"


def test_dry_run_counts_what_travels_and_plans_each_phase(tiny_pack, capsys):
    pack_dir, _ = tiny_pack
    cfg = dg.load(REPO / "configs" / "generator" / "device.yaml")
    total, parts = dg.travelling_bytes(dg.REPO, [pack_dir])
    assert parts[f"carry:{pack_dir}"] == dg.folder_bytes(pack_dir) > 0
    assert total == sum(parts.values())
    phases = dg.planned_phases(cfg, 570)
    assert sum(phases.values()) == pytest.approx(570) and phases["train (premises)"] > 60
    assert dg.planned_phases(cfg, 450)["train (premises)"] < phases["train (premises)"]  # a short deadline trains less
    roomy = dg.planned_phases(cfg, 900)  # more than one call: the no-premise model gets the rest
    assert roomy["train (premises)"] == cfg.lease.train_seconds and roomy["train (no premises, same steps: only if time is left)"] > 0
    dg.plan(cfg, 570, pack_dir)
    printed = capsys.readouterr().out
    assert "MiB of the device tool's 64 MiB" in printed and "s  train (premises)" in printed
    assert "s  bf16 ceiling" in printed and "s  model parts" in printed
    assert "t5-25m" in printed and "byt5-small" in printed and "too large to come back" in printed
