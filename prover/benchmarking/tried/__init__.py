"""Shared code of the benchmarks that measured options tried and not shipped (benchmarks/tried/):
the fusion refitted on the real halves with other queries, members or CFRs. No shipped module
imports it (tests/test_layers.py)."""
