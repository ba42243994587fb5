"""Retrievers with nothing learned: BM25 (Lean-aware tokens), locality and usage priors, the nearest training states' premises, reciprocal-rank fusion."""
