"""Retriever options tried and not shipped (issue 28 and before), kept so that the results files
and comparison configs that name them still run.

- `registry.py`: their names (CAR's ablations, the rank fusions measured before the learned one,
  `neighbors-cfr`), registered into retriever/registry.py after the shipped ones.
- `dense_neighbors.py`: `neighbors-cfr`, the tactic-level neighbours nearest by CFR's encoder.
- `late_interaction.py`: `structure-li`, issue 50's learned structure scorer (node embeddings,
  late interaction) re-ranking `structure`'s top 100.

No shipped module imports anything here (tests/test_layers.py): the registry loads
`registry.py` by name the first time it is asked for a name it does not ship.
"""
