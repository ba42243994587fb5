"""Informal search against BM25: docstring -> declaration, and the committed query set (issue 51).

    python benchmarks/informal_search.py

Two benchmarks over the mathlib-src corpus (181k premises), the docstrings read from the 300
real source files (`mathlib-src/leandojo-real/source`, `prover data corpus`):

1. Docstring -> declaration: each theorem with a docstring is a query (its docstring) whose one
   gold is itself, with the docstrings of every evaluated theorem hidden from the index and
   from the clouds' learning. Theorems are cut into select and report halves by name (md5
   parity); intervals resample theorems.
2. The query set `benchmarks/data/informal_queries.json` (four forms, written before any system
   answered), cut into halves by intent group; intervals resample groups.

Choices (the query side's cloud and lexicon weights) are made on the select halves only, by the
project's rule (`choose_within_noise` against the simpler option, no expansion); the chosen
setting and the baselines are then scored once on the report halves: BM25 over the raw
declaration text (name + code, the `bm25` retriever), BM25 over the name alone, and BM25 over
the informal text without expansion. Latency: p50 of one query at a time on this CPU.
Writes benchmarks/results/informal-{docstrings,queries}-mathlib-src-report.{json,md}.
"""
from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from prover.benchmarking.harness import (REPO, RESULTS_DIR, add_allow_dirty, choose_within_noise,
                                         corrections_markdown,
                                         command_line, machine, mean_interval, paired_intervals,
                                         parser, require_clean_tree, write_and_print)
from prover.data.corpus import Corpus
from prover.data.project_corpus import build_corpus
from prover.utils.logs import setup_logging
from retriever.baselines.bm25 import BM25Config, BM25Retriever
from retriever.evaluation.metrics import Judgement, query_metrics
from retriever.informal.retriever import InformalRetriever
from retriever.informal.settings import InformalConfig

log = logging.getLogger("benchmark.informal_search")

QUERIES = REPO / "benchmarks" / "data" / "informal_queries.json"
KS = (1, 5, 10)
DEPTH = 10
# The query side's settings tried on select: (cloud_weight, lexicon_weight); (0, 0) is no expansion.
GRID = [(0.0, 0.0), (0.0, 1.0), (0.25, 1.0), (0.5, 1.0), (1.0, 1.0), (0.5, 0.0)]
METRICS = ("R@1", "R@5", "R@10", "P@1", "P@5", "P@10", "nDCG@10", "MRR")


def half(key: str) -> str:
    return "select" if int(hashlib.md5(key.encode()).hexdigest(), 16) % 2 == 0 else "report"


def evaluate(retriever, queries: list[str], golds: list[set[str]]) -> dict[str, np.ndarray]:
    """Per-query metrics (arrays over queries) and each query's time in ms, one at a time."""
    per = {m: [] for m in METRICS}
    ms = []
    for q, gold in zip(queries, golds):
        t = time.perf_counter()
        hits = retriever.retrieve([q], DEPTH, [None])[0]
        ms.append(1000 * (time.perf_counter() - t))
        names = [h.premise.full_name for h in hits]
        m = query_metrics(names, [None] * len(names), Judgement(frozenset(gold), frozenset()), KS)
        for k in METRICS:
            per[k].append(m[k])
    return {**{k: np.asarray(v) for k, v in per.items()}, "ms": np.asarray(ms)}


def row(name: str, per: dict, clusters: list | None) -> dict:
    return {"retriever": name, "metrics": {k: float(per[k].mean()) for k in METRICS},
            "R@10_ci": list(mean_interval(per["R@10"], clusters=clusters)),
            "nDCG@10_ci": list(mean_interval(per["nDCG@10"], clusters=clusters)),
            "R@1_ci": list(mean_interval(per["R@1"], clusters=clusters)),
            "latency_ms_p50": float(np.median(per["ms"])), "n_queries": int(len(per["ms"]))}


def compare(a: str, b: str, pa: dict, pb: dict, metric: str, split: str, clusters: list | None) -> dict:
    ci = paired_intervals(pa[metric], pb[metric], clusters=clusters).diff
    return {"a": a, "b": b, "metric": metric, "split": split, "diff": float(pa[metric].mean() - pb[metric].mean()),
            "ci": list(ci)}


