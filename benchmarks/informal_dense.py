"""Informal search, second round (issue 63): module docs as aliases and a dense member, on query batch 3.

    python benchmarks/informal_dense.py --half select    # choices, on batch 3's select half
    python benchmarks/informal_dense.py --half report    # the chosen setting, scored once

Over the mathlib-src corpus (181k premises), docstrings and module docs read from the 300 real
source files (`prover data corpus`, which keeps each file's `/-! ... -/`). Rows, each query's top
10 ranked one query at a time:

- `bm25 (name + code)`: BM25 over the raw declaration text (the `bm25` retriever);
- `bm25 (words + doc + aliases)`: the fair baseline, BM25 over name words, statement words,
  docstring and module-doc aliases with no query expansion and no name match;
- `informal (last round)`: last round's shipped informal search (no aliases, no dense member);
- `informal + aliases`: the same with the module docs' aliases in the text;
- `dense`: all-MiniLM-L6-v2 alone over each declaration's text in words (name, docstring,
  aliases, statement; 64 tokens), cosine similarity;
- `fusion w=W` / `fusion + aliases w=W`: reciprocal-rank fusion (k 60, each member's top 100) of
  the lexical ranking (without / with aliases) and the dense one, the dense one weighted W.

Select: every row on batch 3's select half (R@10, nDCG@10, hit@1, intervals resampling intent
groups), split by whether a gold declaration has a docstring of its own in this data, and the
docstring -> declaration benchmark's select half (docstrings of the evaluated theorems hidden);
the candidate settings are compared with last round's shipped informal search by the project's
rule (`choose_within_noise` on R@10). Writes informal-dense-mathlib-src-select. Report: reads
the committed select file's choice and scores it, last round's shipped search and the baselines
on batch 3's report half once; writes informal-dense-mathlib-src-report.
"""
from __future__ import annotations

import hashlib
import json
import logging
import resource
import time
from dataclasses import asdict, replace

import numpy as np

from prover.benchmarking.harness import (REPO, RESULTS_DIR, add_allow_dirty, choose_within_noise,
                                         command_line, corrections_markdown, machine, mean_interval,
                                         paired_intervals, parser, write_and_print)
from prover.benchmarking.looks import REGISTRY as LOOKS, take_look
from prover.benchmarking.informal_data import start
from retriever.base import top_k
from retriever.baselines.bm25 import BM25Config, BM25Retriever
from retriever.evaluation.metrics import Judgement, query_metrics
from retriever.informal import dense as dense_mod
from retriever.informal.retriever import InformalRetriever, dense_member, rrf
from retriever.informal.settings import InformalConfig

log = logging.getLogger("benchmark.informal_dense")

QUERIES = REPO / "benchmarks" / "data" / "informal_queries.json"
SELECT_STEM = "informal-dense-mathlib-src-select"
REPORT_STEM = "informal-dense-mathlib-src-report"
DEPTH = 10
WEIGHTS = (0.5, 1.0, 2.0)  # the dense member's weight in the fusion, tried on select
SHIPPED = "informal (last round)"
FAIR = "bm25 (words + doc + aliases)"
RAW = "bm25 (name + code)"
ALIASES = {"alias_weight": 2, "title_weight": 1}  # the aliases' weights tried (a bullet, the title)
NO_EXPANSION = {"cloud_weight": 0.0, "lexicon_weight": 0.0, "name_match": 0.0, "named_weight": 1.0}


def metrics(names: list[str], gold: set[str]) -> dict[str, float]:
    m = query_metrics(names, [None] * len(names), Judgement(frozenset(gold), frozenset()), (1, 10))
    return {"R@10": m["R@10"], "nDCG@10": m["nDCG@10"], "hit@1": float(bool(names) and names[0] in gold)}


def ranked(r: InformalRetriever, row: np.ndarray) -> list[str]:
    return [r.corpus.premises[i].full_name for i in top_k(row, DEPTH)]


