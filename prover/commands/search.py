"""`prover search "QUERY"`: informal premise search from the terminal (issue 51).

The query is plain English, LaTeX, a theorem's common name or a Lean-like term; the answer is the
`informal` retriever's (retriever/informal/), over a dataset folder's corpus with docstrings joined
from a corpus that carries them (`--docs`: a `prover data corpus` output, or a folder of Lean
sources, built once into runs/corpora). `--queries FILE` answers one query a line, as JSON lines,
in one process (the index is built once: about a minute for mathlib-src on a CPU).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from prover.data.errors import UserInputError


def default_corpus() -> Path:
    """mathlib-src in the data folder: $PROVER_DATA, else the per-user data folder."""
    from prover.data.location import data_path
    return Path(data_path("mathlib-src"))


def has_corpus(folder: Path) -> bool:
    return any((folder / n).is_file() for n in ("corpus.jsonl", "corpus.jsonl.gz"))


def choose_corpus(corpus: str | None) -> Path:
    """--corpus (a dataset folder, or `demo`), else mathlib-src in the data folder, else the demo
    library, said in one line on stderr with the command that fills the data folder."""
    from prover.data.demo import DEMO, demo_root
    if corpus == DEMO:
        return demo_root()
    if corpus:
        folder = Path(corpus)
        if not has_corpus(folder):
            raise UserInputError(f"--corpus {folder}: no corpus.jsonl there (expected a dataset folder, "
                                 f"or demo for the bundled demo library)")
        return folder
    folder = default_corpus()
    if has_corpus(folder):
        return folder
    from prover.data.location import missing_hint
    print(f"search: no corpus at {folder} ({missing_hint(folder)}); searching the bundled demo library "
          f"instead (--corpus DIR for another dataset)", file=sys.stderr, flush=True)
    return demo_root()


def hit_record(retriever, hit, matched: list[str]) -> dict:
    p = hit.premise
    return {"full_name": p.full_name, "score": round(float(hit.score), 4), "matched": matched,
            "doc": retriever.docs[hit.index], "statement": p.code, "path": p.path, "line": p.start[0]}


def run_search(query: str | None, k: int, as_json: bool, corpus: str | None, docs: str | None,
               queries: str | None, dense: bool | None = None) -> int:
    """`dense`: True fuses the dense member, building its index when this corpus has none yet;
    False answers with the words alone; None (the default) fuses it when the `dense` extra is
    installed and the corpus' index is built, else answers with the words alone and says why
    in one line."""
    if (query is None) == (queries is None):
        raise UserInputError("give one QUERY, or --queries FILE (one query a line)")
    if k < 1:
        raise UserInputError(f"--k must be at least 1, got {k}")
    folder = choose_corpus(corpus)
    lines = None
    if queries is not None:
        qf = Path(queries)
        if not qf.is_file():
            raise UserInputError(f"--queries {qf}: no such file (one query a line)")
        lines = [q.strip() for q in qf.read_text(encoding="utf-8").splitlines() if q.strip()]
    from prover.data.dataset import Dataset
    from retriever.informal.retriever import InformalRetriever, resolve_docs
    from retriever.informal.settings import InformalConfig
    cfg = InformalConfig(docs=resolve_docs(folder, docs))
    if dense is not False:
        from dataclasses import replace
        cfg = replace(cfg.with_dense(), dense_build=bool(dense))
    # The dense member not at hand (no extra, no index unless --dense): one line, then the words alone.
    retriever = InformalRetriever(Dataset(folder).corpus(), cfg, say=lambda m: print(m, file=sys.stderr))
    for q in lines if lines is not None else [query]:
        t0 = time.perf_counter()
        hits = retriever.retrieve([q], k, [None])[0]
        matched = retriever.matched(q, [h.index for h in hits])
        records = [hit_record(retriever, h, m) for h, m in zip(hits, matched)]
        if lines is not None:
            print(json.dumps({"query": q, "took_ms": round(1000 * (time.perf_counter() - t0), 2),
                              "hits": records}, ensure_ascii=False))
        elif as_json:
            print(json.dumps(records, ensure_ascii=False, indent=1))
        else:
            for i, r in enumerate(records, 1):
                print(f"{i:>3}. {r['full_name']}  ({r['score']:.2f})  {r['path']}:{r['line']}")
                if r["doc"]:
                    print(f"     {r['doc'][:200]}")
                print(f"     {' '.join(r['statement'].split())[:200]}")
                print(f"     matched: {', '.join(r['matched'])}")
    sys.stdout.flush()
    return 0
