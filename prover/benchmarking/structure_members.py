"""What benchmarks/structure_retrieval.py, structure_late_interaction.py and additive_twins.py
share: the member rankings of a split (cached), a query's R@1, R@10 and MRR from a ranking, and
the fusion's rankings over cached member rankings."""
from __future__ import annotations

import logging
import pickle
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

log = logging.getLogger(__name__)
FIT = "random/val"
# Members that give the same ranking whatever split is evaluated: built once for all splits.
SPLIT_FREE = {"bm25", "structure", "locality"}
# Members that never read a premise's text: their rankings do not depend on data.render_to_additive.
TEXT_FREE = {"usage", "locality", "neighbors", "neighbors-tactic"}


def cache_dir(cfg: Any) -> Path:
    """Where member rankings are cached: per run, per premise text (to_additive twins rendered
    or not), since the text changes what the text members rank, and per commit, since the
    members' code does too (a cache kept across commits once scored a changed `structure` with
    its old rankings)."""
    from prover.benchmarking.harness import git_commit
    rendered = bool(OmegaConf.select(cfg, "data.render_to_additive", default=False))
    name = "structure-retrieval" if rendered else "structure-retrieval-source-text"
    return Path(cfg.run_dir) / name / git_commit()


def split_queries(ds: Any, split: str, corpus: Any = None) -> list:
    from prover.data.pairs import premise_queries
    return premise_queries(ds.theorems(split), corpus if corpus is not None else ds.corpus(), ds.skips)[0]


def rank(retriever: Any, queries: list, depth: int) -> list[list[int]]:
    from retriever.base import TheoremContext
    out = []
    for lo in range(0, len(queries), 64):
        batch = queries[lo: lo + 64]
        hits = retriever.retrieve([q.state for q in batch], depth,
                                  [TheoremContext(q.file_path, q.position) for q in batch])
        out += [[h.index for h in hs] for hs in hits]
    return out


def refresh_twins(members: list, corpus: Any) -> None:
    """A trained encoder's saved premise index holds the vectors of the texts it was built from;
    re-encode the to_additive twins with the texts this corpus gives them (rendered or not), so
    that every member reads the same premise text. Members without an encoder are left as they
    are."""
    from prover.data.additive_twins import is_twin
    from retriever.models.faiss_index import PremiseIndex
    twins = [i for i, p in enumerate(corpus.premises) if is_twin(p)]
    for m in members:
        index, encoder = getattr(m, "index", None), getattr(m, "encoder", None)
        if not twins or not isinstance(index, PremiseIndex) or encoder is None:
            continue
        t0 = time.perf_counter()
        vectors = index.vectors.copy()
        vectors[twins] = encoder.encode_premises([corpus.premises[i] for i in twins],
                                                 m.cfg.encode_batch_size).numpy()
        m.index = PremiseIndex.build(vectors, index.kind, fingerprint=index.fingerprint, meta=index.meta)
        log.info("%s: %d to_additive twins re-encoded in %.0f s", m.name, len(twins), time.perf_counter() - t0)


def rankings(cfg: Any, ds: Any, corpus: Any, split: str, members: list[str], built: dict, cache: Path,
             reuse: dict | None = None) -> dict:
    """Per member, per query of `split`, its top `fusion.depth` corpus indices (cached), the gold
    sets and each query's theorem. `corpus`: `ds.corpus()`, read once; `built`: the split-free
    members already built; `reuse`: rankings of the same queries to take the text-free members'
    from."""
    from retriever.registry import build_members
    path = cache / f"{split.replace('/', '-')}.pkl"
    have = pickle.loads(path.read_bytes()) if path.exists() else {"members": {}}
    missing = [m for m in members if m not in have["members"]]
    if not missing:
        return have
    queries = split_queries(ds, split, corpus)
    have["gold"] = [sorted(q.gold) for q in queries]
    have["theorems"] = [q.theorem for q in queries]
    if reuse is not None and reuse.get("gold") == have["gold"]:
        for m in missing:
            if m in TEXT_FREE and m in reuse["members"]:
                have["members"][m] = reuse["members"][m]
        missing = [m for m in missing if m not in have["members"]]
    member_cfg = cfg.copy()
    OmegaConf.update(member_cfg, "data.split", split)  # usage and neighbors leave this split out
    per_split = [m for m in missing if m not in SPLIT_FREE]
    fresh = dict(zip(per_split, build_members(per_split, corpus, member_cfg))) if per_split else {}
    refresh_twins(list(fresh.values()), corpus)
    for m in missing:
        if m in SPLIT_FREE and m not in built:
            built[m] = build_members([m], corpus, member_cfg)[0]
        t0 = time.perf_counter()
        have["members"][m] = rank(built.get(m) or fresh[m], queries, cfg.fusion.depth)
        log.info("%s ranked %s (%d queries) in %.0f s", m, split, len(queries), time.perf_counter() - t0)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(have))
    return have


