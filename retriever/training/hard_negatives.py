"""Hard negatives: a first-stage retriever's top premises for each training state, minus its
positives. CAR trains on them (always), CFR when `cfr.hard_negatives` names a first stage.
Mined once and cached line by line; a rerun, or a run killed halfway, asks the first stage
only about the pairs the cache lacks."""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from prover.data.corpus import Corpus
from prover.data.pairs import StatePremisePair
from prover.utils.progress import progress_bar
from retriever.base import Retriever, TheoremContext

log = logging.getLogger(__name__)


def _pair_key(first_stage: str, corpus: Corpus, k: int, pair: StatePremisePair) -> str:
    """Cache key: a line is reused only for the same first stage, corpus size, k and pair."""
    text = "\t".join([first_stage, str(len(corpus)), str(k), pair.theorem, pair.file_path, pair.state])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def _read_cache(path: Path) -> dict[str, list[int]]:
    cached: dict[str, list[int]] = {}
    if not path.exists():
        return cached
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a run killed mid-write leaves a partial last line
                continue
            cached[row["key"]] = row["negatives"]
    return cached


def mine_hard_negatives(first_stage: Retriever, pairs: Sequence[StatePremisePair], corpus: Corpus,
                        k: int, cache_path: str | Path | None = None,
                        batch_size: int = 64) -> dict[int, list[int]]:
    """For each pair (by index), the first stage's top-k accessible premises for its state minus
    every positive of that state, best first.

    With `cache_path`, mined pairs are appended there batch by batch and a rerun (or a run
    killed halfway) only asks the first stage about pairs the file lacks. Keys carry the first
    stage's name, so mining with CFR after BM25 does not reuse BM25's lines; delete the file
    after retraining a first stage of the same name."""
    if first_stage.corpus is not corpus and len(first_stage.corpus) != len(corpus):
        raise ValueError("the first stage ranks a different corpus than the pairs index")
    keys = [_pair_key(first_stage.name, corpus, k, p) for p in pairs]
    cache = Path(cache_path) if cache_path is not None else None
    cached = _read_cache(cache) if cache is not None else {}
    todo = [i for i, key in enumerate(keys) if key not in cached]
    if cached:
        log.info("hard negatives: %d of %d pairs cached in %s", len(pairs) - len(todo), len(pairs), cache)
    write = cache is not None and bool(todo)
    if write:
        cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache, "a", encoding="utf-8") if write else contextlib.nullcontext() as out:
        if out is not None and out.tell() and not _ends_with_newline(cache):
            out.write("\n")  # a killed run may have left a partial line: never glue onto it
        for lo in progress_bar(range(0, len(todo), batch_size),
                               desc=f"mine hard negatives ({first_stage.name} top {k})", unit="batch"):
            idx = todo[lo: lo + batch_size]
            ranked = first_stage.retrieve([pairs[i].state for i in idx], k,
                                          [TheoremContext(pairs[i].file_path, pairs[i].position) for i in idx])
            for i, hits in zip(idx, ranked):
                positives = set(pairs[i].premises)
                cached[keys[i]] = [h.index for h in hits if h.index not in positives]
                if out is not None:
                    out.write(json.dumps({"key": keys[i], "theorem": pairs[i].theorem,
                                          "negatives": cached[keys[i]]}) + "\n")
            if out is not None:
                out.flush()  # a killed run keeps every finished batch
    return {i: cached[key] for i, key in enumerate(keys)}
