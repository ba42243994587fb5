"""What a benchmark config hands the actors: one env settings shape, and the generator's candidate
count apart from the tactics an expansion tries."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from prover.env.replay import ReplayEnv
from prover.search.components import env_spec, generator_spec, tactic_source
from prover.search.settings import EnvSettings, SearchBenchmarkConfig


def _cfg(**over):
    return OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), over)


def test_generator_samples_apart_from_tactics_tried():
    assert generator_spec(_cfg(search={"num_tactics": 8})).num_samples == 8  # by default, the same
    spec = generator_spec(_cfg(search={"num_tactics": 8}, generator={"num_samples": 32}))
    assert spec.num_samples == 32 and spec.num_beams is None  # beam width: the same 32
    spec = generator_spec(_cfg(search={"num_tactics": 32}, generator={"num_beams": 8}))
    assert (spec.num_samples, spec.num_beams) == (32, 8)


def test_fewer_beams_than_suggestions_fill_the_rest_from_the_pool(tmp_path):
    """32 suggestions from a beam of 2: what the actor returns has 2 beam candidates at most,
    and the rest from the tactic pool, all scored by the model."""
    from tests.search_doubles import save_untrained_generator
    model = str(save_untrained_generator(tmp_path / "gen"))
    actor = tactic_source(generator_spec(_cfg(search={"num_tactics": 32}, generator={"model": model, "num_beams": 2})))
    gen = actor.generator
    gen.pool = [f"exact h{i}" for i in range(40)]
    got = actor.suggest([("h0 : p\n⊢ p", [])])[0]
    assert len(got) == 32 and len({s.tactic for s in got}) == 32
    cands = gen.candidates([gen.input_text("h0 : p\n⊢ p")[0]], num_samples=2)[0]
    assert sum(c.in_beam for c in cands) <= 2 and len(cands) >= 40


def test_the_generator_actor_fills_neighbour_templates_only_when_asked(tmp_path):
    from tests.search_doubles import save_untrained_generator
    model = str(save_untrained_generator(tmp_path / "gen"))
    assert tactic_source(generator_spec(_cfg(generator={"model": model}))).generator.instantiate == 0
    spec = generator_spec(_cfg(generator={"model": model, "instantiate": 3, "premise_bonus": 2.0}))
    assert spec.instantiate == 3 and tactic_source(spec).generator.instantiate == 3
    assert tactic_source(spec).generator.premise_bonus == 2.0


def test_the_env_section_is_what_workers_open_envs_from(leandojo_sample):
    from prover.data.theorem import load_theorems
    env = env_spec(_cfg(env={"name": "replay", "replay": {"focus_goals": True}}))
    assert isinstance(env, EnvSettings) and env.replay.focus_goals and env.session() is None
    theorem = next(t for t in load_theorems(leandojo_sample) if t.traced_tactics)
    assert isinstance(env.make(theorem), ReplayEnv)
    with pytest.raises(ValueError, match="auto is settled first"):
        env_spec(_cfg()).make(theorem)
