"""What a benchmark config hands the actors: one env settings shape, and one setting for the
tactics an expansion tries (the generator's num_tactics), apart from its beam width."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from prover.env.replay import ReplayEnv
from prover.search.components import env_spec, generator_spec, tactic_source
from prover.search.settings import EnvSettings, SearchBenchmarkConfig


def _cfg(**over):
    return OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), over)


def test_tactics_per_expansion_is_one_setting_apart_from_the_beam_width():
    assert generator_spec(_cfg()).num_tactics == 64  # ReProver's, when a config says nothing
    spec = generator_spec(_cfg(generator={"num_tactics": 32}))
    assert spec.num_tactics == 32 and spec.num_beams is None  # beam width: the same 32
    spec = generator_spec(_cfg(generator={"num_tactics": 32, "num_beams": 8}))
    assert (spec.num_tactics, spec.num_beams) == (32, 8)
    assert "num_tactics" not in OmegaConf.structured(SearchBenchmarkConfig).search  # not a second one


def test_fewer_beams_than_suggestions_fill_the_rest_from_the_pool(tmp_path):
    """32 suggestions from a beam of 2: what the actor returns has 2 beam candidates at most,
    and the rest from the tactic pool, all scored by the model."""
    from tests.search_doubles import save_untrained_generator
    model = str(save_untrained_generator(tmp_path / "gen"))
    actor = tactic_source(generator_spec(_cfg(generator={"model": model, "num_tactics": 32, "num_beams": 2})))
    gen = actor.generator
    gen.pool = [f"exact h{i}" for i in range(40)]
    got = actor.suggest([("h0 : p\n⊢ p", [])])[0]
    assert len(got) == 32 and len({s.tactic for s in got}) == 32
    cands = gen.candidates([gen.input_text("h0 : p\n⊢ p")[0]], num_beams=2)[0]
    assert sum(c.in_beam for c in cands) <= 2 and len(cands) >= 40


def test_the_generator_actor_takes_the_premise_bonus_and_no_tried_option(tmp_path):
    from tests.search_doubles import save_untrained_generator
    model = str(save_untrained_generator(tmp_path / "gen"))
    gen = tactic_source(generator_spec(_cfg(generator={"model": model}))).generator
    assert gen.extra_candidates is None and gen.ranker is None and gen.premise_bonus == 0.0
    spec = generator_spec(_cfg(generator={"model": model, "premise_bonus": 2.0}))
    assert tactic_source(spec).generator.premise_bonus == 2.0
    # Instantiated candidates were tried and not shipped (generator/tried/): search has no key for them.
    assert "instantiate" not in OmegaConf.structured(SearchBenchmarkConfig).generator


def test_the_env_section_is_what_workers_open_envs_from(leandojo_sample):
    from prover.data.theorem import load_theorems
    env = env_spec(_cfg(env={"name": "replay", "replay": {"focus_goals": True}}))
    assert isinstance(env, EnvSettings) and env.replay.focus_goals and env.session() is None
    theorem = next(t for t in load_theorems(leandojo_sample) if t.traced_tactics)
    assert isinstance(env.make(theorem), ReplayEnv)
    with pytest.raises(ValueError, match="auto is settled first"):
        env_spec(_cfg()).make(theorem)
