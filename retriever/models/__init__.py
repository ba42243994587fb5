"""The learned retrievers: CFR (bi-encoder), CAR (cross-encoder), the ReProver-style baseline, the fusion ranker, and what they share (tokenizer, premise text, FAISS index)."""
