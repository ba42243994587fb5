"""Bad input on the command line: one `error:` line that names the input, exit code 2.

Each case runs `prover` as a user would (a subprocess in an empty folder, a fresh HOME), so
no runs/ folder or cache of the developer's is picked up, and checks that what comes out is
the one line about the mistake: no traceback, no library's log chatter before it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA_ROOT, REPO, TINY_CORPUS, require, tactic, theorem_record, write_json

MINI = DATA_ROOT / "mathlib-src-mini"
TINY_YAML = str(REPO / "configs" / "retriever" / "tiny.yaml")


def prover(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PROVER_CACHE": str(tmp_path / "cache"),
           "OMP_WAIT_POLICY": "PASSIVE"}
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "prover.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)


def assert_one_line_error(out: subprocess.CompletedProcess, *expected: str) -> str:
    """The run failed with exit 2 and an `error:` first line holding every `expected` string."""
    lines = out.stderr.splitlines()
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert lines and lines[0].startswith("error: "), out.stderr[-2000:]
    for text in expected:
        assert text in lines[0], (text, lines[0])
    assert "Traceback" not in out.stderr
    for noise in ("DEBUG", " INFO ", "faiss.loader", "swigfaiss"):
        assert noise not in out.stderr and noise not in out.stdout, (noise, out.stderr[-2000:])
    return lines[0]


def _state(tmp_path: Path) -> str:
    (tmp_path / "s.txt").write_text("⊢ True\n", encoding="utf-8")
    return "s.txt"


def _empty(tmp_path: Path, name: str) -> str:
    (tmp_path / name).mkdir()
    return name


# Each case: (arguments, given tmp_path; strings the error line must hold).
CASES = {
    "generator model folder missing": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", _state(t)],
        ["/nonexistent/folder", "does not exist", "prover generator train --config",
         "<run_dir>/generator/model"]),
    "generator model folder empty": (
        lambda t: ["generator", "suggest", "--model", _empty(t, "model"), "--state", _state(t)],
        ["model", "no config.json", "prover generator train --config"]),
    "generator state file missing": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", "missing.txt"],
        ["--state missing.txt", "no such file"]),
    "serve index missing": (
        lambda t: ["serve", "--index", "/missing/run", "--corpus", str(require(MINI))],
        ["--index /missing/run does not exist", "retriever run folder"]),
    "serve index and corpus missing": (
        lambda t: ["serve", "--index", "/missing/run", "--corpus", "/missing/corpus"],
        ["--index /missing/run does not exist", "--corpus /missing/corpus does not exist"]),
    "serve index folder untrained": (
        lambda t: ["serve", "--index", _empty(t, "run"), "--corpus", str(require(MINI))],
        ["retriever cfr needs a trained CFR", "run/pretrain/model is missing",
         "prover retriever pretrain --config", "run_dir=run", "then train-cfr and index"]),
    "demo bare word": (
        lambda t: ["demo", "foo"],
        ["'foo' is not an override", "overrides are key=value"]),
    "demo key it does not use": (
        lambda t: ["demo", "retriever.name=bm26"],
        ["unknown config key 'retriever.name'", "keys under retriever: cfr, encoder, pretrain, tokenizer"]),
    "data stats folder missing": (
        lambda t: ["data", "stats", "--data", "/missing"],
        ["--data /missing", "dataset folder not found", "corpus.jsonl"]),
    "retriever eval data.root missing": (
        lambda t: ["retriever", "eval", "data.root=/missing", f"eval.out_dir={t / 'out'}"],
        ["data.root /missing", "dataset folder not found"]),
    # Issue 48: each of these escaped as a traceback or a raw exception name.
    "config malformed YAML": (
        lambda t: ["retriever", "pretrain", "--config", _write(t, "bad.yaml", "a: [1,\nb: {")],
        ["config file bad.yaml, line 3 column 1: not valid YAML (did not find expected node content)"]),
    "config is a folder": (
        lambda t: ["serve", "--config", _empty(t, "configs")],
        ["config file configs is a folder: pass a YAML file in it"]),
    "state is a folder": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", _empty(t, "st")],
        ["--state st: is a folder (expected a file holding a proof state"]),
    "out is a file": (
        lambda t: ["retriever", "eval", "--retriever", "bm25", "--out", _write(t, "taken", "x")],
        ["--out taken is a file: name a folder"]),
    "corpus empty": (
        lambda t: ["data", "stats", "--data", str(_empty_corpus(t))],
        ["ds/corpus.jsonl: empty: a corpus with no premise to rank"]),
    "split counts over the theorems": (
        lambda t: ["data", "split", "--data", str(require(MINI)), "--strategy", "ri", "--out", "splits",
                   "--n-val", "2000", "--n-test", "2000"],
        ["--n-val 2000 + --n-test 2000 leave no training theorem of the 2,750"]),
    "benchmark theorems file missing": (
        lambda t: ["benchmark", "--theorems", "nothere.json", "--env", "replay", "--retriever", "bm25",
                   "--out", "bench"],
        ["nothere.json: file not found"]),
    # Issue 61: a 40-line traceback, 197 s and 50,973 lines, a silent acceptance, an error
    # that did not name the file, half a minute of hub retries, a benchmark that hung.
    "generator suggest -n negative": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", _state(t), "-n", "-2"],
        ["-n -2: give between 1 and 256 suggestions"]),
    "generator suggest -n unbounded": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", _state(t), "-n", "100000"],
        ["-n 100000: give between 1 and 256 suggestions"]),
    "generator state file binary": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state", _binary(t)],
        ["--state bin.dat is not UTF-8 text (byte 8)"]),
    "generator state file with NUL bytes": (
        lambda t: ["generator", "suggest", "--model", "/nonexistent/folder", "--state",
                   _write(t, "nul.txt", "⊢ True\x00\x00")],
        ["--state nul.txt holds NUL bytes"]),
    "generator model neither a folder nor a reachable hub model": (
        lambda t: ["generator", "suggest", "--model", "no-such-owner-61/no-such-model", "--state", _state(t)],
        ["generator model no-such-owner-61/no-such-model: no such local folder", "prover generator train"]),
    "retriever eval k negative": (
        lambda t: ["retriever", "eval", "--retriever", "bm25", "retriever.k=-5", f"eval.out_dir={t / 'out'}"],
        ["retriever.k must be at least 1, got -5"]),
    "benchmark workers that cannot be placed": (
        lambda t: ["benchmark", "--theorems", "demo", "--split", "random/test", "--env", "replay",
                   "--workers", "3", "ray.worker_cpus=1", "ray.local_num_cpus=2", "--out", "bench"],
        ["the search asks Ray for 3.05 CPUs", "ray.num_workers (--workers) to 1 or fewer"]),
}


def _binary(tmp_path: Path) -> str:
    (tmp_path / "bin.dat").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)))
    return "bin.dat"


def _write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def _empty_corpus(tmp_path: Path) -> Path:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "corpus.jsonl").write_text("")
    return tmp_path / "ds"


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_naming_it(tmp_path, case):
    args, expected = CASES[case]
    assert_one_line_error(prover(tmp_path, *args(tmp_path)), *expected)


# The README's retriever command on a fresh clone, for every trained retriever: the first stage
# missing in pipeline order (pretrain), then the rest, each by the command that runs it.
UNTRAINED = {
    "cfr": "then train-cfr (",
    "cfr+car": "then train-cfr and train-car (",
    "cfr-conventional": "then train-cfr cfr.similarity=conventional (",
    "hybrid": "then train-cfr (",
}


@pytest.mark.parametrize("name", list(UNTRAINED))
def test_untrained_retriever_names_its_first_missing_stage(tmp_path, name):
    out = prover(tmp_path, "retriever", "eval", "--retriever", name, f"retriever.models={TINY_YAML}",
                 f"data.root={require(MINI)}", f"eval.out_dir={tmp_path / 'out'}")
    assert_one_line_error(out, f"retriever {name} needs a trained CFR",
                          "runs/retriever-tiny/pretrain/model is missing",
                          f"run: prover retriever pretrain --config {TINY_YAML}", UNTRAINED[name])


def test_reprover_untrained_names_train_reprover(tmp_path):
    out = prover(tmp_path, "retriever", "eval", "--retriever", "reprover", f"retriever.models={TINY_YAML}",
                 f"data.root={require(MINI)}", f"eval.out_dir={tmp_path / 'out'}")
    assert_one_line_error(out, "runs/retriever-tiny/reprover/model is missing",
                          f"prover retriever train-reprover --config {TINY_YAML}", "reprover.checkpoint")


def test_missing_stages_skip_what_is_trained(tmp_path):
    """A stage whose output is there is not asked for again: with the CFR trained, only
    train-car is missing for cfr+car, whatever became of pretrain/."""
    from omegaconf import OmegaConf

    from retriever.registry import missing_training
    run = tmp_path / "run"
    cfg = OmegaConf.create({"retriever": {"models": TINY_YAML, "run_dir": str(run)}})
    assert "pretrain/model is missing" in missing_training("cfr+car", cfg)
    (run / "pretrain" / "model").mkdir(parents=True)
    (run / "pretrain" / "model" / "config.json").write_text("{}")
    assert "cfr/model is missing; run: prover retriever train-cfr" in missing_training("cfr+car", cfg)
    (run / "cfr" / "model").mkdir(parents=True)
    (run / "cfr" / "model" / "config.json").write_text("{}")
    message = missing_training("cfr+car", cfg)
    assert message.startswith("retriever cfr+car needs a CAR trained over cfr: ")
    assert message.endswith(f"car/model is missing; run: prover retriever train-car --config {TINY_YAML} "
                            f"run_dir={run}")
    assert missing_training("cfr", cfg) is None and missing_training("bm25", cfg) is None
    assert "cfr/index is missing; run: prover retriever index" in missing_training("cfr", cfg, index=True)


# ---------------------------------------------------------------------------------------
# A corrupt corpus line: every command treats it as data.on_error says.

def corrupt_dataset(root: Path) -> Path:
    """TINY_CORPUS with line 2 (file B.lean) not JSON, and a random/test split over file C."""
    lines = [json.dumps(r) for r in TINY_CORPUS]
    lines[1] = lines[1][:40]  # cut mid-record, as a crashed writer leaves it
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    thm = theorem_record("t1", "C.lean", [tactic("exact c1", [("c1", "C.lean")])], start=(30, 1))
    write_json(root / "random" / "test.json", [thm])
    return root


def test_corrupt_corpus_stops_data_stats(tmp_path):
    data = corrupt_dataset(tmp_path / "ds")
    assert_one_line_error(prover(tmp_path, "data", "stats", "--data", str(data)),
                          f"{data / 'corpus.jsonl'}: line 2: malformed JSON", "(column 41)")


def test_corrupt_corpus_skipped_by_data_stats_when_asked(tmp_path, capsys, caplog):
    from prover.commands.data_stats import run_stats
    data = corrupt_dataset(tmp_path / "ds")
    assert run_stats(str(data), on_error="skip") == 0
    out = capsys.readouterr().out
    assert "premises          7" in out and "skipped: 1 bad line" in out  # B.lean's 2 are gone
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "corpus.jsonl: skipped 1 bad line" in warnings[0]


def test_corrupt_corpus_stops_retriever_eval(tmp_path):
    data = corrupt_dataset(tmp_path / "ds")
    out = prover(tmp_path, "retriever", "eval", "--retriever", "bm25", "--data", str(data),
                 "--split", "random/test", "--out", str(tmp_path / "out"))
    assert_one_line_error(out, f"{data / 'corpus.jsonl'}: line 2: malformed JSON")


def test_corrupt_corpus_skipped_by_retriever_eval_with_on_error_skip(tmp_path):
    data = corrupt_dataset(tmp_path / "ds")
    out = prover(tmp_path, "retriever", "eval", "--retriever", "bm25", "--data", str(data),
                 "--split", "random/test", "--out", str(tmp_path / "out"), "data.on_error=skip")
    assert out.returncode == 0, out.stderr[-2000:]
    warnings = [line for line in out.stderr.splitlines() if "skipped" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], out.stderr
    assert "corpus.jsonl: skipped 1 bad line" in warnings[0] and "line 2" in warnings[0]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["skipped"]["counts"] == {"bad line": 1} and metrics["n_queries"] == 1


def test_nothing_is_written_before_a_bad_input_is_found(tmp_path):
    """data split checks its counts before it copies the corpus (issue 48: runs/splits/corpus.jsonl
    was left behind); its defaults fit a small dataset (5% each for val and test)."""
    out = prover(tmp_path, "data", "split", "--data", str(require(MINI)), "--strategy", "ri",
                 "--out", "splits", "--n-val", "2000", "--n-test", "2000")
    assert out.returncode == 2 and not (tmp_path / "splits").exists()
    done = prover(tmp_path, "data", "split", "--data", str(require(MINI)), "--strategy", "random",
                  "--out", "splits")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(train 2,474, val 138, test 138)" in done.stdout


def test_benchmark_checks_its_inputs_before_ray_and_run_json(tmp_path):
    """A corrupt corpus, or no generator, is one line before Ray starts and before a results
    folder is written (issue 48: a 252-line Ray traceback after 40 s, and a run.json with no results)."""
    data = corrupt_dataset(tmp_path / "ds")
    args = ["benchmark", "--theorems", str(data), "--split", "random/test", "--env", "replay",
            "--retriever", "bm25", "--corpus", str(data), "--out", "bench"]
    cases = {"no generator": ([], "no tactic generator: set generator.model (or --generator)"),
             "corrupt corpus": (["--generator", _model(tmp_path)], f"{data / 'corpus.jsonl'}: line 2: malformed JSON")}
    for extra, message in cases.values():
        out = prover(tmp_path, *args, *extra)
        errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
        assert out.returncode == 2 and len(errors) == 1 and message in errors[0], out.stderr[-2000:]
        assert "Traceback" not in out.stderr and "ray" not in out.stderr.lower()
        assert not (tmp_path / "bench").exists()


def _model(tmp_path: Path) -> str:
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "config.json").write_text("{}")
    return "gen"
