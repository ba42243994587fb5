"""What a benchmark config hands the actors: one env settings shape, and the generator's candidate
count apart from the tactics an expansion tries."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from prover.env.replay import ReplayEnv
from prover.search.components import env_spec, generator_spec
from prover.search.settings import EnvSettings, SearchBenchmarkConfig


def _cfg(**over):
    return OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), over)


def test_generator_samples_apart_from_tactics_tried():
    assert generator_spec(_cfg(search={"num_tactics": 8})).num_samples == 8  # by default, the same
    spec = generator_spec(_cfg(search={"num_tactics": 8}, generator={"num_samples": 32}))
    assert spec.num_samples == 32


def test_the_generator_actor_fills_neighbour_templates_only_when_asked(tmp_path):
    from tests.search_doubles import save_untrained_generator
    model = str(save_untrained_generator(tmp_path / "gen"))
    assert generator_spec(_cfg(generator={"model": model})).build().generator.instantiate == 0
    spec = generator_spec(_cfg(generator={"model": model, "instantiate": 3, "premise_bonus": 2.0}))
    assert spec.instantiate == 3 and spec.build().generator.instantiate == 3
    assert spec.build().generator.premise_bonus == 2.0


def test_the_env_section_is_what_workers_open_envs_from(leandojo_sample):
    from prover.data.theorem import load_theorems
    env = env_spec(_cfg(env={"name": "replay", "replay": {"focus_goals": True}}))
    assert isinstance(env, EnvSettings) and env.replay.focus_goals and env.session() is None
    theorem = next(t for t in load_theorems(leandojo_sample) if t.traced_tactics)
    assert isinstance(env.make(theorem), ReplayEnv)
    with pytest.raises(ValueError, match="auto is settled first"):
        env_spec(_cfg()).make(theorem)
