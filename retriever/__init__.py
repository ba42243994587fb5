"""Premise retrieval: indexing, scoring and evaluation."""
import prover  # noqa: F401  (sets OpenMP's wait policy before torch loads)
