"""Retrieval-augmented theorem proving for Lean 4: data, retrieval, generation, proof search."""
import os

# Before torch loads OpenMP (the retriever and generator packages import this one first). Idle
# OpenMP workers that spin steal the core BLAS needs next: small models trained 5-10x slower on
# a busy 2-core machine, and CFR's batch-1 query went from p50 27.6 / p95 140 ms to 16.2 / 18.8
# (cpu models, other core idle). A user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# bm25s imports JAX when it is installed and runs a top-k at import; on a GPU machine JAX then
# takes 75% of the GPU's memory, and torch's first model ran out of memory on an 80 GB H100.
# BM25's top-k needs no GPU.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

__version__ = "0.1.0"
