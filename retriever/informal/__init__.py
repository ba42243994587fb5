"""Informal search: plain English, LaTeX, theorem names and Lean-like terms find premises (issue 51).

`text.py` turns any of them, a declaration's name, statement and docstring into one vocabulary
of stemmed words (`words.json`, the curated data); `clouds.py` learns which name parts and
notation words each English word identifies from the corpus' own docstring-declaration pairs;
`retriever.py` ranks premises by BM25 over that text with the query expanded through the clouds.
"""
