"""ByT5 tactic generator: premise-augmented training data, model, training and generation."""
import prover  # noqa: F401  (sets OpenMP's wait policy before torch loads)
