"""Generator options tried and not shipped (issue 28), kept for the benchmarks that measured them.

- `instantiate.py`: the tactic neighbours' one-premise tactics filled with each premise shown.
- `rerank.py`: a learned (LambdaMART) ranker over the candidates' evidence.

The shipped generator imports nothing from here (tests/test_layers.py): a benchmark plugs an
option into a loaded TacticGenerator through its two hooks, `extra_candidates` and `ranker`
(`instantiate.plug_in`, `rerank.load_ranker`).
"""
