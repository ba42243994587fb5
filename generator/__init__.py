"""ByT5 tactic generator: premise-augmented training data, model, training and generation."""
