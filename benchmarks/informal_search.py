"""Informal search against BM25: docstring -> declaration, and the committed query set (issue 51).

    python benchmarks/informal_search.py

Two benchmarks over the mathlib-src corpus (181k premises), the docstrings read from the 300
real source files (`mathlib-src/leandojo-real/source`, `prover data corpus`):

1. Docstring -> declaration: each theorem with a docstring is a query (its docstring) whose one
   gold is itself, with the docstrings of every evaluated theorem hidden from the index and
   from the clouds' learning. Theorems are cut into select and report halves by name (md5
   parity); intervals resample theorems.
2. The query set `benchmarks/data/informal_queries.json` (four forms, each query written before
   any system answered it), cut into halves by intent group; intervals resample groups. Batch 1
   (82 queries) was written with the first informal retriever and its report half scored once
   (informal-queries-mathlib-src-report); batch 2 (147 queries) was written and committed in the
   second session before it was scored.

Choices (the query side's cloud, lexicon and name-match weights, and how much a word the
lexicon names counts as itself) are made on the select halves only, by the project's rule
(`choose_within_noise` against the simplest option, no expansion and no name match); the chosen
setting and the baselines are then scored on the report halves: BM25 over the raw declaration
text (name + code, the `bm25` retriever), BM25 over the name alone, and the informal text with
neither. Latency: p50 of one query at a time on this CPU. Writes benchmarks/results/
informal-queries-batch2-mathlib-src-report (batch 2's report half: its first look),
informal-queries-all-mathlib-src-report (both batches' report halves: batch 1's second look) and
informal-docstrings-mathlib-src-report-look2 (the docstring report half's second look), each
with its per-query data (per_query/STEM.jsonl.gz: each report query's metrics and top 10 per
row, and its intent group, the bootstrap's cluster), and each look counted in
benchmarks/results/looks.jsonl. `--benches queries` scores the query set alone (a rerun of one
benchmark is not a further look at the other's report half). The query benchmarks also score
the chosen setting without the query conventions added after batch 1's report was seen
(`informal (no query conventions)`, `retriever.informal.query_conventions=false`), the audit's
question of issue 62: how much of the gain over BM25 they carry.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, replace

import numpy as np

from prover.benchmarking.looks import REGISTRY as LOOKS, take_look
from prover.benchmarking.per_query import write_per_query
from prover.benchmarking.harness import (REPO, RESULTS_DIR, add_allow_dirty, choose_within_noise,
                                         corrections_markdown,
                                         command_line, machine, mean_interval, paired_intervals,
                                         parser, write_and_print)
from prover.benchmarking.informal_data import start
from retriever.baselines.bm25 import BM25Config, BM25Retriever
from retriever.evaluation.metrics import Judgement, query_metrics
from retriever.informal.retriever import InformalRetriever
from retriever.informal.settings import InformalConfig

log = logging.getLogger("benchmark.informal_search")

QUERIES = REPO / "benchmarks" / "data" / "informal_queries.json"
KS = (1, 5, 10)
DEPTH = 10
# The query side's settings tried on select: (cloud_weight, lexicon_weight, name_match,
# named_weight); the first, no expansion and no name match, is the simplest.
GRID = [(0.0, 0.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0), (0.25, 1.0, 0.0, 1.0), (0.0, 1.0, 0.25, 1.0),
        (0.0, 1.0, 0.25, 0.5), (0.0, 1.0, 0.5, 0.5), (0.25, 1.0, 0.25, 0.5)]
KEYS = ("cloud_weight", "lexicon_weight", "name_match", "named_weight")
NO_CONVENTIONS = "informal (no query conventions)"
METRICS = ("R@1", "R@5", "R@10", "P@1", "P@5", "P@10", "nDCG@10", "MRR")


def half(key: str) -> str:
    return "select" if int(hashlib.md5(key.encode()).hexdigest(), 16) % 2 == 0 else "report"


def evaluate(retriever, queries: list[str], golds: list[set[str]], tops: list | None = None) -> dict[str, np.ndarray]:
    """Per-query metrics (arrays over queries) and each query's time in ms, one at a time;
    each query's top DEPTH names appended to `tops` when given (the per-query data)."""
    per = {m: [] for m in METRICS}
    ms = []
    for q, gold in zip(queries, golds):
        t = time.perf_counter()
        hits = retriever.retrieve([q], DEPTH, [None])[0]
        ms.append(1000 * (time.perf_counter() - t))
        names = [h.premise.full_name for h in hits]
        if tops is not None:
            tops.append(names)
        m = query_metrics(names, [None] * len(names), Judgement(frozenset(gold), frozenset()), KS)
        for k in METRICS:
            per[k].append(m[k])
    return {**{k: np.asarray(v) for k, v in per.items()}, "ms": np.asarray(ms)}


