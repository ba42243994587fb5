"""`prover demo`: the default job, the whole pipeline on the bundled demo library in about a minute.

1. retrieval: BM25 beside a tiny CFR trained on the spot (tokenizer, MLM pre-training, bi-encoder);
2. generation: a tiny tactic generator trained on the spot;
3. search: best-first proof search on a local Ray cluster over a few held-out theorems, in the
   replay simulator (its proof rate is never pass@1).

Each stage is the same code the full-size commands run; only the sizes differ (the schema is
`demo_settings.DemoConfig`). Every run starts afresh in `out_dir`, writes each stage's outputs
and the configs it used there, and ends with a short summary.
"""
from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from prover.commands.demo_settings import DemoConfig, check_demo_config
from prover.config import load_config
from prover.utils.logs import OUR_PACKAGES

STATE_FILE = "state.txt"


def demo_paths(out: Path, model: str | Path) -> dict[str, str]:
    """Each thing the demo leaves, by what it is (paths as the command line named `out_dir`)."""
    rel = lambda p: str(Path(p))  # noqa: E731
    return {
        "summary": rel(out / "demo.json"),
        "retrieval table": rel(out / "retrieval"),
        "retriever run (prover serve --config configs/serve/demo.yaml)": rel(out / "retriever"),
        "retriever config (retriever.models=)": rel(out / "retriever.yaml"),
        "generator model (generator suggest --model)": rel(model),
        "generator config": rel(out / "generator.yaml"),
        "a proof state (generator suggest --state)": rel(out / STATE_FILE),
        "search results": rel(out / "search" / "summary.md"),
        "search config": rel(out / "search.yaml"),
    }


LEGEND = ("R@k: % of a query's gold premises in the top k; MRR: mean reciprocal rank of the first "
          "gold premise; p50: median ms per query at batch 1.")


