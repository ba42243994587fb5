"""The retriever's lease (benchmarks/on_device_lease.sh, issue 64), rehearsed on a CPU.

The same script a lease runs, on mathlib-src-mini at a toy width: packing here, then the bf16
ceiling, MLM and conventional CFR each probed and trained in its time limit, the encoder rounded
to bf16 and written in parts, with Ray, bm25s and FAISS made unimportable as on the device; then
here the parts reassembled into a CFR model folder that scores the check as it did there and
builds its index on the CPU. Only the GPU itself is not exercised."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import device_retriever as dr  # noqa: E402
from test_device_generator import BLOCKER  # noqa: E402

TINY = REPO / "configs" / "retriever" / "lease_tiny.yaml"


@pytest.fixture(scope="module")
def tiny(mini_root: Path, tmp_path_factory) -> tuple[Path, dict, list[str]]:
    overrides = [f"data.root={mini_root}", f"run_dir={tmp_path_factory.mktemp('run')}"]
    out = tmp_path_factory.mktemp("pack")
    return out, dr.pack(dr.load(TINY, overrides), out), overrides


def test_pack_holds_the_recipes_data_as_token_ids(tiny):
    from retriever.models.cfr import tokenize_texts
    from retriever.models.tokenizer import load_tokenizer
    from retriever.training.lease import TokenTable
    pack_dir, manifest, _ = tiny
    mlm = TokenTable.load(pack_dir / "mlm.npz")
    states, premises = TokenTable.load(pack_dir / "states.npz"), TokenTable.load(pack_dir / "premises.npz")
    assert mlm.ids.dtype == np.uint16  # a 4,000-token vocabulary: two bytes a token
    assert len(mlm) == manifest["mlm_texts"] and int(mlm.lengths.sum()) == manifest["mlm_tokens"]
    assert len(states) == manifest["pairs"] > 100 and len(premises) == manifest["premises"] == 9375
    assert mlm.lengths.max() <= 128 and states.lengths.max() <= 128 and premises.lengths.max() <= 64
    # The states are cut on the left (their goal kept), as CFREncoder tokenizes them.
    tok = load_tokenizer(pack_dir / "tokenizer")
    first = tokenize_texts(tok, manifest["check"]["states"][:1], 128, "left")[0]
    assert states.row(0).tolist() == first and first[0] == tok.cls_token_id and first[-1] == tok.sep_token_id
    positives = dr._positives(pack_dir / "positives.npz")
    assert len(positives) == len(states) and all(p and max(p) < len(premises) for p in positives)


def test_masking_keeps_special_tokens_and_follows_bert(tiny):
    from retriever.training.lease import mask_tokens
    torch.manual_seed(0)
    special = torch.tensor([0, 1, 2, 3, 4])
    ids = torch.randint(5, 100, (64, 128))
    ids[:, 0], ids[:, -8:] = 2, 0  # [CLS], pads
    inputs, labels = mask_tokens(ids, special, 4, 100, 0.15)
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, -8:].any()
    assert (labels[chosen] == ids[chosen]).all() and (inputs[~chosen] == ids[~chosen]).all()
    assert chosen.float().mean().item() == pytest.approx(0.15 * 120 / 128, abs=0.01)
    assert (inputs[chosen] == 4).float().mean().item() == pytest.approx(0.8, abs=0.03)


def test_rehearsal_trains_returns_and_scores_the_same(tiny, tmp_path, mini_root):
    pack_dir, manifest, overrides = tiny
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "RPACK": str(pack_dir), "RCONFIG": str(TINY), "WHEELS": str(tmp_path / "none"),
           "GPACK": str(tmp_path / "no-generator-pack"), "PYTHONPATH": str(block), "DEVICE_KIND": "rehearsal"}
    proc = subprocess.run(["bash", "benchmarks/on_device_lease.sh", "200", *overrides], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "retriever exit 0" in proc.stdout and "generator: not run" in proc.stdout
    # The timing, measured in the call: examples/s and the share of the ceiling, per stage.
    with tarfile.open(out / "retriever.tgz") as tar:
        result = json.loads(tar.extractfile(f"./{dr.RESULTS_STEM}.json").read())
        cfr_log = [json.loads(x) for x in tar.extractfile("./cfr-conventional/train_log.jsonl").read().splitlines()]
    assert result["ceiling"]["n"] == 128 and result["ceiling"]["tflops"] > 0 and result["device_kind"] == "rehearsal"
    for stage in ("pretrain", "cfr-conventional"):
        s = result["stages"][stage]
        assert 0 < s["steps"] <= s["planned_steps"] and s["examples_per_s"] > 0 and s["share_of_bf16_rate"] > 0
        assert s["probe"]["flops_per_example"] > 0 and s["probe"]["share_of_bf16_rate"] > 0
        assert s["partial"] == (s["stopped_by"] == "budget") == (s["steps"] < s["planned_steps"])
    assert cfr_log and all(np.isfinite(r["loss"]) for r in cfr_log)
    # The encoder came back in several parts, each within its limit, and nothing else is needed.
    parts = sorted(out.glob("retriever-part-*.safetensors"))
    assert len(parts) > 1 and [p.name for p in parts] == result["parts"]
    assert all(p.stat().st_size <= 0.05 * 1024 * 1024 for p in parts)
    # Reassembled here: it scores the check as it did there, and loads as any CFR model does.
    cfg = dr.load(TINY, overrides)
    landed = dr.land(out, pack_dir, cfg, tmp_path / "results")
    assert landed["score_check_max_diff"] <= 1e-5
    assert (tmp_path / "results" / f"{dr.RESULTS_STEM}.md").exists()
    records = {p.name for p in (tmp_path / "results" / "training").iterdir()}
    assert {"retriever-device-run.log", "retriever-device-pretrain-summary.json",
            "retriever-device-cfr-conventional-train_log.jsonl"} <= records
    from prover.data.dataset import Dataset
    from retriever.models.cfr import CFREncoder, CFRRetriever
    from retriever.training.lease import check_scores
    back = CFREncoder.from_pretrained(landed["model"])
    assert (back.similarity, back.state_truncation_side, back.max_premise_len) == ("conventional", "left", 64)
    from prover.utils.parts import part_metadata
    check = json.loads(part_metadata(parts[0])["check"])
    here = np.asarray(check_scores(back, check["states"], check["premises"]))
    assert np.abs(here - np.asarray(check["scores"])).max() <= 1e-5
    summary = json.loads((Path(cfg.run_dir) / "cfr-conventional" / "summary.json").read_text())
    assert summary["steps"] == result["stages"]["cfr-conventional"]["steps"] and summary["device_kind"] == "rehearsal"
    # The corpus embeddings are computed here, from the returned model (`prover retriever index`).
    from prover.commands.retriever_train_cfr import run_index
    recipe = str(REPO / "configs" / "retriever" / "device_tiny.yaml")
    assert run_index(recipe, overrides) == 0
    index = Path(cfg.run_dir) / "cfr-conventional" / "index"
    retriever = CFRRetriever(Dataset(mini_root).corpus(), landed["model"], index_path=index)
    assert retriever.premise_vectors.shape == (9375, 32)
    hits = retriever.retrieve(["n : ℕ\n⊢ n + 0 = n", "a b : ℕ\n⊢ a + b = b + a"], 10, [None, None])
    assert [len(h) for h in hits] == [10, 10]
    # The measurement after the lease, at toy size: a fusion fitted with the returned CFR, then
    # every row and both paired differences (the "shipped" run is this same one here: 0 exactly).
    from prover.config import load_config
    from retriever.settings import RetrieverTrainConfig
    from retriever.training.train_fusion import train_fusion
    train_fusion(load_config(RetrieverTrainConfig, recipe, overrides))
    scored = dr.compare("random/test", recipe, recipe, tmp_path / "results", "compare (test)", False, overrides, overrides)
    rows = {r["row"]: r for r in scored["rows"]}
    assert set(rows) == {"bm25", "cfr-conventional (lease)", "fusion (lease's CFR)", "fusion (shipped)"}
    assert all(0 <= r["R@10 95% CI"][0] <= r["R@10"] <= r["R@10 95% CI"][1] <= 1 for r in rows.values())
    cfr_bm25, fusions = scored["comparisons"]
    # Each of the three is rounded to 4 decimals, so they agree to within 1.5e-4.
    assert cfr_bm25["diff"] == pytest.approx(rows["cfr-conventional (lease)"]["R@10"] - rows["bm25"]["R@10"], abs=2e-4)
    assert fusions["diff"] == 0 and fusions["diff_ci"] == [0, 0]
    assert scored["members"]["device"] == ["bm25", "cfr-conventional"] and scored["n_theorems"] <= scored["n_queries"]
    assert (tmp_path / "results" / "retriever-lease-mathlib-src-mini-random-test.md").exists()


def test_dry_run_counts_what_travels_and_what_comes_back(tiny, capsys):
    pack_dir, _, _ = tiny
    cfg = dr.load(REPO / "configs" / "retriever" / "lease.yaml")
    assert dr.encoder_params(cfg) == pytest.approx(27.37e6, rel=0.01)  # device.yaml's width: 52 MiB in bf16
    phases = dr.planned_phases(cfg, 570)
    assert sum(phases.values()) == pytest.approx(570)
    retriever = sum(v for k, v in phases.items() if not k.startswith("generator"))
    assert 400 <= retriever <= 470  # about half of the 15-minute lease
    dr.plan(cfg, 570, pack_dir)
    printed = capsys.readouterr().out
    assert "MiB of the device tool's 64 MiB" in printed and "27.4M parameters, 52.2 MiB in bf16 (comes back" in printed
    assert "s  MLM training" in printed and "s  CFR training" in printed