def per_query_records(queries: list[str], golds: list[set[str]], clusters: list | None, per: dict,
                      tops: dict[str, list]) -> list[dict]:
    """One record per report query: the query, its gold, its bootstrap cluster (intent group,
    or the theorem itself), and per row its metrics and top 10, so every row, interval and
    difference recomputes (`python -m prover.benchmarking.readme_numbers`)."""
    return [{"query": q, "gold": sorted(g), "cluster": clusters[i] if clusters is not None else sorted(g)[0],
             "rows": {name: {**{m: float(per[name][m][i]) for m in METRICS}, "top10": tops[name][i]}
                      for name in per}}
            for i, (q, g) in enumerate(zip(queries, golds))]


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


def setting(r, s: tuple) -> None:
    r.cfg = replace(r.cfg, **dict(zip(KEYS, s)))


def describe(s: tuple) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in zip(KEYS, s))


def select_setting(build, queries, golds, clusters) -> tuple[tuple, list[dict], str]:
    """The grid on select: each setting's nDCG@10; the best against the simplest, by the rule."""
    r = build()
    table, per = [], {}
    for s in GRID:
        setting(r, s)
        per[s] = evaluate(r, queries, golds)
        table.append({**dict(zip(KEYS, s)), **{k: float(per[s][k].mean()) for k in ("R@1", "R@10", "nDCG@10")}})
        log.info("select %s", table[-1])
    best = max(per, key=lambda s: (per[s]["nDCG@10"].mean(), -sum(s)))
    ci = paired_intervals(per[best]["nDCG@10"], per[GRID[0]]["nDCG@10"], clusters=clusters).diff
    kept, why = choose_within_noise(describe(GRID[0]), describe(best), [100 * ci[0], 100 * ci[1]])
    chosen = next(s for s in per if describe(s) == kept)
    return chosen, table, why


