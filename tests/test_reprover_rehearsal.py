"""ReProver's comparison rehearsed without Lean (issue 59): a tiny T5 saved where the Hugging
Face cache keeps ReProver's retrieval-augmented checkpoint (config, tokenizer; its folder names
the hub id, which is how its format is known) runs `prover -v benchmark --config
configs/search/reprover.yaml --theorems minif2f` end to end on the REPL stand-in
(tests/fake_repl), with `none` and `bm25`; each theorem's first state's input is recorded and
shown under -v, in ReProver's layout, and the summary carries the comparison table."""
from __future__ import annotations

import json
import logging

from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

from generator.input_format import RETRIEVAL_AUGMENTED
from prover.cli import main
from tests.conftest import REPO
from tests.test_minif2f_project_corpus import make_minif2f_project
from tests.test_repl_commands import fake_lean, repl_overrides  # noqa: F401 - the fixture


def hub_layout_checkpoint(root):
    """A tiny T5 saved as `huggingface-cli download` leaves ReProver's checkpoint."""
    snap = root / "hub" / f"models--{RETRIEVAL_AUGMENTED.replace('/', '--')}" / "snapshots" / "0"
    tok = ByT5Tokenizer()
    config = T5Config(vocab_size=len(tok), d_model=8, d_ff=16, num_layers=1, num_decoder_layers=1, num_heads=1,
                      d_kv=8, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    T5ForConditionalGeneration(config).save_pretrained(snap)
    tok.save_pretrained(snap)
    return snap


def test_reprover_comparison_rehearsed_on_the_repl_stand_in(fake_lean, caplog):  # noqa: F811
    make_minif2f_project(fake_lean / "project")
    model = hub_layout_checkpoint(fake_lean)
    out = fake_lean / "out"
    caplog.set_level(logging.DEBUG, logger="prover.search.benchmark")
    code = main(["-v", "benchmark", "--config", str(REPO / "configs" / "search" / "reprover.yaml"),
                 "--theorems", "minif2f", "--split", "test", "--retriever", "none,bm25",
                 "--generator", str(model), "--out", str(out),
                 f"theorems.minif2f_path={fake_lean / 'minif2f.json'}", f"retriever.corpus_cache={fake_lean / 'c'}",
                 "retriever.device=cpu", "generator.device=cpu", "generator.num_tactics=2",
                 "generator.num_beams=2", "search.max_expansions=1", "search.timeout_s=120",
                 "ray.num_workers=1", "ray.worker_cpus=0.25", "ray.retriever_cpus=0.5", "ray.generator_cpus=0.5",
                 "ray.retriever_gpus=0", "ray.generator_gpus=0", "ray.local_num_cpus=2", "ray.object_store_mb=128",
                 *repl_overrides(fake_lean)])
    assert code == 0
    shown = "\n".join(r.getMessage() for r in caplog.records)
    for run in ("repl-none", "repl-bm25"):
        records = {r["theorem"]: r for r in map(json.loads, (out / run / "results.jsonl").read_text().splitlines())}
        assert set(records) == {"foo", "test"}
        for r in records.values():
            assert r["first_input"] in shown  # -v shows the exact bytes
    none = {r["theorem"]: r for r in map(json.loads, (out / "repl-none" / "results.jsonl").read_text().splitlines())}
    bm25 = {r["theorem"]: r for r in map(json.loads, (out / "repl-bm25" / "results.jsonl").read_text().splitlines())}
    assert none["foo"]["first_input"] == "x : ℕ\n⊢ x = x"  # the same generator, no premises
    text = bm25["foo"]["first_input"]
    assert text.endswith("\n\nx : ℕ\n⊢ x = x") and "<a>" in text  # ReProver's layout, names marked
    premises = text[: -len("x : ℕ\n⊢ x = x")].split("\n\n")
    assert all(p.startswith(("theorem ", "")) for p in premises)
    assert "<a>Nat.succ_ne_self</a>" in text or "<a>eq_self_iff_true</a>" in text
    summary = (out / "summary.md").read_text()
    assert "paired with `none` and `reprover`" in summary and "| repl-bm25 | 0 / 2 |" in summary
