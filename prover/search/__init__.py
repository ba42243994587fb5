"""Proof search: best-first search over proof states, distributed on Ray.

- `best_first`: the search itself (one theorem, one env, a premise source and a tactic source).
- `sources`: the premise/tactic source interfaces and their in-process forms.
- `batching`: dynamic batching of concurrent requests inside the model actors.
- `actors`: the Ray actors (retriever, generators, prover workers) and connecting to Ray.
- `theorems`, `components`, `settings`: what to prove, how each part is built, the config schema.
- `results`, `benchmark`: per-theorem results files, resume, summaries; the benchmark driver.
"""