class Members:
    """The rows' rankings of one query, each member's score row computed once."""

    def __init__(self, lexical: InformalRetriever, aliased: InformalRetriever, raw: BM25Retriever) -> None:
        self.lexical, self.aliased, self.raw = lexical, aliased, raw
        self.base_cfg = aliased.cfg

    def rankings(self, q: str, weights=WEIGHTS) -> tuple[dict[str, list[str]], dict[str, float]]:
        out, ms = {}, {}
        t = time.perf_counter()
        out[RAW] = [h.premise.full_name for h in self.raw.retrieve([q], DEPTH, [None])[0]]
        ms["raw"] = 1000 * (time.perf_counter() - t)
        self.aliased.cfg = replace(self.base_cfg, **NO_EXPANSION)
        out[FAIR] = ranked(self.aliased, self.aliased.lexical_row(q))
        self.aliased.cfg = self.base_cfg
        t = time.perf_counter()
        lex = self.lexical.lexical_row(q)
        ms["lexical"] = 1000 * (time.perf_counter() - t)
        ali = self.aliased.lexical_row(q)
        out[SHIPPED] = ranked(self.lexical, lex)
        out["informal + aliases"] = ranked(self.aliased, ali)
        if self.aliased.dense is not None:
            t = time.perf_counter()
            den = self.aliased.dense_row(q)
            ms["dense"] = 1000 * (time.perf_counter() - t)
            out["dense"] = ranked(self.aliased, den)
            for w in weights:
                t = time.perf_counter()
                out[f"fusion w={w:g}"] = ranked(self.lexical, rrf([lex, den], [1.0, w]))
                ms["fusion"] = 1000 * (time.perf_counter() - t)
                out[f"fusion + aliases w={w:g}"] = ranked(self.aliased, rrf([ali, den], [1.0, w]))
        return out, ms


def score(members: Members, queries: list[dict], weights=WEIGHTS) -> tuple[dict, list[dict], dict]:
    """Per row, per-query metric arrays; the per-query records; the member times (ms lists)."""
    per: dict[str, dict[str, list[float]]] = {}
    records, times = [], {}
    for i, q in enumerate(queries):
        rk, ms = members.rankings(q["query"], weights)
        rec = {k: q[k] for k in ("group", "form", "query", "gold") if k in q}
        rec["gold_has_doc"] = q.get("gold_has_doc")
        rec["top10"] = rk
        rec["metrics"] = {}
        for name, names in rk.items():
            m = metrics(names, set(q["gold"]))
            rec["metrics"][name] = m
            for k, v in m.items():
                per.setdefault(name, {}).setdefault(k, []).append(v)
        for k, v in ms.items():
            times.setdefault(k, []).append(v)
        records.append(rec)
        if (i + 1) % 200 == 0:
            log.info("%d/%d queries", i + 1, len(queries))
    return ({n: {k: np.asarray(v) for k, v in d.items()} for n, d in per.items()}, records, times)


def measure_latency(r: InformalRetriever, qs: list[dict]) -> dict[str, float]:
    wall, cpu = [], []
    r.retrieve([qs[0]["query"]], DEPTH, [None])  # warm: the first call imports and allocates
    for q in qs:
        t, c = time.perf_counter(), time.process_time()
        r.retrieve([q["query"]], DEPTH, [None])
        wall.append(1000 * (time.perf_counter() - t))
        cpu.append(1000 * (time.process_time() - c))
    return {"wall_ms_p50": round(float(np.median(wall)), 1), "cpu_ms_p50": round(float(np.median(cpu)), 1)}


def row(name: str, per: dict, clusters) -> dict:
    return {"retriever": name, "n_queries": int(len(per["R@10"])),
            "metrics": {k: float(v.mean()) for k, v in per.items()},
            **{f"{k}_ci": list(mean_interval(v, clusters=clusters)) for k, v in per.items()}}


def compare(a: str, b: str, per: dict, metric: str, split: str, clusters) -> dict:
    ci = paired_intervals(per[a][metric], per[b][metric], clusters=clusters).diff
    return {"a": a, "b": b, "metric": metric, "split": split,
            "diff": float(per[a][metric].mean() - per[b][metric].mean()), "ci": list(ci)}


def subset(per: dict, keep: np.ndarray) -> dict:
    return {n: {k: v[keep] for k, v in d.items()} for n, d in per.items()}


