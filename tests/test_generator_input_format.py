"""A generator's input format belongs to the model (issue 59): saved with ours, known for
ReProver's published checkpoints, and a model that reads no premises is never handed any."""
from __future__ import annotations

import json

import pytest

from generator.input_format import FORMATS, RETRIEVAL_AUGMENTED, WITHOUT_RETRIEVAL, input_config
from generator.model import Suggestion, TacticGenerator, clean_marked, fresh_model
from generator.settings import InputConfig, ModelConfig
from prover.cli import main
from prover.data.premise import Premise
from tests.conftest import REPO

TINY = ModelConfig(d_model=8, d_ff=16, num_layers=1, num_decoder_layers=1, num_heads=1, d_kv=8)
PREMISE = Premise("Nat.add_comm", "Init/Core.lean", (1, 1), (1, 2), "theorem",
                  "theorem add_comm (n m : ℕ) : n + m = m + n", ("(n m : ℕ)",), "n + m = m + n")


def test_published_checkpoints_are_known_by_hub_id_and_cache_folder(tmp_path):
    assert input_config(RETRIEVAL_AUGMENTED) == FORMATS["reprover"]
    assert input_config(WITHOUT_RETRIEVAL).reads_premises is False
    snap = tmp_path / f"models--{RETRIEVAL_AUGMENTED.replace('/', '--')}" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    assert input_config(snap).layout == "reprover"
    assert input_config("google/byt5-small") == InputConfig()  # not one of ReProver's: ours
    assert input_config(snap, "project") == InputConfig()  # the setting wins
    with pytest.raises(ValueError, match="input_format"):
        input_config(snap, "reprover-ish")


def test_ours_save_their_format_and_keep_it(tmp_path):
    gen = TacticGenerator(fresh_model(TINY), InputConfig(max_bytes=300))
    gen.save_pretrained(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "input_config.json").read_text())
    assert saved["layout"] == "project" and saved["reads_premises"] is True
    loaded = TacticGenerator.load(tmp_path / "m")
    text, kept = loaded.input_text("⊢ 1 + 1 = 2", [PREMISE])
    assert kept == 1 and text == "Nat.add_comm <VAR> (n m : ℕ) <GOAL> n + m = m + n\n⊢ 1 + 1 = 2"


def test_a_bare_model_is_never_handed_premises():
    gen = TacticGenerator(fresh_model(TINY), FORMATS["reprover-no-premises"])
    assert gen.input_text("⊢ 1 + 1 = 2", [PREMISE]) == ("⊢ 1 + 1 = 2", 0)
    gen = TacticGenerator(fresh_model(TINY), FORMATS["reprover"])
    assert gen.input_text("⊢ 1 + 1 = 2", [PREMISE]) == (
        "theorem <a>Nat.add_comm</a> (n m : ℕ) : n + m = m + n\n\n⊢ 1 + 1 = 2", 1)


def test_outputs_cleaned_as_reprover_cleans_them():
    got = clean_marked([Suggestion("rw [<a>Nat.add_comm</a>]", -0.5), Suggestion("simp", -1.0),
                        Suggestion("rw [Nat.add_comm]", -2.0), Suggestion("<a></a>", -3.0)])
    assert got == [Suggestion("rw [Nat.add_comm]", -0.5), Suggestion("simp", -1.0)]


def test_a_retriever_row_with_a_bare_model_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["benchmark", "--config", str(REPO / "configs" / "search" / "reprover.yaml"),
                 "--theorems", "minif2f", "--env", "replay", "--retriever", "none,bm25",
                 "--generator", WITHOUT_RETRIEVAL, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1
    assert WITHOUT_RETRIEVAL in err and f"--generator {RETRIEVAL_AUGMENTED}" in err and "bm25" in err
    assert not out.exists()  # no run.json, no run of `none` before the refusal