def select_setting(build, queries, golds, clusters) -> tuple[tuple[float, float], list[dict], str]:
    """The grid on select: each setting's nDCG@10; the best against no expansion, by the rule."""
    r = build()
    table, per = [], {}
    for cw, lw in GRID:
        r.cfg = replace(r.cfg, cloud_weight=cw, lexicon_weight=lw)
        per[(cw, lw)] = evaluate(r, queries, golds)
        table.append({"cloud_weight": cw, "lexicon_weight": lw,
                      **{k: float(per[(cw, lw)][k].mean()) for k in ("R@1", "R@10", "nDCG@10")}})
        log.info("select %s", table[-1])
    best = max(per, key=lambda s: (per[s]["nDCG@10"].mean(), -s[0] - s[1]))
    ci = paired_intervals(per[best]["nDCG@10"], per[(0.0, 0.0)]["nDCG@10"], clusters=clusters).diff
    names = {s: f"cloud {s[0]:g}, lexicon {s[1]:g}" for s in per}
    kept, why = choose_within_noise(names[(0.0, 0.0)], names[best], [100 * ci[0], 100 * ci[1]])
    chosen = next(s for s, n in names.items() if n == kept)
    return chosen, table, why


def render(result: dict) -> str:
    lines = [f"# {result['benchmark']}", "", result["about"], "",
             f"Commit {result['git_commit']}; `{result['command']}`; {result['machine'].get('cpu')}.", "",
             f"Chosen on {result['fit_split']}: {result['setting']} ({result['why']}).", "",
             f"## Report ({result['split']}, {result['rows'][0]['n_queries']} queries, scored once)", "",
             "| retriever | R@1 | R@5 | R@10 | P@1 | P@5 | nDCG@10 | MRR | R@10 95% CI | nDCG@10 95% CI | p50 ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        m = r["metrics"]
        lines.append(f"| {r['retriever']} | " + " | ".join(f"{100 * m[k]:.1f}" for k in
                     ("R@1", "R@5", "R@10", "P@1", "P@5", "nDCG@10", "MRR"))
                     + f" | [{100 * r['R@10_ci'][0]:.1f}, {100 * r['R@10_ci'][1]:.1f}]"
                     + f" | [{100 * r['nDCG@10_ci'][0]:.1f}, {100 * r['nDCG@10_ci'][1]:.1f}]"
                     + f" | {r['latency_ms_p50']:.1f} |")
    lines += ["", "Paired differences (points, 95% bootstrap):", ""]
    lines += [f"- {c['a']} − {c['b']} ({c['metric']}): {100 * c['diff']:+.1f} "
              f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}]" for c in result["comparisons"]]
    lines += ["", f"## Select ({result['fit_split']})", "", "| cloud weight | lexicon weight | R@1 | R@10 | nDCG@10 |",
              "|---|---|---|---|---|"]
    lines += [f"| {s['cloud_weight']:g} | {s['lexicon_weight']:g} | {100 * s['R@1']:.1f} | {100 * s['R@10']:.1f} | "
              f"{100 * s['nDCG@10']:.1f} |" for s in result["select"]]
    lines += corrections_markdown(result)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = add_allow_dirty(parser(__doc__))
    p.add_argument("--data", default="../shared/data", help="the data folder (mathlib-src inside)")
    args = p.parse_args(argv)
    commit = require_clean_tree(args.allow_dirty)
    setup_logging()
    logging.getLogger("benchmark").setLevel(logging.INFO)
    data = Path(args.data) / "mathlib-src"
    if not (data / "corpus.jsonl.gz").is_file():
        raise SystemExit(f"no corpus at {data}: pass --data PATH/TO/shared/data")
    t0 = time.perf_counter()
    corpus = Corpus.load(data / "corpus.jsonl.gz")
    names = {p.full_name for p in corpus.premises}
    docs_dir = Path(tempfile.mkdtemp(prefix="informal-docs-"))
    build_corpus(data / "leandojo-real" / "source", docs_dir, progress=False, say=lambda _: None)
    cfg = InformalConfig(docs=str(docs_dir))
    docs = [(p["full_name"], p["doc"]) for line in (docs_dir / "corpus.jsonl").read_text().splitlines()
            for p in json.loads(line)["premises"]
            if p.get("doc") and p["kind"] in ("theorem", "lemma") and p["full_name"] in names]
    docs = list(dict(docs).items())
    split = {h: [(n, d) for n, d in docs if half(n) == h] for h in ("select", "report")}
    qs = json.loads(QUERIES.read_text())["queries"]
    qsplit = {h: [q for q in qs if q["half"] == h] for h in ("select", "report")}
    common = {"commit": commit, "command": command_line("benchmarks/informal_search.py", argv), "machine": machine()}

    # -- choices, on select only
    sel = split["select"]
    chosen_doc, table_doc, why_doc = select_setting(
        lambda: InformalRetriever(corpus, cfg, hidden={n for n, _ in sel}),
        [d for _, d in sel], [{n} for n, _ in sel], None)
    qsel = qsplit["select"]
    informal_all = InformalRetriever(corpus, cfg)
    chosen_q, table_q, why_q = select_setting(lambda: informal_all, [q["query"] for q in qsel],
                                              [set(q["gold"]) for q in qsel], [q["group"] for q in qsel])

    # -- report, once
    bm25_code = BM25Retriever(corpus, BM25Config(tokenizer="lean", fields=["name", "code"]))
    bm25_name = BM25Retriever(corpus, BM25Config(tokenizer="lean", fields=["name"]))
    outputs = []
    rep = split["report"]
    informal_rep = InformalRetriever(corpus, cfg, hidden={n for n, _ in rep})
    for bench, queries, golds, clusters, informal, chosen, table, why, about in (
            ("docstrings", [d for _, d in rep], [{n} for n, _ in rep], None, informal_rep, chosen_doc,
             table_doc, why_doc,
             f"Docstring -> declaration: {len(docs)} theorems of the 300 real source files with a docstring "
             f"(select {len(sel)}, report {len(rep)}, cut by name); the evaluated half's docstrings are hidden "
             f"from the index and the clouds. Intervals resample theorems."),
            ("queries", [q["query"] for q in qsplit["report"]], [set(q["gold"]) for q in qsplit["report"]],
             [q["group"] for q in qsplit["report"]], informal_all, chosen_q, table_q, why_q,
             f"The committed query set ({len(qs)} queries, {len({q['group'] for q in qs})} intent groups, "
             f"four forms, written before any system answered): select {len(qsel)}, report "
             f"{len(qsplit['report'])}, cut by group. Intervals resample groups.")):
        per = {}
        informal.cfg = replace(informal.cfg, cloud_weight=chosen[0], lexicon_weight=chosen[1])
        per["informal"] = evaluate(informal, queries, golds)
        informal.cfg = replace(informal.cfg, cloud_weight=0.0, lexicon_weight=0.0)
        per["informal-no-expansion"] = evaluate(informal, queries, golds)
        per["bm25 (name + code)"] = evaluate(bm25_code, queries, golds)
        per["bm25 (name)"] = evaluate(bm25_name, queries, golds)
        comparisons = [compare("informal", b, per["informal"], per[b], m, f"{bench}/report", clusters)
                       for b in ("bm25 (name + code)", "bm25 (name)", "informal-no-expansion")
                       for m in ("R@10", "nDCG@10")]
        comparisons.append(compare("informal", "bm25 (name + code)", per["informal"], per["bm25 (name + code)"],
                                   "R@1", f"{bench}/report", clusters))
        result = {"benchmark": f"informal search: {bench}", "about": about, "split": f"{bench}/report",
                  "fit_split": f"{bench}/select", "git_commit": common["commit"], "command": common["command"],
                  "machine": common["machine"], "config": asdict(cfg) | {"docs": "leandojo-real/source (built)"},
                  # `setting`, not `chosen`: the index reads `chosen` as chosen on the scored split.
                  "setting": f"cloud_weight {chosen[0]:g}, lexicon_weight {chosen[1]:g}", "why": why,
                  "select": table, "rows": [row(n, v, clusters) for n, v in per.items()],
                  "comparisons": comparisons, "seconds": round(time.perf_counter() - t0, 1)}
        outputs.append((bench, result))
    for bench, result in outputs:
        write_and_print(RESULTS_DIR / f"informal-{bench}-mathlib-src-report", result, render)


if __name__ == "__main__":
    main()