def per_query(ranked: list, gold: list) -> dict[str, float]:
    g = set(gold)
    hits = [i for i, c in enumerate(ranked) if c in g]
    return {"R@1": len(g & set(ranked[:1])) / len(g), "R@10": len(g & set(ranked[:10])) / len(g),
            "MRR": 1.0 / (hits[0] + 1) if hits else 0.0}


def fusion_rankings(fit: dict, scored: dict, members: list[str], cfg: Any) -> list[list[int]]:
    """The fusion over `members`, fitted on the cached rankings `fit` (as train-fusion fits
    it), ordering each query of `scored`."""
    from prover.benchmarking.fusion_members import examples
    from retriever.models.learned_fusion import fit_fusion, order
    depth = cfg.fusion.depth
    model = fit_fusion([e[1:3] for e in examples(fit, members, depth)], members, depth, cfg.fusion.l2)
    return [order(c, model.score(f)).tolist() for c, f, _, _ in examples(scored, members, depth)]


def results_stem(out: str, benchmark: str, cfg: Any, split: str, tag: str = "") -> Path:
    """benchmarks/results/<benchmark>-<dataset>-<split>[-<tag>]: a tag names a second file beside
    a committed one (e.g. the run with a trained CFR member, beside the files without one)."""
    return Path(out) / f"{benchmark}-{Path(cfg.data.root).name}-{split.replace('/', '-')}{'-' + tag if tag else ''}"


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def ci(c: list[float]) -> str:
    return f"[{100 * c[0]:.1f}, {100 * c[1]:.1f}]"


def signed_ci(c: list[float]) -> str:
    return f"[{100 * c[0]:+.1f}, {100 * c[1]:+.1f}]"


def per_query_records(d: dict, ranked: dict[str, list[list[int]]],
                      values: dict[str, dict[str, Any]]) -> list[dict]:
    """What each number of a structure or additive-twins file averages, one record per query:
    its theorem, its gold premises (corpus indices), and per row its top 10 and its R@1, R@10
    and MRR (MRR reads the row's whole depth, so it is kept as computed)."""
    return [{"query": i, "theorem": t, "gold": sorted(g),
             "rows": {row: {"top10": list(rs[i][:10]), **{m: round(float(v[i]), 6) for m, v in values[row].items()}}
                      for row, rs in ranked.items()}}
            for i, (t, g) in enumerate(zip(d["theorems"], d["gold"]))]


def look_words(r: dict) -> str:
    """How many times this benchmark had scored the split, as the registry counted it (a file
    written before the registry says "once", which its corrections amend)."""
    if r.get("look") is None:
        return " once"
    earlier = r.get("earlier_looks") or []
    return (f"; look {r['look']} at this split by this benchmark (benchmarks/results/looks.jsonl)"
            + (": earlier " + ", ".join(f"{e['stem']} at {e['git_commit'][:10]}" for e in earlier) if earlier else ""))


def provenance_line(r: dict, chosen_here: bool) -> str:
    """The results page's second line: the command, its commit, where the fusions were fitted,
    and whether this split is the one choices are made on or a report split, with its look."""
    return (f"`{r['command']}` at commit {r['git_commit']}. Fusions fitted on {r['fitted_on']}, scored here"
            + (" (choices are made on this split)." if chosen_here else f"{look_words(r)}; the choice was made on "
               "leandojo-real/select."))