def render(result: dict) -> str:
    lines = [f"# {result['benchmark']}", "", result["about"], "",
             f"Commit {result['git_commit']}; `{result['command']}`; {result['machine'].get('cpu')}.", "",
             f"Chosen on {result['fit_split']}: {result['setting']} ({result['why']}).", "",
             f"Look: {result['look_note']}", "",
             f"## Report ({result['split']}, {result['rows'][0]['n_queries']} queries)", "",
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
    # A comparison on part of the scored split (batch 1 alone) names that part.
    lines += [f"- {c['a']} − {c['b']} ({c['metric']}"
              + ("" if c["split"] == result["split"] else f", {c['split']}") + f"): {100 * c['diff']:+.1f} "
              f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}]" for c in result["comparisons"]]
    lines += ["", f"## Select ({result['fit_split']})", "",
              "| cloud weight | lexicon weight | name match | named weight | R@1 | R@10 | nDCG@10 |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {s['cloud_weight']:g} | {s['lexicon_weight']:g} | {s['name_match']:g} | {s['named_weight']:g} | "
              f"{100 * s['R@1']:.1f} | {100 * s['R@10']:.1f} | {100 * s['nDCG@10']:.1f} |" for s in result["select"]]
    lines += corrections_markdown(result)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = add_allow_dirty(parser(__doc__))
    p.add_argument("--data", default="../shared/data", help="the data folder (mathlib-src inside)")
    p.add_argument("--benches", default="docstrings,queries",
                   help="which benchmarks to score: docstrings, queries, or both (each scoring of a "
                        "report half is a look, so rerun only the one you need)")
    args = p.parse_args(argv)
    wanted = {b.strip() for b in args.benches.split(",") if b.strip()}
    if not wanted or wanted - {"docstrings", "queries"}:
        raise SystemExit(f"error: --benches takes docstrings, queries or both, not {args.benches!r}")
    t0 = time.perf_counter()
    commit, corpus, names, docs_dir = start(args)
    cfg = InformalConfig(docs=str(docs_dir))
    docs = [(p["full_name"], p["doc"]) for line in (docs_dir / "corpus.jsonl").read_text().splitlines()
            for p in json.loads(line)["premises"]
            if p.get("doc") and p["kind"] in ("theorem", "lemma") and p["full_name"] in names]
    docs = list(dict(docs).items())
    split = {h: [(n, d) for n, d in docs if half(n) == h] for h in ("select", "report")}
    # Batches 1 and 2 only: batch 3 is issue 63's held-out set, scored by benchmarks/informal_dense.py
    # alone (a rerun at acc31f3 that read every batch scored its report half too; issue 62).
    qs = [q for q in json.loads(QUERIES.read_text())["queries"] if q["batch"] in (1, 2)]
    qsplit = {h: [q for q in qs if q["half"] == h] for h in ("select", "report")}
    common = {"commit": commit, "command": command_line("benchmarks/informal_search.py", argv), "machine": machine()}

    # -- choices, on select only
    sel = split["select"]
    chosen_doc, table_doc, why_doc = select_setting(
        lambda: InformalRetriever(corpus, cfg, hidden={n for n, _ in sel}),
        [d for _, d in sel], [{n} for n, _ in sel], None) if "docstrings" in wanted else (None, None, None)
    qsel = qsplit["select"]
    informal_all = InformalRetriever(corpus, cfg)
    chosen_q, table_q, why_q = select_setting(lambda: informal_all, [q["query"] for q in qsel],
                                              [set(q["gold"]) for q in qsel], [q["group"] for q in qsel])

    # -- report
    bm25_code = BM25Retriever(corpus, BM25Config(tokenizer="lean", fields=["name", "code"]))
    bm25_name = BM25Retriever(corpus, BM25Config(tokenizer="lean", fields=["name"]))
    rep = split["report"]
    informal_rep = InformalRetriever(corpus, cfg, hidden={n for n, _ in rep}) if "docstrings" in wanted else None
    qrep = qsplit["report"]
    batch2 = [q for q in qrep if q["batch"] == 2]
    benches = (
        ("docstrings", "informal-docstrings-mathlib-src-report-look2", [d for _, d in rep], [{n} for n, _ in rep],
         None, None, informal_rep, chosen_doc, table_doc, why_doc, ["docstrings/report"],
         f"Docstring -> declaration: {len(docs)} theorems of the 300 real source files with a docstring "
         f"(select {len(sel)}, report {len(rep)}, cut by name); the evaluated half's docstrings are hidden "
         f"from the index and the clouds. Intervals resample theorems."),
        ("queries", "informal-queries-batch2-mathlib-src-report", [q["query"] for q in batch2],
         [set(q["gold"]) for q in batch2], [q["group"] for q in batch2], None, informal_all, chosen_q, table_q,
         why_q, ["queries/report#batch2"],
         f"The query set's batch 2 ({len([q for q in qs if q['batch'] == 2])} queries in "
         f"{len({q['group'] for q in qs if q['batch'] == 2})} new intent groups, four forms, written and committed "
         f"before any system answered them; halves by a seeded group shuffle): report {len(batch2)} queries in "
         f"{len({q['group'] for q in batch2})} groups. Intervals resample groups."),
        ("queries", "informal-queries-all-mathlib-src-report", [q["query"] for q in qrep],
         [set(q["gold"]) for q in qrep], [q["group"] for q in qrep], [q["batch"] for q in qrep], informal_all,
         chosen_q, table_q, why_q, ["queries/report#batch1", "queries/report#batch2"],
         f"The whole query set ({len(qs)} queries, {len({q['group'] for q in qs})} intent groups, four forms): "
         f"select {len(qsel)}, report {len(qrep)} queries in {len({q['group'] for q in qrep})} groups (batch 1: "
         f"{sum(q['batch'] == 1 for q in qrep)}, batch 2: {len(batch2)}). Intervals resample groups."))
    outputs = []
    for (bench, stem, queries, golds, clusters, batches, informal, chosen, table, why, look_splits,
         about) in [b for b in benches if b[0] in wanted]:
        # Looks counted from the registry of scorings (prover/benchmarking/looks.py), per batch of
        # the query set (each batch's queries are their own), never written in (issue 62).
        taken = {key: take_look(stem, f"informal search: {bench}", key, common["commit"], describe(chosen),
                                RESULTS_DIR / LOOKS.name) for key in look_splits}
        look = max(t["look"] for t in taken.values())
        look_note = "; ".join(
            f"look {t['look']} at {key}" + (" (earlier: " + ", ".join(f"{e['stem']} at {e['git_commit'][:10]}"
                                                                       for e in t["earlier_looks"]) + ")"
                                            if t["earlier_looks"] else "")
            for key, t in taken.items())
        per, tops = {}, {}
        setting(informal, chosen)
        per["informal"] = evaluate(informal, queries, golds, tops.setdefault("informal", []))
        if bench == "queries":
            # The audit's question (issue 62, item 3): the chosen setting with the query
            # conventions added after batch 1's report was seen switched off.
            informal.cfg = replace(informal.cfg, query_conventions=False)
            per[NO_CONVENTIONS] = evaluate(informal, queries, golds, tops.setdefault(NO_CONVENTIONS, []))
            informal.cfg = replace(informal.cfg, query_conventions=True)
        setting(informal, GRID[0])
        per["informal-no-expansion"] = evaluate(informal, queries, golds, tops.setdefault("informal-no-expansion", []))
        per["bm25 (name + code)"] = evaluate(bm25_code, queries, golds, tops.setdefault("bm25 (name + code)", []))
        per["bm25 (name)"] = evaluate(bm25_name, queries, golds, tops.setdefault("bm25 (name)", []))
        comparisons = [compare("informal", b, per["informal"], per[b], m, f"{bench}/report", clusters)
                       for b in ("bm25 (name + code)", "bm25 (name)", "informal-no-expansion")
                       for m in ("R@10", "nDCG@10")]
        comparisons.append(compare("informal", "bm25 (name + code)", per["informal"], per["bm25 (name + code)"],
                                   "R@1", f"{bench}/report", clusters))
        if NO_CONVENTIONS in per:
            comparisons += [compare(NO_CONVENTIONS, "bm25 (name + code)", per[NO_CONVENTIONS],
                                    per["bm25 (name + code)"], "R@10", f"{bench}/report", clusters),
                            compare("informal", NO_CONVENTIONS, per["informal"], per[NO_CONVENTIONS], "R@10",
                                    f"{bench}/report", clusters)]
        if batches is not None:  # batch 1 alone: the second look at the first report half
            keep = np.asarray([b == 1 for b in batches])
            sub = {n: {k: v[keep] for k, v in p.items()} for n, p in per.items()}
            cl = [c for c, k in zip(clusters, keep) if k]
            for b in ("bm25 (name + code)", "bm25 (name)"):
                c = compare("informal", b, sub["informal"], sub[b], "R@10", f"{bench}/report batch 1", cl)
                comparisons.append(c)
        result = {"benchmark": f"informal search: {bench}", "about": about, "split": f"{bench}/report",
                  "fit_split": f"{bench}/select", "git_commit": common["commit"], "command": common["command"],
                  "machine": common["machine"], "config": asdict(cfg) | {"docs": "leandojo-real/source (built)"},
                  # `setting`, not `chosen`: the index reads `chosen` as chosen on the scored split.
                  "setting": describe(chosen), "why": why, "look": look, "look_note": look_note,
                  "select": table, "rows": [row(n, v, clusters) for n, v in per.items()],
                  "comparisons": comparisons, "seconds": round(time.perf_counter() - t0, 1)}
        result["per_query"] = write_per_query(RESULTS_DIR / stem, per_query_records(queries, golds, clusters, per, tops))
        outputs.append((stem, result))
    for stem, result in outputs:
        write_and_print(RESULTS_DIR / stem, result, render)

if __name__ == "__main__":
    main()
