"""One data folder: $PROVER_DATA, else the per-user folder; configs name datasets relative to it."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from prover.cli import main
from prover.config import load_yaml
from prover.data.location import data_dir
from tests.conftest import REPO


def test_no_config_names_a_machines_data_folder():
    named = [f"{p.relative_to(REPO)}:{i}" for p in sorted((REPO / "configs").rglob("*.yaml"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if "shared/data" in line]
    assert named == []


def test_configs_resolve_datasets_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVER_DATA", str(tmp_path / "data"))
    cfg = load_yaml(str(REPO / "configs" / "retriever" / "cpu.yaml"))
    assert cfg.data.root == str(tmp_path / "data" / "mathlib-src")
    monkeypatch.delenv("PROVER_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "lean-premise-prover"
    cfg = load_yaml(str(REPO / "configs" / "search" / "tiny.yaml"))
    assert OmegaConf.to_container(cfg, resolve=True)["retriever"]["corpus"] == str(
        tmp_path / "xdg" / "lean-premise-prover" / "mathlib-src-mini")


def test_a_missing_dataset_says_what_fills_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PROVER_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    folder = Path(tmp_path / "xdg" / "lean-premise-prover" / "leandojo-benchmark-4")
    assert main(["data", "stats", "--data", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dataset folder not found" in err[0]
    assert f"prover data download leandojo-benchmark-4 --out {folder}" in err[0]
    assert main(["data", "stats", "--data", str(tmp_path / "elsewhere")]) == 2  # not in the data folder
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data folder" not in err[0]
