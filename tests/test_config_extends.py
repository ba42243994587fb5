"""A config file may start from another (`extends:`), so CAR's recipe lives beside cpu.yaml, not in it."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from prover.config import ConfigError, load_config
from retriever.settings import CARConfig, RetrieverTrainConfig
from tests.conftest import REPO


def test_a_file_is_laid_over_the_one_it_extends(tmp_path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "a.yaml").write_text("run_dir: runs/a\ncar:\n  k1: 7\n  init: ${run_dir}/x\n")
    (tmp_path / "b.yaml").write_text("extends: base/a.yaml\ncar:\n  k1: 3\n")
    (tmp_path / "c.yaml").write_text("extends: b.yaml\nrun_dir: runs/c\n")
    cfg = load_config(RetrieverTrainConfig, str(tmp_path / "c.yaml"), ["car.first_stage_weight=4"])
    assert (cfg.run_dir, cfg.car.k1, cfg.car.first_stage_weight, cfg.car.init) == ("runs/c", 3, 4.0, "runs/c/x")
    assert "extends" not in OmegaConf.to_container(cfg)


def test_a_missing_base_or_a_cycle_is_one_clear_error(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match="nowhere.yaml.*does not exist"):
        load_config(RetrieverTrainConfig, str(tmp_path / "a.yaml"))
    (tmp_path / "x.yaml").write_text("extends: y.yaml\n")
    (tmp_path / "y.yaml").write_text("extends: x.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(RetrieverTrainConfig, str(tmp_path / "x.yaml"))


def test_cpu_car_is_cpu_plus_cars_recipe_and_cpu_ships_no_car():
    cpu = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/cpu.yaml"))
    car = load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/cpu-car.yaml"))
    plain = {k: v for k, v in OmegaConf.to_container(cpu).items() if k != "car"}
    assert plain == {k: v for k, v in OmegaConf.to_container(car).items() if k != "car"}
    assert OmegaConf.to_container(cpu.car) == OmegaConf.to_container(OmegaConf.structured(CARConfig))
    assert (car.car.first_stage, car.car.k1, car.car.first_stage_weight) == ("cfr-conventional", 100, 4.0)
    assert "car" not in " ".join(cpu.fusion.members)  # the shipped first stage loads no CAR


def test_a_renamed_or_removed_key_is_refused_naming_what_to_write():
    from prover.config import ConfigError
    from prover.search.settings import SearchBenchmarkConfig
    search = str(REPO / "configs/search/tiny.yaml")
    for key, said in [("search.num_tactics=8", "is now 'generator.num_tactics'"),
                      ("generator.num_samples=8", "is now 'generator.num_tactics'")]:
        with pytest.raises(ConfigError, match=said):
            load_config(SearchBenchmarkConfig, search, [key])
    with pytest.raises(ConfigError, match="CAR's k2 was never read"):
        load_config(RetrieverTrainConfig, str(REPO / "configs/retriever/tiny.yaml"), ["car.k2=5"])