def run_demo(config: str | None, overrides: list[str], argv: list[str] | None = None) -> int:
    t0 = time.perf_counter()
    cfg = load_config(DemoConfig, config, list(overrides))
    check_demo_config(OmegaConf.to_object(cfg))
    # Everything heavy (torch, transformers, Ray) loads only now that the config is known good.
    from prover.utils.threads import set_cpu_threads
    set_cpu_threads(cfg.threads)  # before Ray starts: its workers inherit the setting
    from prover.data.dataset import Dataset
    out = Path(cfg.out_dir)
    for stage in ("retriever", "generator", "search"):  # trained on the spot, every run
        shutil.rmtree(out / stage, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    ds = Dataset(cfg.data.root, on_error=cfg.data.on_error, max_state_chars=cfg.data.max_state_chars,
                 render_to_additive=cfg.data.render_to_additive)
    command = "prover " + " ".join(argv or ["demo", *overrides])
    times: dict[str, float] = {}
    steps = 4

    def timed(name: str, what: str, fn, *args) -> Any:
        print(f"[{len(times) + 1}/{steps}] {what}", file=sys.stderr, flush=True)
        t = time.perf_counter()
        with _quiet_stages():
            result = fn(*args)
        times[name] = round(time.perf_counter() - t, 1)
        return result

    retriever_yaml = timed("train CFR", "training a tiny CFR: tokenizer, MLM pre-training, bi-encoder",
                           _train_retriever, cfg, out)
    retrieval = timed("retrieval", f"ranking premises with {', '.join(cfg.retrievers)}",
                      _retrieval, cfg, out, retriever_yaml, command)
    generator = timed("train generator", "training a tiny tactic generator", _train_generator, cfg, out)
    generator["example"] = _suggest(ds.theorems(cfg.data.split), generator["model"])
    # The example's state, for `prover generator suggest --state` (the README's line).
    (out / STATE_FILE).write_text(generator["example"]["state"] + "\n", encoding="utf-8")
    search = timed("search", f"best-first search on Ray over {cfg.search.theorems} theorems (replay simulator)",
                   _search, cfg, out, ds.root, retriever_yaml, generator["model"], command)
    times["total"] = round(time.perf_counter() - t0, 1)
    summary = {"command": command, "data_root": str(ds.root), "split": cfg.data.split, "seconds": times,
               "paths": demo_paths(out, generator["model"]),
               "retrieval": retrieval["rows"], "generator": {k: generator[k] for k in (
                   "params", "steps", "train_pairs", "best_val_loss", "example")}, "search": search}
    (out / "demo.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    print(format_summary(summary, retrieval, out))
    return 0


@contextlib.contextmanager
def _quiet_stages() -> Iterator[None]:
    """Inside the demo, each stage's progress bar and the step lines say enough: the stages' own
    INFO logs (one per epoch, per index, per file written) are for the full-size commands.
    Warnings still show; `-v` shows everything."""
    loggers = [logging.getLogger(name) for name in OUR_PACKAGES]
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _train_retriever(cfg: Any, out: Path) -> Path:
    """Tokenizer, MLM pre-training and CFR; returns the training config the retrievers load."""
    from retriever.training.pretrain import pretrain
    from retriever.settings import RetrieverTrainConfig
    from retriever.training.train_cfr import train_cfr
    train_cfg = OmegaConf.merge(OmegaConf.structured(RetrieverTrainConfig), {
        "data": cfg.data, "run_dir": str(out / "retriever"), "seed": cfg.seed, "device": "cpu",
        **OmegaConf.to_container(cfg.retriever)})
    path = out / "retriever.yaml"  # `retriever.models=` of any command that loads these models
    OmegaConf.save(train_cfg, path)
    pretrain(train_cfg)
    train_cfr(train_cfg)
    return path


def _retrieval(cfg: Any, out: Path, retriever_yaml: Path, command: str) -> dict:
    from retriever.settings import RetrievalBenchmarkConfig
    from retriever.evaluation.benchmark import run_retrieval_benchmark
    bench = OmegaConf.merge(OmegaConf.structured(RetrievalBenchmarkConfig), {
        "data": cfg.data, "retrievers": list(cfg.retrievers), "results_dir": str(out / "retrieval"),
        "retriever": {"models": str(retriever_yaml), "device": "cpu"},
        "latency_queries": 20, "robustness": False})
    return run_retrieval_benchmark(bench, force=True, command=command)


def _train_generator(cfg: Any, out: Path) -> dict:
    from generator.settings import GeneratorTrainConfig
    from generator.train import train_generator
    # The data section as plain keys: the generator's schema extends DataConfig (granularity),
    # and OmegaConf refuses to merge a DataConfig node into its subclass.
    gen_cfg = OmegaConf.merge(OmegaConf.structured(GeneratorTrainConfig), {
        "data": OmegaConf.to_container(cfg.data, resolve=True), "run_dir": str(out / "generator"), "seed": cfg.seed, "device": "cpu",
        **OmegaConf.to_container(cfg.generator)})
    OmegaConf.save(gen_cfg, out / "generator.yaml")
    return train_generator(gen_cfg)


def _suggest(theorems: list, model: str, n: int = 3) -> dict:
    """The generator's top tactics for the first step of the first held-out theorem (no premises)."""
    from generator.model import TacticGenerator
    thm = next(t for t in theorems if t.traced_tactics)
    step = thm.traced_tactics[0]
    gen = TacticGenerator.load(model)
    text, _ = gen.input_text(step.state_before)
    return {"theorem": thm.full_name, "recorded": step.tactic, "state": step.state_before,
            "suggested": [s.tactic for s in gen.generate([text], num_tactics=n, states=[step.state_before])[0]]}


def _search(cfg: Any, out: Path, data_root: Path, retriever_yaml: Path, model: str, command: str) -> dict:
    from prover.search.benchmark import run_benchmark
    from prover.search.settings import SearchBenchmarkConfig
    s = cfg.search
    workers = s.workers
    search_cfg = OmegaConf.merge(OmegaConf.structured(SearchBenchmarkConfig), {
        "theorems": {"source": str(data_root), "split": cfg.data.split, "limit": s.theorems},
        "search": s.search,
        "retriever": {**OmegaConf.to_container(s.retriever), "corpus": str(data_root),
                      "models": str(retriever_yaml), "device": "cpu"},
        "generator": {**OmegaConf.to_container(s.generator), "model": model, "device": "cpu"},
        "env": {"name": "replay", "replay": {"focus_goals": True}},
        "batching": {"max_batch_size": 8, "max_wait_ms": 20},
        # A small local cluster: fractional CPUs so every actor fits on a 2-core machine.
        "ray": {"num_workers": workers, "worker_cpus": 0.25, "retriever_cpus": 0.5, "generator_cpus": 0.5,
                "retriever_gpus": 0, "generator_gpus": 0, "local_num_cpus": 2, "object_store_mb": 128},
        "out_dir": str(out / "search")})
    OmegaConf.save(search_cfg, out / "search.yaml")
    summary = run_benchmark(search_cfg, [s.retriever.name], command=command)
    return next(iter(summary["runs"].values()))


def format_summary(summary: dict, retrieval: dict, out: Path) -> str:
    """What ran, the headline numbers with a legend, where things are: readable in ten seconds."""
    t = summary["seconds"]
    lines = ["", f"prover demo: {retrieval['dataset']} {summary['split']}, done in {t['total']:.0f} s "
             f"(CFR trained {t['train CFR']:.0f} s, retrieval {t['retrieval']:.0f} s, "
             f"generator trained {t['train generator']:.0f} s, search {t['search']:.0f} s)", "",
             f"Premise retrieval, {retrieval['n_queries']} queries (a toy set: gaps of a few points "
             "here are noise):",
             f"  {'retriever':<18} {'R@1':>6} {'R@10':>6} {'MRR':>6} {'p50 ms':>7}"]
    for row in summary["retrieval"]:
        m = row["metrics"]
        lines.append(f"  {row['retriever']:<18} {100 * m['R@1']:6.1f} {100 * m['R@10']:6.1f} {m['MRR']:6.3f} "
                     f"{row.get('latency_ms_p50', float('nan')):7.2f}")
    lines.append(f"  {LEGEND}")
    g, s = summary["generator"], summary["search"]
    lines += ["", f"Tactic generator: {g['params'] / 1e6:.2f}M parameters, {g['steps']} steps on "
              f"{g['train_pairs']} tactics, validation loss {g['best_val_loss']:.3f} per byte.",
              f"  First step of {g['example']['theorem']}: recorded `{g['example']['recorded']}`; "
              f"the generator's top {len(g['example']['suggested'])}: "
              + ", ".join(f"`{t}`" for t in g["example"]["suggested"]), "",
              f"Proof search ({s['retriever']} premises, replay simulator: not pass@1): "
              f"{s['proved']} of {s['theorems']} theorems proved, replay proof rate {100 * (s['rate'] or 0):.0f}%, "
              f"{s['mean_nodes']} nodes per theorem on average."]
    for name, proof in list(s["proofs"].items())[:3]:
        lines.append(f"  {name}: {' ; '.join(proof) if isinstance(proof, list) else proof}")
    if not s["proved"]:
        lines.append("  The simulator accepts only the tactics a traced proof recorded, character for "
                     "character; a generator trained for seconds on a toy library rarely reproduces one.")
    lines += ["", f"Demo library (hand-written, LeanDojo layout; --data demo): {summary['data_root']}",
              f"What the demo wrote, under {out.resolve()}/:"]
    paths = summary.get("paths") or demo_paths(out, out / "generator" / "generator" / "model")
    width = max(len(k) for k in paths)
    lines += [f"  {what:<{width}}  {path}" for what, path in paths.items()]
    return "\n".join(lines)