def render(result: dict) -> str:
    lines = [f"# {result['benchmark']}", "", result["about"], "",
             f"Commit {result['git_commit']}; `{result['command']}`; {result['machine'].get('cpu')}; "
             f"dense weights: all-MiniLM-L6-v2, model.safetensors SHA-256 `{result['dense_model_sha256']}`.", ""]
    if result.get("why"):
        lines += [f"Choice: {result['setting']} ({result['why']}).", ""]
    if result.get("look_note"):
        lines += [f"Look: {result['look_note']}", ""]
    for table in result["tables"]:
        lines += [f"## {table['title']}", "",
                  "| retriever | R@10 | nDCG@10 | hit@1 | R@10 95% CI | nDCG@10 95% CI | hit@1 95% CI | queries |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in table["rows"]:
            m = r["metrics"]
            lines.append(f"| {r['retriever']} | " + " | ".join(f"{100 * m[k]:.1f}" for k in ("R@10", "nDCG@10", "hit@1"))
                         + "".join(f" | [{100 * r[k + '_ci'][0]:.1f}, {100 * r[k + '_ci'][1]:.1f}]"
                                   for k in ("R@10", "nDCG@10", "hit@1")) + f" | {r['n_queries']} |")
        lines.append("")
    lines += ["Paired differences (points, 95% bootstrap):", ""]
    lines += [f"- {c['a']} − {c['b']} ({c['metric']}, {c['split']}): {100 * c['diff']:+.1f} "
              f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}]" for c in result["comparisons"]]
    lines += ["", "## Cost", ""] + [f"- {k}: {v}" for k, v in result["cost"].items()]
    lines += corrections_markdown(result)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = add_allow_dirty(parser(__doc__))
    p.add_argument("--data", default="../shared/data", help="the data folder (mathlib-src inside)")
    p.add_argument("--half", choices=("select", "report"), required=True)
    p.add_argument("--cache", default="runs/dense", help="the dense member's embedding cache")
    p.add_argument("--lexical-only", action="store_true",
                   help="select without the dense member (its index not built yet): the aliases' rows alone; "
                        "writes informal-aliases-mathlib-src-select")
    p.add_argument("--docstrings", type=int, default=600,
                   help="theorems of the docstring benchmark's select half scored (the first by md5 of the name)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    commit, corpus, names, docs_dir = start(args)
    rows300 = [json.loads(line) for line in (docs_dir / "corpus.jsonl").read_text().splitlines()]
    base = InformalConfig(docs=str(docs_dir), dense=dense_mod.HUB_ID, dense_cache=args.cache, **ALIASES)
    shipped_cfg = replace(base, alias_weight=0, title_weight=0, dense=None)
    lexical = InformalRetriever(corpus, shipped_cfg)
    aliased = InformalRetriever(corpus, replace(base, dense=None))
    t_dense = time.perf_counter()
    if args.lexical_only:
        if args.half == "report":
            raise SystemExit("--lexical-only is for select")
        encoder = None
    else:
        note = dense_member(aliased, base)
        if note:
            raise SystemExit(note)
        encoder = aliased.dense[0]
    dense_seconds = time.perf_counter() - t_dense
    raw = BM25Retriever(corpus, BM25Config(tokenizer="lean", fields=["name", "code"]))
    members = Members(lexical, aliased, raw)
    has_doc = {n for n, d in zip((q.full_name for q in corpus.premises), aliased.docs) if d}

    qs = [q for q in json.loads(QUERIES.read_text())["queries"] if q["batch"] == 3 and q["half"] == args.half]
    for q in qs:
        q["gold_has_doc"] = any(g in has_doc for g in q["gold"])
    clusters = [q["group"] for q in qs]
    split = f"informal-queries-batch3/{args.half}"
    in300 = {p["full_name"] for r in rows300 for p in r["premises"]}
    coverage = {
        "source files": len(rows300), "files with module docs": sum(bool(r.get("module_docs")) for r in rows300),
        "premises of the 300 files": len(in300),
        "premises with a bullet alias": sum(bool(a) for a in aliased.aliases),
        "premises with a title": sum(bool(t) for t in aliased.titles),
        "premises with a docstring": len(has_doc),
        "mathlib-src premises": len(corpus),
        "premises of the 300 files in mathlib-src": len(in300 & names),
        "batch-3 queries of this half whose gold is in the 300 files": sum(any(g in in300 for g in q["gold"]) for q in qs),
        "batch-3 queries of this half whose gold has a bullet alias": sum(
            any(g in {n for n, a in zip((p.full_name for p in corpus.premises), aliased.aliases) if a} for g in q["gold"])
            for q in qs),
    }
    common = {"git_commit": commit, "command": command_line("benchmarks/informal_dense.py", argv),
              "machine": machine(),
              "dense_model_sha256": encoder.sha256 if encoder else dense_mod.weights_sha256(
                  dense_mod.packaged_model(args.cache) or ""),
              "config": asdict(base) | {"docs": "leandojo-real/source (built)"}, "coverage": coverage}
    if args.half == "select":
        per, records, times = score(members, qs)
        candidates = [c for c in ["informal + aliases"] + [f"fusion w={w:g}" for w in WEIGHTS]
                      + [f"fusion + aliases w={w:g}" for w in WEIGHTS] if c in per]
        best = max(candidates, key=lambda n: (per[n]["R@10"].mean(), per[n]["nDCG@10"].mean()))
        ci = paired_intervals(per[best]["R@10"], per[SHIPPED]["R@10"], clusters=clusters).diff
        kept, why = choose_within_noise(SHIPPED, best, [100 * ci[0], 100 * ci[1]])
        comparisons = [compare(a, b, per, m, split, clusters)
                       for a in ["dense", "informal + aliases", *(c for c in candidates if c.startswith("fusion"))] if a in per
                       for b in (SHIPPED, FAIR) for m in ("R@10", "nDCG@10", "hit@1")]
        comparisons += [compare(SHIPPED, b, per, "R@10", split, clusters) for b in (FAIR, RAW)]
        tables = [{"title": f"Batch 3, select ({len(qs)} queries, {len(set(clusters))} groups)",
                   "rows": [row(n, v, clusters) for n, v in per.items()]}]
        for flag, label in ((True, "gold has a docstring of its own"), (False, "gold has no docstring of its own")):
            keep = np.asarray([q["gold_has_doc"] == flag for q in qs])
            if keep.any():
                sub, cl = subset(per, keep), [c for c, k in zip(clusters, keep) if k]
                tables.append({"title": f"Batch 3, select, {label} ({int(keep.sum())} queries)",
                               "rows": [row(n, v, cl) for n, v in sub.items()]})
                if len(set(cl)) > 1:
                    comparisons += [compare(a, SHIPPED, sub, "R@10", f"{split}, {label}", cl)
                                    for a in dict.fromkeys(("dense", "informal + aliases", best)) if a in sub]
        # The docstring benchmark's select half: each theorem's docstring finds it, its own hidden.
        docs = sorted({(p["full_name"], p["doc"]) for r in rows300 for p in r["premises"]
                       if p.get("doc") and p["kind"] in ("theorem", "lemma") and p["full_name"] in names})
        docs = list(dict(docs).items())
        md5 = {n: int(hashlib.md5(n.encode()).hexdigest(), 16) for n, _ in docs}
        sel = [(n, d) for n, d in docs if md5[n] % 2 == 0]  # informal_search.py's halves
        sel = sorted(sel, key=lambda x: md5[x[0]])[:args.docstrings]
        hidden = {n for n, _ in sel}
        lex_h = InformalRetriever(corpus, shipped_cfg, hidden=hidden)
        ali_h = InformalRetriever(corpus, replace(base, dense=None), hidden=hidden)
        if encoder is not None:
            dense_member(ali_h, base)
        dq = [{"query": d, "gold": [n], "group": n} for n, d in sel]
        dper, drecords, _ = score(Members(lex_h, ali_h, raw), dq)
        tables.append({"title": f"Docstring -> declaration, select ({len(dq)} theorems of the 300 files, the "
                                f"first of the select half by md5 of the name; their docstrings hidden)", "rows": [row(n, v, None) for n, v in dper.items()]})
        comparisons += [compare(a, b, dper, "R@10", "informal-docstrings/select", None)
                        for a in dict.fromkeys(("dense", "informal + aliases", best)) if a in dper
                        for b in (SHIPPED, FAIR)]
        # Latency end to end, one query at a time: last round's search and the best candidate
        # (with every member it has). Wall time on a CPU shared with other jobs, and the
        # process's CPU time, which other jobs' load inflates far less.
        latency = {SHIPPED: measure_latency(lexical, qs)}
        if best.startswith("fusion"):
            serving = aliased if "aliases" in best else lexical
            serving.dense = aliased.dense
            serving.cfg = replace(serving.cfg, dense=base.dense, dense_weight=float(best.split("w=")[1]))
            latency[best] = measure_latency(serving, qs)
        elif best != SHIPPED:
            latency[best] = measure_latency(aliased, qs)
        lat = latency.get(kept, latency[SHIPPED])["wall_ms_p50"]
        dims = int(encoder.model.get_sentence_embedding_dimension()) if encoder else 0
        cost = {"dense index load (cache hits) or build, s": round(dense_seconds, 1),
                "dense index size in memory": f"{len(corpus):,} × {dims} float32 = "
                                               f"{len(corpus) * dims * 4 / 2**20:.0f} MiB",
                "member p50 ms (lexical, dense, fusion)": {k: round(float(np.median(v)), 1) for k, v in times.items()},
                "end-to-end p50 ms (wall, CPU)": latency,
                "peak RSS GiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
                "machine": "2 CPU cores shared with other jobs (not quiet)"}
        result = {"benchmark": "informal search, second round: select", **common,
                  "about": f"Batch 3 of the informal query set ({len(qs)} select queries in {len(set(clusters))} "
                           f"intent groups, six forms, written and committed before any change of issue 63) and the "
                           f"docstring benchmark's select half. Module-doc coverage: {coverage}.",
                  "split": split, "fit_split": split, "role": "select", "setting": kept, "best": best, "why": why,
                  "choice_metric": "R@10", "tables": tables, "comparisons": comparisons, "cost": cost,
                  "latency_ms_p50": lat,
                  "per_query": records, "per_query_docstrings": drecords,
                  "seconds": round(time.perf_counter() - t0, 1)}
        stem = "informal-aliases-mathlib-src-select" if args.lexical_only else SELECT_STEM
        if args.lexical_only:
            result["benchmark"] = "informal search, second round: select, module docs' aliases alone"
        write_and_print(RESULTS_DIR / stem, result, render)
        return
    chosen = json.loads((RESULTS_DIR / f"{SELECT_STEM}.json").read_text())
    kept = chosen["setting"]
    weights = (float(kept.split("w=")[1]),) if kept.startswith("fusion") else ()
    per, records, times = score(members, qs, weights)
    keep_rows = [RAW, FAIR, SHIPPED, "informal + aliases", "dense", kept]
    per = {n: per[n] for n in dict.fromkeys(keep_rows) if n in per}
    comparisons = [compare(kept, b, per, m, split, clusters) for b in (SHIPPED, FAIR, RAW)
                   for m in ("R@10", "nDCG@10", "hit@1") if kept != b]
    comparisons += [compare(SHIPPED, b, per, "R@10", split, clusters) for b in (FAIR, RAW)]
    latency = {SHIPPED: measure_latency(lexical, qs)}
    if kept.startswith("fusion"):
        serving = aliased if "aliases" in kept else lexical
        serving.dense = aliased.dense
        serving.cfg = replace(serving.cfg, dense=base.dense, dense_weight=weights[0])
        latency[kept] = measure_latency(serving, qs)
    result = {"benchmark": "informal search, second round: report", **common,
              "about": f"Batch 3's report half ({len(qs)} queries in {len(set(clusters))} intent groups), scored once "
                       f"with the setting chosen on select ({SELECT_STEM}.md: {kept}).",
              "split": split, "setting": kept,
              "tables": [{"title": f"Batch 3, report ({len(qs)} queries, {len(set(clusters))} groups)",
                          "rows": [row(n, v, clusters) for n, v in per.items()]}],
              "comparisons": comparisons,
              "latency_ms_p50": latency.get(kept, latency[SHIPPED])["wall_ms_p50"],
              "cost": {"member p50 ms": {k: round(float(np.median(v)), 1) for k, v in times.items()},
                       "end-to-end p50 ms (wall, CPU)": latency,
                       "machine": "2 CPU cores shared with other jobs (not quiet)"},
              "per_query": records, "seconds": round(time.perf_counter() - t0, 1)}
    # The look is counted from the registry of scorings (prover/benchmarking/looks.py), never written in.
    result.update(take_look(REPORT_STEM, result["benchmark"], split, common["git_commit"],
                            kept, RESULTS_DIR / LOOKS.name))
    write_and_print(RESULTS_DIR / REPORT_STEM, result, render)


if __name__ == "__main__":
    main()
