"""A FAISS inner-product index over premise vectors, with accessibility-filtered exact search.

CFR ranks premises by the inner product of a state vector with a premise vector. The index
answers "the k best premises" fast; `search_masked` answers "the k best premises this theorem
may use": exactly for the flat index (the same ranking as scoring every allowed premise), by
scanning every vector on the CPU or by filtering a growing candidate pool on a GPU.

On disk an index is a folder: `premises.faiss` (faiss.write_index) and `premises.json`, a
sidecar with the corpus fingerprint (premise count + a hash of their names and files) and the
producer's metadata, so an index built for another corpus or model is refused on load.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# faiss's loader logs each SIMD build it tries (a ModuleNotFoundError for AVX512 included) at
# INFO/DEBUG on import; that is noise in every command's output, so only its warnings pass.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)
import faiss
import numpy as np

from prover.data.corpus import Corpus
from retriever.base import top_k

log = logging.getLogger(__name__)

KINDS = ("flat", "ivf", "hnsw")
INDEX_FILE, SIDECAR_FILE = "premises.faiss", "premises.json"
GPU_MAX_K = 2048  # faiss-gpu's largest k per search


class StaleIndexError(ValueError):
    """The saved index was built for another corpus (or model) than the one in use."""


def corpus_fingerprint(corpus: Corpus) -> dict[str, Any]:
    h = hashlib.sha1()
    for p in corpus.premises:
        h.update(f"{p.path}\t{p.full_name}\n".encode())
    return {"n_premises": len(corpus), "names_sha1": h.hexdigest()}


def _gpu_resources() -> Any | None:
    """faiss-gpu resources when a GPU build and a GPU are both present; None on CPU."""
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() == 0:
        return None
    return faiss.StandardGpuResources()


class PremiseIndex:
    """FAISS inner-product index plus the float32 vectors it was built from.

    The vectors are kept (N × d × 4 bytes; 0.5 GB for 180k premises at d=768) because exact
    re-scoring of candidates and the masked brute-force fallback need them and only the flat
    index stores them in a form we could read back cheaply.
    """

    def __init__(self, index: Any, vectors: np.ndarray, kind: str,
                 fingerprint: dict | None = None, meta: dict | None = None) -> None:
        self.index, self.vectors, self.kind = index, vectors, kind
        self.fingerprint, self.meta = fingerprint or {}, meta or {}
        self._on_gpu = False
        self._to_gpu()

    def __len__(self) -> int:
        return self.vectors.shape[0]

    @property
    def exact(self) -> bool:
        return self.kind == "flat"

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "flat", nlist: int = 0, m: int = 32,
              nprobe: int = 16, fingerprint: dict | None = None,
              meta: dict | None = None) -> PremiseIndex:
        """Index (N, d) vectors. ivf: `nlist` inverted lists (0: about 4·√N), `nprobe` of them
        searched; hnsw: `m` neighbours per node. Scores are inner products."""
        if kind not in KINDS:
            raise ValueError(f"unknown index kind {kind!r}; choose from {', '.join(KINDS)}")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n, d = vectors.shape
        if kind == "flat":
            index = faiss.IndexFlatIP(d)
        elif kind == "ivf":
            # k-means wants ~39 points per centroid; a small corpus gets fewer lists.
            nlist = max(1, min(nlist or int(4 * math.sqrt(n)), n // 39))
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(vectors)
            index.nprobe = min(nprobe, nlist)
        else:
            index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
        index.add(vectors)
        log.info("built %s index of %d premise vectors (d=%d)", kind, n, d)
        return cls(index, vectors, kind, fingerprint, meta)

    def _to_gpu(self) -> None:
        # HNSW has no GPU implementation; it stays on the CPU.
        res = _gpu_resources() if self.kind != "hnsw" else None
        if res is not None:
            self._gpu_res = res  # must outlive the GPU index
            self.index = faiss.index_cpu_to_gpu(res, 0, self.index)
            self._on_gpu = True
            log.info("premise index moved to GPU 0")

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (len(queries), k), best first; id -1 pads a short answer."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        return self.index.search(queries, min(k, len(self)))

    def search_masked(self, queries: np.ndarray, k: int,
                      masks: Sequence[np.ndarray | None]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, (scores, ids) of the k best premises whose mask entry is True (mask None:
        all premises), best first with ties to the lower id, as `top_k` ranks.

        The flat index on the CPU takes `scan_masked`: a flat search reads every vector anyway,
        and faiss's own top-k heap at k in the hundreds costs more than the matrix product
        (measured in benchmarks/results/masked-search-*.md). A GPU index or an approximate
        kind takes `pool_masked`.
        """
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self.exact and not self._on_gpu:
            return self.scan_masked(queries, k, masks)
        return self.pool_masked(queries, k, masks)

    def scan_masked(self, queries: np.ndarray, k: int, masks: Sequence[np.ndarray | None],
                    chunk: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        """Exact: every premise scored by one matrix product per chunk of queries, masked ones
        dropped, the k best kept. Chunks bound the score matrix (chunk × N: 11 MB at N=180k)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        out = []
        for lo in range(0, len(queries), chunk):
            scores = queries[lo: lo + chunk] @ self.vectors.T
            for row, mask in zip(scores, masks[lo: lo + chunk]):
                if mask is not None:
                    row[~mask] = -np.inf
                ids = top_k(row, k)
                out.append((row[ids], ids))
        return out

    def pool_masked(self, queries: np.ndarray, k: int,
                    masks: Sequence[np.ndarray | None]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Search a candidate pool of the index's best `pool` premises and filter it. For the
        flat index the pool is enough once it holds k allowed premises that all score above
        its worst score (nothing outside can then beat them); otherwise it grows 4× for the
        queries still open, and past a quarter of the corpus they go to `scan_masked`."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        n = len(self)
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(queries)
        todo = list(range(len(queries)))
        max_pool = min(n, GPU_MAX_K) if self._on_gpu else n
        pool = min(max_pool, max(4 * k, 64))
        first = True
        while todo and k <= max_pool and (first or pool <= max_pool // 4):
            first = False
            scores, ids = self.search(queries[todo], pool)
            still = []
            for row, qi in enumerate(todo):
                got = ids[row][ids[row] >= 0]
                cand = got if masks[qi] is None else got[masks[qi][got]]
                s = self.vectors[cand] @ queries[qi]  # exact, the same arithmetic as brute force
                order = np.lexsort((cand, -s))[:k]
                if len(got) == n:  # the pool is the whole corpus: nothing lies outside it
                    done = True
                elif self.exact:
                    done = len(order) == k and s[order[-1]] > scores[row][len(got) - 1] + 1e-5
                else:  # approximate kinds: k allowed candidates is all we can ask for
                    done = len(order) == k
                if done:
                    out[qi] = (s[order], cand[order])
                else:
                    still.append(qi)
            todo = still
            pool = min(max_pool, pool * 4)
        for qi, hits in zip(todo, self.scan_masked(queries[todo], k, [masks[qi] for qi in todo])):
            out[qi] = hits
        return out  # type: ignore[return-value]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        index = faiss.index_gpu_to_cpu(self.index) if self._on_gpu else self.index
        faiss.write_index(index, str(path / INDEX_FILE))
        sidecar = {"kind": self.kind, "n": len(self), "dim": int(self.vectors.shape[1]),
                   "corpus": self.fingerprint, "meta": self.meta}
        (path / SIDECAR_FILE).write_text(json.dumps(sidecar, indent=2))
        log.info("saved %s premise index to %s", self.kind, path)
        return path

    @classmethod
    def load(cls, path: str | Path, fingerprint: dict | None = None,
             meta: dict | None = None) -> PremiseIndex:
        """Read a saved index; refuse it (StaleIndexError) if its corpus fingerprint differs
        from `fingerprint` or any key of `meta` differs from what it was built with."""
        path = Path(path)
        if not (path / INDEX_FILE).exists() or not (path / SIDECAR_FILE).exists():
            raise FileNotFoundError(f"no premise index at {path} (expected {INDEX_FILE} and {SIDECAR_FILE})")
        sidecar = json.loads((path / SIDECAR_FILE).read_text())
        if fingerprint is not None and sidecar["corpus"] != fingerprint:
            raise StaleIndexError(
                f"premise index at {path} was built for another corpus ({sidecar['corpus']['n_premises']} "
                f"premises, names hash {sidecar['corpus']['names_sha1'][:12]}) than the one loaded "
                f"({fingerprint['n_premises']} premises, {fingerprint['names_sha1'][:12]}); rebuild it")
        for key, want in (meta or {}).items():
            if sidecar["meta"].get(key) != want:
                raise StaleIndexError(f"premise index at {path} was built with {key}="
                                      f"{sidecar['meta'].get(key)!r}, not {want!r}; rebuild it")
        index = faiss.read_index(str(path / INDEX_FILE))
        if sidecar["kind"] == "ivf":
            faiss.extract_index_ivf(index).make_direct_map()  # reconstruct_n needs it
        vectors = index.reconstruct_n(0, index.ntotal)
        return cls(index, vectors, sidecar["kind"], sidecar["corpus"], sidecar["meta"])
